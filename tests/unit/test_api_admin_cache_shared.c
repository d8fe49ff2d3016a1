/* SPDX-License-Identifier: MIT */
/* test_api_admin_cache_shared.c -- api/admin_cache_shared.c through the request harness,
 * on a private redis-server (harness/redis_server.h): DELETE /admin/cache?route=r bumps
 * r's generation (one INCR) and answers it, after which r's stored answer is a miss;
 * without route= every route with a cache is bumped; a Redis that does not answer (the
 * server stopped with SIGSTOP) is a 503 store_unavailable within store.timeout_ms, and a
 * chat request meanwhile still gets its answer (a miss). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness/redis_server.h"
#include "harness/req_harness.h"

#define KEY "adm-harness-0123456789abcdef"
#define AUTH "Authorization: Bearer " KEY "\r\n"
#define CONFIG                                                                            \
    RH_TWO "routes:\n"                                                                    \
           "  r: { primary: [a], cache: { mode: exact, ttl_s: 600 } }\n"                  \
           "  q: { primary: [b], cache: { mode: exact, ttl_s: 600 } }\n"                  \
           "  plain: { primary: [a] }\n"                                                  \
           "admin: { key: \"" KEY "\" }\n"

static struct rs redis;

static struct rh *start(void)
{
    char yaml[1024];
    size_t n;

    rs_start(&redis);
    n = (size_t)snprintf(yaml, sizeof(yaml), "%s", CONFIG);
    rs_gateway_yaml(&redis, yaml + n, sizeof(yaml) - n);
    return rh_start(yaml, NULL);
}

static int teardown(void **state)
{
    rs_resume(&redis);
    rh_teardown(state);
    rs_stop(&redis);
    return 0;
}

static void stop(struct rh *h)
{
    rh_stop(h);
    rs_stop(&redis);
}

/* A chat on <route> whose answer is then in Redis: its x-bascule-cache is <want>. */
static void chat_expect(struct rh *h, const char *id, const char *route, const char *want)
{
    struct rh_resp res;

    rh_chat(h, id, route, "", NULL, &res);
    assert_int_equal(res.status, 200);
    rh_assert_header(&res, "x-bascule-cache", want);
    rh_resp_free(&res);
}

static void get_value(const char *key, char *out, size_t outlen)
{
    const char *argv[] = {"GET", key};

    rs_cmd(&redis, out, outlen, 2, argv);
}

static void clear_one_route(void **state)
{
    struct rh *h = start();
    struct rh_resp res;
    char keys[512], gen[64];

    (void)state;
    chat_expect(h, "d-1", "r", "miss");
    rs_wait_keys(&redis, "bascule:{cache:1:r}:*", 1, keys, sizeof(keys));
    chat_expect(h, "d-2", "r", "hit");
    rh_call(h, "DELETE", "/admin/cache?route=r", AUTH, NULL, &res);
    assert_int_equal(res.status, 200);
    assert_string_equal(res.body,
                        "{\"route\":\"r\",\"store\":\"redis\",\"generations\":{\"r\":1}}");
    rh_resp_free(&res);
    get_value("bascule:{cache:1:r}", gen, sizeof(gen));
    assert_string_equal(gen, "$1");
    chat_expect(h, "d-3", "r", "miss");
    rh_assert_path("d-3", "admit pick attempt reply done");
    stop(h);
}

static void clear_every_route(void **state)
{
    struct rh *h = start();
    struct rh_resp res;
    char keys[512], gen[64];

    (void)state;
    chat_expect(h, "e-1", "r", "miss");
    chat_expect(h, "e-2", "q", "miss");
    rs_wait_keys(&redis, "bascule:{cache:1:?}:*", 2, keys, sizeof(keys));
    chat_expect(h, "e-3", "q", "hit");
    rh_call(h, "DELETE", "/admin/cache", AUTH, NULL, &res);
    assert_int_equal(res.status, 200);
    /* the bumps answer in any order; "plain" has no cache and is not bumped */
    assert_true(rh_resp_has(&res, "\"route\":null,\"store\":\"redis\""));
    assert_true(rh_resp_has(&res, "\"r\":1"));
    assert_true(rh_resp_has(&res, "\"q\":1"));
    assert_false(rh_resp_has(&res, "plain"));
    rh_resp_free(&res);
    get_value("bascule:{cache:1:q}", gen, sizeof(gen));
    assert_string_equal(gen, "$1");
    get_value("bascule:{cache:5:plain}", gen, sizeof(gen));
    assert_string_equal(gen, "$-1");
    chat_expect(h, "e-4", "r", "miss");
    chat_expect(h, "e-5", "q", "miss");
    stop(h);
}

/* Redis accepts the connection's bytes but never answers: the clear is a 503 once
 * store.timeout_ms ran out; the lookup of a chat request times out the same way and the
 * request goes upstream. */
static void stalled_redis_is_503(void **state)
{
    struct rh *h = start();
    struct rh_resp res;

    (void)state;
    chat_expect(h, "u-1", "r", "miss"); /* the store is connected and working */
    rs_pause(&redis);
    rh_call(h, "DELETE", "/admin/cache?route=r", AUTH, NULL, &res);
    if (res.status != 503)
        fail_msg("DELETE with Redis stopped: %d %s", res.status, res.body);
    assert_true(rh_resp_has(&res, "store_unavailable"));
    rh_resp_free(&res);
    chat_expect(h, "u-2", "r", "miss");
    rs_resume(&redis);
    stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(clear_one_route, teardown),
        cmocka_unit_test_teardown(clear_every_route, teardown),
        cmocka_unit_test_teardown(stalled_redis_is_503, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
