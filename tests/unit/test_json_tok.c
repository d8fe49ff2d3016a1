/* SPDX-License-Identifier: MIT */
/* test_json_tok.c -- the one JSON grammar (core/json_tok.c): every token kind with its offsets,
 * raw view and depth; every malformed case with its message and offset; the depth bound at
 * max-1/max/max+1; sticky END and ERROR; and the decoded view (bsc_json_unescape) with its
 * surrogate rule. The request checks built on it are tested in test_json.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/buf.h"
#include "core/json_tok.h"

#define S(lit) bsc_str_make((lit), sizeof(lit) - 1)

struct want_tok {
    enum bsc_jtok_kind kind;
    size_t off, end;
    const char *raw;
    unsigned depth;
};

static void expect_tokens(struct bsc_str doc, const struct want_tok *w, size_t n)
{
    struct bsc_json_tok t;
    struct bsc_jtok tok;

    bsc_json_tok_init(&t, doc, 8);
    for (size_t i = 0; i < n; i++) {
        enum bsc_jtok_kind k = bsc_json_tok_next(&t, &tok);

        if (k != w[i].kind)
            fail_msg("token %zu of %.*s: kind %d, want %d", i, (int)doc.len, doc.p, k, w[i].kind);
        assert_int_equal(tok.kind, k);
        assert_int_equal(tok.off, w[i].off);
        assert_int_equal(tok.end, w[i].end);
        assert_int_equal(tok.depth, w[i].depth);
        if (w[i].raw) {
            assert_int_equal(tok.raw.len, strlen(w[i].raw));
            assert_memory_equal(tok.raw.p, w[i].raw, tok.raw.len);
        }
    }
}

static void test_every_token_kind(void **state)
{
    const char doc[] = " {\"a\\n\" : [1, -2.5e+3, true, false, null, \"x\"], \"b\":{}} ";
    const struct want_tok w[] = {
        {BSC_JTOK_OBJ_OPEN, 1, 2, "{", 0},
        {BSC_JTOK_NAME, 2, 7, "a\\n", 1},
        {BSC_JTOK_COLON, 8, 9, ":", 1},
        {BSC_JTOK_ARR_OPEN, 10, 11, "[", 1},
        {BSC_JTOK_NUMBER, 11, 12, "1", 2},
        {BSC_JTOK_COMMA, 12, 13, ",", 2},
        {BSC_JTOK_NUMBER, 14, 21, "-2.5e+3", 2},
        {BSC_JTOK_COMMA, 21, 22, ",", 2},
        {BSC_JTOK_TRUE, 23, 27, "true", 2},
        {BSC_JTOK_COMMA, 27, 28, ",", 2},
        {BSC_JTOK_FALSE, 29, 34, "false", 2},
        {BSC_JTOK_COMMA, 34, 35, ",", 2},
        {BSC_JTOK_NULL, 36, 40, "null", 2},
        {BSC_JTOK_COMMA, 40, 41, ",", 2},
        {BSC_JTOK_STRING, 42, 45, "x", 2},
        {BSC_JTOK_ARR_CLOSE, 45, 46, "]", 1},
        {BSC_JTOK_COMMA, 46, 47, ",", 1},
        {BSC_JTOK_NAME, 48, 51, "b", 1},
        {BSC_JTOK_COLON, 51, 52, ":", 1},
        {BSC_JTOK_OBJ_OPEN, 52, 53, "{", 1},
        {BSC_JTOK_OBJ_CLOSE, 53, 54, "}", 1},
        {BSC_JTOK_OBJ_CLOSE, 54, 55, "}", 0},
        {BSC_JTOK_END, 56, 56, NULL, 0},
        {BSC_JTOK_END, 56, 56, NULL, 0}, /* sticky */
    };

    (void)state;
    expect_tokens(S(doc), w, sizeof(w) / sizeof(w[0]));
}

static void test_scalar_documents(void **state)
{
    const struct want_tok num[] = {{BSC_JTOK_NUMBER, 0, 2, "-0", 0}, {BSC_JTOK_END, 2, 2, 0, 0}};
    const struct want_tok str[] = {{BSC_JTOK_STRING, 1, 3, "", 0}, {BSC_JTOK_END, 4, 4, 0, 0}};
    struct bsc_json_tok t;
    struct bsc_jtok tok;

    (void)state;
    expect_tokens(S("-0"), num, 2);
    expect_tokens(S(" \"\"\n"), str, 2);
    /* Escapes are flagged, not decoded; UTF-8 passes through. */
    bsc_json_tok_init(&t, S("\"\\u00e9\xc3\xa9\""), 1);
    assert_int_equal(bsc_json_tok_next(&t, &tok), BSC_JTOK_STRING);
    assert_true(tok.escaped);
    assert_int_equal(tok.raw.len, 8);
    bsc_json_tok_init(&t, S("\"plain\""), 1);
    assert_int_equal(bsc_json_tok_next(&t, &tok), BSC_JTOK_STRING);
    assert_false(tok.escaped);
    /* A NULL document is an empty one. */
    bsc_json_tok_init(&t, bsc_str_make(NULL, 0), 1);
    assert_int_equal(bsc_json_tok_next(&t, &tok), BSC_JTOK_ERROR);
    assert_string_equal(t.what, "empty document");
}

static void test_valid_numbers(void **state)
{
    static const char *const ok[] = {"0", "-0", "12", "0.5", "-1.25", "1e5", "1E+5", "1e-05",
                                     "123456789012345678901234567890", "0e0", "-0.0E-0"};

    (void)state;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if (!bsc_json_tok_valid(bsc_str_make(ok[i], strlen(ok[i])), 1, NULL, NULL))
            fail_msg("refused %s", ok[i]);
}

struct bad {
    const char *doc;
    size_t len; /* 0: strlen */
    size_t off;
    const char *what;
};

