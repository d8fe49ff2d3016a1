/* SPDX-License-Identifier: MIT */
/* json_scan.c -- a skip-scanner over JSON text: strings, numbers, literals, nested
 * containers. It trusts nothing (it is bounded and never reads past the end) but it
 * does not validate: callers run it on documents json-c accepted. */
#include "core/json_scan.h"

#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "core/json_name.h"

/* What a byte is to the scanner: JSON whitespace, a byte that ends a number or literal
 * (whitespace, ',', '}', ']'), a byte a container's scan must look at ('"' and the four
 * brackets). One load per byte instead of a chain of compares. */
enum { C_WS = 1, C_END = 2, C_MARK = 4 };
static const unsigned char cls[256] = {
    [' '] = C_WS | C_END, ['\t'] = C_WS | C_END, ['\n'] = C_WS | C_END, ['\r'] = C_WS | C_END,
    [','] = C_END,        ['}'] = C_END | C_MARK, [']'] = C_END | C_MARK, ['{'] = C_MARK,
    ['['] = C_MARK,       ['"'] = C_MARK,
};

static size_t skip_ws(const char *p, size_t i, size_t n)
{
    while (i < n && (cls[(unsigned char)p[i]] & C_WS))
        i++;
    return i;
}

/* Index of the first '"' or '\\' at or after <i>, or <n>: sixteen bytes a step where SSE2
 * is there (the strings of an answer are mostly short names and numbers' neighbours, where a
 * memchr call costs more than the bytes). */
static inline size_t quote_or_backslash(const char *p, size_t i, size_t n)
{
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');

    while (n - i >= 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        unsigned mask = (unsigned)_mm_movemask_epi8(
            _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bs)));

        if (mask)
            return i + (size_t)__builtin_ctz(mask);
        i += 16;
    }
#endif
    while (i < n && p[i] != '"' && p[i] != '\\')
        i++;
    return i;
}

/* Returns the index just past the string starting at p[i] == '"', or n when unterminated;
 * *<escaped> is set when it holds a backslash. A backslash and the byte after it are
 * passed as a pair (so an escaped quote is passed; \uXXXX's digits are plain bytes): the
 * same end as counting the backslashes before each quote, with one look per special byte. */
static size_t skip_string(const char *p, size_t i, size_t n, bool *escaped)
{
    for (i++; i < n;) {
        i = quote_or_backslash(p, i, n);
        if (i >= n)
            return n;
        if (p[i] == '"')
            return i + 1;
        *escaped = true;
        i += 2;
    }
    return n;
}

/* Returns the index just past the value starting at p[i]. */
static size_t skip_value(const char *p, size_t i, size_t n)
{
    size_t depth = 0;
    bool escaped; /* not asked */

    if (i >= n)
        return n;
    if (p[i] == '"')
        return skip_string(p, i, n, &escaped);
    if (p[i] != '{' && p[i] != '[') {
        while (i < n && !(cls[(unsigned char)p[i]] & C_END))
            i++;
        return i;
    }
    while (i < n) {
        char c = p[i];
        if (!(cls[(unsigned char)c] & C_MARK)) {
            i++;
            continue;
        }
        if (c == '"') {
            i = skip_string(p, i, n, &escaped);
            continue;
        }
        if (c == '{' || c == '[')
            depth++;
        else if (c == '}' || c == ']') {
            if (--depth == 0)
                return i + 1;
        }
        i++;
    }
    return n;
}

int bsc_json_member(struct bsc_str doc, struct bsc_str key, struct bsc_str *value)
{
    struct bsc_str v;

    if (bsc_json_members(doc, &key, 1, &v) < 0)
        return -1;
    if (!v.p)
        return 0; /* *value untouched */
    *value = v;
    return 1;
}

bool bsc_json_member_span(struct bsc_str doc, struct bsc_str key, struct bsc_str *value)
{
    return bsc_json_member(doc, key, value) == 1;
}

bool bsc_json_array_next(struct bsc_str arr, size_t *pos, struct bsc_str *elem)
{
    const char *p = arr.p;
    size_t n = arr.len, i = *pos, end;

    if (i == 0) {
        i = skip_ws(p, 0, n);
        if (i >= n || p[i] != '[')
            return false;
        i++;
    }
    i = skip_ws(p, i, n);
    if (i >= n || p[i] == ']')
        return false;
    end = skip_value(p, i, n);
    if (end > n || end == i)
        return false;
    *elem = bsc_str_make(p + i, end - i);
    i = skip_ws(p, end, n);
    if (i < n && p[i] == ',')
        i++;
    *pos = i;
    return true;
}

bool bsc_json_array_nonempty(struct bsc_str arr)
{
    size_t i = skip_ws(arr.p, 0, arr.len);

    if (i >= arr.len || arr.p[i] != '[')
        return false;
    i = skip_ws(arr.p, i + 1, arr.len);
    return i < arr.len && arr.p[i] != ']';
}

enum bsc_json_kind bsc_json_kind_of(struct bsc_str v)
{
    if (!v.len)
        return BSC_JSON_INVALID;
    switch (v.p[0]) {
    case 'n': return BSC_JSON_NULL;
    case 't':
    case 'f': return BSC_JSON_BOOL;
    case '"': return BSC_JSON_STRING;
    case '[': return BSC_JSON_ARRAY;
    case '{': return BSC_JSON_OBJECT;
    default:
        return v.p[0] == '-' || (v.p[0] >= '0' && v.p[0] <= '9') ? BSC_JSON_NUMBER
                                                                 : BSC_JSON_INVALID;
    }
}

