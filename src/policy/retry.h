/* SPDX-License-Identifier: MIT */
/* retry.h -- how long to wait before the next attempt (docs/design.md §3): exponential
 * backoff with additive jitter, the provider's Retry-After honoured and weighed against the
 * deadline. Whether the gateway may retry at all, the gateway-wide retry budget that keeps
 * upstream calls a bounded multiple of client requests during a storm, is health/budget.h
 * (rbudget_). Pure: time and randomness are arguments. Design notes:
 * docs/internals/taxonomy.md (retry section). */
#ifndef BSC_POLICY_RETRY_H
#define BSC_POLICY_RETRY_H

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

#endif
