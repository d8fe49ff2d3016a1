/* SPDX-License-Identifier: MIT */
/* test_trim.c -- the conversation-window trimming planner over message descriptors (system
 * messages kept, the last keep_last kept, tool calls and their results dropped together, the
 * count, the minimum that does not fit), the minimum size, and the two rebuilds: the
 * client's bytes spliced (marker placement, the model span moved) and the parse tree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"
#include "core/json_scan.h"
#include "router/trim.h"

#define S TRIM_ROLE_SYSTEM
#define U TRIM_ROLE_USER
#define A TRIM_ROLE_ASSISTANT
#define C TRIM_ROLE_TOOL_CALLS
#define T TRIM_ROLE_TOOL

/* Descriptors of 400 bytes (100 tokens) each. */
static size_t msgs_of(const enum trim_role *roles, size_t n, struct trim_msg *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (struct trim_msg){roles[i], 400};
    return n;
}

/* The plan for <roles> with no fixed bytes and no output budget in <window> tokens. */
static long plan(const enum trim_role *roles, size_t n, uint32_t keep_last, uint64_t window,
                 bool *drop)
{
    struct trim_msg m[32];
    struct trim_input in = {m, msgs_of(roles, n, m), 0, keep_last, window, 0};

    return trim_plan(&in, drop);
}

static void expect_drops(const bool *drop, const char *want)
{
    for (size_t i = 0; want[i]; i++)
        if (drop[i] != (want[i] == 'x'))
            fail_msg("message %zu: dropped %d, want %s", i, drop[i], want);
}

static void test_fits_as_is(void **state)
{
    static const enum trim_role r[] = {S, U, A, U};
    bool drop[4];

    (void)state;
    assert_int_equal(plan(r, 4, 2, 400, drop), 0);
    expect_drops(drop, "....");
    /* The output budget counts: 400 prompt tokens + 1 output no longer fit 400. */
    struct trim_msg m[4];
    struct trim_input in = {m, msgs_of(r, 4, m), 0, 2, 400, 1};
    assert_int_equal(trim_plan(&in, drop), 1);
}

static void test_system_and_last_kept(void **state)
{
    static const enum trim_role r[] = {S, U, A, U, A, U, A, U};
    bool drop[8];

    (void)state;
    /* 800 tokens; 500 leaves room for 4 messages plus the marker (20 tokens). */
    assert_int_equal(plan(r, 8, 2, 500, drop), 4);
    expect_drops(drop, ".xxxx...");
    /* Tighter: only the system message and the last two (keep_last) are left. */
    assert_int_equal(plan(r, 8, 2, 320, drop), 5);
    expect_drops(drop, ".xxxxx..");
}

static void test_system_in_the_middle_kept(void **state)
{
    static const enum trim_role r[] = {S, U, A, S, U, A, U};
    bool drop[7];

    (void)state;
    assert_int_equal(plan(r, 7, 1, 330, drop), 4);
    expect_drops(drop, ".xx.xx.");
}

static void test_tool_pairs_atomic(void **state)
{
    static const enum trim_role r[] = {S, U, C, T, T, A, U, A, U};
    bool drop[9];

    (void)state;
    /* Dropping U then C alone would fit; the tool results go with their call, and the cut
     * goes on to the next user turn. */
    assert_int_equal(plan(r, 9, 2, 720, drop), 5);
    expect_drops(drop, ".xxxxx...");
}

static void test_tool_pair_reaching_the_tail_is_kept(void **state)
{
    static const enum trim_role r[] = {S, U, A, U, C, T, U};
    bool drop[7];

    (void)state;
    /* keep_last 2 protects T and U; T's call goes with it, so only U, A, U may go. */
    assert_int_equal(plan(r, 7, 2, 420, drop), 3);
    expect_drops(drop, ".xxx...");
    assert_int_equal(plan(r, 7, 2, 300, drop), -1);
}

static void test_cut_starts_at_a_user_turn(void **state)
{
    static const enum trim_role r[] = {U, A, A, U, A, U};
    bool drop[6];

    (void)state;
    /* Dropping the first U fits; the assistant messages after it go too. */
    assert_int_equal(plan(r, 6, 1, 520, drop), 3);
    expect_drops(drop, "xxx...");
}

static void test_minimum_does_not_fit(void **state)
{
    static const enum trim_role r[] = {S, U, A, U, A, U};
    struct trim_msg m[6];
    bool drop[6];

    (void)state;
    msgs_of(r, 6, m);
    /* S + the last 4 + the marker = 2080 bytes = 520 tokens. */
    assert_int_equal(trim_min_bytes(m, 6, 0, 4), 5 * 400 + TRIM_MARKER_BYTES);
    assert_int_equal(plan(r, 6, 4, 520, drop), 1);
    assert_int_equal(plan(r, 6, 4, 519, drop), -1);
    /* Nothing droppable: the minimum is the whole, with no marker. */
    assert_int_equal(trim_min_bytes(m, 6, 10, 6), 6 * 400 + 10);
    assert_int_equal(plan(r, 6, 6, 100, drop), -1);
    /* An output budget larger than the window never fits. */
    struct trim_input in = {m, 6, 0, 0, 100, 101};
    assert_int_equal(trim_plan(&in, drop), -1);
}

static const char body[] =
    "{\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
    "{\"role\":\"user\",\"content\":\"one\"},"
    "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
    "\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},"
    "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"r\"},"
    "{\"role\":\"developer\",\"content\":\"d\"},"
    "{\"role\":\"user\",\"content\":\"two\"}],\"model\":\"m\",\"max_tokens\":5}";

