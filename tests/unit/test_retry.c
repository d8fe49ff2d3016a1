/* SPDX-License-Identifier: MIT */
/* test_retry.c -- backoff growth, cap and jitter bounds; Retry-After against the deadline;
 * the sliding-window retry budget with an injected clock (floor, ratio, sliding, storms). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"
#include "health/budget.h"
#include "policy/retry.h"

#define EXPECT_INT(ctx, got, want)                                                         \
    do {                                                                                   \
        long long g_ = (long long)(got), w_ = (long long)(want);                           \
        if (g_ != w_)                                                                      \
            fail_msg("%s: %s is %lld, want %lld", (ctx), #got, g_, w_);                    \
    } while (0)

static struct cfg_retry cfg(uint32_t base, uint32_t max, double jitter)
{
    return (struct cfg_retry){.base_ms = base,
                              .max_ms = max,
                              .jitter = jitter,
                              .budget_ratio = 0.2,
                              .budget_min_per_s = 10,
                              .budget_window_ms = 10000};
}

/* ---- backoff -------------------------------------------------------------------------------- */

static void test_backoff_growth_and_cap(void **state)
{
    (void)state;
    struct cfg_retry r = cfg(250, 4000, 0.0);
    static const struct {
        unsigned n;
        uint32_t want;
    } rows[] = {
        {0, 250},   {1, 500},   {2, 1000},  {3, 2000},         {4, 4000},
        {5, 4000},  {10, 4000}, {31, 4000}, {32, 4000},        {63, 4000},
        {64, 4000}, {1000, 4000}, {UINT32_MAX, 4000},
    };

    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        char ctx[32];

        snprintf(ctx, sizeof(ctx), "n=%u", rows[i].n);
        EXPECT_INT(ctx, retry_backoff_ms(&r, rows[i].n, 0.5), rows[i].want);
    }
}

static void test_backoff_odd_configs(void **state)
{
    (void)state;
    struct cfg_retry r;

    r = cfg(0, 4000, 0.3); /* no base: no wait at all */
    assert_int_equal(retry_backoff_ms(&r, 0, 0.9), 0);
    assert_int_equal(retry_backoff_ms(&r, 40, 0.9), 0);
    r = cfg(5000, 1000, 0.0); /* max below base: max */
    assert_int_equal(retry_backoff_ms(&r, 0, 0.0), 1000);
    r = cfg(100, 0, 0.5); /* max 0 */
    assert_int_equal(retry_backoff_ms(&r, 3, 0.5), 0);
    r = cfg(UINT32_MAX, UINT32_MAX, 1.0); /* saturates instead of wrapping */
    assert_int_equal(retry_backoff_ms(&r, 5, 0.999), UINT32_MAX);
    r = cfg(1000, 8000, 7.0); /* jitter above 1 is treated as 1 */
    assert_int_equal(retry_backoff_ms(&r, 0, 1.0), 2000);
    r = cfg(1000, 8000, -1.0); /* negative jitter: none */
    assert_int_equal(retry_backoff_ms(&r, 0, 1.0), 1000);
    r = cfg(1000, 8000, NAN);
    assert_int_equal(retry_backoff_ms(&r, 0, 1.0), 1000);
}

/* Additive jitter: every value in [d, d * (1 + jitter)] and never above max * (1 + jitter),
 * and the spread actually uses the range. */
