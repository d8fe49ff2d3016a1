/* SPDX-License-Identifier: MIT */
/* test_utf8.c -- UTF-8 boundary helpers: the complete prefix, validation against an
 * independent encoder over every code point, U+FFFD replacement by maximal subpart (Unicode
 * §3.9 examples), and the carry: at every split position it never emits half a character and
 * reassembles exactly what one pass gives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/compat.h"
#include "core/buf.h"
#include "stream/utf8.h"

#define FFFD "\xef\xbf\xbd"

struct bytes {
    const char *p;
    size_t len;
};

#define B(lit) ((struct bytes){(lit), sizeof(lit) - 1})

/* ---- complete prefix ------------------------------------------------------------------- */

static void test_complete_prefix(void **state)
{
    static const struct {
        struct bytes in;
        size_t want;
    } cases[] = {
        {B(""), 0},
        {B("a"), 1},
        {B("\xc3"), 0},                  /* 2-byte lead */
        {B("a\xc3"), 1},
        {B("\xc3\xa9"), 2},
        {B("\xe2\x82"), 0},              /* 3 bytes, 2 seen */
        {B("\xe2"), 0},
        {B("x\xe2\x82\xac"), 4},
        {B("\xf0\x9f\x98"), 0},          /* 4 bytes, 3 seen */
        {B("ab\xf0\x9f"), 2},
        {B("\xf0\x9f\x98\x80"), 4},
        {B("\xf0\x9f\x98\x80\xf0"), 4},
        {B("\xe0\x80"), 2},              /* overlong prefix: ill-formed, not held */
        {B("\xe0\xa0"), 0},              /* E0 A0: a valid start */
        {B("\xed\xa0"), 2},              /* surrogate prefix */
        {B("\xed\x9f"), 0},
        {B("\xf4\x90"), 2},              /* past U+10FFFF */
        {B("\xf4\x8f\xbf"), 0},
        {B("\xf0\x8f"), 2},              /* 4-byte overlong */
        {B("\xf5"), 1},                  /* never a lead */
        {B("\xc0"), 1},
        {B("\xc1"), 1},
        {B("\x80"), 1},                  /* stray continuation */
        {B("\x80\x80\x80"), 3},
        {B("\xc3\xa9\xa9"), 3},
        {B("\xe2\x82\xac\x82"), 4},
    };

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(cases); i++) {
        size_t got = utf8_complete_prefix(cases[i].in.p, cases[i].in.len);

        if (got != cases[i].want)
            fail_msg("case %zu: got %zu want %zu", i, got, cases[i].want);
    }
}

/* ---- validation, against an encoder that shares no code with utf8.c -------------------- */

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

static void test_every_code_point(void **state)
{
    (void)state;
    /* Every scalar value encodes to a valid sequence whose proper prefixes are held back;
     * every surrogate encoding is invalid. Also one past the end. */
    for (uint32_t cp = 0; cp <= 0x110000; cp++) {
        char s[4];
        size_t n = encode(cp, s);
        bool scalar = cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff);

        if (bsc_utf8_valid(s, n) != scalar)
            fail_msg("U+%04X: valid=%d", (unsigned)cp, !scalar);
        if (utf8_complete_prefix(s, n) != n)
            fail_msg("U+%04X: whole char held back", (unsigned)cp);
        for (size_t k = 1; scalar && k < n; k++) {
            if (utf8_complete_prefix(s, k) != 0)
                fail_msg("U+%04X: prefix of %zu not held", (unsigned)cp, k);
        }
    }
}

static void test_every_two_bytes(void **state)
{
    (void)state;
    /* All 65536 two-byte strings: valid exactly when ASCII+ASCII or a C2..DF lead with a
     * continuation; and sanitize leaves valid input untouched, else replaces. */
    for (unsigned v = 0; v < 0x10000; v++) {
        unsigned char a = (unsigned char)(v >> 8), b = (unsigned char)v;
        char s[2] = {(char)a, (char)b};
        bool want = (a < 0x80 && b < 0x80) || (a >= 0xc2 && a <= 0xdf && b >= 0x80 && b <= 0xbf);
        struct bsc_buf out;

        if (bsc_utf8_valid(s, 2) != want)
            fail_msg("%02x %02x: valid=%d", a, b, !want);
        bsc_buf_init(&out, 64);
        assert_int_equal(utf8_sanitize(&out, s, 2), BSC_OK);
        assert_true(bsc_utf8_valid(out.p, out.len));
        if (want)
            assert_memory_equal(out.p, s, 2);
        else
            assert_non_null(memmem(out.p, out.len, FFFD, 3));
        bsc_buf_cleanup(&out);
    }
}

