/* SPDX-License-Identifier: MIT */
/* test_prov_dashscope.c -- the DashScope (compatible mode) adapter: request build (URL,
 * Bearer key, stream usage, max_completion_tokens renamed and the client's request left as
 * it was), the error table (native codes, compatible codes, errors hidden in 200 bodies),
 * map_response refusing a 200 that is an error, and streams: golden SSE bytes (with the
 * :HTTP_STATUS/200 comment) fed through the SSE parser at every split position, and error
 * events in the stream. Fixtures are written from docs/providers.md §4. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "providers/provider.h"
#include "prov_fixture.h"
#include "stream/sse_parse.h"

extern const struct prov_ops prov_dashscope;
extern const struct prov_ops prov_openai;

static char base_url[] = "https://dashscope-intl.aliyuncs.com/compatible-mode/v1";
static char model[] = "qwen-plus";
static char pid[] = "ds";
static char tid[] = "qwen-plus@ds";

static const struct fx_names names = {CFG_PROV_DASHSCOPE, base_url, model, pid, tid, "sk-ds-1"};

static void fx_init(struct fx *f, const char *req_json, bool stream)
{
    fx_setup(f, &names, req_json, stream);
}

static struct json_object *body_json(const struct prov_http *h)
{
    struct json_object *o = json_tokener_parse(h->body.p ? h->body.p : "");

    assert_non_null(o);
    return o;
}

static int64_t get_int(struct json_object *o, const char *key)
{
    struct json_object *v;

    if (!json_object_object_get_ex(o, key, &v))
        return -1;
    return json_object_get_int64(v);
}

/* ---- build ---------------------------------------------------------------------------------- */

static void test_build_chat_stream(void **state)
{
    struct fx f;
    char why[128] = "";
    struct json_object *b, *opts, *v;

    (void)state;
    fx_init(&f, "{\"model\":\"alias\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                "\"stream\":true,\"max_tokens\":50}",
            true);
    assert_int_equal(prov_dashscope.build(&f.call, &f.http, why, sizeof(why)), BSC_OK);
    assert_string_equal(f.http.method, "POST");
    assert_string_equal(f.http.url.p, "https://dashscope-intl.aliyuncs.com/compatible-mode/v1/"
                                      "chat/completions");
    assert_string_equal(header_value(&f.http, "Authorization"), "Bearer sk-ds-1");
    assert_string_equal(header_value(&f.http, "Content-Type"), "application/json");
    assert_string_equal(header_value(&f.http, "Accept"), "text/event-stream");
    b = body_json(&f.http);
    assert_true(json_object_object_get_ex(b, "model", &v));
    assert_string_equal(json_object_get_string(v), "qwen-plus");
    assert_true(json_object_object_get_ex(b, "stream_options", &opts));
    assert_true(json_object_object_get_ex(opts, "include_usage", &v));
    assert_true(json_object_get_boolean(v));
    assert_int_equal(get_int(b, "max_tokens"), 50);
    json_object_put(b);
    fx_cleanup(&f);
}

static void test_build_renames_max_completion_tokens(void **state)
{
    static const struct {
        const char *req;
        int64_t want_max_tokens;
    } rows[] = {
        {"{\"model\":\"a\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
         "\"max_completion_tokens\":64}",
         64},
        {"{\"model\":\"a\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
         "\"max_completion_tokens\":64,\"max_tokens\":32}",
         32},
        {"{\"model\":\"a\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
         "\"max_tokens\":100,\"max_completion_tokens\":40}",
         40},
        {"{\"model\":\"a\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
         "\"max_tokens\":null,\"max_completion_tokens\":8}",
         8},
    };

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        struct fx f;
        char why[128] = "";
        struct json_object *b;
        char *before;

        fx_init(&f, rows[i].req, false);
        f.call.raw = bsc_str_cstr(rows[i].req); /* the fast path must not be taken */
        before = strdup(json_object_to_json_string_ext(f.req, JSON_C_TO_STRING_PLAIN));
        assert_int_equal(prov_dashscope.build(&f.call, &f.http, why, sizeof(why)), BSC_OK);
        b = body_json(&f.http);
        assert_int_equal(get_int(b, "max_tokens"), rows[i].want_max_tokens);
        assert_int_equal(get_int(b, "max_completion_tokens"), -1);
        json_object_put(b);
        /* The client's request is unchanged (key order aside: compare as objects). */
        {
            struct json_object *was = json_tokener_parse(before);
            assert_true(json_object_equal(was, f.req));
            json_object_put(was);
        }
        free(before);
        fx_cleanup(&f);

        /* The same with only the client's bytes (no parsed request). */
        fx_init(&f, NULL, false);
        f.call.raw = bsc_str_cstr(rows[i].req);
        assert_int_equal(prov_dashscope.build(&f.call, &f.http, why, sizeof(why)), BSC_OK);
        b = body_json(&f.http);
        assert_int_equal(get_int(b, "max_tokens"), rows[i].want_max_tokens);
        assert_int_equal(get_int(b, "max_completion_tokens"), -1);
        assert_string_equal(json_object_get_string(json_object_object_get(b, "model")),
                            "qwen-plus");
        json_object_put(b);
        fx_cleanup(&f);
    }
}

