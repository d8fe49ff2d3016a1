/* SPDX-License-Identifier: MIT */
/* jsonschema_regex.c -- "pattern" and patternProperties: a subset of ECMA-262 regular
 * expressions (the dialect JSON Schema names), matched over code points, compiled to a Thompson
 * automaton and run as a state-set simulation. There is no backtracking, so a search costs at
 * most (string length x automaton states), whatever the pattern; an explicit budget bounds it
 * further. Constructs whose meaning we would get wrong (lookaround, backreferences, \p{...}) are
 * refused at compile time rather than approximated. POSIX regcomp() is not used: its dialect
 * differs (\d is a literal d, backslash is literal in brackets) and glibc's regexec() is
 * quadratic or worse on some patterns. See docs/internals/jsonschema.md section "Patterns". */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/compat.h"
#include "contract/internal.h"

#define CP_MAX       0x10ffffu
#define REPEAT_INF   UINT32_MAX
#define NO_NODE      (-1)
#define MAX_NESTING  64 /* groups inside groups; bounds the parser's recursion */
#define STACK_STATES 256 /* automata up to this size search without a malloc */

struct range {
    uint32_t lo, hi;
};

enum op { OP_CLASS = 0, OP_SPLIT, OP_JMP, OP_BOL, OP_EOL, OP_WORDB, OP_NWORDB, OP_MATCH };

struct inst {
    uint8_t op;
    uint32_t a, b; /* CLASS: first range, count; SPLIT: both targets; JMP: target */
};

struct js_regex {
    struct inst *code; /* owned */
    uint32_t n_code;
    struct range *ranges; /* owned: every class's sorted, disjoint ranges */
    uint32_t n_ranges;
    bool bol_only; /* starts with ^: only a match starting at 0 is possible */
};

/* ---- the syntax tree ------------------------------------------------------------------------- */

enum ast_kind { A_EMPTY = 0, A_CLASS, A_CAT, A_ALT, A_REPEAT, A_ASSERT };

struct ast {
    uint8_t kind;
    uint8_t op;         /* A_ASSERT: the OP_* */
    uint32_t min, max;  /* A_REPEAT */
    int32_t child;      /* A_CAT, A_ALT: the first; A_REPEAT: the repeated node */
    int32_t next;       /* the next sibling */
    uint32_t roff, rn;  /* A_CLASS: ranges in the pool */
};

struct build {
    const unsigned char *start, *p, *end;
    struct ast *nodes;
    uint32_t n_nodes, cap_nodes;
    struct range *pool; /* finished classes */
    uint32_t n_pool, cap_pool;
    struct range *tmp;  /* the class being built */
    uint32_t n_tmp, cap_tmp;
    unsigned depth;
    bool icase; /* JS_REGEX_ICASE: every class also holds the other case of its letters */
    enum bsc_err err;
    char *why;
    size_t whylen;
};

static bool fail(struct build *b, enum bsc_err err, const char *fmt, ...) BSC_PRINTF(3, 4);

static bool fail(struct build *b, enum bsc_err err, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (b->err)
        return false;
    b->err = err;
    va_start(ap, fmt);
    n = vsnprintf(b->why, b->whylen, fmt, ap);
    va_end(ap);
    if (err != BSC_ENOMEM && n >= 0 && (size_t)n < b->whylen)
        snprintf(b->why + n, b->whylen - (size_t)n, " at byte %zu of the pattern",
                 (size_t)(b->p - b->start));
    return false;
}

static bool grow(struct build *b, void **v, uint32_t *cap, uint32_t need, size_t size)
{
    uint32_t ncap;
    void *nv;

    if (need <= *cap)
        return true;
    ncap = *cap ? *cap * 2 : 16;
    while (ncap < need)
        ncap *= 2;
    nv = realloc(*v, (size_t)ncap * size);
    if (!nv)
        return fail(b, BSC_ENOMEM, "out of memory");
    *v = nv;
    *cap = ncap;
    return true;
}

static int32_t new_node(struct build *b, enum ast_kind kind)
{
    struct ast *a;

    if (!grow(b, (void **)&b->nodes, &b->cap_nodes, b->n_nodes + 1, sizeof(*b->nodes)))
        return NO_NODE;
    a = &b->nodes[b->n_nodes];
    memset(a, 0, sizeof(*a));
    a->kind = (uint8_t)kind;
    a->child = NO_NODE;
    a->next = NO_NODE;
    return (int32_t)b->n_nodes++;
}

/* ---- classes --------------------------------------------------------------------------------- */

