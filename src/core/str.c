/* SPDX-License-Identifier: MIT */
/* str.c -- the few non-inline slice helpers. */
#include "core/str.h"

#include <limits.h>
#include <stdlib.h>

#include "core/compat.h"

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
