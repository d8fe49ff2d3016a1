/* SPDX-License-Identifier: MIT */
/* req_cost.h -- what the request's attempts were charged (types only; spend.md).
 * Router-private. */
#ifndef BSC_ROUTER_REQ_COST_H
#define BSC_ROUTER_REQ_COST_H

#include <stdbool.h>

struct req_cost {
    double usd;     /* what its attempts were charged, summed */
    bool estimated; /* ... some of it from an estimate, not a usage */
};

#endif
