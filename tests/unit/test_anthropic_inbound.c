/* SPDX-License-Identifier: MIT */
/* test_anthropic_inbound.c -- POST /v1/messages: the Anthropic -> OpenAI request
 * translation (golden, per block kind, system hoisting, tools, tool_choice, the tool round
 * trip, validation errors) and the Anthropic downstream dialect (golden non-stream answer,
 * the exact event sequence of a stream with text and two parallel tool calls, errors,
 * bounds). Golden JSON is written with ' for " to stay readable; q() turns it back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "api/anthropic.h"
#include "api/anthropic_down.h"
#include "dialect/error.h"
#include "core/buf.h"
#include "core/str.h"
#include "core/utf8.h"

#define OUT_MAX (1u << 20)

/* ' -> " in a fresh heap copy (the caller frees). */
static char *q(const char *s)
{
    char *d = strdup(s);

    assert_non_null(d);
    for (char *p = d; *p; p++) {
        if (*p == '\'')
            *p = '"';
    }
    return d;
}

/* Translates the Anthropic request <in_q>; returns the OpenAI JSON text (heap) or NULL
 * with <why> filled. */
static char *xlate(const char *in_q, enum bsc_err *err_out, char *why, size_t why_len)
{
    char *in = q(in_q), *res = NULL;
    struct json_object *areq = json_tokener_parse(in), *oreq = NULL;
    enum bsc_err err;

    assert_non_null(areq);
    err = api__anthropic_to_openai(areq, &oreq, why, why_len);
    json_object_put(areq); /* the result must not depend on the input staying alive */
    if (err_out)
        *err_out = err;
    if (!err) {
        assert_non_null(oreq);
        res = strdup(json_object_to_json_string_ext(oreq, JSON_C_TO_STRING_PLAIN |
                                                              JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(oreq);
    } else {
        assert_null(oreq);
    }
    free(in);
    return res;
}

static void expect_xlate(const char *in_q, const char *want_q)
{
    char why[320], *want = q(want_q);
    enum bsc_err err;
    char *got = xlate(in_q, &err, why, sizeof(why));

    if (err)
        fail_msg("translation failed: %s", why);
    assert_string_equal(got, want);
    free(got);
    free(want);
}

static void expect_reject(const char *in_q, const char *why_part)
{
    char why[320];
    enum bsc_err err;
    char *got = xlate(in_q, &err, why, sizeof(why));

    assert_null(got);
    assert_int_equal(err, BSC_EINVAL);
    if (!strstr(why, why_part))
        fail_msg("message \"%s\" does not mention \"%s\"", why, why_part);
}

#define HEAD "{'model':'assistant','max_tokens':64,"

/* ---- request translation --------------------------------------------------------------- */

static void test_req_system_string_and_plain_messages(void **state)
{
    (void)state;
    expect_xlate(HEAD "'system':'Answer briefly.','messages':[{'role':'user','content':'Hi'},"
                      "{'role':'assistant','content':'Hello'},{'role':'user','content':'Bye'}]}",
                 "{'model':'assistant','messages':[{'role':'system','content':'Answer briefly.'},"
                 "{'role':'user','content':'Hi'},{'role':'assistant','content':'Hello'},"
                 "{'role':'user','content':'Bye'}],'max_tokens':64}");
}

static void test_req_system_blocks_joined(void **state)
{
    (void)state;
    expect_xlate(HEAD
                 "'system':[{'type':'text','text':'One.','cache_control':{'type':'ephemeral'}},"
                 "{'type':'text','text':'Two.'}],'messages':[{'role':'user','content':'x'}]}",
                 "{'model':'assistant','messages':[{'role':'system','content':'One.\\nTwo.'},"
                 "{'role':'user','content':'x'}],'max_tokens':64}");
    /* An empty system says nothing: no system message. */
    expect_xlate(
        HEAD "'system':'','messages':[{'role':'user','content':'x'}]}",
        "{'model':'assistant','messages':[{'role':'user','content':'x'}],'max_tokens':64}");
    expect_reject(HEAD "'system':[{'type':'image','source':{'type':'url','url':'http://x/a.png'}}],"
                       "'messages':[{'role':'user','content':'x'}]}",
                  "system.0.type");
    expect_reject(HEAD "'system':5,'messages':[{'role':'user','content':'x'}]}", "system");
}

static void test_req_user_blocks_text_and_images(void **state)
{
    (void)state;
    expect_xlate(
        HEAD "'messages':[{'role':'user','content':[{'type':'text','text':'What is this?'},"
             "{'type':'image','source':{'type':'base64','media_type':'image/png','data':'iVBOR'}},"
             "{'type':'image','source':{'type':'url','url':'https://x.test/a.jpg'}}]}]}",
        "{'model':'assistant','messages':[{'role':'user','content':["
        "{'type':'text','text':'What is this?'},"
        "{'type':'image_url','image_url':{'url':'data:image/png;base64,iVBOR'}},"
        "{'type':'image_url','image_url':{'url':'https://x.test/a.jpg'}}]}],'max_tokens':64}");
    /* One text block stays a plain string; several stay parts. */
    expect_xlate(
        HEAD "'messages':[{'role':'user','content':[{'type':'text','text':'only'}]}]}",
        "{'model':'assistant','messages':[{'role':'user','content':'only'}],'max_tokens':64}");
    expect_xlate(HEAD "'messages':[{'role':'user','content':[{'type':'text','text':'a'},"
                      "{'type':'text','text':'b'}]}]}",
                 "{'model':'assistant','messages':[{'role':'user','content':["
                 "{'type':'text','text':'a'},{'type':'text','text':'b'}]}],'max_tokens':64}");
}

static void test_req_assistant_blocks(void **state)
{
    (void)state;
    /* text joined, tool_use -> tool_calls with the input as a JSON string, thinking dropped */
    expect_xlate(
        HEAD
        "'messages':[{'role':'user','content':'Weather in Oslo?'},"
        "{'role':'assistant','content':[{'type':'thinking','thinking':'hmm','signature':'s'},"
        "{'type':'text','text':'Checking'},{'type':'text','text':'.'},"
        "{'type':'tool_use','id':'toolu_01A','name':'get_weather','input':{'city':'Oslo'}}]}]}",
        "{'model':'assistant','messages':[{'role':'user','content':'Weather in Oslo?'},"
        "{'role':'assistant','content':'Checking.','tool_calls':[{'id':'toolu_01A','type':'"
        "function',"
        "'function':{'name':'get_weather','arguments':'{\\'city\\':\\'Oslo\\'}'}}]}],"
        "'max_tokens':64}");
    /* Only tool calls: content null. Only thinking: content "". */
    expect_xlate(HEAD "'messages':[{'role':'assistant','content':[{'type':'tool_use','id':'t1',"
                      "'name':'f','input':{}}]}]}",
                 "{'model':'assistant','messages':[{'role':'assistant','content':null,'tool_calls':"
                 "[{'id':'t1','type':'function','function':{'name':'f','arguments':'{}'}}]}],"
                 "'max_tokens':64}");
    expect_xlate(
        HEAD "'messages':[{'role':'assistant','content':[{'type':'redacted_thinking',"
             "'data':'x'}]}]}",
        "{'model':'assistant','messages':[{'role':'assistant','content':''}],'max_tokens':64}");
}

static void test_req_tool_results(void **state)
{
    (void)state;
    /* tool_result blocks become tool messages first; the user's text and the images found
     * inside a tool_result follow in one user message; is_error is noted in the content. */
    expect_xlate(
        HEAD "'messages':[{'role':'user','content':["
             "{'type':'tool_result','tool_use_id':'toolu_A','content':'{\\'temp_c\\':4}'},"
             "{'type':'tool_result','tool_use_id':'toolu_B','is_error':true,'content':["
             "{'type':'text','text':'timeout'},{'type':'text','text':'retry later'},"
             "{'type':'image','source':{'type':'url','url':'https://x.test/s.png'}}]},"
             "{'type':'tool_result','tool_use_id':'toolu_C'},"
             "{'type':'text','text':'And tomorrow?'}]}]}",
        "{'model':'assistant','messages':["
        "{'role':'tool','content':'{\\'temp_c\\':4}','tool_call_id':'toolu_A'},"
        "{'role':'tool','content':'Error: timeout\\nretry later','tool_call_id':'toolu_B'},"
        "{'role':'tool','content':'','tool_call_id':'toolu_C'},"
        "{'role':'user','content':[{'type':'image_url','image_url':{'url':'https://x.test/s.png'}},"
        "{'type':'text','text':'And tomorrow?'}]}],'max_tokens':64}");
    /* Only tool results: no empty user message after them. */
    expect_xlate(
        HEAD "'messages':[{'role':'user','content':[{'type':'tool_result',"
             "'tool_use_id':'t','content':'ok'}]}]}",
        "{'model':'assistant','messages':[{'role':'tool','content':'ok','tool_call_id':'t'}],"
        "'max_tokens':64}");
}

static void test_req_tool_round_trip(void **state)
{
    char why[320];
    enum bsc_err err;
    char *got;
    struct json_object *o, *msgs, *call, *tool, *v;

    (void)state;
    got = xlate(HEAD "'messages':[{'role':'user','content':'Weather in Oslo?'},"
                     "{'role':'assistant','content':[{'type':'tool_use','id':'toolu_9',"
                     "'name':'get_weather','input':{'city':'Oslo','days':[1,2]}}]},"
                     "{'role':'user','content':[{'type':'tool_result','tool_use_id':'toolu_9',"
                     "'content':[{'type':'text','text':'4 C'}]}]}]}",
                &err, why, sizeof(why));
    assert_int_equal(err, BSC_OK);
    o = json_tokener_parse(got);
    assert_non_null(o);
    assert_true(json_object_object_get_ex(o, "messages", &msgs));
    assert_int_equal(json_object_array_length(msgs), 3);
    assert_true(json_object_object_get_ex(json_object_array_get_idx(msgs, 1), "tool_calls", &v));
    call = json_object_array_get_idx(v, 0);
    tool = json_object_array_get_idx(msgs, 2);
    /* The id links the call and its result on the OpenAI side too. */
    assert_true(json_object_object_get_ex(call, "id", &v));
    assert_string_equal(json_object_get_string(v), "toolu_9");
    assert_true(json_object_object_get_ex(tool, "tool_call_id", &v));
    assert_string_equal(json_object_get_string(v), "toolu_9");
    assert_true(json_object_object_get_ex(tool, "role", &v));
    assert_string_equal(json_object_get_string(v), "tool");
    assert_true(json_object_object_get_ex(tool, "content", &v));
    assert_string_equal(json_object_get_string(v), "4 C");
    /* The arguments string parses back to the input object. */
    assert_true(json_object_object_get_ex(call, "function", &v));
    assert_true(json_object_object_get_ex(v, "arguments", &v));
    {
        struct json_object *args = json_tokener_parse(json_object_get_string(v)), *days;
        assert_non_null(args);
        assert_true(json_object_object_get_ex(args, "days", &days));
        assert_int_equal(json_object_array_length(days), 2);
        json_object_put(args);
    }
    json_object_put(o);
    free(got);
}

static void test_req_tools_and_tool_choice(void **state)
{
    (void)state;
    expect_xlate(
        HEAD "'messages':[{'role':'user','content':'x'}],'tools':[{'name':'get_weather',"
             "'description':'weather','input_schema':{'type':'object','properties':{'city':"
             "{'type':'string'}},'required':['city']}},{'name':'noop','type':'custom'}],"
             "'tool_choice':{'type':'any','disable_parallel_tool_use':true}}",
        "{'model':'assistant','messages':[{'role':'user','content':'x'}],'max_tokens':64,"
        "'tools':[{'type':'function','function':{'name':'get_weather','description':'weather',"
        "'parameters':{'type':'object','properties':{'city':{'type':'string'}},'required':['city']}"
        "}},"
        "{'type':'function','function':{'name':'noop','parameters':{'type':'object','properties':{}"
        "}}}],"
        "'tool_choice':'required','parallel_tool_calls':false}");
    expect_xlate(
        HEAD "'messages':[{'role':'user','content':'x'}],'tools':[{'name':'f',"
             "'input_schema':{'type':'object'}}],'tool_choice':{'type':'tool','name':'f'}}",
        "{'model':'assistant','messages':[{'role':'user','content':'x'}],'max_tokens':64,"
        "'tools':[{'type':'function','function':{'name':'f','parameters':{'type':'object'}}}],"
        "'tool_choice':{'type':'function','function':{'name':'f'}}}");
    expect_xlate(
        HEAD "'messages':[{'role':'user','content':'x'}],'tools':[{'name':'f',"
             "'input_schema':{'type':'object'}}],'tool_choice':{'type':'auto'}}",
        "{'model':'assistant','messages':[{'role':'user','content':'x'}],'max_tokens':64,"
        "'tools':[{'type':'function','function':{'name':'f','parameters':{'type':'object'}}}],"
        "'tool_choice':'auto'}");
    /* none: no parallel_tool_calls even when disable_parallel_tool_use is set */
    expect_xlate(
        HEAD "'messages':[{'role':'user','content':'x'}],'tools':[{'name':'f',"
             "'input_schema':{'type':'object'}}],"
             "'tool_choice':{'type':'none','disable_parallel_tool_use':true}}",
        "{'model':'assistant','messages':[{'role':'user','content':'x'}],'max_tokens':64,"
        "'tools':[{'type':'function','function':{'name':'f','parameters':{'type':'object'}}}],"
        "'tool_choice':'none'}");
    /* Without tools, tool_choice has nothing to choose from and is left out. */
    expect_xlate(
        HEAD "'messages':[{'role':'user','content':'x'}],'tool_choice':{'type':'any'}}",
        "{'model':'assistant','messages':[{'role':'user','content':'x'}],'max_tokens':64}");
    expect_reject(HEAD "'messages':[{'role':'user','content':'x'}],'tools':[{'type':"
                       "'web_search_20250305','name':'web_search'}]}",
                  "tools.0.type");
    expect_reject(HEAD "'messages':[{'role':'user','content':'x'}],'tools':[{'name':'f'}],"
                       "'tool_choice':{'type':'tool'}}",
                  "tool_choice.name");
    expect_reject(HEAD "'messages':[{'role':'user','content':'x'}],'tools':[{'name':'f'}],"
                       "'tool_choice':{'type':'sometimes'}}",
                  "tool_choice.type");
    expect_reject(HEAD "'messages':[{'role':'user','content':'x'}],'tools':[{'description':'d'}]}",
                  "tools.0.name");
}

static void test_req_params(void **state)
{
    (void)state;
    expect_xlate("{'model':'m','max_tokens':1024,'messages':[{'role':'user','content':'x'}],"
                 "'stop_sequences':['###','END'],'temperature':0.5,'top_p':0.9,'top_k':40,"
                 "'metadata':{'user_id':'u-123'},'thinking':{'type':'enabled','budget_tokens':512},"
                 "'stream':true}",
                 "{'model':'m','messages':[{'role':'user','content':'x'}],'max_tokens':1024,"
                 "'stop':['###','END'],'temperature':0.5,'top_p':0.9,'user':'u-123','stream':true,"
                 "'stream_options':{'include_usage':true}}");
    /* stream:false, empty stop_sequences and an empty metadata add nothing */
    expect_xlate("{'model':'m','max_tokens':1,'messages':[{'role':'user','content':'x'}],"
                 "'stop_sequences':[],'metadata':{},'stream':false,'temperature':1}",
                 "{'model':'m','messages':[{'role':'user','content':'x'}],'max_tokens':1,"
                 "'temperature':1}");
}

static void test_req_validation(void **state)
{
    (void)state;
    expect_reject("{'model':'m','messages':[{'role':'user','content':'x'}]}", "max_tokens");
    expect_reject("{'model':'m','max_tokens':0,'messages':[{'role':'user','content':'x'}]}",
                  "max_tokens");
    expect_reject("{'model':'m','max_tokens':'10','messages':[{'role':'user','content':'x'}]}",
                  "max_tokens");
    expect_reject("{'max_tokens':5,'messages':[{'role':'user','content':'x'}]}", "model");
    expect_reject("{'model':'','max_tokens':5,'messages':[{'role':'user','content':'x'}]}",
                  "model");
    expect_reject("{'model':'m','max_tokens':5}", "messages");
    expect_reject("{'model':'m','max_tokens':5,'messages':[]}", "messages");
    expect_reject("[1]", "JSON object");
    expect_reject(HEAD "'messages':[{'role':'system','content':'x'}]}", "messages.0.role");
    expect_reject(HEAD "'messages':[{'role':'user','content':5}]}", "messages.0.content");
    expect_reject(HEAD "'messages':[{'role':'user','content':[{'text':'x'}]}]}",
                  "messages.0.content.0.type");
    expect_reject(HEAD "'messages':[{'role':'user','content':[{'type':'document','source':{}}]}]}",
                  "'document' blocks are not supported");
    expect_reject(HEAD "'messages':[{'role':'user','content':[{'type':'text','text':1}]}]}",
                  "messages.0.content.0.text");
    expect_reject(HEAD "'messages':[{'role':'user','content':[{'type':'image','source':"
                       "{'type':'file','file_id':'f'}}]}]}",
                  "messages.0.content.0.source.type");
    expect_reject(HEAD "'messages':[{'role':'user','content':[{'type':'image','source':"
                       "{'type':'base64','data':'x'}}]}]}",
                  "media_type");
    expect_reject(HEAD "'messages':[{'role':'user','content':[{'type':'tool_use','id':'t',"
                       "'name':'f','input':{}}]}]}",
                  "assistant messages");
    expect_reject(HEAD "'messages':[{'role':'assistant','content':[{'type':'tool_use',"
                       "'name':'f','input':{}}]}]}",
                  "messages.0.content.0.id");
    expect_reject(HEAD "'messages':[{'role':'assistant','content':[{'type':'tool_use','id':'t',"
                       "'name':'f','input':[1]}]}]}",
                  "messages.0.content.0.input");
    expect_reject(HEAD "'messages':[{'role':'assistant','content':[{'type':'image','source':"
                       "{'type':'url','url':'http://x'}}]}]}",
                  "not allowed in assistant messages");
    expect_reject(HEAD "'messages':[{'role':'user','content':[{'type':'tool_result'}]}]}",
                  "tool_use_id");
    expect_reject(HEAD "'messages':[{'role':'user','content':[{'type':'tool_result',"
                       "'tool_use_id':'t','content':[{'type':'tool_use'}]}]}]}",
                  "messages.0.content.0.content.0.type");
    expect_reject(HEAD "'messages':[{'role':'user','content':'x'}],'temperature':1.5}",
                  "temperature");
    expect_reject(HEAD "'messages':[{'role':'user','content':'x'}],'top_p':'high'}", "top_p");
    expect_reject(HEAD "'messages':[{'role':'user','content':'x'}],'stream':'yes'}", "stream");
    expect_reject(HEAD "'messages':[{'role':'user','content':'x'}],'stop_sequences':[1]}",
                  "stop_sequences.0");
    expect_reject(HEAD "'messages':[{'role':'user','content':'x'}],'metadata':{'user_id':7}}",
                  "metadata.user_id");
    expect_reject(HEAD "'messages':[{'role':'user','content':[]}]}", "messages.0.content");
}

static void test_parse_body(void **state)
{
    struct anth_req ar;
    char why[320], *body;

    (void)state;
    body = q(HEAD "'messages':[{'role':'user','content':'x'}],'stream':true}  \n");
    assert_int_equal(api__anthropic_parse(bsc_str_cstr(body), &ar, why, sizeof(why)), BSC_OK);
    assert_non_null(ar.openai);
    assert_true(bsc_str_eq(ar.model, BSC_STR("assistant")));
    assert_true(ar.stream);
    json_object_put(ar.openai);
    free(body);

    body = q(HEAD "'messages':[{'role':'user','content':'x'}]}");
    assert_int_equal(api__anthropic_parse(bsc_str_cstr(body), &ar, why, sizeof(why)), BSC_OK);
    assert_false(ar.stream);
    json_object_put(ar.openai);
    free(body);

    assert_int_equal(api__anthropic_parse(BSC_STR("{\"model\":"), &ar, why, sizeof(why)),
                     BSC_EINVAL);
    assert_non_null(strstr(why, "We could not parse the JSON body of your request"));
    assert_null(ar.openai);
    assert_int_equal(api__anthropic_parse(BSC_STR(""), &ar, why, sizeof(why)), BSC_EINVAL);
    assert_non_null(strstr(why, "empty body"));
    assert_int_equal(api__anthropic_parse(BSC_STR("{} {}"), &ar, why, sizeof(why)), BSC_EINVAL);
    assert_non_null(strstr(why, "line 1 column 4")); /* nothing may follow the document */
    /* invalid UTF-8 inside a string */
    assert_int_equal(api__anthropic_parse(BSC_STR("{\"model\":\"\xff\"}"), &ar, why, sizeof(why)),
                     BSC_EINVAL);
    body = q("{'model':'m','messages':[{'role':'user','content':'x'}]}");
    assert_int_equal(api__anthropic_parse(bsc_str_cstr(body), &ar, why, sizeof(why)), BSC_EINVAL);
    assert_non_null(strstr(why, "max_tokens"));
    free(body);
}

/* One UTF-8 rule for every endpoint (core/utf8.h, as /v1/chat/completions applies it): an
 * ill-formed sequence anywhere in the body is a 400, never a U+FFFD passed on upstream. */
static void test_parse_body_utf8_rule(void **state)
{
    static const char *const bad[] = {
        "\xe0\x80\x94",         /* overlong U+2014 */
        "\xc0\xaf",             /* overlong '/' */
        "\xed\xa0\x80",         /* UTF-16 surrogate D800 */
        "\xf4\x90\x80\x80",     /* U+110000 */
        "\xf5\x80\x80\x80",     /* lead byte past U+10FFFF */
        "\x80",                 /* stray continuation */
        "\xe2\x80",             /* truncated */
    };
    static const char *const good[] = {"\xe2\x80\x94", "\xf4\x8f\xbf\xbf", "\xed\x9f\xbf",
                                       "\\ud83d\\ude00", "\\ud800", "x\\udc00"};
    struct anth_req ar;
    char why[320], body[256];

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        /* in a text, in a member name, in the model name */
        const char *fmt[] = {
            "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\","
            "\"content\":\"a%sb\"}]}",
            "{\"model\":\"m\",\"max_tokens\":1,\"x%s\":1,\"messages\":[{\"role\":\"user\","
            "\"content\":\"ab\"}]}",
            "{\"model\":\"m%s\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\","
            "\"content\":\"ab\"}]}",
        };
        for (size_t f = 0; f < 3; f++) {
            snprintf(body, sizeof(body), fmt[f], bad[i]);
            memset(&ar, 0xa5, sizeof(ar));
            assert_int_equal(api__anthropic_parse(bsc_str_cstr(body), &ar, why, sizeof(why)),
                             BSC_EINVAL);
            assert_null(ar.openai);
            assert_non_null(strstr(why, "We could not parse the JSON body of your request: "));
            assert_non_null(strstr(why, "line 1 column "));
        }
    }
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        const char *text;

        snprintf(body, sizeof(body),
                 "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\","
                 "\"content\":\"a%sb\"}]}",
                 good[i]);
        assert_int_equal(api__anthropic_parse(bsc_str_cstr(body), &ar, why, sizeof(why)), BSC_OK);
        text = json_object_to_json_string_ext(ar.openai, JSON_C_TO_STRING_PLAIN);
        assert_true(bsc_utf8_valid(text, strlen(text)));
        json_object_put(ar.openai);
    }
}