static void test_describe_and_splice(void **state)
{
    struct bsc_str doc = bsc_str_make(body, sizeof(body) - 1), msgs, model;
    static const bool drop[] = {false, true, true, true, false, false};
    struct trim_cut cut = {drop, 6, 1, 3};
    struct trim_msg *m;
    struct bsc_buf out;
    uint64_t fixed, sum = 0;
    size_t n;

    (void)state;
    assert_true(bsc_json_member_span(doc, BSC_STR("messages"), &msgs));
    assert_true(bsc_json_member_span(doc, BSC_STR("model"), &model));
    assert_int_equal(trim_describe(doc, msgs, &m, &n, &fixed), BSC_OK);
    assert_int_equal(n, 6);
    assert_int_equal(m[0].role, S);
    assert_int_equal(m[1].role, U);
    assert_int_equal(m[2].role, C);
    assert_int_equal(m[3].role, T);
    assert_int_equal(m[4].role, S);
    assert_int_equal(m[5].role, U);
    for (size_t i = 0; i < n; i++)
        sum += m[i].bytes;
    assert_int_equal(fixed + sum, doc.len);
    assert_int_equal(trim_leading_system(m, n), 1);
    free(m);

    bsc_buf_init(&out, 1 << 16);
    assert_int_equal(trim_splice(doc, msgs, &cut, &out, &model), BSC_OK);
    assert_string_equal(out.p, "{\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
                               "{\"role\":\"system\",\"content\":\"[3 earlier messages omitted]\"},"
                               "{\"role\":\"developer\",\"content\":\"d\"},"
                               "{\"role\":\"user\",\"content\":\"two\"}],\"model\":\"m\","
                               "\"max_tokens\":5}");
    assert_int_equal(model.len, 3);
    assert_memory_equal(model.p, "\"m\"", 3);
    assert_true(model.p > out.p && model.p < out.p + out.len);
    bsc_buf_cleanup(&out);
}

static void test_json_rebuild(void **state)
{
    struct json_object *req = json_tokener_parse(body), *t, *msgs, *first;
    static const bool drop[] = {false, true, true, true, false, false};
    struct trim_cut cut = {drop, 6, 1, 3}, bad = {drop, 5, 1, 3};

    (void)state;
    assert_non_null(req);
    assert_null(trim_json(req, &bad));
    t = trim_json(req, &cut);
    assert_non_null(t);
    assert_true(json_object_object_get_ex(t, "messages", &msgs));
    assert_int_equal(json_object_array_length(msgs), 4);
    first = json_object_array_get_idx(msgs, 1);
    assert_string_equal(json_object_get_string(json_object_object_get(first, "content")),
                        "[3 earlier messages omitted]");
    assert_string_equal(json_object_get_string(json_object_object_get(t, "model")), "m");
    /* The client's tree is untouched. */
    assert_true(json_object_object_get_ex(req, "messages", &msgs));
    assert_int_equal(json_object_array_length(msgs), 6);
    json_object_put(t);
    json_object_put(req);
}

/* The route's context block: its defaults, its values, and a misspelt mode refused. */
static void test_config_context(void **state)
{
    static const char yaml[] =
        "providers:\n"
        "  p: {kind: openai, base_url: \"https://api.openai.com/v1\", keys: [k]}\n"
        "targets:\n"
        "  t: {provider: p, model: m}\n"
        "routes:\n"
        "  plain: {primary: [t]}\n"
        "  trims: {primary: [t], context: {overflow: trim, keep_last: 7}}\n";
    static const char bad[] =
        "providers:\n"
        "  p: {kind: openai, base_url: \"https://api.openai.com/v1\", keys: [k]}\n"
        "targets:\n"
        "  t: {provider: p, model: m}\n"
        "routes:\n"
        "  r: {primary: [t], context: {overflow: trimm}}\n";
    struct cfg_diags d = {0};
    struct cfg *cfg = NULL;
    const struct cfg_route *r;

    (void)state;
    assert_int_equal(cfg_load_string("gateway.yaml", yaml, strlen(yaml), &cfg, &d), BSC_OK);
    r = cfg_route_find(cfg, BSC_STR("plain"));
    assert_non_null(r);
    assert_int_equal(r->context.overflow, CFG_OVERFLOW_FAIL);
    assert_int_equal(r->context.keep_last, 4);
    r = cfg_route_find(cfg, BSC_STR("trims"));
    assert_non_null(r);
    assert_int_equal(r->context.overflow, CFG_OVERFLOW_TRIM);
    assert_int_equal(r->context.keep_last, 7);
    cfg_unref(cfg);
    cfg_diags_cleanup(&d);
    cfg = NULL;
    assert_int_equal(cfg_load_string("gateway.yaml", bad, strlen(bad), &cfg, &d), BSC_EINVAL);
    assert_null(cfg);
    cfg_diags_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fits_as_is),
        cmocka_unit_test(test_system_and_last_kept),
        cmocka_unit_test(test_system_in_the_middle_kept),
        cmocka_unit_test(test_tool_pairs_atomic),
        cmocka_unit_test(test_tool_pair_reaching_the_tail_is_kept),
        cmocka_unit_test(test_cut_starts_at_a_user_turn),
        cmocka_unit_test(test_minimum_does_not_fit),
        cmocka_unit_test(test_describe_and_splice),
        cmocka_unit_test(test_json_rebuild),
        cmocka_unit_test(test_config_context),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
