/* SPDX-License-Identifier: MIT */
/* test_h1_read.c -- the response reader's own paths (upstream/h1_read.c): a head cut at
 * every byte (and at every pair of bytes) reads as in one piece; the head's copy in the
 * form up_head_find reads (whitespace after the colon made one SP, a status line without
 * reason gets its SP); CR/LF rules in heads, chunk lines, after chunk data and in trailers,
 * a CR cut from its LF by a read; Content-Length (one line, digits then SPs, http-parser's
 * bound) and Transfer-Encoding with it; chunk sizes up to the bound and one digit past it;
 * keep-alive as http-parser decided it (HTTP/1.0 keep-alive, Proxy-Connection, a trailer);
 * and the refusals that are stricter than http-parser was (docs/internals/upstream.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "upstream/h1_wire.h"

struct rec {
    struct bsc_buf head; /* the reader's head buffer */
    struct bsc_buf seen; /* its bytes when on_head ran */
    struct bsc_buf body;
    int heads, status;
};

static enum h1_take rec_head(void *ud, int status)
{
    struct rec *r = ud;

    r->heads++;
    r->status = status;
    bsc_buf_reset(&r->seen);
    assert_int_equal(bsc_buf_append(&r->seen, r->head.p, r->head.len), BSC_OK);
    return H1_GO;
}

static enum h1_take rec_body(void *ud, const char *p, size_t len)
{
    struct rec *r = ud;

    assert_int_equal(bsc_buf_append(&r->body, p, len), BSC_OK);
    return H1_GO;
}

/* What a reading came to. */
struct out {
    enum h1_state st;
    int heads, status;
    size_t used;
    bool keep_alive;
    char why[80];
    char head[512];
    char body[256];
};

/* Feeds <len> bytes of <text> cut at <cut1> and <cut2> (each may be 0 or len), then EOF
 * when the answer still wants bytes. */
static struct out read_cut(const char *text, size_t len, size_t cut1, size_t cut2)
{
    struct h1_resp resp;
    struct rec r;
    struct out o;
    size_t cuts[3] = {cut1, cut2, len}, off = 0;

    memset(&r, 0, sizeof(r));
    memset(&o, 0, sizeof(o));
    bsc_buf_init(&r.head, 64 * 1024);
    bsc_buf_init(&r.seen, 64 * 1024);
    bsc_buf_init(&r.body, 1 << 20);
    h1_resp_setup(&resp, rec_head, rec_body);
    h1_resp_start(&resp, &r.head, &r, false);
    o.st = H1_MORE;
    for (size_t i = 0; i < 3 && o.st == H1_MORE; i++) {
        size_t used = 0;

        if (cuts[i] <= off)
            continue;
        o.st = h1_resp_feed(&resp, text + off, cuts[i] - off, &used);
        o.used += used;
        off = cuts[i];
    }
    if (o.st == H1_MORE)
        o.st = h1_resp_eof(&resp);
    o.heads = r.heads;
    o.status = r.status;
    o.keep_alive = h1_resp_keep_alive(&resp);
    snprintf(o.why, sizeof(o.why), "%s", o.st == H1_BAD ? h1_resp_why(&resp) : "");
    snprintf(o.head, sizeof(o.head), "%.*s", (int)r.seen.len, r.seen.len ? r.seen.p : "");
    snprintf(o.body, sizeof(o.body), "%.*s", (int)r.body.len, r.body.len ? r.body.p : "");
    h1_resp_cleanup(&resp);
    bsc_buf_cleanup(&r.head);
    bsc_buf_cleanup(&r.seen);
    bsc_buf_cleanup(&r.body);
    return o;
}

static struct out read_one(const char *text)
{
    return read_cut(text, strlen(text), 0, 0);
}

/* Bytes used count only for a complete answer: a refused one ends the connection. */
static void same_out(const struct out *a, const struct out *b, size_t c1, size_t c2)
{
    if (a->st != b->st || a->heads != b->heads || a->status != b->status ||
        (a->st == H1_DONE && a->used != b->used) || a->keep_alive != b->keep_alive ||
        strcmp(a->head, b->head) || strcmp(a->body, b->body) || strcmp(a->why, b->why))
        fail_msg("cut at %zu and %zu: st %d/%d used %zu/%zu head [%s] [%s] why [%s] [%s]", c1,
                 c2, a->st, b->st, a->used, b->used, a->head, b->head, a->why, b->why);
}

