/* SPDX-License-Identifier: MIT */
/* json_tok.c -- the tokenizer: a state (what may come next) and an explicit stack of the open
 * containers (a bit each: object or array), so depth costs 1 bit, not a C stack frame. The
 * error wording is the request check's (json_check.h), which tests and clients see. */
#include "core/json_tok.h"

#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "core/utf8.h"

/* The per-token helpers are inlined into both entry points (bsc_json_tok_next and
 * bsc_json_tok_skip): in the skip loop the token a step fills is a local nobody reads, so
 * inlined, its stores go away. */
#define TOK_INLINE static inline __attribute__((always_inline))

/* What may come next. */
enum {
    ST_TOP = 0,    /* the document's value */
    ST_VALUE,      /* a value: after ':' or after ',' in an array */
    ST_ARR_FIRST,  /* after '[': a value or ']' */
    ST_OBJ_FIRST,  /* after '{': a name or '}' */
    ST_NAME,       /* after ',' in an object: a name */
    ST_COLON,      /* after a name */
    ST_AFTER,      /* after a value inside a container: ',' or the closer */
    ST_TAIL,       /* after the document's value: only whitespace */
    ST_END,
    ST_ERROR
};

/* JSON whitespace: space, tab, line feed, carriage return. */
static const bool ws_byte[256] = {[' '] = true, ['\t'] = true, ['\n'] = true, ['\r'] = true};

/* Indentation comes in runs of spaces: after a whitespace byte, the spaces that follow are
 * counted eight bytes at a time (on a little-endian machine the first byte that is not a
 * space is the lowest nonzero byte of the word XOR eight spaces). */
TOK_INLINE void skip_ws(struct bsc_json_tok *t)
{
    const uint64_t spaces = 0x2020202020202020ull;
    const unsigned char *p = t->p;
    size_t i = t->i, n = t->n;
    uint64_t w;

    while (i < n && ws_byte[p[i]]) {
        i++;
        while (n - i >= 8) {
            memcpy(&w, p + i, 8);
            w ^= spaces;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            if (w) {
                i += (size_t)__builtin_ctzll(w) / 8;
                break;
            }
#else
            if (w)
                break;
#endif
            i += 8;
        }
    }
    t->i = i;
}

TOK_INLINE enum bsc_jtok_kind fail(struct bsc_json_tok *t, struct bsc_jtok *tok, const char *what)
{
    tok->end = tok->off;
    tok->raw = BSC_STR_NULL;
    t->state = ST_ERROR;
    t->what = what;
    t->err_off = t->i < t->n ? t->i : t->n;
    tok->kind = BSC_JTOK_ERROR;
    return BSC_JTOK_ERROR;
}

/* ---- strings --------------------------------------------------------------------------------- */

/* Bytes that need no attention inside a string: printable ASCII but '"' and '\\'.
 * (GNU range designators: gcc and clang both take them.) */
static const bool plain_byte[256] = {
    [0x20 ... 0x21] = true,
    [0x23 ... 0x5b] = true,
    [0x5d ... 0x7f] = true,
};

/* Eight bytes at a time (SWAR): true when any of them is a control byte, '"', '\\' or
 * not ASCII -- a byte plain_byte[] does not pass. Each term is exact: (v - 0x01..) & ~v
 * & 0x80.. is nonzero only when some byte of v is zero, (x - 0x20..) & ~x & 0x80.. only
 * when some byte is below 0x20. */
