/* SPDX-License-Identifier: MIT */
/* test_limits.c -- the local limits (limits/limits.h) with an injected clock: a rate's burst
 * and interval (GCRA), tpm taken from an estimate and corrected from usage (into debt
 * when more was used), concurrency slots, all-or-nothing acquisition, the adaptive factor,
 * the waiters a release wakes, and the registry keeping a set across reloads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "limits/limits.h"

#define T0 1000000u /* ms */

/* rpm 10 (burst 1 by default): one at once, the next one interval (6 s) later. */
static void test_rpm_rate(void **state)
{
    struct lim_set s;
    struct lim_verdict v;

    (void)state;
    lim_set_init(&s, (struct lim_caps){.rpm = 10});
    assert_int_equal(lim_acquire(&s, 0, T0).kind, LIM_NONE);
    v = lim_acquire(&s, 0, T0);
    assert_int_equal(v.kind, LIM_RPM);
    assert_int_equal(v.wait_ms, 6000);
    v = lim_acquire(&s, 0, T0 + 5999);
    assert_int_equal(v.kind, LIM_RPM);
    assert_int_equal(v.wait_ms, 1);
    assert_int_equal(lim_acquire(&s, 0, T0 + 6000).kind, LIM_NONE);
    assert_int_equal(lim_acquire(&s, 0, T0 + 6000).kind, LIM_RPM);
    /* A long idle time gives back the burst, no more. */
    assert_int_equal(lim_acquire(&s, 0, T0 + 3600000).kind, LIM_NONE);
    assert_int_equal(lim_acquire(&s, 0, T0 + 3600000).kind, LIM_RPM);
    lim_set_destroy(&s);
}

static void test_pure_rate(void **state)
{
    struct lim_rate r = {0};

    (void)state;
    assert_int_equal(lim_rate_wait_ms(&r, 600, 0, 1, T0), 0);
    for (int i = 0; i < 50; i++) /* the burst: 600 / 12 */
        lim_rate_take(&r, 600, 0, 1, T0);
    /* 60 s / 551, rounded up to the ms */
    assert_int_equal(lim_rate_wait_ms(&r, 600, 0, 1, T0), 109);
    assert_int_equal(lim_rate_wait_ms(&r, 600, 0, 6000, T0), 50 * 109 - 5); /* alone, once idle */
    assert_int_equal(lim_rate_wait_ms(&r, 600, 0, 1, T0 + 10), 99);
    assert_int_equal(lim_rate_wait_ms(&r, 0, 0, 5, T0), 0); /* no cap: never waits */
    lim_rate_correct(&r, 600, 0, -1000, T0); /* given back, never before now */
    assert_int_equal(r.tat_ns, (uint64_t)T0 * 1000000u);
}

/* tpm: the estimate is taken, the usage corrects it; more used than estimated is a debt. */
static void test_tpm_correction(void **state)
{
    struct lim_set s;
    struct lim_verdict v;
    uint64_t step = lim_rate_interval_ns(6000, 0); /* burst 500 */

    (void)state;
    lim_set_init(&s, (struct lim_caps){.tpm = 6000});
    assert_int_equal(lim_acquire(&s, 400, T0).kind, LIM_NONE);
    v = lim_acquire(&s, 200, T0);
    assert_int_equal(v.kind, LIM_TPM);
    assert_int_equal(v.wait_ms, (int64_t)((100 * step + 999999) / 1000000));
    lim_release(&s, 400, 100, T0); /* it used 100: 300 back */
    assert_int_equal(lim_acquire(&s, 200, T0).kind, LIM_NONE);
    lim_release(&s, 200, 1200, T0); /* 1000 more than taken: 1300 charged */
    v = lim_peek(&s, 1, T0);
    assert_int_equal(v.kind, LIM_TPM);
    assert_int_equal(v.wait_ms, (int64_t)((801 * step + 999999) / 1000000));
    /* A request larger than the burst passes alone once the debt is paid. */
    assert_int_equal(lim_acquire(&s, 100000, T0 + 100000).kind, LIM_NONE);
    lim_set_destroy(&s);
}

/* Concurrency: slots, all or nothing with the rates, undo and release give them back. */
static void test_concurrency(void **state)
{
    struct lim_set s;
    struct lim_verdict v;
    struct lim_snapshot snap;

    (void)state;
    lim_set_init(&s, (struct lim_caps){.rpm = 3, .conc = 2, .rpm_burst = 3});
    assert_int_equal(lim_acquire(&s, 0, T0).kind, LIM_NONE);
    assert_int_equal(lim_acquire(&s, 0, T0).kind, LIM_NONE);
    v = lim_acquire(&s, 0, T0);
    assert_int_equal(v.kind, LIM_CONC);
    assert_int_equal(v.wait_ms, -1);
    lim_release(&s, 0, 0, T0);
    assert_int_equal(lim_acquire(&s, 0, T0).kind, LIM_NONE); /* the third token of rpm 3 */
    lim_release(&s, 0, 0, T0);
    v = lim_acquire(&s, 0, T0); /* a slot, but no token: nothing taken */
    assert_int_equal(v.kind, LIM_RPM);
    lim_undo(&s, 0, 1000);
    v = lim_acquire(&s, 0, T0); /* the undone one */
    assert_int_equal(v.kind, LIM_NONE);
    assert_int_equal(v.enforced, (1u << LIM_RPM) | (1u << LIM_CONC));
    /* A reload that drops the caps: the slot taken before still comes back. */
    lim_set_configure(&s, (struct lim_caps){0});
    assert_false(lim_set_active(&s));
    assert_int_equal(lim_acquire(&s, 0, T0).enforced, 0);
    lim_release(&s, 0, 0, T0);
    lim_snapshot(&s, &snap);
    assert_int_equal(snap.inflight, 0);
    lim_set_destroy(&s);
}

