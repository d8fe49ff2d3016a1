/* SPDX-License-Identifier: MIT */
/* h1_wire.c -- the builtin HTTP/1.1 client's pure parts: URL split, request head, and the
 * response reader around http-parser. The reader rebuilds the final head's raw lines (the
 * form up_head_find reads, as libcurl hands them), drops 1xx heads (at most
 * H1_INTERIM_MAX), and keeps body bytes the consumer holds back so the caller can stop
 * reading without losing what was parsed. It refuses what http-parser lets through and a
 * connection that is out of step would show: bare LF, obs-fold, a Transfer-Encoding other
 * than "chunked", a 101; a 204/304/HEAD answer ends with its head. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "upstream/h1_wire.h"
#include "upstream/line_rules.h"

enum { H1__NONE, H1__STATUS, H1__FIELD, H1__VALUE };
enum { LD_START = 0, LD_HEAD, LD_BODY };

#define H1_HELD_MAX (4u * 1024u * 1024u) /* held bytes come from reads made before a hold */

bool h1_url_is_http(const char *url)
{
    return url && strncasecmp(url, "http://", 7) == 0;
}

bool h1_url_is_https(const char *url)
{
    return url && strncasecmp(url, "https://", 8) == 0;
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
                strncasecmp(h, defaults[d].name, defaults[d].len) == 0)
                named |= defaults[d].bit;
    }
    return named;
}

static enum bsc_err caller_lines(struct bsc_buf *out, const char *const *headers, size_t n)
{
    enum bsc_err err = BSC_OK;