/* ---- replacement ----------------------------------------------------------------------- */

static void test_sanitize_table(void **state)
{
    static const struct {
        struct bytes in;
        struct bytes want;
    } cases[] = {
        {B(""), B("")},
        {B("plain ascii"), B("plain ascii")},
        {B("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
         B("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80")},
        {B("\xef\xbf\xbd"), B(FFFD)},
        {B("\xf4\x8f\xbf\xbf"), B("\xf4\x8f\xbf\xbf")},            /* U+10FFFF */
        {B("\xed\x9f\xbf\xee\x80\x80"), B("\xed\x9f\xbf\xee\x80\x80")}, /* around surrogates */
        /* stray continuation bytes: one each */
        {B("\x80"), B(FFFD)},
        {B("a\x80\xbf" "b"), B("a" FFFD FFFD "b")},
        /* overlongs: C0/C1 are never leads; E0 80, F0 80 fail at the second byte */
        {B("\xc0\xaf"), B(FFFD FFFD)},
        {B("\xc1\xbf"), B(FFFD FFFD)},
        {B("\xe0\x80\xaf"), B(FFFD FFFD FFFD)},
        {B("\xf0\x80\x80\xaf"), B(FFFD FFFD FFFD FFFD)},
        {B("\xf0\x8f\xbf\xbf"), B(FFFD FFFD FFFD FFFD)},
        /* surrogates, encoded */
        {B("\xed\xa0\x80"), B(FFFD FFFD FFFD)},
        {B("\xed\xbf\xbf"), B(FFFD FFFD FFFD)},
        /* past U+10FFFF, and bytes that never appear */
        {B("\xf4\x90\x80\x80"), B(FFFD FFFD FFFD FFFD)},
        {B("\xf5\x80\x80\x80"), B(FFFD FFFD FFFD FFFD)},
        {B("\xfe\xff"), B(FFFD FFFD)},
        /* truncated sequences: one U+FFFD per maximal subpart */
        {B("\xf0\x9f\x98"), B(FFFD)},
        {B("\xf0\x9f\x98x"), B(FFFD "x")},
        {B("\xe2\x82"), B(FFFD)},
        {B("\xe2\x82\xe2\x82\xac"), B(FFFD "\xe2\x82\xac")},
        {B("\xc3"), B(FFFD)},
        {B("\xc3\xc3\xa9"), B(FFFD "\xc3\xa9")},
        /* Unicode §3.9, U+FFFD substitution of maximal subparts (table 3-8 style) */
        {B("\x61\xf1\x80\x80\xe1\x80\xc2\x62\x80\x63\x80\xbf\x64"),
         B("a" FFFD FFFD FFFD "b" FFFD "c" FFFD FFFD "d")},
        /* NUL is a character like any other */
        {B("a\0b"), B("a\0b")},
    };

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(cases); i++) {
        struct bsc_buf out;

        bsc_buf_init(&out, 1024);
        assert_int_equal(utf8_sanitize(&out, cases[i].in.p, cases[i].in.len), BSC_OK);
        if (out.len != cases[i].want.len ||
            (out.len && memcmp(out.p, cases[i].want.p, out.len) != 0))
            fail_msg("case %zu: got %zu bytes, want %zu", i, out.len, cases[i].want.len);
        assert_true(bsc_utf8_valid(out.p ? out.p : "", out.len));
        assert_int_equal(bsc_utf8_valid(cases[i].in.p, cases[i].in.len),
                         out.len == cases[i].in.len &&
                             (out.len == 0 || memcmp(out.p, cases[i].in.p, out.len) == 0));
        bsc_buf_cleanup(&out);
    }
}

/* A string cut inside a character (what snprintf leaves at its buffer's end), stray and
 * ill-formed bytes: each byte that starts no well-formed sequence becomes '?', the rest is
 * kept, and the result is UTF-8. */
