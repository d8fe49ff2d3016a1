/* SPDX-License-Identifier: MIT */
/* cache_shared.h -- the response cache kept in the state store (cache.store: redis): every
 * instance on one Redis shares the answers, kept under their route's generation (which
 * DELETE /admin/cache bumps). A lookup is one store_gen_get, time-boxed by store.timeout_ms
 * like every Redis call: a slow or failed Redis is a miss, never an error.
 * docs/internals/cache.md. */
#ifndef BSC_ROUTER_CACHE_SHARED_H
#define BSC_ROUTER_CACHE_SHARED_H

#include <stdbool.h>

#include <uv.h>

#include "cache/lru.h"
#include "core/err.h"
#include "core/str.h"

struct cfg_route;
struct reqcache;
struct store;

/* Called on the loop when a lookup answered (the answer recorded in its struct reqcache):
 * <err> the store's, BSC_ENOTFOUND a plain miss. */
typedef void shcache_done_fn(void *arg, enum bsc_err err);

/* Starts the lookup of c->key in <st>, in <route>'s group; true when started (the answer is
 * recorded in <c>, then <done>(<arg>) runs); false when it could not start (a miss). */
bool shcache_get(struct reqcache *c, struct store *st, uv_loop_t *loop,
                 const struct cfg_route *route, shcache_done_fn *done, void *arg);
/* Stores <body> under c->key for <route>'s TTL, under the generation the lookup read (not
 * stored when a DELETE moved it since); the outcome is only logged. */
void shcache_put(const struct reqcache *c, struct store *st, uv_loop_t *loop,
                 const struct cfg_route *route, struct bsc_str body,
                 const struct cache_meta *meta);
/* The request ends: a lookup still running no longer refers to <c>, nor calls back. */
void shcache_detach(struct reqcache *c);

#endif
