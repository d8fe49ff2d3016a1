/* SPDX-License-Identifier: MIT */
/* test_ledger.c -- the ledger's state machine: every (from, to) pair of the transition
 * table against an independently written list, creation, repeats, tool and reference
 * conflicts, the update parser at its bounds and on bad input, and the JSON of an entry
 * round-tripping through the parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ledger/ledger.h"

#define P LEDGER_ST_PLANNED
#define S LEDGER_ST_STARTED
#define OK LEDGER_ST_SUCCEEDED
#define F LEDGER_ST_FAILED
#define U LEDGER_ST_UNKNOWN

/* The legal transitions, written out from docs/design.md §6 and docs/internals/store.md. */
static const struct {
    enum ledger_state from, to;
} legal[] = {{P, S}, {P, F}, {S, OK}, {S, F}, {S, U}, {U, OK}, {U, F}};

static bool listed(enum ledger_state from, enum ledger_state to)
{
    for (size_t i = 0; i < BSC_ARRAY_LEN(legal); i++)
        if (legal[i].from == from && legal[i].to == to)
            return true;
    return false;
}

static struct ledger_update upd(const char *tool, enum ledger_state st, const char *ref)
{
    struct ledger_update u;

    memset(&u, 0, sizeof(u));
    snprintf(u.tool_name, sizeof(u.tool_name), "%s", tool);
    snprintf(u.external_reference, sizeof(u.external_reference), "%s", ref ? ref : "");
    u.state = st;
    return u;
}

/* An entry of tool "send_email" in <st>, version 3. */
static struct ledger_entry entry_in(enum ledger_state st)
{
    struct ledger_entry e;

    memset(&e, 0, sizeof(e));
    snprintf(e.op_id, sizeof(e.op_id), "op-1");
    snprintf(e.tool_name, sizeof(e.tool_name), "send_email");
    e.state = st;
    e.version = 3;
    e.created_ms = 1000;
    e.updated_ms = 2000;
    return e;
}

static void test_every_pair(void **state)
{
    unsigned n_legal = 0;

    (void)state;
    for (int from = 0; from < LEDGER_ST_COUNT; from++) {
        for (int to = 0; to < LEDGER_ST_COUNT; to++) {
            bool want = listed(from, to);
            struct ledger_entry cur = entry_in(from), out;
            struct ledger_update u = upd("send_email", to, NULL);
            enum ledger_outcome outcome = LEDGER_OUTCOME_COUNT;
            enum bsc_err err;

            assert_int_equal(ledger_transition_allowed(from, to), want);
            err = ledger_apply(&cur, BSC_STR("op-1"), &u, 5000, &out, &outcome);
            if (from == to) {
                /* a repeat is not a transition, but is accepted as a no-op */
                assert_int_equal(err, BSC_OK);
                assert_int_equal(outcome, LEDGER_UNCHANGED);
                assert_int_equal(out.version, 3);
            } else if (want) {
                assert_int_equal(err, BSC_OK);
                assert_int_equal(outcome, LEDGER_UPDATED);
                assert_int_equal(out.state, to);
                assert_int_equal(out.version, 4);
                assert_int_equal(out.updated_ms, 5000);
                assert_int_equal(out.created_ms, 1000);
                n_legal++;
            } else {
                assert_int_equal(err, BSC_ESTATE);
            }
        }
    }
    assert_int_equal(n_legal, BSC_ARRAY_LEN(legal));
    assert_false(ledger_transition_allowed(LEDGER_ST_COUNT, P));
    assert_false(ledger_transition_allowed(P, LEDGER_ST_COUNT));
    assert_false(ledger_transition_allowed((enum ledger_state)-1, S));
}

