/* SPDX-License-Identifier: MIT */
/* test_prov_azure.c -- the Azure OpenAI adapter: deployment URLs with api-version (default
 * and configured, escaping), the api-key header instead of Authorization, probes and
 * embeddings; the error table (content filter 400s incl. an inner policy code, 429 waits
 * from retry-after-ms and from the message, a day's wait meaning quota, deployment and
 * api-version problems); finish_reason "content_filter" passed through; and streams with
 * Azure's extra chunks (prompt filter results, annotations without delta) fed through the
 * SSE parser at every split position. Fixtures follow docs/providers.md §5.2. */
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

extern const struct prov_ops prov_azure;
extern const struct prov_ops prov_openai;

static char base_url[] = "https://res.openai.azure.com/openai";
static char model[] = "gpt-4o";
static char pid[] = "az";
static char tid[] = "gpt-4o@az";

static const struct fx_names names = {CFG_PROV_AZURE, base_url, model, pid, tid, "az-key-1"};

static void fx_init(struct fx *f, const char *req_json, bool stream)
{
    fx_setup(f, &names, req_json, stream);
}

/* ---- build ---------------------------------------------------------------------------------- */

static const char chat_req[] =
    "{\"model\":\"alias\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":true}";

static void test_build_chat(void **state)
{
    struct fx f;
    char why[128] = "";
    struct json_object *b, *opts, *v;

    (void)state;
    fx_init(&f, chat_req, true);
    assert_int_equal(prov_azure.build(&f.call, &f.http, why, sizeof(why)), BSC_OK);
    assert_string_equal(f.http.method, "POST");
    assert_string_equal(f.http.url.p, "https://res.openai.azure.com/openai/deployments/gpt-4o/"
                                      "chat/completions?api-version=2024-10-21");
    assert_string_equal(header_value(&f.http, "api-key"), "az-key-1");
    assert_null(header_value(&f.http, "Authorization"));
    assert_string_equal(header_value(&f.http, "Accept"), "text/event-stream");
    b = json_tokener_parse(f.http.body.p);
    assert_non_null(b);
    assert_true(json_object_object_get_ex(b, "stream_options", &opts));
    assert_true(json_object_object_get_ex(opts, "include_usage", &v));
    assert_true(json_object_get_boolean(v));
    json_object_put(b);
    fx_cleanup(&f);
}

static void test_build_urls(void **state)
{
    static char dep[] = "prod chat/4o";
    static char ver[] = "2025-04-01-preview";
    static char dep2[] = "emb-small";
    static char empty[] = "";
    struct fx f;
    char why[128] = "";

    (void)state;
    /* deployment set, escaped; configured api-version */
    fx_init(&f, chat_req, false);
    f.target.deployment = dep;
    f.provider.api_version = ver;
    assert_int_equal(prov_azure.build(&f.call, &f.http, why, sizeof(why)), BSC_OK);
    assert_string_equal(f.http.url.p, "https://res.openai.azure.com/openai/deployments/"
                                      "prod%20chat%2F4o/chat/completions"
                                      "?api-version=2025-04-01-preview");
    fx_cleanup(&f);

    fx_init(&f, "{\"model\":\"e\",\"input\":[\"a\"]}", false);
    f.call.op = PROV_OP_EMBEDDINGS;
    f.target.deployment = dep2;
    assert_int_equal(prov_azure.build(&f.call, &f.http, why, sizeof(why)), BSC_OK);
    assert_string_equal(f.http.url.p, "https://res.openai.azure.com/openai/deployments/"
                                      "emb-small/embeddings?api-version=2024-10-21");
    assert_string_equal(header_value(&f.http, "api-key"), "az-key-1");
    fx_cleanup(&f);

    fx_init(&f, NULL, false);
    f.call.op = PROV_OP_PROBE_MODELS;
    assert_int_equal(prov_azure.build(&f.call, &f.http, why, sizeof(why)), BSC_OK);
    assert_string_equal(f.http.method, "GET");
    assert_string_equal(f.http.url.p,
                        "https://res.openai.azure.com/openai/models?api-version=2024-10-21");
    assert_string_equal(header_value(&f.http, "api-key"), "az-key-1");
    assert_int_equal(f.http.body.len, 0);
    fx_cleanup(&f);

    fx_init(&f, NULL, false);
    f.call.op = PROV_OP_PROBE_COMPLETION;
    assert_int_equal(prov_azure.build(&f.call, &f.http, why, sizeof(why)), BSC_OK);
    assert_string_equal(f.http.method, "POST");
    assert_string_equal(f.http.url.p, "https://res.openai.azure.com/openai/deployments/gpt-4o/"
                                      "chat/completions?api-version=2024-10-21");
    assert_non_null(strstr(f.http.body.p, "\"max_tokens\":1"));
    fx_cleanup(&f);

    /* no key: no api-key header (and still no Authorization) */
    fx_init(&f, chat_req, false);
    f.call.key = NULL;
    assert_int_equal(prov_azure.build(&f.call, &f.http, why, sizeof(why)), BSC_OK);
    assert_null(header_value(&f.http, "api-key"));
    assert_null(header_value(&f.http, "Authorization"));
    fx_cleanup(&f);

    /* nothing to put in the path */
    fx_init(&f, chat_req, false);
    f.target.model = empty;
    assert_int_equal(prov_azure.build(&f.call, &f.http, why, sizeof(why)), BSC_EINVAL);
    assert_non_null(strstr(why, "deployment"));
    fx_cleanup(&f);
}

