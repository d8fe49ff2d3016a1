/* SPDX-License-Identifier: MIT */
/* test_resume_responses.c -- router/resume_responses.c through the request harness: a
 * Responses client's stream relayed in the Responses API's own typed events (kind: openai),
 * cut after the commit point, goes on in those events: one response.created, one
 * response.completed, no error. */
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

#define OAI                                                                               \
    "providers:\n  oai: { kind: openai, base_url: \"{{SIM}}\", keys: [\"sk-h\"],"         \
    " health: { probe: none } }\n"                                                        \
    "targets:\n  a: { provider: oai, model: pr }\n"                                       \
    "routes:\n  r: { primary: [a], envelope: { on_stream_failure: continue,"             \
    " max_same_target_attempts: 2 } }\n"
#define CUT "{\"models\":{\"pr\":{\"tokens\":30,\"script\":[{\"action\":\"cut\",\"after_events\":16}]}}}"

static unsigned count(const char *s, const char *what)
{
    unsigned n = 0;

    for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

static void continued_in_typed_events(void **state)
{
    struct rh *h = rh_start(OAI, CUT);
    struct rh_resp res;

    (void)state;
    rh_post(h, "/v1/responses", "rr-1", NULL, "{\"model\":\"r\",\"input\":\"hi\",\"stream\":true}",
            &res);
    assert_int_equal(res.status, 200);
    assert_int_equal(count(res.body, "event: response.created"), 1);
    assert_int_equal(count(res.body, "event: response.completed"), 1);
    assert_int_equal(count(res.body, "\"type\":\"error\""), 0);
    rh_assert_line_has(h, "rr-1", "\"how\":\"replay\"");
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(continued_in_typed_events),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
