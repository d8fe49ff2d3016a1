/* SPDX-License-Identifier: MIT */
/* test_cache_shared.c -- router/cache_shared.c through the request harness, on a private
 * redis-server (harness/redis_server.h): a route's answer is stored in Redis under the
 * route's generation group ("<prefix>{cache:<len>:<route>}:<key in hex>", value
 * "<generation> bsc-cache-1 ..."), the repeat is answered from it in ADMIT, a request with
 * Cache-Control: no-store writes nothing, and an entry of an older generation is a miss. */
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

#define ROUTES "routes:\n  r: { primary: [a], cache: { mode: exact, ttl_s: 600 } }\n"
#define ENTRIES "bascule:{cache:1:r}:*"
#define GEN_KEY "bascule:{cache:1:r}"

static struct rs redis;

static struct rh *start(void)
{
    char yaml[1024];
    size_t n;

    rs_start(&redis);
    n = (size_t)snprintf(yaml, sizeof(yaml), "%s", RH_TWO ROUTES);
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

/* The value of the one entry of route r, as rs_cmd gives it ("$<bytes>"). */
static void entry_value(char *out, size_t outlen)
{
    char keys[512];
    const char *argv[2] = {"GET", NULL};

    rs_wait_keys(&redis, ENTRIES, 1, keys, sizeof(keys));
    argv[1] = strchr(keys, '\n') + 2; /* "*1\n$<key>" */
    rs_cmd(&redis, out, outlen, 2, argv);
}

static void miss_then_hit_from_redis(void **state)
{
    struct rh *h = start();
    struct rh_resp one, two;
    char value[8192];

    (void)state;
    rh_chat(h, "s-1", "r", "", NULL, &one);
    assert_int_equal(one.status, 200);
    rh_assert_header(&one, "x-bascule-cache", "miss");
    rh_assert_path("s-1", "admit pick attempt reply done");
    entry_value(value, sizeof(value));
    /* generation 0 (no bump yet), the value's header line, then the answer's bytes */
    assert_true(strncmp(value, "$0 bsc-cache-1 0 ", 17) == 0);
    assert_non_null(strstr(value, "\"choices\""));
    rh_chat(h, "s-2", "r", "", NULL, &two);
    assert_int_equal(two.status, 200);
    rh_assert_header(&two, "x-bascule-cache", "hit");
    rh_assert_header(&two, "x-bascule-attempts", "0");
    rh_assert_path("s-2", "admit done");
    assert_string_equal(strstr(one.body, "\"choices\""), strstr(two.body, "\"choices\""));
    rh_resp_free(&one);
    rh_resp_free(&two);
    stop(h);
}

/* no-store: answered, never written. The store's jobs go out in order on one connection,
 * so the same request after it would find its entry; it misses, its own entry is the only
 * one, and the one after that hits. */
static void no_store_writes_nothing(void **state)
{
    struct rh *h = start();
    struct rh_resp one, two;
    char keys[512];

    (void)state;
    rh_chat(h, "ns-1", "r", "", "Cache-Control: no-store\r\n", &one);
    assert_int_equal(one.status, 200);
    rh_chat(h, "ns-2", "r", "", NULL, &two);
    assert_int_equal(two.status, 200);
    rh_assert_header(&two, "x-bascule-cache", "miss");
    rh_assert_path("ns-2", "admit pick attempt reply done");
    rs_wait_keys(&redis, ENTRIES, 1, keys, sizeof(keys));
    assert_true(strncmp(keys, "*1\n", 3) == 0);
    rh_resp_free(&one);
    rh_resp_free(&two);
    rh_chat(h, "ns-3", "r", "", NULL, &one);
    rh_assert_header(&one, "x-bascule-cache", "hit");
    rh_resp_free(&one);
    stop(h);
}

/* An entry written under generation 0 is not an answer once the route's generation moved
 * on (what DELETE /admin/cache does on every instance). */
static void older_generation_misses(void **state)
{
    struct rh *h = start();
    struct rh_resp one, two;
    char value[8192], keys[512];
    const char *incr[] = {"INCR", GEN_KEY};

    (void)state;
    rh_chat(h, "g-1", "r", "", NULL, &one);
    rh_assert_header(&one, "x-bascule-cache", "miss");
    rs_wait_keys(&redis, ENTRIES, 1, keys, sizeof(keys));
    rs_cmd(&redis, value, sizeof(value), 2, incr);
    assert_string_equal(value, ":1");
    rh_chat(h, "g-2", "r", "", NULL, &two);
    rh_assert_header(&two, "x-bascule-cache", "miss");
    rh_assert_path("g-2", "admit pick attempt reply done");
    rh_resp_free(&one);
    rh_resp_free(&two);
    stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(miss_then_hit_from_redis, teardown),
        cmocka_unit_test_teardown(no_store_writes_nothing, teardown),
        cmocka_unit_test_teardown(older_generation_misses, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