/* ---- classify ------------------------------------------------------------------------------- */

struct cls_row {
    const char *name;
    int status;
    const char *body, *ra, *ra_ms;
    enum fail_kind kind;
    int64_t retry_ms; /* -2: not checked */
};

#define FILTER_400                                                                         \
    "{\"error\":{\"code\":\"content_filter\",\"status\":400,\"param\":\"prompt\",\"type\":null," \
    "\"message\":\"The response was filtered due to the prompt triggering Azure OpenAI's "   \
    "content management policy.\",\"innererror\":{\"code\":\"ResponsibleAIPolicyViolation\"," \
    "\"content_filter_result\":{\"hate\":{\"filtered\":false,\"severity\":\"safe\"},"        \
    "\"violence\":{\"filtered\":true,\"severity\":\"high\"}}}}}"
#define RATE_429(secs)                                                                     \
    "{\"error\":{\"code\":\"429\",\"message\":\"Requests to the ChatCompletions_Create "      \
    "Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of " \
    "your current OpenAI S0 pricing tier. Please retry after " secs " seconds. Please go "   \
    "here: https://aka.ms/oai/quotaincrease if you would like to further increase the "     \
    "default rate limit.\"}}"

static const struct cls_row cls_rows[] = {
    {"200 answer", 200, "{\"choices\":[{\"index\":0,\"message\":{\"content\":\"x\"}}]}", NULL,
     NULL, FAIL_NONE, -1},
    {"400 content_filter", 400, FILTER_400, NULL, NULL, FAIL_CONTENT_POLICY, -2},
    {"400 inner ResponsibleAIPolicyViolation only", 400,
     "{\"error\":{\"code\":\"BadRequest\",\"message\":\"Blocked.\",\"innererror\":{\"code\":"
     "\"ResponsibleAIPolicyViolation\"}}}",
     NULL, NULL, FAIL_CONTENT_POLICY, -2},
    {"400 the words alone", 400,
     "{\"error\":{\"message\":\"The response was filtered due to the prompt triggering Azure "
     "OpenAI's content management policy.\"}}",
     NULL, NULL, FAIL_CONTENT_POLICY, -2},
    {"429 retry-after-ms", 429, RATE_429("2"), "2", "1500", FAIL_RATE_LIMITED, 1500},
    {"429 retry-after", 429, RATE_429("7"), "7", NULL, FAIL_RATE_LIMITED, 7000},
    {"429 message only", 429, RATE_429("60"), NULL, NULL, FAIL_RATE_LIMITED, 60000},
    {"429 a day: quota", 429, RATE_429("86400"), "86400", NULL, FAIL_QUOTA_EXHAUSTED, -2},
    {"429 a day in the message only: quota", 429, RATE_429("86400"), NULL, NULL,
     FAIL_QUOTA_EXHAUSTED, -2},
    {"429 insufficient_quota", 429,
     "{\"error\":{\"code\":\"insufficient_quota\",\"message\":\"You exceeded your current "
     "quota.\"}}",
     NULL, NULL, FAIL_QUOTA_EXHAUSTED, -2},
    {"401 bad key", 401,
     "{\"error\":{\"code\":\"401\",\"message\":\"Access denied due to invalid subscription key "
     "or wrong API endpoint. Make sure to provide a valid key for an active subscription and "
     "use a correct regional API endpoint for your resource.\"}}",
     NULL, NULL, FAIL_AUTH, -2},
    {"404 DeploymentNotFound", 404,
     "{\"error\":{\"code\":\"DeploymentNotFound\",\"message\":\"The API deployment for this "
     "resource does not exist.\"}}",
     NULL, NULL, FAIL_NOT_FOUND, -2},
    {"404 resource not found (no api-version)", 404,
     "{\"error\":{\"code\":\"404\",\"message\":\"Resource not found\"}}", NULL, NULL,
     FAIL_NOT_FOUND, -2},
    {"400 api version not supported", 400,
     "{\"error\":{\"code\":\"BadRequest\",\"message\":\"API version not supported\"}}", NULL,
     NULL, FAIL_NOT_FOUND, -2},
    {"400 context_length_exceeded", 400,
     "{\"error\":{\"message\":\"This model's maximum context length is 128000 tokens.\","
     "\"type\":\"invalid_request_error\",\"param\":\"messages\",\"code\":"
     "\"context_length_exceeded\"}}",
     NULL, NULL, FAIL_CONTEXT_OVERFLOW, -2},
    {"400 other", 400,
     "{\"error\":{\"message\":\"Unrecognized request argument supplied: foo\",\"type\":"
     "\"invalid_request_error\",\"param\":null,\"code\":null}}",
     NULL, NULL, FAIL_INVALID_REQUEST, -2},
    {"500", 500, "{\"error\":{\"code\":\"InternalServerError\",\"message\":\"Backend error.\"}}",
     NULL, NULL, FAIL_SERVER_ERROR, -2},
    {"503", 503, "", NULL, NULL, FAIL_OVERLOADED, -2},
};

