/* SPDX-License-Identifier: MIT */
/* status_cache.h -- the response cache on the status page (status_cache.c). */
#ifndef BSC_API_STATUS_CACHE_H
#define BSC_API_STATUS_CACHE_H

#include "core/buf.h"

struct worker;

/* Appends ,"cache":{routes:[{route,hit,miss,bypass,hit_ratio}],saved_usd,entries,bytes}. */
void api__put_cache_status(struct bsc_buf *b, struct worker *w);

#endif
