/* SPDX-License-Identifier: MIT */
/* cache_parts.h -- the parts of a request's cache key that every mode shares (cache_parts.c),
 * for the exact tiers (cache_req.c) and the semantic one (cache_embed.c). Router-private. */
#ifndef BSC_ROUTER_CACHE_PARTS_H
#define BSC_ROUTER_CACHE_PARTS_H

#include "cache/key.h"

#include <stdbool.h>

struct cfg_route;
struct req_ident;

#define REQCACHE_SCOPE_MAX 48

/* The key's parts every mode shares (<canonical> left empty): the <route>, the dialect (the
 * path of <ident>), the shape (<stream>, <include_usage>) and the scope (<route>'s, or the
 * client's of <ident>); <scope> holds the scope's text and must outlive <parts>. */
void reqcache_parts(const struct cfg_route *route, const struct req_ident *ident, bool stream,
                    bool include_usage, char scope[REQCACHE_SCOPE_MAX],
                    struct cache_key_parts *parts);

#endif