static const struct range set_digit[] = {{'0', '9'}};
static const struct range set_word[] = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
/* ECMA-262 WhiteSpace and LineTerminator. */
static const struct range set_space[] = {
    {0x09, 0x0d}, {0x20, 0x20},     {0xa0, 0xa0},     {0x1680, 0x1680}, {0x2000, 0x200a},
    {0x2028, 0x2029}, {0x202f, 0x202f}, {0x205f, 0x205f}, {0x3000, 0x3000}, {0xfeff, 0xfeff},
};
static const struct range set_newline[] = {{0x0a, 0x0a}, {0x0d, 0x0d}, {0x2028, 0x2029}};

static bool tmp_add(struct build *b, uint32_t lo, uint32_t hi)
{
    if (!grow(b, (void **)&b->tmp, &b->cap_tmp, b->n_tmp + 1, sizeof(*b->tmp)))
        return false;
    b->tmp[b->n_tmp++] = (struct range){lo, hi};
    return true;
}

/* Adds the sorted set <s> (or its complement) to the class being built. */
static bool tmp_add_set(struct build *b, const struct range *s, size_t n, bool negate)
{
    uint32_t next = 0;

    if (!negate) {
        for (size_t i = 0; i < n; i++)
            if (!tmp_add(b, s[i].lo, s[i].hi))
                return false;
        return true;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i].lo > next && !tmp_add(b, next, s[i].lo - 1))
            return false;
        next = s[i].hi + 1;
    }
    return next > CP_MAX || tmp_add(b, next, CP_MAX);
}

static int range_cmp(const void *x, const void *y)
{
    const struct range *a = x, *c = y;

    return a->lo < c->lo ? -1 : a->lo > c->lo;
}

/* Simple case pairs for JS_REGEX_ICASE: code points lo..hi match themselves + delta. Letters
 * of ASCII, Latin-1, Greek and Cyrillic; other scripts and special foldings (final sigma, the
 * Kelvin sign, dotless i) are left alone rather than half-done. */
static const struct {
    uint32_t lo, hi;
    int32_t delta;
} fold_pairs[] = {
    {0x41, 0x5a, 32},    {0x61, 0x7a, -32},   {0xc0, 0xd6, 32},    {0xd8, 0xde, 32},
    {0xe0, 0xf6, -32},   {0xf8, 0xfe, -32},   {0xff, 0xff, 0x79},  {0x178, 0x178, -0x79},
    {0x391, 0x3a1, 32},  {0x3a3, 0x3ab, 32},  {0x3b1, 0x3c1, -32}, {0x3c3, 0x3cb, -32},
    {0x400, 0x40f, 80},  {0x410, 0x42f, 32},  {0x430, 0x44f, -32}, {0x450, 0x45f, -80},
};

/* Adds the other case of every letter in the class being built (before any complement, so
 * that [^a] also refuses 'A'). */
static bool fold_class(struct build *b)
{
    uint32_t n = b->n_tmp;

    for (uint32_t i = 0; i < n; i++) {
        for (size_t k = 0; k < BSC_ARRAY_LEN(fold_pairs); k++) {
            uint32_t lo = b->tmp[i].lo > fold_pairs[k].lo ? b->tmp[i].lo : fold_pairs[k].lo;
            uint32_t hi = b->tmp[i].hi < fold_pairs[k].hi ? b->tmp[i].hi : fold_pairs[k].hi;

            if (lo <= hi && !tmp_add(b, (uint32_t)((int32_t)lo + fold_pairs[k].delta),
                                     (uint32_t)((int32_t)hi + fold_pairs[k].delta)))
                return false;
        }
    }
    return true;
}

/* Sorts and merges the class being built, complements it when <negate>, moves it to the pool
 * and returns a class node. */
static int32_t finish_class(struct build *b, bool negate)
{
    uint32_t n = 0, off;
    int32_t node;

    if (b->icase && !fold_class(b))
        return NO_NODE;
    if (b->n_tmp)
        qsort(b->tmp, b->n_tmp, sizeof(*b->tmp), range_cmp);
    for (uint32_t i = 0; i < b->n_tmp; i++) {
        if (n && b->tmp[i].lo <= b->tmp[n - 1].hi + 1) {
            if (b->tmp[i].hi > b->tmp[n - 1].hi)
                b->tmp[n - 1].hi = b->tmp[i].hi;
        } else {
            b->tmp[n++] = b->tmp[i];
        }
    }
    b->n_tmp = 0;
    off = b->n_pool;
    if (negate) {
        /* The merged ranges are both input and output: copy them out of the way first. */
        struct range *copy = malloc((n ? n : 1) * sizeof(*copy));

        if (!copy) {
            fail(b, BSC_ENOMEM, "out of memory");
            return NO_NODE;
        }
        if (n)
            memcpy(copy, b->tmp, n * sizeof(*copy));
        if (!tmp_add_set(b, copy, n, true)) {
            free(copy);
            return NO_NODE;
        }
        free(copy);
        n = b->n_tmp;
        b->n_tmp = 0;
    }
    if (!grow(b, (void **)&b->pool, &b->cap_pool, b->n_pool + n, sizeof(*b->pool)))
        return NO_NODE;
    if (n)
        memcpy(b->pool + b->n_pool, b->tmp, n * sizeof(*b->tmp));
    b->n_pool += n;
    node = new_node(b, A_CLASS);
    if (node != NO_NODE) {
        b->nodes[node].roff = off;
        b->nodes[node].rn = n;
    }
    return node;
}