/* The adaptive hook scales rpm and concurrency, at least 1, never above the config. */
static void test_factor(void **state)
{
    struct lim_set s;
    struct lim_caps c;

    (void)state;
    lim_set_init(&s, (struct lim_caps){.rpm = 100, .tpm = 1000, .conc = 10, .rpm_burst = 100});
    lim_set_factor(&s, 0.25);
    c = lim_set_effective(&s);
    assert_int_equal(c.rpm, 25);
    assert_int_equal(c.conc, 2);
    assert_int_equal(c.tpm, 1000);
    assert_int_equal(lim_acquire(&s, 0, T0).kind, LIM_NONE);
    assert_int_equal(lim_acquire(&s, 0, T0).kind, LIM_NONE);
    assert_int_equal(lim_acquire(&s, 0, T0).kind, LIM_CONC);
    lim_set_factor(&s, 0.0);
    assert_int_equal(lim_set_effective(&s).conc, 1);
    lim_set_factor(&s, 7.0);
    assert_int_equal(lim_set_effective(&s).conc, 10);
    lim_set_destroy(&s);
}

/* A release wakes the loops that wait, once; a set without caps is inert. */
static void test_waiters(void **state)
{
    struct lim_set s, none;
    struct lim_snapshot snap;

    (void)state;
    lim_set_init(&s, (struct lim_caps){.conc = 1});
    lim_set_init(&none, (struct lim_caps){0});
    assert_int_equal(lim_acquire(&s, 0, T0).kind, LIM_NONE);
    lim_wait_on(&s, 3);
    lim_wait_on(&s, 66); /* 66 % 64 */
    lim_queued(&s, +2);
    lim_snapshot(&s, &snap);
    assert_int_equal(snap.inflight, 1);
    assert_int_equal(snap.queued, 2);
    assert_int_equal(lim_release(&s, 0, 0, T0), (1ull << 3) | (1ull << 2));
    assert_int_equal(lim_release(&s, 0, 0, T0), 0);
    lim_queued(&s, -5); /* never below zero */
    lim_snapshot(&s, &snap);
    assert_int_equal(snap.queued, 2);
    assert_false(lim_set_active(&none));
    assert_false(lim_set_active(NULL));
    for (int i = 0; i < 1000; i++)
        assert_int_equal(lim_acquire(&none, 1u << 30, T0).kind, LIM_NONE);
    assert_string_equal(lim_kind_name(LIM_CONC), "concurrency");
    lim_set_destroy(&s);
    lim_set_destroy(&none);
}

/* The registry: one set per kind and id, kept (with its counters) across a reload. */
static void test_registry(void **state)
{
    struct lim_reg *reg = lim_reg_new();
    struct cfg_provider p = {.id = "x", .max_concurrency = 4};
    struct cfg_target t = {.id = "x", .provider = &p, .rpm = 5};
    struct cfg_client c = {.id = "x", .tpm = 9};
    struct cfg cfg = {.providers = &p, .n_providers = 1, .targets = &t, .n_targets = 1,
                      .clients = &c, .n_clients = 1};
    struct lim_set *first;

    (void)state;
    assert_non_null(reg);
    assert_int_equal(lim_reg_sync(reg, &cfg), BSC_OK);
    assert_true(p.lim != t.lim && t.lim != c.lim && p.lim != c.lim);
    assert_int_equal(t.lim->caps.rpm, 5);
    assert_int_equal(p.lim->caps.conc, 4);
    assert_int_equal(c.lim->caps.tpm, 9);
    assert_int_equal(lim_acquire(t.lim, 0, T0).kind, LIM_NONE);
    first = t.lim;
    t.rpm = 1;
    t.lim = NULL;
    assert_int_equal(lim_reg_sync(reg, &cfg), BSC_OK);
    assert_ptr_equal(t.lim, first);
    assert_int_equal(t.lim->caps.rpm, 1);
    assert_int_equal(t.lim->inflight, 1);
    lim_reg_free(reg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rpm_rate),   cmocka_unit_test(test_pure_rate),
        cmocka_unit_test(test_tpm_correction), cmocka_unit_test(test_concurrency),
        cmocka_unit_test(test_factor),       cmocka_unit_test(test_waiters),
        cmocka_unit_test(test_registry),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