static void test_build_fast_path_and_other_ops(void **state)
{
    static const char raw[] =
        "{\"model\":\"alias\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    struct fx f;
    char why[128] = "";

    (void)state;
    fx_init(&f, raw, false);
    f.call.raw = bsc_str_cstr(raw);
    f.call.model_span = bsc_str_make(strstr(raw, "\"alias\""), 7);
    assert_int_equal(prov_dashscope.build(&f.call, &f.http, why, sizeof(why)), BSC_OK);
    assert_string_equal(f.http.body.p, "{\"model\":\"qwen-plus\",\"messages\":[{\"role\":\"user\","
                                       "\"content\":\"hi\"}]}");
    fx_cleanup(&f);

    fx_init(&f, "{\"model\":\"e\",\"input\":\"x\"}", false);
    f.call.op = PROV_OP_EMBEDDINGS;
    assert_int_equal(prov_dashscope.build(&f.call, &f.http, why, sizeof(why)), BSC_OK);
    assert_string_equal(f.http.url.p, "https://dashscope-intl.aliyuncs.com/compatible-mode/v1/"
                                      "embeddings");
    fx_cleanup(&f);

    fx_init(&f, NULL, false);
    f.call.op = PROV_OP_PROBE_MODELS;
    assert_int_equal(prov_dashscope.build(&f.call, &f.http, why, sizeof(why)), BSC_OK);
    assert_string_equal(f.http.method, "GET");
    assert_string_equal(f.http.url.p, "https://dashscope-intl.aliyuncs.com/compatible-mode/v1/"
                                      "models");
    assert_int_equal(f.http.body.len, 0);
    fx_cleanup(&f);
}

/* ---- classify ------------------------------------------------------------------------------- */

struct cls_row {
    const char *name;
    int status;
    const char *body;
    const char *retry_after;
    enum fail_kind kind;
    const char *code;      /* expected out->code, NULL: not checked */
    int64_t retry_ms;      /* -2: not checked */
};

#define COMPAT_ERR(code, type, msg)                                                        \
    "{\"error\":{\"code\":\"" code "\",\"param\":null,\"message\":\"" msg "\",\"type\":\"" type \
    "\"},\"id\":\"chatcmpl-1\",\"request_id\":\"r-1\"}"
#define NATIVE_ERR(code, msg)                                                              \
    "{\"code\":\"" code "\",\"message\":\"" msg "\",\"request_id\":\"r-1\"}"

