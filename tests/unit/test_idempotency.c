/* SPDX-License-Identifier: MIT */
/* test_idempotency.c -- SHA-256 against the FIPS 180-4 / NIST vectors (one-shot and fed in
 * every split), the canonical JSON form (member order, whitespace, escapes, numbers kept,
 * what is refused), the fingerprint (equal for equivalent bodies, apart for everything
 * else, its byte format pinned), record expiry and the begin decision table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/sha256.h"
#include "ledger/idempotency.h"

/* ---- SHA-256 ---------------------------------------------------------------------------- */

static void hex_of(const void *p, size_t n, char out[BSC_SHA256_HEX_LEN + 1])
{
    uint8_t d[BSC_SHA256_LEN];

    bsc_sha256(p, n, d);
    bsc_sha256_hex(d, out);
}

static void test_sha256_vectors(void **state)
{
    static const struct {
        const char *msg, *hex;
    } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnop"
         "qrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    char hex[BSC_SHA256_HEX_LEN + 1];

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(v); i++) {
        hex_of(v[i].msg, strlen(v[i].msg), hex);
        assert_string_equal(hex, v[i].hex);
    }
}

static void test_sha256_million_a(void **state)
{
    struct bsc_sha256 c;
    uint8_t d[BSC_SHA256_LEN];
    char hex[BSC_SHA256_HEX_LEN + 1], chunk[1000];

    (void)state;
    memset(chunk, 'a', sizeof(chunk));
    bsc_sha256_init(&c);
    for (int i = 0; i < 1000; i++)
        bsc_sha256_update(&c, chunk, sizeof(chunk));
    bsc_sha256_final(&c, d);
    bsc_sha256_hex(d, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* 768 bytes (0..255 three times) fed in two pieces at every split point: the streaming
 * path must agree with the one-shot one across block boundaries (55, 56, 63, 64, ...). */
static void test_sha256_splits(void **state)
{
    uint8_t msg[768], d[BSC_SHA256_LEN];
    char hex[BSC_SHA256_HEX_LEN + 1];
    struct bsc_sha256 c;

    (void)state;
    for (size_t i = 0; i < sizeof(msg); i++)
        msg[i] = (uint8_t)i;
    for (size_t cut = 0; cut <= sizeof(msg); cut++) {
        bsc_sha256_init(&c);
        bsc_sha256_update(&c, msg, cut);
        bsc_sha256_update(&c, NULL, 0);
        bsc_sha256_update(&c, msg + cut, sizeof(msg) - cut);
        bsc_sha256_final(&c, d);
        bsc_sha256_hex(d, hex);
        assert_string_equal(hex,
                            "f3a25aa93aa2fbba28d79260535bbd6a5eb0fc1c24a8b0f04e12b484c1dfe363");
    }
}

/* ---- canonical JSON --------------------------------------------------------------------- */

/* Canonicalises <in>; returns the error, and the text in <out> (size 512) when OK. */
static enum bsc_err canon(const char *in, char *out)
{
    struct bsc_buf b;
    enum bsc_err err;

    bsc_buf_init(&b, 1 << 16);
    err = idem_canonical_json(bsc_str_cstr(in), &b);
    out[0] = '\0';
    if (!err)
        snprintf(out, 512, "%.*s", (int)b.len, b.p ? b.p : "");
    bsc_buf_cleanup(&b);
    return err;
}

static void expect_canon(const char *in, const char *want)
{
    char out[512];

    assert_int_equal(canon(in, out), BSC_OK);
    assert_string_equal(out, want);
}

static void test_canonical_form(void **state)
{
    (void)state;
    expect_canon("{\"b\":1,\"a\":[true,false,null]}", "{\"a\":[true,false,null],\"b\":1}");
    expect_canon(" \r\n\t{ \"model\" : \"m\" ,\n \"messages\" : [ ] } \n",
                 "{\"messages\":[],\"model\":\"m\"}");
    /* bytewise key order: upper case before lower, prefixes first */
    expect_canon("{\"aa\":1,\"a\":2,\"B\":3,\"\":4}", "{\"\":4,\"B\":3,\"a\":2,\"aa\":1}");
    /* nested objects are sorted too, arrays keep their order */
    expect_canon("[{\"z\":{\"y\":1,\"x\":2}},3,2]", "[{\"z\":{\"x\":2,\"y\":1}},3,2]");
    /* escapes decode, then re-escape one way */
    expect_canon("\"\\u0041\\/\\u00e9\"", "\"A/\xc3\xa9\"");
    expect_canon("\"\\ud83d\\ude00\"", "\"\xf0\x9f\x98\x80\"");
    expect_canon("\"a\\nb\\u0001\\\"\\\\\"", "\"a\\nb\\u0001\\\"\\\\\"");
    /* sorting uses the decoded key */
    expect_canon("{\"\\u0062\":1,\"a\":2}", "{\"a\":2,\"b\":1}");
    /* numbers stay as written */
    expect_canon("[1.0,1,-0,1e3,1E+3,0.5e-2]", "[1.0,1,-0,1e3,1E+3,0.5e-2]");
    expect_canon("12345678901234567890123", "12345678901234567890123");
    expect_canon("{}", "{}");
    expect_canon("[]", "[]");
}

static void test_canonical_refuses(void **state)
{
    static const char *const bad[] = {
        "",
        "   ",
        "{\"a\":1,\"a\":1}",      /* duplicate key */
        "{\"a\":1,\"\\u0061\":2}", /* duplicate once decoded */
        "{\"a\":1,}",
        "[1,]",
        "[01]",
        "[1.]",
        "[.5]",
        "[1e]",
        "[+1]",
        "[tru]",
        "[nul]",
        "{\"a\" 1}",
        "{a:1}",
        "\"\\ud800\"",            /* lone high surrogate */
        "\"\\udc00\"",            /* lone low surrogate */
        "\"\\ud800\\u0041\"",
        "\"\\x\"",
        "\"\\u12g4\"",
        "\"a\tb\"",               /* raw control character */
        "\"\xff\"",               /* not UTF-8 */
        "\"\xc0\xaf\"",           /* overlong */
        "\"\xed\xa0\x80\"",       /* encoded surrogate */
        "\"abc",
        "{} {}",
        "[1] x",
    };
    char out[512];

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(bad); i++) {
        if (canon(bad[i], out) != BSC_EPARSE)
            fail_msg("accepted: %s", bad[i]);
    }
}

static void test_canonical_depth(void **state)
{
    char in[2 * (IDEM_JSON_DEPTH + 2) + 1], out[512];

    (void)state;
    for (int depth = IDEM_JSON_DEPTH; depth <= IDEM_JSON_DEPTH + 1; depth++) {
        int n = depth + 1; /* the outermost array is at depth 0 */
        memset(in, '[', (size_t)n);
        memset(in + n, ']', (size_t)n);
        in[2 * n] = '\0';
        assert_int_equal(canon(in, out), depth <= IDEM_JSON_DEPTH ? BSC_OK : BSC_EPARSE);
    }
}

static void test_canonical_limit(void **state)
{
    struct bsc_buf b;

    (void)state;
    bsc_buf_init(&b, 4);
    assert_int_equal(idem_canonical_json(BSC_STR("[1,2,3]"), &b), BSC_ELIMIT);
    bsc_buf_cleanup(&b);
}

/* ---- fingerprints ----------------------------------------------------------------------- */

static struct idem_fp fp_of(const char *ctx, const char *body)
{
    struct idem_fp fp;

    assert_int_equal(idem_fingerprint(bsc_str_cstr(ctx), bsc_str_cstr(body), &fp), BSC_OK);
    return fp;
}

static bool fp_eq(struct idem_fp a, struct idem_fp b)
{
    return memcmp(a.b, b.b, sizeof(a.b)) == 0;
}

static void test_fingerprint(void **state)
{
    const char *ctx = "POST /v1/chat/completions";
    char hex[BSC_SHA256_HEX_LEN + 1];
    struct idem_fp a = fp_of(ctx, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\"}]}");

    (void)state;
    /* equivalent bodies */
    assert_true(
        fp_eq(a, fp_of(ctx, "{ \"messages\" : [ {\"role\":\"user\"} ], \"model\":\"m\" }")));
    assert_true(fp_eq(a, fp_of(ctx, "{\"model\":\"\\u006d\",\"messages\":[{\"role\":\"user\"}]}")));
    /* different requests */
    assert_false(fp_eq(a, fp_of(ctx, "{\"model\":\"n\",\"messages\":[{\"role\":\"user\"}]}")));
    assert_false(fp_eq(a, fp_of(ctx, "{\"model\":\"m\",\"messages\":[]}")));
    assert_false(fp_eq(a, fp_of("POST /v1/embeddings",
                                "{\"model\":\"m\",\"messages\":[{\"role\":\"user\"}]}")));
    assert_false(fp_eq(fp_of(ctx, "[1.0]"), fp_of(ctx, "[1]")));
    /* not JSON: raw bytes, exactly */
    assert_true(fp_eq(fp_of(ctx, "not json"), fp_of(ctx, "not json")));
    assert_false(fp_eq(fp_of(ctx, "not json"), fp_of(ctx, "not json ")));
    assert_false(fp_eq(fp_of(ctx, "{\"a\":1,\"a\":2}"), fp_of(ctx, "{\"a\":2,\"a\":1}")));
    /* the context is length-prefixed: moving bytes across the boundary changes it */
    assert_false(fp_eq(fp_of("a", "bc"), fp_of("ab", "c")));
    /* a raw body never collides with the canonical JSON of the same bytes */
    assert_false(fp_eq(fp_of("", "{\"a\":1}"), fp_of("", "{\"a\":1}x")));
    /* the format is pinned: stored records must keep matching after an upgrade */
    bsc_sha256_hex(fp_of("POST", " { \"b\" : [2], \"a\" : 1 } ").b, hex);
    assert_string_equal(hex, "1feca6d0c709f4456a5f08343054d12d599ddce1ad1192a9e876a7676745bbde");
}

/* ---- records and decisions -------------------------------------------------------------- */

static void test_key_valid(void **state)
{
    char key[IDEM_KEY_MAX + 1];

    (void)state;
    memset(key, 'k', sizeof(key));
    assert_true(idem_key_valid(bsc_str_make(key, IDEM_KEY_MAX)));
    assert_false(idem_key_valid(bsc_str_make(key, IDEM_KEY_MAX + 1)));
    assert_true(idem_key_valid(BSC_STR("a")));
    assert_true(idem_key_valid(BSC_STR("a b~")));
    assert_false(idem_key_valid(BSC_STR("")));
    assert_false(idem_key_valid(BSC_STR("a\nb")));
    assert_false(idem_key_valid(BSC_STR("a\x7f")));
    assert_false(idem_key_valid(BSC_STR("caf\xc3\xa9")));
}

static void test_expiry(void **state)
{
    struct idem_record r = {.expires_ms = 1000};

    (void)state;
    assert_false(idem_record_expired(&r, 999));
    assert_true(idem_record_expired(&r, 1000));
    assert_true(idem_record_expired(&r, 1001));
    assert_int_equal(idem_expiry(IDEM_ST_COMPLETE, 100, 50, 10), 150);
    assert_int_equal(idem_expiry(IDEM_ST_IN_FLIGHT, 100, 50, 10), 110);
    assert_int_equal(idem_expiry(IDEM_ST_IN_FLIGHT, 100, 5, 10), 105);
    assert_int_equal(idem_expiry(IDEM_ST_COMPLETE, UINT64_MAX - 5, 50, 10), UINT64_MAX);
}

static void test_decide(void **state)
{
    struct idem_fp x = fp_of("", "{\"x\":1}"), y = fp_of("", "{\"y\":1}");
    struct idem_record r = {.fp = x, .state = IDEM_ST_IN_FLIGHT, .expires_ms = 1000};

    (void)state;
    assert_int_equal(idem_decide(NULL, &x, 0), IDEM_MISS);
    assert_int_equal(idem_decide(&r, &x, 999), IDEM_IN_FLIGHT);
    assert_int_equal(idem_decide(&r, &y, 999), IDEM_MISMATCH);
    assert_int_equal(idem_decide(&r, &x, 1000), IDEM_MISS);
    assert_int_equal(idem_decide(&r, &y, 1000), IDEM_MISS);
    r.state = IDEM_ST_COMPLETE;
    assert_int_equal(idem_decide(&r, &x, 999), IDEM_REPLAY);
    assert_int_equal(idem_decide(&r, &y, 999), IDEM_MISMATCH);
    assert_int_equal(idem_decide(&r, &x, 5000), IDEM_MISS);

    assert_int_equal(idem_decision_status(IDEM_MISS), 0);
    assert_int_equal(idem_decision_status(IDEM_REPLAY), 0);
    assert_int_equal(idem_decision_status(IDEM_IN_FLIGHT), 409);
    assert_int_equal(idem_decision_status(IDEM_MISMATCH), 422);
    assert_string_equal(idem_decision_name(IDEM_MISMATCH), "mismatch");
    assert_string_equal(idem_decision_name(IDEM_DECISION_COUNT), "?");
    assert_string_equal(idem_state_name(IDEM_ST_IN_FLIGHT), "in_flight");
    assert_string_equal(idem_state_name(IDEM_ST_COMPLETE), "complete");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_vectors),   cmocka_unit_test(test_sha256_million_a),
        cmocka_unit_test(test_sha256_splits),    cmocka_unit_test(test_canonical_form),
        cmocka_unit_test(test_canonical_refuses), cmocka_unit_test(test_canonical_depth),
        cmocka_unit_test(test_canonical_limit),  cmocka_unit_test(test_fingerprint),
        cmocka_unit_test(test_key_valid),        cmocka_unit_test(test_expiry),
        cmocka_unit_test(test_decide),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