/* ---- the downstream dialect: non-stream --------------------------------------------------- */

static const struct down_ctx CTX = {.request_id = "req_42", .model = "assistant"};
/* The same for an attempt that went to an anthropic target with the client's own bytes. */
static const struct down_ctx NATIVE_CTX = {.request_id = "req_42", .model = "assistant",
                                           .native = true};

static void expect_map(const char *oai_q, const char *want_q)
{
    char *oai = q(oai_q), *want = q(want_q);
    struct bsc_buf out;

    bsc_buf_init(&out, OUT_MAX);
    assert_int_equal(api_anthropic_down.map_response(bsc_str_cstr(oai), &CTX, &out), BSC_OK);
    assert_string_equal(out.p, want);
    bsc_buf_cleanup(&out);
    free(oai);
    free(want);
}

static void test_map_response_golden(void **state)
{
    (void)state;
    expect_map(
        "{'id':'chatcmpl-B9x','object':'chat.completion','created':1,'model':'gpt-sim',"
        "'choices':[{'index':0,'finish_reason':'tool_calls','message':{'role':'assistant',"
        "'content':'Checking.','refusal':null,'tool_calls':[{'id':'call_7Kq','type':'function',"
        "'function':{'name':'get_weather','arguments':'{\\'city\\': \\'Oslo\\'}'}},"
        "{'id':'call_8','type':'function','function':{'name':'get_time','arguments':''}}]}}],"
        "'usage':{'prompt_tokens':81,'completion_tokens':17,'total_tokens':98,"
        "'prompt_tokens_details':{'cached_tokens':64}}}",
        "{'id':'msg_B9x','type':'message','role':'assistant','model':'gpt-sim','content':["
        "{'type':'text','text':'Checking.'},"
        "{'type':'tool_use','id':'call_7Kq','name':'get_weather','input':{'city':'Oslo'}},"
        "{'type':'tool_use','id':'call_8','name':'get_time','input':{}}],"
        "'stop_reason':'tool_use','stop_sequence':null,'usage':{'input_tokens':17,"
        "'cache_creation_input_tokens':0,'cache_read_input_tokens':64,'output_tokens':17}}");
}

