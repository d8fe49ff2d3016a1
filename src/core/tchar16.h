/* SPDX-License-Identifier: MIT */
/* tchar16.h -- sixteen bytes classified at once as RFC 9110 tchar or not (SSE2), and a
 * name compared eight bytes at a time with a lowercase one, for the
 * field-name runs of the two HTTP/1.1 readers (server/h1_parse.c, upstream/h1_read.c): a
 * name is about ten bytes, which a table lookup per byte walked at five instructions each.
 * Pure, inline. docs/internals/request-cost.md. */
#ifndef BSC_CORE_TCHAR16_H
#define BSC_CORE_TCHAR16_H

#include <emmintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Whether each byte of <v> is in [<lo>, <lo> + <span>], as 0xff lanes. */
static inline __m128i bsc_tchar16_in(__m128i v, char lo, char span)
{
    __m128i d = _mm_sub_epi8(v, _mm_set1_epi8(lo));

    return _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(span)), d);
}

/* One bit a byte of the sixteen at <p> (bit 0 is p[0]): set where the byte is NOT a tchar.
 * tchar: "!#$%&'*+-.^_`|~", digits and letters, i.e. the visible bytes 0x21..0x7e but the
 * separators '"' '(' ')' ',' '/' ':' ';' '<' '=' '>' '?' '@' '[' '\' ']' '{' '}'. */
static inline unsigned bsc_tchar16_misses(const char *p)
{
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    /* signed compares: bytes 0x80..0xff are negative, so outside (0x20, 0x7f) too */
    __m128i visible = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(0x20)),
                                    _mm_cmplt_epi8(v, _mm_set1_epi8(0x7f)));
    __m128i sep = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                               _mm_cmpeq_epi8(_mm_or_si128(v, _mm_set1_epi8(1)),
                                              _mm_set1_epi8(')'))); /* '(' or ')' */

    sep = _mm_or_si128(sep, _mm_cmpeq_epi8(v, _mm_set1_epi8(',')));
    sep = _mm_or_si128(sep, _mm_cmpeq_epi8(v, _mm_set1_epi8('/')));
    sep = _mm_or_si128(sep, _mm_cmpeq_epi8(v, _mm_set1_epi8('{')));
    sep = _mm_or_si128(sep, _mm_cmpeq_epi8(v, _mm_set1_epi8('}')));
    sep = _mm_or_si128(sep, bsc_tchar16_in(v, ':', '@' - ':'));
    sep = _mm_or_si128(sep, bsc_tchar16_in(v, '[', ']' - '['));
    return (unsigned)_mm_movemask_epi8(_mm_andnot_si128(sep, visible)) ^ 0xffffu;
}

/* Whether the <n> bytes at <p> are <lower> case aside, eight at a time: <lower> holds only
 * lowercase letters and '-', and a byte of <p> matches its byte b when (byte | 0x20) == b.
 * That is the case-blind compare for bytes that cannot be CR (0x0d | 0x20 is '-'; no other
 * byte but a letter's two cases ORs into a letter): the tchar bytes of a field name, or a
 * field value's bytes, as http-parser matched its keywords ("byte | 0x20"). */
static inline bool bsc_tchar_ieq(const char *p, const char *lower, size_t n)
{
    const uint64_t case_bits = 0x2020202020202020u;
    uint64_t a, b;

    if (n < 8) {
        for (size_t i = 0; i < n; i++)
            if (((unsigned char)p[i] | 0x20) != (unsigned char)lower[i])
                return false;
        return true;
    }
    for (size_t i = 0; i + 8 < n; i += 8) {
        memcpy(&a, p + i, 8);
        memcpy(&b, lower + i, 8);
        if ((a | case_bits) != b)
            return false;
    }
    memcpy(&a, p + n - 8, 8); /* the last eight: overlaps the step before when n % 8 */
    memcpy(&b, lower + n - 8, 8);
    return (a | case_bits) == b;
}

#endif
