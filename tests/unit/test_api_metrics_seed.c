/* SPDX-License-Identifier: MIT */
/* test_api_metrics_seed.c -- api/metrics_seed.c through the request harness: the series
 * the config names are present at zero on the first scrape, before any request. */
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

static void present_at_zero(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n", NULL);
    struct rh_resp res;

    (void)state;
    rh_get(h, "/metrics", NULL, &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, "bascule_requests_total{route=\"r\",outcome=\"ok\"} 0\n"));
    assert_true(rh_resp_has(&res, "bascule_requests_total{route=\"r\",outcome=\"client_abort\"} 0\n"));
    assert_true(rh_resp_has(&res, "bascule_route_eligible_targets{route=\"r\"}"));
    rh_resp_free(&res);
    rh_chat(h, "ms-1", "r", "", NULL, &res);
    rh_resp_free(&res);
    rh_get(h, "/metrics", NULL, &res);
    assert_true(rh_resp_has(&res, "bascule_requests_total{route=\"r\",outcome=\"ok\"} 1\n"));
    assert_true(rh_resp_has(&res, "bascule_requests_total{route=\"r\",outcome=\"error\"} 0\n"));
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(present_at_zero),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
