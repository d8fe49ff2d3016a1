/* SPDX-License-Identifier: MIT */
/* test_prov_anthropic.c -- the Anthropic adapter (providers/anthropic*.c) and bascule-sim's
 * Anthropic dialect. Golden translations written from the documented formats
 * (docs/providers.md §2): OpenAI request -> Messages request, Messages answer -> chat.completion,
 * event sequences -> chunk frames (every split position of multi-byte text), the error
 * classification table (statuses, errors in 200 bodies, error events). Then the two halves
 * against each other: every request the adapter builds must pass the sim's strict
 * validation, and what the sim answers must translate back. The sim sources are compiled
 * into this binary (the Makefile links unit tests against libbascule.a only). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../sim/content.c"
#include "../../sim/dialect.c"
#include "../../sim/dialect_anthropic.c"
#include "../../sim/dialect_openai.c"
#include "../../sim/sjson.c"

#include "providers/provider.h"
#include "header_lines.h"
#include "fail/taxonomy.h"
#include "stream/utf8.h"

extern const struct prov_ops prov_anthropic;

#define OPS (&prov_anthropic)

/* ---- fixtures ---- */

struct fx {
    struct cfg_header hdrs[2];
    struct cfg_provider prov;
    struct cfg_target target;
};

static void fx_init(struct fx *f, uint64_t max_output_tokens)
{
    memset(f, 0, sizeof(*f));
    f->prov.id = (char *)"anthropic";
    f->prov.kind = CFG_PROV_ANTHROPIC;
    f->prov.base_url = (char *)"https://api.anthropic.com/v1";
    f->target.id = (char *)"claude@anthropic";
    f->target.provider = &f->prov;
    f->target.model = (char *)"claude-sonnet-4-5";
    f->target.max_output_tokens = max_output_tokens;
}

static struct json_object *parse(const char *s)
{
    struct json_object *o = prov_parse_json(bsc_str_cstr(s));

    if (!o)
        fail_msg("fixture is not JSON: %s", s);
    return o;
}

static struct prov_call chat_call(const struct fx *f, struct json_object *req, bool stream)
{
    return (struct prov_call){.op = PROV_OP_CHAT,
                              .provider = &f->prov,
                              .target = &f->target,
                              .key = "sk-ant-test",
                              .req = req,
                              .stream = stream,
                              .request_id = "req-1",
                              .created = 1700000000};
}

static void http_init(struct prov_http *h)
{
    memset(h, 0, sizeof(*h));
    bsc_buf_init(&h->url, 8192);
    bsc_buf_init(&h->headers, 65536);
    bsc_buf_init(&h->body, 1 << 20);
}

static void http_cleanup(struct prov_http *h)
{
    bsc_buf_cleanup(&h->url);
    bsc_buf_cleanup(&h->headers);
    bsc_buf_cleanup(&h->body);
}

/* How many header lines equal <line> (case-sensitive on the value, not the name). */
static int header_count(const struct prov_http *h, const char *name)
{
    int n = 0;
    size_t nl = strlen(name);

    for (size_t off = 0; off < h->headers.len;) {
        const char *l = h->headers.p + off;
        if (strncasecmp(l, name, nl) == 0 && l[nl] == ':')
            n++;
        off += strlen(l) + 1;
    }
    return n;
}

static void expect_json(const char *ctx, struct bsc_str got, const char *want)
{
    struct json_object *g = prov_parse_json(got), *w = parse(want);

    if (!g || !json_object_equal(g, w))
        fail_msg("%s:\n got  %.*s\n want %s", ctx, (int)got.len, got.p ? got.p : "", want);
    json_object_put(g);
    json_object_put(w);
}

/* Builds <req_json> for a chat call; returns the error, *<why> the reason. */
static enum bsc_err build(const struct fx *f, const char *req_json, bool stream,
                          struct prov_http *h, char *why, size_t why_len)
{
    struct json_object *req = parse(req_json);
    struct prov_call c = chat_call(f, req, stream);
    enum bsc_err err;

    why[0] = '\0';
    err = OPS->build(&c, h, why, why_len);
    json_object_put(req);
    return err;
}

/* ---- request goldens ---- */

struct build_row {
    const char *name;
    const char *req;
    bool stream;
    uint64_t max_output_tokens;
    const char *want;
};

static const struct build_row build_rows[] = {
    {"system hoisting, sampling, metadata",
     "{\"model\":\"r\",\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
     "{\"role\":\"user\",\"content\":\"Hi\",\"name\":\"ann\"},"
     "{\"role\":\"developer\",\"content\":[{\"type\":\"text\",\"text\":\"Use metric.\"}]},"
     "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Weather?\"}]}],"
     "\"max_completion_tokens\":300,\"max_tokens\":50,\"temperature\":1.5,\"top_p\":0.9,"
     "\"stop\":\"###\",\"user\":\"u-1\",\"seed\":7,\"presence_penalty\":0.5,\"n\":1,"
     "\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
     true, 0,
     "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":300,"
     "\"system\":[{\"type\":\"text\",\"text\":\"Be brief.\"},"
     "{\"type\":\"text\",\"text\":\"Use metric.\"}],"
     "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Hi\"},"
     "{\"type\":\"text\",\"text\":\"Weather?\"}]}],"
     "\"temperature\":1.0,\"top_p\":0.9,\"stop_sequences\":[\"###\"],"
     "\"metadata\":{\"user_id\":\"u-1\"},\"stream\":true}"},

    {"a tool round trip: tool_use blocks, merged tool_result turn, tools, required",
     "{\"model\":\"r\",\"messages\":[{\"role\":\"system\",\"content\":\"S\"},"
     "{\"role\":\"user\",\"content\":\"Weather in Oslo?\"},"
     "{\"role\":\"assistant\",\"content\":\"Checking.\",\"tool_calls\":["
     "{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
     "\"arguments\":\"{\\\"city\\\":\\\"Oslo\\\"}\"}},"
     "{\"id\":\"call_2\",\"type\":\"function\",\"function\":{\"name\":\"now\",\"arguments\":\"\"}}]},"
     "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"{\\\"temp_c\\\":4}\"},"
     "{\"role\":\"tool\",\"tool_call_id\":\"call_2\",\"content\":[{\"type\":\"text\",\"text\":\"noon\"}]},"
     "{\"role\":\"user\",\"content\":\"Thanks\"}],"
     "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":"
     "\"Get weather\",\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":"
     "\"string\"}},\"required\":[\"city\"]},\"strict\":true}},"
     "{\"type\":\"function\",\"function\":{\"name\":\"now\"}}],"
     "\"tool_choice\":\"required\",\"parallel_tool_calls\":false}",
     false, 0,
     "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":4096,\"system\":\"S\",\"messages\":["
     "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Weather in Oslo?\"}]},"
     "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Checking.\"},"
     "{\"type\":\"tool_use\",\"id\":\"call_1\",\"name\":\"get_weather\",\"input\":{\"city\":\"Oslo\"}},"
     "{\"type\":\"tool_use\",\"id\":\"call_2\",\"name\":\"now\",\"input\":{}}]},"
     "{\"role\":\"user\",\"content\":["
     "{\"type\":\"tool_result\",\"tool_use_id\":\"call_1\",\"content\":\"{\\\"temp_c\\\":4}\"},"
     "{\"type\":\"tool_result\",\"tool_use_id\":\"call_2\",\"content\":[{\"type\":\"text\",\"text\":\"noon\"}]},"
     "{\"type\":\"text\",\"text\":\"Thanks\"}]}],"
     "\"tools\":[{\"name\":\"get_weather\",\"description\":\"Get weather\",\"input_schema\":"
     "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}},"
     "{\"name\":\"now\",\"input_schema\":{\"type\":\"object\",\"properties\":{}}}],"
     "\"tool_choice\":{\"type\":\"any\",\"disable_parallel_tool_use\":true}}"},

    {"images: data URL -> base64 source, https URL -> url source",
     "{\"model\":\"r\",\"messages\":[{\"role\":\"user\",\"content\":["
     "{\"type\":\"text\",\"text\":\"What is this?\"},"
     "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,iVBORw0K\","
     "\"detail\":\"high\"}},"
     "{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://example.com/cat.jpg\"}},"
     "{\"type\":\"file\",\"file\":{\"file_data\":\"data:application/pdf;base64,JVBERi0x\","
     "\"filename\":\"a.pdf\"}}]}]}",
     false, 0,
     "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":4096,\"messages\":[{\"role\":\"user\","
     "\"content\":[{\"type\":\"text\",\"text\":\"What is this?\"},"
     "{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\","
     "\"data\":\"iVBORw0K\"}},"
     "{\"type\":\"image\",\"source\":{\"type\":\"url\",\"url\":\"https://example.com/cat.jpg\"}},"
     "{\"type\":\"document\",\"source\":{\"type\":\"base64\",\"media_type\":\"application/pdf\","
     "\"data\":\"JVBERi0x\"}}]}]}"},

    {"named tool_choice; max_tokens from the target",
     "{\"model\":\"r\",\"messages\":[{\"role\":\"user\",\"content\":\"time?\"}],"
     "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"now\",\"parameters\":"
     "{\"type\":\"object\",\"properties\":{}}}}],"
     "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"now\"}},"
     "\"safety_identifier\":\"sid-9\"}",
     false, 8192,
     "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":8192,\"messages\":[{\"role\":\"user\","
     "\"content\":[{\"type\":\"text\",\"text\":\"time?\"}]}],"
     "\"tools\":[{\"name\":\"now\",\"input_schema\":{\"type\":\"object\",\"properties\":{}}}],"
     "\"tool_choice\":{\"type\":\"tool\",\"name\":\"now\"},\"metadata\":{\"user_id\":\"sid-9\"}}"},

    {"tool_choice none keeps no parallel flag; parallel false alone is auto+disable",
     "{\"model\":\"r\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
     "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"now\"}}],"
     "\"tool_choice\":\"none\",\"parallel_tool_calls\":false,\"max_tokens\":9}",
     false, 0,
     "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":9,\"messages\":[{\"role\":\"user\","
     "\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}],"
     "\"tools\":[{\"name\":\"now\",\"input_schema\":{\"type\":\"object\",\"properties\":{}}}],"
     "\"tool_choice\":{\"type\":\"none\"}}"},

    {"parallel_tool_calls false without tool_choice",
     "{\"model\":\"r\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
     "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"now\"}}],"
     "\"parallel_tool_calls\":false}",
     false, 0,
     "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":4096,\"messages\":[{\"role\":\"user\","
     "\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}],"
     "\"tools\":[{\"name\":\"now\",\"input_schema\":{\"type\":\"object\",\"properties\":{}}}],"
     "\"tool_choice\":{\"type\":\"auto\",\"disable_parallel_tool_use\":true}}"},

    {"merging: empty text dropped, consecutive assistants merged, tool_choice without tools",
     "{\"model\":\"r\",\"messages\":[{\"role\":\"user\",\"content\":\"\"},"
     "{\"role\":\"user\",\"content\":\"Hi\"},{\"role\":\"assistant\",\"content\":\"A\"},"
     "{\"role\":\"assistant\",\"content\":[{\"type\":\"refusal\",\"refusal\":\"No.\"}]},"
     "{\"role\":\"user\",\"content\":\"Why?\"}],\"tool_choice\":\"auto\",\"tools\":[],"
     "\"response_format\":{\"type\":\"text\"},\"stop\":[\"a\",\"b\"]}",
     false, 0,
     "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":4096,\"messages\":["
     "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Hi\"}]},"
     "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"A\"},"
     "{\"type\":\"text\",\"text\":\"No.\"}]},"
     "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Why?\"}]}],"
     "\"stop_sequences\":[\"a\",\"b\"]}"},

    {"response_format json_schema: one forced tool",
     "{\"model\":\"r\",\"messages\":[{\"role\":\"user\",\"content\":\"JSON please\"}],"
     "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"w\","
     "\"schema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}}}}}}",
     false, 0,
     "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":4096,\"messages\":[{\"role\":\"user\","
     "\"content\":[{\"type\":\"text\",\"text\":\"JSON please\"}]}],"
     "\"tools\":[{\"name\":\"json_response\",\"description\":\"Give the answer as this tool's "
     "input.\",\"input_schema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":"
     "\"integer\"}}}}],\"tool_choice\":{\"type\":\"tool\",\"name\":\"json_response\"}}"},

    {"response_format json_object: a free-form object",
     "{\"model\":\"r\",\"messages\":[{\"role\":\"user\",\"content\":\"JSON\"}],"
     "\"response_format\":{\"type\":\"json_object\"}}",
     false, 0,
     "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":4096,\"messages\":[{\"role\":\"user\","
     "\"content\":[{\"type\":\"text\",\"text\":\"JSON\"}]}],"
     "\"tools\":[{\"name\":\"json_response\",\"description\":\"Give the answer as this tool's "
     "input.\",\"input_schema\":{\"type\":\"object\"}}],"
     "\"tool_choice\":{\"type\":\"tool\",\"name\":\"json_response\"}}"},
};

static void build_goldens(void **state)
{
    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(build_rows); i++) {
        const struct build_row *r = &build_rows[i];
        struct fx f;
        struct prov_http h;
        char why[256];
        enum bsc_err err;

        fx_init(&f, r->max_output_tokens);
        http_init(&h);
        err = build(&f, r->req, r->stream, &h, why, sizeof(why));
        if (err)
            fail_msg("%s: build failed (%s): %s", r->name, bsc_err_str(err), why);
        assert_string_equal(h.method, "POST");
        assert_string_equal(h.url.p, "https://api.anthropic.com/v1/messages");
        expect_json(r->name, bsc_buf_str(&h.body), r->want);
        assert_string_equal(header_value(&h, "x-api-key"), "sk-ant-test");
        assert_string_equal(header_value(&h, "anthropic-version"), "2023-06-01");
        assert_string_equal(header_value(&h, "content-type"), "application/json");
        assert_string_equal(header_value(&h, "accept"),
                            r->stream ? "text/event-stream" : "application/json");
        assert_int_equal(header_count(&h, "authorization"), 0);
        http_cleanup(&h);
    }
}

