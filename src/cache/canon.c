/* SPDX-License-Identifier: MIT */
/* canon.c -- a request body's canonical text (canon.h): one recursive pass over the tokens of
 * core/json_tok (the one JSON grammar), each object's members written to a scratch buffer,
 * then sorted by decoded name and appended. Bounded: CANON_MAX_DEPTH levels, and <out>'s own
 * maximum. */
#include "cache/canon.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_tok.h"

struct canon {
    struct bsc_json_tok t;
    enum canon_result err;
};

static bool value(struct canon *c, struct bsc_jtok *tok, struct bsc_buf *out,
                  const char *const *skip, size_t n_skip);

static bool fail(struct canon *c, enum canon_result why)
{
    if (c->err == CANON_OK)
        c->err = why;
    return false;
}

/* The next token; false (CANON_INVALID) when the text is not JSON. */
static bool next(struct canon *c, struct bsc_jtok *tok)
{
    return bsc_json_tok_next(&c->t, tok) != BSC_JTOK_ERROR || fail(c, CANON_INVALID);
}

/* The string token <tok> decoded into <dec>. A lone surrogate escape is refused: parsers
 * replace, keep or reject it differently. */
static bool string_decode(struct canon *c, const struct bsc_jtok *tok, struct bsc_buf *dec)
{
    return bsc_json_unescape(tok->raw, dec, NULL) == BSC_OK || fail(c, CANON_REFUSED);
}

/* Decoded bytes as a JSON string, one way: '"', '\\' and control characters escaped. */
static bool string_encode(struct canon *c, struct bsc_str s, struct bsc_buf *out)
{
    return bsc_buf_append_json_str(out, s) == BSC_OK || fail(c, CANON_REFUSED);
}

static bool string_value(struct canon *c, const struct bsc_jtok *tok, struct bsc_buf *out)
{
    struct bsc_buf dec;
    bool ok;

    if (!tok->escaped)
        return string_encode(c, tok->raw, out);
    bsc_buf_init(&dec, out->max);
    ok = string_decode(c, tok, &dec) && string_encode(c, bsc_buf_str(&dec), out);
    bsc_buf_cleanup(&dec);
    return ok;
}

static bool array(struct canon *c, struct bsc_buf *out)
{
    struct bsc_jtok tok;

    if (bsc_buf_append_char(out, '[') != BSC_OK)
        return fail(c, CANON_REFUSED);
    for (;;) {
        if (!next(c, &tok))
            return false;
        if (tok.kind == BSC_JTOK_ARR_CLOSE)
            return bsc_buf_append_char(out, ']') == BSC_OK || fail(c, CANON_REFUSED);
        if (tok.kind == BSC_JTOK_COMMA) {
            if (bsc_buf_append_char(out, ',') != BSC_OK)
                return fail(c, CANON_REFUSED);
            if (!next(c, &tok))
                return false;
        }
        if (!value(c, &tok, out, NULL, 0))
            return false;
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

/* Reads one "name": value, its name token <tok> read, into <scr>; adds it to <ms>. */
static bool member(struct canon *c, struct bsc_jtok *tok, struct bsc_buf *scr,
                   struct members *ms, const char *const *skip, size_t n_skip)
{
    struct member m = {.name = scr->len};

    if (!string_decode(c, tok, scr))
        return false;
    m.name_len = scr->len - m.name;
    m.text = scr->len;
    /* The name is encoded from the scratch buffer into itself: room first, so the append
     * never moves the bytes it reads (at most 6 bytes per byte, \u00XX, and the quotes). */
    if (bsc_buf_reserve(scr, m.name_len * 6 + 2) != BSC_OK)
        return fail(c, CANON_REFUSED);
    if (!string_encode(c, bsc_str_make(scr->p + m.name, m.name_len), scr))
        return false;
    if (!next(c, tok) || !next(c, tok)) /* the ':' (the grammar's), then the value */
        return false;
    if (bsc_buf_append_char(scr, ':') != BSC_OK)
        return fail(c, CANON_REFUSED);
    if (!value(c, tok, scr, NULL, 0))
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
    struct bsc_jtok tok;

    for (;;) {
        if (!next(c, &tok))
            return false;
        if (tok.kind == BSC_JTOK_OBJ_CLOSE)
            return true;
        if (tok.kind == BSC_JTOK_COMMA && !next(c, &tok))
            return false;
        if (!member(c, &tok, scr, ms, skip, n_skip))
            return false;
    }
}

static bool object(struct canon *c, struct bsc_buf *out, const char *const *skip, size_t n_skip)
{
    struct bsc_buf scr;
    struct members ms = {0};
    bool ok;

    bsc_buf_init(&scr, out->max);
    ok = members_loop(c, &scr, &ms, skip, n_skip) && emit_members(c, &scr, &ms, out);
    free(ms.m);
    bsc_buf_cleanup(&scr);
    return ok;
}

/* The value that begins with the token <tok>; the skip list applies to the top level only.
 * Values are at most CANON_MAX_DEPTH levels deep, the top one at level 1. */
static bool value(struct canon *c, struct bsc_jtok *tok, struct bsc_buf *out,
                  const char *const *skip, size_t n_skip)
{
    if (tok->depth >= CANON_MAX_DEPTH)
        return fail(c, CANON_REFUSED);
    switch (tok->kind) {
    case BSC_JTOK_OBJ_OPEN: return object(c, out, skip, n_skip);
    case BSC_JTOK_ARR_OPEN: return array(c, out);
    case BSC_JTOK_STRING: return string_value(c, tok, out);
    case BSC_JTOK_NUMBER: /* copied as written: 1.0 and 1 are two keys */
    case BSC_JTOK_TRUE:
    case BSC_JTOK_FALSE:
    case BSC_JTOK_NULL:
        return bsc_buf_append_str(out, tok->raw) == BSC_OK || fail(c, CANON_REFUSED);
    default: return fail(c, CANON_INVALID); /* the grammar never gets here */
    }
}

enum canon_result canon_request(struct bsc_str body, const char *const *skip, size_t n_skip,
                                struct bsc_buf *out)
{
    struct canon c = {.err = CANON_OK};
    struct bsc_jtok tok;

    if (!body.p)
        return CANON_INVALID;
    /* One container more than value() allows, so that value() says why: CANON_REFUSED. */
    bsc_json_tok_init(&c.t, body, CANON_MAX_DEPTH + 1);
    if (next(&c, &tok) && value(&c, &tok, out, skip, n_skip))
        next(&c, &tok); /* the end, or what follows the value */
    return c.err;
}
