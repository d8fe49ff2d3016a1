/* SPDX-License-Identifier: MIT */
/* json_check.h -- a strict, allocation-free JSON validator (RFC 8259: one value, nothing
 * but whitespace around it, strings of well-formed UTF-8 with no raw control characters,
 * valid escapes and numbers) with a depth bound, on the grammar of json_tok.h. The OpenAI
 * fast path validates a client body with it and reads the few members it needs as byte
 * spans (json_scan.h), so a request that is only forwarded never pays for a parse tree. */
#ifndef BSC_CORE_JSON_CHECK_H
#define BSC_CORE_JSON_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/json_tok.h"
#include "core/str.h"

/* The bounds of bsc_json_check_request's duplicate rule: the top-level members it tracks
 * and the length of a top-level name as written (escapes undecoded). A body past either is
 * refused rather than half-checked; OpenAI's requests have a few dozen short names. */
#define BSC_JSON_MAX_MEMBERS 256
#define BSC_JSON_MAX_NAME    256

struct bsc_json_error {
    size_t offset;       /* byte offset of the first offending byte */
    const char *what;    /* static description */
    struct bsc_str name; /* the raw top-level name concerned (duplicate, refused), else empty */
};

/* bsc_json_check_request's verdicts. */
enum bsc_json_verdict {
    BSC_JSONV_OK = 0,    /* valid, every top-level name distinct */
    BSC_JSONV_SYNTAX,    /* not one valid JSON value nested at most max_depth deep */
    BSC_JSONV_DUPLICATE, /* two top-level names decode to the same bytes */
    BSC_JSONV_REFUSED,   /* a top-level name past the bounds above, or one parsers decode
                            differently (a lone surrogate or NUL escape) */
    BSC_JSONV_ELEMENT,   /* an element of an array the caller wants objects in is not one */
    BSC_JSONV_COUNT
};

/* True when <doc> is one valid JSON value nested at most <max_depth> (<= BSC_JSON_MAX_DEPTH)
 * deep. Otherwise false with *<err> set. Never reads past <doc>; never allocates. */
bool bsc_json_check(struct bsc_str doc, unsigned max_depth, struct bsc_json_error *err);

/* bsc_json_check that also records, in the same pass, the value spans of the top-level
 * members named in <keys> (vals[k] = {NULL, 0} when absent; top-level arrays have none).
 * Names are compared decoded ("\u0075sage" is "usage"); a name parsers decode differently
 * matches no key. Returns 1 valid, 0 valid but a wanted key appears more than once (vals
 * then hold the last), -1 invalid with *<err> set. For bodies the gateway only reads. */
int bsc_json_check_members(struct bsc_str doc, unsigned max_depth, const struct bsc_str *keys,
                           size_t n_keys, struct bsc_str *vals, struct bsc_json_error *err);

/* The check for a client's request body, whose bytes the gateway forwards after reading
 * some members: bsc_json_check_members where ANY top-level name may appear only once, names
 * compared decoded, so that the member the gateway validates is the one every upstream
 * parser reads, last-wins or first-wins. Bit k of <objects> asks, in the same pass, that
 * when keys[k]'s value is an array each of its elements be an object ("messages").
 * Returns BSC_JSONV_OK with <vals> filled, or the verdict with *<err> set (err->name: the
 * second occurrence of a duplicate, the refused name, or the member holding the element).
 * Stops at the first problem; never allocates. */
enum bsc_json_verdict bsc_json_check_request(struct bsc_str doc, unsigned max_depth,
                                             const struct bsc_str *keys, size_t n_keys,
                                             uint32_t objects, struct bsc_str *vals,
                                             struct bsc_json_error *err);

#endif