static void test_scrub(void **state)
{
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"plain", "plain"},
        {"", ""},
        {"caf\xc3\xa9", "caf\xc3\xa9"},
        {"cut \xf0\x9f\x98", "cut ???"},
        {"cut \xe2\x80", "cut ??"},
        {"stray \x80 and \xff", "stray ? and ?"},
        {"overlong \xc0\xaf ok \xe2\x80\xa8", "overlong ?? ok \xe2\x80\xa8"},
        {"surrogate \xed\xa0\x80", "surrogate ???"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[64];

        snprintf(buf, sizeof(buf), "%s", cases[i].in);
        bsc_utf8_scrub(buf);
        assert_string_equal(buf, cases[i].want);
        assert_true(bsc_utf8_valid(buf, strlen(buf)));
    }
}

static void test_sanitize_limit(void **state)
{
    struct bsc_buf out;

    (void)state;
    /* "ab" + U+FFFD is 5 bytes: fits at 5, not at 4; failure leaves <out> as it was. */
    bsc_buf_init(&out, 5);
    assert_int_equal(utf8_sanitize(&out, "ab\xff", 3), BSC_OK);
    assert_int_equal(out.len, 5);
    bsc_buf_cleanup(&out);
    bsc_buf_init(&out, 4);
    assert_int_equal(bsc_buf_append(&out, "z", 1), BSC_OK);
    assert_int_equal(utf8_sanitize(&out, "ab\xff", 3), BSC_ELIMIT);
    assert_int_equal(out.len, 1);
    assert_string_equal(out.p, "z");
    bsc_buf_cleanup(&out);
}

/* ---- the carry ------------------------------------------------------------------------- */

/* Feeds <in> cut at <cuts> through a carry; checks each feed emits only whole characters
 * (valid UTF-8 on its own) and returns everything, flush included, in <out>. */
static void carry_run(struct bytes in, const size_t *cuts, size_t ncuts, struct bsc_buf *out)
{
    struct utf8_carry c;
    size_t from = 0;

    utf8_carry_init(&c);
    for (size_t i = 0; i <= ncuts; i++) {
        size_t to = i < ncuts ? cuts[i] : in.len, before = out->len;

        assert_int_equal(utf8_carry_feed(&c, out, in.p + from, to - from), BSC_OK);
        assert_true(bsc_utf8_valid(out->p ? out->p + before : "", out->len - before));
        assert_true(c.len <= 3);
        from = to;
    }
    assert_int_equal(utf8_carry_flush(&c, out), BSC_OK);
    assert_false(utf8_carry_is_pending(&c));
}

static void check_carry_splits(struct bytes in)
{
    struct bsc_buf whole, got;

    bsc_buf_init(&whole, 4096);
    assert_int_equal(utf8_sanitize(&whole, in.p, in.len), BSC_OK);
    for (size_t a = 0; a <= in.len; a++) {
        for (size_t b = a; b <= in.len; b++) {
            size_t cuts[2] = {a, b};

            bsc_buf_init(&got, 4096);
            carry_run(in, cuts, 2, &got);
            if (got.len != whole.len || (got.len && memcmp(got.p, whole.p, got.len) != 0))
                fail_msg("cuts %zu,%zu: %zu bytes, want %zu", a, b, got.len, whole.len);
            bsc_buf_cleanup(&got);
        }
    }
    {
        size_t *cuts = calloc(in.len + 1, sizeof(*cuts));

        assert_non_null(cuts);
        for (size_t i = 0; i < in.len; i++)
            cuts[i] = i + 1;
        bsc_buf_init(&got, 4096);
        carry_run(in, cuts, in.len, &got); /* byte by byte */
        assert_int_equal(got.len, whole.len);
        assert_memory_equal(got.p, whole.p, got.len);
        bsc_buf_cleanup(&got);
        free(cuts);
    }
    bsc_buf_cleanup(&whole);
}

static void test_carry_valid_splits(void **state)
{
    static const struct bytes samples[] = {
        B("h\xc3\xa9llo \xc3\xb1"),                            /* 2-byte */
        B("\xe2\x82\xac\xe4\xbd\xa0\xe5\xa5\xbd!\xe2\x80\x94"), /* 3-byte */
        B("\xf0\x9f\x98\x80\xf0\x9f\x91\x8d\xf4\x8f\xbf\xbf"),  /* 4-byte */
        B("a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z\xd0\x96\xe6\x97\xa5\xf0\x90\x8d\x88"),
    };

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(samples); i++) {
        struct bsc_buf got;

        assert_true(bsc_utf8_valid(samples[i].p, samples[i].len));
        check_carry_splits(samples[i]);
        /* Valid input reassembles exactly. */
        bsc_buf_init(&got, 4096);
        carry_run(samples[i], NULL, 0, &got);
        assert_int_equal(got.len, samples[i].len);
        assert_memory_equal(got.p, samples[i].p, got.len);
        bsc_buf_cleanup(&got);
    }
}

