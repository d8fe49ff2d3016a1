/* SPDX-License-Identifier: MIT */
/* test_limits_fleet.c -- a limit set sharing the fleet's limits (limits/limits_fleet.c)
 * through a recording share, with an injected clock: what it asks for and when (one ask
 * per limit at a time, slices for large limits, one for small ones), grants spent without
 * asking again, a refusal turned into a known wait, spare slots given back, and the local
 * fallback (caps divided by store.instances) when the share is down or an ask is overdue. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "limits/limits.h"

#define T0 1000000u /* ms */

struct rec {
    struct lim_share sh;
    unsigned asks, gives, wakes;
    enum lim_kind kind;
    uint64_t need, want;
    uint32_t cap, burst, given;
    uint64_t woken;
};

static void rec_ask(struct lim_share *sh, struct lim_set *s, enum lim_kind kind, uint64_t need,
                    uint64_t want, uint32_t cap, uint32_t burst)
{
    struct rec *r = (struct rec *)sh;

    (void)s;
    r->burst = burst;
    r->asks++;
    r->kind = kind;
    r->need = need;
    r->want = want;
    r->cap = cap;
}

static void rec_give(struct lim_share *sh, struct lim_set *s, uint32_t slots)
{
    struct rec *r = (struct rec *)sh;

    (void)s;
    r->gives++;
    r->given += slots;
}

static void rec_wake(void *ctx, uint64_t waiters)
{
    struct rec *r = ctx;

    r->wakes++;
    r->woken |= waiters;
}

static void setup(struct rec *r, struct lim_set *s, struct lim_caps caps, uint32_t instances)
{
    memset(r, 0, sizeof(*r));
    r->sh.ask = rec_ask;
    r->sh.give = rec_give;
    r->sh.wake = rec_wake;
    r->sh.wake_ctx = r;
    r->sh.instances = instances;
    r->sh.timeout_ms = 50;
    atomic_init(&r->sh.up, true);
    lim_set_init(s, caps);
    s->share = &r->sh;
    s->subject = 'c';
    s->id = "alice";
}

/* rpm 10: one token per ask (exact), one ask out at a time, a grant spent without asking. */
static void test_small_rate_is_exact(void **state)
{
    struct rec r;
    struct lim_set s;
    struct lim_verdict v;

    (void)state;
    setup(&r, &s, (struct lim_caps){.rpm = 10}, 2);
    v = lim_acquire(&s, 0, T0);
    assert_int_equal(v.kind, LIM_RPM);
    assert_int_equal(v.wait_ms, LIM_WAIT_FLEET);
    assert_int_equal(r.asks, 1);
    assert_int_equal(r.kind, LIM_RPM);
    assert_int_equal(r.need, 1);
    assert_int_equal(r.want, 1);
    assert_int_equal(r.cap, 10);
    lim_wait_on(&s, 3);
    assert_int_equal(lim_acquire(&s, 0, T0 + 1).wait_ms, LIM_WAIT_FLEET);
    assert_int_equal(r.asks, 1); /* the same answer wakes both */
    /* A peek presumes room not yet asked for, so the decision picks the target. */
    assert_int_equal(lim_peek(&s, 0, T0 + 1).kind, LIM_NONE);
    lim_fleet_granted(&s, LIM_RPM, 1, 0, T0 + 2);
    assert_int_equal(r.wakes, 1);
    assert_true(r.woken & (1u << 3));
    assert_int_equal(lim_acquire(&s, 0, T0 + 2).kind, LIM_NONE);
    assert_int_equal(lim_acquire(&s, 0, T0 + 2).wait_ms, LIM_WAIT_FLEET);
    assert_int_equal(r.asks, 2);
    /* The fleet's bucket is empty for 6 s: a known wait, no more asks meanwhile. */
    lim_fleet_granted(&s, LIM_RPM, 0, 6000, T0 + 3);
    v = lim_acquire(&s, 0, T0 + 4);
    assert_int_equal(v.kind, LIM_RPM);
    assert_int_equal(v.wait_ms, 5999);
    v = lim_peek(&s, 0, T0 + 4);
    assert_int_equal(v.kind, LIM_RPM);
    assert_int_equal(r.asks, 2);
    assert_int_equal(lim_acquire(&s, 0, T0 + 6003).wait_ms, LIM_WAIT_FLEET);
    assert_int_equal(r.asks, 3);
    lim_set_destroy(&s);
}

