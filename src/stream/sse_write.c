/* SPDX-License-Identifier: MIT */
/* sse_write.c -- SSE framing for what the gateway sends downstream. Every call appends a whole
 * event or nothing, so a buffer never holds half an event when a bound is hit. Pacing, flushes
 * and back-pressure live in the relay. See docs/internals/streaming.md. */
#include "stream/sse_write.h"

#include <string.h>

#include "core/compat.h"

/* Returns the length of the first line of <s> and sets *<next> to the offset just past its
 * terminator (LF, CRLF or lone CR), or to <s.len> when <s> has no terminator. */
static size_t first_line(struct bsc_str s, size_t *next)
{
    const char *lf = memchr(s.p, '\n', s.len);
    size_t n = lf ? (size_t)(lf - s.p) : s.len;
    const char *cr = memchr(s.p, '\r', n);

    if (cr) {
        n = (size_t)(cr - s.p);
        *next = (n + 1 < s.len && s.p[n + 1] == '\n') ? n + 2 : n + 1;
        return n;
    }
    *next = lf ? n + 1 : s.len;
    return n;
}

/* Appends `<prefix><line>\n` for every line of <s>; a terminator at the very end of <s> opens
 * one more (empty) line, so "a\n" round-trips as "a\n". */
static enum bsc_err put_lines(struct bsc_buf *out, struct bsc_str prefix, struct bsc_str s)
{
    enum bsc_err err;

    for (;;) {
        size_t next, n = first_line(s, &next);
        bool last = next == s.len && n == s.len;

        err = bsc_buf_append_str(out, prefix);
        if (!err)
            err = bsc_buf_append(out, s.p, n);
        if (!err)
            err = bsc_buf_append_char(out, '\n');
        if (err || last)
            return err;
        s = bsc_str_make(s.p + next, s.len - next);
    }
}

static void rollback(struct bsc_buf *out, size_t len)
{
    out->len = len;
    if (out->p)
        out->p[len] = '\0';
}

enum bsc_err sse_write_event(struct bsc_buf *out, struct bsc_str name, struct bsc_str data)
{
    size_t start = out->len;
    enum bsc_err err = BSC_OK;

    if (name.len && (memchr(name.p, '\n', name.len) || memchr(name.p, '\r', name.len)))
        return BSC_EINVAL;
    if (data.len == 0)
        data = bsc_str_make("", 0);
    if (name.len) {
        err = bsc_buf_append(out, "event: ", 7);
        if (!err)
            err = bsc_buf_append_str(out, name);
        if (!err)
            err = bsc_buf_append_char(out, '\n');
    }
    if (!err)
        err = put_lines(out, BSC_STR("data: "), data);
    if (!err)
        err = bsc_buf_append_char(out, '\n');
    if (err)
        rollback(out, start);
    return err;
}

enum bsc_err sse_write_data(struct bsc_buf *out, struct bsc_str data)
{
    return sse_write_event(out, bsc_str_make("", 0), data);
}

enum bsc_err sse_write_comment(struct bsc_buf *out, struct bsc_str text)
{
    size_t start = out->len;
    enum bsc_err err;

    if (text.len == 0)
        text = bsc_str_make("", 0);
    err = put_lines(out, BSC_STR(": "), text);
    if (!err)
        err = bsc_buf_append_char(out, '\n');
    if (err)
        rollback(out, start);
    return err;
}

enum bsc_err sse_write_keepalive(struct bsc_buf *out)
{
    return bsc_buf_append_str(out, BSC_STR(": keep-alive\n\n"));
}

enum bsc_err sse_write_done(struct bsc_buf *out)
{
    return bsc_buf_append_str(out, BSC_STR("data: [DONE]\n\n"));
}
