/* SPDX-License-Identifier: MIT */
/* h1_read.c -- the builtin HTTP/1.1 client's response reader (the h1_resp_* part of
 * h1_wire.h): status line and header lines read straight from the bytes (memchr for line
 * ends, a 256-entry table of token and field-value bytes), the final head's lines appended
 * to the caller's head buffer in the form up_head_find reads ("Name: value" lines, as
 * libcurl hands them), then the body framed by Content-Length, chunked coding or the close.
 * Interim (1xx) heads are dropped (at most H1_INTERIM_MAX); body bytes the consumer holds
 * back are kept for h1_resp_drain; the reader stops at the end of the message, leaving later
 * bytes to the caller. Body data is never scanned. The rules, and where they are stricter
 * than the http-parser library this replaced: docs/internals/upstream.md ("The response
 * reader"). */
#include <emmintrin.h>
#include <string.h>

#include "core/tchar16.h"
#include "upstream/h1_wire.h"

#define H1_HELD_MAX (4u * 1024u * 1024u) /* held bytes come from reads made before a hold */
/* Raw bytes of one head, one chunk line or one trailer section (http-parser's bound). */
#define H1_SECTION_MAX (80u * 1024u)
/* The largest length a digit may still be appended to (http-parser's conservative bound). */
#define CL_PREV_MAX ((UINT64_MAX - 10) / 10)
#define CHUNK_PREV_MAX ((UINT64_MAX - 16) / 16)

/* Where the reader is. */
enum {
    RD_HEAD = 0,    /* in a head (or before one): its lines */
    RD_LENGTH,      /* a Content-Length body: r->left bytes to go */
    RD_CHUNK_LINE,  /* a chunk-size line */
    RD_CHUNK_DATA,  /* a chunk's data: r->left bytes to go */
    RD_CHUNK_CRLF,  /* the CRLF after a chunk's data */
    RD_TRAILERS,    /* trailer lines after the last chunk */
    RD_UNTIL_EOF,   /* a body up to the close */
    RD_END,         /* the message is complete */
};

/* Line discipline of a head (scan_lines): before the status line, in the head, past it. */
enum { LD_START = 0, LD_HEAD, LD_BODY };

/* A chunk-size line, byte by byte. */
enum { CK_FIRST = 0, CK_HEX, CK_EXT, CK_CR };

/* Flags of one head (and of the trailers, which add to the final head's). */
enum {
    HF_LENGTH = 1,     /* a Content-Length line */
    HF_TE = 2,         /* a Transfer-Encoding line (or a name starting so) */
    HF_CHUNKED = 4,    /* ... whose last coding is chunked */
    HF_CLOSE = 8,      /* Connection: close */
    HF_KEEP_ALIVE = 16 /* Connection: keep-alive */
};

/* What each byte may be in a field line: BC_TOKEN, a field-name (token) byte (RFC 9110
 * §5.6.2); BC_VALUE, a field-value byte: HTAB, SP, visible bytes and obs-text (§5.5), not
 * CTLs or DEL. CR and LF end the line before this is asked. */
enum { BC_TOKEN = 1, BC_VALUE = 2 };
static const unsigned char byte_class[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, /* 0x00 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x10 */
    2, 3, 2, 3, 3, 3, 3, 3, 2, 2, 3, 3, 2, 3, 3, 2, /* 0x20 */
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, /* 0x30 */
    2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, /* 0x40 */
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 3, 3, /* 0x50 */
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, /* 0x60 */
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 3, 2, 3, 0, /* 0x70 */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, /* 0x80 */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, /* 0x90 */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, /* 0xa0 */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, /* 0xb0 */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, /* 0xc0 */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, /* 0xd0 */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, /* 0xe0 */
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, /* 0xf0 */
};

