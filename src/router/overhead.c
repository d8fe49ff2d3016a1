/* SPDX-License-Identifier: MIT */
/* overhead.c -- the gateway's own time in a request: from its head to now, less every
 * attempt's time with its upstream, every backoff before an attempt and the time queued for
 * a limit. What is left is parsing, routing, translation, the store and waiting for the
 * worker's loop: bascule_overhead_seconds and x-bascule-overhead-ms (docs/api.md). */
#include <stdio.h>
#include <string.h>

#include "core/str.h"
#include "policy/attempt.h"
#include "router/req_attempt.h"
#include "router/overhead.h"

uint64_t req_overhead_us(uint64_t start_us, const struct req_attempts *att, uint64_t queued_ms,
                         uint64_t now_us)
{
    uint64_t elapsed = now_us > start_us ? now_us - start_us : 0;
    uint64_t waited = queued_ms * 1000;

    for (unsigned i = 0; i < att->n; i++) {
        const struct attempt *a = &att->recs[i];
        uint64_t end = a->end_us ? a->end_us : now_us;

        waited += (end > a->start_us ? end - a->start_us : 0) + (uint64_t)a->delay_ms * 1000;
    }
    return elapsed > waited ? elapsed - waited : 0;
}

/* Below 2^42 ms the double us / 1e3 lies within 2^-12 ms of the exact quotient (one
 * correctly rounded division of an exact integer), nearer than half a thousandth: %.3f of it
 * prints the exact quotient, which the integer digits give directly. Above (past a century),
 * printf itself. */
#define OVERHEAD_EXACT_US (1000ull << 42)

void req_overhead_ms_text(char out[REQ_OVERHEAD_MS_TEXT_MAX], uint64_t us)
{
    char tmp[BSC_NUM_TEXT_MAX];
    const char *ms;
    size_t n;

    if (us >= OVERHEAD_EXACT_US) {
        snprintf(out, REQ_OVERHEAD_MS_TEXT_MAX, "%.3f", (double)us / 1e3);
        return;
    }
    ms = bsc_num_text(tmp, us / 1000, 10);
    n = (size_t)(tmp + BSC_NUM_TEXT_MAX - ms);
    memcpy(out, ms, n);
    out[n] = '.';
    out[n + 1] = (char)('0' + us / 100 % 10);
    out[n + 2] = (char)('0' + us / 10 % 10);
    out[n + 3] = (char)('0' + us % 10);
    out[n + 4] = '\0';
}
