/* SPDX-License-Identifier: MIT */
/* tchar16.h -- sixteen bytes classified at once as RFC 9110 tchar or not (SSE2), for the
 * field-name runs of the two HTTP/1.1 readers (server/h1_parse.c, upstream/h1_read.c): a
 * name is about ten bytes, which a table lookup per byte walked at five instructions each.
 * Pure, inline. docs/internals/request-cost.md. */
#ifndef BSC_CORE_TCHAR16_H
#define BSC_CORE_TCHAR16_H

#include <emmintrin.h>

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

#endif