struct refuse_row {
    const char *req;
    const char *why_has;
};

static const struct refuse_row refuse_rows[] = {
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":2}", "n must be 1"},
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\","
     "\"tool_calls\":[{\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"f\","
     "\"arguments\":\"{city\"}}]}]}",
     "messages[1].tool_calls[0].function.arguments is not a JSON object"},
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\","
     "\"tool_calls\":[{\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"f\","
     "\"arguments\":\"[1]\"}}]}]}",
     "arguments is not a JSON object"},
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\","
     "\"tool_calls\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]}]}",
     "id and function.name are required"},
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"logprobs\":true}", "logprobs"},
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_logprobs\":3}", "logprobs"},
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"logit_bias\":{\"50256\":-100}}",
     "logit_bias"},
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"modalities\":[\"text\",\"audio\"]}",
     "audio"},
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":\"custom\","
     "\"custom\":{\"name\":\"x\"}}]}",
     "tools[0]"},
    {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\",\"input_audio\":"
     "{\"data\":\"AA\",\"format\":\"wav\"}}]}]}",
     "input_audio"},
    {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":"
     "{\"url\":\"ftp://x/y.png\"}}]}]}",
     "image_url"},
    {"{\"messages\":[{\"role\":\"function\",\"name\":\"f\",\"content\":\"x\"}]}",
     "role \"function\""},
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":\"function\","
     "\"function\":{\"name\":\"f\"}}],\"tool_choice\":{\"type\":\"allowed_tools\","
     "\"allowed_tools\":{\"mode\":\"auto\",\"tools\":[]}}}",
     "tool_choice allowed_tools"},
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":[{\"type\":\"function\","
     "\"function\":{\"name\":\"f\"}}],\"response_format\":{\"type\":\"json_object\"}}",
     "response_format together with tools"},
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"functions\":[{\"name\":\"f\"}]}",
     "functions"},
    {"{\"messages\":[{\"role\":\"tool\",\"content\":\"x\"}]}", "tool_call_id"},
    {"{\"messages\":[{\"role\":\"system\",\"content\":\"only a system prompt\"}]}",
     "no user or assistant content"},
    {"{\"messages\":[{\"role\":\"system\",\"content\":[{\"type\":\"image_url\"}]},"
     "{\"role\":\"user\",\"content\":\"x\"}]}",
     "only text parts"},
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":0}",
     "max_tokens must be a positive integer"},
    {"{\"messages\":{}}", "messages must be an array"},
};

static void build_refusals(void **state)
{
    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(refuse_rows); i++) {
        struct fx f;
        struct prov_http h;
        char why[256];
        enum bsc_err err;

        fx_init(&f, 0);
        http_init(&h);
        err = build(&f, refuse_rows[i].req, false, &h, why, sizeof(why));
        if (err != BSC_EINVAL)
            fail_msg("row %zu: build gave %s, want EINVAL", i, bsc_err_str(err));
        if (!strstr(why, refuse_rows[i].why_has))
            fail_msg("row %zu: reason \"%s\" lacks \"%s\"", i, why, refuse_rows[i].why_has);
        http_cleanup(&h);
    }
}

/* A refusal quoting a client's value (an unknown role of two-byte characters) stays UTF-8
 * whichever byte the reason's buffer cuts it at. */
static void build_refusal_reason_cut(void **state)
{
    char role[121], req[512];

    (void)state;
    for (int i = 0; i < 60; i++)
        memcpy(role + 2 * i, "\xc3\xa9", 2);
    role[120] = '\0';
    snprintf(req, sizeof(req), "{\"messages\":[{\"role\":\"%s\",\"content\":\"x\"}]}", role);
    for (size_t len = 20; len < 90; len++) {
        struct fx f;
        struct prov_http h;
        char why[90];

        fx_init(&f, 0);
        http_init(&h);
        assert_int_equal(build(&f, req, false, &h, why, len), BSC_EINVAL);
        assert_non_null(strstr(why, "role"));
        if (!bsc_utf8_valid(why, strlen(why)))
            fail_msg("a %zu-byte reason is not UTF-8: %s", len, why);
        http_cleanup(&h);
    }
}

static void build_probes_and_headers(void **state)
{
    struct fx f;
    struct prov_http h;
    struct prov_call c;
    char why[128] = "";

    (void)state;
    fx_init(&f, 0);
    c = (struct prov_call){.op = PROV_OP_PROBE_MODELS, .provider = &f.prov, .target = &f.target,
                           .key = "sk-ant-probe"};
    http_init(&h);
    assert_int_equal(OPS->build(&c, &h, why, sizeof(why)), BSC_OK);
    assert_string_equal(h.method, "GET");
    assert_string_equal(h.url.p, "https://api.anthropic.com/v1/models");
    assert_string_equal(header_value(&h, "x-api-key"), "sk-ant-probe");
    assert_string_equal(header_value(&h, "anthropic-version"), "2023-06-01");
    assert_int_equal(header_count(&h, "content-type"), 0);
    assert_int_equal(h.body.len, 0);
    http_cleanup(&h);

    c.op = PROV_OP_PROBE_COMPLETION;
    http_init(&h);
    assert_int_equal(OPS->build(&c, &h, why, sizeof(why)), BSC_OK);
    assert_string_equal(h.method, "POST");
    assert_string_equal(h.url.p, "https://api.anthropic.com/v1/messages");
    expect_json("probe", bsc_buf_str(&h.body),
                "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":1,\"messages\":[{\"role\":"
                "\"user\",\"content\":\"ping\"}]}");
    http_cleanup(&h);

    c.op = PROV_OP_EMBEDDINGS;
    http_init(&h);
    assert_int_equal(OPS->build(&c, &h, why, sizeof(why)), BSC_EINVAL);
    assert_non_null(strstr(why, "embeddings"));
    http_cleanup(&h);

    /* A configured anthropic-version (and beta flags) replaces ours; no key, no x-api-key. */
    f.hdrs[0] = (struct cfg_header){(char *)"anthropic-version", (char *)"2024-01-01"};
    f.hdrs[1] = (struct cfg_header){(char *)"anthropic-beta", (char *)"x-2025"};
    f.prov.headers = f.hdrs;
    f.prov.n_headers = 2;
    c.op = PROV_OP_PROBE_MODELS;
    c.key = NULL;
    http_init(&h);
    assert_int_equal(OPS->build(&c, &h, why, sizeof(why)), BSC_OK);
    assert_int_equal(header_count(&h, "anthropic-version"), 1);
    assert_string_equal(header_value(&h, "anthropic-version"), "2024-01-01");
    assert_string_equal(header_value(&h, "anthropic-beta"), "x-2025");
    assert_int_equal(header_count(&h, "x-api-key"), 0);
    http_cleanup(&h);
}

