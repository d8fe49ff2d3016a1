/* SPDX-License-Identifier: MIT */
/* test_config_select.c -- the `select` key of routes (config/route_select.c): a valid file
 * decodes every condition and resolves each rule's route; every class of error is reported
 * with its exact file:line:column and text, all of them in one load; a select route without
 * a rule that always holds is a warning. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"
#include "contract/regex.h"
#include "core/str.h"

static char *printed(const struct cfg_diags *d)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);

    assert_non_null(f);
    cfg_diags_print(d, f);
    fclose(f);
    return text;
}

static bool has_line(const struct cfg_diags *d, const char *line)
{
    char *text = printed(d);
    size_t n = strlen(line);
    bool found = false;

    for (const char *p = text; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);

        if (len == n && memcmp(p, line, n) == 0)
            found = true;
        p = nl ? nl + 1 : NULL;
    }
    if (!found)
        print_error("missing line: %s\nprinted:\n%s", line, text);
    free(text);
    return found;
}

#define assert_line(d, line) assert_true(has_line((d), (line)))

static size_t errors(const struct cfg_diags *d)
{
    size_t n = 0;

    for (size_t i = 0; i < d->n; i++)
        n += !d->items[i].warning;
    return n;
}

/* One provider, two targets, two routes with tiers (lines 1-7); routes follow. */
#define BASE                                                                                       \
    "providers:\n"                                                                                 \
    "  p: {kind: openai, base_url: \"https://api.openai.com/v1\", keys: [k]}\n"                    \
    "targets:\n"                                                                                   \
    "  t: {provider: p, model: m}\n"                                                               \
    "routes:\n"                                                                                    \
    "  small: {primary: [t]}\n"                                                                    \
    "  large: {primary: [t]}\n"

static void test_valid_select(void **state)
{
    static const char yaml[] = BASE
        "  support:\n"
        "    select:\n"
        "      - if: {tools: false, images: true, json_schema: false, stream: true,\n"
        "             min_input_tokens: 10, max_input_tokens: 400, min_messages: 1,\n"
        "             max_messages: 9, metadata: {tier: premium, Region: eu},\n"
        "             last_user_matches: \"(?i)refund|chargeback\"}\n"
        "        route: small\n"
        "      - if: null\n"
        "        route: large\n";
    struct cfg_diags d = {0};
    struct cfg *cfg = NULL;
    const struct cfg_route *r, *small, *large;
    const struct cfg_sel_rule *a;
    uint64_t budget = 1000;

    (void)state;
    assert_int_equal(cfg_load_string("gateway.yaml", yaml, strlen(yaml), &cfg, &d), BSC_OK);
    assert_int_equal(d.n, 0);
    r = cfg_route_find(cfg, BSC_STR("support"));
    small = cfg_route_find(cfg, BSC_STR("small"));
    large = cfg_route_find(cfg, BSC_STR("large"));
    assert_non_null(r);
    assert_int_equal(r->n_select, 2);
    assert_int_equal(r->primary.n, 0);
    a = &r->select[0];
    assert_int_equal(a->conds, 0x3ff);
    assert_false(a->tools);
    assert_true(a->images);
    assert_false(a->json_schema);
    assert_true(a->stream);
    assert_int_equal(a->min_input_tokens, 10);
    assert_int_equal(a->max_input_tokens, 400);
    assert_int_equal(a->min_messages, 1);
    assert_int_equal(a->max_messages, 9);
    assert_int_equal(a->n_metadata, 2);
    assert_string_equal(a->metadata[0].key, "tier");
    assert_string_equal(a->metadata[0].value, "premium");
    assert_string_equal(a->metadata[1].key, "Region");
    assert_non_null(a->last_user);
    /* (?i) was taken as the flag, not as part of the pattern. */
    assert_int_equal(js_regex_search(a->last_user, "A CHARGEBACK", 12, &budget), 1);
    assert_ptr_equal(a->route, small);
    assert_int_equal(r->select[1].conds, 0);
    assert_ptr_equal(r->select[1].route, large);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
}

