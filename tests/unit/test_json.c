/* SPDX-License-Identifier: MIT */
/* test_json.c -- the allocation-free JSON validator (json_check.c) and the span scanner
 * (json_scan.c). The validator: tables of valid documents and of invalid ones with the offset
 * and message of the first offending byte (literals, numbers, strings and escapes, UTF-8 per
 * Unicode table 3-7, containers, whitespace, NUL bytes), every code point encoded in a string,
 * and the depth bound at max-1/max/max+1 over both words of the container stack. The scanner:
 * member lookup (found, absent, repeated, non-object, decoded keys), one-pass lookup, array
 * iteration, kinds and scalar readers. Names compared decoded (json_name.c) and the request
 * check's duplicate rule and bounds (bsc_json_check_request). tests/fuzz/fuzz_json_check.c checks both against json-c. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/compat.h"
#include "core/json_check.h"
#include "core/json_name.h"
#include "core/json_parse.h"
#include "core/json_scan.h"

#define S(lit) {(lit), sizeof(lit) - 1}

static bool check(struct bsc_str doc, unsigned depth, struct bsc_json_error *err)
{
    err->offset = (size_t)-1;
    err->what = NULL;
    return bsc_json_check(doc, depth, err);
}

/* ---- bsc_json_check: valid documents ---------------------------------------------------- */

static void test_check_valid(void **state)
{
    static const struct bsc_str docs[] = {
        /* literals */
        S("true"), S("false"), S("null"),
        /* numbers */
        S("0"), S("-0"), S("1"), S("-1"), S("1234567890"), S("0.5"), S("-0.5"), S("10.25"),
        S("1e5"), S("1E5"), S("1e+5"), S("1e-5"), S("1.5E+10"), S("0e0"), S("-0.0e-0"),
        S("1e999"), S("-1e-999"), S("1e0000000000000000000000001"),
        S("123456789012345678901234567890"), S("-9223372036854775809"),
        /* strings: every escape, \u forms, DEL, lone surrogate escapes (the grammar allows them) */
        S("\"\""), S("\"abc\""), S("\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\""),
        S("\"\\u0000\\u001f\\u00e9\\u00E9\\uffff\\uFFFF\""), S("\"\\uD83D\\uDE00\""),
        S("\"\\ud800\""), S("\"\\udc00x\""), S("\"\x7f\""), S("\"a/b\""), S("\"' {}[],:\""),
        /* UTF-8: the edges of each row of table 3-7 */
        S("\"\xc2\x80\""), S("\"\xdf\xbf\""), S("\"\xe0\xa0\x80\""), S("\"\xe0\xbf\xbf\""),
        S("\"\xe1\x80\x80\""), S("\"\xec\xbf\xbf\""), S("\"\xed\x80\x80\""),
        S("\"\xed\x9f\xbf\""), S("\"\xee\x80\x80\""), S("\"\xef\xbf\xbf\""),
        S("\"\xf0\x90\x80\x80\""), S("\"\xf0\xbf\xbf\xbf\""), S("\"\xf1\x80\x80\x80\""),
        S("\"\xf3\xbf\xbf\xbf\""), S("\"\xf4\x80\x80\x80\""), S("\"\xf4\x8f\xbf\xbf\""),
        S("\"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80\""), S("{\"\xc3\xa9\":1}"),
        /* containers */
        S("[]"), S("{}"), S("[ ]"), S("{ }"), S("[[]]"), S("[{}]"), S("{\"a\":{}}"),
        S("{\"\":0}"), S("[1,\"a\",true,false,null,{},[],-1.5e3]"),
        S("{\"a\":1,\"a\":2}"), /* repeated keys are valid JSON; the scanner refuses them */
        S("{\"a\":[1,{\"b\":[[],{\"c\":null}]}],\"d\":\"}]\\\"[{\"}"),
        /* whitespace around and inside */
        S(" \t\r\n1 \t\r\n"), S("\n[ 1 , 2 ]\n"), S("{ \"a\" : 1 , \"b\" : [ ] }"),
        S("\t{\r\n\"a\"\n:\t\"b\"\r}\t"),
    };

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(docs); i++) {
        struct bsc_json_error err;

        if (!check(docs[i], 64, &err))
            fail_msg("doc %zu (%.*s): refused at %zu: %s", i, BSC_STR_FMT(docs[i]), err.offset,
                     err.what);
        /* A success leaves the error untouched. */
        assert_null(err.what);
    }
}

/* ---- bsc_json_check: invalid documents, with the first offending byte ------------------ */

struct bad {
    struct bsc_str doc;
    size_t offset;
    const char *what;
};

#define BAD(lit, off, msg) {S(lit), (off), (msg)}

#define LIT "invalid literal"
#define NUM "invalid number"
#define UNX "unexpected character"
#define AFTER "unexpected data after the JSON value"
#define CTL "control character in a string"
#define ESC "invalid escape"
#define UESC "invalid \\u escape"
#define UTF "invalid UTF-8"
#define UNTERM "unterminated string"
#define OPEN "unterminated container"
#define NAME "expected a member name"
#define COLON "expected ':'"
#define ASEP "expected ',' or ']'"
#define OSEP "expected ',' or '}'"

static const struct bad bad_docs[] = {
    /* literals */
    BAD("tru", 0, LIT), BAD("nul", 0, LIT), BAD("fals", 0, LIT), BAD("nulL", 0, LIT),
    BAD("True", 0, UNX), BAD("NULL", 0, UNX), BAD("nulll", 4, AFTER), BAD("truefalse", 4, AFTER),
    BAD("NaN", 0, UNX), BAD("Infinity", 0, UNX), BAD("-Infinity", 1, NUM), BAD("[nul]", 1, LIT),
    BAD("undefined", 0, UNX),
    /* numbers */
    BAD("01", 1, AFTER), BAD("00", 1, AFTER), BAD("-01", 2, AFTER), BAD("-", 1, NUM),
    BAD("-a", 1, NUM), BAD("- 1", 1, NUM), BAD(".5", 0, UNX), BAD("-.5", 1, NUM),
    BAD("+1", 0, UNX), BAD("1.", 2, NUM), BAD("1.e5", 2, NUM), BAD("1.x", 2, NUM),
    BAD("1e", 2, NUM), BAD("1e+", 3, NUM), BAD("1E-", 3, NUM), BAD("1e+-5", 3, NUM),
    BAD("1.5.3", 3, AFTER), BAD("1e5e3", 3, AFTER), BAD("0x10", 1, AFTER), BAD("1 2", 2, AFTER),
    BAD("[1.]", 3, NUM), BAD("[01]", 2, ASEP), BAD("{\"a\":-}", 6, NUM), BAD("[1e]", 3, NUM),
    /* strings */
    BAD("\"abc", 4, UNTERM), BAD("\"", 1, UNTERM), BAD("'a'", 0, UNX), BAD("\"\\x\"", 2, ESC),
    BAD("\"\\U0041\"", 2, ESC), BAD("\"\\a\"", 2, ESC), BAD("\"\\'\"", 2, ESC),
    BAD("\"\\", 2, ESC), BAD("\"\\u12\"", 5, UESC), BAD("\"\\uZZZZ\"", 3, UESC),
    BAD("\"\\u00g0\"", 5, UESC), BAD("\"\\u00", 5, UESC), BAD("\"\\ud800\\u12\"", 11, UESC),
    BAD("\"a\x01" "b\"", 2, CTL), BAD("\"\x1f\"", 1, CTL), BAD("\"\t\"", 1, CTL),
    BAD("\"\n\"", 1, CTL), BAD("\"\r\"", 1, CTL), BAD("{\"a\x02\":1}", 3, CTL),
    /* UTF-8: overlongs, surrogates, past U+10FFFF, bytes that never start a character */
    BAD("\"\xc0\x80\"", 1, UTF), BAD("\"\xc0\xaf\"", 1, UTF), BAD("\"\xc1\xbf\"", 1, UTF),
    BAD("\"\xe0\x80\x80\"", 1, UTF), BAD("\"\xe0\x9f\xbf\"", 1, UTF),
    BAD("\"\xed\xa0\x80\"", 1, UTF), BAD("\"\xed\xbf\xbf\"", 1, UTF),
    BAD("\"\xf0\x80\x80\x80\"", 1, UTF), BAD("\"\xf0\x8f\xbf\xbf\"", 1, UTF),
    BAD("\"\xf4\x90\x80\x80\"", 1, UTF), BAD("\"\xf5\x80\x80\x80\"", 1, UTF),
    BAD("\"\xf8\x88\x80\x80\x80\"", 1, UTF), BAD("\"\xfe\"", 1, UTF), BAD("\"\xff\"", 1, UTF),
    /* stray continuation bytes, and sequences cut short inside and at the end */
    BAD("\"\x80\"", 1, UTF), BAD("\"\xbf\"", 1, UTF), BAD("\"a\xc3\xa9\xa9\"", 4, UTF),
    BAD("\"\xc3\"", 1, UTF), BAD("\"\xc3 \"", 1, UTF), BAD("\"\xe2\x82\"", 1, UTF),
    BAD("\"\xe2\x82\x41\"", 1, UTF), BAD("\"\xf0\x9f\x98\x41\"", 1, UTF),
    BAD("\"\xc3", 1, UTF), BAD("\"\xe2\x82", 1, UTF), BAD("\"\xf0\x9f\x98", 1, UTF),
    BAD("[\"ok\",\"\xed\xa0\x80\"]", 7, UTF),
    /* non-ASCII outside strings, a byte order mark */
    BAD("\xc3\xa9", 0, UNX), BAD("\xef\xbb\xbf{}", 0, UNX), BAD("[\xc2\xa0]", 1, UNX),
    /* containers */
    BAD("[", 1, OPEN), BAD("[1", 2, OPEN), BAD("[1,", 3, OPEN), BAD("[[]", 3, OPEN),
    BAD("{", 1, NAME), BAD("{\"a\"", 4, COLON), BAD("{\"a\":", 5, OPEN),
    BAD("{\"a\":1", 6, OPEN), BAD("{\"a\":1,", 7, NAME), BAD("[1,]", 3, UNX),
    BAD("[,1]", 1, UNX), BAD("[,]", 1, UNX), BAD("{\"a\":1,}", 7, NAME), BAD("{,}", 1, NAME),
    BAD("[1 2]", 3, ASEP), BAD("[1;2]", 2, ASEP), BAD("{\"a\":1 \"b\":2}", 7, OSEP),
    BAD("{\"a\" 1}", 5, COLON), BAD("{\"a\"=1}", 4, COLON), BAD("{\"a\"::1}", 5, UNX),
    BAD("{1:2}", 1, NAME), BAD("{a:1}", 1, NAME), BAD("{null:1}", 1, NAME),
    BAD("{'a':1}", 1, NAME), BAD("[1}", 2, ASEP), BAD("{\"a\":1]", 6, OSEP),
    BAD("[\"a\":1]", 4, ASEP), BAD("]", 0, UNX), BAD("}", 0, UNX), BAD(":", 0, UNX),
    BAD(",", 0, UNX),
    /* whitespace that JSON does not have */
    BAD("\f1", 0, UNX), BAD("\v1", 0, UNX), BAD("1\f", 1, AFTER), BAD("1\v", 1, AFTER),
    BAD("[1,\f2]", 3, UNX),
    /* empty documents and trailing garbage */
    BAD("", 0, "empty document"), BAD(" \t\r\n", 4, "empty document"), BAD("{}x", 2, AFTER),
    BAD("1 x", 2, AFTER), BAD("[]]", 2, AFTER), BAD("{}{}", 2, AFTER),
    BAD("\"a\"\"b\"", 3, AFTER), BAD("[] []", 3, AFTER), BAD("{} /* c */", 3, AFTER),
    /* NUL bytes: never whitespace, never allowed raw in a string */
    BAD("\0", 0, UNX), BAD(" \0", 1, UNX), BAD("1\0", 1, AFTER), BAD("[]\0", 2, AFTER),
    BAD("[1,\0]", 3, UNX), BAD("\"a\0b\"", 2, CTL), BAD("{\"a\0\":1}", 3, CTL),
    BAD("{\"a\":1}\0", 7, AFTER), BAD("\0{}", 0, UNX),
};

