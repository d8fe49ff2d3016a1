/* SPDX-License-Identifier: MIT */
/* h1_wire.c -- the builtin HTTP/1.1 client's pure parts that write: the URL split and the
 * request head. The response reader is h1_read.c. */
#include <stdio.h>
#include <string.h>

#include "core/ascii.h"
#include "upstream/h1_wire.h"


bool h1_url_is_http(const char *url)
{
    return url && bsc_ascii_ieq(url, "http://", 7);
}

bool h1_url_is_https(const char *url)
{
    return url && bsc_ascii_ieq(url, "https://", 8);
}

static bool parse_port(const char *p, size_t len, uint16_t *out)
{
    unsigned v = 0;

    if (len == 0 || len > 5)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        v = v * 10 + (unsigned)(p[i] - '0');
    }
    if (v == 0 || v > 65535)
        return false;
    *out = (uint16_t)v;
    return true;
}

enum bsc_err h1_url_split(const char *url, struct h1_url *out)
{
    const char *a, *end, *colon = NULL;

    out->tls = h1_url_is_https(url);
    if (!out->tls && !h1_url_is_http(url))
        return BSC_EINVAL;
    a = url + (out->tls ? 8 : 7);
    end = a + strcspn(a, "/?#");
    if (end == a || strchr(url, ' ') || memchr(a, '@', (size_t)(end - a)))
        return BSC_EINVAL;
    out->authority = bsc_str_make(a, (size_t)(end - a));
    out->port = out->tls ? 443 : 80;
    if (*a == '[') {
        const char *rb = memchr(a, ']', (size_t)(end - a));
        if (!rb || rb == a + 1)
            return BSC_EINVAL;
        out->host = bsc_str_make(a + 1, (size_t)(rb - a - 1));
        if (rb + 1 < end && rb[1] != ':')
            return BSC_EINVAL;
        colon = rb + 1 < end ? rb + 1 : NULL;
    } else {
        colon = memchr(a, ':', (size_t)(end - a));
        out->host = bsc_str_make(a, (size_t)((colon ? colon : end) - a));
        if (!out->host.len)
            return BSC_EINVAL;
    }
    if (colon && !parse_port(colon + 1, (size_t)(end - colon - 1), &out->port))
        return BSC_EINVAL;
    if (*end == '#')
        return BSC_EINVAL;
    out->target = *end ? bsc_str_make(end, strcspn(end, "#")) : BSC_STR("/");
    return BSC_OK;
}

enum { NAMED_HOST = 1, NAMED_ACCEPT = 2, NAMED_ENCODING = 4, NAMED_LENGTH = 8 };

/* Which of the default headers the caller's lines name (given or dropped), in one pass that
 * also sums the lines' length (<total>, with their CRLFs) for a single reservation. */
static unsigned named_defaults(const char *const *headers, size_t n, size_t *total)
{
    static const struct {
        const char *name;
        size_t len;
        unsigned bit;
    } defaults[] = {
        {"Host", 4, NAMED_HOST},
        {"Accept", 6, NAMED_ACCEPT},
        {"Accept-Encoding", 15, NAMED_ENCODING},
        {"Content-Length", 14, NAMED_LENGTH},
    };
    unsigned named = 0;

    *total = 0;
    for (size_t i = 0; i < n; i++) {
        const char *h = headers[i];
        size_t len = strlen(h);

        *total += len + 2;
        for (size_t d = 0; d < sizeof(defaults) / sizeof(defaults[0]); d++)
            if (len > defaults[d].len && h[defaults[d].len] == ':' &&
                bsc_ascii_ieq(h, defaults[d].name, defaults[d].len))
                named |= defaults[d].bit;
    }
    return named;
}

static enum bsc_err caller_lines(struct bsc_buf *out, const char *const *headers, size_t n)
{
    enum bsc_err err = BSC_OK;

    for (size_t i = 0; i < n && !err; i++) {
        const char *h = headers[i], *v;
        size_t len = strlen(h); /* then memchr: no libc call builds a byte set per line */
        const char *colon = memchr(h, ':', len);

        if (!colon || colon == h || memchr(h, '\r', len) || memchr(h, '\n', len))
            return BSC_EINVAL;
        for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
            ;
        if (*v == '\0')
            continue; /* "Name:" drops a default header, as with libcurl */
        err = bsc_buf_append(out, h, len);
        if (!err)
            err = bsc_buf_append(out, "\r\n", 2);
    }
    return err;
}

/* "<name><value>\r\n" */
static enum bsc_err put_line(struct bsc_buf *out, const char *name, const char *v, size_t len)
{
    enum bsc_err err = bsc_buf_append_cstr(out, name);

    if (!err)
        err = bsc_buf_append(out, v, len);
    return err ? err : bsc_buf_append(out, "\r\n", 2);
}

static enum bsc_err put_length(struct bsc_buf *out, size_t body_len)
{
    enum bsc_err err = bsc_buf_append_cstr(out, "Content-Length: ");

    if (!err)
        err = bsc_buf_append_u64(out, (unsigned long long)body_len);
    return err ? err : bsc_buf_append(out, "\r\n", 2);
}

enum bsc_err h1_request_head(struct bsc_buf *out, const char *method, const struct h1_url *u,
                             const char *const *headers, size_t n_headers, size_t body_len)
{
    size_t lines;
    unsigned named = named_defaults(headers, n_headers, &lines);
    /* the request line, the caller's lines, the defaults with their longest values, the end */
    enum bsc_err err = bsc_buf_reserve(out, strlen(method) + 1 + u->target.len + 11 + lines +
                                                8 + u->authority.len + 13 + 27 + 40 + 2);

    if (!err)
        err = bsc_buf_append_cstr(out, method);
    if (!err)
        err = bsc_buf_append_char(out, ' ');
    if (!err)
        err = bsc_buf_append(out, u->target.p, u->target.len);
    if (!err)
        err = bsc_buf_append(out, " HTTP/1.1\r\n", 11);

    if (!err)
        err = caller_lines(out, headers, n_headers);
    if (!err && !(named & NAMED_HOST))
        err = put_line(out, "Host: ", u->authority.p, u->authority.len);
    if (!err && !(named & NAMED_ACCEPT))
        err = bsc_buf_append_cstr(out, "Accept: */*\r\n");
    if (!err && !(named & NAMED_ENCODING))
        err = bsc_buf_append_cstr(out, "Accept-Encoding: identity\r\n");
    if (!err && strcmp(method, "GET") != 0 && !(named & NAMED_LENGTH))
        err = put_length(out, body_len);
    if (!err)
        err = bsc_buf_append(out, "\r\n", 2);
    return err;
}
