/* SPDX-License-Identifier: MIT */
/* fuzz-sources: src/providers/[a-z]*.c src/stream/sse_parse.c src/stream/utf8.c */
/* fuzz-sources: src/fail/taxonomy.c tests/unit/harness/openai_usage_ref.c */
/* fuzz_usage_diff.c -- differential libFuzzer target for the OpenAI-shaped usage read:
 * prov__openai_usage_read (src/providers/openai.c, one walk of the usage object and of each
 * details object, names looked up by length) against the reader it replaced
 * (tests/unit/harness/openai_usage_ref.c, bsc_json_members on each object). For every input,
 * read as a header byte and a document, it aborts unless the two give the same six figures
 * (input, output, cached, cache-write, 1-hour cache-write and reasoning tokens) for:
 *   - the document itself taken as the usage span (any bytes: nothing is validated);
 *   - the span of its top-level "usage" as the answer's check hands it over
 *     (bsc_json_check_members, the last of a repeated one; oa_map_response's path);
 *   - the span bsc_json_member finds for "usage" (the stream paths').
 * Header byte 0: bit 0 reads the Responses API's names instead of Chat Completions'; bit 1
 * builds the document from the rest instead of taking it as it is: each byte picks a
 * fragment (a wanted name with its ':', a brace, a count at an edge, an escaped or
 * ambiguous name, a scalar holding a brace...), so that repeated keys at either level and
 * nested details objects are a few bytes away rather than a lucky mutation.
 * Built and run by scripts/fuzz (tests/fuzz/usage_diff.dict, seeds in corpus/usage_diff/). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_check.h"
#include "core/json_scan.h"
#include "providers/provider.h"
#include "../unit/harness/openai_usage_ref.h"

static void die(const char *what, const uint8_t *p, size_t n)
{
    fprintf(stderr, "fuzz_usage_diff: invariant broken: %s\ninput (%zu bytes): ", what, n);
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

static bool same_usage(const struct prov_usage *a, const struct prov_usage *b)
{
    return a->input_tokens == b->input_tokens && a->output_tokens == b->output_tokens &&
           a->cached_tokens == b->cached_tokens && a->cache_write_tokens == b->cache_write_tokens &&
           a->cache_write_1h_tokens == b->cache_write_1h_tokens &&
           a->reasoning_tokens == b->reasoning_tokens;
}

/* Both readers on the span <usage>; aborts when they differ. */
static void compare(struct bsc_str usage, bool responses, const char *what, const uint8_t *p,
                    size_t n)
{
    struct prov_usage a, b;

    prov__openai_usage_read(usage, responses, &a);
    openai_usage_ref_read(usage, responses, &b);
    if (!same_usage(&a, &b))
        die(what, p, n);
}

/* The fragments of a built document (header bit 1). */
static const char *const frags[] = {
    "{", "}", ",", ":", " ", "[", "]", "\"", "{\"usage\":",
    "\"prompt_tokens\":", "\"completion_tokens\":", "\"total_tokens\":",
    "\"prompt_tokens_details\":", "\"completion_tokens_details\":",
    "\"prompt_cache_hit_tokens\":", "\"prompt_cache_miss_tokens\":",
    "\"input_tokens\":", "\"output_tokens\":", "\"input_tokens_details\":",
    "\"output_tokens_details\":", "\"cached_tokens\":", "\"cache_creation_input_tokens\":",
    "\"reasoning_tokens\":", "\"cached\\u005ftokens\":", "\"\\u0070rompt_tokens\":",
    "\"x\\ud800\":", "\"x\\u0000\":", "\"x\\\"y\":", "0", "7", "42", "18446744073709551615",
    "18446744073709551616", "9223372036854775807", "9223372036854775808", "-1", "1.5", "1e3",
    "null", "true", "\"5\"", "a{", "b[", "c\"", "{}", "[1,{\"a\":2}]"};
#define N_FRAGS (sizeof(frags) / sizeof(frags[0]))

/* The document the bytes <p> (<n>) pick, in <buf> (<cap> bytes); its length. */
static size_t build(const uint8_t *p, size_t n, char *buf, size_t cap)
{
    size_t len = 0;

    for (size_t i = 0; i < n; i++) {
        const char *f = frags[p[i] % N_FRAGS];
        size_t fl = strlen(f);

        if (len + fl > cap)
            break;
        memcpy(buf + len, f, fl);
        len += fl;
    }
    return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct bsc_str key = BSC_STR("usage");
    static char built[8192];
    struct bsc_str doc, v;
    char *copy = NULL; /* a built document, exactly its size: ASan sees a read past it */
    bool responses;

    if (size < 1)
        return 0;
    responses = data[0] & 1;
    doc = bsc_str_make((const char *)data + 1, size - 1);
    if (data[0] & 2) {
        size_t len = build(data + 1, size - 1, built, sizeof(built));

        copy = malloc(len ? len : 1);
        if (!copy)
            return 0;
        memcpy(copy, built, len);
        doc = bsc_str_make(copy, len);
    }
    compare(doc, responses, "the document as the usage span", data, size);
    if (bsc_json_check_members(doc, 128, &key, 1, &v, NULL) >= 0 && v.p)
        compare(v, responses, "the checked answer's usage", data, size);
    if (bsc_json_member(doc, key, &v) == 1)
        compare(v, responses, "the scanned answer's usage", data, size);
    free(copy);
    return 0;
}