/* An Anthropic upstream's msg_ id keeps its one prefix; the upstream model is shown. */
static void test_map_response_msg_id_and_model(void **state)
{
    (void)state;
    expect_map("{'id':'msg_01Ab','model':'claude-x','choices':[{'index':0,'finish_reason':'stop',"
               "'message':{'role':'assistant','content':'Hi'}}]}",
               "{'id':'msg_01Ab','type':'message','role':'assistant','model':'claude-x','content':["
               "{'type':'text','text':'Hi'}],'stop_reason':'end_turn','stop_sequence':null,"
               "'usage':{'input_tokens':0,'cache_creation_input_tokens':0,"
               "'cache_read_input_tokens':0,'output_tokens':0}}");
}

/* The adapter's carrier of a native answer: the upstream's message goes out as it came. */
static void test_map_response_native(void **state)
{
    const char *in = "{\"bascule_native\":{\"id\":\"msg_1\",\"type\":\"message\","
                     "\"content\":[{\"type\":\"thinking\",\"thinking\":\"t\"}]},"
                     "\"id\":\"msg_1\",\"choices\":[]}";
    struct bsc_buf out;

    (void)state;
    bsc_buf_init(&out, OUT_MAX);
    assert_int_equal(api_anthropic_down.map_response(bsc_str_cstr(in), &NATIVE_CTX, &out),
                     BSC_OK);
    assert_string_equal(out.p, "{\"id\":\"msg_1\",\"type\":\"message\","
                               "\"content\":[{\"type\":\"thinking\",\"thinking\":\"t\"}]}");
    /* From any other attempt the carrier is an upstream's forgery: translated, never relayed. */
    bsc_buf_reset(&out);
    assert_int_equal(api_anthropic_down.map_response(bsc_str_cstr(in), &CTX, &out), BSC_OK);
    assert_null(strstr(out.p, "thinking"));
    assert_non_null(strstr(out.p, "\"content\":[]"));
    bsc_buf_cleanup(&out);
}

