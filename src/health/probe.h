/* SPDX-License-Identifier: MIT */
/* probe.h -- active health checks (docs/design.md §8): per provider, on its health.interval_ms, a
 * list-models request (probe: models) or a one-token completion against its first
 * target (probe: completion), built by the provider's adapter, run on one worker's loop
 * without blocking. Results feed the shared routing state: health up/down per target, and
 * a failed probe counts as an infrastructure failure for the breaker. The same loop
 * re-verifies refused keys (health.key_reverify_ms): a list-models request with that key
 * puts it back in rotation or keeps it out (health/keys.h). */
#ifndef BSC_HEALTH_PROBE_H
#define BSC_HEALTH_PROBE_H

#include <uv.h>

#include "upstream/upstream.h"

struct hstate;
struct metrics;
struct prober;

/* Starts probing on <loop>, sending through <up> (a multi of the same loop), feeding <hs>
 * and counting in <metrics> shard <shard>. Returns NULL when out of memory. */
struct prober *prober_start(uv_loop_t *loop, struct up_multi *up, struct hstate *hs,
                            struct metrics *metrics, unsigned shard);
/* Stops the timer and cancels probes in flight; frees through the loop. */
void prober_stop(struct prober *p);

#endif