static inline bool needs_attention8(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');

    return ((((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((b - ones) & ~b) | x) & high) != 0;
}

#ifdef __SSE2__
/* Sixteen bytes at a time: the bit of each byte that is '"', '\\', below 0x20, or at or
 * above 0x80 (negative as a signed byte, so the signed compare with 0x20 catches both). */
static inline unsigned attention_mask16(const unsigned char *p)
{
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i m = _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')),
                             _mm_cmpeq_epi8(x, _mm_set1_epi8('\\')));

    m = _mm_or_si128(m, _mm_cmplt_epi8(x, _mm_set1_epi8(0x20)));
    return (unsigned)_mm_movemask_epi8(m);
}
#endif

/* Index of the first byte at or after <i> that plain_byte[] does not pass. */
TOK_INLINE size_t plain_run(const unsigned char *p, size_t i, size_t n)
{
    uint64_t w;

#ifdef __SSE2__
    while (n - i >= 16) {
        unsigned mask = attention_mask16(p + i);
        if (mask)
            return i + (size_t)__builtin_ctz(mask);
        i += 16;
    }
#endif
    while (n - i >= 8) {
        memcpy(&w, p + i, 8);
        if (needs_attention8(w))
            break;
        i += 8;
    }
    while (i < n && plain_byte[p[i]])
        i++;
    return i;
}

static bool is_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* The escape after a backslash at t->i; NULL when valid (t->i past it), else the error. */
TOK_INLINE const char *escape(struct bsc_json_tok *t)
{
    unsigned char e = ++t->i < t->n ? t->p[t->i] : 0;

    t->i++;
    if (e == 'u') {
        for (int k = 0; k < 4; k++, t->i++)
            if (t->i >= t->n || !is_hex(t->p[t->i]))
                return "invalid \\u escape";
        return NULL;
    }
    if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' ||
        e == 't')
        return NULL;
    t->i--;
    return "invalid escape";
}

/* The string at t->i (its opening quote); NULL when valid, else the error at t->i. */
TOK_INLINE const char *string(struct bsc_json_tok *t, bool *escaped)
{
    const unsigned char *p = t->p;
    size_t n = t->n;

    t->i++;
    while (t->i < n) {
        size_t i = plain_run(p, t->i, n); /* the common run */
        unsigned char c;

        t->i = i;
        if (i >= n)
            break;
        c = p[i];
        if (c == '"') {
            t->i = i + 1;
            return NULL;
        }
        if (c < 0x20)
            return "control character in a string";
        if (c == '\\') {
            const char *why = escape(t);
            if (why)
                return why;
            *escaped = true;
            continue;
        }
        if (c >= 0x80) {
            size_t len = bsc_utf8_seq_len(t->p + t->i, t->n - t->i);
            if (!len)
                return "invalid UTF-8";
            t->i += len;
            continue;
        }
        t->i++;
    }
    return "unterminated string";
}

/* ---- scalars --------------------------------------------------------------------------------- */

TOK_INLINE bool digits(struct bsc_json_tok *t)
{
    size_t start = t->i;

    while (t->i < t->n && t->p[t->i] >= '0' && t->p[t->i] <= '9')
        t->i++;
    return t->i > start;
}

/* RFC 8259's number at t->i: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? -- a leading
 * zero ends the number, so "01" fails on the byte after it. */
TOK_INLINE bool number(struct bsc_json_tok *t)
{
    if (t->p[t->i] == '-')
        t->i++;
    if (t->i < t->n && t->p[t->i] == '0')
        t->i++;
    else if (!digits(t))
        return false;
    if (t->i < t->n && t->p[t->i] == '.') {
        t->i++;
        if (!digits(t))
            return false;
    }
    if (t->i < t->n && (t->p[t->i] == 'e' || t->p[t->i] == 'E')) {
        t->i++;
        if (t->i < t->n && (t->p[t->i] == '+' || t->p[t->i] == '-'))
            t->i++;
        if (!digits(t))
            return false;
    }
    return true;
}

TOK_INLINE bool literal(struct bsc_json_tok *t, const char *lit, size_t len)
{
    if (t->n - t->i < len || memcmp(t->p + t->i, lit, len) != 0)
        return false;
    t->i += len;
    return true;
}

/* ---- structure ------------------------------------------------------------------------------- */

