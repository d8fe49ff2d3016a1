/* SPDX-License-Identifier: MIT */
/* test_redact.c -- the secret scrubber: whole values anywhere (start, middle, end, twice,
 * overlapping secrets), an echo cut at the end of the text, short values ignored, texts
 * without a secret's first byte untouched, the cap respected with marks longer than what
 * they replace (cut at a UTF-8 boundary), duplicates and the set's bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/compat.h"
#include "core/redact.h"

#define KEY "sk-test-0123456789abcdef"
#define ADMIN "admin-secret-key-42"

static struct bsc_redact *make(void)
{
    struct bsc_redact *rd = bsc_redact_new();

    assert_non_null(rd);
    assert_int_equal(bsc_redact_add(rd, BSC_STR(KEY)), BSC_OK);
    assert_int_equal(bsc_redact_add(rd, BSC_STR(ADMIN)), BSC_OK);
    return rd;
}

/* Scrubs <in> in a buffer of <cap> bytes; returns the count, copies the result to <out>. */
static size_t scrub(const struct bsc_redact *rd, const char *in, size_t cap, char *out)
{
    char buf[512];
    size_t n;

    assert_true(cap <= sizeof(buf));
    snprintf(buf, cap, "%s", in);
    n = bsc_redact_cstr(rd, buf, cap);
    assert_true(strlen(buf) < cap);
    memcpy(out, buf, strlen(buf) + 1);
    return n;
}

static void test_whole_values(void **state)
{
    static const struct {
        const char *in, *want;
        size_t n;
    } cases[] = {
        {"Incorrect API key provided: " KEY ".", "Incorrect API key provided: [REDACTED].", 1},
        {KEY, "[REDACTED]", 1},
        {KEY KEY, "[REDACTED][REDACTED]", 2},
        {"a " ADMIN " b " KEY, "a [REDACTED] b [REDACTED]", 2},
        {"Bearer " KEY "\"}", "Bearer [REDACTED]\"}", 1},
        {"no secret here at all", "no secret here at all", 0},
        {"sk-test- is how keys start", "sk-test- is how keys start", 0}, /* 8-byte prefix */
        {"", "", 0},
    };
    struct bsc_redact *rd = make();
    char out[512];

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(cases); i++) {
        size_t n = scrub(rd, cases[i].in, 256, out);

        assert_string_equal(out, cases[i].want);
        assert_int_equal(n, cases[i].n);
    }
    bsc_redact_free(rd);
}

static void test_partial_echoes(void **state)
{
    struct bsc_redact *rd = make();
    char out[512];

    (void)state;
    /* Cut by a length bound: the text ends inside the key. */
    assert_int_equal(scrub(rd, "key: sk-test-0123", 256, out), 1);
    assert_string_equal(out, "key: [REDACTED]");
    /* Fewer than BSC_REDACT_MIN_LEN bytes at the end: not enough to be a secret. */
    assert_int_equal(scrub(rd, "key: sk-tes", 256, out), 0);
    /* Most of the key, shortened by the upstream, in the middle of the text. */
    assert_int_equal(scrub(rd, "key sk-test-0123456789a... is bad", 256, out), 1);
    assert_string_equal(out, "key [REDACTED]... is bad");
    bsc_redact_free(rd);
}

static void test_cap_and_growth(void **state)
{
    struct bsc_redact *rd = bsc_redact_new();
    char buf[16];

    (void)state;
    assert_int_equal(bsc_redact_add(rd, BSC_STR("12345678")), BSC_OK);
    /* The mark (10 bytes) is longer than the secret (8): the tail is cut to fit. */
    snprintf(buf, sizeof(buf), "%s", "ab12345678cdefg");
    assert_int_equal(bsc_redact_cstr(rd, buf, sizeof(buf)), 1);
    assert_string_equal(buf, "ab[REDACTED]cde");
    /* A cut never leaves half a UTF-8 character. */
    snprintf(buf, sizeof(buf), "%s", "12345678\xc3\xa9\xc3\xa9\xc3\xa9");
    assert_int_equal(bsc_redact_cstr(rd, buf, sizeof(buf)), 1);
    assert_string_equal(buf, "[REDACTED]\xc3\xa9\xc3\xa9");
    memcpy(buf, "123456781234567", 16); /* full */
    assert_int_equal(bsc_redact_cstr(rd, buf, sizeof(buf)), 1);
    assert_string_equal(buf, "[REDACTED]12345"); /* the second is cut: too short to match */
    /* The mark itself cut at the cap. */
    snprintf(buf, sizeof(buf), "%s", "abcdefgh1234567");
    assert_int_equal(bsc_redact_cstr(rd, buf, sizeof(buf)), 0); /* 7 bytes: too short */
    snprintf(buf, sizeof(buf), "%s", "abcdefg12345678");
    assert_int_equal(bsc_redact_cstr(rd, buf, sizeof(buf)), 1);
    assert_string_equal(buf, "abcdefg[REDACTE");
    bsc_redact_free(rd);
}

static void test_set(void **state)
{
    struct bsc_redact *rd = bsc_redact_new();
    char buf[64] = "short secret";
    char key[32];

    (void)state;
    assert_int_equal(bsc_redact_cstr(rd, buf, sizeof(buf)), 0); /* empty set */
    assert_int_equal(bsc_redact_cstr(NULL, buf, sizeof(buf)), 0);
    assert_int_equal(bsc_redact_add(rd, BSC_STR("short")), BSC_OK); /* skipped */
    assert_int_equal(bsc_redact_count(rd), 0);
    assert_int_equal(bsc_redact_add(rd, BSC_STR("longer-secret")), BSC_OK);
    assert_int_equal(bsc_redact_add(rd, BSC_STR("longer-secret")), BSC_OK); /* duplicate */
    assert_int_equal(bsc_redact_count(rd), 1);
    assert_int_equal(bsc_redact_cstr(rd, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "short secret");
    for (size_t i = 1; i < BSC_REDACT_MAX; i++) {
        snprintf(key, sizeof(key), "key-%08zu", i);
        assert_int_equal(bsc_redact_add(rd, bsc_str_cstr(key)), BSC_OK);
    }
    assert_int_equal(bsc_redact_count(rd), BSC_REDACT_MAX);
    assert_int_equal(bsc_redact_add(rd, BSC_STR("one-too-many")), BSC_ELIMIT);
    snprintf(buf, sizeof(buf), "x key-%08d y longer-secret", 4095);
    assert_int_equal(bsc_redact_cstr(rd, buf, sizeof(buf)), 2);
    assert_string_equal(buf, "x [REDACTED] y [REDACTED]");
    bsc_redact_free(rd);
    bsc_redact_free(NULL);
}

/* Where two secrets share a start, the longer whole match wins. */
static void test_overlap(void **state)
{
    struct bsc_redact *rd = bsc_redact_new();
    char buf[64] = "k=AIza-1234567890-extra;";

    (void)state;
    assert_int_equal(bsc_redact_add(rd, BSC_STR("AIza-1234567890")), BSC_OK);
    assert_int_equal(bsc_redact_add(rd, BSC_STR("AIza-1234567890-extra")), BSC_OK);
    assert_int_equal(bsc_redact_cstr(rd, buf, sizeof(buf)), 1);
    assert_string_equal(buf, "k=[REDACTED];");
    bsc_redact_free(rd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_values),   cmocka_unit_test(test_partial_echoes),
        cmocka_unit_test(test_cap_and_growth), cmocka_unit_test(test_set),
        cmocka_unit_test(test_overlap),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
