/* SPDX-License-Identifier: MIT */
/* test_api_inspect.c -- what a dialect hands the router about its own request
 * (api/inspect.c): capabilities, the token estimate and the OpenAI-shaped messages span,
 * the same whether read from the client's bytes, from the spans the chat reader found, or
 * from a canonical form serialised (the path of the Anthropic and Responses dialects). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "api/inspect.h"
#include "api/openai_chat.h"
#include "config/config.h"
#include "router/request.h"

#define USER "{\"role\":\"user\",\"content\":\"hi\"}"
#define IMG  "{\"role\":\"user\",\"content\":[{\"type\":\"image\\u005furl\",\"image_url\":{}}]}"

static const struct {
    const char *body;
    bool stream;
    uint32_t caps;
    uint64_t out;
} rows[] = {
    {"{\"model\":\"m\",\"messages\":[" USER "]}", false, 0, 0},
    {"{\"model\":\"m\",\"messages\":[" USER "],\"max_tokens\":100}", true, CFG_CAP_STREAMING, 100},
    {"{\"model\":\"m\",\"messages\":[" USER "],\"max_tokens\":7,\"max_completion_tokens\":9}",
     false, 0, 9},
    {"{\"model\":\"m\",\"messages\":[" IMG "]}", false, CFG_CAP_VISION, 0},
    {"{\"model\":\"m\",\"messages\":[" USER "],\"tools\":[{\"type\":\"function\"}]}", false,
     CFG_CAP_TOOLS, 0},
    {"{\"model\":\"m\",\"messages\":[" USER "],\"tools\":[]}", false, 0, 0},
    {"{\"model\":\"m\",\"messages\":[" USER "],\"response_format\":{\"type\":\"json_schema\"}}",
     false, CFG_CAP_JSON_SCHEMA, 0},
    {"{\"model\":\"m\",\"messages\":[" USER "],\"response_format\":{\"type\":\"json_object\"}}",
     false, CFG_CAP_JSON_OBJECT, 0},
};

static void check(const char *ctx, size_t i, const struct chat_in *in, size_t len)
{
    if (in->need_caps != rows[i].caps || in->est_out_tokens != rows[i].out ||
        in->est_tokens != len / 4 + rows[i].out ||
        in->has_tools != ((rows[i].caps & CFG_CAP_TOOLS) != 0) || !in->messages.p ||
        in->messages.p[0] != '[')
        fail_msg("%s row %zu: caps %#x est %llu out %llu", ctx, i, in->need_caps,
                 (unsigned long long)in->est_tokens, (unsigned long long)in->est_out_tokens);
}

/* The client's OpenAI bytes, with and without the chat reader's spans. */
static void test_openai_body(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct bsc_str body = bsc_str_cstr(rows[i].body);
        struct chat_in in = {.op = PROV_OP_CHAT, .body = body, .stream = rows[i].stream};
        struct api_refusal why;
        struct api_chat c;

        api__inspect(&in, NULL);
        check("body", i, &in, body.len);
        assert_ptr_equal(in.scan_body.p, body.p);
        assert_int_equal(api__chat_read(body, &c, &why), BSC_OK);
        in = (struct chat_in){.op = PROV_OP_CHAT, .body = body, .stream = rows[i].stream};
        api__inspect(&in, &(struct api_scan){c.messages, c.tools, c.response_format, c.max_tokens,
                                             c.max_completion_tokens});
        check("spans", i, &in, body.len);
    }
}

/* Another dialect: only its canonical form, serialised once by api__inspect. */
static void test_canonical_json(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct chat_in in = {.op = PROV_OP_CHAT, .stream = rows[i].stream};
        size_t len = 0;
        const char *text;

        in.json = json_tokener_parse(rows[i].body);
        assert_non_null(in.json);
        api__inspect(&in, NULL);
        text = json_object_to_json_string_length(in.json, JSON_C_TO_STRING_PLAIN, &len);
        check("json", i, &in, len);
        assert_ptr_equal(in.scan_body.p, text); /* the text belongs to in.json */
        assert_true(in.messages.p >= text && in.messages.p < text + len);
        json_object_put(in.json);
    }
}

static void test_embeddings_and_repeats(void **state)
{
    struct chat_in in = {.op = PROV_OP_EMBEDDINGS,
                         .body = BSC_STR("{\"model\":\"e\",\"input\":\"abcdefgh\"}")};

    (void)state;
    api__inspect(&in, NULL);
    assert_int_equal(in.need_caps, CFG_CAP_EMBEDDINGS);
    assert_int_equal(in.est_tokens, in.body.len / 4);
    /* a repeated member: none is read (the api layer refuses those anyway) */
    in = (struct chat_in){.op = PROV_OP_CHAT,
                          .body = BSC_STR("{\"tools\":[1],\"tools\":[2],\"max_tokens\":5}")};
    api__inspect(&in, NULL);
    assert_int_equal(in.need_caps, 0);
    assert_int_equal(in.est_out_tokens, 0);
    assert_null(in.messages.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_openai_body),
        cmocka_unit_test(test_canonical_json),
        cmocka_unit_test(test_embeddings_and_repeats),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
