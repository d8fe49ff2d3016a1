/* SPDX-License-Identifier: MIT */
/* test_h1_wire.c -- the builtin HTTP/1.1 client's pure parts (upstream/h1_wire.c): URL
 * splitting, the request head (defaults, dropped and overridden headers, bad lines), and
 * the response reader: Content-Length, chunked and close-delimited bodies, 1xx heads
 * skipped, the head bound, bytes after the response, holding and draining, keep-alive,
 * and the same transcript whether the bytes come in one piece or one byte at a time; and
 * the wire rules an upstream out of step would break (bare LF, obs-fold, Transfer-Encoding
 * other than chunked, 101, too many 1xx heads, a body on 204/304/HEAD), each refused
 * before the head reaches its consumer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "upstream/h1_wire.h"
#include "upstream/upstream.h"

struct rec {
    struct bsc_buf head;
    struct bsc_buf body;
    int heads;      /* on_head calls */
    int status;
    int hold_after; /* on_body calls before it says hold; -1 never */
    int bodies;
    bool stop_head;
    size_t body_len; /* feed_one: the body's length once its buffers are gone */
};

static enum h1_take rec_head(void *ud, int status)
{
    struct rec *r = ud;

    r->heads++;
    r->status = status;
    return r->stop_head ? H1_STOP : H1_GO;
}

static enum h1_take rec_body(void *ud, const char *p, size_t len)
{
    struct rec *r = ud;

    assert_int_equal(bsc_buf_append(&r->body, p, len), BSC_OK);
    return ++r->bodies == r->hold_after ? H1_HOLD : H1_GO;
}

static void rec_init(struct rec *r, struct h1_resp *resp)
{
    memset(r, 0, sizeof(*r));
    bsc_buf_init(&r->head, 64 * 1024);
    bsc_buf_init(&r->body, 1 << 20);
    r->hold_after = -1;
    h1_resp_setup(resp, rec_head, rec_body);
    h1_resp_start(resp, &r->head, r, false);
}

static void rec_free(struct rec *r, struct h1_resp *resp)
{
    bsc_buf_cleanup(&r->head);
    bsc_buf_cleanup(&r->body);
    h1_resp_cleanup(resp);
}

/* Feeds <text> in pieces of <step> bytes (0: one piece); returns the last state. */
static enum h1_state feed(struct h1_resp *resp, const char *text, size_t step, size_t *used)
{
    size_t len = strlen(text), off = 0, n = 0;
    enum h1_state st = H1_MORE;

    *used = 0;
    while (off < len && st == H1_MORE) {
        size_t piece = step && step < len - off ? step : len - off;
        st = h1_resp_feed(resp, text + off, piece, &n);
        *used += n;
        off += piece;
    }
    return st;
}

static void test_url_split(void **state)
{
    struct h1_url u;

    (void)state;
    assert_int_equal(h1_url_split("http://127.0.0.1:8000/v1/chat?x=1", &u), BSC_OK);
    assert_true(bsc_str_eq(u.host, BSC_STR("127.0.0.1")));
    assert_int_equal(u.port, 8000);
    assert_true(bsc_str_eq(u.target, BSC_STR("/v1/chat?x=1")));
    assert_true(bsc_str_eq(u.authority, BSC_STR("127.0.0.1:8000")));
    assert_int_equal(h1_url_split("HTTP://localhost", &u), BSC_OK);
    assert_int_equal(u.port, 80);
    assert_true(bsc_str_eq(u.target, BSC_STR("/")));
    assert_int_equal(h1_url_split("http://[::1]:9/a", &u), BSC_OK);
    assert_true(bsc_str_eq(u.host, BSC_STR("::1")));
    assert_int_equal(u.port, 9);
    assert_true(bsc_str_eq(u.authority, BSC_STR("[::1]:9")));
    assert_int_equal(h1_url_split("http://h/a#frag", &u), BSC_OK);
    assert_true(bsc_str_eq(u.target, BSC_STR("/a")));
    assert_int_equal(h1_url_split("https://h/", &u), BSC_OK);
    assert_true(u.tls);
    assert_int_equal(u.port, 443);
    assert_int_equal(h1_url_split("HTTPS://[::1]:8443/v1", &u), BSC_OK);
    assert_true(u.tls && u.port == 8443 && bsc_str_eq(u.host, BSC_STR("::1")));
    assert_int_equal(h1_url_split("ftp://h/", &u), BSC_EINVAL);
    assert_int_equal(h1_url_split("https:/h/", &u), BSC_EINVAL);
    assert_int_equal(h1_url_split("http://h:0/", &u), BSC_EINVAL);
    assert_int_equal(h1_url_split("http://h:65536/", &u), BSC_EINVAL);
    assert_int_equal(h1_url_split("http://h:x/", &u), BSC_EINVAL);
    assert_int_equal(h1_url_split("http:///a", &u), BSC_EINVAL);
    assert_int_equal(h1_url_split("http://u@h/", &u), BSC_EINVAL);
    assert_int_equal(h1_url_split("http://[::1/", &u), BSC_EINVAL);
    assert_true(h1_url_is_http("Http://x"));
    assert_false(h1_url_is_http("https://x"));
    assert_true(h1_url_is_https("hTTps://x"));
    assert_false(h1_url_is_https("http://x"));
}

