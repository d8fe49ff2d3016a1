/* SPDX-License-Identifier: MIT */
/* transfer.c -- the up_* calls on one upstream attempt, whichever client runs it. The
 * client (struct up_client_ops: libcurl in easy.c, the builtin HTTP/1.1 client in h1.c) is
 * chosen once, when the transfer starts; every later call goes through its table. What the
 * clients share (the response head and status, whether the request went out) is read here
 * directly. docs/internals/upstream.md, "Two clients, one table". */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "upstream/internal.h"

static const char *const result_names[UP_RESULT_COUNT] = {
    [UP_OK] = "ok",           [UP_CONNECT] = "connect",   [UP_DNS] = "dns",
    [UP_TIMEOUT] = "timeout", [UP_RESET] = "reset",       [UP_TLS] = "tls",
    [UP_PROTOCOL] = "protocol", [UP_TOO_LARGE] = "too_large",
};

const char *up_result_name(enum up_result r)
{
    return (unsigned)r < UP_RESULT_COUNT ? result_names[r] : "unknown";
}

const struct up_client_ops *up__client_for(const struct up_multi *m, const char *url)
{
    if (m->h1 && !m->env_proxy &&
        (h1_url_is_http(url) || (m->builtin_https && h1_url_is_https(url))))
        return &up__h1_ops;
    return &up__curl_ops;
}

enum bsc_err up_start(struct up_multi *m, const struct up_request *req,
                      const struct up_callbacks *cb, void *ud, struct up_transfer **out)
{
    const struct up_client_ops *ops = up__client_for(m, req->url);
    struct up_transfer *t = malloc(ops->size(req));
    enum bsc_err err;

    if (!t)
        return BSC_ENOMEM;
    /* Zeroed but for the curl header nodes, which are set when used (easy.c). */
    memset(t, 0, offsetof(struct up_transfer, header_nodes));
    t->ops = ops;
    t->m = m;
    t->cb = *cb;
    t->ud = ud;
    bsc_buf_init(&t->head, UP_MAX_HEAD_BYTES);
    up__transfer_link(t);
    if ((err = ops->start(t, req)) != BSC_OK) {
        up__transfer_unlink(t);
        bsc_buf_cleanup(&t->head);
        free(t);
        return err;
    }
    *out = t;
    return BSC_OK;
}

void up_cancel(struct up_transfer *t)
{
    t->ops->cancel(t);
}

void up_pause(struct up_transfer *t)
{
    t->ops->pause(t);
}

void up_resume(struct up_transfer *t)
{
    t->ops->resume(t);
}

/* A line is <name>'s when its first colon ends <name>'s bytes (case aside): as <name> holds
 * no ':' and no line break, that is the line's byte at <name>'s length being ':' and the
 * bytes before it matching. So a line is looked at where that byte is, not searched for its
 * colon: one memchr per line to the next, the name compared only on lines with a colon
 * there. */
static inline bool line_is(const char *p, const char *end, struct bsc_str name)
{
    return (size_t)(end - p) > name.len && p[name.len] == ':' &&
           bsc_str_ieq(bsc_str_make(p, name.len), name);
}

/* The value that starts at <v> and ends with its line, trimmed, without the CR. */
static struct bsc_str line_value(const char *v, const char *end)
{
    const char *eol = memchr(v, '\n', (size_t)(end - v));
    struct bsc_str val = bsc_str_make(v, (size_t)((eol ? eol : end) - v));

    if (val.len && val.p[val.len - 1] == '\r')
        val.len--;
    return bsc_str_trim(val);
}

/* The start of the line after the one at <p>, NULL after the last. */
static inline const char *next_line(const char *p, const char *end)
{
    p = memchr(p, '\n', (size_t)(end - p));
    return p ? p + 1 : NULL;
}

struct bsc_str up_head_find(struct bsc_str head, struct bsc_str name)
{
    const char *p = head.p, *end = p ? p + head.len : NULL;

    for (; p && p < end; p = next_line(p, end))
        if (line_is(p, end, name))
            return line_value(p + name.len + 1, end);
    return BSC_STR_NULL;
}

void up_head_find_each(struct bsc_str head, const struct bsc_str *names, size_t n,
                       struct bsc_str *values)
{
    const char *p = head.p, *end = p ? p + head.len : NULL;
    size_t left = n;

    for (size_t i = 0; i < n; i++)
        values[i] = BSC_STR_NULL;
    for (; left && p && p < end; p = next_line(p, end))
        for (size_t i = 0; i < n; i++)
            if (!values[i].p && line_is(p, end, names[i])) { /* a value found points into <head> */
                values[i] = line_value(p + names[i].len + 1, end);
                left--;
            }
}

struct bsc_str up_header(const struct up_transfer *t, struct bsc_str name)
{
    return up_head_find(bsc_buf_str(&t->head), name);
}

void up_take_head(struct up_transfer *t, struct bsc_buf *dst)
{
    struct bsc_buf old = *dst;

    *dst = t->head;
    t->head = old;
}

int up_status(const struct up_transfer *t)
{
    return t->status;
}

bool up_request_sent(const struct up_transfer *t)
{
    return t->request_sent;
}
