/* SPDX-License-Identifier: MIT */
/* test_admit.c -- router/admit.c driven in-process (tests/unit/harness/): the checks of
 * ADMIT in their order, each refusing before anything is chosen or sent (ADMIT ->
 * REPLY_ERROR), and a replay after a failure admitted afresh. */
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

/* X-Bascule-Operation-Id with a character outside its alphabet: 400, nothing upstream. */
static void bad_operation_id_refused(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n", NULL);
    struct rh_resp res;

    (void)state;
    rh_chat(h, "op-1", "r", "", "X-Bascule-Operation-Id: no spaces allowed\r\n", &res);
    assert_int_equal(res.status, 400);
    assert_true(rh_resp_has(&res, "invalid_operation_id"));
    rh_assert_path("op-1", "admit reply_error done");
    assert_int_equal(rh_attempt_lines(h, "op-1"), 0);
    rh_resp_free(&res);
    rh_stop(h);
}

/* The client limits come before the idempotency lookup: a client over its rpm is refused
 * even with a key whose record would answer. */
static void client_limit_before_idempotency(void **state)
{
    struct rh *h = rh_start(
        RH_TWO "routes:\n  r: { primary: [a] }\n"
               "clients:\n  c: { key: \"sk-harness-client-0123456789\", routes: [\"*\"], rpm: 1,"
               " rpm_burst: 1 }\n",
        NULL);
    const char *hdrs = "Authorization: Bearer sk-harness-client-0123456789\r\n"
                       "Idempotency-Key: k-order\r\n";
    struct rh_resp one, two;

    (void)state;
    rh_chat(h, "ord-1", "r", "", hdrs, &one);
    rh_chat(h, "ord-2", "r", "", hdrs, &two);
    assert_int_equal(one.status, 200);
    assert_int_equal(two.status, 429);
    rh_assert_header(&two, "x-bascule-limited-by", "client_rpm");
    rh_resp_free(&one);
    rh_resp_free(&two);
    rh_stop(h);
}

/* After a failed attempt the request is admitted again before PICK (ATTEMPT -> ADMIT), and
 * the answer of the second attempt is what the client gets. */
static void readmitted_after_failure(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a], equivalent: [b] }\n",
                            "{\"models\":{\"a\":{\"script\":[{\"action\":\"status\","
                            "\"status\":500}]}}}");
    struct rh_resp res;

    (void)state;
    rh_chat(h, "readm-1", "r", "", NULL, &res);
    assert_int_equal(res.status, 200);
    rh_assert_header(&res, "x-bascule-attempts", "2");
    {
        char path[2048];

        rh_path("readm-1", path, sizeof(path));
        assert_non_null(strstr(path, "attempt admit pick"));
    }
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(bad_operation_id_refused),
        RH_TEST(client_limit_before_idempotency),
        RH_TEST(readmitted_after_failure),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
