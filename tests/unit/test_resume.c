/* SPDX-License-Identifier: MIT */
/* test_resume.c -- router/resume.c through the request harness: a stream cut after the
 * commit point (on_stream_failure: continue) goes on from another target, by prefill on one
 * that takes it and by replay on one that does not; the access line says how. */
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

#define CONT(caps)                                                                        \
    RH_PROVIDER "targets:\n  a: { provider: sim, model: a }\n"                            \
                "  b: { provider: sim, model: b, capabilities: " caps " }\n"              \
                "routes:\n  r:\n    primary: [a]\n    equivalent: [b]\n"                  \
                "    envelope: { on_stream_failure: continue, max_same_target_attempts: 1 }\n"
#define CUT "{\"models\":{\"a\":{\"script\":[{\"action\":\"cut\",\"after_events\":4}]}}}"

static void continued(const char *id, const char *yaml, const char *how)
{
    struct rh *h = rh_start(yaml, CUT);
    struct rh_resp res;
    char want[64];

    rh_chat(h, id, "r", ",\"stream\":true", NULL, &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, "data: [DONE]"));
    assert_false(rh_resp_has(&res, "\"error\""));
    snprintf(want, sizeof(want), "\"how\":\"%s\"", how);
    rh_assert_line_has(h, id, want);
    rh_resp_free(&res);
    rh_stop(h);
}

static void continued_by_prefill(void **state)
{
    (void)state;
    continued("res-p", CONT("[text, streaming, prefill]"), "prefill");
}

static void continued_by_replay(void **state)
{
    (void)state;
    continued("res-r", CONT("[text, streaming]"), "replay");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(continued_by_prefill),
        RH_TEST(continued_by_replay),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
