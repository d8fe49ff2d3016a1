/* SPDX-License-Identifier: MIT */
/* cache_parts.c -- the shared parts of a request's cache key (cache_parts.h). */
#include "router/cache_parts.h"

#include <stdio.h>

#include "core/str.h"
#include "config/config.h"
#include "router/req_ident.h"

static const char *shape_of(bool stream, bool include_usage)
{
    if (!stream)
        return "json";
    return include_usage ? "sse+usage" : "sse";
}

void reqcache_parts(const struct cfg_route *route, const struct req_ident *ident, bool stream,
                    bool include_usage, char scope[REQCACHE_SCOPE_MAX],
                    struct cache_key_parts *parts)
{
    if (route->cache.scope == CFG_CACHE_ROUTE)
        snprintf(scope, REQCACHE_SCOPE_MAX, "route");
    else
        snprintf(scope, REQCACHE_SCOPE_MAX, "client:%s", ident->client_scope);
    *parts = (struct cache_key_parts){
        .route = bsc_str_cstr(route->id),
        .dialect = bsc_str_cstr(ident->path),
        .shape = bsc_str_cstr(shape_of(stream, include_usage)),
        .scope = bsc_str_cstr(scope),
    };
}
