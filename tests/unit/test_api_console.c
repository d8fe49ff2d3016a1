/* SPDX-License-Identifier: MIT */
/* test_api_console.c -- api/console.c through the request harness: the console page. */
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

static void console_page(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n", NULL);
    struct rh_resp res;
    char ct[128];

    (void)state;
    rh_get(h, "/console", NULL, &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_header(&res, "content-type", ct, sizeof(ct)));
    assert_non_null(strstr(ct, "text/html"));
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(console_page),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
