/* SPDX-License-Identifier: MIT */
/* test_breaker.c -- every breaker transition driven by a fake clock: the consecutive and
 * failure-rate triggers at their limits, the sliding window, open -> half-open timing, the
 * probe limit, neutral outcomes, reopening, closing and the slow-start ramp. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "health/breaker.h"

/* A deterministic uniform source for the ramp draws (splitmix64), so a failure reproduces. */
static double next01(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

/* The docs/configuration.md defaults. */
static struct cfg_breaker defaults(void)
{
    struct cfg_breaker p = {
        .window_ms = 30000,
        .min_requests = 20,
        .failure_rate = 0.5,
        .consecutive_failures = 5,
        .open_ms = 60000,
        .half_open_probes = 1,
        .success_threshold = 3,
        .ramp_ms = 30000,
    };
    return p;
}

static void fail_n(struct brk *b, uint64_t now, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        brk_record(b, now, BRK_FAILURE, false);
}

static void succeed_n(struct brk *b, uint64_t now, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        brk_record(b, now, BRK_SUCCESS, false);
}

/* Opens <b> at <now> with consecutive failures (consecutive_failures must be > 0). */
static void trip(struct brk *b, uint64_t now)
{
    fail_n(b, now, b->p.consecutive_failures);
    assert_int_equal(brk_state(b), BRK_OPEN);
}

/* Drives <b> from open at <opened_at> through half-open to closed; returns the close time. */
static uint64_t recover(struct brk *b, uint64_t opened_at)
{
    uint64_t now = opened_at + b->p.open_ms;

    for (uint32_t i = 0; i < b->p.success_threshold; i++) {
        assert_int_equal(brk_allow(b, now, 0.5), BRK_ALLOW_PROBE);
        brk_record(b, now, BRK_SUCCESS, true);
    }
    assert_int_equal(brk_state(b), BRK_CLOSED);
    return now;
}

static void test_init_closed(void **state)
{
    struct cfg_breaker p = defaults();
    struct brk b;

    (void)state;
    brk_init(&b, &p);
    assert_int_equal(brk_state(&b), BRK_CLOSED);
    assert_string_equal(brk_state_name(brk_state(&b)), "closed");
    assert_int_equal(brk_allow(&b, 0, 0.999), BRK_ALLOW);
    assert_true(brk_ramp_fraction(&b, 0) == 1.0);
    assert_false(brk_is_ramping(&b, 0));
    assert_false(brk_is_open(&b, 0));
    assert_int_equal(brk_last_trigger(&b), BRK_TRIG_NONE);
    assert_int_equal(brk_counters(&b)->opened, 0);
}

static void test_consecutive_at_limit_minus_one(void **state)
{
    struct cfg_breaker p = defaults();
    struct brk b;

    (void)state;
    brk_init(&b, &p);
    fail_n(&b, 1000, 4);
    assert_int_equal(brk_state(&b), BRK_CLOSED);
    assert_int_equal(brk_allow(&b, 1000, 0.5), BRK_ALLOW);
    brk_record(&b, 1000, BRK_FAILURE, false);
    assert_int_equal(brk_state(&b), BRK_OPEN);
    assert_int_equal(brk_last_trigger(&b), BRK_TRIG_CONSECUTIVE);
    assert_string_equal(brk_trigger_name(brk_last_trigger(&b)), "consecutive_failures");
    assert_int_equal(brk_counters(&b)->opened, 1);
}

static void test_success_resets_consecutive(void **state)
{
    struct cfg_breaker p = defaults();
    struct brk b;

    (void)state;
    brk_init(&b, &p);
    fail_n(&b, 0, 4);
    brk_record(&b, 0, BRK_SUCCESS, false);
    fail_n(&b, 0, 4);
    assert_int_equal(brk_state(&b), BRK_CLOSED);
    brk_record(&b, 0, BRK_FAILURE, false);
    assert_int_equal(brk_state(&b), BRK_OPEN);
}

static void test_neutral_counts_nowhere(void **state)
{
    struct cfg_breaker p = defaults();
    struct brk b;
    uint32_t req, fail;

    (void)state;
    brk_init(&b, &p);
    fail_n(&b, 0, 4);
    /* Neutral neither resets the run of failures nor enters the window. */
    for (int i = 0; i < 50; i++)
        brk_record(&b, 0, BRK_NEUTRAL, false);
    brk_window(&b, 0, &req, &fail);
    assert_int_equal(req, 4);
    assert_int_equal(fail, 4);
    assert_int_equal(brk_state(&b), BRK_CLOSED);
    brk_record(&b, 0, BRK_FAILURE, false);
    assert_int_equal(brk_state(&b), BRK_OPEN);
}

static void test_consecutive_zero_disables(void **state)
{
    struct cfg_breaker p = defaults();
    struct brk b;

    (void)state;
    p.consecutive_failures = 0;
    p.min_requests = 1000;
    brk_init(&b, &p);
    fail_n(&b, 0, 500);
    assert_int_equal(brk_state(&b), BRK_CLOSED);
}

static void test_rate_needs_min_requests(void **state)
{
    struct cfg_breaker p = defaults();
    struct brk b;

    (void)state;
    p.consecutive_failures = 1000; /* only the rate trigger */
    brk_init(&b, &p);
    /* 19 requests, 100 % failures: below min_requests, stays closed. */
    fail_n(&b, 0, 19);
    assert_int_equal(brk_state(&b), BRK_CLOSED);
    /* The 20th failure reaches min_requests with a rate of 1.0. */
    brk_record(&b, 0, BRK_FAILURE, false);
    assert_int_equal(brk_state(&b), BRK_OPEN);
    assert_int_equal(brk_last_trigger(&b), BRK_TRIG_RATE);
}

static void test_rate_threshold_boundary(void **state)
{
    struct cfg_breaker p = defaults();
    struct brk b;

    (void)state;
    p.consecutive_failures = 1000;
    brk_init(&b, &p);
    /* 11 successes + 9 failures = 20 requests at 0.45: below the rate. */
    succeed_n(&b, 0, 11);
    fail_n(&b, 0, 9);
    assert_int_equal(brk_state(&b), BRK_CLOSED);

    /* 10 successes + 10 failures = 20 requests at exactly 0.5: opens (>=). */
    brk_init(&b, &p);
    succeed_n(&b, 0, 10);
    fail_n(&b, 0, 9);
    assert_int_equal(brk_state(&b), BRK_CLOSED);
    brk_record(&b, 0, BRK_FAILURE, false);
    assert_int_equal(brk_state(&b), BRK_OPEN);
    assert_int_equal(brk_last_trigger(&b), BRK_TRIG_RATE);
}

static void test_window_slides(void **state)
{
    struct cfg_breaker p = defaults();
    struct brk b;
    uint32_t req, fail;

    (void)state;
    p.consecutive_failures = 0;
    p.window_ms = 10000; /* ten buckets of 1000 ms */
    p.min_requests = 10;
    p.failure_rate = 1.0;

    /* Nine failures at t=0 are still in the window at t=9500: the tenth opens. */
    brk_init(&b, &p);
    fail_n(&b, 0, 9);
    brk_window(&b, 9500, &req, &fail);
    assert_int_equal(req, 9);
    brk_record(&b, 9500, BRK_FAILURE, false);
    assert_int_equal(brk_state(&b), BRK_OPEN);

    /* At t=10500 they have slid out: the tenth failure is alone and stays closed. */
    brk_init(&b, &p);
    fail_n(&b, 0, 9);
    brk_window(&b, 10500, &req, &fail);
    assert_int_equal(req, 0);
    assert_int_equal(fail, 0);
    brk_record(&b, 10500, BRK_FAILURE, false);
    assert_int_equal(brk_state(&b), BRK_CLOSED);
    brk_window(&b, 10500, &req, &fail);
    assert_int_equal(req, 1);
    assert_int_equal(fail, 1);
}

static void test_window_mixes_buckets(void **state)
{
    struct cfg_breaker p = defaults();
    struct brk b;
    uint32_t req, fail;

    (void)state;
    p.consecutive_failures = 0;
    p.window_ms = 10000;
    p.min_requests = 4;
    p.failure_rate = 0.75;
    brk_init(&b, &p);
    /* Spread over buckets: successes early, failures later. */
    succeed_n(&b, 1000, 2);
    fail_n(&b, 4000, 3);
    brk_window(&b, 4000, &req, &fail);
    assert_int_equal(req, 5);
    assert_int_equal(fail, 3);
    assert_int_equal(brk_state(&b), BRK_CLOSED); /* 0.6 < 0.75 */
    /* Once the early successes leave the window, one more failure is 4/4. */
    brk_record(&b, 11500, BRK_FAILURE, false);
    assert_int_equal(brk_state(&b), BRK_OPEN);
    assert_int_equal(brk_last_trigger(&b), BRK_TRIG_RATE);
}

static void test_open_denies_until_open_ms(void **state)
{
    struct cfg_breaker p = defaults();
    struct brk b;

    (void)state;
    p.half_open_probes = 2;
    brk_init(&b, &p);
    trip(&b, 1000);
    assert_true(brk_is_open(&b, 1000));
    assert_int_equal(brk_retry_after_ms(&b, 1000), 60000);
    assert_int_equal(brk_allow(&b, 1000, 0.0), BRK_DENY);
    assert_int_equal(brk_allow(&b, 60999, 0.0), BRK_DENY);
    assert_int_equal(brk_retry_after_ms(&b, 60999), 1);
    assert_int_equal(brk_state(&b), BRK_OPEN);
    assert_true(brk_ramp_fraction(&b, 60999) == 0.0);
    assert_int_equal(brk_counters(&b)->denied, 2);

    /* open_ms has passed: exactly half_open_probes concurrent probes. */
    assert_int_equal(brk_allow(&b, 61000, 0.9), BRK_ALLOW_PROBE);
    assert_int_equal(brk_state(&b), BRK_HALF_OPEN);
    assert_string_equal(brk_state_name(BRK_HALF_OPEN), "half_open");
    assert_int_equal(brk_allow(&b, 61001, 0.9), BRK_ALLOW_PROBE);
    assert_int_equal(brk_allow(&b, 61002, 0.9), BRK_DENY);
    assert_int_equal(brk_allow(&b, 99999, 0.9), BRK_DENY);
    assert_int_equal(brk_counters(&b)->half_opened, 1);
    assert_int_equal(brk_counters(&b)->probes, 2);
    assert_int_equal(brk_retry_after_ms(&b, 61002), 0);
}

static void test_advance_moves_to_half_open(void **state)
{
    struct cfg_breaker p = defaults();
    struct brk b;

    (void)state;
    brk_init(&b, &p);
    trip(&b, 0);
    brk_advance(&b, 59999);
    assert_int_equal(brk_state(&b), BRK_OPEN);
    assert_true(brk_ramp_fraction(&b, 60000) == BRK_RAMP_FLOOR);
    assert_false(brk_is_open(&b, 60000));
    brk_advance(&b, 60000);
    assert_int_equal(brk_state(&b), BRK_HALF_OPEN);
    assert_true(brk_ramp_fraction(&b, 60000) == BRK_RAMP_FLOOR);
}

static void test_neutral_frees_probe(void **state)
{
    struct cfg_breaker p = defaults();
    struct brk b;

    (void)state;
    brk_init(&b, &p);
    trip(&b, 0);
    assert_int_equal(brk_allow(&b, 60000, 0.5), BRK_ALLOW_PROBE);
    assert_int_equal(brk_allow(&b, 60000, 0.5), BRK_DENY);
    brk_record(&b, 60100, BRK_NEUTRAL, true);
    assert_int_equal(brk_state(&b), BRK_HALF_OPEN);
    /* The slot is free again, and the neutral outcome did not count as a success. */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(brk_allow(&b, 60200, 0.5), BRK_ALLOW_PROBE);
        brk_record(&b, 60200, BRK_SUCCESS, true);
    }
    assert_int_equal(brk_state(&b), BRK_HALF_OPEN);
    assert_int_equal(brk_allow(&b, 60300, 0.5), BRK_ALLOW_PROBE);
    brk_record(&b, 60300, BRK_SUCCESS, true);
    assert_int_equal(brk_state(&b), BRK_CLOSED);
}