/* ---- response goldens ---- */

/* map_response of <body> for a call whose request is <req_json>; compares the output
 * with <want> after zeroing "created". */
static void expect_map(const char *ctx, const char *req_json, const char *body,
                       const char *want, struct prov_usage *usage)
{
    struct fx f;
    struct json_object *req = parse(req_json), *got;
    struct prov_call c;
    struct bsc_buf out;
    struct fail_info fail;
    enum bsc_err err;

    fx_init(&f, 0);
    c = chat_call(&f, req, false);
    bsc_buf_init(&out, 1 << 20);
    err = OPS->map_response(&c, bsc_str_cstr(body), &out, usage, &fail);
    if (err)
        fail_msg("%s: map_response failed: %s (%s)", ctx, bsc_err_str(err), fail.message);
    got = prov_parse_json(bsc_buf_str(&out));
    assert_non_null(got);
    assert_true(json_object_get_int64(json_object_object_get(got, "created")) > 1600000000);
    json_object_object_add(got, "created", json_object_new_int(0));
    {
        const char *s = json_object_to_json_string_ext(got, JSON_C_TO_STRING_PLAIN);
        expect_json(ctx, bsc_str_cstr(s), want);
    }
    json_object_put(got);
    json_object_put(req);
    bsc_buf_cleanup(&out);
}

static const char *const plain_req = "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}";

static void map_text_tools_usage(void **state)
{
    struct prov_usage u;

    (void)state;
    expect_map("text + tool_use + thinking, cache usage", plain_req,
               "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":"
               "\"claude-x\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"hmm\","
               "\"signature\":\"s\"},{\"type\":\"text\",\"text\":\"Checking \xe2\x9c\x93.\"},"
               "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_weather\",\"input\":"
               "{\"city\":\"Oslo\"}}],\"stop_reason\":\"tool_use\",\"stop_sequence\":null,"
               "\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":100,"
               "\"cache_creation_input_tokens\":5,\"output_tokens\":20}}",
               "{\"id\":\"msg_1\",\"object\":\"chat.completion\",\"created\":0,\"model\":"
               "\"claude-x\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
               "\"content\":\"Checking \xe2\x9c\x93.\",\"refusal\":null,\"tool_calls\":[{\"id\":"
               "\"toolu_1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
               "\"arguments\":\"{\\\"city\\\":\\\"Oslo\\\"}\"}}]},\"logprobs\":null,"
               "\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":115,"
               "\"completion_tokens\":20,\"total_tokens\":135,\"prompt_tokens_details\":"
               "{\"cached_tokens\":100}}}",
               &u);
    assert_int_equal(u.input_tokens, 115);
    assert_int_equal(u.output_tokens, 20);
    assert_int_equal(u.cached_tokens, 100);

    expect_map("tool only: content null, two calls in order", plain_req,
               "{\"id\":\"msg_2\",\"type\":\"message\",\"model\":\"m\",\"content\":["
               "{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"a\",\"input\":{}},"
               "{\"type\":\"tool_use\",\"id\":\"t2\",\"name\":\"b\",\"input\":{\"k\":[1,2]}}],"
               "\"stop_reason\":\"tool_use\",\"usage\":{\"input_tokens\":3,\"output_tokens\":4}}",
               "{\"id\":\"msg_2\",\"object\":\"chat.completion\",\"created\":0,\"model\":\"m\","
               "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":null,"
               "\"refusal\":null,\"tool_calls\":[{\"id\":\"t1\",\"type\":\"function\",\"function\":"
               "{\"name\":\"a\",\"arguments\":\"{}\"}},{\"id\":\"t2\",\"type\":\"function\","
               "\"function\":{\"name\":\"b\",\"arguments\":\"{\\\"k\\\":[1,2]}\"}}]},"
               "\"logprobs\":null,\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":3,"
               "\"completion_tokens\":4,\"total_tokens\":7,\"prompt_tokens_details\":"
               "{\"cached_tokens\":0}}}",
               &u);

    expect_map("json mode: the forced tool's input is the content", 
               "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"response_format\":"
               "{\"type\":\"json_object\"}}",
               "{\"id\":\"msg_3\",\"model\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"Sure\"},"
               "{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"json_response\",\"input\":{\"a\":1}}],"
               "\"stop_reason\":\"tool_use\",\"usage\":{\"input_tokens\":1,\"output_tokens\":2}}",
               "{\"id\":\"msg_3\",\"object\":\"chat.completion\",\"created\":0,\"model\":\"m\","
               "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":"
               "\"{\\\"a\\\":1}\",\"refusal\":null},\"logprobs\":null,\"finish_reason\":\"stop\"}],"
               "\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2,\"total_tokens\":3,"
               "\"prompt_tokens_details\":{\"cached_tokens\":0}}}",
               &u);
}

static void map_stop_reasons(void **state)
{
    static const struct {
        const char *stop, *finish;
    } rows[] = {
        {"end_turn", "stop"},           {"stop_sequence", "stop"},
        {"max_tokens", "length"},       {"model_context_window_exceeded", "length"},
        {"refusal", "content_filter"},  {"pause_turn", "stop"},
        {"tool_use", "stop"}, /* no tool_use block: nothing to call */
        {"something_new", "stop"},
    };
    struct prov_usage u;

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        char body[512], want[1024];
        snprintf(body, sizeof(body),
                 "{\"id\":\"m\",\"model\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"t\"}],"
                 "\"stop_reason\":\"%s\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}",
                 rows[i].stop);
        snprintf(want, sizeof(want),
                 "{\"id\":\"m\",\"object\":\"chat.completion\",\"created\":0,\"model\":\"m\","
                 "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"t\","
                 "\"refusal\":null},\"logprobs\":null,\"finish_reason\":\"%s\"}],\"usage\":"
                 "{\"prompt_tokens\":1,\"completion_tokens\":1,\"total_tokens\":2,"
                 "\"prompt_tokens_details\":{\"cached_tokens\":0}}}",
                 rows[i].finish);
        expect_map(rows[i].stop, plain_req, body, want, &u);
    }
}

static void map_failures(void **state)
{
    static const struct {
        const char *body;
        enum fail_kind kind;
        const char *msg_has;
    } rows[] = {
        {"{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
         FAIL_OVERLOADED, "Overloaded"},
        {"not json at all", FAIL_SERVER_ERROR, "not a JSON object"},
        {"{\"id\":\"m\",\"type\":\"message\"}", FAIL_SERVER_ERROR, "no content"},
        {"[1,2]", FAIL_SERVER_ERROR, "not a JSON object"},
    };
    struct fx f;
    struct prov_call c;

    (void)state;
    fx_init(&f, 0);
    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        struct json_object *req = parse(plain_req);
        struct bsc_buf out;
        struct prov_usage u;
        struct fail_info fail;

        c = chat_call(&f, req, false);
        bsc_buf_init(&out, 4096);
        assert_int_equal(OPS->map_response(&c, bsc_str_cstr(rows[i].body), &out, &u, &fail),
                         BSC_EPARSE);
        if (fail.kind != rows[i].kind)
            fail_msg("row %zu: kind %s, want %s", i, fail_kind_name(fail.kind),
                     fail_kind_name(rows[i].kind));
        assert_non_null(strstr(fail.message, rows[i].msg_has));
        assert_int_equal(out.len, 0);
        bsc_buf_cleanup(&out);
        json_object_put(req);
    }
}

/* ---- error classification ---- */

struct cls_row {
    int status;
    const char *body, *retry_after;
    enum fail_kind kind;
    int64_t retry_after_ms;
    const char *type;
};

static const struct cls_row cls_rows[] = {
    {529, "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
     NULL, FAIL_OVERLOADED, -1, "overloaded_error"},
    {429, "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Number of "
          "request tokens has exceeded your per-minute rate limit\"},\"request_id\":\"req_1\"}",
     "7", FAIL_RATE_LIMITED, 7000, "rate_limit_error"},
    {400, "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":"
          "\"prompt is too long: 208656 tokens > 200000 maximum\"}}",
     NULL, FAIL_CONTEXT_OVERFLOW, -1, "invalid_request_error"},
    {400, "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"Your "
          "credit balance is too low to access the Anthropic API.\"}}",
     NULL, FAIL_QUOTA_EXHAUSTED, -1, "invalid_request_error"},
    {400, "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":"
          "\"messages: roles must alternate\"}}",
     NULL, FAIL_INVALID_REQUEST, -1, "invalid_request_error"},
    {401, "{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":"
          "\"invalid x-api-key\"}}",
     NULL, FAIL_AUTH, -1, "authentication_error"},
    {402, "{\"type\":\"error\",\"error\":{\"type\":\"billing_error\",\"message\":\"pay\"}}", NULL,
     FAIL_QUOTA_EXHAUSTED, -1, "billing_error"},
    {403, "{\"type\":\"error\",\"error\":{\"type\":\"permission_error\",\"message\":\"no\"}}",
     NULL, FAIL_PERMISSION, -1, "permission_error"},
    {404, "{\"type\":\"error\",\"error\":{\"type\":\"not_found_error\",\"message\":\"model: x\"}}",
     NULL, FAIL_NOT_FOUND, -1, "not_found_error"},
    {413, "{\"type\":\"error\",\"error\":{\"type\":\"request_too_large\",\"message\":\"big\"}}",
     NULL, FAIL_INVALID_REQUEST, -1, "request_too_large"},
    {500, "{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal\"}}", NULL,
     FAIL_SERVER_ERROR, -1, "api_error"},
    {504, "{\"type\":\"error\",\"error\":{\"type\":\"timeout_error\",\"message\":\"slow\"}}", NULL,
     FAIL_SERVER_ERROR, -1, "timeout_error"},
    {529, "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
     "2", FAIL_OVERLOADED, 2000, "overloaded_error"},
    /* A proxy's page or an empty body: the status alone. */
    {503, "<html><body>Service Unavailable</body></html>", NULL, FAIL_OVERLOADED, -1, ""},
    {502, "", NULL, FAIL_SERVER_ERROR, -1, ""},
    {429, "{\"message\":\"slow down\"}", "1.5", FAIL_RATE_LIMITED, 1500, ""},
    /* An unknown type falls back to the status. */
    {500, "{\"type\":\"error\",\"error\":{\"type\":\"brand_new_error\",\"message\":\"?\"}}", NULL,
     FAIL_SERVER_ERROR, -1, "brand_new_error"},
    /* 2xx: a normal answer, a non-JSON body (map_response judges it), an error in a 200. */
    {200, "{\"id\":\"msg\",\"type\":\"message\",\"content\":[]}", NULL, FAIL_NONE, -1, ""},
    {200, "garbage", NULL, FAIL_NONE, -1, ""},
    {200, "{\"type\":\"message\",\"error\":{\"type\":\"x\"},\"content\":[]}", NULL, FAIL_NONE,
     -1, ""},
    {200, "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
     NULL, FAIL_OVERLOADED, -1, "overloaded_error"},
    {200, "{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"boom\"}}", NULL,
     FAIL_SERVER_ERROR, -1, "api_error"},
};