static const struct cls_row cls_rows[] = {
    /* 2xx: answers are not errors */
    {"200 answer", 200,
     "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,"
     "\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}",
     NULL, FAIL_NONE, "", -1},
    {"200 answer with an empty code", 200,
     "{\"code\":\"\",\"choices\":[{\"index\":0,\"message\":{\"content\":\"hi\"}}]}", NULL,
     FAIL_NONE, NULL, -2},
    {"200 native answer (output)", 200,
     "{\"output\":{\"choices\":[]},\"code\":\"x\",\"request_id\":\"r\"}", NULL, FAIL_NONE, NULL,
     -2},
    {"200 not JSON", 200, "hello", NULL, FAIL_NONE, NULL, -2},
    /* 2xx: errors hidden in the body */
    {"200 Throttling.RateQuota", 200,
     NATIVE_ERR("Throttling.RateQuota", "Requests rate limit exceeded, please try again later."),
     NULL, FAIL_RATE_LIMITED, "Throttling.RateQuota", -1},
    {"200 Throttling.RateQuota + Retry-After", 200,
     NATIVE_ERR("Throttling.RateQuota", "Requests rate limit exceeded."), "3", FAIL_RATE_LIMITED,
     NULL, 3000},
    {"200 Throttling.AllocationQuota (minute)", 200,
     NATIVE_ERR("Throttling.AllocationQuota",
                "Allocated quota exceeded, please increase your quota limit."),
     NULL, FAIL_RATE_LIMITED, NULL, -2},
    {"200 Throttling.AllocationQuota (free tier)", 200,
     NATIVE_ERR("Throttling.AllocationQuota", "Free allocated quota exceeded."), NULL,
     FAIL_QUOTA_EXHAUSTED, NULL, -2},
    {"200 Arrearage", 200,
     NATIVE_ERR("Arrearage", "Access denied, please make sure your account is in good standing."),
     NULL, FAIL_QUOTA_EXHAUSTED, "Arrearage", -2},
    {"200 DataInspectionFailed", 200,
     NATIVE_ERR("DataInspectionFailed", "Input data may contain inappropriate content."), NULL,
     FAIL_CONTENT_POLICY, "DataInspectionFailed", -2},
    {"200 InvalidParameter", 200,
     NATIVE_ERR("InvalidParameter", "Required parameter(s) missing or invalid."), NULL,
     FAIL_INVALID_REQUEST, NULL, -2},
    {"200 InternalError", 200, NATIVE_ERR("InternalError", "An internal error has occured."),
     NULL, FAIL_SERVER_ERROR, NULL, -2},
    {"200 InternalError.Algo.DataInspectionFailed", 200,
     NATIVE_ERR("InternalError.Algo.DataInspectionFailed",
                "Output data may contain inappropriate content."),
     NULL, FAIL_CONTENT_POLICY, NULL, -2},
    {"200 unknown native code", 200, NATIVE_ERR("FlowNotPublished", "Flow has not published."),
     NULL, FAIL_SERVER_ERROR, "FlowNotPublished", -2},
    {"200 compatible error object", 200,
     COMPAT_ERR("data_inspection_failed", "data_inspection_failed",
                "Input data may contain inappropriate content."),
     NULL, FAIL_CONTENT_POLICY, "data_inspection_failed", -2},
    {"200 compatible limit_requests", 200,
     COMPAT_ERR("limit_requests", "limit_requests",
                "You have exceeded your current request limit."),
     NULL, FAIL_RATE_LIMITED, NULL, -2},
    {"200 compatible unknown code", 200, COMPAT_ERR("weird", "weird", "Something."), NULL,
     FAIL_SERVER_ERROR, NULL, -2},
    /* non-2xx, compatible shapes */
    {"400 data_inspection_failed", 400,
     COMPAT_ERR("data_inspection_failed", "data_inspection_failed",
                "Input data may contain inappropriate content."),
     NULL, FAIL_CONTENT_POLICY, "data_inspection_failed", -2},
    {"400 InternalError.Algo.DataInspectionFailed in the message", 400,
     COMPAT_ERR("internal_error", "internal_error",
                "<400> InternalError.Algo.DataInspectionFailed: Input text data may contain "
                "inappropriate content."),
     NULL, FAIL_CONTENT_POLICY, NULL, -2},
    {"429 insufficient_quota is the per-minute throttle", 429,
     COMPAT_ERR("insufficient_quota", "insufficient_quota",
                "You exceeded your current quota, please check your plan and billing details."),
     "1", FAIL_RATE_LIMITED, "insufficient_quota", 1000},
    {"429 insufficient_quota, free tier gone", 429,
     COMPAT_ERR("insufficient_quota", "insufficient_quota", "Free allocated quota exceeded."),
     NULL, FAIL_QUOTA_EXHAUSTED, NULL, -2},
    {"429 limit_requests", 429,
     COMPAT_ERR("limit_requests", "limit_requests",
                "Requests rate limit exceeded, please try again later."),
     "2", FAIL_RATE_LIMITED, "limit_requests", 2000},
    {"400 invalid_parameter_error", 400,
     COMPAT_ERR("invalid_parameter_error", "invalid_request_error",
                "The tool call is not supported."),
     NULL, FAIL_INVALID_REQUEST, NULL, -2},
    {"400 context overflow", 400,
     COMPAT_ERR("invalid_parameter_error", "invalid_request_error",
                "<400> InternalError.Algo.InvalidParameter: Range of input length should be "
                "[1, 30720]"),
     NULL, FAIL_CONTEXT_OVERFLOW, NULL, -2},
    {"400 InvalidParameter worded as an overflow", 400,
     COMPAT_ERR("invalid_parameter_error", "invalid_request_error",
                "<400> InternalError.Algo.InvalidParameter: This model's maximum context length "
                "is 131072 tokens."),
     NULL, FAIL_CONTEXT_OVERFLOW, NULL, -2},
    {"401 invalid_api_key", 401,
     COMPAT_ERR("invalid_api_key", "invalid_request_error", "Incorrect API key provided."), NULL,
     FAIL_AUTH, NULL, -2},
    {"404 model_not_found", 404,
     COMPAT_ERR("model_not_found", "invalid_request_error", "The model `x` does not exist."),
     NULL, FAIL_NOT_FOUND, NULL, -2},
    /* non-2xx, native shapes */
    {"400 Arrearage", 400, NATIVE_ERR("Arrearage", "Access denied."), NULL, FAIL_QUOTA_EXHAUSTED,
     "Arrearage", -2},
    {"403 Arrearage", 403, NATIVE_ERR("Arrearage", "Access denied."), NULL, FAIL_QUOTA_EXHAUSTED,
     NULL, -2},
    {"403 AccessDenied.Unpurchased", 403, NATIVE_ERR("AccessDenied.Unpurchased", "Not bought."),
     NULL, FAIL_PERMISSION, NULL, -2},
    {"401 InvalidApiKey", 401, NATIVE_ERR("InvalidApiKey", "Invalid API-key provided."), NULL,
     FAIL_AUTH, "InvalidApiKey", -2},
    {"404 ModelNotFound", 404, NATIVE_ERR("ModelNotFound", "Model not found."), NULL,
     FAIL_NOT_FOUND, NULL, -2},
    {"408 RequestTimeOut", 408, NATIVE_ERR("RequestTimeOut", "Request timed out."), NULL,
     FAIL_TIMEOUT, NULL, -2},
    {"413 BadRequest.TooLarge", 413, NATIVE_ERR("BadRequest.TooLarge", "Too large."), NULL,
     FAIL_INVALID_REQUEST, NULL, -2},
    {"429 Throttling", 429, NATIVE_ERR("Throttling", "Requests throttling triggered."), "5",
     FAIL_RATE_LIMITED, NULL, 5000},
    {"429 Free allocated quota", 429,
     NATIVE_ERR("Throttling.AllocationQuota", "Free allocated quota exceeded."), NULL,
     FAIL_QUOTA_EXHAUSTED, NULL, -2},
    {"500 InternalError.Algo", 500, NATIVE_ERR("InternalError.Algo", "Algorithm error."), NULL,
     FAIL_SERVER_ERROR, NULL, -2},
    {"503 HTML page", 503, "<html><body>503 Service Unavailable</body></html>", NULL,
     FAIL_OVERLOADED, NULL, -2},
    {"500 empty body", 500, "", NULL, FAIL_SERVER_ERROR, NULL, -2},
};

