/* SPDX-License-Identifier: MIT */
/* test_exchange.c -- router/exchange.c driven in-process (tests/unit/harness/): the upstream
 * side of an attempt, its faults classified (a refused key, a reset, a body that is not
 * JSON, an error inside a 200) and each one recovered from on the next attempt. */
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

/* A key the provider refuses (401) is set aside; the next attempt uses the next key. */
static void refused_key_rotated(void **state)
{
    struct rh *h = rh_start(
        "providers:\n  sim: { kind: openai_compatible, base_url: \"{{SIM}}\","
        " keys: [\"sk-sim-bad\", \"sk-good\"], health: { probe: none } }\n"
        "targets:\n  a: { provider: sim, model: a }\nroutes:\n  r: { primary: [a] }\n",
        NULL);
    struct rh_resp res;

    (void)state;
    rh_chat(h, "key-1", "r", "", NULL, &res);
    assert_int_equal(res.status, 200);
    rh_assert_header(&res, "x-bascule-attempts", "2");
    rh_assert_path("key-1", "admit pick attempt admit pick attempt reply done");
    rh_resp_free(&res);
    rh_stop(h);
}

/* Faults before any byte reached the client fail over to the equivalent target. */
static void fault_fails_over(const char *id, const char *step)
{
    char script[256];
    struct rh *h;
    struct rh_resp res;

    snprintf(script, sizeof(script), "{\"models\":{\"a\":{\"script\":[%s]}}}", step);
    h = rh_start(RH_TWO "routes:\n  r: { primary: [a], equivalent: [b],"
                        " envelope: { max_same_target_attempts: 1 } }\n",
                 script);
    rh_chat(h, id, "r", "", NULL, &res);
    if (res.status != 200)
        fail_msg("%s: %d %.300s", step, res.status, res.body);
    rh_assert_header(&res, "x-bascule-target", "b");
    rh_assert_header(&res, "x-bascule-attempts", "2");
    rh_resp_free(&res);
    rh_stop(h);
}

static void reset_fails_over(void **state)
{
    (void)state;
    fault_fails_over("rst-1", "{\"action\":\"reset\"}");
}

static void malformed_body_fails_over(void **state)
{
    (void)state;
    fault_fails_over("mal-1", "{\"action\":\"malformed\"}");
}

static void error_in_200_fails_over(void **state)
{
    (void)state;
    fault_fails_over("e200-1", "{\"action\":\"error_200\"}");
}

/* A first token that never comes within first_token_timeout_ms: the stream attempt is
 * cancelled and the next target answers. */
static void slow_first_token_fails_over(void **state)
{
    struct rh *h = rh_start(
        RH_TWO "routes:\n  r: { primary: [a], equivalent: [b],"
               " envelope: { max_same_target_attempts: 1, first_token_timeout_ms: 300 } }\n",
        "{\"models\":{\"a\":{\"script\":[{\"action\":\"stall\",\"after_events\":0,"
        "\"stall_ms\":60000}]}}}");
    struct rh_resp res;

    (void)state;
    rh_chat(h, "ftt-1", "r", ",\"stream\":true", NULL, &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, "data: [DONE]"));
    rh_assert_header(&res, "x-bascule-target", "b");
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(refused_key_rotated),
        RH_TEST(reset_fails_over),
        RH_TEST(malformed_body_fails_over),
        RH_TEST(error_in_200_fails_over),
        RH_TEST(slow_first_token_fails_over),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