TOK_INLINE bool top_is_object(const struct bsc_json_tok *t)
{
    return (t->stack[(t->depth - 1) / 64] >> ((t->depth - 1) % 64)) & 1;
}

/* The state after a complete value. */
TOK_INLINE void value_done(struct bsc_json_tok *t)
{
    t->state = t->depth ? ST_AFTER : ST_TAIL;
}

TOK_INLINE enum bsc_jtok_kind emit(struct bsc_json_tok *t, struct bsc_jtok *tok,
                               enum bsc_jtok_kind kind)
{
    tok->kind = kind;
    tok->end = t->i;
    tok->raw = bsc_str_make((const char *)t->p + tok->off, t->i - tok->off);
    return kind;
}

TOK_INLINE enum bsc_jtok_kind open_container(struct bsc_json_tok *t, struct bsc_jtok *tok, bool obj)
{
    if (t->depth == t->max_depth)
        return fail(t, tok, "nested too deep");
    if (obj)
        t->stack[t->depth / 64] |= 1ull << (t->depth % 64);
    else
        t->stack[t->depth / 64] &= ~(1ull << (t->depth % 64));
    t->depth++;
    t->i++;
    t->state = obj ? ST_OBJ_FIRST : ST_ARR_FIRST;
    return emit(t, tok, obj ? BSC_JTOK_OBJ_OPEN : BSC_JTOK_ARR_OPEN);
}

TOK_INLINE enum bsc_jtok_kind close_container(struct bsc_json_tok *t, struct bsc_jtok *tok)
{
    bool obj = top_is_object(t);

    t->depth--;
    tok->depth = t->depth;
    t->i++;
    value_done(t);
    return emit(t, tok, obj ? BSC_JTOK_OBJ_CLOSE : BSC_JTOK_ARR_CLOSE);
}

/* A string at t->i: a value, or a name when <name>. */
TOK_INLINE enum bsc_jtok_kind quoted(struct bsc_json_tok *t, struct bsc_jtok *tok, bool name)
{
    const char *why;

    tok->escaped = false;
    why = string(t, &tok->escaped);
    if (why)
        return fail(t, tok, why);
    if (name)
        t->state = ST_COLON;
    else
        value_done(t);
    tok->kind = name ? BSC_JTOK_NAME : BSC_JTOK_STRING;
    tok->end = t->i;
    tok->raw = bsc_str_make((const char *)t->p + tok->off + 1, t->i - tok->off - 2);
    return tok->kind;
}

/* A value at t->i (whitespace skipped, t->i < t->n). */
TOK_INLINE enum bsc_jtok_kind value(struct bsc_json_tok *t, struct bsc_jtok *tok)
{
    enum bsc_jtok_kind kind;

    switch (t->p[t->i]) {
    case '{': return open_container(t, tok, true);
    case '[': return open_container(t, tok, false);
    case '"': return quoted(t, tok, false);
    case 't':
        if (!literal(t, "true", 4))
            return fail(t, tok, "invalid literal");
        kind = BSC_JTOK_TRUE;
        break;
    case 'f':
        if (!literal(t, "false", 5))
            return fail(t, tok, "invalid literal");
        kind = BSC_JTOK_FALSE;
        break;
    case 'n':
        if (!literal(t, "null", 4))
            return fail(t, tok, "invalid literal");
        kind = BSC_JTOK_NULL;
        break;
    default:
        if (t->p[t->i] != '-' && (t->p[t->i] < '0' || t->p[t->i] > '9'))
            return fail(t, tok, "unexpected character");
        if (!number(t))
            return fail(t, tok, "invalid number");
        kind = BSC_JTOK_NUMBER;
    }
    value_done(t);
    return emit(t, tok, kind);
}

