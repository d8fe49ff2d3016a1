/* SPDX-License-Identifier: MIT */
/* str.c -- the few non-inline slice helpers. */
#include "core/str.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/compat.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

struct bsc_str bsc_str_trim(struct bsc_str s)
{
    while (s.len && (s.p[0] == ' ' || s.p[0] == '\t')) {
        s.p++;
        s.len--;
    }
    while (s.len && (s.p[s.len - 1] == ' ' || s.p[s.len - 1] == '\t'))
        s.len--;
    return s;
}

bool bsc_str_to_u64(struct bsc_str s, unsigned long long *out)
{
    unsigned long long v = 0;

    if (s.len == 0)
        return false;
    for (size_t i = 0; i < s.len; i++) {
        unsigned d = (unsigned char)s.p[i] - '0';
        if (d > 9)
            return false;
        if (v > (ULLONG_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

char *bsc_str_dup(struct bsc_str s)
{
    char *p = malloc(s.len + 1);

    if (!p)
        return NULL;
    if (s.len)
        memcpy(p, s.p, s.len);
    p[s.len] = '\0';
    return p;
}

#ifdef __SSE2__
/* Candidate bits of the sixteen positions from h + i: the byte there is the needle's first
 * and the byte m - 1 further is its last. */
static inline unsigned candidates16(const char *h, size_t i, size_t m, __m128i first,
                                    __m128i last)
{
    __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(h + i));
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(h + i + m - 1));

    return (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, first),
                                                     _mm_cmpeq_epi8(b, last)));
}

/* The first candidate of <mask> (bit k: position i + k) holding the whole needle, or NULL. */
static inline const char *first_match(const char *h, size_t i, uint32_t mask, const char *nd,
                                      size_t m)
{
    while (mask) {
        size_t j = i + (size_t)__builtin_ctz(mask);
        if (memcmp(h + j + 1, nd + 1, m - 2) == 0)
            return h + j;
        mask &= mask - 1;
    }
    return NULL;
}

/* Only the candidates are compared whole. Thirty-two positions a step (two sixteens, one
 * mask: half the loop's overhead per byte), then sixteen; each width's last step overlaps
 * the one before so that it ends exactly at the last position (its earlier positions held
 * no match, so the first match found is still the first). A text shorter than one step of
 * sixteen goes to the scalar loop of the caller (*<done> false). */
static const char *find16(const char *h, size_t n, const char *nd, size_t m, bool *done)
{
    const __m128i first = _mm_set1_epi8(nd[0]), last = _mm_set1_epi8(nd[m - 1]);
    size_t i = 0, end = n - m + 1; /* positions 0 .. end - 1 */
    const char *r;

    *done = end >= 16;
    if (!*done)
        return NULL;
    while (end >= 32) { /* left only by a return */
        uint32_t mask = candidates16(h, i, m, first, last) |
                        (uint32_t)candidates16(h, i + 16, m, first, last) << 16;

        if (mask && (r = first_match(h, i, mask, nd, m)))
            return r;
        if (i + 32 == end)
            return NULL;
        i = end - i - 32 >= 32 ? i + 32 : end - 32;
    }
    for (;;) {
        if ((r = first_match(h, i, candidates16(h, i, m, first, last), nd, m)))
            return r;
        if (i + 16 == end)
            return NULL;
        i = end - i - 16 >= 16 ? i + 16 : end - 16;
    }
}
#endif

/* bsc_str_find for a needle of at least two bytes that fits in <h>. */
static const char *find_at_least_2(const char *h, size_t n, const char *nd, size_t m)
{
#ifdef __SSE2__
    {
        bool done;
        const char *r = find16(h, n, nd, m, &done);
        if (done)
            return r;
    }
#endif
    for (size_t j = 0; j + m <= n; j++)
        if (h[j] == nd[0] && h[j + m - 1] == nd[m - 1] && memcmp(h + j + 1, nd + 1, m - 2) == 0)
            return h + j;
    return NULL;
}

/* A needle in quotes ("\"error\"", "\"tool_calls\""): its first and last byte pass the
 * candidate filter at every pair of quotes that far apart, and JSON is full of quotes. The
 * text between the quotes is looked for instead, in the text past its first byte, and each
 * hit kept when a quote stands on either side of it. */
static const char *find_quoted(const char *h, size_t n, const char *nd, size_t m)
{
    const char *end = h + n - 1, *p = h + 1, *r;

    while ((size_t)(end - p) >= m - 2) {
        if (!(r = find_at_least_2(p, (size_t)(end - p), nd + 1, m - 2)))
            return NULL;
        if (r[-1] == '"' && r[m - 2] == '"')
            return r - 1;
        p = r + 1;
    }
    return NULL;
}

const char *bsc_str_find(struct bsc_str hay, struct bsc_str needle)
{
    size_t m = needle.len;
    const char *h = hay.p, *nd = needle.p;

    if (!m || !h || hay.len < m)
        return NULL;
    if (m == 1)
        return memchr(h, nd[0], hay.len);
    if (m >= 4 && nd[0] == '"' && nd[m - 1] == '"')
        return find_quoted(h, hay.len, nd, m);
    return find_at_least_2(h, hay.len, nd, m);
}

char *bsc_num_text(char tmp[BSC_NUM_TEXT_MAX], unsigned long long v, unsigned base)
{
    static const char digits[] = "0123456789abcdef";
    char *p = tmp + BSC_NUM_TEXT_MAX;

    /* Base 10, nearly every call, divides by a constant: a multiply and a shift where a
     * divide by a variable is a 64-bit DIV, about three times slower on this path (12 ns
     * against 4 for a 13-digit number; callgrind counts one instruction for the DIV and
     * five for its replacement, so instruction counts rise where cycles fall). */
    if (base == 10) {
        do {
            *--p = (char)('0' + v % 10);
            v /= 10;
        } while (v);
        return p;
    }
    do {
        *--p = digits[v % base];
        v /= base;
    } while (v);
    return p;
}

bool bsc_str_secret_eq(struct bsc_str given, const char *want)
{
    size_t n = want ? strlen(want) : 0;
    unsigned char diff = given.len != n;

    /* Every byte of <given> is read whatever differs: the time says nothing of a prefix. */
    for (size_t i = 0; i < given.len; i++)
        diff |= (unsigned char)(given.p[i] ^ want[i % (n ? n : 1)]);
    return diff == 0 && n > 0;
}
