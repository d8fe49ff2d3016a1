/* SPDX-License-Identifier: MIT */
/* h1_req_ref.c -- the reference request parser for the tests: the server's HTTP/1.1 request
 * parser as it was when it wrapped the http-parser library (libhttp-parser 2.9), kept
 * unchanged but for its names (h1_req_ref_*) so that tests/fuzz/fuzz_h1_request_diff.c can
 * feed the same bytes to it and to src/server/h1_parse.c and compare what each makes of
 * them. Built only into the unit-test helper archive and the fuzz targets that name it;
 * never part of bascule.
 *
 * What it was: a thin, pure wrapper over http-parser for one request at a time. It copies
 * the URL and header fields once into a bounded head buffer, de-chunks the body into a
 * bounded body buffer, counts head bytes itself (http_parser_set_max_header_size is
 * process-wide) and classifies failures into enum srv__h1_err. Trailers are counted against
 * the head limit and dropped. RFC 9112 strictness that http-parser lacks (CRLF line
 * endings, no obs-fold, one Host, HTTP/1.0 or 1.1 only) is checked here. */
#include <http_parser.h>
#include <string.h>

#include "core/buf.h"
#include "core/compat.h"
#include "core/str.h"
#include "h1_req_ref.h"
#include "server/internal.h"

enum { CB_NONE = 0, CB_FIELD, CB_VALUE };

/* Head bytes not reported by callbacks, for canonical formatting: the request line's two
 * spaces, "HTTP/1.1" and CRLF; ": " and CRLF per field; the empty line. */
#define LINE_EXTRA  12u
#define FIELD_EXTRA 4u
#define END_EXTRA   2u

static struct h1_req_ref *h1_of(http_parser *hp)
{
    return hp->data;
}

/* Records the first failure; returns non-zero so http-parser stops. */
static int fail(struct h1_req_ref *h, enum srv__h1_err err, const char *why)
{
    if (!h->err) {
        h->err = err;
        h->why = why;
    }
    return -1;
}

static int count_head(struct h1_req_ref *h, size_t n)
{
    if (n > h->max_head || h->head_bytes > h->max_head - n)
        return fail(h, SRV__H1_E_HEAD_TOO_LARGE, "request line and headers are too large");
    h->head_bytes += (uint32_t)n;
    return 0;
}

static int keep(struct h1_req_ref *h, const char *at, size_t len)
{
    enum bsc_err err = bsc_buf_append(&h->head, at, len);

    if (err == BSC_ENOMEM)
        return fail(h, SRV__H1_E_NOMEM, "out of memory");
    if (err)
        return fail(h, SRV__H1_E_HEAD_TOO_LARGE, "request line and headers are too large");
    return 0;
}

static int on_url(http_parser *hp, const char *at, size_t len)
{
    struct h1_req_ref *h = h1_of(hp);

    if (h->head_bytes == 0 && count_head(h, strlen(http_method_str(hp->method)) + LINE_EXTRA))
        return -1;
    if (count_head(h, len) || keep(h, at, len))
        return -1;
    h->url_len += (uint32_t)len;
    return 0;
}

static int add_field(struct h1_req_ref *h)
{
    struct srv__h1_hdr *hdr;

    if (h->n_hdrs == SRV__H1_MAX_HEADERS)
        return fail(h, SRV__H1_E_HEAD_TOO_LARGE, "too many header fields");
    if (h->n_hdrs == h->hdrs_cap) {
        uint32_t cap = h->hdrs_cap ? h->hdrs_cap * 2 : 16;
        struct srv__h1_hdr *p = realloc(h->hdrs, cap * sizeof(*p));

        if (!p)
            return fail(h, SRV__H1_E_NOMEM, "out of memory");
        h->hdrs = p;
        h->hdrs_cap = cap;
    }
    hdr = &h->hdrs[h->n_hdrs++];
    hdr->name_off = (uint32_t)h->head.len;
    hdr->name_len = 0;
    hdr->value_off = (uint32_t)h->head.len;
    hdr->value_len = 0;
    return 0;
}

