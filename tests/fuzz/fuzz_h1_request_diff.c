/* SPDX-License-Identifier: MIT */
/* fuzz-sources: src/server/h1_parse.c src/server/h1_head.c src/server/h1_fields.c tests/unit/harness/h1_req_ref.c */
/* fuzz_h1_request_diff.c -- differential libFuzzer target for the server's HTTP/1.1 request
 * reader: the same bytes go to src/server/h1_parse.c (srv__h1_*) and to the reference, the
 * reader as it was around the http-parser library (tests/unit/harness/h1_req_ref.c,
 * h1_req_ref_*). The new reader is fed whole, byte by byte, in pieces of one size and in
 * pieces of pseudo-random sizes; the reference byte by byte. They must agree on:
 *   - every complete message (method, path, query, authority, each header's name and value,
 *     the de-chunked body, keep-alive, Expect: 100-continue, HTTP/1.0) and the offset in
 *     the stream where it ended (the bytes each consumed);
 *   - at the end: whether the stream failed or needs more, the error class (enum
 *     srv__h1_err), whether the last message's head was complete and, if so, that head.
 * The reference is fed byte by byte because its error class depended on the pieces (it
 * counted a field against the head limit when http-parser handed the field over, at the end
 * of a piece, and checked line endings after each piece); the new reader decides as it did
 * for one byte at a time, whatever the pieces.
 *
 * One difference on purpose: the new reader wants the version spelled "HTTP/" where
 * http-parser (not strict) took 'H' and any four bytes (and "ICE/" after SOURCE). For a
 * message whose request line has other bytes there the new reader must refuse it (400)
 * and agree on every message before it.
 *
 * Input: byte 0 picks the limits (low 4 bits the head limit, high 4 the body limit, small
 * often), byte 1 the piece size and the seed of the random pieces; the rest is a stream of
 * pipelined requests. Seeds: tests/fuzz/corpus/h1_request_diff/. Built and run by
 * scripts/fuzz; replayed by `make test-fuzz-replay`. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/harness/h1_req_ref.h"
#include "server/internal.h"

#define MSGS_MAX 64

struct outcome {
    int rc;                       /* the last feed's result */
    enum srv__h1_err err;
    bool head_done;               /* of the message the stream ended in */
    uint64_t head;                /* its head, when <head_done> and not complete */
    size_t n_msgs;
    size_t ends[MSGS_MAX];        /* stream offset right after each message */
    uint64_t digests[MSGS_MAX];
};

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t mix_str(uint64_t h, struct bsc_str s)
{
    h = mix(h, &s.len, sizeof(s.len));
    return s.len ? mix(h, s.p, s.len) : h;
}

/* One digest function per reader: same fields, same order. */
#define DEFINE_DIGEST(NAME, TYPE, METHOD, HEADER_AT)                                           \
    static uint64_t NAME(const TYPE *h, bool with_body)                                      \
    {                                                                                        \
        uint8_t flags[4] = {h->keep_alive, h->expect_continue, h->http10, with_body};        \
        uint64_t d = mix(0xcbf29ce484222325ull, flags, sizeof(flags));                       \
                                                                                             \
        d = mix_str(d, METHOD(h));                                                           \
        d = mix_str(d, h->path);                                                             \
        d = mix_str(d, h->query);                                                            \
        d = mix_str(d, h->authority);                                                        \
        d = mix(d, &h->n_hdrs, sizeof(h->n_hdrs));                                           \
        for (size_t i = 0; i < h->n_hdrs; i++) {                                             \
            struct srv_header f = HEADER_AT(h, i);                                           \
                                                                                             \
            d = mix_str(mix_str(d, f.name), f.value);                                        \
        }                                                                                    \
        d = mix(d, &h->head_bytes, sizeof(h->head_bytes));                                   \
        return with_body ? mix_str(d, bsc_str_make(h->body.p, h->body.len)) : d;             \
    }

DEFINE_DIGEST(digest_new, struct srv__h1, srv__h1_method, srv__h1_header_at)
DEFINE_DIGEST(digest_ref, struct h1_req_ref, h1_req_ref_method, h1_req_ref_header_at)

/* Piece sizes: 0 = whole, else <fixed> bytes, or pseudo-random ones from <seed>. */
struct pieces {
    size_t fixed;
    uint32_t seed; /* non-zero: random sizes 1..64 */
};

static size_t next_piece(struct pieces *pc, size_t left)
{
    size_t n = pc->fixed ? pc->fixed : left;

    if (pc->seed) {
        pc->seed = pc->seed * 1103515245u + 12345u;
        n = 1 + (pc->seed >> 16) % 64;
    }
    return n < left ? n : left;
}

