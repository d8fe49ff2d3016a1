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

/* The messages both readers (the token step and the container skipper) give: one object
 * each, so a caller may compare <what> by pointer. */
static const char E_NAME[] = "expected a member name", E_COLON[] = "expected ':'",
                  E_OPEN[] = "unterminated container", E_DEEP[] = "nested too deep",
                  E_LITERAL[] = "invalid literal", E_CHAR[] = "unexpected character",
                  E_NUMBER[] = "invalid number", E_AFTER_OBJ[] = "expected ',' or '}'",
                  E_AFTER_ARR[] = "expected ',' or ']'";

/* JSON whitespace: space, tab, line feed, carriage return. */
static const bool ws_byte[256] = {[' '] = true, ['\t'] = true, ['\n'] = true, ['\r'] = true};

/* Indentation comes in runs of spaces: after a whitespace byte, the spaces that follow are
 * counted eight bytes at a time (on a little-endian machine the first byte that is not a
 * space is the lowest nonzero byte of the word XOR eight spaces). */
TOK_INLINE size_t ws_run(const unsigned char *p, size_t i, size_t n)
{
    const uint64_t spaces = 0x2020202020202020ull;
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
    return i;
}

TOK_INLINE void skip_ws(struct bsc_json_tok *t)
{
    t->i = ws_run(t->p, t->i, t->n);
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

/* The escape after the backslash at p[*pi]; NULL when valid (*pi past it), else the error
 * with *pi at the offending byte (which may be <n>, or <n> + 1 for a backslash at the end:
 * the caller's error offset clamps to <n>). */
TOK_INLINE const char *escape(const unsigned char *p, size_t n, size_t *pi)
{
    size_t i = *pi;
    unsigned char e = ++i < n ? p[i] : 0;

    i++;
    if (e == 'u') {
        for (int k = 0; k < 4; k++, i++)
            if (i >= n || !is_hex(p[i])) {
                *pi = i;
                return "invalid \\u escape";
            }
        *pi = i;
        return NULL;
    }
    if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' ||
        e == 't') {
        *pi = i;
        return NULL;
    }
    *pi = i - 1;
    return "invalid escape";
}

/* The string whose opening quote is p[*pi]; NULL when valid (*pi past its closing quote),
 * else the error with *pi at the first offending byte. *<escaped> is set once a valid
 * escape was passed. Written for an index in a register: both the token step and the
 * container skipper call it. */
TOK_INLINE const char *scan_string(const unsigned char *p, size_t n, size_t *pi, bool *escaped)
{
    size_t i = *pi + 1;

    for (;;) {
        unsigned char c;
        size_t len;
        const char *why;

        i = plain_run(p, i, n); /* the common run */
        if (i >= n)
            break;
        c = p[i];
        if (c == '"') {
            *pi = i + 1;
            return NULL;
        }
        if (c == '\\') {
            if ((why = escape(p, n, &i))) {
                *pi = i;
                return why;
            }
            *escaped = true;
            continue;
        }
        if (c < 0x20) {
            *pi = i;
            return "control character in a string";
        }
        /* c >= 0x80: plain_run stops on nothing else */
        if (!(len = bsc_utf8_seq_len(p + i, n - i))) {
            *pi = i;
            return "invalid UTF-8";
        }
        i += len;
    }
    *pi = i;
    return "unterminated string";
}

TOK_INLINE const char *string(struct bsc_json_tok *t, bool *escaped)
{
    return scan_string(t->p, t->n, &t->i, escaped);
}

/* ---- scalars --------------------------------------------------------------------------------- */

TOK_INLINE bool digits(const unsigned char *p, size_t n, size_t *pi)
{
    size_t i = *pi, start = i;

    while (i < n && p[i] >= '0' && p[i] <= '9')
        i++;
    *pi = i;
    return i > start;
}

/* RFC 8259's number at p[*pi]: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? -- a leading
 * zero ends the number, so "01" fails on the byte after it. *pi ends past it, or where it
 * stopped when false. */