static void test_request_head(void **state)
{
    const char *const hs[] = {"Content-Type: application/json", "Accept:", "X-A: 1"};
    const char *const own_host[] = {"Host: other"};
    const char *const bad[] = {"X-B: a\r\nX-C: b"};
    const char *const near[] = {"Hostname: y", "Accept-Language: en", "content-length: 5",
                                "ACCEPT-ENCODING: gzip"};
    struct bsc_buf b;
    struct h1_url u;

    (void)state;
    bsc_buf_init(&b, 1 << 16);
    assert_int_equal(h1_url_split("http://127.0.0.1:8000/v1/x", &u), BSC_OK);
    assert_int_equal(h1_request_head(&b, "POST", &u, hs, 3, 12), BSC_OK);
    assert_string_equal(b.p, "POST /v1/x HTTP/1.1\r\nContent-Type: application/json\r\n"
                             "X-A: 1\r\nHost: 127.0.0.1:8000\r\nAccept-Encoding: identity\r\n"
                             "Content-Length: 12\r\n\r\n");
    bsc_buf_reset(&b);
    assert_int_equal(h1_request_head(&b, "GET", &u, own_host, 1, 0), BSC_OK);
    assert_string_equal(b.p, "GET /v1/x HTTP/1.1\r\nHost: other\r\nAccept: */*\r\n"
                             "Accept-Encoding: identity\r\n\r\n");
    bsc_buf_reset(&b);
    assert_int_equal(h1_request_head(&b, "POST", &u, bad, 1, 0), BSC_EINVAL);
    /* A CR or LF anywhere, no colon or an empty name: refused; "Name:" with only SP/HT
     * after it drops the line, any other value keeps it whole. */
    {
        const char *const refused[] = {"X-B: a\rb", "X-B: a\n", "\rX-B: a", "X-B a", ":v",
                                       "X-B: ok\r"};
        const char *const kept[] = {"X-D: \t ", "X-E:x", "X-F:\t y ", "X-G:"};

        for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
            bsc_buf_reset(&b);
            assert_int_equal(h1_request_head(&b, "POST", &u, refused + i, 1, 0), BSC_EINVAL);
        }
        bsc_buf_reset(&b);
        assert_int_equal(h1_request_head(&b, "GET", &u, kept, 4, 0), BSC_OK);
        assert_string_equal(b.p, "GET /v1/x HTTP/1.1\r\nX-E:x\r\nX-F:\t y \r\n"
                                 "Host: 127.0.0.1:8000\r\nAccept: */*\r\n"
                                 "Accept-Encoding: identity\r\n\r\n");
    }
    /* A default is named by its whole name in any case, never by a longer one. */
    bsc_buf_reset(&b);
    assert_int_equal(h1_request_head(&b, "POST", &u, near, 4, 5), BSC_OK);
    assert_string_equal(b.p, "POST /v1/x HTTP/1.1\r\nHostname: y\r\nAccept-Language: en\r\n"
                             "content-length: 5\r\nACCEPT-ENCODING: gzip\r\n"
                             "Host: 127.0.0.1:8000\r\nAccept: */*\r\n\r\n");
    bsc_buf_cleanup(&b);
}

