/* SPDX-License-Identifier: MIT */
/* test_score.c -- balance: score: the score formula and the ranking (policy/score.h) as a
 * table of cases, and the route's `score:` weights in the configuration (defaults, file:line
 * errors, the warning when balance is not score). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"
#include "policy/score.h"

static const struct cfg_score defaults = {.contract = 1.0, .task = 1.0, .latency_ms = 0.001,
                                          .cost_usd = 100.0};

static struct score_cand cand(double contract, double task, double lat, double cost)
{
    return (struct score_cand){.eligible = true, .samples = 50, .contract_rate = contract,
                               .task_rate = task, .latency_ms = lat, .cost_usd = cost};
}

/* ---- the formula ------------------------------------------------------------------------- */

static void test_score_formula(void **state)
{
    static const struct {
        struct score_cand c;
        double want;
    } cases[] = {
        /* contract + task - 0.001 x ms - 100 x usd */
        {{true, 10, 1.0, 1.0, 0.0, 0.0}, 2.0},
        {{true, 10, 1.0, 0.0, 0.0, 0.0}, 1.0},
        {{true, 10, 0.9, 0.5, 200.0, 0.001}, 0.9 + 0.5 - 0.2 - 0.1},
        /* no feedback: the task rate is taken to be the contract rate */
        {{true, 10, 0.8, -1.0, 0.0, 0.0}, 1.6},
        {{true, 10, 0.8, NAN, 0.0, 0.0}, 1.6},
        /* unmeasured latency and unknown cost count 0; garbage never helps */
        {{true, 10, 1.0, 1.0, -1.0, 0.0}, 2.0},
        {{true, 10, 1.0, 1.0, NAN, -5.0}, 2.0},
        {{true, 10, NAN, -1.0, 0.0, 0.0}, 0.0},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_float_equal(score_of(&defaults, &cases[i].c), cases[i].want, 1e-9);
}

static void test_score_weights(void **state)
{
    struct cfg_score w = {.contract = 0.0, .task = 2.0, .latency_ms = 0.0, .cost_usd = 0.0};
    struct score_cand c = cand(0.5, 0.25, 1000.0, 1.0);

    (void)state;
    assert_float_equal(score_of(&w, &c), 0.5, 1e-9);
    w = (struct cfg_score){.latency_ms = 0.01};
    assert_float_equal(score_of(&w, &c), -10.0, 1e-9);
}

/* ---- the ranking ------------------------------------------------------------------------- */

static void test_rank_by_score(void **state)
{
    struct score_cand c[3] = {cand(1.0, 0.0, 100.0, 0.0), cand(1.0, 1.0, 100.0, 0.0),
                              cand(1.0, 0.5, 100.0, 0.0)};
    size_t order[3];
    double scores[3];
    bool by_score;

    (void)state;
    assert_int_equal(score_rank(&defaults, c, 3, order, scores, &by_score), 3);
    assert_true(by_score);
    assert_int_equal(order[0], 1);
    assert_int_equal(order[1], 2);
    assert_int_equal(order[2], 0);
    assert_float_equal(scores[0], 1.9, 1e-9);
    assert_float_equal(scores[2], 0.9, 1e-9);
}

static void test_rank_ties_keep_tier_order(void **state)
{
    struct score_cand c[4] = {cand(1.0, 1.0, 10.0, 0.0), cand(1.0, 1.0, 10.0, 0.0),
                              cand(0.5, 1.0, 10.0, 0.0), cand(1.0, 1.0, 10.0, 0.0)};
    size_t order[4];
    double scores[4];
    bool by_score;

    (void)state;
    assert_int_equal(score_rank(&defaults, c, 4, order, scores, &by_score), 4);
    assert_int_equal(order[0], 0);
    assert_int_equal(order[1], 1);
    assert_int_equal(order[2], 3);
    assert_int_equal(order[3], 2);
}

static void test_rank_skips_ineligible(void **state)
{
    struct score_cand c[3] = {cand(1.0, 1.0, 0.0, 0.0), cand(0.1, 0.1, 0.0, 0.0),
                              cand(1.0, 1.0, 0.0, 0.0)};
    size_t order[3];
    double scores[3];
    bool by_score;

    (void)state;
    c[0].eligible = c[2].eligible = false;
    assert_int_equal(score_rank(&defaults, c, 3, order, scores, &by_score), 1);
    assert_int_equal(order[0], 1);
    c[1].eligible = false;
    assert_int_equal(score_rank(&defaults, c, 3, order, scores, &by_score), 0);
    assert_int_equal(score_rank(&defaults, c, 0, order, scores, &by_score), 0);
}

/* One eligible candidate short of samples: the whole tier keeps priority order. */
static void test_rank_too_few_samples_is_priority(void **state)
{
    struct score_cand c[3] = {cand(0.0, 0.0, 900.0, 1.0), cand(1.0, 1.0, 0.0, 0.0),
                              cand(1.0, 1.0, 0.0, 0.0)};
    size_t order[3];
    double scores[3];
    bool by_score;

    (void)state;
    c[2].samples = SCORE_MIN_SAMPLES - 1;
    assert_int_equal(score_rank(&defaults, c, 3, order, scores, &by_score), 3);
    assert_false(by_score);
    assert_int_equal(order[0], 0);
    assert_int_equal(order[1], 1);
    assert_int_equal(order[2], 2);
    /* An ineligible one does not count; exactly the minimum is enough. */
    c[2].eligible = false;
    c[1].samples = SCORE_MIN_SAMPLES;
    assert_int_equal(score_rank(&defaults, c, 3, order, scores, &by_score), 2);
    assert_true(by_score);
    assert_int_equal(order[0], 1);
}

/* ---- configuration ----------------------------------------------------------------------- */

#define BASE                                                                               \
    "providers:\n"                                                                         \
    "  p: {kind: openai, base_url: \"https://api.openai.com/v1\", keys: [k]}\n"            \
    "targets:\n"                                                                           \
    "  t: {provider: p, model: m}\n"                                                       \
    "  u: {provider: p, model: n}\n"                                                       \
    "routes:\n"

static char *load(const char *yaml, struct cfg **cfg, enum bsc_err *err)
{
    struct cfg_diags d = {0};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    assert_non_null(f);
    *cfg = NULL;
    *err = cfg_load_string("gateway.yaml", yaml, strlen(yaml), cfg, &d);
    cfg_diags_print(&d, f);
    fclose(f);
    cfg_diags_cleanup(&d);
    return text;
}

static void test_config_score(void **state)
{
    struct cfg *cfg;
    enum bsc_err err;
    char *text;

    (void)state;
    text = load(BASE "  r: {primary: [t, u], balance: score}\n"
                     "  s: {primary: [t, u], balance: score, score: {task: 3, cost_usd: 0}}\n",
                &cfg, &err);
    assert_int_equal(err, BSC_OK);
    assert_string_equal(text, "");
    assert_int_equal(cfg->routes[0].balance, CFG_BALANCE_SCORE);
    assert_string_equal(cfg_balance_name(CFG_BALANCE_SCORE), "score");
    assert_float_equal(cfg->routes[0].score.contract, 1.0, 0);
    assert_float_equal(cfg->routes[0].score.task, 1.0, 0);
    assert_float_equal(cfg->routes[0].score.latency_ms, 0.001, 0);
    assert_float_equal(cfg->routes[0].score.cost_usd, 100.0, 0);
    assert_float_equal(cfg->routes[1].score.task, 3.0, 0);
    assert_float_equal(cfg->routes[1].score.cost_usd, 0.0, 0);
    assert_float_equal(cfg->routes[1].score.contract, 1.0, 0);
    cfg_unref(cfg);
    free(text);
}

static void test_config_score_errors(void **state)
{
    struct cfg *cfg;
    enum bsc_err err;
    char *text;

    (void)state;
    text = load(BASE "  r:\n    primary: [t]\n    balance: score\n    score: {task: -1}\n",
                &cfg, &err);
    assert_int_equal(err, BSC_EINVAL);
    assert_null(cfg);
    assert_string_equal(text, "gateway.yaml:10:19: error: 'task' in route 'r' score: must be in "
                              "[0, 1e+09], got '-1'\n");
    free(text);
    text = load(BASE "  r:\n    primary: [t]\n    balance: score\n    score: {speed: 1}\n",
                &cfg, &err);
    assert_int_equal(err, BSC_EINVAL);
    assert_non_null(strstr(text, "gateway.yaml:10:13: error: unknown key 'speed'"));
    free(text);
    /* Weights without balance: score do nothing: a warning at the key. */
    text = load(BASE "  r:\n    primary: [t]\n    score: {task: 2}\n", &cfg, &err);
    assert_int_equal(err, BSC_OK);
    assert_string_equal(text, "gateway.yaml:9:5: warning: 'score' in route 'r' is ignored "
                              "unless balance is score\n");
    cfg_unref(cfg);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_score_formula),
        cmocka_unit_test(test_score_weights),
        cmocka_unit_test(test_rank_by_score),
        cmocka_unit_test(test_rank_ties_keep_tier_order),
        cmocka_unit_test(test_rank_skips_ineligible),
        cmocka_unit_test(test_rank_too_few_samples_is_priority),
        cmocka_unit_test(test_config_score),
        cmocka_unit_test(test_config_score_errors),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
