/* SPDX-License-Identifier: MIT */
/* sse_parse.c -- SSE framing: line ends are found with memchr, whole lines are processed, the
 * empty line dispatches. A line lying wholly inside the fed buffer is never copied: only a line
 * split across feeds goes through <line>, and only multi-line (or split) data through <data>.
 * It does not parse JSON nor judge terminal signals; providers do. The state machine and its
 * rules are in docs/internals/streaming.md. */
#include "stream/sse_parse.h"

#include <string.h>

#include "core/compat.h"

#define BOM_DONE 0xff
static const char bom_bytes[3] = {'\xef', '\xbb', '\xbf'};

/* What processing one line asks for; errors are -(enum bsc_err). */
enum { GO_ON = 0, PAUSED = 1 };

static struct bsc_str buf_or_empty(const struct bsc_buf *b)
{
    return b->p ? bsc_buf_str(b) : bsc_str_make("", 0);
}

void sse_parser_init(struct sse_parser *p, size_t max_bytes, const struct sse_callbacks *cb,
                     void *ud)
{
    memset(p, 0, sizeof(*p));
    p->cb = cb;
    p->ud = ud;
    p->max = max_bytes;
    bsc_buf_init(&p->line, max_bytes);
    bsc_buf_init(&p->data, max_bytes);
    bsc_buf_init(&p->name, max_bytes);
}

void sse_parser_cleanup(struct sse_parser *p)
{
    bsc_buf_cleanup(&p->line);
    bsc_buf_cleanup(&p->data);
    bsc_buf_cleanup(&p->name);
    p->pend = BSC_STR_NULL;
    p->pend_in_input = false;
}

/* Copies the zero-copy data line into <data> before the caller's buffer goes away. */
static enum bsc_err spill(struct sse_parser *p)
{
    enum bsc_err err = BSC_OK;

    if (p->pend_in_input)
        err = bsc_buf_append_str(&p->data, p->pend);
    p->pend_in_input = false;
    p->pend = BSC_STR_NULL;
    return err;
}

static void reset_event(struct sse_parser *p)
{
    bsc_buf_reset(&p->data);
    bsc_buf_reset(&p->name);
    p->pend = BSC_STR_NULL;
    p->pend_in_input = false;
    p->has_data = false;
    p->has_name = false;
}

/* The empty line. Departing from WHATWG (which drops an event with no data line), an event
 * that has only an `event:` line is dispatched with empty data, as docs/providers.md §7.3 asks: an
 * `event: error` without data must not vanish. A blank line with nothing pending (DeepSeek's
 * keep-alive blank lines) dispatches nothing. */
static int dispatch(struct sse_parser *p)
{
    struct bsc_str data, name;
    int rc;

    if (!p->has_data && !p->has_name)
        return GO_ON;
    data = p->pend_in_input ? p->pend : buf_or_empty(&p->data);
    name = buf_or_empty(&p->name);
    rc = p->cb->on_event(p->ud, name, data);
    reset_event(p); /* only after the call: <data> and <name> point into our buffers */
    return rc ? PAUSED : GO_ON;
}

/* A data line. The first one of an event is kept as a slice of the caller's buffer when it
 * lies there (<in_input>), which is the one-line OpenAI-style event: no copy at all. */
static int add_data(struct sse_parser *p, struct bsc_str value, bool in_input)
{
    enum bsc_err err;

    if (!p->has_data) {
        p->has_data = true;
        if (in_input) {
            p->pend = value;
            p->pend_in_input = true;
            return GO_ON;
        }
        err = bsc_buf_append_str(&p->data, value);
    } else {
        err = spill(p);
        if (!err)
            err = bsc_buf_append_char(&p->data, '\n');
        if (!err)
            err = bsc_buf_append_str(&p->data, value);
    }
    return err ? -(int)err : GO_ON;
}

static int set_name(struct sse_parser *p, struct bsc_str value)
{
    enum bsc_err err;

    bsc_buf_reset(&p->name);
    err = bsc_buf_append_str(&p->name, value);
    if (err)
        return -(int)err;
    p->has_name = true;
    return GO_ON;
}

