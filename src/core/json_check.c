/* SPDX-License-Identifier: MIT */
/* json_check.c -- the validator: an iterative scanner with an explicit stack of the open
 * containers (a bit each: object or array), so depth costs 1 bit, not a C stack frame. */
#include "core/json_check.h"

#include <stdint.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "core/json_name.h"
#include "core/utf8.h"

struct scan {
    const unsigned char *p;
    size_t n, i;
    const char *what;
};

static bool fail(struct scan *s, const char *what)
{
    s->what = what;
    return false;
}

/* JSON whitespace: space, tab, line feed, carriage return. */
static const bool ws_byte[256] = {[' '] = true, ['\t'] = true, ['\n'] = true, ['\r'] = true};

/* Indentation comes in runs of spaces: after a whitespace byte, eight spaces at a time. */
static inline void skip_ws(struct scan *s)
{
    const uint64_t spaces = 0x2020202020202020ull;
    const unsigned char *p = s->p;
    size_t i = s->i, n = s->n;
    uint64_t w;

    while (i < n && ws_byte[p[i]]) {
        i++;
        while (n - i >= 8 && (memcpy(&w, p + i, 8), w == spaces))
            i += 8;
    }
    s->i = i;
}

static bool hex4(struct scan *s)
{
    for (int k = 0; k < 4; k++, s->i++) {
        unsigned char c = s->i < s->n ? s->p[s->i] : 0;
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
            return fail(s, "invalid \\u escape");
    }
    return true;
}

/* One UTF-8 sequence starting at a byte >= 0x80 (Unicode table 3-7). */
static bool utf8_seq(struct scan *s)
{
    size_t len = bsc_utf8_seq_len(s->p + s->i, s->n - s->i);

    if (!len)
        return fail(s, "invalid UTF-8");
    s->i += len;
    return true;
}

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
static inline size_t plain_run(const unsigned char *p, size_t i, size_t n)
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

static bool string(struct scan *s)
{
    s->i++; /* the opening quote */
    while (s->i < s->n) {
        unsigned char c;

        s->i = plain_run(s->p, s->i, s->n); /* the common run */
        if (s->i >= s->n)
            break;
        c = s->p[s->i];
        if (c == '"') {
            s->i++;
            return true;
        }
        if (c < 0x20)
            return fail(s, "control character in a string");
        if (c == '\\') {
            unsigned char e = ++s->i < s->n ? s->p[s->i] : 0;
            s->i++;
            if (e == 'u') {
                if (!hex4(s))
                    return false;
            } else if (!(e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' ||
                         e == 'r' || e == 't')) {
                s->i--;
                return fail(s, "invalid escape");
            }
            continue;
        }
        if (c >= 0x80) {
            if (!utf8_seq(s))
                return false;
            continue;
        }
        s->i++;
    }
    return fail(s, "unterminated string");
}

static bool digits(struct scan *s)
{
    size_t start = s->i;

    while (s->i < s->n && s->p[s->i] >= '0' && s->p[s->i] <= '9')
        s->i++;
    return s->i > start;
}

static bool number(struct scan *s)
{
    if (s->p[s->i] == '-')
        s->i++;
    if (s->i < s->n && s->p[s->i] == '0')
        s->i++;
    else if (!digits(s))
        return fail(s, "invalid number");
    if (s->i < s->n && s->p[s->i] == '.') {
        s->i++;
        if (!digits(s))
            return fail(s, "invalid number");
    }
    if (s->i < s->n && (s->p[s->i] == 'e' || s->p[s->i] == 'E')) {
        s->i++;
        if (s->i < s->n && (s->p[s->i] == '+' || s->p[s->i] == '-'))
            s->i++;
        if (!digits(s))
            return fail(s, "invalid number");
    }
    return true;
}

static bool literal(struct scan *s, const char *lit, size_t len)
{
    if (s->n - s->i < len || memcmp(s->p + s->i, lit, len) != 0)
        return fail(s, "invalid literal");
    s->i += len;
    return true;
}

/* A scalar value at s->i (not a container). */
static bool scalar(struct scan *s)
{
    switch (s->p[s->i]) {
    case '"': return string(s);
    case 't': return literal(s, "true", 4);
    case 'f': return literal(s, "false", 5);
    case 'n': return literal(s, "null", 4);
    default:
        if (s->p[s->i] == '-' || (s->p[s->i] >= '0' && s->p[s->i] <= '9'))
            return number(s);
        return fail(s, "unexpected character");
    }
}

/* Reads a member name and its ':' at s->i; *<key> gets the raw name (no quotes). */
static bool member_name(struct scan *s, struct bsc_str *key)
{
    size_t start;

    skip_ws(s);
    if (s->i >= s->n || s->p[s->i] != '"')
        return fail(s, "expected a member name");
    start = s->i + 1;
    if (!string(s))
        return false;
    *key = bsc_str_make((const char *)s->p + start, s->i - 1 - start);
    skip_ws(s);
    if (s->i >= s->n || s->p[s->i] != ':')
        return fail(s, "expected ':'");
    s->i++;
    return true;
}

