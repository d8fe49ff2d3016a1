/* SPDX-License-Identifier: MIT */
/* test_contract.c -- router/contract.c through the request harness: a route's output checks
 * judge each answer; a failing one is never delivered: 502 contract_failure, or the
 * approved fallback's answer when it passes. */
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

#define CHECKED(fallback)                                                                 \
    RH_PROVIDER "targets:\n  a: { provider: sim, model: a }\n  b: { provider: sim, model: b }\n" \
                "routes:\n  r:\n    primary: [a]\n" fallback                              \
                "    envelope: { allow_cross_model_fallback: true }\n"                    \
                "    checks: { max_chars: 20 }\n"
#define SHORT_B "{\"models\":{\"b\":{\"tokens\":1}}}"

static void failing_answer_not_delivered(void **state)
{
    struct rh *h = rh_start(CHECKED(""), SHORT_B);
    struct rh_resp res;

    (void)state;
    rh_chat(h, "ck-1", "r", "", NULL, &res);
    assert_int_equal(res.status, 502);
    assert_true(rh_resp_has(&res, "contract_failure"));
    assert_false(rh_resp_has(&res, "\"choices\""));
    rh_resp_free(&res);
    rh_stop(h);
}

static void fallback_answer_passes(void **state)
{
    struct rh *h = rh_start(CHECKED("    fallback: [b]\n"), SHORT_B);
    struct rh_resp res;

    (void)state;
    rh_chat(h, "ck-2", "r", "", NULL, &res);
    assert_int_equal(res.status, 200);
    rh_assert_header(&res, "x-bascule-target", "b");
    rh_assert_header(&res, "x-bascule-workflow", "cross_model_fallback");
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(failing_answer_not_delivered),
        RH_TEST(fallback_answer_passes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
