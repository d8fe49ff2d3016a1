/* SPDX-License-Identifier: MIT */
/* h1_head.c -- a request head judged as a whole once its last byte arrived: the end of
 * the head counted against the limit, CONNECT refused, field names checked as RFC 9110
 * tokens, HTTP/1.0 or 1.1 only with exactly one Host on 1.1 (and never two), values
 * trimmed, the request target split into path, query and (absolute-form) authority, and
 * the framing judged: a lone "chunked" Transfer-Encoding or none, a Content-Length within
 * the body limit. The reader (h1_parse.c) calls it in the order the checks must run and
 * keeps the flags it sets. Pure: no I/O, no clock. See docs/internals/server.md. */
#include <http_parser.h>
#include <string.h>
#include <strings.h>

#include "core/ascii.h"
#include "core/str.h"
#include "server/internal.h"

/* Head bytes not in the head buffer, for canonical formatting: the empty line. */
#define END_EXTRA 2u

int srv__h1_fail(struct srv__h1 *h, enum srv__h1_err err, const char *why)
{
    if (!h->err) {
        h->err = err;
        h->why = why;
    }
    return -1;
}

int srv__h1_count(struct srv__h1 *h, size_t n)
{
    if (n > h->max_head || h->head_bytes > h->max_head - n)
        return srv__h1_fail(h, SRV__H1_E_HEAD_TOO_LARGE, "request line and headers are too large");
    h->head_bytes += (uint32_t)n;
    return 0;
}

/* Values are stored without their leading whitespace; the trailing is trimmed here. */
static void trim_values(struct srv__h1 *h)
{
    for (uint32_t i = 0; i < h->n_hdrs; i++) {
        struct srv__h1_hdr *hdr = &h->hdrs[i];

        while (hdr->value_len) {
            char ch = h->head.p[hdr->value_off + hdr->value_len - 1];

            if (ch != ' ' && ch != '\t')
                break;
            hdr->value_len--;
        }
    }
}

static struct bsc_str url_field(struct bsc_str url, const struct http_parser_url *u, int f)
{
    return bsc_str_make(url.p + u->field_data[f].off, u->field_data[f].len);
}

/* An absolute-form target names the host it is for (RFC 9112 §3.2.2: it, not Host, is the
 * target's authority), so the server keeps that "host[:port]" for the handler's Host
 * policy to judge. Only http and https, and no userinfo (RFC 9110 §4.2.4 forbids it). */
static int take_authority(struct srv__h1 *h, struct bsc_str url, const struct http_parser_url *u)
{
    struct bsc_str scheme;
    size_t from, to;

    if (!(u->field_set & (1u << UF_SCHEMA)) || !(u->field_set & (1u << UF_HOST)))
        return srv__h1_fail(h, SRV__H1_E_BAD_REQUEST, "invalid request target");
    scheme = url_field(url, u, UF_SCHEMA);
    if (!bsc_str_ieq(scheme, BSC_STR("http")) && !bsc_str_ieq(scheme, BSC_STR("https")))
        return srv__h1_fail(h, SRV__H1_E_BAD_REQUEST, "request target scheme is not http or https");
    from = (size_t)(scheme.p - url.p) + scheme.len + 3; /* past "://", which parse_url checked */
    for (to = from; to < url.len && !strchr("/?#", url.p[to]); to++)
        ;
    /* parse_url reports no userinfo when it is empty ("http://@h/"): look for the '@' */
    if ((u->field_set & (1u << UF_USERINFO)) || memchr(url.p + from, '@', to - from))
        return srv__h1_fail(h, SRV__H1_E_BAD_REQUEST, "request target with userinfo");
    h->authority = bsc_str_make(url.p + from, to - from);
    return 0;
}

/* Absolute-form ("http://h/p?q"), or any other target that is not origin- or asterisk-form,
 * through http-parser's URL splitter (a pure function). */
static int split_absolute(struct srv__h1 *h, struct bsc_str url)
{
    struct http_parser_url u;

    if (url.len > UINT16_MAX) /* http_parser_url offsets are 16-bit */
        return srv__h1_fail(h, SRV__H1_E_BAD_REQUEST, "request target is too long");
    http_parser_url_init(&u);
    if (http_parser_parse_url(url.p, url.len, 0, &u))
        return srv__h1_fail(h, SRV__H1_E_BAD_REQUEST, "invalid request target");
    if (take_authority(h, url, &u))
        return -1;
    h->path = BSC_STR("/");
    if (u.field_set & (1u << UF_PATH))
        h->path = url_field(url, &u, UF_PATH);
    h->query = BSC_STR("");
    if (u.field_set & (1u << UF_QUERY))
        h->query = url_field(url, &u, UF_QUERY);
    return 0;
}

