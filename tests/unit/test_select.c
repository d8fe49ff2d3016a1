/* SPDX-License-Identifier: MIT */
/* test_select.c -- rule matching of select routes (policy/select.c) as a pure function: each
 * condition on its own, metadata from the body and from X-Bascule-Meta-* (the header wins,
 * names case-insensitive), the pattern with and without (?i), first-match order, no match, the
 * regex budget, and reading the message count and last user text from a messages array. Rules
 * come from a loaded config, as the gateway gets them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"
#include "contract/regex.h"
#include "core/str.h"
#include "policy/select.h"

static const char yaml[] =
    "providers:\n"
    "  p: {kind: openai, base_url: \"https://api.openai.com/v1\", keys: [k]}\n"
    "targets:\n"
    "  t: {provider: p, model: m}\n"
    "routes:\n"
    "  small: {primary: [t]}\n"
    "  large: {primary: [t]}\n"
    "  c:\n"
    "    select:\n"
    "      - if: {tools: true}\n" /* 0 */
    "        route: large\n"
    "      - if: {tools: false, images: true}\n" /* 1 */
    "        route: large\n"
    "      - if: {json_schema: true}\n" /* 2 */
    "        route: large\n"
    "      - if: {stream: false, max_input_tokens: 10}\n" /* 3 */
    "        route: small\n"
    "      - if: {min_input_tokens: 1000}\n" /* 4 */
    "        route: large\n"
    "      - if: {min_messages: 3, max_messages: 4}\n" /* 5 */
    "        route: large\n"
    "      - if: {metadata: {tier: premium, Region: eu}}\n" /* 6 */
    "        route: large\n"
    "      - if: {last_user_matches: \"(?i)refund|^legal$\"}\n" /* 7 */
    "        route: large\n"
    "      - if: {last_user_matches: \"Chargeback\"}\n" /* 8 */
    "        route: large\n"
    "      - route: small\n"; /* 9 */

static struct cfg *cfg;
static const struct cfg_route *route;

static int setup(void **state)
{
    struct cfg_diags d = {0};

    (void)state;
    if (cfg_load_string("gateway.yaml", yaml, strlen(yaml), &cfg, &d) != BSC_OK)
        return -1;
    cfg_diags_cleanup(&d);
    route = cfg_route_find(cfg, BSC_STR("c"));
    return route && route->n_select == 10 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    cfg_unref(cfg);
    return 0;
}

/* Headers for the facts: a NULL-terminated list of name, value pairs. */
static struct bsc_str fake_header(const void *ctx, struct bsc_str name)
{
    const char *const *h = ctx;

    for (; h && h[0]; h += 2)
        if (bsc_str_ieq(bsc_str_cstr(h[0]), name))
            return bsc_str_cstr(h[1]);
    return BSC_STR_NULL;
}

/* Plain facts: a short streamed request of two messages that no rule before the last takes. */
static struct sel_facts plain(void)
{
    return (struct sel_facts){
        .stream = true,
        .input_tokens = 100,
        .messages = 2,
        .last_user = BSC_STR("hello there"),
        .header = fake_header,
    };
}

static int pick(const struct sel_facts *f)
{
    uint64_t budget = SEL_MAX_REGEX_STEPS;

    return sel_pick(route, f, &budget);
}

static void test_booleans(void **state)
{
    struct sel_facts f = plain();

    (void)state;
    assert_int_equal(pick(&f), 9);
    f.tools = true;
    assert_int_equal(pick(&f), 0);
    f.images = true; /* rule 1 wants tools: false */
    assert_int_equal(pick(&f), 0);
    f.tools = false;
    assert_int_equal(pick(&f), 1);
    f = plain();
    f.json_schema = true;
    assert_int_equal(pick(&f), 2);
}

static void test_sizes(void **state)
{
    struct sel_facts f = plain();

    (void)state;
    f.input_tokens = 10; /* max is inclusive, and the request streams */
    assert_int_equal(pick(&f), 9);
    f.stream = false;
    assert_int_equal(pick(&f), 3);
    f.input_tokens = 11;
    assert_int_equal(pick(&f), 9);
    f.input_tokens = 999;
    assert_int_equal(pick(&f), 9);
    f.input_tokens = 1000; /* min is inclusive */
    assert_int_equal(pick(&f), 4);
    f = plain();
    for (uint64_t n = 2; n <= 5; n++) {
        f.messages = n;
        assert_int_equal(pick(&f), n == 3 || n == 4 ? 5 : 9);
    }
}

