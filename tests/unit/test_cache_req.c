/* SPDX-License-Identifier: MIT */
/* test_cache_req.c -- router/cache_req.c through the request harness: a route's response
 * cache answers a repeat in ADMIT (ADMIT -> DONE, no attempt), and Cache-Control: no-cache
 * skips the lookup. */
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

#include "harness/req_harness.h"

#define CACHED RH_TWO "routes:\n  r: { primary: [a], cache: { mode: exact, ttl_s: 600 } }\n"

static void repeat_served_from_cache(void **state)
{
    struct rh *h = rh_start(CACHED, NULL);
    struct rh_resp one, two;

    (void)state;
    rh_chat(h, "c-1", "r", "", NULL, &one);
    rh_chat(h, "c-2", "r", "", NULL, &two);
    assert_int_equal(one.status, 200);
    rh_assert_header(&one, "x-bascule-cache", "miss");
    assert_int_equal(two.status, 200);
    rh_assert_header(&two, "x-bascule-cache", "hit");
    rh_assert_header(&two, "x-bascule-attempts", "0");
    rh_assert_path("c-2", "admit done");
    assert_string_equal(strstr(one.body, "\"choices\""), strstr(two.body, "\"choices\""));
    rh_resp_free(&one);
    rh_resp_free(&two);
    rh_stop(h);
}

static void no_cache_bypasses(void **state)
{
    struct rh *h = rh_start(CACHED, NULL);
    struct rh_resp one, two;

    (void)state;
    rh_chat(h, "nc-1", "r", "", NULL, &one);
    rh_chat(h, "nc-2", "r", "", "Cache-Control: no-cache\r\n", &two);
    assert_int_equal(two.status, 200);
    rh_assert_header(&two, "x-bascule-cache", "bypass");
    rh_assert_path("nc-2", "admit pick attempt reply done");
    rh_resp_free(&one);
    rh_resp_free(&two);
    rh_stop(h);
}

/* An error answer is not cached: the repeat goes upstream. */
static void error_not_cached(void **state)
{
    struct rh *h = rh_start(CACHED, "{\"models\":{\"a\":{\"script\":[{\"action\":\"status\","
                                    "\"status\":400}]}}}");
    struct rh_resp one, two;

    (void)state;
    rh_chat(h, "ce-1", "r", "", NULL, &one);
    rh_chat(h, "ce-2", "r", "", NULL, &two);
    assert_int_equal(one.status, 400);
    assert_int_equal(two.status, 200);
    rh_assert_header(&two, "x-bascule-cache", "miss");
    rh_resp_free(&one);
    rh_resp_free(&two);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(repeat_served_from_cache),
        RH_TEST(no_cache_bypasses),
        RH_TEST(error_not_cached),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