/* Origin-form ("/p?q"), asterisk-form ("*") or absolute-form ("http://h/p?q"). */
static int split_url(struct srv__h1 *h)
{
    struct bsc_str url = bsc_str_make(h->head.p, h->url_len);
    size_t end = url.len;
    const char *q, *frag;

    if (url.len && url.p[0] != '/' && !(url.len == 1 && url.p[0] == '*'))
        return split_absolute(h, url);
    frag = url.len ? memchr(url.p, '#', url.len) : NULL;
    if (frag)
        end = (size_t)(frag - url.p);
    q = end ? memchr(url.p, '?', end) : NULL;
    if (q) {
        h->path = bsc_str_make(url.p, (size_t)(q - url.p));
        h->query = bsc_str_make(q + 1, end - (size_t)(q - url.p) - 1);
    } else {
        h->path = bsc_str_make(url.p, end);
        h->query = bsc_str_make(url.p + end, 0);
    }
    return 0;
}

/* Field names must be RFC 9110 tokens. The reader, like http-parser before it, lets a space
 * into a name (a trailer's may keep it) and nothing else that is not a tchar; a head's space
 * would make "Transfer-Encoding :" a smuggling vector, and RFC 9112 §5.1 says reject. */
static int check_names(struct srv__h1 *h)
{
    if (h->name_space)
        return srv__h1_fail(h, SRV__H1_E_BAD_REQUEST, "invalid character in a header name");
    return 0;
}

/* Only "chunked" is implemented; anything else (gzip, a list, ...) gets 501. */
static int check_framing(struct srv__h1 *h)
{
    size_t n_te = 0;

    /* a field named Transfer-Encoding set the flag (by its first 17 bytes) */
    for (uint32_t i = 0; (h->flags & SRV__H1_F_TE) && i < h->n_hdrs; i++) {
        struct srv_header f = srv__h1_header_at(h, i);

        if (!bsc_str_ieq(f.name, BSC_STR("transfer-encoding")))
            continue;
        if (++n_te > 1)
            return srv__h1_fail(h, SRV__H1_E_BAD_REQUEST, "repeated Transfer-Encoding");
        if (!bsc_str_ieq(f.value, BSC_STR("chunked")))
            return srv__h1_fail(h, SRV__H1_E_NOT_IMPLEMENTED, "unsupported Transfer-Encoding");
    }
    if ((h->flags & SRV__H1_F_CONTENT_LENGTH) && h->content_length > h->max_body)
        return srv__h1_fail(h, SRV__H1_E_BODY_TOO_LARGE, "request body is too large");
    return 0;
}

/* Only HTTP/1.0 and HTTP/1.1 are spoken here; the reader takes any one-digit version
 * ("HTTP/2.0" from a client that got its protocol wrong, or a probe) and a request line
 * without one (HTTP/0.9) and leaves the refusal to here. HTTP/1.1 needs exactly one Host
 * (RFC 9112 §3.2); two are refused in any version, since a front proxy and this server
 * might pick different ones. */
static int check_version_host(struct srv__h1 *h)
{
    size_t n_host = 0;

    if (h->http_major != 1 || h->http_minor > 1)
        return srv__h1_fail(h, SRV__H1_E_BAD_REQUEST, "unsupported HTTP version");
    for (uint32_t i = 0; i < h->n_hdrs; i++) {
        const struct srv__h1_hdr *hdr = &h->hdrs[i];

        if (hdr->name_len == 4 && bsc_ascii_ieq(h->head.p + hdr->name_off, "host", 4))
            n_host++;
    }
    if (n_host > 1)
        return srv__h1_fail(h, SRV__H1_E_BAD_REQUEST, "more than one Host header");
    if (n_host == 0 && h->http_minor == 1)
        return srv__h1_fail(h, SRV__H1_E_BAD_REQUEST, "an HTTP/1.1 request needs a Host header");
    return 0;
}

bool srv__h1_keep_alive(const struct srv__h1 *h)
{
    if (h->http_major > 0 && h->http_minor > 0)
        return !(h->flags & SRV__H1_F_CLOSE);
    return (h->flags & SRV__H1_F_KEEP_ALIVE) != 0;
}

int srv__h1_head_complete(struct srv__h1 *h)
{
    struct bsc_str expect;

    h->head_done = true;
    if (srv__h1_count(h, END_EXTRA))
        return -1;
    if (h->method == SRV__H1_METHOD_CONNECT)
        return srv__h1_fail(h, SRV__H1_E_NOT_IMPLEMENTED, "CONNECT is not supported");
    if (check_names(h) || check_version_host(h))
        return -1;
    trim_values(h);
    if (split_url(h))
        return -1;
    h->http10 = h->http_major < 1 || (h->http_major == 1 && h->http_minor == 0);
    h->keep_alive = srv__h1_keep_alive(h);
    expect = srv__h1_header(h, BSC_STR("expect"));
    h->expect_continue = !h->http10 && bsc_str_ieq(expect, BSC_STR("100-continue"));
    return check_framing(h);
}