static void test_probe_failure_reopens(void **state)
{
    struct cfg_breaker p = defaults();
    struct brk b;

    (void)state;
    brk_init(&b, &p);
    trip(&b, 0);
    assert_int_equal(brk_allow(&b, 60000, 0.5), BRK_ALLOW_PROBE);
    brk_record(&b, 60000, BRK_SUCCESS, true);
    assert_int_equal(brk_allow(&b, 61000, 0.5), BRK_ALLOW_PROBE);
    brk_record(&b, 62000, BRK_FAILURE, true);
    assert_int_equal(brk_state(&b), BRK_OPEN);
    assert_int_equal(brk_last_trigger(&b), BRK_TRIG_PROBE);
    assert_int_equal(brk_counters(&b)->opened, 2);
    /* A fresh open_ms from the probe failure, not from the first opening. */
    assert_int_equal(brk_allow(&b, 121999, 0.5), BRK_DENY);
    assert_int_equal(brk_allow(&b, 122000, 0.5), BRK_ALLOW_PROBE);
    /* The earlier probe success does not carry over into the new half-open episode. */
    brk_record(&b, 122000, BRK_SUCCESS, true);
    assert_int_equal(brk_state(&b), BRK_HALF_OPEN);
}

static void test_success_threshold_closes(void **state)
{
    struct cfg_breaker p = defaults();
    struct brk b;

    (void)state;
    brk_init(&b, &p);
    trip(&b, 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(brk_allow(&b, 60000 + i, 0.5), BRK_ALLOW_PROBE);
        brk_record(&b, 60000 + i, BRK_SUCCESS, true);
        assert_int_equal(brk_state(&b), BRK_HALF_OPEN);
    }
    assert_int_equal(brk_allow(&b, 60002, 0.5), BRK_ALLOW_PROBE);
    brk_record(&b, 60002, BRK_SUCCESS, true);
    assert_int_equal(brk_state(&b), BRK_CLOSED);
    assert_int_equal(brk_counters(&b)->closed, 1);
    assert_true(brk_is_ramping(&b, 60002));
    assert_true(brk_ramp_fraction(&b, 60002) == BRK_RAMP_FLOOR);
}

