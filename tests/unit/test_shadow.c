/* SPDX-License-Identifier: MIT */
/* test_shadow.c -- the pure parts of shadow traffic (router/shadow.h): which requests a
 * percent mirrors (exact shares, evenly spread, the 0 and 100 edges), how an answer is
 * summarised (tool names sorted) and when a candidate agrees with the primary; and the
 * route's `shadow` block as the config loader reads and checks it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"
#include "router/shadow.h"
#include "router/shadow_purse.h"

static unsigned taken(uint64_t from, uint64_t n, uint32_t percent)
{
    unsigned k = 0;

    for (uint64_t i = from; i < from + n; i++)
        k += shadow_sample(i, percent);
    return k;
}

static void sample_edges(void **state)
{
    (void)state;
    assert_int_equal(taken(0, 1000, 0), 0);
    assert_int_equal(taken(0, 1000, 100), 1000);
    assert_int_equal(taken(0, 100, 1), 1);
    assert_int_equal(taken(0, 100, 99), 99);
    assert_true(shadow_sample(UINT64_MAX, 100));
    assert_false(shadow_sample(UINT64_MAX, 0));
    assert_true(shadow_sample(0, 250)); /* above 100 reads as all */
}

/* Every percent takes exactly that many of any 100 consecutive requests, wherever they
 * start, so the share holds over short windows too. */
static void sample_exact_shares(void **state)
{
    (void)state;
    for (uint32_t p = 0; p <= 100; p++)
        for (uint64_t from = 0; from < 300; from += 37)
            assert_int_equal(taken(from, 100, p), p);
}

/* Evenly spread: at 50 %, every other request; at 10 %, one in each run of ten. */
static void sample_spread(void **state)
{
    (void)state;
    for (uint64_t i = 0; i < 20; i++)
        assert_int_equal(shadow_sample(i, 50), i % 2 == 1);
    for (uint64_t from = 0; from < 100; from += 10)
        assert_int_equal(taken(from, 10, 10), 1);
    assert_int_equal(taken(0, 10, 1), 0); /* 1 %: none in the first ten, one in a hundred */
}

static struct shadow_summary summary(bool answered, bool valid, const char *tools)
{
    struct shadow_summary s = {.answered = answered, .valid = valid};

    snprintf(s.tools, sizeof(s.tools), "%s", tools);
    return s;
}

static void agreement(void **state)
{
    struct shadow_summary p = summary(true, true, "a,b"), c;

    (void)state;
    c = summary(true, true, "a,b");
    assert_int_equal(shadow_agreement(&p, &c), SHADOW_AGREE);
    c = summary(true, true, "a");
    assert_int_equal(shadow_agreement(&p, &c), SHADOW_DISAGREE);
    c = summary(true, false, "a,b"); /* same tools, invalid arguments */
    assert_int_equal(shadow_agreement(&p, &c), SHADOW_DISAGREE);
    c = summary(false, false, "");
    assert_int_equal(shadow_agreement(&p, &c), SHADOW_UNKNOWN);
    p = summary(false, false, ""); /* the primary failed or streamed */
    c = summary(true, true, "a,b");
    assert_int_equal(shadow_agreement(&p, &c), SHADOW_UNKNOWN);
    p = summary(true, true, "");
    c = summary(true, true, "");
    assert_int_equal(shadow_agreement(&p, &c), SHADOW_AGREE); /* both plain text */
    assert_string_equal(shadow_agree_name(SHADOW_AGREE), "agree");
    assert_string_equal(shadow_agree_name(SHADOW_DISAGREE), "disagree");
    assert_string_equal(shadow_agree_name(SHADOW_UNKNOWN), "unknown");
    assert_string_equal(shadow_agree_name(SHADOW_AGREE_COUNT), "unknown");
}

static void summarize(void **state)
{
    static const char two[] =
        "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
        "{\"id\":\"1\",\"type\":\"function\",\"function\":{\"name\":\"zeta\",\"arguments\":\"{}\"}}"
        ","
        "{\"id\":\"2\",\"type\":\"function\",\"function\":{\"name\":\"alpha\",\"arguments\":\"{}\"}"
        "}"
        "]}}]}";
    static const char text[] =
        "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"hi\"}}]}";
    struct shadow_summary s = {0};

    (void)state;
    assert_true(shadow_summarize(bsc_str_cstr(two), &s));
    assert_true(s.answered);
    assert_string_equal(s.tools, "alpha,zeta"); /* order of the calls does not matter */
    s = (struct shadow_summary){0};
    assert_true(shadow_summarize(bsc_str_cstr(text), &s));
    assert_string_equal(s.tools, "");
    s = (struct shadow_summary){0};
    assert_false(shadow_summarize(bsc_str_cstr("{\"error\":{}}"), &s));
    assert_false(s.answered);
    assert_false(shadow_summarize(bsc_str_cstr("not json"), &s));
}

/* ---- config ---- */

#define SHADOW_BASE                                                                                \
    "providers:\n"                                                                                 \
    "  p: {kind: openai, base_url: \"https://api.openai.com/v1\", keys: [k]}\n"                    \
    "targets:\n"                                                                                   \
    "  t: {provider: p, model: m}\n"                                                               \
    "  c: {provider: p, model: m2}\n"                                                              \
    "routes:\n"

/* True when one diagnostic's message contains <what>. */
static bool has_diag(const struct cfg_diags *d, const char *what)
{
    for (size_t i = 0; i < d->n; i++)
        if (strstr(d->items[i].message, what))
            return true;
    for (size_t i = 0; i < d->n; i++)
        print_error("diag: %s\n", d->items[i].message);
    return false;
}

