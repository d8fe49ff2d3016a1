/* SPDX-License-Identifier: MIT */
/* openai_usage_ref.c -- the reference usage reader for the tests: prov__openai_usage_read
 * (src/providers/openai.c) as it was when it read the usage object and each of its details
 * objects with bsc_json_members (core/json_scan.c), every name compared with every key, kept
 * unchanged but for its name (openai_usage_ref_read) so that tests/fuzz/fuzz_usage_diff.c
 * and tests/unit/test_usage.c can feed the same bytes to it and to the dedicated reader and
 * compare every figure. Built only into the unit-test helper archive and the fuzz targets
 * that name it; never part of bascule. */
#include "openai_usage_ref.h"

#include <stdint.h>

#include "core/json_scan.h"

/* A count read from the upstream: the non-negative integer span <v>, or -1. */
static int64_t count_of(struct bsc_str v)
{
    unsigned long long n;

    if (!v.p || !bsc_json_u64(v, &n) || n > INT64_MAX)
        return -1;
    return (int64_t)n;
}

/* The counts <keys> (<n> of them, at most 2) of the object span <obj> into <out>, each -1
 * when absent, not a count, repeated, or <obj> not an object. One pass over <obj>; when it
 * refuses (a key repeated), each key is asked alone, so that one repeated key does not
 * hide the other. */
static void span_counts(struct bsc_str obj, const struct bsc_str *keys, size_t n, int64_t *out)
{
    struct bsc_str v[2] = {BSC_STR_NULL, BSC_STR_NULL};

    if (obj.p && bsc_json_kind_of(obj) == BSC_JSON_OBJECT && bsc_json_members(obj, keys, n, v) < 0)
        for (size_t k = 0; k < n; k++)
            if (bsc_json_member(obj, keys[k], &v[k]) != 1)
                v[k] = BSC_STR_NULL;
    for (size_t k = 0; k < n; k++)
        out[k] = count_of(v[k]);
}

/* <a> + <b> for counts >= 0 from the upstream, saturated instead of overflowing. */
static int64_t add_count(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

void openai_usage_ref_read(struct bsc_str usage, bool responses,
                           struct prov_usage *u)
{
    static const struct bsc_str keys[] = {
        BSC_STR("prompt_tokens"),          BSC_STR("completion_tokens"),
        BSC_STR("prompt_tokens_details"),  BSC_STR("completion_tokens_details"),
        BSC_STR("prompt_cache_hit_tokens"), BSC_STR("prompt_cache_miss_tokens")};
    static const struct bsc_str rkeys[] = {BSC_STR("input_tokens"), BSC_STR("output_tokens"),
                                           BSC_STR("input_tokens_details"),
                                           BSC_STR("output_tokens_details")};
    static const struct bsc_str details[] = {BSC_STR("cached_tokens"),
                                             BSC_STR("cache_creation_input_tokens"),
                                             BSC_STR("reasoning_tokens")};
    struct bsc_str v[6] = {BSC_STR_NULL, BSC_STR_NULL, BSC_STR_NULL,
                           BSC_STR_NULL, BSC_STR_NULL, BSC_STR_NULL};
    unsigned long long n;
    int64_t hit, miss, counts[2];

    *u = PROV_USAGE_UNKNOWN;
    if (bsc_json_kind_of(usage) != BSC_JSON_OBJECT ||
        bsc_json_members(usage, responses ? rkeys : keys, responses ? 4 : 6, v) < 0)
        return;
    if (bsc_json_u64(v[0], &n) && n <= INT64_MAX)
        u->input_tokens = (int64_t)n;
    if (bsc_json_u64(v[1], &n) && n <= INT64_MAX)
        u->output_tokens = (int64_t)n;
    /* DashScope's explicit context cache reports its writes beside the reads. */
    span_counts(v[2], details, 2, counts);
    u->cached_tokens = counts[0];
    u->cache_write_tokens = counts[1];
    span_counts(v[3], &details[2], 1, counts);
    u->reasoning_tokens = counts[0];
    /* DeepSeek: prompt_tokens = prompt_cache_hit_tokens + prompt_cache_miss_tokens. */
    hit = v[4].p && bsc_json_u64(v[4], &n) && n <= INT64_MAX ? (int64_t)n : -1;
    miss = v[5].p && bsc_json_u64(v[5], &n) && n <= INT64_MAX ? (int64_t)n : -1;
    if (u->cached_tokens < 0 && hit >= 0)
        u->cached_tokens = hit;
    if (u->input_tokens < 0 && hit >= 0 && miss >= 0)
        u->input_tokens = add_count(hit, miss);
}
