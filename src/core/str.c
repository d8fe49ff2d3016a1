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
/* How common a byte is in chat text and JSON (higher: more common; 0: rare), roughly by
 * English letter frequency with JSON's punctuation. Only the order matters: the search
 * filters candidates on the needle's two rarest bytes, so that a needle like "image_url"
 * is looked for by its '_' and 'g' rather than by an 'i' and an 'l' that prose is full of. */
static const uint8_t byte_commonness[256] = {
    [' '] = 255, ['e'] = 250, ['t'] = 240, ['a'] = 235, ['o'] = 230, ['i'] = 225,
    ['n'] = 225, ['s'] = 220, ['r'] = 220, ['"'] = 215, ['h'] = 200, ['l'] = 200,
    ['d'] = 190, ['c'] = 180, ['u'] = 170, ['m'] = 165, ['f'] = 150, ['p'] = 150,
    [','] = 150, ['g'] = 140, ['w'] = 140, ['y'] = 140, ['.'] = 140, [':'] = 140,
    ['b'] = 120, ['\n'] = 120, ['0' ... '9'] = 100, ['{'] = 100, ['}'] = 100, ['v'] = 100,
    ['k'] = 90, ['A' ... 'Z'] = 70, ['-'] = 80, ['\''] = 60, ['x'] = 50, ['_'] = 40,
    ['j'] = 30, ['q'] = 25, ['z'] = 25,
};

/* The two offsets in the needle <nd> (<m> >= 2 bytes) whose bytes are its rarest, in
 * increasing order: the candidate filter of find16. */
static void rare_pair(const char *nd, size_t m, size_t *a, size_t *b)
{
    size_t r1 = 0, r2 = 1;

    if (byte_commonness[(unsigned char)nd[r2]] < byte_commonness[(unsigned char)nd[r1]]) {
        r1 = 1;
        r2 = 0;
    }
    for (size_t k = 2; k < m; k++) {
        unsigned c = byte_commonness[(unsigned char)nd[k]];
        if (c < byte_commonness[(unsigned char)nd[r1]]) {
            r2 = r1;
            r1 = k;
        } else if (c < byte_commonness[(unsigned char)nd[r2]]) {
            r2 = k;
        }
    }
    *a = r1 < r2 ? r1 : r2;
    *b = r1 < r2 ? r2 : r1;
}

/* Candidate bits of sixteen positions: <u> and <v> point at the bytes that stand where the
 * filter bytes <x> and <y> stand in the needle, for the first of the sixteen. */
static inline unsigned candidates16(const char *u, const char *v, __m128i x, __m128i y)
{
    __m128i a = _mm_loadu_si128((const __m128i *)(const void *)u);
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)v);

    return (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, x),
                                                     _mm_cmpeq_epi8(b, y)));
}

/* Whether the <m> bytes at <a> and <b> are the same: a loop, not a memcmp call, so that
 * the search loop around it keeps its vectors in registers (a call clobbers them all). */
static inline bool same(const char *a, const char *b, size_t m)
{
    size_t k = 0;

    while (k < m && a[k] == b[k])
        k++;
    return k == m;
}

/* The first candidate of <mask> (bit k: position i + k) holding the whole needle, or NULL. */
static inline const char *first_match(const char *h, size_t i, uint64_t mask, const char *nd,
                                      size_t m)
{
    while (mask) {
        size_t j = i + (size_t)__builtin_ctzll(mask);
        if (same(h + j, nd, m))
            return h + j;
        mask &= mask - 1;
    }
    return NULL;
}

/* Only the candidates are compared whole. Sixty-four positions a step (four sixteens, one
 * mask: a quarter of the loop's overhead per byte), then sixteen; each width's last step
 * overlaps the one before so that it ends exactly at the last position (its earlier
 * positions held no match, so the first match found is still the first). A text shorter
 * than one step of sixteen goes to the scalar loop of the caller (*<done> false). The loads
 * stay inside the text: a position's filter bytes are at most m - 1 past it. */
static const char *find16(const char *h, size_t n, const char *nd, size_t m, bool *done)
{
    size_t i = 0, end = n - m + 1, fa, fb; /* positions 0 .. end - 1 */
    const char *ha, *hb, *r;
    __m128i x, y;

    *done = end >= 16;
    if (!*done)
        return NULL;
    rare_pair(nd, m, &fa, &fb);
    x = _mm_set1_epi8(nd[fa]);
    y = _mm_set1_epi8(nd[fb]);
    ha = h + fa;
    hb = h + fb;
    while (end >= 64) { /* left only by a return */
        uint64_t mask = (uint64_t)candidates16(ha + i, hb + i, x, y) |
                        (uint64_t)candidates16(ha + i + 16, hb + i + 16, x, y) << 16 |
                        (uint64_t)candidates16(ha + i + 32, hb + i + 32, x, y) << 32 |
                        (uint64_t)candidates16(ha + i + 48, hb + i + 48, x, y) << 48;

        if (mask && (r = first_match(h, i, mask, nd, m)))
            return r;
        if (i + 64 == end)
            return NULL;
        i = end - i - 64 >= 64 ? i + 64 : end - 64;
    }
    for (;;) {
        if ((r = first_match(h, i, candidates16(ha + i, hb + i, x, y), nd, m)))
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

const char *bsc_str_find(struct bsc_str hay, struct bsc_str needle)
{
    size_t m = needle.len;
    const char *h = hay.p, *nd = needle.p;

    if (!m || !h || hay.len < m)
        return NULL;
    if (m == 1)
        return memchr(h, nd[0], hay.len);
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
