/* SPDX-License-Identifier: MIT */
/* cache_parts.h -- the parts of a request's cache key that every mode shares (cache_parts.c),
 * for the exact tiers (cache_req.c) and the semantic one (cache_embed.c). Router-private. */
#ifndef BSC_ROUTER_CACHE_PARTS_H
#define BSC_ROUTER_CACHE_PARTS_H

#include "cache/key.h"

struct request;

#define REQCACHE_SCOPE_MAX 48

/* The key's parts every mode shares (route, dialect, shape, scope; <canonical> left empty)
 * for <r>; <scope> holds the scope's text and must outlive <parts>. */
void reqcache_parts(const struct request *r, char scope[REQCACHE_SCOPE_MAX],
                     struct cache_key_parts *parts);

#endif