#define DEFINE_RUN(NAME, TYPE, INIT, FEED, NEXT, CLEANUP, DIGEST)                              \
    static struct outcome NAME(const uint8_t *data, size_t size, struct pieces pc,            \
                               uint32_t max_head, uint64_t max_body)                          \
    {                                                                                        \
        struct outcome o;                                                                    \
        TYPE h;                                                                              \
        size_t off = 0;                                                                      \
                                                                                             \
        memset(&o, 0, sizeof(o));                                                            \
        INIT(&h, max_head, max_body);                                                        \
        while (off < size && o.n_msgs < MSGS_MAX) {                                          \
            size_t len = next_piece(&pc, size - off), used;                                  \
                                                                                             \
            o.rc = FEED(&h, (const char *)data + off, len, &used);                           \
            if (o.rc < 0) {                                                                  \
                o.err = h.err;                                                               \
                if (h.err == SRV__H1_OK || !h.why)                                           \
                    abort();                                                                 \
                break;                                                                       \
            }                                                                                \
            if (used > len || (o.rc == 0 && used != len))                                    \
                abort();                                                                     \
            off += used;                                                                     \
            if (o.rc == 1) {                                                                 \
                o.ends[o.n_msgs] = off;                                                      \
                o.digests[o.n_msgs++] = DIGEST(&h, true);                                    \
                NEXT(&h, max_head, max_body);                                                \
            }                                                                                \
        }                                                                                    \
        o.head_done = h.head_done && !h.complete;                                            \
        if (o.head_done && o.rc == 0)                                                        \
            o.head = DIGEST(&h, false);                                                      \
        CLEANUP(&h);                                                                         \
        return o;                                                                            \
    }

DEFINE_RUN(run_new, struct srv__h1, srv__h1_init, srv__h1_feed, srv__h1_next, srv__h1_cleanup,
           digest_new)
DEFINE_RUN(run_ref, struct h1_req_ref, h1_req_ref_init, h1_req_ref_feed, h1_req_ref_next,
           h1_req_ref_cleanup, digest_ref)

/* Whether the request line starting at <p> has something else than "HTTP/" where its
 * version begins (as far as the bytes go). */
static bool version_quirk(const uint8_t *p, size_t n)
{
    size_t i = 0;

    while (i + 1 < n && p[i] == '\r' && p[i + 1] == '\n')
        i += 2;
    while (i < n && p[i] != ' ')
        i++;
    while (i < n && p[i] == ' ')
        i++;
    while (i < n && p[i] != ' ' && p[i] != '\r' && p[i] != '\n')
        i++;
    if (i == n || p[i] != ' ')
        return false;
    while (i < n && p[i] == ' ')
        i++;
    for (size_t k = 0; k < 5 && i + k < n; k++)
        if (p[i + k] != (uint8_t)"HTTP/"[k])
            return true;
    return false;
}

static void report(const char *what, const struct outcome *a, const struct outcome *b)
{
    fprintf(stderr, "h1_request_diff: %s: new rc %d err %d msgs %zu head_done %d; "
                    "ref rc %d err %d msgs %zu head_done %d\n",
            what, a->rc, a->err, a->n_msgs, a->head_done, b->rc, b->err, b->n_msgs,
            b->head_done);
    abort();
}

static void same_messages(const struct outcome *a, const struct outcome *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a->ends[i] != b->ends[i] || a->digests[i] != b->digests[i])
            report("a message differs", a, b);
}

static void compare(const uint8_t *data, size_t size, const struct outcome *a,
                    const struct outcome *ref)
{
    size_t start = a->n_msgs ? a->ends[a->n_msgs - 1] : 0;

    if (a->n_msgs <= ref->n_msgs && version_quirk(data + start, size - start) &&
        a->rc < 0) {
        if (a->err != SRV__H1_E_BAD_REQUEST && a->err != ref->err)
            report("a version not spelled HTTP/ is not a 400", a, ref);
        same_messages(a, ref, a->n_msgs);
        return;
    }
    if (a->n_msgs != ref->n_msgs)
        report("message count", a, ref);
    same_messages(a, ref, a->n_msgs);
    if (a->rc != ref->rc || a->err != ref->err)
        report("outcome", a, ref);
    if (a->head_done != ref->head_done || a->head != ref->head)
        report("the incomplete message's head", a, ref);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint32_t max_head;
    uint64_t max_body;
    struct outcome ref, got;
    const struct pieces splits[] = {
        {0, 0},
        {1, 0},
        {(size_t)(1 + (size > 1 ? data[1] : 0) % 23), 0},
        {0, 1u + (size > 1 ? data[1] : 0)},
    };

    if (size < 2)
        return 0;
    max_head = (data[0] & 0x0f) ? 32u * (data[0] & 0x0f) : 65536;
    max_body = (data[0] >> 4) ? 16u * (data[0] >> 4) : 1u << 20;
    ref = run_ref(data + 2, size - 2, (struct pieces){1, 0}, max_head, max_body);
    for (size_t i = 0; i < sizeof(splits) / sizeof(splits[0]); i++) {
        got = run_new(data + 2, size - 2, splits[i], max_head, max_body);
        compare(data + 2, size - 2, &got, &ref);
    }
    return 0;
}
