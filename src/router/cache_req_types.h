/* SPDX-License-Identifier: MIT */
/* cache_req_types.h -- struct reqcache, struct request's member <c> (cache_req.c,
 * cache_shared.c and cache_embed.c write it); types only: the functions are in cache_req.h.
 * Router-private. */
#ifndef BSC_ROUTER_CACHE_REQ_TYPES_H
#define BSC_ROUTER_CACHE_REQ_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/key.h"
#include "cache/lru.h"
#include "core/buf.h"
#include "core/str.h"
#include "server/server.h"

struct reqcache {
    const char *result;   /* static: "hit", "miss" or "bypass"; NULL: the route has no cache */
    bool keyed;           /* <key> holds the request's key */
    bool no_store;        /* Cache-Control: no-store, or a body that cannot be keyed */
    bool overflow;        /* the answer passed max_entry_bytes: not stored */
    struct cache_key key;
    struct bsc_buf copy;  /* owned: the client's bytes as they went out */
    /* cache.store: redis (cache_shared.c): the lookup in flight and what it found. */
    bool asked;           /* a shared lookup was started: its answer decides */
    bool waiting;         /* ... and has not come back yet */
    bool found;           /* it found <hit> */
    bool gen_read;        /* it read the route's generation <gen>: the store is under it */
    uint64_t gen;
    void *shared;         /* the lookup's context while it runs */
    struct bsc_buf hit;   /* owned: the answer found */
    struct cache_meta hit_meta;
    /* mode: semantic (cache_embed.c): <key> is the context key; the question, its
     * embedding in flight, then its unit vector (NULL: none, a miss and nothing stored). */
    struct bsc_buf question; /* owned: the last user message's text */
    void *embed;             /* the embedding's context while it runs */
    float *vec;              /* owned: <dim> floats */
    size_t dim;
    double similarity;       /* a hit's cosine */
    double embed_cost_usd;   /* what the embedding cost (in the request's cost_usd too) */
};

/* The x-bascule-cache header of an answer: 0 or 1 header put in <h>. */
static inline size_t reqcache_header(const struct reqcache *c, struct srv_header *h)
{
    if (!c->result)
        return 0;
    h[0] = (struct srv_header){BSC_STR("x-bascule-cache"), bsc_str_cstr(c->result)};
    return 1;
}

#endif
