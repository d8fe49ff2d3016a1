/* SPDX-License-Identifier: MIT */
/* test_limits_rate.c -- the rate limiter (limits/limits.h, GCRA) against its contract, with
 * an injected clock: whatever the arrivals (a burst at start, steady arrival above and below
 * the rate, a long idle time then a burst, tpm corrected from usage), no 60 s window admits
 * more than the limit and no window shorter than one interval more than the burst. Every
 * admission is logged and every window checked exactly (each admission opens one). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "limits/limits.h"

#define T0 1000000u /* ms */
#define MINUTE_MS 60000u
#define MAX_LOG 20000

struct adm {
    uint64_t at_ms, n;
};

struct run {
    struct lim_set s;
    struct adm log[MAX_LOG];
    size_t n;
};

/* The most admitted (summed n) in any window [a, a + w_ms), a at an admission. */
static uint64_t max_window(const struct run *r, uint64_t w_ms)
{
    uint64_t best = 0;

    for (size_t i = 0; i < r->n; i++) {
        uint64_t sum = 0;

        for (size_t j = i; j < r->n && r->log[j].at_ms < r->log[i].at_ms + w_ms; j++)
            sum += r->log[j].n;
        best = sum > best ? sum : best;
    }
    return best;
}

/* One request of <tokens> at <now>: logged when admitted (its usage <used> counts). */
static bool offer(struct run *r, uint64_t tokens, uint64_t used, uint64_t now)
{
    struct lim_verdict v = lim_acquire(&r->s, tokens, now);

    if (v.kind != LIM_NONE)
        return false;
    assert_true(r->n < MAX_LOG);
    r->log[r->n++] = (struct adm){now, r->s.caps.tpm ? used : 1};
    lim_release(&r->s, tokens, used, now);
    return true;
}

/* Requests every <every_ms> from <from> for <for_ms>, <per> at each instant. */
static unsigned arrive(struct run *r, uint64_t from, uint64_t for_ms, uint64_t every_ms,
                       unsigned per)
{
    unsigned admitted = 0;

    for (uint64_t t = from; t < from + for_ms; t += every_ms)
        for (unsigned k = 0; k < per; k++)
            admitted += offer(r, 0, 0, t);
    return admitted;
}

/* The window shorter than one interval, in whole ms. */
static uint64_t burst_window_ms(uint32_t cap, uint32_t burst)
{
    return lim_rate_interval_ns(cap, burst) / 1000000u;
}

static struct run *run_new(struct lim_caps caps)
{
    struct run *r = calloc(1, sizeof(*r));

    assert_non_null(r);
    lim_set_init(&r->s, caps);
    return r;
}

static void run_free(struct run *r)
{
    lim_set_destroy(&r->s);
    free(r);
}

static void assert_bounds(const struct run *r, uint64_t cap, uint32_t burst_cfg)
{
    uint32_t b = lim_burst((uint32_t)cap, burst_cfg);

    assert_true(max_window(r, MINUTE_MS) <= cap);
    assert_true(max_window(r, burst_window_ms((uint32_t)cap, burst_cfg)) <= b);
}

static void test_burst_default_and_interval(void **state)
{
    (void)state;
    assert_int_equal(lim_burst(120, 0), 10); /* rpm / 12: 5 s worth */
    assert_int_equal(lim_burst(5, 0), 1);    /* at least 1 */
    assert_int_equal(lim_burst(120, 500), 120); /* never above the limit */
    assert_int_equal(lim_burst(120, 7), 7);
    /* 60 s / (120 - 10 + 1), rounded up */
    assert_int_equal(lim_rate_interval_ns(120, 0), 540540541u);
    assert_int_equal(lim_rate_interval_ns(60, 1), 1000000000u);
}

/* 50 at once against rpm 120: the burst (10) passes, the next waits one interval. */
static void test_burst_at_start(void **state)
{
    struct run *r = run_new((struct lim_caps){.rpm = 120});
    struct lim_verdict v;
    unsigned admitted = 0;

    (void)state;
    for (int i = 0; i < 50; i++)
        admitted += offer(r, 0, 0, T0);
    assert_int_equal(admitted, 10);
    v = lim_peek(&r->s, 0, T0);
    assert_int_equal(v.kind, LIM_RPM);
    assert_int_equal(v.wait_ms, 541); /* when the next one would be admitted */
    assert_false(offer(r, 0, 0, T0 + 540));
    assert_true(offer(r, 0, 0, T0 + 541));
    assert_false(offer(r, 0, 0, T0 + 541));
    assert_bounds(r, 120, 0);
    run_free(r);
}

/* Arrivals far above the rate for 5 minutes: the bounds hold, and the limit is delivered
 * (each minute after the first passes the sustained rate, rpm - burst + 1). */
