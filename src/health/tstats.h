/* SPDX-License-Identifier: MIT */
/* tstats.h -- passive health signals of one target from live traffic (docs/design.md §8): EWMAs of
 * latency and time to first token, requests in flight, success/failure counts and the last
 * error. Feeds least_latency balancing (policy/pick.h), the status page and metrics. Pure:
 * no I/O, no clock reads, never calls back. Not thread-safe: one per worker. */
#ifndef BSC_HEALTH_TSTATS_H
#define BSC_HEALTH_TSTATS_H

#include <stdbool.h>
#include <stdint.h>

/* Weight of a new sample in both EWMAs. 0.2 follows a change within about ten requests
 * (0.8^10 ~ 0.11) while one slow outlier moves the average by only a fifth of its excess. */
#define TSTATS_ALPHA 0.2
/* What the getters return before the first sample; pick_cand reads any negative value as
 * "unmeasured". */
#define TSTATS_UNMEASURED (-1.0)

/* Public layout for embedding; use the functions. */
struct tstats {
    double ewma_latency_ms; /* valid when has_latency */
    double ewma_ttft_ms;    /* valid when has_ttft */
    bool has_latency, has_ttft;
    uint32_t inflight;
    uint64_t successes;
    uint64_t failures;
    int last_error;         /* the caller's error kind; 0 = none yet */
    uint64_t last_error_ms; /* when it happened */
};

/* Initialises <t>: unmeasured, nothing in flight, counters zero. Cannot fail. */
void tstats_init(struct tstats *t);

/* Adds a total-latency sample of <ms>. The first sample sets the EWMA; later ones move it
 * by TSTATS_ALPHA. Negative or non-finite samples are ignored. */
void tstats_latency(struct tstats *t, double ms);
/* The same for time to first token (streaming responses). */
void tstats_ttft(struct tstats *t, double ms);

/* The EWMAs in milliseconds, or TSTATS_UNMEASURED before the first sample. */
double tstats_latency_ms(const struct tstats *t);
double tstats_ttft_ms(const struct tstats *t);

/* An attempt starts / ends. tstats_inflight_dec() at zero stays at zero. */
void tstats_inflight_inc(struct tstats *t);
void tstats_inflight_dec(struct tstats *t);
uint32_t tstats_inflight(const struct tstats *t);

/* Counts a success. */
void tstats_success(struct tstats *t);
/* Counts a failure of kind <kind> (the caller's enum, nonzero) at <now_ms>, and remembers
 * it as the last error. */
void tstats_failure(struct tstats *t, int kind, uint64_t now_ms);

#endif
