/* SPDX-License-Identifier: MIT */
/* overhead.h -- overhead.c's function. Router-private. */
#ifndef BSC_ROUTER_OVERHEAD_H
#define BSC_ROUTER_OVERHEAD_H

#include <stdint.h>

struct req_attempts;

/* The request's time in the gateway itself, up to <now_us>: the time since <start_us> less
 * its attempts <att> (each with the backoff before it) and <queued_ms> waiting for a limit. */
uint64_t req_overhead_us(uint64_t start_us, const struct req_attempts *att, uint64_t queued_ms,
                         uint64_t now_us);

/* x-bascule-overhead-ms's text: <us> in milliseconds with three decimals, the text
 * snprintf("%.3f", us / 1e3) gives, written without printf on the usual values. */
#define REQ_OVERHEAD_MS_TEXT_MAX 24
void req_overhead_ms_text(char out[REQ_OVERHEAD_MS_TEXT_MAX], uint64_t us);

#endif
