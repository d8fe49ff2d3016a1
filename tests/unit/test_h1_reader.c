/* SPDX-License-Identifier: MIT */
/* test_h1_reader.c -- edge cases of the server's own request reader (src/server/h1_parse.c)
 * that the http-parser wrapper it replaced decided in its own way, each fed whole and one
 * byte at a time (the outcome must not depend on the pieces): the version spelled
 * "HTTP/", Connection token lists, trailers (counted, their Connection obeyed, their names
 * and Content-Length checked as http-parser did), Content-Length forms, the bytes after
 * chunk data, chunk-size bytes >= 0x80, a Transfer-Encoding noted by its name's first 17
 * bytes, the 80 KiB raw cap, HTTP/0.9 lines refused only once the head is complete, and a
 * bad byte refused before its line ends. tests/fuzz/fuzz_h1_request_diff.c compares the
 * reader with the old wrapper on everything else. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <cmocka.h>

#include "core/compat.h"
#include "server/internal.h"

struct result {
    int rc;
    enum srv__h1_err err;
    size_t used;
    bool keep_alive;
    size_t body_len;
};

/* Feeds <len> bytes of <s> whole (<bytewise> false) or one at a time, with <max_head>. */
static struct result feed(const char *s, size_t len, bool bytewise, uint32_t max_head)
{
    struct srv__h1 h;
    struct result r = {0, SRV__H1_OK, 0, false, 0};

    srv__h1_init(&h, max_head, 1024);
    if (!bytewise) {
        r.rc = srv__h1_feed(&h, s, len, &r.used);
    } else {
        for (size_t i = 0; i < len && r.rc == 0; i++) {
            size_t u;

            r.rc = srv__h1_feed(&h, s + i, 1, &u);
            r.used += u;
        }
    }
    r.err = h.err;
    r.keep_alive = h.keep_alive;
    r.body_len = h.body.len;
    srv__h1_cleanup(&h);
    return r;
}

/* <s> gives <rc> and <err> whole and byte by byte; returns the whole run's result. */
static struct result expect(const char *s, size_t len, uint32_t max_head, int rc,
                            enum srv__h1_err err)
{
    struct result whole = feed(s, len, false, max_head);
    struct result bytes = feed(s, len, true, max_head);

    if (whole.rc != rc || whole.err != err || bytes.rc != rc || bytes.err != err)
        fail_msg("%.*s: whole rc %d err %d, bytewise rc %d err %d; want rc %d err %d",
                 (int)(len > 60 ? 60 : len), s, whole.rc, whole.err, bytes.rc, bytes.err, rc, err);
    assert_int_equal(whole.keep_alive, bytes.keep_alive);
    return whole;
}

static struct result expect_str(const char *s, int rc, enum srv__h1_err err)
{
    return expect(s, strlen(s), 4096, rc, err);
}

/* The version is "HTTP/" then d.d; http-parser took 'H' and any four bytes. */
static void test_version_literal(void **state)
{
    (void)state;
    expect_str("GET / HXYZ/1.1\r\nHost: a\r\n\r\n", -1, SRV__H1_E_BAD_REQUEST);
    expect_str("GET / http/1.1\r\nHost: a\r\n\r\n", -1, SRV__H1_E_BAD_REQUEST);
    expect_str("SOURCE / ICE/1.0\r\n\r\n", -1, SRV__H1_E_BAD_REQUEST);
    expect_str("GET /  HTTP/1.1\r\nHost: a\r\n\r\n", 1, SRV__H1_OK); /* spaces before it */
    /* any digit is read; only 1.0 and 1.1 pass, once the head is complete */
    expect_str("GET / HTTP/3.1\r\nHost: a\r\n", 0, SRV__H1_OK);
    expect_str("GET / HTTP/3.1\r\nHost: a\r\n\r\n", -1, SRV__H1_E_BAD_REQUEST);
}

/* Connection is a token list: close and keep-alive count wherever they are, with spaces
 * around them but nothing else. */
