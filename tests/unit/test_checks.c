/* SPDX-License-Identifier: MIT */
/* test_checks.c -- the output checks of a route (contract/checks.c) as a pure function, with
 * sets loaded from config as the gateway gets them: each check passing and failing on its
 * own, (?i), characters counted as code points, the first failure reported, the regex budget
 * failing closed, an inactive set passing everything, and bad config refused with its place. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"
#include "contract/checks.h"
#include "core/str.h"

static const char yaml[] =
    "providers:\n"
    "  p: {kind: openai, base_url: \"https://api.openai.com/v1\", keys: [k]}\n"
    "targets:\n"
    "  t: {provider: p, model: m}\n"
    "routes:\n"
    "  plain: {primary: [t]}\n"
    "  c:\n"
    "    primary: [t]\n"
    "    checks:\n"
    "      max_chars: 10\n"
    "      min_chars: 2\n"
    "      forbidden: [\"(?i)as an ai language model\", \"ACME\"]\n"
    "      required: [\"https?://\"]\n"
    "      max_tool_calls: 1\n"
    "  calls: {primary: [t], checks: {max_tool_calls: 0, forbidden: [ACME]}}\n";

static struct cfg *cfg;

static int setup(void **state)
{
    struct cfg_diags d = {0};

    (void)state;
    if (cfg_load_string("gateway.yaml", yaml, strlen(yaml), &cfg, &d) != BSC_OK)
        return -1;
    cfg_diags_cleanup(&d);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cfg_unref(cfg);
    return 0;
}

static const struct chk_set *set(const char *route)
{
    const struct cfg_route *r = cfg_route_find(cfg, bsc_str_cstr(route));

    assert_non_null(r);
    return &r->checks;
}

/* Evaluates <text> with <calls> tool calls on route <route>; the reason lands in <why>. */
static bool eval(const char *route, const char *text, size_t calls, char *why)
{
    uint64_t budget = CHK_MAX_REGEX_STEPS;

    why[0] = '\0';
    return chk_eval(set(route), bsc_str_cstr(text), calls, &budget, why, 256);
}

static void test_loaded(void **state)
{
    const struct chk_set *s = set("c");

    (void)state;
    assert_true(s->active);
    assert_int_equal(s->max_chars, 10);
    assert_int_equal(s->min_chars, 2);
    assert_int_equal(s->max_tool_calls, 1);
    assert_int_equal(s->n_forbidden, 2);
    assert_int_equal(s->n_required, 1);
    assert_string_equal(s->forbidden[0].src, "(?i)as an ai language model");
    assert_false(set("plain")->active);
}

static void test_pass(void **state)
{
    char why[256];

    (void)state;
    assert_true(eval("c", "http://x", 0, why));
    assert_true(eval("c", "https://x", 1, why));
    /* no checks: anything goes, even what would fail "c" */
    assert_true(eval("plain", "As an AI language model, ACME", 9, why));
}

static void test_lengths(void **state)
{
    char why[256];

    (void)state;
    assert_false(eval("c", "http://xxxxxx", 0, why)); /* 13 > 10 */
    assert_non_null(strstr(why, "max_chars"));
    assert_non_null(strstr(why, "13 characters"));
    assert_false(eval("c", "h", 0, why));
    assert_non_null(strstr(why, "min_chars"));
    /* code points, not bytes: 7 + three 2-byte letters is 10 characters, 13 bytes */
    assert_true(eval("c", "http://\xc3\xa9\xc3\xa9\xc3\xa9", 0, why));
}

static void test_forbidden(void **state)
{
    char why[256];

    (void)state;
    assert_false(eval("c", "AS AN AI language Model", 0, why) && strstr(why, "forbidden"));
    assert_false(eval("c", "x ACME", 0, why));
    assert_non_null(strstr(why, "check forbidden failed"));
    assert_non_null(strstr(why, "'ACME'"));
    assert_true(eval("calls", "acme", 0, why)); /* no (?i): case counts */
    assert_false(eval("calls", "ACME", 0, why));
}

static void test_required(void **state)
{
    char why[256];

    (void)state;
    assert_false(eval("c", "no link", 0, why));
    assert_non_null(strstr(why, "check required failed"));
    assert_non_null(strstr(why, "https?://"));
    assert_null(strstr(why, "no link")); /* never the answer itself */
}

static void test_tool_calls(void **state)
{
    char why[256];

    (void)state;
    assert_false(eval("c", "http://x", 2, why));
    assert_non_null(strstr(why, "max_tool_calls"));
    assert_true(eval("calls", "", 0, why));
    assert_false(eval("calls", "", 1, why));
}

static void test_budget_fails_closed(void **state)
{
    uint64_t budget = 3;
    char why[256];

    (void)state;
    assert_false(chk_eval(set("c"), BSC_STR("http://ab"), 0, &budget, why, sizeof(why)));
    assert_non_null(strstr(why, "could not finish"));
}

static void test_add_pattern(void **state)
{
    struct chk_set s;
    char why[200];

    (void)state;
    chk_init(&s);
    assert_int_equal(chk_add_pattern(&s, false, "(unclosed", why, sizeof(why)), BSC_EINVAL);
    for (int i = 0; i < CHK_MAX_PATTERNS; i++)
        assert_int_equal(chk_add_pattern(&s, true, "a", why, sizeof(why)), BSC_OK);
    assert_int_equal(chk_add_pattern(&s, true, "a", why, sizeof(why)), BSC_ELIMIT);
    chk_cleanup(&s);
    assert_false(s.active);
}

static void expect_refused(const char *checks, const char *needle)
{
    char doc[1024];
    struct cfg_diags d = {0};
    struct cfg *c = NULL;
    bool found = false;

    snprintf(doc, sizeof(doc),
             "providers:\n  p: {kind: openai, base_url: \"https://a.example/v1\", keys: [k]}\n"
             "targets:\n  t: {provider: p, model: m}\n"
             "routes:\n  r:\n    primary: [t]\n    checks: %s\n", checks);
    assert_int_equal(cfg_load_string("g.yaml", doc, strlen(doc), &c, &d), BSC_EINVAL);
    for (size_t i = 0; i < d.n; i++)
        found = found || strstr(d.items[i].message, needle) != NULL;
    if (!found)
        for (size_t i = 0; i < d.n; i++)
            print_message("diag: %s\n", d.items[i].message);
    assert_true(found);
    cfg_diags_cleanup(&d);
}

static void test_config_refused(void **state)
{
    (void)state;
    expect_refused("{forbidden: [\"(a\"]}", "bad pattern");
    expect_refused("{required: \"a\"}", "a list of patterns");
    expect_refused("{max_chars: -1}", "max_chars");
    expect_refused("{min_chars: 5, max_chars: 2}", "no answer could pass");
    expect_refused("{max_char: 2}", "max_char");
    expect_refused("[1]", "expected a map");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loaded),          cmocka_unit_test(test_pass),
        cmocka_unit_test(test_lengths),         cmocka_unit_test(test_forbidden),
        cmocka_unit_test(test_required),        cmocka_unit_test(test_tool_calls),
        cmocka_unit_test(test_budget_fails_closed), cmocka_unit_test(test_add_pattern),
        cmocka_unit_test(test_config_refused),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
