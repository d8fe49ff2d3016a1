/* SPDX-License-Identifier: MIT */
/* canon.c -- a request body's canonical text (canon.h): one recursive pass over the bytes,
 * each object's members written to a scratch buffer, then sorted by decoded name and
 * appended. Bounded: CANON_MAX_DEPTH levels, and <out>'s own maximum. */
#include "cache/canon.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"

struct canon {
    const char *p, *end;
    int depth;
    enum canon_result err;
};

static enum canon_result value(struct canon *c, struct bsc_buf *out);

static bool fail(struct canon *c, enum canon_result why)
{
    if (c->err == CANON_OK)
        c->err = why;
    return false;
}

static void skip_ws(struct canon *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int hex4(const char *p)
{
    int v = 0;

    for (int i = 0; i < 4; i++) {
        char ch = p[i];
        v <<= 4;
        if (ch >= '0' && ch <= '9')
            v |= ch - '0';
        else if (ch >= 'a' && ch <= 'f')
            v |= ch - 'a' + 10;
        else if (ch >= 'A' && ch <= 'F')
            v |= ch - 'A' + 10;
        else
            return -1;
    }
    return v;
}

static bool put_utf8(struct bsc_buf *b, uint32_t cp)
{
    char u[4];
    size_t n;

    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return bsc_buf_append(b, u, n) == BSC_OK;
}

/* A \u escape at c->p (after the backslash and 'u'), with its low surrogate if it is a
 * high one. A lone surrogate is refused: parsers replace, keep or reject it differently. */
static bool unicode_escape(struct canon *c, struct bsc_buf *dec)
{
    int hi, lo;

    if (c->end - c->p < 4 || (hi = hex4(c->p)) < 0)
        return fail(c, CANON_INVALID);
    c->p += 4;
    if (hi >= 0xDC00 && hi <= 0xDFFF)
        return fail(c, CANON_REFUSED);
    if (hi < 0xD800 || hi > 0xDBFF)
        return put_utf8(dec, (uint32_t)hi) || fail(c, CANON_REFUSED);
    if (c->end - c->p < 6 || c->p[0] != '\\' || c->p[1] != 'u' || (lo = hex4(c->p + 2)) < 0 ||
        lo < 0xDC00 || lo > 0xDFFF)
        return fail(c, CANON_REFUSED);
    c->p += 6;
    return put_utf8(dec, 0x10000u + (((uint32_t)hi - 0xD800u) << 10) + ((uint32_t)lo - 0xDC00u)) ||
           fail(c, CANON_REFUSED);
}

static bool simple_escape(struct canon *c, struct bsc_buf *dec)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *at = memchr(from, *c->p, sizeof(from) - 1);

    if (!at)
        return fail(c, CANON_INVALID);
    c->p++;
    return bsc_buf_append_char(dec, to[at - from]) == BSC_OK || fail(c, CANON_REFUSED);
}

/* A string at c->p (its opening quote), decoded into <dec>. */
static bool string_decode(struct canon *c, struct bsc_buf *dec)
{
    const char *run;

    c->p++;
    for (;;) {
        run = c->p;
        while (c->p < c->end && *c->p != '"' && *c->p != '\\' && (unsigned char)*c->p >= 0x20)
            c->p++;
        if (c->p > run && bsc_buf_append(dec, run, (size_t)(c->p - run)) != BSC_OK)
            return fail(c, CANON_REFUSED);
        if (c->p >= c->end || (unsigned char)*c->p < 0x20)
            return fail(c, CANON_INVALID);
        if (*c->p++ == '"')
            break;
        if (c->p >= c->end)
            return fail(c, CANON_INVALID);
        if (*c->p == 'u') {
            c->p++;
            if (!unicode_escape(c, dec))
                return false;
        } else if (!simple_escape(c, dec)) {
            return false;
        }
    }
    return bsc_utf8_valid(dec->p ? dec->p : "", dec->len) || fail(c, CANON_INVALID);
}

/* Decoded bytes as a JSON string, one way: '"', '\\' and control characters escaped. */
static bool string_encode(struct canon *c, struct bsc_str s, struct bsc_buf *out)
{
    return bsc_buf_append_json_str(out, s) == BSC_OK || fail(c, CANON_REFUSED);
}