TOK_INLINE bool scan_number(const unsigned char *p, size_t n, size_t *pi)
{
    size_t i = *pi;
    bool ok = true;

    if (p[i] == '-')
        i++;
    if (i < n && p[i] == '0')
        i++;
    else if (!digits(p, n, &i))
        ok = false;
    if (ok && i < n && p[i] == '.') {
        i++;
        ok = digits(p, n, &i);
    }
    if (ok && i < n && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        if (i < n && (p[i] == '+' || p[i] == '-'))
            i++;
        ok = digits(p, n, &i);
    }
    *pi = i;
    return ok;
}

/* The literal <lit> (<len> bytes) at p[*pi]: true with *pi past it; false, *pi unmoved. */
TOK_INLINE bool scan_literal(const unsigned char *p, size_t n, size_t *pi, const char *lit,
                             size_t len)
{
    if (n - *pi < len || memcmp(p + *pi, lit, len) != 0)
        return false;
    *pi += len;
    return true;
}

/* The scalar at p[*pi] (not a string): a literal or a number. NULL with *<kind> set and *pi
 * past it, or the error with *pi where it was found. */
TOK_INLINE const char *scan_scalar(const unsigned char *p, size_t n, size_t *pi,
                                   enum bsc_jtok_kind *kind)
{
    switch (p[*pi]) {
    case 't':
        *kind = BSC_JTOK_TRUE;
        return scan_literal(p, n, pi, "true", 4) ? NULL : E_LITERAL;
    case 'f':
        *kind = BSC_JTOK_FALSE;
        return scan_literal(p, n, pi, "false", 5) ? NULL : E_LITERAL;
    case 'n':
        *kind = BSC_JTOK_NULL;
        return scan_literal(p, n, pi, "null", 4) ? NULL : E_LITERAL;
    default:
        *kind = BSC_JTOK_NUMBER;
        if (p[*pi] != '-' && (p[*pi] < '0' || p[*pi] > '9'))
            return E_CHAR;
        return scan_number(p, n, pi) ? NULL : E_NUMBER;
    }
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
        return fail(t, tok, E_DEEP);
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
    const char *why;

