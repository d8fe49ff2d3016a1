/* SPDX-License-Identifier: MIT */
/* pick.c -- the balance modes: priority, weighted, least_latency, cheapest. One static
 * function per mode, chosen by pick_next(). Eligibility is decided by the caller; this file
 * only ranks. See docs/internals/breaker.md. */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/pick.h"

static bool measured(double ms)
{
    return ms >= 0.0; /* false for NaN too */
}

static double clip01(double x)
{
    if (!(x > 0.0))
        return 0.0; /* NaN and negatives */
    return x > 1.0 ? 1.0 : x;
}

static int pick_priority(const struct pick_cand *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (c[i].eligible)
            return (int)i;
    }
    return -1;
}

static double effective_weight(const struct pick_cand *c)
{
    return (double)c->weight * clip01(c->ramp_fraction);
}

static int pick_weighted(const struct pick_cand *c, size_t n, double rand01)
{
    double total = 0.0, draw, cum = 0.0;
    int last = -1;

    for (size_t i = 0; i < n; i++) {
        if (c[i].eligible)
            total += effective_weight(&c[i]);
    }
    if (!(total > 0.0))
        return pick_priority(c, n);
    /* clip01 maps 1.0 to 1.0; the "last" fallback below covers that draw and any rounding
     * that leaves draw >= the final cumulative sum. */
    draw = clip01(rand01) * total;
    for (size_t i = 0; i < n; i++) {
        double w;

        if (!c[i].eligible)
            continue;
        w = effective_weight(&c[i]);
        if (w <= 0.0)
            continue;
        cum += w;
        last = (int)i;
        if (draw < cum)
            return (int)i;
    }
    return last;
}

double pick_score(const struct pick_cand *c)
{
    double base;

    if (!measured(c->ewma_latency_ms))
        return -1.0;
    base = c->ewma_latency_ms;
    if (measured(c->ewma_ttft_ms))
        base = (base + c->ewma_ttft_ms) / 2.0;
    if (base < PICK_MIN_BASE_MS)
        base = PICK_MIN_BASE_MS;
    return base * (1.0 + PICK_INFLIGHT_PENALTY * (double)c->inflight);
}

/* Unmeasured candidates go first so that every target gets a latency sample; among them the
 * least busy one, so a burst of new requests spreads over all of them instead of piling on
 * the first before any has answered. */
static int pick_unmeasured(const struct pick_cand *c, size_t n)
{
    int best = -1;

    for (size_t i = 0; i < n; i++) {
        if (!c[i].eligible || measured(c[i].ewma_latency_ms))
            continue;
        if (best < 0 || c[i].inflight < c[best].inflight)
            best = (int)i;
    }
    return best;
}

static int pick_least_latency(const struct pick_cand *c, size_t n)
{
    int best = pick_unmeasured(c, n);
    double best_score = 0.0;

    if (best >= 0)
        return best;
    for (size_t i = 0; i < n; i++) {
        double s;

        if (!c[i].eligible)
            continue;
        s = pick_score(&c[i]);
        if (best < 0 || s < best_score) {
            best = (int)i;
            best_score = s;
        }
    }
    return best;
}

static int pick_cheapest(const struct pick_cand *c, size_t n)
{
    int best = -1;

    for (size_t i = 0; i < n; i++) {
        if (!c[i].eligible)
            continue;
        /* Strictly lower wins, so ties keep tier order; a NaN price never wins over a
         * number but is still chosen when it is the only candidate. */
        if (best < 0 || c[i].price_per_mtok < c[best].price_per_mtok ||
            (isnan(c[best].price_per_mtok) && !isnan(c[i].price_per_mtok)))
            best = (int)i;
    }
    return best;
}

int pick_next(const struct pick_cand *c, size_t n, enum cfg_balance balance, double rand01)
{
    if (c == NULL || n == 0)
        return -1;
    switch (balance) {
    case CFG_BALANCE_WEIGHTED:
        return pick_weighted(c, n, rand01);
    case CFG_BALANCE_LEAST_LATENCY:
        return pick_least_latency(c, n);
    case CFG_BALANCE_CHEAPEST:
        return pick_cheapest(c, n);
    case CFG_BALANCE_PRIORITY:
    default:
        return pick_priority(c, n);
    }
}

double pick_blend_price(const struct cfg_price *price)
{
    return (3.0 * price->input_per_mtok + price->output_per_mtok) / 4.0;
}
