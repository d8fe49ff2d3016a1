/* SPDX-License-Identifier: MIT */
/* envelope.c -- builds a request's envelope from its route and the X-Bascule-* headers,
 * which may only tighten it (docs/design.md §11), and answers "how much time is left" and "how long
 * may this attempt take". Does not decide retries (retry.c) nor read the clock.
 * See docs/internals/taxonomy.md. */
#include "policy/envelope.h"

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "core/compat.h"
#include "core/err.h"
#include "core/str.h"

enum hdr_fallback { HDR_FB_NONE = 0, HDR_FB_EQUIVALENT, HDR_FB_CROSS_MODEL, HDR_FB_COUNT };

static const char *const fallback_tokens[HDR_FB_COUNT] = {
    [HDR_FB_NONE] = "none",
    [HDR_FB_EQUIVALENT] = "equivalent",
    [HDR_FB_CROSS_MODEL] = "cross_model",
};

static const char *const side_effect_tokens[CFG_SE_COUNT] = {
    [CFG_SE_NONE] = "none",
    [CFG_SE_READ_ONLY] = "read_only",
    [CFG_SE_WRITE_POSSIBLE] = "write_possible",
};

/* A whole positive number; saturates at UINT64_MAX instead of failing on overflow. */
static bool parse_positive(struct bsc_str s, uint64_t *out)
{
    unsigned long long v;

    s = bsc_str_trim(s);
    if (s.len == 0)
        return false;
    for (size_t i = 0; i < s.len; i++) {
        if (s.p[i] < '0' || s.p[i] > '9')
            return false;
    }
    if (!bsc_str_to_u64(s, &v))
        v = UINT64_MAX; /* only digits, so this is overflow: "very large" */
    if (v == 0)
        return false;
    *out = v;
    return true;
}

/* The index of <s> (trimmed, case-insensitive) in <tokens>, or -1. */
static int parse_token(struct bsc_str s, const char *const *tokens, int n)
{
    s = bsc_str_trim(s);
    for (int i = 0; i < n; i++) {
        if (bsc_str_ieq(s, bsc_str_cstr(tokens[i])))
            return i;
    }
    return -1;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static void from_route(const struct cfg_envelope *route, uint64_t now_ms, struct envelope *e)
{
    *e = (struct envelope){
        .start_ms = now_ms,
        .max_attempts = route->max_attempts ? route->max_attempts : 1,
        .max_same_target_attempts = route->max_same_target_attempts,
        .reserve_for_fallback_ms = route->reserve_for_fallback_ms,
        .max_added_latency_ms = route->max_added_latency_ms,
        .max_cost_usd = route->max_cost_usd,
        .allow_equivalent = route->allow_equivalent_failover,
        .allow_fallback = route->allow_cross_model_fallback,
        .side_effects = route->side_effects,
        .on_stream_failure = route->on_stream_failure,
        .first_token_timeout_ms = route->first_token_timeout_ms,
        .stream_idle_ms = route->stream_idle_timeout_ms,
    };
}

/* Applies the headers to <e>, whose deadline is still relative (a duration). */
static enum bsc_err tighten(struct envelope *e, const struct envelope_hdrs *h, const char **why)
{
    uint64_t v;
    int tok;

    if (h->deadline_ms.len) {
        if (!parse_positive(h->deadline_ms, &v)) {
            *why = "X-Bascule-Deadline-Ms must be a whole number of milliseconds, at least 1";
            return BSC_EINVAL;
        }
        e->deadline_ms = min_u64(e->deadline_ms, v);
    }
    if (h->max_attempts.len) {
        if (!parse_positive(h->max_attempts, &v)) {
            *why = "X-Bascule-Max-Attempts must be a whole number, at least 1";
            return BSC_EINVAL;
        }
        e->max_attempts = (uint32_t)min_u64(e->max_attempts, v);
    }
    if (h->fallback.len) {
        tok = parse_token(h->fallback, fallback_tokens, HDR_FB_COUNT);
        if (tok < 0) {
            *why = "X-Bascule-Fallback must be none, equivalent or cross_model";
            return BSC_EINVAL;
        }
        if (tok == HDR_FB_NONE)
            e->allow_equivalent = false;
        if (tok != HDR_FB_CROSS_MODEL)
            e->allow_fallback = false;
    }
    if (h->side_effects.len) {
        tok = parse_token(h->side_effects, side_effect_tokens, CFG_SE_COUNT);
        if (tok < 0) {
            *why = "X-Bascule-Side-Effects must be none, read_only or write_possible";
            return BSC_EINVAL;
        }
        if ((enum cfg_side_effects)tok > e->side_effects)
            e->side_effects = (enum cfg_side_effects)tok;
    }
    return BSC_OK;
}

enum bsc_err envelope_build(const struct cfg_envelope *route, const struct envelope_hdrs *h,
                            uint64_t now_ms, struct envelope *out, const char **why)
{
    struct envelope e;
    enum bsc_err err;
    const char *msg = NULL;

    from_route(route, now_ms, &e);
    e.deadline_ms = route->deadline_ms; /* relative until the headers are applied */
    if (h) {
        err = tighten(&e, h, &msg);
        if (err) {
            if (why)
                *why = msg;
            return err;
        }
    }
    e.max_same_target_attempts = (uint32_t)min_u64(e.max_same_target_attempts, e.max_attempts);
    if (e.max_same_target_attempts == 0)
        e.max_same_target_attempts = 1;
    if (!e.stream_idle_ms) /* the default: the deadline as the request tightened it */
        e.stream_idle_ms = e.deadline_ms;
    e.deadline_ms = e.deadline_ms > UINT64_MAX - now_ms ? UINT64_MAX : now_ms + e.deadline_ms;
    *out = e;
    return BSC_OK;
}

uint64_t envelope_remaining_ms(const struct envelope *e, uint64_t now)
{
    return e->deadline_ms > now ? e->deadline_ms - now : 0;
}

uint64_t envelope_attempt_timeout_ms(const struct envelope *e, uint64_t now,
                                     bool later_tier_exists)
{
    uint64_t rem = envelope_remaining_ms(e, now), t = rem;

    if (later_tier_exists) {
        uint64_t floor = rem / 2;

        t = rem > e->reserve_for_fallback_ms ? rem - e->reserve_for_fallback_ms : 0;
        if (t < floor)
            t = floor;
    }
    return t ? t : 1;
}