static void test_map_response_variants(void **state)
{
    (void)state;
    /* invalid arguments are kept as {"_raw": ...}; no usage -> zeros; no id -> request id */
    expect_map(
        "{'choices':[{'index':0,'finish_reason':'tool_calls','message':{'role':'assistant',"
        "'content':null,'tool_calls':[{'id':'c1','type':'function','function':{'name':'f',"
        "'arguments':'{\\'a\\':'}}]}}]}",
        "{'id':'msg_req_42','type':'message','role':'assistant','model':'assistant','content':["
        "{'type':'tool_use','id':'c1','name':'f','input':{'_raw':'{\\'a\\':'}}],"
        "'stop_reason':'tool_use','stop_sequence':null,'usage':{'input_tokens':0,"
        "'cache_creation_input_tokens':0,'cache_read_input_tokens':0,'output_tokens':0}}");
    /* length -> max_tokens */
    expect_map(
        "{'id':'x','choices':[{'index':0,'finish_reason':'length','message':{'content':'ab'}}],"
        "'usage':{'prompt_tokens':3,'completion_tokens':2}}",
        "{'id':'msg_x','type':'message','role':'assistant','model':'assistant','content':["
        "{'type':'text','text':'ab'}],'stop_reason':'max_tokens','stop_sequence':null,"
        "'usage':{'input_tokens':3,'cache_creation_input_tokens':0,"
        "'cache_read_input_tokens':0,'output_tokens':2}}");
    /* content_filter -> refusal; a refusal string is shown as text */
    expect_map("{'id':'x','choices':[{'index':0,'finish_reason':'stop','message':{'content':null,"
               "'refusal':'I cannot help with that.'}}]}",
               "{'id':'msg_x','type':'message','role':'assistant','model':'assistant','content':["
               "{'type':'text','text':'I cannot help with that.'}],'stop_reason':'refusal',"
               "'stop_sequence':null,'usage':{'input_tokens':0,'cache_creation_input_tokens':0,"
               "'cache_read_input_tokens':0,'output_tokens':0}}");
    expect_map("{'id':'x','choices':[{'index':0,'finish_reason':'content_filter','message':"
               "{'content':''}}]}",
               "{'id':'msg_x','type':'message','role':'assistant','model':'assistant','content':[],"
               "'stop_reason':'refusal','stop_sequence':null,'usage':{'input_tokens':0,"
               "'cache_creation_input_tokens':0,'cache_read_input_tokens':0,'output_tokens':0}}");
    /* stop with the matched sequence named (vLLM) -> stop_sequence; text parts joined */
    expect_map(
        "{'id':'x','choices':[{'index':0,'finish_reason':'stop','stop_reason':'###',"
        "'message':{'content':[{'type':'text','text':'a'},{'type':'text','text':'b'}]}}]}",
        "{'id':'msg_x','type':'message','role':'assistant','model':'assistant','content':["
        "{'type':'text','text':'a'},{'type':'text','text':'b'}],'stop_reason':'stop_sequence',"
        "'stop_sequence':'###','usage':{'input_tokens':0,'cache_creation_input_tokens':0,"
        "'cache_read_input_tokens':0,'output_tokens':0}}");
    /* plain stop -> end_turn; a server that says stop with tool calls -> tool_use */
    expect_map(
        "{'id':'x','choices':[{'index':0,'finish_reason':'stop','message':{'content':'hi'}}]}",
        "{'id':'msg_x','type':'message','role':'assistant','model':'assistant','content':["
        "{'type':'text','text':'hi'}],'stop_reason':'end_turn','stop_sequence':null,"
        "'usage':{'input_tokens':0,'cache_creation_input_tokens':0,"
        "'cache_read_input_tokens':0,'output_tokens':0}}");
    expect_map("{'id':'x','choices':[{'index':0,'finish_reason':'stop','message':{'tool_calls':"
               "[{'id':'c','function':{'name':'f','arguments':{'k':1}}}]}}]}",
               "{'id':'msg_x','type':'message','role':'assistant','model':'assistant','content':["
               "{'type':'tool_use','id':'c','name':'f','input':{'k':1}}],'stop_reason':'tool_use',"
               "'stop_sequence':null,'usage':{'input_tokens':0,'cache_creation_input_tokens':0,"
               "'cache_read_input_tokens':0,'output_tokens':0}}");
}