static void test_check_invalid(void **state)
{
    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(bad_docs); i++) {
        const struct bad *b = &bad_docs[i];
        struct bsc_json_error err;

        if (check(b->doc, 64, &err))
            fail_msg("bad doc %zu (%.*s) accepted", i, BSC_STR_FMT(b->doc));
        if (err.offset != b->offset || !err.what || strcmp(err.what, b->what) != 0)
            fail_msg("bad doc %zu (%.*s): got %zu \"%s\", want %zu \"%s\"", i,
                     BSC_STR_FMT(b->doc), err.offset, err.what ? err.what : "(null)", b->offset,
                     b->what);
        /* Every failure is reported the same without an error struct, and never past the end. */
        assert_false(bsc_json_check(b->doc, 64, NULL));
        assert_true(err.offset <= b->doc.len);
    }
}

/* Every offending byte is found even when the document is cut right after it: the validator
 * never relies on reading past the end (ASan would flag it: the copy is exactly sized). */
static void test_check_exact_buffers(void **state)
{
    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(bad_docs); i++) {
        const struct bad *b = &bad_docs[i];

        for (size_t cut = 0; cut <= b->doc.len; cut++) {
            char *copy = malloc(cut ? cut : 1);
            struct bsc_json_error err;
            bool ok;

            assert_non_null(copy);
            memcpy(copy, b->doc.p, cut);
            ok = check(bsc_str_make(copy, cut), 64, &err);
            assert_true(ok || err.offset <= cut);
            assert_true(ok || err.what != NULL);
            free(copy);
        }
    }
}

static void test_check_null_doc(void **state)
{
    struct bsc_json_error err;

    (void)state;
    assert_false(check(BSC_STR_NULL, 64, &err));
    assert_int_equal(err.offset, 0);
    assert_string_equal(err.what, "empty document");
    /* A NULL pointer with a length is still nothing to read. */
    assert_false(check(bsc_str_make(NULL, 5), 64, &err));
    assert_int_equal(err.offset, 0);
}

/* ---- UTF-8: every code point, encoded by a writer that shares nothing with json_check.c -- */

static size_t encode(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

static void test_check_every_code_point(void **state)
{
    char buf[8];

    (void)state;
    for (uint32_t cp = 0; cp <= 0x10ffff; cp++) {
        size_t len = encode(cp, buf + 1);
        bool surrogate = cp >= 0xd800 && cp <= 0xdfff;
        bool want = cp >= 0x20 && cp != '"' && cp != '\\' && !surrogate;
        struct bsc_json_error err;

        buf[0] = '"';
        buf[len + 1] = '"';
        if (check(bsc_str_make(buf, len + 2), 1, &err) != want)
            fail_msg("U+%04X: got %s", (unsigned)cp, want ? "refused" : "accepted");
        if (surrogate)
            assert_int_equal(err.offset, 1);
    }
}

/* The scanner skips plain runs sixteen bytes at a time (SSE2), then eight (SWAR), then
 * byte by byte: every byte value at every position of a 40-byte string (so each of the
 * three loops meets it) is accepted exactly when it is printable ASCII other than '"' and
 * '\\', and a refused control or non-ASCII byte is reported at its own offset. A two-byte
 * UTF-8 character is accepted everywhere. */
#define RUN_LEN 40
static void test_check_plain_runs(void **state)
{
    char buf[RUN_LEN + 2];

    (void)state;
    for (unsigned b = 0; b < 256; b++) {
        for (size_t k = 0; k < RUN_LEN; k++) {
            bool want = b >= 0x20 && b < 0x80 && b != '"' && b != '\\';
            struct bsc_json_error err;

            memset(buf, 'a', sizeof(buf));
            buf[0] = '"';
            buf[RUN_LEN + 1] = '"';
            buf[1 + k] = (char)b;
            if (check(bsc_str_make(buf, sizeof(buf)), 1, &err) != want)
                fail_msg("byte 0x%02x at %zu: got %s", b, k, want ? "refused" : "accepted");
            if (!want && b != '"' && b != '\\')
                assert_int_equal(err.offset, 1 + k);
        }
    }
    for (size_t k = 0; k + 1 < RUN_LEN; k++) {
        struct bsc_json_error err;

        memset(buf, 'a', sizeof(buf));
        buf[0] = '"';
        buf[RUN_LEN + 1] = '"';
        memcpy(buf + 1 + k, "\xc3\xa9", 2);
        assert_true(check(bsc_str_make(buf, sizeof(buf)), 1, &err));
    }
}

/* Whitespace is skipped eight spaces at a time after a first whitespace byte: runs of
 * every length up to 20, of spaces or ending in another whitespace byte, between tokens;
 * a stray byte inside a run is reported at its own offset. */
static void test_check_whitespace_runs(void **state)
{
    static const char ws_tail[] = {' ', '\t', '\n', '\r'};
    char doc[128];

    (void)state;
    for (size_t run = 0; run <= 20; run++) {
        for (size_t t = 0; t < sizeof(ws_tail); t++) {
            struct bsc_json_error err;
            size_t n = 0;

            doc[n++] = '{';
            memset(doc + n, ' ', run);
            n += run;
            if (run)
                doc[n - 1] = ws_tail[t];
            memcpy(doc + n, "\"k\":", 4);
            n += 4;
            memset(doc + n, ' ', run);
            n += run;
            doc[n++] = '1';
            doc[n++] = '}';
            assert_true(check(bsc_str_make(doc, n), 2, &err));
            if (run >= 2) {
                doc[1 + run / 2] = 'x'; /* inside the first run */
                assert_false(check(bsc_str_make(doc, n), 2, &err));
                assert_int_equal(err.offset, 1 + run / 2);
            }
        }
    }
}

/* Every pair (lead, next) in a string, against the well-formed ranges of table 3-7. */
static void test_check_every_lead_and_second_byte(void **state)
{
    (void)state;
    for (unsigned lead = 0x80; lead <= 0xff; lead++) {
        for (unsigned next = 0; next <= 0xff; next++) {
            /* Pad with continuation bytes so only the first two decide. */
            char doc[] = {'"', (char)lead, (char)next, (char)0x80, (char)0x80, '"'};
            size_t need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
            unsigned lo = lead == 0xe0 ? 0xa0 : lead == 0xf0 ? 0x90 : 0x80;
            unsigned hi = lead == 0xed ? 0x9f : lead == 0xf4 ? 0x8f : 0xbf;
            bool lead_ok = lead >= 0xc2 && lead <= 0xf4;
            bool want = lead_ok && next >= lo && next <= hi;
            struct bsc_json_error err;
            /* Keep exactly the sequence and the closing quote. */
            size_t len = want ? need + 2 : sizeof(doc);

            if (want)
                doc[need + 1] = '"';
            if (check(bsc_str_make(doc, len), 1, &err) != want)
                fail_msg("%02X %02X: got %s", lead, next, want ? "refused" : "accepted");
            if (!want) {
                assert_int_equal(err.offset, 1);
                assert_string_equal(err.what, UTF);
            }
        }
    }
}

/* ---- depth ------------------------------------------------------------------------------- */

/* Writes <n> nested containers around <inner>: arrays, objects ({"k": each), or alternating
 * (the outermost an array). An empty <inner> stays empty only inside an array (a member needs
 * a value, and so does the document): elsewhere it becomes null. */
enum nest_kind { NEST_ARRAY, NEST_OBJECT, NEST_MIXED };

static struct bsc_str nest(char *buf, size_t cap, unsigned n, enum nest_kind kind,
                           const char *inner)
{
    size_t len = 0;

    if (!inner[0] && (n == 0 || kind == NEST_OBJECT || (kind == NEST_MIXED && (n - 1) % 2)))
        inner = "null";

    for (unsigned i = 0; i < n; i++) {
        bool obj = kind == NEST_OBJECT || (kind == NEST_MIXED && i % 2);
        const char *open = obj ? "{\"k\":" : "[";

        assert_true(len + 5 < cap);
        memcpy(buf + len, open, strlen(open));
        len += strlen(open);
    }
    assert_true(len + strlen(inner) < cap);
    memcpy(buf + len, inner, strlen(inner));
    len += strlen(inner);
    for (unsigned i = n; i-- > 0;) {
        bool obj = kind == NEST_OBJECT || (kind == NEST_MIXED && i % 2);

        assert_true(len + 1 < cap);
        buf[len++] = obj ? '}' : ']';
    }
    return bsc_str_make(buf, len);
}

/* The offset of the (<n>+1)th opener. */
static size_t opener_offset(unsigned n, enum nest_kind kind)
{
    size_t off = 0;

    for (unsigned i = 0; i < n; i++)
        off += (kind == NEST_OBJECT || (kind == NEST_MIXED && i % 2)) ? 5 : 1;
    return off;
}

static void test_check_depth(void **state)
{
    static const unsigned maxes[] = {1, 2, 63, 64, 65, 128, 255, 256};
    static const enum nest_kind kinds[] = {NEST_ARRAY, NEST_OBJECT, NEST_MIXED};
    static const char *const inners[] = {"", "1", "\"[{\""};
    static char buf[4096];

    (void)state;
    for (size_t m = 0; m < BSC_ARRAY_LEN(maxes); m++) {
        for (size_t k = 0; k < BSC_ARRAY_LEN(kinds); k++) {
            for (size_t in = 0; in < BSC_ARRAY_LEN(inners); in++) {
                unsigned max = maxes[m];
                struct bsc_json_error err;
                struct bsc_str doc;
                const char *inner = inners[in];

                doc = nest(buf, sizeof(buf), max - 1, kinds[k], inner);
                if (!check(doc, max, &err))
                    fail_msg("max %u kind %zu inner %zu: max-1 refused at %zu: %s", max, k, in,
                             err.offset, err.what);
                doc = nest(buf, sizeof(buf), max, kinds[k], inner);
                if (!check(doc, max, &err))
                    fail_msg("max %u kind %zu inner %zu: max refused at %zu: %s", max, k, in,
                             err.offset, err.what);
                doc = nest(buf, sizeof(buf), max + 1, kinds[k], inner);
                if (check(doc, max, &err))
                    fail_msg("max %u kind %zu inner %zu: max+1 accepted", max, k, in);
                assert_string_equal(err.what, "nested too deep");
                assert_int_equal(err.offset, opener_offset(max, kinds[k]));
            }
        }
    }
}

static void test_check_depth_zero_and_clamp(void **state)
{
    static char buf[4096];
    struct bsc_json_error err;
    struct bsc_str doc;

    (void)state;
    /* Depth 0: scalars only. */
    assert_true(check(BSC_STR("\"a\""), 0, &err));
    assert_false(check(BSC_STR("[]"), 0, &err));
    assert_int_equal(err.offset, 0);
    assert_string_equal(err.what, "nested too deep");
    /* Past BSC_JSON_MAX_DEPTH, the bound is clamped: 256 still passes, 257 does not. */
    doc = nest(buf, sizeof(buf), BSC_JSON_MAX_DEPTH, NEST_MIXED, "0");
    assert_true(check(doc, BSC_JSON_MAX_DEPTH + 100, &err));
    doc = nest(buf, sizeof(buf), BSC_JSON_MAX_DEPTH + 1, NEST_MIXED, "0");
    assert_false(check(doc, 100000, &err));
    assert_string_equal(err.what, "nested too deep");
    assert_int_equal(err.offset, opener_offset(BSC_JSON_MAX_DEPTH, NEST_MIXED));
    /* Closing depth brings the budget back: siblings may each go to the bound. */
    assert_true(check(BSC_STR("[[[]],[[]],[[]]]"), 3, &err));
    assert_false(check(BSC_STR("[[[]],[[[]]]]"), 3, &err));
    assert_int_equal(err.offset, 8);
}

/* The stack remembers object or array at every level, across its 64-bit words: the wrong
 * closer is caught at any depth. */
static void test_check_stack_kinds(void **state)
{
    static char buf[4096];

    (void)state;
    for (unsigned n = 1; n <= BSC_JSON_MAX_DEPTH; n += (n < 70 ? 1 : 31)) {
        struct bsc_str doc = nest(buf, sizeof(buf), n, NEST_MIXED, "[]");
        size_t close_at = doc.len - n; /* the innermost of our closers */
        struct bsc_json_error err;

        if (n == BSC_JSON_MAX_DEPTH)
            break; /* "[]" inside would be one too deep */
        assert_true(check(doc, BSC_JSON_MAX_DEPTH, &err));
        for (size_t at = close_at; at < doc.len; at++) {
            bool was_obj = buf[at] == '}';

            buf[at] = was_obj ? ']' : '}';
            if (check(doc, BSC_JSON_MAX_DEPTH, &err))
                fail_msg("depth %u: swapped closer at %zu accepted", n, at);
            assert_int_equal(err.offset, at);
            assert_string_equal(err.what, was_obj ? OSEP : ASEP);
            buf[at] = was_obj ? '}' : ']';
        }
    }
}

/* ---- bsc_json_member / bsc_json_member_span / bsc_json_members --------------------------- */

#define CHAT                                                                                    \
    "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"a}]\\\"[{,\"}],"      \
    "\"n\":2,\"s\":\"x\\\\\",\"e\":{},\"t\":true,\"f\":false,\"z\":null,\"neg\":-1.5e3,"      \
    "\"deep\":{\"model\":\"inner\",\"q\":[[\"]\"]]}}"

