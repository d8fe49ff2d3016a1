/* SPDX-License-Identifier: MIT */
/* test_dialect_error.c -- the one error writer per client dialect (dialect/error.c): the
 * exact bytes of the OpenAI and Anthropic bodies (plain, typed failure, the server's
 * framing errors), and a body that does not fit leaving the buffer as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dialect/error.h"

static void expect_body(enum bsc_err (*fn)(const struct dialect_error *, struct bsc_buf *),
                        const struct dialect_error *e, const char *want)
{
    struct bsc_buf b;

    bsc_buf_init(&b, 4096);
    assert_int_equal(fn(e, &b), BSC_OK);
    assert_string_equal(b.p, want);
    bsc_buf_cleanup(&b);
}

static void test_openai(void **state)
{
    struct dialect_error plain = {.status = 400,
                                  .type = "invalid_request_error",
                                  .code = "invalid_json",
                                  .message = "bad \"x\"\n",
                                  .retry_after_ms = -1,
                                  .request_id = "req_1"};
    struct dialect_error typed = {.status = 503,
                                  .code = "no_eligible_fallback",
                                  .message = "m",
                                  .param = "p",
                                  .reason = "no_eligible_fallback",
                                  .retryable = true,
                                  .retry_after_ms = 1500};

    (void)state;
    expect_body(dialect_openai_error, &plain,
                "{\"error\":{\"message\":\"bad \\\"x\\\"\\n\",\"type\":\"invalid_request_error\","
                "\"param\":null,\"code\":\"invalid_json\"},\"request_id\":\"req_1\"}");
    expect_body(dialect_openai_error, &typed,
                "{\"error\":{\"message\":\"m\",\"type\":\"server_error\",\"param\":\"p\","
                "\"code\":\"no_eligible_fallback\"},\"status\":\"unavailable\","
                "\"reason\":\"no_eligible_fallback\",\"retryable\":true,"
                "\"retry_after_ms\":1500,\"request_id\":null}");
    typed.retryable = false;
    typed.retry_after_ms = -1;
    expect_body(dialect_openai_error, &typed,
                "{\"error\":{\"message\":\"m\",\"type\":\"server_error\",\"param\":\"p\","
                "\"code\":\"no_eligible_fallback\"},\"status\":\"unavailable\","
                "\"reason\":\"no_eligible_fallback\",\"retryable\":false,"
                "\"retry_after_ms\":null,\"request_id\":null}");
}

static void test_anthropic(void **state)
{
    struct dialect_error e = {
        .status = 429, .message = "slow down", .retry_after_ms = -1, .request_id = "req_2"};
    struct dialect_error typed = {.status = 503,
                                  .message = "m",
                                  .reason = "deadline_exhausted",
                                  .retryable = true,
                                  .retry_after_ms = 0,
                                  .request_id = "r"};

    (void)state;
    expect_body(dialect_anthropic_error, &e,
                "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\","
                "\"message\":\"slow down\"},\"request_id\":\"req_2\"}");
    expect_body(dialect_anthropic_error, &typed,
                "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"m\"},"
                "\"status\":\"unavailable\",\"reason\":\"deadline_exhausted\","
                "\"retryable\":true,\"retry_after_ms\":0,\"request_id\":\"r\"}");
    /* in-band: no status, the OpenAI type and code decide */
    assert_string_equal(dialect_anthropic_error_type(0, NULL, "invalid_api_key"),
                        "authentication_error");
    assert_string_equal(dialect_anthropic_error_type(0, "x", NULL), "api_error");
    assert_string_equal(dialect_anthropic_error_type(418, NULL, NULL), "invalid_request_error");
}

/* The server's callback: a NULL type is chosen by the status; the shape is OpenAI's. */
static void test_server_body(void **state)
{
    struct bsc_buf b;

    (void)state;
    bsc_buf_init(&b, 4096);
    assert_int_equal(dialect_openai_srv_error(408, NULL, "request_timeout", "slow", "id", &b),
                     BSC_OK);
    assert_string_equal(b.p, "{\"error\":{\"message\":\"slow\",\"type\":\"invalid_request_error\","
                             "\"param\":null,\"code\":\"request_timeout\"},\"request_id\":\"id\"}");
    bsc_buf_reset(&b);
    assert_int_equal(dialect_openai_srv_error(500, NULL, NULL, NULL, "id", &b), BSC_OK);
    assert_string_equal(b.p, "{\"error\":{\"message\":\"\",\"type\":\"server_error\","
                             "\"param\":null,\"code\":null},\"request_id\":\"id\"}");
    bsc_buf_cleanup(&b);
}

/* A body that does not fit the buffer's bound is not written at all. */
static void test_all_or_nothing(void **state)
{
    struct dialect_error e = {
        .status = 400, .type = "t", .message = "a long enough message", .retry_after_ms = -1};
    struct bsc_buf b;

    (void)state;
    bsc_buf_init(&b, 32);
    assert_int_equal(bsc_buf_append_cstr(&b, "data: "), BSC_OK);
    assert_int_not_equal(dialect_openai_error(&e, &b), BSC_OK);
    assert_int_equal(b.len, 6);
    assert_int_not_equal(dialect_anthropic_error(&e, &b), BSC_OK);
    assert_int_equal(b.len, 6);
    assert_memory_equal(b.p, "data: ", 7);
    bsc_buf_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_openai),
        cmocka_unit_test(test_anthropic),
        cmocka_unit_test(test_server_body),
        cmocka_unit_test(test_all_or_nothing),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
