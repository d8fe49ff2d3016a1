/* SPDX-License-Identifier: MIT */
/* status_outcomes.h -- outcomes per target and per workflow on the status page
 * (status_outcomes.c). */
#ifndef BSC_API_STATUS_OUTCOMES_H
#define BSC_API_STATUS_OUTCOMES_H

#include "core/buf.h"

struct worker;
struct cfg;

/* Appends ,"outcomes":{targets, workflows}: transport / contract / task success per target
 * and per workflow. */
void api__put_outcomes(struct bsc_buf *b, struct worker *w, const struct cfg *cfg);

#endif
