/* SPDX-License-Identifier: MIT */
/* test_h1_parse.c -- the pure HTTP/1 request reader (src/server/h1_parse.c), no
 * sockets: message boundaries, split input, URL forms, header storage and lookup, the head
 * and body limits at limit-1/limit/limit+1, framing refusals, keep-alive and Expect. */
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

struct fx {
    struct srv__h1 h;
};

static int setup(void **state)
{
    struct fx *fx = calloc(1, sizeof(*fx));

    if (!fx)
        return -1;
    srv__h1_init(&fx->h, 4096, 1024);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fx *fx = *state;

    srv__h1_cleanup(&fx->h);
    free(fx);
    return 0;
}

static void reset(struct fx *fx, uint32_t max_head, uint64_t max_body)
{
    srv__h1_next(&fx->h, max_head, max_body);
}

/* Feeds all of <s> in one call; returns the feed result and the bytes used. */
static int feed_all(struct fx *fx, const char *s, size_t *used)
{
    return srv__h1_feed(&fx->h, s, strlen(s), used);
}

/* Feeds <s> one byte at a time until the message completes or fails. */
static int feed_bytes(struct fx *fx, const char *s, size_t *used)
{
    size_t n = strlen(s), i, u;
    int rc = 0;

    for (i = 0; i < n; i++) {
        rc = srv__h1_feed(&fx->h, s + i, 1, &u);
        if (rc == 0)
            assert_int_equal(u, 1);
        if (rc != 0) {
            i += u;
            break;
        }
    }
    *used = i;
    return rc;
}

static void assert_str(struct bsc_str got, const char *want)
{
    assert_non_null(got.p);
    assert_int_equal(got.len, strlen(want));
    assert_memory_equal(got.p, want, got.len);
}

static void test_simple_get(void **state)
{
    struct fx *fx = *state;
    const char *req = "GET /v1/models?limit=2 HTTP/1.1\r\nHost: a\r\nX-Two:  b c \t\r\n\r\n";
    size_t used;

    assert_int_equal(feed_all(fx, req, &used), 1);
    assert_int_equal(used, strlen(req));
    assert_true(fx->h.head_done && fx->h.complete && fx->h.keep_alive);
    assert_false(fx->h.http10);
    assert_str(srv__h1_method(&fx->h), "GET");
    assert_str(fx->h.path, "/v1/models");
    assert_str(fx->h.query, "limit=2");
    assert_int_equal(fx->h.n_hdrs, 2);
    assert_str(srv__h1_header(&fx->h, BSC_STR("HOST")), "a");
    assert_str(srv__h1_header(&fx->h, BSC_STR("x-two")), "b c"); /* both ends trimmed */
    assert_null(srv__h1_header(&fx->h, BSC_STR("x-three")).p);
    assert_str(srv__h1_header_at(&fx->h, 1).name, "X-Two");
    assert_null(srv__h1_header_at(&fx->h, 2).name.p);
    assert_int_equal(fx->h.head_bytes, strlen(req) - 1); /* all but the 2nd leading space */
    /* A complete message is sticky until next(). */
    assert_int_equal(feed_all(fx, "GET / HTTP/1.1\r\nHost: a\r\n\r\n", &used), 1);
    assert_int_equal(used, 0);
}

static void test_split_matches_whole(void **state)
{
    struct fx *fx = *state;
    const char *req = "POST /p/q?x=1 HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
                      "Transfer-Encoding: chunked\r\nX-A: 1\r\nx-a: 2\r\n\r\n"
                      "4;name=v\r\nabcd\r\n3\r\nefg\r\n0\r\nTrailer-X: 1\r\n\r\n";
    size_t used;

    assert_int_equal(feed_bytes(fx, req, &used), 1);
    assert_int_equal(used, strlen(req));
    assert_str(fx->h.path, "/p/q");
    assert_str(fx->h.query, "x=1");
    assert_int_equal(fx->h.n_hdrs, 5); /* the trailer is not kept */
    assert_str(srv__h1_header(&fx->h, BSC_STR("X-A")), "1"); /* the first of a repeat */
    assert_str(srv__h1_header(&fx->h, BSC_STR("content-type")), "application/json");
    assert_str(bsc_str_make(fx->h.body.p, fx->h.body.len), "abcdefg");
    reset(fx, 4096, 1024);
    assert_int_equal(feed_all(fx, req, &used), 1);
    assert_str(bsc_str_make(fx->h.body.p, fx->h.body.len), "abcdefg");
    assert_int_equal(fx->h.n_hdrs, 5);
}