static void test_classify_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(cls_rows); i++) {
        const struct cls_row *r = &cls_rows[i];
        struct test_headers h = test_retry_headers(r->retry_after, NULL);
        struct prov_err_input in = {.status = r->status,
                                    .body = bsc_str_cstr(r->body),
                                    .content_type = BSC_STR("application/json"),
                                    .header = test_header,
                                    .header_ctx = &h,
                                    .now_wall_ms = 1700000000000ull};
        struct fail_info out;

        memset(&out, 0xa5, sizeof(out)); /* everything must be written */
        prov_dashscope.classify(&in, &out);
        if (out.kind != r->kind)
            fail_msg("%s: kind %s, want %s", r->name, fail_kind_name(out.kind),
                     fail_kind_name(r->kind));
        if (out.status != r->status)
            fail_msg("%s: status %d", r->name, out.status);
        if (r->code && strcmp(out.code, r->code) != 0)
            fail_msg("%s: code \"%s\", want \"%s\"", r->name, out.code, r->code);
        if (r->retry_ms != -2 && out.retry_after_ms != r->retry_ms)
            fail_msg("%s: retry %lld, want %lld", r->name, (long long)out.retry_after_ms,
                     (long long)r->retry_ms);
    }
}

/* ---- map_response --------------------------------------------------------------------------- */

