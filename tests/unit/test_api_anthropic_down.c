/* SPDX-License-Identifier: MIT */
/* test_api_anthropic_down.c -- api/anthropic_down.c (and anthropic_messages.c) through the
 * request harness: an Anthropic Messages request served by an OpenAI-speaking target is
 * answered in Anthropic's shape, plain and streamed. */
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

#define MSG "{\"model\":\"r\",\"max_tokens\":50,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]%s}"

static void messages_answer(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n", NULL);
    struct rh_resp res;
    char body[256];

    (void)state;
    snprintf(body, sizeof(body), MSG, "");
    rh_post(h, "/v1/messages", "am-1", "anthropic-version: 2023-06-01\r\n", body, &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, "\"type\":\"message\""));
    assert_true(rh_resp_has(&res, "\"role\":\"assistant\""));
    assert_true(rh_resp_has(&res, "\"stop_reason\""));
    rh_assert_path("am-1", "admit pick attempt reply done");
    rh_resp_free(&res);
    rh_stop(h);
}

static void messages_stream(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n", NULL);
    struct rh_resp res;
    char body[256];

    (void)state;
    snprintf(body, sizeof(body), MSG, ",\"stream\":true");
    rh_post(h, "/v1/messages", "am-2", "anthropic-version: 2023-06-01\r\n", body, &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, "event: message_start"));
    assert_true(rh_resp_has(&res, "event: content_block_delta"));
    assert_true(rh_resp_has(&res, "event: message_stop"));
    rh_assert_path("am-2", "admit pick attempt relay done");
    rh_resp_free(&res);
    rh_stop(h);
}

/* An upstream error reaches an Anthropic client in Anthropic's error shape. */
static void messages_error_shape(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n", "{\"models\":{\"a\":{\"script\":[{\"action\":\"status\","
                                     "\"status\":400,\"message\":\"bad field\"}]}}}");
    struct rh_resp res;
    char body[256];

    (void)state;
    snprintf(body, sizeof(body), MSG, "");
    rh_post(h, "/v1/messages", "am-3", "anthropic-version: 2023-06-01\r\n", body, &res);
    assert_int_equal(res.status, 400);
    assert_true(rh_resp_has(&res, "\"type\":\"error\""));
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(messages_answer),
        RH_TEST(messages_stream),
        RH_TEST(messages_error_shape),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
