/* SPDX-License-Identifier: MIT */
/* test_api_status_outcomes.c -- api/status_outcomes.c through the request harness: per
 * target and per workflow, the attempts that came back, passed their contract and did their
 * task (a failover's transport failure on a, its success on b, a verdict on b). */
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

static void outcomes_section(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a], equivalent: [b],"
                                   " envelope: { max_same_target_attempts: 1 } }\n",
                            "{\"models\":{\"a\":{\"script\":[{\"action\":\"status\","
                            "\"status\":500}]}}}");
    struct rh_resp res;

    (void)state;
    rh_chat(h, "so-1", "r", "", NULL, &res);
    assert_int_equal(res.status, 200);
    rh_resp_free(&res);
    rh_call(h, "POST", "/v1/feedback", NULL, "{\"request_id\":\"so-1\",\"task_success\":false}",
            &res);
    assert_int_equal(res.status, 200);
    rh_resp_free(&res);
    rh_get(h, "/status.json", NULL, &res);
    assert_true(rh_resp_has(&res, "{\"target\":\"a\",\"transport\":{\"ok\":0,\"failed\":1}"));
    assert_true(rh_resp_has(&res, "{\"target\":\"b\",\"transport\":{\"ok\":1,\"failed\":0},"
                                  "\"contract\":{\"ok\":0,\"failed\":0},\"task\":{\"ok\":0,\"failed\":1}"));
    assert_true(rh_resp_has(&res, "{\"workflow\":\"equivalent_failover\",\"transport\":{\"ok\":1,"));
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(outcomes_section),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
