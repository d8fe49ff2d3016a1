/* SPDX-License-Identifier: MIT */
/* shadow_purse.h -- what the shadow copies of every route spent today, against
 * `shadow.max_usd_per_day`. Shadow cost is nobody's: no client's budget, no route's envelope;
 * this purse is the one bound on it. One per gateway process, shared by the workers (atomics),
 * kept across reloads; a day is a UTC day of the wall clock. See docs/internals/shadow.md. */
#ifndef BSC_ROUTER_SHADOW_PURSE_H
#define BSC_ROUTER_SHADOW_PURSE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Zeroed memory is an empty purse. */
struct shadow_purse {
    atomic_ullong day;        /* the UTC day (wall ms / 86,400,000) <spent_nusd> belongs to */
    atomic_ullong spent_nusd; /* spent that day, in nano-dollars */
};

/* True when a copy may start at wall time <wall_ms> under a cap of <cap_usd> a day (0: no
 * cap): what was spent today is below the cap. Copies in flight are not counted until they
 * end, so the day can overrun the cap by the cost of the copies running when it was reached
 * (at most each route's max_concurrency). Never blocks. */
bool shadow_purse_allows(struct shadow_purse *p, double cap_usd, uint64_t wall_ms);

/* Adds the cost <usd> (>= 0) of a copy that ended at <wall_ms> to its day. */
void shadow_purse_add(struct shadow_purse *p, double usd, uint64_t wall_ms);

/* What was spent on the day of <wall_ms>, in dollars (0 for a day not begun). */
double shadow_purse_spent(struct shadow_purse *p, uint64_t wall_ms);

#endif
