/* SPDX-License-Identifier: MIT */
/* fuzz-sources: src/stream/sse_parse.c src/stream/sse_write.c */
/* fuzz_sse.c -- libFuzzer target for the SSE parser and writer. The input is an upstream byte
 * stream. Beyond "no crash, no leak, no UB" it checks invariants and aborts when one breaks:
 *   - one feed, two feeds, three feeds and byte-by-byte feeds give the same transcript
 *     (events, comments, unknown lines, error, pending flag), with a large and a small bound;
 *   - a callback pausing on every call, with the rest fed again, changes nothing;
 *   - the parser's buffers never grow past the bound;
 *   - the input written as one event by sse_write_event() parses back to itself (line breaks
 *     normalized to LF). Built and run by scripts/fuzz. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/compat.h"
#include "core/buf.h"
#include "stream/sse_parse.h"
#include "stream/sse_write.h"

#define BIG_MAX   4096
#define SMALL_MAX 24

struct rec {
    struct bsc_buf log; /* tag, 4-byte length, bytes -- per callback */
    bool pause_all;     /* return "pause" from every callback */
};

static void die(const char *what)
{
    fprintf(stderr, "fuzz_sse: invariant broken: %s\n", what);
    abort();
}

static void rec_put(struct rec *r, char tag, struct bsc_str s)
{
    uint32_t n = (uint32_t)s.len;

    if (bsc_buf_append_char(&r->log, tag) || bsc_buf_append(&r->log, &n, sizeof(n)) ||
        bsc_buf_append(&r->log, s.p, s.len))
        die("transcript overflow");
}

static int on_event(void *ud, struct bsc_str name, struct bsc_str data)
{
    struct rec *r = ud;

    if (!name.p || !data.p)
        die("NULL slice in an event");
    rec_put(r, 'N', name);
    rec_put(r, 'E', data);
    (void)sse_is_done(data);
    return r->pause_all;
}

static int on_comment(void *ud, struct bsc_str text)
{
    struct rec *r = ud;

    rec_put(r, 'C', text);
    return r->pause_all;
}

static int on_unknown(void *ud, struct bsc_str line)
{
    struct rec *r = ud;

    if (line.len == 0)
        die("empty unknown line");
    rec_put(r, 'U', line);
    return r->pause_all;
}

static const struct sse_callbacks cbs = {on_event, on_comment, on_unknown};

static void check_bounds(const struct sse_parser *p, size_t max)
{
    if (p->line.len > max || p->data.len > max || p->name.len > max)
        die("a buffer passed the bound");
}

/* Feeds data[0, size) cut at <cuts>; records the outcome after the events. With <pause_all>,
 * each partial consumption is fed again from where it stopped. */
static void run(const uint8_t *data, size_t size, const size_t *cuts, size_t ncuts, size_t max,
                bool pause_all, struct bsc_buf *out)
{
    struct sse_parser p;
    struct rec r = {.pause_all = pause_all};
    enum bsc_err err = BSC_OK;
    bool pending = false;
    size_t from = 0;

    r.log = *out;
    sse_parser_init(&p, max, &cbs, &r);
    for (size_t i = 0; i <= ncuts && !err; i++) {
        size_t to = i < ncuts ? cuts[i] : size;

        while (from < to && !err) {
            ssize_t n = sse_parser_feed(&p, (const char *)data + from, to - from);

            if (n < 0) {
                err = (enum bsc_err)-n;
            } else {
                if ((size_t)n > to - from)
                    die("consumed more than was fed");
                if (n == 0)
                    die("no progress"); /* a pause always follows a consumed terminator */
                if (!pause_all && (size_t)n != to - from)
                    die("partial consumption without a pause");
                from += (size_t)n;
            }
            check_bounds(&p, max);
        }
        from = to;
    }
    if (!err)
        err = sse_parser_finish(&p, &pending);
    else if (sse_parser_feed(&p, "x", 1) != -(ssize_t)err)
        die("error not sticky");
    rec_put(&r, 'Z', bsc_str_make(pending ? "pending" : "clean", pending ? 7 : 5));
    rec_put(&r, 'R', bsc_str_cstr(bsc_err_str(err)));
    sse_parser_cleanup(&p);
    *out = r.log;
}