static void test_malformed(void **state)
{
    static const struct bad bad[] = {
        {"", 0, 0, "empty document"},
        {"  ", 0, 2, "empty document"},
        {"x", 0, 0, "unexpected character"},
        {"+1", 0, 0, "unexpected character"},
        {".5", 0, 0, "unexpected character"},
        {"-", 0, 1, "invalid number"},
        {"-a", 0, 1, "invalid number"},
        {"1.", 0, 2, "invalid number"},
        {"1.e3", 0, 2, "invalid number"},
        {"1e", 0, 2, "invalid number"},
        {"1e+", 0, 3, "invalid number"},
        {"01", 0, 1, "unexpected data after the JSON value"},
        {"[01]", 0, 2, "expected ',' or ']'"},
        {"tru", 0, 0, "invalid literal"},
        {"nul", 0, 0, "invalid literal"},
        {"falsy", 0, 0, "invalid literal"},
        {"NaN", 0, 0, "unexpected character"},
        {"\"abc", 0, 4, "unterminated string"},
        {"\"a\tb\"", 0, 2, "control character in a string"},
        {"\"a\\x\"", 0, 3, "invalid escape"},
        {"\"a\\u12g4\"", 0, 6, "invalid \\u escape"},
        {"\"a\\u12", 0, 6, "invalid \\u escape"},
        {"\"\xff\"", 0, 1, "invalid UTF-8"},
        {"\"\xc0\xaf\"", 0, 1, "invalid UTF-8"},
        {"\"\xed\xa0\x80\"", 0, 1, "invalid UTF-8"}, /* an encoded surrogate */
        {"\"a\0b\"", 5, 2, "control character in a string"},
        {"{", 0, 1, "expected a member name"},
        {"{1:2}", 0, 1, "expected a member name"},
        {"{\"a\",}", 0, 4, "expected ':'"},
        {"{\"a\"", 0, 4, "expected ':'"},
        {"{\"a\":}", 0, 5, "unexpected character"},
        {"{\"a\":1,}", 0, 7, "expected a member name"},
        {"{\"a\":1 \"b\":2}", 0, 7, "expected ',' or '}'"},
        {"{\"a\":1]", 0, 6, "expected ',' or '}'"},
        {"{\"a\":", 0, 5, "unterminated container"},
        {"[", 0, 1, "unterminated container"},
        {"[1", 0, 2, "unterminated container"},
        {"[1,", 0, 3, "unterminated container"},
        {"[1,]", 0, 3, "unexpected character"},
        {"[,1]", 0, 1, "unexpected character"},
        {"[1}", 0, 2, "expected ',' or ']'"},
        {"]", 0, 0, "unexpected character"},
        {"{} {}", 0, 3, "unexpected data after the JSON value"},
        {"1 2", 0, 2, "unexpected data after the JSON value"},
        {"\"a\" x", 0, 4, "unexpected data after the JSON value"},
        {"[1]\v", 0, 3, "unexpected data after the JSON value"}, /* only 4 whitespace bytes */
        {"'a'", 0, 0, "unexpected character"},
        {"[1] /*c*/", 0, 4, "unexpected data after the JSON value"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct bsc_str doc = bsc_str_make(bad[i].doc, bad[i].len ? bad[i].len : strlen(bad[i].doc));
        const char *what = NULL;
        size_t off = 0;

        if (bsc_json_tok_valid(doc, 8, &what, &off))
            fail_msg("accepted %s", bad[i].doc);
        if (off != bad[i].off || strcmp(what, bad[i].what) != 0)
            fail_msg("%s: %zu %s, want %zu %s", bad[i].doc, off, what, bad[i].off, bad[i].what);
    }
}

static void test_error_is_sticky(void **state)
{
    struct bsc_json_tok t;
    struct bsc_jtok tok;

    (void)state;
    bsc_json_tok_init(&t, S("[1 x]"), 4);
    assert_int_equal(bsc_json_tok_next(&t, &tok), BSC_JTOK_ARR_OPEN);
    assert_int_equal(bsc_json_tok_next(&t, &tok), BSC_JTOK_NUMBER);
    assert_int_equal(bsc_json_tok_next(&t, &tok), BSC_JTOK_ERROR);
    assert_int_equal(tok.off, 3); /* where the token began */
    assert_int_equal(t.err_off, 3);
    assert_int_equal(bsc_json_tok_next(&t, &tok), BSC_JTOK_ERROR);
    assert_int_equal(tok.off, 3);
    /* The error token's start, and the offending byte further in. */
    bsc_json_tok_init(&t, S("[\"ab\\q\"]"), 4);
    bsc_json_tok_next(&t, &tok);
    assert_int_equal(bsc_json_tok_next(&t, &tok), BSC_JTOK_ERROR);
    assert_int_equal(tok.off, 1);
    assert_int_equal(t.err_off, 5);
}

static char *nested(unsigned n, char open, char close)
{
    char *s = malloc(2 * n + 1);

    assert_non_null(s);
    memset(s, open, n);
    memset(s + n, close, n);
    s[2 * n] = '\0';
    return s;
}

static void test_depth_bound(void **state)
{
    const unsigned limits[] = {0, 1, 2, 63, 64, 65, 128, 255, BSC_JSON_MAX_DEPTH};

    (void)state;
    for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
        unsigned max = limits[i];
        for (unsigned n = max ? max - 1 : 0; n <= max + 1; n++) {
            char *s = nested(n, '[', ']');
            const char *what = NULL;
            size_t off = 0;
            bool ok = bsc_json_tok_valid(bsc_str_make(s, 2 * n), max, &what, &off);

            if (n == 0) {
                assert_false(ok); /* empty */
            } else if (n <= max) {
                assert_true(ok);
            } else {
                assert_false(ok);
                assert_string_equal(what, "nested too deep");
                assert_int_equal(off, max);
            }
            free(s);
        }
    }
    /* Past the compiled-in bound, the bound holds. */
    {
        char *s = nested(BSC_JSON_MAX_DEPTH + 1, '[', ']');
        assert_false(bsc_json_tok_valid(bsc_str_make(s, strlen(s)), 100000, NULL, NULL));
        free(s);
    }
    /* Objects count too, and the stack tells them from arrays over both words. */
    {
        static const char doc[] = "{\"a\":[{\"b\":[]}]}";
        assert_true(bsc_json_tok_valid(S(doc), 4, NULL, NULL));
        assert_false(bsc_json_tok_valid(S(doc), 3, NULL, NULL));
    }
}