#define RATE_200 NATIVE_ERR("Throttling.RateQuota", "Requests rate limit exceeded.")
#define INSPECT_200                                                                        \
    NATIVE_ERR("DataInspectionFailed", "Input data may contain inappropriate content.")

static void test_map_response(void **state)
{
    static const char answer[] =
        "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"created\":1,"
        "\"model\":\"qwen-plus\","
        "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"h\xc3\xa9\"},"
        "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2,"
        "\"total_tokens\":11,\"prompt_tokens_details\":{\"cached_tokens\":4}}}";
    struct fx f;
    struct bsc_buf out;
    struct prov_usage u;
    struct fail_info fail;

    (void)state;
    fx_init(&f, "{\"model\":\"a\",\"messages\":[]}", false);
    bsc_buf_init(&out, BIG);
    assert_int_equal(prov_dashscope.map_response(&f.call, BSC_STR(answer), &out, &u, &fail),
                     BSC_OK);
    assert_int_equal(out.len, 0); /* already OpenAI-shaped: the body is used as it is */
    assert_int_equal(u.input_tokens, 9);
    assert_int_equal(u.output_tokens, 2);
    assert_int_equal(u.cached_tokens, 4);

    bsc_buf_reset(&out);
    assert_int_equal(prov_dashscope.map_response(&f.call, BSC_STR(RATE_200), &out, &u, &fail),
                     BSC_EPARSE);
    assert_int_equal(fail.kind, FAIL_RATE_LIMITED);
    assert_int_equal(fail.status, 200);
    assert_string_equal(fail.code, "Throttling.RateQuota");
    assert_int_equal(out.len, 0); /* nothing for the client */

    assert_int_equal(prov_dashscope.map_response(&f.call, BSC_STR(INSPECT_200), &out, &u, &fail),
                     BSC_EPARSE);
    assert_int_equal(fail.kind, FAIL_CONTENT_POLICY);
    assert_int_equal(out.len, 0);

    assert_int_equal(prov_dashscope.map_response(&f.call, BSC_STR("{\"choices\":"), &out, &u,
                                                 &fail),
                     BSC_EPARSE);
    assert_int_equal(fail.kind, FAIL_SERVER_ERROR);
    bsc_buf_cleanup(&out);
    fx_cleanup(&f);
}

/* ---- streams -------------------------------------------------------------------------------- */

struct run {
    void *st;
    struct bsc_buf out;
    struct fail_info fail;
    enum prov_stream_status last;
    int events;
};

static int on_event(void *ud, struct bsc_str name, struct bsc_str data)
{
    struct run *r = ud;

    r->events++;
    if (r->last != PROV_STREAM_MORE)
        return 1;
    r->last = prov_dashscope.stream_event(r->st, name, data, &r->out, &r->fail);
    return 0;
}

static int on_comment(void *ud, struct bsc_str text)
{
    (void)ud;
    assert_true(bsc_str_eq(text, BSC_STR("HTTP_STATUS/200"))); /* seen, and ignored */
    return 0;
}

static const struct sse_callbacks run_cb = {on_event, on_comment, NULL};