static void test_connection_tokens(void **state)
{
    (void)state;
    assert_false(
        expect_str("GET / HTTP/1.1\r\nHost: a\r\nConnection: foo, close\r\n\r\n", 1, SRV__H1_OK)
            .keep_alive);
    assert_false(
        expect_str("GET / HTTP/1.1\r\nHost: a\r\nProxy-Connection: Close \r\n\r\n", 1, SRV__H1_OK)
            .keep_alive);
    assert_true(
        expect_str("GET / HTTP/1.0\r\nConnection: te, keep-alive , x\r\n\r\n", 1, SRV__H1_OK)
            .keep_alive);
    /* a token that only starts like one, or a tab after it, is another token */
    assert_true(expect_str("GET / HTTP/1.1\r\nHost: a\r\nConnection: closed\r\n\r\n", 1, SRV__H1_OK)
                    .keep_alive);
    assert_true(
        expect_str("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\t\r\n\r\n", 1, SRV__H1_OK)
            .keep_alive);
}

/* Trailers: counted against the head limit, not kept, their Connection obeyed, their
 * Content-Length checked; a space in a trailer's name is let through. */
static void test_trailers(void **state)
{
    static const char chunked[] = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                                  "\r\n1\r\nx\r\n0\r\n";
    char req[512];
    struct result r;

    (void)state;
    snprintf(req, sizeof(req), "%sConnection: close\r\n\r\n", chunked);
    r = expect_str(req, 1, SRV__H1_OK);
    assert_false(r.keep_alive);
    assert_int_equal(r.body_len, 1);
    snprintf(req, sizeof(req), "%sX Y: 1\r\n\r\n", chunked);
    expect_str(req, 1, SRV__H1_OK);
    snprintf(req, sizeof(req), "%sContent-Length: x\r\n\r\n", chunked);
    expect_str(req, -1, SRV__H1_E_BAD_REQUEST);
    /* 56 head bytes (with the empty line), then 4 + 4 + 10 for the trailer */
    snprintf(req, sizeof(req), "%sX-Tr: 0123456789\r\n\r\n", chunked);
    expect(req, strlen(req), 74, 1, SRV__H1_OK);
    expect(req, strlen(req), 73, -1, SRV__H1_E_HEAD_TOO_LARGE);
}

static void test_content_length_forms(void **state)
{
    (void)state;
    expect_str("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3  \r\n\r\nabc", 1, SRV__H1_OK);
    expect_str("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1 2\r\n\r\n", -1,
               SRV__H1_E_BAD_REQUEST);
    expect_str("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n", -1,
               SRV__H1_E_BAD_REQUEST);
    /* empty: refused when the next line begins (before that it could still be folded) */
    expect_str("POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n", 0, SRV__H1_OK);
    expect_str("POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n", -1, SRV__H1_E_BAD_REQUEST);
    /* a name that is Content-Length with trailing spaces is read as one (then refused as
     * a name) */
    expect_str("POST / HTTP/1.1\r\nHost: a\r\nContent-Length : x\r\n\r\n", -1,
               SRV__H1_E_BAD_REQUEST);
}

/* The two bytes after chunk data: CRLF, or (as http-parser, which skipped them, let
 * through) two bytes that are neither CR nor LF; a CR or LF alone is refused. */
static void test_chunk_data_end(void **state)
{
    static const char *const refused[] = {"abc\n0\r\n\r\n", "abc\rX0\r\n\r\n", "abcX\n0\r\n\r\n",
                                          "abcX\r0\r\n\r\n"};
    char req[256];

    (void)state;
    snprintf(req, sizeof(req),
             "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
             "\r\n3\r\nabcXY0\r\n\r\n");
    assert_int_equal(expect_str(req, 1, SRV__H1_OK).body_len, 3);
    for (size_t i = 0; i < BSC_ARRAY_LEN(refused); i++) {
        snprintf(req, sizeof(req),
                 "POST / HTTP/1.1\r\nHost: a\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n3\r\n%s",
                 refused[i]);
        expect_str(req, -1, SRV__H1_E_BAD_REQUEST);
    }
}

/* A chunk-size byte >= 0x80 is a zero digit (http-parser's table); other bytes are refused. */
static void test_chunk_size_bytes(void **state)
{
    (void)state;
    assert_int_equal(expect_str("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                                "\r\n1\xff\r\n0123456789abcdef\r\n0\r\n\r\n",
                                1, SRV__H1_OK)
                         .body_len,
                     16);
    expect_str("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1g\r\n", -1,
               SRV__H1_E_BAD_REQUEST);
    expect_str("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
               "10000000000000000\r\n",
               -1, SRV__H1_E_BAD_REQUEST);
}