static void test_stale_outcomes_ignored(void **state)
{
    struct cfg_breaker p = defaults();
    struct brk b;

    (void)state;
    brk_init(&b, &p);
    trip(&b, 0);
    /* Requests admitted before the trip finish while open: no effect on open_until. */
    fail_n(&b, 30000, 10);
    assert_int_equal(brk_retry_after_ms(&b, 30000), 30000);
    assert_int_equal(brk_counters(&b)->opened, 1);
    /* A non-probe success while half-open is not a probe success. */
    assert_int_equal(brk_allow(&b, 60000, 0.5), BRK_ALLOW_PROBE);
    succeed_n(&b, 60000, 5);
    fail_n(&b, 60000, 5);
    assert_int_equal(brk_state(&b), BRK_HALF_OPEN);
    assert_int_equal(brk_allow(&b, 60000, 0.5), BRK_DENY); /* the probe still holds its slot */
}

static void test_close_forgets_old_failures(void **state)
{
    struct cfg_breaker p = defaults();
    struct brk b;
    uint32_t req, fail;
    uint64_t closed_at;

    (void)state;
    brk_init(&b, &p);
    trip(&b, 0);
    closed_at = recover(&b, 0);
    brk_window(&b, closed_at, &req, &fail);
    assert_int_equal(req, 0);
    /* It takes a full new run of failures to reopen during the ramp. */
    fail_n(&b, closed_at + 1, 4);
    assert_int_equal(brk_state(&b), BRK_CLOSED);
    brk_record(&b, closed_at + 1, BRK_FAILURE, false);
    assert_int_equal(brk_state(&b), BRK_OPEN);
    assert_false(brk_is_ramping(&b, closed_at + 1));
}

