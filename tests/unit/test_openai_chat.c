/* SPDX-License-Identifier: MIT */
/* test_openai_chat.c -- the readers of the OpenAI surface (api/openai_chat.h): what
 * /v1/chat/completions and /v1/embeddings accept, the spans and flags they hand the router,
 * and the 400 each refusal maps to -- escaped and repeated names (decoded compare, the
 * member named), tools that are not an array, messages that are not objects, nested
 * repeats the router would read. The HTTP side is in tests/integration/hardening_json. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "api/embeddings.h"
#include "api/openai_chat.h"
#include "core/str.h"

#define MSGS "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"

static void expect_refused(const char *body, const char *code, const char *needle)
{
    struct api_refusal why;
    struct api_chat c;

    if (api__chat_read(bsc_str_cstr(body), &c, &why) != BSC_EINVAL)
        fail_msg("accepted: %s", body);
    assert_string_equal(why.code, code);
    if (needle && !strstr(why.message, needle))
        fail_msg("%s: message \"%s\" lacks \"%s\"", body, why.message, needle);
}

static void test_chat_duplicates(void **state)
{
    struct api_refusal why;
    struct api_chat c;

    (void)state;
    expect_refused("{\"model\":\"demo\",\"\\u006dodel\":\"o1-pro\"," MSGS "}", "duplicate_key",
                   "'model' must appear at most once");
    expect_refused("{\"model\":\"demo\"," MSGS ",\"max_tokens\":5,\"\\u006dax_tokens\":100000}",
                   "duplicate_key", "'max_tokens'");
    expect_refused("{\"model\":\"demo\"," MSGS ",\"stream\":false,\"\\u0073tream\":true}",
                   "duplicate_key", "'stream'");
    expect_refused("{\"model\":\"demo\"," MSGS ",\"x\":1,\"\\u0078\":2}", "duplicate_key", "'x'");
    expect_refused("{\"model\":\"demo\"," MSGS ",\"\\ud800\":1}", "invalid_request",
                   "lone surrogate");
    expect_refused("{\"model\":\"demo\"," MSGS ",\"stream_options\":{\"include_usage\":true,"
                   "\"\\u0069nclude_usage\":false}}",
                   "duplicate_key", "include_usage");
    expect_refused("{\"model\":\"demo\"," MSGS ",\"response_format\":{\"type\":\"text\","
                   "\"\\u0074ype\":\"json_schema\"}}",
                   "duplicate_key", "'type'");
    expect_refused("{\"model\":\"demo\",\"messages\":[{\"content\":[{\"type\":\"image_url\"}],"
                   "\"content\":\"x\"}]}",
                   "duplicate_key", "'content'");
    /* without image_url the router never reads inside the messages */
    assert_int_equal(api__chat_read(BSC_STR("{\"model\":\"demo\",\"messages\":[{\"content\":\"a\","
                                            "\"content\":\"b\"}]}"), &c, &why), BSC_OK);
}

static void test_chat_shapes(void **state)
{
    (void)state;
    expect_refused("{\"model\":\"demo\"," MSGS ",\"tools\":{}}", "invalid_type",
                   "'tools' must be an array");
    expect_refused("{\"model\":\"demo\"," MSGS ",\"tools\":1}", "invalid_type", NULL);
    expect_refused("{\"model\":\"demo\",\"messages\":[1]}", "invalid_messages",
                   "must be an object");
    expect_refused("{\"model\":\"demo\",\"messages\":[{},[]]}", "invalid_messages", NULL);
    expect_refused("{\"model\":\"demo\",\"messages\":[]}", "invalid_messages", "non-empty");
    expect_refused("{\"model\":1," MSGS "}", "missing_model", NULL);
    expect_refused("[1]", "invalid_request", "JSON object");
    expect_refused("{\"model\":", "invalid_json", "line 1 column 10");
}

static void test_chat_reads_escaped_names(void **state)
{
    struct api_refusal why;
    struct api_chat c;

    (void)state;
    assert_int_equal(api__chat_read(BSC_STR("{\"\\u006dodel\":\"demo\",\"m\\u0065ssages\":[{}],"
                                            "\"\\u0073tream\":true,\"\\u0074ools\":[{}],"
                                            "\"stream_options\":{\"\\u0069nclude_usage\":true},"
                                            "\"max_tokens\":7,\"tools\\u0020\":null}"),
                                    &c, &why),
                     BSC_OK);
    assert_true(bsc_str_eq(c.model, BSC_STR("\"demo\"")));
    assert_true(bsc_str_eq(c.name, BSC_STR("demo")));
    assert_true(bsc_str_eq(c.messages, BSC_STR("[{}]")));
    assert_true(bsc_str_eq(c.tools, BSC_STR("[{}]")));
    assert_true(bsc_str_eq(c.max_tokens, BSC_STR("7")));
    assert_true(c.stream);
    assert_true(c.include_usage);
    /* tools null is no tools */
    assert_int_equal(api__chat_read(BSC_STR("{\"model\":\"demo\"," MSGS ",\"tools\":null}"), &c,
                                    &why),
                     BSC_OK);
}

static void test_embeddings(void **state)
{
    struct api_refusal why;
    struct api_embeddings e;

    (void)state;
    assert_int_equal(api__embeddings_read(BSC_STR("{\"model\":\"v\",\"\\u006dodel\":\"w\","
                                                  "\"input\":\"x\"}"),
                                          &e, &why),
                     BSC_EINVAL);
    assert_string_equal(why.code, "duplicate_key");
    assert_non_null(strstr(why.message, "'model'"));
    assert_null(e.json);
    assert_int_equal(api__embeddings_read(BSC_STR("{\"\\u006dodel\":\"v\",\"input\":[[1,2]]}"), &e,
                                          &why),
                     BSC_OK);
    assert_string_equal(e.name, "v");
    assert_true(bsc_str_eq(e.model, BSC_STR("\"v\"")));
    json_object_put(e.json);
    assert_int_equal(api__embeddings_read(BSC_STR("{\"model\":\"v\",\"input\":[]}"), &e, &why),
                     BSC_EINVAL);
    assert_string_equal(why.code, "invalid_input");
    assert_int_equal(api__embeddings_read(BSC_STR("{\"model\":\"v\",\"input\":\"x\",}"), &e, &why),
                     BSC_EINVAL);
    assert_string_equal(why.code, "invalid_json");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chat_duplicates),
        cmocka_unit_test(test_chat_shapes),
        cmocka_unit_test(test_chat_reads_escaped_names),
        cmocka_unit_test(test_embeddings),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
