/* SPDX-License-Identifier: MIT */
/* test_metrics_scoped.c -- metrics_inc_scoped / metrics_observe_scoped (metrics/metrics.h):
 * a label pointer seen before under the same scope finds its series without its bytes being
 * read, and nothing else does. A string freed by a reload and another one made at the same
 * address (simulated here by rewriting one buffer) lands on its own series under a new
 * scope and on an unscoped update; the same scope and pointers keep one series. And every
 * config snapshot gets a scope of its own (struct cfg's serial). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"
#include "metrics/metrics.h"

/* The value of the series <id>{<l1>,<l2>,<l3>} summed over shards, or -1 when it is not
 * there (a histogram: its count). */
static double value_of(struct metrics *m, enum metric_id id, const char *l1, const char *l2,
                       const char *l3)
{
    const char *want[3] = {l1, l2, l3};
    struct metrics_snapshot snap;
    double v = -1;

    assert_int_equal(metrics_snapshot_take(m, &snap), BSC_OK);
    for (size_t i = 0; i < snap.n; i++) {
        const struct metrics_sample *s = &snap.samples[i];
        bool same = s->id == id;

        for (unsigned k = 0; same && k < metrics_family(id)->n_labels; k++)
            same = strcmp(s->labels[k], want[k]) == 0;
        if (same)
            v = metrics_family(id)->type == METRIC_HISTOGRAM ? (double)s->count : s->value;
    }
    metrics_snapshot_cleanup(&snap);
    return v;
}

/* One buffer plays a config's route id; a reload frees it and the next config's id is
 * made at the same address. */
static void reused_address_new_scope(void **state)
{
    struct metrics *m = metrics_new(1);
    char *route = malloc(16);

    (void)state;
    assert_non_null(m);
    assert_non_null(route);
    memcpy(route, "route-a", sizeof("route-a"));
    for (int i = 0; i < 3; i++)
        metrics_inc_scoped(m, 0, 7, METRIC_OUTCOMES, route, "transport", "ok", 1);
    memcpy(route, "route-b", sizeof("route-b")); /* the reload: another string at the same address */
    metrics_inc_scoped(m, 0, 8, METRIC_OUTCOMES, route, "transport", "ok", 1);
    metrics_inc_scoped(m, 0, 8, METRIC_OUTCOMES, route, "transport", "ok", 1);
    assert_true(value_of(m, METRIC_OUTCOMES, "route-a", "transport", "ok") == 3);
    assert_true(value_of(m, METRIC_OUTCOMES, "route-b", "transport", "ok") == 2);
    free(route);
    metrics_free(m);
}

/* An unscoped update is checked on the bytes whatever a scoped one left in the front. */
static void reused_address_unscoped(void **state)
{
    struct metrics *m = metrics_new(1);
    char *target = malloc(16);

    (void)state;
    memcpy(target, "t-one", sizeof("t-one"));
    metrics_observe_scoped(m, 0, 3, METRIC_ATTEMPT_DURATION, target, 0.2);
    metrics_observe_scoped(m, 0, 3, METRIC_ATTEMPT_DURATION, target, 0.2);
    memcpy(target, "t-two", sizeof("t-two"));
    metrics_observe(m, 0, METRIC_ATTEMPT_DURATION, target, NULL, 0.2);
    /* and a scoped update under the old scope after an unscoped one found the new bytes:
     * the front holds the scope only of a check it made on the bytes */
    memcpy(target, "t-one", sizeof("t-one"));
    metrics_observe_scoped(m, 0, 3, METRIC_ATTEMPT_DURATION, target, 0.2);
    assert_true(value_of(m, METRIC_ATTEMPT_DURATION, "t-one", NULL, NULL) == 3);
    assert_true(value_of(m, METRIC_ATTEMPT_DURATION, "t-two", NULL, NULL) == 1);
    free(target);
    metrics_free(m);
}