/* Every cut, and every pair of cuts, reads as one piece: heads, trailers, chunk lines. */
static void test_cut_anywhere(void **state)
{
    static const char *const texts[] = {
        "\r\nHTTP/1.1 100 Continue\r\nX-I:1\r\n\r\nHTTP/1.1 200 OK\r\nX-A:v\r\n"
        "x-b: \t w \r\nContent-Length: 3 \r\n\r\nabc",
        "HTTP/1.1 201\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        "3;e=1\r\nabc\r\n1 \r\nd\r\n0\r\nX-T: v\r\n\r\n",
        "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
        "HTTP/1.1 200 OK\r\nX-A: a\rb\r\n\r\n",                       /* CR inside */
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX: a\r\rb\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
    };

    (void)state;
    for (size_t t = 0; t < BSC_ARRAY_LEN(texts); t++) {
        size_t len = strlen(texts[t]);
        struct out whole = read_one(texts[t]);

        for (size_t c1 = 1; c1 < len; c1++)
            for (size_t c2 = c1; c2 < len; c2++) {
                struct out o = read_cut(texts[t], len, c1, c2);

                same_out(&whole, &o, c1, c2);
            }
    }
}

/* The head's copy: "Name: value" lines, a status line without reason gets its SP. */
static void test_head_copy(void **state)
{
    struct out o;

    (void)state;
    o = read_one("HTTP/1.1 200\r\nX-A:v\r\nX-B: \t w \r\nX-C:\r\nX-D: d\r\n"
                 "Content-Length: 0\r\n\r\n");
    assert_int_equal(o.st, H1_DONE);
    assert_string_equal(o.head, "HTTP/1.1 200 \r\nX-A: v\r\nX-B: w \r\nX-C: \r\nX-D: d\r\n"
                                "Content-Length: 0\r\n\r\n");
    /* An interim head is not the head handed over. */
    o = read_one("HTTP/1.1 103 Early\r\nLink: x\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n");
    assert_int_equal(o.status, 204);
    assert_string_equal(o.head, "HTTP/1.1 204 No Content\r\n\r\n");
}

static void expect_bad(const char *text, const char *why)
{
    struct out o = read_one(text);

    if (o.st != H1_BAD || !strstr(o.why, why))
        fail_msg("%s: state %d, why [%s], wanted [%s]", text, o.st, o.why, why);
}

/* CR and LF: CRLF ends every line of a head, chunk line and trailer; the two bytes after a
 * chunk's data are CRLF. */
static void test_cr_lf_rules(void **state)
{
    (void)state;
    expect_bad("HTTP/1.1 200 OK\r\nX-A: a\rb\r\n\r\n", "CR not followed by LF");
    expect_bad("HTTP/1.1 200 OK\r\nX-A: a\n\r\n", "bare LF");
    expect_bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\rok\r\n0\r\n\r\n",
               "CR not followed by LF");
    expect_bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\n0\r\n\r\n",
               "bare LF");
    expect_bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\rX0\r\n\r\n",
               "CR not followed by LF");
    expect_bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXY0\r\n\r\n",
               "chunk data not followed by CRLF");
    expect_bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n"
               "X: a\n\r\n", "bare LF");
    expect_bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n"
               "X: a\r\n b\r\n\r\n", "obsolete line folding in the trailers");
    expect_bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\r",
               "CR not followed by LF");
}