static void test_mixed_deep_stack(void **state)
{
    /* 130 levels alternating objects and arrays: each closer must match across the 64-bit
     * words of the container stack. */
    struct bsc_buf b;
    const char *what = NULL;
    size_t off = 0;

    (void)state;
    bsc_buf_init(&b, 4096);
    for (int i = 0; i < 130; i++)
        assert_int_equal(bsc_buf_append_cstr(&b, i % 2 ? "[" : "{\"k\":"), BSC_OK);
    assert_int_equal(bsc_buf_append_cstr(&b, "1"), BSC_OK);
    for (int i = 129; i >= 0; i--)
        assert_int_equal(bsc_buf_append_cstr(&b, i % 2 ? "]" : "}"), BSC_OK);
    assert_true(bsc_json_tok_valid(bsc_buf_str(&b), 130, &what, &off));
    b.p[b.len - 1] = ']'; /* the outermost closer wrong */
    assert_false(bsc_json_tok_valid(bsc_buf_str(&b), 130, &what, &off));
    assert_string_equal(what, "expected ',' or '}'");
    assert_int_equal(off, b.len - 1);
    bsc_buf_cleanup(&b);
}

static void expect_decoded(const char *raw, const char *want, size_t want_len)
{
    struct bsc_buf out;

    bsc_buf_init(&out, 1024);
    assert_int_equal(bsc_json_unescape(bsc_str_make(raw, strlen(raw)), &out, NULL), BSC_OK);
    assert_int_equal(out.len, want_len);
    assert_memory_equal(out.p, want, want_len);
    bsc_buf_cleanup(&out);
}

static void expect_refused(const char *raw, size_t bad_at)
{
    struct bsc_buf out;
    size_t bad = 99;

    bsc_buf_init(&out, 1024);
    assert_int_equal(bsc_json_unescape(bsc_str_make(raw, strlen(raw)), &out, &bad), BSC_EPARSE);
    assert_int_equal(bad, bad_at);
    bsc_buf_cleanup(&out);
}

static void test_unescape(void **state)
{
    (void)state;
    expect_decoded("plain", "plain", 5);
    expect_decoded("", "", 0);
    expect_decoded("\\\"\\\\\\/\\b\\f\\n\\r\\t", "\"\\/\b\f\n\r\t", 8);
    expect_decoded("a\\u0041\\u00e9\\u20AC", "aA\xc3\xa9\xe2\x82\xac", 7);
    expect_decoded("\\ud83d\\ude00!", "\xf0\x9f\x98\x80!", 5);
    expect_decoded("x\\u0000y", "x\0y", 3);
    expect_refused("\\ud800", 0);            /* a lone high half at the end */
    expect_refused("ab\\ud800x", 2);         /* followed by no escape */
    expect_refused("\\ud800\\n", 0);         /* followed by another escape */
    expect_refused("\\ud800\\u0041", 0);     /* followed by no low half */
    expect_refused("\\ud800\\ud800", 0);     /* two high halves */
    expect_refused("ok\\udc00", 2);          /* a lone low half */
}

static void test_unescape_bound(void **state)
{
    struct bsc_buf out;

    (void)state;
    bsc_buf_init(&out, 3);
    assert_int_equal(bsc_json_unescape(S("abcd"), &out, NULL), BSC_ELIMIT);
    bsc_buf_cleanup(&out);
}

/* Indentation of every length, mixed with tabs and line breaks, before a name, a value and
 * the end: each token starts where its first byte is (whitespace is skipped in words of
 * eight, so lengths around and past eight are the ones that matter). */
static void test_whitespace_runs(void **state)
{
    static const char *const tails[] = {"", "\t", "\n ", "\r\n\t  "};

    (void)state;
    for (size_t k = 0; k <= 20; k++) {
        for (size_t tail = 0; tail < sizeof(tails) / sizeof(tails[0]); tail++) {
            char doc[128], pad[64];
            struct bsc_json_tok t;
            struct bsc_jtok tok;
            size_t name_at, value_at, close_at;
            int len;

            memset(pad, ' ', k);
            pad[k] = '\0';
            len = snprintf(doc, sizeof(doc), "{\n%s%s\"a\":%s%s1%s%s}%s%s", pad, tails[tail], pad,
                           tails[tail], pad, tails[tail], pad, tails[tail]);
            assert_true(len > 0 && (size_t)len < sizeof(doc));
            name_at = 2 + k + strlen(tails[tail]);
            value_at = name_at + 4 + k + strlen(tails[tail]);
            close_at = value_at + 1 + k + strlen(tails[tail]);
            bsc_json_tok_init(&t, bsc_str_make(doc, (size_t)len), 8);
            assert_int_equal(bsc_json_tok_next(&t, &tok), BSC_JTOK_OBJ_OPEN);
            assert_int_equal(bsc_json_tok_next(&t, &tok), BSC_JTOK_NAME);
            assert_int_equal(tok.off, name_at);
            assert_int_equal(bsc_json_tok_next(&t, &tok), BSC_JTOK_COLON);
            assert_int_equal(bsc_json_tok_next(&t, &tok), BSC_JTOK_NUMBER);
            assert_int_equal(tok.off, value_at);
            assert_int_equal(bsc_json_tok_next(&t, &tok), BSC_JTOK_OBJ_CLOSE);
            assert_int_equal(tok.off, close_at);
            assert_int_equal(bsc_json_tok_next(&t, &tok), BSC_JTOK_END);
            /* and a stray byte after the run is found exactly where it is */
            doc[len] = 'x';
            bsc_json_tok_init(&t, bsc_str_make(doc, (size_t)len + 1), 8);
            while (bsc_json_tok_next(&t, &tok) != BSC_JTOK_ERROR)
                assert_int_not_equal(tok.kind, BSC_JTOK_END);
            assert_int_equal(t.err_off, (size_t)len);
        }
    }
}

/* A copy of <t> skips the rest of its innermost container; another reads on token by token
 * to the matching closer or the error: the two must come back with the same token (every
 * field) and the same tokenizer state, then agree on what follows. */
/* <len> bytes of <text> in a heap block of exactly that size, so that the sanitizer sees a
 * read past the document's end (the sixteen-byte steps must stop short of it). */
static char *exact_copy(const char *text, size_t len)
{
    char *doc = malloc(len ? len : 1);

    assert_non_null(doc);
    memcpy(doc, text, len);
    return doc;
}

/* The bytes a whitespace run is built from, and bytes that end one: the run's sixteen-byte
 * step (space and LF at once, a tab or CR one at a time) must stop exactly where a byte that
 * is not whitespace stands, a control byte included. */
static const unsigned char ws_fill[] = {' ', '\n', '\t', '\r'};
static const unsigned char ws_stop[] = {'x', 0x0b, 0x00, 0x1f, 0x80, 0xff};

