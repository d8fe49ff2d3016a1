/* SPDX-License-Identifier: MIT */
/* h1_resp_ref.c -- the reference response reader for the tests: the builtin HTTP/1.1
 * client's reader as it was when it drove the http-parser library (libhttp-parser 2.9),
 * kept unchanged but for its names (h1_ref_*) so that tests/fuzz/fuzz_h1_reader_diff.c can
 * feed the same bytes to it and to upstream/h1_wire.c and compare what each makes of them.
 * Built only into the unit-test helper archive and the fuzz targets that name it; never
 * part of bascule. Besides the old reader's behaviour it records, for the differential
 * target, what http-parser let through that the new reader refuses on purpose
 * (h1_ref.quirks). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/str.h"
#include "h1_resp_ref.h"
#include "upstream/line_rules.h"

enum { H1__NONE, H1__STATUS, H1__FIELD, H1__VALUE };
enum { LD_START = 0, LD_HEAD, LD_BODY };

#define H1_HELD_MAX (4u * 1024u * 1024u)

/* ---- what http-parser let through (h1_ref.quirks), for the differential target ----------- */

/* Whether the status-line bytes [<p>, <p> + <n>) (no CR/LF) keep "HTTP/d.d ddd" (a code of
 * 100..999), then nothing or SP and anything, as far as they go. */
static bool strict_status_prefix(const char *p, size_t n)
{
    static const char form[] = "HTTP/0.0 000 ";

    for (size_t i = 0; i < n && i < 13; i++) {
        char c = p[i];

        if (form[i] != '0' ? c != form[i]
                           : (c < (i == 9 ? '1' : '0') || c > '9'))
            return false;
    }
    return true;
}

/* A byte http-parser refuses inside a field value but not as its first byte. */
static bool ctl_byte(char c)
{
    return ((unsigned char)c < 0x20 && c != '\t') || c == 0x7f;
}

/* Checks the raw head lines in r->raw from r->raw_checked: a status line outside the strict
 * form, a field name with whitespace. A line cut by the end is checked as far as it goes
 * and again once whole. */
static void raw_quirks(struct h1_ref *r)
{
    const char *p = r->raw.p + r->raw_checked, *end = r->raw.p + r->raw.len;

    while (p < end) {
        const char *lf = memchr(p, '\n', (size_t)(end - p));
        size_t n = (size_t)((lf ? lf : end) - p);
        const char *colon;

        if (n && p[n - 1] == '\r')
            n--;
        if (n && !r->raw_status) {
            if (!strict_status_prefix(p, n) || (lf && n < 12))
                r->quirks |= H1_REF_Q_STATUS;
        } else if (n) {
            colon = memchr(p, ':', n);
            if (memchr(p, ' ', (size_t)((colon ? colon : p + n) - p)) ||
                memchr(p, '\t', (size_t)((colon ? colon : p + n) - p)))
                r->quirks |= H1_REF_Q_NAME_SPACE;
            if (colon && lf) {
                const char *v = colon + 1;

                while (v < p + n && (*v == ' ' || *v == '\t'))
                    v++;
                if (v < p + n && ctl_byte(*v))
                    r->quirks |= H1_REF_Q_VALUE_CTL;
            }
        }
        if (!lf)
            break;
        if (n)
            r->raw_status = true;
        p = lf + 1;
        r->raw_checked = (size_t)(p - r->raw.p);
    }
}

/* ---- the response reader -------------------------------------------------------------- */

static struct h1_ref *of(http_parser *p)
{
    return (struct h1_ref *)p; /* the parser is the first member */
}

static int head_put(struct h1_ref *r, const char *p, size_t len)
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

static int line_open(struct h1_ref *r)
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
    struct h1_ref *r = of(p);

    bsc_buf_reset(r->head);
    r->line_open = false;
    r->last = H1__NONE;
    return 0;
}

static int on_status(http_parser *p, const char *at, size_t len)
{
    struct h1_ref *r = of(p);

    r->last = H1__STATUS;
    return line_open(r) || head_put(r, at, len);
}

/* Header pieces may come split across reads: a piece continues the line it belongs to. */
static int on_field(http_parser *p, const char *at, size_t len)
{
    struct h1_ref *r = of(p);

    if (r->head_done) {
        r->quirks |= H1_REF_Q_TRAILER_IN_HEAD;
        if (memchr(at, ' ', len) || memchr(at, '\t', len))
            r->quirks |= H1_REF_Q_NAME_SPACE;
    }

    if (line_open(r) || (r->last != H1__FIELD && head_put(r, "\r\n", 2)))
        return -1;
    r->last = H1__FIELD;
    return head_put(r, at, len);
}

