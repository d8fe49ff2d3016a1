/* SPDX-License-Identifier: MIT */
/* test_api_responses_down.c -- api/responses_down.c (and responses.c) through the request
 * harness: a Responses API request served by a chat target is answered as a Response
 * object, plain and streamed as typed events. */
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

static void response_object(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n", NULL);
    struct rh_resp res;

    (void)state;
    rh_post(h, "/v1/responses", "rsp-1", NULL, "{\"model\":\"r\",\"input\":\"hi\"}", &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, "\"object\":\"response\""));
    assert_true(rh_resp_has(&res, "\"output\""));
    rh_resp_free(&res);
    rh_stop(h);
}

static void response_stream(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n", NULL);
    struct rh_resp res;

    (void)state;
    rh_post(h, "/v1/responses", "rsp-2", NULL, "{\"model\":\"r\",\"input\":\"hi\",\"stream\":true}",
            &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, "response.created"));
    assert_true(rh_resp_has(&res, "response.output_text.delta"));
    assert_true(rh_resp_has(&res, "response.completed"));
    rh_assert_path("rsp-2", "admit pick attempt relay done");
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(response_object),
        RH_TEST(response_stream),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
