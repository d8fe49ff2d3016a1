/* SPDX-License-Identifier: MIT */
/* ascii.h -- ASCII case folding inline, for the per-request header-name compares: what
 * strncasecmp() does in the C locale (the gateway never calls setlocale()), without a call
 * into libc per candidate name. docs/internals/request-cost.md. */
#ifndef BSC_CORE_ASCII_H
#define BSC_CORE_ASCII_H

#include <stdbool.h>
#include <stddef.h>

/* <c> with A-Z lowered; every other byte (including 0x80-0xff) as it is. */
static inline unsigned char bsc_ascii_lower(unsigned char c)
{
    return (unsigned char)(c - 'A') < 26u ? (unsigned char)(c | 0x20) : c;
}

/* Whether the <n> bytes at <a> and <b> are equal, A-Z and a-z alike. Equal to
 * strncasecmp(a, b, n) == 0 in the C locale whenever <b> holds no NUL in its first <n>
 * bytes (strncasecmp stops at a NUL in both; this compares all <n>). The first byte is
 * looked at before anything else, so a name that differs there costs two loads. */
static inline bool bsc_ascii_ieq(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];

        if (x != y && bsc_ascii_lower(x) != bsc_ascii_lower(y))
            return false;
    }
    return true;
}

#endif