static bool string_value(struct canon *c, struct bsc_buf *out)
{
    struct bsc_buf dec;
    bool ok;

    bsc_buf_init(&dec, out->max);
    ok = string_decode(c, &dec) && string_encode(c, bsc_buf_str(&dec), out);
    bsc_buf_cleanup(&dec);
    return ok;
}

static bool digits(struct canon *c)
{
    const char *start = c->p;

    while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
        c->p++;
    return c->p > start;
}

/* A number is copied as written once its grammar holds (RFC 8259 §6). */
static bool number(struct canon *c, struct bsc_buf *out)
{
    const char *start = c->p;

    if (c->p < c->end && *c->p == '-')
        c->p++;
    if (c->p < c->end && *c->p == '0')
        c->p++;
    else if (!digits(c))
        return fail(c, CANON_INVALID);
    if (c->p < c->end && *c->p == '.' && (c->p++, !digits(c)))
        return fail(c, CANON_INVALID);
    if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
        c->p++;
        if (c->p < c->end && (*c->p == '+' || *c->p == '-'))
            c->p++;
        if (!digits(c))
            return fail(c, CANON_INVALID);
    }
    return bsc_buf_append(out, start, (size_t)(c->p - start)) == BSC_OK ||
           fail(c, CANON_REFUSED);
}

static bool literal(struct canon *c, const char *word, struct bsc_buf *out)
{
    size_t n = strlen(word);

    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0)
        return fail(c, CANON_INVALID);
    c->p += n;
    return bsc_buf_append(out, word, n) == BSC_OK || fail(c, CANON_REFUSED);
}

static bool array(struct canon *c, struct bsc_buf *out)
{
    bool first = true;

    c->p++;
    if (bsc_buf_append_char(out, '[') != BSC_OK)
        return fail(c, CANON_REFUSED);
    skip_ws(c);
    if (c->p < c->end && *c->p == ']') {
        c->p++;
        return bsc_buf_append_char(out, ']') == BSC_OK || fail(c, CANON_REFUSED);
    }
    for (;;) {
        if (!first && bsc_buf_append_char(out, ',') != BSC_OK)
            return fail(c, CANON_REFUSED);
        first = false;
        if (value(c, out) != CANON_OK)
            return false;
        skip_ws(c);
        if (c->p >= c->end)
            return fail(c, CANON_INVALID);
        if (*c->p == ']') {
            c->p++;
            return bsc_buf_append_char(out, ']') == BSC_OK || fail(c, CANON_REFUSED);
        }
        if (*c->p++ != ',')
            return fail(c, CANON_INVALID);
    }
}

/* One member in an object's scratch buffer: its decoded name at [name, name + name_len),
 * then its canonical "name":value text at [text, text + text_len). */
struct member {
    size_t name, name_len, text, text_len;
    bool skipped; /* named in the skip list: read, checked for duplicates, left out */
};

struct members {
    struct member *m;
    size_t n, cap;
};

/* The scratch buffer being sorted: qsort has no context argument in C11, and each worker
 * thread canonicalises its own requests. */
static _Thread_local const char *sort_base;