#define CL_RESP  "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello"
#define CHUNKED  "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\nX-Y:  v \r\n\r\n" \
                 "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
#define INTERIM  "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early\r\nLink: x\r\n\r\n"

static void check_body(const char *text, size_t step, int status, const char *body,
                       enum h1_state want)
{
    struct h1_resp resp;
    struct rec r;
    size_t used;

    rec_init(&r, &resp);
    assert_int_equal(feed(&resp, text, step, &used), want);
    assert_int_equal(used, strlen(text));
    assert_int_equal(r.heads, 1);
    assert_int_equal(r.status, status);
    assert_int_equal(r.body.len, strlen(body));
    assert_memory_equal(r.body.p, body, r.body.len);
    rec_free(&r, &resp);
}

static void test_bodies_any_split(void **state)
{
    (void)state;
    for (size_t step = 0; step < 8; step++) {
        check_body(CL_RESP, step, 200, "hello", H1_DONE);
        check_body(CHUNKED, step, 201, "abcde", H1_DONE);
        check_body(INTERIM CL_RESP, step, 200, "hello", H1_DONE);
        check_body("HTTP/1.1 204 No Content\r\n\r\n", step, 204, "", H1_DONE);
    }
}

static void test_head_lines(void **state)
{
    struct h1_resp resp;
    struct rec r;
    size_t used;

    (void)state;
    rec_init(&r, &resp);
    assert_int_equal(feed(&resp, INTERIM CHUNKED, 1, &used), H1_DONE);
    assert_string_equal(r.head.p, "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n"
                                  "X-Y: v \r\n\r\n");
    assert_true(bsc_str_eq(up_head_find(bsc_buf_str(&r.head), BSC_STR("x-y")), BSC_STR("v")));
    assert_true(h1_resp_keep_alive(&resp));
    rec_free(&r, &resp);
}

static void test_close_delimited(void **state)
{
    struct h1_resp resp;
    struct rec r;
    size_t used;

    (void)state;
    rec_init(&r, &resp);
    assert_int_equal(feed(&resp, "HTTP/1.1 200 OK\r\n\r\npart one", 3, &used), H1_MORE);
    assert_int_equal(h1_resp_eof(&resp), H1_DONE);
    assert_string_equal(r.body.p, "part one");
    assert_false(h1_resp_keep_alive(&resp));
    rec_free(&r, &resp);
}

static void test_cut_short_and_nothing(void **state)
{
    struct h1_resp resp;
    struct rec r;
    size_t used;

    (void)state;
    rec_init(&r, &resp);
    assert_int_equal(h1_resp_eof(&resp), H1_MORE); /* no byte: not a response */
    assert_int_equal(resp.taken, 0);
    h1_resp_start(&resp, &r.head, &r, false);
    assert_int_equal(feed(&resp, "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nab", 0, &used),
                     H1_MORE);
    assert_int_equal(h1_resp_eof(&resp), H1_MORE); /* cut short: the caller's reset */
    h1_resp_start(&resp, &r.head, &r, false);
    assert_int_equal(feed(&resp, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                          0, &used), H1_BAD);
    h1_resp_start(&resp, &r.head, &r, false);
    assert_int_equal(feed(&resp, "SMTP ready\r\n", 0, &used), H1_BAD);
    rec_free(&r, &resp);
}

static void test_head_bound(void **state)
{
    struct h1_resp resp;
    struct rec r;
    struct bsc_buf big;
    size_t used;

    (void)state;
    rec_init(&r, &resp);
    r.head.max = 256;
    bsc_buf_init(&big, 1 << 16);
    assert_int_equal(bsc_buf_append_cstr(&big, "HTTP/1.1 200 OK\r\n"), BSC_OK);
    for (int i = 0; i < 20; i++)
        assert_int_equal(bsc_buf_appendf(&big, "X-Filler-%d: 0123456789\r\n", i), BSC_OK);
    assert_int_equal(bsc_buf_append_cstr(&big, "\r\n"), BSC_OK);
    assert_int_equal(feed(&resp, big.p, 7, &used), H1_TOO_LARGE);
    assert_int_equal(r.heads, 0);
    bsc_buf_cleanup(&big);
    rec_free(&r, &resp);
}