/* Feeds <sse> split at <split> (0 = one feed) through the parser and the adapter. */
static void run_stream(const char *sse, size_t split, bool include_usage, struct run *r)
{
    struct fx f;
    struct sse_parser p;
    size_t len = strlen(sse);

    fx_init(&f, "{\"model\":\"a\",\"messages\":[],\"stream\":true}", true);
    f.call.include_usage = include_usage;
    memset(r, 0, sizeof(*r));
    r->st = calloc(1, prov_dashscope.stream_size);
    assert_non_null(r->st);
    bsc_buf_init(&r->out, BIG);
    prov_dashscope.stream_init(r->st, &f.call);
    sse_parser_init(&p, 65536, &run_cb, r);
    if (split && split < len) {
        assert_true(sse_parser_feed(&p, sse, split) >= 0);
        assert_true(sse_parser_feed(&p, sse + split, len - split) >= 0);
    } else {
        assert_true(sse_parser_feed(&p, sse, len) >= 0);
    }
    assert_int_equal(sse_parser_finish(&p, NULL), BSC_OK);
    if (r->last == PROV_STREAM_MORE)
        r->last = prov_dashscope.stream_end(r->st, &r->out, &r->fail);
    sse_parser_cleanup(&p);
    fx_cleanup(&f);
}

static void run_free(struct run *r)
{
    prov_dashscope.stream_cleanup(r->st);
    free(r->st);
    bsc_buf_cleanup(&r->out);
}

#define CHUNK(delta, finish)                                                               \
    "data: {\"id\":\"chatcmpl-9\",\"object\":\"chat.completion.chunk\",\"created\":1,"      \
    "\"model\":\"qwen-plus\",\"choices\":[{\"index\":0,\"delta\":" delta                   \
    ",\"finish_reason\":" finish "}]}\n\n"
#define USAGE_CHUNK                                                                        \
    "data: {\"id\":\"chatcmpl-9\",\"object\":\"chat.completion.chunk\",\"created\":1,"      \
    "\"model\":\"qwen-plus\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,"              \
    "\"completion_tokens\":3,\"total_tokens\":15}}\n\n"

#define E1 CHUNK("{\"role\":\"assistant\",\"content\":\"\"}", "null")
#define E2 CHUNK("{\"content\":\"H\xc3\xa9l\"}", "null")
#define E3 CHUNK("{\"content\":\"l\xf0\x9f\x9a\x80\"}", "null")
#define E4                                                                                 \
    CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":" \
          "{\"name\":\"get\",\"arguments\":\"\"}}]}",                                        \
          "null")
#define E5 CHUNK("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{}\"}}]}", "null")
#define E6 CHUNK("{}", "\"stop\"")
#define DONE "data: [DONE]\n\n"

/* What DashScope sends (with its status comments), and what the client gets: the chunks as
 * they were, comments gone, the usage chunk only when asked for. */
static const char golden[] =
    ":HTTP_STATUS/200\n" E1 ":HTTP_STATUS/200\n" E2 E3 E4 E5 E6 USAGE_CHUNK DONE;
static const char want_usage[] = E1 E2 E3 E4 E5 E6 USAGE_CHUNK DONE;
static const char want_plain[] = E1 E2 E3 E4 E5 E6 DONE;

static void test_stream_golden_every_split(void **state)
{
    (void)state;
    for (int usage = 0; usage <= 1; usage++) {
        struct bsc_str want = usage ? bsc_str_make(want_usage, sizeof(want_usage) - 1)
                                   : bsc_str_make(want_plain, sizeof(want_plain) - 1);

        for (size_t split = 0; split < sizeof(golden) - 1; split++) {
            struct run r;
            struct prov_usage u;

            run_stream(golden, split, usage, &r);
            if (r.last != PROV_STREAM_DONE)
                fail_msg("split %zu: status %d (%s)", split, r.last, r.fail.message);
            if (r.out.len != want.len || memcmp(r.out.p, want.p, want.len) != 0)
                fail_msg("split %zu usage %d: got\n%.*s\nwant\n%.*s", split, usage,
                         (int)r.out.len, r.out.p, BSC_STR_FMT(want));
            prov_dashscope.stream_usage(r.st, &u);
            assert_int_equal(u.input_tokens, 12);
            assert_int_equal(u.output_tokens, 3);
            run_free(&r);
        }
    }
}