/* rpm 1,000,000 over 2 instances: slices of 1,000,000 / (2 x 16) = 31,250 tokens. */
static void test_large_rate_takes_slices(void **state)
{
    struct rec r;
    struct lim_set s;

    (void)state;
    setup(&r, &s, (struct lim_caps){.rpm = 1000000}, 2);
    assert_int_equal(lim_acquire(&s, 0, T0).wait_ms, LIM_WAIT_FLEET);
    assert_int_equal(r.want, 31250);
    lim_fleet_granted(&s, LIM_RPM, 31250, 0, T0 + 1);
    for (int i = 0; i < 31250; i++)
        assert_int_equal(lim_acquire(&s, 0, T0 + 1).kind, LIM_NONE);
    assert_int_equal(r.asks, 1);
    assert_int_equal(lim_acquire(&s, 0, T0 + 1).wait_ms, LIM_WAIT_FLEET);
    assert_int_equal(r.asks, 2);
    lim_set_destroy(&s);
}

/* A slice never exceeds the burst (the fleet's rate grants no more at once), the ask carries
 * the burst, and while the fleet is away the burst is divided like the limit. */
static void test_slice_within_burst(void **state)
{
    struct rec r;
    struct lim_set s;
    unsigned admitted = 0;

    (void)state;
    setup(&r, &s, (struct lim_caps){.rpm = 1000000, .rpm_burst = 1000}, 2);
    assert_int_equal(lim_acquire(&s, 0, T0).wait_ms, LIM_WAIT_FLEET);
    assert_int_equal(r.want, 1000);
    assert_int_equal(r.burst, 1000);
    lim_set_destroy(&s);

    setup(&r, &s, (struct lim_caps){.rpm = 1200, .rpm_burst = 100}, 2);
    atomic_store(&r.sh.up, false);
    for (int i = 0; i < 200; i++)
        admitted += lim_acquire(&s, 0, T0).kind == LIM_NONE;
    assert_int_equal(admitted, 50); /* 100 / 2 at once while Redis is away */
    lim_set_destroy(&s);
}

/* tpm: an estimate larger than the slice asks for the estimate; usage corrects the grant. */
static void test_tokens(void **state)
{
    struct rec r;
    struct lim_set s;

    (void)state;
    setup(&r, &s, (struct lim_caps){.tpm = 1600}, 1);
    assert_int_equal(lim_acquire(&s, 300, T0).wait_ms, LIM_WAIT_FLEET);
    assert_int_equal(r.kind, LIM_TPM);
    assert_int_equal(r.need, 300);
    assert_int_equal(r.want, 300); /* slice 1600 / 16 = 100 < 300 */
    lim_fleet_granted(&s, LIM_TPM, 300, 0, T0 + 1);
    assert_int_equal(lim_acquire(&s, 300, T0 + 1).kind, LIM_NONE);
    lim_release(&s, 300, 100, T0 + 2); /* 200 back to this process's grant */
    assert_int_equal(lim_acquire(&s, 200, T0 + 2).kind, LIM_NONE);
    assert_int_equal(r.asks, 1);
    lim_set_destroy(&s);
}

/* max_concurrency 2: slots asked one by one, a spare slot given back at release; a renewal
 * counts a slot until its give is sent, and writes no count while an ask is out. */
static void test_slots(void **state)
{
    struct rec r;
    struct lim_set s;
    struct lim_verdict v;
    bool exact;

    (void)state;
    setup(&r, &s, (struct lim_caps){.conc = 2}, 2);
    assert_int_equal(lim_acquire(&s, 0, T0).wait_ms, LIM_WAIT_FLEET);
    assert_int_equal(r.kind, LIM_CONC);
    assert_int_equal(r.want, 1);
    lim_fleet_granted(&s, LIM_CONC, 1, 0, T0 + 1);
    assert_int_equal(lim_acquire(&s, 0, T0 + 1).kind, LIM_NONE);
    assert_int_equal(lim_fleet_held(&s, &exact), 1);
    assert_true(exact);
    assert_int_equal(lim_acquire(&s, 0, T0 + 1).wait_ms, LIM_WAIT_FLEET);
    s.fl.taking = 1; /* the share sent the ask: its grant may be applied, not read yet */
    assert_int_equal(lim_fleet_held(&s, &exact), 1);
    assert_false(exact);
    s.fl.taking = 0;
    lim_fleet_granted(&s, LIM_CONC, 0, 0, T0 + 2); /* the other process holds the other */
    v = lim_acquire(&s, 0, T0 + 3);
    assert_int_equal(v.kind, LIM_CONC);
    assert_true(v.wait_ms > 0 && v.wait_ms <= 25); /* asked again after a short poll */
    lim_release(&s, 0, 0, T0 + 4);
    assert_int_equal(r.gives, 1);
    assert_int_equal(r.given, 1);
    assert_int_equal(lim_fleet_held(&s, &exact), 1); /* the give is not sent yet */
    lim_fleet_gave(&s, 1);
    assert_int_equal(lim_fleet_held(&s, &exact), 0);
    lim_fleet_gave(&s, 1); /* never below zero */
    assert_int_equal(lim_fleet_held(&s, &exact), 0);
    lim_set_destroy(&s);
}