/* Reads <doc> token by token and by skipping the array it opens, and checks both end at
 * the same error, *<what> at <off>, or (<what> NULL) that the number token is at <off>. */
static void expect_run_end(const char *text, size_t len, const char *what, size_t off)
{
    char *doc = exact_copy(text, len);
    struct bsc_json_tok t;
    struct bsc_jtok tok;
    enum bsc_jtok_kind k;

    bsc_json_tok_init(&t, bsc_str_make(doc, len), 8);
    while ((k = bsc_json_tok_next(&t, &tok)) != BSC_JTOK_ERROR && k != BSC_JTOK_NUMBER)
        assert_int_not_equal(k, BSC_JTOK_END);
    if (!what) {
        assert_int_equal(k, BSC_JTOK_NUMBER);
        assert_int_equal(tok.off, off);
        assert_int_equal(bsc_json_tok_next(&t, &tok), BSC_JTOK_ARR_CLOSE);
        assert_int_equal(bsc_json_tok_next(&t, &tok), BSC_JTOK_END);
    } else {
        assert_int_equal(k, BSC_JTOK_ERROR);
        assert_string_equal(t.what, what);
        assert_int_equal(t.err_off, off);
    }
    bsc_json_tok_init(&t, bsc_str_make(doc, len), 8);
    assert_int_equal(bsc_json_tok_next(&t, &tok), BSC_JTOK_ARR_OPEN);
    k = bsc_json_tok_skip(&t, &tok);
    assert_int_equal(k, what ? BSC_JTOK_ERROR : BSC_JTOK_ARR_CLOSE);
    if (what) {
        assert_string_equal(t.what, what);
        assert_int_equal(t.err_off, off);
    }
    free(doc);
}

/* <doc> is valid (<what> NULL), or invalid with *<what> at <off>. */
static void expect_valid_or(const char *text, size_t len, const char *what, size_t off)
{
    char *doc = exact_copy(text, len);
    const char *why = NULL;
    size_t at = 0;
    bool ok = bsc_json_tok_valid(bsc_str_make(doc, len), BSC_JSON_MAX_DEPTH, &why, &at);

    assert_int_equal(ok, what == NULL);
    if (what) {
        assert_string_equal(why, what);
        assert_int_equal(at, off);
    }
    free(doc);
}

/* Whitespace runs of 0 to 40 bytes, mixed of all four kinds, after a string that moves the
 * run against the sixteen-byte steps, with a byte that is not whitespace at every position
 * of it: the value (or the error) is found where that byte stands, in the run between two
 * values (read token by token and skipped) and in the one that ends the document. */
static void test_whitespace_run_boundaries(void **state)
{
    (void)state;
    for (size_t pad = 0; pad < 17; pad++)
        for (size_t len = 0; len <= 40; len++)
            for (size_t at = 0; at <= len; at++)
                for (size_t s = 0; s < sizeof(ws_stop); s++) {
                    char doc[128];
                    size_t n = 0, run;

                    doc[n++] = '[';
                    doc[n++] = '"';
                    memset(doc + n, 'a', pad);
                    n += pad;
                    doc[n++] = '"';
                    doc[n++] = ',';
                    run = n;
                    for (size_t k = 0; k < len; k++)
                        doc[n++] = (char)ws_fill[(k * 7 + pad + s) % sizeof(ws_fill)];
                    if (at < len) /* the stop byte inside the run, the value after it */
                        doc[run + at] = (char)ws_stop[s];
                    doc[n++] = '1';
                    doc[n++] = ']';
                    if (at < len)
                        expect_run_end(doc, n, "unexpected character", run + at);
                    else
                        expect_run_end(doc, n, NULL, n - 2);
                    /* the same run at the end of the document: [ "a..." ] run */
                    doc[run - 1] = ']';
                    n = run;
                    for (size_t k = 0; k < len; k++)
                        doc[n++] = (char)ws_fill[(k * 5 + pad + s) % sizeof(ws_fill)];
                    if (at < len) {
                        doc[run + at] = (char)ws_stop[s];
                        expect_valid_or(doc, n, "unexpected data after the JSON value", run + at);
                    } else {
                        expect_valid_or(doc, n, NULL, 0);
                    }
                }
}

/* The document's end after a string's last byte at doc[n - 1]: its quote, ",1", <tail>
 * spaces and the array's ']'; the document's length. */
static size_t doc_close(char *doc, size_t n, size_t tail)
{
    doc[n++] = '"';
    doc[n++] = ',';
    doc[n++] = '1';
    memset(doc + n, ' ', tail);
    n += tail;
    doc[n++] = ']';
    return n;
}

/* ["<before> 'b's, the <sp> bytes <special>, <after> 'c's",1<tail spaces>] in <doc>, the
 * string's quote at doc[1]; the document's length. */
static size_t string_doc(char *doc, size_t before, const char *special, size_t sp,
                         size_t after, size_t tail)
{
    size_t n = 0;

    doc[n++] = '[';
    doc[n++] = '"';
    memset(doc + n, 'b', before);
    n += before;
    memcpy(doc + n, special, sp);
    n += sp;
    memset(doc + n, 'c', after);
    n += after;
    return doc_close(doc, n, tail);
}

/* A string of 0 to 40 plain bytes that ends 0 to 20 bytes before the document does, with a
 * byte that needs attention at every position: an escape passes, a control byte, a broken
 * UTF-8 sequence or the document's end is the error where it stands, read token by token
 * and skipped alike. */
static void test_string_run_boundaries(void **state)
{
    static const struct {
        const char *bytes;
        const char *what; /* NULL: the string is valid */
        size_t err_at;    /* from the special byte */
    } special[] = {
        {"\\n", NULL, 0},
        {"\\u00e9", NULL, 0},
        {"\xc3\xa9", NULL, 0},
        {"\x01", "control character in a string", 0},
        {"\x1f", "control character in a string", 0},
        {"\x80", "invalid UTF-8", 0},
        {"\xc3(", "invalid UTF-8", 0},
        {"\\x", "invalid escape", 1},
    };

    (void)state;
    for (size_t len = 0; len <= 40; len++)
        for (size_t tail = 0; tail <= 20; tail++)
            for (size_t at = 0; at <= len; at++)
                for (size_t s = 0; s < sizeof(special) / sizeof(special[0]); s++) {
                    char doc[128];
                    const size_t open = 1, sp = strlen(special[s].bytes); /* open: its quote */
                    size_t n = string_doc(doc, at, special[s].bytes, sp, len - at, tail);

                    if (special[s].what)
                        expect_run_end(doc, n, special[s].what, open + 1 + at + special[s].err_at);
                    else
                        expect_run_end(doc, n, NULL, n - 2 - tail);
                    /* unterminated: the document ends inside the string */
                    n = open + 1 + at;
                    expect_run_end(doc, n, "unterminated string", n);
                }
}