static void test_state_predicates(void **state)
{
    enum ledger_state s = LEDGER_ST_COUNT;

    (void)state;
    assert_true(ledger_initial_allowed(P));
    assert_true(ledger_initial_allowed(S));
    assert_false(ledger_initial_allowed(OK));
    assert_false(ledger_initial_allowed(F));
    assert_false(ledger_initial_allowed(U));
    assert_true(ledger_state_is_terminal(OK));
    assert_true(ledger_state_is_terminal(F));
    assert_false(ledger_state_is_terminal(U));
    assert_false(ledger_state_is_terminal(S));
    assert_true(ledger_state_blocks_replay(S));
    assert_true(ledger_state_blocks_replay(U));
    assert_false(ledger_state_blocks_replay(P));
    assert_false(ledger_state_blocks_replay(OK));
    assert_false(ledger_state_blocks_replay(F));
    for (int i = 0; i < LEDGER_ST_COUNT; i++) {
        assert_true(ledger_state_parse(bsc_str_cstr(ledger_state_name(i)), &s));
        assert_int_equal(s, i);
    }
    assert_string_equal(ledger_state_name(U), "unknown");
    assert_string_equal(ledger_state_name(LEDGER_ST_COUNT), "?");
    s = P;
    assert_false(ledger_state_parse(BSC_STR("Started"), &s));
    assert_false(ledger_state_parse(BSC_STR("start"), &s));
    assert_false(ledger_state_parse(BSC_STR(""), &s));
    assert_int_equal(s, P);
}

static void test_create(void **state)
{
    struct ledger_entry out;
    enum ledger_outcome outcome;
    struct ledger_update u = upd("charge_card", S, "pay_123");

    (void)state;
    assert_int_equal(ledger_apply(NULL, BSC_STR("op:9"), &u, 777, &out, &outcome), BSC_OK);
    assert_int_equal(outcome, LEDGER_CREATED);
    assert_string_equal(out.op_id, "op:9");
    assert_string_equal(out.tool_name, "charge_card");
    assert_string_equal(out.external_reference, "pay_123");
    assert_int_equal(out.state, S);
    assert_int_equal(out.version, 1);
    assert_int_equal(out.created_ms, 777);
    assert_int_equal(out.updated_ms, 777);

    for (int st = 0; st < LEDGER_ST_COUNT; st++) {
        u = upd("t", st, NULL);
        assert_int_equal(ledger_apply(NULL, BSC_STR("x"), &u, 1, &out, &outcome),
                         st == P || st == S ? BSC_OK : BSC_ESTATE);
    }
    u = upd("t", P, NULL);
    assert_int_equal(ledger_apply(NULL, BSC_STR(""), &u, 1, &out, &outcome), BSC_EINVAL);
    assert_int_equal(ledger_apply(NULL, BSC_STR("a/b"), &u, 1, &out, &outcome), BSC_EINVAL);
    u.tool_name[0] = '\0';
    assert_int_equal(ledger_apply(NULL, BSC_STR("a"), &u, 1, &out, &outcome), BSC_EINVAL);
}