static void test_jitter_bounds(void **state)
{
    (void)state;
    struct cfg_retry r = cfg(250, 4000, 0.3);
    uint64_t x = 12345;

    for (unsigned n = 0; n < 8; n++) {
        uint32_t d = 250u << n < 4000u ? 250u << n : 4000u;
        uint32_t lo = UINT32_MAX, hi = 0;

        for (int i = 0; i < 5000; i++) {
            double u;
            uint32_t v;

            x = x * 6364136223846793005ull + 1442695040888963407ull;
            u = (double)(x >> 11) / 9007199254740992.0; /* [0, 1) */
            v = retry_backoff_ms(&r, n, u);
            if (v < d || v > (uint32_t)(d * 1.3) || v > (uint32_t)(4000 * 1.3))
                fail_msg("n=%u rand=%f: %u outside [%u, %u]", n, u, v, d, (uint32_t)(d * 1.3));
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        /* The spread covers most of the jitter range. */
        assert_true(lo <= d + d * 0.3 * 0.05);
        assert_true(hi >= d + d * 0.3 * 0.95);
    }
    /* The ends, and rand01 out of range. */
    assert_int_equal(retry_backoff_ms(&r, 0, 0.0), 250);
    assert_int_equal(retry_backoff_ms(&r, 4, 1.0), 5200);
    assert_int_equal(retry_backoff_ms(&r, 4, 0.5), 4600);
    assert_int_equal(retry_backoff_ms(&r, 4, -3.0), 4000);
    assert_int_equal(retry_backoff_ms(&r, 4, 42.0), 5200);
    assert_int_equal(retry_backoff_ms(&r, 4, NAN), 4000);
    assert_int_equal(retry_backoff_ms(&r, 4, INFINITY), 5200);
}

/* ---- choosing the delay ------------------------------------------------------------------ */

static void test_choose_delay(void **state)
{
    (void)state;
    struct cfg_retry r = cfg(250, 4000, 0.0);
    static const struct {
        const char *name;
        unsigned n;
        int64_t retry_after;
        uint64_t remaining;
        uint32_t delay;
        enum retry_delay_why why;
        bool exceeds;
    } rows[] = {
        {"backoff fits", 0, -1, 10000, 250, RETRY_DELAY_BACKOFF, false},
        {"backoff grows", 2, -1, 10000, 1000, RETRY_DELAY_BACKOFF, false},
        {"backoff too long", 4, -1, 3000, 4000, RETRY_DELAY_BACKOFF, true},
        {"backoff equals remaining", 3, -1, 2000, 2000, RETRY_DELAY_BACKOFF, true},
        {"backoff with nothing left", 0, -1, 0, 250, RETRY_DELAY_BACKOFF, true},
        {"retry-after fits", 0, 2000, 10000, 2000, RETRY_DELAY_RETRY_AFTER, false},
        {"retry-after longer than backoff is honoured", 0, 3500, 10000, 3500,
         RETRY_DELAY_RETRY_AFTER, false},
        {"retry-after beyond the deadline: not shortened, flagged", 0, 12000, 10000, 12000,
         RETRY_DELAY_RETRY_AFTER, true},
        {"retry-after 0", 3, 0, 10000, 0, RETRY_DELAY_RETRY_AFTER, false},
        {"retry-after 24 h", 0, 86400000, 30000, 86400000, RETRY_DELAY_RETRY_AFTER, true},
        {"retry-after beyond u32", 0, (int64_t)UINT32_MAX + 5, UINT64_MAX, UINT32_MAX,
         RETRY_DELAY_RETRY_AFTER, false},
    };

    assert_string_equal(retry_delay_why_name(RETRY_DELAY_BACKOFF), "backoff");
    assert_string_equal(retry_delay_why_name(RETRY_DELAY_RETRY_AFTER), "retry_after");
    assert_string_equal(retry_delay_why_name(RETRY_DELAY_COUNT), "invalid");
    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        struct retry_delay d =
            retry_choose_delay(&r, rows[i].n, rows[i].retry_after, 0.7, rows[i].remaining);

        EXPECT_INT(rows[i].name, d.delay_ms, rows[i].delay);
        EXPECT_INT(rows[i].name, d.why, rows[i].why);
        EXPECT_INT(rows[i].name, d.exceeds_deadline, rows[i].exceeds);
    }
}

/* ---- the retry budget ------------------------------------------------------------------------ */

static unsigned take_many(struct rbudget *b, uint64_t now, unsigned tries)
{
    unsigned taken = 0;

    for (unsigned i = 0; i < tries; i++)
        taken += rbudget_try_take(b, now);
    return taken;
}