static int member_cmp(const void *a, const void *b)
{
    const struct member *x = a, *y = b;
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int d = memcmp(sort_base + x->name, sort_base + y->name, n);

    return d ? d : (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

static bool is_skipped(struct bsc_str name, const char *const *skip, size_t n_skip)
{
    for (size_t i = 0; i < n_skip; i++)
        if (bsc_str_eq(name, bsc_str_cstr(skip[i])))
            return true;
    return false;
}

/* Reads one "name": value into <scr>, adding it to <ms> unless its name is skipped. */
static bool member(struct canon *c, struct bsc_buf *scr, struct members *ms,
                   const char *const *skip, size_t n_skip)
{
    struct member m = {.name = scr->len};

    if (c->p >= c->end || *c->p != '"')
        return fail(c, CANON_INVALID);
    if (!string_decode(c, scr))
        return false;
    m.name_len = scr->len - m.name;
    m.text = scr->len;
    /* The name is encoded from the scratch buffer into itself: room first, so the append
     * never moves the bytes it reads (at most 6 bytes per byte, \u00XX, and the quotes). */
    if (bsc_buf_reserve(scr, m.name_len * 6 + 2) != BSC_OK)
        return fail(c, CANON_REFUSED);
    if (!string_encode(c, bsc_str_make(scr->p + m.name, m.name_len), scr))
        return false;
    skip_ws(c);
    if (c->p >= c->end || *c->p++ != ':')
        return fail(c, CANON_INVALID);
    if (bsc_buf_append_char(scr, ':') != BSC_OK)
        return fail(c, CANON_REFUSED);
    if (value(c, scr) != CANON_OK)
        return false;
    m.text_len = scr->len - m.text;
    m.skipped = is_skipped(bsc_str_make(scr->p + m.name, m.name_len), skip, n_skip);
    if (ms->n == ms->cap) {
        size_t cap = ms->cap ? ms->cap * 2 : 8;
        struct member *grown = realloc(ms->m, cap * sizeof(*grown));
        if (!grown)
            return fail(c, CANON_REFUSED);
        ms->m = grown;
        ms->cap = cap;
    }
    ms->m[ms->n++] = m;
    return true;
}

/* The members sorted by decoded name; two equal names refuse the body. */
static bool emit_members(struct canon *c, struct bsc_buf *scr, struct members *ms,
                         struct bsc_buf *out)
{
    sort_base = scr->p;
    if (ms->n > 1)
        qsort(ms->m, ms->n, sizeof(*ms->m), member_cmp);
    if (bsc_buf_append_char(out, '{') != BSC_OK)
        return fail(c, CANON_REFUSED);
    for (size_t i = 0, n = 0; i < ms->n; i++) {
        if (i && member_cmp(&ms->m[i - 1], &ms->m[i]) == 0)
            return fail(c, CANON_DUPLICATE);
        if (ms->m[i].skipped)
            continue;
        if ((n++ && bsc_buf_append_char(out, ',') != BSC_OK) ||
            bsc_buf_append(out, scr->p + ms->m[i].text, ms->m[i].text_len) != BSC_OK)
            return fail(c, CANON_REFUSED);
    }
    return bsc_buf_append_char(out, '}') == BSC_OK || fail(c, CANON_REFUSED);
}

static bool members_loop(struct canon *c, struct bsc_buf *scr, struct members *ms,
                         const char *const *skip, size_t n_skip)
{
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return true;
    }
    for (;;) {
        skip_ws(c);
        if (!member(c, scr, ms, skip, n_skip))
            return false;
        skip_ws(c);
        if (c->p >= c->end)
            return fail(c, CANON_INVALID);
        if (*c->p == '}') {
            c->p++;
            return true;
        }
        if (*c->p++ != ',')
            return fail(c, CANON_INVALID);
    }
}

static bool object(struct canon *c, struct bsc_buf *out, const char *const *skip, size_t n_skip)
{
    struct bsc_buf scr;
    struct members ms = {0};
    bool ok;

    c->p++;
    bsc_buf_init(&scr, out->max);
    ok = members_loop(c, &scr, &ms, skip, n_skip) && emit_members(c, &scr, &ms, out);
    free(ms.m);
    bsc_buf_cleanup(&scr);
    return ok;
}

static enum canon_result value_at(struct canon *c, struct bsc_buf *out, const char *const *skip,
                                  size_t n_skip)
{
    bool ok;

    skip_ws(c);
    if (c->p >= c->end) {
        fail(c, CANON_INVALID);
        return c->err;
    }
    if (++c->depth > CANON_MAX_DEPTH) {
        fail(c, CANON_REFUSED);
        return c->err;
    }
    switch (*c->p) {
    case '{': ok = object(c, out, skip, n_skip); break;
    case '[': ok = array(c, out); break;
    case '"': ok = string_value(c, out); break;
    case 't': ok = literal(c, "true", out); break;
    case 'f': ok = literal(c, "false", out); break;
    case 'n': ok = literal(c, "null", out); break;
    default: ok = number(c, out); break;
    }
    c->depth--;
    if (!ok && c->err == CANON_OK)
        c->err = CANON_INVALID;
    return c->err;
}

/* A nested value: the skip list applies to the top level only. */
static enum canon_result value(struct canon *c, struct bsc_buf *out)
{
    return value_at(c, out, NULL, 0);
}

enum canon_result canon_request(struct bsc_str body, const char *const *skip, size_t n_skip,
                                struct bsc_buf *out)
{
    struct canon c = {.p = body.p, .end = body.p + body.len};

    if (!body.p) {
        c.err = CANON_INVALID;
        return c.err;
    }
    if (value_at(&c, out, skip, n_skip) != CANON_OK)
        return c.err;
    skip_ws(&c);
    if (c.p != c.end)
        return CANON_INVALID;
    return CANON_OK;
}