/* A top-level name already seen (bsc_json_check_request). */
struct seen {
    const char *p;  /* the raw name, borrowed from the document */
    uint32_t hash;  /* of the decoded name */
    uint16_t len;   /* raw length (<= BSC_JSON_MAX_NAME) */
    uint16_t dlen;  /* decoded length */
    bool escaped;
};

/* The top-level members the caller wants, recorded while validating. */
struct want {
    const struct bsc_str *keys;
    size_t n;
    struct bsc_str *vals;
    int cur;       /* the wanted key whose value is being read, or -1 */
    size_t start;  /* where that value began */
    bool repeated; /* a wanted key appeared twice */
    struct seen *seen; /* BSC_JSON_MAX_MEMBERS entries when every name is tracked, else NULL */
    unsigned n_seen;
    uint64_t filter[4]; /* a bit per 8-bit slice of the seen names' hashes */
    uint32_t objects;              /* bit k: the elements of an array keys[k] must be objects */
    struct bsc_str cur_name;       /* the raw name of keys[cur] as written */
    enum bsc_json_verdict verdict; /* why the scan stopped early */
    struct bsc_str name;           /* the name it stopped at */
};

/* At depth 2 under wanted key w->cur: true when that member is an array (bit 1 of the
 * container stack clear) whose elements the caller wants to be objects. */
static inline bool element_must_be_object(const struct want *w, uint64_t stack0)
{
    return (w->objects >> w->cur & 1) && !(stack0 & 2);
}

/* Stops the scan at the top-level name <key> with <verdict>; the offset is its quote. */
static bool stop_at_name(struct want *w, struct scan *s, struct bsc_str key,
                         enum bsc_json_verdict verdict, const char *what)
{
    w->verdict = verdict;
    w->name = key;
    s->i = (size_t)((const unsigned char *)key.p - s->p) - 1;
    return fail(s, what);
}

/* The duplicate rule: false (scan stopped) when <key> repeats a name or is past a bound.
 * A 256-bit filter of the hashes seen answers "new" for most names without a look at the
 * others; otherwise a pass over them compares hashes first. Names chosen to collide cost
 * at most 256 * 255 / 2 integer compares per body. */
static bool track_name(struct want *w, struct scan *s, struct bsc_str key,
                       struct bsc_json_name_info *info)
{
    uint32_t slot;
    bool maybe;

    if (key.len > BSC_JSON_MAX_NAME)
        return stop_at_name(w, s, key, BSC_JSONV_REFUSED,
                            "a top-level member name longer than 256 bytes");
    if (w->n_seen == BSC_JSON_MAX_MEMBERS)
        return stop_at_name(w, s, key, BSC_JSONV_REFUSED, "more than 256 top-level members");
    if (!bsc_json_name_scan(key, info))
        return stop_at_name(w, s, key, BSC_JSONV_REFUSED,
                            "a top-level member name with a lone surrogate or NUL escape");
    slot = (info->hash ^ (info->hash >> 16)) & 255;
    maybe = (w->filter[slot / 64] >> (slot % 64)) & 1;
    w->filter[slot / 64] |= 1ull << (slot % 64);
    for (unsigned j = 0; maybe && j < w->n_seen; j++) {
        const struct seen *o = &w->seen[j];
        struct bsc_str other = bsc_str_make(o->p, o->len);

        if (o->hash != info->hash || o->dlen != info->len)
            continue;
        if (!o->escaped && !info->escaped ? bsc_str_eq(other, key)
                                          : bsc_json_names_eq(other, key) == 1)
            return stop_at_name(w, s, key, BSC_JSONV_DUPLICATE, "duplicate member name");
    }
    w->seen[w->n_seen++] = (struct seen){key.p, info->hash, (uint16_t)key.len,
                                         (uint16_t)info->len, info->escaped};
    return true;
}

/* A top-level name: tracked when every name is, then matched against the wanted keys.
 * Returns false when the scan must stop. */
static bool want_key(struct want *w, struct scan *s, struct bsc_str key)
{
    struct bsc_json_name_info info = {0, 0, false};

    w->cur = -1;
    if (w->seen) {
        if (!track_name(w, s, key, &info))
            return false;
    } else if (w->n) {
        info.escaped = memchr(key.p, '\\', key.len) != NULL;
    }
    for (size_t k = 0; k < w->n; k++)
        if (!info.escaped ? bsc_str_eq(key, w->keys[k])
                          : bsc_json_name_eq(key, w->keys[k]) == 1)
            w->cur = (int)k;
    w->cur_name = key;
    return true;
}

static void want_value_end(struct want *w, const struct scan *s)
{
    if (w->cur < 0)
        return;
    if (w->vals[w->cur].p)
        w->repeated = true;
    w->vals[w->cur] = bsc_str_make((const char *)s->p + w->start, s->i - w->start);
    w->cur = -1;
}