/* `field:value` (or `field` alone: an empty value). One leading space of the value goes. */
static int field(struct sse_parser *p, struct bsc_str line, bool in_input)
{
    const char *colon = memchr(line.p, ':', line.len);
    struct bsc_str name = line, value = bsc_str_make("", 0);

    if (colon) {
        name.len = (size_t)(colon - line.p);
        value = bsc_str_make(colon + 1, line.len - name.len - 1);
        if (value.len && value.p[0] == ' ') {
            value.p++;
            value.len--;
        }
    }
    if (bsc_str_eq(name, BSC_STR("data")))
        return add_data(p, value, in_input);
    if (bsc_str_eq(name, BSC_STR("event")))
        return set_name(p, value);
    if (bsc_str_eq(name, BSC_STR("id")) || bsc_str_eq(name, BSC_STR("retry")))
        return GO_ON; /* no reconnects: a gateway never resumes an upstream stream */
    if (p->cb->on_unknown && p->cb->on_unknown(p->ud, line))
        return PAUSED;
    return GO_ON;
}

/* One complete line, terminator excluded. <in_input>: <line> lies in the caller's buffer. */
static int process_line(struct sse_parser *p, struct bsc_str line, bool in_input)
{
    struct bsc_str text;

    if (line.len == 0)
        return dispatch(p);
    if (line.p[0] != ':')
        return field(p, line, in_input);
    text = bsc_str_make(line.p + 1, line.len - 1);
    if (text.len && text.p[0] == ' ') {
        text.p++;
        text.len--;
    }
    if (p->cb->on_comment && p->cb->on_comment(p->ud, text))
        return PAUSED;
    return GO_ON;
}

/* Matches the UTF-8 BOM at the very start of the stream, possibly across feeds. On a mismatch
 * the bytes matched so far were content: they start the first line. */
static enum bsc_err skip_bom(struct sse_parser *p, const char *buf, size_t len, size_t *pos)
{
    enum bsc_err err = BSC_OK;

    while (p->bom < sizeof(bom_bytes) && *pos < len) {
        if (buf[*pos] != bom_bytes[p->bom]) {
            if (p->bom)
                err = bsc_buf_append(&p->line, bom_bytes, p->bom);
            p->bom = BOM_DONE;
            return err;
        }
        p->bom++;
        (*pos)++;
    }
    if (p->bom == sizeof(bom_bytes))
        p->bom = BOM_DONE;
    return BSC_OK;
}

/* Index of the first <c> in buf[from, len), or <len>. */
static size_t find(const char *buf, size_t from, size_t len, char c)
{
    const char *hit = memchr(buf + from, c, len - from);

    return hit ? (size_t)(hit - buf) : len;
}

/* Splits buf[*pos, len) into lines. The next LF and the next CR are each searched for once
 * and remembered until passed, so a stream that only uses one kind costs one memchr pass.
 * Returns GO_ON, PAUSED (with *<pos> just past the line whose callback paused) or an error. */
static int scan_lines(struct sse_parser *p, const char *buf, size_t len, size_t *pos)
{
    size_t at = *pos, lf = find(buf, at, len, '\n'), cr = find(buf, at, len, '\r');
    int rc = GO_ON;

    while (at < len && rc == GO_ON) {
        struct bsc_str line;
        bool in_input = p->line.len == 0;
        size_t eol;
        enum bsc_err err;

        if (lf < at)
            lf = find(buf, at, len, '\n');
        if (cr < at)
            cr = find(buf, at, len, '\r');
        eol = lf < cr ? lf : cr;
        if (eol == len)
            break;
        if (in_input) {
            if (eol - at > p->max)
                return -(int)BSC_ELIMIT;
            line = bsc_str_make(buf + at, eol - at);
        } else {
            err = bsc_buf_append(&p->line, buf + at, eol - at);
            if (err)
                return -(int)err;
            line = bsc_buf_str(&p->line);
        }
        at = eol + 1;
        if (buf[eol] == '\r') {
            if (at == len)
                p->saw_cr = true; /* the LF may open the next feed */
            else if (buf[at] == '\n')
                at++;
        }
        rc = process_line(p, line, in_input);
        if (!in_input)
            bsc_buf_reset(&p->line);
    }
    *pos = at;
    if (rc == GO_ON && at < len) {
        /* No terminator in the rest: hold it. The bound is checked now, not at the line end,
         * so a stream without line breaks cannot grow us past <max>. */
        enum bsc_err err = bsc_buf_append(&p->line, buf + at, len - at);

        if (err)
            return -(int)err;
        *pos = len;
    }
    return rc;
}