static void test_map_response_rejects_garbage(void **state)
{
    struct bsc_buf out;

    (void)state;
    bsc_buf_init(&out, OUT_MAX);
    assert_int_equal(api_anthropic_down.map_response(BSC_STR("{\"id\":"), &CTX, &out), BSC_EPARSE);
    assert_int_equal(api_anthropic_down.map_response(BSC_STR("[]"), &CTX, &out), BSC_EPARSE);
    assert_int_equal(api_anthropic_down.map_response(BSC_STR("{} x"), &CTX, &out), BSC_EPARSE);
    assert_int_equal(out.len, 0);
    /* a bounded buffer too small: BSC_ELIMIT and nothing half-written */
    bsc_buf_cleanup(&out);
    bsc_buf_init(&out, 40);
    assert_int_equal(
        api_anthropic_down.map_response(
            BSC_STR("{\"id\":\"x\",\"choices\":[{\"message\":{\"content\":\"hello\"}}]}"), &CTX,
            &out),
        BSC_ELIMIT);
    assert_int_equal(out.len, 0);
    bsc_buf_cleanup(&out);
}

/* ---- the downstream dialect: streams ----------------------------------------------------- */

#define EV(name, data) "event: " name "\ndata: " data "\n\n"
#define CHUNK(body)                                                                                \
    "{'id':'chatcmpl-S1','object':'chat.completion.chunk','created':1,'model':'gpt-sim'," body "}"

struct sfix {
    void *st;
    struct bsc_buf out;
};

static void sfix_init_ctx(struct sfix *f, size_t max, const struct down_ctx *ctx)
{
    f->st = calloc(1, api_anthropic_down.stream_size);
    assert_non_null(f->st);
    api_anthropic_down.stream_init(f->st, ctx);
    bsc_buf_init(&f->out, max);
}

static void sfix_init(struct sfix *f, size_t max)
{
    sfix_init_ctx(f, max, &CTX);
}

static void sfix_cleanup(struct sfix *f)
{
    api_anthropic_down.stream_cleanup(f->st);
    free(f->st);
    bsc_buf_cleanup(&f->out);
}

static void feed(struct sfix *f, const char *chunk_q)
{
    char *c = q(chunk_q);

    assert_int_equal(api_anthropic_down.stream_chunk(f->st, bsc_str_cstr(c), &f->out), BSC_OK);
    free(c);
}

/* Every frame is "event: X\ndata: <JSON whose type is X>\n\n". */
static void check_frames(const char *s)
{
    while (*s) {
        const char *nl = strchr(s, '\n'), *end;
        char name[64], *data;
        struct json_object *o, *t;
        assert_non_null(nl);
        assert_memory_equal(s, "event: ", 7);
        snprintf(name, sizeof(name), "%.*s", (int)(nl - s - 7), s + 7);
        assert_memory_equal(nl + 1, "data: ", 6);
        end = strstr(nl + 7, "\n\n");
        assert_non_null(end);
        data = strndup(nl + 7, (size_t)(end - nl - 7));
        assert_null(strchr(data, '\n'));
        o = json_tokener_parse(data);
        if (!o)
            fail_msg("frame %s: data is not JSON: %s", name, data);
        assert_true(json_object_object_get_ex(o, "type", &t));
        assert_string_equal(json_object_get_string(t), name);
        json_object_put(o);
        free(data);
        s = end + 2;
    }
}

static void expect_out(struct sfix *f, const char *want_q)
{
    char *want = q(want_q);

    assert_string_equal(f->out.p ? f->out.p : "", want);
    check_frames(f->out.p ? f->out.p : "");
    free(want);
}

