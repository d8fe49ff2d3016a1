/* SPDX-License-Identifier: MIT */
/* adaptive.c -- additive increase, multiplicative decrease of a target's concurrency, the
 * rate following by the same factor. It does not count in-flight requests nor refuse any:
 * the caller reports, the limiter enforces. See docs/internals/adaptive.md. */
#include "health/adaptive.h"

#include <string.h>

void adaptive_init(struct adaptive *a)
{
    memset(a, 0, sizeof(*a));
}

/* The cap the limit works under: the configured one, else the learnt base; 0 = none yet. */
static double cap_of(const struct adaptive *a, uint32_t conf_conc)
{
    return conf_conc ? (double)conf_conc : a->base;
}

bool adaptive_on_limited(struct adaptive *a, uint32_t conf_conc, uint32_t inflight,
                         uint64_t started_ms, uint64_t now_ms)
{
    double cap;

    if (a->cut_ms && started_ms < a->cut_ms)
        return false;
    if (!conf_conc && a->base == 0)
        a->base = inflight > 1 ? (double)inflight : ADAPTIVE_MIN_CONCURRENCY;
    cap = cap_of(a, conf_conc);
    if (a->limit == 0 || a->limit > cap)
        a->limit = cap;
    a->limit *= ADAPTIVE_DECREASE;
    if (a->limit < ADAPTIVE_MIN_CONCURRENCY)
        a->limit = ADAPTIVE_MIN_CONCURRENCY;
    a->cut_ms = now_ms ? now_ms : 1;
    a->decreases++;
    return true;
}

void adaptive_on_success(struct adaptive *a, uint32_t conf_conc)
{
    double cap = cap_of(a, conf_conc);

    if (a->limit == 0 || cap == 0)
        return; /* never limited: nothing to grow back */
    if (a->limit > cap)
        a->limit = cap; /* the configured cap went down */
    if (a->limit >= cap)
        return;
    a->limit += 1.0 / a->limit;
    if (a->limit > cap)
        a->limit = cap;
    a->increases++;
}

void adaptive_effective(const struct adaptive *a, uint32_t conf_conc, uint32_t conf_rpm,
                        struct adaptive_eff *out)
{
    double cap = cap_of(a, conf_conc), limit = a->limit;

    out->concurrency = conf_conc;
    out->rpm = conf_rpm;
    out->factor = 1.0;
    if (limit == 0 || cap == 0)
        return;
    if (limit > cap)
        limit = cap;
    out->factor = limit / cap;
    out->concurrency = (uint32_t)limit;
    if (conf_rpm) {
        double share = out->factor > ADAPTIVE_MIN_RATE_SHARE ? out->factor
                                                             : ADAPTIVE_MIN_RATE_SHARE;
        out->rpm = (uint32_t)(conf_rpm * share);
        out->rpm = out->rpm ? out->rpm : 1;
    }
}