static int32_t single(struct build *b, uint32_t cp)
{
    if (!tmp_add(b, cp, cp))
        return NO_NODE;
    return finish_class(b, false);
}

/* ---- escapes --------------------------------------------------------------------------------- */

static bool at_end(const struct build *b)
{
    return b->p >= b->end;
}

/* Reads exactly <n> hex digits. */
static bool hex_n(struct build *b, int n, uint32_t *out)
{
    uint32_t v = 0;

    if (b->end - b->p < n)
        return fail(b, BSC_EINVAL, "truncated hex escape");
    for (int i = 0; i < n; i++) {
        int h = bsc_hex_digit(b->p[i]);

        if (h < 0)
            return fail(b, BSC_EINVAL, "bad hex escape");
        v = v << 4 | (uint32_t)h;
    }
    b->p += n;
    *out = v;
    return true;
}

/* \u after the 'u': XXXX (a surrogate pair of two escapes combines) or {X...}. */
static bool unicode_escape(struct build *b, uint32_t *cp)
{
    uint32_t lo;

    if (!at_end(b) && *b->p == '{') {
        uint32_t v = 0;
        int n = 0;

        b->p++;
        while (!at_end(b) && bsc_hex_digit(*b->p) >= 0 && v <= CP_MAX) {
            v = v << 4 | (uint32_t)bsc_hex_digit(*b->p++);
            n++;
        }
        if (at_end(b) || *b->p != '}' || n == 0 || v > CP_MAX)
            return fail(b, BSC_EINVAL, "bad \\u{...} escape");
        b->p++;
        *cp = v;
        return true;
    }
    if (!hex_n(b, 4, cp))
        return false;
    if (*cp >= 0xd800 && *cp <= 0xdbff && b->end - b->p >= 6 && b->p[0] == '\\' &&
        b->p[1] == 'u' && bsc_hex_digit(b->p[2]) >= 0) {
        const unsigned char *save = b->p;

        b->p += 2;
        if (!hex_n(b, 4, &lo))
            return false;
        if (lo >= 0xdc00 && lo <= 0xdfff)
            *cp = 0x10000 + ((*cp - 0xd800) << 10) + (lo - 0xdc00);
        else
            b->p = save;
    }
    return true;
}

static bool is_syntax_char(unsigned char c)
{
    return c && strchr("^$\\.*+?()[]{}|/", c) != NULL;
}

/* One escape after the backslash. Sets *<cp>, or adds a class (\d \w \s and negations) to the
 * class being built and sets *<is_set>. Inside a class \b is U+0008 and \- is '-'. */
static bool escape(struct build *b, bool in_class, uint32_t *cp, bool *is_set)
{
    unsigned char c;

    *is_set = false;
    if (at_end(b))
        return fail(b, BSC_EINVAL, "pattern ends in a backslash");
    c = *b->p++;
    switch (c) {
    case 'd':
    case 'D': *is_set = true; return tmp_add_set(b, set_digit, 1, c == 'D');
    case 'w':
    case 'W': *is_set = true; return tmp_add_set(b, set_word, 4, c == 'W');
    case 's':
    case 'S':
        *is_set = true;
        return tmp_add_set(b, set_space, BSC_ARRAY_LEN(set_space), c == 'S');
    case 't': *cp = '\t'; return true;
    case 'n': *cp = '\n'; return true;
    case 'r': *cp = '\r'; return true;
    case 'f': *cp = '\f'; return true;
    case 'v': *cp = '\v'; return true;
    case 'x': return hex_n(b, 2, cp);
    case 'u': return unicode_escape(b, cp);
    case 'c':
        if (at_end(b) || !((*b->p >= 'a' && *b->p <= 'z') || (*b->p >= 'A' && *b->p <= 'Z')))
            return fail(b, BSC_EINVAL, "bad \\c escape");
        *cp = *b->p++ % 32u;
        return true;
    case '0':
        if (!at_end(b) && *b->p >= '0' && *b->p <= '9')
            return fail(b, BSC_EINVAL, "octal escapes are not supported");
        *cp = 0;
        return true;
    case 'b':
        if (in_class) {
            *cp = 0x08;
            return true;
        }
        break;
    case '-':
        if (in_class) {
            *cp = '-';
            return true;
        }
        break;
    case 'p':
    case 'P': return fail(b, BSC_EINVAL, "unicode property escapes (\\p) are not supported");
    case 'k': return fail(b, BSC_EINVAL, "named backreferences are not supported");
    default: break;
    }
    if (c >= '1' && c <= '9')
        return fail(b, BSC_EINVAL, "backreferences are not supported");
    if (is_syntax_char(c) || (c < 0x80 && !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                           (c >= '0' && c <= '9') || c == '_'))) {
        *cp = c; /* an identity escape of punctuation */
        return true;
    }
    b->p--;
    return fail(b, BSC_EINVAL, "unknown escape \\%c", c >= 0x20 && c < 0x7f ? c : '?');
}

