/* SPDX-License-Identifier: MIT */
/* budget.c -- the sliding-window retry budget: buckets of first attempts and retries, a
 * retry allowed while the window's retries stay under ratio * firsts + floor. */
#include "health/budget.h"

#include <string.h>

uint32_t rbudget_bucket_ms(uint32_t window_ms)
{
    return window_ms < RBUDGET_BUCKETS ? 1 : window_ms / RBUDGET_BUCKETS;
}

void rbudget_init(struct rbudget *b, double ratio, uint32_t min_per_s, uint32_t window_ms)
{
    memset(b, 0, sizeof(*b));
    if (window_ms < RBUDGET_BUCKETS)
        window_ms = RBUDGET_BUCKETS;
    b->ratio = ratio >= 0.0 ? ratio : 0.0; /* also turns NaN into 0 */
    b->floor = (double)min_per_s * (double)window_ms / 1000.0;
    b->bucket_ms = rbudget_bucket_ms(window_ms);
}

/* Moves the window to <now>, emptying the buckets that fell out of it. */
static void slide(struct rbudget *b, uint64_t now)
{
    uint64_t slot = now / b->bucket_ms, gap;

    if (slot <= b->head)
        return; /* same bucket, or the clock went back: keep counting in the newest */
    gap = slot - b->head;
    if (gap >= RBUDGET_BUCKETS) {
        memset(b->firsts, 0, sizeof(b->firsts));
        memset(b->retries, 0, sizeof(b->retries));
    } else {
        for (uint64_t s = b->head + 1; s <= slot; s++) {
            b->firsts[s % RBUDGET_BUCKETS] = 0;
            b->retries[s % RBUDGET_BUCKETS] = 0;
        }
    }
    b->head = slot;
}

static void window_sums(const struct rbudget *b, uint64_t *firsts, uint64_t *retries)
{
    *firsts = 0;
    *retries = 0;
    for (unsigned i = 0; i < RBUDGET_BUCKETS; i++) {
        *firsts += b->firsts[i];
        *retries += b->retries[i];
    }
}

void rbudget_note_first(struct rbudget *b, uint64_t now)
{
    slide(b, now);
    b->firsts[b->head % RBUDGET_BUCKETS]++;
    b->total_firsts++;
}

bool rbudget_available(struct rbudget *b, uint64_t now)
{
    uint64_t firsts, retries;

    slide(b, now);
    window_sums(b, &firsts, &retries);
    return (double)retries < b->ratio * (double)firsts + b->floor;
}

bool rbudget_try_take(struct rbudget *b, uint64_t now)
{
    if (!rbudget_available(b, now)) {
        b->total_rejections++;
        return false;
    }
    b->retries[b->head % RBUDGET_BUCKETS]++;
    b->total_retries++;
    return true;
}

void rbudget_stats(struct rbudget *b, uint64_t now, struct rbudget_stats *out)
{
    slide(b, now);
    window_sums(b, &out->firsts_in_window, &out->retries_in_window);
    out->allowance = b->ratio * (double)out->firsts_in_window + b->floor;
    out->total_firsts = b->total_firsts;
    out->total_retries = b->total_retries;
    out->total_rejections = b->total_rejections;
}