static void expect_member(struct bsc_str doc, const char *key, const char *want)
{
    struct bsc_str v = BSC_STR("untouched");
    int r = bsc_json_member(doc, bsc_str_cstr(key), &v);

    if (r != 1 || !bsc_str_eq(v, bsc_str_cstr(want)))
        fail_msg("member %s: got %d \"%.*s\", want \"%s\"", key, r, BSC_STR_FMT(v), want);
    /* The span points into the document. */
    assert_true(v.p >= doc.p && v.p + v.len <= doc.p + doc.len);
    v = BSC_STR("untouched");
    assert_true(bsc_json_member_span(doc, bsc_str_cstr(key), &v));
    assert_true(bsc_str_eq(v, bsc_str_cstr(want)));
}

static void expect_no_member(struct bsc_str doc, const char *key, int want)
{
    struct bsc_str v = BSC_STR("untouched");

    assert_int_equal(bsc_json_member(doc, bsc_str_cstr(key), &v), want);
    assert_false(bsc_json_member_span(doc, bsc_str_cstr(key), &v));
    /* Not found: *value is left alone (except that a repeat may have set it first). */
    if (want == 0)
        assert_true(bsc_str_eq(v, BSC_STR("untouched")));
}

static void test_member_found(void **state)
{
    struct bsc_str doc = BSC_STR(CHAT);
    struct bsc_json_error err;

    (void)state;
    assert_true(check(doc, 64, &err));
    expect_member(doc, "model", "\"gpt-4o\"");
    expect_member(doc, "messages",
                  "[{\"role\":\"user\",\"content\":\"a}]\\\"[{,\"}]");
    expect_member(doc, "n", "2");
    expect_member(doc, "s", "\"x\\\\\"");
    expect_member(doc, "e", "{}");
    expect_member(doc, "t", "true");
    expect_member(doc, "f", "false");
    expect_member(doc, "z", "null");
    expect_member(doc, "neg", "-1.5e3");
    expect_member(doc, "deep", "{\"model\":\"inner\",\"q\":[[\"]\"]]}");
}

static void test_member_absent(void **state)
{
    struct bsc_str doc = BSC_STR(CHAT);

    (void)state;
    expect_no_member(doc, "x", 0);
    expect_no_member(doc, "mode", 0);    /* a prefix of a key */
    expect_no_member(doc, "models", 0);  /* a key is a prefix of it */
    expect_no_member(doc, "role", 0);    /* nested, not top-level */
    expect_no_member(doc, "q", 0);
    expect_no_member(doc, "gpt-4o", 0);  /* a value, not a key */
    expect_no_member(doc, "", 0);
    expect_no_member(BSC_STR("{}"), "a", 0);
    {
        /* An empty key may come as {NULL, 0}: it matches the empty raw key. */
        struct bsc_str v = BSC_STR_NULL, vals[1];
        const struct bsc_str null_key = BSC_STR_NULL;

        assert_int_equal(bsc_json_member(BSC_STR("{\"a\":0,\"\":1}"), null_key, &v), 1);
        assert_true(bsc_str_eq(v, BSC_STR("1")));
        assert_int_equal(bsc_json_members(BSC_STR("{\"\":2}"), &null_key, 1, vals), 1);
        assert_true(bsc_str_eq(vals[0], BSC_STR("2")));
    }
    expect_no_member(BSC_STR(" { \t} "), "a", 0);
    expect_member(BSC_STR("{\"\":1}"), "", "1");
}

/* String values and names of every length around the scanner's sixteen-byte steps, with
 * backslash runs of every parity before quotes and at their ends: each member's span is
 * exactly the value as written, and an escaped name is compared decoded. */
