/* SPDX-License-Identifier: MIT */
/* test_resp_header_bad.c -- which of a handler's response headers the server drops
 * (server/resp.c srv__header_bad), against a byte-by-byte reference: every byte value at
 * every position of names and values 1..48 bytes long (the check reads sixteen bytes at a
 * time, the last block overlapping; up to sixteen, two overlapping words; under eight, one
 * word of overlapping or picked bytes), also in heap blocks of exactly their size, the
 * server's own names in any case, random headers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "server/internal.h"

/* The reference: a name of token bytes but ':', a value without CR, LF or NUL, not a
 * header the server writes itself. */
static const char *ref_header_bad(const struct srv_header *h)
{
    static const char *const ours[] = {"content-length", "transfer-encoding", "connection"};

    if (!h->name.len)
        return "empty name";
    for (size_t i = 0; i < h->name.len; i++) {
        unsigned char ch = (unsigned char)h->name.p[i];
        if (ch <= 0x20 || ch >= 0x7f || ch == ':')
            return "invalid name";
    }
    for (size_t i = 0; i < h->value.len; i++) {
        char ch = h->value.p[i];
        if (ch == '\r' || ch == '\n' || ch == '\0')
            return "CR, LF or NUL in the value";
    }
    for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
        if (h->name.len == strlen(ours[i]) && strncasecmp(h->name.p, ours[i], h->name.len) == 0)
            return "set by the server";
    return NULL;
}

static void expect_as_reference(struct bsc_str name, struct bsc_str value)
{
    struct srv_header h = {name, value};
    const char *got = srv__header_bad(&h), *want = ref_header_bad(&h);

    if ((got == NULL) != (want == NULL) || (got && strcmp(got, want) != 0))
        fail_msg("name \"%.*s\" (%zu bytes), value \"%.*s\" (%zu bytes): got %s, want %s",
                 (int)name.len, name.p, name.len, (int)value.len, value.p, value.len,
                 got ? got : "kept", want ? want : "kept");
}

/* Every byte value at every position of the <n> bytes at <text> (overwritten), as a name
 * and then as a value. */
static void every_byte_at_every_position(char *text, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (unsigned c = 0; c < 256; c++) {
            memset(text, 'x', n);
            text[i] = (char)c;
            expect_as_reference(bsc_str_make(text, n), BSC_STR("v"));
            expect_as_reference(BSC_STR("x-h"), bsc_str_make(text, n));
        }
}

/* Every byte value at every position of a name, then of a value, each 1..48 bytes long. */
static void test_every_byte_everywhere(void **state)
{
    char text[48];

    (void)state;
    for (size_t n = 1; n <= sizeof(text); n++)
        every_byte_at_every_position(text, n);
    expect_as_reference(BSC_STR_NULL, BSC_STR("v"));
    expect_as_reference(BSC_STR("x-h"), BSC_STR_NULL);
}

static void test_server_names(void **state)
{
    static const char *const names[] = {
        "content-length", "Content-Length", "CONTENT-LENGTH", "content-lengthx", "content-lengt",
        "transfer-encoding", "Transfer-Encoding", "connection", "Connection", "connectio",
        "x-connection", "keep-alive", "x-request-id",
    };

    (void)state;
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
        expect_as_reference(bsc_str_cstr(names[k]), BSC_STR("1"));
}

/* Random names and values up to 70 bytes, mostly of allowed bytes. */
static void test_random_headers(void **state)
{
    uint64_t x = 0x9e3779b97f4a7c15ull;
    char name[70], value[70];

    (void)state;
    for (int round = 0; round < 200000; round++) {
        size_t nl, vl;

        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        nl = (size_t)(x % 71), vl = (size_t)((x >> 8) % 71);
        for (size_t i = 0; i < nl + vl; i++) {
            char *c = i < nl ? &name[i] : &value[i - nl];

            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            *c = (x >> 20) % 64 == 0 ? (char)(x >> 32) : (char)('a' + (x >> 32) % 26);
        }
        expect_as_reference(bsc_str_make(name, nl), bsc_str_make(value, vl));
    }
}

/* Every byte value at every position of names and values 1..48 bytes long, each in a heap
 * block of exactly its size: the loads (sixteen bytes, two overlapping words, four and four
 * bytes, or the first, middle and last byte) read nothing past it, which ASan would report. */
static void test_exact_blocks(void **state)
{
    (void)state;
    for (size_t n = 1; n <= 48; n++) {
        char *text = malloc(n);

        assert_non_null(text);
        every_byte_at_every_position(text, n);
        /* two flagged bytes: the first and the last, the middle alone */
        memset(text, 'x', n);
        text[0] = text[n - 1] = '\r';
        expect_as_reference(BSC_STR("x-h"), bsc_str_make(text, n));
        memset(text, 'x', n);
        text[n / 2] = ':';
        expect_as_reference(bsc_str_make(text, n), BSC_STR("v"));
        free(text);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_byte_everywhere),
        cmocka_unit_test(test_server_names),
        cmocka_unit_test(test_random_headers),
        cmocka_unit_test(test_exact_blocks),
    };

    return cmocka_run_group_tests_name("resp_header_bad", tests, NULL, NULL);
}