static void classify_table(void **state)
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

        memset(&out, 0x5a, sizeof(out)); /* every field must be written */
        OPS->classify(&in, &out);
        if (out.kind != r->kind)
            fail_msg("row %zu (%d): kind %s, want %s", i, r->status, fail_kind_name(out.kind),
                     fail_kind_name(r->kind));
        if (out.retry_after_ms != r->retry_after_ms)
            fail_msg("row %zu: retry_after_ms %lld, want %lld", i, (long long)out.retry_after_ms,
                     (long long)r->retry_after_ms);
        assert_int_equal(out.status, r->status);
        if (r->kind != FAIL_NONE)
            assert_string_equal(out.type, r->type);
        assert_true(memchr(out.message, '\0', sizeof(out.message)) != NULL);
    }
}

/* ---- the client's own Messages request (prov_call.native) ---- */

static bool starts_with(const char *s, const char *prefix)
{
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

static const char native_body[] =
    "{\"top_k\":5,\"model\":\"route\",\"max_tokens\":9,\"thinking\":{\"type\":\"enabled\"},"
    "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

static struct prov_native native_of(const char *body)
{
    struct prov_native n = {.kind = CFG_PROV_ANTHROPIC, .body = bsc_str_cstr(body)};
    const char *m = strstr(body, "\"route\"");

    n.model_span = bsc_str_make(m, 7);
    n.version = BSC_STR("2026-10-21");
    n.beta = BSC_STR("threads-1");
    return n;
}

static void native_build_and_map(void **state)
{
    struct fx f;
    struct prov_http h;
    struct prov_native n = native_of(native_body);
    struct json_object *req = parse(plain_req);
    struct prov_call c;
    struct bsc_buf out;
    struct prov_usage u;
    struct fail_info fail;
    char why[256] = "";
    const char *answer = "{\"id\":\"msg_1\",\"type\":\"message\",\"model\":\"claude-sonnet-4-5\","
                         "\"content\":[{\"type\":\"thinking\",\"thinking\":\"t\"},"
                         "{\"type\":\"text\",\"text\":\"ok\"}],\"stop_reason\":\"end_turn\","
                         "\"usage\":{\"input_tokens\":7,\"output_tokens\":2}}";

    (void)state;
    fx_init(&f, 0);
    c = chat_call(&f, req, false);
    c.native = &n;
    http_init(&h);
    assert_int_equal(OPS->build(&c, &h, why, sizeof(why)), BSC_OK);
    assert_string_equal(h.url.p, "https://api.anthropic.com/v1/messages");
    assert_string_equal(h.body.p, "{\"top_k\":5,\"model\":\"claude-sonnet-4-5\",\"max_tokens\":9,"
                                  "\"thinking\":{\"type\":\"enabled\"},\"messages\":[{\"role\":"
                                  "\"user\",\"content\":\"hi\"}]}");
    assert_non_null(memmem(h.headers.p, h.headers.len, "anthropic-version: 2026-10-21", 29));
    assert_non_null(memmem(h.headers.p, h.headers.len, "anthropic-beta: threads-1", 25));
    http_cleanup(&h);

    /* A header value that could start a line of its own is not forwarded. */
    n.beta = bsc_str_make("a\0x-api-key: z", 15);
    http_init(&h);
    assert_int_equal(OPS->build(&c, &h, why, sizeof(why)), BSC_OK);
    assert_int_equal(header_count(&h, "anthropic-beta"), 0);
    http_cleanup(&h);

    /* The answer: the router's translation with the upstream's message beside it. */
    bsc_buf_init(&out, 1 << 20);
    assert_int_equal(OPS->map_response(&c, bsc_str_cstr(answer), &out, &u, &fail), BSC_OK);
    assert_int_equal(u.input_tokens, 7);
    assert_int_equal(u.output_tokens, 2);
    assert_true(starts_with(out.p, "{\"bascule_native\":"));
    assert_non_null(strstr(out.p, answer));
    assert_non_null(strstr(out.p, "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
                                  "\"content\":\"ok\""));
    bsc_buf_cleanup(&out);

    /* count_tokens: its own path, {"input_tokens"} carried, zero usage. */
    n.count_tokens = true;
    http_init(&h);
    assert_int_equal(OPS->build(&c, &h, why, sizeof(why)), BSC_OK);
    assert_string_equal(h.url.p, "https://api.anthropic.com/v1/messages/count_tokens");
    http_cleanup(&h);
    bsc_buf_init(&out, 1 << 20);
    assert_int_equal(OPS->map_response(&c, BSC_STR("{\"input_tokens\":12}"), &out, &u, &fail),
                     BSC_OK);
    assert_int_equal(u.input_tokens, 0);
    assert_true(starts_with(out.p, "{\"bascule_native\":{\"input_tokens\":12},"));
    bsc_buf_reset(&out);
    assert_int_equal(OPS->map_response(&c, BSC_STR("{}"), &out, &u, &fail), BSC_EPARSE);
    bsc_buf_cleanup(&out);
    json_object_put(req);
}

/* ---- streams ---- */

struct sbuf {
    struct bsc_buf out;
    struct fail_info fail;
    struct anth_stream_box {
        _Alignas(max_align_t) unsigned char bytes[1024];
    } st;
    enum prov_stream_status last;
};

static void s_init(struct sbuf *s, const char *req_json, bool include_usage)
{
    struct fx f;
    struct json_object *req = parse(req_json ? req_json : plain_req);
    struct prov_call c;

    fx_init(&f, 0);
    c = chat_call(&f, req, true);
    c.include_usage = include_usage;
    assert_true(OPS->stream_size <= sizeof(s->st.bytes));
    memset(s, 0, sizeof(*s));
    bsc_buf_init(&s->out, 1 << 20);
    OPS->stream_init(s->st.bytes, &c);
    json_object_put(req);
}

static enum prov_stream_status s_ev(struct sbuf *s, const char *event, const char *data)
{
    s->last = OPS->stream_event(s->st.bytes, bsc_str_cstr(event), bsc_str_cstr(data), &s->out,
                                &s->fail);
    return s->last;
}

static void s_cleanup(struct sbuf *s)
{
    OPS->stream_cleanup(s->st.bytes);
    bsc_buf_cleanup(&s->out);
}

/* Splits <out> into frames ("data: X\n\n"); returns how many, each payload NUL-terminated
 * into <frames> (static storage of the caller). */
static size_t frames_of(const struct bsc_buf *out, char frames[][2048], size_t max)
{
    size_t n = 0, off = 0;

    while (off < out->len) {
        const char *end = memmem(out->p + off, out->len - off, "\n\n", 2);
        size_t len;
        if (!end)
            fail_msg("an unterminated frame: %.*s", (int)(out->len - off), out->p + off);
        if (strncmp(out->p + off, "data: ", 6) != 0)
            fail_msg("a frame without data: %.*s", (int)(end - (out->p + off)), out->p + off);
        len = (size_t)(end - (out->p + off)) - 6;
        if (n >= max || len >= 2048)
            fail_msg("too many or too long frames");
        memcpy(frames[n], out->p + off + 6, len);
        frames[n][len] = '\0';
        n++;
        off = (size_t)(end - out->p) + 2;
    }
    return n;
}

/* Checks frame <got> against <want> with "created" zeroed ([DONE] compared as text). */
static void expect_frame(const char *ctx, size_t i, const char *got, const char *want)
{
    struct json_object *g;
    char label[128];

    snprintf(label, sizeof(label), "%s frame %zu", ctx, i);
    if (strcmp(want, "[DONE]") == 0 || strcmp(got, "[DONE]") == 0) {
        if (strcmp(got, want) != 0)
            fail_msg("%s: got %s, want %s", label, got, want);
        return;
    }
    g = prov_parse_json(bsc_str_cstr(got));
    if (!g)
        fail_msg("%s: not JSON: %s", label, got);
    assert_true(json_object_get_int64(json_object_object_get(g, "created")) > 1600000000);
    json_object_object_add(g, "created", json_object_new_int(0));
    expect_json(label, bsc_str_cstr(json_object_to_json_string_ext(g, JSON_C_TO_STRING_PLAIN)),
                want);
    json_object_put(g);
}

static void expect_frames(const char *ctx, const struct bsc_buf *out, const char *const *want,
                          size_t n_want)
{
    static char frames[64][2048];
    size_t n = frames_of(out, frames, 64);

    if (n != n_want)
        fail_msg("%s: %zu frames, want %zu:\n%.*s", ctx, n, n_want, (int)out->len,
                 out->p ? out->p : "");
    for (size_t i = 0; i < n; i++)
        expect_frame(ctx, i, frames[i], want[i]);
}

#define CHUNK(delta, finish)                                                               \
    "{\"id\":\"msg_1\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":"      \
    "\"claude-x\",\"choices\":[{\"index\":0,\"delta\":" delta ",\"logprobs\":null,"        \
    "\"finish_reason\":" finish "}]}"

#define MSG_START(usage)                                                                   \
    "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\","      \
    "\"role\":\"assistant\",\"content\":[],\"model\":\"claude-x\",\"stop_reason\":null,"   \
    "\"stop_sequence\":null,\"usage\":" usage "}}"
#define TEXT_START(i)                                                                      \
    "{\"type\":\"content_block_start\",\"index\":" #i ",\"content_block\":{\"type\":"      \
    "\"text\",\"text\":\"\"}}"
#define TEXT_DELTA(i, t)                                                                   \
    "{\"type\":\"content_block_delta\",\"index\":" #i ",\"delta\":{\"type\":\"text_delta\"," \
    "\"text\":\"" t "\"}}"
#define TOOL_START(i, id, name)                                                            \
    "{\"type\":\"content_block_start\",\"index\":" #i ",\"content_block\":{\"type\":"      \
    "\"tool_use\",\"id\":\"" id "\",\"name\":\"" name "\",\"input\":{}}}"
#define JSON_DELTA(i, j)                                                                   \
    "{\"type\":\"content_block_delta\",\"index\":" #i ",\"delta\":{\"type\":"              \
    "\"input_json_delta\",\"partial_json\":\"" j "\"}}"
#define BLOCK_STOP(i) "{\"type\":\"content_block_stop\",\"index\":" #i "}"
#define MSG_DELTA(stop, out)                                                               \
    "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"" stop "\",\"stop_sequence\":" \
    "null},\"usage\":{\"output_tokens\":" #out "}}"
#define MSG_STOP "{\"type\":\"message_stop\"}"

/* Native events are held until the first content, then go out whole, followed by the
 * translated shadows; an error before content leaves nothing sent. */
static void native_stream(void **state)
{
    struct fx f;
    struct prov_native n = native_of(native_body);
    struct json_object *req = parse(plain_req);
    struct prov_call c;
    struct sbuf s;

    (void)state;
    fx_init(&f, 0);
    c = chat_call(&f, req, true);
    c.native = &n;
    c.include_usage = true;
    memset(&s, 0, sizeof(s));
    bsc_buf_init(&s.out, 1 << 20);
    OPS->stream_init(s.st.bytes, &c);
    assert_int_equal(s_ev(&s, "message_start", "{\"type\":\"message_start\",\"message\":{\"id\":"
                                               "\"msg_1\",\"usage\":{\"input_tokens\":7}}}"),
                     PROV_STREAM_MORE);
    assert_int_equal(s_ev(&s, "content_block_start", "{\"type\":\"content_block_start\","
                                                     "\"index\":0,\"content_block\":{\"type\":"
                                                     "\"text\",\"text\":\"\"}}"),
                     PROV_STREAM_MORE);
    assert_int_equal(s_ev(&s, "ping", "{\"type\":\"ping\"}"), PROV_STREAM_MORE);
    assert_int_equal(s.out.len, 0); /* held: nothing before the first content */
    assert_int_equal(s_ev(&s, "content_block_delta",
                          "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
                          "\"text_delta\",\"text\":\"Hi\"}}"),
                     PROV_STREAM_MORE);
    assert_true(starts_with(s.out.p, "data: {\"bascule_native\":\"message_start\","
                                     "\"choices\":[],\"data\":{\"type\":"
                                 "\"message_start\""));
    assert_non_null(strstr(s.out.p, "data: {\"bascule_native\":\"ping\",\"choices\":[],"
                                    "\"data\":{\"type\":\"ping\"}}\n\n"));
    assert_non_null(strstr(s.out.p, "data: {\"bascule_shadow\":1,"));
    assert_non_null(strstr(s.out.p, "\"content\":\"Hi\""));
    bsc_buf_reset(&s.out);
    assert_int_equal(s_ev(&s, "message_stop", "{\"type\":\"message_stop\"}"), PROV_STREAM_DONE);
    assert_true(starts_with(s.out.p, "data: {\"bascule_native\":\"message_stop\","));
    assert_null(strstr(s.out.p, "[DONE]"));
    s_cleanup(&s);

    /* An error event before any content: nothing went out, the router may fail over. */
    memset(&s, 0, sizeof(s));
    bsc_buf_init(&s.out, 1 << 20);
    OPS->stream_init(s.st.bytes, &c);
    s_ev(&s, "message_start", "{\"type\":\"message_start\",\"message\":{}}");
    assert_int_equal(s_ev(&s, "error", "{\"type\":\"error\",\"error\":{\"type\":"
                                       "\"overloaded_error\",\"message\":\"busy\"}}"),
                     PROV_STREAM_ERROR);
    assert_int_equal(s.out.len, 0);
    assert_int_equal(s.fail.kind, FAIL_OVERLOADED);
    s_cleanup(&s);
    json_object_put(req);
}

static void stream_text_with_usage(void **state)
{
    static const char *const want[] = {
        CHUNK("{\"role\":\"assistant\",\"content\":\"Hel\"}", "null"),
        CHUNK("{\"content\":\"lo \xe2\x9c\x93\"}", "null"),
        CHUNK("{}", "\"stop\""),
        "{\"id\":\"msg_1\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":"
        "\"claude-x\",\"choices\":[],\"usage\":{\"prompt_tokens\":30,\"completion_tokens\":7,"
        "\"total_tokens\":37,\"prompt_tokens_details\":{\"cached_tokens\":5}}}",
        "[DONE]",
    };
    struct sbuf s;
    struct prov_usage u;

    (void)state;
    s_init(&s, NULL, true);
    assert_int_equal(s_ev(&s, "message_start",
                          MSG_START("{\"input_tokens\":25,\"cache_read_input_tokens\":5,"
                                    "\"cache_creation_input_tokens\":0,\"output_tokens\":1}")),
                     PROV_STREAM_MORE);
    assert_int_equal(s.out.len, 0); /* the role waits for content */
    assert_int_equal(s_ev(&s, "content_block_start", TEXT_START(0)), PROV_STREAM_MORE);
    assert_int_equal(s_ev(&s, "ping", "{\"type\": \"ping\"}"), PROV_STREAM_MORE);
    assert_int_equal(s.out.len, 0);
    assert_int_equal(s_ev(&s, "content_block_delta", TEXT_DELTA(0, "Hel")), PROV_STREAM_MORE);
    assert_int_equal(s_ev(&s, "content_block_delta", TEXT_DELTA(0, "lo \xe2\x9c\x93")),
                     PROV_STREAM_MORE);
    assert_int_equal(s_ev(&s, "content_block_stop", BLOCK_STOP(0)), PROV_STREAM_MORE);
    assert_int_equal(s_ev(&s, "message_delta", MSG_DELTA("end_turn", 7)), PROV_STREAM_MORE);
    assert_int_equal(s_ev(&s, "future_event", "{\"type\":\"future_event\",\"x\":1}"),
                     PROV_STREAM_MORE);
    assert_int_equal(s_ev(&s, "message_stop", MSG_STOP), PROV_STREAM_DONE);
    expect_frames("text", &s.out, want, BSC_ARRAY_LEN(want));
    OPS->stream_usage(s.st.bytes, &u);
    assert_int_equal(u.input_tokens, 30);
    assert_int_equal(u.output_tokens, 7);
    assert_int_equal(u.cached_tokens, 5);
    /* After the end nothing more is emitted, and EOF is a clean end. */
    bsc_buf_reset(&s.out);
    assert_int_equal(s_ev(&s, "ping", "{\"type\":\"ping\"}"), PROV_STREAM_DONE);
    assert_int_equal(OPS->stream_end(s.st.bytes, &s.out, &s.fail), PROV_STREAM_DONE);
    assert_int_equal(s.out.len, 0);
    s_cleanup(&s);
}

static void stream_tools_dense_index(void **state)
{
    static const char *const want[] = {
        CHUNK("{\"role\":\"assistant\",\"content\":\"Checking.\"}", "null"),
        CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"toolu_A\",\"type\":\"function\","
              "\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}]}",
              "null"),
        CHUNK("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"city\\\":\"}}]}",
              "null"),
        CHUNK("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"Oslo\\\"}\"}}]}",
              "null"),
        CHUNK("{\"tool_calls\":[{\"index\":1,\"id\":\"toolu_B\",\"type\":\"function\","
              "\"function\":{\"name\":\"get_time\",\"arguments\":\"\"}}]}",
              "null"),
        CHUNK("{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"{}\"}}]}", "null"),
        CHUNK("{}", "\"tool_calls\""),
        "[DONE]",
    };
    struct sbuf s;

    (void)state;
    s_init(&s, NULL, false);
    s_ev(&s, "message_start", MSG_START("{\"input_tokens\":5,\"output_tokens\":1}"));
    s_ev(&s, "content_block_start", TEXT_START(0));
    s_ev(&s, "content_block_delta", TEXT_DELTA(0, "Checking."));
    s_ev(&s, "content_block_stop", BLOCK_STOP(0));
    s_ev(&s, "content_block_start", TOOL_START(1, "toolu_A", "get_weather"));
    s_ev(&s, "content_block_delta", JSON_DELTA(1, ""));
    s_ev(&s, "content_block_delta", JSON_DELTA(1, "{\\\"city\\\":"));
    s_ev(&s, "content_block_delta", JSON_DELTA(1, "\\\"Oslo\\\"}"));
    s_ev(&s, "content_block_stop", BLOCK_STOP(1));
    /* thinking between tool blocks is dropped and does not shift the indexes */
    s_ev(&s, "content_block_start", "{\"type\":\"content_block_start\",\"index\":2,"
                                    "\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}");
    s_ev(&s, "content_block_delta", "{\"type\":\"content_block_delta\",\"index\":2,\"delta\":"
                                    "{\"type\":\"thinking_delta\",\"thinking\":\"hmm\"}}");
    s_ev(&s, "content_block_delta", "{\"type\":\"content_block_delta\",\"index\":2,\"delta\":"
                                    "{\"type\":\"signature_delta\",\"signature\":\"sig\"}}");
    s_ev(&s, "content_block_stop", BLOCK_STOP(2));
    s_ev(&s, "content_block_start", TOOL_START(3, "toolu_B", "get_time"));
    s_ev(&s, "content_block_delta", JSON_DELTA(3, "{}"));
    s_ev(&s, "content_block_stop", BLOCK_STOP(3));
    s_ev(&s, "message_delta", MSG_DELTA("tool_use", 30));
    assert_int_equal(s_ev(&s, "message_stop", MSG_STOP), PROV_STREAM_DONE);
    expect_frames("tools", &s.out, want, BSC_ARRAY_LEN(want));
    s_cleanup(&s);
}