static void test_steady_above_rate(void **state)
{
    struct run *r = run_new((struct lim_caps){.rpm = 120});
    unsigned admitted;

    (void)state;
    admitted = arrive(r, T0, 5 * MINUTE_MS, 50, 3);
    assert_bounds(r, 120, 0);
    assert_int_equal(max_window(r, MINUTE_MS), 120); /* the limit is reached, exactly */
    assert_true(admitted >= 10 + 5 * 111 - 1);
    run_free(r);
}

/* Below the rate every request passes. */
static void test_steady_below_rate(void **state)
{
    struct run *r = run_new((struct lim_caps){.rpm = 120});

    (void)state;
    assert_int_equal(arrive(r, T0, 5 * MINUTE_MS, 600, 1), 500);
    assert_bounds(r, 120, 0);
    run_free(r);
}

/* Saturated, then idle an hour, then a burst: the burst again, no more (an idle limiter
 * does not save up beyond it). A configured burst: the same, with its own interval. */
static void test_idle_then_burst(void **state)
{
    struct run *r = run_new((struct lim_caps){.rpm = 120});
    struct run *q = run_new((struct lim_caps){.rpm = 60, .rpm_burst = 30});
    uint64_t later = T0 + 2 * MINUTE_MS + 3600000u;
    unsigned admitted = 0;

    (void)state;
    arrive(r, T0, 2 * MINUTE_MS, 100, 2);
    for (int i = 0; i < 100; i++)
        admitted += offer(r, 0, 0, later);
    assert_int_equal(admitted, 10);
    arrive(r, later + 1, 2 * MINUTE_MS, 100, 2);
    assert_bounds(r, 120, 0);

    assert_int_equal(arrive(q, T0, 1, 1, 40), 30);
    arrive(q, T0 + 1, 3 * MINUTE_MS, 100, 5);
    assert_int_equal(max_window(q, 1), 30);
    arrive(q, T0 + 10 * MINUTE_MS, 3 * MINUTE_MS, 100, 5);
    assert_bounds(q, 60, 30);
    assert_int_equal(max_window(q, MINUTE_MS), 60);
    run_free(r);
    run_free(q);
}

/* tpm 6000 (burst 500): requests estimated at 200 tokens that use between 50 and 200 (the
 * usage gives back the difference) hold both bounds over the tokens used; a request using
 * more than estimated puts the limiter into debt, which the next requests wait for. */
static void test_tpm_corrections(void **state)
{
    struct run *r = run_new((struct lim_caps){.tpm = 6000});
    struct lim_verdict v;
    uint64_t t = T0;

    (void)state;
    for (unsigned i = 0; t < T0 + 4 * MINUTE_MS; i++, t += 1)
        offer(r, 200, 50 + (i * 37) % 151, t);
    assert_true(max_window(r, MINUTE_MS) <= 6000);
    assert_true(max_window(r, MINUTE_MS) >= 5000);
    assert_true(max_window(r, burst_window_ms(6000, 0)) <= 500);
    assert_true(max_window(r, 10) >= 300); /* a burst did pass at once */
    run_free(r);

    r = run_new((struct lim_caps){.tpm = 6000});
    assert_true(offer(r, 100, 100, T0));
    assert_int_equal(lim_acquire(&r->s, 100, T0).kind, LIM_NONE);
    lim_release(&r->s, 100, 1100, T0); /* 1000 more than estimated */
    v = lim_peek(&r->s, 100, T0);
    assert_int_equal(v.kind, LIM_TPM);
    /* 1200 charged, 100 more, 500 burst: 800 intervals before they fit */
    assert_int_equal(v.wait_ms, (int64_t)((800 * lim_rate_interval_ns(6000, 0) + 999999) /
                                          1000000));
    run_free(r);
}

/* GCRA with a burst of rpm: the whole minute at once, then one a minute. */
static void test_burst_of_the_whole_limit(void **state)
{
    struct run *r = run_new((struct lim_caps){.rpm = 10, .rpm_burst = 10});

    (void)state;
    assert_int_equal(arrive(r, T0, 1, 1, 30), 10);
    arrive(r, T0 + 1, 10 * MINUTE_MS, 250, 1);
    assert_bounds(r, 10, 10);
    assert_int_equal(max_window(r, MINUTE_MS), 10);
    run_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_default_and_interval),
        cmocka_unit_test(test_burst_at_start),
        cmocka_unit_test(test_steady_above_rate),
        cmocka_unit_test(test_steady_below_rate),
        cmocka_unit_test(test_idle_then_burst),
        cmocka_unit_test(test_tpm_corrections),
        cmocka_unit_test(test_burst_of_the_whole_limit),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
