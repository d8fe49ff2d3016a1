/* SPDX-License-Identifier: MIT */
/* test_buf.c -- the bounded buffer (core/buf.c): appends on the inline fast path and
 * through growth, the hard maximum (an append that does not fit changes nothing), the
 * integer and milli formatters, and the JSON string escaper against a byte-by-byte
 * reference for every byte value, also when only the exact escaped size fits; the escaper
 * reads 16 or 8 bytes at a time, so every length to 40 and every position of an escaped
 * byte in it are compared too, with plain and non-ASCII bytes around it, and random text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/buf.h"

/* The reference escaper: RFC 8259 short forms, \u00XX for other controls. */
static size_t ref_escape(const unsigned char *p, size_t n, char *out)
{
    size_t o = 0;

    out[o++] = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = p[i];
        switch (c) {
        case '"': o += (size_t)snprintf(out + o, 3, "\\\""); break;
        case '\\': o += (size_t)snprintf(out + o, 3, "\\\\"); break;
        case '\n': o += (size_t)snprintf(out + o, 3, "\\n"); break;
        case '\r': o += (size_t)snprintf(out + o, 3, "\\r"); break;
        case '\t': o += (size_t)snprintf(out + o, 3, "\\t"); break;
        default:
            if (c < 0x20)
                o += (size_t)snprintf(out + o, 7, "\\u%04x", c);
            else
                out[o++] = (char)c;
        }
    }
    out[o++] = '"';
    out[o] = '\0';
    return o;
}

static void test_append_grows_and_terminates(void **state)
{
    struct bsc_buf b;

    (void)state;
    bsc_buf_init(&b, 1000);
    for (int i = 0; i < 100; i++)
        assert_int_equal(bsc_buf_append(&b, "0123456789", 10), BSC_OK);
    assert_int_equal(b.len, 1000);
    assert_int_equal(b.p[1000], '\0');
    assert_int_equal(bsc_buf_append_char(&b, 'x'), BSC_ELIMIT);
    assert_int_equal(b.len, 1000);
    bsc_buf_reset(&b);
    assert_int_equal(BSC_BUF_APPEND_LIT(&b, "lit"), BSC_OK);
    assert_int_equal(bsc_buf_append_cstr(&b, "-cstr"), BSC_OK);
    assert_int_equal(bsc_buf_append_str(&b, bsc_str_make("-str!", 4)), BSC_OK);
    assert_string_equal(b.p, "lit-cstr-str");
    assert_int_equal(bsc_buf_append(&b, NULL, 0), BSC_OK);
    assert_int_equal(b.len, 12);
    bsc_buf_cleanup(&b);
}

static void test_limit_leaves_buffer_unchanged(void **state)
{
    struct bsc_buf b;

    (void)state;
    bsc_buf_init(&b, 8);
    assert_int_equal(bsc_buf_append(&b, "12345", 5), BSC_OK);
    assert_int_equal(bsc_buf_append(&b, "6789", 4), BSC_ELIMIT);
    assert_int_equal(b.len, 5);
    assert_string_equal(b.p, "12345");
    assert_int_equal(bsc_buf_append_json_str(&b, bsc_str_make("abcd", 4)), BSC_ELIMIT);
    assert_string_equal(b.p, "12345");
    bsc_buf_cleanup(&b);
}

static void test_numbers(void **state)
{
    struct bsc_buf b;

    (void)state;
    bsc_buf_init(&b, 256);
    bsc_buf_append_u64(&b, 0);
    bsc_buf_append_char(&b, ' ');
    bsc_buf_append_u64(&b, UINT64_MAX);
    bsc_buf_append_char(&b, ' ');
    bsc_buf_append_i64(&b, INT64_MIN);
    bsc_buf_append_char(&b, ' ');
    bsc_buf_append_milli(&b, 1234);
    bsc_buf_append_char(&b, ' ');
    bsc_buf_append_milli(&b, 5);
    assert_string_equal(b.p, "0 18446744073709551615 -9223372036854775808 1.234 0.005");
    bsc_buf_cleanup(&b);
}

