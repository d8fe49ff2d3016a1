/* SPDX-License-Identifier: MIT */
/* test_taxonomy.c -- the fail_kind names, the policy table against docs/design.md §4, the generic
 * status map, transport mapping (a transfer cut short, a stream failed before the commit
 * point, an answer in the other shape) and the safe text copy (src/fail/taxonomy.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fail/taxonomy.h"

/* Table rows name themselves in failures instead of printing on every pass. */
#define EXPECT_INT(ctx, got, want)                                                         \
    do {                                                                                   \
        long long g_ = (long long)(got), w_ = (long long)(want);                           \
        if (g_ != w_)                                                                      \
            fail_msg("%s: %s is %lld, want %lld", (ctx), #got, g_, w_);                    \
    } while (0)
#define EXPECT_STR(ctx, got, want)                                                         \
    do {                                                                                   \
        const char *g_ = (got), *w_ = (want);                                              \
        if (strcmp(g_, w_) != 0)                                                           \
            fail_msg("%s: %s is \"%s\", want \"%s\"", (ctx), #got, g_, w_);                \
    } while (0)

/* ---- names ----------------------------------------------------------------------------- */

static void test_names_complete_and_unique(void **state)
{
    (void)state;
    static const char *const expected[FAIL_KIND_COUNT] = {
        "none", "connect", "timeout", "rate_limited", "quota_exhausted", "overloaded",
        "server_error", "upstream_reset", "protocol_error", "invalid_request", "auth",
        "permission", "not_found",
        "context_overflow", "content_policy", "contract_failure", "partial_output",
        "side_effect_uncertain", "deadline_exhausted", "cancelled", "unknown",
    };

    assert_int_equal(FAIL_NONE, 0);
    assert_int_equal(FAIL_KIND_COUNT, 21);
    for (int k = 0; k < FAIL_KIND_COUNT; k++) {
        const char *n = fail_kind_name((enum fail_kind)k);

        assert_non_null(n);
        assert_string_equal(n, expected[k]);
        for (const char *p = n; *p; p++)
            assert_true((*p >= 'a' && *p <= 'z') || *p == '_');
        assert_int_equal(fail_kind_from_name(bsc_str_cstr(n)), k);
        for (int j = 0; j < k; j++)
            assert_string_not_equal(n, fail_kind_name((enum fail_kind)j));
    }
    assert_string_equal(fail_kind_name(FAIL_KIND_COUNT), "invalid");
    assert_string_equal(fail_kind_name((enum fail_kind)-1), "invalid");
    assert_int_equal(fail_kind_from_name(BSC_STR("rate_limit")), FAIL_KIND_COUNT);
    assert_int_equal(fail_kind_from_name(BSC_STR("Auth")), FAIL_KIND_COUNT);
    assert_int_equal(fail_kind_from_name(BSC_STR("")), FAIL_KIND_COUNT);
}

static void test_transport_names(void **state)
{
    (void)state;
    static const char *const expected[FT_COUNT] = {"ok",  "connect",  "dns",      "timeout",
                                                   "reset", "tls", "protocol", "cancelled"};

    assert_int_equal(FT_OK, 0);
    for (int t = 0; t < FT_COUNT; t++)
        assert_string_equal(fail_transport_name((enum fail_transport)t), expected[t]);
    assert_string_equal(fail_transport_name(FT_COUNT), "invalid");
}

/* ---- the policy table ---------------------------------------------------------------------- */

/* docs/design.md §4, one row per kind: replay same target, equivalent failover, cross-model
 * fallback, breaker. */
static const struct {
    enum fail_kind kind;
    bool replay, equiv, fallback;
    enum fail_breaker breaker;
} design_table[] = {
    {FAIL_CONNECT, true, true, true, FAIL_BRK_TARGET},
    {FAIL_TIMEOUT, true, true, true, FAIL_BRK_TARGET},
    {FAIL_RATE_LIMITED, true, true, true, FAIL_BRK_KEY},
    {FAIL_OVERLOADED, true, true, true, FAIL_BRK_TARGET},
    {FAIL_SERVER_ERROR, true, true, true, FAIL_BRK_TARGET},
    {FAIL_UPSTREAM_RESET, true, true, true, FAIL_BRK_TARGET},
    {FAIL_PROTOCOL_ERROR, true, true, true, FAIL_BRK_TARGET},
    {FAIL_QUOTA_EXHAUSTED, false, true, true, FAIL_BRK_KEY},
    {FAIL_AUTH, false, true, true, FAIL_BRK_NONE},
    {FAIL_PERMISSION, false, true, true, FAIL_BRK_NONE},
    {FAIL_NOT_FOUND, false, true, true, FAIL_BRK_NONE},
    {FAIL_INVALID_REQUEST, false, false, false, FAIL_BRK_NONE},
    {FAIL_CONTENT_POLICY, false, false, false, FAIL_BRK_NONE},
    {FAIL_CONTEXT_OVERFLOW, false, false, true, FAIL_BRK_NONE},
    {FAIL_CONTRACT_FAILURE, false, false, true, FAIL_BRK_NONE},
    {FAIL_PARTIAL_OUTPUT, false, false, false, FAIL_BRK_IF_INFRA},
    {FAIL_SIDE_EFFECT_UNCERTAIN, false, false, false, FAIL_BRK_IF_INFRA},
    {FAIL_DEADLINE_EXHAUSTED, false, false, false, FAIL_BRK_NONE},
    {FAIL_CANCELLED, false, false, false, FAIL_BRK_NONE},
};

static void test_policy_matches_design(void **state)
{
    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(design_table); i++) {
        const struct fail_policy *p = fail_policy(design_table[i].kind);
        const char *ctx = fail_kind_name(design_table[i].kind);

        EXPECT_INT(ctx, p->replay_same_target, design_table[i].replay);
        EXPECT_INT(ctx, p->equivalent_failover, design_table[i].equiv);
        EXPECT_INT(ctx, p->cross_model_fallback, design_table[i].fallback);
        EXPECT_INT(ctx, p->breaker, design_table[i].breaker);
    }
    assert_true(fail_policy(FAIL_CONTEXT_OVERFLOW)->fallback_needs_larger_window);
    assert_true(fail_policy(FAIL_RATE_LIMITED)->needs_delay);
    assert_true(fail_policy(FAIL_OVERLOADED)->needs_delay);
    assert_true(fail_policy(FAIL_SERVER_ERROR)->needs_delay);
    assert_int_equal(fail_policy(FAIL_TIMEOUT)->max_replays, 1);
}

static void test_policy_rows_filled_and_consistent(void **state)
{
    (void)state;
    for (int k = 0; k < FAIL_KIND_COUNT; k++) {
        const struct fail_policy *p = fail_policy((enum fail_kind)k);

        assert_non_null(p);
        /* A row left out of the table would be all zeros. */
        assert_true(p->client_status >= 200 && p->client_status <= 599);
        assert_non_null(p->client_type);
        assert_non_null(p->client_code);
        /* Waiting only means something for a replay. */
        if (p->needs_delay || p->max_replays)
            assert_true(p->replay_same_target);
        /* The client's own fault is never retried or moved elsewhere. */
        if (p->client_fault) {
            assert_false(p->replay_same_target);
            assert_false(p->equivalent_failover);
            assert_false(p->next_key);
            assert_int_equal(p->breaker, FAIL_BRK_NONE);
            assert_false(p->client_should_retry);
        }
        /* Upstream texts reach the client only when the client caused them. */
        if (p->forward_message)
            assert_true(p->client_fault);
        if (p->fallback_needs_larger_window)
            assert_true(p->cross_model_fallback);
        if (k != FAIL_NONE)
            assert_true(p->client_status >= 400);
    }
}

static void test_policy_client_surface(void **state)
{
    (void)state;
    static const struct {
        enum fail_kind kind;
        int status;
        const char *type, *code;
        bool retry;
    } rows[] = {
        {FAIL_CONNECT, 502, "server_error", "upstream_unavailable", true},
        {FAIL_TIMEOUT, 504, "server_error", "upstream_timeout", true},
        {FAIL_RATE_LIMITED, 429, "rate_limit_error", "rate_limit_exceeded", true},
        {FAIL_QUOTA_EXHAUSTED, 429, "insufficient_quota", "insufficient_quota", false},
        {FAIL_OVERLOADED, 503, "server_error", "upstream_overloaded", true},
        {FAIL_SERVER_ERROR, 502, "server_error", "upstream_error", true},
        {FAIL_INVALID_REQUEST, 400, "invalid_request_error", "", false},
        /* our key failing is never a 401 to the client */
        {FAIL_AUTH, 502, "server_error", "upstream_auth_failed", false},
        {FAIL_PERMISSION, 502, "server_error", "upstream_permission_denied", false},
        {FAIL_NOT_FOUND, 502, "server_error", "upstream_model_not_found", false},
        {FAIL_CONTEXT_OVERFLOW, 400, "invalid_request_error", "context_length_exceeded", false},
        {FAIL_CONTENT_POLICY, 400, "invalid_request_error", "content_policy_violation", false},
        {FAIL_SIDE_EFFECT_UNCERTAIN, 502, "server_error", "reconcile_required", false},
        {FAIL_DEADLINE_EXHAUSTED, 504, "server_error", "deadline_exhausted", true},
        {FAIL_CANCELLED, 499, "invalid_request_error", "client_closed_request", false},
    };

    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        const struct fail_policy *p = fail_policy(rows[i].kind);
        const char *ctx = fail_kind_name(rows[i].kind);

        EXPECT_INT(ctx, p->client_status, rows[i].status);
        EXPECT_STR(ctx, p->client_type, rows[i].type);
        EXPECT_STR(ctx, p->client_code, rows[i].code);
        EXPECT_INT(ctx, p->client_should_retry, rows[i].retry);
    }
}

