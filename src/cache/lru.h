/* SPDX-License-Identifier: MIT */
/* lru.h -- the response cache's in-memory store (cache.store: memory): answers by key,
 * shared by every worker (one mutex), bounded in bytes, the least recently used entry
 * evicted first, each entry ending at its TTL. An entry's charge is its answer, its route's
 * name and its bookkeeping, so the bound holds for small answers too. Pure (the clock is
 * the caller's). */
#ifndef BSC_CACHE_LRU_H
#define BSC_CACHE_LRU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/key.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/str.h"

struct cache_mem;

/* What is kept beside an answer's bytes. */
struct cache_meta {
    bool stream;         /* the bytes are a whole SSE stream, else one JSON body */
    double cost_usd;     /* what the answer cost when it was made: saved by each hit */
    uint64_t stored_ms;  /* wall clock, for Age */
};

struct cache_mem *cache_mem_new(void);
void cache_mem_free(struct cache_mem *m);

/* Copies the live entry of <key> into <body> and <meta> and makes it the most recently
 * used: true. False when there is none, it expired at <now_ms> (it is dropped), or <body>
 * could not take it. */
bool cache_mem_get(struct cache_mem *m, const struct cache_key *key, uint64_t now_ms,
                   struct bsc_buf *body, struct cache_meta *meta);

/* Stores <body> under <key> for <ttl_ms>, replacing an entry of the same key, then evicts the
 * least recently used entries until the whole fits <limit_bytes>. An entry that alone would
 * not fit is not stored (BSC_ELIMIT). */
enum bsc_err cache_mem_put(struct cache_mem *m, const struct cache_key *key,
                           struct bsc_str route, struct bsc_str body,
                           const struct cache_meta *meta, uint64_t ttl_ms, uint64_t now_ms,
                           uint64_t limit_bytes);

/* Drops every entry of <route> (every entry when <route> is empty); returns how many. */
size_t cache_mem_drop_route(struct cache_mem *m, struct bsc_str route);

/* Entries and bytes charged now, and entries evicted for room since the start. */
void cache_mem_usage(struct cache_mem *m, size_t *entries, uint64_t *bytes, uint64_t *evicted);

/* What one entry of <route_len> and <body_len> bytes is charged. */
uint64_t cache_mem_charge(size_t route_len, size_t body_len);

#endif