static void test_repeat_and_references(void **state)
{
    struct ledger_entry cur = entry_in(S), out;
    enum ledger_outcome outcome;
    struct ledger_update u;

    (void)state;
    /* a repeat that adds a reference not stored yet is an update */
    u = upd("send_email", S, "msg-1");
    assert_int_equal(ledger_apply(&cur, BSC_STR("op-1"), &u, 9, &out, &outcome), BSC_OK);
    assert_int_equal(outcome, LEDGER_UPDATED);
    assert_string_equal(out.external_reference, "msg-1");
    assert_int_equal(out.version, 4);
    cur = out;
    /* the same reference again: unchanged */
    assert_int_equal(ledger_apply(&cur, BSC_STR("op-1"), &u, 10, &out, &outcome), BSC_OK);
    assert_int_equal(outcome, LEDGER_UNCHANGED);
    assert_int_equal(out.updated_ms, 9);
    /* no reference in a repeat keeps the stored one */
    u = upd("send_email", S, NULL);
    assert_int_equal(ledger_apply(&cur, BSC_STR("op-1"), &u, 10, &out, &outcome), BSC_OK);
    assert_int_equal(outcome, LEDGER_UNCHANGED);
    assert_string_equal(out.external_reference, "msg-1");
    /* another reference in a repeat rewrites history: refused */
    u = upd("send_email", S, "msg-2");
    assert_int_equal(ledger_apply(&cur, BSC_STR("op-1"), &u, 10, &out, &outcome), BSC_ESTATE);
    /* a transition may bring a new reference ... */
    u = upd("send_email", OK, "msg-2");
    assert_int_equal(ledger_apply(&cur, BSC_STR("op-1"), &u, 11, &out, &outcome), BSC_OK);
    assert_string_equal(out.external_reference, "msg-2");
    /* ... or keep the old one */
    u = upd("send_email", U, NULL);
    assert_int_equal(ledger_apply(&cur, BSC_STR("op-1"), &u, 11, &out, &outcome), BSC_OK);
    assert_string_equal(out.external_reference, "msg-1");
    assert_int_equal(out.state, U);
    /* another tool for the same operation: refused, even as a legal transition */
    u = upd("send_sms", OK, NULL);
    assert_int_equal(ledger_apply(&cur, BSC_STR("op-1"), &u, 11, &out, &outcome), BSC_ESTATE);
    /* <out> may alias <cur> */
    u = upd("send_email", F, NULL);
    assert_int_equal(ledger_apply(&cur, BSC_STR("op-1"), &u, 12, &cur, &outcome), BSC_OK);
    assert_int_equal(cur.state, F);
    assert_int_equal(cur.version, 5);
}

static void test_op_id(void **state)
{
    char id[LEDGER_OP_ID_MAX + 2];

    (void)state;
    memset(id, 'a', sizeof(id));
    assert_true(ledger_op_id_valid(bsc_str_make(id, LEDGER_OP_ID_MAX)));
    assert_false(ledger_op_id_valid(bsc_str_make(id, LEDGER_OP_ID_MAX + 1)));
    assert_true(ledger_op_id_valid(BSC_STR("A-z_0.9:~")));
    assert_false(ledger_op_id_valid(BSC_STR("")));
    assert_false(ledger_op_id_valid(BSC_STR("a b")));
    assert_false(ledger_op_id_valid(BSC_STR("a/b")));
    assert_false(ledger_op_id_valid(BSC_STR("a%2Fb")));
    assert_false(ledger_op_id_valid(BSC_STR("caf\xc3\xa9")));
}

/* A client's operation ids live in its own name space; the open gateway's are the ids. */
static void test_scoped_id(void **state)
{
    char out[LEDGER_OP_ID_MAX + 1], id[LEDGER_OP_ID_MAX + 1], other[LEDGER_OP_ID_MAX + 1];
    const char *scope = "client:0123456789abcdef0123456789abcdef";

    (void)state;
    assert_int_equal(ledger_scoped_id("", BSC_STR("op-1"), out, sizeof(out)), BSC_OK);
    assert_string_equal(out, "op-1");
    assert_int_equal(ledger_scoped_id(scope, BSC_STR("op-1"), out, sizeof(out)), BSC_OK);
    assert_string_equal(out, "client:0123456789abcdef0123456789abcdef~op-1");
    assert_true(ledger_op_id_valid(bsc_str_cstr(out)));
    /* Too long to prefix: the digest of the id, still a valid id, still distinct. */
    memset(id, 'a', LEDGER_OP_ID_MAX);
    assert_int_equal(ledger_scoped_id(scope, bsc_str_make(id, LEDGER_OP_ID_MAX), out,
                                      sizeof(out)), BSC_OK);
    assert_true(ledger_op_id_valid(bsc_str_cstr(out)));
    assert_memory_equal(out, "client:0123456789abcdef0123456789abcdef~h.", 42);
    assert_int_equal(strlen(out), 42 + 64);
    id[0] = 'b';
    assert_int_equal(ledger_scoped_id(scope, bsc_str_make(id, LEDGER_OP_ID_MAX), other,
                                      sizeof(other)), BSC_OK);
    assert_string_not_equal(out, other);
    /* Bad input is refused, never truncated into another id. */
    assert_int_equal(ledger_scoped_id(scope, BSC_STR("a b"), out, sizeof(out)), BSC_EINVAL);
    assert_int_equal(ledger_scoped_id("bad scope", BSC_STR("a"), out, sizeof(out)), BSC_EINVAL);
    assert_int_equal(ledger_scoped_id(scope, BSC_STR("a"), out, LEDGER_OP_ID_MAX), BSC_EINVAL);
}