static void test_policy_keys_and_flags(void **state)
{
    (void)state;
    for (int k = 0; k < FAIL_KIND_COUNT; k++) {
        const struct fail_policy *p = fail_policy((enum fail_kind)k);
        bool key_kind = k == FAIL_RATE_LIMITED || k == FAIL_QUOTA_EXHAUSTED || k == FAIL_AUTH ||
                        k == FAIL_PERMISSION;

        assert_int_equal(p->cools_key, key_kind);
        assert_int_equal(p->next_key, key_kind);
        assert_int_equal(p->flags_misconfigured, k == FAIL_NOT_FOUND);
    }
    /* Out of range falls back to the unknown row. */
    assert_ptr_equal(fail_policy(FAIL_KIND_COUNT), fail_policy(FAIL_UNKNOWN));
    assert_ptr_equal(fail_policy((enum fail_kind)1000), fail_policy(FAIL_UNKNOWN));
}

/* ---- status map and transports -------------------------------------------------------------- */

static void test_kind_from_status(void **state)
{
    (void)state;
    static const struct {
        int status;
        enum fail_kind kind;
    } rows[] = {
        {200, FAIL_NONE},
        {204, FAIL_NONE},
        {400, FAIL_INVALID_REQUEST},
        {401, FAIL_AUTH},
        {402, FAIL_QUOTA_EXHAUSTED},
        {403, FAIL_PERMISSION},
        {404, FAIL_NOT_FOUND},
        {405, FAIL_INVALID_REQUEST},
        {408, FAIL_TIMEOUT},
        {409, FAIL_SERVER_ERROR},
        {413, FAIL_INVALID_REQUEST},
        {422, FAIL_INVALID_REQUEST},
        {429, FAIL_RATE_LIMITED},
        {498, FAIL_OVERLOADED},
        {499, FAIL_INVALID_REQUEST},
        {500, FAIL_SERVER_ERROR},
        {501, FAIL_SERVER_ERROR},
        {502, FAIL_SERVER_ERROR},
        {503, FAIL_OVERLOADED},
        {504, FAIL_TIMEOUT},
        {520, FAIL_SERVER_ERROR},
        {529, FAIL_OVERLOADED},
        {599, FAIL_SERVER_ERROR},
        {0, FAIL_UNKNOWN},
        {-1, FAIL_UNKNOWN},
        {100, FAIL_UNKNOWN},
        {301, FAIL_UNKNOWN},
        {600, FAIL_UNKNOWN},
    };

    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        char ctx[32];

        snprintf(ctx, sizeof(ctx), "status %d", rows[i].status);
        EXPECT_INT(ctx, fail_kind_from_status(rows[i].status), rows[i].kind);
    }
}

