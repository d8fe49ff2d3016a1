/* SPDX-License-Identifier: MIT */
/* fuzz-sources: src/upstream/h1_wire.c src/upstream/h1_read.c src/upstream/line_rules.c tests/unit/harness/h1_resp_ref.c */
/* fuzz_h1_reader_diff.c -- differential libFuzzer target for the builtin HTTP/1.1 client's
 * response reader: the same bytes, cut into the same pieces, go to upstream/h1_wire.c
 * (h1_resp_*) and to the reference reader, the reader as it was around the http-parser
 * library (tests/unit/harness/h1_resp_ref.c, h1_ref_*). They must agree on:
 *   - the state each feed returns and the bytes each feed used, then what EOF says;
 *   - the heads handed to the consumer (how many, their status, their bytes as on_head
 *     saw them) and the body bytes handed over (held and drained included);
 *   - for a complete answer, the bytes it took and whether the connection may be kept;
 *   - for a refused one, the rule it broke when the reference names one of ours (the
 *     h1_resp_why text; http-parser's own descriptions are not compared).
 *
 * Input: byte 0 picks the consumer (bit 0: the request was HEAD; bit 1: the consumer holds
 * after each body piece and drains before the next feed; bit 2: a 256-byte head bound
 * instead of 64 KiB; bit 3: stop at the head), byte 1 (low 4 bits) how many piece sizes
 * follow (0: one feed), each size byte giving a piece of 1..256 bytes, the sizes used in
 * turn; the rest is what the upstream sends.
 *
 * Where the two may differ, and how each case is recognised:
 *   - both fail the answer (refused, too large, or cut short by the close): each notices a
 *     fault at its own byte (the reference at the byte, or at the next one for an empty
 *     Content-Length; a new line is read once its bytes arrive), so the kind of failure and
 *     the feed may differ; the heads and body handed over must still agree (one the start
 *     of the other), and a head both refuse in the same feed names the same rule when the
 *     reference names one of ours;
 *   - the reference's own trailer fields went into its head buffer after the head was
 *     handed over, where they could pass the bound (H1_TOO_LARGE after its head, with
 *     H1_REF_Q_TRAILER_IN_HEAD): what was handed over must agree;
 *   - the new reader refuses, with the h1_resp_why text named, what http-parser took; each
 *     only with the reference's record of the same case in h1_ref.quirks:
 *       "malformed status line"                 H1_REF_Q_STATUS: not "HTTP/d.d ddd" with
 *                                               ddd >= 100, then nothing or SP and any text
 *       "whitespace in a header name"           H1_REF_Q_NAME_SPACE (head or trailers)
 *       "invalid character in a header value"   H1_REF_Q_VALUE_CTL: a CTL or DEL first in
 *                                               a value (http-parser checked the others)
 *       "obsolete line folding in the trailers" H1_REF_Q_TRAILER_FOLD
 *       "chunk data not followed by CRLF"       H1_REF_Q_DATA_CRLF (http-parser skipped
 *                                               any two bytes there)
 *       "invalid chunk size"                    H1_REF_Q_CHUNK_HIGH: a byte >= 0x80 in a
 *                                               chunk size (http-parser read it as 0)
 *     and then what was handed over must be the start of what the reference handed over.
 * Built and run by scripts/fuzz; replayed by `make test-fuzz-replay`. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "../unit/harness/h1_resp_ref.h"
#include "upstream/h1_wire.h"

#define FEEDS_MAX 4096

/* What a consumer saw from one reader. */
struct seen {
    struct bsc_buf head, body, first_head;
    int heads, status;
    bool hold_all, stop_head;
    enum h1_state feed_st[FEEDS_MAX];
    size_t feed_used[FEEDS_MAX];
    size_t feeds;
    enum h1_state eof_st; /* H1_MORE when no EOF was given (the answer ended first) */
    bool eof_given;
    enum h1_state final;
    size_t taken;
    int final_status;
    bool keep_alive;
    const char *why;
    unsigned quirks; /* the reference's H1_REF_Q_* */
};

/* The pieces: sizes used in turn. */
struct split {
    const uint8_t *sizes;
    size_t n;
};

static void die(const char *what)
{
    fprintf(stderr, "fuzz_h1_reader_diff: invariant broken: %s\n", what);
    abort();
}

static enum h1_take on_head(void *ud, int status)
{
    struct seen *s = ud;

    s->heads++;
    s->status = status;
    bsc_buf_reset(&s->first_head);
    if (s->head.len && bsc_buf_append(&s->first_head, s->head.p, s->head.len) != BSC_OK)
        die("head copy");
    return s->stop_head ? H1_STOP : H1_GO;
}