/* Reads one UTF-8 code point of the pattern. */
static bool pattern_cp(struct build *b, uint32_t *cp)
{
    unsigned char c = *b->p;
    size_t n = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;

    if ((size_t)(b->end - b->p) < n || !bsc_utf8_valid((const char *)b->p, n) ||
        (c >= 0x80 && c < 0xc2))
        return fail(b, BSC_EINVAL, "pattern is not UTF-8");
    if (n == 1)
        *cp = c;
    else if (n == 2)
        *cp = (uint32_t)(c & 0x1f) << 6 | (b->p[1] & 0x3fu);
    else if (n == 3)
        *cp = (uint32_t)(c & 0x0f) << 12 | (uint32_t)(b->p[1] & 0x3f) << 6 | (b->p[2] & 0x3fu);
    else
        *cp = (uint32_t)(c & 0x07) << 18 | (uint32_t)(b->p[1] & 0x3f) << 12 |
              (uint32_t)(b->p[2] & 0x3f) << 6 | (b->p[3] & 0x3fu);
    b->p += n;
    return true;
}

/* One class atom: a code point, or a class escape added to the class being built. */
static bool class_atom(struct build *b, uint32_t *cp, bool *is_set)
{
    *is_set = false;
    if (*b->p == '\\') {
        b->p++;
        return escape(b, true, cp, is_set);
    }
    return pattern_cp(b, cp);
}

/* [...] with b->p on the '['. */
static int32_t bracket_class(struct build *b)
{
    bool negate = false, set1, set2;
    uint32_t lo, hi;

    b->p++;
    if (!at_end(b) && *b->p == '^') {
        negate = true;
        b->p++;
    }
    for (;;) {
        if (at_end(b)) {
            fail(b, BSC_EINVAL, "unterminated character class");
            return NO_NODE;
        }
        if (*b->p == ']')
            break;
        if (!class_atom(b, &lo, &set1))
            return NO_NODE;
        if (b->end - b->p >= 2 && b->p[0] == '-' && b->p[1] != ']') {
            b->p++;
            if (!class_atom(b, &hi, &set2))
                return NO_NODE;
            if (set1 || set2) {
                fail(b, BSC_EINVAL, "a class escape cannot bound a range");
                return NO_NODE;
            }
            if (lo > hi) {
                fail(b, BSC_EINVAL, "range out of order in character class");
                return NO_NODE;
            }
            if (!tmp_add(b, lo, hi))
                return NO_NODE;
        } else if (!set1 && !tmp_add(b, lo, lo)) {
            return NO_NODE;
        }
    }
    b->p++;
    return finish_class(b, negate);
}

/* ---- the grammar ----------------------------------------------------------------------------- */

static int32_t parse_alt(struct build *b);

/* Reads "{n}", "{n,}" or "{n,m}" at b->p. Returns false, consuming nothing, when the text there
 * is not one (ECMA-262 Annex B then reads '{' as a literal); *<bad> is set on a bound past the
 * limit. */
static bool brace_quantifier(struct build *b, uint32_t *min, uint32_t *max, bool *bad)
{
    const unsigned char *q = b->p + 1;
    uint64_t v[2] = {0, 0};
    int nd[2] = {0, 0}, k = 0;

    *bad = false;
    for (; q < b->end; q++) {
        if (*q >= '0' && *q <= '9') {
            if (v[k] <= JS_MAX_PATTERN_REPEAT)
                v[k] = v[k] * 10 + (uint64_t)(*q - '0');
            nd[k]++;
        } else if (*q == ',' && k == 0 && nd[0]) {
            k = 1;
        } else {
            break;
        }
    }
    if (q >= b->end || *q != '}' || nd[0] == 0)
        return false;
    *min = (uint32_t)(v[0] > JS_MAX_PATTERN_REPEAT ? JS_MAX_PATTERN_REPEAT + 1 : v[0]);
    if (k == 0)
        *max = *min;
    else if (nd[1] == 0)
        *max = REPEAT_INF;
    else
        *max = (uint32_t)(v[1] > JS_MAX_PATTERN_REPEAT ? JS_MAX_PATTERN_REPEAT + 1 : v[1]);
    *bad = *min > JS_MAX_PATTERN_REPEAT || (*max != REPEAT_INF && *max > JS_MAX_PATTERN_REPEAT);
    b->p = q + 1;
    return true;
}

