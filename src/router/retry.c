/* SPDX-License-Identifier: MIT */
/* retry.c -- backoff, the choice between backoff and Retry-After against the deadline, and
 * the sliding-window retry budget. Decides waits only: whether a kind may be retried at all
 * is the taxonomy's table, and the timer belongs to the request state machine.
 * See docs/internals/taxonomy.md. */
#include "router/retry.h"

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

uint32_t retry_budget_bucket_ms(uint32_t window_ms)
{
    return window_ms < RETRY_BUDGET_BUCKETS ? 1 : window_ms / RETRY_BUDGET_BUCKETS;
}

void retry_budget_init(struct retry_budget *b, double ratio, uint32_t min_per_s,
                       uint32_t window_ms)
{
    memset(b, 0, sizeof(*b));
    if (window_ms < RETRY_BUDGET_BUCKETS)
        window_ms = RETRY_BUDGET_BUCKETS;
    b->ratio = ratio >= 0.0 ? ratio : 0.0; /* also turns NaN into 0 */
    b->floor = (double)min_per_s * (double)window_ms / 1000.0;
    b->bucket_ms = retry_budget_bucket_ms(window_ms);
}

/* Moves the window to <now>, emptying the buckets that fell out of it. */
static void slide(struct retry_budget *b, uint64_t now)
{
    uint64_t slot = now / b->bucket_ms, gap;

    if (slot <= b->head)
        return; /* same bucket, or the clock went back: keep counting in the newest */
    gap = slot - b->head;
    if (gap >= RETRY_BUDGET_BUCKETS) {
        memset(b->firsts, 0, sizeof(b->firsts));
        memset(b->retries, 0, sizeof(b->retries));
    } else {
        for (uint64_t s = b->head + 1; s <= slot; s++) {
            b->firsts[s % RETRY_BUDGET_BUCKETS] = 0;
            b->retries[s % RETRY_BUDGET_BUCKETS] = 0;
        }
    }
    b->head = slot;
}

static void window_sums(const struct retry_budget *b, uint64_t *firsts, uint64_t *retries)
{
    *firsts = 0;
    *retries = 0;
    for (unsigned i = 0; i < RETRY_BUDGET_BUCKETS; i++) {
        *firsts += b->firsts[i];
        *retries += b->retries[i];
    }
}

void retry_budget_note_first(struct retry_budget *b, uint64_t now)
{
    slide(b, now);
    b->firsts[b->head % RETRY_BUDGET_BUCKETS]++;
    b->total_firsts++;
}

bool retry_budget_try_take(struct retry_budget *b, uint64_t now)
{
    uint64_t firsts, retries;

    slide(b, now);
    window_sums(b, &firsts, &retries);
    if ((double)retries >= b->ratio * (double)firsts + b->floor) {
        b->total_rejections++;
        return false;
    }
    b->retries[b->head % RETRY_BUDGET_BUCKETS]++;
    b->total_retries++;
    return true;
}

void retry_budget_stats(struct retry_budget *b, uint64_t now, struct retry_budget_stats *out)
{
    slide(b, now);
    window_sums(b, &out->firsts_in_window, &out->retries_in_window);
    out->allowance = b->ratio * (double)out->firsts_in_window + b->floor;
    out->total_firsts = b->total_firsts;
    out->total_retries = b->total_retries;
    out->total_rejections = b->total_rejections;
}
