/* SPDX-License-Identifier: MIT */
/* test_h1_wire_head.c -- the request head writer (upstream/h1_wire.c h1_request_head), which
 * writes into one reservation at a cursor and looks for CR/LF sixteen bytes at a time
 * (h1__has_cr_lf), against the writer it replaced (appends, memchr per byte kind), kept
 * here as the reference: the same return, the same bytes and length in the buffer (the
 * lines before a refused one included). Every byte value at every position of lines 0..48
 * bytes long, each in a heap block of exactly its size, so a read past it is an ASan
 * error; random header sets with defaults named, dropped and bad lines; the scheme test
 * (h1_url_is_http, h1_url_is_https) against strncasecmp. */
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

#include "core/ascii.h"
#include "core/compat.h"
#include "upstream/h1_wire.h"

/* ---- the reference: the writer before the cursor one ---- */

static unsigned ref_named(const char *const *headers, size_t n, size_t *total)
{
    static const struct {
        const char *name;
        size_t len;
        unsigned bit;
    } defaults[] = {{"Host", 4, 1}, {"Accept", 6, 2}, {"Accept-Encoding", 15, 4},
                    {"Content-Length", 14, 8}};
    unsigned named = 0;

    *total = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(headers[i]);

        *total += len + 2;
        for (size_t d = 0; d < sizeof(defaults) / sizeof(defaults[0]); d++)
            if (len > defaults[d].len && headers[i][defaults[d].len] == ':' &&
                bsc_ascii_ieq(headers[i], defaults[d].name, defaults[d].len))
                named |= defaults[d].bit;
    }
    return named;
}

static enum bsc_err ref_lines(struct bsc_buf *out, const char *const *headers, size_t n)
{
    enum bsc_err err = BSC_OK;

    for (size_t i = 0; i < n && !err; i++) {
        const char *h = headers[i], *v;
        size_t len = strlen(h);
        const char *colon = memchr(h, ':', len);

        if (!colon || colon == h || memchr(h, '\r', len) || memchr(h, '\n', len))
            return BSC_EINVAL;
        for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
            ;
        if (*v == '\0')
            continue;
        err = bsc_buf_append(out, h, len);
        if (!err)
            err = bsc_buf_append(out, "\r\n", 2);
    }
    return err;
}

static enum bsc_err ref_head(struct bsc_buf *out, const char *method, const struct h1_url *u,
                             const char *const *headers, size_t n, size_t body_len)
{
    size_t lines;
    unsigned named = ref_named(headers, n, &lines);
    enum bsc_err err = bsc_buf_reserve(out, strlen(method) + 1 + u->target.len + 11 + lines +
                                                8 + u->authority.len + 13 + 27 + 40 + 2);

    if (!err)
        err = bsc_buf_append_cstr(out, method);
    if (!err)
        err = bsc_buf_append_char(out, ' ');
    if (!err)
        err = bsc_buf_append(out, u->target.p, u->target.len);
    if (!err)
        err = bsc_buf_append(out, " HTTP/1.1\r\n", 11);
    if (!err)
        err = ref_lines(out, headers, n);
    if (!err && !(named & 1)) {
        err = bsc_buf_append_cstr(out, "Host: ");
        if (!err)
            err = bsc_buf_append(out, u->authority.p, u->authority.len);
        if (!err)
            err = bsc_buf_append(out, "\r\n", 2);
    }
    if (!err && !(named & 2))
        err = bsc_buf_append_cstr(out, "Accept: */*\r\n");
    if (!err && !(named & 4))
        err = bsc_buf_append_cstr(out, "Accept-Encoding: identity\r\n");
    if (!err && strcmp(method, "GET") != 0 && !(named & 8)) {
        err = bsc_buf_append_cstr(out, "Content-Length: ");
        if (!err)
            err = bsc_buf_append_u64(out, (unsigned long long)body_len);
        if (!err)
            err = bsc_buf_append(out, "\r\n", 2);
    }
    if (!err)
        err = bsc_buf_append(out, "\r\n", 2);
    return err;
}

/* ---- the comparisons ---- */

static bool ref_has_cr_lf(const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (p[i] == '\r' || p[i] == '\n')
            return true;
    return false;
}

/* Every byte value at every position of every length 0..48 (three sixteen-byte steps and
 * the overlapping tails between), in a block of exactly <len> bytes. */
static void test_cr_lf_every_byte(void **state)
{
    (void)state;
    for (size_t len = 0; len <= 48; len++) {
        char *p = malloc(len ? len : 1);

        assert_non_null(p);
        memset(p, 'a', len);
        assert_false(h1__has_cr_lf(p, len));
        for (size_t i = 0; i < len; i++) {
            for (unsigned c = 0; c < 256; c++) {
                p[i] = (char)c;
                if (h1__has_cr_lf(p, len) != ref_has_cr_lf(p, len))
                    fail_msg("len %zu, byte 0x%02x at %zu", len, c, i);
            }
            p[i] = 'a';
        }
        free(p);
    }
}

/* The writer and the reference on the same input, each into a buffer of <max> bytes that
 * already holds <pre>: the same return, length and bytes. */