/* bsc_num_text gives printf's digits in bases 10, 16 and 8, up to UINT64_MAX. */
static void test_num_text(void **state)
{
    static const unsigned long long vals[] = {0, 1, 9, 10, 15, 16, 99, 100, 255, 999, 1000,
                                              4096, 123456789, 9999999999999999999ull,
                                              10000000000000000000ull, UINT32_MAX, UINT64_MAX - 1,
                                              UINT64_MAX};
    static const struct { unsigned base; const char *fmt; } bases[] = {
        {10, "%llu"}, {16, "%llx"}, {8, "%llo"}};
    char tmp[BSC_NUM_TEXT_MAX], want[32];

    (void)state;
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        for (size_t k = 0; k < sizeof(bases) / sizeof(bases[0]); k++) {
            const char *d = bsc_num_text(tmp, vals[i], bases[k].base);
            int n = snprintf(want, sizeof(want), bases[k].fmt, vals[i]);

            assert_int_equal(tmp + BSC_NUM_TEXT_MAX - d, n);
            assert_memory_equal(d, want, (size_t)n);
        }
    }
}

/* Fixed-point decimals match printf's "%.*f" for values already in units. */
static void test_fixed(void **state)
{
    static const unsigned long long units[] = {0, 1, 7, 123456789, 100000000, 99999999999ull};
    struct bsc_buf b;
    char want[64];

    (void)state;
    bsc_buf_init(&b, 256);
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        bsc_buf_reset(&b);
        assert_int_equal(bsc_buf_append_fixed(&b, units[i], 8), BSC_OK);
        snprintf(want, sizeof(want), "%.8f", (double)units[i] / 1e8);
        assert_string_equal(b.p, want);
    }
    /* Every number of decimals against the whole and remainder printed as integers, over
     * values from 0 to UINT64_MAX (each decimal place and the whole part reach 0 and 9). */
    for (unsigned d = 0; d <= BSC_BUF_FIXED_MAX_DECIMALS; d++) {
        unsigned long long scale = 1, v = 0;

        for (unsigned k = 0; k < d; k++)
            scale *= 10;
        for (unsigned k = 0; k < 2000; k++) {
            v = k < 1000 ? k * 999999937ull : v * 6364136223846793005ull + 1442695040888963407ull;
            if (k == 1999)
                v = UINT64_MAX;
            bsc_buf_reset(&b);
            assert_int_equal(bsc_buf_append_fixed(&b, v, d), BSC_OK);
            if (d)
                snprintf(want, sizeof(want), "%llu.%0*llu", v / scale, (int)d, v % scale);
            else
                snprintf(want, sizeof(want), "%llu", v);
            assert_string_equal(b.p, want);
        }
    }
    bsc_buf_reset(&b);
    assert_int_equal(bsc_buf_append_fixed(&b, 42, 0), BSC_OK);
    assert_string_equal(b.p, "42");
    assert_int_equal(bsc_buf_append_fixed(&b, 1, BSC_BUF_FIXED_MAX_DECIMALS + 1), BSC_EINVAL);
    assert_string_equal(b.p, "42");
    bsc_buf_cleanup(&b);
}

/* Every byte value, alone and inside runs of plain bytes on both sides. */
static void test_json_str_every_byte(void **state)
{
    unsigned char in[40];
    char want[300];
    struct bsc_buf b;

    (void)state;
    bsc_buf_init(&b, 1 << 16);
    for (unsigned c = 0; c < 256; c++) {
        for (size_t pad = 0; pad < 18; pad += 17) {
            size_t n = 0, wlen;

            memset(in, 'p', pad);
            n = pad;
            in[n++] = (unsigned char)c;
            memset(in + n, 'q', pad);
            n += pad;
            wlen = ref_escape(in, n, want);
            bsc_buf_reset(&b);
            assert_int_equal(bsc_buf_append_json_str(&b, bsc_str_make((const char *)in, n)), BSC_OK);
            assert_int_equal(b.len, wlen);
            assert_memory_equal(b.p, want, wlen);
            assert_int_equal(b.p[b.len], '\0');
        }
    }
    bsc_buf_cleanup(&b);
}

/* The worst case (six bytes each) does not fit under <max>, the exact size does: the
 * string is still written, and one byte less than exact is refused without a change. */