static void test_member_string_spans(void **state)
{
    static const char *const bodies[] = {
        "", "\\\\", "\\\"", "\\\\\\\"", "\\\\\\\\", "a\\\"b\\\\", "\\u0022\\\"",
        "}]\\\",{[", "\\/\\b\\f\\n\\r\\t",
    };

    (void)state;
    for (size_t b = 0; b < BSC_ARRAY_LEN(bodies); b++) {
        for (size_t pad = 0; pad < 40; pad++) {
            char doc[256], want[128], name[64];
            struct bsc_json_error err;
            struct bsc_str d;
            int len, wlen;

            wlen = snprintf(want, sizeof(want), "\"%.*s%s\"", (int)pad,
                            "0123456789abcdef0123456789abcdef01234567", bodies[b]);
            len = snprintf(doc, sizeof(doc),
                           "{\"p%.*s\":%s,\"k\\u0065y\":%s , \"last\" :\"%s\"}", (int)pad,
                           "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", want, want, bodies[b]);
            assert_true(len > 0 && (size_t)len < sizeof(doc) && wlen > 0);
            d = bsc_str_make(doc, (size_t)len);
            assert_true(check(d, 8, &err));
            expect_member(d, "key", want);
            snprintf(name, sizeof(name), "p%.*s", (int)pad,
                     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
            expect_member(d, name, want);
            expect_no_member(d, "k", 0);
        }
    }
}

/* Scalars ended by each byte that may end them (whitespace of each kind, ',', '}'), and
 * containers whose strings hold brackets and quotes: each span exactly the value. */
static void test_member_value_ends(void **state)
{
    static const char *const values[] = {"-12.5e+3", "0", "true", "false", "null",
                                         "{\"a\":[1,{\"b\":\"]}\\\"{[\"}],\"c\":{}}",
                                         "[[],{},\"[\",\"}\"]"};
    static const char *const ends[] = {"", " ", "\t", "\n", "\r\n "};

    (void)state;
    for (size_t v = 0; v < BSC_ARRAY_LEN(values); v++) {
        for (size_t e = 0; e < BSC_ARRAY_LEN(ends); e++) {
            char doc[160];
            struct bsc_json_error err;
            struct bsc_str d;
            int len = snprintf(doc, sizeof(doc), "{\"x\":%s%s,\"y\" :%s%s}", values[v],
                               ends[e], values[v], ends[e]);

            assert_true(len > 0 && (size_t)len < sizeof(doc));
            d = bsc_str_make(doc, (size_t)len);
            assert_true(check(d, 8, &err));
            expect_member(d, "x", values[v]);
            expect_member(d, "y", values[v]);
        }
    }
}

static void test_member_repeated(void **state)
{
    struct bsc_str doc = BSC_STR("{\"a\":1,\"b\":[\"a\"],\"a\":{\"a\":3}}");

    (void)state;
    expect_no_member(doc, "a", -1);
    expect_member(doc, "b", "[\"a\"]");
    /* Repeated inside a nested object only: the top level has it once. */
    expect_member(BSC_STR("{\"o\":{\"a\":1,\"a\":2},\"a\":0}"), "a", "0");
}

static void test_member_not_object(void **state)
{
    static const struct bsc_str docs[] = {
        S("[{\"a\":1}]"), S("\"a\""), S("1"), S("true"), S("null"), S(""), S("   "),
    };

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(docs); i++)
        expect_no_member(docs[i], "a", -1);
    expect_no_member(BSC_STR_NULL, "a", -1);
}

static void test_member_decoded_keys_and_whitespace(void **state)
{
    struct bsc_str doc = BSC_STR(" {\n \"a\\\"b\" :\t[ 1 , \"}\" ] ,\r\n \"\\u0061\" : \"x\" ,"
                                 " \"c\\\\\" : { \"d\" : [ ] } } \n");
    struct bsc_json_error err;

    (void)state;
    assert_true(check(doc, 64, &err));
    /* Keys compare decoded, as every parser reads them: "\u0061" is "a". */
    expect_member(doc, "a\"b", "[ 1 , \"}\" ]");
    expect_member(doc, "a", "\"x\"");
    expect_member(doc, "c\\", "{ \"d\" : [ ] }");
    expect_no_member(doc, "\\u0061", 0);
    expect_no_member(doc, "a\\\"b", 0);
    expect_no_member(doc, "c\\\\", 0);
}

/* The checks' wanted keys by length: names as long as a key but other, keys and names past
 * 63 bytes (one length bit for all of them), the empty key, an escaped name that decodes to
 * a key of another raw length. */
static void test_check_members_key_lengths(void **state)
{
    static const char long_key[] = "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
                                   "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk";
    const struct bsc_str keys[] = {BSC_STR("a"), BSC_STR(long_key), BSC_STR("bb"), BSC_STR("")};
    struct bsc_str vals[BSC_ARRAY_LEN(keys)];
    char doc[512];
    int len;

    (void)state;
    len = snprintf(doc, sizeof(doc),
                   "{\"b\":1,\"%.64s\":2,\"%s\":3,\"b\\u0062\":4,\"\":5,\"c\":6}",
                   long_key, long_key);
    assert_true(len > 0 && (size_t)len < sizeof(doc));
    assert_int_equal(bsc_json_check_members(bsc_str_make(doc, (size_t)len), 8, keys,
                                            BSC_ARRAY_LEN(keys), vals, NULL),
                     1);
    assert_null(vals[0].p);
    assert_true(bsc_str_eq(vals[1], BSC_STR("3")));
    assert_true(bsc_str_eq(vals[2], BSC_STR("4")));
    assert_true(bsc_str_eq(vals[3], BSC_STR("5")));
    assert_int_equal(bsc_json_check_request(bsc_str_make(doc, (size_t)len), 8, keys,
                                            BSC_ARRAY_LEN(keys), 0, vals, NULL),
                     BSC_JSONV_OK);
    assert_null(vals[0].p);
    assert_true(bsc_str_eq(vals[1], BSC_STR("3")));
    assert_true(bsc_str_eq(vals[2], BSC_STR("4")));
    assert_true(bsc_str_eq(vals[3], BSC_STR("5")));
}

/* Wanted keys that share a length (compared in key order, the last listed of equal keys
 * taking the value), lengths 63 and past it (one length bit), and more keys than the index
 * by length holds (65: every key compared). Each key's value is found whatever its place
 * among the keys of its length. */
static void test_check_members_same_length_keys(void **state)
{
    static const char l63[] = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
    const struct bsc_str keys[] = {BSC_STR("ab"), BSC_STR("cd"),  BSC_STR("ef"),
                                   BSC_STR("cd"), BSC_STR("xyz"), bsc_str_make(l63, 63),
                                   BSC_STR("gh"), bsc_str_make(l63, 62)};
    const char *doc = "{\"gh\":1,\"xyz\":2,\"cd\":3,\"ef\":4,\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                      "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\":5,\"ab\":6,\"xxxxxxxxxxxxxxxxxxxx"
                      "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\":7}";
    const char *want[] = {"6", NULL, "4", "3", "2", "5", "1", "7"};
    struct bsc_str vals[BSC_ARRAY_LEN(keys)], many[65], many_vals[65];
    char names[65][4], big[65 * 12 + 2];
    size_t used = 0;

    (void)state;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0)
            assert_int_equal(bsc_json_check_members(bsc_str_cstr(doc), 8, keys,
                                                    BSC_ARRAY_LEN(keys), vals, NULL), 1);
        else
            assert_int_equal(bsc_json_check_request(bsc_str_cstr(doc), 8, keys,
                                                    BSC_ARRAY_LEN(keys), 0, vals, NULL),
                             BSC_JSONV_OK);
        for (size_t k = 0; k < BSC_ARRAY_LEN(keys); k++) {
            if (!want[k])
                assert_null(vals[k].p);
            else
                assert_true(bsc_str_eq(vals[k], bsc_str_cstr(want[k])));
        }
    }
    big[used++] = '{';
    for (int k = 0; k < 65; k++) {
        snprintf(names[k], sizeof(names[k]), "k%02d", k);
        many[k] = bsc_str_make(names[k], 3);
        used += (size_t)snprintf(big + used, sizeof(big) - used, "%s\"k%02d\":%d",
                                 k ? "," : "", 64 - k, 64 - k);
    }
    big[used++] = '}';
    assert_int_equal(bsc_json_check_request(bsc_str_make(big, used), 8, many, 65, 0, many_vals,
                                            NULL),
                     BSC_JSONV_OK);
    for (int k = 0; k < 65; k++) {
        char num[12];

        snprintf(num, sizeof(num), "%d", k);
        assert_true(bsc_str_eq(many_vals[k], bsc_str_cstr(num)));
    }
}

static void test_members_one_pass(void **state)
{
    struct bsc_str doc = BSC_STR(CHAT);
    const struct bsc_str keys[] = {BSC_STR("stream"), BSC_STR("model"), BSC_STR("n"),
                                   BSC_STR("deep"), BSC_STR("model")};
    struct bsc_str vals[BSC_ARRAY_LEN(keys)];

    (void)state;
    assert_int_equal(bsc_json_members(doc, keys, BSC_ARRAY_LEN(keys), vals), 1);
    assert_null(vals[0].p);
    assert_int_equal(vals[0].len, 0);
    assert_true(bsc_str_eq(vals[1], BSC_STR("\"gpt-4o\"")));
    assert_true(bsc_str_eq(vals[2], BSC_STR("2")));
    assert_true(bsc_str_eq(vals[3], BSC_STR("{\"model\":\"inner\",\"q\":[[\"]\"]]}")));
    assert_true(bsc_str_eq(vals[4], vals[1])); /* the same key asked twice */
    /* A repeated wanted key fails the whole lookup; a repeated unwanted one does not. */
    doc = BSC_STR("{\"a\":1,\"b\":2,\"a\":3}");
    assert_int_equal(bsc_json_members(doc, keys + 2, 1, vals), 1);
    assert_null(vals[0].p);
    assert_int_equal(bsc_json_members(doc, (const struct bsc_str[]){BSC_STR("b")}, 1, vals), 1);
    assert_true(bsc_str_eq(vals[0], BSC_STR("2")));
    assert_int_equal(bsc_json_members(doc, (const struct bsc_str[]){BSC_STR("a")}, 1, vals), -1);
    /* Not an object: -1, every value cleared. */
    vals[0] = BSC_STR("untouched");
    assert_int_equal(bsc_json_members(BSC_STR("[1]"), keys, 1, vals), -1);
    assert_null(vals[0].p);
    assert_int_equal(bsc_json_members(BSC_STR(" { } "), keys, 2, vals), 1);
    assert_null(vals[0].p);
    assert_null(vals[1].p);
}

/* The member whole, to splice over: from its name's opening quote to its value's end. */
static void test_member_entry(void **state)
{
    struct bsc_str doc = BSC_STR(" {\n \"m\\u006fdel\" :\t\"x\" , \"a\":[1,\"}\"] ,\"z\" : {} } ");
    struct bsc_str e = BSC_STR("untouched");

    (void)state;
    assert_int_equal(bsc_json_member_entry(doc, BSC_STR("model"), &e), 1);
    assert_true(bsc_str_eq(e, BSC_STR("\"m\\u006fdel\" :\t\"x\"")));
    assert_true(e.p > doc.p && e.p + e.len < doc.p + doc.len);
    assert_int_equal(bsc_json_member_entry(doc, BSC_STR("a"), &e), 1);
    assert_true(bsc_str_eq(e, BSC_STR("\"a\":[1,\"}\"]")));
    assert_int_equal(bsc_json_member_entry(doc, BSC_STR("z"), &e), 1);
    assert_true(bsc_str_eq(e, BSC_STR("\"z\" : {}")));
    e = BSC_STR("untouched");
    assert_int_equal(bsc_json_member_entry(doc, BSC_STR("nope"), &e), 0);
    assert_true(bsc_str_eq(e, BSC_STR("untouched")));
    assert_int_equal(bsc_json_member_entry(BSC_STR("{\"a\":1,\"a\":2}"), BSC_STR("a"), &e), -1);
    assert_int_equal(bsc_json_member_entry(BSC_STR("[1]"), BSC_STR("a"), &e), -1);
}

