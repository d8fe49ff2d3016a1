/* SPDX-License-Identifier: MIT */
/* test_breaker_backoff.c -- the breaker's open time that adapts (open_ms multiplied by
 * open_backoff for each opening without a recovery in between, capped by max_open_ms, reset
 * by a recovery), the panic admission (brk_allow_panic: a probe before open_ms has passed,
 * a ramp-refused request let through) and the opening a shared backend announces
 * (brk_force_open_for). Fake clock throughout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "health/breaker.h"

#define T0 1000000u

static struct cfg_breaker params(void)
{
    struct cfg_breaker p = {
        .window_ms = 30000,
        .min_requests = 20,
        .failure_rate = 0.5,
        .consecutive_failures = 2,
        .open_ms = 1000,
        .half_open_probes = 1,
        .success_threshold = 1,
        .ramp_ms = 0,
        .open_backoff = 2.0,
        .max_open_ms = 5000,
        .panic = true,
    };
    return p;
}

static void trip(struct brk *b, uint64_t now)
{
    for (uint32_t i = 0; i < b->p.consecutive_failures; i++)
        brk_record(b, now, BRK_FAILURE, false);
    assert_int_equal(brk_state(b), BRK_OPEN);
}

/* From open, waits out the open time and fails the half-open probe: the next opening. */
static uint64_t fail_probe(struct brk *b)
{
    uint64_t at = b->open_until_ms;

    assert_int_equal(brk_allow(b, at - 1, 0.0), BRK_DENY);
    assert_int_equal(brk_allow(b, at, 0.0), BRK_ALLOW_PROBE);
    brk_record(b, at, BRK_FAILURE, true);
    assert_int_equal(brk_state(b), BRK_OPEN);
    return at;
}

/* 1 s, then 2 s, 4 s, and the 5 s cap: a target that stays down stays out longer. */
static void test_open_time_doubles_to_the_cap(void **state)
{
    struct brk b;
    uint64_t at;

    (void)state;
    brk_init(&b, &(struct cfg_breaker){.consecutive_failures = 2,
                                       .open_ms = 1000,
                                       .open_backoff = 2.0,
                                       .max_open_ms = 5000,
                                       .half_open_probes = 1,
                                       .success_threshold = 1});
    assert_int_equal(brk_next_open_ms(&b), 1000);
    trip(&b, T0);
    assert_int_equal(brk_open_len_ms(&b), 1000);
    assert_int_equal(brk_opens(&b), 1);
    assert_int_equal(brk_retry_after_ms(&b, T0), 1000);
    at = fail_probe(&b);
    assert_int_equal(brk_open_len_ms(&b), 2000);
    assert_int_equal(brk_retry_after_ms(&b, at), 2000);
    at = fail_probe(&b);
    assert_int_equal(brk_open_len_ms(&b), 4000);
    at = fail_probe(&b);
    assert_int_equal(brk_open_len_ms(&b), 5000);
    at = fail_probe(&b);
    assert_int_equal(brk_open_len_ms(&b), 5000);
    assert_int_equal(brk_opens(&b), 5);
    assert_int_equal(brk_opened_ms(&b), at);
}

/* A recovery (the circuit closed) resets it: a target that flaps is retried soon. */
static void test_recovery_resets_open_time(void **state)
{
    struct cfg_breaker p = params();
    struct brk b;
    uint64_t at;

    (void)state;
    brk_init(&b, &p);
    trip(&b, T0);
    at = fail_probe(&b);
    assert_int_equal(brk_open_len_ms(&b), 2000);
    at += 2000;
    assert_int_equal(brk_allow(&b, at, 0.0), BRK_ALLOW_PROBE);
    brk_record(&b, at, BRK_SUCCESS, true);
    assert_int_equal(brk_state(&b), BRK_CLOSED);
    assert_int_equal(brk_opens(&b), 0);
    assert_int_equal(brk_next_open_ms(&b), 1000);
    trip(&b, at + 10);
    assert_int_equal(brk_open_len_ms(&b), 1000);
    /* The admin's close is a recovery too. */
    fail_probe(&b);
    assert_int_equal(brk_open_len_ms(&b), 2000);
    brk_force_close(&b, at + 5000);
    assert_int_equal(brk_next_open_ms(&b), 1000);
}

/* open_backoff 1 is today's fixed open time; a cap below open_ms never shortens it; zeroed
 * parameters (no backoff, no cap) keep open_ms. */
