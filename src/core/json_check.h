/* SPDX-License-Identifier: MIT */
/* json_check.h -- a strict, allocation-free JSON validator (RFC 8259: one value, nothing
 * but whitespace around it, strings of well-formed UTF-8 with no raw control characters,
 * valid escapes and numbers) with a depth bound. The OpenAI fast path validates a client
 * body with it and reads the few members it needs as byte spans (json_scan.h), so a
 * request that is only forwarded never pays for a parse tree. Plain string bytes, most of
 * a prompt, are skipped 16 at a time (SSE2; 8 at a time elsewhere), indentation 8 spaces
 * at a time. */
#ifndef BSC_CORE_JSON_CHECK_H
#define BSC_CORE_JSON_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "core/str.h"

#define BSC_JSON_MAX_DEPTH 256

struct bsc_json_error {
    size_t offset;    /* byte offset of the first offending byte */
    const char *what; /* static description */
};

/* True when <doc> is one valid JSON value nested at most <max_depth> (<= BSC_JSON_MAX_DEPTH)
 * deep. Otherwise false with *<err> set. Never reads past <doc>; never allocates. */
bool bsc_json_check(struct bsc_str doc, unsigned max_depth, struct bsc_json_error *err);

/* bsc_json_check that also records, in the same pass, the value spans of the top-level
 * members named in <keys> (vals[k] = {NULL, 0} when absent; top-level arrays have none).
 * Returns 1 valid, 0 valid but a wanted key appears more than once (vals then hold the
 * last), -1 invalid with *<err> set. */
int bsc_json_check_members(struct bsc_str doc, unsigned max_depth, const struct bsc_str *keys,
                           size_t n_keys, struct bsc_str *vals, struct bsc_json_error *err);

#endif