static enum h1_take on_body(void *ud, const char *p, size_t len)
{
    struct seen *s = ud;

    if (bsc_buf_append(&s->body, p, len) != BSC_OK)
        die("body append");
    return s->hold_all ? H1_HOLD : H1_GO;
}

static void seen_init(struct seen *s, uint8_t mode)
{
    memset(s, 0, sizeof(*s));
    bsc_buf_init(&s->head, mode & 4 ? 256 : 64 * 1024);
    bsc_buf_init(&s->body, 1u << 24);
    bsc_buf_init(&s->first_head, 1u << 20);
    s->hold_all = mode & 2;
    s->stop_head = mode & 8;
}

static void seen_free(struct seen *s)
{
    bsc_buf_cleanup(&s->head);
    bsc_buf_cleanup(&s->body);
    bsc_buf_cleanup(&s->first_head);
}

static size_t piece_len(const struct split *sp, size_t i, size_t left)
{
    size_t n = sp->n ? (size_t)sp->sizes[i % sp->n] + 1 : left;

    return n < left ? n : left;
}

/* The two readers behind one set of calls, so that both go through the same driver. */
struct reader {
    bool ref;
    struct h1_resp now;
    struct h1_ref old;
};

static void rd_setup(struct reader *rd, struct seen *s, bool head_req)
{
    if (rd->ref) {
        h1_ref_setup(&rd->old, on_head, on_body);
        h1_ref_start(&rd->old, &s->head, s, head_req);
    } else {
        h1_resp_setup(&rd->now, on_head, on_body);
        h1_resp_start(&rd->now, &s->head, s, head_req);
    }
}

static size_t rd_held(const struct reader *rd)
{
    return rd->ref ? rd->old.held.len : rd->now.held.len;
}

static enum h1_take rd_drain(struct reader *rd)
{
    return rd->ref ? h1_ref_drain(&rd->old) : h1_resp_drain(&rd->now);
}

static enum h1_state rd_feed(struct reader *rd, const char *p, size_t len, size_t *used)
{
    return rd->ref ? h1_ref_feed(&rd->old, p, len, used) : h1_resp_feed(&rd->now, p, len, used);
}

static enum h1_state rd_eof(struct reader *rd)
{
    return rd->ref ? h1_ref_eof(&rd->old) : h1_resp_eof(&rd->now);
}

/* Feeds <data> as a caller does (h1.c): piece by piece while the answer goes on, drained
 * before each read when the consumer holds, EOF after the last byte. */
static void run(struct reader *rd, struct seen *s, const uint8_t *data, size_t size,
                const struct split *sp, bool head_req)
{
    size_t off = 0;
    enum h1_state st = H1_MORE;

    rd_setup(rd, s, head_req);
    while (off < size && st == H1_MORE && s->feeds < FEEDS_MAX) {
        size_t n = piece_len(sp, s->feeds, size - off), used = 0;

        if (s->hold_all && rd_held(rd) && rd_drain(rd) == H1_STOP)
            die("a drain said stop");
        st = rd_feed(rd, (const char *)data + off, n, &used);
        if (used > n)
            die("used more than fed");
        if (st == H1_MORE && used != n)
            die("more wanted but not all used");
        s->feed_st[s->feeds] = st;
        s->feed_used[s->feeds++] = used;
        off += n;
    }
    if (s->hold_all)
        (void)rd_drain(rd);
    s->final = st;
    if (st == H1_MORE && off >= size) {
        s->eof_given = true;
        s->final = s->eof_st = rd_eof(rd);
    }
    if (rd->ref) {
        s->taken = rd->old.taken;
        s->final_status = rd->old.status;
        s->keep_alive = s->final == H1_DONE && h1_ref_keep_alive(&rd->old);
        s->why = rd->old.why; /* ours, not http-parser's */
        s->quirks = rd->old.quirks;
        h1_ref_cleanup(&rd->old);
    } else {
        s->taken = rd->now.taken;
        s->final_status = rd->now.status;
        s->keep_alive = s->final == H1_DONE && h1_resp_keep_alive(&rd->now);
        s->why = s->final == H1_BAD ? h1_resp_why(&rd->now) : NULL;
        h1_resp_cleanup(&rd->now);
    }
}

static bool buf_eq(const struct bsc_buf *a, const struct bsc_buf *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->p, b->p, a->len) == 0);
}