/* Strings of 0 to 100 plain bytes (past the run's first sixteen-byte step, into its
 * thirty-two-byte one), ending 0 to 40 bytes before the document does, with a quote, a
 * backslash escape, a control byte or a non-ASCII byte at every position: each is met
 * where it stands, read token by token and skipped alike (exact-size copies). */
static void test_long_string_run_boundaries(void **state)
{
    static const struct {
        const char *bytes;
        const char *what;
    } special[] = {
        {"\\\"", NULL},
        {"\xc3\xa9", NULL},
        {"\x1f", "control character in a string"},
        {"\xff", "invalid UTF-8"},
    };

    (void)state;
    for (size_t len = 0; len <= 100; len++)
        for (size_t tail = 0; tail <= 40; tail += 3)
            for (size_t at = 0; at <= len; at++)
                for (size_t s = 0; s < sizeof(special) / sizeof(special[0]); s++) {
                    char doc[192];
                    const size_t open = 1, sp = strlen(special[s].bytes); /* open: its quote */
                    size_t n = string_doc(doc, at, special[s].bytes, sp, len - at, tail);

                    if (special[s].what)
                        expect_run_end(doc, n, special[s].what, open + 1 + at);
                    else
                        expect_run_end(doc, n, NULL, n - 2 - tail);
                    /* the plain string closed where the special byte stood */
                    n = doc_close(doc, open + 1 + at, tail);
                    expect_run_end(doc, n, NULL, n - 2 - tail);
                }
}

static void expect_skip_matches(struct bsc_str doc, unsigned max_depth, bool quiet);

/* A pretty-printed body: a line break and 0 to 40 spaces of indentation before every name,
 * element and closer (the line-break shape the walk tries first), with the document ending
 * 0 to 20 bytes after it. Each byte of each run changed to another whitespace byte keeps
 * it valid; changed to 'x' it is the error there; and a skip from every state matches
 * reading token by token. */
static void test_indentation_runs(void **state)
{
    static const char *const parts[] = {"{", "\"a\":1,", "\"b\":[", "2,", "{}", "]", "}"};
    static const char fill[] = {' ', '\t', '\r', '\n'};

    (void)state;
    for (size_t k = 0; k <= 40; k++)
        for (size_t tail = 0; tail <= 20; tail += 5) {
            char doc[512];
            bool ws[512] = {false};
            size_t n = 0;

            for (size_t p = 0; p < sizeof(parts) / sizeof(parts[0]); p++) {
                if (p) {
                    ws[n] = true;
                    doc[n++] = '\n';
                    for (size_t j = 0; j < k; j++) {
                        ws[n] = true;
                        doc[n++] = ' ';
                    }
                }
                memcpy(doc + n, parts[p], strlen(parts[p]));
                n += strlen(parts[p]);
            }
            memset(doc + n, ' ', tail);
            n += tail;
            expect_valid_or(doc, n, NULL, 0);
            expect_skip_matches(bsc_str_make(doc, n), 8, false);
            for (size_t at = 0; at < n; at++) {
                char keep = doc[at];

                if (!ws[at])
                    continue;
                for (size_t f = 0; f < sizeof(fill); f++) {
                    doc[at] = fill[f];
                    expect_valid_or(doc, n, NULL, 0);
                }
                doc[at] = 'x';
                {
                    char *copy = exact_copy(doc, n);
                    const char *why = NULL;
                    size_t off = 0;

                    assert_false(bsc_json_tok_valid(bsc_str_make(copy, n), 8, &why, &off));
                    assert_int_equal(off, at);
                    expect_skip_matches(bsc_str_make(copy, n), 8, false);
                    free(copy);
                }
                doc[at] = keep;
            }
        }
}

/* Indented containers nested 1 to 200 deep, skipped from the outermost: the runs before
 * each opener and closer are read at every indentation, and the closer is the last byte. */
static void test_whitespace_deep_nesting(void **state)
{
    static char doc[200 * 2 * 210];

    (void)state;
    for (size_t depth = 1; depth <= 200; depth += 7) {
        size_t n = 0;
        struct bsc_json_tok t;
        struct bsc_jtok tok;

        for (size_t d = 0; d < depth; d++) {
            doc[n++] = d % 2 ? '{' : '[';
            if (d % 2) {
                memcpy(doc + n, "\"k\" :", 5);
                n += 5;
            }
            doc[n++] = '\n';
            memset(doc + n, ' ', d);
            n += d;
        }
        doc[n++] = '0';
        for (size_t d = depth; d-- > 0;) {
            doc[n++] = '\n';
            memset(doc + n, ' ', d);
            n += d;
            doc[n++] = d % 2 ? '}' : ']';
        }
        bsc_json_tok_init(&t, bsc_str_make(doc, n), BSC_JSON_MAX_DEPTH);
        assert_int_equal(bsc_json_tok_next(&t, &tok), BSC_JTOK_ARR_OPEN);
        assert_int_equal(bsc_json_tok_skip(&t, &tok), BSC_JTOK_ARR_CLOSE);
        assert_int_equal(tok.off, n - 1);
        assert_int_equal(bsc_json_tok_next(&t, &tok), BSC_JTOK_END);
        expect_valid_or(doc, n, NULL, 0);
        /* a stray byte in the deepest run */
        doc[n - 2 - 0] = depth > 1 ? '\x0b' : doc[n - 2];
        if (depth > 1)
            expect_valid_or(doc, n, "expected ',' or ']'", n - 2);
    }
}