static uint64_t fnv1a(const uint8_t *data, size_t size)
{
    uint64_t h = 14695981039346656037ull;

    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211ull;
    return h;
}

static void same_or_die(const struct bsc_buf *a, const struct bsc_buf *b, const char *what)
{
    if (a->len != b->len || (a->len && memcmp(a->p, b->p, a->len) != 0))
        die(what);
}

static void check_splits(const uint8_t *data, size_t size, size_t max)
{
    size_t log_max = 16 * size + 4096;
    struct bsc_buf one, other;
    uint64_t h = fnv1a(data, size);
    size_t cut = size ? (size_t)(h % (size + 1)) : 0;
    size_t cuts2[2] = {size / 3, size / 3 + (size_t)((h >> 32) % (size - size / 3 + 1))};

    bsc_buf_init(&one, log_max);
    run(data, size, NULL, 0, max, false, &one);

    bsc_buf_init(&other, log_max);
    run(data, size, &cut, 1, max, false, &other);
    same_or_die(&one, &other, "two feeds differ from one");
    bsc_buf_cleanup(&other);

    bsc_buf_init(&other, log_max);
    run(data, size, cuts2, 2, max, false, &other);
    same_or_die(&one, &other, "three feeds differ from one");
    bsc_buf_cleanup(&other);

    bsc_buf_init(&other, log_max);
    run(data, size, NULL, 0, max, true, &other);
    same_or_die(&one, &other, "pausing on every callback changed the events");
    bsc_buf_cleanup(&other);

    if (size <= 512) {
        size_t bytewise[512];

        for (size_t i = 0; i < size; i++)
            bytewise[i] = i;
        bsc_buf_init(&other, log_max);
        run(data, size, bytewise, size, max, false, &other);
        same_or_die(&one, &other, "byte-by-byte feeds differ from one");
        bsc_buf_cleanup(&other);
    }
    bsc_buf_cleanup(&one);
}

/* The writer's output parses back to the payload, CR and CRLF read as LF. */
static void check_roundtrip(const uint8_t *data, size_t size)
{
    struct bsc_buf wire, want, got;
    struct bsc_str payload = bsc_str_make(size ? (const char *)data : "", size);
    size_t max = 2 * size + 64;

    bsc_buf_init(&wire, 8 * size + 64); /* worst case: every byte a line break, "data: \n" */
    bsc_buf_init(&want, max);
    bsc_buf_init(&got, 16 * size + 4096);
    if (sse_write_event(&wire, BSC_STR("n"), payload) || sse_write_done(&wire))
        die("writer failed within its bound");
    for (size_t i = 0; i < size; i++) {
        char c = (char)data[i];

        if (c == '\r' && i + 1 < size && data[i + 1] == '\n')
            continue;
        if (bsc_buf_append_char(&want, c == '\r' ? '\n' : c))
            die("want overflow");
    }
    run((const uint8_t *)wire.p, wire.len, NULL, 0, max + 8, false, &got);
    {
        struct bsc_buf expect;
        struct rec r;

        bsc_buf_init(&expect, 16 * size + 4096);
        r.log = expect;
        rec_put(&r, 'N', BSC_STR("n"));
        rec_put(&r, 'E', want.p ? bsc_buf_str(&want) : bsc_str_make("", 0));
        rec_put(&r, 'N', bsc_str_make("", 0));
        rec_put(&r, 'E', BSC_STR("[DONE]"));
        rec_put(&r, 'Z', BSC_STR("clean"));
        rec_put(&r, 'R', bsc_str_cstr(bsc_err_str(BSC_OK)));
        expect = r.log;
        same_or_die(&expect, &got, "writer output does not parse back to its payload");
        bsc_buf_cleanup(&expect);
    }
    bsc_buf_cleanup(&wire);
    bsc_buf_cleanup(&want);
    bsc_buf_cleanup(&got);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_splits(data, size, BIG_MAX);
    check_splits(data, size, SMALL_MAX);
    check_roundtrip(data, size);
    return 0;
}
