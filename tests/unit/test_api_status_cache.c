/* SPDX-License-Identifier: MIT */
/* test_api_status_cache.c -- api/status_cache.c through the request harness: status.json's
 * cache section counts hits, misses and bypasses per route. */
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

static void cache_section(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a], cache: { mode: exact, ttl_s: 600 } }\n",
                            NULL);
    struct rh_resp res;

    (void)state;
    rh_chat(h, "sc-1", "r", "", NULL, &res);
    rh_resp_free(&res);
    rh_chat(h, "sc-2", "r", "", NULL, &res);
    rh_resp_free(&res);
    rh_chat(h, "sc-3", "r", "", "Cache-Control: no-cache\r\n", &res);
    rh_resp_free(&res);
    rh_get(h, "/status.json", NULL, &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, "\"cache\":{\"routes\":[{\"route\":\"r\",\"hit\":1,\"miss\":1,"
                                  "\"bypass\":1,"));
    assert_true(rh_resp_has(&res, "\"entries\":1"));
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(cache_section),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