static int on_header_field(http_parser *hp, const char *at, size_t len)
{
    struct h1_req_ref *h = h1_of(hp);
    bool first = h->last_cb != CB_FIELD;

    h->last_cb = CB_FIELD;
    if (first && count_head(h, FIELD_EXTRA))
        return -1;
    if (count_head(h, len))
        return -1;
    if (h->head_done) /* a trailer: counted, not kept */
        return 0;
    if (first && add_field(h))
        return -1;
    if (keep(h, at, len))
        return -1;
    h->hdrs[h->n_hdrs - 1].name_len += (uint32_t)len;
    return 0;
}

static int on_header_value(http_parser *hp, const char *at, size_t len)
{
    struct h1_req_ref *h = h1_of(hp);
    struct srv__h1_hdr *hdr;

    if (count_head(h, len))
        return -1;
    if (h->head_done) {
        h->last_cb = CB_VALUE;
        return 0;
    }
    hdr = &h->hdrs[h->n_hdrs - 1];
    if (h->last_cb != CB_VALUE) {
        hdr->value_off = (uint32_t)h->head.len;
        hdr->value_len = 0;
    }
    h->last_cb = CB_VALUE;
    if (keep(h, at, len))
        return -1;
    hdr->value_len += (uint32_t)len;
    return 0;
}

/* http-parser strips leading whitespace from values but not trailing. */
static void trim_values(struct h1_req_ref *h)
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
static int take_authority(struct h1_req_ref *h, struct bsc_str url, const struct http_parser_url *u)
{
    struct bsc_str scheme;
    size_t from, to;

    if (!(u->field_set & (1u << UF_SCHEMA)) || !(u->field_set & (1u << UF_HOST)))
        return fail(h, SRV__H1_E_BAD_REQUEST, "invalid request target");
    scheme = url_field(url, u, UF_SCHEMA);
    if (!bsc_str_ieq(scheme, BSC_STR("http")) && !bsc_str_ieq(scheme, BSC_STR("https")))
        return fail(h, SRV__H1_E_BAD_REQUEST, "request target scheme is not http or https");
    from = (size_t)(scheme.p - url.p) + scheme.len + 3; /* past "://", which parse_url checked */
    for (to = from; to < url.len && !strchr("/?#", url.p[to]); to++)
        ;
    /* parse_url reports no userinfo when it is empty ("http://@h/"): look for the '@' */
    if ((u->field_set & (1u << UF_USERINFO)) || memchr(url.p + from, '@', to - from))
        return fail(h, SRV__H1_E_BAD_REQUEST, "request target with userinfo");
    h->authority = bsc_str_make(url.p + from, to - from);
    return 0;
}