static void test_classify_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(cls_rows); i++) {
        const struct cls_row *r = &cls_rows[i];
        struct test_headers h = test_retry_headers(r->ra, r->ra_ms);
        struct prov_err_input in = {.status = r->status,
                                    .body = bsc_str_cstr(r->body),
                                    .content_type = BSC_STR("application/json"),
                                    .header = test_header,
                                    .header_ctx = &h,
                                    .now_wall_ms = 1700000000000ull};
        struct fail_info out;

        memset(&out, 0x5a, sizeof(out));
        prov_azure.classify(&in, &out);
        if (out.kind != r->kind)
            fail_msg("%s: kind %s, want %s", r->name, fail_kind_name(out.kind),
                     fail_kind_name(r->kind));
        if (out.status != r->status)
            fail_msg("%s: status %d", r->name, out.status);
        if (r->retry_ms != -2 && out.retry_after_ms != r->retry_ms)
            fail_msg("%s: retry %lld, want %lld", r->name, (long long)out.retry_after_ms,
                     (long long)r->retry_ms);
    }
}

/* The adapter reads its own headers from the response head through the accessor: Azure's
 * x-ms-retry-after-ms counts as retry-after-ms (which wins when both came), and beats
 * Retry-After; a wait of hours is a quota, not a rate limit. */
static void test_classify_reads_x_ms_retry_after_ms(void **state)
{
    static const struct {
        const char *head;
        enum fail_kind kind;
        int64_t retry_ms;
    } rows[] = {
        {"HTTP/1.1 429 Too Many Requests\r\nx-ms-retry-after-ms: 300\r\n\r\n",
         FAIL_RATE_LIMITED, 300},
        {"HTTP/1.1 429 Too Many Requests\r\nX-Ms-Retry-After-Ms: 300\r\nRetry-After: 2\r\n",
         FAIL_RATE_LIMITED, 300},
        {"HTTP/1.1 429 Too Many Requests\r\nx-ms-retry-after-ms: 300\r\n"
         "retry-after-ms: 450\r\n\r\n",
         FAIL_RATE_LIMITED, 450},
        {"HTTP/1.1 429 Too Many Requests\r\nretry-after-ms: \r\n"
         "x-ms-retry-after-ms: 250\r\n\r\n",
         FAIL_RATE_LIMITED, 250},
        {"HTTP/1.1 429 Too Many Requests\r\nx-ms-retry-after-ms: 7200000\r\n\r\n",
         FAIL_QUOTA_EXHAUSTED, 7200000},
        {"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 2\r\n\r\n", FAIL_RATE_LIMITED,
         2000},
    };

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        struct prov_err_input in = {.status = 429,
                                    .body = BSC_STR("{\"error\":{\"code\":\"429\",\"message\":"
                                                    "\"Rate limit is exceeded.\"}}"),
                                    .content_type = BSC_STR("application/json"),
                                    .header = test_head_header,
                                    .header_ctx = rows[i].head,
                                    .now_wall_ms = 1700000000000ull};
        struct fail_info out;

        prov_azure.classify(&in, &out);
        if (out.kind != rows[i].kind || out.retry_after_ms != rows[i].retry_ms)
            fail_msg("row %zu: %s %lld, want %s %lld", i, fail_kind_name(out.kind),
                     (long long)out.retry_after_ms, fail_kind_name(rows[i].kind),
                     (long long)rows[i].retry_ms);
    }
}

