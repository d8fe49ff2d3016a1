/* SPDX-License-Identifier: MIT */
/* limits_fleet.h -- inside limits/: how a limit set (limits.c) decides with the fleet's
 * shared buckets and leases (limits_fleet.c) instead of its own counters. Every call but
 * lim__fleet_send runs with the set's lock held. */
#ifndef BSC_LIMITS_LIMITS_FLEET_H
#define BSC_LIMITS_LIMITS_FLEET_H

#include "limits/limits.h"

/* The asks one acquire decided to send, sent after the lock is released. */
struct lim__asks {
    unsigned n;
    struct {
        enum lim_kind kind;
        uint64_t need, want;
        uint32_t cap, burst;
    } a[LIM_KIND_COUNT];
};

/* Whether <s> decides with the fleet now: shared, the share up, no ask overdue (one past
 * timeout_ms turns the set local for a while). */
bool lim__fleet_on(struct lim_set *s, uint64_t now_ms);
/* The caps a shared set enforces on its own while the fleet is out of reach: <c> divided
 * by store.instances (at least 1 where set). */
struct lim_caps lim__local_caps(const struct lim_set *s, struct lim_caps c);
/* The verdict on the fleet's grants. <asks> NULL (a peek): room not granted yet is presumed
 * (the take asks). Otherwise what is missing is asked for (into <asks>) and the verdict is
 * LIM_WAIT_FLEET, unless a limit is known to be out of room. */
struct lim_verdict lim__fleet_check(struct lim_set *s, struct lim_caps c, uint64_t tokens,
                                    uint64_t now_ms, struct lim__asks *asks);
/* Spends the grants of one acquire. */
void lim__fleet_take(struct lim_set *s, struct lim_caps c, uint64_t tokens);
/* Puts back one acquire's grants (it never started). */
void lim__fleet_untake(struct lim_set *s, struct lim_caps c, uint64_t tokens);
/* Corrects the token grants after a release (<used> instead of <estimated>) and returns the
 * slots to give back to the fleet: those held beyond a slice of spare ones. */
uint32_t lim__fleet_settle(struct lim_set *s, struct lim_caps c, uint64_t estimated,
                           uint64_t used);
/* Takes the slots held beyond the requests in flight and a slice of spare ones off the
 * set, counted as giving; returns how many to give back (lim__fleet_send). Called at every
 * release, local or not: slots leased before the set turned local go back all the same. */
uint32_t lim__fleet_spare(struct lim_set *s, struct lim_caps c);
/* As lim__fleet_spare, for a renewal: slots spare at this renewal and at the one before
 * (a grant whose requests left, or were decided locally while it was late) go back. */
uint32_t lim__fleet_idle(struct lim_set *s, struct lim_caps c);
/* Without the lock: sends <asks> and the <slots> given back. */
void lim__fleet_send(struct lim_set *s, const struct lim__asks *asks, uint32_t slots);

#endif