bool bsc_json_is_true(struct bsc_str v)
{
    return bsc_str_eq(v, BSC_STR("true"));
}

struct bsc_str bsc_json_string_raw(struct bsc_str v)
{
    if (v.len < 2 || v.p[0] != '"')
        return BSC_STR_NULL;
    return bsc_str_make(v.p + 1, v.len - 2);
}

bool bsc_json_u64(struct bsc_str v, unsigned long long *out)
{
    return bsc_str_to_u64(v, out);
}

/* bsc_json_members; with <entries> (may be NULL) also each member whole: from its name's
 * opening quote to the end of its value. */
static int scan_members(struct bsc_str doc, const struct bsc_str *keys, size_t n_keys,
                        struct bsc_str *vals, struct bsc_str *entries)
{
    const char *p = doc.p;
    size_t n = doc.len, i = skip_ws(p, 0, n);

    for (size_t k = 0; k < n_keys; k++) {
        vals[k] = BSC_STR_NULL;
        if (entries)
            entries[k] = BSC_STR_NULL;
    }
    if (i >= n || p[i] != '{')
        return -1;
    i = skip_ws(p, i + 1, n);
    if (i < n && p[i] == '}')
        return 1;
    for (;;) {
        size_t kstart, kend, vstart, vend;
        struct bsc_str name;
        bool escaped = false;

        if (i >= n || p[i] != '"')
            return -1;
        kstart = i + 1;
        kend = skip_string(p, i, n, &escaped);
        if (kend >= n)
            return -1;
        i = skip_ws(p, kend, n);
        if (i >= n || p[i] != ':')
            return -1;
        vstart = skip_ws(p, i + 1, n);
        vend = skip_value(p, vstart, n);
        if (vend > n || vend == vstart)
            return -1;
        name = bsc_str_make(p + kstart, kend - 1 - kstart);
        for (size_t k = 0; k < n_keys; k++) {
            int eq = escaped ? bsc_json_name_eq(name, keys[k]) : bsc_str_eq(name, keys[k]);

            if (eq < 0)
                return -1; /* a name parsers read differently: no guess */
            if (!eq)
                continue;
            if (vals[k].p)
                return -1; /* repeated */
            vals[k] = bsc_str_make(p + vstart, vend - vstart);
            if (entries)
                entries[k] = bsc_str_make(p + kstart - 1, vend - (kstart - 1));
        }
        i = skip_ws(p, vend, n);
        if (i < n && p[i] == '}')
            return 1;
        if (i >= n || p[i] != ',')
            return -1;
        i = skip_ws(p, i + 1, n);
    }
}

int bsc_json_object_name(struct bsc_str obj, struct bsc_json_iter *it, struct bsc_str *name,
                         bool *escaped)
{
    const char *p = obj.p;
    size_t n = obj.len, i = it->pos, kend;

    if (it->done)
        return 0;
    if (!it->open) {
        i = skip_ws(p, 0, n);
        if (i >= n || p[i] != '{')
            return -1;
        it->open = true;
        i = skip_ws(p, i + 1, n);
        if (i < n && p[i] == '}') {
            it->done = true;
            it->pos = i + 1;
            return 0;
        }
    }
    if (i >= n || p[i] != '"')
        return -1;
    *escaped = false;
    kend = skip_string(p, i, n, escaped);
    if (kend >= n)
        return -1;
    *name = bsc_str_make(p + i + 1, kend - 1 - (i + 1));
    i = skip_ws(p, kend, n);
    if (i >= n || p[i] != ':')
        return -1;
    it->pos = skip_ws(p, i + 1, n);
    return 1;
}

int bsc_json_object_after(struct bsc_str obj, struct bsc_json_iter *it, size_t end)
{
    size_t i = skip_ws(obj.p, end, obj.len);

    if (i < obj.len && obj.p[i] == '}') {
        it->done = true;
        it->pos = i + 1;
        return 1;
    }
    if (i >= obj.len || obj.p[i] != ',')
        return -1;
    it->pos = skip_ws(obj.p, i + 1, obj.len);
    return 1;
}

int bsc_json_object_value(struct bsc_str obj, struct bsc_json_iter *it, struct bsc_str *value)
{
    size_t vstart = it->pos, vend = skip_value(obj.p, vstart, obj.len);

    if (vend > obj.len || vend == vstart)
        return -1;
    *value = bsc_str_make(obj.p + vstart, vend - vstart);
    return bsc_json_object_after(obj, it, vend);
}

int bsc_json_object_next(struct bsc_str obj, struct bsc_json_iter *it, struct bsc_str *name,
                         bool *escaped, struct bsc_str *value)
{
    int r = bsc_json_object_name(obj, it, name, escaped);

    return r == 1 ? bsc_json_object_value(obj, it, value) : r;
}

int bsc_json_members(struct bsc_str doc, const struct bsc_str *keys, size_t n_keys,
                     struct bsc_str *vals)
{
    return scan_members(doc, keys, n_keys, vals, NULL);
}

int bsc_json_member_entry(struct bsc_str doc, struct bsc_str key, struct bsc_str *entry)
{
    struct bsc_str v, e;

    if (scan_members(doc, &key, 1, &v, &e) < 0)
        return -1;
    if (!e.p)
        return 0; /* *entry untouched */
    *entry = e;
    return 1;
}