static void test_rest_and_close(void **state)
{
    struct h1_resp resp;
    struct rec r;
    size_t used;

    (void)state;
    rec_init(&r, &resp);
    assert_int_equal(feed(&resp, CL_RESP "HTTP/1.1 200", 0, &used), H1_DONE);
    assert_int_equal(used, strlen(CL_RESP)); /* the rest is not this response's */
    h1_resp_start(&resp, &r.head, &r, false);
    assert_int_equal(feed(&resp, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0"
                                 "\r\n\r\n", 0, &used), H1_DONE);
    assert_false(h1_resp_keep_alive(&resp));
    rec_free(&r, &resp);
}

static void test_hold_and_drain(void **state)
{
    struct h1_resp resp;
    struct rec r;
    size_t used;

    (void)state;
    rec_init(&r, &resp);
    r.hold_after = 1;
    assert_int_equal(feed(&resp, CHUNKED, 0, &used), H1_DONE);
    assert_string_equal(r.body.p, "abc"); /* the rest is held */
    assert_true(resp.hold);
    assert_int_equal(resp.held.len, 2);
    assert_int_equal(h1_resp_drain(&resp), H1_GO);
    assert_string_equal(r.body.p, "abcde");
    assert_false(resp.hold);
    assert_int_equal(r.bodies, 2);
    rec_free(&r, &resp);
}

static void test_stop_in_head(void **state)
{
    struct h1_resp resp;
    struct rec r;
    size_t used;

    (void)state;
    rec_init(&r, &resp);
    r.stop_head = true;
    assert_int_equal(feed(&resp, CL_RESP, 0, &used), H1_STOPPED);
    assert_int_equal(r.body.len, 0);
    rec_free(&r, &resp);
}


/* Feeds <text> in pieces of <step> to a response to <method> HEAD or not; returns the
 * state and fills <r>. */
static enum h1_state feed_one(struct rec *r, const char *text, size_t step, bool head_req,
                              size_t *used, const char **why)
{
    struct h1_resp resp;
    enum h1_state st;

    rec_init(r, &resp);
    h1_resp_start(&resp, &r->head, r, head_req);
    st = feed(&resp, text, step, used);
    *why = st == H1_BAD ? h1_resp_why(&resp) : "";
    r->body_len = r->body.len;
    bsc_buf_cleanup(&r->head);
    bsc_buf_cleanup(&r->body);
    h1_resp_cleanup(&resp);
    return st;
}

/* Each lenient framing is refused, in any split, before any head reaches the consumer. */
static void test_lenient_framing_refused(void **state)
{
    static const struct {
        const char *text, *why;
    } rows[] = {
        {"HTTP/1.1 200 OK\nContent-Length: 2\r\n\r\nok", "bare LF"},
        {"HTTP/1.1 200 OK\r\nContent-Length: 2\n\r\nok", "bare LF"},
        {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\nok", "bare LF"},
        {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\r\n\r\nok", "CR not followed"},
        {"HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 2\r\n\r\nok", "folding"},
        {"HTTP/1.1 200 OK\r\nX-A: a\r\n\tb\r\nContent-Length: 2\r\n\r\nok", "folding"},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
         "Transfer-Encoding"},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\nok", "Transfer-Encoding"},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"
         "2\r\nok\r\n0\r\n\r\n", "Transfer-Encoding"},
        {"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n"
         "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "101"},
        {"HTTP/1.1 101 Switching Protocols\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"
         "ok", "101"},
    };

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        for (size_t step = 0; step < 4; step++) {
            struct rec r;
            size_t used;
            const char *why;

            assert_int_equal(feed_one(&r, rows[i].text, step, false, &used, &why), H1_BAD);
            assert_int_equal(r.heads, 0);
            assert_int_equal(r.body_len, 0);
            if (!strstr(why, rows[i].why))
                fail_msg("row %zu step %zu: %s", i, step, why);
        }
    }
}

/* A chunk line with a bare LF is refused before the chunk's data is handed over; the end of
 * a chunked body is checked too. */
