/* SPDX-License-Identifier: MIT */
/* fuzz-sources: src/upstream/h1_wire.c src/upstream/h1_read.c src/upstream/line_rules.c */
/* fuzz_h1_response.c -- libFuzzer target for the builtin HTTP/1.1 client's response reader
 * (upstream/h1_read.c). The input is what an upstream sends on a connection. Beyond "no
 * crash, no leak, no UB" it aborts when an invariant breaks:
 *   - one feed, byte-by-byte feeds and 7-byte feeds give the same transcript (final state,
 *     status, head, body, bytes taken), with EOF after the input;
 *   - a consumer that holds after every piece, drained before each next feed, gets the
 *     same body;
 *   - the head never passes its bound, and a reported head ends with a blank line;
 *   - the wire rules (docs/internals/upstream.md, "Out of step"): a head that reaches its
 *     consumer is never a 101; a 204/304 has no body; the raw bytes of a first head that
 *     was final keep the line rules the libcurl side checks (upstream/line_rules.c), so
 *     the two clients refuse the same heads.
 * Built and run by scripts/fuzz. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "upstream/h1_wire.h"
#include "upstream/line_rules.h"

#define HEAD_MAX 2048

struct rec {
    struct bsc_buf head, body;
    int status, heads;
    bool hold_all;
};

struct transcript {
    enum h1_state st;
    int status;
    size_t taken;
};

static void die(const char *what)
{
    fprintf(stderr, "fuzz_h1_response: invariant broken: %s\n", what);
    abort();
}

static enum h1_take on_head(void *ud, int status)
{
    struct rec *r = ud;

    r->status = status;
    r->heads++;
    if (r->head.len > HEAD_MAX)
        die("head past its bound");
    if (r->head.len < 4 || memcmp(r->head.p + r->head.len - 4, "\r\n\r\n", 4) != 0)
        die("head without its blank line");
    return H1_GO;
}

static enum h1_take on_body(void *ud, const char *p, size_t len)
{
    struct rec *r = ud;

    if (bsc_buf_append(&r->body, p, len) != BSC_OK)
        die("body append");
    return r->hold_all ? H1_HOLD : H1_GO;
}

/* Feeds <data> in pieces of <step> bytes (0: one piece), then EOF. */
static struct transcript run(struct rec *r, const uint8_t *data, size_t size, size_t step)
{
    struct h1_resp resp;
    struct transcript tr = {.st = H1_MORE};
    size_t off = 0;

    bsc_buf_init(&r->head, HEAD_MAX);
    bsc_buf_init(&r->body, 1u << 24);
    h1_resp_setup(&resp, on_head, on_body);
    h1_resp_start(&resp, &r->head, r, false);
    while (off < size && tr.st == H1_MORE) {
        size_t piece = step && step < size - off ? step : size - off, used = 0;

        if (r->hold_all && resp.held.len && h1_resp_drain(&resp) != H1_HOLD)
            die("drain did not hand over");
        tr.st = h1_resp_feed(&resp, (const char *)data + off, piece, &used);
        if (used > piece)
            die("used more than fed");
        off += piece;
    }
    if (r->hold_all)
        h1_resp_drain(&resp);
    if (tr.st == H1_MORE)
        tr.st = h1_resp_eof(&resp);
    tr.status = resp.status;
    tr.taken = resp.taken;
    h1_resp_cleanup(&resp);
    return tr;
}

static void same(const struct rec *a, const struct transcript *ta, const struct rec *b,
                 const struct transcript *tb, bool taken_too)
{
    if (ta->st != tb->st || ta->status != tb->status || a->heads != b->heads)
        die("state or status differs between splits");
    if (taken_too && ta->taken != tb->taken)
        die("bytes taken differ between splits");
    if (a->head.len != b->head.len || (a->head.len && memcmp(a->head.p, b->head.p, a->head.len)))
        die("head differs between splits");
    if (a->body.len != b->body.len || (a->body.len && memcmp(a->body.p, b->body.p, a->body.len)))
        die("body differs between splits");
}

/* The first head of <data> (up to its blank line) as the line rules see it, one line at a
 * time; its end through *<head_len>. NULL when every line keeps them or there is no whole
 * head. */
static const char *first_head_rules(const uint8_t *data, size_t size, size_t *head_len)
{
    struct up_line_rules st = {0};
    const char *p = (const char *)data, *end = p + size;
    bool first = true;

    while (p < end) {
        const char *lf = memchr(p, '\n', (size_t)(end - p));
        size_t n = lf ? (size_t)(lf + 1 - p) : 0;
        const char *why;

        if (!lf)
            return NULL;
        /* Empty lines before the status line are skipped, as both readers do. */
        if (!(first && n == 2 && p[0] == '\r') && (why = up__line_check(&st, p, n)))
            return why;
        if (!first && n <= 2) {
            *head_len = (size_t)(lf + 1 - (const char *)data);
            return NULL;
        }
        if (n > 2)
            first = false;
        p = lf + 1;
    }
    return NULL;
}

/* The status code of the first status line of <data> ("HTTP/x.y NNN"), after any empty
 * lines; 0 when there is none. */
static int first_status(const uint8_t *data, size_t size)
{
    size_t i = 0;
    int code = 0;

    while (i + 1 < size && data[i] == '\r' && data[i + 1] == '\n')
        i += 2;
    if (size - i < 12 || memcmp(data + i, "HTTP/", 5) != 0 || data[i + 8] != ' ')
        return 0;
    for (size_t k = i + 9; k < i + 12; k++) {
        if (data[k] < '0' || data[k] > '9')
            return 0;
        code = code * 10 + (data[k] - '0');
    }
    return code;
}

/* The rules a delivered answer keeps, whatever the split. */
static void wire_rules(const struct rec *r, const struct transcript *t, const uint8_t *data,
                       size_t size)
{
    size_t head_len = 0;

    if (!r->heads)
        return;
    if (r->status == 101)
        die("a 101 reached the consumer");
    if ((r->status == 204 || r->status == 304) && r->body.len)
        die("a body on a 204 or 304");
    if (t->st != H1_DONE && t->st != H1_MORE)
        return;
    if (first_head_rules(data, size, &head_len) && head_len && first_status(data, size) >= 200)
        die("a head the line rules refuse was delivered");
}

static void rec_free(struct rec *r)
{
    bsc_buf_cleanup(&r->head);
    bsc_buf_cleanup(&r->body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rec one = {0}, bytes = {0}, sevens = {0}, held = {.hold_all = true};
    struct transcript t1, tb, t7, th;

    if (size > 8192)
        return 0;
    t1 = run(&one, data, size, 0);
    tb = run(&bytes, data, size, 1);
    t7 = run(&sevens, data, size, 7);
    th = run(&held, data, size, 7);
    wire_rules(&one, &t1, data, size);
    wire_rules(&bytes, &tb, data, size);
    if (t1.st == H1_DONE || t1.st == H1_MORE) {
        same(&one, &t1, &bytes, &tb, true);
        same(&one, &t1, &sevens, &t7, true);
        same(&one, &t1, &held, &th, true);
    }
    rec_free(&one);
    rec_free(&bytes);
    rec_free(&sevens);
    rec_free(&held);
    return 0;
}
