/* SPDX-License-Identifier: MIT */
/* cache_embed.h -- the semantic cache's side of one request (routes.<r>.cache.mode:
 * semantic; docs/internals/cache.md): the context key (the canonical request without its
 * last user message), that message's text, and its embedding by the route's
 * embeddings_target in a small exchange of its own, bounded by embed_timeout_ms. Any
 * failure (no key usable, a refused call, a timeout, an answer without a vector) leaves no
 * vector: a miss, never an error. Router-private. */
#ifndef BSC_ROUTER_CACHE_EMBED_H
#define BSC_ROUTER_CACHE_EMBED_H

#include <stdbool.h>

struct request;

/* Sets r->c.key to the request's context key and keeps the last user message's text for
 * the embedding. False when the request has no such message (no "messages", a last user
 * message with other than text parts) or cannot be canonicalised: not cached (bypass). */
bool reqcache_embed_key(struct request *r);

/* Starts the embedding of the kept text: true, and r->c.waiting is set until the answer
 * comes back (then r->c.vec holds the unit vector, or stays NULL on any failure, and the
 * machine runs: never from inside this call). False when it could not start (a miss). */
bool reqcache_embed_start(struct request *r);

/* The request ends: a running embedding is cancelled (no callback afterwards) and the
 * request's vector and text are freed. */
void reqcache_embed_finish(struct request *r);

#endif