static void test_fixed_and_degenerate(void **state)
{
    struct cfg_breaker p = params();
    struct brk b;

    (void)state;
    p.open_backoff = 1.0;
    brk_init(&b, &p);
    trip(&b, T0);
    fail_probe(&b);
    fail_probe(&b);
    assert_int_equal(brk_open_len_ms(&b), 1000);

    p = params();
    p.max_open_ms = 10;
    brk_init(&b, &p);
    trip(&b, T0);
    fail_probe(&b);
    assert_int_equal(brk_open_len_ms(&b), 1000);

    brk_init(&b, &(struct cfg_breaker){.consecutive_failures = 1, .open_ms = 700});
    trip(&b, T0);
    fail_probe(&b);
    assert_int_equal(brk_open_len_ms(&b), 700);

    /* A large factor stops at the cap at once, without overflowing. */
    p = params();
    p.open_backoff = 100.0;
    p.max_open_ms = 86400000;
    brk_init(&b, &p);
    trip(&b, T0);
    for (int i = 0; i < 40; i++)
        fail_probe(&b);
    assert_int_equal(brk_open_len_ms(&b), 86400000);
}

/* Panic on an open circuit: a probe at once, long before open_ms; the half-open slot limit
 * still holds; its success closes as a half-open probe's does. */
static void test_panic_probe_closes(void **state)
{
    struct cfg_breaker p = params();
    struct brk b;

    (void)state;
    p.success_threshold = 2;
    brk_init(&b, &p);
    trip(&b, T0);
    assert_int_equal(brk_allow(&b, T0 + 10, 0.0), BRK_DENY);
    assert_int_equal(brk_allow_panic(&b, T0 + 10), BRK_ALLOW_PROBE);
    assert_int_equal(brk_state(&b), BRK_HALF_OPEN);
    assert_int_equal(brk_allow_panic(&b, T0 + 11), BRK_DENY); /* one probe at a time */
    brk_record(&b, T0 + 20, BRK_SUCCESS, true);
    assert_int_equal(brk_state(&b), BRK_HALF_OPEN);
    assert_int_equal(brk_allow_panic(&b, T0 + 21), BRK_ALLOW_PROBE);
    brk_record(&b, T0 + 30, BRK_SUCCESS, true);
    assert_int_equal(brk_state(&b), BRK_CLOSED);
    assert_int_equal(brk_counters(&b)->panics, 2);
    assert_int_equal(brk_counters(&b)->closed, 1);
    assert_int_equal(brk_opens(&b), 0);
}

/* A failed panic probe reopens with the next, longer open time. */
static void test_panic_probe_failure_backs_off(void **state)
{
    struct cfg_breaker p = params();
    struct brk b;

    (void)state;
    brk_init(&b, &p);
    trip(&b, T0);
    assert_int_equal(brk_allow_panic(&b, T0 + 5), BRK_ALLOW_PROBE);
    brk_record(&b, T0 + 6, BRK_FAILURE, true);
    assert_int_equal(brk_state(&b), BRK_OPEN);
    assert_int_equal(brk_open_len_ms(&b), 2000);
    assert_int_equal(brk_opened_ms(&b), T0 + 6);
    assert_int_equal(brk_last_trigger(&b), BRK_TRIG_PROBE);
}

/* Closed but ramping: the panic admission lets the request through whatever the draw. */
static void test_panic_passes_the_ramp(void **state)
{
    struct cfg_breaker p = params();
    struct brk b;
    uint64_t at;

    (void)state;
    p.ramp_ms = 10000;
    brk_init(&b, &p);
    trip(&b, T0);
    at = T0 + 1000;
    assert_int_equal(brk_allow(&b, at, 0.0), BRK_ALLOW_PROBE);
    brk_record(&b, at, BRK_SUCCESS, true);
    assert_true(brk_is_ramping(&b, at + 1));
    assert_int_equal(brk_allow(&b, at + 1, 0.99), BRK_DENY_RAMP);
    assert_int_equal(brk_allow_panic(&b, at + 1), BRK_ALLOW);
    assert_int_equal(brk_state(&b), BRK_CLOSED);
}

/* What a shared backend applies: the announced length, and the announced count of openings
 * when it is higher than the breaker's own, so the next opening here is as long as there. */
static void test_force_open_for(void **state)
{
    struct cfg_breaker p = params();
    struct brk b;

    (void)state;
    brk_init(&b, &p);
    brk_force_open_for(&b, T0, 4000, 3);
    assert_int_equal(brk_state(&b), BRK_OPEN);
    assert_int_equal(brk_retry_after_ms(&b, T0), 4000);
    assert_int_equal(brk_opens(&b), 3);
    brk_force_open_for(&b, T0 + 1, 0, 1); /* 0: the next open time here; 1 < 3: kept */
    assert_int_equal(brk_opens(&b), 3);
    assert_int_equal(brk_open_len_ms(&b), 5000);
    /* The admin's force open keeps open_ms. */
    brk_force_open(&b, T0 + 2);
    assert_int_equal(brk_open_len_ms(&b), 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_time_doubles_to_the_cap),
        cmocka_unit_test(test_recovery_resets_open_time),
        cmocka_unit_test(test_fixed_and_degenerate),
        cmocka_unit_test(test_panic_probe_closes),
        cmocka_unit_test(test_panic_probe_failure_backs_off),
        cmocka_unit_test(test_panic_passes_the_ramp),
        cmocka_unit_test(test_force_open_for),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
