/* SPDX-License-Identifier: MIT */
/* test_api_dispatch.c -- api/dispatch.c through the request harness (tests/unit/harness/):
 * each surface reached by its path and method, an unknown path 404, a surface asked with
 * the wrong method refused. */
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

static void paths_reach_their_surface(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n", NULL);
    struct rh_resp res;

    (void)state;
    rh_chat(h, "disp-1", "r", "", NULL, &res); /* /v1/chat/completions */
    assert_int_equal(res.status, 200);
    rh_resp_free(&res);
    rh_post(h, "/chat/completions", "disp-2", NULL, RH_CHAT("r"), &res); /* without /v1 */
    assert_int_equal(res.status, 200);
    rh_resp_free(&res);
    rh_get(h, "/healthz", NULL, &res);
    assert_int_equal(res.status, 200);
    rh_resp_free(&res);
    rh_get(h, "/readyz", NULL, &res);
    assert_int_equal(res.status, 200);
    rh_resp_free(&res);
    rh_stop(h);
}

static void unknown_path_is_404(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n", NULL);
    struct rh_resp res;

    (void)state;
    rh_get(h, "/v1/nothing-here", NULL, &res);
    assert_int_equal(res.status, 404);
    assert_true(rh_resp_has(&res, "\"error\""));
    rh_resp_free(&res);
    rh_stop(h);
}

static void wrong_method_refused(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n", NULL);
    struct rh_resp res;

    (void)state;
    rh_get(h, "/v1/chat/completions", NULL, &res);
    assert_true(res.status == 404 || res.status == 405);
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(paths_reach_their_surface),
        RH_TEST(unknown_path_is_404),
        RH_TEST(wrong_method_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