static int unhex(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static void refuse(struct h1_resp *r, const char *why)
{
    if (!r->why)
        r->why = why;
}

/* ---- line discipline (RFC 9112 §2.2, §5.2) -------------------------------------------------
 * A head's bytes are checked before they are read: CRLF only, no bare CR or LF, no obs-fold
 * (a head line starting with SP/HT). The check stops just past the empty line that ends a
 * head, so each head is read alone. Chunk lines and trailers check the same rules as they
 * are read. */

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

/* The first CR or LF in [<q>, <to>), or NULL: inside a line nothing else matters. One pass,
 * sixteen bytes a step (a head line is tens of bytes: two memchr calls a line cost more). */
static const char *line_break(const char *q, const char *to)
{
    const __m128i cr = _mm_set1_epi8('\r'), lf = _mm_set1_epi8('\n');

    for (; to - q >= 16; q += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)q);
        int m = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, lf)));

        if (m)
            return q + __builtin_ctz((unsigned)m);
    }
    for (; q < to; q++)
        if (*q == '\r' || *q == '\n')
            return q;
    return NULL;
}

/* Whether <c> may start a head line after the status line and keep the discipline: not
 * SP/HT (obs-fold), nor CR or LF. */
static bool starts_line(char c)
{
    return c != ' ' && c != '\t' && c != '\r' && c != '\n';
}

/* Checks the head bytes [<from>, <to>). Returns where the check stopped: <to>, or just past
 * the empty line that ends a head; NULL when a rule is broken (r->why says which). */