static void expect_skip_matches_at(struct bsc_str doc, const struct bsc_json_tok *t)
{
    struct bsc_json_tok a = *t, b = *t;
    struct bsc_jtok ta, tb;
    enum bsc_jtok_kind ka = bsc_json_tok_skip(&a, &ta), kb;
    unsigned stop = t->depth - 1;

    do {
        kb = bsc_json_tok_next(&b, &tb);
    } while (kb != BSC_JTOK_ERROR && kb != BSC_JTOK_END &&
             !((kb == BSC_JTOK_OBJ_CLOSE || kb == BSC_JTOK_ARR_CLOSE) && b.depth == stop));
    if (ka != kb || ta.off != tb.off || ta.end != tb.end || ta.depth != tb.depth ||
        ta.raw.p != tb.raw.p || ta.raw.len != tb.raw.len || ta.escaped != tb.escaped ||
        a.i != b.i || a.state != b.state || a.depth != b.depth || a.what != b.what ||
        a.err_off != b.err_off || a.quiet != b.quiet)
        fail_msg("skip differs on %.*s from %zu: kind %d/%d, end %zu/%zu, err_off %zu/%zu",
                 (int)doc.len, doc.p, t->i, ka, kb, ta.end, tb.end, a.err_off, b.err_off);
    assert_int_equal(bsc_json_tok_next(&a, &ta), bsc_json_tok_next(&b, &tb));
    assert_int_equal(ta.off, tb.off);
}

/* Reads <doc> token by token (quietly when <quiet>); after every token inside a container
 * -- an opener, a name, a ':', a value, a ',' -- a skip from there must match the reading
 * on (expect_skip_matches_at): every state a skip may start in is met. */
static void expect_skip_matches(struct bsc_str doc, unsigned max_depth, bool quiet)
{
    struct bsc_json_tok t;
    struct bsc_jtok tok;
    enum bsc_jtok_kind k;

    bsc_json_tok_init(&t, doc, max_depth);
    if (quiet)
        bsc_json_tok_quiet(&t);
    do {
        k = bsc_json_tok_next(&t, &tok);
        if (k != BSC_JTOK_END && k != BSC_JTOK_ERROR && t.depth > 0)
            expect_skip_matches_at(doc, &t);
    } while (k != BSC_JTOK_END && k != BSC_JTOK_ERROR);
}

static void test_skip_matches_token_reading(void **state)
{
    static const char *const docs[] = {
        "{\"a\":[1,{\"b\":[true,false,null]},\"x\\u00e9\"],\"c\":{}}",
        " [ [ ] , { } , [ [ 1 ] ] ] ",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"h\u00c3\u00a9llo \\\"q\\\"\"}],\"n\":-1.5e3}",
        "{\"a\":[1,2,}", "{\"a\":{\"b\" 1}}", "{\"a\":[\"\x01\"]}", "{\"a\":[01]}",
        "{\"a\":[\"\xc3\"]}", "{\"a\":[[[[[[[[[[1]]]]]]]]]]}", "[{\"a\":1}]x", "{\"a\":[tru]}",
        "{\"a\":{\"b\":\"\\q\"}}", "[1,[2,[3", "{\"a\":[}]", "{\"a\":{]}",
        /* escapes before an error inside the same string, in a name and in a value */
        "{\"a\":{\"b\\n\\u00\":1}}", "[[\"\\t\\x\"]]", "[{\"k\\\"\":\"v\\/\x80\"}]",
        /* whitespace runs around every token, numbers of every shape */
        "{ \"a\" :\n\t[ -0.5e+7 ,\r\n 12E-3 , 0 ,{ }\n        ,[ ] ] , \"b\" : { \"c\" : null } }",
        "[1.,2]", "[-]", "[1e]", "[1,-01]", "{\"a\":1 \"b\":2}", "{\"a\":1,}", "[1 2]", "{\"a\" 1}",
        "{\"a\":[1]]", "[{\"a\":1}}", "{\"a\"::1}", "[nul]", "[\"\\u12G4\"]", "{1:2}",
    };

    (void)state;
    for (size_t d = 0; d < sizeof(docs) / sizeof(docs[0]); d++) {
        size_t len = strlen(docs[d]);

        /* The document and every prefix of it: each truncation is an error somewhere. */
        for (size_t cut = 0; cut <= len; cut++) {
            expect_skip_matches(bsc_str_make(docs[d], cut), 8, false);
            expect_skip_matches(bsc_str_make(docs[d], cut), 8, true);
            expect_skip_matches(bsc_str_make(docs[d], cut), 3, true);
        }
    }
}

/* A skip through a nesting that crosses the stack's 64-bit words both ways, and the bound
 * met inside a skip: the same closer, error and offset as token-by-token reading. */
static void test_skip_deep_stack(void **state)
{
    char doc[200 * 5 + 200 + 8];
    size_t len = 0;

    (void)state;
    for (int k = 0; k < 200; k++) {
        if (k % 3) {
            doc[len++] = '[';
        } else {
            memcpy(doc + len, "{\"k\":", 5);
            len += 5;
        }
    }
    doc[len++] = '1';
    for (int k = 199; k >= 0; k--)
        doc[len++] = k % 3 ? ']' : '}';
    for (size_t cut = len; cut >= len - 200; cut -= 25) {
        expect_skip_matches(bsc_str_make(doc, cut), BSC_JSON_MAX_DEPTH, true);
        expect_skip_matches(bsc_str_make(doc, cut), 130, true);
        expect_skip_matches(bsc_str_make(doc, cut), 64, false);
    }
}

/* At the '[' just read by <t>: bsc_json_tok_skip_objects on a copy against reading on token
 * by token with the element rule beside it (each element's first byte, where its token
 * begins, must be '{'; the end of the document is the grammar's): the same stop, offset and
 * message, and *element only for the element rule. */