ssize_t sse_parser_feed(struct sse_parser *p, const char *buf, size_t len)
{
    size_t pos = 0;
    enum bsc_err err;
    int rc;

    if (p->err)
        return -(ssize_t)p->err;
    if (p->finished)
        return -(ssize_t)BSC_ESTATE;
    if (len == 0)
        return 0;
    if (p->bom != BOM_DONE) {
        err = skip_bom(p, buf, len, &pos);
        if (err)
            goto fail;
        if (pos == len)
            return (ssize_t)len;
    }
    if (p->saw_cr) {
        p->saw_cr = false;
        if (buf[pos] == '\n')
            pos++; /* the second half of a CRLF split between two feeds */
    }
    rc = scan_lines(p, buf, len, &pos);
    err = spill(p);
    if (rc < 0)
        err = (enum bsc_err)-rc;
    if (err)
        goto fail;
    return (ssize_t)pos;

fail:
    p->err = err;
    return -(ssize_t)err;
}

enum bsc_err sse_parser_finish(struct sse_parser *p, bool *had_pending)
{
    bool pending = false;
    enum bsc_err err = BSC_OK;
    int rc = GO_ON;

    if (had_pending)
        *had_pending = false;
    if (p->err)
        return p->err;
    if (p->finished)
        return BSC_ESTATE;
    p->finished = true;
    if (p->bom != BOM_DONE && p->bom)
        err = bsc_buf_append(&p->line, bom_bytes, p->bom); /* a stream of "\xef\xbb" */
    p->bom = BOM_DONE;
    if (!err && p->line.len) {
        pending = true;
        rc = process_line(p, bsc_buf_str(&p->line), false);
        bsc_buf_reset(&p->line);
        if (rc < 0)
            err = (enum bsc_err)-rc;
    }
    /* A pause asked for by a callback here is ignored: nothing could resume it, and what is
     * left is at most one event, which the caller can still drop by itself. */
    if (p->has_data || p->has_name) {
        pending = true;
        if (!err)
            (void)dispatch(p);
    }
    if (had_pending)
        *had_pending = pending;
    if (err)
        p->err = err;
    return err;
}

bool sse_is_done(struct bsc_str data)
{
    while (data.len && (data.p[data.len - 1] == ' ' || data.p[data.len - 1] == '\t'))
        data.len--;
    return bsc_str_eq(data, BSC_STR("[DONE]"));
}

/* sse_each_event's walk: the caller's callback and its data. */
struct each_walk {
    sse_event_fn *fn;
    void *ud;
};

static int each_event(void *ud, struct bsc_str name, struct bsc_str data)
{
    struct each_walk *w = ud;

    return w->fn(w->ud, name, data);
}

enum bsc_err sse_walk(struct bsc_str text, const struct sse_callbacks *cb, void *ud)
{
    struct sse_parser p;
    ssize_t n;

    if (!text.len)
        return BSC_OK;
    /* No line or event can be longer than the text itself. */
    sse_parser_init(&p, text.len + 1, cb, ud);
    n = sse_parser_feed(&p, text.p, text.len);
    sse_parser_cleanup(&p);
    return n < 0 ? (enum bsc_err)-n : BSC_OK;
}

enum bsc_err sse_each_event(struct bsc_str text, sse_event_fn *fn, void *ud)
{
    static const struct sse_callbacks cb = {each_event, NULL, NULL};
    struct each_walk w = {fn, ud};

    return sse_walk(text, &cb, &w);
}

bool sse_looks_like_stream(struct bsc_str body)
{
    static const char *const starts[] = {"data:", "event:", "id:", "retry:", ":"};
    size_t i = 0;

    while (i < body.len && (body.p[i] == ' ' || body.p[i] == '\r' || body.p[i] == '\n'))
        i++;
    for (size_t k = 0; k < sizeof(starts) / sizeof(starts[0]); k++) {
        size_t n = strlen(starts[k]);
        if (body.len - i >= n && memcmp(body.p + i, starts[k], n) == 0)
            return true;
    }
    return false;
}