/* After a value inside a container: ',' or the closer. */
TOK_INLINE enum bsc_jtok_kind after(struct bsc_json_tok *t, struct bsc_jtok *tok)
{
    bool obj = top_is_object(t);
    unsigned char c = t->p[t->i];

    if (c == (obj ? '}' : ']'))
        return close_container(t, tok);
    if (c != ',')
        return fail(t, tok, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    t->i++;
    t->state = obj ? ST_NAME : ST_VALUE;
    return emit(t, tok, BSC_JTOK_COMMA);
}

/* What the end of the document means in the current state. */
TOK_INLINE enum bsc_jtok_kind at_end(struct bsc_json_tok *t, struct bsc_jtok *tok)
{
    switch (t->state) {
    case ST_TOP: return fail(t, tok, "empty document");
    case ST_OBJ_FIRST:
    case ST_NAME: return fail(t, tok, "expected a member name");
    case ST_COLON: return fail(t, tok, "expected ':'");
    case ST_TAIL:
        t->state = ST_END;
        tok->kind = BSC_JTOK_END;
        return BSC_JTOK_END;
    default: return fail(t, tok, "unterminated container");
    }
}

void bsc_json_tok_init(struct bsc_json_tok *t, struct bsc_str doc, unsigned max_depth)
{
    t->p = (const unsigned char *)doc.p;
    t->n = doc.p ? doc.len : 0;
    t->i = 0;
    t->depth = 0;
    t->max_depth = max_depth < BSC_JSON_MAX_DEPTH ? max_depth : BSC_JSON_MAX_DEPTH;
    t->state = ST_TOP;
    t->quiet = false;
    t->what = NULL;
    t->err_off = 0;
}

void bsc_json_tok_quiet(struct bsc_json_tok *t)
{
    t->quiet = true;
}

/* One token: the grammar's single step, shared by both entry points. In quiet mode a ':'
 * and a ',' between members are checked and passed over, and the step goes on to the token
 * after them. */
TOK_INLINE enum bsc_jtok_kind step(struct bsc_json_tok *t, struct bsc_jtok *tok)
{
    unsigned char c;
    enum bsc_jtok_kind k;

    tok->escaped = false;
    if (t->state == ST_END || t->state == ST_ERROR) {
        tok->kind = t->state == ST_END ? BSC_JTOK_END : BSC_JTOK_ERROR;
        tok->off = tok->end = t->state == ST_END ? t->n : t->err_off;
        tok->raw = BSC_STR_NULL;
        tok->depth = t->depth;
        return tok->kind;
    }
    for (;;) {
        skip_ws(t);
        tok->off = t->i;
        tok->depth = t->depth;
        if (t->i >= t->n) {
            tok->end = t->i;
            tok->raw = BSC_STR_NULL;
            return at_end(t, tok);
        }
        c = t->p[t->i];
        switch (t->state) {
        case ST_TOP:
        case ST_VALUE: return value(t, tok);
        case ST_ARR_FIRST: return c == ']' ? close_container(t, tok) : value(t, tok);
        case ST_OBJ_FIRST:
            if (c == '}')
                return close_container(t, tok);
            /* fall through */
        case ST_NAME:
            if (c != '"')
                return fail(t, tok, "expected a member name");
            return quoted(t, tok, true);
        case ST_COLON:
            if (c != ':')
                return fail(t, tok, "expected ':'");
            t->i++;
            t->state = ST_VALUE;
            if (t->quiet)
                continue;
            return emit(t, tok, BSC_JTOK_COLON);
        case ST_AFTER:
            k = after(t, tok);
            if (k == BSC_JTOK_COMMA && t->quiet && t->state == ST_NAME)
                continue;
            return k;
        default: return fail(t, tok, "unexpected data after the JSON value"); /* ST_TAIL */
        }
    }
}

enum bsc_jtok_kind bsc_json_tok_next(struct bsc_json_tok *t, struct bsc_jtok *tok)
{
    return step(t, tok);
}

enum bsc_jtok_kind bsc_json_tok_skip(struct bsc_json_tok *t, struct bsc_jtok *tok)
{
    unsigned stop;
    bool quiet;
    struct bsc_jtok inner;

    if (t->depth == 0 || t->state == ST_END || t->state == ST_ERROR)
        return step(t, tok);
    stop = t->depth - 1;
    quiet = t->quiet;
    t->quiet = true; /* nobody sees the separators here either */
    for (;;) {
        enum bsc_jtok_kind k = step(t, &inner);

        if (k == BSC_JTOK_ERROR || k == BSC_JTOK_END ||
            ((k == BSC_JTOK_OBJ_CLOSE || k == BSC_JTOK_ARR_CLOSE) && t->depth == stop)) {
            t->quiet = quiet;
            *tok = inner;
            return k;
        }
    }
}

bool bsc_json_tok_valid(struct bsc_str doc, unsigned max_depth, const char **what,
                        size_t *off)
{
    struct bsc_json_tok t;
    struct bsc_jtok tok;
    enum bsc_jtok_kind k;

    bsc_json_tok_init(&t, doc, max_depth);
    while ((k = bsc_json_tok_next(&t, &tok)) != BSC_JTOK_END && k != BSC_JTOK_ERROR)
        ;
    if (k == BSC_JTOK_END)
        return true;
    if (what)
        *what = t.what;
    if (off)
        *off = t.err_off;
    return false;
}

/* ---- decoding -------------------------------------------------------------------------------- */

static enum bsc_err put_utf8(struct bsc_buf *out, uint32_t cp)
{
    unsigned char u[4];
    size_t n;

    if (cp < 0x80) {
        u[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (unsigned char)(0xc0 | cp >> 6);
        u[1] = (unsigned char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (unsigned char)(0xe0 | cp >> 12);
        u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        u[2] = (unsigned char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        u[0] = (unsigned char)(0xf0 | cp >> 18);
        u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
        u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        u[3] = (unsigned char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    return bsc_buf_append(out, u, n);
}

/* The 4 hex digits at <p> (checked by the tokenizer). */
static uint32_t hex4(const char *p)
{
    uint32_t v = 0;

    for (int k = 0; k < 4; k++)
        v = v << 4 | (uint32_t)bsc_hex_digit((unsigned char)p[k]);
    return v;
}

/* The \uXXXX escape at raw.p[*i] (its backslash), a surrogate pair included: its code point,
 * or -1 for a lone half. *<i> moves past it. */
static long unicode_escape(struct bsc_str raw, size_t *i)
{
    uint32_t hi = hex4(raw.p + *i + 2), lo;

    *i += 6;
    if (hi >= 0xdc00 && hi <= 0xdfff)
        return -1;
    if (hi < 0xd800 || hi > 0xdbff)
        return (long)hi;
    if (raw.len - *i < 6 || raw.p[*i] != '\\' || raw.p[*i + 1] != 'u')
        return -1;
    lo = hex4(raw.p + *i + 2);
    if (lo < 0xdc00 || lo > 0xdfff)
        return -1;
    *i += 6;
    return (long)(0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00));
}

enum bsc_err bsc_json_unescape(struct bsc_str raw, struct bsc_buf *out, size_t *bad)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    enum bsc_err err = BSC_OK;
    size_t i = 0;

    while (!err && i < raw.len) {
        const char *bs = memchr(raw.p + i, '\\', raw.len - i);
        size_t run = bs ? (size_t)(bs - raw.p) - i : raw.len - i;
        size_t next = i;
        long cp;

        if (run) {
            err = bsc_buf_append(out, raw.p + i, run);
            i += run;
            continue;
        }
        if (raw.p[i + 1] != 'u') {
            err = bsc_buf_append_char(out, to[(const char *)memchr(from, raw.p[i + 1], 8) - from]);
            i += 2;
            continue;
        }
        if ((cp = unicode_escape(raw, &next)) < 0) {
            if (bad)
                *bad = i;
            return BSC_EPARSE;
        }
        err = put_utf8(out, (uint32_t)cp);
        i = next;
    }
    return err;
}
