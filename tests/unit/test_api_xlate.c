/* SPDX-License-Identifier: MIT */
/* test_api_xlate.c -- api/xlate.c (the translation steps of the Anthropic and Responses
 * surfaces into the neutral chat form) through the request harness: the first client-facing
 * error of a translation is the one the client gets, as a 400 in its own dialect, and
 * nothing goes upstream. */
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

static void first_error_wins(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n", NULL);
    struct rh_resp res;

    (void)state;
    rh_call(h, "POST", "/v1/messages", "anthropic-version: 2023-06-01\r\n",
            "{\"model\":\"r\",\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":"
            "[{\"type\":\"image\"},{\"text\":\"no type\"}]}]}",
            &res);
    assert_int_equal(res.status, 400);
    assert_true(rh_resp_has(&res, "\"type\":\"error\""));
    assert_true(rh_resp_has(&res, "source: field required"));
    assert_false(rh_resp_has(&res, "type: field required"));
    rh_resp_free(&res);
    rh_call(h, "POST", "/v1/messages", "anthropic-version: 2023-06-01\r\n",
            "{\"model\":\"r\",\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":"
            "[{\"type\":\"text\",\"text\":7}]}]}",
            &res);
    assert_int_equal(res.status, 400);
    assert_true(rh_resp_has(&res, "text: must be a string"));
    rh_resp_free(&res);
    rh_sim_get(h, "/_sim/requests", &res);
    assert_false(rh_resp_has(&res, "/v1/chat/completions"));
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(first_error_wins),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