static void test_close_forgets_window_within_its_span(void **state)
{
    struct cfg_breaker p = defaults();
    struct brk b;
    uint32_t req, fail;
    uint64_t closed_at;

    (void)state;
    p.consecutive_failures = 0; /* only the rate trigger */
    p.open_ms = 1000;           /* much shorter than window_ms: old failures still in span */
    brk_init(&b, &p);
    fail_n(&b, 0, 20);
    assert_int_equal(brk_state(&b), BRK_OPEN);
    assert_int_equal(brk_last_trigger(&b), BRK_TRIG_RATE);
    closed_at = recover(&b, 0);
    brk_window(&b, closed_at, &req, &fail);
    assert_int_equal(req, 0);
    assert_int_equal(fail, 0);
    /* The twenty failures that opened it must not count against the recovered target. */
    fail_n(&b, closed_at + 10, 19);
    assert_int_equal(brk_state(&b), BRK_CLOSED);
    brk_record(&b, closed_at + 10, BRK_FAILURE, false);
    assert_int_equal(brk_state(&b), BRK_OPEN);
}

/* Share of <draws> admitted at <now>, with a fixed seed. */
static double admitted_share(struct brk *b, uint64_t now, int draws, uint64_t seed)
{
    int ok = 0;

    for (int i = 0; i < draws; i++) {
        enum brk_decision d = brk_allow(b, now, next01(&seed));

        assert_true(d == BRK_ALLOW || d == BRK_DENY_RAMP);
        ok += d == BRK_ALLOW;
    }
    return (double)ok / draws;
}