static enum bsc_err parse(const char *json, struct ledger_update *u, struct ledger_parse_err *w)
{
    return ledger_update_parse(bsc_str_cstr(json), u, w);
}

static void test_parse_ok(void **state)
{
    struct ledger_update u;
    struct ledger_parse_err why;

    (void)state;
    assert_int_equal(parse(" {\"tool_name\":\"crm.create\",\"state\":\"planned\"}\n", &u, &why),
                     BSC_OK);
    assert_string_equal(u.tool_name, "crm.create");
    assert_int_equal(u.state, P);
    assert_string_equal(u.external_reference, "");
    assert_int_equal(parse("{\"state\":\"unknown\",\"external_reference\":null,"
                           "\"tool_name\":\"\\u00e9t\\u00e9\"}",
                           &u, &why),
                     BSC_OK);
    assert_string_equal(u.tool_name, "\xc3\xa9t\xc3\xa9");
    assert_int_equal(u.state, U);
    assert_int_equal(parse("{\"tool_name\":\"t\",\"state\":\"started\","
                           "\"external_reference\":\"ch_1 \\\"q\\\"\"}",
                           &u, &why),
                     BSC_OK);
    assert_string_equal(u.external_reference, "ch_1 \"q\"");
}

static void expect_bad(const char *json, enum bsc_err want, const char *param)
{
    struct ledger_update u;
    struct ledger_parse_err why = {0};

    assert_int_equal(parse(json, &u, &why), want);
    assert_true(why.message[0] != '\0');
    if (param)
        assert_string_equal(why.param, param);
    else
        assert_null(why.param);
}

static void test_parse_bad(void **state)
{
    (void)state;
    expect_bad("", BSC_EPARSE, NULL);
    expect_bad("[]", BSC_EPARSE, NULL);
    expect_bad("\"x\"", BSC_EPARSE, NULL);
    expect_bad("{\"tool_name\":\"t\",\"state\":\"planned\"", BSC_EPARSE, NULL);
    expect_bad("{\"tool_name\":\"t\",\"state\":\"planned\"} x", BSC_EPARSE, NULL);
    expect_bad("{\"tool_name\":\"t\",\"state\":\"planned\",}", BSC_EPARSE, NULL);
    expect_bad("{\"state\":\"planned\"}", BSC_EINVAL, "tool_name");
    expect_bad("{\"tool_name\":\"t\"}", BSC_EINVAL, "state");
    expect_bad("{\"tool_name\":\"t\",\"state\":\"done\"}", BSC_EINVAL, "state");
    expect_bad("{\"tool_name\":\"t\",\"state\":3}", BSC_EINVAL, "state");
    expect_bad("{\"tool_name\":7,\"state\":\"planned\"}", BSC_EINVAL, "tool_name");
    expect_bad("{\"tool_name\":\"\",\"state\":\"planned\"}", BSC_EINVAL, "tool_name");
    expect_bad("{\"tool_name\":\"a\\nb\",\"state\":\"planned\"}", BSC_EINVAL, "tool_name");
    expect_bad("{\"tool_name\":\"a\\u0000b\",\"state\":\"planned\"}", BSC_EINVAL, "tool_name");
    /* ill-formed UTF-8 anywhere is malformed JSON, as on /v1/chat/completions */
    expect_bad("{\"tool_name\":\"\xff\",\"state\":\"planned\"}", BSC_EPARSE, NULL);
    expect_bad("{\"tool_name\":\"\xe0\x80\x94\",\"state\":\"planned\"}", BSC_EPARSE, NULL);
    expect_bad("{\"tool_name\":\"\xed\xa0\x80\",\"state\":\"planned\"}", BSC_EPARSE, NULL);
    expect_bad("{\"tool_name\":\"t\",\"state\":\"planned\",\"external_reference\":"
               "\"\xf4\x90\x80\x80\"}", BSC_EPARSE, NULL);
    expect_bad("{\"tool_name\":\"t\",\"\xc0\xaf\":1,\"state\":\"planned\"}", BSC_EPARSE, NULL);
    expect_bad("{\"tool_name\":\"t\",\"state\":\"planned\",\"external_reference\":{}}",
               BSC_EINVAL, "external_reference");
    expect_bad("{\"tool_name\":\"t\",\"state\":\"planned\",\"extra\":1}", BSC_EINVAL, NULL);
    expect_bad("{\"tool_name\":\"t\",\"state\":\"planned\",\"x\":[[[[[[[[[[1]]]]]]]]]]}",
               BSC_EPARSE, NULL);
}

