/* SPDX-License-Identifier: MIT */
/* fuzz-sources: */
/* fuzz_str_find.c -- libFuzzer target for bsc_str_find, the substring search behind the
 * request's image gate and the answer's "error" and "tool_calls" gates. The first byte of
 * the input is the needle's length (its low 5 bits), the needle follows, the rest is the
 * text; also the needle put in quotes when the input's second byte is odd, as the answer's
 * gates look for quoted names. Aborts when the answer is not memmem's (the
 * first match; NULL for an empty needle). Built and run by scripts/fuzz. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/str.h"

static void die(const char *what)
{
    fprintf(stderr, "fuzz_str_find: invariant broken: %s\n", what);
    abort();
}

static void agree(const char *hay, size_t n, const char *nd, size_t m)
{
    const char *got = bsc_str_find(bsc_str_make(hay, n), bsc_str_make(nd, m));
    const char *want = m ? memmem(hay, n, nd, m) : NULL;

    if (got != want)
        die(got ? "a match memmem does not find first" : "a match missed");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char quoted[34], *hay;
    size_t m, n;

    if (size < 2)
        return 0;
    m = data[0] & 31;
    if (m > size - 2)
        m = size - 2;
    n = size - 2 - m;
    /* A copy of exactly the text: ASan sees any read past its end or before its start. */
    hay = malloc(n ? n : 1);
    if (!hay)
        return 0;
    memcpy(hay, data + 2 + m, n);
    agree(hay, n, (const char *)data + 2, m);
    if (data[1] & 1) {
        quoted[0] = '"';
        memcpy(quoted + 1, data + 2, m);
        quoted[m + 1] = '"';
        agree(hay, n, quoted, m + 2);
    }
    free(hay);
    return 0;
}