static void test_pipelined_boundary(void **state)
{
    struct fx *fx = *state;
    const char *two = "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nok"
                      "GET /b HTTP/1.1\r\nHost: a\r\n\r\n";
    size_t used, first;

    assert_int_equal(feed_all(fx, two, &used), 1);
    first = used;
    assert_int_equal(first, strlen(two) - strlen("GET /b HTTP/1.1\r\nHost: a\r\n\r\n"));
    assert_str(bsc_str_make(fx->h.body.p, fx->h.body.len), "ok");
    reset(fx, 4096, 1024);
    assert_int_equal(srv__h1_feed(&fx->h, two + first, strlen(two) - first, &used), 1);
    assert_str(fx->h.path, "/b");
    assert_int_equal(fx->h.body.len, 0);
}

static void test_url_forms(void **state)
{
    struct fx *fx = *state;
    size_t used;

    assert_int_equal(feed_all(fx, "GET http://h:8/x/y?q=1#f HTTP/1.1\r\nHost: a\r\n\r\n", &used),
                     1);
    assert_str(fx->h.path, "/x/y");
    assert_str(fx->h.query, "q=1");
    reset(fx, 4096, 1024);
    assert_int_equal(feed_all(fx, "GET http://h HTTP/1.1\r\nHost: a\r\n\r\n", &used), 1);
    assert_str(fx->h.path, "/");
    assert_int_equal(fx->h.query.len, 0);
    reset(fx, 4096, 1024);
    assert_int_equal(feed_all(fx, "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", &used), 1);
    assert_str(fx->h.path, "*");
    reset(fx, 4096, 1024);
    assert_int_equal(feed_all(fx, "GET /p#frag?no HTTP/1.1\r\nHost: a\r\n\r\n", &used), 1);
    assert_str(fx->h.path, "/p");
    assert_int_equal(fx->h.query.len, 0);
    reset(fx, 4096, 1024);
    assert_int_equal(feed_all(fx, "GET /p? HTTP/1.1\r\nHost: a\r\n\r\n", &used), 1);
    assert_str(fx->h.path, "/p");
    assert_int_equal(fx->h.query.len, 0);
}

/* An absolute-form target keeps its authority for the Host policy; only http(s), and no
 * userinfo. Origin-form has none. */
static void test_absolute_form_authority(void **state)
{
    static const char *const refused[] = {
        "GET ftp://h/x HTTP/1.1\r\nHost: h\r\n\r\n",
        "GET http://user:pw@h/x HTTP/1.1\r\nHost: h\r\n\r\n",
        "GET http://user@h/x HTTP/1.1\r\nHost: h\r\n\r\n",
        "GET http://@h/x HTTP/1.1\r\nHost: h\r\n\r\n", /* empty userinfo */
    };
    struct fx *fx = *state;
    size_t used;

    assert_int_equal(feed_all(fx, "POST http://Evil.Example:8080/v1/x?q HTTP/1.1\r\nHost: "
                                  "localhost\r\nContent-Length: 0\r\n\r\n",
                              &used),
                     1);
    assert_str(fx->h.authority, "Evil.Example:8080");
    assert_str(fx->h.path, "/v1/x");
    assert_str(fx->h.query, "q");
    reset(fx, 4096, 1024);
    assert_int_equal(feed_all(fx, "GET HTTPS://[::1]:9?x HTTP/1.1\r\nHost: a\r\n\r\n", &used),
                     1);
    assert_str(fx->h.authority, "[::1]:9");
    assert_str(fx->h.path, "/");
    reset(fx, 4096, 1024);
    assert_int_equal(feed_all(fx, "GET http://h HTTP/1.1\r\nHost: a\r\n\r\n", &used), 1);
    assert_str(fx->h.authority, "h");
    reset(fx, 4096, 1024);
    assert_int_equal(feed_all(fx, "GET /p HTTP/1.1\r\nHost: a\r\n\r\n", &used), 1);
    assert_null(fx->h.authority.p);
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        reset(fx, 4096, 1024);
        assert_int_equal(feed_all(fx, refused[i], &used), -1);
        assert_int_equal(fx->h.err, SRV__H1_E_BAD_REQUEST);
    }
}

