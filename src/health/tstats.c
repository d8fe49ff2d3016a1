/* SPDX-License-Identifier: MIT */
/* tstats.c -- per-target passive statistics: two EWMAs, an in-flight gauge and counters.
 * No windows and no histograms here: latency histograms belong to metrics/. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "health/tstats.h"

static void ewma_add(double *avg, bool *has, double sample)
{
    if (!isfinite(sample) || sample < 0.0)
        return;
    if (!*has) {
        *avg = sample;
        *has = true;
        return;
    }
    *avg += TSTATS_ALPHA * (sample - *avg);
}

void tstats_init(struct tstats *t)
{
    memset(t, 0, sizeof(*t));
}

void tstats_latency(struct tstats *t, double ms)
{
    ewma_add(&t->ewma_latency_ms, &t->has_latency, ms);
}

void tstats_ttft(struct tstats *t, double ms)
{
    ewma_add(&t->ewma_ttft_ms, &t->has_ttft, ms);
}

double tstats_latency_ms(const struct tstats *t)
{
    return t->has_latency ? t->ewma_latency_ms : TSTATS_UNMEASURED;
}

double tstats_ttft_ms(const struct tstats *t)
{
    return t->has_ttft ? t->ewma_ttft_ms : TSTATS_UNMEASURED;
}

void tstats_inflight_inc(struct tstats *t)
{
    if (t->inflight < UINT32_MAX)
        t->inflight++;
}

void tstats_inflight_dec(struct tstats *t)
{
    if (t->inflight > 0)
        t->inflight--;
}

uint32_t tstats_inflight(const struct tstats *t)
{
    return t->inflight;
}

void tstats_success(struct tstats *t)
{
    t->successes++;
}

void tstats_failure(struct tstats *t, int kind, uint64_t now_ms)
{
    t->failures++;
    t->last_error = kind;
    t->last_error_ms = now_ms;
}
