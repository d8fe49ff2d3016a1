/* SPDX-License-Identifier: MIT */
/* json_name.c -- a byte-at-a-time decoder of JSON string escapes (RFC 8259 §7: the eight
 * short escapes and \uXXXX with UTF-16 surrogate pairs, written out as UTF-8), and the
 * comparisons built on it. It trusts nothing: every read is bounded by the raw name. */
#include "core/json_name.h"

#include <string.h>

enum { DEC_END = -1, DEC_BAD = -2 };

struct dec {
    const unsigned char *p;
    size_t i, n;
    unsigned char out[4]; /* the rest of a decoded \u escape's UTF-8 bytes */
    unsigned olen, opos;
};

static void dec_init(struct dec *d, struct bsc_str raw)
{
    d->p = (const unsigned char *)raw.p;
    d->i = 0;
    d->n = raw.p ? raw.len : 0;
    d->olen = d->opos = 0;
}

/* The four hex digits at p[i], or -1. */
static long hex4_at(const struct dec *d, size_t i)
{
    long v = 0;

    if (d->n - i < 4 || i > d->n)
        return -1;
    for (size_t k = 0; k < 4; k++) {
        int h = bsc_hex_digit(d->p[i + k]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

/* Decodes the \u escape at p[i] (the backslash) into d->out; returns false when it is
 * malformed, a lone surrogate or U+0000. */
static bool dec_unicode(struct dec *d)
{
    long cp = hex4_at(d, d->i + 2), lo;

    if (cp <= 0 || (cp >= 0xdc00 && cp <= 0xdfff))
        return false;
    d->i += 6;
    if (cp >= 0xd800 && cp <= 0xdbff) {
        if (d->n - d->i < 6 || d->p[d->i] != '\\' || d->p[d->i + 1] != 'u')
            return false;
        lo = hex4_at(d, d->i + 2);
        if (lo < 0xdc00 || lo > 0xdfff)
            return false;
        d->i += 6;
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    }
    if (cp < 0x80) {
        d->out[0] = (unsigned char)cp;
        d->olen = 1;
    } else if (cp < 0x800) {
        d->out[0] = (unsigned char)(0xc0 | (cp >> 6));
        d->out[1] = (unsigned char)(0x80 | (cp & 0x3f));
        d->olen = 2;
    } else if (cp < 0x10000) {
        d->out[0] = (unsigned char)(0xe0 | (cp >> 12));
        d->out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        d->out[2] = (unsigned char)(0x80 | (cp & 0x3f));
        d->olen = 3;
    } else {
        d->out[0] = (unsigned char)(0xf0 | (cp >> 18));
        d->out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
        d->out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        d->out[3] = (unsigned char)(0x80 | (cp & 0x3f));
        d->olen = 4;
    }
    d->opos = 0;
    return true;
}

/* The next decoded byte (0..255), DEC_END after the last, DEC_BAD on an ambiguous escape. */
static int dec_next(struct dec *d)
{
    unsigned char e;

    if (d->opos < d->olen)
        return d->out[d->opos++];
    if (d->i >= d->n)
        return DEC_END;
    if (d->p[d->i] != '\\')
        return d->p[d->i++];
    if (d->n - d->i < 2)
        return DEC_BAD;
    e = d->p[d->i + 1];
    switch (e) {
    case '"':
    case '\\':
    case '/': break;
    case 'b': e = '\b'; break;
    case 'f': e = '\f'; break;
    case 'n': e = '\n'; break;
    case 'r': e = '\r'; break;
    case 't': e = '\t'; break;
    case 'u':
        if (!dec_unicode(d))
            return DEC_BAD;
        d->opos = 1;
        return d->out[0];
    default: return DEC_BAD;
    }
    d->i += 2;
    return e;
}

bool bsc_json_name_scan(struct bsc_str raw, struct bsc_json_name_info *info)
{
    uint32_t h = 2166136261u;
    size_t len = 0, i;
    struct dec d;
    int c;

    /* The common case, no escape: the bytes are the name, hashed in the same loop that
     * looks for a backslash. */
    for (i = 0; i < raw.len && raw.p[i] != '\\'; i++)
        h = (h ^ (unsigned char)raw.p[i]) * 16777619u;
    info->escaped = i < raw.len;
    if (!info->escaped) {
        info->hash = h;
        info->len = raw.len;
        return true;
    }
    h = 2166136261u;
    dec_init(&d, raw);
    while ((c = dec_next(&d)) >= 0) {
        h = (h ^ (uint32_t)c) * 16777619u;
        len++;
    }
    info->hash = h;
    info->len = len;
    return c == DEC_END;
}

/* Compares two decoders byte by byte: 1 same, 0 different, -1 when either is ambiguous. */
static int dec_eq(struct dec *a, struct dec *b)
{
    for (;;) {
        int x = dec_next(a), y = dec_next(b);

        if (x == DEC_BAD || y == DEC_BAD)
            return -1;
        if (x != y) {
            /* Different so far; an ambiguity further on still makes the answer -1. */
            while (x >= 0)
                x = dec_next(a);
            while (y >= 0)
                y = dec_next(b);
            return x == DEC_BAD || y == DEC_BAD ? -1 : 0;
        }
        if (x == DEC_END)
            return 1;
    }
}

int bsc_json_name_eq(struct bsc_str raw, struct bsc_str plain)
{
    struct dec a, b;

    if (!raw.p || !memchr(raw.p, '\\', raw.len))
        return bsc_str_eq(raw, plain);
    dec_init(&a, raw);
    /* <plain> holds no escapes to decode: walk it as raw bytes, backslashes included. */
    b.p = (const unsigned char *)plain.p;
    b.i = 0;
    b.n = plain.p ? plain.len : 0;
    b.olen = b.opos = 0;
    for (;;) {
        int x = dec_next(&a), y = b.i < b.n ? b.p[b.i++] : DEC_END;

        if (x == DEC_BAD)
            return -1;
        if (x != y) {
            while (x >= 0)
                x = dec_next(&a);
            return x == DEC_BAD ? -1 : 0;
        }
        if (x == DEC_END)
            return 1;
    }
}

int bsc_json_names_eq(struct bsc_str a, struct bsc_str b)
{
    struct dec x, y;

    dec_init(&x, a);
    dec_init(&y, b);
    return dec_eq(&x, &y);
}

size_t bsc_json_name_decode(struct bsc_str raw, char *buf, size_t cap)
{
    size_t len = 0, start = 0;
    struct dec d;
    int c;

    if (!cap)
        return 0;
    dec_init(&d, raw);
    while ((c = dec_next(&d)) >= 0) {
        if (len == cap - 1)
            break; /* <c> does not fit */
        if ((c & 0xc0) != 0x80)
            start = len; /* where the last character began */
        buf[len++] = (char)c;
    }
    if (c == DEC_BAD)
        len = 0;
    else if (c >= 0 && (c & 0xc0) == 0x80)
        len = start; /* the cut fell inside a character: drop its first bytes too */
    buf[len] = '\0';
    return len;
}

/* Whether a backslash of <doc> starts a \u escape; *<any> says whether there is a
 * backslash at all. Walks from one backslash to the next (memchr), as a chat body holds
 * few. A "\\u" (an escaped backslash, then u) counts too: erring on "may" is safe. */
static bool has_unicode_escape(struct bsc_str doc, bool *any)
{
    const char *p = doc.p, *end = doc.p + doc.len;

    *any = false;
    while ((p = memchr(p, '\\', (size_t)(end - p)))) {
        *any = true;
        if (++p < end && *p == 'u')
            return true;
    }
    return false;
}

bool bsc_json_may_hold(struct bsc_str doc, struct bsc_str plain)
{
    bool any;

    if (!doc.p || !doc.len)
        return false;
    if (!plain.len || bsc_str_find(doc, plain))
        return true;
    /* \uXXXX spells any character; the short escapes only their own few. */
    if (has_unicode_escape(doc, &any))
        return true;
    if (!any)
        return false;
    for (size_t i = 0; i < plain.len; i++)
        if (plain.p[i] && strchr("\"\\/\b\f\n\r\t", plain.p[i]))
            return true;
    return false;
}