static void test_metadata(void **state)
{
    const char *both[] = {"X-Bascule-Meta-Tier", "premium", "x-bascule-meta-region", "eu", NULL};
    const char *tier[] = {"x-bascule-meta-tier", "premium", NULL};
    const char *basic[] = {"X-BASCULE-META-TIER", "basic", NULL};
    struct sel_facts f = plain();

    (void)state;
    f.header_ctx = both;
    assert_int_equal(pick(&f), 6);
    f.header_ctx = tier; /* one key of two */
    assert_int_equal(pick(&f), 9);
    f.metadata = BSC_STR("{\"Region\": \"eu\"}");
    assert_int_equal(pick(&f), 6);
    f.header_ctx = NULL;
    f.metadata = BSC_STR("{\"tier\": \"premium\", \"Region\": \"eu\"}");
    assert_int_equal(pick(&f), 6);
    /* Body keys are exact; escapes are decoded as the upstream would. */
    f.metadata = BSC_STR("{\"tier\": \"premium\", \"region\": \"eu\"}");
    assert_int_equal(pick(&f), 9);
    f.metadata = BSC_STR("{\"t\\u0069er\": \"prem\\u0069um\", \"Region\": \"eu\"}");
    assert_int_equal(pick(&f), 6);
    /* A value that is not a string, a metadata that is not an object: no match. */
    f.metadata = BSC_STR("{\"tier\": 1, \"Region\": \"eu\"}");
    assert_int_equal(pick(&f), 9);
    f.metadata = BSC_STR("[\"tier\"]");
    assert_int_equal(pick(&f), 9);
    /* The header wins over the body, both ways. */
    f.metadata = BSC_STR("{\"tier\": \"premium\", \"Region\": \"eu\"}");
    f.header_ctx = basic;
    assert_int_equal(pick(&f), 9);
    f.metadata = BSC_STR("{\"tier\": \"basic\", \"Region\": \"eu\"}");
    f.header_ctx = tier;
    assert_int_equal(pick(&f), 6);
    f.header = NULL; /* no header lookup at all: the body alone */
    assert_int_equal(pick(&f), 9);
}

static void test_pattern(void **state)
{
    struct sel_facts f = plain();

    (void)state;
    f.last_user = BSC_STR("I want a REFUND now");
    assert_int_equal(pick(&f), 7);
    f.last_user = BSC_STR("Refund");
    assert_int_equal(pick(&f), 7);
    f.last_user = BSC_STR("LeGaL");
    assert_int_equal(pick(&f), 7);
    f.last_user = BSC_STR("legal advice"); /* ^legal$ is anchored */
    assert_int_equal(pick(&f), 9);
    /* Without (?i) the case matters. */
    f.last_user = BSC_STR("a Chargeback");
    assert_int_equal(pick(&f), 8);
    f.last_user = BSC_STR("a chargeback");
    assert_int_equal(pick(&f), 9);
    f.last_user = BSC_STR("");
    assert_int_equal(pick(&f), 9);
}

static void test_first_match_and_none(void **state)
{
    struct sel_facts f = plain();
    uint64_t budget = SEL_MAX_REGEX_STEPS;

    (void)state;
    /* Rules 0, 2, 6 and 7 all hold: the first wins. */
    f.tools = true;
    f.json_schema = true;
    f.last_user = BSC_STR("refund");
    assert_int_equal(pick(&f), 0);
    assert_true(sel_rule_holds(&route->select[2], &f, &budget));
    assert_true(sel_rule_holds(&route->select[7], &f, &budget));
    assert_true(sel_rule_holds(&route->select[9], &f, &budget));
    /* No rule but the catch-all: a route without one gives -1. */
    assert_false(sel_rule_holds(&route->select[8], &f, &budget));
    {
        struct cfg_route two = {.select = route->select, .n_select = 1};

        f.tools = false;
        assert_int_equal(sel_pick(&two, &f, &budget), -1);
    }
}

