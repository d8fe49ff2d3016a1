/* SPDX-License-Identifier: MIT */
/* test_metrics_front.c -- the front cache of a metrics shard (metrics.c): two series whose
 * label pointers pick the same set both stay in it (two ways), a third evicts the one
 * filled longest ago, and whatever the ways hold, every update lands on its own series:
 * a way whose pointers now hold other bytes is refilled in place, under a scope or not.
 * metrics__front_set() and metrics__lookups() (unit builds only) say which set a label
 * uses and how many updates missed the front. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metrics/metrics.h"

#define POOL 1024

/* Label buffers at distinct addresses: "p0" .. "p1023". */
static char pool[POOL][16];

/* Three buffers whose pointers pick one front set for family <id> (one label). */
static void three_in_one_set(enum metric_id id, char *out[3])
{
    static unsigned seen[128][3];
    static unsigned n[128];

    memset(n, 0, sizeof(n));
    for (unsigned i = 0; i < POOL; i++) {
        const char *l[METRICS_MAX_LABELS] = {pool[i]};
        unsigned set = metrics__front_set(id, l);

        assert_true(set < 128);
        seen[set][n[set]++] = i;
        if (n[set] == 3) {
            for (unsigned k = 0; k < 3; k++)
                out[k] = pool[seen[set][k]];
            return;
        }
    }
    fail_msg("no three labels share a set");
}

static int setup(void **state)
{
    (void)state;
    for (unsigned i = 0; i < POOL; i++)
        snprintf(pool[i], sizeof(pool[i]), "p%u", i);
    return 0;
}

/* The value of <id>{<l1>} summed over shards, or -1 when the series is not there. */
static double value_of(struct metrics *m, enum metric_id id, const char *l1)
{
    struct metrics_snapshot snap;
    double v = -1;

    assert_int_equal(metrics_snapshot_take(m, &snap), BSC_OK);
    for (size_t i = 0; i < snap.n; i++)
        if (snap.samples[i].id == id && strcmp(snap.samples[i].labels[0], l1) == 0)
            v = snap.samples[i].value;
    metrics_snapshot_cleanup(&snap);
    return v;
}

/* Two series of one set, updated in turn: each misses once, then both are served. */
static void colliding_pair_both_stay(void **state)
{
    struct metrics *m = metrics_new(1);
    char *l[3];

    (void)state;
    three_in_one_set(METRIC_UPSTREAM_INFLIGHT, l);
    for (int i = 0; i < 10; i++) {
        metrics_inc_scoped(m, 0, 9, METRIC_UPSTREAM_INFLIGHT, l[0], NULL, NULL, 1);
        metrics_inc_scoped(m, 0, 9, METRIC_UPSTREAM_INFLIGHT, l[1], NULL, NULL, 2);
    }
    assert_int_equal(metrics__lookups(m, 0), 2);
    /* unscoped updates are served too (their bytes compared) */
    metrics_inc(m, 0, METRIC_UPSTREAM_INFLIGHT, l[0], NULL, 1);
    metrics_inc(m, 0, METRIC_UPSTREAM_INFLIGHT, l[1], NULL, 1);
    assert_int_equal(metrics__lookups(m, 0), 2);
    assert_true(value_of(m, METRIC_UPSTREAM_INFLIGHT, l[0]) == 11);
    assert_true(value_of(m, METRIC_UPSTREAM_INFLIGHT, l[1]) == 21);
    /* another shard has a front of its own */
    metrics_inc_scoped(m, 1, 9, METRIC_UPSTREAM_INFLIGHT, l[0], NULL, NULL, 1);
    assert_int_equal(metrics__lookups(m, 1), 1);
    assert_int_equal(metrics__lookups(m, 0), 2);
    metrics_free(m);
}

