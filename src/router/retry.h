/* SPDX-License-Identifier: MIT */
/* retry.h -- how long to wait before the next attempt, and whether the gateway may retry at
 * all (docs/design.md §3): exponential backoff with additive jitter, the provider's Retry-After
 * honoured and weighed against the deadline, and the gateway-wide retry budget that keeps
 * upstream calls a bounded multiple of client requests during a storm. Pure: time and
 * randomness are arguments. Design notes: docs/internals/taxonomy.md (retry section). */
#ifndef BSC_ROUTER_RETRY_H
#define BSC_ROUTER_RETRY_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "core/compat.h"

/* Why a delay has the length it has (for the attempt log). */
enum retry_delay_why {
    RETRY_DELAY_BACKOFF = 0, /* our backoff: min(base * 2^n, max) + jitter */
    RETRY_DELAY_RETRY_AFTER, /* the provider's Retry-After / retry-after-ms */
    RETRY_DELAY_COUNT
};

struct retry_delay {
    uint32_t delay_ms;
    enum retry_delay_why why;
    bool exceeds_deadline; /* waiting would use up the remaining time: stop (or fail over)
                              now instead of sleeping into a certain deadline_exhausted */
};

/* "backoff" or "retry_after" (the attempt log's delay reason); "invalid" when out of range. */
const char *retry_delay_why_name(enum retry_delay_why why);

/* The backoff before retry number <n> (0-based): d = min(base_ms * 2^n, max_ms), plus a
 * jitter of d * jitter * <rand01> on top. The jitter is additive only (never shortens the
 * nominal backoff), so the result lies in [d, d * (1 + jitter)] and never exceeds
 * max_ms * (1 + jitter). <rand01> is clamped into [0, 1] (NaN counts as 0), r->jitter into
 * [0, 1]. Saturates at UINT32_MAX. */
uint32_t retry_backoff_ms(const struct cfg_retry *r, unsigned n, double rand01);

/* The wait before retry number <n>: the provider's hint <retry_after_ms> when it is >= 0
 * (taken as is: never shortened, no jitter added, saturated at UINT32_MAX), else
 * retry_backoff_ms(). exceeds_deadline is set when the wait is >= <remaining_ms>, i.e. no
 * time would be left for the attempt itself. */
struct retry_delay retry_choose_delay(const struct cfg_retry *r, unsigned n,
                                      int64_t retry_after_ms, double rand01,
                                      uint64_t remaining_ms);

#define RETRY_BUDGET_BUCKETS 10

/* The retry budget: over a sliding window (RETRY_BUDGET_BUCKETS buckets of window_ms / 10),
 * retries (and failovers: every attempt after a request's first) are allowed while
 * retries_in_window < ratio * firsts_in_window + min_per_s * window_s. The window slides by
 * whole buckets, so it covers between 9/10 and all of window_ms.
 * NOT thread-safe: the caller serialises access (one budget behind a lock, or one per
 * worker with min_per_s divided by the number of workers). Fields are private. */
struct retry_budget {
    double ratio;
    double floor;       /* min_per_s * window_s: retries always allowed per window */
    uint32_t bucket_ms; /* >= 1 */
    uint64_t head;      /* absolute bucket number (now / bucket_ms) of the newest bucket */
    uint64_t firsts[RETRY_BUDGET_BUCKETS];
    uint64_t retries[RETRY_BUDGET_BUCKETS];
    uint64_t total_firsts, total_retries, total_rejections;
};

struct retry_budget_stats {
    uint64_t firsts_in_window, retries_in_window;
    double allowance; /* ratio * firsts_in_window + floor: retries the window allows */
    uint64_t total_firsts, total_retries, total_rejections; /* since init, for counters */
};

/* The width of one bucket for a window of <window_ms>: what retry_budget_init sets. */
uint32_t retry_budget_bucket_ms(uint32_t window_ms);

/* Sets up an empty budget. <ratio> < 0 or NaN counts as 0; <window_ms> below
 * RETRY_BUDGET_BUCKETS is raised to it (each bucket is at least 1 ms). Cannot fail. */
void retry_budget_init(struct retry_budget *b, double ratio, uint32_t min_per_s,
                       uint32_t window_ms);

/* Records a first attempt (a new client request) at monotonic time <now>. */
void retry_budget_note_first(struct retry_budget *b, uint64_t now);

/* Asks for one retry or failover at <now>. Returns true and counts it when the window
 * allows it; returns false and counts a rejection otherwise. Time going backwards is
 * treated as no time passing. */
bool retry_budget_try_take(struct retry_budget *b, uint64_t now);

/* Fills *<out> for metrics at <now> (slides the window first, changes no counts). */
void retry_budget_stats(struct retry_budget *b, uint64_t now, struct retry_budget_stats *out);

#endif