/* A quantifier at b->p, if any: 1 found, 0 none, -1 error. */
static int quantifier(struct build *b, uint32_t *min, uint32_t *max)
{
    bool bad;

    if (at_end(b))
        return 0;
    switch (*b->p) {
    case '*': *min = 0; *max = REPEAT_INF; b->p++; break;
    case '+': *min = 1; *max = REPEAT_INF; b->p++; break;
    case '?': *min = 0; *max = 1; b->p++; break;
    case '{':
        if (!brace_quantifier(b, min, max, &bad))
            return 0;
        if (bad)
            return fail(b, BSC_ELIMIT, "quantifier bound above %d", JS_MAX_PATTERN_REPEAT), -1;
        if (*min > *max)
            return fail(b, BSC_EINVAL, "numbers out of order in {} quantifier"), -1;
        break;
    default: return 0;
    }
    /* Lazy and greedy quantifiers accept the same strings; only the match found differs. */
    if (!at_end(b) && *b->p == '?')
        b->p++;
    return 1;
}

static bool starts_quantifier(struct build *b)
{
    const unsigned char *save = b->p;
    uint32_t min, max;
    bool bad, yes;

    if (at_end(b))
        return false;
    if (*b->p == '*' || *b->p == '+' || *b->p == '?')
        return true;
    yes = *b->p == '{' && brace_quantifier(b, &min, &max, &bad);
    b->p = save;
    return yes;
}

/* (...), (?:...) or (?<name>...) with b->p on the '('. */
static int32_t group(struct build *b)
{
    int32_t inner;

    b->p++;
    if (!at_end(b) && *b->p == '?') {
        if (b->end - b->p >= 2 && b->p[1] == ':') {
            b->p += 2;
        } else if (b->end - b->p >= 3 && b->p[1] == '<' && b->p[2] != '=' && b->p[2] != '!') {
            const unsigned char *gt = memchr(b->p, '>', (size_t)(b->end - b->p));

            if (!gt) {
                fail(b, BSC_EINVAL, "unterminated group name");
                return NO_NODE;
            }
            b->p = gt + 1;
        } else {
            fail(b, BSC_EINVAL, "lookaround assertions are not supported");
            return NO_NODE;
        }
    }
    if (++b->depth > MAX_NESTING) {
        fail(b, BSC_ELIMIT, "groups nested deeper than %d", MAX_NESTING);
        return NO_NODE;
    }
    inner = parse_alt(b);
    b->depth--;
    if (inner == NO_NODE)
        return NO_NODE;
    if (at_end(b) || *b->p != ')') {
        fail(b, BSC_EINVAL, "missing ')'");
        return NO_NODE;
    }
    b->p++;
    return inner;
}

static int32_t atom(struct build *b)
{
    uint32_t cp;
    bool is_set;

    switch (*b->p) {
    case '(': return group(b);
    case '[': return bracket_class(b);
    case '.':
        b->p++;
        if (!tmp_add_set(b, set_newline, BSC_ARRAY_LEN(set_newline), true))
            return NO_NODE;
        return finish_class(b, false);
    case '\\':
        b->p++;
        if (!escape(b, false, &cp, &is_set))
            return NO_NODE;
        return is_set ? finish_class(b, false) : single(b, cp);
    case ')': fail(b, BSC_EINVAL, "unmatched ')'"); return NO_NODE;
    default:
        if (starts_quantifier(b)) {
            fail(b, BSC_EINVAL, "nothing to repeat");
            return NO_NODE;
        }
        if (!pattern_cp(b, &cp))
            return NO_NODE;
        return single(b, cp);
    }
}

static int32_t assertion(struct build *b, uint8_t op, size_t len)
{
    int32_t node;

    b->p += len;
    if (starts_quantifier(b)) {
        fail(b, BSC_EINVAL, "nothing to repeat");
        return NO_NODE;
    }
    node = new_node(b, A_ASSERT);
    if (node != NO_NODE)
        b->nodes[node].op = op;
    return node;
}