static void test_ramp_admits_growing_share(void **state)
{
    static const struct {
        uint64_t after_ms;
        double want;
    } points[] = {
        {0, 0.10}, {7500, 0.325}, {15000, 0.55}, {22500, 0.775}, {29999, 1.0 - 0.9 / 30000},
    };
    struct cfg_breaker p = defaults();
    struct brk b;
    uint64_t t0;

    (void)state;
    brk_init(&b, &p);
    trip(&b, 0);
    t0 = recover(&b, 0);
    for (size_t i = 0; i < sizeof(points) / sizeof(points[0]); i++) {
        uint64_t now = t0 + points[i].after_ms;
        double f = brk_ramp_fraction(&b, now);
        double share = admitted_share(&b, now, 10000, 42 + i);

        assert_true(f > points[i].want - 1e-9 && f < points[i].want + 1e-9);
        /* 10 000 draws: the binomial sd is at most 0.005; 0.02 is four of them. */
        assert_true(share > f - 0.02 && share < f + 0.02);
        assert_int_equal(brk_state(&b), BRK_CLOSED);
    }
    assert_true(brk_counters(&b)->ramp_denied > 0);
}

static void test_ramp_ends_at_ramp_ms(void **state)
{
    struct cfg_breaker p = defaults();
    struct brk b;
    uint64_t t0, denied;

    (void)state;
    brk_init(&b, &p);
    trip(&b, 0);
    t0 = recover(&b, 0);
    /* A draw of 0 passes the ramp gate even at its floor. */
    assert_int_equal(brk_allow(&b, t0, 0.0), BRK_ALLOW);
    assert_int_equal(brk_allow(&b, t0, 0.5), BRK_DENY_RAMP);
    assert_string_equal(brk_decision_name(BRK_DENY_RAMP), "deny_ramp");
    denied = brk_counters(&b)->ramp_denied;
    assert_true(admitted_share(&b, t0 + 30000, 10000, 7) == 1.0);
    assert_int_equal(brk_counters(&b)->ramp_denied, denied);
    assert_false(brk_is_ramping(&b, t0 + 30000));
    assert_true(brk_ramp_fraction(&b, t0 + 30000) == 1.0);
    assert_false(b.ramping); /* brk_allow advanced past the ramp */
}

static void test_ramp_zero_ms_no_ramp(void **state)
{
    struct cfg_breaker p = defaults();
    struct brk b;
    uint64_t t0;

    (void)state;
    p.ramp_ms = 0;
    brk_init(&b, &p);
    trip(&b, 0);
    t0 = recover(&b, 0);
    assert_false(brk_is_ramping(&b, t0));
    assert_int_equal(brk_allow(&b, t0, 0.99), BRK_ALLOW);
}

