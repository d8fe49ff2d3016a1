/* SPDX-License-Identifier: MIT */
/* test_access_log.c -- router/access_log.c through the request harness: one attempt line
 * per attempt, and the access line's attempt_log and per-state times. */
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

static void attempt_lines_and_log(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a], equivalent: [b],"
                                   " envelope: { max_same_target_attempts: 1 } }\n",
                            "{\"models\":{\"a\":{\"script\":[{\"action\":\"status\","
                            "\"status\":500}]}}}");
    struct rh_resp res;

    (void)state;
    rh_chat(h, "al-1", "r", "", NULL, &res);
    assert_int_equal(res.status, 200);
    rh_assert_line_has(h, "al-1", "\"attempts\":2");
    rh_assert_line_has(h, "al-1", "\"attempt_log\":[{\"target\":\"a\"");
    rh_assert_line_has(h, "al-1", "\"workflow\":\"equivalent_failover\"");
    rh_assert_line_has(h, "al-1", "\"states\":{\"admit\":");
    assert_int_equal(rh_attempt_lines(h, "al-1"), 2);
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(attempt_lines_and_log),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
