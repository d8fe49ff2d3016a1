/* SPDX-License-Identifier: MIT */
/* json_tok.c -- the tokenizer: a state (what may come next, a label of walk()) and an
 * explicit stack of the open containers (a bit each: object or array), so depth costs 1 bit,
 * not a C stack frame. The error wording is the request check's (json_check.h), which tests
 * and clients see. */
#include "core/json_tok.h"

#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "core/utf8.h"

/* The grammar's helpers are inlined into walk(), and walk() into both entry points
 * (bsc_json_tok_next and bsc_json_tok_skip), each with its mode a constant. */
#define TOK_INLINE static inline __attribute__((always_inline))

/* What may come next: where walk() resumes. */
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

/* The error messages: one object each, so that a caller may compare <what> by pointer. */
static const char E_NAME[] = "expected a member name", E_COLON[] = "expected ':'",
                  E_OPEN[] = "unterminated container", E_DEEP[] = "nested too deep",
                  E_LITERAL[] = "invalid literal", E_CHAR[] = "unexpected character",
                  E_NUMBER[] = "invalid number", E_AFTER_OBJ[] = "expected ',' or '}'",
                  E_AFTER_ARR[] = "expected ',' or ']'", E_EMPTY[] = "empty document",
                  E_TAIL[] = "unexpected data after the JSON value",
                  E_ELEMENT[] = "an array element that must be an object";

/* JSON whitespace: space, tab, line feed, carriage return. */
static const bool ws_byte[256] = {[' '] = true, ['\t'] = true, ['\n'] = true, ['\r'] = true};

#ifdef __SSE2__
/* Sixteen bytes at a time: the bit of each byte that is a space or a line feed (an indented
 * body's whitespace; a tab or CR is passed one at a time). */
static inline unsigned space_lf_mask16(const unsigned char *p)
{
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);

    return (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8(' ')),
                                                    _mm_cmpeq_epi8(x, _mm_set1_epi8('\n'))));
}
#endif

#ifdef __SSE2__
/* After the line break p[i] (with at least sixteen bytes after it): the index of the first
 * of them that is not a space, or the line break itself when all sixteen are spaces. */
static inline size_t indent_end(const unsigned char *p, size_t i)
{
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + i + 1));
    unsigned other = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8(' ')));

    other ^= 0xffffu;
    return other ? i + 1 + (size_t)__builtin_ctz(other) : i;
}
#endif

/* Index of the first byte at or after <i> that is not whitespace. Most calls meet a byte
 * above ' ' at once (a compact document, a value after ':'), or one space before it (": "),
 * both answered before any table or vector. An indented body's runs ("\n" and the
 * indentation) are read sixteen bytes at a time (SSE2; elsewhere a whitespace byte and the
 * spaces after it, eight at a time); within sixteen bytes of the end, byte by byte. */