static void test_chunk_lines_strict(void **state)
{
    struct rec r;
    size_t used;
    const char *why;

    (void)state;
    assert_int_equal(feed_one(&r, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                  "2;x\nok\r\n0\r\n\r\n", 0, false, &used, &why), H1_BAD);
    assert_int_equal(r.body_len, 0);
    assert_int_equal(feed_one(&r, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                  "2\r\nok\r\n0\r\n\n", 0, false, &used, &why), H1_BAD);
    assert_true(strstr(why, "bare LF") != NULL);
    assert_int_equal(feed_one(&r, "HTTP/1.1 200 OK\r\ntransfer-encoding:  Chunked \r\n\r\n"
                                  "2\r\nok\r\n0\r\n\r\n", 1, false, &used, &why), H1_DONE);
}

/* Interim heads: up to H1_INTERIM_MAX are skipped, one more is refused. */
static void test_interim_bound(void **state)
{
    struct bsc_buf b;
    struct rec r;
    size_t used;
    const char *why;

    (void)state;
    bsc_buf_init(&b, 1 << 16);
    for (int i = 0; i < H1_INTERIM_MAX; i++)
        assert_int_equal(bsc_buf_append_cstr(&b, "HTTP/1.1 100 Continue\r\n\r\n"), BSC_OK);
    assert_int_equal(bsc_buf_append_cstr(&b, CL_RESP), BSC_OK);
    assert_int_equal(feed_one(&r, b.p, 5, false, &used, &why), H1_DONE);
    assert_int_equal(r.heads, 1);
    bsc_buf_reset(&b);
    for (int i = 0; i <= H1_INTERIM_MAX; i++)
        assert_int_equal(bsc_buf_append_cstr(&b, "HTTP/1.1 103 Early\r\n\r\n"), BSC_OK);
    assert_int_equal(bsc_buf_append_cstr(&b, CL_RESP), BSC_OK);
    assert_int_equal(feed_one(&r, b.p, 0, false, &used, &why), H1_BAD);
    assert_int_equal(r.heads, 0);
    /* An interim head has no body, whatever it says: its bytes are the next head. */
    assert_int_equal(feed_one(&r, "HTTP/1.1 100 Continue\r\nContent-Length: 3\r\n\r\n" CL_RESP,
                              0, false, &used, &why), H1_DONE);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_len, 5); /* "hello", not the interim's three bytes */
    bsc_buf_cleanup(&b);
}

/* A 204, a 304 and any answer to HEAD end with their head: a body after them is bytes after
 * the response (used stops at the head), whatever Content-Length says. */
static void test_bodyless_answers(void **state)
{
    static const char *const heads[] = {
        "HTTP/1.1 204 No Content\r\n\r\n",
        "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
        "HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n",
    };
    struct rec r;
    size_t used;
    const char *why;
    char text[256];

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(heads); i++) {
        snprintf(text, sizeof(text), "%shello", heads[i]);
        assert_int_equal(feed_one(&r, text, 0, false, &used, &why), H1_DONE);
        assert_int_equal(used, strlen(heads[i]));
        assert_int_equal(r.body_len, 0);
    }
    snprintf(text, sizeof(text), "%s", CL_RESP);
    assert_int_equal(feed_one(&r, text, 0, true, &used, &why), H1_DONE);
    assert_int_equal(used, strlen(CL_RESP) - 5);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_len, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_split),
        cmocka_unit_test(test_request_head),
        cmocka_unit_test(test_bodies_any_split),
        cmocka_unit_test(test_head_lines),
        cmocka_unit_test(test_close_delimited),
        cmocka_unit_test(test_cut_short_and_nothing),
        cmocka_unit_test(test_head_bound),
        cmocka_unit_test(test_rest_and_close),
        cmocka_unit_test(test_hold_and_drain),
        cmocka_unit_test(test_stop_in_head),
        cmocka_unit_test(test_lenient_framing_refused),
        cmocka_unit_test(test_chunk_lines_strict),
        cmocka_unit_test(test_interim_bound),
        cmocka_unit_test(test_bodyless_answers),
    };

    return cmocka_run_group_tests_name("h1_wire", tests, NULL, NULL);
}
