/* SPDX-License-Identifier: MIT */
/* retry.c -- backoff, the choice between backoff and Retry-After against the deadline, and
 * the sliding-window retry budget. Decides waits only: whether a kind may be retried at all
 * is the taxonomy's table, and the timer belongs to the request state machine.
 * See docs/internals/taxonomy.md. */
#include "policy/retry.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "config/config.h"
#include "core/compat.h"

/* [0, 1], with NaN (and anything not >= 0) as 0. */
static double clamp01(double x)
{
    if (!(x >= 0.0))
        return 0.0;
    return x > 1.0 ? 1.0 : x;
}

const char *retry_delay_why_name(enum retry_delay_why why)
{
    switch (why) {
    case RETRY_DELAY_BACKOFF:
        return "backoff";
    case RETRY_DELAY_RETRY_AFTER:
        return "retry_after";
    default:
        return "invalid";
    }
}

uint32_t retry_backoff_ms(const struct cfg_retry *r, unsigned n, double rand01)
{
    uint64_t d, extra;

    /* base < 2^32 and n < 32, so the shift cannot overflow 64 bits. */
    d = n >= 32 ? UINT64_MAX : (uint64_t)r->base_ms << n;
    if (r->base_ms == 0)
        d = 0;
    if (d > r->max_ms)
        d = r->max_ms;
    extra = (uint64_t)((double)d * clamp01(r->jitter) * clamp01(rand01));
    d += extra;
    return d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
}

struct retry_delay retry_choose_delay(const struct cfg_retry *r, unsigned n,
                                      int64_t retry_after_ms, double rand01,
                                      uint64_t remaining_ms)
{
    struct retry_delay d;

    if (retry_after_ms >= 0) {
        d.why = RETRY_DELAY_RETRY_AFTER;
        d.delay_ms = retry_after_ms > UINT32_MAX ? UINT32_MAX : (uint32_t)retry_after_ms;
    } else {
        d.why = RETRY_DELAY_BACKOFF;
        d.delay_ms = retry_backoff_ms(r, n, rand01);
    }
    d.exceeds_deadline = d.delay_ms >= remaining_ms;
    return d;
}