TOK_INLINE size_t ws_run(const unsigned char *p, size_t i, size_t n)
{
    if (i < n && p[i] > ' ')
        return i;
    if (n - i >= 2 && p[i] == ' ' && p[i + 1] > ' ')
        return i + 1;
#ifdef __SSE2__
    if (n - i >= 17 && p[i] == '\n') { /* a line break and up to 15 spaces of indentation */
        size_t j = indent_end(p, i);

        if (p[j] > ' ')
            return j;
    }
    while (n - i >= 16) {
        unsigned other = space_lf_mask16(p + i) ^ 0xffffu;

        if (!other) {
            i += 16;
            continue;
        }
        i += (size_t)__builtin_ctz(other);
        if (!ws_byte[p[i]])
            return i;
        i++; /* a tab or CR */
    }
#else
    /* Without SSE2, the spaces after a whitespace byte are counted eight at a time (on a
     * little-endian machine the first byte that is not a space is the lowest nonzero byte
     * of the word XOR eight spaces). */
    while (i < n && ws_byte[p[i]]) {
        const uint64_t spaces = 0x2020202020202020ull;
        uint64_t w;

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
#endif
    while (i < n && ws_byte[p[i]])
        i++;
    return i;
}

/* ws_run where the whitespace is mostly a line break and indentation (after '{', '[' or
 * ',', and before a closer, in a pretty-printed body): that shape is tried before the ": "
 * one, and the answer is ws_run's. */
TOK_INLINE size_t ws_line(const unsigned char *p, size_t i, size_t n)
{
    if (i < n && p[i] > ' ')
        return i;
#ifdef __SSE2__
    if (n - i >= 17 && p[i] == '\n') {
        size_t j = indent_end(p, i);

        if (p[j] > ' ')
            return j;
    }
#endif
    return ws_run(p, i, n);
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
/* Sixteen bytes at a time: 0xff for each byte that is '"', '\\', below 0x20, or at or
 * above 0x80 (negative as a signed byte, so one signed compare catches both). */
static inline __m128i attention16(const unsigned char *p)
{
    /* x ^ 2 turns '"' (0x22) into 0x20 and moves no other byte below 0x21 (a byte below
     * 0x20 stays below it, one at or above 0x80 stays negative): one signed compare takes
     * the quote, the control bytes and the non-ASCII bytes at once. */
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i low = _mm_cmplt_epi8(_mm_xor_si128(x, _mm_set1_epi8(2)), _mm_set1_epi8(0x21));

    return _mm_or_si128(low, _mm_cmpeq_epi8(x, _mm_set1_epi8('\\')));
}

/* attention16 as a bit a byte. */
static inline unsigned attention_mask16(const unsigned char *p)
{
    return (unsigned)_mm_movemask_epi8(attention16(p));
}
#endif

/* plain_run's last bytes, fewer than sixteen (SSE2) or the whole run (elsewhere): eight at
 * a time, then byte by byte. Out of line under SSE2: a string rarely ends within sixteen
 * bytes of the document's end, and inlined, its constants were set up for every string. */
#ifdef __SSE2__
static __attribute__((noinline, cold)) size_t plain_tail(const unsigned char *p, size_t i, size_t n)
#else
TOK_INLINE size_t plain_tail(const unsigned char *p, size_t i, size_t n)
#endif
{
    uint64_t w;

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

/* Index of the first byte at or after <i> that plain_byte[] does not pass. */
TOK_INLINE size_t plain_run(const unsigned char *p, size_t i, size_t n)
{
#ifdef __SSE2__
    if (n - i >= 16) {
        unsigned mask = attention_mask16(p + i);

        if (mask) /* most strings (names, short values) end in their first sixteen bytes */
            return i + (size_t)__builtin_ctz(mask);
        i += 16;
        /* A long run: thirty-two bytes a step, one mask for both halves. */
        while (n - i >= 32) {
            __m128i m = _mm_or_si128(attention16(p + i), attention16(p + i + 16));

            if (_mm_movemask_epi8(m))
                break;
            i += 32;
        }
        while (n - i >= 16) {
            mask = attention_mask16(p + i);
            if (mask)
                return i + (size_t)__builtin_ctz(mask);
            i += 16;
        }
    }
#endif
    return plain_tail(p, i, n);
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

/* Opens a container at depth <d> in <stack>: its bit says object (set) or array. */
TOK_INLINE void push(uint64_t *stack, unsigned d, bool obj)
{
    if (obj)
        stack[d / 64] |= 1ull << (d % 64);
    else
        stack[d / 64] &= ~(1ull << (d % 64));
}

/* Whether the innermost of <depth> (>= 1) open containers is an object. */
TOK_INLINE bool is_object(const uint64_t *stack, unsigned depth)
{
    return (stack[(depth - 1) / 64] >> ((depth - 1) % 64)) & 1;
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

/* What walk() does (a constant at each of its call sites). */
enum walk_mode {
    WALK_TOKENS = 0, /* hand out each token */
    WALK_SKIP,       /* hand out only the closer of the innermost open container */
    WALK_OBJECTS,    /* WALK_SKIP of an array whose elements must each be an object */
    WALK_MEMBER,     /* WALK_TOKENS, quiet, a member's name kept aside with its value */
};

/* Hands out the token <kind> of the bytes [<start>, <i>) at <depth> and leaves the
 * tokenizer at <i> in <state> with <open> containers open. */
TOK_INLINE enum bsc_jtok_kind give(struct bsc_json_tok *t, struct bsc_jtok *tok,
                                   enum bsc_jtok_kind kind, size_t start, size_t i,
                                   unsigned depth, unsigned open, uint8_t state)
{
    t->i = i;
    t->depth = open;
    t->state = state;
    tok->kind = kind;
    tok->off = start;
    tok->end = i;
    tok->raw = bsc_str_make((const char *)t->p + start, i - start);
    tok->escaped = false;
    tok->depth = depth;
    return kind;
}

/* give() for a string [<start>, <i>), quotes included: <raw> is what is between them. */
TOK_INLINE enum bsc_jtok_kind give_string(struct bsc_json_tok *t, struct bsc_jtok *tok,
                                          enum bsc_jtok_kind kind, size_t start, size_t i,
                                          unsigned depth, uint8_t state, bool escaped)
{
    give(t, tok, kind, start, i, depth, depth, state);
    tok->raw = bsc_str_make((const char *)t->p + start + 1, i - start - 2);
    tok->escaped = escaped;
    return kind;
}

/* The grammar, written once: what may come next is a label of this loop, and the index,
 * depth and innermost container's kind stay in registers from one token to the next.
 * Inlined into each entry point with its <mode> a constant:
 *  - token by token (bsc_json_tok_next): each token is handed out where it ends, and the
 *    state saved is the label to come back to (in quiet mode the ':' and the ',' between
 *    an object's members are checked and passed);
 *  - member (bsc_json_tok_member): token by token in quiet mode, but a name is kept aside
 *    in *<name> and the walk goes on through its ':' to the value, handed out instead;
 *  - skip (bsc_json_tok_skip): nothing is handed out until the closer that brings the
 *    depth back below where the skip began, or the error; with WALK_OBJECTS
 *    (bsc_json_tok_skip_objects) an element of the skipped array that begins with anything
 *    but '{' is an error too, looked at before the grammar looks at the element.
 * At the end of the document each label has its own message (the state's), and an error
 * leaves the token and the tokenizer the same in both modes: the unit test and
 * fuzz_json_tok compare a skip with reading token by token from every state. */
TOK_INLINE enum bsc_jtok_kind walk(struct bsc_json_tok *t, struct bsc_jtok *tok,
                                   enum walk_mode mode, struct bsc_jtok *name)
{
    const bool skip = mode == WALK_SKIP || mode == WALK_OBJECTS;
    const unsigned char *p = t->p;
    size_t n = t->n, i = t->i, start = t->i;
    unsigned depth = t->depth, stop = depth - 1; /* <stop>: where a skip ends */
    enum bsc_jtok_kind kind;
    const char *why;
    bool escaped = false, esc;        /* <escaped>: the failing token's, as a string has it */
    bool quiet = skip || mode == WALK_MEMBER || t->quiet; /* ':' and ',' between members? */
    bool obj = depth && is_object(t->stack, depth); /* the innermost container's kind */

    switch (t->state) {
    case ST_TOP:
    case ST_VALUE: goto value;
    case ST_ARR_FIRST: goto arr_first;
    case ST_OBJ_FIRST: goto obj_first;
    case ST_NAME: goto name;
    case ST_COLON: goto colon;
    case ST_AFTER: goto after;
    case ST_TAIL: goto tail;
    default: goto stuck; /* ST_END, ST_ERROR */
    }

obj_first: /* after '{': a name or '}' */
    start = i = ws_line(p, i, n);
    if (i < n && p[i] == '}')
        goto close;
    goto name_here;
name: /* after ',' in an object */
    start = i = ws_line(p, i, n);
name_here:
    if (i >= n || p[i] != '"') {
        why = E_NAME;
        goto fail;
    }
    esc = false;
    if ((why = scan_string(p, n, &i, &esc)))
        goto fail_string;
    if (mode == WALK_TOKENS)
        return give_string(t, tok, BSC_JTOK_NAME, start, i, depth, ST_COLON, esc);
    if (mode == WALK_MEMBER) { /* kept aside; the token handed out is the value's */
        name->kind = BSC_JTOK_NAME;
        name->off = start;
        name->end = i;
        name->raw = bsc_str_make((const char *)p + start + 1, i - start - 2);
        name->escaped = esc;
        name->depth = depth;
    }
colon: /* the ':' mostly follows its name at once: looked for before any whitespace */
    start = i;
    if (i >= n || p[i] != ':') {
        start = i = ws_run(p, i, n);
        if (i >= n || p[i] != ':') {
            why = E_COLON;
            goto fail;
        }
    }
    i++;
    if (!quiet)
        return give(t, tok, BSC_JTOK_COLON, start, i, depth, depth, ST_VALUE);
value: /* the document's value, after ':', or after ',' in an array */
    start = i = ws_run(p, i, n);
value_here:
    if (i >= n) {
        why = depth ? E_OPEN : E_EMPTY;
        goto fail;
    }
    if (mode == WALK_OBJECTS && depth == stop + 1 && p[i] != '{') {
        why = E_ELEMENT; /* an element of the skipped array (no other value is at this depth) */
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
        if (!skip)
            return give(t, tok, obj ? BSC_JTOK_OBJ_OPEN : BSC_JTOK_ARR_OPEN, start, i,
                        depth - 1, depth, obj ? ST_OBJ_FIRST : ST_ARR_FIRST);
        if (obj)
            goto obj_first;
        goto arr_first;
    case '"':
        esc = false;
        if ((why = scan_string(p, n, &i, &esc)))
            goto fail_string;
        if (!skip)
            return give_string(t, tok, BSC_JTOK_STRING, start, i, depth,
                               depth ? ST_AFTER : ST_TAIL, esc);
        break;
    default:
        if ((why = scan_scalar(p, n, &i, &kind)))
            goto fail;
        if (!skip)
            return give(t, tok, kind, start, i, depth, depth, depth ? ST_AFTER : ST_TAIL);
    }
after: /* after a value in a container: ',' (mostly at once) or the closer */
    start = i;
    if (i >= n || p[i] != ',') {
        start = i = ws_line(p, i, n);
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
    if (obj) {
        if (!quiet)
            return give(t, tok, BSC_JTOK_COMMA, start, i, depth, depth, ST_NAME);
        goto name;
    }
    if (!skip) /* an array's ',' is handed out even in quiet mode */
        return give(t, tok, BSC_JTOK_COMMA, start, i, depth, depth, ST_VALUE);
    start = i = ws_line(p, i, n); /* the next element, mostly on its own line */
    goto value_here;
arr_first: /* after '[': a value or ']' */
    start = i = ws_line(p, i, n);
    if (i < n && p[i] == ']')
        goto close;
    goto value_here;
close: /* p[i] closes the innermost container, an object when <obj> */
    depth--;
    i++;
    if (!skip || depth == stop)
        return give(t, tok, obj ? BSC_JTOK_OBJ_CLOSE : BSC_JTOK_ARR_CLOSE, start, i, depth,
                    depth, depth ? ST_AFTER : ST_TAIL);
    obj = is_object(t->stack, depth);
    goto after;
tail: /* after the document's value: only whitespace */
    start = i = ws_run(p, i, n);
    if (i < n) {
        why = E_TAIL;
        goto fail;
    }
    give(t, tok, BSC_JTOK_END, i, i, depth, depth, ST_END);
    tok->raw = BSC_STR_NULL;
    return BSC_JTOK_END;
stuck: /* END and ERROR are sticky */
    tok->kind = t->state == ST_END ? BSC_JTOK_END : BSC_JTOK_ERROR;
    tok->off = tok->end = t->state == ST_END ? t->n : t->err_off;
    tok->raw = BSC_STR_NULL;
    tok->escaped = false;
    tok->depth = t->depth;
    return tok->kind;
fail_string:
    escaped = esc;
fail:
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

enum bsc_jtok_kind bsc_json_tok_next(struct bsc_json_tok *t, struct bsc_jtok *tok)
{
    return walk(t, tok, WALK_TOKENS, NULL);
}

enum bsc_jtok_kind bsc_json_tok_member(struct bsc_json_tok *t, struct bsc_jtok *tok,
                                       struct bsc_jtok *name)
{
    name->kind = BSC_JTOK_END;
    return walk(t, tok, WALK_MEMBER, name);
}

enum bsc_jtok_kind bsc_json_tok_skip(struct bsc_json_tok *t, struct bsc_jtok *tok)
{
    if (t->depth == 0 || t->state == ST_END || t->state == ST_ERROR)
        return walk(t, tok, WALK_TOKENS, NULL);
    return walk(t, tok, WALK_SKIP, NULL);
}

enum bsc_jtok_kind bsc_json_tok_skip_objects(struct bsc_json_tok *t, struct bsc_jtok *tok,
                                             bool *element)
{
    enum bsc_jtok_kind k;

    *element = false;
    if (t->state != ST_ARR_FIRST)
        return bsc_json_tok_skip(t, tok);
    k = walk(t, tok, WALK_OBJECTS, NULL);
    *element = k == BSC_JTOK_ERROR && t->what == E_ELEMENT;
    return k;
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
