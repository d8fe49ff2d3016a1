/* SPDX-License-Identifier: MIT */
/* cache_req.h -- one request's side of the response cache (routes.<r>.cache; the store is
 * cache/lru.h; docs/internals/cache.md). ADMIT looks the answer up last among its checks
 * (a hit is answered there, no attempt made); deliver.c hands it the client's bytes as they
 * go out; they are stored as the answer ends whole and successful (deliver.c). */
#ifndef BSC_ROUTER_CACHE_REQ_H
#define BSC_ROUTER_CACHE_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/key.h"
#include "cache/lru.h"
#include "core/buf.h"
#include "router/cache_parts.h"
#include "router/cache_req_types.h"

struct request;
struct srv_header;

enum reqcache_verdict { REQCACHE_PASS, REQCACHE_WAIT, REQCACHE_ANSWERED };


/* ADMIT's check: REQCACHE_ANSWERED when the request was answered from the cache (the machine
 * ends it), REQCACHE_WAIT while a shared lookup runs (its callback runs the machine, which calls
 * this again), else REQCACHE_PASS. */
enum reqcache_verdict reqcache_lookup(struct request *r);
/* Keeps a copy of <len> bytes the client is sent. */
void reqcache_record(struct request *r, const void *p, size_t len);
/* The answer is whole and about to end: stored when successful, before its last bytes are
 * handed to the socket, so a client that asks again as soon as it has read the answer finds
 * it (its next request may run on another worker before this one's bookkeeping). */
void reqcache_store(struct request *r);
/* The request ends: the copy is freed. */
void reqcache_finish(struct request *r);

#endif
