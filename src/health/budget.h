/* SPDX-License-Identifier: MIT */
/* budget.h -- the gateway-wide retry budget (docs/design.md §3): how many retries and
 * failovers the recent first attempts allow, so that a failing upstream is not hit by a
 * storm of replays. Pure: the caller passes the time and serialises access (health/hstate.c
 * keeps one behind its own lock). */
#ifndef BSC_HEALTH_BUDGET_H
#define BSC_HEALTH_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#define RBUDGET_BUCKETS 10

/* The retry budget: over a sliding window (RBUDGET_BUCKETS buckets of window_ms / 10),
 * retries (and failovers: every attempt after a request's first) are allowed while
 * retries_in_window < ratio * firsts_in_window + min_per_s * window_s. The window slides by
 * whole buckets, so it covers between 9/10 and all of window_ms.
 * NOT thread-safe: the caller serialises access (one budget behind a lock, or one per
 * worker with min_per_s divided by the number of workers). Fields are private. */
struct rbudget {
    double ratio;
    double floor;       /* min_per_s * window_s: retries always allowed per window */
    uint32_t bucket_ms; /* >= 1 */
    uint64_t head;      /* absolute bucket number (now / bucket_ms) of the newest bucket */
    uint64_t firsts[RBUDGET_BUCKETS];
    uint64_t retries[RBUDGET_BUCKETS];
    uint64_t total_firsts, total_retries, total_rejections;
};

struct rbudget_stats {
    uint64_t firsts_in_window, retries_in_window;
    double allowance; /* ratio * firsts_in_window + floor: retries the window allows */
    uint64_t total_firsts, total_retries, total_rejections; /* since init, for counters */
};

/* The width of one bucket for a window of <window_ms>: what rbudget_init sets. */
uint32_t rbudget_bucket_ms(uint32_t window_ms);

/* Sets up an empty budget. <ratio> < 0 or NaN counts as 0; <window_ms> below
 * RBUDGET_BUCKETS is raised to it (each bucket is at least 1 ms). Cannot fail. */
void rbudget_init(struct rbudget *b, double ratio, uint32_t min_per_s, uint32_t window_ms);

/* Records a first attempt (a new client request) at monotonic time <now>. */
void rbudget_note_first(struct rbudget *b, uint64_t now);

/* Asks for one retry or failover at <now>. Returns true and counts it when the window
 * allows it; returns false and counts a rejection otherwise. Time going backwards is
 * treated as no time passing. */
bool rbudget_try_take(struct rbudget *b, uint64_t now);

/* Fills *<out> for metrics at <now> (slides the window first, changes no counts). */
void rbudget_stats(struct rbudget *b, uint64_t now, struct rbudget_stats *out);

/* Whether one retry would be allowed at <now>, without taking it (slides the window). */
bool rbudget_available(struct rbudget *b, uint64_t now);

#endif