/* Native events go out whole under their own name; the shadows never reach the client. */
static void test_stream_native_events(void **state)
{
    struct sfix f;

    (void)state;
    sfix_init_ctx(&f, OUT_MAX, &NATIVE_CTX);
    feed(&f, "{'bascule_native':'message_start','choices':[],'data':{'type':'message_start','message':"
             "{'usage':{'input_tokens':9}}}}");
    feed(&f, "{'bascule_shadow':1,'id':'x','choices':[{'index':0,'delta':{'content':'a'}}]}");
    feed(&f, "{'bascule_native':'ping','choices':[],'data':{'type':'ping'}}");
    assert_int_equal(api_anthropic_down.stream_chunk(f.st, BSC_STR("{\"bascule_native\":\"x\""),
                                                     &f.out),
                     BSC_EPARSE);
    expect_out(&f, "event: message_start\ndata: {'type':'message_start','message':"
                   "{'usage':{'input_tokens':9}}}\n\nevent: ping\ndata: {'type':'ping'}\n\n");
    sfix_cleanup(&f);
    /* An upstream that is not the native attempt cannot inject whole events this way. */
    sfix_init(&f, OUT_MAX);
    feed(&f, "{'bascule_native':'ping','choices':[],'data':{'type':'ping'}}");
    assert_null(strstr(f.out.p ? f.out.p : "", "event: ping"));
    sfix_cleanup(&f);
}

/* message_start.usage with a prompt count of <in> (cached <cached>, written <write>) known
 * before the first frame (-1: not known): its text. */
static char *start_usage(int64_t in, int64_t cached, int64_t write)
{
    struct down_ctx ctx = CTX;
    void *st = calloc(1, api_anthropic_down.stream_size);
    struct bsc_buf out;
    const char *u;
    char *got;

    ctx.input_tokens = in;
    ctx.cached_tokens = cached;
    ctx.cache_write_tokens = write;
    api_anthropic_down.stream_init(st, &ctx);
    bsc_buf_init(&out, OUT_MAX);
    assert_int_equal(api_anthropic_down.stream_chunk(
                         st, BSC_STR("{\"id\":\"chatcmpl-1\",\"model\":\"m\",\"choices\":[]}"),
                         &out),
                     BSC_OK);
    assert_non_null(strstr(out.p, "\"id\":\"msg_1\""));
    u = strstr(out.p, "\"usage\":");
    assert_non_null(u);
    got = strndup(u, (size_t)(strchr(u, '}') - u + 1));
    api_anthropic_down.stream_cleanup(st);
    free(st);
    bsc_buf_cleanup(&out);
    return got;
}

/* message_start carries the upstream's own prompt count when it came before the first frame
 * (a Gemini upstream), split the Anthropic way; else 0, never an estimate a client (LangChain)
 * would take for the real count. */
static void test_stream_start_usage(void **state)
{
    char *u;

    (void)state;
    u = start_usage(1000, 600, 100);
    assert_string_equal(u, "\"usage\":{\"input_tokens\":300,\"cache_creation_input_tokens\":100,"
                           "\"cache_read_input_tokens\":600,\"output_tokens\":0}");
    free(u);
    u = start_usage(-1, 0, 0);
    assert_string_equal(u, "\"usage\":{\"input_tokens\":0,\"cache_creation_input_tokens\":0,"
                           "\"cache_read_input_tokens\":0,\"output_tokens\":0}");
    free(u);
}

static void test_stream_text_and_parallel_tools(void **state)
{
    struct sfix f;

    (void)state;
    sfix_init(&f, OUT_MAX);
    feed(&f, CHUNK("'choices':[{'index':0,'delta':{'role':'assistant','content':''},"
                   "'finish_reason':null}],'usage':null"));
    feed(&f, CHUNK("'choices':[{'index':0,'delta':{'content':'Let me '},'finish_reason':null}]"));
    feed(&f, CHUNK("'choices':[{'index':0,'delta':{'content':'check.'},'finish_reason':null}]"));
    feed(&f, CHUNK("'choices':[{'index':0,'delta':{'tool_calls':[{'index':0,'id':'call_A',"
                   "'type':'function','function':{'name':'get_weather','arguments':''}}]},"
                   "'finish_reason':null}]"));
    feed(&f, CHUNK("'choices':[{'index':0,'delta':{'tool_calls':[{'index':0,'function':"
                   "{'arguments':'{\\'city\\':'}}]},'finish_reason':null}]"));
    feed(&f, CHUNK("'choices':[{'index':0,'delta':{'tool_calls':[{'index':0,'function':"
                   "{'arguments':'\\'Oslo\\'}'}}]},'finish_reason':null}]"));
    feed(&f, CHUNK("'choices':[{'index':0,'delta':{'tool_calls':[{'index':1,'id':'call_B',"
                   "'type':'function','function':{'name':'get_time','arguments':'{\\'tz\\''}}]},"
                   "'finish_reason':null}]"));
    feed(&f, CHUNK("'choices':[{'index':0,'delta':{'tool_calls':[{'index':1,'function':"
                   "{'arguments':':\\'CET\\'}'}}]},'finish_reason':null}]"));
    feed(&f, CHUNK("'choices':[{'index':0,'delta':{},'finish_reason':'tool_calls'}]"));
    feed(&f, CHUNK("'choices':[],'usage':{'prompt_tokens':30,'completion_tokens':12,"
                   "'total_tokens':42,'prompt_tokens_details':{'cached_tokens':10}}"));
    feed(&f, "[DONE]");
    assert_int_equal(api_anthropic_down.stream_done(f.st, &f.out), BSC_OK);
    expect_out(
        &f,
        EV("message_start",
           "{'type':'message_start','message':{'id':'msg_S1','type':'message',"
           "'role':'assistant','model':'gpt-sim','content':[],'stop_reason':null,"
           "'stop_sequence':null,'usage':{'input_tokens':0,'cache_creation_input_tokens':0,"
           "'cache_read_input_tokens':0,'output_tokens':0}}}")
            EV("content_block_start",
               "{'type':'content_block_start','index':0,'content_block':"
               "{'type':'text','text':''}}") EV("content_block_delta",
                                                "{'type':'content_block_delta','index':0,'delta':"
                                                "{'type':'text_delta','text':'Let me '}}")
                EV("content_block_delta", "{'type':'content_block_delta','index':0,'delta':"
                                          "{'type':'text_delta','text':'check.'}}")
                    EV("content_block_stop", "{'type':'content_block_stop','index':0}") EV(
                        "content_block_start",
                        "{'type':'content_block_start','index':1,'content_block':"
                        "{'type':'tool_use','id':'call_A','name':'get_weather','input':{}}}")
                        EV("content_block_delta",
                           "{'type':'content_block_delta','index':1,'delta':"
                           "{'type':'input_json_delta','partial_json':'{\\'city\\':'}}")
                            EV("content_block_delta",
                               "{'type':'content_block_delta','index':1,'delta':"
                               "{'type':'input_json_delta','partial_json':'\\'Oslo\\'}'}}")
                                EV("content_block_stop", "{'type':'content_block_stop','index':1}")
                                    EV("content_block_start",
                                       "{'type':'content_block_start','index':2,'content_block':"
                                       "{'type':'tool_use','id':'call_B','name':'get_time','input':"
                                       "{}}}") EV("content_block_delta",
                                                  "{'type':'content_block_delta','index':2,'delta':"
                                                  "{'type':'input_json_delta','partial_json':'{\\'"
                                                  "tz\\''}}")
                                        EV("content_block_delta",
                                           "{'type':'content_block_delta','index':2,'delta':"
                                           "{'type':'input_json_delta','partial_json':':\\'CET\\'}'"
                                           "}}") EV("content_block_stop",
                                                    "{'type':'content_block_stop','index':2}")
                                            EV("message_delta",
                                               "{'type':'message_delta','delta':{'stop_reason':'"
                                               "tool_use',"
                                               "'stop_sequence':null},'usage':{'input_tokens':20,'"
                                               "cache_creation_input_tokens':0,"
                                               "'cache_read_input_tokens':10,'output_tokens':12}}")
                                                EV("message_stop", "{'type':'message_stop'}"));
    /* Done is done: nothing more, even if called again or fed late. */
    f.out.len = 0;
    assert_int_equal(api_anthropic_down.stream_done(f.st, &f.out), BSC_OK);
    feed(&f, CHUNK("'choices':[{'index':0,'delta':{'content':'late'},'finish_reason':null}]"));
    assert_int_equal(f.out.len, 0);
    sfix_cleanup(&f);
}

