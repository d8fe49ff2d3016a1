/* SPDX-License-Identifier: MIT */
/* h1_parse.c -- the server's HTTP/1.1 request reader: one request at a time, fed in pieces
 * of any size, stopping right after the message (the rest is the next one). It copies the
 * URL and header fields once into a bounded head buffer, de-chunks the body into a bounded
 * body buffer, counts head bytes canonically against the head limit and classifies failures
 * into enum srv__h1_err; h1_head.c judges the head once it is complete. Runs of URL and
 * field-value bytes are scanned 16 at a time (SSE2); the states between them are a few
 * bytes each. It replaced a wrapper over http-parser 2.9 and keeps its every decision --
 * what is accepted, the error class, where a message ends -- as if each byte had been fed
 * alone (tests/unit/harness/h1_req_ref.c is that wrapper, tests/fuzz/fuzz_h1_request_diff.c
 * compares the two), with one deliberate difference: the version must be spelled "HTTP/".
 * RFC 9112 line discipline: lines end in CRLF, no obs-fold in the head. No I/O, no clock.
 * See docs/internals/server.md. */
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>

#include "core/tchar16.h"
#endif

#include "core/ascii.h"
#include "core/buf.h"
#include "core/compat.h"
#include "core/str.h"
#include "server/internal.h"

/* Head bytes not stored, for canonical formatting: the request line's two spaces,
 * "HTTP/1.1" and CRLF; ": " and CRLF per field. */
#define LINE_EXTRA  12u
#define FIELD_EXTRA 4u
/* Raw bytes a head (or a chunk-size line, or the trailers) may take whatever they hold:
 * http-parser's own cap, kept as a backstop for whitespace the canonical count skips. */
#define RAW_MAX (80u * 1024)

enum rd_state {
    RD_START = 0, /* before the request line: empty lines (CRLF) are skipped */
    RD_START_LF,  /* a CR there: LF must follow */
    RD_METHOD,
    RD_URL_SP,  /* spaces before the target */
    RD_URL,     /* the target; url_state says where in its grammar */
    RD_VER_SP,  /* spaces before "HTTP/" */
    RD_VER_LIT, /* "HTTP/" matched up to <index> */
    RD_VER_MAJOR,
    RD_VER_DOT,
    RD_VER_MINOR,
    RD_VER_END,     /* CR after the version */
    RD_LINE_LF,     /* LF after the request line's CR */
    RD_FIELD_START, /* a field line, or the empty line */
    RD_FIELD,       /* a field name */
    RD_VALUE_WS,    /* whitespace before a value */
    RD_EMPTY_CR,    /* a CR before any value byte: LF must follow */
    RD_EMPTY_LF,    /* an empty value's line ended: the next byte says fold or next field */
    RD_VALUE,
    RD_VALUE_LF,    /* CR after a value: LF must follow */
    RD_VALUE_END,   /* a value's line ended: the next byte says fold or next field */
    RD_HEAD_CR,     /* the empty line's CR: the next byte ends the head (or the trailers) */
    RD_CHUNK_START, /* the first hex digit of a chunk size */
    RD_CHUNK_SIZE,
    RD_CHUNK_EXT, /* a chunk extension, up to CR */
    RD_CHUNK_LF,  /* the chunk-size line's CR: the next byte ends it */
    RD_CHUNK_BAD, /* a lone CR after chunk data: whatever follows is refused */
    /* body states: their bytes are not head bytes */
    RD_CHUNK_DATA,
    RD_DATA_CR, /* the first byte after a chunk's data */
    RD_DATA_LF, /* the second; <index> 1 if the first was CR */
    RD_BODY,    /* Content-Length bytes */
    RD_DONE
};

/* The request target's grammar, as far as the reader checks it (http-parser's): a scheme
 * and "//" then an authority, or '/' or '*' then path, query and fragment bytes. */
enum url_state {
    U_START = 0,
    U_SCHEMA,
    U_SCHEMA_SLASH,
    U_SCHEMA_SLASH2,
    U_SERVER_START,
    U_SERVER,
    U_SERVER_AT,
    U_REST, /* path, query or fragment: they take the same bytes */
    U_DEAD
};

/* In http-parser's order, so the numbers are its enum http_method's. */
static const char *const methods[] = {
    "DELETE",     "GET",      "HEAD",       "POST",     "PUT",    "CONNECT",   "OPTIONS",
    "TRACE",      "COPY",     "LOCK",       "MKCOL",    "MOVE",   "PROPFIND",  "PROPPATCH",
    "SEARCH",     "UNLOCK",   "BIND",       "REBIND",   "UNBIND", "ACL",       "REPORT",
    "MKACTIVITY", "CHECKOUT", "MERGE",      "M-SEARCH", "NOTIFY", "SUBSCRIBE", "UNSUBSCRIBE",
    "PATCH",      "PURGE",    "MKCALENDAR", "LINK",     "UNLINK", "SOURCE",
};

