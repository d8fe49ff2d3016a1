/* SPDX-License-Identifier: MIT */
/* fuzz-sources: */
/* fuzz_json_parse.c -- libFuzzer target for core/json_parse.c, the one strict JSON parser.
 * The first input byte picks the depth (1..64) and the UTF-8 flag; the rest is the text.
 * Checks, aborting when one breaks: a success has no failure reason and a value that,
 * serialised by json-c and parsed again, serialises to the same text; a failure has a
 * reason in range, an offset inside the text (its length when incomplete), a line and
 * column that agree with bsc_json_line_col, and a description; trailing data sits on a
 * byte that is not blank; without <where> the answer is the same. Built and run by
 * scripts/fuzz. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/compat.h"
#include "core/json_parse.h"

static void die(const char *what)
{
    fprintf(stderr, "fuzz_json_parse: invariant broken: %s\n", what);
    abort();
}

static void check_success(struct json_object *o, const struct bsc_json_where *w, int depth)
{
    size_t len = 0, len2 = 0;
    const char *s, *s2;
    struct json_object *again;

    if (w->why != BSC_JSONP_OK)
        die("a value with a failure reason");
    s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &len);
    if (!s)
        return; /* out of memory */
    again = bsc_json_parse(bsc_str_make(s, len), depth + 1, 0, NULL);
    if (!again)
        die("a parsed value, serialised, does not parse again");
    /* Compared as text: json-c reads NaN, which equals nothing, itself included. */
    s2 = json_object_to_json_string_length(again, JSON_C_TO_STRING_PLAIN, &len2);
    if (s2 && (len2 != len || memcmp(s, s2, len) != 0))
        die("a parsed value does not survive serialising and parsing again");
    json_object_put(again);
}

static void check_failure(struct bsc_str t, const struct bsc_json_where *w)
{
    unsigned line, col;

    if (w->why <= BSC_JSONP_OK || w->why >= BSC_JSONP_COUNT)
        die("a failure without a reason in range");
    if (!w->what || !w->what[0])
        die("a failure without a description");
    if (w->offset > t.len)
        die("a failure offset past the text");
    if (w->why == BSC_JSONP_INCOMPLETE && w->offset != t.len)
        die("an incomplete text not reported at its end");
    if (w->why == BSC_JSONP_TRAILING &&
        (w->offset >= t.len || memchr(" \t\r\n", t.p[w->offset], 4)))
        die("trailing data reported on a blank byte");
    bsc_json_line_col(t, w->offset, &line, &col);
    if (line != w->line || col != w->col)
        die("line and column disagree with the offset");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct bsc_json_where w;
    struct json_object *o, *bare;
    struct bsc_str t;
    int depth;
    unsigned flags;

    if (size == 0)
        return 0;
    depth = 1 + (data[0] & 0x3f);
    flags = (data[0] & 0x40) ? BSC_JSON_UTF8 : 0;
    t = bsc_str_make((const char *)data + 1, size - 1);
    o = bsc_json_parse(t, depth, flags, &w);
    if (o)
        check_success(o, &w, depth);
    else
        check_failure(t, &w);
    bare = bsc_json_parse(t, depth, flags, NULL);
    if ((bare != NULL) != (o != NULL))
        die("the answer depends on <where>");
    json_object_put(bare);
    json_object_put(o);
    return 0;
}