/* Scope 0 vouches for nothing: the same pointer with new bytes is a new series. */
static void scope_zero_checks_bytes(void **state)
{
    struct metrics *m = metrics_new(1);
    char label[16];

    (void)state;
    memcpy(label, "x1", sizeof("x1"));
    metrics_inc_scoped(m, 0, 0, METRIC_REQUESTS, label, "ok", NULL, 1);
    memcpy(label, "x2", sizeof("x2"));
    metrics_inc_scoped(m, 0, 0, METRIC_REQUESTS, label, "ok", NULL, 1);
    assert_true(value_of(m, METRIC_REQUESTS, "x1", "ok", NULL) == 1);
    assert_true(value_of(m, METRIC_REQUESTS, "x2", "ok", NULL) == 1);
    metrics_free(m);
}

/* Scoped and unscoped updates of one series add up on it, a gauge takes negative steps,
 * and the usual rejections still count as drops. */
static void scoped_is_the_same_series(void **state)
{
    struct metrics *m = metrics_new(2);
    const char *t = "tgt";

    (void)state;
    metrics_inc_scoped(m, 1, 5, METRIC_ATTEMPTS, t, "ok", NULL, 1);
    metrics_inc(m, 0, METRIC_ATTEMPTS, "tgt", "ok", 2);
    metrics_inc_scoped(m, 1, 5, METRIC_ATTEMPTS, t, "ok", NULL, 4);
    assert_true(value_of(m, METRIC_ATTEMPTS, "tgt", "ok", NULL) == 7);
    metrics_inc_scoped(m, 1, 5, METRIC_UPSTREAM_INFLIGHT, t, NULL, NULL, 1);
    metrics_inc_scoped(m, 1, 5, METRIC_UPSTREAM_INFLIGHT, t, NULL, NULL, 1);
    metrics_inc_scoped(m, 1, 5, METRIC_UPSTREAM_INFLIGHT, t, NULL, NULL, -1);
    assert_true(value_of(m, METRIC_UPSTREAM_INFLIGHT, "tgt", NULL, NULL) == 1);
    metrics_inc_scoped(m, 1, 5, METRIC_ATTEMPTS, t, "ok", NULL, -1);       /* negative */
    metrics_observe_scoped(m, 1, 5, METRIC_ATTEMPTS, t, 1);                 /* not a histogram */
    assert_true(value_of(m, METRIC_METRICS_DROPPED, NULL, NULL, NULL) == 2);
    assert_true(value_of(m, METRIC_ATTEMPTS, "tgt", "ok", NULL) == 7);
    metrics_inc_scoped(NULL, 0, 1, METRIC_ATTEMPTS, t, "ok", NULL, 1); /* no registry: no-op */
    metrics_free(m);
}

/* Every snapshot has a serial of its own, never 0: a scope no other snapshot shares. */
static void config_serials_differ(void **state)
{
    static const char yaml[] = "providers:\n"
                               "  p: {kind: openai, base_url: \"https://api.openai.com/v1\", keys: [k]}\n"
                               "targets:\n"
                               "  t: {provider: p, model: m}\n"
                               "routes:\n"
                               "  r: {primary: [t]}\n";
    struct cfg *a = NULL, *b = NULL;
    struct cfg_diags d = {0};

    (void)state;
    assert_int_equal(cfg_load_string("a.yaml", yaml, strlen(yaml), &a, &d), BSC_OK);
    assert_int_equal(cfg_load_string("b.yaml", yaml, strlen(yaml), &b, &d), BSC_OK);
    assert_true(a->serial != 0);
    assert_true(b->serial != 0);
    assert_true(a->serial != b->serial);
    cfg_unref(a);
    cfg_unref(b);
    cfg_diags_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reused_address_new_scope),
        cmocka_unit_test(reused_address_unscoped),
        cmocka_unit_test(scope_zero_checks_bytes),
        cmocka_unit_test(scoped_is_the_same_series),
        cmocka_unit_test(config_serials_differ),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
