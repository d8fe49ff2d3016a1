/* SPDX-License-Identifier: MIT */
/* test_api_status.c -- api/status.c through the request harness: status.json names the
 * routes and targets and counts what was served; the page is HTML. */
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

static void status_json_and_page(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n", NULL);
    struct rh_resp res;

    (void)state;
    rh_chat(h, "st-1", "r", "", NULL, &res);
    assert_int_equal(res.status, 200);
    rh_resp_free(&res);
    rh_get(h, "/status.json", NULL, &res);
    assert_int_equal(res.status, 200);
    rh_assert_header(&res, "content-type", "application/json");
    assert_true(rh_resp_has(&res, "\"a\""));
    assert_true(rh_resp_has(&res, "\"r\""));
    rh_resp_free(&res);
    rh_get(h, "/status", NULL, &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, "<html") || rh_resp_has(&res, "<!doctype") ||
                rh_resp_has(&res, "<!DOCTYPE"));
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(status_json_and_page),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
