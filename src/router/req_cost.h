/* SPDX-License-Identifier: MIT */
/* req_cost.h -- what the request was charged (spend.md): its attempts (request.c) and the
 * semantic cache's embedding (cache_embed.c). Router-private. */
#ifndef BSC_ROUTER_REQ_COST_H
#define BSC_ROUTER_REQ_COST_H

#include <stdbool.h>

struct req_cost {
    double usd;     /* what its attempts were charged, summed */
    bool estimated; /* ... some of it from an estimate, not a usage */
};

/* <usd> charged, <estimated> when from an estimate. */
static inline void req_cost_add(struct req_cost *c, double usd, bool estimated)
{
    c->usd += usd;
    c->estimated |= estimated;
}

#endif