/* A provider's default max_concurrency is each process's own: never asked, never divided. */
static void test_own_concurrency(void **state)
{
    struct rec r;
    struct lim_set s;
    struct lim_verdict v;

    (void)state;
    setup(&r, &s, (struct lim_caps){.conc = 2, .conc_own = true}, 2);
    assert_int_equal(lim_acquire(&s, 0, T0).kind, LIM_NONE);
    assert_int_equal(lim_acquire(&s, 0, T0).kind, LIM_NONE);
    v = lim_acquire(&s, 0, T0);
    assert_int_equal(v.kind, LIM_CONC);
    assert_int_equal(v.wait_ms, -1);
    lim_release(&s, 0, 0, T0);
    assert_int_equal(r.asks + r.gives, 0);
    atomic_store(&r.sh.up, false);
    assert_int_equal(lim_acquire(&s, 0, T0).kind, LIM_NONE); /* 2, not 2 / 2 */
    lim_set_destroy(&s);
}

/* The share down: local caps divided by store.instances (at least 1), no asks. */
static void test_down_divides(void **state)
{
    struct rec r;
    struct lim_set s;

    (void)state;
    setup(&r, &s, (struct lim_caps){.rpm = 10, .conc = 3, .rpm_burst = 10}, 4);
    atomic_store(&r.sh.up, false);
    assert_int_equal(lim_acquire(&s, 0, T0).kind, LIM_NONE);  /* burst 10 / 4 = 2 */
    assert_int_equal(lim_acquire(&s, 0, T0).kind, LIM_CONC);  /* conc 3 / 4 -> 1 */
    lim_release(&s, 0, 0, T0);
    assert_int_equal(lim_acquire(&s, 0, T0).kind, LIM_NONE);
    lim_release(&s, 0, 0, T0);
    assert_int_equal(lim_acquire(&s, 0, T0).kind, LIM_RPM);
    assert_int_equal(r.asks, 0);
    lim_set_destroy(&s);
}

/* Workers read the clock before they take the set's lock: a worker may check the set with a
 * time a little before the ask another worker just made. That ask is not overdue (the
 * difference must not wrap around): the set keeps asking the fleet, nothing turns local. */
static void test_earlier_clock_is_not_overdue(void **state)
{
    struct rec r;
    struct lim_set s;

    (void)state;
    setup(&r, &s, (struct lim_caps){.rpm = 10, .rpm_burst = 10}, 1);
    assert_int_equal(lim_acquire(&s, 0, T0 + 5).wait_ms, LIM_WAIT_FLEET);
    assert_int_equal(lim_acquire(&s, 0, T0).wait_ms, LIM_WAIT_FLEET); /* still the fleet's */
    assert_int_equal(r.asks, 1);
    assert_true(s.fl.local_until == 0);
}

/* An ask unanswered for timeout_ms, or one that failed: local caps for a while. */
static void test_overdue_turns_local(void **state)
{
    struct rec r;
    struct lim_set s;

    (void)state;
    setup(&r, &s, (struct lim_caps){.rpm = 10, .rpm_burst = 10}, 1);
    assert_int_equal(lim_acquire(&s, 0, T0).wait_ms, LIM_WAIT_FLEET);
    assert_int_equal(lim_acquire(&s, 0, T0 + 49).wait_ms, LIM_WAIT_FLEET);
    assert_int_equal(lim_acquire(&s, 0, T0 + 50).kind, LIM_NONE); /* local bucket */
    assert_int_equal(r.asks, 1);
    /* A late answer still counts: the tokens were taken from the fleet. */
    lim_fleet_granted(&s, LIM_RPM, 1, 0, T0 + 60);
    assert_int_equal(s.fl.req, 1.0);
    /* After the local period, asks again; a failure turns local at once. */
    assert_int_equal(lim_acquire(&s, 0, T0 + 2000).kind, LIM_NONE); /* the late grant */
    assert_int_equal(lim_acquire(&s, 0, T0 + 2000).wait_ms, LIM_WAIT_FLEET);
    lim_fleet_failed(&s, LIM_RPM, T0 + 2001);
    assert_int_equal(lim_acquire(&s, 0, T0 + 2001).kind, LIM_NONE);
    lim_set_destroy(&s);
}