static void stream_tool_first_and_json_mode(void **state)
{
    static const char *const want_tool[] = {
        CHUNK("{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":"
              "\"t\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}",
              "null"),
        CHUNK("{}", "\"tool_calls\""),
        "[DONE]",
    };
    static const char *const want_json[] = {
        CHUNK("{\"role\":\"assistant\",\"content\":\"{\\\"a\\\":\"}", "null"),
        CHUNK("{\"content\":\"1}\"}", "null"),
        CHUNK("{}", "\"stop\""),
        "[DONE]",
    };
    static const char *const want_empty[] = {
        CHUNK("{\"role\":\"assistant\",\"content\":\"\"}", "null"),
        CHUNK("{}", "\"length\""),
        "[DONE]",
    };
    struct sbuf s;

    (void)state;
    s_init(&s, NULL, false);
    s_ev(&s, "message_start", MSG_START("{\"input_tokens\":5,\"output_tokens\":1}"));
    s_ev(&s, "content_block_start", TOOL_START(0, "t", "f"));
    s_ev(&s, "content_block_stop", BLOCK_STOP(0));
    s_ev(&s, "message_delta", MSG_DELTA("tool_use", 3));
    assert_int_equal(s_ev(&s, "message_stop", MSG_STOP), PROV_STREAM_DONE);
    expect_frames("tool first", &s.out, want_tool, BSC_ARRAY_LEN(want_tool));
    s_cleanup(&s);

    s_init(&s, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"response_format\":"
               "{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"n\",\"schema\":{}}}}",
           false);
    s_ev(&s, "message_start", MSG_START("{\"input_tokens\":5,\"output_tokens\":1}"));
    s_ev(&s, "content_block_start", TEXT_START(0));
    s_ev(&s, "content_block_delta", TEXT_DELTA(0, "dropped preamble"));
    s_ev(&s, "content_block_stop", BLOCK_STOP(0));
    s_ev(&s, "content_block_start", TOOL_START(1, "t", "json_response"));
    s_ev(&s, "content_block_delta", JSON_DELTA(1, "{\\\"a\\\":"));
    s_ev(&s, "content_block_delta", JSON_DELTA(1, "1}"));
    s_ev(&s, "content_block_stop", BLOCK_STOP(1));
    s_ev(&s, "message_delta", MSG_DELTA("tool_use", 3));
    assert_int_equal(s_ev(&s, "message_stop", MSG_STOP), PROV_STREAM_DONE);
    expect_frames("json mode", &s.out, want_json, BSC_ARRAY_LEN(want_json));
    s_cleanup(&s);

    s_init(&s, NULL, false);
    s_ev(&s, "message_start", MSG_START("{\"input_tokens\":5,\"output_tokens\":1}"));
    s_ev(&s, "message_delta", MSG_DELTA("max_tokens", 0));
    assert_int_equal(s_ev(&s, "message_stop", MSG_STOP), PROV_STREAM_DONE);
    expect_frames("empty", &s.out, want_empty, BSC_ARRAY_LEN(want_empty));
    s_cleanup(&s);
}

