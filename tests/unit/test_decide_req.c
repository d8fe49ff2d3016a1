/* SPDX-License-Identifier: MIT */
/* test_decide_req.c -- router/decide_req.c through the request harness: the decision after
 * a failure, fed from the request: the fallback tier only when the route allows it, the
 * workflow it names, max_attempts from the route and lowered by X-Bascule-Max-Attempts. */
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

#define FALLBACK(allow)                                                                   \
    RH_TWO "routes:\n  r: { primary: [a], fallback: [b],"                                 \
           " envelope: { max_same_target_attempts: 1, allow_cross_model_fallback: " allow " } }\n"
#define A_FAILS "{\"models\":{\"a\":{\"script\":[{\"action\":\"status\",\"status\":500}]}}}"

static void fallback_when_allowed(void **state)
{
    struct rh *h = rh_start(FALLBACK("true"), A_FAILS);
    struct rh_resp res;

    (void)state;
    rh_chat(h, "fb-1", "r", "", NULL, &res);
    assert_int_equal(res.status, 200);
    rh_assert_header(&res, "x-bascule-target", "b");
    rh_assert_header(&res, "x-bascule-workflow", "cross_model_fallback");
    rh_resp_free(&res);
    rh_stop(h);
}

static void no_fallback_unless_allowed(void **state)
{
    struct rh *h = rh_start(FALLBACK("false"), A_FAILS);
    struct rh_resp res;

    (void)state;
    rh_chat(h, "fb-2", "r", "", NULL, &res);
    assert_true(res.status >= 500);
    rh_assert_header(&res, "x-bascule-attempts", "1");
    rh_resp_free(&res);
    rh_stop(h);
}

/* X-Bascule-Max-Attempts: 1 lowers the route's attempts: no retry after a 500. */
static void max_attempts_header(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a], equivalent: [b] }\n", A_FAILS);
    struct rh_resp res;

    (void)state;
    rh_chat(h, "ma-1", "r", "", "X-Bascule-Max-Attempts: 1\r\n", &res);
    assert_true(res.status >= 500);
    rh_assert_header(&res, "x-bascule-attempts", "1");
    rh_assert_path("ma-1", "admit pick attempt admit pick reply_error done");
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(fallback_when_allowed),
        RH_TEST(no_fallback_unless_allowed),
        RH_TEST(max_attempts_header),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