static void test_from_transport(void **state)
{
    (void)state;
    static const struct {
        enum fail_transport t;
        bool sent;
        enum fail_kind kind;
    } rows[] = {
        {FT_OK, false, FAIL_NONE},
        {FT_CONNECT, false, FAIL_CONNECT},
        {FT_DNS, false, FAIL_CONNECT},
        {FT_TLS, false, FAIL_CONNECT},
        {FT_RESET, false, FAIL_CONNECT},
        {FT_RESET, true, FAIL_CONNECT},
        {FT_TIMEOUT, false, FAIL_TIMEOUT},
        {FT_TIMEOUT, true, FAIL_TIMEOUT},
        {FT_PROTOCOL, true, FAIL_PROTOCOL_ERROR},
        {FT_CANCELLED, true, FAIL_CANCELLED},
    };

    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        struct fail_info fi;

        memset(&fi, 0x5a, sizeof(fi));
        fail_from_transport(rows[i].t, rows[i].sent, &fi);
        EXPECT_INT(fail_transport_name(rows[i].t), fi.kind, rows[i].kind);
        EXPECT_INT(fail_transport_name(rows[i].t), fi.transport, rows[i].t);
        EXPECT_INT(fail_transport_name(rows[i].t), fi.request_sent, rows[i].sent);
        assert_int_equal(fi.status, 0);
        assert_int_equal(fi.retry_after_ms, -1);
        assert_string_equal(fi.code, "");
        assert_string_equal(fi.type, "");
        if (rows[i].t != FT_OK)
            assert_true(strlen(fi.message) > 0);
    }
    /* A reset before and after the request was sent says so in the message too. */
    {
        struct fail_info a, b;

        fail_from_transport(FT_RESET, false, &a);
        fail_from_transport(FT_RESET, true, &b);
        assert_string_not_equal(a.message, b.message);
    }
    /* Out of range: unknown, not a crash. */
    {
        struct fail_info fi;

        fail_from_transport(FT_COUNT, false, &fi);
        assert_int_equal(fi.kind, FAIL_UNKNOWN);
    }
}