static void test_stream_text_then_stop_and_no_usage(void **state)
{
    struct sfix f;

    (void)state;
    sfix_init(&f, OUT_MAX);
    feed(&f, CHUNK("'choices':[{'index':0,'delta':{'role':'assistant','content':'Hi'},"
                   "'finish_reason':null}]"));
    feed(&f,
         CHUNK("'choices':[{'index':0,'delta':{'content':' there'},'finish_reason':'length'}]"));
    assert_int_equal(api_anthropic_down.stream_done(f.st, &f.out), BSC_OK);
    expect_out(
        &f, EV("message_start",
               "{'type':'message_start','message':{'id':'msg_S1','type':'message',"
               "'role':'assistant','model':'gpt-sim','content':[],'stop_reason':null,"
               "'stop_sequence':null,'usage':{'input_tokens':0,'cache_creation_input_tokens':0,"
               "'cache_read_input_tokens':0,'output_tokens':0}}}")
                EV("content_block_start", "{'type':'content_block_start','index':0,'content_block':"
                                          "{'type':'text','text':''}}")
                    EV("content_block_delta", "{'type':'content_block_delta','index':0,'delta':"
                                              "{'type':'text_delta','text':'Hi'}}")
                        EV("content_block_delta", "{'type':'content_block_delta','index':0,'delta':"
                                                  "{'type':'text_delta','text':' there'}}")
                            EV("content_block_stop", "{'type':'content_block_stop','index':0}")
                                EV("message_delta",
                                   "{'type':'message_delta','delta':{'stop_reason':'max_tokens',"
                                   "'stop_sequence':null},'usage':{'output_tokens':0}}")
                                    EV("message_stop", "{'type':'message_stop'}"));
    sfix_cleanup(&f);
}

static void test_stream_text_after_tool_and_stop_sequence(void **state)
{
    struct sfix f;

    (void)state;
    sfix_init(&f, OUT_MAX);
    /* A whole call in one fragment without an index (Ollama style), then text again: the
     * text opens a new block. A named stop sequence (vLLM) gives stop_sequence only when
     * there is no tool call; here there is, so tool_use wins. */
    feed(&f, CHUNK("'choices':[{'index':0,'delta':{'tool_calls':[{'id':'c1','function':"
                   "{'name':'f','arguments':'{}'}}]},'finish_reason':null}]"));
    feed(&f, CHUNK("'choices':[{'index':0,'delta':{'content':'ok'},'finish_reason':'stop',"
                   "'stop_reason':'END'}]"));
    assert_int_equal(api_anthropic_down.stream_done(f.st, &f.out), BSC_OK);
    expect_out(
        &f,
        EV("message_start",
           "{'type':'message_start','message':{'id':'msg_S1','type':'message',"
           "'role':'assistant','model':'gpt-sim','content':[],'stop_reason':null,"
           "'stop_sequence':null,'usage':{'input_tokens':0,'cache_creation_input_tokens':0,"
           "'cache_read_input_tokens':0,'output_tokens':0}}}")
            EV("content_block_start", "{'type':'content_block_start','index':0,'content_block':"
                                      "{'type':'tool_use','id':'c1','name':'f','input':{}}}")
                EV("content_block_delta", "{'type':'content_block_delta','index':0,'delta':"
                                          "{'type':'input_json_delta','partial_json':'{}'}}")
                    EV("content_block_stop", "{'type':'content_block_stop','index':0}") EV(
                        "content_block_start",
                        "{'type':'content_block_start','index':1,'content_block':"
                        "{'type':'text','text':''}}")
                        EV("content_block_delta", "{'type':'content_block_delta','index':1,'delta':"
                                                  "{'type':'text_delta','text':'ok'}}")
                            EV("content_block_stop", "{'type':'content_block_stop','index':1}")
                                EV("message_delta",
                                   "{'type':'message_delta','delta':{'stop_reason':'tool_use',"
                                   "'stop_sequence':null},'usage':{'output_tokens':0}}")
                                    EV("message_stop", "{'type':'message_stop'}"));
    sfix_cleanup(&f);

    sfix_init(&f, OUT_MAX);
    feed(&f, CHUNK("'choices':[{'index':0,'delta':{'content':'a'},'finish_reason':'stop',"
                   "'stop_reason':'END'}]"));
    f.out.len = 0;
    assert_int_equal(api_anthropic_down.stream_done(f.st, &f.out), BSC_OK);
    expect_out(&f,
               EV("message_delta", "{'type':'message_delta','delta':{'stop_reason':'stop_sequence',"
                                   "'stop_sequence':'END'},'usage':{'output_tokens':0}}")
                   EV("message_stop", "{'type':'message_stop'}"));
    sfix_cleanup(&f);
}

static void test_stream_empty(void **state)
{
    struct sfix f;

    (void)state;
    sfix_init(&f, OUT_MAX);
    assert_int_equal(api_anthropic_down.stream_done(f.st, &f.out), BSC_OK);
    expect_out(&f,
               EV("message_start",
                  "{'type':'message_start','message':{'id':'msg_req_42','type':'message',"
                  "'role':'assistant','model':'assistant','content':[],'stop_reason':null,"
                  "'stop_sequence':null,'usage':{'input_tokens':0,'cache_creation_input_tokens':0,"
                  "'cache_read_input_tokens':0,'output_tokens':0}}}")
                   EV("message_delta", "{'type':'message_delta','delta':{'stop_reason':'end_turn',"
                                       "'stop_sequence':null},'usage':{'output_tokens':0}}")
                       EV("message_stop", "{'type':'message_stop'}"));
    sfix_cleanup(&f);
}

static void test_stream_error_ends_it(void **state)
{
    struct sfix f;
    struct reply_error e = {.status = 503,
                            .type = "server_error",
                            .message = "upstream went away",
                            .retry_after_ms = -1};

    (void)state;
    sfix_init(&f, OUT_MAX);
    feed(&f, CHUNK("'choices':[{'index':0,'delta':{'content':'Hel'},'finish_reason':null}]"));
    f.out.len = 0;
    assert_int_equal(api_anthropic_down.stream_error(f.st, &e, &f.out), BSC_OK);
    expect_out(&f, EV("error", "{'type':'error','error':{'type':'overloaded_error',"
                               "'message':'upstream went away'},'request_id':'req_42'}"));
    /* After the error: no message_delta/message_stop, no second error. */
    f.out.len = 0;
    assert_int_equal(api_anthropic_down.stream_done(f.st, &f.out), BSC_OK);
    assert_int_equal(api_anthropic_down.stream_error(f.st, &e, &f.out), BSC_OK);
    assert_int_equal(f.out.len, 0);
    sfix_cleanup(&f);

    /* A partial stream that failed with a 5xx kind maps to api_error. */
    sfix_init(&f, OUT_MAX);
    e.status = 502;
    assert_int_equal(api_anthropic_down.stream_error(f.st, &e, &f.out), BSC_OK);
    expect_out(&f, EV("error", "{'type':'error','error':{'type':'api_error',"
                               "'message':'upstream went away'},'request_id':'req_42'}"));
    sfix_cleanup(&f);

    /* An OpenAI in-band error frame that reaches the dialect ends the stream too. */
    sfix_init(&f, OUT_MAX);
    feed(&f,
         "{'error':{'message':'Overloaded','type':'server_error','code':'server_is_overloaded'}}");
    expect_out(&f, EV("error", "{'type':'error','error':{'type':'overloaded_error',"
                               "'message':'Overloaded'},'request_id':'req_42'}"));
    f.out.len = 0;
    assert_int_equal(api_anthropic_down.stream_done(f.st, &f.out), BSC_OK);
    assert_int_equal(f.out.len, 0);
    sfix_cleanup(&f);
}