static void expect_skip_objects_at(struct bsc_str doc, const struct bsc_json_tok *t)
{
    struct bsc_json_tok a = *t, b = *t;
    struct bsc_jtok ta, tb;
    bool element, element_next = true, want_element = false;
    enum bsc_jtok_kind ka = bsc_json_tok_skip_objects(&a, &ta, &element), kb;
    unsigned stop = t->depth - 1;

    for (;;) {
        kb = bsc_json_tok_next(&b, &tb);
        if (element_next && kb != BSC_JTOK_ARR_CLOSE && tb.off < doc.len && doc.p[tb.off] != '{') {
            want_element = true;
            break;
        }
        element_next = kb == BSC_JTOK_COMMA && b.depth == stop + 1;
        if (kb == BSC_JTOK_ERROR || kb == BSC_JTOK_END ||
            ((kb == BSC_JTOK_OBJ_CLOSE || kb == BSC_JTOK_ARR_CLOSE) && b.depth == stop))
            break;
    }
    if (want_element) {
        if (ka != BSC_JTOK_ERROR || !element || ta.off != tb.off || a.err_off != tb.off ||
            strcmp(a.what, "an array element that must be an object") != 0)
            fail_msg("skip_objects misses the element at %zu of %.*s", tb.off, (int)doc.len,
                     doc.p);
        return;
    }
    if (element || ka != kb || ta.off != tb.off || ta.end != tb.end || ta.depth != tb.depth ||
        a.i != b.i || a.state != b.state || a.depth != b.depth || a.what != b.what ||
        a.err_off != b.err_off)
        fail_msg("skip_objects differs on %.*s from %zu: kind %d/%d", (int)doc.len, doc.p, t->i,
                 ka, kb);
}

static void test_skip_objects(void **state)
{
    static const char *const docs[] = {
        "{\"m\":[{\"a\":[1,2]},{},{\"b\":{\"c\":[{}]}}],\"n\":[]}",
        "[ { } , \n {\"x\":\"]\"} ]", "[1]", "[{}, 1]", "[{},[]]", "[{}, \"s\"]", "[[{}]]",
        "[{},]", "[,{}]", "[{} {}]", "[{}", "[ ", "[{\"a\":1},\n  nul]", "[{\"a\" 1}]",
        "{\"m\":[{\"k\":[1,x]}, 2]}", "[{\"a\":[[[[1]]]]}]", "[\t]", "[{}]x",
    };
    struct bsc_json_tok t;
    struct bsc_jtok tok;
    bool element;

    (void)state;
    for (size_t d = 0; d < sizeof(docs) / sizeof(docs[0]); d++) {
        for (size_t cut = 0; cut <= strlen(docs[d]); cut++) {
            for (unsigned max_depth = 2; max_depth <= 8; max_depth += 6) {
                struct bsc_str doc = bsc_str_make(docs[d], cut);
                enum bsc_jtok_kind k;

                bsc_json_tok_init(&t, doc, max_depth);
                bsc_json_tok_quiet(&t);
                do {
                    k = bsc_json_tok_next(&t, &tok);
                    if (k == BSC_JTOK_ARR_OPEN)
                        expect_skip_objects_at(doc, &t);
                } while (k != BSC_JTOK_END && k != BSC_JTOK_ERROR);
            }
        }
    }
    /* Not right after a '[': the plain skip, never the element rule. */
    bsc_json_tok_init(&t, S("{\"a\":1,\"b\":[1]}"), 4);
    assert_int_equal(bsc_json_tok_next(&t, &tok), BSC_JTOK_OBJ_OPEN);
    assert_int_equal(bsc_json_tok_skip_objects(&t, &tok, &element), BSC_JTOK_OBJ_CLOSE);
    assert_false(element);
}

/* Quiet reading of <doc> hands out the plain reading's tokens but its ':' and the ',' inside
 * objects, each with the same fields, and ends the same way (error message and offset). */
static void expect_quiet_matches(struct bsc_str doc, unsigned max_depth)
{
    struct bsc_json_tok plain, quiet;
    struct bsc_jtok tp, tq;
    bool in_object[BSC_JSON_MAX_DEPTH + 1] = {false};
    enum bsc_jtok_kind kp, kq;

    bsc_json_tok_init(&plain, doc, max_depth);
    bsc_json_tok_init(&quiet, doc, max_depth);
    bsc_json_tok_quiet(&quiet);
    do {
        do {
            kp = bsc_json_tok_next(&plain, &tp);
            if (kp == BSC_JTOK_OBJ_OPEN || kp == BSC_JTOK_ARR_OPEN)
                in_object[tp.depth + 1] = kp == BSC_JTOK_OBJ_OPEN;
        } while (kp == BSC_JTOK_COLON || (kp == BSC_JTOK_COMMA && in_object[tp.depth]));
        kq = bsc_json_tok_next(&quiet, &tq);
        if (kp != kq || tp.off != tq.off || tp.end != tq.end || tp.depth != tq.depth ||
            tp.raw.len != tq.raw.len || tp.escaped != tq.escaped)
            fail_msg("quiet differs on %.*s at %zu: kind %d/%d", (int)doc.len, doc.p, tp.off, kp,
                     kq);
    } while (kp != BSC_JTOK_END && kp != BSC_JTOK_ERROR);
    assert_ptr_equal(plain.what, quiet.what);
    assert_int_equal(plain.err_off, quiet.err_off);
}

static void test_quiet_drops_only_member_separators(void **state)
{
    static const char *const docs[] = {
        "{\"a\":[1,{\"b\":[true,false,null]},\"x\\u00e9\"],\"c\":{}}",
        " { \"a\" : 1 , \"b\" : [ 2 , 3 ] } ", "[1,2,[3,{\"k\":4}]]",
        "{\"a\":1,}", "{\"a\" 1}", "{\"a\":,}", "{,}", "[1,]", "{\"a\":1 \"b\":2}",
        "{\"a\":1,\"b\"", "{\"a\":", "{\"a\":[1 2]}", "{\"a\":1}}",
    };
    struct bsc_json_tok t;
    struct bsc_jtok tok;
    enum bsc_jtok_kind want[] = {BSC_JTOK_OBJ_OPEN, BSC_JTOK_NAME, BSC_JTOK_NUMBER,
                                 BSC_JTOK_NAME, BSC_JTOK_ARR_OPEN, BSC_JTOK_NUMBER,
                                 BSC_JTOK_COMMA, BSC_JTOK_NUMBER, BSC_JTOK_ARR_CLOSE,
                                 BSC_JTOK_OBJ_CLOSE, BSC_JTOK_END};

    (void)state;
    bsc_json_tok_init(&t, S("{\"a\": 1, \"b\": [2, 3]}"), 4);
    bsc_json_tok_quiet(&t);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        assert_int_equal(bsc_json_tok_next(&t, &tok), want[i]);
    for (size_t d = 0; d < sizeof(docs) / sizeof(docs[0]); d++)
        for (size_t cut = 0; cut <= strlen(docs[d]); cut++) {
            expect_quiet_matches(bsc_str_make(docs[d], cut), 8);
            expect_quiet_matches(bsc_str_make(docs[d], cut), 1);
        }
}