static void test_carry_invalid_splits(void **state)
{
    static const struct bytes samples[] = {
        B("\x61\xf1\x80\x80\xe1\x80\xc2\x62\x80\x63\x80\xbf\x64"),
        B("\xe2\x82\xe2\x82\xac\xf0\x9f\x98"),
        B("\xed\xa0\x80\xf4\x90\x80\x80\xc0\xaf\xe0\x80\xaf\xf0\x9f"),
        B("ok\xc3"),
    };

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(samples); i++)
        check_carry_splits(samples[i]);
}

static void test_carry_holds_and_flushes(void **state)
{
    struct utf8_carry c;
    struct bsc_buf out;

    (void)state;
    bsc_buf_init(&out, 64);
    utf8_carry_init(&c);
    assert_int_equal(utf8_carry_feed(&c, &out, "ab\xf0\x9f", 4), BSC_OK);
    assert_int_equal(out.len, 2);
    assert_int_equal(c.len, 2);
    assert_int_equal(utf8_carry_feed(&c, &out, "\x98", 1), BSC_OK);
    assert_int_equal(out.len, 2);
    assert_int_equal(c.len, 3);
    assert_int_equal(utf8_carry_feed(&c, &out, "", 0), BSC_OK);
    assert_int_equal(c.len, 3);
    assert_int_equal(utf8_carry_feed(&c, &out, "\x80" "c", 2), BSC_OK);
    assert_string_equal(out.p, "ab\xf0\x9f\x98\x80" "c");
    assert_false(utf8_carry_is_pending(&c));
    /* A tail that never completes becomes one U+FFFD at the flush. */
    assert_int_equal(utf8_carry_feed(&c, &out, "\xe2\x82", 2), BSC_OK);
    assert_true(utf8_carry_is_pending(&c));
    assert_int_equal(utf8_carry_flush(&c, &out), BSC_OK);
    assert_string_equal(out.p, "ab\xf0\x9f\x98\x80" "c" FFFD);
    assert_int_equal(utf8_carry_flush(&c, &out), BSC_OK); /* nothing held: nothing added */
    assert_string_equal(out.p, "ab\xf0\x9f\x98\x80" "c" FFFD);
    bsc_buf_cleanup(&out);
}

static void test_carry_limit_is_atomic(void **state)
{
    struct utf8_carry c;
    struct bsc_buf out;

    (void)state;
    bsc_buf_init(&out, 3);
    utf8_carry_init(&c);
    assert_int_equal(utf8_carry_feed(&c, &out, "a\xe2\x82", 3), BSC_OK);
    assert_int_equal(c.len, 2);
    /* Completing the euro sign (3 bytes) would pass the bound of 3 with "a" in: refused, and
     * the carry still holds its two bytes. */
    assert_int_equal(utf8_carry_feed(&c, &out, "\xac" "b", 2), BSC_ELIMIT);
    assert_int_equal(c.len, 2);
    assert_int_equal(out.len, 1);
    bsc_buf_reset(&out);
    assert_int_equal(utf8_carry_feed(&c, &out, "\xac", 1), BSC_OK);
    assert_string_equal(out.p, "\xe2\x82\xac");
    /* A flush that does not fit keeps the tail. */
    assert_int_equal(utf8_carry_feed(&c, &out, "\xc3", 1), BSC_OK);
    assert_int_equal(utf8_carry_flush(&c, &out), BSC_ELIMIT);
    assert_true(utf8_carry_is_pending(&c));
    bsc_buf_cleanup(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_complete_prefix),
        cmocka_unit_test(test_every_code_point),
        cmocka_unit_test(test_every_two_bytes),
        cmocka_unit_test(test_sanitize_table),
        cmocka_unit_test(test_scrub),
        cmocka_unit_test(test_sanitize_limit),
        cmocka_unit_test(test_carry_valid_splits),
        cmocka_unit_test(test_carry_invalid_splits),
        cmocka_unit_test(test_carry_holds_and_flushes),
        cmocka_unit_test(test_carry_limit_is_atomic),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
