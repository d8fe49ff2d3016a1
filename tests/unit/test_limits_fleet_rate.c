/* SPDX-License-Identifier: MIT */
/* test_limits_fleet_rate.c -- two processes' sets sharing one rate through the fleet
 * (limits/limits_fleet.c), the shared rate answered as hstate_redis_limits.c's script does
 * (GCRA: as much of the wish as fits now, or the wait until the need fits), with an injected
 * clock. Every admission of both is logged and every window checked: the fleet holds the
 * local bound, rpm in any 60 s and the burst within an interval, plus at most one slice per
 * instance taken early (rpm 1200, 2 instances: 2 x 37 = 74, within rpm / 16 = 75). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "limits/limits.h"

#define T0 1000000u /* ms */
#define RPM 1200u
#define BURST 100u
#define SLICE (RPM / (2 * 16))
#define MAX_LOG 16000

static struct lim_rate shared; /* the fleet's rate (Redis) */
static uint64_t now_ms;
static uint64_t log_at[MAX_LOG];
static size_t n_log;

/* The script: grants the most of <want> that fits now (at least <need>), or none. */
static void fleet_ask(struct lim_share *sh, struct lim_set *s, enum lim_kind kind,
                      uint64_t need, uint64_t want, uint32_t cap, uint32_t burst)
{
    uint64_t grant = 0;

    (void)sh;
    assert_int_equal(kind, LIM_RPM);
    if (lim_rate_wait_ms(&shared, cap, burst, need, now_ms) == 0)
        while (grant < want && lim_rate_wait_ms(&shared, cap, burst, 1, now_ms) == 0) {
            lim_rate_take(&shared, cap, burst, 1, now_ms);
            grant++;
        }
    lim_fleet_granted(s, kind, grant,
                      grant ? 0 : lim_rate_wait_ms(&shared, cap, burst, need, now_ms), now_ms);
}

static void fleet_give(struct lim_share *sh, struct lim_set *s, uint32_t slots)
{
    (void)sh, (void)s, (void)slots;
}

static struct lim_share share = {.ask = fleet_ask, .give = fleet_give, .instances = 2,
                                 .timeout_ms = 50};

/* One request on <s> now: asks the fleet when nothing is granted (answered at once). */
static void offer(struct lim_set *s)
{
    struct lim_verdict v = lim_acquire(s, 0, now_ms);

    if (v.wait_ms == LIM_WAIT_FLEET)
        v = lim_acquire(s, 0, now_ms);
    if (v.kind != LIM_NONE)
        return;
    assert_true(n_log < MAX_LOG);
    log_at[n_log++] = now_ms;
    lim_release(s, 0, 0, now_ms);
}

static uint64_t max_window(uint64_t w_ms)
{
    uint64_t best = 0;

    for (size_t i = 0, j = 0; i < n_log; i++) {
        while (j < n_log && log_at[j] < log_at[i] + w_ms)
            j++;
        best = j - i > best ? j - i : best;
    }
    return best;
}

/* One instance far above the rate, the other light (so it holds granted tokens for a
 * while), for 3 minutes; idle 10 minutes, in which the light one takes a slice (spending
 * one); then the busy one again for 3 minutes, and the light one spends the rest of its
 * slice inside the minute the busy one filled: the overshoot the slices allow. */
static void test_two_instances_hold_the_bound(void **state)
{
    struct lim_set a, b;
    uint64_t interval_ms = lim_rate_interval_ns(RPM, BURST) / 1000000u;

    (void)state;
    atomic_init(&share.up, true);
    lim_set_init(&a, (struct lim_caps){.rpm = RPM, .rpm_burst = BURST});
    lim_set_init(&b, (struct lim_caps){.rpm = RPM, .rpm_burst = BURST});
    a.share = b.share = &share;
    a.subject = b.subject = 'c';
    a.id = b.id = "team";
    for (now_ms = T0; now_ms < T0 + 16 * 60000u; now_ms += 1) {
        bool busy = now_ms < T0 + 3 * 60000u || now_ms >= T0 + 13 * 60000u;

        if (now_ms == T0 + 13 * 60000u - 10000u)
            offer(&a); /* a slice taken while idle, one spent ... */
        if (!busy)
            continue;
        if (now_ms < T0 + 3 * 60000u && now_ms % 97 == 0)
            offer(&a); /* a light process: its slices are spent late */
        for (int k = 0; k < 36 && now_ms == T0 + 13 * 60000u + 50000u; k++)
            offer(&a); /* ... the rest a minute later, in the minute b's burst began */
        offer(&b);
        offer(&b);
    }
    assert_true(max_window(60000) <= RPM + 2 * SLICE);
    assert_true(max_window(interval_ms) <= BURST + 2 * SLICE);
    assert_true(2 * SLICE <= RPM / 16);
    /* And the limit is delivered: the sustained rate over the busy minutes. */
    assert_true(n_log >= 6 * (RPM - BURST + 1));
    assert_true(max_window(60000) > RPM); /* the slice spent late did overshoot */
    print_message("fleet rpm %u burst %u: most in 60 s %llu, within %llu ms %llu, %zu in all\n",
                  RPM, BURST, (unsigned long long)max_window(60000),
                  (unsigned long long)interval_ms, (unsigned long long)max_window(interval_ms),
                  n_log);
    lim_set_destroy(&a);
    lim_set_destroy(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_instances_hold_the_bound),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
