/* SPDX-License-Identifier: MIT */
/* utf8.h -- well-formed UTF-8, the one definition every parser and check shares: Unicode
 * table 3-7 (no overlongs, no surrogates, nothing past U+10FFFF, no stray continuation
 * bytes, no truncated sequences). Chunk boundaries and replacement live in stream/utf8.h. */
#ifndef BSC_CORE_UTF8_H
#define BSC_CORE_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* The length (1..4) of the well-formed sequence at <p>, of which <n> >= 1 bytes may be
 * read; 0 when it is ill-formed or cut short. The second byte's range depends on the lead
 * (E0, ED, F0 and F4 narrow it); every other continuation byte is 80..BF. */
static inline size_t bsc_utf8_seq_len(const unsigned char *p, size_t n)
{
    unsigned char b = p[0], lo = 0x80, hi = 0xbf;
    size_t need;

    if (b < 0x80)
        return 1;
    if (b < 0xc2 || b > 0xf4)
        return 0; /* a continuation byte, an overlong lead (C0, C1) or F5..FF */
    if (b < 0xe0) {
        need = 2;
    } else if (b < 0xf0) {
        need = 3;
        lo = b == 0xe0 ? 0xa0 : 0x80;
        hi = b == 0xed ? 0x9f : 0xbf;
    } else {
        need = 4;
        lo = b == 0xf0 ? 0x90 : 0x80;
        hi = b == 0xf4 ? 0x8f : 0xbf;
    }
    if (n < need || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < need; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    return need;
}

/* True when all <len> bytes at <p> are well-formed UTF-8. ASCII runs go 8 bytes a step. */
bool bsc_utf8_valid(const char *p, size_t len);

#endif
