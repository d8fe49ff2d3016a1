/* SPDX-License-Identifier: MIT */
/* shadow_purse.c -- the day's shadow spend against shadow.max_usd_per_day (shadow_purse.h).
 * Integers (nano-dollars) so that the workers add with one atomic operation and a figure read
 * back is the exact sum of the copies' costs as the log lines print them (8 decimals). */
#include <math.h>

#include "router/shadow_purse.h"

#define DAY_MS 86400000ull
#define NUSD   1e9

/* Moves the purse to <day> when it still holds an earlier one. Two workers may both see the
 * old day: one wins the exchange and empties the sum; a cost added between the exchange and
 * the emptying is lost to the new day, a few nano-dollars of one copy at midnight. */
static void roll(struct shadow_purse *p, uint64_t day)
{
    unsigned long long cur = atomic_load(&p->day);

    if (cur < day && atomic_compare_exchange_strong(&p->day, &cur, day))
        atomic_store(&p->spent_nusd, 0);
}

static unsigned long long to_nusd(double usd)
{
    return usd > 0 && isfinite(usd) ? (unsigned long long)llround(usd * NUSD) : 0;
}

bool shadow_purse_allows(struct shadow_purse *p, double cap_usd, uint64_t wall_ms)
{
    if (!(cap_usd > 0))
        return true;
    roll(p, wall_ms / DAY_MS);
    return atomic_load(&p->spent_nusd) < to_nusd(cap_usd);
}

void shadow_purse_add(struct shadow_purse *p, double usd, uint64_t wall_ms)
{
    unsigned long long n = to_nusd(usd);

    roll(p, wall_ms / DAY_MS);
    if (n)
        atomic_fetch_add(&p->spent_nusd, n);
}

double shadow_purse_spent(struct shadow_purse *p, uint64_t wall_ms)
{
    roll(p, wall_ms / DAY_MS);
    return (double)atomic_load(&p->spent_nusd) / NUSD;
}