static void test_select_errors(void **state)
{
    static const char yaml[] = BASE                                                /* lines 1-7 */
        "  s:\n"                                                                   /* 8 */
        "    primary: [t]\n"                                                       /* 9 */
        "    envelope: {max_attempts: 2}\n"                                        /* 10 */
        "    balanse: priority\n"                                                  /* 11 */
        "    select:\n"                                                            /* 12 */
        "      - if: {tools: true, colour: red}\n"                                 /* 13 */
        "        route: ghost\n"                                                   /* 14 */
        "      - if: {last_user_matches: \"(?=x)\"}\n"                             /* 15 */
        "        route: s2\n"                                                      /* 16 */
        "      - if: {min_messages: 5, max_messages: 2, metadata: {\"a b\": x}}\n" /* 17 */
        "        route: s\n"                                                       /* 18 */
        "      - {route: small}\n"                                                 /* 19 */
        "      - {route: large}\n"                                                 /* 20 */
        "      - if: {tools: yes}\n"                                               /* 21 */
        "  s2:\n"                                                                  /* 22 */
        "    select: []\n"                                                         /* 23 */
        "  s3:\n"                                                                  /* 24 */
        "    select: null\n";                                                      /* 25 */
    struct cfg_diags d = {0};
    struct cfg *cfg = (struct cfg *)1;

    (void)state;
    assert_int_equal(cfg_load_string("gateway.yaml", yaml, strlen(yaml), &cfg, &d), BSC_EINVAL);
    assert_null(cfg);
    assert_line(&d, "gateway.yaml:9:5: error: 'primary' in route 's': a route with 'select' has "
                    "no tiers, envelope or contract of its own (the route a rule selects brings "
                    "them)");
    assert_line(&d, "gateway.yaml:10:5: error: 'envelope' in route 's': a route with 'select' "
                    "has no tiers, envelope or contract of its own (the route a rule selects "
                    "brings them)");
    assert_line(&d, "gateway.yaml:11:5: error: unknown key 'balanse' in route 's'");
    assert_line(&d, "gateway.yaml:13:27: error: unknown key 'colour' in route 's' select rule 1 "
                    "if");
    assert_line(&d, "gateway.yaml:14:16: error: unknown route 'ghost' in route 's' select rule 1");
    assert_line(&d, "gateway.yaml:15:33: error: 'last_user_matches' in route 's' select rule 2 "
                    "if: bad pattern: lookaround assertions are not supported at byte 1 of the "
                    "pattern");
    assert_line(&d, "gateway.yaml:16:16: error: route 's' select rule 2 names route 's2', which "
                    "has 'select' itself: a rule must name a route with tiers (no chains)");
    assert_line(&d, "gateway.yaml:17:13: error: route 's' select rule 3 if: min_messages is "
                    "above max_messages: the rule never holds");
    assert_line(&d, "gateway.yaml:17:59: error: metadata key 'a b' in route 's' select rule 3 "
                    "if: 1..128 letters, digits or !#$%&'*+-.^_`|~ (it also names the header "
                    "X-Bascule-Meta-<key>)");
    assert_line(&d, "gateway.yaml:18:16: error: route 's' select rule 3 names route 's', which "
                    "has 'select' itself: a rule must name a route with tiers (no chains)");
    assert_line(&d, "gateway.yaml:20:9: error: route 's' select rule 5 is never used: rule 4 has "
                    "no condition and takes every request");
    assert_line(&d, "gateway.yaml:21:9: error: route 's' select rule 6 is never used: rule 4 has "
                    "no condition and takes every request");
    assert_line(&d, "gateway.yaml:21:9: error: missing required key 'route' in route 's' select "
                    "rule 6");
    assert_line(&d, "gateway.yaml:21:21: error: 'tools' in route 's' select rule 6 if: expected "
                    "true or false, got 'yes'");
    assert_line(&d, "gateway.yaml:23:13: error: 'select' in route 's2' must list at least one "
                    "rule");
    assert_line(&d, "gateway.yaml:25:13: error: 'select' in route 's3' is required and cannot be "
                    "null");
    assert_int_equal(errors(&d), 16);
    cfg_diags_cleanup(&d);
}

static void test_no_catch_all_warns(void **state)
{
    static const char yaml[] = BASE "  s:\n"
                                    "    select:\n"
                                    "      - if: {stream: true}\n"
                                    "        route: small\n";
    struct cfg_diags d = {0};
    struct cfg *cfg = NULL;

    (void)state;
    assert_int_equal(cfg_load_string("gateway.yaml", yaml, strlen(yaml), &cfg, &d), BSC_OK);
    assert_line(&d, "gateway.yaml:9:5: warning: route 's': every rule of 'select' has a "
                    "condition: a request none of them takes is refused (400 no_route_selected)");
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_select),
        cmocka_unit_test(test_select_errors),
        cmocka_unit_test(test_no_catch_all_warns),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
