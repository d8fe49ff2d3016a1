/* SPDX-License-Identifier: MIT */
/* test_api_health.c -- api/health.c through the request harness: liveness always, and
 * readiness while a route has a target that can serve; a target disabled through the
 * admin API leaves its route with none. */
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

static void live_and_ready(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n", NULL);
    struct rh_resp res;

    (void)state;
    rh_get(h, "/health/live", NULL, &res);
    assert_int_equal(res.status, 200);
    rh_resp_free(&res);
    rh_get(h, "/health/ready", NULL, &res);
    assert_int_equal(res.status, 200);
    rh_resp_free(&res);
    rh_stop(h);
}

static void not_ready_without_a_target(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n"
                                   "admin: { key: \"adm-harness-0123456789abcdef\" }\n",
                            NULL);
    const char *auth = "Authorization: Bearer adm-harness-0123456789abcdef\r\n";
    struct rh_resp res;

    (void)state;
    rh_call(h, "POST", "/admin/targets/a/disable", auth, NULL, &res);
    assert_int_equal(res.status, 200);
    rh_resp_free(&res);
    rh_get(h, "/health/ready", NULL, &res);
    assert_int_equal(res.status, 503);
    rh_resp_free(&res);
    rh_call(h, "POST", "/admin/targets/a/enable", auth, NULL, &res);
    assert_int_equal(res.status, 200);
    rh_resp_free(&res);
    rh_get(h, "/health/ready", NULL, &res);
    assert_int_equal(res.status, 200);
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(live_and_ready),
        RH_TEST(not_ready_without_a_target),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
