/* SPDX-License-Identifier: MIT */
/* overhead.h -- overhead.c's function. Router-private. */
#ifndef BSC_ROUTER_OVERHEAD_H
#define BSC_ROUTER_OVERHEAD_H

#include <stdint.h>

struct request;

/* The request's time in the gateway itself, up to <now_us>: the elapsed time less its
 * attempts, backoffs and limit queueing (overhead.c). */
uint64_t req_overhead_us(const struct request *r, uint64_t now_us);

#endif