/* ---- map_response --------------------------------------------------------------------------- */

static void test_map_content_filter_passes(void **state)
{
    static const char filtered[] =
        "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"created\":1,\"model\":\"gpt-4o\","
        "\"prompt_filter_results\":[{\"prompt_index\":0,\"content_filter_results\":{}}],"
        "\"choices\":[{\"index\":0,\"finish_reason\":\"content_filter\",\"message\":{\"role\":"
        "\"assistant\",\"content\":null},\"content_filter_results\":{\"violence\":{\"filtered\":"
        "true,\"severity\":\"high\"}}}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":0,"
        "\"total_tokens\":5}}";
    struct fx f;
    struct bsc_buf out;
    struct prov_usage u;
    struct fail_info fail;
    struct prov_err_input in = {.status = 200, .body = BSC_STR(filtered)};

    (void)state;
    prov_azure.classify(&in, &fail);
    assert_int_equal(fail.kind, FAIL_NONE);
    fx_init(&f, chat_req, false);
    bsc_buf_init(&out, BIG);
    assert_int_equal(prov_azure.map_response(&f.call, BSC_STR(filtered), &out, &u, &fail),
                     BSC_OK);
    assert_int_equal(out.len, 0); /* already OpenAI-shaped: the body is used as it is */
    assert_int_equal(u.input_tokens, 5);
    assert_int_equal(u.output_tokens, 0);
    bsc_buf_cleanup(&out);
    fx_cleanup(&f);
}

/* ---- streams -------------------------------------------------------------------------------- */

struct run {
    void *st;
    struct bsc_buf out;
    struct fail_info fail;
    enum prov_stream_status last;
};

static int on_event(void *ud, struct bsc_str name, struct bsc_str data)
{
    struct run *r = ud;

    if (r->last == PROV_STREAM_MORE)
        r->last = prov_azure.stream_event(r->st, name, data, &r->out, &r->fail);
    return r->last != PROV_STREAM_MORE;
}

static const struct sse_callbacks run_cb = {on_event, NULL, NULL};

static void run_stream(struct bsc_str sse, size_t split, bool include_usage, struct run *r)
{
    struct fx f;
    struct sse_parser p;

    fx_init(&f, chat_req, true);
    f.call.include_usage = include_usage;
    memset(r, 0, sizeof(*r));
    r->st = calloc(1, prov_azure.stream_size);
    assert_non_null(r->st);
    bsc_buf_init(&r->out, BIG);
    prov_azure.stream_init(r->st, &f.call);
    sse_parser_init(&p, 65536, &run_cb, r);
    if (split && split < sse.len) {
        assert_true(sse_parser_feed(&p, sse.p, split) >= 0);
        assert_true(sse_parser_feed(&p, sse.p + split, sse.len - split) >= 0);
    } else {
        assert_true(sse_parser_feed(&p, sse.p, sse.len) >= 0);
    }
    assert_int_equal(sse_parser_finish(&p, NULL), BSC_OK);
    if (r->last == PROV_STREAM_MORE)
        r->last = prov_azure.stream_end(r->st, &r->out, &r->fail);
    sse_parser_cleanup(&p);
    fx_cleanup(&f);
}

static void run_free(struct run *r)
{
    prov_azure.stream_cleanup(r->st);
    free(r->st);
    bsc_buf_cleanup(&r->out);
}

#define HEAD                                                                               \
    "{\"id\":\"chatcmpl-7\",\"object\":\"chat.completion.chunk\",\"created\":1,"            \
    "\"model\":\"gpt-4o\","
#define FILTERS "\"content_filter_results\":{\"hate\":{\"filtered\":false,\"severity\":\"safe\"}}"
#define CHOICE(body) "data: " HEAD "\"choices\":[{\"index\":0," body "}]}\n\n"
/* Azure's first chunk: only the prompt's filter results, choices empty, ids blank. */
#define PROMPT_FILTER                                                                      \
    "data: {\"choices\":[],\"created\":0,\"id\":\"\",\"model\":\"\",\"object\":\"\","          \
    "\"prompt_filter_results\":[{\"prompt_index\":0," FILTERS "}]}\n\n"
#define C_ROLE                                                                             \
    CHOICE("\"delta\":{\"role\":\"assistant\",\"content\":\"\"}," FILTERS                    \
           ",\"finish_reason\":null")