static void test_budget_floor(void **state)
{
    (void)state;
    struct rbudget b;
    struct rbudget_stats st;

    /* No traffic at all: the floor alone, 1/s over 10 s = 10 retries. */
    rbudget_init(&b, 0.2, 1, 10000);
    assert_int_equal(take_many(&b, 5000, 25), 10);
    rbudget_stats(&b, 5000, &st);
    assert_int_equal(st.retries_in_window, 10);
    assert_int_equal(st.firsts_in_window, 0);
    assert_int_equal(st.total_retries, 10);
    assert_int_equal(st.total_rejections, 15);
    assert_true(st.allowance == 10.0);
}

static void test_budget_ratio(void **state)
{
    (void)state;
    struct rbudget b;

    /* No floor: exactly ratio x firsts. */
    rbudget_init(&b, 0.2, 0, 10000);
    assert_false(rbudget_try_take(&b, 100));
    for (int i = 0; i < 100; i++)
        rbudget_note_first(&b, 100);
    assert_int_equal(take_many(&b, 100, 50), 20);
    /* Five more first attempts earn exactly one more retry. */
    for (int i = 0; i < 5; i++)
        rbudget_note_first(&b, 200);
    assert_int_equal(take_many(&b, 200, 5), 1);
}

/* A storm: 100 client requests in 10 s, every upstream attempt fails, each request wants up
 * to 3 retries. Upstream calls stay 100 + ratio x 100 + floor. */
static void test_budget_storm(void **state)
{
    (void)state;
    struct rbudget b;
    struct rbudget_stats st;
    unsigned taken = 0;

    rbudget_init(&b, 0.2, 1, 10000);
    for (int i = 0; i < 100; i++) {
        uint64_t now = 1000000 + (uint64_t)i * 90; /* all inside one window */

        rbudget_note_first(&b, now);
        taken += take_many(&b, now, 3);
    }
    assert_int_equal(taken, 30); /* 0.2 x 100 + 1/s x 10 s */
    rbudget_stats(&b, 1000000 + 99 * 90, &st);
    assert_int_equal(st.firsts_in_window, 100);
    assert_int_equal(st.retries_in_window, 30);
    assert_int_equal(st.total_rejections, 300 - 30);
    assert_true(fabs(st.allowance - 30.0) < 1e-9);

    /* With the default config (ratio 0.2, 10/s, 10 s) the same storm gets 120. */
    rbudget_init(&b, 0.2, 10, 10000);
    taken = 0;
    for (int i = 0; i < 100; i++) {
        rbudget_note_first(&b, (uint64_t)i * 90);
        taken += take_many(&b, (uint64_t)i * 90, 3);
    }
    assert_int_equal(taken, 120);
}

static void test_budget_window_slides(void **state)
{
    (void)state;
    struct rbudget b;
    struct rbudget_stats st;

    /* 10 buckets of 1 s. 50 firsts at t = 0.5 s (bucket 0), no floor. */
    rbudget_init(&b, 0.2, 0, 10000);
    for (int i = 0; i < 50; i++)
        rbudget_note_first(&b, 500);
    assert_int_equal(take_many(&b, 600, 20), 10);
    /* Still inside the window at 9.999 s: nothing new allowed, counts kept. */
    assert_int_equal(take_many(&b, 9999, 5), 0);
    rbudget_stats(&b, 9999, &st);
    assert_int_equal(st.firsts_in_window, 50);
    assert_int_equal(st.retries_in_window, 10);
    /* At 10 s bucket 0 slides out: firsts and retries both gone. */
    rbudget_stats(&b, 10000, &st);
    assert_int_equal(st.firsts_in_window, 0);
    assert_int_equal(st.retries_in_window, 0);
    assert_int_equal(take_many(&b, 10000, 5), 0); /* no firsts, no floor */
    /* Lifetime totals survive the slide. */
    assert_int_equal(st.total_firsts, 50);
    assert_int_equal(st.total_retries, 10);
}

