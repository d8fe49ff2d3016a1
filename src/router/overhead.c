/* SPDX-License-Identifier: MIT */
/* overhead.c -- the gateway's own time in a request: from its head to now, less every
 * attempt's time with its upstream, every backoff before an attempt and the time queued for
 * a limit. What is left is parsing, routing, translation, the store and waiting for the
 * worker's loop: bascule_overhead_seconds and x-bascule-overhead-ms (docs/api.md). */
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