/* ---- bsc_json_array_next ------------------------------------------------------------------ */

static size_t collect(struct bsc_str arr, struct bsc_str *out, size_t cap)
{
    size_t pos = 0, n = 0;
    struct bsc_str e;

    while (bsc_json_array_next(arr, &pos, &e)) {
        assert_true(n < cap);
        assert_true(e.p >= arr.p && e.p + e.len <= arr.p + arr.len);
        out[n++] = e;
    }
    /* Once done, it stays done. */
    assert_false(bsc_json_array_next(arr, &pos, &e));
    return n;
}

static void test_array_mixed(void **state)
{
    static const char *const want[] = {
        "1",     "\"a,]\"", "[2, [3]]", "{\"k\": \"]\", \"l\": [\"[\"]}", "true", "false",
        "null",  "-1.5e3",  "[]",       "{}",                             "\"\\\"]\"", "\"\\\\\"",
        "[[]]",
    };
    struct bsc_str arr = BSC_STR(" [1, \"a,]\" ,[2, [3]],{\"k\": \"]\", \"l\": [\"[\"]},true,"
                                 "\tfalse ,\nnull,-1.5e3,[],{},\"\\\"]\",\"\\\\\",[[]] ] ");
    struct bsc_str got[32];
    struct bsc_json_error err;
    size_t n;

    (void)state;
    assert_true(check(arr, 64, &err));
    n = collect(arr, got, BSC_ARRAY_LEN(got));
    assert_int_equal(n, BSC_ARRAY_LEN(want));
    for (size_t i = 0; i < n; i++)
        if (!bsc_str_eq(got[i], bsc_str_cstr(want[i])))
            fail_msg("element %zu: got \"%.*s\", want \"%s\"", i, BSC_STR_FMT(got[i]), want[i]);
    /* Nested arrays iterate the same way. */
    n = collect(got[2], got, BSC_ARRAY_LEN(got));
    assert_int_equal(n, 2);
    assert_true(bsc_str_eq(got[0], BSC_STR("2")));
    assert_true(bsc_str_eq(got[1], BSC_STR("[3]")));
    n = collect(got[1], got, BSC_ARRAY_LEN(got));
    assert_int_equal(n, 1);
    assert_true(bsc_str_eq(got[0], BSC_STR("3")));
}

/* Non-emptiness is read from the first bytes only: a first element that is cut off (not
 * valid JSON) still counts, since nothing past its first byte is looked at. */
static void test_array_nonempty(void **state)
{
    (void)state;
    assert_true(bsc_json_array_nonempty(BSC_STR("[1]")));
    assert_true(bsc_json_array_nonempty(BSC_STR(" [ \n {\"a\":1}, 2 ] ")));
    assert_true(bsc_json_array_nonempty(BSC_STR("[\"unterminated")));
    assert_false(bsc_json_array_nonempty(BSC_STR("[]")));
    assert_false(bsc_json_array_nonempty(BSC_STR(" [ \t\r\n ] ")));
    assert_false(bsc_json_array_nonempty(BSC_STR("[")));
    assert_false(bsc_json_array_nonempty(BSC_STR("{\"a\":[1]}")));
    assert_false(bsc_json_array_nonempty(BSC_STR("")));
    assert_false(bsc_json_array_nonempty(BSC_STR_NULL));
}

static void test_array_empty_and_not_array(void **state)
{
    static const struct bsc_str empty[] = {
        S("[]"), S("[ ]"), S(" [\n\t] "), S("{}"), S("{\"a\":[1]}"), S("\"[1]\""), S("1"),
        S(""), S("  "),
    };
    struct bsc_str got[4];

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(empty); i++)
        if (collect(empty[i], got, BSC_ARRAY_LEN(got)) != 0)
            fail_msg("doc %zu (%.*s) has elements", i, BSC_STR_FMT(empty[i]));
    assert_int_equal(collect(BSC_STR_NULL, got, BSC_ARRAY_LEN(got)), 0);
    assert_int_equal(collect(BSC_STR("[[],[[]],{}]"), got, BSC_ARRAY_LEN(got)), 3);
    assert_true(bsc_str_eq(got[1], BSC_STR("[[]]")));
    assert_int_equal(collect(BSC_STR("[0]"), got, BSC_ARRAY_LEN(got)), 1);
    assert_true(bsc_str_eq(got[0], BSC_STR("0")));
}

/* ---- kinds and scalars -------------------------------------------------------------------- */

static void test_kind_of(void **state)
{
    static const struct {
        struct bsc_str v;
        enum bsc_json_kind want;
    } cases[] = {
        {S("null"), BSC_JSON_NULL},     {S("true"), BSC_JSON_BOOL},
        {S("false"), BSC_JSON_BOOL},    {S("0"), BSC_JSON_NUMBER},
        {S("-1"), BSC_JSON_NUMBER},     {S("9e9"), BSC_JSON_NUMBER},
        {S("\"\""), BSC_JSON_STRING},   {S("\"x\""), BSC_JSON_STRING},
        {S("[]"), BSC_JSON_ARRAY},      {S("[1,2]"), BSC_JSON_ARRAY},
        {S("{}"), BSC_JSON_OBJECT},     {S("{\"a\":1}"), BSC_JSON_OBJECT},
        {S(""), BSC_JSON_INVALID},      {S(" 1"), BSC_JSON_INVALID},
        {S("x"), BSC_JSON_INVALID},     {S("+1"), BSC_JSON_INVALID},
        {S(".5"), BSC_JSON_INVALID},    {S("]"), BSC_JSON_INVALID},
    };

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(cases); i++)
        if (bsc_json_kind_of(cases[i].v) != cases[i].want)
            fail_msg("kind of \"%.*s\": got %d want %d", BSC_STR_FMT(cases[i].v),
                     bsc_json_kind_of(cases[i].v), cases[i].want);
    assert_int_equal(bsc_json_kind_of(BSC_STR_NULL), BSC_JSON_INVALID);
}

static void test_is_true(void **state)
{
    (void)state;
    assert_true(bsc_json_is_true(BSC_STR("true")));
    assert_false(bsc_json_is_true(BSC_STR("false")));
    assert_false(bsc_json_is_true(BSC_STR("\"true\"")));
    assert_false(bsc_json_is_true(BSC_STR("true ")));
    assert_false(bsc_json_is_true(BSC_STR("tru")));
    assert_false(bsc_json_is_true(BSC_STR("1")));
    assert_false(bsc_json_is_true(BSC_STR_NULL));
}

static void test_string_raw(void **state)
{
    struct bsc_str v = BSC_STR("\"a\\\"b\\u00e9\"");
    struct bsc_str raw = bsc_json_string_raw(v);

    (void)state;
    /* Escapes stay as written; the span points into the value. */
    assert_true(bsc_str_eq(raw, BSC_STR("a\\\"b\\u00e9")));
    assert_ptr_equal(raw.p, v.p + 1);
    raw = bsc_json_string_raw(BSC_STR("\"\""));
    assert_non_null(raw.p);
    assert_int_equal(raw.len, 0);
    assert_null(bsc_json_string_raw(BSC_STR("1")).p);
    assert_null(bsc_json_string_raw(BSC_STR("[\"a\"]")).p);
    assert_null(bsc_json_string_raw(BSC_STR("\"")).p);
    assert_null(bsc_json_string_raw(BSC_STR("")).p);
    assert_null(bsc_json_string_raw(BSC_STR_NULL).p);
}

static void test_u64(void **state)
{
    static const struct bsc_str refused[] = {
        S(""), S("-1"), S("-0"), S("+1"), S("1.0"), S("1e3"), S("1E3"), S("0.5"),
        S("18446744073709551616"), S("99999999999999999999"), S("\"1\""), S("true"), S(" 1"),
        S("1 "),
    };
    unsigned long long u = 7;

    (void)state;
    assert_true(bsc_json_u64(BSC_STR("0"), &u));
    assert_int_equal(u, 0);
    assert_true(bsc_json_u64(BSC_STR("256"), &u));
    assert_int_equal(u, 256);
    assert_true(bsc_json_u64(BSC_STR("18446744073709551615"), &u));
    assert_true(u == ULLONG_MAX);
    assert_true(bsc_json_u64(BSC_STR("18446744073709551610"), &u));
    assert_true(u == ULLONG_MAX - 5);
    for (size_t i = 0; i < BSC_ARRAY_LEN(refused); i++) {
        u = 7;
        if (bsc_json_u64(refused[i], &u))
            fail_msg("u64 accepts \"%.*s\"", BSC_STR_FMT(refused[i]));
        assert_int_equal(u, 7); /* untouched on failure */
    }
}

/* ---- validate, then read: the fast path's use ------------------------------------------- */