struct ev_row {
    const char *name;
    const char *sse;
    enum prov_stream_status status;
    enum fail_kind kind;
    int frames; /* data frames relayed before the verdict */
};

static const struct ev_row ev_rows[] = {
    {"native code mid-stream",
     CHUNK("{\"role\":\"assistant\",\"content\":\"\"}", "null")
     "data: {\"code\":\"Throttling.RateQuota\",\"message\":\"Requests rate limit exceeded.\","
     "\"request_id\":\"r\"}\n\n",
     PROV_STREAM_ERROR, FAIL_RATE_LIMITED, 1},
    {"native code first",
     "data:{\"code\":\"DataInspectionFailed\",\"message\":\"Output data may contain inappropriate "
     "content.\",\"request_id\":\"r\"}\n\n",
     PROV_STREAM_ERROR, FAIL_CONTENT_POLICY, 0},
    {"event: error", "event:error\n:HTTP_STATUS/200\ndata:{\"code\":\"Arrearage\",\"message\":"
                     "\"Access denied.\"}\n\n",
     PROV_STREAM_ERROR, FAIL_QUOTA_EXHAUSTED, 0},
    {"event: error without JSON", "event:error\ndata:oops\n\n", PROV_STREAM_ERROR,
     FAIL_SERVER_ERROR, 0},
    {"compatible error object",
     CHUNK("{\"content\":\"a\"}", "null")
     "data: {\"error\":{\"code\":\"data_inspection_failed\",\"type\":\"data_inspection_failed\","
     "\"message\":\"Output data may contain inappropriate content.\"}}\n\n",
     PROV_STREAM_ERROR, FAIL_CONTENT_POLICY, 1},
    {"finish_reason error", CHUNK("{\"content\":\"a\"}", "null") CHUNK("{}", "\"error\""),
     PROV_STREAM_ERROR, FAIL_SERVER_ERROR, 1},
    {"text that mentions code is text",
     CHUNK("{\"content\":\"the \\\"code\\\": \\\"error\\\"\"}", "null") "data: [DONE]\n\n",
     PROV_STREAM_DONE, FAIL_NONE, 1},
    {"EOF without [DONE]", CHUNK("{\"content\":\"a\"}", "null"), PROV_STREAM_ERROR,
     FAIL_PARTIAL_OUTPUT, 1},
};

static int count_frames(const struct bsc_buf *b)
{
    int n = 0;

    for (const char *p = b->p; p && (p = strstr(p, "data: ")); p += 6)
        n++;
    return n;
}

static void test_stream_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(ev_rows); i++) {
        const struct ev_row *e = &ev_rows[i];
        struct run r;

        run_stream(e->sse, 0, false, &r);
        if (r.last != e->status)
            fail_msg("%s: status %d, want %d", e->name, r.last, e->status);
        if (e->status == PROV_STREAM_ERROR && r.fail.kind != e->kind)
            fail_msg("%s: kind %s, want %s", e->name, fail_kind_name(r.fail.kind),
                     fail_kind_name(e->kind));
        if (e->status == PROV_STREAM_ERROR && e->kind != FAIL_PARTIAL_OUTPUT &&
            r.fail.status != 200)
            fail_msg("%s: status %d", e->name, r.fail.status);
        if (count_frames(&r.out) != e->frames + (e->status == PROV_STREAM_DONE))
            fail_msg("%s: %d frames", e->name, count_frames(&r.out));
        run_free(&r);
    }
}

static void test_stream_state_fits(void **state)
{
    (void)state;
    assert_true(prov_openai.stream_size <= prov_dashscope.stream_size);
    assert_string_equal(prov_ops_for(CFG_PROV_DASHSCOPE)->name, "dashscope");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_chat_stream),
        cmocka_unit_test(test_build_renames_max_completion_tokens),
        cmocka_unit_test(test_build_fast_path_and_other_ops),
        cmocka_unit_test(test_classify_table),
        cmocka_unit_test(test_map_response),
        cmocka_unit_test(test_stream_golden_every_split),
        cmocka_unit_test(test_stream_errors),
        cmocka_unit_test(test_stream_state_fits),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