/* Content-Length: one line per message, digits then only SPs, http-parser's bound. */
static void test_content_length(void **state)
{
    struct out o;

    (void)state;
    expect_bad("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
               "more than one Content-Length");
    expect_bad("HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-length: 3\r\n\r\nok",
               "more than one Content-Length");
    expect_bad("HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok", "invalid Content-Length");
    expect_bad("HTTP/1.1 200 OK\r\nContent-Length: 2 2\r\n\r\nok", "invalid Content-Length");
    expect_bad("HTTP/1.1 200 OK\r\nContent-Length: 2\t\r\n\r\nok", "invalid Content-Length");
    expect_bad("HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\nok", "invalid Content-Length");
    expect_bad("HTTP/1.1 200 OK\r\nContent-Length: 1844674407370955161X\r\n\r\n",
               "invalid Content-Length");
    expect_bad("HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551610\r\n\r\n",
               "invalid Content-Length");
    expect_bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n"
               "2\r\nok\r\n0\r\n\r\n", "both Transfer-Encoding and Content-Length");
    /* A name that starts with Transfer-Encoding counts as one, as http-parser read it. */
    expect_bad("HTTP/1.1 200 OK\r\nTransfer-Encodings: x\r\nContent-Length: 2\r\n\r\nok",
               "both Transfer-Encoding and Content-Length");
    o = read_one("HTTP/1.1 200 OK\r\nContent-Length: 2  \r\n\r\nokHTTP");
    assert_int_equal(o.st, H1_DONE);
    assert_int_equal(o.used, strlen("HTTP/1.1 200 OK\r\nContent-Length: 2  \r\n\r\nok"));
    o = read_one("HTTP/1.1 200 OK\r\nContent-Length: 1844674407370955160\r\n\r\nok");
    assert_int_equal(o.st, H1_MORE); /* accepted, cut short */
}

/* Chunk sizes: hex up to http-parser's bound, one digit more is refused. */
static void test_chunk_size_bound(void **state)
{
    struct out o;

    (void)state;
    o = read_one("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "fffffffffffffff\r\nabc");
    assert_int_equal(o.st, H1_MORE);
    assert_string_equal(o.body, "abc");
    expect_bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nab",
               "chunk size too large");
    expect_bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
               "00000000000000000000000000000000fffffffffffffffff\r\nab", "chunk size too large");
    expect_bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n;2\r\nab",
               "invalid chunk size");
    expect_bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\xff\r\nab",
               "invalid chunk size");
    o = read_one("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2 ;a=\"b\"\r\nok\r\n"
                 "0\r\n\r\n");
    assert_int_equal(o.st, H1_DONE);
    assert_string_equal(o.body, "ok");
}

/* Keep-alive, as http-parser decided it. */
static void test_keep_alive(void **state)
{
    static const struct {
        const char *text;
        bool keep;
    } rows[] = {
        {"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true},
        {"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false},
        {"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", true},
        {"HTTP/1.1 200 OK\r\nConnection: x, close \r\nContent-Length: 0\r\n\r\n", false},
        {"HTTP/1.1 200 OK\r\nProxy-Connection: close\r\nContent-Length: 0\r\n\r\n", false},
        {"HTTP/1.1 200 OK\r\nConnection: closed\r\nContent-Length: 0\r\n\r\n", true},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nConnection: close\r\n"
         "\r\n", false},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nTransfer-Encoding:\r\n"
         "\r\n", false},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: v\r\n\r\n", true},
    };

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        struct out o = read_one(rows[i].text);

        assert_int_equal(o.st, H1_DONE);
        if (o.keep_alive != rows[i].keep)
            fail_msg("row %zu: keep-alive %d", i, o.keep_alive);
    }
}

/* What http-parser let through and the reader refuses. */
static void test_stricter(void **state)
{
    (void)state;
    expect_bad("HXYZ/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "malformed status line");
    expect_bad("HTTP/1.1  200 OK\r\nContent-Length: 0\r\n\r\n", "malformed status line");
    expect_bad("HTTP/1.1 20 OK\r\n\r\nHTTP/1.1 200 OK\r\n\r\n", "malformed status line");
    expect_bad("HTTP/1.1 099 OK\r\n\r\nHTTP/1.1 200 OK\r\n\r\n", "malformed status line");
    expect_bad("HTTP/1.1 0200 OK\r\n\r\n", "malformed status line");
    expect_bad("HTTP/1.1 200 OK\r\nX Y: v\r\nContent-Length: 0\r\n\r\n",
               "whitespace in a header name");
    expect_bad("HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n", "whitespace in a header name");
    expect_bad("HTTP/1.1 200 OK\r\nX: \x01v\r\nContent-Length: 0\r\n\r\n",
               "invalid character in a header value");
    expect_bad("HTTP/1.1 200 OK\r\nX-A\r\nContent-Length: 0\r\n\r\n",
               "header line without a colon");
    expect_bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n"
               "X Y: v\r\n\r\n", "whitespace in a header name");
}

