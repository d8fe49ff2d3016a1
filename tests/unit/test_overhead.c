/* SPDX-License-Identifier: MIT */
/* test_overhead.c -- router/overhead.c through the request harness: the gateway's own
 * time (x-bascule-overhead-ms) leaves out the upstream's: with a 1 s upstream delay the
 * figure stays far below it. */
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

static void upstream_time_left_out(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n", "{\"models\":{\"a\":{\"script\":[{\"action\":\"delay\","
                                     "\"delay_ms\":1000}]}}}");
    struct rh_resp res;
    char v[64];
    char line[8192];

    (void)state;
    rh_chat(h, "ovh-1", "r", "", NULL, &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_header(&res, "x-bascule-overhead-ms", v, sizeof(v)));
    rh_access_line(h, "ovh-1", line, sizeof(line));
    assert_true(strtod(v, NULL) >= 0);
    /* the request took at least the upstream's 1000 ms; the overhead is what is left */
    if (strtod(v, NULL) >= 1000)
        fail_msg("overhead %s ms includes the upstream's time: %s", v, line);
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(upstream_time_left_out),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