static void test_head_limit_boundary(void **state)
{
    struct fx *fx = *state;
    char req[512], pad[300];
    size_t used;

    memset(pad, 'x', sizeof(pad));
    /* 20 + 9 (Host: a) + 7 + pad + 2 + 2 = 40 + pad bytes. */
    for (int extra = -1; extra <= 1; extra++) {
        reset(fx, 256, 1024);
        snprintf(req, sizeof(req), "GET /echo HTTP/1.1\r\nHost: a\r\nX-Pad: %.*s\r\n\r\n",
                 216 + extra, pad);
        if (extra <= 0) {
            assert_int_equal(feed_all(fx, req, &used), 1);
            assert_int_equal(fx->h.head_bytes, 256 + extra);
        } else {
            assert_int_equal(feed_all(fx, req, &used), -1);
            assert_int_equal(fx->h.err, SRV__H1_E_HEAD_TOO_LARGE);
            assert_non_null(fx->h.why);
        }
    }
    /* A failed parser stays failed. */
    assert_int_equal(feed_all(fx, "GET / HTTP/1.1\r\nHost: a\r\n\r\n", &used), -1);
    assert_int_equal(used, 0);
}

static void test_too_many_headers(void **state)
{
    struct fx *fx = *state;
    static char req[8192];
    size_t n, used;

    for (int count = SRV__H1_MAX_HEADERS; count <= SRV__H1_MAX_HEADERS + 1; count++) {
        reset(fx, 65536, 1024);
        n = (size_t)snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: a\r\n");
        for (int i = 1; i < count; i++) /* Host is the first */
            n += (size_t)snprintf(req + n, sizeof(req) - n, "H%d: v\r\n", i);
        snprintf(req + n, sizeof(req) - n, "\r\n");
        if (count == SRV__H1_MAX_HEADERS) {
            assert_int_equal(feed_all(fx, req, &used), 1);
            assert_int_equal(fx->h.n_hdrs, SRV__H1_MAX_HEADERS);
            assert_str(srv__h1_header(&fx->h, BSC_STR("h255")), "v");
            assert_str(srv__h1_header(&fx->h, BSC_STR("host")), "a");
        } else {
            assert_int_equal(feed_all(fx, req, &used), -1);
            assert_int_equal(fx->h.err, SRV__H1_E_HEAD_TOO_LARGE);
        }
    }
}

