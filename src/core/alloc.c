/* SPDX-License-Identifier: MIT */
/* alloc.c -- boot-time allocation that aborts with a message on failure. */
#include "core/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/compat.h"

static void *check(void *p, size_t n)
{
    if (!p && n) {
        fprintf(stderr, "bascule: out of memory allocating %zu bytes\n", n);
        abort();
    }
    return p;
}

void *bsc_xmalloc(size_t n)
{
    return check(malloc(n ? n : 1), n);
}

void *bsc_xcalloc(size_t n, size_t size)
{
    return check(calloc(n ? n : 1, size ? size : 1), n * size);
}

char *bsc_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = bsc_xmalloc(n);

    memcpy(p, s, n);
    return p;
}