/* A member named twice is refused as on every other JSON endpoint, escapes decoded: the
 * ledger must not read a state another parser of the same body would not. */
static void expect_duplicate(const char *json, const char *name)
{
    struct ledger_update u;
    struct ledger_parse_err why = {0};

    assert_int_equal(parse(json, &u, &why), BSC_EINVAL);
    assert_non_null(why.code);
    assert_string_equal(why.code, "duplicate_key");
    assert_null(why.param);
    assert_non_null(strstr(why.message, name));
}

static void test_parse_duplicate(void **state)
{
    struct ledger_update u;
    struct ledger_parse_err why = {0};

    (void)state;
    expect_duplicate("{\"tool_name\":\"t\",\"state\":\"planned\",\"state\":\"succeeded\"}",
                     "'state'");
    expect_duplicate("{\"tool_name\":\"t\",\"state\":\"planned\",\"st\\u0061te\":\"failed\"}",
                     "'state'");
    expect_duplicate("{\"t\\u006fol_name\":\"a\",\"tool_name\":\"b\",\"state\":\"started\"}",
                     "'tool_name'");
    expect_duplicate("{\"tool_name\":\"t\",\"state\":\"started\",\"external_reference\":\"a\","
                     "\"external_reference\":null}",
                     "'external_reference'");
    /* A name parsers read differently (an escaped NUL) is refused, not guessed at. */
    assert_int_equal(parse("{\"tool_name\":\"t\",\"state\\u0000x\":\"failed\","
                           "\"state\":\"planned\"}", &u, &why),
                     BSC_EINVAL);
    assert_string_equal(why.code, "invalid_request");
    /* An escaped name alone is that member. */
    assert_int_equal(parse("{\"tool_name\":\"t\",\"st\\u0061te\":\"started\"}", &u, &why),
                     BSC_OK);
    assert_int_equal(u.state, S);
    assert_null(why.code);
}

/* A body with a <n>-byte tool name or reference (<which> 0 or 1). */
static enum bsc_err parse_len(int which, size_t n)
{
    char body[2048], val[LEDGER_REF_MAX + 8];
    struct ledger_update u;
    struct ledger_parse_err why;

    memset(val, 'r', n);
    val[n] = '\0';
    if (which == 0)
        snprintf(body, sizeof(body), "{\"tool_name\":\"%s\",\"state\":\"started\"}", val);
    else
        snprintf(body, sizeof(body),
                 "{\"tool_name\":\"t\",\"state\":\"started\",\"external_reference\":\"%s\"}",
                 val);
    return parse(body, &u, &why);
}

