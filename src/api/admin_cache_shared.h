/* SPDX-License-Identifier: MIT */
/* admin_cache_shared.h -- DELETE /admin/cache on a shared (Redis) cache (admin_cache_shared.c). */
#ifndef BSC_API_ADMIN_CACHE_SHARED_H
#define BSC_API_ADMIN_CACHE_SHARED_H

#include "core/str.h"

struct worker;
struct srv_req;
struct cfg;

/* With cache.store: redis: bumps the generation of <route> (empty: every route with a
 * cache) in Redis; answers now or once Redis did. */
void api__admin_cache_clear_shared(struct worker *w, struct srv_req *req, const struct cfg *cfg,
                                   struct bsc_str route);

#endif