static int32_t term(struct build *b)
{
    uint32_t min, max;
    int32_t a, rep;
    int q;

    if (*b->p == '^')
        return assertion(b, OP_BOL, 1);
    if (*b->p == '$')
        return assertion(b, OP_EOL, 1);
    if (b->end - b->p >= 2 && b->p[0] == '\\' && (b->p[1] == 'b' || b->p[1] == 'B'))
        return assertion(b, b->p[1] == 'b' ? OP_WORDB : OP_NWORDB, 2);
    a = atom(b);
    if (a == NO_NODE)
        return NO_NODE;
    q = quantifier(b, &min, &max);
    if (q <= 0)
        return q < 0 ? NO_NODE : a;
    if (starts_quantifier(b)) {
        fail(b, BSC_EINVAL, "nothing to repeat");
        return NO_NODE;
    }
    rep = new_node(b, A_REPEAT);
    if (rep == NO_NODE)
        return NO_NODE;
    b->nodes[rep].child = a;
    b->nodes[rep].min = min;
    b->nodes[rep].max = max;
    return rep;
}

/* Builds a CAT or ALT node over the sibling chain starting at <first> (<count> long). */
static int32_t join(struct build *b, enum ast_kind kind, int32_t first, uint32_t count)
{
    int32_t node;

    if (count == 0)
        return new_node(b, A_EMPTY);
    if (count == 1)
        return first;
    node = new_node(b, kind);
    if (node != NO_NODE)
        b->nodes[node].child = first;
    return node;
}

static int32_t parse_cat(struct build *b)
{
    int32_t first = NO_NODE, last = NO_NODE, t;
    uint32_t count = 0;

    while (!at_end(b) && *b->p != '|' && *b->p != ')') {
        t = term(b);
        if (t == NO_NODE)
            return NO_NODE;
        if (last == NO_NODE)
            first = t;
        else
            b->nodes[last].next = t;
        last = t;
        count++;
    }
    return join(b, A_CAT, first, count);
}

static int32_t parse_alt(struct build *b)
{
    int32_t first, last, t;
    uint32_t count = 1;

    first = last = parse_cat(b);
    if (first == NO_NODE)
        return NO_NODE;
    while (!at_end(b) && *b->p == '|') {
        b->p++;
        t = parse_cat(b);
        if (t == NO_NODE)
            return NO_NODE;
        b->nodes[last].next = t;
        last = t;
        count++;
    }
    return join(b, A_ALT, first, count);
}

/* ---- from the tree to the automaton ---------------------------------------------------------- */

/* The number of instructions emit() writes for <n>, saturated just past the limit. */
static uint64_t states(const struct build *b, int32_t n)
{
    const struct ast *a = &b->nodes[n];
    const uint64_t cap = (uint64_t)JS_MAX_PATTERN_STATES + 1;
    uint64_t sum = 0, c;
    uint32_t k = 0;

    switch (a->kind) {
    case A_EMPTY: return 0;
    case A_CLASS:
    case A_ASSERT: return 1;
    case A_CAT:
    case A_ALT:
        for (int32_t i = a->child; i != NO_NODE && sum < cap; i = b->nodes[i].next, k++)
            sum += states(b, i);
        if (a->kind == A_ALT)
            sum += 2 * (uint64_t)(k - 1);
        return sum < cap ? sum : cap;
    case A_REPEAT:
        c = states(b, a->child);
        sum = a->min * c + (a->max == REPEAT_INF ? c + 2 : (uint64_t)(a->max - a->min) * (c + 1));
        return sum < cap ? sum : cap;
    }
    return cap;
}

static void emit(const struct build *b, int32_t n, struct js_regex *re);

static void patch_chain(struct js_regex *re, uint32_t chain, bool split, uint32_t target)
{
    while (chain != UINT32_MAX) {
        uint32_t *slot = split ? &re->code[chain].b : &re->code[chain].a;
        uint32_t next = *slot;

        *slot = target;
        chain = next;
    }
}

static void emit_alt(const struct build *b, const struct ast *a, struct js_regex *re)
{
    uint32_t chain = UINT32_MAX, split;

    for (int32_t i = a->child; i != NO_NODE; i = b->nodes[i].next) {
        if (b->nodes[i].next == NO_NODE) {
            emit(b, i, re);
            break;
        }
        split = re->n_code++;
        re->code[split] = (struct inst){OP_SPLIT, split + 1, 0};
        emit(b, i, re);
        re->code[re->n_code] = (struct inst){OP_JMP, chain, 0};
        chain = re->n_code++;
        re->code[split].b = re->n_code;
    }
    patch_chain(re, chain, false, re->n_code);
}