/* A long field value at every position of its sixteen-byte steps and its tail: a CTL or DEL
 * is refused wherever it stands, HT and obs-text are value bytes, and a lone CR or a bare LF
 * is found wherever it stands. */
static void test_long_value_bytes(void **state)
{
    static const unsigned char bad[] = {0x00, 0x01, 0x08, 0x0b, 0x1f, 0x7f};
    static const unsigned char good[] = {'\t', ' ', 0x7e, 0x80, 0xff};
    enum { VLEN = 40 };
#define HEAD_START "HTTP/1.1 200 OK\r\nX-Long: "
#define HEAD_END "\r\nContent-Length: 0\r\n\r\n"

    (void)state;
    for (size_t at = 0; at < VLEN; at++) {
        char text[160], value[VLEN + 1];
        struct out o;

        for (size_t i = 0; i < sizeof(bad) + sizeof(good) + 2; i++) {
            memset(value, 'v', VLEN);
            value[VLEN] = '\0';
            if (i < sizeof(bad))
                value[at] = (char)bad[i];
            else if (i < sizeof(bad) + sizeof(good))
                value[at] = (char)good[i - sizeof(bad)];
            else
                value[at] = i == sizeof(bad) + sizeof(good) ? '\n' : '\r';
            /* the value is copied byte by byte: a NUL in it is not a string's end */
            memcpy(text, HEAD_START, sizeof(HEAD_START) - 1);
            memcpy(text + sizeof(HEAD_START) - 1, value, VLEN);
            memcpy(text + sizeof(HEAD_START) - 1 + VLEN, HEAD_END, sizeof(HEAD_END) - 1);
            o = read_cut(text, sizeof(HEAD_START) - 1 + VLEN + sizeof(HEAD_END) - 1, 0, 0);
            if (i < sizeof(bad)) {
                if (o.st != H1_BAD || strstr(o.why, "invalid character in a header value") == NULL)
                    fail_msg("byte 0x%02x at %zu: st %d why [%s]", bad[i], at, o.st, o.why);
            } else if (i < sizeof(bad) + sizeof(good)) {
                if (o.st != H1_DONE || o.status != 200)
                    fail_msg("byte 0x%02x at %zu refused: [%s]", good[i - sizeof(bad)], at, o.why);
            } else {
                const char *why = value[at] == '\n' ? "bare LF" : "CR not followed by LF";

                if (o.st != H1_BAD || strstr(o.why, why) == NULL)
                    fail_msg("%s at %zu: st %d why [%s]", why, at, o.st, o.why);
            }
        }
    }
#undef HEAD_START
#undef HEAD_END
}