static void stream_errors(void **state)
{
    static const struct {
        const char *type;
        enum fail_kind kind;
    } types[] = {
        {"overloaded_error", FAIL_OVERLOADED},     {"rate_limit_error", FAIL_RATE_LIMITED},
        {"api_error", FAIL_SERVER_ERROR},          {"invalid_request_error", FAIL_INVALID_REQUEST},
        {"authentication_error", FAIL_AUTH},       {"permission_error", FAIL_PERMISSION},
        {"not_found_error", FAIL_NOT_FOUND},       {"billing_error", FAIL_QUOTA_EXHAUSTED},
        {"timeout_error", FAIL_SERVER_ERROR},      {"request_too_large", FAIL_INVALID_REQUEST},
        {"never_heard_of_it", FAIL_UNKNOWN},
    };
    struct sbuf s;
    char data[256];

    (void)state;
    /* Before any content: nothing was emitted, so the router may still fail over. */
    for (size_t i = 0; i < BSC_ARRAY_LEN(types); i++) {
        s_init(&s, NULL, true);
        s_ev(&s, "message_start", MSG_START("{\"input_tokens\":5,\"output_tokens\":1}"));
        s_ev(&s, "ping", "{\"type\":\"ping\"}");
        snprintf(data, sizeof(data),
                 "{\"type\":\"error\",\"error\":{\"type\":\"%s\",\"message\":\"Bad thing\"}}",
                 types[i].type);
        assert_int_equal(s_ev(&s, "error", data), PROV_STREAM_ERROR);
        if (s.fail.kind != types[i].kind)
            fail_msg("%s: kind %s", types[i].type, fail_kind_name(s.fail.kind));
        assert_string_equal(s.fail.type, types[i].type);
        assert_string_equal(s.fail.message, "Bad thing");
        assert_int_equal(s.out.len, 0);
        s_cleanup(&s);
    }
    /* After content: the frames so far stay, the error is reported with its kind. */
    s_init(&s, NULL, false);
    s_ev(&s, "message_start", MSG_START("{\"input_tokens\":5,\"output_tokens\":1}"));
    s_ev(&s, "content_block_start", TEXT_START(0));
    s_ev(&s, "content_block_delta", TEXT_DELTA(0, "Hi"));
    assert_true(s.out.len > 0);
    assert_int_equal(s_ev(&s, "error", "{\"type\":\"error\",\"error\":{\"type\":"
                                       "\"overloaded_error\",\"message\":\"Overloaded\"}}"),
                     PROV_STREAM_ERROR);
    assert_int_equal(s.fail.kind, FAIL_OVERLOADED);
    s_cleanup(&s);
    /* An error event whose data lacks a type is still an error (the event name says so). */
    s_init(&s, NULL, false);
    assert_int_equal(s_ev(&s, "error", "{\"error\":{\"type\":\"api_error\",\"message\":\"x\"}}"),
                     PROV_STREAM_ERROR);
    assert_int_equal(s.fail.kind, FAIL_SERVER_ERROR);
    s_cleanup(&s);
    /* A data line that is not JSON. */
    s_init(&s, NULL, false);
    assert_int_equal(s_ev(&s, "content_block_delta", "{\"type\":\"content_block_delta\",\"ind"),
                     PROV_STREAM_ERROR);
    assert_int_equal(s.fail.kind, FAIL_SERVER_ERROR);
    s_cleanup(&s);
    /* EOF without message_stop: partial after content, server_error before it. */
    s_init(&s, NULL, false);
    s_ev(&s, "message_start", MSG_START("{\"input_tokens\":5,\"output_tokens\":1}"));
    assert_int_equal(OPS->stream_end(s.st.bytes, &s.out, &s.fail), PROV_STREAM_ERROR);
    assert_int_equal(s.fail.kind, FAIL_SERVER_ERROR);
    s_ev(&s, "content_block_start", TEXT_START(0));
    s_ev(&s, "content_block_delta", TEXT_DELTA(0, "Hi"));
    s_ev(&s, "message_delta", MSG_DELTA("end_turn", 1));
    assert_int_equal(OPS->stream_end(s.st.bytes, &s.out, &s.fail), PROV_STREAM_ERROR);
    assert_int_equal(s.fail.kind, FAIL_PARTIAL_OUTPUT);
    assert_non_null(strstr(s.fail.message, "message_stop"));
    s_cleanup(&s);
}

/* Every frame's content (or arguments) must be valid UTF-8; returns their concatenation. */
static void collect_text(const struct bsc_buf *out, struct bsc_buf *text, bool args)
{
    static char frames[64][2048];
    size_t n = frames_of(out, frames, 64);

    for (size_t i = 0; i < n; i++) {
        struct json_object *f, *ch, *d, *v;
        if (strcmp(frames[i], "[DONE]") == 0)
            continue;
        f = prov_parse_json(bsc_str_cstr(frames[i]));
        assert_non_null(f);
        ch = json_object_array_get_idx(json_object_object_get(f, "choices"), 0);
        d = json_object_object_get(ch, "delta");
        v = json_object_object_get(d, "content");
        if (args) {
            struct json_object *calls = json_object_object_get(d, "tool_calls");
            v = json_object_is_type(calls, json_type_array)
                    ? json_object_object_get(
                          json_object_object_get(json_object_array_get_idx(calls, 0), "function"),
                          "arguments")
                    : NULL;
        }
        if (v && json_object_get_string_len(v)) {
            if (!bsc_utf8_valid(json_object_get_string(v), (size_t)json_object_get_string_len(v)))
                fail_msg("frame %zu splits a character: %s", i, frames[i]);
            bsc_buf_append(text, json_object_get_string(v), (size_t)json_object_get_string_len(v));
        }
        json_object_put(f);
    }
}

/* Feeds <text> as text_delta (or input_json_delta) events split at <a> and <b>. */
static void feed_split(const char *text, size_t a, size_t b, bool args, struct bsc_buf *got)
{
    size_t len = strlen(text), cuts[] = {0, a, b, len};
    struct sbuf s;
    char data[512];

    s_init(&s, NULL, false);
    s_ev(&s, "message_start", MSG_START("{\"input_tokens\":5,\"output_tokens\":1}"));
    s_ev(&s, "content_block_start", args ? TOOL_START(0, "t", "f") : TEXT_START(0));
    for (size_t k = 0; k + 1 < BSC_ARRAY_LEN(cuts); k++) {
        int n = (int)(cuts[k + 1] - cuts[k]);
        if (args)
            snprintf(data, sizeof(data), JSON_DELTA(0, "%.*s"), n, text + cuts[k]);
        else
            snprintf(data, sizeof(data), TEXT_DELTA(0, "%.*s"), n, text + cuts[k]);
        assert_int_equal(s_ev(&s, "content_block_delta", data), PROV_STREAM_MORE);
    }
    s_ev(&s, "content_block_stop", BLOCK_STOP(0));
    s_ev(&s, "message_delta", MSG_DELTA("end_turn", 3));
    assert_int_equal(s_ev(&s, "message_stop", MSG_STOP), PROV_STREAM_DONE);
    bsc_buf_reset(got);
    collect_text(&s.out, got, args);
    s_cleanup(&s);
}