static void test_budget_partial_slide(void **state)
{
    (void)state;
    struct rbudget b;
    struct rbudget_stats st;

    rbudget_init(&b, 1.0, 0, 10000);
    for (uint64_t t = 0; t < 10; t++) /* one first per bucket, t = 0.5 s .. 9.5 s */
        rbudget_note_first(&b, t * 1000 + 500);
    rbudget_stats(&b, 9500, &st);
    assert_int_equal(st.firsts_in_window, 10);
    rbudget_stats(&b, 12500, &st); /* buckets 0..2 gone */
    assert_int_equal(st.firsts_in_window, 7);
    rbudget_stats(&b, 18000, &st); /* slots 9..18: only the first from 9.5 s is left */
    assert_int_equal(st.firsts_in_window, 1);
    rbudget_stats(&b, 50000, &st); /* a long gap empties everything */
    assert_int_equal(st.firsts_in_window, 0);
    /* Retries used earlier still count against later firsts while in the window. */
    rbudget_init(&b, 1.0, 0, 10000);
    rbudget_note_first(&b, 0);
    rbudget_note_first(&b, 0);
    assert_int_equal(take_many(&b, 0, 5), 2);
    rbudget_note_first(&b, 5000);
    assert_int_equal(take_many(&b, 5000, 5), 1);
    /* At 10 s slot 0 (2 firsts, 2 retries) slides out; slot 5 holds 1 first and 1 retry. */
    assert_int_equal(take_many(&b, 10000, 5), 0);
    rbudget_note_first(&b, 10000);
    assert_int_equal(take_many(&b, 10000, 5), 1);
}

static void test_budget_odd_inputs(void **state)
{
    (void)state;
    struct rbudget b;
    struct rbudget_stats st;

    /* The clock going back counts in the newest bucket, without a crash or a reset. */
    rbudget_init(&b, 1.0, 0, 10000);
    rbudget_note_first(&b, 50000);
    rbudget_note_first(&b, 100);
    assert_int_equal(take_many(&b, 10, 5), 2);
    rbudget_stats(&b, 50000, &st);
    assert_int_equal(st.firsts_in_window, 2);
    /* A zero window is raised to one bucket per ms; NaN and negative ratios are 0. */
    rbudget_init(&b, NAN, 0, 0);
    rbudget_note_first(&b, 1);
    assert_false(rbudget_try_take(&b, 1));
    rbudget_init(&b, -1.0, 0, 0);
    rbudget_note_first(&b, 1);
    assert_false(rbudget_try_take(&b, 1));
    rbudget_init(&b, 1.0, 0, 0);
    rbudget_note_first(&b, 1);
    assert_true(rbudget_try_take(&b, 1));
    assert_false(rbudget_try_take(&b, 5));  /* still inside the 10 ms window */
    assert_false(rbudget_try_take(&b, 11)); /* ms 1 slid out: no firsts, no floor */
    rbudget_stats(&b, 11, &st);
    assert_int_equal(st.firsts_in_window, 0);
}

/* What a reload compares against: the width init sets, for every window. */
static void test_budget_bucket_width(void **state)
{
    static const uint32_t windows[] = {0, 1, 9, 10, 15, 999, 1000, 10000, 10009};
    struct rbudget b;

    (void)state;
    for (size_t i = 0; i < sizeof(windows) / sizeof(windows[0]); i++) {
        rbudget_init(&b, 0.1, 1, windows[i]);
        assert_int_equal(rbudget_bucket_ms(windows[i]), b.bucket_ms);
    }
    assert_int_equal(rbudget_bucket_ms(10009), 1000);
    assert_int_equal(rbudget_bucket_ms(5), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backoff_growth_and_cap),
        cmocka_unit_test(test_backoff_odd_configs),
        cmocka_unit_test(test_jitter_bounds),
        cmocka_unit_test(test_choose_delay),
        cmocka_unit_test(test_budget_floor),
        cmocka_unit_test(test_budget_ratio),
        cmocka_unit_test(test_budget_storm),
        cmocka_unit_test(test_budget_window_slides),
        cmocka_unit_test(test_budget_partial_slide),
        cmocka_unit_test(test_budget_odd_inputs),
        cmocka_unit_test(test_budget_bucket_width),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