static void test_body_limit_boundary(void **state)
{
    struct fx *fx = *state;
    size_t used;

    reset(fx, 4096, 4);
    assert_int_equal(
        feed_all(fx, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nabcd", &used), 1);
    reset(fx, 4096, 4);
    /* Refused at the head, before any body byte. */
    assert_int_equal(
        feed_all(fx, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n", &used), -1);
    assert_int_equal(fx->h.err, SRV__H1_E_BODY_TOO_LARGE);
    assert_true(fx->h.head_done);
    reset(fx, 4096, 4);
    assert_int_equal(feed_all(fx, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                                  "3\r\nabc\r\n1\r\nd\r\n0\r\n\r\n", &used), 1);
    assert_int_equal(fx->h.body.len, 4);
    reset(fx, 4096, 4);
    /* Refused at the chunk size line, before its data. */
    assert_int_equal(feed_all(fx, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                                  "3\r\nabc\r\n2\r\n", &used), -1);
    assert_int_equal(fx->h.err, SRV__H1_E_BODY_TOO_LARGE);
    assert_int_equal(fx->h.body.len, 3);
}

static void test_framing_refusals(void **state)
{
    static const struct {
        const char *req;
        enum srv__h1_err err;
    } cases[] = {
        {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n",
         SRV__H1_E_NOT_IMPLEMENTED},
        {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
         SRV__H1_E_NOT_IMPLEMENTED},
        {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
         "Transfer-Encoding: chunked\r\n\r\n",
         SRV__H1_E_BAD_REQUEST},
        {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
         SRV__H1_E_BAD_REQUEST},
        {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
         SRV__H1_E_BAD_REQUEST},
        {"CONNECT h:443 HTTP/1.1\r\nHost: a\r\n\r\n", SRV__H1_E_NOT_IMPLEMENTED},
        {"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n", SRV__H1_E_BAD_REQUEST},
        {"GET / HTTP/1.1\r\nHost: a\r\nBad Name: x\r\n\r\n", SRV__H1_E_BAD_REQUEST},
        {"GARBAGE\r\n\r\n", SRV__H1_E_BAD_REQUEST},
        {"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\n\r\n", SRV__H1_E_BAD_REQUEST},
        /* bare LF after a chunk size or chunk data, a CR without LF: http-parser refuses */
        {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n",
         SRV__H1_E_BAD_REQUEST},
        {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\n0\r\n\r\n",
         SRV__H1_E_BAD_REQUEST},
        {"GET / HTTP/1.1\r\nHost: a\rX-A: 1\r\n\r\n", SRV__H1_E_BAD_REQUEST},
    };
    struct fx *fx = *state;
    size_t used;

    for (size_t i = 0; i < BSC_ARRAY_LEN(cases); i++) {
        reset(fx, 4096, 1024);
        assert_int_equal(feed_all(fx, cases[i].req, &used), -1);
        if (fx->h.err != cases[i].err)
            fail_msg("case %zu: err %d, want %d", i, fx->h.err, cases[i].err);
    }
}

static void test_keep_alive_and_expect(void **state)
{
    static const struct {
        const char *req;
        bool keep_alive, expect, http10;
    } cases[] = {
        {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", true, false, false},
        {"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", false, false, false},
        {"GET / HTTP/1.0\r\n\r\n", false, false, true},
        {"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true, false, true},
        {"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 0\r\n\r\n", true,
         true,
         false},
        {"POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n", false, false,
         true},
        {"POST / HTTP/1.1\r\nHost: a\r\nExpect: something\r\nContent-Length: 0\r\n\r\n", true,
         false,
         false},
    };
    struct fx *fx = *state;
    size_t used;

    for (size_t i = 0; i < BSC_ARRAY_LEN(cases); i++) {
        reset(fx, 4096, 1024);
        assert_int_equal(feed_all(fx, cases[i].req, &used), 1);
        assert_int_equal(fx->h.keep_alive, cases[i].keep_alive);
        assert_int_equal(fx->h.expect_continue, cases[i].expect);
        assert_int_equal(fx->h.http10, cases[i].http10);
    }
}

static void test_partial_and_head(void **state)
{
    struct fx *fx = *state;
    size_t used;

    assert_int_equal(feed_all(fx, "HEAD /x HTTP/1.1\r\nHo", &used), 0);
    assert_false(fx->h.head_done);
    assert_int_equal(feed_all(fx, "st: y\r\n\r\n", &used), 1);
    assert_true(srv__h1_is_head(&fx->h));
    assert_str(srv__h1_header(&fx->h, BSC_STR("host")), "y");
    /* The head is done but the body is still to come. */
    reset(fx, 4096, 1024);
    assert_int_equal(
        feed_all(fx, "PUT /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\na", &used), 0);
    assert_true(fx->h.head_done);
    assert_false(fx->h.complete);
    assert_int_equal(srv__h1_feed(&fx->h, "", 0, &used), 0); /* zero bytes: not EOF */
    assert_int_equal(feed_all(fx, "bc", &used), 1);
    assert_int_equal(fx->h.body.len, 3);
}

/* Big buffers are released between messages so an idle connection stays small. */
static void test_next_releases_big_buffers(void **state)
{
    struct fx *fx = *state;
    static char req[80000];
    size_t n, used;

    reset(fx, 65536, 1 << 20);
    n = (size_t)snprintf(req, sizeof(req),
                         "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n",
                         60000);
    memset(req + n, 'b', 60000);
    req[n + 60000] = '\0';
    assert_int_equal(feed_all(fx, req, &used), 1);
    assert_true(fx->h.body.cap >= 60000);
    reset(fx, 65536, 1 << 20);
    assert_int_equal(fx->h.body.cap, 0);
    assert_int_equal(fx->h.body.len, 0);
}

/* RFC 9112 strictness http-parser lacks: each of these is accepted by http-parser alone and
 * must be a 400, whether fed whole or byte by byte. */
static void test_strict_framing(void **state)
{
    static const char *const cases[] = {
        /* a bare LF inside a chunk extension: a front proxy may end the size line there */
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
        "3;ext\nxx\r\nabc\r\n0\r\n\r\n",
        /* obs-fold: a header line that starts with SP or HT */
        "GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n folded\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n\tfolded\r\n\r\n",
        /* bare LF line endings: the request line, a header line, the empty line */
        "GET / HTTP/1.1\nHost: a\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\nX-A: 1\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\n\n",
        /* Host: missing on HTTP/1.1, repeated on 1.1 and 1.0 */
        "GET / HTTP/1.1\r\nX-A: 1\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        "GET / HTTP/1.0\r\nHost: a\r\nhost: a\r\n\r\n",
        /* versions other than 1.0 and 1.1 */
        "GET / HTTP/2.0\r\nHost: a\r\n\r\n",
        "GET / HTTP/1.2\r\nHost: a\r\n\r\n",
        "GET / HTTP/0.9\r\nHost: a\r\n\r\n",
    };
    struct fx *fx = *state;
    size_t used;

    for (size_t i = 0; i < BSC_ARRAY_LEN(cases); i++) {
        for (int split = 0; split <= 1; split++) {
            int rc;

            reset(fx, 4096, 1024);
            rc = split ? feed_bytes(fx, cases[i], &used) : feed_all(fx, cases[i], &used);
            if (rc != -1 || fx->h.err != SRV__H1_E_BAD_REQUEST)
                fail_msg("case %zu (split %d): rc %d, err %d", i, split, rc, fx->h.err);
        }
    }
}

/* What the strict checks must still let through. */
static void test_strict_framing_accepts(void **state)
{
    static const char *const cases[] = {
        /* an empty line before the request line (RFC 9112 §2.2) */
        "\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
        /* bare LF and CR inside body data are data */
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\na\nb\r",
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
        "4;x=\"y\"\r\n\n\r\n\n\r\n0\r\n\r\n",
        /* HTTP/1.0 may leave Host out */
        "GET / HTTP/1.0\r\n\r\n",
    };
    struct fx *fx = *state;
    size_t used;

    for (size_t i = 0; i < BSC_ARRAY_LEN(cases); i++) {
        for (int split = 0; split <= 1; split++) {
            int rc;

            reset(fx, 4096, 1024);
            rc = split ? feed_bytes(fx, cases[i], &used) : feed_all(fx, cases[i], &used);
            if (rc != 1)
                fail_msg("case %zu (split %d): rc %d, err %d (%s)", i, split, rc, fx->h.err,
                         fx->h.why ? fx->h.why : "");
            assert_int_equal(used, strlen(cases[i]));
        }
    }
}

/* The check stops at the end of a message: the next pipelined one is judged on its own. */
static void test_strict_framing_pipelined(void **state)
{
    struct fx *fx = *state;
    const char *two = "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx"
                      "GET /b HTTP/1.1\nHost: a\r\n\r\n";
    size_t used;

    assert_int_equal(feed_all(fx, two, &used), 1);
    assert_str(fx->h.path, "/a");
    reset(fx, 4096, 1024);
    assert_int_equal(srv__h1_feed(&fx->h, two + used, strlen(two) - used, &used), -1);
    assert_int_equal(fx->h.err, SRV__H1_E_BAD_REQUEST);
}

/* A tchar as RFC 9110 lists them (the reference the sixteen-byte name scan is held to). */
static bool ref_tchar(unsigned char c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* What a request whose field name has <c> at <at> must come to, from the rules. */
static const char *name_byte_why(unsigned char c, size_t at)
{
    if (ref_tchar(c))
        return NULL;
    if (c == ':')
        return at == 0 ? "invalid character in header" : NULL;
    if (at == 0 && (c == ' ' || c == '\t')) /* after the Host line: a fold */
        return "obsolete line folding in the header";
    if (c == ' ')
        return "invalid character in a header name";
    return "invalid character in header";
}

/* Feeds <n> bytes of <s> cut at <cut> (0: whole); the feed result. */
static int feed_cut(struct fx *fx, const char *s, size_t n, size_t cut)
{
    size_t used = 0;
    int rc = 0;

    if (cut) {
        rc = srv__h1_feed(&fx->h, s, cut, &used);
        if (rc != 0)
            return rc;
        assert_int_equal(used, cut);
    }
    return srv__h1_feed(&fx->h, s + cut, n - cut, &used);
}

/* Every byte (but CR and LF) at every position of field names 1 to 40 bytes long: every
 * place of the sixteen-byte steps and of the byte-at-a-time tail; a few cut by a read at
 * every position. A name taken is found by srv__h1_header under its own bytes. */
static void test_name_bytes(void **state)
{
    struct fx *fx = *state;
    static const char start[] = "GET / HTTP/1.1\r\nHost: h\r\n", end[] = ": v\r\n\r\n";

    for (size_t len = 1; len <= 40; len++) {
        for (size_t at = 0; at < len; at++) {
            for (unsigned c = 0; c < 256; c++) {
                char text[128];
                size_t n = sizeof(start) - 1;
                const char *why = name_byte_why((unsigned char)c, at);
                bool cuts = c == 'x' || c == ':' || c == ' ' || c == 0x80 || c == '{';

                if (c == '\r' || c == '\n')
                    continue;
                memcpy(text, start, n);
                memset(text + n, 'n', len);
                text[n + at] = (char)c;
                n += len;
                memcpy(text + n, end, sizeof(end) - 1);
                n += sizeof(end) - 1;
                for (size_t cut = 0; cut < (cuts ? n : 1); cut++) {
                    int rc;

                    reset(fx, 4096, 1024);
                    rc = feed_cut(fx, text, n, cut);
                    if (why ? (rc != -1 || strcmp(fx->h.why, why) != 0) : rc != 1)
                        fail_msg("name of %zu, 0x%02x at %zu, cut %zu: rc %d why [%s]", len, c,
                                 at, cut, rc, fx->h.why ? fx->h.why : "");
                    if (!why && c != ':')
                        assert_str(srv__h1_header(&fx->h, bsc_str_make(text + sizeof(start) - 1,
                                                                       len)),
                                   "v");
                }
            }
        }
    }
}

/* The name filter in front of srv__h1_header: names that share a length or a first byte
 * (or both, modulo 64) with a present one are looked for and not found; present names are
 * found in any case; before the head is done every field read so far is found. */
static void test_header_lookup_filter(void **state)
{
    struct fx *fx = *state;
    char long_a[66], long_bang[66];
    char head[256];
    size_t used;

    memset(long_a, 'a', 65);
    long_a[65] = '\0';
    memcpy(long_bang, long_a, sizeof(long_bang));
    long_bang[0] = '!';
    snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nX-Req: 2\r\n%s: 3\r\n\r\n",
             long_a);
    assert_int_equal(feed_all(fx, head, &used), 1);
    assert_str(srv__h1_header(&fx->h, BSC_STR("host")), "h");
    assert_str(srv__h1_header(&fx->h, BSC_STR("HOST")), "h");
    assert_str(srv__h1_header(&fx->h, BSC_STR("a")), "1");
    assert_str(srv__h1_header(&fx->h, BSC_STR("x-req")), "2");
    assert_str(srv__h1_header(&fx->h, BSC_STR("X-REQ")), "2");
    assert_str(srv__h1_header(&fx->h, bsc_str_cstr(long_a)), "3");
    assert_null(srv__h1_header(&fx->h, BSC_STR("hose")).p);   /* length and first byte */
    assert_null(srv__h1_header(&fx->h, BSC_STR("x-rex")).p);  /* ditto */
    assert_null(srv__h1_header(&fx->h, BSC_STR("!")).p);      /* 'a' & 63 == '!' & 63 */
    assert_null(srv__h1_header(&fx->h, bsc_str_cstr(long_bang)).p);
    assert_null(srv__h1_header(&fx->h, BSC_STR("b")).p);      /* length only */
    assert_null(srv__h1_header(&fx->h, BSC_STR("hostx")).p);  /* first byte only */
    assert_null(srv__h1_header(&fx->h, BSC_STR("")).p);

    reset(fx, 4096, 1024);
    assert_int_equal(feed_all(fx, "GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nX-B", &used), 0);
    assert_str(srv__h1_header(&fx->h, BSC_STR("x-a")), "1");
    assert_str(srv__h1_header(&fx->h, BSC_STR("x-b")), "");   /* its slot, not yet valued */
    assert_null(srv__h1_header(&fx->h, BSC_STR("x-c")).p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_simple_get, setup, teardown),
        cmocka_unit_test_setup_teardown(test_split_matches_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipelined_boundary, setup, teardown),
        cmocka_unit_test_setup_teardown(test_absolute_form_authority, setup, teardown),
        cmocka_unit_test_setup_teardown(test_url_forms, setup, teardown),
        cmocka_unit_test_setup_teardown(test_head_limit_boundary, setup, teardown),
        cmocka_unit_test_setup_teardown(test_too_many_headers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_body_limit_boundary, setup, teardown),
        cmocka_unit_test_setup_teardown(test_framing_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keep_alive_and_expect, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partial_and_head, setup, teardown),
        cmocka_unit_test_setup_teardown(test_next_releases_big_buffers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_strict_framing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_strict_framing_accepts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_strict_framing_pipelined, setup, teardown),
        cmocka_unit_test_setup_teardown(test_name_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_header_lookup_filter, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