static void test_info_init(void **state)
{
    (void)state;
    struct fail_info fi;

    memset(&fi, 0x7f, sizeof(fi));
    fail_info_init(&fi);
    assert_int_equal(fi.kind, FAIL_NONE);
    assert_int_equal(fi.status, 0);
    assert_int_equal(fi.retry_after_ms, -1);
    assert_int_equal(fi.transport, FT_OK);
    assert_false(fi.request_sent);
    assert_string_equal(fi.code, "");
    assert_string_equal(fi.type, "");
    assert_string_equal(fi.message, "");
}

/* ---- safe text copy ------------------------------------------------------------------------ */

static void test_copy_text(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        size_t in_len; /* 0: strlen */
        size_t cap;
        const char *out;
    } rows[] = {
        {"hello", 0, 64, "hello"},
        {"hello", 0, 6, "hello"},
        {"hello", 0, 5, "hell"},
        {"hello", 0, 1, ""},
        {"", 0, 8, ""},
        {"a\tb\nc\r\x7f" "d", 0, 64, "a b c  d"},
        {"caf\xc3\xa9", 0, 64, "caf\xc3\xa9"},
        {"caf\xc3\xa9", 0, 5, "caf"},       /* é does not fit: cut before it, not inside */
        {"caf\xc3\xa9", 0, 6, "caf\xc3\xa9"},
        {"\xf0\x9f\x98\x80x", 0, 4, ""},    /* a 4-byte emoji needs 5 with the NUL */
        {"\xf0\x9f\x98\x80x", 0, 6, "\xf0\x9f\x98\x80x"},
        {"a\xffz", 0, 64, "a?z"},           /* invalid byte */
        {"a\xc3", 0, 64, "a?"},             /* truncated sequence at the end */
        {"\xc0\xaf", 0, 64, "??"},          /* overlong '/' */
        {"\xe0\x80\xaf", 0, 64, "???"},     /* overlong 3-byte */
        {"\xed\xa0\x80", 0, 64, "???"},     /* UTF-16 surrogate */
        {"\xf4\x90\x80\x80", 0, 64, "????"}, /* above U+10FFFF */
        {"x\0y", 3, 64, "x y"},             /* NUL inside a slice */
    };

    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        char dst[64];
        size_t len = rows[i].in_len ? rows[i].in_len : strlen(rows[i].in);
        size_t n;
        char ctx[32];

        memset(dst, 'Z', sizeof(dst));
        n = fail_copy_text(dst, rows[i].cap, bsc_str_make(rows[i].in, len));
        snprintf(ctx, sizeof(ctx), "copy row %zu", i);
        EXPECT_STR(ctx, dst, rows[i].out);
        EXPECT_INT(ctx, n, strlen(rows[i].out));
        assert_true(n < rows[i].cap);
    }
    {
        char dst[4] = "abc";

        assert_int_equal(fail_copy_text(dst, 0, BSC_STR("x")), 0);
        assert_string_equal(dst, "abc"); /* cap 0: nothing written at all */
        assert_int_equal(fail_copy_text(dst, sizeof(dst), BSC_STR_NULL), 0);
        assert_string_equal(dst, "");
    }
}

