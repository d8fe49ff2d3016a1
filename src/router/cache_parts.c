/* SPDX-License-Identifier: MIT */
/* cache_parts.c -- the shared parts of a request's cache key (cache_parts.h). */
#include "router/cache_parts.h"

#include <stdio.h>

#include "core/str.h"
#include "router/internal.h"

static const char *shape_of(const struct request *r)
{
    if (!r->input.stream)
        return "json";
    return r->input.include_usage ? "sse+usage" : "sse";
}

void reqcache_parts(const struct request *r, char scope[REQCACHE_SCOPE_MAX],
                     struct cache_key_parts *parts)
{
    if (r->route->cache.scope == CFG_CACHE_ROUTE)
        snprintf(scope, REQCACHE_SCOPE_MAX, "route");
    else
        snprintf(scope, REQCACHE_SCOPE_MAX, "client:%s", r->ident.client_scope);
    *parts = (struct cache_key_parts){
        .route = bsc_str_cstr(r->route->id),
        .dialect = bsc_str_cstr(r->ident.path),
        .shape = bsc_str_cstr(shape_of(r)),
        .scope = bsc_str_cstr(scope),
    };
}