    switch (t->p[t->i]) {
    case '{': return open_container(t, tok, true);
    case '[': return open_container(t, tok, false);
    case '"': return quoted(t, tok, false);
    default:
        if ((why = scan_scalar(t->p, t->n, &t->i, &kind)))
            return fail(t, tok, why);
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
        return fail(t, tok, obj ? E_AFTER_OBJ : E_AFTER_ARR);
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
    case ST_NAME: return fail(t, tok, E_NAME);
    case ST_COLON: return fail(t, tok, E_COLON);
    case ST_TAIL:
        t->state = ST_END;
        tok->kind = BSC_JTOK_END;
        return BSC_JTOK_END;
    default: return fail(t, tok, E_OPEN);
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
                return fail(t, tok, E_NAME);
            return quoted(t, tok, true);
        case ST_COLON:
            if (c != ':')
                return fail(t, tok, E_COLON);
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

/* Opens a container at depth <d> in <stack>: its bit says object (set) or array. */
TOK_INLINE void push(uint64_t *stack, unsigned d, bool obj)
{
    if (obj)
        stack[d / 64] |= 1ull << (d % 64);
    else
        stack[d / 64] &= ~(1ull << (d % 64));
}

TOK_INLINE bool is_object(const uint64_t *stack, unsigned depth)
{
    return (stack[(depth - 1) / 64] >> ((depth - 1) % 64)) & 1;
}

/* The container skipper: the grammar of step() again, as one loop whose states are labels,
 * with the index and depth in registers and no token stored -- what a skip costs is the
 * bytes, not a dispatch and a token per value. It must accept and refuse exactly what
 * step() does, with the same message, offsets and final state: the unit test and
 * fuzz_json_tok compare the two from every position inside a container. The string,
 * number and literal rules are step()'s own helpers; what is written twice is only where
 * a name, ':' , ',' or a closer may stand, and the end-of-document message of each state
 * (at_end). */
enum bsc_jtok_kind bsc_json_tok_skip(struct bsc_json_tok *t, struct bsc_jtok *tok)
{
    const unsigned char *p = t->p;
    size_t n = t->n, i = t->i, start = t->i;
    unsigned depth = t->depth, stop;
    enum bsc_jtok_kind kind;
    const char *why;
    bool escaped = false, esc; /* <escaped>: the failing token's, as step() has it */
    bool obj;                  /* the innermost open container is an object */

    if (depth == 0 || t->state == ST_END || t->state == ST_ERROR)
        return step(t, tok);
    stop = depth - 1;
    obj = is_object(t->stack, depth);
    switch (t->state) {
    case ST_VALUE: goto value;
    case ST_ARR_FIRST: goto arr_first;
    case ST_OBJ_FIRST: goto obj_first;
    case ST_NAME: goto name;
    case ST_COLON: goto colon;
    default: goto after; /* ST_AFTER */
    }

obj_first: /* after '{': a name or '}' */
    start = i = ws_run(p, i, n);
    if (i < n && p[i] == '}')
        goto close;
    goto name_here;
name: /* after ',' in an object */
    start = i = ws_run(p, i, n);
name_here:
    if (i >= n || p[i] != '"') {
        why = E_NAME;
        goto fail;
    }
    esc = false;
    if ((why = scan_string(p, n, &i, &esc)))
        goto fail_string;
colon: /* the ':' mostly follows its name at once: looked for before any whitespace */
    if (i >= n || p[i] != ':') {
        start = i = ws_run(p, i, n);
        if (i >= n || p[i] != ':') {
            why = E_COLON;
            goto fail;
        }
    }
    i++;
value: /* after ':' or after ',' in an array */
    start = i = ws_run(p, i, n);
value_here:
    if (i >= n) {
        why = E_OPEN;
        goto fail;
    }
    switch (p[i]) {
    case '{':
    case '[':
        if (depth == t->max_depth) {
            why = E_DEEP;
            goto fail;
        }
        obj = p[i] == '{';
        push(t->stack, depth++, obj);
        i++;
        if (obj)
            goto obj_first;
        goto arr_first;
    case '"':
        esc = false;
        if ((why = scan_string(p, n, &i, &esc)))
            goto fail_string;
        break;
    default:
        if ((why = scan_scalar(p, n, &i, &kind)))
            goto fail;
    }
after: /* after a value: ',' or the closer (a ',' mostly at once) */
    if (i >= n || p[i] != ',') {
        start = i = ws_run(p, i, n);
        if (i >= n) {
            why = E_OPEN;
            goto fail;
        }
        if (p[i] == (obj ? '}' : ']'))
            goto close;
        if (p[i] != ',') {
            why = obj ? E_AFTER_OBJ : E_AFTER_ARR;
            goto fail;
        }
    }
    i++;
    if (obj)
        goto name;
    goto value;
arr_first: /* after '[': a value or ']' */
    start = i = ws_run(p, i, n);
    if (i < n && p[i] == ']')
        goto close;
    goto value_here;
close: /* p[i] closes the innermost container, an object when <obj> */
    depth--;
    i++;
    if (depth != stop) {
        obj = is_object(t->stack, depth);
        goto after;
    }
    t->i = i;
    t->depth = depth;
    t->state = depth ? ST_AFTER : ST_TAIL;
    tok->kind = obj ? BSC_JTOK_OBJ_CLOSE : BSC_JTOK_ARR_CLOSE;
    tok->off = start;
    tok->end = i;
    tok->raw = bsc_str_make((const char *)p + start, 1);
    tok->escaped = false;
    tok->depth = depth;
    return tok->kind;
fail_string:
    escaped = esc;
fail: /* as fail() would leave the token and the tokenizer */
    t->i = i;
    t->depth = depth;
    t->state = ST_ERROR;
    t->what = why;
    t->err_off = i < n ? i : n;
    tok->kind = BSC_JTOK_ERROR;
    tok->off = tok->end = start;
    tok->raw = BSC_STR_NULL;
    tok->escaped = escaped;
    tok->depth = depth;
    return BSC_JTOK_ERROR;
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