static void expect_as_reference(const char *method, const char *url, const char *const *hs,
                                size_t n, size_t body_len, size_t max, const char *pre)
{
    struct bsc_buf got, want;
    struct h1_url u;
    enum bsc_err eg, ew;

    assert_int_equal(h1_url_split(url, &u), BSC_OK);
    bsc_buf_init(&got, max);
    bsc_buf_init(&want, max);
    if (*pre) {
        assert_int_equal(bsc_buf_append_cstr(&got, pre), BSC_OK);
        assert_int_equal(bsc_buf_append_cstr(&want, pre), BSC_OK);
    }
    eg = h1_request_head(&got, method, &u, hs, n, body_len);
    ew = ref_head(&want, method, &u, hs, n, body_len);
    if (eg != ew || got.len != want.len || (got.len && memcmp(got.p, want.p, got.len) != 0) ||
        (got.p && got.p[got.len] != '\0'))
        fail_msg("%s %s, %zu lines: got %d (%zu bytes) \"%.*s\", want %d (%zu bytes) \"%.*s\"",
                 method, url, n, (int)eg, got.len, (int)got.len, got.p ? got.p : "", (int)ew,
                 want.len, (int)want.len, want.p ? want.p : "");
    bsc_buf_cleanup(&got);
    bsc_buf_cleanup(&want);
}

/* A heap copy of exactly strlen + 1 bytes. */
static char *exact(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);

    assert_non_null(p);
    memcpy(p, s, n);
    return p;
}

/* One line of every length 1..40, each byte value at each position, between good lines. */
static void test_line_every_byte(void **state)
{
    char line[41];

    (void)state;
    for (size_t len = 1; len < sizeof(line); len++)
        for (size_t i = 0; i < len; i++)
            for (unsigned c = 1; c < 256; c++) { /* NUL ends the string: not a byte of it */
                const char *hs[3] = {"X-Before: 1", NULL, "X-After: 2"};

                memset(line, 'v', len);
                line[len] = '\0';
                if (len > 3)
                    line[1] = ':';
                line[i] = (char)c;
                hs[1] = exact(line);
                expect_as_reference("POST", "http://h:1/p", hs, 3, 7, 1 << 16, "");
                free((void *)hs[1]);
            }
}

static const char *const pool[] = {
    "Content-Type: application/json", "Accept:", "Accept: text/event-stream", "accept:  ",
    "Host: other:9", "HOST:", "Hostname: y", "Accept-Encoding: gzip", "accept-encoding:",
    "Accept-Language: en", "Content-Length: 5", "content-length:\t", "content-lengthx: 1",
    "Authorization: Bearer sk-0123456789abcdef0123456789abcdef", "X-Request-Id: 0123456789abcdef",
    "traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "X-E:x",
    "X-F:\t y ", "X-G:", "X-B: a\rb", "X-B: a\n", "\rX-B: a", "X-B a", ":v", "X-B: ok\r",
    "X-Long: 0123456789012345678901234567890123456789012345678901234567890123456789\n",
};

/* Random sets of lines from <pool>, methods, URLs, body lengths, a buffer holding bytes
 * before, and buffers too small (the reservation refused: nothing written). */
static void test_random_heads(void **state)
{
    static const char *const methods[] = {"POST", "GET", "HEAD", "PUT"};
    static const char *const urls[] = {"http://127.0.0.1:8000/v1/x", "http://h/",
                                       "https://[::1]:8443/a?b=c", "http://example.com"};
    static const size_t bodies[] = {0, 7, 12345, 18446744073709551615ull};
    static const size_t maxes[] = {1 << 16, 64, 200, 160};
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    const char *hs[80];

    (void)state;
    for (int round = 0; round < 20000; round++) {
        size_t n;

        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        n = (size_t)(seed >> 33) % 9;
        if (round % 500 == 0)
            n = 70 + (size_t)(seed >> 40) % 10; /* past the lengths kept from the first pass */
        for (size_t i = 0; i < n; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            /* mostly good lines: a bad one ends the head early */
            hs[i] = exact(pool[(size_t)(seed >> 33) % (seed >> 60 ? 19 : BSC_ARRAY_LEN(pool))]);
        }
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        expect_as_reference(methods[(seed >> 33) % 4], urls[(seed >> 36) % 4], hs, n,
                            bodies[(seed >> 39) % 4], maxes[(seed >> 42) % 4],
                            (seed >> 45) % 2 ? "before" : "");
        for (size_t i = 0; i < n; i++)
            free((void *)hs[i]);
    }
}

/* h1_url_is_http(s) against strncasecmp: every byte value at every position of the scheme,
 * and every cut of it, in heap blocks of exactly the string's size (a read past the NUL is
 * an ASan error). */
static void test_scheme_every_byte(void **state)
{
    static const char *const urls[] = {"http://h/", "https://h/"};

    (void)state;
    for (size_t k = 0; k < 2; k++)
        for (size_t len = 0; len <= strlen(urls[k]); len++)
            for (size_t i = 0; i < (len ? len : 1); i++)
                for (unsigned c = 0; c < 256; c++) {
                    char *u = malloc(len + 1);

                    assert_non_null(u);
                    memcpy(u, urls[k], len);
                    u[len] = '\0';
                    if (len)
                        u[i] = (char)c; /* a NUL cuts the string there */
                    assert_int_equal(h1_url_is_http(u), strncasecmp(u, "http://", 7) == 0);
                    assert_int_equal(h1_url_is_https(u), strncasecmp(u, "https://", 8) == 0);
                    free(u);
                }
    assert_false(h1_url_is_http(NULL));
    assert_false(h1_url_is_https(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cr_lf_every_byte),
        cmocka_unit_test(test_line_every_byte),
        cmocka_unit_test(test_random_heads),
        cmocka_unit_test(test_scheme_every_byte),
    };

    return cmocka_run_group_tests_name("h1_wire_head", tests, NULL, NULL);
}
