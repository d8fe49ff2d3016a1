/* SPDX-License-Identifier: MIT */
/* test_cache_parts.c -- router/cache_parts.c: the cache key's shared parts. The scope keeps
 * tenants apart (a client-scoped route keys each caller's answers under its own scope, a
 * route-scoped one shares them), the shape keeps JSON and SSE answers apart, and the dialect
 * (the request path) keeps the OpenAI and Anthropic surfaces apart. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cache/key.h"
#include "config/config.h"
#include "router/cache_parts.h"
#include "router/req_ident.h"

static struct cfg_route route_with(enum cfg_cache_scope scope)
{
    struct cfg_route r;

    memset(&r, 0, sizeof(r));
    r.id = "r";
    r.cache.scope = scope;
    return r;
}

static struct req_ident ident_of(const char *path, const char *client_scope)
{
    struct req_ident id;

    memset(&id, 0, sizeof(id));
    snprintf(id.path, sizeof(id.path), "%s", path);
    snprintf(id.client_scope, sizeof(id.client_scope), "%s", client_scope);
    return id;
}

static void assert_str(struct bsc_str s, const char *want)
{
    assert_int_equal(s.len, strlen(want));
    assert_memory_equal(s.p, want, s.len);
}

static void key_of(const struct cfg_route *route, const struct req_ident *ident, bool stream,
                   bool usage, struct cache_key *out)
{
    char scope[REQCACHE_SCOPE_MAX];
    struct cache_key_parts parts;

    reqcache_parts(route, ident, stream, usage, scope, &parts);
    parts.canonical = BSC_STR("{\"messages\":[]}");
    cache_key_make(&parts, out);
}

static void client_scope_names_the_caller(void **state)
{
    struct cfg_route route = route_with(CFG_CACHE_CLIENT);
    struct req_ident id = ident_of("/v1/chat/completions", "key:team-a");
    char scope[REQCACHE_SCOPE_MAX];
    struct cache_key_parts parts;

    (void)state;
    reqcache_parts(&route, &id, false, false, scope, &parts);
    assert_str(parts.route, "r");
    assert_str(parts.dialect, "/v1/chat/completions");
    assert_str(parts.shape, "json");
    assert_str(parts.scope, "client:key:team-a");
    assert_ptr_equal(parts.scope.p, scope);
    assert_int_equal(parts.canonical.len, 0);
}

static void route_scope_is_shared(void **state)
{
    struct cfg_route route = route_with(CFG_CACHE_ROUTE);
    struct req_ident a = ident_of("/v1/chat/completions", "key:team-a");
    struct req_ident b = ident_of("/v1/chat/completions", "key:team-b");
    struct cache_key ka, kb;
    char scope[REQCACHE_SCOPE_MAX];
    struct cache_key_parts parts;

    (void)state;
    reqcache_parts(&route, &a, false, false, scope, &parts);
    assert_str(parts.scope, "route");
    key_of(&route, &a, false, false, &ka);
    key_of(&route, &b, false, false, &kb);
    assert_memory_equal(ka.d, kb.d, sizeof(ka.d));
}

/* Two callers of a client-scoped route never share a key; neither do two shapes or two
 * dialects of one caller. */
static void keys_keep_callers_shapes_and_dialects_apart(void **state)
{
    struct cfg_route route = route_with(CFG_CACHE_CLIENT);
    struct req_ident a = ident_of("/v1/chat/completions", "key:team-a");
    struct req_ident b = ident_of("/v1/chat/completions", "key:team-b");
    struct req_ident anth = ident_of("/v1/messages", "key:team-a");
    struct cache_key k[6];

    (void)state;
    key_of(&route, &a, false, false, &k[0]);
    key_of(&route, &b, false, false, &k[1]);
    key_of(&route, &a, true, false, &k[2]);
    key_of(&route, &a, true, true, &k[3]);
    key_of(&route, &anth, false, false, &k[4]);
    key_of(&route, &a, false, false, &k[5]);
    for (int i = 0; i < 5; i++)
        for (int j = i + 1; j < 5; j++)
            assert_memory_not_equal(k[i].d, k[j].d, sizeof(k[i].d));
    assert_memory_equal(k[0].d, k[5].d, sizeof(k[0].d)); /* and the same request, the same key */
}

static void shapes(void **state)
{
    struct cfg_route route = route_with(CFG_CACHE_ROUTE);
    struct req_ident id = ident_of("/v1/chat/completions", "");
    char scope[REQCACHE_SCOPE_MAX];
    struct cache_key_parts parts;

    (void)state;
    reqcache_parts(&route, &id, true, false, scope, &parts);
    assert_str(parts.shape, "sse");
    reqcache_parts(&route, &id, true, true, scope, &parts);
    assert_str(parts.shape, "sse+usage");
    reqcache_parts(&route, &id, false, true, scope, &parts);
    assert_str(parts.shape, "json");
}

/* The longest client scope the identity holds fits the scope text whole. */
static void longest_scope_fits(void **state)
{
    struct cfg_route route = route_with(CFG_CACHE_CLIENT);
    char longest[sizeof(((struct req_ident *)0)->client_scope)];
    struct req_ident id;
    char scope[REQCACHE_SCOPE_MAX], want[REQCACHE_SCOPE_MAX];
    struct cache_key_parts parts;

    (void)state;
    memset(longest, 'z', sizeof(longest) - 1);
    longest[sizeof(longest) - 1] = '\0';
    id = ident_of("/v1/chat/completions", longest);
    reqcache_parts(&route, &id, false, false, scope, &parts);
    snprintf(want, sizeof(want), "client:%s", longest);
    assert_str(parts.scope, want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(client_scope_names_the_caller),
        cmocka_unit_test(route_scope_is_shared),
        cmocka_unit_test(keys_keep_callers_shapes_and_dialects_apart),
        cmocka_unit_test(shapes),
        cmocka_unit_test(longest_scope_fits),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
