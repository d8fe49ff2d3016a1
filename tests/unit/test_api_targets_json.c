/* SPDX-License-Identifier: MIT */
/* test_api_targets_json.c -- api/targets_json.c through the request harness: one target's
 * state as the status page shows it: its counters and last error after a failure, never a
 * key. */
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

static void target_after_a_failure(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a], equivalent: [b],"
                                   " envelope: { max_same_target_attempts: 1 } }\n",
                            "{\"models\":{\"a\":{\"script\":[{\"action\":\"status\","
                            "\"status\":500}]}}}");
    struct rh_resp res;

    (void)state;
    rh_chat(h, "tj-1", "r", "", NULL, &res);
    assert_int_equal(res.status, 200);
    rh_resp_free(&res);
    rh_get(h, "/status.json", NULL, &res);
    assert_true(rh_resp_has(&res, "{\"id\":\"a\",\"provider\":\"sim\",\"model\":\"a\""));
    assert_true(rh_resp_has(&res, "\"successes\":0,\"failures\":1"));
    assert_true(rh_resp_has(&res, "\"successes\":1,\"failures\":0"));
    {
        const char *a = strstr(res.body, "{\"id\":\"a\""), *e;

        assert_non_null(a);
        assert_non_null(e = strstr(a, "\"last_error\":"));
        if (strncmp(e + 13, "null", 4) == 0)
            fail_msg("a's last error is not shown: %.200s", e);
    }
    assert_false(rh_resp_has(&res, "sk-h"));
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(target_after_a_failure),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