static void emit_repeat(const struct build *b, const struct ast *a, struct js_regex *re)
{
    uint32_t chain = UINT32_MAX, split;

    for (uint32_t i = 0; i < a->min; i++)
        emit(b, a->child, re);
    if (a->max == REPEAT_INF) {
        split = re->n_code++;
        emit(b, a->child, re);
        re->code[re->n_code++] = (struct inst){OP_JMP, split, 0};
        re->code[split] = (struct inst){OP_SPLIT, split + 1, re->n_code};
        return;
    }
    /* Each optional copy may skip straight to the end: e{1,3} is e(e(e)?)?. */
    for (uint32_t i = a->min; i < a->max; i++) {
        split = re->n_code++;
        re->code[split] = (struct inst){OP_SPLIT, split + 1, chain};
        chain = split;
        emit(b, a->child, re);
    }
    patch_chain(re, chain, true, re->n_code);
}

static void emit(const struct build *b, int32_t n, struct js_regex *re)
{
    const struct ast *a = &b->nodes[n];

    switch (a->kind) {
    case A_EMPTY: return;
    case A_CLASS: re->code[re->n_code++] = (struct inst){OP_CLASS, a->roff, a->rn}; return;
    case A_ASSERT: re->code[re->n_code++] = (struct inst){a->op, 0, 0}; return;
    case A_CAT:
        for (int32_t i = a->child; i != NO_NODE; i = b->nodes[i].next)
            emit(b, i, re);
        return;
    case A_ALT: emit_alt(b, a, re); return;
    case A_REPEAT: emit_repeat(b, a, re); return;
    }
}

static void build_cleanup(struct build *b)
{
    free(b->nodes);
    free(b->pool);
    free(b->tmp);
}

enum bsc_err js_regex_compile(const char *p, size_t len, unsigned flags, struct js_regex **out,
                              char *why, size_t whylen)
{
    struct build b = {0};
    struct js_regex *re = NULL;
    uint64_t n_states;
    int32_t root;

    *out = NULL;
    b.start = b.p = (const unsigned char *)(p ? p : "");
    b.end = b.start + len;
    b.why = why;
    b.whylen = whylen;
    b.icase = (flags & JS_REGEX_ICASE) != 0;
    if (len > JS_MAX_PATTERN_LEN) {
        snprintf(why, whylen, "pattern longer than %d bytes", JS_MAX_PATTERN_LEN);
        return BSC_ELIMIT;
    }
    root = parse_alt(&b);
    if (root != NO_NODE && !at_end(&b))
        fail(&b, BSC_EINVAL, "unmatched ')'");
    if (b.err)
        goto done;
    n_states = states(&b, root) + 1;
    if (n_states > JS_MAX_PATTERN_STATES) {
        snprintf(why, whylen, "pattern needs more than %d automaton states",
                 JS_MAX_PATTERN_STATES);
        b.err = BSC_ELIMIT;
        goto done;
    }
    re = calloc(1, sizeof(*re));
    if (re)
        re->code = malloc((size_t)n_states * sizeof(*re->code));
    if (!re || !re->code) {
        snprintf(why, whylen, "out of memory");
        b.err = BSC_ENOMEM;
        goto done;
    }
    emit(&b, root, re);
    re->code[re->n_code++] = (struct inst){OP_MATCH, 0, 0};
    BSC_BUG_ON(re->n_code != n_states);
    re->ranges = b.pool;
    re->n_ranges = b.n_pool;
    b.pool = NULL;
    re->bol_only = re->code[0].op == OP_BOL;
    *out = re;
    re = NULL;
done:
    js_regex_free(re);
    build_cleanup(&b);
    return b.err;
}

void js_regex_free(struct js_regex *re)
{
    if (!re)
        return;
    free(re->code);
    free(re->ranges);
    free(re);
}

size_t js_regex_states(const struct js_regex *re)
{
    return re->n_code;
}

/* ---- searching ------------------------------------------------------------------------------- */

struct sim {
    const struct js_regex *re;
    const unsigned char *s;
    size_t len;
    uint32_t *mark;  /* the generation that last added each state */
    uint32_t *stack; /* 2 * n_code + 2 */
    uint64_t *budget;
};

struct list {
    uint32_t *v;
    uint32_t n;
};

static bool is_word(const unsigned char *s, size_t len, size_t pos)
{
    unsigned char c;

    if (pos >= len)
        return false;
    c = s[pos];
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           c == '_';
}

/* Decodes the code point at <pos>; an ill-formed byte reads as U+FFFD, one byte long. */
static size_t decode(const unsigned char *s, size_t len, size_t pos, uint32_t *cp)
{
    unsigned char c = s[pos];
    size_t n = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;

    if (n == 1) {
        *cp = c;
        return 1;
    }
    if (c < 0xc2 || len - pos < n || !bsc_utf8_valid((const char *)s + pos, n)) {
        *cp = 0xfffd;
        return 1;
    }
    if (n == 2)
        *cp = (uint32_t)(c & 0x1f) << 6 | (s[pos + 1] & 0x3fu);
    else if (n == 3)
        *cp = (uint32_t)(c & 0x0f) << 12 | (uint32_t)(s[pos + 1] & 0x3f) << 6 |
              (s[pos + 2] & 0x3fu);
    else
        *cp = (uint32_t)(c & 0x07) << 18 | (uint32_t)(s[pos + 1] & 0x3f) << 12 |
              (uint32_t)(s[pos + 2] & 0x3f) << 6 | (s[pos + 3] & 0x3fu);
    return n;
}