static bool check(struct bsc_str doc, unsigned max_depth, struct want *w,
                  struct bsc_json_error *err)
{
    struct scan s = {(const unsigned char *)doc.p, doc.p ? doc.len : 0, 0, NULL};
    uint64_t stack[BSC_JSON_MAX_DEPTH / 64] = {0}; /* bit set: an object, clear: an array */
    unsigned depth = 0;
    bool ok = true, need_value = true;
    struct bsc_str key;

    if (max_depth > BSC_JSON_MAX_DEPTH)
        max_depth = BSC_JSON_MAX_DEPTH;
    while (ok) {
        if (need_value) {
            unsigned char c;

            skip_ws(&s);
            if (s.i >= s.n) {
                ok = fail(&s, depth ? "unterminated container" : "empty document");
                break;
            }
            if (depth == 1)
                w->start = s.i;
            c = s.p[s.i];
            if (depth == 2 && w->cur >= 0 && c != '{' && element_must_be_object(w, stack[0])) {
                w->verdict = BSC_JSONV_ELEMENT;
                w->name = w->cur_name;
                ok = fail(&s, "an array element that must be an object");
                break;
            }
            if (c == '{' || c == '[') {
                if (depth == max_depth) {
                    ok = fail(&s, "nested too deep");
                    break;
                }
                if (c == '{')
                    stack[depth / 64] |= 1ull << (depth % 64);
                else
                    stack[depth / 64] &= ~(1ull << (depth % 64));
                depth++;
                s.i++;
                skip_ws(&s);
                if (s.i < s.n && s.p[s.i] == (c == '{' ? '}' : ']')) {
                    s.i++;
                    depth--;
                    need_value = false; /* an empty container is a complete value */
                    if (depth == 1)
                        want_value_end(w, &s);
                } else if (c == '{') {
                    ok = member_name(&s, &key);
                    if (ok && depth == 1)
                        ok = want_key(w, &s, key);
                }
                continue;
            }
            ok = scalar(&s);
            need_value = false;
            if (ok && depth == 1)
                want_value_end(w, &s);
            continue;
        }
        /* After a complete value: the end, a closer, or a comma. */
        skip_ws(&s);
        if (depth == 0)
            break;
        if (s.i >= s.n) {
            ok = fail(&s, "unterminated container");
            break;
        }
        {
            bool obj = (stack[(depth - 1) / 64] >> ((depth - 1) % 64)) & 1;
            unsigned char c = s.p[s.i];
            if (c == (obj ? '}' : ']')) {
                s.i++;
                depth--;
                if (depth == 1)
                    want_value_end(w, &s);
                continue;
            }
            if (c != ',') {
                ok = fail(&s, obj ? "expected ',' or '}'" : "expected ',' or ']'");
                break;
            }
            s.i++;
            if (obj) {
                ok = member_name(&s, &key);
                if (ok && depth == 1)
                    ok = want_key(w, &s, key);
            }
            need_value = true;
        }
    }
    if (ok && s.i != s.n)
        ok = fail(&s, "unexpected data after the JSON value");
    if (!ok && err) {
        err->offset = s.i < s.n ? s.i : s.n;
        err->what = s.what;
        err->name = w->name;
    }
    return ok;
}

bool bsc_json_check(struct bsc_str doc, unsigned max_depth, struct bsc_json_error *err)
{
    struct want none = {.cur = -1, .verdict = BSC_JSONV_SYNTAX};

    return check(doc, max_depth, &none, err);
}

int bsc_json_check_members(struct bsc_str doc, unsigned max_depth, const struct bsc_str *keys,
                           size_t n_keys, struct bsc_str *vals, struct bsc_json_error *err)
{
    struct want w = {.keys = keys, .n = n_keys, .vals = vals, .cur = -1,
                     .verdict = BSC_JSONV_SYNTAX};

    for (size_t k = 0; k < n_keys; k++)
        vals[k] = BSC_STR_NULL;
    if (!check(doc, max_depth, &w, err))
        return -1;
    return w.repeated ? 0 : 1;
}

enum bsc_json_verdict bsc_json_check_request(struct bsc_str doc, unsigned max_depth,
                                             const struct bsc_str *keys, size_t n_keys,
                                             uint32_t objects, struct bsc_str *vals,
                                             struct bsc_json_error *err)
{
    struct seen seen[BSC_JSON_MAX_MEMBERS]; /* 6 KiB of stack, written only as names come */
    struct want w = {.keys = keys, .n = n_keys, .vals = vals, .cur = -1, .seen = seen,
                     .objects = n_keys < 32 ? objects & ((1u << n_keys) - 1) : objects,
                     .verdict = BSC_JSONV_SYNTAX};

    for (size_t k = 0; k < n_keys; k++)
        vals[k] = BSC_STR_NULL;
    return check(doc, max_depth, &w, err) ? BSC_JSONV_OK : w.verdict;
}