static enum bsc_err load(const char *yaml, struct cfg **cfg, struct cfg_diags *d)
{
    return cfg_load_string("gateway.yaml", yaml, strlen(yaml), cfg, d);
}

static void config_defaults_and_values(void **state)
{
    struct cfg_diags d = {0};
    struct cfg *cfg = NULL;
    const struct cfg_route *r;

    (void)state;
    assert_int_equal(load(SHADOW_BASE "  r: {primary: [t], shadow: {targets: [c]}}\n"
                                      "  q: {primary: [t], shadow: {targets: [c, t], percent: 10,"
                                      " max_concurrency: 2}}\n"
                                      "  n: {primary: [t]}\n",
                          &cfg, &d),
                     BSC_OK);
    r = cfg_route_find(cfg, bsc_str_cstr("r"));
    assert_int_equal(r->shadow.targets.n, 1);
    assert_string_equal(r->shadow.targets.targets[0]->id, "c");
    assert_int_equal(r->shadow.percent, 100);
    assert_int_equal(r->shadow.max_concurrency, 16);
    r = cfg_route_find(cfg, bsc_str_cstr("q"));
    assert_int_equal(r->shadow.targets.n, 2);
    assert_int_equal(r->shadow.percent, 10);
    assert_int_equal(r->shadow.max_concurrency, 2);
    assert_int_equal(cfg_route_find(cfg, bsc_str_cstr("n"))->shadow.targets.n, 0);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
}

static void config_errors(void **state)
{
    static const struct {
        const char *route, *diag;
    } cases[] = {
        {"  r: {primary: [t], shadow: {targets: [cc]}}\n",
         "unknown target 'cc' in route 'r' shadow"},
        {"  r: {primary: [t], shadow: {targets: [c, c]}}\n", "listed twice in route 'r' shadow"},
        {"  r: {primary: [t], shadow: {targets: [c], percent: 101}}\n", "percent"},
        {"  r: {primary: [t], shadow: {targets: [c], max_concurrency: 0}}\n", "max_concurrency"},
        {"  r: {primary: [t], shadow: {percent: 5}}\n", "targets"},
        {"  r: {primary: [t], shadow: {targets: c}}\n", "a list of target ids"},
        {"  r: {primary: [t], shadow: {targets: [c], mirror: 1}}\n", "mirror"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char yaml[1024];
        struct cfg_diags d = {0};
        struct cfg *cfg = NULL;

        snprintf(yaml, sizeof(yaml), "%s%s", SHADOW_BASE, cases[i].route);
        assert_int_equal(load(yaml, &cfg, &d), BSC_EINVAL);
        assert_null(cfg);
        assert_true(has_diag(&d, cases[i].diag));
        cfg_diags_cleanup(&d);
    }
}

#define DAY 86400000ull

/* shadow.max_usd_per_day: copies start while the day's spend is below the cap, the sum is
 * exact in nano-dollars, a new UTC day starts empty, and 0 means no cap. */
static void purse(void **state)
{
    struct shadow_purse p = {0};
    uint64_t t = 20000 * DAY + 5;

    (void)state;
    assert_true(shadow_purse_allows(&p, 0.05, t));
    shadow_purse_add(&p, 0.031, t);
    assert_true(shadow_purse_allows(&p, 0.05, t + 1));
    shadow_purse_add(&p, 0.031, t + 2);
    assert_true(shadow_purse_spent(&p, t + 2) == 0.062);
    assert_false(shadow_purse_allows(&p, 0.05, t + 3));
    assert_false(shadow_purse_allows(&p, 0.062, t + 3)); /* at the cap: spent */
    assert_true(shadow_purse_allows(&p, 0.062000001, t + 3));
    assert_true(shadow_purse_allows(&p, 0, t + 3)); /* no cap */
    /* the next UTC day */
    assert_true(shadow_purse_allows(&p, 0.05, t - 5 + DAY));
    assert_true(shadow_purse_spent(&p, t - 5 + DAY) == 0);
    shadow_purse_add(&p, 0.00000031, t + DAY);
    assert_true(shadow_purse_spent(&p, t + DAY) == 0.00000031);
    /* a late report of yesterday's copy counts toward today, never resets it */
    shadow_purse_add(&p, 0.01, t);
    assert_true(shadow_purse_spent(&p, t + DAY) == 0.01000031);
    shadow_purse_add(&p, -1, t + DAY); /* nonsense adds nothing */
    assert_true(shadow_purse_spent(&p, t + DAY) == 0.01000031);
}

static void config_max_usd_per_day(void **state)
{
    struct cfg_diags d = {0};
    struct cfg *cfg = NULL;

    (void)state;
    assert_int_equal(load(SHADOW_BASE "  r: {primary: [t]}\nshadow: {max_usd_per_day: 2.5}\n",
                          &cfg, &d),
                     BSC_OK);
    assert_true(cfg->shadow.max_usd_per_day == 2.5);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
    assert_int_equal(load(SHADOW_BASE "  r: {primary: [t]}\n", &cfg, &d), BSC_OK);
    assert_true(cfg->shadow.max_usd_per_day == 0);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
    assert_int_equal(load(SHADOW_BASE "  r: {primary: [t]}\nshadow: {max_usd_per_day: -1}\n",
                          &cfg, &d),
                     BSC_EINVAL);
    assert_true(has_diag(&d, "max_usd_per_day"));
    cfg_diags_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sample_edges),  cmocka_unit_test(sample_exact_shares),
        cmocka_unit_test(sample_spread), cmocka_unit_test(agreement),
        cmocka_unit_test(summarize),     cmocka_unit_test(config_defaults_and_values),
        cmocka_unit_test(config_errors),  cmocka_unit_test(purse),
        cmocka_unit_test(config_max_usd_per_day),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