static void test_validate_then_read(void **state)
{
    struct bsc_str body = BSC_STR("{\"model\":\"gpt-4o-mini\",\"stream\":true,\"max_tokens\":512,"
                                  "\"messages\":[{\"role\":\"system\",\"content\":\"be {brief}\"},"
                                  "{\"role\":\"user\",\"content\":[{\"type\":\"text\","
                                  "\"text\":\"hi\"}]}]}");
    struct bsc_str v, msgs, m, role;
    unsigned long long max_tokens = 0;
    struct bsc_json_error err;
    size_t pos = 0, count = 0;

    (void)state;
    assert_true(check(body, 64, &err));
    assert_int_equal(bsc_json_member(body, BSC_STR("model"), &v), 1);
    assert_int_equal(bsc_json_kind_of(v), BSC_JSON_STRING);
    assert_true(bsc_str_eq(bsc_json_string_raw(v), BSC_STR("gpt-4o-mini")));
    assert_int_equal(bsc_json_member(body, BSC_STR("stream"), &v), 1);
    assert_true(bsc_json_is_true(v));
    assert_int_equal(bsc_json_member(body, BSC_STR("max_tokens"), &v), 1);
    assert_true(bsc_json_u64(v, &max_tokens));
    assert_int_equal(max_tokens, 512);
    assert_int_equal(bsc_json_member(body, BSC_STR("messages"), &msgs), 1);
    assert_int_equal(bsc_json_kind_of(msgs), BSC_JSON_ARRAY);
    while (bsc_json_array_next(msgs, &pos, &m)) {
        assert_int_equal(bsc_json_kind_of(m), BSC_JSON_OBJECT);
        assert_int_equal(bsc_json_member(m, BSC_STR("role"), &role), 1);
        assert_true(bsc_str_eq(role, count ? BSC_STR("\"user\"") : BSC_STR("\"system\"")));
        count++;
    }
    assert_int_equal(count, 2);
    assert_int_equal(bsc_json_member(body, BSC_STR("tools"), &v), 0);
}


/* bsc_json_check_members: validation and the wanted spans in one pass. */
static void test_check_members_one_pass(void **state)
{
    static const struct bsc_str keys[] = {BSC_STR("model"), BSC_STR("messages"),
                                          BSC_STR("stream"), BSC_STR("absent")};
    struct bsc_str v[4];
    struct bsc_json_error err;

    (void)state;
    assert_int_equal(bsc_json_check_members(BSC_STR(" {\"model\" : \"m\", \"x\":{\"model\":1},"
                                                    "\"messages\":[{\"a\":[1,{}]}],\"stream\":true} "),
                                            64, keys, 4, v, &err), 1);
    assert_true(bsc_str_eq(v[0], BSC_STR("\"m\"")));
    assert_true(bsc_str_eq(v[1], BSC_STR("[{\"a\":[1,{}]}]")));
    assert_true(bsc_str_eq(v[2], BSC_STR("true")));
    assert_null(v[3].p);
    /* empty containers as values */
    assert_int_equal(bsc_json_check_members(BSC_STR("{\"messages\":[],\"model\":{}}"), 64, keys, 4,
                                            v, &err), 1);
    assert_true(bsc_str_eq(v[1], BSC_STR("[]")));
    assert_true(bsc_str_eq(v[0], BSC_STR("{}")));
    /* a repeated wanted key; a repeated unwanted key is fine */
    assert_int_equal(bsc_json_check_members(BSC_STR("{\"model\":1,\"model\":2}"), 64, keys, 4, v,
                                            &err), 0);
    assert_int_equal(bsc_json_check_members(BSC_STR("{\"y\":1,\"y\":2}"), 64, keys, 4, v, &err), 1);
    /* invalid documents fail like bsc_json_check */
    assert_int_equal(bsc_json_check_members(BSC_STR("{\"model\":}"), 64, keys, 4, v, &err), -1);
    assert_int_equal(err.offset, 9);
    /* a top-level array has no members */
    assert_int_equal(bsc_json_check_members(BSC_STR("[1,2]"), 64, keys, 4, v, &err), 1);
    assert_null(v[0].p);
}

/* bsc_json_parse_whole: one value, blanks after it allowed, anything else refused. */
static void test_parse_whole(void **state)
{
    struct json_object *o;

    (void)state;
    o = bsc_json_parse_whole(BSC_STR("{\"a\":[1,2]} \r\n\t"), 8);
    assert_non_null(o);
    assert_true(json_object_is_type(o, json_type_object));
    json_object_put(o);
    o = bsc_json_parse_whole(BSC_STR("\"s\""), 8);
    assert_non_null(o);
    assert_true(json_object_is_type(o, json_type_string));
    json_object_put(o);
    assert_null(bsc_json_parse_whole(BSC_STR("{} x"), 8));     /* something after it */
    assert_null(bsc_json_parse_whole(BSC_STR("{}{}"), 8));     /* two values */
    assert_null(bsc_json_parse_whole(BSC_STR("{\"a\":1,}"), 8)); /* strict mode */
    assert_null(bsc_json_parse_whole(BSC_STR("[[[[1]]]]"), 3)); /* deeper than allowed */
    o = bsc_json_parse_whole(BSC_STR("[[[[1]]]]"), 5);
    assert_non_null(o);
    json_object_put(o);
    assert_null(bsc_json_parse_whole(BSC_STR(""), 8));
    assert_null(bsc_json_parse_whole(BSC_STR_NULL, 8));
    assert_null(bsc_json_parse_whole(BSC_STR("{\"a\":"), 8)); /* cut short */
}

/* bsc_json_parse: where and why a text is refused, as a table. Offsets are json-c's
 * stopping byte (the offending one), the text's length when it ends inside the value,
 * the first non-blank byte after the value for trailing data. */
static void test_parse_where(void **state)
{
    static const struct {
        const char *in;
        int depth;
        enum bsc_json_why why;
        size_t offset;
        unsigned line, col;
    } rows[] = {
        {"{\"a\":1}", 8, BSC_JSONP_OK, 0, 1, 1},
        {"42", 8, BSC_JSONP_OK, 0, 1, 1},     /* a number at the very end is a value */
        {" -1.5e3 ", 8, BSC_JSONP_OK, 0, 1, 1},
        {"", 8, BSC_JSONP_INCOMPLETE, 0, 1, 1},
        {"{\"a\":", 8, BSC_JSONP_INCOMPLETE, 5, 1, 6},
        {"[1,\n2", 8, BSC_JSONP_INCOMPLETE, 5, 2, 2},
        {"tru", 8, BSC_JSONP_INCOMPLETE, 3, 1, 4},
        {"{\"a\":1,}", 8, BSC_JSONP_SYNTAX, 7, 1, 8},
        {"{\n  \"a\": x}", 8, BSC_JSONP_SYNTAX, 9, 2, 8},
        {"[1 2]", 8, BSC_JSONP_SYNTAX, 3, 1, 4},
        {"{\"a\":01}", 8, BSC_JSONP_SYNTAX, 7, 1, 8},
        {"[[[[1]]]]", 3, BSC_JSONP_DEPTH, 3, 1, 4},
        {"{} x", 8, BSC_JSONP_TRAILING, 3, 1, 4},
        {"{}{}", 8, BSC_JSONP_TRAILING, 2, 1, 3},
        {"{}\n\n]", 8, BSC_JSONP_TRAILING, 4, 3, 1},
        {"1 2", 8, BSC_JSONP_TRAILING, 2, 1, 3},
        {" null ", 8, BSC_JSONP_NULL, 6, 1, 7},
        {"nul", 8, BSC_JSONP_INCOMPLETE, 3, 1, 4},
    };
    struct bsc_json_where w;
    struct json_object *o;

    (void)state;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        o = bsc_json_parse(bsc_str_cstr(rows[i].in), rows[i].depth, 0, &w);
        if (w.why != rows[i].why || (o != NULL) != (rows[i].why == BSC_JSONP_OK) ||
            w.offset != rows[i].offset || w.line != rows[i].line || w.col != rows[i].col)
            fail_msg("row %zu (%s): why %d offset %zu at %u:%u (%s)", i, rows[i].in, (int)w.why,
                     w.offset, w.line, w.col, w.what ? w.what : "-");
        assert_true(rows[i].why == BSC_JSONP_OK || (w.what && w.what[0]));
        json_object_put(o);
    }
    /* json-c's own UTF-8 check is the caller's choice: a lone continuation byte */
    o = bsc_json_parse(BSC_STR("\"\x80\""), 8, 0, &w);
    assert_non_null(o);
    json_object_put(o);
    assert_null(bsc_json_parse(BSC_STR("\"\x80\""), 8, BSC_JSON_UTF8, &w));
    assert_int_equal(w.why, BSC_JSONP_SYNTAX);
    assert_null(bsc_json_parse(BSC_STR_NULL, 8, 0, NULL)); /* <where> may be NULL */
}

/* ---- names compared decoded (json_name.c) ----------------------------------------------- */