/* Origin-form ("/p?q"), asterisk-form ("*") or absolute-form ("http://h/p?q"). */
static int split_url(struct h1_req_ref *h)
{
    struct bsc_str url = bsc_str_make(h->head.p, h->url_len);
    struct http_parser_url u;
    size_t end = url.len;
    const char *q, *frag;

    if (url.len && url.p[0] != '/' && !(url.len == 1 && url.p[0] == '*')) {
        if (url.len > UINT16_MAX) /* http_parser_url offsets are 16-bit */
            return fail(h, SRV__H1_E_BAD_REQUEST, "request target is too long");
        http_parser_url_init(&u);
        if (http_parser_parse_url(url.p, url.len, 0, &u))
            return fail(h, SRV__H1_E_BAD_REQUEST, "invalid request target");
        if (take_authority(h, url, &u))
            return -1;
        h->path = BSC_STR("/");
        if (u.field_set & (1u << UF_PATH))
            h->path = bsc_str_make(url.p + u.field_data[UF_PATH].off, u.field_data[UF_PATH].len);
        h->query = BSC_STR("");
        if (u.field_set & (1u << UF_QUERY))
            h->query = bsc_str_make(url.p + u.field_data[UF_QUERY].off,
                                    u.field_data[UF_QUERY].len);
        return 0;
    }
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

/* RFC 9110 tchar. http-parser, when not strict, lets a space into a field name, which
 * would make "Transfer-Encoding :" a smuggling vector; RFC 9112 §5.1 says reject. */
static bool is_tchar(unsigned char ch)
{
    if ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'))
        return true;
    return ch && strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

static int check_names(struct h1_req_ref *h)
{
    for (uint32_t i = 0; i < h->n_hdrs; i++) {
        const struct srv__h1_hdr *hdr = &h->hdrs[i];

        if (!hdr->name_len)
            return fail(h, SRV__H1_E_BAD_REQUEST, "empty header name");
        for (uint32_t k = 0; k < hdr->name_len; k++)
            if (!is_tchar((unsigned char)h->head.p[hdr->name_off + k]))
                return fail(h, SRV__H1_E_BAD_REQUEST, "invalid character in a header name");
    }
    return 0;
}

/* Only "chunked" is implemented; anything else (gzip, a list, ...) gets 501. */
static int check_framing(struct h1_req_ref *h)
{
    http_parser *hp = &h->hp;
    size_t n_te = 0;

    for (uint32_t i = 0; i < h->n_hdrs; i++) {
        struct srv_header f = h1_req_ref_header_at(h, i);

        if (!bsc_str_ieq(f.name, BSC_STR("transfer-encoding")))
            continue;
        if (++n_te > 1)
            return fail(h, SRV__H1_E_BAD_REQUEST, "repeated Transfer-Encoding");
        if (!bsc_str_ieq(f.value, BSC_STR("chunked")))
            return fail(h, SRV__H1_E_NOT_IMPLEMENTED, "unsupported Transfer-Encoding");
    }
    if ((hp->flags & F_CONTENTLENGTH) && hp->content_length > h->max_body)
        return fail(h, SRV__H1_E_BODY_TOO_LARGE, "request body is too large");
    return 0;
}

/* Only HTTP/1.0 and HTTP/1.1 are spoken here; http-parser takes any one-digit version
 * ("HTTP/2.0" from a client that got its protocol wrong, or a probe). HTTP/1.1 needs
 * exactly one Host (RFC 9112 §3.2); two are refused in any version, since a front proxy
 * and this server might pick different ones. */
static int check_version_host(struct h1_req_ref *h)
{
    http_parser *hp = &h->hp;
    size_t n_host = 0;

    if (hp->http_major != 1 || hp->http_minor > 1)
        return fail(h, SRV__H1_E_BAD_REQUEST, "unsupported HTTP version");
    for (uint32_t i = 0; i < h->n_hdrs; i++)
        if (bsc_str_ieq(h1_req_ref_header_at(h, i).name, BSC_STR("host")))
            n_host++;
    if (n_host > 1)
        return fail(h, SRV__H1_E_BAD_REQUEST, "more than one Host header");
    if (n_host == 0 && hp->http_minor == 1)
        return fail(h, SRV__H1_E_BAD_REQUEST, "an HTTP/1.1 request needs a Host header");
    return 0;
}

static int on_headers_complete(http_parser *hp)
{
    struct h1_req_ref *h = h1_of(hp);
    struct bsc_str expect;

    h->head_done = true;
    h->last_cb = CB_NONE;
    if (count_head(h, END_EXTRA))
        return -1;
    if (hp->method == HTTP_CONNECT)
        return fail(h, SRV__H1_E_NOT_IMPLEMENTED, "CONNECT is not supported");
    if (check_names(h) || check_version_host(h))
        return -1;
    trim_values(h);
    if (split_url(h))
        return -1;
    h->http10 = hp->http_major < 1 || (hp->http_major == 1 && hp->http_minor == 0);
    h->keep_alive = http_should_keep_alive(hp) != 0;
    expect = h1_req_ref_header(h, BSC_STR("expect"));
    h->expect_continue = !h->http10 && bsc_str_ieq(expect, BSC_STR("100-continue"));
    return check_framing(h) ? -1 : 0;
}

/* ---- line discipline (RFC 9112 §2.2, §5.2) ----------------------------------------------
 * http-parser (not built strict) ends a line at a bare LF, skips a CR followed by anything,
 * folds a header line that starts with SP/HT into the previous one, and ignores everything
 * up to the CR of a chunk size line, bare LF included. Each can make a front proxy and this
 * server disagree on where a message ends. So every byte http-parser consumed that is not
 * body data is checked here after each feed: lines end in CRLF, and no head line after the
 * request line starts with whitespace. Body data is skipped (on_body marks where it was),
 * so the check never looks at bytes of the next pipelined message. Empty lines before the
 * request line are allowed (RFC 9112 §2.2). */
enum { LD_START = 0, LD_HEAD, LD_BODY };

static void end_line(struct h1_req_ref *h)
{
    if (h->ld_phase == LD_START && !h->ld_bol)
        h->ld_phase = LD_HEAD; /* the request line */
    else if (h->ld_phase == LD_HEAD && h->ld_bol)
        h->ld_phase = LD_BODY; /* the empty line that ends the head */
    h->ld_bol = true;
}

/* The first CR or LF in [<q>, <to>), or NULL: inside a line nothing else matters. */
static const char *line_break(const char *q, const char *to)
{
    const char *cr = memchr(q, '\r', (size_t)(to - q));
    const char *lf = memchr(q, '\n', (size_t)((cr ? cr : to) - q));

    return lf ? lf : cr;
}

/* Checks the framing bytes [<from>, <to>). Returns 0, or -1 after fail(). */
static int scan_lines(struct h1_req_ref *h, const char *from, const char *to)
{
    for (const char *q = from; q < to; q++) {
        char ch;

        if (!h->ld_cr && !h->ld_bol && !(q = line_break(q, to)))
            break; /* the rest is inside a line */
        ch = *q;

        if (h->ld_cr) {
            if (ch != '\n')
                return fail(h, SRV__H1_E_BAD_REQUEST, "CR not followed by LF");
            h->ld_cr = false;
            end_line(h);
        } else if (ch == '\r') {
            h->ld_cr = true;
        } else if (ch == '\n') {
            return fail(h, SRV__H1_E_BAD_REQUEST, "line ends in a bare LF (CRLF required)");
        } else if (h->ld_bol && h->ld_phase == LD_HEAD && (ch == ' ' || ch == '\t')) {
            return fail(h, SRV__H1_E_BAD_REQUEST, "obsolete line folding in the header");
        } else {
            h->ld_bol = false;
        }
    }
    return 0;
}

static int on_body(http_parser *hp, const char *at, size_t len)
{
    struct h1_req_ref *h = h1_of(hp);
    enum bsc_err err;

    if (scan_lines(h, h->scan_at, at))
        return -1;
    if (h->ld_cr)
        return fail(h, SRV__H1_E_BAD_REQUEST, "CR not followed by LF");
    h->scan_at = at + len;
    h->ld_bol = false;
    err = bsc_buf_append(&h->body, at, len);

    if (err == BSC_ENOMEM)
        return fail(h, SRV__H1_E_NOMEM, "out of memory");
    if (err)
        return fail(h, SRV__H1_E_BODY_TOO_LARGE, "request body is too large");
    return 0;
}

/* A chunk that cannot fit is refused before its bytes arrive. */
static int on_chunk_header(http_parser *hp)
{
    struct h1_req_ref *h = h1_of(hp);

    if (hp->content_length > h->max_body - h->body.len)
        return fail(h, SRV__H1_E_BODY_TOO_LARGE, "request body is too large");
    return 0;
}

static int on_message_complete(http_parser *hp)
{
    struct h1_req_ref *h = h1_of(hp);

    h->complete = true;
    h->keep_alive = http_should_keep_alive(hp) != 0;
    http_parser_pause(hp, 1); /* stop right after this message: the rest is the next one */
    return 0;
}

static const http_parser_settings h1_settings = {
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
    .on_chunk_header = on_chunk_header,
};

static void reset_message(struct h1_req_ref *h, uint32_t max_head, uint64_t max_body)
{
    http_parser_init(&h->hp, HTTP_REQUEST);
    h->hp.data = h;
    h->head.max = max_head;
    h->body.max = max_body > SIZE_MAX ? SIZE_MAX : (size_t)max_body;
    h->max_head = max_head;
    h->max_body = max_body;
    h->n_hdrs = 0;
    h->url_len = 0;
    h->path = BSC_STR_NULL;
    h->query = BSC_STR_NULL;
    h->authority = BSC_STR_NULL;
    h->head_bytes = 0;
    h->err = SRV__H1_OK;
    h->why = NULL;
    h->last_cb = CB_NONE;
    h->head_done = false;
    h->complete = false;
    h->keep_alive = false;
    h->expect_continue = false;
    h->http10 = false;
    h->scan_at = NULL;
    h->ld_phase = LD_START;
    h->ld_cr = false;
    h->ld_bol = true;
}

void h1_req_ref_init(struct h1_req_ref *h, uint32_t max_head, uint64_t max_body)
{
    bsc_buf_init(&h->head, max_head);
    bsc_buf_init(&h->body, 0);
    h->hdrs = NULL;
    h->hdrs_cap = 0;
    reset_message(h, max_head, max_body);
}

void h1_req_ref_cleanup(struct h1_req_ref *h)
{
    bsc_buf_cleanup(&h->head);
    bsc_buf_cleanup(&h->body);
    BSC_FREE(h->hdrs);
    h->hdrs_cap = 0;
    h->n_hdrs = 0;
}

void h1_req_ref_next(struct h1_req_ref *h, uint32_t max_head, uint64_t max_body)
{
    if (h->head.cap > SRV__KEEP_BUF)
        bsc_buf_cleanup(&h->head);
    if (h->body.cap > SRV__KEEP_BUF)
        bsc_buf_cleanup(&h->body);
    if (h->hdrs_cap > 64) {
        BSC_FREE(h->hdrs);
        h->hdrs_cap = 0;
    }
    bsc_buf_reset(&h->head);
    bsc_buf_reset(&h->body);
    reset_message(h, max_head, max_body);
}

static enum srv__h1_err classify(enum http_errno e)
{
    switch (e) {
    case HPE_HEADER_OVERFLOW:
        return SRV__H1_E_HEAD_TOO_LARGE;
    default:
        return SRV__H1_E_BAD_REQUEST;
    }
}

int h1_req_ref_feed(struct h1_req_ref *h, const char *p, size_t len, size_t *consumed)
{
    enum http_errno e;
    size_t n;

    *consumed = 0;
    if (h->err)
        return -1;
    if (h->complete)
        return 1;
    if (len == 0) /* http-parser reads a zero-length call as EOF */
        return 0;
    h->scan_at = p;
    n = http_parser_execute(&h->hp, &h1_settings, p, len);
    *consumed = n;
    if (!h->err && scan_lines(h, h->scan_at, p + n))
        return -1;
    h->scan_at = NULL; /* <p> is borrowed for this call only */
    if (h->complete && !h->err)
        return 1;
    e = HTTP_PARSER_ERRNO(&h->hp);
    if (h->err || e != HPE_OK) {
        fail(h, classify(e), http_errno_description(e));
        return -1;
    }
    if (n != len) /* http-parser stops early only on error or pause */
        return fail(h, SRV__H1_E_BAD_REQUEST, "request could not be parsed");
    return 0;
}

struct srv_header h1_req_ref_header_at(const struct h1_req_ref *h, size_t i)
{
    const struct srv__h1_hdr *hdr;

    if (i >= h->n_hdrs)
        return (struct srv_header){BSC_STR_NULL, BSC_STR_NULL};
    hdr = &h->hdrs[i];
    return (struct srv_header){bsc_str_make(h->head.p + hdr->name_off, hdr->name_len),
                               bsc_str_make(h->head.p + hdr->value_off, hdr->value_len)};
}

struct bsc_str h1_req_ref_header(const struct h1_req_ref *h, struct bsc_str name)
{
    for (uint32_t i = 0; i < h->n_hdrs; i++) {
        const struct srv__h1_hdr *hdr = &h->hdrs[i];

        if (hdr->name_len == name.len &&
            strncasecmp(h->head.p + hdr->name_off, name.p, name.len) == 0)
            return bsc_str_make(h->head.p + hdr->value_off, hdr->value_len);
    }
    return BSC_STR_NULL;
}

struct bsc_str h1_req_ref_method(const struct h1_req_ref *h)
{
    return bsc_str_cstr(http_method_str((enum http_method)h->hp.method));
}

bool h1_req_ref_is_head(const struct h1_req_ref *h)
{
    return h->hp.method == HTTP_HEAD;
}