static void test_parse_bounds(void **state)
{
    (void)state;
    assert_int_equal(parse_len(0, LEDGER_TOOL_MAX - 1), BSC_OK);
    assert_int_equal(parse_len(0, LEDGER_TOOL_MAX), BSC_OK);
    assert_int_equal(parse_len(0, LEDGER_TOOL_MAX + 1), BSC_EINVAL);
    assert_int_equal(parse_len(1, 0), BSC_OK);
    assert_int_equal(parse_len(1, LEDGER_REF_MAX - 1), BSC_OK);
    assert_int_equal(parse_len(1, LEDGER_REF_MAX), BSC_OK);
    assert_int_equal(parse_len(1, LEDGER_REF_MAX + 1), BSC_EINVAL);
}

static void assert_entry_equal(const struct ledger_entry *a, const struct ledger_entry *b)
{
    assert_string_equal(a->op_id, b->op_id);
    assert_string_equal(a->tool_name, b->tool_name);
    assert_string_equal(a->external_reference, b->external_reference);
    assert_int_equal(a->state, b->state);
    assert_int_equal(a->version, b->version);
    assert_int_equal(a->created_ms, b->created_ms);
    assert_int_equal(a->updated_ms, b->updated_ms);
}

static void test_json_roundtrip(void **state)
{
    struct ledger_entry e = entry_in(U), back;
    struct bsc_buf b;

    (void)state;
    snprintf(e.tool_name, sizeof(e.tool_name), "t\"\\ \xe2\x82\xac");
    snprintf(e.external_reference, sizeof(e.external_reference), "ref/1");
    e.created_ms = 1700000000123ull;
    e.updated_ms = 1700000000456ull;
    bsc_buf_init(&b, 4096);
    assert_int_equal(ledger_entry_to_json(&e, &b), BSC_OK);
    assert_non_null(strstr(b.p, "\"object\":\"ledger.entry\""));
    assert_non_null(strstr(b.p, "\"state\":\"unknown\""));
    assert_non_null(strstr(b.p, "\"version\":3"));
    assert_int_equal(ledger_entry_from_json(bsc_buf_str(&b), &back), BSC_OK);
    assert_entry_equal(&e, &back);

    /* no reference: null, and back to "" */
    e.external_reference[0] = '\0';
    bsc_buf_reset(&b);
    assert_int_equal(ledger_entry_to_json(&e, &b), BSC_OK);
    assert_non_null(strstr(b.p, "\"external_reference\":null"));
    assert_int_equal(ledger_entry_from_json(bsc_buf_str(&b), &back), BSC_OK);
    assert_entry_equal(&e, &back);

    /* a too small buffer: BSC_ELIMIT and nothing half-written */
    bsc_buf_cleanup(&b);
    bsc_buf_init(&b, 40);
    assert_int_equal(ledger_entry_to_json(&e, &b), BSC_ELIMIT);
    assert_int_equal(b.len, 0);
    bsc_buf_cleanup(&b);

    assert_int_equal(ledger_entry_from_json(BSC_STR("{\"operation_id\":\"a\"}"), &back),
                     BSC_EINVAL);
    assert_int_equal(ledger_entry_from_json(BSC_STR("nope"), &back), BSC_EPARSE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_pair),      cmocka_unit_test(test_state_predicates),
        cmocka_unit_test(test_create),          cmocka_unit_test(test_repeat_and_references),
        cmocka_unit_test(test_op_id),           cmocka_unit_test(test_parse_ok),
        cmocka_unit_test(test_parse_bad),       cmocka_unit_test(test_parse_duplicate),
        cmocka_unit_test(test_parse_bounds),    cmocka_unit_test(test_json_roundtrip),
        cmocka_unit_test(test_scoped_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
