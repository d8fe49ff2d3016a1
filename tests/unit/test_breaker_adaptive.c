/* SPDX-License-Identifier: MIT */
/* test_breaker_adaptive.c -- breaker.mode: adaptive, the SRE book's client-side throttling:
 * the refusal probability max(0, (requests - K x accepts) / (requests + 1)) over the window,
 * refusals counted as requests not accepted, no trigger that opens, no panic on top, the
 * window sliding back to zero, an admin's force open still honoured. Fake clock, seeded
 * draws. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "health/breaker.h"

#define T0 1000000u

static double next01(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

static struct cfg_breaker params(void)
{
    struct cfg_breaker p = {
        .window_ms = 10000,
        .min_requests = 20,
        .failure_rate = 0.5,
        .consecutive_failures = 3,
        .open_ms = 1000,
        .half_open_probes = 1,
        .success_threshold = 1,
        .mode = CFG_BRK_MODE_ADAPTIVE,
        .adaptive_k = 2.0,
    };
    return p;
}

static void test_formula(void **state)
{
    (void)state;
    assert_true(brk_throttle_p(0, 0, 2.0) == 0.0);
    assert_true(brk_throttle_p(10, 0, 2.0) == 10.0 / 11.0);
    assert_true(brk_throttle_p(10, 4, 2.0) == 2.0 / 11.0);
    assert_true(brk_throttle_p(10, 5, 2.0) == 0.0);
    assert_true(brk_throttle_p(10, 10, 2.0) == 0.0);
    assert_true(brk_throttle_p(10, 4, 1.0) == 6.0 / 11.0);
}

/* A healthy upstream is never throttled; a failing one more and more, and the refusals count
 * as requests not accepted; no number of failures opens it. */
static void test_throttles_failures_never_opens(void **state)
{
    struct cfg_breaker p = params();
    struct brk b;

    (void)state;
    brk_init(&b, &p);
    for (int i = 0; i < 50; i++) {
        assert_int_equal(brk_allow(&b, T0, 0.0), BRK_ALLOW);
        brk_record(&b, T0, BRK_SUCCESS, false);
    }
    assert_true(brk_reject_probability(&b, T0) == 0.0);
    /* 50 failures: (100 - 2 x 50) / 101 = 0, still nothing refused. */
    for (int i = 0; i < 50; i++)
        brk_record(&b, T0, BRK_FAILURE, false);
    assert_true(brk_reject_probability(&b, T0) == 0.0);
    assert_int_equal(brk_state(&b), BRK_CLOSED);
    /* 50 more: (150 - 100) / 151. */
    for (int i = 0; i < 50; i++)
        brk_record(&b, T0, BRK_FAILURE, false);
    assert_true(brk_reject_probability(&b, T0) == 50.0 / 151.0);
    assert_int_equal(brk_state(&b), BRK_CLOSED);
    assert_int_equal(brk_allow(&b, T0, 0.9), BRK_ALLOW);
    assert_int_equal(brk_allow(&b, T0, 0.1), BRK_DENY);
    assert_true(brk_reject_probability(&b, T0) == 51.0 / 152.0); /* the refusal counted */
    assert_int_equal(brk_counters(&b)->denied, 1);
    assert_int_equal(brk_counters(&b)->opened, 0);
    /* Neutral outcomes count nowhere. */
    brk_record(&b, T0, BRK_NEUTRAL, false);
    assert_true(brk_reject_probability(&b, T0) == 51.0 / 152.0);
}

/* A dead upstream: of 200 requests only a few reach it (about the harmonic sum, ~6). */
static void test_dead_upstream_sees_few(void **state)
{
    struct cfg_breaker p = params();
    struct brk b;
    uint64_t seed = 42;
    unsigned sent = 0;

    (void)state;
    brk_init(&b, &p);
    for (int i = 0; i < 200; i++) {
        if (brk_allow(&b, T0 + (uint64_t)i, next01(&seed)) != BRK_ALLOW)
            continue;
        sent++;
        brk_record(&b, T0 + (uint64_t)i, BRK_FAILURE, false);
    }
    assert_true(sent >= 1 && sent <= 20);
    /* The window slides: once it has passed, the next request goes through. */
    assert_true(brk_reject_probability(&b, T0 + 200 + 11000) == 0.0);
    assert_int_equal(brk_allow(&b, T0 + 200 + 11000, 0.0), BRK_ALLOW);
}

/* No panic on top of the throttle; an admin's force open is still honoured, and after it
 * the probes close it back into throttling. */
static void test_no_panic_force_open(void **state)
{
    struct cfg_breaker p = params();
    struct brk b;

    (void)state;
    brk_init(&b, &p);
    for (int i = 0; i < 10; i++)
        brk_record(&b, T0, BRK_FAILURE, false);
    assert_int_equal(brk_allow(&b, T0, 0.0), BRK_DENY);
    assert_int_equal(brk_allow_panic(&b, T0), BRK_DENY);
    brk_force_open(&b, T0);
    assert_int_equal(brk_allow(&b, T0 + 999, 0.99), BRK_DENY);
    assert_true(brk_reject_probability(&b, T0 + 999) == 0.0); /* not closed: not throttling */
    assert_int_equal(brk_allow(&b, T0 + 1000, 0.99), BRK_ALLOW_PROBE);
    brk_record(&b, T0 + 1000, BRK_SUCCESS, true);
    assert_int_equal(brk_state(&b), BRK_CLOSED);
    assert_int_equal(brk_allow(&b, T0 + 1001, 0.0), BRK_ALLOW); /* a clean window */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_formula),
        cmocka_unit_test(test_throttles_failures_never_opens),
        cmocka_unit_test(test_dead_upstream_sees_few),
        cmocka_unit_test(test_no_panic_force_open),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
