/* SPDX-License-Identifier: MIT */
/* fuzz_http_request.c -- libFuzzer target for the HTTP/1 request reader
 * (src/server/h1_parse.c, h1_head.c). Input byte 0 picks the limits, byte 1 a piece size; the rest
 * is a stream of pipelined requests. It is parsed three times -- in one piece, byte by
 * byte, and in pieces of that size -- and the runs must agree on every message and on
 * whether the stream fails; each message must respect the limits and point only inside
 * its buffers. Seeds: tests/fuzz/corpus/http_request/ (the first two bytes as above).
 * Build: clang -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address -Isrc
 *        tests/fuzz/fuzz_http_request.c src/server/h1_parse.c src/server/h1_head.c src/server/h1_fields.c
 *        src/core/(*).c -lhttp_parser */
/* fuzz-sources: src/server/h1_parse.c src/server/h1_head.c src/server/h1_fields.c */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/internal.h"

struct outcome {
    int rc;                /* the last feed result */
    enum srv__h1_err err;
    size_t n_msgs;
    uint64_t digest;       /* over every complete message */
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

static int inside(struct bsc_str s, const struct bsc_buf *b)
{
    if (!s.len)
        return 1;
    return b->p && s.p >= b->p && s.p + s.len <= b->p + b->len;
}

static void check(const struct srv__h1 *h)
{
    struct bsc_str method = srv__h1_method(h);

    if (h->body.len > h->max_body || h->head_bytes > h->max_head || h->head.len > h->max_head)
        abort();
    if (h->n_hdrs > SRV__H1_MAX_HEADERS || h->url_len > h->head.len)
        abort();
    if (!method.p || !inside(h->query, &h->head))
        abort();
    if (!inside(h->path, &h->head) && !bsc_str_eq(h->path, BSC_STR("/")))
        abort();
    /* An absolute-form target's authority: inside the URL, with no '/', '?', '#' or '@'. */
    if (h->authority.p && (!inside(h->authority, &h->head) ||
                           h->authority.p + h->authority.len > h->head.p + h->url_len))
        abort();
    for (size_t i = 0; h->authority.p && i < h->authority.len; i++)
        if (strchr("/?#@", h->authority.p[i]))
            abort();
    for (size_t i = 0; i < h->n_hdrs; i++) {
        struct srv_header f = srv__h1_header_at(h, i);

        if (!inside(f.name, &h->head) || !inside(f.value, &h->head))
            abort();
        if (srv__h1_header(h, f.name).p == NULL && f.name.len)
            abort(); /* a present header must be found by name */
    }
}

static uint64_t digest(uint64_t d, const struct srv__h1 *h)
{
    uint8_t flags[3] = {h->keep_alive, h->expect_continue, h->http10};

    d = mix(d, flags, sizeof(flags));
    d = mix_str(d, srv__h1_method(h));
    d = mix_str(d, h->path);
    d = mix_str(d, h->query);
    d = mix_str(d, h->authority);
    for (size_t i = 0; i < h->n_hdrs; i++) {
        struct srv_header f = srv__h1_header_at(h, i);

        d = mix_str(mix_str(d, f.name), f.value);
    }
    return mix_str(d, bsc_str_make(h->body.p, h->body.len));
}

static struct outcome run(const uint8_t *data, size_t size, size_t piece, uint32_t max_head,
                          uint64_t max_body)
{
    struct outcome o = {0, SRV__H1_OK, 0, 0xcbf29ce484222325ull};
    struct srv__h1 h;
    size_t off = 0;

    srv__h1_init(&h, max_head, max_body);
    while (off < size) {
        size_t len = size - off < piece ? size - off : piece;
        size_t used;

        o.rc = srv__h1_feed(&h, (const char *)data + off, len, &used);
        if (used > len)
            abort();
        off += used;
        if (o.rc < 0) {
            o.err = h.err;
            if (h.err == SRV__H1_OK || !h.why)
                abort();
            break;
        }
        if (o.rc == 1) {
            check(&h);
            o.digest = digest(o.digest, &h);
            o.n_msgs++;
            srv__h1_next(&h, max_head, max_body);
        } else if (used != len) {
            abort(); /* "need more" consumes everything */
        }
    }
    srv__h1_cleanup(&h);
    return o;
}

/* The kind of a failure may depend on the split (a limit callback can run before
 * http-parser reaches a bad byte further on), so only the fact of failure is compared. */
static void same(struct outcome a, struct outcome b)
{
    if (a.rc != b.rc || a.n_msgs != b.n_msgs || a.digest != b.digest)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint32_t max_head;
    uint64_t max_body;
    struct outcome whole;

    if (size < 2)
        return 0;
    /* Small limits often, so the 413/431 paths are reached. */
    max_head = (data[0] & 0x0f) ? 32u * (data[0] & 0x0f) : 65536;
    max_body = (data[0] >> 4) ? 16u * (data[0] >> 4) : 1u << 20;
    whole = run(data + 2, size - 2, size, max_head, max_body);
    same(whole, run(data + 2, size - 2, 1, max_head, max_body));
    same(whole, run(data + 2, size - 2, 1 + data[1] % 17, max_head, max_body));
    return 0;
}
