/* SPDX-License-Identifier: MIT */
/* utf8.c -- validation of whole strings; see utf8.h. */
#include "core/utf8.h"

#include <stdint.h>
#include <string.h>

bool bsc_utf8_valid(const char *p, size_t len)
{
    const unsigned char *s = (const unsigned char *)p;
    size_t i = 0;

    while (i < len) {
        size_t n;
        uint64_t w;

        if (len - i >= 8) {
            memcpy(&w, s + i, 8);
            if (!(w & UINT64_C(0x8080808080808080))) {
                i += 8;
                continue;
            }
        }
        n = bsc_utf8_seq_len(s + i, len - i);
        if (!n)
            return false;
        i += n;
    }
    return true;
}

void bsc_utf8_scrub(char *s)
{
    size_t n = strlen(s), len;

    for (size_t i = 0; i < n; i += len ? len : 1) {
        len = bsc_utf8_seq_len((const unsigned char *)s + i, n - i);
        if (!len)
            s[i] = '?';
    }
}