static void stream_utf8_every_split(void **state)
{
    /* 1-, 2-, 3- and 4-byte characters back to back. */
    static const char text[] = "a\xc3\xa9\xe2\x9c\x93\xf0\x9f\x9a\x80z\xc3\xb6";
    size_t len = strlen(text);
    struct bsc_buf got;

    (void)state;
    bsc_buf_init(&got, 4096);
    for (int args = 0; args <= 1; args++) {
        for (size_t a = 0; a <= len; a++) {
            for (size_t b = a; b <= len; b++) {
                feed_split(text, a, b, args, &got);
                if (got.len != len || memcmp(got.p, text, len) != 0)
                    fail_msg("split %zu/%zu (%s): got \"%.*s\"", a, b, args ? "args" : "text",
                             (int)got.len, got.p);
            }
        }
    }
    bsc_buf_cleanup(&got);
}

static void stream_utf8_invalid_and_dangling(void **state)
{
    struct sbuf s;
    struct bsc_buf got;

    (void)state;
    bsc_buf_init(&got, 4096);
    s_init(&s, NULL, false);
    s_ev(&s, "message_start", MSG_START("{\"input_tokens\":5,\"output_tokens\":1}"));
    s_ev(&s, "content_block_start", TEXT_START(0));
    s_ev(&s, "content_block_delta", TEXT_DELTA(0, "a\xff" "b\xe2\x9c"));
    s_ev(&s, "content_block_stop", BLOCK_STOP(0)); /* the held tail can no longer complete */
    s_ev(&s, "message_delta", MSG_DELTA("end_turn", 3));
    assert_int_equal(s_ev(&s, "message_stop", MSG_STOP), PROV_STREAM_DONE);
    collect_text(&s.out, &got, false);
    assert_int_equal(got.len, strlen("a\xef\xbf\xbd" "b\xef\xbf\xbd"));
    assert_memory_equal(got.p, "a\xef\xbf\xbd" "b\xef\xbf\xbd", got.len);
    s_cleanup(&s);
    bsc_buf_cleanup(&got);
}

/* ---- the sim's Anthropic dialect ---- */

struct hdr {
    const char *name, *value;
};

struct hdrs {
    struct hdr h[8];
    size_t n;
};

static struct bsc_str hdr_get(const void *ctx, struct bsc_str name)
{
    const struct hdrs *hs = ctx;

    for (size_t i = 0; i < hs->n; i++)
        if (bsc_str_ieq(bsc_str_cstr(hs->h[i].name), name))
            return bsc_str_cstr(hs->h[i].value);
    return bsc_str_make(NULL, 0);
}

static const struct hdrs good_hdrs = {
    {{"x-api-key", "sk-ant-test"}, {"anthropic-version", "2023-06-01"}}, 2};

static struct sim_in sim_in_for(const struct hdrs *hs, const char *method, const char *path,
                                const char *body)
{
    return (struct sim_in){bsc_str_cstr(method), bsc_str_cstr(path), BSC_STR(""),
                           bsc_str_cstr(body), hdr_get, hs};
}

static void sim_routes_and_auth(void **state)
{
    static const struct hdrs none = {{{"authorization", "Bearer sk-x"}}, 1};
    static const struct hdrs badkey = {{{"x-api-key", "sk-sim-bad-2"}}, 1};
    enum sim_ep ep;
    struct sim_reject rej = {0};
    struct sim_in in;

    (void)state;
    assert_ptr_equal(sim_dialect_route(BSC_STR("POST"), BSC_STR("/v1/messages"), &ep),
                     &sim_dialect_anthropic);
    assert_int_equal(ep, SIM_EP_CHAT);
    assert_ptr_equal(sim_dialect_route(BSC_STR("POST"), BSC_STR("/anthropic/v1/messages"), &ep),
                     &sim_dialect_anthropic);
    assert_ptr_equal(sim_dialect_route(BSC_STR("GET"), BSC_STR("/anthropic/v1/models"), &ep),
                     &sim_dialect_anthropic);
    assert_int_equal(ep, SIM_EP_MODELS);
    assert_ptr_equal(sim_dialect_route(BSC_STR("GET"), BSC_STR("/anthropic/v1/models/c-1"), &ep),
                     &sim_dialect_anthropic);
    assert_int_equal(ep, SIM_EP_MODEL);
    /* GET /v1/models stays the OpenAI dialect's; chat completions too. */
    assert_ptr_equal(sim_dialect_route(BSC_STR("GET"), BSC_STR("/v1/models"), &ep),
                     &sim_dialect_openai);
    assert_int_equal(ant_route(BSC_STR("POST"), BSC_STR("/v1/chat/completions")), SIM_EP_NONE);
    assert_int_equal(ant_route(BSC_STR("GET"), BSC_STR("/v1/messages")), SIM_EP_NONE);

    in = sim_in_for(&none, "POST", "/v1/messages", "{}");
    assert_false(ant_authorize(&in, &rej));
    assert_int_equal(rej.status, 401);
    assert_string_equal(rej.type, "authentication_error");
    in = sim_in_for(&badkey, "POST", "/v1/messages", "{}");
    assert_false(ant_authorize(&in, &rej));
    assert_string_equal(rej.message, "invalid x-api-key");
    in = sim_in_for(&good_hdrs, "POST", "/v1/messages", "{}");
    assert_true(ant_authorize(&in, &rej));
}

struct sim_bad_row {
    const char *body;
    const char *msg_has;
};

static const struct sim_bad_row sim_bad_rows[] = {
    {"not json", "not valid JSON"},
    {"{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", "model"},
    {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
     "max_tokens: Field required"},
    {"{\"model\":\"m\",\"max_tokens\":5,\"n\":1,\"messages\":[{\"role\":\"user\",\"content\":"
     "\"x\"}]}",
     "n: Extra inputs are not permitted"},
    {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"system\",\"content\":\"x\"}]}",
     "role"},
    {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[]}", "at least one message"},
    {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"\"}]}",
     "non-empty"},
    {"{\"model\":\"m\",\"max_tokens\":5,\"temperature\":1.5,\"messages\":[{\"role\":\"user\","
     "\"content\":\"x\"}]}",
     "temperature"},
    {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"},"
     "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"f\","
     "\"input\":{}}]},{\"role\":\"user\",\"content\":\"y\"}]}",
     "`tool_use` ids were found without `tool_result` blocks immediately after: t1"},
    {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"},"
     "{\"role\":\"assistant\",\"content\":\"ok\"},{\"role\":\"user\",\"content\":[{\"type\":"
     "\"tool_result\",\"tool_use_id\":\"t9\",\"content\":\"r\"}]}]}",
     "unexpected `tool_use_id`"},
    {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"},"
     "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"f\","
     "\"input\":{}}]},{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"first\"},"
     "{\"type\":\"tool_result\",\"tool_use_id\":\"t1\"}]}]}",
     "tool_result blocks must come before other content"},
    {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
     "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]}",
     "tools.0.name"},
    {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
     "\"tools\":[{\"name\":\"f\",\"parameters\":{}}]}",
     "input_schema"},
    {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
     "\"tools\":[{\"name\":\"f\",\"input_schema\":{}}],\"tool_choice\":{\"type\":\"required\"}}",
     "tool_choice.type"},
    {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
     "\"tools\":[{\"name\":\"f\",\"input_schema\":{}}],\"tool_choice\":{\"type\":\"tool\","
     "\"name\":\"g\"}}",
     "tool_choice.name"},
    {"{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
     "\"image\",\"source\":{\"type\":\"base64\",\"data\":\"AA\"}}]}]}",
     "media_type"},
    {"{\"model\":\"m\",\"max_tokens\":5,\"metadata\":{\"user\":\"u\"},\"messages\":[{\"role\":"
     "\"user\",\"content\":\"x\"}]}",
     "metadata.user"},
};

static void sim_validation(void **state)
{
    static const struct hdrs nover = {{{"x-api-key", "k"}}, 1};

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(sim_bad_rows); i++) {
        struct sim_in in = sim_in_for(&good_hdrs, "POST", "/v1/messages", sim_bad_rows[i].body);
        struct sim_call call = {0};
        struct sim_reject rej = {0};

        if (ant_parse(SIM_EP_CHAT, &in, &call, &rej))
            fail_msg("row %zu accepted", i);
        assert_int_equal(rej.status, 400);
        assert_string_equal(rej.type, "invalid_request_error");
        if (!strstr(rej.message, sim_bad_rows[i].msg_has))
            fail_msg("row %zu: \"%s\" lacks \"%s\"", i, rej.message, sim_bad_rows[i].msg_has);
        sim_call_cleanup(&call);
    }
    {
        struct sim_in in = sim_in_for(&nover, "POST", "/v1/messages",
                                      "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":"
                                      "\"user\",\"content\":\"x\"}]}");
        struct sim_call call = {0};
        struct sim_reject rej = {0};
        assert_false(ant_parse(SIM_EP_CHAT, &in, &call, &rej));
        assert_string_equal(rej.message, "anthropic-version: header is required");
        assert_string_equal(call.model, "m"); /* known early, for the request log */
        sim_call_cleanup(&call);
    }
}

/* Splits an Anthropic SSE rendering into (event, data) and feeds the adapter. */
static enum prov_stream_status feed_sse(struct sbuf *s, struct bsc_str sse)
{
    enum prov_stream_status st = PROV_STREAM_MORE;

    while (sse.len) {
        const char *end = memmem(sse.p, sse.len, "\n\n", 2), *nl;
        char ev[64] = "", data[4096];
        size_t len;
        assert_non_null(end);
        len = (size_t)(end - sse.p);
        nl = memchr(sse.p, '\n', len);
        if (strncmp(sse.p, "event: ", 7) == 0 && nl) {
            snprintf(ev, sizeof(ev), "%.*s", (int)(nl - sse.p - 7), sse.p + 7);
            assert_int_equal(strncmp(nl + 1, "data: ", 6), 0);
            snprintf(data, sizeof(data), "%.*s", (int)(end - (nl + 7)), nl + 7);
        } else {
            assert_int_equal(strncmp(sse.p, "data: ", 6), 0);
            snprintf(data, sizeof(data), "%.*s", (int)(len - 6), sse.p + 6);
        }
        st = s_ev(s, ev, data);
        sse.p = end + 2;
        sse.len -= len + 2;
    }
    return st;
}

/* The adapter's request for <openai_req>, parsed by the sim; renders the sim's answer
 * (body and stream) and maps it back. */
