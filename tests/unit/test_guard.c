/* SPDX-License-Identifier: MIT */
/* test_guard.c -- router/guard.c driven in-process (tests/unit/harness/): the
 * Idempotency-Key records (stored before the answer goes out, replayed byte for byte,
 * refused for another body, not kept after a failure) and the key's own check. */
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

static const char *sim_ok = NULL;

/* The same key with another body: 422 idempotency_key_reused, decided in ADMIT. */
static void key_reused_with_another_body(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n  s: { primary: [b] }\n",
                            sim_ok);
    struct rh_resp one, two;

    (void)state;
    rh_chat(h, "reuse-1", "r", "", "Idempotency-Key: k-reuse\r\n", &one);
    rh_chat(h, "reuse-2", "s", "", "Idempotency-Key: k-reuse\r\n", &two);
    assert_int_equal(one.status, 200);
    assert_int_equal(two.status, 422);
    assert_true(rh_resp_has(&two, "idempotency_key_reused"));
    rh_assert_path("reuse-2", "admit reply_error done");
    rh_resp_free(&one);
    rh_resp_free(&two);
    rh_stop(h);
}

/* Only complete 2xx answers are stored: after a failure the repeat runs again, and its
 * success is what a third call replays. */
static void failure_not_stored(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n",
                            "{\"models\":{\"a\":{\"script\":[{\"action\":\"status\","
                            "\"status\":400}]}}}");
    struct rh_resp one, two, three;

    (void)state;
    rh_chat(h, "fail-1", "r", "", "Idempotency-Key: k-fail\r\n", &one);
    rh_chat(h, "fail-2", "r", "", "Idempotency-Key: k-fail\r\n", &two);
    rh_chat(h, "fail-3", "r", "", "Idempotency-Key: k-fail\r\n", &three);
    assert_int_equal(one.status, 400);
    assert_int_equal(two.status, 200);
    rh_assert_path("fail-2", "admit pick attempt reply done");
    assert_int_equal(three.status, 200);
    rh_assert_header(&three, "x-bascule-idempotent-replay", "true");
    assert_string_equal(two.body, three.body);
    rh_resp_free(&one);
    rh_resp_free(&two);
    rh_resp_free(&three);
    rh_stop(h);
}

/* A stream's record is stored too: the repeat gets the same events. */
static void stream_replayed(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n", sim_ok);
    struct rh_resp one, two;

    (void)state;
    rh_chat(h, "sidem-1", "r", ",\"stream\":true", "Idempotency-Key: k-stream\r\n", &one);
    rh_chat(h, "sidem-2", "r", ",\"stream\":true", "Idempotency-Key: k-stream\r\n", &two);
    assert_int_equal(one.status, 200);
    assert_int_equal(two.status, 200);
    assert_true(rh_resp_has(&two, "data: [DONE]"));
    rh_assert_header(&two, "x-bascule-idempotent-replay", "true");
    rh_assert_path("sidem-2", "admit done");
    rh_resp_free(&one);
    rh_resp_free(&two);
    rh_stop(h);
}

/* A key that is not 1..255 printable characters: 400 invalid_idempotency_key. */
static void invalid_key_refused(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n", sim_ok);
    char key[400];
    struct rh_resp res;

    (void)state;
    memset(key, 'k', 300);
    snprintf(key + 300, sizeof(key) - 300, "\r\n");
    {
        char hdr[450];

        snprintf(hdr, sizeof(hdr), "Idempotency-Key: %s", key);
        rh_chat(h, "badkey-1", "r", "", hdr, &res);
    }
    assert_int_equal(res.status, 400);
    assert_true(rh_resp_has(&res, "invalid_idempotency_key"));
    rh_assert_path("badkey-1", "admit reply_error done");
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(key_reused_with_another_body),
        RH_TEST(failure_not_stored),
        RH_TEST(stream_replayed),
        RH_TEST(invalid_key_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