static void test_name_eq(void **state)
{
    (void)state;
    /* raw vs plain: no backslash is a byte compare */
    assert_int_equal(bsc_json_name_eq(BSC_STR("model"), BSC_STR("model")), 1);
    assert_int_equal(bsc_json_name_eq(BSC_STR("mode"), BSC_STR("model")), 0);
    assert_int_equal(bsc_json_name_eq(BSC_STR("\\u006dodel"), BSC_STR("model")), 1);
    assert_int_equal(bsc_json_name_eq(BSC_STR("\\u006Dodel"), BSC_STR("model")), 1);
    assert_int_equal(bsc_json_name_eq(BSC_STR("\\u006dodels"), BSC_STR("model")), 0);
    assert_int_equal(bsc_json_name_eq(BSC_STR("\\u006dode"), BSC_STR("model")), 0);
    assert_int_equal(bsc_json_name_eq(BSC_STR("a\\\"b\\\\c\\/d"), BSC_STR("a\"b\\c/d")), 1);
    assert_int_equal(bsc_json_name_eq(BSC_STR("\\b\\f\\n\\r\\t"), BSC_STR("\b\f\n\r\t")), 1);
    /* <plain> is bytes: a backslash in it is a backslash */
    assert_int_equal(bsc_json_name_eq(BSC_STR("\\\\u0061"), BSC_STR("\\u0061")), 1);
    /* two, three and four UTF-8 bytes; a surrogate pair is one code point */
    assert_int_equal(bsc_json_name_eq(BSC_STR("\\u00e9"), BSC_STR("\xc3\xa9")), 1);
    assert_int_equal(bsc_json_name_eq(BSC_STR("\\u20ac"), BSC_STR("\xe2\x82\xac")), 1);
    assert_int_equal(bsc_json_name_eq(BSC_STR("\\ud83d\\ude00"), BSC_STR("\xf0\x9f\x98\x80")), 1);
    assert_int_equal(bsc_json_name_eq(BSC_STR("\\uDBFF\\uDFFF"), BSC_STR("\xf4\x8f\xbf\xbf")), 1);
    /* ambiguous: lone surrogates, NUL, malformed escapes -- even when the rest differs */
    assert_int_equal(bsc_json_name_eq(BSC_STR("\\ud800"), BSC_STR("x")), -1);
    assert_int_equal(bsc_json_name_eq(BSC_STR("\\udc00"), BSC_STR("x")), -1);
    assert_int_equal(bsc_json_name_eq(BSC_STR("\\ud800\\u0041"), BSC_STR("x")), -1);
    assert_int_equal(bsc_json_name_eq(BSC_STR("\\ud800x"), BSC_STR("x")), -1);
    assert_int_equal(bsc_json_name_eq(BSC_STR("\\ud800\\ud800"), BSC_STR("x")), -1);
    assert_int_equal(bsc_json_name_eq(BSC_STR("model\\u0000"), BSC_STR("model")), -1);
    assert_int_equal(bsc_json_name_eq(BSC_STR("x\\u0000"), BSC_STR("model")), -1);
    assert_int_equal(bsc_json_name_eq(BSC_STR("\\u12"), BSC_STR("x")), -1);
    assert_int_equal(bsc_json_name_eq(BSC_STR("\\u12g4"), BSC_STR("x")), -1);
    assert_int_equal(bsc_json_name_eq(BSC_STR("a\\"), BSC_STR("a")), -1);
    assert_int_equal(bsc_json_name_eq(BSC_STR("\\x"), BSC_STR("x")), -1);
    /* raw vs raw */
    assert_int_equal(bsc_json_names_eq(BSC_STR("\xc3\xa9"), BSC_STR("\\u00E9")), 1);
    assert_int_equal(bsc_json_names_eq(BSC_STR("\\u0074ools"), BSC_STR("t\\u006fols")), 1);
    assert_int_equal(bsc_json_names_eq(BSC_STR("\\ud83d\\ude00"), BSC_STR("\xf0\x9f\x98\x80")), 1);
    assert_int_equal(bsc_json_names_eq(BSC_STR("a"), BSC_STR("b")), 0);
    assert_int_equal(bsc_json_names_eq(BSC_STR("a"), BSC_STR("\\ud800")), -1);
    assert_int_equal(bsc_json_names_eq(BSC_STR(""), BSC_STR("")), 1);
}

static void test_name_scan_and_decode(void **state)
{
    struct bsc_json_name_info a, b;
    char buf[8];

    (void)state;
    assert_true(bsc_json_name_scan(BSC_STR("max_tokens"), &a));
    assert_false(a.escaped);
    assert_int_equal(a.len, 10);
    assert_true(bsc_json_name_scan(BSC_STR("\\u006dax_tokens"), &b));
    assert_true(b.escaped);
    assert_int_equal(b.len, 10);
    assert_int_equal(a.hash, b.hash); /* the hash is of the decoded name */
    /* a name without escapes: bsc_json_name_hash_plain is the scan's hash, at every length */
    for (size_t len = 0; len <= 40; len++) {
        char plain[48], esc[64];

        for (size_t k = 0; k < len; k++)
            plain[k] = (char)('a' + (k * 7 + len) % 26);
        assert_true(bsc_json_name_scan(bsc_str_make(plain, len), &a));
        assert_false(a.escaped);
        assert_int_equal(bsc_json_name_hash_plain(bsc_str_make(plain, len)), a.hash);
        if (!len)
            continue;
        /* and the name with its first byte escaped hashes the same */
        snprintf(esc, sizeof(esc), "\\u%04x%.*s", (unsigned char)plain[0], (int)len - 1, plain + 1);
        assert_true(bsc_json_name_scan(bsc_str_cstr(esc), &b));
        assert_true(b.escaped);
        assert_int_equal(b.hash, a.hash);
        assert_int_equal(b.len, len);
    }
    assert_false(bsc_json_name_scan(BSC_STR("\\ud800"), &b));
    assert_false(bsc_json_name_scan(BSC_STR("\\u0000"), &b));
    /* decode, cut at a character boundary, NUL-terminated */
    assert_int_equal(bsc_json_name_decode(BSC_STR("\\u006dodel"), buf, sizeof(buf)), 5);
    assert_string_equal(buf, "model");
    assert_int_equal(bsc_json_name_decode(BSC_STR("abcdef\\u00e9"), buf, sizeof(buf)), 6);
    assert_string_equal(buf, "abcdef");
    assert_int_equal(bsc_json_name_decode(BSC_STR("abcde\\u00e9"), buf, sizeof(buf)), 7);
    assert_string_equal(buf, "abcde\xc3\xa9");
    assert_int_equal(bsc_json_name_decode(BSC_STR("abcd\\u20ac"), buf, sizeof(buf)), 7);
    assert_int_equal(bsc_json_name_decode(BSC_STR("abcde\\u20ac"), buf, sizeof(buf)), 5);
    assert_string_equal(buf, "abcde");
    assert_int_equal(bsc_json_name_decode(BSC_STR("\\udc00"), buf, sizeof(buf)), 0);
    assert_string_equal(buf, "");
    assert_int_equal(bsc_json_name_decode(BSC_STR("x"), buf, 1), 0);
}

/* ---- bsc_json_check_request: every top-level name once, decoded -------------------------- */

static enum bsc_json_verdict check_req(const char *doc, struct bsc_str *vals,
                                       struct bsc_json_error *err)
{
    static const struct bsc_str keys[] = {BSC_STR("model"), BSC_STR("tools"),
                                          BSC_STR("max_tokens"), BSC_STR("stream")};

    *err = (struct bsc_json_error){(size_t)-1, NULL, BSC_STR_NULL};
    return bsc_json_check_request(bsc_str_cstr(doc), 64, keys, BSC_ARRAY_LEN(keys), 0, vals, err);
}

static void expect_duplicate(const char *doc, const char *raw_name, size_t offset,
                             const char *decoded)
{
    struct bsc_str v[4];
    struct bsc_json_error err;
    char name[64];

    assert_int_equal(check_req(doc, v, &err), BSC_JSONV_DUPLICATE);
    if (!bsc_str_eq(err.name, bsc_str_cstr(raw_name)))
        fail_msg("%s: duplicate reported at \"%.*s\", want \"%s\"", doc, BSC_STR_FMT(err.name),
                 raw_name);
    assert_int_equal(err.offset, offset);
    assert_string_equal(err.what, "duplicate member name");
    bsc_json_name_decode(err.name, name, sizeof(name));
    assert_string_equal(name, decoded);
}

static void test_check_request_duplicates(void **state)
{
    (void)state;
    /* the smuggling forms of the issue: the first is validated, the second forwarded */
    expect_duplicate("{\"model\":\"demo\",\"\\u006dodel\":\"o1-pro\",\"messages\":[]}",
                     "\\u006dodel", 16, "model");
    expect_duplicate("{\"max_tokens\":5,\"\\u006dax_tokens\":100000}", "\\u006dax_tokens", 16,
                     "max_tokens");
    expect_duplicate("{\"stream\":false,\"\\u0073tream\":true}", "\\u0073tream", 16, "stream");
    /* the escaped form first: the plain name after it (hashed without a look for a
     * backslash, bsc_json_name_hash_plain) still meets it */
    expect_duplicate("{\"\\u0073tream\":true,\"stream\":false}", "stream", 20, "stream");
    expect_duplicate("{\"\\u0074ools\":[],\"tools\":[]}", "tools", 17, "tools");
    /* literal, and any member at all, wanted or not */
    expect_duplicate("{\"model\":1,\"model\":2}", "model", 11, "model");
    expect_duplicate("{\"x\":1, \"y\":{}, \"x\":[1]}", "x", 16, "x");
    expect_duplicate("{\"\":1,\"\":2}", "", 6, "");
    /* escapes of every kind decode to the same name */
    expect_duplicate("{\"\xc3\xa9\":1,\"\\u00e9\":2}", "\\u00e9", 8, "\xc3\xa9");
    expect_duplicate("{\"\\ud83d\\ude00\":1,\"\xf0\x9f\x98\x80\":2}", "\xf0\x9f\x98\x80", 18,
                     "\xf0\x9f\x98\x80");
    expect_duplicate("{\"a/b\":1,\"a\\/b\":2}", "a\\/b", 9, "a/b");
    expect_duplicate("{\"a\\nb\":1,\"a\\u000ab\":2}", "a\\u000ab", 10, "a\nb");
}

static void test_check_request_reads_escaped_names(void **state)
{
    struct bsc_str v[4];
    struct bsc_json_error err;

    (void)state;
    /* an escaped name alone is the member it decodes to */
    assert_int_equal(check_req("{\"\\u006dodel\":\"o1-pro\",\"\\u0074ools\":[{}],"
                               "\"max_tokens\":1,\"\\u0073tream\":true}", v, &err),
                     BSC_JSONV_OK);
    assert_true(bsc_str_eq(v[0], BSC_STR("\"o1-pro\"")));
    assert_true(bsc_str_eq(v[1], BSC_STR("[{}]")));
    assert_true(bsc_str_eq(v[2], BSC_STR("1")));
    assert_true(bsc_str_eq(v[3], BSC_STR("true")));
    /* nested names repeat freely: the rule is for the top level */
    assert_int_equal(check_req("{\"a\":{\"b\":1,\"b\":2},\"c\":[{\"d\":1,\"\\u0064\":1}]}", v, &err),
                     BSC_JSONV_OK);
    assert_int_equal(check_req("[{\"a\":1},{\"a\":1}]", v, &err), BSC_JSONV_OK);
    assert_null(v[0].p);
    /* names that only look alike are distinct */
    assert_int_equal(check_req("{\"model\":1,\"Model\":2,\"model \":3,\"\\u006dodel2\":4}", v, &err),
                     BSC_JSONV_OK);
    /* syntax errors are still syntax errors */
    assert_int_equal(check_req("{\"model\":1,}", v, &err), BSC_JSONV_SYNTAX);
    assert_int_equal(err.offset, 11);
    assert_int_equal(check_req("{\"\\u006dodel\":}", v, &err), BSC_JSONV_SYNTAX);
}