static void round_trip(const char *ctx, const char *openai_req, const char *want_content,
                       const char *want_tool, const char *want_finish)
{
    struct fx f;
    struct prov_http h;
    char why[256];
    struct sim_call call = {0};
    struct sim_reject rej = {0};
    struct sim_in in;
    struct bsc_buf body, out, text;
    struct json_object *req = parse(openai_req), *res, *msg;
    struct prov_call pc;
    struct prov_usage u;
    struct fail_info fail;
    struct sbuf s;

    fx_init(&f, 0);
    http_init(&h);
    pc = chat_call(&f, req, false);
    assert_int_equal(OPS->build(&pc, &h, why, sizeof(why)), BSC_OK);
    in = sim_in_for(&good_hdrs, "POST", "/v1/messages", h.body.p);
    if (!ant_parse(SIM_EP_CHAT, &in, &call, &rej))
        fail_msg("%s: the sim refused the adapter's request: %s\n%s", ctx, rej.message, h.body.p);
    sim_call_settle(&call, 0, 42, 1700000000);
    bsc_buf_init(&body, 1 << 20);
    assert_int_equal(ant_body(&call, &body), BSC_OK);
    bsc_buf_init(&out, 1 << 20);
    assert_int_equal(OPS->map_response(&pc, bsc_buf_str(&body), &out, &u, &fail), BSC_OK);
    res = prov_parse_json(bsc_buf_str(&out));
    msg = json_object_object_get(json_object_array_get_idx(json_object_object_get(res, "choices"),
                                                            0),
                                 "message");
    if (want_content)
        assert_string_equal(json_object_get_string(json_object_object_get(msg, "content")),
                            want_content);
    if (want_tool) {
        struct json_object *tc = json_object_array_get_idx(
            json_object_object_get(msg, "tool_calls"), 0);
        assert_string_equal(json_object_get_string(json_object_object_get(
                                json_object_object_get(tc, "function"), "name")),
                            want_tool);
        assert_string_equal(json_object_get_string(json_object_object_get(tc, "id")),
                            "toolu_sim_42");
    }
    assert_string_equal(json_object_get_string(json_object_object_get(
                            json_object_array_get_idx(json_object_object_get(res, "choices"), 0),
                            "finish_reason")),
                        want_finish);
    assert_int_equal(u.input_tokens, call.prompt_tokens);
    json_object_put(res);

    /* The same answer streamed: every event through the adapter, text equal. */
    bsc_buf_reset(&body);
    for (size_t i = 0; i < ant_event_count(&call); i++)
        assert_int_equal(ant_event(&call, i, &body), BSC_OK);
    assert_int_equal(ant_end_event(&call, &body), BSC_OK);
    s_init(&s, openai_req, true);
    assert_int_equal(feed_sse(&s, bsc_buf_str(&body)), PROV_STREAM_DONE);
    bsc_buf_init(&text, 1 << 16);
    collect_text(&s.out, &text, false);
    if (want_content)
        assert_string_equal(text.p ? text.p : "", want_content);
    {
        char needle[64];
        snprintf(needle, sizeof(needle), "\"finish_reason\":\"%s\"", want_finish);
        if (!strstr(s.out.p, needle))
            fail_msg("%s: the stream lacks %s:\n%s", ctx, needle, s.out.p);
    }
    assert_non_null(strstr(s.out.p, "data: [DONE]\n\n"));
    s_cleanup(&s);

    bsc_buf_cleanup(&text);
    bsc_buf_cleanup(&out);
    bsc_buf_cleanup(&body);
    sim_call_cleanup(&call);
    json_object_put(req);
    http_cleanup(&h);
}

static void sim_and_adapter_agree(void **state)
{
    char tool_round[2048];

    (void)state;
    round_trip("plain", "{\"messages\":[{\"role\":\"system\",\"content\":\"S\"},{\"role\":"
                        "\"user\",\"content\":\"Hi\"}],\"max_tokens\":100}",
               "Hello h\xc3\xa9llo w\xc3\xb6rld! This is bascule-sim \xe2\x9c\x93 streaming "
               "\xf0\x9f\x9a\x80 tokens",
               NULL, "stop");
    round_trip("capped", "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],"
                         "\"max_completion_tokens\":3}",
               "Hello h\xc3\xa9llo w\xc3\xb6rld", NULL, "length");
    round_trip("tool call", "{\"messages\":[{\"role\":\"user\",\"content\":\"Weather in Oslo?\"}],"
                            "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":"
                            "\"get_weather\",\"parameters\":{\"type\":\"object\"}}}]}",
               "Let me call get_weather.", "get_weather", "tool_calls");
    /* The second turn: the tool result goes back as a tool_result block; text answer. */
    snprintf(tool_round, sizeof(tool_round),
             "{\"messages\":[{\"role\":\"user\",\"content\":\"Weather in Oslo?\"},"
             "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"toolu_sim_42\","
             "\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":"
             "\"{\\\"echo\\\":\\\"Weather in Oslo?\\\"}\"}}]},"
             "{\"role\":\"tool\",\"tool_call_id\":\"toolu_sim_42\",\"content\":\"4 C\"}],"
             "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}}],"
             "\"tool_choice\":\"auto\",\"parallel_tool_calls\":false,\"temperature\":1.7,"
             "\"stop\":[\"###\"],\"user\":\"u\"}");
    round_trip("tool result", tool_round, NULL, NULL, "stop");
    round_trip("json mode", "{\"messages\":[{\"role\":\"user\",\"content\":\"JSON\"}],"
                            "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":"
                            "{\"name\":\"x\",\"schema\":{\"type\":\"object\"}}}}",
               "{\"echo\":\"JSON\"}", NULL, "stop");
}

static void sim_errors_and_models(void **state)
{
    static const struct {
        int status;
        const char *type;
        enum fail_kind kind;
    } rows[] = {
        {400, "invalid_request_error", FAIL_INVALID_REQUEST},
        {401, "authentication_error", FAIL_AUTH},
        {402, "billing_error", FAIL_QUOTA_EXHAUSTED},
        {403, "permission_error", FAIL_PERMISSION},
        {404, "not_found_error", FAIL_NOT_FOUND},
        {413, "request_too_large", FAIL_INVALID_REQUEST},
        {429, "rate_limit_error", FAIL_RATE_LIMITED},
        {500, "api_error", FAIL_SERVER_ERROR},
        {503, "overloaded_error", FAIL_OVERLOADED},
        {504, "timeout_error", FAIL_SERVER_ERROR},
        {529, "overloaded_error", FAIL_OVERLOADED},
    };
    struct sim_call call = {.model = (char *)"claude-x", .ep = SIM_EP_MODELS};
    static const char *const names[] = {"a", "b"};
    struct bsc_buf b;

    (void)state;
    bsc_buf_init(&b, 1 << 16);
    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        const char *type, *code;
        char msg[256];
        struct prov_err_input in = {.status = rows[i].status};
        struct fail_info fi;
        struct sbuf s;

        ant_default_error(&call, rows[i].status, &type, &code, msg, sizeof(msg));
        assert_string_equal(type, rows[i].type);
        assert_null(code);
        bsc_buf_reset(&b);
        assert_int_equal(ant_error_body(rows[i].status, type, code, msg, &b), BSC_OK);
        in.body = bsc_buf_str(&b);
        OPS->classify(&in, &fi);
        if (fi.kind != rows[i].kind)
            fail_msg("%d: the adapter reads the sim's error as %s", rows[i].status,
                     fail_kind_name(fi.kind));
        /* The in-band form of the same error. */
        bsc_buf_reset(&b);
        assert_int_equal(ant_error_event(200, type, code, msg, &b), BSC_OK);
        assert_int_equal(strncmp(b.p, "event: error\ndata: {\"type\":\"error\"", 34), 0);
        s_init(&s, NULL, false);
        assert_int_equal(feed_sse(&s, bsc_buf_str(&b)), PROV_STREAM_ERROR);
        assert_int_equal(s.fail.kind, rows[i].kind);
        s_cleanup(&s);
    }
    bsc_buf_reset(&b);
    assert_int_equal(ant_models(&call, names, 2, &b), BSC_OK);
    expect_json("models", bsc_buf_str(&b),
                "{\"data\":[{\"type\":\"model\",\"id\":\"a\",\"display_name\":\"a\",\"created_at\":"
                "\"2025-01-01T00:00:00Z\"},{\"type\":\"model\",\"id\":\"b\",\"display_name\":\"b\","
                "\"created_at\":\"2025-01-01T00:00:00Z\"}],\"has_more\":false,\"first_id\":\"a\","
                "\"last_id\":\"b\"}");
    call.ep = SIM_EP_MODEL;
    bsc_buf_reset(&b);
    assert_int_equal(ant_models(&call, names, 2, &b), BSC_OK);
    expect_json("model", bsc_buf_str(&b),
                "{\"type\":\"model\",\"id\":\"claude-x\",\"display_name\":\"claude-x\","
                "\"created_at\":\"2025-01-01T00:00:00Z\"}");
    /* The malformed renderings really are malformed. */
    call.seq = 3;
    bsc_buf_reset(&b);
    assert_int_equal(ant_malformed_body(&call, &b), BSC_OK);
    assert_null(prov_parse_json(bsc_buf_str(&b)));
    bsc_buf_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(build_goldens),
        cmocka_unit_test(build_refusals),
        cmocka_unit_test(build_refusal_reason_cut),
        cmocka_unit_test(build_probes_and_headers),
        cmocka_unit_test(map_text_tools_usage),
        cmocka_unit_test(map_stop_reasons),
        cmocka_unit_test(map_failures),
        cmocka_unit_test(classify_table),
        cmocka_unit_test(native_build_and_map),
        cmocka_unit_test(native_stream),
        cmocka_unit_test(stream_text_with_usage),
        cmocka_unit_test(stream_tools_dense_index),
        cmocka_unit_test(stream_tool_first_and_json_mode),
        cmocka_unit_test(stream_errors),
        cmocka_unit_test(stream_utf8_every_split),
        cmocka_unit_test(stream_utf8_invalid_and_dangling),
        cmocka_unit_test(sim_routes_and_auth),
        cmocka_unit_test(sim_validation),
        cmocka_unit_test(sim_and_adapter_agree),
        cmocka_unit_test(sim_errors_and_models),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
