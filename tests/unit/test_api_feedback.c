/* SPDX-License-Identifier: MIT */
/* test_api_feedback.c -- api/feedback.c and router/feedback.c through the request
 * harness: a verdict on an answered request is charged to its route and target, a second
 * one refused, an unknown request 404, a bad body 400. */
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

static void verdict_on_an_answer(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n", NULL);
    struct rh_resp res;

    (void)state;
    rh_chat(h, "fbk-1", "r", "", NULL, &res);
    assert_int_equal(res.status, 200);
    rh_resp_free(&res);
    rh_call(h, "POST", "/v1/feedback", NULL, "{\"request_id\":\"fbk-1\",\"task_success\":true}",
            &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, "\"route\":\"r\""));
    assert_true(rh_resp_has(&res, "\"target\":\"a\""));
    assert_true(rh_resp_has(&res, "\"ranks\":\"all_requests\""));
    rh_resp_free(&res);
    rh_call(h, "POST", "/v1/feedback", NULL, "{\"request_id\":\"fbk-1\",\"task_success\":false}",
            &res);
    assert_int_equal(res.status, 409);
    assert_true(rh_resp_has(&res, "verdict_exists"));
    rh_resp_free(&res);
    rh_call(h, "POST", "/v1/feedback", NULL, "{\"request_id\":\"nobody\",\"task_success\":true}",
            &res);
    assert_int_equal(res.status, 404);
    rh_resp_free(&res);
    rh_call(h, "POST", "/v1/feedback", NULL, "{\"request_id\":\"fbk-1\"}", &res);
    assert_int_equal(res.status, 400);
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(verdict_on_an_answer),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
