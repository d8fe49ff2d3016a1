/* SPDX-License-Identifier: MIT */
/* test_input.c -- router/input.c (req__json: the client's body parsed once, when a
 * translation needs it) through the request harness: an OpenAI chat request served by an
 * Anthropic target is parsed and translated, escapes and all, and answered in OpenAI's
 * shape; the same request to an OpenAI-compatible target goes as the client's bytes. */
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

#define BOTH                                                                              \
    "providers:\n  ant: { kind: anthropic, base_url: \"{{SIMROOT}}/anthropic/v1\","       \
    " keys: [\"sk-ant-h\"], health: { probe: none } }\n"                                 \
    "  sim: { kind: openai_compatible, base_url: \"{{SIM}}\", keys: [\"sk-h\"],"          \
    " health: { probe: none } }\n"                                                        \
    "targets:\n  a: { provider: ant, model: ia }\n  o: { provider: sim, model: io }\n"      \
    "routes:\n  ant: { primary: [a] }\n  oai: { primary: [o] }\n"
#define BODY(route)                                                                       \
    "{\"model\":\"" route "\",\"max_tokens\":20,\"messages\":[{\"role\":\"system\","       \
    "\"content\":\"be brief\"},{\"role\":\"user\",\"content\":\"caf\\u00e9 \\\"q\\\"\"}]}"

static void parsed_for_translation(void **state)
{
    struct rh *h = rh_start(BOTH, NULL);
    struct rh_resp res;

    (void)state;
    rh_post(h, "/v1/chat/completions", "in-1", NULL, BODY("ant"), &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, "\"choices\""));
    assert_true(rh_resp_has(&res, "\"object\":\"chat.completion\""));
    rh_resp_free(&res);
    rh_sim_get(h, "/_sim/requests?model=ia", &res);
    /* the Anthropic request: the system prompt moved to its own field, the text decoded */
    assert_true(rh_resp_has(&res, "be brief"));
    assert_true(rh_resp_has(&res, "caf"));
    rh_resp_free(&res);
    rh_post(h, "/v1/chat/completions", "in-2", NULL, BODY("oai"), &res);
    assert_int_equal(res.status, 200);
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(parsed_for_translation),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
