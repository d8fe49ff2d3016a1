/* SPDX-License-Identifier: MIT */
/* test_resp_owner.c -- router/resp_owner.c through the request harness: the upstream id of
 * a pass-through Responses answer is recorded under its caller's scope, so that caller may
 * name it in previous_response_id and another credential gets 400
 * previous_response_not_found, with nothing sent upstream. */
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
    "targets:\n  a: { provider: oai, model: ro }\nroutes:\n  r: { primary: [a] }\n"

#define ALICE "Authorization: Bearer alice-credential-0123456789\r\n"
#define BOB "Authorization: Bearer bob-credential-0123456789\r\n"

static void only_its_caller_continues(void **state)
{
    struct rh *h = rh_start(OAI, NULL);
    struct rh_resp res;
    char id[160], body[400];
    const char *p;

    (void)state;
    rh_post(h, "/v1/responses", "ro-1", ALICE, "{\"model\":\"r\",\"input\":\"hi\"}", &res);
    assert_int_equal(res.status, 200);
    assert_non_null(p = strstr(res.body, "\"id\":\""));
    snprintf(id, sizeof(id), "%.*s", (int)strcspn(p + 6, "\""), p + 6);
    rh_resp_free(&res);
    snprintf(body, sizeof(body),
             "{\"model\":\"r\",\"input\":\"and then?\",\"previous_response_id\":\"%s\"}", id);

    rh_call(h, "POST", "/v1/responses", BOB, body, &res);
    assert_int_equal(res.status, 400);
    assert_true(rh_resp_has(&res, "previous_response_not_found"));
    rh_resp_free(&res);

    rh_post(h, "/v1/responses", "ro-3", ALICE, body, &res);
    assert_int_equal(res.status, 200);
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(only_its_caller_continues),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
