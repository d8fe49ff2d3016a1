/* SPDX-License-Identifier: MIT */
/* test_resume_anthropic.c -- router/resume_anthropic.c through the request harness: an
 * Anthropic client's stream relayed in Anthropic's own events, cut after the commit point,
 * goes on in those events: one message_start, one message_stop, no error event. */
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

#define ANT(caps)                                                                         \
    "providers:\n  ant: { kind: anthropic, base_url: \"{{SIMROOT}}/anthropic/v1\","       \
    " keys: [\"sk-ant-h\"], health: { probe: none } }\n"                                 \
    "targets:\n  a: { provider: ant, model: pa, capabilities: " caps " }\n"               \
    "routes:\n  r: { primary: [a], envelope: { on_stream_failure: continue,"             \
    " max_same_target_attempts: 2 } }\n"
#define CUT "{\"models\":{\"pa\":{\"tokens\":30,\"script\":[{\"action\":\"cut\",\"after_events\":15}]}}}"
#define MSG "{\"model\":\"r\",\"max_tokens\":100,\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"

static unsigned count(const char *s, const char *what)
{
    unsigned n = 0;

    for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

static void continued(const char *id, const char *yaml, const char *how)
{
    struct rh *h = rh_start(yaml, CUT);
    struct rh_resp res;
    char want[64];

    rh_post(h, "/v1/messages", id, "anthropic-version: 2023-06-01\r\n", MSG, &res);
    assert_int_equal(res.status, 200);
    assert_int_equal(count(res.body, "event: message_start"), 1);
    assert_int_equal(count(res.body, "event: message_stop"), 1);
    assert_int_equal(count(res.body, "event: error"), 0);
    snprintf(want, sizeof(want), "\"how\":\"%s\"", how);
    rh_assert_line_has(h, id, want);
    rh_resp_free(&res);
    rh_stop(h);
}

static void continued_by_replay(void **state)
{
    (void)state;
    continued("ra-rep", ANT("[text, streaming]"), "replay");
}

static void continued_by_prefill(void **state)
{
    (void)state;
    continued("ra-pre", ANT("[text, streaming, prefill]"), "prefill");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(continued_by_replay),
        RH_TEST(continued_by_prefill),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