/* Any field name starting with "Transfer-Encoding" marks the request as transfer-coded,
 * as in http-parser: without chunked framing that is a 400; with Content-Length too, 400
 * before the head is judged. */
static void test_transfer_encoding_name(void **state)
{
    (void)state;
    expect_str("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encodings: x\r\n\r\n", -1,
               SRV__H1_E_BAD_REQUEST);
    expect_str("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\t\r\n\r\n", -1,
               SRV__H1_E_BAD_REQUEST);
    expect_str("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
               "Content-Length: 3\r\n\r\n",
               -1, SRV__H1_E_BAD_REQUEST);
}

/* Whitespace the canonical count skips is still bounded: 80 KiB of raw head bytes. */
static void test_raw_cap(void **state)
{
    static char req[90000];
    size_t n;

    (void)state;
    n = (size_t)snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: a\r\nX:");
    memset(req + n, ' ', 82000);
    n += 82000;
    n += (size_t)snprintf(req + n, sizeof(req) - n, "v\r\n\r\n");
    expect(req, n, 65536, -1, SRV__H1_E_HEAD_TOO_LARGE);
    /* leading empty lines count too */
    for (n = 0; n + 2 <= 82000; n += 2)
        memcpy(req + n, "\r\n", 2);
    n += (size_t)snprintf(req + n, sizeof(req) - n, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    expect(req, n, 65536, -1, SRV__H1_E_HEAD_TOO_LARGE);
}

/* Whichever comes first byte by byte decides, however the bytes arrive: a value over the
 * head limit before a bad byte in it is a 431 (the wrapper said 400 when both came in one
 * piece), a bad byte before the limit a 400. */
static void test_first_fault_wins(void **state)
{
    char req[256];

    (void)state;
    snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: a\r\nX: %040d\x01\r\n\r\n", 0);
    expect(req, strlen(req), 64, -1, SRV__H1_E_HEAD_TOO_LARGE);
    snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: a\r\nX: 0\x01%040d\r\n\r\n", 0);
    expect(req, strlen(req), 64, -1, SRV__H1_E_BAD_REQUEST);
}

/* A request line without a version (HTTP/0.9) is read to the end of its head and refused
 * there, so a head over the limit is a 431 first. */
static void test_http09(void **state)
{
    char req[256];

    (void)state;
    expect_str("GET /x\r\nHost: a\r\n", 0, SRV__H1_OK);
    expect_str("GET /x\r\nHost: a\r\n\r\n", -1, SRV__H1_E_BAD_REQUEST);
    snprintf(req, sizeof(req), "GET /x\r\nHost: %060d\r\n\r\n", 0);
    expect(req, strlen(req), 64, -1, SRV__H1_E_HEAD_TOO_LARGE);
}

/* A bad byte is refused when it arrives, not when its line ends; a method is judged as a
 * prefix until its space. */
static void test_refused_at_the_byte(void **state)
{
    (void)state;
    expect_str("GET / HTTP/1.1\r\nHost: a\x01", -1, SRV__H1_E_BAD_REQUEST);
    expect_str("GET /a\x7f", -1, SRV__H1_E_BAD_REQUEST);
    expect_str("GE", 0, SRV__H1_OK);
    expect_str("GX", -1, SRV__H1_E_BAD_REQUEST);
    expect_str("MKCALENDAR / HTTP/1.1\r\nHost: a\r\n\r\n", 1, SRV__H1_OK);
    expect_str("\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", 1, SRV__H1_OK);
    expect_str("\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", -1, SRV__H1_E_BAD_REQUEST);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_literal),
        cmocka_unit_test(test_connection_tokens),
        cmocka_unit_test(test_trailers),
        cmocka_unit_test(test_content_length_forms),
        cmocka_unit_test(test_chunk_data_end),
        cmocka_unit_test(test_chunk_size_bytes),
        cmocka_unit_test(test_transfer_encoding_name),
        cmocka_unit_test(test_raw_cap),
        cmocka_unit_test(test_first_fault_wins),
        cmocka_unit_test(test_http09),
        cmocka_unit_test(test_refused_at_the_byte),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
