/* SPDX-License-Identifier: MIT */
/* test_deliver.c -- router/deliver.c driven in-process (tests/unit/harness/): the client
 * side of a request: the answer's x-bascule-* headers, a stream broken after the commit
 * point (one error event, no [DONE], the connection closed without the chunked
 * terminator) and a buffered stream sent whole once checked. */
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

/* The answer says which route, target and how many attempts served it, and echoes the
 * request id. */
static void answer_headers(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n", NULL);
    struct rh_resp res;

    (void)state;
    rh_chat(h, "hdr-1", "r", "", NULL, &res);
    assert_int_equal(res.status, 200);
    rh_assert_header(&res, "x-bascule-route", "r");
    rh_assert_header(&res, "x-bascule-target", "a");
    rh_assert_header(&res, "x-bascule-attempts", "1");
    rh_assert_header(&res, "x-request-id", "hdr-1");
    rh_assert_header(&res, "content-type", "application/json");
    rh_resp_free(&res);
    rh_stop(h);
}

/* on_stream_failure: fail (the default): a stream cut after its first events ends with one
 * error event and the connection closes without the chunked terminator (RELAY -> DONE). */
static void stream_cut_after_commit(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a], equivalent: [b] }\n",
                            "{\"models\":{\"a\":{\"script\":[{\"action\":\"cut\","
                            "\"after_events\":3}]}}}");
    struct rh_resp res;

    (void)state;
    rh_chat(h, "scut-1", "r", ",\"stream\":true", NULL, &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, "\"error\""));
    assert_false(rh_resp_has(&res, "data: [DONE]"));
    assert_false(rh_resp_has(&res, "\r\n0\r\n\r\n"));
    rh_assert_path("scut-1", "admit pick attempt relay done");
    rh_assert_line_has(h, "scut-1", "\"termination\":\"upstream_interrupted\"");
    rh_resp_free(&res);
    rh_stop(h);
}

/* on_stream_failure: buffer: the broken stream is retried on b before any byte went out;
 * the client gets b's stream whole, marked buffered. */
static void buffered_stream_retried(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a], equivalent: [b],"
                                   " envelope: { on_stream_failure: buffer,"
                                   " max_same_target_attempts: 1 } }\n",
                            "{\"models\":{\"a\":{\"script\":[{\"action\":\"cut\","
                            "\"after_events\":3}]}}}");
    struct rh_resp res;

    (void)state;
    rh_chat(h, "buf-1", "r", ",\"stream\":true", NULL, &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, "data: [DONE]"));
    rh_assert_header(&res, "x-bascule-buffered", "true");
    rh_assert_header(&res, "x-bascule-target", "b");
    rh_resp_free(&res);
    rh_stop(h);
}

/* A provider error is normalized into the client's dialect, with the typed failure. */
static void error_normalized(void **state)
{
    struct rh *h = rh_start(RH_TWO "routes:\n  r: { primary: [a] }\n",
                            "{\"models\":{\"a\":{\"script\":[{\"action\":\"status\","
                            "\"status\":400,\"error_code\":\"bad_field\","
                            "\"message\":\"field x is wrong\"}]}}}");
    struct rh_resp res;

    (void)state;
    rh_chat(h, "norm-1", "r", "", NULL, &res);
    assert_int_equal(res.status, 400);
    assert_true(rh_resp_has(&res, "\"error\""));
    assert_true(rh_resp_has(&res, "\"type\":\"invalid_request_error\""));
    assert_true(rh_resp_has(&res, "field x is wrong"));
    rh_assert_header(&res, "x-request-id", "norm-1");
    rh_resp_free(&res);
    rh_stop(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(answer_headers),
        RH_TEST(stream_cut_after_commit),
        RH_TEST(buffered_stream_retried),
        RH_TEST(error_normalized),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
