/* SPDX-License-Identifier: MIT */
/* probe.h -- active health checks (docs/design.md §8): per provider, on its health.interval_ms, a
 * list-models request (probe: models) or a one-token completion against its first
 * target (probe: completion), built by the provider's adapter, run on one worker's loop
 * without blocking. Results feed the shared routing state: health up/down per target, and
 * a failed probe counts as an infrastructure failure for the breaker. The same loop
 * re-verifies refused keys (health.key_reverify_ms): a list-models request with that key
 * puts it back in rotation or keeps it out (health/keys.h). */
#ifndef BSC_ROUTER_PROBE_H
#define BSC_ROUTER_PROBE_H

#include "router/worker.h"

struct prober;

/* Starts probing from <w>'s loop. Returns NULL when out of memory. */
struct prober *prober_start(struct worker *w);
/* Stops the timer and cancels probes in flight; frees through the loop. */
void prober_stop(struct prober *p);

#endif
