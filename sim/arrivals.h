/* SPDX-License-Identifier: MIT */
/* arrivals.h -- the arrival time of every call of one model, in order, for tests that count
 * what reached the provider in a time window (a rate limit's "any 60 s"): the request log
 * keeps only the last few requests, this keeps only a number per call. Pure: the caller
 * passes the time. See docs/internals/sim.md, "The arrival log". */
#ifndef BSC_SIM_ARRIVALS_H
#define BSC_SIM_ARRIVALS_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

#define SIM_ARRIVALS_MAX (256u * 1024u) /* calls remembered per model; later ones are dropped */

struct sim_arrivals {
    uint64_t *ms; /* owned: <count> times, in the order the calls arrived */
    size_t count;
    size_t cap;
    uint64_t dropped; /* calls past SIM_ARRIVALS_MAX or lost to ENOMEM */
};

/* Appends <now_ms> (a monotonic clock). Past SIM_ARRIVALS_MAX, or when memory runs out,
 * the call is only counted in <dropped>. */
void sim_arrivals_add(struct sim_arrivals *a, uint64_t now_ms);
/* Frees the times; *<a> is empty afterwards. */
void sim_arrivals_cleanup(struct sim_arrivals *a);
/* Appends the members "arrivals_ms":[t1,t2,...],"dropped":N (no braces). */
enum bsc_err sim_arrivals_json(const struct sim_arrivals *a, struct bsc_buf *out);

#endif
