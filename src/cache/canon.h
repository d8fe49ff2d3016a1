/* SPDX-License-Identifier: MIT */
/* canon.h -- the canonical form of a request body, the part of the response cache's key
 * that says "the same request" (docs/internals/cache.md). Two bodies that any JSON parser
 * reads as the same value get the same canonical text: members sorted by their decoded
 * names, whitespace dropped, strings re-encoded one way (escapes decoded, only what JSON
 * requires escaped). Numbers keep their spelling (1.0 and 1 differ: a miss, never a wrong
 * hit). A body parsers could read differently is refused, never canonicalised: a name twice
 * in one object (at any depth: parsers keep the first or the last), a lone surrogate, bytes
 * that are not UTF-8. Top-level members the caller names (stream, user, ...) are left out.
 * Pure; its own small parser, fuzzed (tests/fuzz/fuzz_cache_canon.c). */
#ifndef BSC_CACHE_CANON_H
#define BSC_CACHE_CANON_H

#include <stddef.h>

#include "core/buf.h"
#include "core/str.h"

#define CANON_MAX_DEPTH 64

enum canon_result {
    CANON_OK = 0,
    CANON_INVALID,   /* not one JSON value, or a string that is not UTF-8 */
    CANON_DUPLICATE, /* a name twice in one object: parsers disagree on which wins */
    CANON_REFUSED,   /* nested deeper than CANON_MAX_DEPTH, a lone surrogate, or <out> full */
};

/* Appends the canonical text of <body> to <out>, leaving out the top-level members whose
 * decoded names are in <skip> (<n_skip> NUL-terminated names). On a result other than
 * CANON_OK, <out> holds nothing useful. */
enum canon_result canon_request(struct bsc_str body, const char *const *skip, size_t n_skip,
                                struct bsc_buf *out);

#endif
