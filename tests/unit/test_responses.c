/* SPDX-License-Identifier: MIT */
/* test_responses.c -- POST /v1/responses: the Responses -> chat request translation
 * (golden: input forms, instructions and history, function tools and tool_choice,
 * text.format, item_reference, refusals) and the Responses downstream dialect (golden
 * non-stream answer, status mapping, the exact event sequence of a stream with text and a
 * tool call, the error events, all-or-nothing output). Golden JSON is written with ' for ". */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "api/responses.h"
#include "core/buf.h"
#include "core/str.h"

#define OUT_MAX (1u << 20)

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

static struct json_object *parse_q(const char *s)
{
    char *t = q(s);
    struct json_object *o = json_tokener_parse(t);

    free(t);
    assert_non_null(o);
    return o;
}

static const char *plain(struct json_object *o)
{
    return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                 JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* Translates <in_q> with <hist_q>/<refs_q> (may be NULL); checks the chat request against
 * <want_q> and, when <turn_q>, the kept turn. */
static void expect(const char *in_q, const char *hist_q, const char *refs_q, const char *want_q,
                   const char *turn_q)
{
    struct json_object *rq = parse_q(in_q), *hist = hist_q ? parse_q(hist_q) : NULL;
    struct json_object *refs = refs_q ? parse_q(refs_q) : NULL, *out = NULL, *turn = NULL;
    char why[400], *want = q(want_q);

    assert_int_equal(api__responses_to_chat(rq, hist, refs, &out, &turn, why, sizeof(why)),
                     BSC_OK);
    json_object_put(rq); /* the result must not depend on the input staying alive */
    json_object_put(hist);
    json_object_put(refs);
    assert_string_equal(plain(out), want);
    if (turn_q) {
        char *t = q(turn_q);
        assert_string_equal(plain(turn), t);
        free(t);
    }
    json_object_put(out);
    json_object_put(turn);
    free(want);
}

/* Expects a refusal whose message contains <needle>. */
static void refused(const char *in_q, const char *needle)
{
    struct json_object *rq = parse_q(in_q), *out = (void *)1, *turn = (void *)1;
    char why[400];

    assert_int_equal(api__responses_to_chat(rq, NULL, NULL, &out, &turn, why, sizeof(why)),
                     BSC_EINVAL);
    assert_null(out);
    assert_null(turn);
    if (!strstr(why, needle))
        fail_msg("'%s' does not contain '%s'", why, needle);
    json_object_put(rq);
}

static void test_string_input(void **state)
{
    (void)state;
    expect("{'model':'m','input':'hi','instructions':'be brief','max_output_tokens':5,"
           "'temperature':0.5,'top_p':1,'user':'u','metadata':{'a':'b'},'store':true}",
           NULL, NULL,
           "{'model':'m','messages':[{'role':'system','content':'be brief'},"
           "{'role':'user','content':'hi'}],'temperature':0.5,'top_p':1,'user':'u',"
           "'max_tokens':5}",
           "[{'role':'user','content':'hi'}]");
}

static void test_items(void **state)
{
    (void)state;
    expect("{'model':'m','input':[{'role':'developer','content':'dev'},"
           "{'type':'message','role':'user','content':[{'type':'input_text','text':'look'},"
           "{'type':'input_image','image_url':'data:image/png;base64,AA','detail':'high'}]},"
           "{'type':'reasoning','id':'rs_1','summary':[]},"
           "{'type':'function_call','call_id':'c1','name':'f','arguments':'{}'},"
           "{'type':'function_call','call_id':'c2','name':'g','arguments':'{\\'x\\':1}'},"
           "{'type':'function_call_output','call_id':'c1','output':'one'},"
           "{'type':'function_call_output','call_id':'c2','output':["
           "{'type':'input_text','text':'a'},{'type':'input_text','text':'b'}]},"
           "{'role':'assistant','content':[{'type':'output_text','text':'done'}]}]}",
           NULL, NULL,
           "{'model':'m','messages':[{'role':'system','content':'dev'},"
           "{'role':'user','content':[{'type':'text','text':'look'},{'type':'image_url',"
           "'image_url':{'url':'data:image/png;base64,AA','detail':'high'}}]},"
           "{'role':'assistant','content':null,'tool_calls':["
           "{'id':'c1','type':'function','function':{'name':'f','arguments':'{}'}},"
           "{'id':'c2','type':'function','function':{'name':'g','arguments':'{\\'x\\':1}'}}]},"
           "{'role':'tool','tool_call_id':'c1','content':'one'},"
           "{'role':'tool','tool_call_id':'c2','content':'a\\nb'},"
           "{'role':'assistant','content':'done'}]}",
           NULL);
}

static void test_history_and_refs(void **state)
{
    (void)state;
    /* instructions first, then the kept conversation, then this turn */
    expect("{'model':'m','instructions':'sys','input':[{'type':'item_reference','id':'fc_r_0'},"
           "{'type':'function_call_output','call_id':'c9','output':'ok'}]}",
           "[{'role':'user','content':'q1'}]",
           "{'fc_r_0':{'type':'function_call','id':'fc_r_0','call_id':'c9','name':'f',"
           "'arguments':'{}'}}",
           "{'model':'m','messages':[{'role':'system','content':'sys'},"
           "{'role':'user','content':'q1'},{'role':'assistant','content':null,'tool_calls':["
           "{'id':'c9','type':'function','function':{'name':'f','arguments':'{}'}}]},"
           "{'role':'tool','tool_call_id':'c9','content':'ok'}]}",
           "[{'role':'user','content':'q1'},{'role':'assistant','content':null,'tool_calls':["
           "{'id':'c9','type':'function','function':{'name':'f','arguments':'{}'}}]},"
           "{'role':'tool','tool_call_id':'c9','content':'ok'}]");
    refused("{'model':'m','input':[{'type':'item_reference','id':'fc_gone_1'}]}",
            "item 'fc_gone_1' not found");
}

static void test_tools_and_format(void **state)
{
    (void)state;
    expect("{'model':'m','input':'x','stream':true,'parallel_tool_calls':false,"
           "'tools':[{'type':'function','name':'f','description':'d','parameters':"
           "{'type':'object'},'strict':true}],'tool_choice':{'type':'function','name':'f'},"
           "'text':{'format':{'type':'json_schema','name':'n','schema':{'type':'object'},"
           "'strict':true}}}",
           NULL, NULL,
           "{'model':'m','messages':[{'role':'user','content':'x'}],'tools':[{'type':'function',"
           "'function':{'name':'f','description':'d','parameters':{'type':'object'},"
           "'strict':true}}],'tool_choice':{'type':'function','function':{'name':'f'}},"
           "'response_format':{'type':'json_schema','json_schema':{'name':'n','schema':"
           "{'type':'object'},'strict':true}},'parallel_tool_calls':false,'stream':true,"
           "'stream_options':{'include_usage':true}}",
           NULL);
    /* no tools: tool_choice dropped; json_object; text format adds nothing */
    expect("{'model':'m','input':'x','tool_choice':'required','text':{'format':{'type':"
           "'json_object'}}}",
           NULL, NULL,
           "{'model':'m','messages':[{'role':'user','content':'x'}],'response_format':"
           "{'type':'json_object'}}",
           NULL);
}

static void test_refusals(void **state)
{
    (void)state;
    refused("{'model':'m','input':'x','tools':[{'type':'web_search_preview'}]}",
            "built-in tool 'web_search_preview'");
    refused("{'model':'m','input':'x','tools':[{'type':'function','name':'f'},{'type':'mcp'}]}",
            "tools.1.type: the built-in tool 'mcp'");
    refused("{'input':'x'}", "model: field required");
    refused("{'model':'m'}", "input: field required");
    refused("{'model':'m','input':[]}", "input: must not be empty");
    refused("{'model':'m','input':[{'role':'tool','content':'x'}]}", "input.0.role: 'tool'");
    refused("{'model':'m','input':[{'role':'user','content':[{'type':'input_file',"
            "'file_id':'f'}]}]}", "input.0.content.0.type: 'input_file'");
    refused("{'model':'m','input':[{'role':'user','content':[{'type':'input_image',"
            "'file_id':'f'}]}]}", "file_id needs the Files API");
    refused("{'model':'m','input':[{'type':'function_call','name':'f'}]}",
            "needs call_id, name and arguments");
    refused("{'model':'m','input':'x','max_output_tokens':0}", "max_output_tokens");
    refused("{'model':'m','input':'x','text':{'format':{'type':'json_schema'}}}",
            "text.format.schema");
    refused("{'model':'m','input':'x','tools':[{'type':'function','name':'f'}],"
            "'tool_choice':{'type':'file_search'}}", "tool_choice");
}

/* ---- the answer side ---- */

static struct resp_arg *arg_new(void)
{
    struct resp_arg *a = calloc(1, sizeof(*a));

    assert_non_null(a);
    snprintf(a->id, sizeof(a->id), "resp_req_1");
    a->created_at = 1700000000;
    a->echo = json_object_new_object();
    return a;
}

static void test_answer(void **state)
{
    struct resp_arg *a = arg_new();
    struct down_ctx ctx = {.request_id = "req_1", .model = "route", .arg = a};
    struct bsc_buf out;
    char *in = q("{'id':'x','choices':[{'index':0,'message':{'role':'assistant','content':"
                 "'hé ✓','tool_calls':[{'id':'c1','type':'function','function':{'name':'f',"
                 "'arguments':'{}'}}]},'finish_reason':'length'}],'usage':{'prompt_tokens':10,"
                 "'completion_tokens':3,'prompt_tokens_details':{'cached_tokens':4}}}");
    struct json_object *r, *o;

    (void)state;
    bsc_buf_init(&out, OUT_MAX);
    assert_int_equal(api_responses_down.map_response(bsc_str_cstr(in), &ctx, &out), BSC_OK);
    r = json_tokener_parse(out.p);
    assert_non_null(r);
    assert_string_equal(json_object_get_string(json_object_object_get(r, "id")), "resp_req_1");
    assert_string_equal(json_object_get_string(json_object_object_get(r, "status")),
                        "incomplete");
    o = json_object_object_get(r, "output");
    assert_int_equal(json_object_array_length(o), 2);
    assert_string_equal(plain(json_object_array_get_idx(o, 0)),
                        "{\"id\":\"msg_req_1_0\",\"type\":\"message\",\"status\":\"completed\","
                        "\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":"
                        "\"hé ✓\",\"annotations\":[],\"logprobs\":[]}]}");
    assert_string_equal(plain(json_object_array_get_idx(o, 1)),
                        "{\"id\":\"fc_req_1_1\",\"type\":\"function_call\",\"status\":"
                        "\"completed\",\"call_id\":\"c1\",\"name\":\"f\",\"arguments\":\"{}\"}");
    assert_string_equal(plain(json_object_object_get(r, "usage")),
                        "{\"input_tokens\":10,\"input_tokens_details\":{\"cached_tokens\":4},"
                        "\"output_tokens\":3,\"output_tokens_details\":{\"reasoning_tokens\":0},"
                        "\"total_tokens\":13}");
    assert_string_equal(plain(json_object_object_get(r, "incomplete_details")),
                        "{\"reason\":\"max_output_tokens\"}");
    json_object_put(r);
    bsc_buf_reset(&out);
    assert_int_equal(api_responses_down.map_response(BSC_STR("[1]"), &ctx, &out), BSC_EPARSE);
    assert_int_equal(out.len, 0);
    bsc_buf_cleanup(&out);
    api_responses_down.arg_free(a);
    free(in);
}

/* The "type" of each event in <sse>, joined with ',' into <types>; checks numbering. */
static void event_types(const char *sse, char *types, size_t len)
{
    const char *p = sse;
    long seq = 0;

    types[0] = '\0';
    while ((p = strstr(p, "data: ")) != NULL) {
        const char *end = strstr(p, "\n\n");
        char *line = strndup(p + 6, (size_t)(end - p - 6));
        struct json_object *o = json_tokener_parse(line);
        assert_non_null(o);
        assert_int_equal(json_object_get_int64(json_object_object_get(o, "sequence_number")),
                         seq++);
        if (types[0])
            strncat(types, ",", len - strlen(types) - 1);
        strncat(types, json_object_get_string(json_object_object_get(o, "type")),
                len - strlen(types) - 1);
        json_object_put(o);
        free(line);
        p = end;
    }
}

static void test_stream(void **state)
{
    static const char *const chunks[] = {
        "{'choices':[{'index':0,'delta':{'role':'assistant','content':''}}]}",
        "{'choices':[{'index':0,'delta':{'content':'hé'}}]}",
        "{'choices':[{'index':0,'delta':{'content':' ✓'}}]}",
        "{'choices':[{'index':0,'delta':{'tool_calls':[{'index':0,'id':'c1','type':'function',"
        "'function':{'name':'f','arguments':''}}]}}]}",
        "{'choices':[{'index':0,'delta':{'tool_calls':[{'index':0,'function':{'arguments':"
        "'{\\'a\\''}}]}}]}",
        "{'choices':[{'index':0,'delta':{'tool_calls':[{'index':0,'function':{'arguments':"
        "':1}'}}]}}]}",
        "{'choices':[{'index':0,'delta':{},'finish_reason':'tool_calls'}]}",
        "{'choices':[],'usage':{'prompt_tokens':5,'completion_tokens':2}}",
    };
    struct resp_arg *a = arg_new();
    struct down_ctx ctx = {.request_id = "req_1", .model = "route", .arg = a};
    void *st = calloc(1, api_responses_down.stream_size);
    struct bsc_buf out;
    char types[2048], *last;
    struct json_object *done;

    (void)state;
    bsc_buf_init(&out, OUT_MAX);
    api_responses_down.stream_init(st, &ctx);
    for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
        char *c = q(chunks[i]);
        assert_int_equal(api_responses_down.stream_chunk(st, bsc_str_cstr(c), &out), BSC_OK);
        free(c);
    }
    assert_int_equal(api_responses_down.stream_done(st, &out), BSC_OK);
    event_types(out.p, types, sizeof(types));
    assert_string_equal(types,
                        "response.created,response.in_progress,response.output_item.added,"
                        "response.content_part.added,response.output_text.delta,"
                        "response.output_text.delta,response.output_text.done,"
                        "response.content_part.done,response.output_item.done,"
                        "response.output_item.added,response.function_call_arguments.delta,"
                        "response.function_call_arguments.delta,"
                        "response.function_call_arguments.done,response.output_item.done,"
                        "response.completed");
    last = strstr(strstr(out.p, "event: response.completed"), "data: ") + 6;
    *strstr(last, "\n\n") = '\0';
    done = json_tokener_parse(last);
    assert_string_equal(plain(json_object_object_get(json_object_object_get(done, "response"),
                                                     "output")),
                        "[{\"id\":\"msg_req_1_0\",\"type\":\"message\",\"status\":\"completed\","
                        "\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":"
                        "\"hé ✓\",\"annotations\":[],\"logprobs\":[]}]},{\"id\":\"fc_req_1_1\","
                        "\"type\":\"function_call\",\"status\":\"completed\",\"call_id\":\"c1\","
                        "\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}]");
    json_object_put(done);
    /* nothing after the end */
    bsc_buf_reset(&out);
    assert_int_equal(api_responses_down.stream_done(st, &out), BSC_OK);
    assert_int_equal(out.len, 0);
    api_responses_down.stream_cleanup(st);
    free(st);
    bsc_buf_cleanup(&out);
    api_responses_down.arg_free(a);
}