/* A reset once the head was in is upstream_reset with that status; before it, connect. */
static void test_after_head(void **state)
{
    struct fail_info f;

    (void)state;
    fail_from_transport(FT_RESET, true, &f);
    fail_after_head(&f, 0);
    assert_int_equal(f.kind, FAIL_CONNECT);
    assert_int_equal(f.status, 0);
    fail_after_head(&f, 200);
    assert_int_equal(f.kind, FAIL_UPSTREAM_RESET);
    assert_int_equal(f.status, 200);
    assert_int_equal(f.transport, FT_RESET); /* still a transport failure for the router */
    fail_from_transport(FT_PROTOCOL, true, &f);
    fail_after_head(&f, 200);
    assert_int_equal(f.kind, FAIL_PROTOCOL_ERROR);
    fail_from_transport(FT_TIMEOUT, true, &f);
    fail_after_head(&f, 200);
    assert_int_equal(f.kind, FAIL_TIMEOUT);
}

/* What counts against a breaker: no status a client's request can provoke (every 4xx but
 * 408 and 409, which say something about the upstream), nothing marked request_caused. */
static void test_counts_against_target(void **state)
{
    struct fail_info f;

    (void)state;
    for (int st = 400; st <= 499; st++) {
        fail_info_init(&f);
        f.kind = fail_kind_from_status(st);
        f.status = st;
        /* 408/409: the upstream timed out or conflicted; 498: Groq's capacity signal */
        EXPECT_INT("4xx", fail_counts_against_target(&f), st == 408 || st == 409 || st == 498);
    }
    for (int st = 500; st <= 599; st++) {
        fail_info_init(&f);
        f.kind = fail_kind_from_status(st);
        f.status = st;
        assert_true(fail_counts_against_target(&f));
        f.request_caused = true;
        assert_false(fail_counts_against_target(&f));
    }
    static const enum fail_kind never[] = {
        FAIL_INVALID_REQUEST, FAIL_CONTENT_POLICY, FAIL_CONTEXT_OVERFLOW, FAIL_AUTH,
        FAIL_PERMISSION, FAIL_RATE_LIMITED, FAIL_QUOTA_EXHAUSTED, FAIL_NOT_FOUND,
        FAIL_CONTRACT_FAILURE, FAIL_CANCELLED, FAIL_DEADLINE_EXHAUSTED,
    };
    for (size_t i = 0; i < BSC_ARRAY_LEN(never); i++) {
        fail_info_init(&f);
        f.kind = never[i];
        f.status = 500;
        f.transport = FT_RESET;
        EXPECT_INT(fail_kind_name(never[i]), fail_counts_against_target(&f), false);
    }
    /* After the commit point: an infrastructure break counts, an in-band refusal of the
     * request does not. */
    fail_info_init(&f);
    f.kind = FAIL_PARTIAL_OUTPUT;
    f.status = 200;
    assert_true(fail_counts_against_target(&f));
    f.request_caused = true;
    assert_false(fail_counts_against_target(&f));
    fail_info_init(&f);
    f.kind = FAIL_UNKNOWN;
    assert_true(fail_counts_against_target(&f));
    f.request_caused = true; /* an answer in the other shape */
    assert_false(fail_counts_against_target(&f));
}