#define C_TEXT1 CHOICE("\"delta\":{\"content\":\"H\xc3\xa9\"},\"finish_reason\":null")
#define C_TEXT2 CHOICE("\"delta\":{\"content\":\"\xe2\x9c\x93\"},\"finish_reason\":null")
/* Asynchronous filtering: annotations for text already sent, without delta. */
#define C_ANNOT                                                                            \
    CHOICE("\"finish_reason\":null," FILTERS ",\"content_filter_offsets\":{\"check_offset\":0," \
           "\"start_offset\":0,\"end_offset\":4}")
#define C_FIN(reason) CHOICE("\"delta\":{},\"finish_reason\":\"" reason "\"")
#define C_FIN_NODELTA CHOICE("\"finish_reason\":\"stop\"," FILTERS)
#define C_FIN_FIXED CHOICE("\"finish_reason\":\"stop\"," FILTERS ",\"delta\":{}")
#define C_USAGE                                                                            \
    "data: " HEAD "\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3,"   \
    "\"total_tokens\":12}}\n\n"
#define C_DONE "data: [DONE]\n\n"

struct golden {
    const char *name;
    const char *in;
    const char *want;       /* without usage */
    const char *want_usage; /* with include_usage */
};

static const struct golden goldens[] = {
    {"content_filter finish passes through",
     PROMPT_FILTER C_ROLE C_TEXT1 C_ANNOT C_TEXT2 C_FIN("content_filter") C_USAGE C_DONE,
     C_ROLE C_TEXT1 C_TEXT2 C_FIN("content_filter") C_DONE,
     C_ROLE C_TEXT1 C_TEXT2 C_FIN("content_filter") C_USAGE C_DONE},
    {"finish without delta is repaired",
     PROMPT_FILTER C_ROLE C_TEXT1 C_FIN_NODELTA C_ANNOT C_USAGE C_DONE,
     C_ROLE C_TEXT1 C_FIN_FIXED C_DONE, C_ROLE C_TEXT1 C_FIN_FIXED C_USAGE C_DONE},
};

static void test_stream_goldens_every_split(void **state)
{
    (void)state;
    for (size_t g = 0; g < BSC_ARRAY_LEN(goldens); g++) {
        struct bsc_str in = bsc_str_cstr(goldens[g].in);

        for (int usage = 0; usage <= 1; usage++) {
            const char *want = usage ? goldens[g].want_usage : goldens[g].want;

            for (size_t split = 0; split < in.len; split++) {
                struct run r;
                struct prov_usage u;

                run_stream(in, split, usage, &r);
                if (r.last != PROV_STREAM_DONE)
                    fail_msg("%s split %zu: status %d (%s)", goldens[g].name, split, r.last,
                             r.fail.message);
                if (r.out.len != strlen(want) || memcmp(r.out.p, want, r.out.len) != 0)
                    fail_msg("%s split %zu usage %d: got\n%.*s\nwant\n%s", goldens[g].name,
                             split, usage, (int)r.out.len, r.out.p, want);
                prov_azure.stream_usage(r.st, &u);
                assert_int_equal(u.input_tokens, 9);
                assert_int_equal(u.output_tokens, 3);
                run_free(&r);
            }
        }
    }
}

static void test_stream_errors(void **state)
{
    struct run r;
    static const char err_ev[] = C_ROLE "data: {\"error\":{\"message\":\"The server had an "
                                        "error.\",\"type\":\"server_error\",\"code\":null}}\n\n";
    static const char cut[] = PROMPT_FILTER C_ROLE C_TEXT1;

    (void)state;
    run_stream(BSC_STR(err_ev), 0, false, &r);
    assert_int_equal(r.last, PROV_STREAM_ERROR);
    assert_int_equal(r.fail.kind, FAIL_SERVER_ERROR);
    run_free(&r);

    run_stream(BSC_STR(cut), 0, false, &r);
    assert_int_equal(r.last, PROV_STREAM_ERROR);
    assert_int_equal(r.fail.kind, FAIL_PARTIAL_OUTPUT);
    assert_string_equal(r.out.p, C_ROLE C_TEXT1);
    run_free(&r);
}

static void test_registered(void **state)
{
    (void)state;
    assert_true(prov_openai.stream_size <= prov_azure.stream_size);
    assert_ptr_equal(prov_ops_for(CFG_PROV_AZURE), &prov_azure);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_chat),
        cmocka_unit_test(test_build_urls),
        cmocka_unit_test(test_classify_table),
        cmocka_unit_test(test_classify_reads_x_ms_retry_after_ms),
        cmocka_unit_test(test_map_content_filter_passes),
        cmocka_unit_test(test_stream_goldens_every_split),
        cmocka_unit_test(test_stream_errors),
        cmocka_unit_test(test_registered),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