/* Whether <a> starts with <b>. */
static bool buf_prefix(const struct bsc_buf *a, const struct bsc_buf *b)
{
    return b->len <= a->len && (b->len == 0 || memcmp(a->p, b->p, b->len) == 0);
}

/* The answer failed: refused, too large, or cut short by the close. */
static bool failed(const struct seen *s)
{
    return s->final == H1_BAD || s->final == H1_TOO_LARGE || (s->eof_given && s->final == H1_MORE);
}

/* The stricter reader's refusals, each with the reference's record of the same case. */
static bool deliberate(const struct seen *n, unsigned quirks)
{
    static const struct {
        const char *why;
        unsigned quirk;
    } cases[] = {
        {"malformed status line", H1_REF_Q_STATUS},
        {"whitespace in a header name", H1_REF_Q_NAME_SPACE},
        {"obsolete line folding in the trailers", H1_REF_Q_TRAILER_FOLD},
        {"chunk data not followed by CRLF", H1_REF_Q_DATA_CRLF},
        {"invalid character in a header value", H1_REF_Q_VALUE_CTL},
        {"invalid chunk size", H1_REF_Q_CHUNK_HIGH},
    };

    if (n->final != H1_BAD || !n->why)
        return false;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (strcmp(n->why, cases[i].why) == 0)
            return (quirks & cases[i].quirk) != 0;
    return false;
}

/* What the consumer got from the new reader is what it got from the reference, or the
 * start of it (the new reader refused, or failed, earlier). */
static void same_so_far(const struct seen *o, const struct seen *n)
{
    if (n->heads > o->heads || (n->heads && (n->status != o->status ||
                                             !buf_eq(&o->first_head, &n->first_head))))
        die("a head the reference did not hand over");
    if (!buf_prefix(&o->body, &n->body))
        die("body bytes the reference did not hand over");
}

static void compare(const struct seen *o, const struct seen *n, unsigned quirks)
{
    size_t feeds = o->feeds < n->feeds ? o->feeds : n->feeds;

    /* Trailers the reference appended to its head could pass the head's bound there. */
    if (o->final == H1_TOO_LARGE && o->heads && (quirks & H1_REF_Q_TRAILER_IN_HEAD)) {
        same_so_far(o, n);
        return;
    }
    if (deliberate(n, quirks)) {
        same_so_far(o, n);
        return;
    }
    if (failed(o) || failed(n)) {
        if (!failed(o) || !failed(n))
            die("one reader failed the answer, the other did not");
        same_so_far(n->heads >= o->heads ? n : o, n->heads >= o->heads ? o : n);
        if (n->heads == o->heads && !buf_eq(&o->body, &n->body) &&
            !buf_prefix(&o->body, &n->body) && !buf_prefix(&n->body, &o->body))
            die("failed answers delivered different bodies");
        if (o->final == H1_BAD && n->final == H1_BAD && o->why && !o->heads &&
            o->feeds == n->feeds && (!n->why || strcmp(o->why, n->why) != 0))
            die("a head refused for a different rule");
        return;
    }
    for (size_t i = 0; i < feeds; i++) {
        if (o->feed_st[i] != n->feed_st[i])
            die("a feed's state differs");
        if (o->feed_st[i] != H1_STOPPED && o->feed_used[i] != n->feed_used[i])
            die("a feed used a different number of bytes");
    }
    if (o->feeds != n->feeds || o->eof_given != n->eof_given || o->final != n->final)
        die("the final state differs");
    if (o->heads != n->heads || o->status != n->status)
        die("heads or status differ");
    if (!buf_eq(&o->first_head, &n->first_head))
        die("the head on_head saw differs");
    if (!buf_eq(&o->body, &n->body))
        die("the body differs");
    if (o->final == H1_DONE && (o->taken != n->taken || o->keep_alive != n->keep_alive))
        die("a complete answer's length or keep-alive differs");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct seen old, now; /* large: kept off the stack */
    struct reader ref = {.ref = true}, cur = {.ref = false};
    struct split sp;
    uint8_t mode;

    if (size < 2 || size > 4096)
        return 0;
    mode = data[0];
    sp.n = data[1] & 15;
    if (size < 2 + sp.n)
        return 0;
    sp.sizes = data + 2;
    data += 2 + sp.n;
    size -= 2 + sp.n;
    seen_init(&old, mode);
    seen_init(&now, mode);
    run(&ref, &old, data, size, &sp, mode & 1);
    run(&cur, &now, data, size, &sp, mode & 1);
    compare(&old, &now, old.quirks);
    seen_free(&old);
    seen_free(&now);
    return 0;
}