static void test_budget(void **state)
{
    struct sel_facts f = plain();
    uint64_t budget = 5;

    (void)state;
    /* A search that runs out of steps does not hold: the later rules decide. */
    f.last_user = BSC_STR("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx refund");
    assert_false(sel_rule_holds(&route->select[7], &f, &budget));
    assert_int_equal(budget, 0);
    budget = SEL_MAX_REGEX_STEPS;
    assert_true(sel_rule_holds(&route->select[7], &f, &budget));
}

/* JS_REGEX_ICASE, which (?i) sets: both cases of letters in every class, before a complement. */
static void test_icase_engine(void **state)
{
    static const struct {
        const char *pattern, *subject;
        unsigned flags;
        int match;
    } cases[] = {
        {"refund", "REFUND", JS_REGEX_ICASE, 1},
        {"refund", "REFUND", 0, 0},
        {"^[^a]$", "A", JS_REGEX_ICASE, 0},
        {"^[^a]$", "A", 0, 1},
        {"^[a-c]+$", "AbC", JS_REGEX_ICASE, 1},
        {"caf\u00e9", "CAF\xc3\x89", JS_REGEX_ICASE, 1},
        {"\u00ff", "\xc5\xb8", JS_REGEX_ICASE, 1},
        {"\u03c3\u03bf\u03c6\u03b9\u03b1", "\xce\xa3\xce\x9f\xce\xa6\xce\x99\xce\x91",
         JS_REGEX_ICASE, 1},
        {"\u043f\u0440\u0438\u0432\u0435\u0442",
         "\xd0\x9f\xd0\xa0\xd0\x98\xd0\x92"
         "\xd0\x95\xd0\xa2",
         JS_REGEX_ICASE, 1},
        {"\u0451", "\xd0\x81", JS_REGEX_ICASE, 1},
        {"^\\W$", "k", JS_REGEX_ICASE, 0},
        {"1", "1", JS_REGEX_ICASE, 1},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct js_regex *re = NULL;
        uint64_t budget = 100000;
        char why[128];

        assert_int_equal(js_regex_compile(cases[i].pattern, strlen(cases[i].pattern),
                                          cases[i].flags, &re, why, sizeof(why)),
                         BSC_OK);
        if (js_regex_search(re, cases[i].subject, strlen(cases[i].subject), &budget) !=
            cases[i].match)
            fail_msg("case %zu /%s/ on %s", i, cases[i].pattern, cases[i].subject);
        js_regex_free(re);
    }
}

static void test_read_messages(void **state)
{
    static const struct {
        const char *messages, *text;
        uint64_t count;
    } cases[] = {
        {"[]", "", 0},
        {"[{\"role\":\"system\",\"content\":\"s\"}]", "", 1},
        {"[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":\"b\"}]", "a",
         2},
        {"[{\"role\":\"user\",\"content\":\"old\"},{\"role\":\"user\",\"content\":\"n\\u00e9w\\n\"}"
         "]",
         "n\xc3\xa9w\n", 2},
        {"[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"one\"},"
         "{\"type\":\"image_url\",\"image_url\":{\"url\":\"x\"}},{\"type\":\"text\",\"text\":"
         "\"two\"}]}]",
         "one\ntwo", 1},
        {"[{\"role\":\"user\"},{\"role\":\"tool\",\"content\":\"t\"}]", "", 2},
        {"[{\"r\\u006fle\":\"user\",\"content\":\"escaped name\"}]", "escaped name", 1},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t count = 99;
        size_t len = 99;
        char *text = sel_read_messages(bsc_str_cstr(cases[i].messages), &count, &len);

        assert_non_null(text);
        assert_string_equal(text, cases[i].text);
        assert_int_equal(len, strlen(cases[i].text));
        assert_int_equal(count, cases[i].count);
        free(text);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_booleans),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_metadata),
        cmocka_unit_test(test_pattern),
        cmocka_unit_test(test_first_match_and_none),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_icase_engine),
        cmocka_unit_test(test_read_messages),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