/* A transfer's end, reclassified by the taxonomy: the transport's words are kept, a reset
 * counts as sent, and once a head came a reset is upstream_reset with the status kept. */
static void test_from_transfer(void **state)
{
    static const struct {
        enum fail_transport t;
        int status;
        enum fail_kind kind;
        bool sent;
    } rows[] = {
        {FT_CONNECT, 0, FAIL_CONNECT, false},   {FT_DNS, 0, FAIL_CONNECT, false},
        {FT_RESET, 0, FAIL_CONNECT, true},      {FT_RESET, 200, FAIL_UPSTREAM_RESET, true},
        {FT_TIMEOUT, 0, FAIL_TIMEOUT, false},   {FT_TIMEOUT, 200, FAIL_TIMEOUT, true},
        {FT_PROTOCOL, 502, FAIL_PROTOCOL_ERROR, true}, {FT_TLS, 0, FAIL_CONNECT, false},
    };
    struct fail_info f;

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        fail_info_init(&f);
        snprintf(f.message, sizeof(f.message), "curl: row %zu", i);
        f.retry_after_ms = 5;
        fail_from_transfer(&f, rows[i].t, rows[i].status);
        EXPECT_INT("kind", f.kind, rows[i].kind);
        EXPECT_INT("sent", f.request_sent, rows[i].sent);
        EXPECT_INT("status", f.status, rows[i].status);
        EXPECT_INT("transport", f.transport, rows[i].t);
        EXPECT_INT("hint", f.retry_after_ms, -1);
        assert_int_equal(strncmp(f.message, "curl: row ", 10), 0);
    }
}

/* Before the commit point a stream failure is retryable: partial output (the adapter's
 * count, not the client's) and no kind become server_error, other kinds stay. */
static void test_before_commit(void **state)
{
    struct fail_info f;

    (void)state;
    for (unsigned k = 0; k < FAIL_KIND_COUNT; k++) {
        fail_info_init(&f);
        f.kind = (enum fail_kind)k;
        fail_before_commit(&f);
        EXPECT_INT(fail_kind_name((enum fail_kind)k), f.kind,
                   k == FAIL_NONE || k == FAIL_PARTIAL_OUTPUT ? FAIL_SERVER_ERROR : k);
    }
}

/* An answer in the other shape: unknown, caused by the request (never the breaker's). */
static void test_other_shape(void **state)
{
    struct fail_info f;

    (void)state;
    memset(&f, 0x5a, sizeof(f));
    fail_other_shape(&f, 200);
    EXPECT_INT("kind", f.kind, FAIL_UNKNOWN);
    EXPECT_INT("status", f.status, 200);
    assert_true(f.request_caused);
    assert_false(fail_counts_against_target(&f));
    assert_string_equal(f.message, "");
    EXPECT_INT("hint", f.retry_after_ms, -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_complete_and_unique),
        cmocka_unit_test(test_transport_names),
        cmocka_unit_test(test_policy_matches_design),
        cmocka_unit_test(test_policy_rows_filled_and_consistent),
        cmocka_unit_test(test_policy_client_surface),
        cmocka_unit_test(test_policy_keys_and_flags),
        cmocka_unit_test(test_kind_from_status),
        cmocka_unit_test(test_from_transport),
        cmocka_unit_test(test_info_init),
        cmocka_unit_test(test_copy_text),
        cmocka_unit_test(test_after_head),
        cmocka_unit_test(test_counts_against_target),
        cmocka_unit_test(test_from_transfer),
        cmocka_unit_test(test_before_commit),
        cmocka_unit_test(test_other_shape),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
