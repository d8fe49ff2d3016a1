/* SPDX-License-Identifier: MIT */
/* envelope.h -- the bounded budget of one request (docs/design.md §2, §3, §11, §12): the route's
 * envelope, tightened (never loosened) by the client's X-Bascule-* headers, plus the time
 * arithmetic the router needs before each attempt. Pure: <now> is always an argument, no
 * allocation, no globals. Design notes: docs/internals/taxonomy.md (envelope section). */
#ifndef BSC_POLICY_ENVELOPE_H
#define BSC_POLICY_ENVELOPE_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "core/compat.h"
#include "core/err.h"
#include "core/str.h"

struct envelope {
    uint64_t start_ms;    /* monotonic time the envelope was built */
    uint64_t deadline_ms; /* absolute monotonic deadline */
    uint32_t max_attempts;             /* >= 1 */
    uint32_t max_same_target_attempts; /* >= 1, <= max_attempts */
    uint32_t reserve_for_fallback_ms;
    uint32_t max_added_latency_ms;
    double max_cost_usd; /* < 0: no cost limit */
    bool allow_equivalent, allow_fallback;
    enum cfg_side_effects side_effects;
    enum cfg_stream_failure on_stream_failure;
    uint32_t first_token_timeout_ms; /* 0: off */
    uint64_t stream_idle_ms;         /* the longest gap between events once committed */
};

/* The raw request header values that may tighten a route's envelope; each slice is
 * borrowed for the call only, and empty means the header was absent. */
struct envelope_hdrs {
    struct bsc_str deadline_ms;  /* X-Bascule-Deadline-Ms: whole milliseconds >= 1 */
    struct bsc_str max_attempts; /* X-Bascule-Max-Attempts: whole number >= 1 */
    struct bsc_str fallback;     /* X-Bascule-Fallback: none | equivalent | cross_model */
    struct bsc_str side_effects; /* X-Bascule-Side-Effects: none | read_only | write_possible */
};

/* Builds *<out> from the route's envelope <route> and the headers <h> (NULL = none) at
 * monotonic time <now_ms>. Headers only tighten: the smaller deadline and attempt count
 * win, X-Bascule-Fallback can only switch failover/fallback off (cross_model keeps the
 * route's settings, it never enables what the route forbids), X-Bascule-Side-Effects can
 * only move toward write_possible. Values are trimmed; tokens are ASCII case-insensitive;
 * numbers too large to represent are simply larger than the route's and ignored. Returns
 * BSC_OK, or BSC_EINVAL with *<why> (unless <why> is NULL) set to a static message fit for
 * a 400, and *<out> untouched, when a header is malformed: blank, signed, fractional, zero,
 * or an unknown token. A route deadline of 0 (config validation forbids it) gives an
 * envelope that is already exhausted. Never calls back. */
enum bsc_err envelope_build(const struct cfg_envelope *route, const struct envelope_hdrs *h,
                            uint64_t now_ms, struct envelope *out, const char **why);

/* Milliseconds left before the deadline at <now>; 0 once it has passed. */
uint64_t envelope_remaining_ms(const struct envelope *e, uint64_t now);

/* How long the next attempt may take at <now>: the remaining time, minus
 * reserve_for_fallback_ms when <later_tier_exists> -- but the reserve never takes more than
 * half of what remains (a starved attempt and a starved fallback both fail), so the
 * result is at least remaining / 2. Always >= 1 ms, so a timer can be armed; the router
 * checks envelope_remaining_ms() for deadline_exhausted before it asks. */
uint64_t envelope_attempt_timeout_ms(const struct envelope *e, uint64_t now,
                                     bool later_tier_exists);

#endif