/* Slots leased before the set turned local go back when their requests end locally. */
static void test_local_release_gives(void **state)
{
    struct rec r;
    struct lim_set s;

    (void)state;
    setup(&r, &s, (struct lim_caps){.conc = 2}, 2);
    assert_int_equal(lim_acquire(&s, 0, T0).wait_ms, LIM_WAIT_FLEET);
    lim_fleet_granted(&s, LIM_CONC, 1, 0, T0 + 1);
    assert_int_equal(lim_acquire(&s, 0, T0 + 1).kind, LIM_NONE);
    atomic_store(&r.sh.up, false);
    lim_release(&s, 0, 0, T0 + 2);
    assert_int_equal(r.gives, 1);
    assert_int_equal(r.given, 1);
    assert_int_equal(s.fl.slots, 0);
    /* The same for an acquire undone while local. */
    atomic_store(&r.sh.up, true);
    assert_int_equal(lim_acquire(&s, 0, T0 + 3).wait_ms, LIM_WAIT_FLEET);
    lim_fleet_granted(&s, LIM_CONC, 1, 0, T0 + 4);
    assert_int_equal(lim_acquire(&s, 0, T0 + 4).kind, LIM_NONE);
    atomic_store(&r.sh.up, false);
    lim_undo(&s, 0, T0 + 5);
    assert_int_equal(r.gives, 2);
    assert_int_equal(s.fl.slots, 0);
    lim_set_destroy(&s);
}

/* A grant nobody used (its requests left, or went ahead locally while it was late) goes
 * back at the second renewal that finds it spare; a spare slot used meanwhile stays. */
static void test_idle_slots_go_back(void **state)
{
    struct rec r;
    struct lim_set s;
    bool exact;

    (void)state;
    setup(&r, &s, (struct lim_caps){.conc = 2}, 2);
    assert_int_equal(lim_acquire(&s, 0, T0).wait_ms, LIM_WAIT_FLEET);
    lim_fleet_granted(&s, LIM_CONC, 1, 0, T0 + 1); /* its request has left */
    assert_int_equal(lim_fleet_idle(&s), 0);       /* maybe its waiter is on its way */
    assert_int_equal(lim_acquire(&s, 0, T0 + 2).kind, LIM_NONE); /* it was */
    assert_int_equal(lim_fleet_idle(&s), 0);
    assert_int_equal(lim_fleet_idle(&s), 0);
    lim_release(&s, 0, 0, T0 + 3);
    lim_fleet_gave(&s, r.given);
    assert_int_equal(lim_acquire(&s, 0, T0 + 4).wait_ms, LIM_WAIT_FLEET);
    lim_fleet_granted(&s, LIM_CONC, 1, 0, T0 + 5); /* this one's request has left */
    assert_int_equal(lim_fleet_idle(&s), 0);
    assert_int_equal(lim_fleet_idle(&s), 1);
    assert_int_equal(s.fl.slots, 0);
    assert_int_equal(lim_fleet_held(&s, &exact), 1); /* Redis counts it until the give */
    lim_fleet_gave(&s, 1);
    assert_int_equal(lim_fleet_held(&s, &exact), 0);
    assert_int_equal(lim_fleet_idle(&s), 0);
    lim_set_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_rate_is_exact),
        cmocka_unit_test(test_slice_within_burst), cmocka_unit_test(test_large_rate_takes_slices),
        cmocka_unit_test(test_tokens),              cmocka_unit_test(test_slots),
        cmocka_unit_test(test_down_divides),        cmocka_unit_test(test_overdue_turns_local),
        cmocka_unit_test(test_earlier_clock_is_not_overdue),
        cmocka_unit_test(test_own_concurrency),     cmocka_unit_test(test_local_release_gives),
        cmocka_unit_test(test_idle_slots_go_back),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
