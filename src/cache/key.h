/* SPDX-License-Identifier: MIT */
/* key.h -- the response cache's key (docs/internals/cache.md): a SHA-256 over the parts that
 * decide an answer, each length-prefixed so no two lists of parts hash the same bytes.
 * Pure. */
#ifndef BSC_CACHE_KEY_H
#define BSC_CACHE_KEY_H

#include <stdint.h>

#include "core/sha256.h"
#include "core/str.h"

struct cache_key_parts {
    struct bsc_str route;     /* the route that answers (after select) */
    struct bsc_str dialect;   /* the client's API: its request path */
    struct bsc_str shape;     /* "json", "sse" or "sse+usage": what the answer looks like */
    struct bsc_str scope;     /* "route", or "client:" and the caller's scope */
    struct bsc_str canonical; /* canon_request's text of the body */
};

struct cache_key {
    uint8_t d[BSC_SHA256_LEN];
};

void cache_key_make(const struct cache_key_parts *p, struct cache_key *out);

#endif
