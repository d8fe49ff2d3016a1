/* SPDX-License-Identifier: MIT */
/* test_buf.c -- the bounded buffer (core/buf.c): appends on the inline fast path and
 * through growth, the hard maximum (an append that does not fit changes nothing), the
 * integer and milli formatters, and the JSON string escaper against a byte-by-byte
 * reference for every byte value, also when only the exact escaped size fits. */
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
    static const unsigned long long vals[] = {0, 1, 9, 10, 15, 16, 255, 999, 1000, 4096,
                                              123456789, UINT32_MAX, UINT64_MAX - 1, UINT64_MAX};
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
    };

    return cmocka_run_group_tests_name("buf", tests, NULL, NULL);
}
