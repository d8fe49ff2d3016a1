/* SPDX-License-Identifier: MIT */
/* fuzz-sources: src/upstream/head_find.c */
/* fuzz_head_find.c -- libFuzzer target for the header lookup over a kept response head
 * (upstream/head_find.c). The input is the head as an upstream could send it. Beyond "no
 * crash, no leak, no UB" it aborts when an invariant breaks:
 *   - up_head_find gives what splitting each line at its first colon gives (the first line
 *     whose name matches, case aside; the value trimmed, without its CR), the same bytes
 *     of the head;
 *   - up_head_find_each, all names in one pass, gives up_head_find's value for each.
 * Names: a fixed list, and the text before the first colon of two of the input's own lines
 * (chosen by its first bytes), so that matches happen. Built and run by scripts/fuzz. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/str.h"
#include "upstream/upstream.h"

#define N_FIXED 8
#define N_NAMES (N_FIXED + 2)

static void die(const char *what)
{
    fprintf(stderr, "fuzz_head_find: invariant broken: %s\n", what);
    abort();
}

/* The reference: each line split at its first colon, the name compared whole. */
static struct bsc_str ref_head_find(struct bsc_str head, struct bsc_str name)
{
    const char *p = head.p, *end = p ? p + head.len : NULL;

    while (p && p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        size_t line_len = eol ? (size_t)(eol - p) : (size_t)(end - p);
        const char *colon = memchr(p, ':', line_len);

        if (colon && bsc_str_ieq(bsc_str_make(p, (size_t)(colon - p)), name)) {
            struct bsc_str v = bsc_str_make(colon + 1, line_len - (size_t)(colon + 1 - p));
            if (v.len && v.p[v.len - 1] == '\r')
                v.len--;
            return bsc_str_trim(v);
        }
        p = eol ? eol + 1 : end;
    }
    return BSC_STR_NULL;
}

/* The name of the <k>th line of <head> (the text before its first colon) when it is one a
 * caller could ask for (no NUL), else an empty name. */
static struct bsc_str line_name(struct bsc_str head, unsigned k)
{
    const char *p = head.p, *end = head.p + head.len;

    while (k-- && p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        p = eol ? eol + 1 : end;
    }
    if (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        size_t line_len = eol ? (size_t)(eol - p) : (size_t)(end - p);
        const char *colon = memchr(p, ':', line_len);

        if (colon && !memchr(p, '\0', (size_t)(colon - p)))
            return bsc_str_make(p, (size_t)(colon - p));
    }
    return BSC_STR("");
}

static bool same(struct bsc_str a, struct bsc_str b)
{
    return a.p == b.p && a.len == b.len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct bsc_str names[N_NAMES] = {
        BSC_STR("x-ratelimit-remaining-requests"), BSC_STR("x-ratelimit-reset-tokens"),
        BSC_STR("content-type"), BSC_STR("Content-Length"), BSC_STR("retry-after"),
        BSC_STR("x-y"), BSC_STR("x"), BSC_STR(""),
    };
    struct bsc_str head = bsc_str_make((const char *)data, size), values[N_NAMES];

    names[N_FIXED] = line_name(head, size ? data[0] % 8 : 0);
    names[N_FIXED + 1] = line_name(head, size > 1 ? data[1] % 8 : 1);
    up_head_find_each(head, names, N_NAMES, values);
    for (size_t i = 0; i < N_NAMES; i++) {
        struct bsc_str got = up_head_find(head, names[i]);

        if (!same(got, ref_head_find(head, names[i])))
            die("up_head_find differs from the split at the first colon");
        if (!same(values[i], got))
            die("up_head_find_each differs from up_head_find");
    }
    return 0;
}
