/* SPDX-License-Identifier: MIT */
/* test_attempt.c -- router/attempt.c: an attempt record from its start to its end, and
 * the names the logs use for workflows and outcomes. */
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
#include "policy/attempt.h"

static void begin_and_end(void **state)
{
    struct attempt a;

    (void)state;
    memset(&a, 0x5a, sizeof(a));
    attempt_begin(&a, NULL, ATTEMPT_WF_RETRY, 1000);
    assert_int_equal(a.workflow, ATTEMPT_WF_RETRY);
    assert_int_equal(a.outcome, ATTEMPT_RUNNING);
    assert_int_equal(a.start_us, 1000);
    assert_null(a.kind);
    assert_int_equal(a.status, 0);
    attempt_end(&a, 4000, ATTEMPT_FAILED, "rate_limited");
    assert_int_equal(a.outcome, ATTEMPT_FAILED);
    assert_int_equal(a.end_us, 4000);
    assert_string_equal(a.kind, "rate_limited");
}

static void names(void **state)
{
    (void)state;
    assert_string_equal(attempt_workflow_name(ATTEMPT_WF_PRIMARY), "primary");
    assert_string_equal(attempt_workflow_name(ATTEMPT_WF_EQUIVALENT_FAILOVER),
                        "equivalent_failover");
    assert_string_equal(attempt_workflow_name(ATTEMPT_WF_CROSS_MODEL_FALLBACK),
                        "cross_model_fallback");
    assert_string_equal(attempt_outcome_name(ATTEMPT_OK), "ok");
    for (int i = 0; i < ATTEMPT_WF_COUNT; i++)
        assert_non_null(attempt_workflow_name(i));
    for (int i = 0; i < ATTEMPT_OUTCOME_COUNT; i++)
        assert_non_null(attempt_outcome_name(i));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(begin_and_end),
        cmocka_unit_test(names),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
