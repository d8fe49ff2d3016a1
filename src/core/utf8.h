/* SPDX-License-Identifier: MIT */
/* utf8.h -- well-formed UTF-8, the one definition every parser and check shares: Unicode
 * table 3-7 (no overlongs, no surrogates, nothing past U+10FFFF, no stray continuation
 * bytes, no truncated sequences). Chunk boundaries and replacement live in stream/utf8.h. */
#ifndef BSC_CORE_UTF8_H
#define BSC_CORE_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* What the lead byte <b> (>= 0x80) asks for: the sequence length and the range of its second
 * byte (E0, ED, F0 and F4 narrow it to rule out overlongs, surrogates and code points past
 * U+10FFFF; every other continuation byte is 80..BF). False for a byte that cannot lead:
 * a continuation byte, an overlong lead (C0, C1) or F5..FF. */
static inline bool bsc_utf8_lead(unsigned char b, size_t *need, unsigned char *lo,
                                 unsigned char *hi)
{
    *lo = 0x80;
    *hi = 0xbf;
    if (b < 0xc2 || b > 0xf4)
        return false;
    if (b < 0xe0) {
        *need = 2;
    } else if (b < 0xf0) {
        *need = 3;
        *lo = b == 0xe0 ? 0xa0 : 0x80;
        *hi = b == 0xed ? 0x9f : 0xbf;
    } else {
        *need = 4;
        *lo = b == 0xf0 ? 0x90 : 0x80;
        *hi = b == 0xf4 ? 0x8f : 0xbf;
    }
    return true;
}

/* The length (1..4) of the well-formed sequence at <p>, of which <n> >= 1 bytes may be
 * read; 0 when it is ill-formed or cut short. */
static inline size_t bsc_utf8_seq_len(const unsigned char *p, size_t n)
{
    unsigned char lo, hi;
    size_t need;

    if (p[0] < 0x80)
        return 1;
    if (!bsc_utf8_lead(p[0], &need, &lo, &hi) || n < need || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < need; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    return need;
}

/* True when all <len> bytes at <p> are well-formed UTF-8. ASCII runs go 8 bytes a step. */
bool bsc_utf8_valid(const char *p, size_t len);

/* Makes the NUL-terminated <s> well-formed in place: each byte that does not start a
 * well-formed sequence (a stray or cut character, such as one a snprintf cut at its
 * buffer's end) becomes '?'. For text a client reads, built from what a client sent. */
void bsc_utf8_scrub(char *s);

#endif