/* A tchar as RFC 9110 lists them (the reference the sixteen-byte name scan is held to). */
static bool ref_tchar(unsigned char c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* What a head whose field name has <c> at <at> must come to: the reader's verdict from the
 * rules, whatever step of the name scan the byte falls in. */
static const char *name_byte_why(unsigned char c, size_t at)
{
    if (ref_tchar(c))
        return NULL;
    if (c == ':')
        return at == 0 ? "invalid character in a header name" : NULL;
    if (c == ' ' || c == '\t')
        return at == 0 ? "obsolete line folding in the head" : "whitespace in a header name";
    return "invalid character in a header name";
}

/* Every byte (but CR and LF) at every position of field names 1 to 40 bytes long, so at
 * every place of the sixteen-byte steps and of the short lines read a byte at a time; and
 * a few of them cut from the line by a read at every position. */
static void test_name_bytes(void **state)
{
    static const char start[] = "HTTP/1.1 200 OK\r\n", end[] = ": v\r\nContent-Length: 0\r\n\r\n";

    (void)state;
    for (size_t len = 1; len <= 40; len++) {
        for (size_t at = 0; at < len; at++) {
            for (unsigned c = 0; c < 256; c++) {
                char text[128];
                size_t n = 0;
                const char *why = name_byte_why((unsigned char)c, at);
                struct out o;

                if (c == '\r' || c == '\n')
                    continue;
                memcpy(text, start, sizeof(start) - 1);
                n = sizeof(start) - 1;
                memset(text + n, 'n', len);
                text[n + at] = (char)c;
                n += len;
                memcpy(text + n, end, sizeof(end) - 1);
                n += sizeof(end) - 1;
                o = read_cut(text, n, 0, 0);
                if (why ? (o.st != H1_BAD || strcmp(o.why, why) != 0)
                        : (o.st != H1_DONE || o.status != 200))
                    fail_msg("name of %zu, 0x%02x at %zu: st %d why [%s], wanted [%s]", len, c,
                             at, o.st, o.why, why ? why : "");
                if (c == 'x' || c == ':' || c == ' ' || c == 0x80 || c == '{') {
                    for (size_t cut = 1; cut < n; cut++) {
                        struct out oc = read_cut(text, n, cut, cut);

                        same_out(&o, &oc, cut, cut);
                    }
                }
            }
        }
    }
}

/* Values 1 to 40 bytes long after a one-byte name (lines shorter than sixteen bytes read a
 * byte at a time, longer ones in steps whose last ends with the line), a CTL or DEL refused
 * at every position, HT and obs-text taken. */
static void test_value_lengths(void **state)
{
    static const unsigned char bytes[] = {0x00, 0x01, 0x08, 0x0b, 0x1f, 0x7f,
                                          '\t', ' ',  0x7e, 0x80, 0xff, ':'};
    static const char start[] = "HTTP/1.1 200 OK\r\nX: ", end[] = "\r\nContent-Length: 0\r\n\r\n";

    (void)state;
    for (size_t len = 1; len <= 40; len++) {
        for (size_t at = 0; at < len; at++) {
            for (size_t b = 0; b < sizeof(bytes); b++) {
                char text[128];
                size_t n = sizeof(start) - 1;
                bool bad = bytes[b] < 0x20 ? bytes[b] != '\t' : bytes[b] == 0x7f;
                struct out o;

                memcpy(text, start, n);
                memset(text + n, 'v', len);
                text[n + at] = (char)bytes[b];
                n += len;
                memcpy(text + n, end, sizeof(end) - 1);
                n += sizeof(end) - 1;
                o = read_cut(text, n, 0, 0);
                if (bad ? (o.st != H1_BAD ||
                           strcmp(o.why, "invalid character in a header value") != 0)
                        : o.st != H1_DONE)
                    fail_msg("value of %zu, 0x%02x at %zu: st %d why [%s]", len, bytes[b], at,
                             o.st, o.why);
                for (size_t cut = sizeof(start) - 3; bytes[b] == 0x01 && cut < n - 20; cut++) {
                    struct out oc = read_cut(text, n, cut, cut);

                    same_out(&o, &oc, cut, cut);
                }
            }
        }
    }
}

/* The status line's form, byte by byte as the reference says it. */
static bool ref_status_ok(const unsigned char *u, size_t n)
{
    for (size_t i = 0; i < n && i < 13; i++) {
        unsigned char c = u[i];
        bool ok = i < 5    ? c == (unsigned char)"HTTP/"[i]
                  : i == 6 ? c == '.'
                  : i == 8 || i == 12 ? c == ' '
                  : i == 9 ? c >= '1' && c <= '9'
                           : c >= '0' && c <= '9';

        if (!ok)
            return false;
    }
    return n >= 12;
}

/* Every byte (but CR and LF) at each of the first fourteen positions of status lines of 12
 * to 17 bytes, whole and cut by a read. */
static void test_status_line_bytes(void **state)
{
    static const char good[] = "HTTP/1.1 200 OKAY";
    static const char end[] = "\r\nContent-Length: 0\r\n\r\n";

    (void)state;
    for (size_t len = 12; len <= 17; len++) {
        for (size_t at = 0; at < 14 && at < len; at++) {
            for (unsigned c = 0; c < 256; c++) {
                char text[64];
                size_t n = len;
                bool ok;
                struct out o;

                if (c == '\r' || c == '\n')
                    continue;
                memcpy(text, good, len);
                text[at] = (char)c;
                ok = ref_status_ok((const unsigned char *)text, len);
                memcpy(text + n, end, sizeof(end) - 1);
                n += sizeof(end) - 1;
                o = read_cut(text, n, 0, 0);
                if (ok ? o.st == H1_BAD /* "HTTP/1.1 100": an interim head, then EOF */
                       : (o.st != H1_BAD || strcmp(o.why, "malformed status line") != 0))
                    fail_msg("status line of %zu, 0x%02x at %zu: st %d why [%s]", len, c, at,
                             o.st, o.why);
                if (c == '2' || c == 'x')
                    for (size_t cut = 1; cut < len + 2; cut++) {
                        struct out oc = read_cut(text, n, cut, cut);

                        same_out(&o, &oc, cut, cut);
                    }
            }
        }
    }
}

/* Connection values near the usual "keep-alive" and "close", as http-parser read them. */
static void test_connection_words(void **state)
{
    static const struct {
        const char *version, *value;
        bool keep;
    } rows[] = {
        {"1.0", "keep-alive", true},   {"1.0", "KEEP-ALIVE", true},
        {"1.0", "Keep-Alive ", true},  {"1.0", "keep-aliv", false},
        {"1.0", "keep-alivex", false}, {"1.0", "keep_alive", false},
        {"1.0", "xeep-alive", false},  {"1.0", "close, keep-alive", true},
        {"1.0", "keep-alive,", true},  {"1.1", "close", false},
        {"1.1", "CLOSE", false},       {"1.1", "cLoSe", false},
        {"1.1", "close ", false},      {"1.1", "clos", true},
        {"1.1", "closed", true},       {"1.1", "close\t", true},
        {"1.1", "keep-alive", true},   {"1.1", "upgrade, close", false},
        {"1.1", "clo\x80", true},      {"1.0", "keep-alive\t", false},
    };

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        char text[160];
        struct out o;

        snprintf(text, sizeof(text), "HTTP/%s 200 OK\r\nConnection: %s\r\nContent-Length: 0\r\n\r\n",
                 rows[i].version, rows[i].value);
        o = read_one(text);
        assert_int_equal(o.st, H1_DONE);
        if (o.keep_alive != rows[i].keep)
            fail_msg("HTTP/%s Connection [%s]: keep-alive %d", rows[i].version, rows[i].value,
                     o.keep_alive);
    }
}