static void test_json_str_exact_fit(void **state)
{
    static const char text[] = "a\"b\\c\nd\x01" "e";
    char want[64];
    size_t wlen = ref_escape((const unsigned char *)text, sizeof(text) - 1, want);
    struct bsc_buf b;

    (void)state;
    bsc_buf_init(&b, 3 + wlen);
    assert_int_equal(BSC_BUF_APPEND_LIT(&b, "x: "), BSC_OK);
    assert_int_equal(bsc_buf_append_json_str(&b, bsc_str_make(text, sizeof(text) - 1)), BSC_OK);
    assert_int_equal(b.len, 3 + wlen);
    assert_memory_equal(b.p + 3, want, wlen);
    bsc_buf_cleanup(&b);

    bsc_buf_init(&b, 3 + wlen - 1);
    assert_int_equal(BSC_BUF_APPEND_LIT(&b, "x: "), BSC_OK);
    assert_int_equal(bsc_buf_append_json_str(&b, bsc_str_make(text, sizeof(text) - 1)), BSC_ELIMIT);
    assert_int_equal(b.len, 3);
    assert_string_equal(b.p, "x: ");
    bsc_buf_cleanup(&b);
}

/* An empty string without storage (a NULL span) is "" and no pointer arithmetic on NULL. */
static void test_json_str_null_span(void **state)
{
    struct bsc_buf b;

    (void)state;
    bsc_buf_init(&b, 64);
    assert_int_equal(bsc_buf_append_json_str(&b, BSC_STR_NULL), BSC_OK);
    assert_string_equal(b.p, "\"\"");
    bsc_buf_cleanup(&b);
}

/* <in> escaped into a buffer with room for the worst case, and into one whose maximum is
 * the exact escaped size (the block copies must stay inside it: ASan watches the end), both
 * after a prefix; each must be what the reference writes. */
static void expect_escaped_as_reference(const unsigned char *in, size_t n)
{
    char want[6 * 64 + 3];
    size_t wlen = ref_escape(in, n, want);
    struct bsc_buf b;

    assert_true(n <= 64);
    for (int exact = 0; exact < 2; exact++) {
        bsc_buf_init(&b, exact ? 2 + wlen : 1 << 12);
        assert_int_equal(BSC_BUF_APPEND_LIT(&b, "x:"), BSC_OK);
        assert_int_equal(bsc_buf_append_json_str(&b, bsc_str_make((const char *)in, n)), BSC_OK);
        if (b.len != 2 + wlen || memcmp(b.p + 2, want, wlen) != 0 || b.p[b.len] != '\0')
            fail_msg("length %zu, exact room %d: got %s, want %s", n, exact, b.p + 2, want);
        bsc_buf_cleanup(&b);
    }
}

/* Every length 0..40 (each 16- and 8-byte block and tail case), every position of one byte
 * from each side of every escaping boundary, among plain ASCII and among non-ASCII bytes
 * (a borrow across bytes must not flag a clean byte); and the same lengths clean. */
static void test_json_str_every_length_and_position(void **state)
{
    static const unsigned char probes[] = {0x00, 0x01, 0x09, 0x0a, 0x0d, 0x1f, 0x20, 0x21,
                                           '"',  0x23, 0x5b, '\\', 0x5d, 0x7f, 0x80, 0x9f,
                                           0xa0, 0xa2, 0xc3, 0xdc, 0xe0, 0xff};
    static const unsigned char grounds[] = {'a', 0xff, 0xa0, 0x80, 0x21, 0x7f};
    unsigned char in[64];

    (void)state;
    for (size_t g = 0; g < sizeof(grounds); g++)
        for (size_t n = 0; n <= 40; n++) {
            memset(in, grounds[g], n);
            expect_escaped_as_reference(in, n);
            for (size_t i = 0; i < n; i++)
                for (size_t k = 0; k < sizeof(probes); k++) {
                    memset(in, grounds[g], n);
                    in[i] = probes[k];
                    expect_escaped_as_reference(in, n);
                }
        }
}

/* Random text of random length to 64: mostly plain, with escaped and non-ASCII bytes. */
static void test_json_str_random(void **state)
{
    static const unsigned char pool[] = "abcXYZ09 -_./:{}\"\\\n\r\t\x01\x1f\x7f\x80\xc3\xa9\xe6\x97\xa5\xff";
    uint64_t x = 0x2545f4914f6cdd1dull;
    unsigned char in[64];

    (void)state;
    for (int round = 0; round < 200000; round++) {
        size_t n;

        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        n = (size_t)(x % 65);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            in[i] = (x >> 32) % 8 == 0 ? (unsigned char)(x >> 40) : pool[(x >> 40) % (sizeof(pool) - 1)];
        }
        expect_escaped_as_reference(in, n);
    }
}

