/* SPDX-License-Identifier: MIT */
/* test_req_error.c -- router/req_error.c through the request harness: the typed failure
 * the router answers when it stops a request itself -- its reason, whether and when the
 * client may retry, in body and headers that agree -- and a provider's own error passed
 * on. */
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

/* Every attempt failed with a 500: attempts_exhausted, retryable, a Retry-After. */
static void attempts_exhausted(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a], equivalent: [b],"
                                   " envelope: { max_attempts: 2, max_same_target_attempts: 1 } }\n",
                            "{\"models\":{\"*\":{\"script\":[{\"action\":\"status\","
                            "\"status\":500,\"times\":2}]}}}");
    struct rh_resp res;
    char v[64];

    (void)state;
    rh_chat(h, "te-1", "r", "", NULL, &res);
    assert_true(res.status >= 500);
    assert_true(rh_resp_has(&res, "\"reason\":\"attempts_exhausted\""));
    assert_true(rh_resp_has(&res, "\"retryable\":true"));
    assert_true(rh_resp_has(&res, "\"request_id\":\"te-1\""));
    assert_true(rh_resp_header(&res, "retry-after", v, sizeof(v)));
    assert_true(rh_resp_header(&res, "x-should-retry", v, sizeof(v)));
    rh_resp_free(&res);
    rh_stop(h);
}

/* A provider asks to wait longer than the request has left (its deadline, 30 s by default):
 * the router stops at once with deadline_exhausted, in the provider's status, and passes the
 * provider's hint on, in headers and body alike. */
static void wait_past_the_deadline(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n",
                            "{\"models\":{\"a\":{\"script\":[{\"action\":\"status\","
                            "\"status\":429,\"headers\":{\"retry-after-ms\":30000}}]}}}");
    struct rh_resp res;
    (void)state;
    rh_chat(h, "te-2", "r", "", NULL, &res);
    assert_int_equal(res.status, 429);
    assert_true(rh_resp_has(&res, "\"reason\":\"deadline_exhausted\""));
    assert_true(rh_resp_has(&res, "\"retryable\":true"));
    assert_true(rh_resp_has(&res, "\"retry_after_ms\":30000"));
    rh_assert_header(&res, "retry-after-ms", "30000");
    rh_assert_header(&res, "retry-after", "30");
    rh_assert_path("te-2", "admit pick attempt admit pick reply_error done");
    rh_resp_free(&res);
    rh_stop(h);
}

/* The request's own fault (a 400 upstream): not retryable, no Retry-After. */
static void client_fault_not_retryable(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n",
                            "{\"models\":{\"a\":{\"script\":[{\"action\":\"status\","
                            "\"status\":400}]}}}");
    struct rh_resp res;
    char v[64];

    (void)state;
    rh_chat(h, "te-3", "r", "", NULL, &res);
    assert_int_equal(res.status, 400);
    assert_false(rh_resp_header(&res, "retry-after", v, sizeof(v)));
    rh_assert_header(&res, "x-should-retry", "false");
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(attempts_exhausted),
        RH_TEST(wait_past_the_deadline),
        RH_TEST(client_fault_not_retryable),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
