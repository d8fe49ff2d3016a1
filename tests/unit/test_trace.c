/* SPDX-License-Identifier: MIT */
/* test_trace.c -- router/trace.c through the request harness: a client's valid traceparent
 * is continued upstream (same trace id, the attempt's own span id); without one, and
 * without telemetry, the upstream request carries none. */
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

static void client_trace_continued(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n", NULL);
    struct rh_resp res;

    (void)state;
    rh_chat(h, "tr-1", "r", "",
            "traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n", &res);
    assert_int_equal(res.status, 200);
    rh_resp_free(&res);
    rh_sim_get(h, "/_sim/requests?model=a", &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, "00-0af7651916cd43dd8448eb211c80319c-"));
    assert_false(rh_resp_has(&res, "b7ad6b7169203331"));
    rh_resp_free(&res);
    rh_stop(h);
}

static void no_trace_no_header(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n", NULL);
    struct rh_resp res;

    (void)state;
    rh_chat(h, "tr-2", "r", "", NULL, &res);
    assert_int_equal(res.status, 200);
    rh_resp_free(&res);
    rh_sim_get(h, "/_sim/requests?model=a", &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, "tr-2"));
    assert_false(rh_resp_has(&res, "traceparent"));
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(client_trace_continued),
        RH_TEST(no_trace_no_header),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