/* UTF-8 text goes through as it is: only controls, the quote and the backslash change. */
static void test_json_str_utf8_kept(void **state)
{
    static const char text[] = "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 \"q\" ok";
    struct bsc_buf b;

    (void)state;
    bsc_buf_init(&b, 256);
    assert_int_equal(bsc_buf_append_json_str(&b, bsc_str_make(text, sizeof(text) - 1)), BSC_OK);
    assert_string_equal(b.p, "\"caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 \\\"q\\\" ok\"");
    bsc_buf_cleanup(&b);
}

/* bsc_buf_reuse: the storage kept (contents dropped) when it fits the new maximum, freed
 * when it does not. */
static void test_reuse(void **state)
{
    struct bsc_buf b;
    char *p;

    (void)state;
    bsc_buf_init(&b, 1024);
    assert_int_equal(bsc_buf_reserve(&b, 200), BSC_OK);
    assert_int_equal(BSC_BUF_APPEND_LIT(&b, "abc"), BSC_OK);
    p = b.p;
    bsc_buf_reuse(&b, 4096);
    assert_ptr_equal(b.p, p);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.p, "");
    assert_int_equal(b.max, 4096);
    bsc_buf_reuse(&b, 100); /* cap 256 > 100 */
    assert_null(b.p);
    assert_int_equal(b.cap, 0);
    assert_int_equal(b.max, 100);
    bsc_buf_cleanup(&b);
}

/* bsc_buf_park / bsc_buf_unpark: a buffer at most <keep> bytes keeps its storage, empty, and
 * the next use appends into the same storage without growing; a bigger one is freed. */
static void test_park(void **state)
{
    struct bsc_buf b;
    char *p;
    size_t cap;

    (void)state;
    bsc_buf_init(&b, 1u << 20);
    assert_int_equal(bsc_buf_reserve(&b, 200), BSC_OK);
    assert_int_equal(BSC_BUF_APPEND_LIT(&b, "the first tenant's text"), BSC_OK);
    p = b.p;
    cap = b.cap;
    bsc_buf_park(&b, 4096);
    bsc_buf_park(&b, 4096); /* twice: harmless */
    assert_int_equal(b.len, 0);
    bsc_buf_unpark(&b);
    assert_ptr_equal(b.p, p);
    assert_int_equal(b.cap, cap);
    assert_string_equal(b.p, "");
    assert_int_equal(BSC_BUF_APPEND_LIT(&b, "second"), BSC_OK);
    assert_ptr_equal(b.p, p); /* no growth: the same storage */
    assert_int_equal(b.cap, cap);
    assert_string_equal(b.p, "second");
    assert_int_equal(bsc_buf_reserve(&b, 5000), BSC_OK); /* cap past the bound below */
    bsc_buf_park(&b, 4096);
    assert_null(b.p);
    assert_int_equal(b.cap, 0);
    assert_int_equal(b.len, 0);
    bsc_buf_unpark(&b);
    assert_null(b.p);
    bsc_buf_cleanup(&b);
}

/* bsc_json_plain: false for each byte a JSON string escapes, wherever it is. */
static void test_json_plain(void **state)
{
    char text[] = "gpt-4.1@openai-us/\xc3\xa9 ~";

    (void)state;
    assert_true(bsc_json_plain(text, strlen(text)));
    assert_true(bsc_json_plain("", 0));
    for (unsigned c = 0; c < 256; c++) {
        bool escaped = c < 0x20 || c == '"' || c == '\\';

        for (size_t at = 0; at < strlen(text); at += 7) {
            char copy[sizeof(text)];

            memcpy(copy, text, sizeof(text));
            copy[at] = (char)c;
            assert_int_equal(bsc_json_plain(copy, strlen(text)), !escaped);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_str_null_span),
        cmocka_unit_test(test_append_grows_and_terminates),
        cmocka_unit_test(test_limit_leaves_buffer_unchanged),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_num_text),
        cmocka_unit_test(test_fixed),
        cmocka_unit_test(test_json_str_every_byte),
        cmocka_unit_test(test_json_str_exact_fit),
        cmocka_unit_test(test_json_str_every_length_and_position),
        cmocka_unit_test(test_json_str_random),
        cmocka_unit_test(test_json_str_utf8_kept),
        cmocka_unit_test(test_reuse),
        cmocka_unit_test(test_park),
        cmocka_unit_test(test_json_plain),
    };

    return cmocka_run_group_tests_name("buf", tests, NULL, NULL);
}