/* A third series of the set takes way 0 and drops the one filled longest ago. */
static void third_evicts_the_oldest(void **state)
{
    struct metrics *m = metrics_new(1);
    char *l[3];

    (void)state;
    three_in_one_set(METRIC_ATTEMPT_DURATION, l);
    metrics_observe_scoped(m, 0, 4, METRIC_ATTEMPT_DURATION, l[0], 0.1); /* miss: [0] */
    metrics_observe_scoped(m, 0, 4, METRIC_ATTEMPT_DURATION, l[1], 0.1); /* miss: [1, 0] */
    metrics_observe_scoped(m, 0, 4, METRIC_ATTEMPT_DURATION, l[2], 0.1); /* miss: [2, 1] */
    assert_int_equal(metrics__lookups(m, 0), 3);
    metrics_observe_scoped(m, 0, 4, METRIC_ATTEMPT_DURATION, l[1], 0.1); /* hit */
    metrics_observe_scoped(m, 0, 4, METRIC_ATTEMPT_DURATION, l[2], 0.1); /* hit */
    assert_int_equal(metrics__lookups(m, 0), 3);
    metrics_observe_scoped(m, 0, 4, METRIC_ATTEMPT_DURATION, l[0], 0.1); /* miss: [0, 2] */
    assert_int_equal(metrics__lookups(m, 0), 4);
    metrics_observe_scoped(m, 0, 4, METRIC_ATTEMPT_DURATION, l[2], 0.1); /* hit */
    assert_int_equal(metrics__lookups(m, 0), 4);
    metrics_observe_scoped(m, 0, 4, METRIC_ATTEMPT_DURATION, l[1], 0.1); /* miss */
    assert_int_equal(metrics__lookups(m, 0), 5);
    metrics_free(m);
}

/* A way whose pointer now holds other bytes (a freed and reused address) is refilled in
 * place: the other way keeps its series, and every update lands on its own series. */
static void stale_way_refilled_in_place(void **state)
{
    struct metrics *m = metrics_new(1);
    char *l[3], saved[16];

    (void)state;
    three_in_one_set(METRIC_UPSTREAM_INFLIGHT, l);
    memcpy(saved, l[0], sizeof(saved));
    metrics_inc_scoped(m, 0, 3, METRIC_UPSTREAM_INFLIGHT, l[0], NULL, NULL, 1); /* [0] */
    metrics_inc_scoped(m, 0, 3, METRIC_UPSTREAM_INFLIGHT, l[1], NULL, NULL, 1); /* [1, 0] */
    memcpy(l[0], "renamed", sizeof("renamed"));
    /* unscoped: way 1 names the pointer, its bytes differ: a miss, refilled in way 1 */
    metrics_inc(m, 0, METRIC_UPSTREAM_INFLIGHT, l[0], NULL, 10);
    assert_int_equal(metrics__lookups(m, 0), 3);
    metrics_inc_scoped(m, 0, 3, METRIC_UPSTREAM_INFLIGHT, l[1], NULL, NULL, 1); /* still a hit */
    metrics_inc(m, 0, METRIC_UPSTREAM_INFLIGHT, l[0], NULL, 10);                /* a hit */
    assert_int_equal(metrics__lookups(m, 0), 3);
    /* a new scope with the old address: its bytes are compared, never the old series */
    metrics_inc_scoped(m, 0, 5, METRIC_UPSTREAM_INFLIGHT, l[0], NULL, NULL, 100);
    assert_int_equal(metrics__lookups(m, 0), 3); /* the bytes matched "renamed" */
    memcpy(l[0], saved, sizeof(saved));
    metrics_inc(m, 0, METRIC_UPSTREAM_INFLIGHT, l[0], NULL, 1000);
    assert_int_equal(metrics__lookups(m, 0), 4);
    assert_true(value_of(m, METRIC_UPSTREAM_INFLIGHT, saved) == 1001);
    assert_true(value_of(m, METRIC_UPSTREAM_INFLIGHT, "renamed") == 120);
    assert_true(value_of(m, METRIC_UPSTREAM_INFLIGHT, l[1]) == 2);
    memcpy(l[0], saved, sizeof(saved)); /* the pool is shared by the tests */
    metrics_free(m);
}

/* Two families through the same pointers are two series, whatever the sets. */
static void same_pointers_other_family(void **state)
{
    struct metrics *m = metrics_new(1);
    const char *t = pool[7];

    (void)state;
    for (int i = 0; i < 3; i++) {
        metrics_inc_scoped(m, 0, 2, METRIC_UPSTREAM_INFLIGHT, t, NULL, NULL, 1);
        metrics_inc_scoped(m, 0, 2, METRIC_ATTEMPTS, t, NULL, NULL, 2);
        metrics_inc_scoped(m, 0, 2, METRIC_QUEUE_DEPTH, t, NULL, NULL, 3);
    }
    assert_true(value_of(m, METRIC_UPSTREAM_INFLIGHT, t) == 3);
    assert_true(value_of(m, METRIC_ATTEMPTS, t) == 6);
    assert_true(value_of(m, METRIC_QUEUE_DEPTH, t) == 9);
    metrics_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(colliding_pair_both_stay),
        cmocka_unit_test(third_evicts_the_oldest),
        cmocka_unit_test(stale_way_refilled_in_place),
        cmocka_unit_test(same_pointers_other_family),
    };

    return cmocka_run_group_tests(tests, setup, NULL);
}