static void test_stream_bounds_and_garbage(void **state)
{
    struct sfix f;
    char big[300];

    (void)state;
    sfix_init(&f, OUT_MAX);
    assert_int_equal(api_anthropic_down.stream_chunk(f.st, BSC_STR("{not json"), &f.out),
                     BSC_EPARSE);
    assert_int_equal(
        api_anthropic_down.stream_chunk(
            f.st,
            BSC_STR("{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":"
                    "[{\"index\":128,\"id\":\"c\",\"function\":{\"name\":\"f\"}}]}}]}"),
            &f.out),
        BSC_ELIMIT);
    assert_int_equal(f.out.len, 0); /* all or nothing */
    sfix_cleanup(&f);

    /* A client buffer that cannot take the frames: BSC_ELIMIT, buffer unchanged. */
    sfix_init(&f, 64);
    snprintf(big, sizeof(big), "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%0200d\"}}]}",
             0);
    assert_int_equal(api_anthropic_down.stream_chunk(f.st, bsc_str_cstr(big), &f.out), BSC_ELIMIT);
    assert_int_equal(f.out.len, 0);
    sfix_cleanup(&f);
}

/* ---- errors ------------------------------------------------------------------------------ */

static void test_error_types(void **state)
{
    static const struct {
        int status;
        const char *type, *code, *want;
    } rows[] = {
        {400, "invalid_request_error", "context_length_exceeded", "invalid_request_error"},
        {401, "invalid_request_error", "invalid_api_key", "authentication_error"},
        {403, NULL, NULL, "permission_error"},
        {404, "invalid_request_error", "model_not_found", "not_found_error"},
        {409, NULL, NULL, "invalid_request_error"},
        {413, NULL, NULL, "invalid_request_error"},
        {422, NULL, NULL, "invalid_request_error"},
        {429, "insufficient_quota", "insufficient_quota", "rate_limit_error"},
        {500, "server_error", NULL, "api_error"},
        {502, NULL, NULL, "api_error"},
        {503, "server_error", NULL, "overloaded_error"},
        {504, NULL, NULL, "api_error"},
        {529, NULL, NULL, "overloaded_error"},
        {0, "server_error", "server_is_overloaded", "overloaded_error"},
        {0, "rate_limit_error", NULL, "rate_limit_error"},
        {0, "invalid_request_error", NULL, "invalid_request_error"},
        {0, NULL, "invalid_api_key", "authentication_error"},
        {0, "server_error", NULL, "api_error"},
        {0, NULL, NULL, "api_error"},
    };

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        const char *got = dialect_anthropic_error_type(rows[i].status, rows[i].type, rows[i].code);
        if (strcmp(got, rows[i].want) != 0)
            fail_msg("row %zu (status %d): got %s, want %s", i, rows[i].status, got, rows[i].want);
    }
}

static void test_error_body(void **state)
{
    struct reply_error e = {.status = 404,
                            .type = "invalid_request_error",
                            .code = "model_not_found",
                            .message = "model x does not \"exist\"",
                            .retry_after_ms = -1};
    struct bsc_buf out;
    char *want;

    (void)state;
    bsc_buf_init(&out, OUT_MAX);
    assert_int_equal(api_anthropic_down.error_body(&e, "req_1", &out), BSC_OK);
    want = q("{'type':'error','error':{'type':'not_found_error','message':"
             "'model x does not \\'exist\\''},'request_id':'req_1'}");
    assert_string_equal(out.p, want);
    free(want);

    /* A typed failure keeps the gateway's members. */
    bsc_buf_reset(&out);
    e = (struct reply_error){.status = 503,
                             .type = "server_error",
                             .code = "no_eligible_fallback",
                             .message = "nothing eligible",
                             .reason = "no_eligible_fallback",
                             .retryable = true,
                             .retry_after_ms = 1500};
    assert_int_equal(api_anthropic_down.error_body(&e, "req_2", &out), BSC_OK);
    want = q("{'type':'error','error':{'type':'overloaded_error','message':'nothing eligible'},"
             "'status':'unavailable','reason':'no_eligible_fallback','retryable':true,"
             "'retry_after_ms':1500,'request_id':'req_2'}");
    assert_string_equal(out.p, want);
    free(want);

    bsc_buf_reset(&out);
    e.status = 504;
    e.reason = "deadline_exhausted";
    e.retryable = false;
    e.retry_after_ms = -1;
    assert_int_equal(api_anthropic_down.error_body(&e, NULL, &out), BSC_OK);
    want = q("{'type':'error','error':{'type':'api_error','message':'nothing eligible'},"
             "'status':'unavailable','reason':'deadline_exhausted','retryable':false,"
             "'retry_after_ms':null,'request_id':null}");
    assert_string_equal(out.p, want);
    free(want);
    bsc_buf_cleanup(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_req_system_string_and_plain_messages),
        cmocka_unit_test(test_req_system_blocks_joined),
        cmocka_unit_test(test_req_user_blocks_text_and_images),
        cmocka_unit_test(test_req_assistant_blocks),
        cmocka_unit_test(test_req_tool_results),
        cmocka_unit_test(test_req_tool_round_trip),
        cmocka_unit_test(test_req_tools_and_tool_choice),
        cmocka_unit_test(test_req_params),
        cmocka_unit_test(test_req_validation),
        cmocka_unit_test(test_parse_body),
        cmocka_unit_test(test_parse_body_utf8_rule),
        cmocka_unit_test(test_map_response_golden),
        cmocka_unit_test(test_map_response_variants),
        cmocka_unit_test(test_map_response_msg_id_and_model),
        cmocka_unit_test(test_map_response_native),
        cmocka_unit_test(test_stream_native_events),
        cmocka_unit_test(test_stream_start_usage),
        cmocka_unit_test(test_map_response_rejects_garbage),
        cmocka_unit_test(test_stream_text_and_parallel_tools),
        cmocka_unit_test(test_stream_text_then_stop_and_no_usage),
        cmocka_unit_test(test_stream_text_after_tool_and_stop_sequence),
        cmocka_unit_test(test_stream_empty),
        cmocka_unit_test(test_stream_error_ends_it),
        cmocka_unit_test(test_stream_bounds_and_garbage),
        cmocka_unit_test(test_error_types),
        cmocka_unit_test(test_error_body),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