static void test_stream_error(void **state)
{
    struct resp_arg *a = arg_new();
    struct down_ctx ctx = {.request_id = "req_1", .model = "route", .arg = a};
    void *st = calloc(1, api_responses_down.stream_size);
    struct reply_error e = {.type = "server_error", .code = "upstream_interrupted",
                            .message = "cut", .retry_after_ms = -1};
    struct bsc_buf out;
    char types[1024];
    char *c = q("{'choices':[{'index':0,'delta':{'content':'x'}}]}");

    (void)state;
    bsc_buf_init(&out, OUT_MAX);
    api_responses_down.stream_init(st, &ctx);
    assert_int_equal(api_responses_down.stream_chunk(st, bsc_str_cstr(c), &out), BSC_OK);
    assert_int_equal(api_responses_down.stream_error(st, &e, &out), BSC_OK);
    event_types(out.p, types, sizeof(types));
    assert_string_equal(types, "response.created,response.in_progress,"
                               "response.output_item.added,response.content_part.added,"
                               "response.output_text.delta,error,response.failed");
    assert_non_null(strstr(out.p, "\"code\":\"upstream_interrupted\",\"message\":\"cut\""));
    /* an OpenAI in-band error chunk ends a stream the same way */
    api_responses_down.stream_cleanup(st);
    memset(st, 0, api_responses_down.stream_size);
    api_responses_down.stream_init(st, &ctx);
    bsc_buf_reset(&out);
    free(c);
    c = q("{'error':{'message':'boom','type':'server_error','code':'x'}}");
    assert_int_equal(api_responses_down.stream_chunk(st, bsc_str_cstr(c), &out), BSC_OK);
    event_types(out.p, types, sizeof(types));
    assert_string_equal(types, "response.created,response.in_progress,error,response.failed");
    /* a full buffer: nothing half-written */
    bsc_buf_cleanup(&out);
    api_responses_down.stream_cleanup(st);
    memset(st, 0, api_responses_down.stream_size);
    api_responses_down.stream_init(st, &ctx);
    bsc_buf_init(&out, 100);
    free(c);
    c = q("{'choices':[{'index':0,'delta':{'content':'x'}}]}");
    assert_int_equal(api_responses_down.stream_chunk(st, bsc_str_cstr(c), &out), BSC_ELIMIT);
    assert_int_equal(out.len, 0);
    assert_int_equal(api_responses_down.stream_chunk(st, BSC_STR("not json"), &out), BSC_EPARSE);
    api_responses_down.stream_cleanup(st);
    free(st);
    free(c);
    bsc_buf_cleanup(&out);
    api_responses_down.arg_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_string_input),
        cmocka_unit_test(test_items),
        cmocka_unit_test(test_history_and_refs),
        cmocka_unit_test(test_tools_and_format),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_answer),
        cmocka_unit_test(test_stream),
        cmocka_unit_test(test_stream_error),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