/* A field-name byte: a tchar, or a space (kept as http-parser did: a head's name with one
 * is refused whole by h1_head.c, a trailer's is dropped anyway). */
static bool is_name_byte(unsigned char c)
{
    return c == ' ' || srv__h1_tokens[c] != 0;
}

/* The end of a run of field-name bytes; sixteen bytes a step while there are that many.
 * *<space> is set when the run holds a SP (the only name byte that is not a tchar). */
static const char *name_run_end(const char *p, const char *end, bool *space)
{
#ifdef __SSE2__
    for (; end - p >= 16; p += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        unsigned sp = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(' ')));
        unsigned m = bsc_tchar16_misses(p) & ~sp;

        if (m) {
            if (sp & ((1u << __builtin_ctz(m)) - 1))
                *space = true;
            return p + __builtin_ctz(m);
        }
        if (sp)
            *space = true;
    }
#endif
    for (; p < end && (srv__h1_tokens[(unsigned char)*p] || *p == ' '); p++)
        if (*p == ' ')
            *space = true;
    return p;
}

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* A chunk-size digit's value, or -1. A byte >= 0x80 counts as 0: http-parser's table
 * left that half zero, and the reader keeps what it accepted (see the server page). */
static int unhex(unsigned char c)
{
    if (c >= 0x80)
        return 0;
    if (is_digit(c))
        return c - '0';
    c |= 0x20;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static bool is_userinfo(unsigned char c)
{
    if (is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'))
        return true;
    return c && strchr("-_.!~*'()%;:&=+$,", c) != NULL;
}

/* ---- scanning runs ----------------------------------------------------------------------- */

/* The first byte of [p, end) below <lim> or DEL (0x7f), else end. */
static const char *find_ctl(const char *p, const char *end, unsigned char lim)
{
#ifdef __SSE2__
    const __m128i top = _mm_set1_epi8((char)(lim - 1));
    const __m128i del = _mm_set1_epi8(0x7f);

    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i low = _mm_cmpeq_epi8(_mm_max_epu8(v, top), top);
        int m = _mm_movemask_epi8(_mm_or_si128(low, _mm_cmpeq_epi8(v, del)));

        if (m)
            return p + __builtin_ctz((unsigned)m);
        p += 16;
    }
#endif
    while (p < end && (unsigned char)*p >= lim && *p != 0x7f)
        p++;
    return p;
}

/* The end of a run of field-value bytes (anything but CTLs other than HT, and DEL). */
static const char *value_run_end(const char *p, const char *end)
{
    for (;;) {
        p = find_ctl(p, end, 0x20);
        if (p == end || *p != '\t')
            return p;
        p++;
    }
}

/* The end of a run of path, query or fragment bytes: anything above SP but DEL, and HT and
 * FF (http-parser, not strict, took them). */
static const char *url_run_end(const char *p, const char *end)
{
    for (;;) {
        p = find_ctl(p, end, 0x21);
        if (p == end || (*p != '\t' && *p != '\f'))
            return p;
        p++;
    }
}

/* ---- failures and counting --------------------------------------------------------------- */

static const char *bad(struct srv__h1 *h, const char *why)
{
    srv__h1_fail(h, SRV__H1_E_BAD_REQUEST, why);
    return NULL;
}

static int keep(struct srv__h1 *h, const char *at, size_t len)
{
    enum bsc_err err = bsc_buf_append(&h->head, at, len);

    if (err == BSC_ENOMEM)
        return srv__h1_fail(h, SRV__H1_E_NOMEM, "out of memory");
    if (err)
        return srv__h1_fail(h, SRV__H1_E_HEAD_TOO_LARGE, "request line and headers are too large");
    return 0;
}

/* ---- the request line -------------------------------------------------------------------- */

static int method_find(const char *tok, size_t n)
{
    if (n == 4 && memcmp(tok, "POST", 4) == 0)
        return 3;
    if (n == 3 && memcmp(tok, "GET", 3) == 0)
        return 1;
    for (size_t i = 0; i < BSC_ARRAY_LEN(methods); i++)
        if (strlen(methods[i]) == n && memcmp(methods[i], tok, n) == 0)
            return (int)i;
    return -1;
}

static bool method_prefix(const char *tok, size_t n)
{
    for (size_t i = 0; i < BSC_ARRAY_LEN(methods); i++)
        if (strlen(methods[i]) >= n && memcmp(methods[i], tok, n) == 0)
            return true;
    return false;
}

static const char *read_method(struct srv__h1 *h, const char *p, const char *lim)
{
    for (; p < lim; p++) {
        int m;

        if (*p != ' ') {
            if (h->tok_len == sizeof(h->tok))
                return bad(h, "invalid HTTP method");
            h->tok[h->tok_len++] = *p;
            continue;
        }
        m = method_find(h->tok, h->tok_len);
        if (m < 0)
            return bad(h, "invalid HTTP method");
        h->method = (uint8_t)m;
        h->url_state = m == SRV__H1_METHOD_CONNECT ? U_SERVER_START : U_START;
        h->state = RD_URL_SP;
        return p + 1;
    }
    if (!method_prefix(h->tok, h->tok_len))
        return bad(h, "invalid HTTP method");
    return p;
}

/* One byte of the target's grammar before its path (http-parser's parse_url_char). */
static enum url_state url_step(enum url_state s, unsigned char c)
{
    switch (s) {
    case U_START:
        if (c == '/' || c == '*')
            return U_REST;
        return ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') ? U_SCHEMA : U_DEAD;
    case U_SCHEMA:
        if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')
            return U_SCHEMA;
        return c == ':' ? U_SCHEMA_SLASH : U_DEAD;
    case U_SCHEMA_SLASH:
        return c == '/' ? U_SCHEMA_SLASH2 : U_DEAD;
    case U_SCHEMA_SLASH2:
        return c == '/' ? U_SERVER_START : U_DEAD;
    case U_SERVER_AT:
        if (c == '@')
            return U_DEAD;
        /* fall through */
    case U_SERVER_START:
    case U_SERVER:
        if (c == '/' || c == '?')
            return U_REST;
        if (c == '@')
            return U_SERVER_AT;
        return (is_userinfo(c) || c == '[' || c == ']') ? U_SERVER : U_DEAD;
    default:
        return U_DEAD;
    }
}

/* The target may end here (SP, or CR/LF for a version-less HTTP/0.9 line). */
static bool url_may_end(enum url_state s)
{
    return s == U_SERVER || s == U_SERVER_AT || s == U_REST;
}

static int take_url(struct srv__h1 *h, const char *at, size_t n)
{
    if (h->head_bytes == 0 && srv__h1_count(h, strlen(methods[h->method]) + LINE_EXTRA))
        return -1;
    if (srv__h1_count(h, n) || keep(h, at, n))
        return -1;
    h->url_len += (uint32_t)n;
    return 0;
}

static const char *read_url(struct srv__h1 *h, const char *p, const char *lim)
{
    const char *s = p;
    enum url_state st = (enum url_state)h->url_state;
    unsigned char c;

    for (; p < lim && st != U_REST; p++) {
        enum url_state next;

        c = (unsigned char)*p;
        if (c == ' ' || c == '\r' || c == '\n')
            break;
        next = url_step(st, c);
        if (next == U_DEAD)
            break;
        st = next;
    }
    if (st == U_REST)
        p = url_run_end(p, lim);
    h->url_state = (uint8_t)st;
    if (p > s && take_url(h, s, (size_t)(p - s)))
        return NULL;
    if (p == lim)
        return p;
    c = (unsigned char)*p;
    if (!url_may_end(st) || (c != ' ' && c != '\r' && c != '\n'))
        return bad(h, "invalid URL");
    if (c == ' ') {
        h->state = RD_VER_SP;
        return p + 1;
    }
    h->http_major = 0; /* no version: HTTP/0.9, refused once the head is complete */
    h->http_minor = 9;
    if (c == '\n')
        return bad(h, "line ends in a bare LF (CRLF required)");
    h->state = RD_LINE_LF;
    return p + 1;
}

/* One byte of " HTTP/d.d" CR. */
static const char *read_version(struct srv__h1 *h, const char *p, const char *lim)
{
    unsigned char c = (unsigned char)*p;

    switch (h->state) {
    case RD_VER_SP:
        if (c == 'H' && lim - p >= 10 && memcmp(p, "HTTP/1.", 7) == 0 &&
            is_digit((unsigned char)p[7]) && p[8] == '\r' &&
            p[9] == '\n') { /* the usual "HTTP/1.1" CRLF at once */
            h->http_major = 1;
            h->http_minor = (uint8_t)(p[7] - '0');
            h->state = RD_FIELD_START;
            return p + 10;
        }
        if (c == ' ')
            return p + 1;
        if (c != 'H')
            return bad(h, "invalid HTTP version");
        h->index = 1;
        h->state = RD_VER_LIT;
        return p + 1;
    case RD_VER_LIT:
        if (c != (unsigned char)"HTTP/"[h->index])
            return bad(h, "invalid HTTP version");
        if (++h->index == 5)
            h->state = RD_VER_MAJOR;
        return p + 1;
    case RD_VER_MAJOR:
    case RD_VER_MINOR:
        if (!is_digit(c))
            return bad(h, "invalid HTTP version");
        if (h->state == RD_VER_MAJOR)
            h->http_major = (uint8_t)(c - '0');
        else
            h->http_minor = (uint8_t)(c - '0');
        h->state = h->state == RD_VER_MAJOR ? RD_VER_DOT : RD_VER_END;
        return p + 1;
    case RD_VER_DOT:
        if (c != '.')
            return bad(h, "invalid HTTP version");
        h->state = RD_VER_MINOR;
        return p + 1;
    default: /* RD_VER_END */
        if (c == '\n')
            return bad(h, "line ends in a bare LF (CRLF required)");
        if (c != '\r')
            return bad(h, "invalid HTTP version");
        h->state = RD_LINE_LF;
        return p + 1;
    }
}

/* ---- field lines ------------------------------------------------------------------------- */

static int add_field(struct srv__h1 *h)
{
    struct srv__h1_hdr *hdr;

    if (h->n_hdrs == SRV__H1_MAX_HEADERS)
        return srv__h1_fail(h, SRV__H1_E_HEAD_TOO_LARGE, "too many header fields");
    if (h->n_hdrs == h->hdrs_cap) {
        uint32_t cap = h->hdrs_cap ? h->hdrs_cap * 2 : 16;
        struct srv__h1_hdr *p = realloc(h->hdrs, cap * sizeof(*p));

        if (!p)
            return srv__h1_fail(h, SRV__H1_E_NOMEM, "out of memory");
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

/* Name bytes: counted; a head's are kept in a new header slot, a trailer's first bytes only
 * until its name is classified (at the colon). <space>: a SP is among them. */
static int take_name(struct srv__h1 *h, const char *at, size_t n, bool space)
{
    if (srv__h1_count(h, n))
        return -1;
    if (h->trailers) {
        for (size_t i = 0; i < n; i++, h->tname_len++) {
            if (h->tname_len < sizeof(h->tname))
                h->tname[h->tname_len] = at[i];
            if (at[i] != ' ')
                h->tname_end = h->tname_len + 1;
        }
        return 0;
    }
    if (!h->in_field) {
        if (add_field(h))
            return -1;
        h->in_field = true;
    }
    if (keep(h, at, n))
        return -1;
    if (space)
        h->name_space = true;
    h->hdrs[h->n_hdrs - 1].name_len += (uint32_t)n;
    return 0;
}

static int take_value(struct srv__h1 *h, const char *at, size_t n)
{
    if (srv__h1_count(h, n))
        return -1;
    if (h->trailers || n == 0)
        return 0;
    if (keep(h, at, n))
        return -1;
    h->hdrs[h->n_hdrs - 1].value_len += (uint32_t)n;
    return 0;
}

/* The bits of a name of <len> bytes that starts with <first> in the head's name filter. */
static uint64_t len_bit(size_t len)
{
    return (uint64_t)1 << (len & 63);
}

static uint64_t first_bit(char first)
{
    return (uint64_t)1 << (bsc_ascii_lower((unsigned char)first) & 63);
}

static void name_filter_add(struct srv__h1 *h, char first, size_t len)
{
    h->name_lens |= len_bit(len);
    h->name_firsts |= first_bit(first);
}

static const char *read_name(struct srv__h1 *h, const char *p, const char *lim)
{
    const char *s = p;
    struct srv__h1_hdr *hdr;
    bool space = false;
    size_t n;

    /* a fold is refused at its first byte (a SP), once that is counted */
    if (h->index) {
        p++;
        space = true;
    } else {
        p = name_run_end(p, lim, &space);
    }
    if (p > s && take_name(h, s, (size_t)(p - s), space))
        return NULL;
    if (h->index) /* the first line of the head began with SP: obs-fold */
        return bad(h, "obsolete line folding in the header");
    if (p == lim)
        return p;
    if (*p != ':')
        return bad(h, "invalid character in header");
    if (h->trailers) {
        srv__h1_classify_name(h, h->tname, h->tname_len, h->tname_end);
    } else {
        hdr = &h->hdrs[h->n_hdrs - 1];
        n = hdr->name_len;
        while (n && h->head.p[hdr->name_off + n - 1] == ' ')
            n--;
        srv__h1_classify_name(h, h->head.p + hdr->name_off, hdr->name_len, n);
        name_filter_add(h, h->head.p[hdr->name_off], hdr->name_len);
        hdr->value_off = (uint32_t)h->head.len;
        hdr->value_len = 0;
    }
    h->state = RD_VALUE_WS;
    return p + 1;
}

static bool value_byte(unsigned char c)
{
    return c == '\t' || (c > 31 && c != 127);
}

/* Value bytes from <p>; <first>: *p was already looked at by srv__h1_value_first(). */
static const char *read_value(struct srv__h1 *h, const char *p, const char *lim, bool first)
{
    const char *s = p, *why = NULL;

    if (first)
        p++;
    while (p < lim) {
        unsigned char c;

        if (h->field == SRV__FM_GENERAL) {
            p = value_run_end(p, lim);
            break;
        }
        c = (unsigned char)*p;
        if (c == '\r' || c == '\n' || !value_byte(c))
            break;
        if ((why = srv__h1_value_step(h, c)) != NULL)
            break;
        p++;
    }
    if (take_value(h, s, (size_t)(p - s)))
        return NULL;
    if (why)
        return bad(h, why);
    if (p == lim)
        return p;
    if (*p == '\n')
        return bad(h, "line ends in a bare LF (CRLF required)");
    if (*p != '\r')
        return bad(h, "invalid character in header");
    if (lim - p >= 2 && p[1] == '\n') {
        h->state = RD_VALUE_END;
        return p + 2;
    }
    h->state = RD_VALUE_LF;
    return p + 1;
}

/* ---- the end of the head ----------------------------------------------------------------- */

static void complete(struct srv__h1 *h)
{
    h->complete = true;
    h->keep_alive = srv__h1_keep_alive(h);
    h->state = RD_DONE;
}

/* The head is complete and accepted: where its body is (http-parser's order). */
static int body_start(struct srv__h1 *h)
{
    bool has_body = (h->flags & SRV__H1_F_CHUNKED) ||
                    ((h->flags & SRV__H1_F_CONTENT_LENGTH) && h->content_length > 0);
    bool upgrade = ((h->flags & SRV__H1_F_UPGRADE) && (h->flags & SRV__H1_F_CONN_UPGRADE)) ||
                   h->method == SRV__H1_METHOD_CONNECT;

    if (upgrade && !has_body) {
        complete(h);
    } else if (h->flags & SRV__H1_F_CHUNKED) {
        h->state = RD_CHUNK_START;
    } else if (h->flags & SRV__H1_F_TE) {
        return srv__h1_fail(h, SRV__H1_E_BAD_REQUEST, "request has invalid transfer-encoding");
    } else if (h->content_length > 0 && (h->flags & SRV__H1_F_CONTENT_LENGTH)) {
        h->state = RD_BODY;
    } else {
        complete(h);
    }
    return 0;
}

/* <c> is the byte after the empty line's CR (or a bare LF there): it ends the head or the
 * trailers whatever it is, then the line discipline judges it. */
static int head_end(struct srv__h1 *h, unsigned char c, bool bare_lf)
{
    if (h->trailers) {
        complete(h);
    } else {
        if ((h->flags & SRV__H1_F_TE) && (h->flags & SRV__H1_F_CONTENT_LENGTH))
            return srv__h1_fail(h, SRV__H1_E_BAD_REQUEST, "unexpected content-length header");
        if (srv__h1_head_complete(h) || body_start(h))
            return -1;
    }
    if (bare_lf)
        return srv__h1_fail(h, SRV__H1_E_BAD_REQUEST, "line ends in a bare LF (CRLF required)");
    if (c != '\n')
        return srv__h1_fail(h, SRV__H1_E_BAD_REQUEST, "CR not followed by LF");
    return 0;
}

/* <c> is the byte after a chunk-size line's CR. */
static int chunk_line_end(struct srv__h1 *h, unsigned char c)
{
    if (h->content_length == 0) {
        h->trailers = true;
        h->state = RD_FIELD_START;
    } else {
        h->state = RD_CHUNK_DATA;
    }
    if (h->content_length > h->max_body - h->body.len) /* refused before its bytes arrive */
        return srv__h1_fail(h, SRV__H1_E_BODY_TOO_LARGE, "request body is too large");
    if (c != '\n')
        return srv__h1_fail(h, SRV__H1_E_BAD_REQUEST, "CR not followed by LF");
    return 0;
}

static const char *chunk_size(struct srv__h1 *h, const char *p)
{
    unsigned char c = (unsigned char)*p;
    int v = unhex(c);

    if (h->state == RD_CHUNK_START) {
        if (v < 0)
            return bad(h, "invalid character in chunk size header");
        h->content_length = (uint64_t)v;
        h->state = RD_CHUNK_SIZE;
        return p + 1;
    }
    if (c == '\r') {
        h->state = RD_CHUNK_LF;
    } else if (v >= 0) {
        if ((UINT64_MAX - 16) / 16 < h->content_length)
            return bad(h, "invalid character in content-length header");
        h->content_length = h->content_length * 16 + (uint64_t)v;
    } else if (c == ';' || c == ' ') {
        h->state = RD_CHUNK_EXT;
    } else {
        return bad(h, "invalid character in chunk size header");
    }
    return p + 1;
}

static const char *chunk_ext(struct srv__h1 *h, const char *p, const char *lim)
{
    for (; p < lim; p++) {
        if (*p == '\n')
            return bad(h, "line ends in a bare LF (CRLF required)");
        if (*p == '\r') {
            h->state = RD_CHUNK_LF;
            return p + 1;
        }
    }
    return p;
}

/* ---- the head states --------------------------------------------------------------------- */

/* A field line, or the empty line, begins with <c>. */
static const char *field_start(struct srv__h1 *h, const char *p, bool *reset)
{
    unsigned char c = (unsigned char)*p;

    if (c == '\r') {
        h->state = RD_HEAD_CR;
        return p + 1;
    }
    if (c == '\n') {
        *reset = true;
        return head_end(h, c, true) ? NULL : p + 1;
    }
    if (!is_name_byte(c))
        return bad(h, "invalid character in header");
    if (srv__h1_count(h, FIELD_EXTRA))
        return NULL;
    h->in_field = false;
    h->tname_len = 0;
    h->tname_end = 0;
    h->field = SRV__FM_GENERAL;
    /* a head's first field line starting with SP: http-parser took it as a name byte; the
     * line discipline refuses it as obs-fold once it is counted */
    h->index = c == ' ' && !h->trailers;
    h->state = RD_FIELD;
    return p;
}

/* After a value's line (<empty>: no value byte), <c> says fold or next field. */
static const char *line_next(struct srv__h1 *h, const char *p, const char *lim, bool empty)
{
    unsigned char c = (unsigned char)*p;

    if (c == ' ' || c == '\t') {
        if (empty) {
            if (!h->trailers)
                return bad(h, "obsolete line folding in the header");
            h->state = RD_VALUE_WS;
            return p + 1;
        }
        if (h->field == SRV__FM_CL_NUM)
            h->field = SRV__FM_CL_WS;
        if (!h->trailers)
            return take_value(h, p, 1) ? NULL : bad(h, "obsolete line folding in the header");
        srv__h1_value_first(h, c);
        h->state = RD_VALUE;
        return read_value(h, p, lim, true);
    }
    if (empty && h->field == SRV__FM_CL)
        return bad(h, "invalid character in content-length header");
    srv__h1_finish_field(h);
    h->state = RD_FIELD_START;
    return p;
}

/* Field lines from a line's start (RD_FIELD_START), the usual way through them taken here
 * back to back rather than one state a turn of head_bytes' loop: the name, the whitespace,
 * the value, its line end, the next line. Every step is the one head_step would take, in
 * the same order; whatever else comes (the empty line, an empty value, a fold, a read's
 * end) is left to head_step in the state reached. */
static const char *field_lines(struct srv__h1 *h, const char *p, const char *lim, bool *reset)
{
    const char *why;
    unsigned char c;

    for (;;) {
        p = field_start(h, p, reset);
        if (!p || h->state != RD_FIELD)
            return p;
        p = read_name(h, p, lim);
        if (!p || h->state != RD_VALUE_WS)
            return p;
        while (p < lim && (*p == ' ' || *p == '\t')) /* RD_VALUE_WS takes them one a turn */
            p++;
        if (p == lim || *p == '\r' || *p == '\n')
            return p;
        if ((why = srv__h1_value_first(h, (unsigned char)*p)) != NULL)
            return bad(h, why);
        h->state = RD_VALUE;
        p = read_value(h, p, lim, true);
        if (!p || p == lim || h->state != RD_VALUE_END)
            return p;
        c = (unsigned char)*p;
        if (c == ' ' || c == '\t') /* a fold: line_next's other way */
            return p;
        p = line_next(h, p, lim, false);
        if (!p || p == lim || h->state != RD_FIELD_START)
            return p;
    }
}

/* One step of the head (or chunk-line, or trailer) states from <p>, within <lim>. */
static const char *head_step(struct srv__h1 *h, const char *p, const char *lim, bool *reset)
{
    unsigned char c = (unsigned char)*p;
    const char *why;

    switch (h->state) {
    case RD_START:
        if (c == '\r') {
            h->state = RD_START_LF;
            return p + 1;
        }
        if (c == '\n')
            return bad(h, "line ends in a bare LF (CRLF required)");
        h->state = RD_METHOD;
        h->tok_len = 0;
        return p;
    case RD_START_LF:
        if (c != '\n')
            return bad(h, "CR not followed by LF");
        h->state = RD_START;
        return p + 1;
    case RD_METHOD:
        return read_method(h, p, lim);
    case RD_URL_SP:
        if (c == ' ')
            return p + 1;
        h->state = RD_URL;
        return read_url(h, p, lim);
    case RD_URL:
        return read_url(h, p, lim);
    case RD_VER_SP:
    case RD_VER_LIT:
    case RD_VER_MAJOR:
    case RD_VER_DOT:
    case RD_VER_MINOR:
    case RD_VER_END:
        return read_version(h, p, lim);
    case RD_LINE_LF:
        if (c != '\n')
            return bad(h, "LF character expected");
        h->state = RD_FIELD_START;
        return p + 1;
    case RD_FIELD_START:
        return field_lines(h, p, lim, reset);
    case RD_FIELD:
        return read_name(h, p, lim);
    case RD_VALUE_WS:
        if (c == ' ' || c == '\t')
            return p + 1;
        if (c == '\r') {
            h->state = RD_EMPTY_CR;
            return p + 1;
        }
        if (c == '\n')
            return bad(h, "line ends in a bare LF (CRLF required)");
        if ((why = srv__h1_value_first(h, c)) != NULL)
            return bad(h, why);
        h->state = RD_VALUE;
        return read_value(h, p, lim, true);
    case RD_VALUE:
        return read_value(h, p, lim, false);
    case RD_EMPTY_CR:
    case RD_VALUE_LF:
        if (c != '\n')
            return bad(h, "CR not followed by LF");
        h->state = h->state == RD_EMPTY_CR ? RD_EMPTY_LF : RD_VALUE_END;
        return p + 1;
    case RD_EMPTY_LF:
    case RD_VALUE_END:
        return line_next(h, p, lim, h->state == RD_EMPTY_LF);
    case RD_HEAD_CR:
        *reset = true;
        return head_end(h, c, false) ? NULL : p + 1;
    case RD_CHUNK_START:
    case RD_CHUNK_SIZE:
        return chunk_size(h, p);
    case RD_CHUNK_EXT:
        return chunk_ext(h, p, lim);
    case RD_CHUNK_LF:
        *reset = true;
        return chunk_line_end(h, c) ? NULL : p + 1;
    default: /* RD_CHUNK_BAD */
        return bad(h, "CR not followed by LF");
    }
}

/* ---- the body ---------------------------------------------------------------------------- */

static int take_body(struct srv__h1 *h, const char *at, size_t n)
{
    enum bsc_err err = bsc_buf_append(&h->body, at, n);

    if (err == BSC_ENOMEM)
        return srv__h1_fail(h, SRV__H1_E_NOMEM, "out of memory");
    if (err)
        return srv__h1_fail(h, SRV__H1_E_BODY_TOO_LARGE, "request body is too large");
    return 0;
}

static const char *body_step(struct srv__h1 *h, const char *p, const char *end)
{
    unsigned char c = (unsigned char)*p;
    size_t n;

    switch (h->state) {
    case RD_BODY:
    case RD_CHUNK_DATA:
        n = (size_t)(end - p) < h->content_length ? (size_t)(end - p) : (size_t)h->content_length;
        if (take_body(h, p, n))
            return NULL;
        h->content_length -= n;
        if (h->content_length == 0) {
            if (h->state == RD_BODY)
                complete(h);
            else
                h->state = RD_DATA_CR;
        }
        return p + n;
    case RD_DATA_CR:
        /* http-parser skipped the two bytes after chunk data; the line discipline lets
         * through CRLF, or two bytes that are neither */
        if (c == '\n')
            return bad(h, "line ends in a bare LF (CRLF required)");
        h->index = c == '\r';
        h->state = RD_DATA_LF;
        return p + 1;
    default: /* RD_DATA_LF */
        if (h->index ? c != '\n' : c == '\n')
            return bad(h, h->index ? "CR not followed by LF"
                                   : "line ends in a bare LF (CRLF required)");
        h->state = !h->index && c == '\r' ? RD_CHUNK_BAD : RD_CHUNK_START;
        h->raw = 0;
        return p + 1;
    }
}

/* Head-state bytes from <p>: within what is left of RAW_MAX for this section. */
static const char *head_bytes(struct srv__h1 *h, const char *p, const char *end)
{
    size_t room = RAW_MAX - h->raw;
    const char *lim = (size_t)(end - p) > room ? p + room : end;
    const char *from = p;
    bool reset = false;

    if (p == lim) {
        srv__h1_fail(h, SRV__H1_E_HEAD_TOO_LARGE, "too many header bytes seen; overflow detected");
        return NULL;
    }
    while (p && p < lim && !reset && h->state < RD_CHUNK_DATA)
        p = head_step(h, p, lim, &reset);
    if (!p)
        return NULL;
    h->raw = reset ? 0 : h->raw + (uint32_t)(p - from);
    return p;
}

/* ---- the interface ----------------------------------------------------------------------- */

static void reset_message(struct srv__h1 *h, uint32_t max_head, uint64_t max_body)
{
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
    h->head_done = false;
    h->complete = false;
    h->keep_alive = false;
    h->expect_continue = false;
    h->http10 = false;
    h->state = RD_START;
    h->method = 0;
    h->url_state = U_START;
    h->field = SRV__FM_GENERAL;
    h->index = 0;
    h->tok_len = 0;
    h->http_major = 0;
    h->http_minor = 0;
    h->flags = 0;
    h->trailers = false;
    h->in_field = false;
    h->name_space = false;
    h->raw = 0;
    h->content_length = 0;
    h->tname_len = 0;
    h->tname_end = 0;
    h->name_lens = 0;
    h->name_firsts = 0;
}

void srv__h1_init(struct srv__h1 *h, uint32_t max_head, uint64_t max_body)
{
    bsc_buf_init(&h->head, max_head);
    bsc_buf_init(&h->body, 0);
    h->hdrs = NULL;
    h->hdrs_cap = 0;
    reset_message(h, max_head, max_body);
}

void srv__h1_cleanup(struct srv__h1 *h)
{
    bsc_buf_cleanup(&h->head);
    bsc_buf_cleanup(&h->body);
    BSC_FREE(h->hdrs);
    h->hdrs_cap = 0;
    h->n_hdrs = 0;
}

void srv__h1_next(struct srv__h1 *h, uint32_t max_head, uint64_t max_body)
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

int srv__h1_feed(struct srv__h1 *h, const char *p, size_t len, size_t *consumed)
{
    const char *at = p, *end = p + len;

    *consumed = 0;
    if (h->err)
        return -1;
    if (h->complete)
        return 1;
    while (at && at < end && !h->complete)
        at = h->state < RD_CHUNK_DATA ? head_bytes(h, at, end) : body_step(h, at, end);
    if (!at)
        return -1;
    *consumed = (size_t)(at - p);
    return h->complete ? 1 : 0;
}

struct srv_header srv__h1_header_at(const struct srv__h1 *h, size_t i)
{
    const struct srv__h1_hdr *hdr;

    if (i >= h->n_hdrs)
        return (struct srv_header){BSC_STR_NULL, BSC_STR_NULL};
    hdr = &h->hdrs[i];
    return (struct srv_header){bsc_str_make(h->head.p + hdr->name_off, hdr->name_len),
                               bsc_str_make(h->head.p + hdr->value_off, hdr->value_len)};
}

/* Once the head is done every field's name went past its colon, so is in the filter:
 * a name that misses it is looked for no further (most lookups are of absent fields). */
struct bsc_str srv__h1_header(const struct srv__h1 *h, struct bsc_str name)
{
    if (h->head_done && name.len &&
        (!(h->name_lens & len_bit(name.len)) || !(h->name_firsts & first_bit(name.p[0]))))
        return BSC_STR_NULL;
    for (uint32_t i = 0; i < h->n_hdrs; i++) {
        const struct srv__h1_hdr *hdr = &h->hdrs[i];

        if (hdr->name_len == name.len &&
            bsc_ascii_ieq(h->head.p + hdr->name_off, name.p, name.len))
            return bsc_str_make(h->head.p + hdr->value_off, hdr->value_len);
    }
    return BSC_STR_NULL;
}

struct bsc_str srv__h1_method_name(unsigned m)
{
    return m < BSC_ARRAY_LEN(methods) ? bsc_str_cstr(methods[m]) : BSC_STR("<unknown>");
}

struct bsc_str srv__h1_method(const struct srv__h1 *h)
{
    return srv__h1_method_name(h->method);
}

bool srv__h1_is_head(const struct srv__h1 *h)
{
    return h->method == SRV__H1_METHOD_HEAD;
}
