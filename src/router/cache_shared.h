/* SPDX-License-Identifier: MIT */
/* cache_shared.h -- the response cache kept in the state store (cache.store: redis): every
 * instance on one Redis shares the answers, kept under their route's generation (which
 * DELETE /admin/cache bumps). A lookup is one store_gen_get, time-boxed by store.timeout_ms
 * like every Redis call: a slow or failed Redis is a miss, never an error.
 * docs/internals/cache.md. */
#ifndef BSC_ROUTER_CACHE_SHARED_H
#define BSC_ROUTER_CACHE_SHARED_H

#include <stdbool.h>

#include "cache/lru.h"
#include "core/str.h"

struct request;

/* Starts the lookup of r->c.key: true when started (the callback records the answer in
 * r->c and runs the machine); false when it could not start (a miss). */
bool shcache_get(struct request *r);
/* Stores <body> under r->c.key for the route's TTL, under the generation the lookup read
 * (not stored when a DELETE moved it since); the outcome is only logged. */
void shcache_put(struct request *r, struct bsc_str body, const struct cache_meta *meta);
/* The request ends: a lookup still running no longer refers to it. */
void shcache_detach(struct request *r);

#endif
