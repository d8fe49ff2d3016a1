/* SPDX-License-Identifier: MIT */
/* h1_wire.c -- the builtin HTTP/1.1 client's pure parts that write: the URL split and the
 * request head. The response reader is h1_read.c. */
#include <emmintrin.h>
#include <stdio.h>
#include <string.h>

#include "core/ascii.h"
#include "core/compat.h"
#include "core/str.h"
#include "upstream/h1_wire.h"


/* Whether <url> starts with <scheme> (lowercase letters, then "://"), its letters in any
 * case: bsc_ascii_ieq for a pattern known to hold only lowercase letters and "://", where
 * a byte | 0x20 is the letter only for its two cases. Stops at the first byte that differs,
 * so never reads past a NUL. Twice a request (the client's choice, the split). */
static inline bool has_scheme(const char *url, const char *scheme, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)url[i], want = (unsigned char)scheme[i];

        if ((want >= 'a' ? c | 0x20 : c) != want)
            return false;
    }
    return true;
}

bool h1_url_is_http(const char *url)
{
    return url && has_scheme(url, "http://", 7);
}

bool h1_url_is_https(const char *url)
{
    return url && has_scheme(url, "https://", 8);
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

/* The caller's lines whose lengths are kept from the first pass for the second; a line past
 * them (more than an up_request carries) is measured again. */
#define LENS_KEPT 64

/* Which of the default headers the caller's lines name (given or dropped), in one pass that
 * also sums the lines' length (<total>, with their CRLFs) for a single reservation and keeps
 * the first LENS_KEPT lengths in <lens>. */
static unsigned named_defaults(const char *const *headers, size_t n, size_t *total,
                               size_t lens[LENS_KEPT])
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

        if (i < LENS_KEPT)
            lens[i] = len;
        *total += len + 2;
        for (size_t d = 0; d < sizeof(defaults) / sizeof(defaults[0]); d++)
            if (len > defaults[d].len && h[defaults[d].len] == ':' &&
                bsc_ascii_ieq(h, defaults[d].name, defaults[d].len))
                named |= defaults[d].bit;
    }
    return named;
}

/* Whether one of the <len> bytes at <p> is CR or LF: sixteen at a time from sixteen bytes on
 * (the last block overlapping the one before: a yes or no needs no position), one at a time
 * below (a line is rarely that short). Reads only <p>[0..<len>). Two memchr calls cost more
 * than the lines they looked at. */
BSC_TESTABLE bool h1__has_cr_lf(const char *p, size_t len)
{
    const __m128i cr = _mm_set1_epi8('\r'), lf = _mm_set1_epi8('\n');
    __m128i v;

    if (len < 16) {
        for (size_t i = 0; i < len; i++)
            if (p[i] == '\r' || p[i] == '\n')
                return true;
        return false;
    }
    for (size_t i = 0; i + 16 < len; i += 16) {
        v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        if (_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, lf))))
            return true;
    }
    v = _mm_loadu_si128((const __m128i *)(const void *)(p + len - 16));
    return _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, lf))) != 0;
}

/* <n> bytes at the cursor <o>, into room reserved before; the cursor after them. */
static inline char *put_bytes(char *o, const void *p, size_t n)
{
    if (n)
        memcpy(o, p, n);
    return o + n;
}

#define PUT_LIT(o, lit) put_bytes((o), "" lit, sizeof(lit) - 1)

/* The caller's lines with their CRLFs at <*o>. BSC_EINVAL at the first line with a CR or LF
 * or without a name and colon: <*o> is then after the lines before it. */
static enum bsc_err caller_lines(char **o, const char *const *headers, size_t n,
                                 const size_t lens[LENS_KEPT])
{
    for (size_t i = 0; i < n; i++) {
        const char *h = headers[i], *v;
        size_t len = i < LENS_KEPT ? lens[i] : strlen(h);
        const char *colon = memchr(h, ':', len);

        if (!colon || colon == h || h1__has_cr_lf(h, len))
            return BSC_EINVAL;
        for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
            ;
        if (*v == '\0')
            continue; /* "Name:" drops a default header, as with libcurl */
        *o = put_bytes(*o, h, len);
        *o = PUT_LIT(*o, "\r\n");
    }
    return BSC_OK;
}

/* The head ends at <o>: its length and terminator, as the appends left them. */
static void head_end(struct bsc_buf *out, const char *o)
{
    out->len = (size_t)(o - out->p);
    out->p[out->len] = '\0';
}

enum bsc_err h1_request_head(struct bsc_buf *out, const char *method, const struct h1_url *u,
                             const char *const *headers, size_t n_headers, size_t body_len)
{
    size_t lines, lens[LENS_KEPT], method_len = strlen(method);
    unsigned named = named_defaults(headers, n_headers, &lines, lens);
    /* the request line, the caller's lines, the defaults with their longest values, the end:
     * every piece below is written into this room without a check of its own */
    enum bsc_err err = bsc_buf_reserve(out, method_len + 1 + u->target.len + 11 + lines + 8 +
                                                u->authority.len + 13 + 27 + 40 + 2);
    char *o;

    if (err)
        return err;
    o = out->p + out->len;
    o = put_bytes(o, method, method_len);
    *o++ = ' ';
    o = put_bytes(o, u->target.p, u->target.len);
    o = PUT_LIT(o, " HTTP/1.1\r\n");
    err = caller_lines(&o, headers, n_headers, lens);
    if (err) {
        head_end(out, o); /* the lines before the refused one stay, as appended */
        return err;
    }
    if (!(named & NAMED_HOST)) {
        o = PUT_LIT(o, "Host: ");
        o = put_bytes(o, u->authority.p, u->authority.len);
        o = PUT_LIT(o, "\r\n");
    }
    if (!(named & NAMED_ACCEPT))
        o = PUT_LIT(o, "Accept: */*\r\n");
    if (!(named & NAMED_ENCODING))
        o = PUT_LIT(o, "Accept-Encoding: identity\r\n");
    if (strcmp(method, "GET") != 0 && !(named & NAMED_LENGTH)) {
        char tmp[BSC_NUM_TEXT_MAX];
        const char *digits = bsc_num_text(tmp, (unsigned long long)body_len, 10);

        o = PUT_LIT(o, "Content-Length: ");
        o = put_bytes(o, digits, (size_t)(tmp + BSC_NUM_TEXT_MAX - digits));
        o = PUT_LIT(o, "\r\n");
    }
    o = PUT_LIT(o, "\r\n");
    head_end(out, o);
    return BSC_OK;
}