static int on_value(http_parser *p, const char *at, size_t len)
{
    struct h1_ref *r = of(p);

    if (r->head_done) {
        r->quirks |= H1_REF_Q_TRAILER_IN_HEAD;
        if (r->last != H1__VALUE && len && ctl_byte(at[0]))
            r->quirks |= H1_REF_Q_VALUE_CTL;
    }

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

static int refuse(struct h1_ref *r, const char *why)
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
    struct h1_ref *r = of(p);
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
        r->raw_reset = true;
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
    if (r->no_body || r->status == 204 || r->status == 304)
        return 1;
    r->q_sizeline = (p->flags & F_CHUNKED) != 0;
    return 0;
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
static bool end_line(struct h1_ref *r)
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
static const char *scan_lines(struct h1_ref *r, const char *from, const char *to)
{
    /* Recorded only: the two bytes after a chunk's data, which http-parser takes whatever
     * they are, and the bytes of a chunk-size line, where it reads a byte >= 0x80 as 0. */
    for (const char *q = from; q < to && (r->q_crlf || r->q_sizeline); q++) {
        if (r->q_crlf) {
            if (*q != "\r\n"[2 - r->q_crlf])
                r->quirks |= H1_REF_Q_DATA_CRLF;
            r->q_sizeline = --r->q_crlf == 0;
        } else if (*q == '\n') {
            r->q_sizeline = false;
        } else if ((unsigned char)*q >= 0x80) {
            r->quirks |= H1_REF_Q_CHUNK_HIGH;
        }
    }
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
        } else if (r->ld_bol && r->ld_phase == LD_BODY && (ch == ' ' || ch == '\t')) {
            r->quirks |= H1_REF_Q_TRAILER_FOLD; /* recorded only */
            r->ld_bol = false;
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
    struct h1_ref *r = of(p);
    enum h1_take take;

    if (!scan_lines(r, r->scan_at, at))
        return -1;
    if (r->ld_cr)
        return refuse(r, "CR not followed by LF");
    r->scan_at = at + len;
    r->ld_bol = false;
    if ((p->flags & F_CHUNKED) && p->content_length == 0)
        r->q_crlf = 2;
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
    struct h1_ref *r = of(p);

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

void h1_ref_setup(struct h1_ref *r, enum h1_take (*on_head)(void *ud, int status),
                   enum h1_take (*on_body)(void *ud, const char *p, size_t len))
{
    memset(r, 0, sizeof(*r));
    r->on_head = on_head;
    r->on_body = on_body;
    bsc_buf_init(&r->held, H1_HELD_MAX);
    bsc_buf_init(&r->raw, 1u << 20);
}

void h1_ref_start(struct h1_ref *r, struct bsc_buf *head, void *ud, bool no_body)
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
    r->quirks = 0;
    r->q_crlf = 0;
    r->q_sizeline = false;
    r->raw_checked = 0;
    r->raw_status = r->raw_reset = false;
    bsc_buf_reset(&r->raw);
    bsc_buf_reset(&r->held);
    bsc_buf_reset(head);
}

void h1_ref_cleanup(struct h1_ref *r)
{
    bsc_buf_cleanup(&r->held);
    bsc_buf_cleanup(&r->raw);
}

static enum h1_state state_of(struct h1_ref *r)
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

static bool feeding(const struct h1_ref *r)
{
    return !r->done && !r->stop && !r->why && HTTP_PARSER_ERRNO(&r->p) == HPE_OK;
}

/* A head is fed alone, once its lines are checked; the body with its framing in one go.
 * Bounded: each pass feeds at least one byte or stops. */
enum h1_state h1_ref_feed(struct h1_ref *r, const char *p, size_t len, size_t *used)
{
    const char *at = p, *end = p + len;

    while (at < end && feeding(r)) {
        bool body = r->ld_phase == LD_BODY;
        const char *to = body ? end : scan_lines(r, at, end);
        size_t n;

        if (!to)
            break;
        r->scan_at = at;
        if (!body)
            (void)bsc_buf_append(&r->raw, at, (size_t)(to - at));
        n = http_parser_execute(&r->p, &settings, at, (size_t)(to - at));
        if (!body) {
            raw_quirks(r);
            if (r->raw_reset) {
                bsc_buf_reset(&r->raw);
                r->raw_checked = 0;
                r->raw_status = r->raw_reset = false;
            }
        }
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

enum h1_state h1_ref_eof(struct h1_ref *r)
{
    if (r->done || r->stop || HTTP_PARSER_ERRNO(&r->p) != HPE_OK)
        return state_of(r);
    if (r->taken == 0)
        return H1_MORE; /* nothing came: not a response at all */
    http_parser_execute(&r->p, &settings, NULL, 0);
    return r->done ? H1_DONE : H1_MORE; /* cut short: the caller reports a reset */
}

enum h1_take h1_ref_drain(struct h1_ref *r)
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

bool h1_ref_keep_alive(const struct h1_ref *r)
{
    return r->done && !r->why && http_should_keep_alive(&r->p);
}

const char *h1_ref_why(const struct h1_ref *r)
{
    return r->why ? r->why : http_errno_description(HTTP_PARSER_ERRNO(&r->p));
}
