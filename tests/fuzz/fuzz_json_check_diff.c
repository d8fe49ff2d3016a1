/* SPDX-License-Identifier: MIT */
/* fuzz-sources: tests/unit/harness/json_check_ref.c */
/* fuzz_json_check_diff.c -- differential libFuzzer target for the request checks' member
 * walk: src/core/json_check.c (one bsc_json_tok_member call a top-level member) against the
 * token-by-token checks it replaced (tests/unit/harness/json_check_ref.c). For every input,
 * read as a header byte pair and a document, it aborts unless bsc_json_check,
 * bsc_json_check_members and bsc_json_check_request give exactly what the reference gives:
 *   - the same return (accepted, repeated, verdict);
 *   - on a failure the same error offset, the same message (compared as text: the two
 *     files' literals are distinct objects) and the same name (the same bytes of the input,
 *     pointer and length);
 *   - the same value span for every wanted key (pointer and length), found or absent.
 * Header byte 0: bits 0-2 the depth bound (0, 1, 2, 3, 8, 64, 128, 256 -- clamped), bits 3-4
 * the key set (a few short names a chat request or an answer has; those and "messages" asked
 * twice; 70 names, past the by-length index; none). Header byte 1: the element rule's mask (repeated
 * over the 32 bits; none with the 70 names: the mask has a bit for the first 32 keys only).
 * Built and run by scripts/fuzz (tests/fuzz/json_check.dict, seeds in
 * corpus/json_check_diff/). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_check.h"
#include "../unit/harness/json_check_ref.h"

#define MANY 70

static void die(const char *what, const uint8_t *p, size_t n)
{
    fprintf(stderr, "fuzz_json_check_diff: invariant broken: %s\ninput (%zu bytes): ", what, n);
    for (size_t i = 0; i < n && i < 512; i++) {
        unsigned char c = p[i];

        if (c >= 0x20 && c < 0x7f && c != '\\')
            fputc(c, stderr);
        else
            fprintf(stderr, "\\x%02x", c);
    }
    fputc('\n', stderr);
    abort();
}

static bool same_str(struct bsc_str a, struct bsc_str b)
{
    return a.p == b.p && a.len == b.len;
}

static bool same_err(const struct bsc_json_error *a, const struct bsc_json_error *b)
{
    if (a->offset != b->offset || !same_str(a->name, b->name))
        return false;
    if (!a->what || !b->what)
        return a->what == b->what;
    return strcmp(a->what, b->what) == 0;
}

static bool same_vals(const struct bsc_str *a, const struct bsc_str *b, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (!same_str(a[k], b[k]))
            return false;
    return true;
}

/* The key set <which> into <keys>; returns how many. */
static size_t key_set(unsigned which, struct bsc_str *keys, char many[MANY][8])
{
    static const char *const few[] = {"model", "messages", "usage", "choices", "a", "b", "",
                                      "tools", "\xc3\xa9", "ab"};
    size_t n = 0;

    switch (which) {
    case 0:
    case 1:
        for (size_t k = 0; k < sizeof(few) / sizeof(few[0]); k++)
            keys[n++] = bsc_str_cstr(few[k]);
        if (which == 1)
            keys[n++] = BSC_STR("messages");
        return n;
    case 2:
        for (size_t k = 0; k < MANY; k++) {
            snprintf(many[k], sizeof(many[k]), "%c%zu", (char)('a' + k % 3), k / 3);
            keys[n++] = bsc_str_make(many[k], strlen(many[k]));
        }
        keys[0] = BSC_STR("a");
        keys[1] = BSC_STR("b");
        return n;
    default: return 0;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const unsigned depths[] = {0, 1, 2, 3, 8, 64, 128, 256};
    struct bsc_str keys[MANY + 1], va[MANY + 1], vb[MANY + 1];
    char many[MANY][8];
    struct bsc_json_error ea, eb;
    struct bsc_str doc;
    unsigned depth;
    uint32_t objects;
    size_t n;

    if (size < 2)
        return 0;
    depth = depths[data[0] & 7];
    n = key_set((data[0] >> 3) & 3, keys, many);
    /* Bit k of <objects> is keys[k]'s: a mask reaches the first 32 keys only (the 70-name
     * set asks for no element rule). */
    objects = n <= 32 ? (uint32_t)data[1] * 0x01010101u : 0;
    doc = bsc_str_make((const char *)data + 2, size - 2);

    memset(&ea, 0, sizeof(ea));
    memset(&eb, 0, sizeof(eb));
    if (bsc_json_check(doc, depth, &ea) != json_check_ref(doc, depth, &eb) ||
        !same_err(&ea, &eb))
        die("bsc_json_check differs from the reference", data, size);

    memset(&ea, 0, sizeof(ea));
    memset(&eb, 0, sizeof(eb));
    if (bsc_json_check_members(doc, depth, keys, n, va, &ea) !=
        json_check_ref_members(doc, depth, keys, n, vb, &eb))
        die("bsc_json_check_members returns differ", data, size);
    if (!same_err(&ea, &eb) || !same_vals(va, vb, n))
        die("bsc_json_check_members error or spans differ", data, size);

    memset(&ea, 0, sizeof(ea));
    memset(&eb, 0, sizeof(eb));
    if (bsc_json_check_request(doc, depth, keys, n, objects, va, &ea) !=
        json_check_ref_request(doc, depth, keys, n, objects, vb, &eb))
        die("bsc_json_check_request verdicts differ", data, size);
    if (!same_err(&ea, &eb) || !same_vals(va, vb, n))
        die("bsc_json_check_request error or spans differ", data, size);
    return 0;
}
