/* SPDX-License-Identifier: MIT */
/* test_pick.c -- the balance modes (priority, weighted, least_latency, cheapest) with their
 * ties and edge cases, the weighted distribution over many draws, and the target statistics
 * (health/tstats.h) that feed least_latency. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "health/tstats.h"
#include "policy/pick.h"

#define N_DRAWS 100000

/* A deterministic uniform source (splitmix64). */
static double next01(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

static struct pick_cand cand(void)
{
    struct pick_cand c = {
        .eligible = true,
        .weight = 1,
        .ewma_latency_ms = -1.0,
        .ewma_ttft_ms = -1.0,
        .inflight = 0,
        .price_per_mtok = 1.0,
        .ramp_fraction = 1.0,
    };
    return c;
}

static void fill(struct pick_cand *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        c[i] = cand();
}

static bool near(double got, double want, double tol)
{
    return fabs(got - want) <= tol;
}

/* ---- common -------------------------------------------------------------------------------- */

static void test_none_eligible(void **state)
{
    struct pick_cand c[3];

    (void)state;
    fill(c, 3);
    for (size_t i = 0; i < 3; i++)
        c[i].eligible = false;
    for (int b = 0; b < CFG_BALANCE_COUNT; b++)
        assert_int_equal(pick_next(c, 3, (enum cfg_balance)b, 0.5), -1);
    assert_int_equal(pick_next(c, 0, CFG_BALANCE_PRIORITY, 0.5), -1);
    assert_int_equal(pick_next(NULL, 3, CFG_BALANCE_PRIORITY, 0.5), -1);
}

static void test_single_eligible_every_mode(void **state)
{
    struct pick_cand c[4];

    (void)state;
    fill(c, 4);
    c[0].eligible = c[1].eligible = c[3].eligible = false;
    c[2].ewma_latency_ms = 50.0;
    for (int b = 0; b < CFG_BALANCE_COUNT; b++)
        assert_int_equal(pick_next(c, 4, (enum cfg_balance)b, 0.999), 2);
}

/* ---- priority ------------------------------------------------------------------------------ */

static void test_priority_first_eligible(void **state)
{
    struct pick_cand c[3];

    (void)state;
    fill(c, 3);
    c[0].ewma_latency_ms = 900.0; /* slow and pricey, but first */
    c[0].price_per_mtok = 100.0;
    assert_int_equal(pick_next(c, 3, CFG_BALANCE_PRIORITY, 0.7), 0);
    c[0].eligible = false;
    assert_int_equal(pick_next(c, 3, CFG_BALANCE_PRIORITY, 0.7), 1);
    /* An unknown mode behaves as priority. */
    assert_int_equal(pick_next(c, 3, CFG_BALANCE_COUNT, 0.7), 1);
}

/* ---- weighted ------------------------------------------------------------------------------ */

static void draw_counts(const struct pick_cand *c, size_t n, uint64_t seed, unsigned *counts)
{
    for (size_t i = 0; i < n; i++)
        counts[i] = 0;
    for (int d = 0; d < N_DRAWS; d++) {
        int idx = pick_next(c, n, CFG_BALANCE_WEIGHTED, next01(&seed));

        assert_true(idx >= 0 && (size_t)idx < n);
        counts[idx]++;
    }
}

static void test_weighted_distribution(void **state)
{
    struct pick_cand c[3];
    unsigned counts[3];

    (void)state;
    fill(c, 3);
    c[0].weight = 1;
    c[1].weight = 3;
    c[2].weight = 6;
    draw_counts(c, 3, 1, counts);
    /* 100 000 draws: sd of a share is at most 0.0016; 0.01 is six of them. */
    assert_true(near((double)counts[0] / N_DRAWS, 0.1, 0.01));
    assert_true(near((double)counts[1] / N_DRAWS, 0.3, 0.01));
    assert_true(near((double)counts[2] / N_DRAWS, 0.6, 0.01));
}

static void test_weighted_uses_ramp(void **state)
{
    struct pick_cand c[2];
    unsigned counts[2];

    (void)state;
    fill(c, 2);
    c[0].weight = 1;
    c[1].weight = 1;
    c[1].ramp_fraction = 0.25; /* effective 1 : 0.25 -> 0.8 : 0.2 */
    draw_counts(c, 2, 2, counts);
    assert_true(near((double)counts[0] / N_DRAWS, 0.8, 0.01));
    assert_true(near((double)counts[1] / N_DRAWS, 0.2, 0.01));
}

static void test_weighted_skips_ineligible_and_zero(void **state)
{
    struct pick_cand c[4];
    unsigned counts[4];

    (void)state;
    fill(c, 4);
    c[0].weight = 5;
    c[0].eligible = false;
    c[1].weight = 0;
    c[2].weight = 1;
    c[3].weight = 1;
    draw_counts(c, 4, 3, counts);
    assert_int_equal(counts[0], 0);
    assert_int_equal(counts[1], 0);
    assert_true(near((double)counts[2] / N_DRAWS, 0.5, 0.01));
}

static void test_weighted_boundaries(void **state)
{
    struct pick_cand c[3];

    (void)state;
    fill(c, 3);
    c[0].weight = 1;
    c[1].weight = 1;
    c[2].weight = 2; /* cumulative 1, 2, 4 of 4 */
    assert_int_equal(pick_next(c, 3, CFG_BALANCE_WEIGHTED, 0.0), 0);
    assert_int_equal(pick_next(c, 3, CFG_BALANCE_WEIGHTED, 0.2499), 0);
    assert_int_equal(pick_next(c, 3, CFG_BALANCE_WEIGHTED, 0.25), 1);
    assert_int_equal(pick_next(c, 3, CFG_BALANCE_WEIGHTED, 0.4999), 1);
    assert_int_equal(pick_next(c, 3, CFG_BALANCE_WEIGHTED, 0.5), 2);
    assert_int_equal(pick_next(c, 3, CFG_BALANCE_WEIGHTED, 0.9999999), 2);
    /* Out-of-range draws are clipped, never out of bounds. */
    assert_int_equal(pick_next(c, 3, CFG_BALANCE_WEIGHTED, 1.0), 2);
    assert_int_equal(pick_next(c, 3, CFG_BALANCE_WEIGHTED, 7.0), 2);
    assert_int_equal(pick_next(c, 3, CFG_BALANCE_WEIGHTED, -3.0), 0);
    assert_int_equal(pick_next(c, 3, CFG_BALANCE_WEIGHTED, NAN), 0);
    /* Deterministic given the draw. */
    assert_int_equal(pick_next(c, 3, CFG_BALANCE_WEIGHTED, 0.3),
                     pick_next(c, 3, CFG_BALANCE_WEIGHTED, 0.3));
}

static void test_weighted_all_zero_falls_back(void **state)
{
    struct pick_cand c[3];

    (void)state;
    fill(c, 3);
    c[0].eligible = false;
    c[1].ramp_fraction = 0.0;
    c[2].weight = 0;
    assert_int_equal(pick_next(c, 3, CFG_BALANCE_WEIGHTED, 0.9), 1);
}

/* ---- least_latency ------------------------------------------------------------------------- */

static void test_least_latency_lowest(void **state)
{
    struct pick_cand c[3];

    (void)state;
    fill(c, 3);
    c[0].ewma_latency_ms = 300.0;
    c[1].ewma_latency_ms = 120.0;
    c[2].ewma_latency_ms = 200.0;
    assert_int_equal(pick_next(c, 3, CFG_BALANCE_LEAST_LATENCY, 0.5), 1);
    c[1].eligible = false;
    assert_int_equal(pick_next(c, 3, CFG_BALANCE_LEAST_LATENCY, 0.5), 2);
}

static void test_least_latency_explore_first(void **state)
{
    struct pick_cand c[3];

    (void)state;
    fill(c, 3);
    c[0].ewma_latency_ms = 5.0;
    c[1].ewma_latency_ms = -1.0; /* unmeasured: explored first despite c[0] being fast */
    c[2].ewma_latency_ms = 10.0;
    assert_int_equal(pick_next(c, 3, CFG_BALANCE_LEAST_LATENCY, 0.5), 1);
    /* Among several unmeasured, the least busy, then tier order. */
    c[2].ewma_latency_ms = NAN;
    assert_int_equal(pick_next(c, 3, CFG_BALANCE_LEAST_LATENCY, 0.5), 1);
    c[1].inflight = 1;
    assert_int_equal(pick_next(c, 3, CFG_BALANCE_LEAST_LATENCY, 0.5), 2);
    /* An ineligible unmeasured one is not explored. */
    c[1].eligible = false;
    c[2].eligible = false;
    assert_int_equal(pick_next(c, 3, CFG_BALANCE_LEAST_LATENCY, 0.5), 0);
}

static void test_least_latency_inflight_penalty(void **state)
{
    struct pick_cand c[2];

    (void)state;
    fill(c, 2);
    c[0].ewma_latency_ms = 100.0;
    c[1].ewma_latency_ms = 150.0;
    assert_int_equal(pick_next(c, 2, CFG_BALANCE_LEAST_LATENCY, 0.5), 0);
    /* 100 x (1 + 1) = 200 > 150: the busy fast one yields. */
    c[0].inflight = 1;
    assert_true(near(pick_score(&c[0]), 200.0, 1e-9));
    assert_int_equal(pick_next(c, 2, CFG_BALANCE_LEAST_LATENCY, 0.5), 1);
    /* 150 x 2 = 300 > 200: back to the first. */
    c[1].inflight = 1;
    assert_int_equal(pick_next(c, 2, CFG_BALANCE_LEAST_LATENCY, 0.5), 0);
}

static void test_least_latency_ttft_and_floor(void **state)
{
    struct pick_cand c[2];

    (void)state;
    fill(c, 2);
    /* TTFT measured: the base is the mean of the two. */
    c[0].ewma_latency_ms = 1000.0;
    c[0].ewma_ttft_ms = 200.0;
    assert_true(near(pick_score(&c[0]), 600.0, 1e-9));
    c[1].ewma_latency_ms = 700.0; /* unmeasured TTFT: latency alone */
    assert_true(near(pick_score(&c[1]), 700.0, 1e-9));
    assert_int_equal(pick_next(c, 2, CFG_BALANCE_LEAST_LATENCY, 0.5), 0);
    /* Zero latency still feels the in-flight penalty through the 1 ms floor. */
    c[0].ewma_latency_ms = 0.0;
    c[0].ewma_ttft_ms = 0.0;
    c[0].inflight = 3;
    c[1].ewma_latency_ms = 0.0;
    assert_true(near(pick_score(&c[0]), 4.0, 1e-9));
    assert_true(near(pick_score(&c[1]), 1.0, 1e-9));
    assert_int_equal(pick_next(c, 2, CFG_BALANCE_LEAST_LATENCY, 0.5), 1);
    c[1].ewma_latency_ms = -1.0;
    assert_true(pick_score(&c[1]) < 0.0);
}

static void test_least_latency_ties_by_order(void **state)
{
    struct pick_cand c[3];

    (void)state;
    fill(c, 3);
    for (size_t i = 0; i < 3; i++)
        c[i].ewma_latency_ms = 80.0;
    assert_int_equal(pick_next(c, 3, CFG_BALANCE_LEAST_LATENCY, 0.9), 0);
    c[0].eligible = false;
    assert_int_equal(pick_next(c, 3, CFG_BALANCE_LEAST_LATENCY, 0.9), 1);
}

/* ---- cheapest ------------------------------------------------------------------------------ */

static void test_cheapest(void **state)
{
    struct pick_cand c[4];

    (void)state;
    fill(c, 4);
    c[0].price_per_mtok = 5.0;
    c[1].price_per_mtok = 2.5;
    c[2].price_per_mtok = 2.5;
    c[3].price_per_mtok = 3.0;
    assert_int_equal(pick_next(c, 4, CFG_BALANCE_CHEAPEST, 0.5), 1); /* tie -> order */
    c[1].eligible = false;
    assert_int_equal(pick_next(c, 4, CFG_BALANCE_CHEAPEST, 0.5), 2);
    c[2].eligible = false;
    assert_int_equal(pick_next(c, 4, CFG_BALANCE_CHEAPEST, 0.5), 3);
    /* A NaN price never beats a number, in either position. */
    c[0].price_per_mtok = NAN;
    assert_int_equal(pick_next(c, 4, CFG_BALANCE_CHEAPEST, 0.5), 3);
    c[3].eligible = false;
    assert_int_equal(pick_next(c, 4, CFG_BALANCE_CHEAPEST, 0.5), 0);
}

static void test_blend_price(void **state)
{
    struct cfg_price p = {.input_per_mtok = 2.0, .output_per_mtok = 8.0};

    (void)state;
    assert_true(near(pick_blend_price(&p), 3.5, 1e-12));
    p.input_per_mtok = 0.0;
    p.output_per_mtok = 0.0;
    assert_true(pick_blend_price(&p) == 0.0);
}

/* ---- tstats -------------------------------------------------------------------------------- */

static void test_tstats_ewma(void **state)
{
    struct tstats t;

    (void)state;
    tstats_init(&t);
    assert_true(tstats_latency_ms(&t) == TSTATS_UNMEASURED);
    assert_true(tstats_ttft_ms(&t) == TSTATS_UNMEASURED);
    tstats_latency(&t, 100.0); /* the first sample initialises */
    assert_true(near(tstats_latency_ms(&t), 100.0, 1e-12));
    tstats_latency(&t, 200.0); /* 100 + 0.2 x 100 */
    assert_true(near(tstats_latency_ms(&t), 120.0, 1e-12));
    tstats_latency(&t, 20.0); /* 120 + 0.2 x -100 */
    assert_true(near(tstats_latency_ms(&t), 100.0, 1e-12));
    /* Garbage samples are ignored. */
    tstats_latency(&t, -5.0);
    tstats_latency(&t, NAN);
    tstats_latency(&t, INFINITY);
    assert_true(near(tstats_latency_ms(&t), 100.0, 1e-12));
    assert_true(tstats_ttft_ms(&t) == TSTATS_UNMEASURED);
    tstats_ttft(&t, 40.0);
    tstats_ttft(&t, 90.0);
    assert_true(near(tstats_ttft_ms(&t), 50.0, 1e-12));
}

static void test_tstats_converges(void **state)
{
    struct tstats t;

    (void)state;
    tstats_init(&t);
    tstats_latency(&t, 1000.0);
    for (int i = 0; i < 10; i++)
        tstats_latency(&t, 100.0);
    /* 100 + 900 x 0.8^10 = 196.6 */
    assert_true(near(tstats_latency_ms(&t), 100.0 + 900.0 * pow(0.8, 10), 1e-9));
}

static void test_tstats_counters(void **state)
{
    struct tstats t;

    (void)state;
    tstats_init(&t);
    tstats_inflight_dec(&t); /* unbalanced: stays at 0 */
    assert_int_equal(tstats_inflight(&t), 0);
    tstats_inflight_inc(&t);
    tstats_inflight_inc(&t);
    tstats_inflight_dec(&t);
    assert_int_equal(tstats_inflight(&t), 1);
    tstats_success(&t);
    tstats_success(&t);
    tstats_failure(&t, 7, 12345);
    assert_int_equal(t.successes, 2);
    assert_int_equal(t.failures, 1);
    assert_int_equal(t.last_error, 7);
    assert_int_equal(t.last_error_ms, 12345);
}

static void test_tstats_feed_pick(void **state)
{
    struct tstats t[2];
    struct pick_cand c[2];

    (void)state;
    fill(c, 2);
    tstats_init(&t[0]);
    tstats_init(&t[1]);
    tstats_latency(&t[0], 50.0);
    for (size_t i = 0; i < 2; i++) {
        c[i].ewma_latency_ms = tstats_latency_ms(&t[i]);
        c[i].ewma_ttft_ms = tstats_ttft_ms(&t[i]);
        c[i].inflight = tstats_inflight(&t[i]);
    }
    /* t[1] has no sample yet: least_latency explores it first. */
    assert_int_equal(pick_next(c, 2, CFG_BALANCE_LEAST_LATENCY, 0.5), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_none_eligible),
        cmocka_unit_test(test_single_eligible_every_mode),
        cmocka_unit_test(test_priority_first_eligible),
        cmocka_unit_test(test_weighted_distribution),
        cmocka_unit_test(test_weighted_uses_ramp),
        cmocka_unit_test(test_weighted_skips_ineligible_and_zero),
        cmocka_unit_test(test_weighted_boundaries),
        cmocka_unit_test(test_weighted_all_zero_falls_back),
        cmocka_unit_test(test_least_latency_lowest),
        cmocka_unit_test(test_least_latency_explore_first),
        cmocka_unit_test(test_least_latency_inflight_penalty),
        cmocka_unit_test(test_least_latency_ttft_and_floor),
        cmocka_unit_test(test_least_latency_ties_by_order),
        cmocka_unit_test(test_cheapest),
        cmocka_unit_test(test_blend_price),
        cmocka_unit_test(test_tstats_ewma),
        cmocka_unit_test(test_tstats_converges),
        cmocka_unit_test(test_tstats_counters),
        cmocka_unit_test(test_tstats_feed_pick),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