static const char *scan_lines(struct h1_resp *r, const char *from, const char *to)
{
    for (const char *q = from; q < to; q++) {
        char ch;

        if (!r->ld_cr && !r->ld_bol && !(q = line_break(q, to)))
            break; /* the rest is inside a line */
        if (!r->ld_cr && !r->ld_bol && r->ld_phase == LD_HEAD && to - q >= 3 && q[0] == '\r' &&
            q[1] == '\n' && starts_line(q[2])) {
            /* a head line's usual end: CRLF, then the next field line's first byte. Taken
             * one at a time below they would leave the state as it is (inside a line). */
            q += 2;
            continue;
        }
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

/* ---- one line's bytes, checked as they come -------------------------------------------------
 * A line may be cut by a read anywhere: its bytes so far are checked when they arrive (so a
 * bad byte is refused at once, not when the line ends) and kept in r->line until its end. */

/* "HTTP/d.d ddd" then, optionally, SP and a reason phrase of any bytes but CR/LF. */
static bool status_byte(size_t pos, unsigned char c)
{
    static const char form[] = "HTTP/0.0 000";

    if (pos >= 13)
        return true;
    if (pos == 12)
        return c == ' ';
    if (form[pos] != '0')
        return (unsigned char)form[pos] == c;
    if (pos == 9)
        return c >= '1' && c <= '9'; /* a status code is 100..999 */
    return c >= '0' && c <= '9';
}

/* One bit a byte of the sixteen at <p>: set where the byte is not a field-value byte
 * (BC_VALUE: a CTL other than HT, or DEL). */
static unsigned value_misses(const unsigned char *p)
{
    const __m128i below_sp = _mm_set1_epi8(0x1f), ht = _mm_set1_epi8('\t');
    const __m128i del = _mm_set1_epi8(0x7f);
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i ctl = _mm_cmpeq_epi8(_mm_max_epu8(v, below_sp), below_sp); /* v <= 0x1f */
    __m128i bad =
        _mm_or_si128(_mm_andnot_si128(_mm_cmpeq_epi8(v, ht), ctl), _mm_cmpeq_epi8(v, del));

    return (unsigned)_mm_movemask_epi8(bad);
}

/* The first byte of [<p>, <end>) that is not a field-value byte, else <end>; sixteen bytes
 * a step. The bytes from <lo> up to <p> may be read too: when there are sixteen of them
 * to <end>, the last step is the sixteen that end at <end>, with the bits of those before
 * <p> shifted out, rather than a byte at a time. */
static const unsigned char *value_run_end(const unsigned char *lo, const unsigned char *p,
                                          const unsigned char *end)
{
    unsigned m;

    for (; end - p >= 16; p += 16)
        if ((m = value_misses(p)) != 0)
            return p + __builtin_ctz(m);
    if (p < end && end - lo >= 16) {
        m = value_misses(end - 16) >> (16 - (end - p));
        return m ? p + __builtin_ctz(m) : end;
    }
    for (; p < end; p++)
        if (!(byte_class[*p] & BC_VALUE))
            return p;
    return end;
}

/* The length of the run of token bytes (BC_TOKEN) that starts [<b>, <b> + <n>); sixteen
 * bytes a step, the last step the sixteen that end the bytes when there are that many. */
static size_t token_run(const unsigned char *b, size_t n)
{
    const char *c = (const char *)b;
    size_t i = 0;
    unsigned m;

    for (; n - i >= 16; i += 16)
        if ((m = bsc_tchar16_misses(c + i)) != 0)
            return i + (size_t)__builtin_ctz(m);
    if (n >= 16) {
        m = bsc_tchar16_misses(c + n - 16) >> (16 - (n - i));
        return m ? i + (size_t)__builtin_ctz(m) : n;
    }
    for (; i < n && (byte_class[b[i]] & BC_TOKEN); i++)
        ;
    return i;
}

/* Checks the field-line bytes [<b>, <b> + <n>) (no CR/LF among them) that follow the
 * r->lpos already checked: a token, a colon, then value bytes. */
static bool field_bytes(struct h1_resp *r, const unsigned char *b, size_t n, bool trailer)
{
    size_t i = 0;

    if (!r->colon) {
        i = token_run(b, n);
        if (i == n) {
            r->lpos += n;
            return true;
        }
        if (b[i] != ':' || r->lpos + i == 0) {
            if (b[i] == ' ' || b[i] == '\t') {
                if (trailer && r->lpos + i == 0)
                    refuse(r, "obsolete line folding in the trailers");
                else
                    refuse(r, "whitespace in a header name");
            } else {
                refuse(r, "invalid character in a header name");
            }
            return false;
        }
        r->colon = true;
        r->name_len = r->lpos + i;
        i++;
    }
    if (value_run_end(b, b + i, b + n) != b + n)
        return refuse(r, "invalid character in a header value"), false;
    r->lpos += n;
    return true;
}

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* Whether a whole status line's first <n> (>= 12) bytes at <u> keep the form status_byte
 * checks a byte at a time: the usual case, at once. */
static bool status_form(const unsigned char *u, size_t n)
{
    return memcmp(u, "HTTP/", 5) == 0 && is_digit(u[5]) && u[6] == '.' && is_digit(u[7]) &&
           u[8] == ' ' && u[9] >= '1' && u[9] <= '9' && is_digit(u[10]) && is_digit(u[11]) &&
           (n == 12 || u[12] == ' ');
}

/* Checks a line's next bytes [<b>, <b> + <n>), without its CR/LF. */
static bool line_bytes(struct h1_resp *r, const char *b, size_t n)
{
    const unsigned char *u = (const unsigned char *)b;

    if (r->phase == RD_HEAD && !r->status_seen) {
        size_t form = r->lpos < 13 ? 13 - r->lpos : 0; /* the reason phrase is not checked */

        if (r->lpos == 0 && n >= 12 && status_form(u, n)) {
            r->lpos = n;
            return true;
        }
        for (size_t i = 0; i < n && i < form; i++)
            if (!status_byte(r->lpos + i, u[i]))
                return refuse(r, "malformed status line"), false;
        r->lpos += n;
        return true;
    }
    return field_bytes(r, u, n, r->phase == RD_TRAILERS);
}

static void line_reset(struct h1_resp *r)
{
    r->lpos = 0;
    r->name_len = 0;
    r->colon = false;
    bsc_buf_reset(&r->line);
}

/* ---- what the lines say ---------------------------------------------------------------------- */

static bool name_is(const char *p, size_t len, const char *name, size_t name_len)
{
    return len == name_len && bsc_tchar_ieq(p, name, len); /* <p>: token bytes */
}

/* Content-Length (http-parser's reading): digits, then only SPs; one line per message. */
static void content_length(struct h1_resp *r, const char *v, size_t n)
{
    uint64_t len = 0;
    size_t i = 0;

    if (r->hflags & HF_LENGTH)
        return refuse(r, "more than one Content-Length");
    r->hflags |= HF_LENGTH;
    if (n == 0 || v[0] < '0' || v[0] > '9')
        return refuse(r, "invalid Content-Length");
    for (; i < n && v[i] >= '0' && v[i] <= '9'; i++) {
        if (len > CL_PREV_MAX)
            return refuse(r, "invalid Content-Length");
        len = len * 10 + (uint64_t)(v[i] - '0');
    }
    for (; i < n; i++)
        if (v[i] != ' ')
            return refuse(r, "invalid Content-Length");
    r->length = len;
}

/* Connection (and Proxy-Connection) tokens, as http-parser reads them: "keep-alive" and
 * "close" (any case) count where one stands alone before a comma or the end, trailing SPs
 * allowed; a mismatch skips to the next comma; a byte that can start no token (nor is
 * whitespace) where a token should start ends the reading. */
static void connection(struct h1_resp *r, const char *v, size_t n)
{
    static const char *const words[] = {"keep-alive", "close", "upgrade"};
    static const size_t lens[] = {10, 5, 7};
    static const unsigned flags[] = {HF_KEEP_ALIVE, HF_CLOSE, 0};
    enum { C_START, C_TOKEN, C_MATCH, C_HIT, C_GENERAL } st = C_START;
    size_t idx = 0, w = 0;

    /* the usual values, the word alone, matched as the loop matches ("byte | 0x20") */
    if (n == 10 && bsc_tchar_ieq(v, "keep-alive", 10)) {
        r->hflags |= HF_KEEP_ALIVE;
        return;
    }
    if (n == 5 && bsc_tchar_ieq(v, "close", 5)) {
        r->hflags |= HF_CLOSE;
        return;
    }
    for (size_t i = 0; i < n && st != C_GENERAL; i++) {
        unsigned char ch = (unsigned char)v[i], c = ch | 0x20;

        switch (st) {
        case C_START:
            w = c == 'k' ? 0 : c == 'c' ? 1 : c == 'u' ? 2 : 3;
            if (w < 3)
                st = C_MATCH, idx = 0;
            else if (i == 0 || (byte_class[c] & BC_TOKEN))
                st = C_TOKEN;
            else if (ch != ' ' && ch != '\t')
                st = C_GENERAL;
            break;
        case C_MATCH:
            idx++;
            if (idx > lens[w] - 1 || c != (unsigned char)words[w][idx])
                st = C_TOKEN;
            else if (idx == lens[w] - 1)
                st = C_HIT;
            break;
        case C_TOKEN:
            if (ch == ',')
                st = C_START;
            break;
        case C_HIT:
            if (ch == ',') {
                r->hflags |= flags[w];
                st = C_START;
            } else if (ch != ' ') {
                st = C_TOKEN;
            }
            break;
        default:
            break;
        }
    }
    if (st == C_HIT)
        r->hflags |= flags[w];
}

/* Transfer-Encoding, as http-parser reads it: chunked when the list's last coding is
 * "chunked" (any case) followed by nothing but SPs. For the final head's rule, whether the
 * line says exactly "chunked" (whitespace around it) is noted while the line is at hand. */
static void transfer_encoding(struct h1_resp *r, const char *v, size_t n)
{
    enum { T_START, T_TOKEN, T_MATCH, T_HIT, T_GENERAL } st = T_TOKEN;
    size_t idx = 0;

    r->te_lines++;
    r->te_ok = bsc_str_ieq(bsc_str_trim(bsc_str_make(v, n)), BSC_STR("chunked"));
    for (size_t i = 0; i < n && st != T_GENERAL; i++) {
        unsigned char ch = (unsigned char)v[i], c = ch | 0x20;

        if (i == 0) {
            st = c == 'c' ? T_MATCH : T_TOKEN;
            continue;
        }
        switch (st) {
        case T_START:
            if (c == 'c')
                st = T_MATCH, idx = 0;
            else if (byte_class[c] & BC_TOKEN)
                st = T_TOKEN;
            else if (ch != ' ' && ch != '\t')
                st = T_GENERAL;
            break;
        case T_MATCH:
            idx++;
            if (idx > 6 || c != (unsigned char)"chunked"[idx])
                st = T_TOKEN;
            else if (idx == 6)
                st = T_HIT;
            break;
        case T_TOKEN:
            if (ch == ',')
                st = T_START, idx = 0;
            break;
        case T_HIT:
            if (ch != ' ')
                st = T_TOKEN;
            break;
        default:
            break;
        }
    }
    if (st == T_HIT)
        r->hflags |= HF_CHUNKED;
}

/* A field line of <n> bytes at <p> (checked: name, colon at r->name_len, value bytes). */
static void field_line(struct h1_resp *r, const char *p, size_t n)
{
    size_t name_len = r->name_len, k = name_len + 1;
    const char *v;

    if (!r->colon)
        return refuse(r, "header line without a colon");
    while (k < n && (p[k] == ' ' || p[k] == '\t'))
        k++;
    v = p + k;
    switch (p[0] | 0x20) {
    case 'c':
        if (name_is(p, name_len, "content-length", 14))
            content_length(r, v, n - k);
        else if (name_is(p, name_len, "connection", 10))
            connection(r, v, n - k);
        break;
    case 't':
        /* http-parser marks a message as transfer-coded once a name starts so */
        if (name_len >= 17 && bsc_tchar_ieq(p, "transfer-encoding", 17)) {
            r->hflags = (r->hflags | HF_TE) & ~(unsigned)HF_CHUNKED; /* the last line says */
            if (name_len == 17)
                transfer_encoding(r, v, n - k);
        }
        break;
    case 'p':
        if (name_is(p, name_len, "proxy-connection", 16))
            connection(r, v, n - k);
        break;
    default:
        break;
    }
    if (r->phase == RD_TRAILERS || r->why)
        return;
    /* The head's copy: "Name: value", the value without its leading whitespace. */
    if (k == name_len + 2 && p[name_len + 1] == ' ') {
        r->put_ok = r->put_ok && bsc_buf_append(r->head, p, n) == BSC_OK;
    } else {
        r->put_ok = r->put_ok && bsc_buf_append(r->head, p, name_len) == BSC_OK &&
                    bsc_buf_append(r->head, ": ", 2) == BSC_OK &&
                    bsc_buf_append(r->head, v, n - k) == BSC_OK;
    }
    r->put_ok = r->put_ok && bsc_buf_append(r->head, "\r\n", 2) == BSC_OK;
    r->too_large = !r->put_ok;
}

/* The status line "HTTP/d.d ddd[ reason]" of <n> bytes at <p>, checked. */
static void status_line(struct h1_resp *r, const char *p, size_t n)
{
    bsc_buf_reset(r->head);
    r->put_ok = true;
    r->status_seen = true;
    r->major = (unsigned char)(p[5] - '0');
    r->minor = (unsigned char)(p[7] - '0');
    r->code = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
    r->hflags = 0;
    r->te_lines = 0;
    r->length = 0;
    r->put_ok = bsc_buf_append(r->head, p, n) == BSC_OK &&
                (n > 12 || bsc_buf_append(r->head, " ", 1) == BSC_OK) &&
                bsc_buf_append(r->head, "\r\n", 2) == BSC_OK;
    r->too_large = !r->put_ok;
}

/* The final head's framing, once it has reached its consumer. */
static void frame_body(struct h1_resp *r)
{
    if (r->no_body || r->code == 204 || r->code == 304) {
        r->phase = RD_END;
    } else if (r->hflags & HF_CHUNKED) {
        r->phase = RD_CHUNK_LINE;
        r->ck = CK_FIRST;
        r->left = 0;
    } else if (r->hflags & HF_TE) {
        r->phase = RD_UNTIL_EOF; /* a coding other than chunked: read to the close */
        r->to_eof = true;
    } else if (r->hflags & HF_LENGTH) {
        r->left = r->length;
        r->phase = r->left ? RD_LENGTH : RD_END;
    } else {
        r->phase = RD_UNTIL_EOF;
        r->to_eof = true;
    }
}

/* The final head's Transfer-Encoding: one line that says "chunked" (any case, whitespace
 * around it): the rule the libcurl side checks too (line_rules.c). */
static bool te_keeps_rule(const struct h1_resp *r)
{
    return r->te_lines == 0 || (r->te_lines == 1 && r->te_ok);
}

/* The empty line that ends a head. An interim head is forgotten; the final one goes to
 * on_head, and then its body is framed. */
static void head_end(struct h1_resp *r)
{
    if (!r->put_ok || bsc_buf_append(r->head, "\r\n", 2) != BSC_OK) {
        r->too_large = true;
        return;
    }
    r->section = 0;
    r->status_seen = false;
    if ((r->hflags & HF_TE) && (r->hflags & HF_LENGTH))
        return refuse(r, "both Transfer-Encoding and Content-Length");
    if (r->code == 101)
        return refuse(r, "101 Switching Protocols to a request that asked for no upgrade");
    if (r->code < 200) {
        if (++r->interim > H1_INTERIM_MAX)
            return refuse(r, "too many interim (1xx) responses");
        r->ld_phase = LD_START; /* the next head follows */
        return;
    }
    if (!te_keeps_rule(r))
        return refuse(r, "Transfer-Encoding other than chunked");
    r->status = r->code;
    r->head_done = true;
    if (r->on_head(r->ud, r->status) == H1_STOP) {
        r->stop = true;
        return;
    }
    frame_body(r);
}

/* One whole line of a head of <n> bytes at <p>, CRLF excluded; its bytes are checked. */
static void head_line(struct h1_resp *r, const char *p, size_t n)
{
    if (n == 0) {
        if (r->status_seen)
            head_end(r);
        return; /* an empty line before the status line is skipped */
    }
    if (!r->status_seen) {
        if (n < 12)
            return refuse(r, "malformed status line");
        status_line(r, p, n);
    } else {
        field_line(r, p, n);
    }
}

/* ---- reading -------------------------------------------------------------------------------- */

/* A line of the head or of the trailers cut by the end of a read: its bytes are checked and
 * kept. */
static void line_part(struct h1_resp *r, const char *p, size_t n)
{
    size_t check = n && p[n - 1] == '\r' ? n - 1 : n; /* a CR is the end's first half */

    if (r->line.len && r->line.p[r->line.len - 1] == '\r' && n)
        return refuse(r, "CR not followed by LF");
    if (!line_bytes(r, p, check))
        return;
    if (bsc_buf_append(&r->line, p, n) != BSC_OK)
        r->too_large = true;
}

/* The whole line that ends at <lf> (<p> is its start in this read): returns it without its
 * CRLF through <line>/<n>, from the read or, when it began in an earlier one, from r->line. */
static bool line_whole(struct h1_resp *r, const char *p, const char *lf, const char **line,
                       size_t *n)
{
    size_t len = (size_t)(lf - p);

    if (r->line.len) {
        size_t check = len && p[len - 1] == '\r' ? len - 1 : len;

        if (!line_bytes(r, p, check) || bsc_buf_append(&r->line, p, len) != BSC_OK) {
            r->too_large = !r->why;
            return false;
        }
        *line = r->line.p;
        *n = r->line.len - 1; /* the CR */
        return true;
    }
    *line = p;
    *n = len - 1;
    return line_bytes(r, p, *n);
}

/* Head bytes [<p>, <to>), whose line discipline is checked: reads them line by line. */
static const char *head_bytes(struct h1_resp *r, const char *p, const char *to)
{
    while (p < to && !r->why && !r->too_large && !r->stop && r->phase == RD_HEAD) {
        const char *lf = memchr(p, '\n', (size_t)(to - p)), *line;
        size_t n;

        if (!lf) {
            line_part(r, p, (size_t)(to - p));
            return to;
        }
        if (!line_whole(r, p, lf, &line, &n))
            return p;
        head_line(r, line, n);
        line_reset(r);
        p = lf + 1;
    }
    return p;
}

static const char *read_head(struct h1_resp *r, const char *at, const char *end)
{
    const char *to = scan_lines(r, at, end);

    if (!to)
        return at;
    r->section += (size_t)(to - at);
    if (r->section > H1_SECTION_MAX) {
        r->too_large = true;
        return at;
    }
    return head_bytes(r, at, to);
}

/* Hands <n> body bytes at <p> over, or keeps them while the consumer holds. */
static void body(struct h1_resp *r, const char *p, size_t n)
{
    enum h1_take take;

    if (r->hold) {
        if (bsc_buf_append(&r->held, p, n) != BSC_OK)
            refuse(r, "body bytes held past their bound");
        return;
    }
    take = r->on_body(r->ud, p, n);
    if (take == H1_STOP)
        r->stop = true;
    r->hold = take == H1_HOLD;
}

static const char *read_data(struct h1_resp *r, const char *at, const char *end)
{
    size_t n = (uint64_t)(end - at) < r->left ? (size_t)(end - at) : (size_t)r->left;

    r->left -= n;
    if (r->left == 0)
        r->phase = r->phase == RD_LENGTH ? RD_END : RD_CHUNK_CRLF;
    r->ck = CK_FIRST;
    body(r, at, n);
    return at + n;
}

/* One byte of a chunk-size line: hex digits, then (after ';' or SP) an extension of any
 * bytes but CR/LF, then CRLF. */
static bool chunk_line_byte(struct h1_resp *r, unsigned char c)
{
    int v;

    if (r->ck == CK_CR) {
        if (c != '\n')
            return refuse(r, "CR not followed by LF"), false;
        r->section = 0;
        if (r->left == 0) {
            r->phase = RD_TRAILERS;
            line_reset(r);
        } else {
            r->phase = RD_CHUNK_DATA;
        }
        return true;
    }
    if (c == '\n')
        return refuse(r, "line ends in a bare LF (CRLF required)"), false;
    if (r->ck == CK_EXT) {
        if (c == '\r')
            r->ck = CK_CR;
        return true;
    }
    if (r->ck == CK_HEX && (c == '\r' || c == ';' || c == ' ')) {
        r->ck = c == '\r' ? CK_CR : CK_EXT;
        return true;
    }
    if ((v = unhex(c)) < 0)
        return refuse(r, "invalid chunk size"), false;
    if (r->left > CHUNK_PREV_MAX)
        return refuse(r, "chunk size too large"), false;
    r->left = r->left * 16 + (uint64_t)v;
    r->ck = CK_HEX;
    return true;
}

static const char *read_chunk_line(struct h1_resp *r, const char *at, const char *end)
{
    while (at < end && r->phase == RD_CHUNK_LINE) {
        if (!chunk_line_byte(r, (unsigned char)*at))
            return at;
        at++;
        if (++r->section > H1_SECTION_MAX) {
            r->too_large = true;
            return at;
        }
    }
    return at;
}

/* The CRLF after a chunk's data (r->ck counts its bytes). */
static const char *read_chunk_crlf(struct h1_resp *r, const char *at, const char *end)
{
    while (at < end && r->phase == RD_CHUNK_CRLF) {
        char c = *at;

        if (r->ck == 0 && c != '\r') {
            refuse(r, c == '\n' ? "line ends in a bare LF (CRLF required)"
                                : "chunk data not followed by CRLF");
            return at;
        }
        if (r->ck == 1 && c != '\n') {
            refuse(r, "CR not followed by LF");
            return at;
        }
        at++;
        if (++r->ck == 2) {
            r->phase = RD_CHUNK_LINE;
            r->ck = CK_FIRST;
            r->left = 0;
        }
    }
    return at;
}

/* Trailer lines after the last chunk, to the empty line that ends the message: field lines
 * under the head's rules, read for their framing fields and not kept. */
static const char *read_trailers(struct h1_resp *r, const char *at, const char *end)
{
    while (at < end && r->phase == RD_TRAILERS && !r->why && !r->too_large) {
        const char *lf = memchr(at, '\n', (size_t)(end - at)), *line, *cr;
        size_t n, upto = lf ? (size_t)(lf - at) : (size_t)(end - at);

        if (r->line.len && r->line.p[r->line.len - 1] == '\r' && *at != '\n') {
            refuse(r, "CR not followed by LF");
            return at;
        }
        r->section += lf ? upto + 1 : upto;
        if (r->section > H1_SECTION_MAX) {
            r->too_large = true;
            return at;
        }
        cr = memchr(at, '\r', upto);
        if (cr && cr + 1 < at + upto) {
            refuse(r, "CR not followed by LF");
            return at;
        }
        if (!lf) {
            line_part(r, at, upto);
            return end;
        }
        if (lf == at ? !(r->line.len && r->line.p[r->line.len - 1] == '\r') : lf[-1] != '\r') {
            refuse(r, "line ends in a bare LF (CRLF required)");
            return at;
        }
        if (r->line.len == 0 && lf == at + 1) {
            r->phase = RD_END; /* the empty line */
            return lf + 1;
        }
        if (!line_whole(r, at, lf, &line, &n))
            return at;
        if (n == 0) {
            r->phase = RD_END;
        } else {
            field_line(r, line, n);
        }
        line_reset(r);
        at = lf + 1;
    }
    return at;
}

void h1_resp_setup(struct h1_resp *r, enum h1_take (*on_head)(void *ud, int status),
                   enum h1_take (*on_body)(void *ud, const char *p, size_t len))
{
    memset(r, 0, sizeof(*r));
    r->on_head = on_head;
    r->on_body = on_body;
    bsc_buf_init(&r->held, H1_HELD_MAX);
    bsc_buf_init(&r->line, H1_SECTION_MAX);
}

void h1_resp_start(struct h1_resp *r, struct bsc_buf *head, void *ud, bool no_body)
{
    r->head = head;
    r->ud = ud;
    r->taken = 0;
    r->status = 0;
    r->hold = r->head_done = r->done = r->stop = r->too_large = r->status_seen = false;
    r->no_body = no_body;
    r->why = NULL;
    r->interim = 0;
    r->phase = RD_HEAD;
    r->ld_phase = LD_START;
    r->ld_cr = false;
    r->ld_bol = true;
    r->section = 0;
    r->hflags = 0;
    r->left = 0;
    r->to_eof = false;
    line_reset(r);
    bsc_buf_reset(&r->held);
    bsc_buf_reset(head);
}

void h1_resp_cleanup(struct h1_resp *r)
{
    bsc_buf_cleanup(&r->held);
    bsc_buf_cleanup(&r->line);
}

static enum h1_state state_of(const struct h1_resp *r)
{
    if (r->stop)
        return H1_STOPPED;
    if (r->too_large)
        return H1_TOO_LARGE;
    if (r->why)
        return H1_BAD;
    if (r->done)
        return H1_DONE;
    return H1_MORE;
}

/* Bounded: each pass reads at least one byte or leaves the loop. */
enum h1_state h1_resp_feed(struct h1_resp *r, const char *p, size_t len, size_t *used)
{
    const char *at = p, *end = p + len;

    while (at < end && !r->done && !r->stop && !r->why && !r->too_large) {
        const char *was = at;

        switch (r->phase) {
        case RD_HEAD:
            at = read_head(r, at, end);
            break;
        case RD_LENGTH:
        case RD_CHUNK_DATA:
            at = read_data(r, at, end);
            break;
        case RD_CHUNK_LINE:
            at = read_chunk_line(r, at, end);
            break;
        case RD_CHUNK_CRLF:
            at = read_chunk_crlf(r, at, end);
            break;
        case RD_TRAILERS:
            at = read_trailers(r, at, end);
            break;
        case RD_UNTIL_EOF:
            body(r, at, (size_t)(end - at));
            at = end;
            break;
        default:
            break;
        }
        if (r->phase == RD_END)
            r->done = true;
        if (at == was && !r->done)
            break;
    }
    if (r->phase == RD_END)
        r->done = true;
    r->taken += (size_t)(at - p);
    if (used)
        *used = (size_t)(at - p);
    return state_of(r);
}

enum h1_state h1_resp_eof(struct h1_resp *r)
{
    if (r->done || r->stop || r->why || r->too_large)
        return state_of(r);
    if (r->phase == RD_UNTIL_EOF) {
        r->phase = RD_END;
        r->done = true;
        return H1_DONE;
    }
    return H1_MORE; /* nothing came, or cut short: the caller reports a reset */
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

/* HTTP/1.1 (and any x.y with both above 0, as http-parser counts) keeps the connection
 * unless "Connection: close"; older versions only with "Connection: keep-alive"; never when
 * the body ran to the close. */
bool h1_resp_keep_alive(const struct h1_resp *r)
{
    bool persistent = r->major > 0 && r->minor > 0 ? !(r->hflags & HF_CLOSE)
                                                    : (r->hflags & HF_KEEP_ALIVE) != 0;

    /* A Transfer-Encoding trailer that ends in another coding makes http-parser read the
     * message as one delimited by the close. */
    bool to_eof = r->to_eof || ((r->hflags & HF_TE) && !(r->hflags & HF_CHUNKED) &&
                                !r->no_body && r->status != 204 && r->status != 304);

    return r->done && !r->why && persistent && !to_eof;
}

const char *h1_resp_why(const struct h1_resp *r)
{
    return r->why ? r->why : "malformed response";
}