/* What follows a field line's CRLF, its line ending at every place of the sixteen-byte
 * steps (values 1 to 40 bytes long) and the read cut at every byte: the next field line,
 * the empty line, a fold (SP or HT), a bare LF, a CR without its LF. */
static void test_line_ends(void **state)
{
    static const struct {
        const char *tail, *why; /* why: NULL when the answer is read whole */
    } rows[] = {
        {"Y: 1\r\n\r\n", NULL},
        {"\r\n", NULL},
        {" Y: 1\r\n\r\n", "obsolete line folding in the head"},
        {"\tY: 1\r\n\r\n", "obsolete line folding in the head"},
        {"\n\r\n", "line ends in a bare LF (CRLF required)"},
        {"\rY: 1\r\n\r\n", "CR not followed by LF"},
    };
    static const char start[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX: ";

    (void)state;
    for (size_t len = 1; len <= 40; len++) {
        for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
            char text[160];
            size_t n = sizeof(start) - 1;
            struct out o;

            memcpy(text, start, n);
            memset(text + n, 'v', len);
            n += len;
            memcpy(text + n, "\r\n", 2);
            n += 2;
            memcpy(text + n, rows[i].tail, strlen(rows[i].tail));
            n += strlen(rows[i].tail);
            o = read_cut(text, n, 0, 0);
            if (rows[i].why ? (o.st != H1_BAD || strcmp(o.why, rows[i].why) != 0)
                            : (o.st != H1_DONE || o.status != 200))
                fail_msg("value of %zu, row %zu: st %d why [%s]", len, i, o.st, o.why);
            for (size_t cut = 1; cut < n; cut++) {
                struct out oc = read_cut(text, n, cut, cut);

                same_out(&o, &oc, cut, cut);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cut_anywhere),     cmocka_unit_test(test_head_copy),
        cmocka_unit_test(test_cr_lf_rules),      cmocka_unit_test(test_content_length),
        cmocka_unit_test(test_chunk_size_bound), cmocka_unit_test(test_keep_alive),
        cmocka_unit_test(test_stricter),         cmocka_unit_test(test_long_value_bytes),
        cmocka_unit_test(test_name_bytes),       cmocka_unit_test(test_value_lengths),
        cmocka_unit_test(test_status_line_bytes), cmocka_unit_test(test_connection_words),
        cmocka_unit_test(test_line_ends),
    };

    return cmocka_run_group_tests_name("h1_read", tests, NULL, NULL);
}
