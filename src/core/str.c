/* SPDX-License-Identifier: MIT */
/* str.c -- the few non-inline slice helpers. */
#include "core/str.h"

#include <limits.h>
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
/* The candidates are the positions whose byte is the needle's first and whose byte
 * m - 1 further is its last; only those are compared whole. Scans while sixteen
 * positions fit; returns the index reached in *<at> when nothing was found. */
static const char *find16(const char *h, size_t n, const char *nd, size_t m, size_t *at)
{
    const __m128i first = _mm_set1_epi8(nd[0]), last = _mm_set1_epi8(nd[m - 1]);
    size_t i = 0;

    for (; n - i >= m - 1 + 16; i += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(h + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(h + i + m - 1));
        unsigned mask = (unsigned)_mm_movemask_epi8(
            _mm_and_si128(_mm_cmpeq_epi8(a, first), _mm_cmpeq_epi8(b, last)));

        while (mask) {
            size_t j = i + (size_t)__builtin_ctz(mask);
            if (memcmp(h + j + 1, nd + 1, m - 2) == 0)
                return h + j;
            mask &= mask - 1;
        }
    }
    *at = i;
    return NULL;
}
#endif

const char *bsc_str_find(struct bsc_str hay, struct bsc_str needle)
{
    size_t i = 0, m = needle.len;
    const char *r;

    if (!m || !hay.p || hay.len < m)
        return NULL;
    if (m == 1)
        return memchr(hay.p, needle.p[0], hay.len);
#ifdef __SSE2__
    if ((r = find16(hay.p, hay.len, needle.p, m, &i)))
        return r;
#endif
    r = memmem(hay.p + i, hay.len - i, needle.p, m);
    return r;
}