static bool in_class(const struct js_regex *re, const struct inst *in, uint32_t cp)
{
    const struct range *r;
    uint32_t lo = 0, hi = in->b;

    if (hi == 0)
        return false; /* [] matches nothing; a pattern of only such classes has no pool */
    r = re->ranges + in->a;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;

        if (cp < r[mid].lo)
            hi = mid;
        else if (cp > r[mid].hi)
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

/* Adds state <pc> and everything reachable from it without reading a character at <pos> to
 * <l>. Returns 1 when the match state is reachable, -BSC_ELIMIT when the budget ran out, 0. */
static int add(struct sim *m, struct list *l, uint32_t pc, size_t pos, uint32_t gen)
{
    uint32_t sp = 0;
    bool ok;

    m->stack[sp++] = pc;
    while (sp) {
        const struct inst *in;

        pc = m->stack[--sp];
        if (m->mark[pc] == gen)
            continue;
        m->mark[pc] = gen;
        if (*m->budget == 0)
            return -BSC_ELIMIT;
        (*m->budget)--;
        in = &m->re->code[pc];
        switch (in->op) {
        case OP_CLASS: l->v[l->n++] = pc; break;
        case OP_MATCH: return 1;
        case OP_JMP: m->stack[sp++] = in->a; break;
        case OP_SPLIT:
            m->stack[sp++] = in->b;
            m->stack[sp++] = in->a;
            break;
        default:
            if (in->op == OP_BOL)
                ok = pos == 0;
            else if (in->op == OP_EOL)
                ok = pos == m->len;
            else
                ok = (pos > 0 && is_word(m->s, m->len, pos - 1)) != is_word(m->s, m->len, pos);
            if (in->op == OP_NWORDB)
                ok = !ok;
            if (ok)
                m->stack[sp++] = pc + 1;
            break;
        }
    }
    return 0;
}

/* Advances every state of <cl> over code point <cp>, <adv> bytes at <pos>, into <nl>. */
static int step(struct sim *m, struct list *cl, struct list *nl, size_t pos, uint32_t cp,
                size_t adv, uint32_t gen)
{
    int r;

    nl->n = 0;
    for (uint32_t i = 0; i < cl->n; i++) {
        const struct inst *in = &m->re->code[cl->v[i]];

        if (in_class(m->re, in, cp) && (r = add(m, nl, cl->v[i] + 1, pos + adv, gen)) != 0)
            return r;
    }
    /* Unanchored: a match may also start after this character. */
    if (!m->re->bol_only && (r = add(m, nl, 0, pos + adv, gen)) != 0)
        return r;
    return 0;
}

static int run(struct sim *m, uint32_t *lists)
{
    uint32_t n = m->re->n_code, gen = 1, cp;
    struct list a = {lists, 0}, b = {lists + n, 0}, *cl = &a, *nl = &b, *t;
    size_t pos = 0, adv;
    int r;

    if ((r = add(m, cl, 0, 0, gen)) != 0)
        return r;
    while (pos < m->len && (cl->n || !m->re->bol_only)) {
        adv = decode(m->s, m->len, pos, &cp);
        if ((r = step(m, cl, nl, pos, cp, adv, ++gen)) != 0)
            return r;
        pos += adv;
        t = cl;
        cl = nl;
        nl = t;
    }
    return 0;
}

int js_regex_search(const struct js_regex *re, const char *s, size_t len, uint64_t *budget)
{
    uint32_t local[5 * STACK_STATES + 2], *mem = local;
    size_t words = 5 * (size_t)re->n_code + 2;
    struct sim m = {re, (const unsigned char *)(s ? s : ""), len, NULL, NULL, budget};
    int r;

    if (re->n_code > STACK_STATES) {
        mem = malloc(words * sizeof(*mem));
        if (!mem)
            return -BSC_ENOMEM;
    }
    /* Layout: two state lists (n each), marks (n), the closure stack (2n + 2). */
    m.mark = mem + 2 * (size_t)re->n_code;
    m.stack = m.mark + re->n_code;
    memset(m.mark, 0, re->n_code * sizeof(*m.mark));
    r = run(&m, mem);
    if (mem != local)
        free(mem);
    return r;
}