    for (size_t i = 0; i < n && !err; i++) {
        const char *h = headers[i], *colon = strchr(h, ':');

        if (!colon || colon == h || strpbrk(h, "\r\n"))
            return BSC_EINVAL;
        if (colon[1 + strspn(colon + 1, " \t")] == '\0')
            continue; /* "Name:" drops a default header, as with libcurl */
        err = bsc_buf_append_cstr(out, h);
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

/* ---- the response reader -------------------------------------------------------------- */

static struct h1_resp *of(http_parser *p)
{
    return (struct h1_resp *)p; /* the parser is the first member */
}

static int head_put(struct h1_resp *r, const char *p, size_t len)
{
    if (bsc_buf_append(r->head, p, len) != BSC_OK) {
        r->too_large = true;
        return -1;
    }
    return 0;
}

/* The status line is written once its code is known, before any header piece. */
/* Appends the decimal digits of <v> at <line> + <n>; returns the new length. */
static size_t put_digits(char *line, size_t n, unsigned v)
{
    char tmp[BSC_NUM_TEXT_MAX];
    const char *d = bsc_num_text(tmp, v, 10);
    size_t len = (size_t)(tmp + BSC_NUM_TEXT_MAX - d);

    memcpy(line + n, d, len);
    return n + len;
}

static int line_open(struct h1_resp *r)
{
    char line[40]; /* "HTTP/<major>.<minor> <status> ": three numbers of at most 10 digits */
    size_t n = 5;

    if (r->line_open)
        return 0;
    r->line_open = true;
    memcpy(line, "HTTP/", 5);
    n = put_digits(line, n, r->p.http_major);
    line[n++] = '.';
    n = put_digits(line, n, r->p.http_minor);
    line[n++] = ' ';
    n = put_digits(line, n, r->p.status_code);
    line[n++] = ' ';
    return head_put(r, line, n);
}

static int on_begin(http_parser *p)
{
    struct h1_resp *r = of(p);

    bsc_buf_reset(r->head);
    r->line_open = false;
    r->last = H1__NONE;
    return 0;
}

static int on_status(http_parser *p, const char *at, size_t len)
{
    struct h1_resp *r = of(p);

    r->last = H1__STATUS;
    return line_open(r) || head_put(r, at, len);
}

/* Header pieces may come split across reads: a piece continues the line it belongs to. */
static int on_field(http_parser *p, const char *at, size_t len)
{
    struct h1_resp *r = of(p);

    if (line_open(r) || (r->last != H1__FIELD && head_put(r, "\r\n", 2)))
        return -1;
    r->last = H1__FIELD;
    return head_put(r, at, len);
}

static int on_value(http_parser *p, const char *at, size_t len)
{
    struct h1_resp *r = of(p);

    if (r->last != H1__VALUE && head_put(r, ": ", 2))
        return -1;
    r->last = H1__VALUE;
    return head_put(r, at, len);
}

/* The final head, as rebuilt, against the line rules the libcurl side checks: what is left
 * for them to find here is its Transfer-Encoding (one line saying exactly "chunked"); its
 * raw bytes kept the others. NULL, or the rule broken. */
static const char *head_rules(const struct bsc_buf *head)
{
    struct up_line_rules st = {0};
    const char *q = head->p, *end = head->p + head->len;

    while (q < end) {
        const char *lf = memchr(q, '\n', (size_t)(end - q));
        size_t n = lf ? (size_t)(lf + 1 - q) : (size_t)(end - q);
        const char *why = up__line_check(&st, q, n);

        if (why)
            return why;
        q += n;
    }
    return NULL;
}

static int refuse(struct h1_resp *r, const char *why)
{
    if (!r->why)
        r->why = why;
    return -1;
}

/* An interim head is forgotten (at most H1_INTERIM_MAX of them) and never has a body; the
 * final one goes to on_head. Returning 1 tells http-parser the message has no body: a
 * 1xx, 204 or 304, or any answer to HEAD, whatever its Content-Length says, so a byte
 * after it is a byte after the response. */
static int on_head_end(http_parser *p)
{
    struct h1_resp *r = of(p);
    const char *why;

    if (line_open(r) || (r->last == H1__FIELD && head_put(r, ":", 1)) ||
        head_put(r, "\r\n\r\n", 4))
        return -1;
    if (p->status_code == 101)
        return refuse(r, "101 Switching Protocols to a request that asked for no upgrade");
    if (p->status_code < 200) {
        if (++r->interim > H1_INTERIM_MAX)
            return refuse(r, "too many interim (1xx) responses");
        r->ld_phase = LD_START; /* the next head follows */
        return 1;
    }
    if ((why = head_rules(r->head)) != NULL)
        return refuse(r, why);
    r->status = p->status_code;
    r->head_done = true;
    if (r->on_head(r->ud, r->status) == H1_STOP) {
        r->stop = true;
        return -1;
    }
    return r->no_body || r->status == 204 || r->status == 304 ? 1 : 0;
}

/* ---- line discipline (RFC 9112 §2.2, §5.2, §7.1) ------------------------------------------
 * http-parser (not built strict) ends a line at a bare LF, skips a CR followed by anything,
 * and folds a header line that starts with SP/HT into the previous one. An upstream that
 * frames its answer so is refused, as the server side refuses such a request: two readers
 * of the same bytes would disagree on where the answer ends. Head bytes are checked before
 * the parser sees them (it is fed one head at a time, so on_head never sees a head that
 * breaks a rule); framing bytes after the head (chunk lines, trailers) are checked before
 * each body piece and after each feed. Body data is never looked at. */

/* One line ended: returns true when it was the empty line that ends a head. */
static bool end_line(struct h1_resp *r)
{
    bool head_end = false;

    if (r->ld_phase == LD_START && !r->ld_bol) {
        r->ld_phase = LD_HEAD; /* the status line */
    } else if (r->ld_phase == LD_HEAD && r->ld_bol) {
        r->ld_phase = LD_BODY;
        head_end = true;
    }
    r->ld_bol = true;
    return head_end;
}

/* The first CR or LF in [<q>, <to>), or NULL: inside a line nothing else matters. */
static const char *line_break(const char *q, const char *to)
{
    const char *cr = memchr(q, '\r', (size_t)(to - q));
    const char *lf = memchr(q, '\n', (size_t)((cr ? cr : to) - q));

    return lf ? lf : cr;
}

/* Checks the framing bytes [<from>, <to>). Returns where the check stopped: <to>, or just
 * past the empty line that ends a head; NULL when a rule is broken (r->why says which). */
static const char *scan_lines(struct h1_resp *r, const char *from, const char *to)
{
    for (const char *q = from; q < to; q++) {
        char ch;

        if (!r->ld_cr && !r->ld_bol && !(q = line_break(q, to)))
            break; /* the rest is inside a line */
        ch = *q;
        if (r->ld_cr) {
            if (ch != '\n')
                return refuse(r, "CR not followed by LF"), NULL;
            r->ld_cr = false;
            if (end_line(r))
                return q + 1;
        } else if (ch == '\r') {
            r->ld_cr = true;
        } else if (ch == '\n') {
            return refuse(r, "line ends in a bare LF (CRLF required)"), NULL;
        } else if (r->ld_bol && r->ld_phase == LD_HEAD && (ch == ' ' || ch == '\t')) {
            return refuse(r, "obsolete line folding in the head"), NULL;
        } else {
            r->ld_bol = false;
        }
    }
    return to;
}

static int on_body_piece(http_parser *p, const char *at, size_t len)
{
    struct h1_resp *r = of(p);
    enum h1_take take;

    if (!scan_lines(r, r->scan_at, at))
        return -1;
    if (r->ld_cr)
        return refuse(r, "CR not followed by LF");
    r->scan_at = at + len;
    r->ld_bol = false;
    if (r->hold)
        return bsc_buf_append(&r->held, at, len) == BSC_OK ? 0 : -1;
    take = r->on_body(r->ud, at, len);
    if (take == H1_STOP) {
        r->stop = true;
        return -1;
    }
    r->hold = take == H1_HOLD;
    return 0;
}

/* The end of a message: an interim one is forgotten; the final one stops the parser so
 * that bytes after it are left to the caller (they are not part of this response). */
static int on_end(http_parser *p)
{
    struct h1_resp *r = of(p);

    if (!r->head_done)
        return 0;
    r->done = true;
    http_parser_pause(p, 1);
    return 0;
}

static const http_parser_settings settings = {
    .on_message_begin = on_begin,
    .on_status = on_status,
    .on_header_field = on_field,
    .on_header_value = on_value,
    .on_headers_complete = on_head_end,
    .on_body = on_body_piece,
    .on_message_complete = on_end,
};

void h1_resp_setup(struct h1_resp *r, enum h1_take (*on_head)(void *ud, int status),
                   enum h1_take (*on_body)(void *ud, const char *p, size_t len))
{
    memset(r, 0, sizeof(*r));
    r->on_head = on_head;
    r->on_body = on_body;
    bsc_buf_init(&r->held, H1_HELD_MAX);
}

void h1_resp_start(struct h1_resp *r, struct bsc_buf *head, void *ud, bool no_body)
{
    http_parser_init(&r->p, HTTP_RESPONSE);
    r->head = head;
    r->ud = ud;
    r->taken = 0;
    r->status = 0;
    r->hold = r->head_done = r->done = r->stop = r->too_large = r->line_open = false;
    r->last = H1__NONE;
    r->no_body = no_body;
    r->why = NULL;
    r->interim = 0;
    r->ld_phase = LD_START;
    r->ld_cr = false;
    r->ld_bol = true;
    r->scan_at = NULL;
    bsc_buf_reset(&r->held);
    bsc_buf_reset(head);
}

void h1_resp_cleanup(struct h1_resp *r)
{
    bsc_buf_cleanup(&r->held);
}

static enum h1_state state_of(struct h1_resp *r)
{
    if (r->stop)
        return H1_STOPPED;
    if (r->too_large || HTTP_PARSER_ERRNO(&r->p) == HPE_HEADER_OVERFLOW)
        return H1_TOO_LARGE;
    if (r->why)
        return H1_BAD; /* before done: a chunked answer's last line is checked after it */
    if (r->done)
        return H1_DONE;
    if (HTTP_PARSER_ERRNO(&r->p) != HPE_OK)
        return H1_BAD;
    return H1_MORE;
}

static bool feeding(const struct h1_resp *r)
{
    return !r->done && !r->stop && !r->why && HTTP_PARSER_ERRNO(&r->p) == HPE_OK;
}

/* A head is fed alone, once its lines are checked; the body with its framing in one go.
 * Bounded: each pass feeds at least one byte or stops. */
enum h1_state h1_resp_feed(struct h1_resp *r, const char *p, size_t len, size_t *used)
{
    const char *at = p, *end = p + len;

    while (at < end && feeding(r)) {
        bool body = r->ld_phase == LD_BODY;
        const char *to = body ? end : scan_lines(r, at, end);
        size_t n;

        if (!to)
            break;
        r->scan_at = at;
        n = http_parser_execute(&r->p, &settings, at, (size_t)(to - at));
        if (body && !r->why && (r->done || HTTP_PARSER_ERRNO(&r->p) == HPE_OK))
            (void)scan_lines(r, r->scan_at, at + n); /* the framing after the last piece */
        at += n;
        if (at < to)
            break; /* paused at the end of the message, or an error */
    }
    r->taken += (size_t)(at - p);
    if (used)
        *used = (size_t)(at - p);
    return state_of(r);
}

enum h1_state h1_resp_eof(struct h1_resp *r)
{
    if (r->done || r->stop || HTTP_PARSER_ERRNO(&r->p) != HPE_OK)
        return state_of(r);
    if (r->taken == 0)
        return H1_MORE; /* nothing came: not a response at all */
    http_parser_execute(&r->p, &settings, NULL, 0);
    return r->done ? H1_DONE : H1_MORE; /* cut short: the caller reports a reset */
}

enum h1_take h1_resp_drain(struct h1_resp *r)
{
    enum h1_take take = H1_GO;

    r->hold = false;
    if (r->held.len)
        take = r->on_body(r->ud, r->held.p, r->held.len);
    bsc_buf_reset(&r->held);
    if (take == H1_STOP)
        r->stop = true;
    r->hold = take == H1_HOLD;
    return take;
}

bool h1_resp_keep_alive(const struct h1_resp *r)
{
    return r->done && !r->why && http_should_keep_alive(&r->p);
}

const char *h1_resp_why(const struct h1_resp *r)
{
    return r->why ? r->why : http_errno_description(HTTP_PARSER_ERRNO(&r->p));
}
