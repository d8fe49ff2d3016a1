/* SPDX-License-Identifier: MIT */
/* test_adaptive.c -- the AIMD controller with injected times: a 429 halves, a stale 429 (an
 * attempt begun before the cut) does not cut again, the floor, additive growth back to the
 * configured cap and never above it, the learnt cap without max_concurrency, the rate
 * following the concurrency's factor. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "health/adaptive.h"

static void test_unlimited_until_429(void **state)
{
    struct adaptive a;
    struct adaptive_eff e;

    (void)state;
    adaptive_init(&a);
    adaptive_effective(&a, 0, 0, &e);
    assert_int_equal(e.concurrency, 0);
    assert_int_equal(e.rpm, 0);
    adaptive_effective(&a, 8, 600, &e);
    assert_int_equal(e.concurrency, 8);
    assert_int_equal(e.rpm, 600);
    adaptive_on_success(&a, 8); /* nothing to grow */
    adaptive_effective(&a, 8, 600, &e);
    assert_int_equal(e.concurrency, 8);
}

static void test_429_halves_and_rate_follows(void **state)
{
    struct adaptive a;
    struct adaptive_eff e;

    (void)state;
    adaptive_init(&a);
    assert_true(adaptive_on_limited(&a, 8, 8, 100, 200));
    adaptive_effective(&a, 8, 600, &e);
    assert_int_equal(e.concurrency, 4);
    assert_int_equal(e.rpm, 300);
    /* Attempts begun before the cut bring the same news: no second cut. */
    assert_false(adaptive_on_limited(&a, 8, 8, 150, 210));
    assert_false(adaptive_on_limited(&a, 8, 8, 199, 220));
    adaptive_effective(&a, 8, 600, &e);
    assert_int_equal(e.concurrency, 4);
    /* One begun at or after it does. */
    assert_true(adaptive_on_limited(&a, 8, 4, 200, 230));
    adaptive_effective(&a, 8, 600, &e);
    assert_int_equal(e.concurrency, 2);
    assert_int_equal(e.rpm, 150);
}

static void test_floor(void **state)
{
    struct adaptive a;
    struct adaptive_eff e;

    (void)state;
    adaptive_init(&a);
    for (uint64_t t = 1; t < 20; t++)
        adaptive_on_limited(&a, 4, 4, t * 10, t * 10);
    adaptive_effective(&a, 4, 100, &e);
    assert_int_equal(e.concurrency, 1);
    assert_int_equal(e.rpm, 25); /* the rate follows to 1/4, above its own floor */
    adaptive_effective(&a, 4, 10, &e);
    assert_int_equal(e.rpm, 2);
    adaptive_effective(&a, 100, 100, &e); /* a larger cap: 1/100 -> the rate floor */
    assert_int_equal(e.concurrency, 1);
    assert_int_equal(e.rpm, 5);
}

static void test_additive_increase_to_cap(void **state)
{
    struct adaptive a;
    struct adaptive_eff e;
    int n = 0;

    (void)state;
    adaptive_init(&a);
    adaptive_on_limited(&a, 8, 8, 1, 1); /* 4 */
    /* From 4 to 5 takes about 4 successes: one per window. */
    do {
        adaptive_on_success(&a, 8);
        adaptive_effective(&a, 8, 0, &e);
        n++;
    } while (e.concurrency < 5 && n < 100);
    assert_int_equal(e.concurrency, 5);
    assert_in_range(n, 3, 5);
    for (int i = 0; i < 1000; i++)
        adaptive_on_success(&a, 8);
    adaptive_effective(&a, 8, 600, &e);
    assert_int_equal(e.concurrency, 8); /* never above the cap */
    assert_int_equal(e.rpm, 600);
    assert_true(e.factor == 1.0);
}

static void test_cap_lowered_by_config(void **state)
{
    struct adaptive a;
    struct adaptive_eff e;

    (void)state;
    adaptive_init(&a);
    adaptive_on_limited(&a, 16, 16, 1, 1); /* 8 */
    adaptive_effective(&a, 4, 0, &e);      /* reloaded with 4 */
    assert_int_equal(e.concurrency, 4);
    adaptive_on_success(&a, 4);
    adaptive_effective(&a, 4, 0, &e);
    assert_int_equal(e.concurrency, 4);
}

/* Without max_concurrency the in-flight count at the first 429 is the cap. */
static void test_learnt_cap(void **state)
{
    struct adaptive a;
    struct adaptive_eff e;

    (void)state;
    adaptive_init(&a);
    assert_true(adaptive_on_limited(&a, 0, 16, 5, 10));
    adaptive_effective(&a, 0, 0, &e);
    assert_int_equal(e.concurrency, 8);
    assert_int_equal(e.rpm, 0);
    assert_true(adaptive_on_limited(&a, 0, 9, 10, 20));
    adaptive_effective(&a, 0, 0, &e);
    assert_int_equal(e.concurrency, 4);
    for (int i = 0; i < 1000; i++)
        adaptive_on_success(&a, 0);
    adaptive_effective(&a, 0, 0, &e);
    assert_int_equal(e.concurrency, 16); /* back to the learnt cap, not above */
    /* A 429 with one in flight still leaves one. */
    adaptive_init(&a);
    adaptive_on_limited(&a, 0, 0, 1, 1);
    adaptive_effective(&a, 0, 0, &e);
    assert_int_equal(e.concurrency, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unlimited_until_429),
        cmocka_unit_test(test_429_halves_and_rate_follows),
        cmocka_unit_test(test_floor),
        cmocka_unit_test(test_additive_increase_to_cap),
        cmocka_unit_test(test_cap_lowered_by_config),
        cmocka_unit_test(test_learnt_cap),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
