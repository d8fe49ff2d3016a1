/* SPDX-License-Identifier: MIT */
/* semantic.h -- the semantic response cache's in-memory index (routes.<r>.cache.mode:
 * semantic; docs/internals/cache.md). Answers are grouped by their context key (a hash of
 * everything that must match exactly: route, dialect, shape, scope, the request without its
 * last user message, the embeddings target); each group holds its entries' unit vectors in
 * one contiguous array, so a lookup scans, by brute force, only the entries of the same
 * context. Bounded in bytes (answers, vectors, bookkeeping) with the least recently used
 * entry evicted first, and in entries per route. Shared by every worker (one mutex). Pure:
 * the clock is the caller's. */
#ifndef BSC_CACHE_SEMANTIC_H
#define BSC_CACHE_SEMANTIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/key.h"
#include "cache/lru.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/str.h"

/* The longest vector the index takes (OpenAI's text-embedding-3-large has 3072). */
#define CACHE_SEM_MAX_DIM 8192u

struct cache_sem;

/* What a put is bounded by. */
struct cache_sem_bounds {
    uint64_t limit_bytes; /* every entry of the index together (cache.memory_mb) */
    size_t max_entries;   /* entries of the put's route (routes.<r>.cache.max_entries) */
};

struct cache_sem *cache_sem_new(void);
void cache_sem_free(struct cache_sem *s);

/* Scales the <dim> floats of <v> to unit length in place. False (and <v> unchanged) when
 * the vector is zero, or holds a value that is not finite: it cannot be compared. */
bool cache_sem_normalize(float *v, size_t dim);

/* The dot product of <a> and <b> (<dim> floats each): their cosine when both are unit
 * vectors. */
double cache_sem_dot(const float *a, const float *b, size_t dim);

/* Looks in the group of <ctx> for the live entry whose vector is the closest to the unit
 * vector <vec> (<dim> floats), with a cosine of at least <min_sim>. Found: its answer is
 * copied into <body> and <meta>, *<sim> set, it becomes the most recently used, true.
 * Entries past their TTL at <now_ms> met on the way are dropped. False when none is close
 * enough, or <body> could not take the answer. */
bool cache_sem_get(struct cache_sem *s, const struct cache_key *ctx, const float *vec, size_t dim,
                   double min_sim, uint64_t now_ms, struct bsc_buf *body, struct cache_meta *meta,
                   double *sim);

/* Stores <body> with the unit vector <vec> (<dim> floats, 1..CACHE_SEM_MAX_DIM) in the
 * group of <ctx>, for <ttl_ms>, in constant time: an entry with the same vector is not
 * looked for (two misses of one question stored at once are two entries, both bounded like
 * any other; a lookup returns the closest). Then evicts the least recently used entries of <route> past
 * <b->max_entries>, and the least recently used of all until the whole fits
 * <b->limit_bytes>. BSC_ELIMIT: the entry alone would not fit (not stored); BSC_EINVAL:
 * <dim> is out of range or differs from the group's; BSC_ENOMEM. */
enum bsc_err cache_sem_put(struct cache_sem *s, const struct cache_key *ctx, struct bsc_str route,
                           const float *vec, size_t dim, struct bsc_str body,
                           const struct cache_meta *meta, uint64_t ttl_ms, uint64_t now_ms,
                           const struct cache_sem_bounds *b);

/* Drops every entry of <route> (every entry when <route> is empty); returns how many. */
size_t cache_sem_drop_route(struct cache_sem *s, struct bsc_str route);

/* Entries and bytes charged now, and entries evicted for room since the start. */
void cache_sem_usage(struct cache_sem *s, size_t *entries, uint64_t *bytes, uint64_t *evicted);

/* What one entry is charged: its answer, its vector, its route's name and its
 * bookkeeping (its slot in the group's arrays included). */
uint64_t cache_sem_charge(size_t route_len, size_t body_len, size_t dim);

#endif