static void expect_refused(const char *doc, size_t offset, const char *what)
{
    struct bsc_str v[4];
    struct bsc_json_error err;

    assert_int_equal(check_req(doc, v, &err), BSC_JSONV_REFUSED);
    assert_int_equal(err.offset, offset);
    assert_string_equal(err.what, what);
}

static void test_check_request_refused_names(void **state)
{
    struct bsc_str v[4];
    struct bsc_json_error err;

    (void)state;
    /* names parsers decode differently: a lone surrogate, an escaped NUL (json-c cuts there) */
    expect_refused("{\"a\":1,\"\\ud800\":2}", 7,
                   "a top-level member name with a lone surrogate or NUL escape");
    expect_refused("{\"\\udfff\":2}", 1,
                   "a top-level member name with a lone surrogate or NUL escape");
    expect_refused("{\"\\ud83d\\u0041\":2}", 1,
                   "a top-level member name with a lone surrogate or NUL escape");
    expect_refused("{\"model\\u0000x\":2}", 1,
                   "a top-level member name with a lone surrogate or NUL escape");
    /* ...but only in names: values and nested names are the upstream's business */
    assert_int_equal(check_req("{\"a\":\"\\ud800\",\"b\":{\"\\u0000\":1}}", v, &err),
                     BSC_JSONV_OK);
}

/* Builds {"k0":0,"k1":0,...} with <n> members into <buf>. */
static struct bsc_str many_members(char *buf, size_t cap, unsigned n)
{
    size_t len = 0;

    buf[len++] = '{';
    for (unsigned i = 0; i < n; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s\"k%u\":0", i ? "," : "", i);
    buf[len++] = '}';
    assert_true(len < cap);
    return bsc_str_make(buf, len);
}

static void test_check_request_bounds(void **state)
{
    static char buf[8192], name[600];
    struct bsc_json_error err;
    struct bsc_str v[1], doc;
    const struct bsc_str key = BSC_STR("k255");

    (void)state;
    /* BSC_JSON_MAX_MEMBERS - 1, at, and past the bound */
    doc = many_members(buf, sizeof(buf), BSC_JSON_MAX_MEMBERS - 1);
    assert_int_equal(bsc_json_check_request(doc, 64, &key, 1, 0, v, &err), BSC_JSONV_OK);
    doc = many_members(buf, sizeof(buf), BSC_JSON_MAX_MEMBERS);
    assert_int_equal(bsc_json_check_request(doc, 64, &key, 1, 0, v, &err), BSC_JSONV_OK);
    assert_true(bsc_str_eq(v[0], BSC_STR("0")));
    doc = many_members(buf, sizeof(buf), BSC_JSON_MAX_MEMBERS + 1);
    assert_int_equal(bsc_json_check_request(doc, 64, &key, 1, 0, v, &err), BSC_JSONV_REFUSED);
    assert_string_equal(err.what, "more than 256 top-level members");
    assert_true(bsc_str_eq(err.name, BSC_STR("k256")));
    /* a duplicate of the first name as the 256th is found */
    doc = many_members(buf, sizeof(buf), BSC_JSON_MAX_MEMBERS - 1);
    memcpy(buf + doc.len - 1, ",\"k\\u0030\":1}", 14);
    doc.len += 12;
    assert_int_equal(bsc_json_check_request(doc, 64, &key, 1, 0, v, &err), BSC_JSONV_DUPLICATE);
    assert_true(bsc_str_eq(err.name, BSC_STR("k\\u0030")));
    /* a name of BSC_JSON_MAX_NAME bytes as written, and one more */
    memset(name, 'n', sizeof(name));
    name[0] = '{';
    name[1] = '"';
    memcpy(name + 2 + BSC_JSON_MAX_NAME, "\":1}", 4);
    doc = bsc_str_make(name, 2 + BSC_JSON_MAX_NAME + 4);
    assert_int_equal(bsc_json_check_request(doc, 64, &key, 1, 0, v, &err), BSC_JSONV_OK);
    memset(name + 2, 'n', BSC_JSON_MAX_NAME + 1);
    memcpy(name + 3 + BSC_JSON_MAX_NAME, "\":1}", 4);
    doc = bsc_str_make(name, 3 + BSC_JSON_MAX_NAME + 4);
    assert_int_equal(bsc_json_check_request(doc, 64, &key, 1, 0, v, &err), BSC_JSONV_REFUSED);
    assert_string_equal(err.what, "a top-level member name longer than 256 bytes");
    assert_int_equal(err.offset, 1);
    /* bsc_json_check_members (upstream answers) keeps no bound and reads escaped names */
    doc = many_members(buf, sizeof(buf), BSC_JSON_MAX_MEMBERS + 1);
    assert_int_equal(bsc_json_check_members(doc, 64, &key, 1, v, &err), 1);
    assert_int_equal(bsc_json_check_members(BSC_STR("{\"k\\u0032\\u0035\\u0035\":7}"), 64, &key, 1,
                                            v, &err), 1);
    assert_true(bsc_str_eq(v[0], BSC_STR("7")));
}

/* json_scan lookups compare decoded names and refuse to guess. */
static void test_members_decoded_duplicates(void **state)
{
    static const struct bsc_str iu = BSC_STR("include_usage");
    struct bsc_str v = BSC_STR("untouched");

    (void)state;
    assert_int_equal(bsc_json_member(BSC_STR("{\"include_usage\":false,"
                                             "\"\\u0069nclude_usage\":true}"), iu, &v), -1);
    assert_int_equal(bsc_json_member(BSC_STR("{\"\\u0069nclude_usage\":true}"), iu, &v), 1);
    assert_true(bsc_str_eq(v, BSC_STR("true")));
    assert_int_equal(bsc_json_member(BSC_STR("{\"include_usage\\u0000\":true,"
                                             "\"include_usage\":false}"), iu, &v), -1);
    assert_int_equal(bsc_json_member(BSC_STR("{\"\\udc00\":1}"), iu, &v), -1);
    assert_int_equal(bsc_json_member(BSC_STR("{\"a\":1}"), iu, &v), 0);
}

/* Bit k of <objects>: keys[k]'s array holds objects only, checked in the same pass. */
static void test_check_request_elements(void **state)
{
    static const struct bsc_str keys[] = {BSC_STR("x"), BSC_STR("m")};
    struct bsc_json_error err;
    struct bsc_str v[2];

#define ELEMENTS(doc) bsc_json_check_request(BSC_STR(doc), 64, keys, 2, 1u << 1, v, &err)
    (void)state;
    assert_int_equal(ELEMENTS("{\"m\":[{},{\"a\":[1]}],\"x\":[1,\"s\"]}"), BSC_JSONV_OK);
    assert_true(bsc_str_eq(v[1], BSC_STR("[{},{\"a\":[1]}]")));
    assert_int_equal(ELEMENTS("{\"m\":[],\"x\":[2]}"), BSC_JSONV_OK);
    assert_int_equal(ELEMENTS("{\"m\":{\"a\":1},\"y\":[3]}"), BSC_JSONV_OK); /* not an array */
    assert_int_equal(ELEMENTS("{\"m\":\"s\"}"), BSC_JSONV_OK);
    assert_int_equal(ELEMENTS("{\"m\":[{}, 1]}"), BSC_JSONV_ELEMENT);
    assert_int_equal(err.offset, 10);
    assert_true(bsc_str_eq(err.name, BSC_STR("m")));
    assert_int_equal(ELEMENTS("{\"\\u006d\":[ [] ]}"), BSC_JSONV_ELEMENT);
    assert_true(bsc_str_eq(err.name, BSC_STR("\\u006d")));
    assert_int_equal(err.offset, 12);
    assert_int_equal(ELEMENTS("{\"m\":[null]}"), BSC_JSONV_ELEMENT);
    assert_int_equal(ELEMENTS("{\"m\":[\"s\"]}"), BSC_JSONV_ELEMENT);
    /* without the bit, anything goes */
    assert_int_equal(bsc_json_check_request(BSC_STR("{\"m\":[1]}"), 64, keys, 2, 0, v, &err),
                     BSC_JSONV_OK);
#undef ELEMENTS
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_valid),
        cmocka_unit_test(test_parse_whole),
        cmocka_unit_test(test_parse_where),
        cmocka_unit_test(test_check_invalid),
        cmocka_unit_test(test_check_exact_buffers),
        cmocka_unit_test(test_check_null_doc),
        cmocka_unit_test(test_check_every_code_point),
        cmocka_unit_test(test_check_plain_runs),
        cmocka_unit_test(test_check_whitespace_runs),
        cmocka_unit_test(test_check_every_lead_and_second_byte),
        cmocka_unit_test(test_check_depth),
        cmocka_unit_test(test_check_depth_zero_and_clamp),
        cmocka_unit_test(test_check_stack_kinds),
        cmocka_unit_test(test_member_found),
        cmocka_unit_test(test_member_absent),
        cmocka_unit_test(test_member_string_spans),
        cmocka_unit_test(test_member_value_ends),
        cmocka_unit_test(test_member_repeated),
        cmocka_unit_test(test_member_not_object),
        cmocka_unit_test(test_member_decoded_keys_and_whitespace),
        cmocka_unit_test(test_members_one_pass),
        cmocka_unit_test(test_check_members_key_lengths),
        cmocka_unit_test(test_check_members_same_length_keys),
        cmocka_unit_test(test_member_entry),
        cmocka_unit_test(test_array_mixed),
        cmocka_unit_test(test_array_empty_and_not_array),
        cmocka_unit_test(test_array_nonempty),
        cmocka_unit_test(test_kind_of),
        cmocka_unit_test(test_is_true),
        cmocka_unit_test(test_string_raw),
        cmocka_unit_test(test_u64),
        cmocka_unit_test(test_validate_then_read),
        cmocka_unit_test(test_check_members_one_pass),
        cmocka_unit_test(test_name_eq),
        cmocka_unit_test(test_name_scan_and_decode),
        cmocka_unit_test(test_check_request_duplicates),
        cmocka_unit_test(test_check_request_reads_escaped_names),
        cmocka_unit_test(test_check_request_refused_names),
        cmocka_unit_test(test_check_request_bounds),
        cmocka_unit_test(test_members_decoded_duplicates),
        cmocka_unit_test(test_check_request_elements),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