/* bsc_json_tok_member on <doc> against quiet reading: each NAME comes aside with the token
 * after it, field for field, the error included; the tokenizers agree after each call. */
static void expect_member_matches(struct bsc_str doc, unsigned depth)
{
    struct bsc_json_tok q, m;
    struct bsc_jtok tq, tm, name, qname;
    enum bsc_jtok_kind kq, km;

    bsc_json_tok_init(&q, doc, depth);
    bsc_json_tok_quiet(&q);
    bsc_json_tok_init(&m, doc, depth);
    do {
        bool named = (kq = bsc_json_tok_next(&q, &tq)) == BSC_JTOK_NAME;

        if (named) {
            qname = tq;
            kq = bsc_json_tok_next(&q, &tq);
        }
        km = bsc_json_tok_member(&m, &tm, &name);
        assert_int_equal(km, kq);
        assert_int_equal(name.kind == BSC_JTOK_NAME, named);
        if (named) {
            assert_int_equal(name.off, qname.off);
            assert_int_equal(name.end, qname.end);
            assert_ptr_equal(name.raw.p, qname.raw.p);
            assert_int_equal(name.raw.len, qname.raw.len);
            assert_int_equal(name.escaped, qname.escaped);
            assert_int_equal(name.depth, qname.depth);
        }
        assert_int_equal(tm.off, tq.off);
        assert_int_equal(tm.end, tq.end);
        assert_int_equal(tm.depth, tq.depth);
        assert_int_equal(tm.raw.len, tq.raw.len);
        assert_int_equal(m.i, q.i);
        assert_int_equal(m.state, q.state);
        assert_int_equal(m.depth, q.depth);
        assert_ptr_equal(m.what, q.what);
        assert_int_equal(m.err_off, q.err_off);
    } while (kq != BSC_JTOK_END && kq != BSC_JTOK_ERROR);
}

static void test_member_reads_name_and_value(void **state)
{
    static const char *const docs[] = {
        "{\"a\":[1,{\"b\":[true,false,null]},\"x\\u00e9\"],\"c\":{}}",
        " { \"a\" : 1 , \"b\" : [ 2 , 3 ] } ", "[1,2,[3,{\"k\":4}]]",
        "{\"a\":1,}", "{\"a\" 1}", "{\"a\":,}", "{,}", "[1,]", "{\"a\":1 \"b\":2}",
        "{\"a\":1,\"b\"", "{\"a\":", "{\"a\":[1 2]}", "{\"a\":1}}", "{\"\\u0061\":tru}",
        "{\"a\":{\"b\":{\"c\":1}}}",
    };
    struct bsc_json_tok t;
    struct bsc_jtok tok, name;

    (void)state;
    bsc_json_tok_init(&t, S("{\"ab\" : \"x\", \"c\":[1]}"), 4);
    assert_int_equal(bsc_json_tok_member(&t, &tok, &name), BSC_JTOK_OBJ_OPEN);
    assert_int_equal(name.kind, BSC_JTOK_END);
    assert_int_equal(bsc_json_tok_member(&t, &tok, &name), BSC_JTOK_STRING);
    assert_int_equal(name.kind, BSC_JTOK_NAME);
    assert_int_equal(name.off, 1);
    assert_int_equal(name.end, 5);
    assert_int_equal(tok.off, 8);
    assert_int_equal(bsc_json_tok_member(&t, &tok, &name), BSC_JTOK_ARR_OPEN);
    assert_int_equal(name.off, 13);
    bsc_json_tok_init(&t, S("{\"a\" 1}"), 4);
    assert_int_equal(bsc_json_tok_member(&t, &tok, &name), BSC_JTOK_OBJ_OPEN);
    assert_int_equal(bsc_json_tok_member(&t, &tok, &name), BSC_JTOK_ERROR);
    assert_int_equal(name.kind, BSC_JTOK_NAME); /* the name read before the error stays */
    assert_string_equal(t.what, "expected ':'");
    for (size_t d = 0; d < sizeof(docs) / sizeof(docs[0]); d++)
        for (size_t cut = 0; cut <= strlen(docs[d]); cut++) {
            expect_member_matches(bsc_str_make(docs[d], cut), 8);
            expect_member_matches(bsc_str_make(docs[d], cut), 1);
        }
}

static void test_skip_without_open_container_is_next(void **state)
{
    struct bsc_json_tok t;
    struct bsc_jtok tok;

    (void)state;
    bsc_json_tok_init(&t, S(" 12 "), 4);
    assert_int_equal(bsc_json_tok_skip(&t, &tok), BSC_JTOK_NUMBER);
    assert_int_equal(tok.off, 1);
    assert_int_equal(bsc_json_tok_skip(&t, &tok), BSC_JTOK_END);
    bsc_json_tok_init(&t, S("{\"a\":[1,2]} "), 4);
    assert_int_equal(bsc_json_tok_next(&t, &tok), BSC_JTOK_OBJ_OPEN);
    assert_int_equal(bsc_json_tok_skip(&t, &tok), BSC_JTOK_OBJ_CLOSE);
    assert_int_equal(tok.off, 10);
    assert_int_equal(tok.end, 11);
    assert_int_equal(tok.depth, 0);
    assert_int_equal(bsc_json_tok_skip(&t, &tok), BSC_JTOK_END);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_token_kind),
        cmocka_unit_test(test_whitespace_runs),
        cmocka_unit_test(test_whitespace_run_boundaries),
        cmocka_unit_test(test_string_run_boundaries),
        cmocka_unit_test(test_long_string_run_boundaries),
        cmocka_unit_test(test_indentation_runs),
        cmocka_unit_test(test_whitespace_deep_nesting),
        cmocka_unit_test(test_scalar_documents),
        cmocka_unit_test(test_valid_numbers),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_error_is_sticky),
        cmocka_unit_test(test_depth_bound),
        cmocka_unit_test(test_mixed_deep_stack),
        cmocka_unit_test(test_unescape),
        cmocka_unit_test(test_unescape_bound),
        cmocka_unit_test(test_skip_matches_token_reading),
        cmocka_unit_test(test_skip_deep_stack),
        cmocka_unit_test(test_skip_objects),
        cmocka_unit_test(test_skip_without_open_container_is_next),
        cmocka_unit_test(test_quiet_drops_only_member_separators),
        cmocka_unit_test(test_member_reads_name_and_value),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