static void test_zero_params_sanitised(void **state)
{
    struct cfg_breaker p = defaults();
    struct brk b;

    (void)state;
    p.half_open_probes = 0;
    p.success_threshold = 0;
    p.open_ms = 0;
    brk_init(&b, &p);
    trip(&b, 0);
    /* One probe despite half_open_probes = 0, and one success closes. */
    assert_int_equal(brk_allow(&b, 0, 0.5), BRK_ALLOW_PROBE);
    assert_int_equal(brk_allow(&b, 0, 0.5), BRK_DENY);
    brk_record(&b, 0, BRK_SUCCESS, true);
    assert_int_equal(brk_state(&b), BRK_CLOSED);
}

static void test_force_open_close(void **state)
{
    struct cfg_breaker p = defaults();
    struct brk b;

    (void)state;
    brk_init(&b, &p);
    brk_force_open(&b, 500);
    assert_int_equal(brk_state(&b), BRK_OPEN);
    assert_int_equal(brk_last_trigger(&b), BRK_TRIG_FORCED);
    assert_int_equal(brk_retry_after_ms(&b, 500), 60000);
    assert_int_equal(brk_counters(&b)->opened, 1);
    brk_force_open(&b, 1000); /* already open: extended, not counted twice */
    assert_int_equal(brk_counters(&b)->opened, 1);
    assert_int_equal(brk_retry_after_ms(&b, 1000), 60000);
    brk_force_close(&b, 2000);
    assert_int_equal(brk_state(&b), BRK_CLOSED);
    assert_false(brk_is_ramping(&b, 2000));
    assert_int_equal(brk_allow(&b, 2000, 0.99), BRK_ALLOW);
    assert_int_equal(brk_counters(&b)->closed, 1);
}

static void test_set_params_keeps_state(void **state)
{
    struct cfg_breaker p = defaults();
    struct brk b;

    (void)state;
    brk_init(&b, &p);
    trip(&b, 0);
    p.half_open_probes = 3;
    brk_set_params(&b, &p);
    assert_int_equal(brk_state(&b), BRK_OPEN);
    for (int i = 0; i < 3; i++)
        assert_int_equal(brk_allow(&b, 60000, 0.5), BRK_ALLOW_PROBE);
    assert_int_equal(brk_allow(&b, 60000, 0.5), BRK_DENY);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(brk_state_name(BRK_OPEN), "open");
    assert_string_equal(brk_state_name(BRK_STATE_COUNT), "unknown");
    assert_string_equal(brk_decision_name(BRK_ALLOW_PROBE), "allow_probe");
    assert_string_equal(brk_decision_name(BRK_DECISION_COUNT), "unknown");
    assert_string_equal(brk_trigger_name(BRK_TRIG_RATE), "failure_rate");
    assert_string_equal(brk_trigger_name(BRK_TRIG_COUNT), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_closed),
        cmocka_unit_test(test_consecutive_at_limit_minus_one),
        cmocka_unit_test(test_success_resets_consecutive),
        cmocka_unit_test(test_neutral_counts_nowhere),
        cmocka_unit_test(test_consecutive_zero_disables),
        cmocka_unit_test(test_rate_needs_min_requests),
        cmocka_unit_test(test_rate_threshold_boundary),
        cmocka_unit_test(test_window_slides),
        cmocka_unit_test(test_window_mixes_buckets),
        cmocka_unit_test(test_open_denies_until_open_ms),
        cmocka_unit_test(test_advance_moves_to_half_open),
        cmocka_unit_test(test_neutral_frees_probe),
        cmocka_unit_test(test_probe_failure_reopens),
        cmocka_unit_test(test_success_threshold_closes),
        cmocka_unit_test(test_stale_outcomes_ignored),
        cmocka_unit_test(test_close_forgets_old_failures),
        cmocka_unit_test(test_close_forgets_window_within_its_span),
        cmocka_unit_test(test_ramp_admits_growing_share),
        cmocka_unit_test(test_ramp_ends_at_ramp_ms),
        cmocka_unit_test(test_ramp_zero_ms_no_ramp),
        cmocka_unit_test(test_zero_params_sanitised),
        cmocka_unit_test(test_force_open_close),
        cmocka_unit_test(test_set_params_keeps_state),
        cmocka_unit_test(test_names),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
