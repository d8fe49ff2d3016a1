/* SPDX-License-Identifier: MIT */
/* adaptive.h -- the AIMD controller of one target's effective concurrency and rate: a
 * provider 429 shrinks them (multiplicative decrease), successes grow them back (additive
 * increase), never above the configured caps. It only computes the effective values; the
 * limiter enforces them. Pure: the caller passes <now> and its counts, no clock, no lock
 * (the caller serialises), never calls back. See docs/internals/adaptive.md. */
#ifndef BSC_HEALTH_ADAPTIVE_H
#define BSC_HEALTH_ADAPTIVE_H

#include <stdbool.h>
#include <stdint.h>

/* A 429 keeps this share of the concurrency (and of the rate). */
#define ADAPTIVE_DECREASE 0.5
/* The floor: one request at a time, and this share of the configured rate. */
#define ADAPTIVE_MIN_CONCURRENCY 1.0
#define ADAPTIVE_MIN_RATE_SHARE  0.05
/* The wait suggested to a request turned away by the effective concurrency: about one short
 * completion, after which a slot has likely freed. */
#define ADAPTIVE_RETRY_MS 100

/* Public layout for embedding; fields are private to adaptive.c. */
struct adaptive {
    double limit;       /* effective concurrency; 0 until a cap is known */
    double base;        /* the cap without a configured one: in flight at the first 429 */
    uint64_t cut_ms;    /* the latest decrease: a 429 of an attempt begun before it is stale */
    uint64_t decreases; /* counters for metrics */
    uint64_t increases;
};

/* Effective values for the limiter; 0 = no limit from this controller. */
struct adaptive_eff {
    uint32_t concurrency;
    uint32_t rpm;
    double factor; /* effective / cap, 1 when not limiting */
};

/* Starts <a> unconstrained. Cannot fail. */
void adaptive_init(struct adaptive *a);

/* An upstream 429 (or a rate-limit header saying nothing is left) for an attempt begun at
 * <started_ms>, seen at <now_ms> with <inflight> attempts running on the target (this one
 * included). <conf_conc> is the configured max_concurrency (0: none, then the cap is
 * <inflight> at the first 429). A 429 of an attempt begun before the latest decrease is the
 * same overload already answered: it does not cut again. Returns true when it cut. */
bool adaptive_on_limited(struct adaptive *a, uint32_t conf_conc, uint32_t inflight,
                         uint64_t started_ms, uint64_t now_ms);

/* A successful answer: the limit grows by 1/limit (one per limit's worth of successes, as
 * TCP's congestion avoidance), up to the cap. */
void adaptive_on_success(struct adaptive *a, uint32_t conf_conc);

/* The effective values of <a> for configured caps <conf_conc> / <conf_rpm> (0: none).
 * Never above a configured cap; the rate shrinks by the same factor as the concurrency. */
void adaptive_effective(const struct adaptive *a, uint32_t conf_conc, uint32_t conf_rpm,
                        struct adaptive_eff *out);

#endif
