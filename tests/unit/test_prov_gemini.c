/* SPDX-License-Identifier: MIT */
/* test_prov_gemini.c -- the Gemini adapter (providers/gemini*.c) and bascule-sim's Gemini
 * dialect. Golden translations written from the documented formats (docs/providers.md §3):
 * OpenAI request -> generateContent / embedContent requests, GenerateContentResponse ->
 * chat.completion, event sequences -> chunk frames (every split position of multi-byte
 * text), the error classification table (statuses, errors in 200 bodies, error events and
 * bare JSON errors in streams). Then the two halves against each other: requests the
 * adapter builds must pass the sim's validation, and what the sim answers must translate
 * back (the sim comes from libsim.a, the dialect through its ops table). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "content.h"
#include "dialect.h"

#include "providers/gemini.h"
#include "providers/provider.h"
#include "header_lines.h"
#include "fail/taxonomy.h"
#include "stream/utf8.h"

extern const struct prov_ops prov_gemini;
extern const struct sim_dialect sim_dialect_gemini; /* sim/dialect_gemini.c */

#define OPS (&prov_gemini)
/* The thought signature bascule-sim puts on its function calls (sim/dialect_gemini.c). */
#define SIM_SIGNATURE "YmFzY3VsZS1zaW0gdGhvdWdodCBzaWduYXR1cmU="
#define BASE "https://generativelanguage.googleapis.com/v1beta"

/* The sim's cleanup, and the call reset for the next use. */
static void sim_call_free(struct sim_call *call)
{
    sim_call_cleanup(call);
    memset(call, 0, sizeof(*call));
}

/* ---- fixtures ---- */

struct fx {
    struct cfg_header hdr;
    struct cfg_provider prov;
    struct cfg_target target;
};

static void fx_init(struct fx *f, const char *model)
{
    memset(f, 0, sizeof(*f));
    f->hdr.name = (char *)"x-extra";
    f->hdr.value = (char *)"1";
    f->prov.id = (char *)"google";
    f->prov.kind = CFG_PROV_GEMINI;
    f->prov.base_url = (char *)BASE;
    f->prov.headers = &f->hdr;
    f->prov.n_headers = 1;
    f->target.id = (char *)"gem@google";
    f->target.provider = &f->prov;
    f->target.model = (char *)model;
}

static struct json_object *parse(const char *s)
{
    struct json_object *o = prov_parse_json(bsc_str_cstr(s));

    if (!o)
        fail_msg("fixture is not JSON: %s", s);
    return o;
}

static struct prov_call call_of(const struct fx *f, enum prov_op op, struct json_object *req,
                                bool stream)
{
    return (struct prov_call){.op = op,
                              .provider = &f->prov,
                              .target = &f->target,
                              .key = "AIza-test",
                              .req = req,
                              .stream = stream,
                              .request_id = NULL};
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

static void expect_json(const char *ctx, struct bsc_str got, const char *want)
{
    struct json_object *g = prov_parse_json(got), *w = parse(want);

    if (!g || !json_object_equal(g, w))
        fail_msg("%s:\n got  %.*s\n want %s", ctx, (int)got.len, got.p ? got.p : "", want);
    json_object_put(g);
    json_object_put(w);
}

/* Builds <req_json> as <op> for <model>; returns the error, the reason in <why>. */
static enum bsc_err build(const char *model, enum prov_op op, const char *req_json, bool stream,
                          struct prov_http *h, char *why, size_t why_len)
{
    struct fx f;
    struct json_object *req = req_json ? parse(req_json) : NULL;
    struct prov_call c;
    enum bsc_err err;

    fx_init(&f, model);
    c = call_of(&f, op, req, stream);
    why[0] = '\0';
    err = OPS->build(&c, h, why, why_len);
    json_object_put(req);
    return err;
}

/* ---- request goldens ---- */

struct build_row {
    const char *name;
    const char *model;
    const char *req;
    const char *want; /* the Gemini body */
};

static const struct build_row build_rows[] = {
    {"plain: system+developer joined, generation config, image inline, dropped fields",
     "gemini-2.5-flash",
     "{\"model\":\"alias\",\"messages\":["
     "{\"role\":\"system\",\"content\":\"Be brief.\"},"
     "{\"role\":\"developer\",\"content\":[{\"type\":\"text\",\"text\":\"Use metric.\"}]},"
     "{\"role\":\"user\",\"content\":\"Weather in Oslo?\",\"name\":\"ann\"},"
     "{\"role\":\"assistant\",\"content\":\"Checking.\"},"
     "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Now!\"},"
     "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,iVBORw0KGgo=\","
     "\"detail\":\"low\"}}]}],"
     "\"max_completion_tokens\":256,\"max_tokens\":10,\"temperature\":0.5,\"top_p\":0.9,"
     "\"stop\":\"###\",\"n\":2,\"seed\":7,\"presence_penalty\":0.1,\"frequency_penalty\":0.2,"
     "\"user\":\"u-1\",\"metadata\":{\"a\":\"b\"},\"reasoning_effort\":\"low\",\"store\":false,"
     "\"logprobs\":false,\"stream_options\":{\"include_usage\":true}}",
     "{\"systemInstruction\":{\"parts\":[{\"text\":\"Be brief.\"},{\"text\":\"Use metric.\"}]},"
     "\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"Weather in Oslo?\"}]},"
     "{\"role\":\"model\",\"parts\":[{\"text\":\"Checking.\"}]},"
     "{\"role\":\"user\",\"parts\":[{\"text\":\"Now!\"},{\"inlineData\":{\"mimeType\":"
     "\"image/png\",\"data\":\"iVBORw0KGgo=\"}}]}],"
     "\"generationConfig\":{\"maxOutputTokens\":256,\"candidateCount\":2,\"temperature\":0.5,"
     "\"topP\":0.9,\"presencePenalty\":0.1,\"frequencyPenalty\":0.2,\"seed\":7,"
     "\"stopSequences\":[\"###\"]}}"},

    {"tool round trip on Gemini 3: calls, signatures, responses, merged turns",
     "gemini-3-pro-preview",
     "{\"messages\":["
     "{\"role\":\"user\",\"content\":\"Weather in Oslo and Rome?\"},"
     "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
     "{\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
     "\"arguments\":\"{\\\"city\\\":\\\"Oslo\\\"}\"},"
     "\"extra_content\":{\"google\":{\"thought_signature\":\"c2lnLUE=\"}}},"
     "{\"id\":\"call_b\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
     "\"arguments\":\"{\\\"city\\\":\\\"Rome\\\"}\"}}]},"
     "{\"role\":\"tool\",\"tool_call_id\":\"call_a\",\"content\":\"{\\\"temp_c\\\":4}\"},"
     "{\"role\":\"tool\",\"tool_call_id\":\"call_b\",\"content\":\"sunny\"},"
     "{\"role\":\"user\",\"content\":\"Thanks. And the time?\"},"
     "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"call_c\",\"type\":\"function\","
     "\"function\":{\"name\":\"get_time\",\"arguments\":\"\"}}]},"
     "{\"role\":\"tool\",\"tool_call_id\":\"call_c\",\"content\":[{\"type\":\"text\","
     "\"text\":\"[1,2]\"}]}],"
     "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":"
     "\"Weather now\",\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":"
     "\"string\"}},\"required\":[\"city\"],\"additionalProperties\":false},\"strict\":true}},"
     "{\"type\":\"function\",\"function\":{\"name\":\"get_time\"}}],"
     "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}},"
     "\"parallel_tool_calls\":false}",
     "{\"contents\":["
     "{\"role\":\"user\",\"parts\":[{\"text\":\"Weather in Oslo and Rome?\"}]},"
     "{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"get_weather\",\"args\":"
     "{\"city\":\"Oslo\"}},\"thoughtSignature\":\"c2lnLUE=\"},{\"functionCall\":{\"name\":"
     "\"get_weather\",\"args\":{\"city\":\"Rome\"}}}]},"
     "{\"role\":\"user\",\"parts\":[{\"functionResponse\":{\"name\":\"get_weather\",\"response\":"
     "{\"temp_c\":4}}},{\"functionResponse\":{\"name\":\"get_weather\",\"response\":{\"content\":"
     "\"sunny\"}}},{\"text\":\"Thanks. And the time?\"}]},"
     "{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"get_time\",\"args\":{}},"
     "\"thoughtSignature\":\"skip_thought_signature_validator\"}]},"
     "{\"role\":\"user\",\"parts\":[{\"functionResponse\":{\"name\":\"get_time\",\"response\":"
     "{\"content\":[1,2]}}}]}],"
     "\"tools\":[{\"functionDeclarations\":[{\"name\":\"get_weather\",\"description\":"
     "\"Weather now\",\"parametersJsonSchema\":{\"type\":\"object\",\"properties\":{\"city\":"
     "{\"type\":\"string\"}},\"required\":[\"city\"],\"additionalProperties\":false}},"
     "{\"name\":\"get_time\"}]}],"
     "\"toolConfig\":{\"functionCallingConfig\":{\"mode\":\"ANY\",\"allowedFunctionNames\":"
     "[\"get_weather\"]}}}"},

    {"Gemini 2.5: no placeholder signature; Portkey-style signature field read",
     "models/gemini-2.5-flash",
     "{\"messages\":[{\"role\":\"user\",\"content\":\"t?\"},"
     "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"x\",\"type\":\"function\",\"function\":"
     "{\"name\":\"a\",\"arguments\":\"{}\"}},{\"id\":\"y\",\"function\":{\"name\":\"b\","
     "\"arguments\":{\"k\":1},\"thought_signature\":\"c2ln\"}}]},"
     "{\"role\":\"tool\",\"tool_call_id\":\"x\",\"content\":\"1\"},"
     "{\"role\":\"tool\",\"tool_call_id\":\"y\",\"content\":\"not json\"}],"
     "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"a\"}},"
     "{\"type\":\"function\",\"function\":{\"name\":\"b\"}}],\"tool_choice\":\"auto\"}",
     "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"t?\"}]},"
     "{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"a\",\"args\":{}}},"
     "{\"functionCall\":{\"name\":\"b\",\"args\":{\"k\":1}},\"thoughtSignature\":\"c2ln\"}]},"
     "{\"role\":\"user\",\"parts\":[{\"functionResponse\":{\"name\":\"a\",\"response\":"
     "{\"content\":\"1\"}}},{\"functionResponse\":{\"name\":\"b\",\"response\":{\"content\":"
     "\"not json\"}}}]}],"
     "\"tools\":[{\"functionDeclarations\":[{\"name\":\"a\"},{\"name\":\"b\"}]}],"
     "\"toolConfig\":{\"functionCallingConfig\":{\"mode\":\"AUTO\"}}}"},

    {"tool_choice none; tools without tool_choice get no toolConfig when absent",
     "gemini-2.5-flash",
     "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[{\"type\":\"function\","
     "\"function\":{\"name\":\"a\"}}],\"tool_choice\":\"none\"}",
     "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}],\"tools\":["
     "{\"functionDeclarations\":[{\"name\":\"a\"}]}],\"toolConfig\":{\"functionCallingConfig\":"
     "{\"mode\":\"NONE\"}}}"},

    {"tool_choice required", "gemini-2.5-flash",
     "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[{\"type\":\"function\","
     "\"function\":{\"name\":\"a\"}}],\"tool_choice\":\"required\"}",
     "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}],\"tools\":["
     "{\"functionDeclarations\":[{\"name\":\"a\"}]}],\"toolConfig\":{\"functionCallingConfig\":"
     "{\"mode\":\"ANY\"}}}"},

    {"tool_choice allowed_tools filters the declarations", "gemini-2.5-flash",
     "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[{\"type\":\"function\","
     "\"function\":{\"name\":\"a\"}},{\"type\":\"function\",\"function\":{\"name\":\"b\"}}],"
     "\"tool_choice\":{\"type\":\"allowed_tools\",\"allowed_tools\":{\"mode\":\"required\","
     "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"b\"}}]}}}",
     "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}],\"tools\":["
     "{\"functionDeclarations\":[{\"name\":\"b\"}]}],\"toolConfig\":{\"functionCallingConfig\":"
     "{\"mode\":\"ANY\"}}}"},

    {"tools, no tool_choice: no toolConfig", "gemini-2.5-flash",
     "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":[{\"type\":\"function\","
     "\"function\":{\"name\":\"a\",\"description\":\"\"}}]}",
     "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}],\"tools\":["
     "{\"functionDeclarations\":[{\"name\":\"a\"}]}]}"},

    {"response_format json_schema -> responseJsonSchema", "gemini-2.5-flash",
     "{\"messages\":[{\"role\":\"user\",\"content\":\"json\"}],\"response_format\":{\"type\":"
     "\"json_schema\",\"json_schema\":{\"name\":\"w\",\"strict\":true,\"schema\":{\"type\":"
     "\"object\",\"properties\":{\"t\":{\"type\":\"number\"}},\"required\":[\"t\"],"
     "\"additionalProperties\":false}}},\"temperature\":1}",
     "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"json\"}]}],\"generationConfig\":"
     "{\"temperature\":1,\"responseMimeType\":\"application/json\",\"responseJsonSchema\":{"
     "\"type\":\"object\",\"properties\":{\"t\":{\"type\":\"number\"}},\"required\":[\"t\"],"
     "\"additionalProperties\":false}}}"},

    {"response_format json_object; stop as an array", "gemini-2.5-flash",
     "{\"messages\":[{\"role\":\"user\",\"content\":\"json\"}],\"response_format\":{\"type\":"
     "\"json_object\"},\"stop\":[\"a\",\"b\"]}",
     "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"json\"}]}],\"generationConfig\":"
     "{\"stopSequences\":[\"a\",\"b\"],\"responseMimeType\":\"application/json\"}}"},

    {"response_format text, empty texts dropped, audio and PDF inline", "gemini-2.5-flash",
     "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"\"},"
     "{\"type\":\"input_audio\",\"input_audio\":{\"data\":\"UklGRg==\",\"format\":\"wav\"}},"
     "{\"type\":\"file\",\"file\":{\"file_data\":\"JVBERi0=\",\"filename\":\"a.pdf\"}},"
     "{\"type\":\"file\",\"file\":{\"file_data\":\"data:text/plain;base64,aGk=\"}}]},"
     "{\"role\":\"assistant\",\"content\":\"\"},"
     "{\"role\":\"assistant\",\"content\":[{\"type\":\"refusal\",\"refusal\":\"No.\"}]}],"
     "\"response_format\":{\"type\":\"text\"}}",
     "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"inlineData\":{\"mimeType\":\"audio/wav\","
     "\"data\":\"UklGRg==\"}},{\"inlineData\":{\"mimeType\":\"application/pdf\",\"data\":"
     "\"JVBERi0=\"}},{\"inlineData\":{\"mimeType\":\"text/plain\",\"data\":\"aGk=\"}}]},"
     "{\"role\":\"model\",\"parts\":[{\"text\":\"No.\"}]}]}"},
};

static void request_goldens(void **state)
{
    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(build_rows); i++) {
        const struct build_row *r = &build_rows[i];
        struct prov_http h;
        char why[256];
        enum bsc_err err;

        http_init(&h);
        err = build(r->model, PROV_OP_CHAT, r->req, false, &h, why, sizeof(why));
        if (err)
            fail_msg("%s: build failed: %s (%s)", r->name, bsc_err_str(err), why);
        expect_json(r->name, bsc_buf_str(&h.body), r->want);
        http_cleanup(&h);
    }
}

static void request_url_and_headers(void **state)
{
    struct prov_http h;
    char why[256];
    const char *req = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

    (void)state;
    http_init(&h);
    assert_int_equal(build("gemini-2.5-flash", PROV_OP_CHAT, req, false, &h, why, sizeof(why)),
                     BSC_OK);
    assert_string_equal(h.method, "POST");
    assert_string_equal(h.url.p, BASE "/models/gemini-2.5-flash:generateContent");
    assert_string_equal(header_value(&h, "x-goog-api-key"), "AIza-test");
    assert_string_equal(header_value(&h, "Content-Type"), "application/json");
    assert_string_equal(header_value(&h, "Accept"), "application/json");
    assert_string_equal(header_value(&h, "x-extra"), "1");
    assert_null(header_value(&h, "Authorization"));
    http_cleanup(&h);

    http_init(&h);
    assert_int_equal(build("gemini-2.5-flash", PROV_OP_CHAT, req, true, &h, why, sizeof(why)),
                     BSC_OK);
    assert_string_equal(h.url.p, BASE "/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
    assert_string_equal(header_value(&h, "Accept"), "text/event-stream");
    http_cleanup(&h);

    /* A collection path is kept; odd bytes are percent-encoded; models/ is not doubled. */
    http_init(&h);
    assert_int_equal(build("tunedModels/my model+1", PROV_OP_CHAT, req, false, &h, why,
                           sizeof(why)), BSC_OK);
    assert_string_equal(h.url.p, BASE "/tunedModels/my%20model%2B1:generateContent");
    http_cleanup(&h);
    http_init(&h);
    assert_int_equal(build("models/gemini-x", PROV_OP_CHAT, req, false, &h, why, sizeof(why)),
                     BSC_OK);
    assert_string_equal(h.url.p, BASE "/models/gemini-x:generateContent");
    http_cleanup(&h);
}

static void request_probes(void **state)
{
    struct prov_http h;
    char why[256];

    (void)state;
    http_init(&h);
    assert_int_equal(build("gemini-2.5-flash", PROV_OP_PROBE_MODELS, NULL, false, &h, why,
                           sizeof(why)), BSC_OK);
    assert_string_equal(h.method, "GET");
    assert_string_equal(h.url.p, BASE "/models");
    assert_int_equal(h.body.len, 0);
    assert_null(header_value(&h, "Content-Type"));
    assert_string_equal(header_value(&h, "x-goog-api-key"), "AIza-test");
    http_cleanup(&h);

    http_init(&h);
    assert_int_equal(build("gemini-2.5-flash", PROV_OP_PROBE_COMPLETION, NULL, false, &h, why,
                           sizeof(why)), BSC_OK);
    assert_string_equal(h.method, "POST");
    assert_string_equal(h.url.p, BASE "/models/gemini-2.5-flash:generateContent");
    expect_json("probe", bsc_buf_str(&h.body),
                "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"ping\"}]}],"
                "\"generationConfig\":{\"maxOutputTokens\":1}}");
    http_cleanup(&h);
}

struct embed_row {
    const char *req;
    const char *url_suffix;
    const char *want;
};

static const struct embed_row embed_rows[] = {
    {"{\"model\":\"e\",\"input\":\"hello\",\"dimensions\":256,\"encoding_format\":\"float\"}",
     ":embedContent",
     "{\"content\":{\"parts\":[{\"text\":\"hello\"}]},\"outputDimensionality\":256}"},
    {"{\"model\":\"e\",\"input\":[\"only\"]}", ":embedContent",
     "{\"content\":{\"parts\":[{\"text\":\"only\"}]}}"},
    {"{\"model\":\"e\",\"input\":[\"a\",\"b\"],\"user\":\"u\"}", ":batchEmbedContents",
     "{\"requests\":[{\"model\":\"models/text-embedding-004\",\"content\":{\"parts\":[{\"text\":"
     "\"a\"}]}},{\"model\":\"models/text-embedding-004\",\"content\":{\"parts\":[{\"text\":"
     "\"b\"}]}}]}"},
};

static void request_embeddings(void **state)
{
    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(embed_rows); i++) {
        struct prov_http h;
        char why[256], url[256];

        http_init(&h);
        assert_int_equal(build("text-embedding-004", PROV_OP_EMBEDDINGS, embed_rows[i].req, false,
                               &h, why, sizeof(why)), BSC_OK);
        snprintf(url, sizeof(url), BASE "/models/text-embedding-004%s", embed_rows[i].url_suffix);
        assert_string_equal(h.url.p, url);
        assert_null(header_value(&h, "Accept"));
        expect_json(embed_rows[i].req, bsc_buf_str(&h.body), embed_rows[i].want);
        http_cleanup(&h);
    }
}

struct refuse_row {
    const char *req;
    const char *why_has;
    enum prov_op op;
};

#define U "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"
static const struct refuse_row refuse_rows[] = {
    {"{" U ",\"n\":9}", "n from 1 to 8", PROV_OP_CHAT},
    {"{" U ",\"logprobs\":true}", "logprobs", PROV_OP_CHAT},
    {"{" U ",\"logit_bias\":{\"50256\":-100}}", "logit_bias", PROV_OP_CHAT},
    {"{" U ",\"tools\":[{\"type\":\"custom\",\"custom\":{\"name\":\"x\"}}]}",
     "tools of type \"custom\"", PROV_OP_CHAT},
    {"{" U ",\"modalities\":[\"text\",\"audio\"]}", "audio output", PROV_OP_CHAT},
    {"{" U ",\"audio\":{\"voice\":\"alloy\"}}", "audio cannot", PROV_OP_CHAT},
    {"{" U ",\"web_search_options\":{}}", "web_search_options", PROV_OP_CHAT},
    {"{" U ",\"functions\":[{\"name\":\"f\"}]}", "functions cannot", PROV_OP_CHAT},
    {"{" U ",\"tool_choice\":\"bogus\",\"tools\":[{\"type\":\"function\",\"function\":"
     "{\"name\":\"a\"}}]}", "is not known", PROV_OP_CHAT},
    {"{" U ",\"tool_choice\":{\"type\":\"allowed_tools\",\"allowed_tools\":{\"mode\":\"auto\","
     "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"zzz\"}}]}},\"tools\":"
     "[{\"type\":\"function\",\"function\":{\"name\":\"a\"}}]}", "names none", PROV_OP_CHAT},
    {"{" U ",\"response_format\":{\"type\":\"xml\"}}", "response_format of type", PROV_OP_CHAT},
    {"{" U ",\"stop\":5}", "stop must be", PROV_OP_CHAT},
    {"{" U ",\"max_tokens\":0}", "positive integer", PROV_OP_CHAT},
    {"{" U ",\"temperature\":\"hot\"}", "temperature must be a number", PROV_OP_CHAT},
    {"{\"messages\":[]}", "non-empty", PROV_OP_CHAT},
    {"{\"messages\":[{\"role\":\"system\",\"content\":\"only\"}]}", "no user or assistant",
     PROV_OP_CHAT},
    {"{\"messages\":[{\"role\":\"function\",\"name\":\"f\",\"content\":\"x\"}]}",
     "role \"function\"", PROV_OP_CHAT},
    {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":"
     "{\"url\":\"https://example.com/cat.png\"}}]}]}", "data: URLs", PROV_OP_CHAT},
    {"{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"file\",\"file\":{\"file_id\":"
     "\"file-1\"}}]}]}", "file ids", PROV_OP_CHAT},
    {"{\"messages\":[{\"role\":\"system\",\"content\":[{\"type\":\"image_url\"}]}]}",
     "text parts only", PROV_OP_CHAT},
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"tool\",\"tool_call_id\":"
     "\"nope\",\"content\":\"x\"}]}", "matches no earlier", PROV_OP_CHAT},
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"tool\",\"content\":\"x\"}]}",
     "needs a tool_call_id", PROV_OP_CHAT},
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"tool_calls\":"
     "[{\"id\":\"a\",\"type\":\"function\",\"function\":{\"name\":\"f\","
     "\"arguments\":\"{oops\"}}]}]}",
     "not a JSON object", PROV_OP_CHAT},
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"tool_calls\":"
     "[{\"id\":\"a\",\"type\":\"function\",\"function\":{\"name\":\"f\","
     "\"arguments\":\"[1]\"}}]}]}",
     "not a JSON object", PROV_OP_CHAT},
    {"{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"tool_calls\":"
     "[{\"id\":\"a\",\"type\":\"custom\",\"custom\":{\"name\":\"f\"}}]}]}", "of type \"custom\"",
     PROV_OP_CHAT},
    {"{\"input\":[1,2,3]}", "token-id inputs", PROV_OP_EMBEDDINGS},
    {"{\"input\":[]}", "non-empty array", PROV_OP_EMBEDDINGS},
    {"{\"input\":7}", "non-empty array", PROV_OP_EMBEDDINGS},
};
#undef U

static void request_refusals(void **state)
{
    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(refuse_rows); i++) {
        struct prov_http h;
        char why[256];
        enum bsc_err err;

        http_init(&h);
        err = build("gemini-2.5-flash", refuse_rows[i].op, refuse_rows[i].req, false, &h, why,
                    sizeof(why));
        if (err != BSC_EINVAL)
            fail_msg("%s: got %s, want EINVAL", refuse_rows[i].req, bsc_err_str(err));
        if (!strstr(why, refuse_rows[i].why_has))
            fail_msg("%s: reason \"%s\" lacks \"%s\"", refuse_rows[i].req, why,
                     refuse_rows[i].why_has);
        http_cleanup(&h);
    }
}

static void request_helpers(void **state)
{
    struct bsc_str mime, data;

    (void)state;
    assert_true(prov__gem_data_url(BSC_STR("data:image/jpeg;name=a;base64,/9j/"), &mime, &data));
    assert_true(bsc_str_eq(mime, BSC_STR("image/jpeg")));
    assert_true(bsc_str_eq(data, BSC_STR("/9j/")));
    assert_false(prov__gem_data_url(BSC_STR("data:image/png,plain"), &mime, &data));
    assert_false(prov__gem_data_url(BSC_STR("data:;base64,AAAA"), &mime, &data));
    assert_false(prov__gem_data_url(BSC_STR("data:image/png;base64,"), &mime, &data));
    assert_false(prov__gem_data_url(BSC_STR("https://x/y.png"), &mime, &data));

    assert_true(prov__gem_needs_signature("gemini-3-pro-preview"));
    assert_true(prov__gem_needs_signature("models/gemini-3.5-flash"));
    assert_true(prov__gem_needs_signature("gemini-10-ultra"));
    assert_false(prov__gem_needs_signature("gemini-2.5-flash"));
    assert_false(prov__gem_needs_signature("gemini-1.5-pro"));
    assert_false(prov__gem_needs_signature("gemini-flash-latest"));
    assert_false(prov__gem_needs_signature("gemma-3-27b-it"));
    assert_false(prov__gem_needs_signature(NULL));
}

/* ---- answers ---- */

/* Maps <body> as the answer to a chat call for <model>; <req> may be NULL. */
static enum bsc_err map(const char *model, enum prov_op op, const char *req, const char *rid,
                        const char *body, struct bsc_buf *out, struct prov_usage *u,
                        struct fail_info *fail)
{
    struct fx f;
    struct json_object *r = req ? parse(req) : NULL;
    struct prov_call c;
    enum bsc_err err;

    fx_init(&f, model);
    c = call_of(&f, op, r, false);
    c.request_id = rid;
    fail_info_init(fail);
    err = OPS->map_response(&c, bsc_str_cstr(body), out, u, fail);
    json_object_put(r);
    return err;
}

static void answer_text_and_usage(void **state)
{
    struct bsc_buf out;
    struct prov_usage u;
    struct fail_info fail;

    (void)state;
    bsc_buf_init(&out, 1 << 20);
    assert_int_equal(
        map("gemini-2.5-flash", PROV_OP_CHAT, NULL, "req-1",
            "{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Plan...\","
            "\"thought\":true},{\"text\":\"It is \"},{\"text\":\"4 \xc2\xb0" "C.\","
            "\"thoughtSignature\":\"c2ln\"}]},\"finishReason\":\"STOP\",\"index\":0,"
            "\"safetyRatings\":[]}],\"promptFeedback\":{\"safetyRatings\":[]},"
            "\"usageMetadata\":{\"promptTokenCount\":31,\"candidatesTokenCount\":7,"
            "\"totalTokenCount\":52,\"thoughtsTokenCount\":14,\"cachedContentTokenCount\":8},"
            "\"modelVersion\":\"gemini-2.5-flash-001\",\"responseId\":\"resp-1\"}",
            &out, &u, &fail),
        BSC_OK);
    expect_json("text", bsc_buf_str(&out),
                "{\"id\":\"chatcmpl-resp-1\",\"object\":\"chat.completion\",\"created\":0,"
                "\"model\":\"gemini-2.5-flash-001\",\"choices\":[{\"index\":0,\"message\":"
                "{\"role\":\"assistant\",\"content\":\"It is 4 \xc2\xb0" "C.\",\"refusal\":null},"
                "\"logprobs\":null,\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":31,"
                "\"completion_tokens\":21,\"total_tokens\":52,\"prompt_tokens_details\":"
                "{\"cached_tokens\":8},\"completion_tokens_details\":{\"reasoning_tokens\":14}}}");
    assert_int_equal(u.input_tokens, 31);
    assert_int_equal(u.output_tokens, 21);
    assert_int_equal(u.cached_tokens, 8);
    bsc_buf_cleanup(&out);
}

static const char *const calls_body =
    "{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Let me check.\"},"
    "{\"functionCall\":{\"name\":\"get_weather\",\"args\":{\"city\":\"Oslo\"}},"
    "\"thoughtSignature\":\"c2lnLUE=\"},{\"functionCall\":{\"id\":\"fc-7\",\"name\":\"get_time\","
    "\"args\":{}}}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":10,"
    "\"candidatesTokenCount\":5,\"totalTokenCount\":15}}";

static void answer_tool_calls(void **state)
{
    struct bsc_buf out;
    struct prov_usage u;
    struct fail_info fail;

    (void)state;
    bsc_buf_init(&out, 1 << 20);
    assert_int_equal(map("gemini-2.5-flash", PROV_OP_CHAT, NULL, NULL, calls_body, &out, &u,
                         &fail), BSC_OK);
    expect_json("calls", bsc_buf_str(&out),
                "{\"id\":\"chatcmpl-gemini\",\"object\":\"chat.completion\",\"created\":0,"
                "\"model\":\"gemini-2.5-flash\",\"choices\":[{\"index\":0,\"message\":{\"role\":"
                "\"assistant\",\"content\":\"Let me check.\",\"refusal\":null,\"tool_calls\":["
                "{\"id\":\"call_0\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
                "\"arguments\":\"{\\\"city\\\":\\\"Oslo\\\"}\"},\"extra_content\":{\"google\":"
                "{\"thought_signature\":\"c2lnLUE=\"}}},{\"id\":\"fc-7\",\"type\":\"function\","
                "\"function\":{\"name\":\"get_time\",\"arguments\":\"{}\"}}]},\"logprobs\":null,"
                "\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":10,"
                "\"completion_tokens\":5,\"total_tokens\":15,\"prompt_tokens_details\":"
                "{\"cached_tokens\":0}}}");
    bsc_buf_reset(&out);

    /* parallel_tool_calls: false keeps the first call; only calls: content null. */
    assert_int_equal(
        map("gemini-2.5-flash", PROV_OP_CHAT,
            "{\"parallel_tool_calls\":false,\"messages\":[]}", NULL,
            "{\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"a\"}},"
            "{\"functionCall\":{\"name\":\"b\",\"args\":{\"x\":[1]}}}]},\"finishReason\":"
            "\"STOP\"}]}",
            &out, &u, &fail),
        BSC_OK);
    expect_json("single", bsc_buf_str(&out),
                "{\"id\":\"chatcmpl-gemini\",\"object\":\"chat.completion\",\"created\":0,"
                "\"model\":\"gemini-2.5-flash\",\"choices\":[{\"index\":0,\"message\":{\"role\":"
                "\"assistant\",\"content\":null,\"refusal\":null,\"tool_calls\":[{\"id\":"
                "\"call_0\",\"type\":\"function\",\"function\":{\"name\":\"a\",\"arguments\":"
                "\"{}\"}}]},\"logprobs\":null,\"finish_reason\":\"tool_calls\"}],\"usage\":"
                "{\"prompt_tokens\":0,\"completion_tokens\":0,\"total_tokens\":0}}");
    assert_int_equal(u.input_tokens, -1);
    bsc_buf_cleanup(&out);
}

/* Synthetic ids: stable for one request id, different across request ids. */
static void answer_tool_ids(void **state)
{
    struct bsc_buf a, b, c;
    struct prov_usage u;
    struct fail_info fail;
    struct json_object *ja, *jb, *jc, *id;

    (void)state;
    bsc_buf_init(&a, 1 << 20);
    bsc_buf_init(&b, 1 << 20);
    bsc_buf_init(&c, 1 << 20);
    assert_int_equal(map("g", PROV_OP_CHAT, NULL, "req-1", calls_body, &a, &u, &fail), BSC_OK);
    assert_int_equal(map("g", PROV_OP_CHAT, NULL, "req-1", calls_body, &b, &u, &fail), BSC_OK);
    assert_int_equal(map("g", PROV_OP_CHAT, NULL, "req-2", calls_body, &c, &u, &fail), BSC_OK);
    assert_memory_equal(a.p, b.p, a.len);
    ja = parse(a.p);
    jc = parse(c.p);
    jb = json_object_array_get_idx(
        bsc_json_get(bsc_json_get(json_object_array_get_idx(bsc_json_get(ja, "choices"), 0), "message"),
                "tool_calls"), 0);
    id = bsc_json_get(jb, "id");
    assert_true(strncmp(json_object_get_string(id), "call_", 5) == 0);
    assert_true(strlen(json_object_get_string(id)) == strlen("call_12345678_0"));
    assert_string_not_equal(
        json_object_get_string(id),
        json_object_get_string(bsc_json_get(
            json_object_array_get_idx(
                bsc_json_get(bsc_json_get(json_object_array_get_idx(bsc_json_get(jc, "choices"), 0), "message"),
                        "tool_calls"), 0), "id")));
    json_object_put(ja);
    json_object_put(jc);
    bsc_buf_cleanup(&a);
    bsc_buf_cleanup(&b);
    bsc_buf_cleanup(&c);
}

static void answer_candidates(void **state)
{
    struct bsc_buf out;
    struct prov_usage u;
    struct fail_info fail;

    (void)state;
    bsc_buf_init(&out, 1 << 20);
    assert_int_equal(
        map("g", PROV_OP_CHAT, NULL, NULL,
            "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"A\"}]},\"finishReason\":"
            "\"MAX_TOKENS\",\"index\":0},{\"content\":{\"parts\":[{\"text\":\"B\"}]},"
            "\"finishReason\":\"SAFETY\",\"index\":1},{\"finishReason\":\"RECITATION\","
            "\"index\":2}]}",
            &out, &u, &fail),
        BSC_OK);
    expect_json("n", bsc_buf_str(&out),
                "{\"id\":\"chatcmpl-gemini\",\"object\":\"chat.completion\",\"created\":0,"
                "\"model\":\"g\",\"choices\":["
                "{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"A\",\"refusal\":"
                "null},\"logprobs\":null,\"finish_reason\":\"length\"},"
                "{\"index\":1,\"message\":{\"role\":\"assistant\",\"content\":\"B\",\"refusal\":"
                "null},\"logprobs\":null,\"finish_reason\":\"content_filter\"},"
                "{\"index\":2,\"message\":{\"role\":\"assistant\",\"content\":\"\",\"refusal\":"
                "null},\"logprobs\":null,\"finish_reason\":\"content_filter\"}],"
                "\"usage\":{\"prompt_tokens\":0,\"completion_tokens\":0,\"total_tokens\":0}}");
    bsc_buf_cleanup(&out);
}

struct finish_row {
    const char *reason;
    bool tools;
    const char *want;
    bool unusable;
};

static const struct finish_row finish_rows[] = {
    {"STOP", false, "stop", false},
    {"STOP", true, "tool_calls", false},
    {"MAX_TOKENS", false, "length", false},
    {"MAX_TOKENS", true, "tool_calls", false},
    {"SAFETY", false, "content_filter", false},
    {"SAFETY", true, "content_filter", false},
    {"RECITATION", false, "content_filter", false},
    {"BLOCKLIST", false, "content_filter", false},
    {"PROHIBITED_CONTENT", false, "content_filter", false},
    {"SPII", false, "content_filter", false},
    {"IMAGE_SAFETY", false, "content_filter", false},
    {"MALFORMED_FUNCTION_CALL", false, "stop", true},
    {"UNEXPECTED_TOOL_CALL", false, "stop", true},
    {"TOO_MANY_TOOL_CALLS", false, "stop", true},
    {"LANGUAGE", false, "stop", false},
    {"OTHER", false, "stop", false},
    {"FINISH_REASON_UNSPECIFIED", false, "stop", false},
    {"SOMETHING_NEW", false, "stop", false},
    {"", false, "stop", false},
};

static void answer_finish_reasons(void **state)
{
    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(finish_rows); i++) {
        bool unusable = !finish_rows[i].unusable;
        const char *got = prov__gem_finish(bsc_str_cstr(finish_rows[i].reason),
                                           finish_rows[i].tools, &unusable);
        if (strcmp(got, finish_rows[i].want) != 0 || unusable != finish_rows[i].unusable)
            fail_msg("%s/%d: got %s/%d, want %s/%d", finish_rows[i].reason, finish_rows[i].tools,
                     got, unusable, finish_rows[i].want, finish_rows[i].unusable);
    }
}

struct bad_answer_row {
    const char *name;
    const char *body;
    enum fail_kind kind;
    const char *msg_has;
};

static const struct bad_answer_row bad_answer_rows[] = {
    {"blocked prompt", "{\"promptFeedback\":{\"blockReason\":\"PROHIBITED_CONTENT\"},"
                       "\"usageMetadata\":{\"promptTokenCount\":5}}",
     FAIL_CONTENT_POLICY, "PROHIBITED_CONTENT"},
    {"blocked prompt, empty candidates", "{\"candidates\":[],\"promptFeedback\":{\"blockReason\":"
                                         "\"SAFETY\",\"blockReasonMessage\":\"nope\"}}",
     FAIL_CONTENT_POLICY, "nope"},
    {"error in 200", "{\"error\":{\"code\":429,\"message\":\"slow down\",\"status\":"
                     "\"RESOURCE_EXHAUSTED\"}}",
     FAIL_RATE_LIMITED, "slow down"},
    {"error array in 200", "[{\"error\":{\"code\":503,\"message\":\"busy\",\"status\":"
                           "\"UNAVAILABLE\"}}]",
     FAIL_OVERLOADED, "busy"},
    {"no candidates", "{\"usageMetadata\":{}}", FAIL_SERVER_ERROR, "no candidates"},
    {"not JSON", "<html>oops</html>", FAIL_SERVER_ERROR, "not a JSON"},
    {"broken call", "{\"candidates\":[{\"finishReason\":\"MALFORMED_FUNCTION_CALL\"}]}",
     FAIL_CONTRACT_FAILURE, "function call"},
};

static void answer_failures(void **state)
{
    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(bad_answer_rows); i++) {
        const struct bad_answer_row *r = &bad_answer_rows[i];
        struct bsc_buf out;
        struct prov_usage u;
        struct fail_info fail;
        enum bsc_err err;

        bsc_buf_init(&out, 1 << 20);
        err = map("g", PROV_OP_CHAT, NULL, NULL, r->body, &out, &u, &fail);
        if (err != BSC_EPARSE || fail.kind != r->kind || !strstr(fail.message, r->msg_has))
            fail_msg("%s: got %s kind %s \"%s\"", r->name, bsc_err_str(err),
                     fail_kind_name(fail.kind), fail.message);
        assert_int_equal(out.len, 0);
        bsc_buf_cleanup(&out);
    }
}

/* A broken call next to text is only a stop. */
static void answer_broken_call_with_text(void **state)
{
    struct bsc_buf out;
    struct prov_usage u;
    struct fail_info fail;

    (void)state;
    bsc_buf_init(&out, 1 << 20);
    assert_int_equal(map("g", PROV_OP_CHAT, NULL, NULL,
                         "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"x\"}]},"
                         "\"finishReason\":\"MALFORMED_FUNCTION_CALL\"}]}",
                         &out, &u, &fail),
                     BSC_OK);
    assert_non_null(strstr(out.p, "\"finish_reason\":\"stop\""));
    bsc_buf_cleanup(&out);
}

/* Decodes base64 (standard alphabet, padded) into <out>; returns the byte count. */
static size_t b64_decode(const char *s, unsigned char *out, size_t cap)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    uint32_t acc = 0;
    int bits = 0;
    size_t n = 0;

    for (; *s && *s != '='; s++) {
        const char *p = strchr(tbl, *s);
        assert_non_null(p);
        acc = (acc << 6) | (uint32_t)(p - tbl);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            assert_true(n < cap);
            out[n++] = (unsigned char)(acc >> bits);
        }
    }
    return n;
}

static void answer_embeddings(void **state)
{
    struct bsc_buf out;
    struct prov_usage u;
    struct fail_info fail;
    struct json_object *o, *e;
    unsigned char raw[64];
    float f[3];

    (void)state;
    bsc_buf_init(&out, 1 << 20);
    assert_int_equal(map("text-embedding-004", PROV_OP_EMBEDDINGS, "{\"input\":\"a\"}", NULL,
                         "{\"embedding\":{\"values\":[0.25,-1.5,3]}}", &out, &u, &fail),
                     BSC_OK);
    expect_json("single", bsc_buf_str(&out),
                "{\"object\":\"list\",\"data\":[{\"object\":\"embedding\",\"index\":0,"
                "\"embedding\":[0.25,-1.5,3]}],\"model\":\"text-embedding-004\",\"usage\":"
                "{\"prompt_tokens\":0,\"total_tokens\":0}}");
    bsc_buf_reset(&out);
    assert_int_equal(map("text-embedding-004", PROV_OP_EMBEDDINGS, "{\"input\":[\"a\",\"b\"]}",
                         NULL,
                         "{\"embeddings\":[{\"values\":[1]},{\"values\":[2]}],\"usageMetadata\":"
                         "{\"promptTokenCount\":4}}",
                         &out, &u, &fail),
                     BSC_OK);
    expect_json("batch", bsc_buf_str(&out),
                "{\"object\":\"list\",\"data\":[{\"object\":\"embedding\",\"index\":0,"
                "\"embedding\":[1]},{\"object\":\"embedding\",\"index\":1,\"embedding\":[2]}],"
                "\"model\":\"text-embedding-004\",\"usage\":{\"prompt_tokens\":4,"
                "\"total_tokens\":4}}");
    assert_int_equal(u.input_tokens, 4);
    bsc_buf_reset(&out);
    /* base64: little-endian float32, as OpenAI's encoding_format. */
    assert_int_equal(map("text-embedding-004", PROV_OP_EMBEDDINGS,
                         "{\"input\":\"a\",\"encoding_format\":\"base64\"}", NULL,
                         "{\"embedding\":{\"values\":[0.25,-1.5,3]}}", &out, &u, &fail),
                     BSC_OK);
    o = parse(out.p);
    e = bsc_json_get(json_object_array_get_idx(bsc_json_get(o, "data"), 0), "embedding");
    assert_true(json_object_is_type(e, json_type_string));
    assert_int_equal(b64_decode(json_object_get_string(e), raw, sizeof(raw)), 12);
    for (size_t i = 0; i < 3; i++) {
        uint32_t bits = (uint32_t)raw[i * 4] | (uint32_t)raw[i * 4 + 1] << 8 |
                        (uint32_t)raw[i * 4 + 2] << 16 | (uint32_t)raw[i * 4 + 3] << 24;
        memcpy(&f[i], &bits, 4);
    }
    assert_true(f[0] == 0.25f && f[1] == -1.5f && f[2] == 3.0f);
    json_object_put(o);
    bsc_buf_reset(&out);
    assert_int_equal(map("e", PROV_OP_EMBEDDINGS, "{\"input\":\"a\"}", NULL,
                         "{\"embeddings\":[{\"nope\":1}]}", &out, &u, &fail),
                     BSC_EPARSE);
    assert_int_equal(fail.kind, FAIL_SERVER_ERROR);
    bsc_buf_cleanup(&out);
}

static void answer_models(void **state)
{
    struct bsc_buf out;
    struct prov_usage u;
    struct fail_info fail;

    (void)state;
    bsc_buf_init(&out, 1 << 20);
    assert_int_equal(map("g", PROV_OP_PROBE_MODELS, NULL, NULL,
                         "{\"models\":[{\"name\":\"models/gemini-2.5-flash\",\"displayName\":"
                         "\"x\"},{\"name\":\"tunedModels/t\"}],\"nextPageToken\":\"p\"}",
                         &out, &u, &fail),
                     BSC_OK);
    expect_json("models", bsc_buf_str(&out),
                "{\"object\":\"list\",\"data\":[{\"id\":\"gemini-2.5-flash\",\"object\":\"model\","
                "\"created\":0,\"owned_by\":\"google\"},{\"id\":\"tunedModels/t\",\"object\":"
                "\"model\",\"created\":0,\"owned_by\":\"google\"}]}");
    bsc_buf_cleanup(&out);
}

/* ---- streams ---- */

struct srun {
    void *st;
    struct bsc_buf out;
    struct fail_info fail;
};

static void srun_init(struct srun *r, const char *model, const char *req, bool include_usage)
{
    struct fx f;
    struct json_object *j = req ? parse(req) : NULL;
    struct prov_call c;

    fx_init(&f, model);
    c = call_of(&f, PROV_OP_CHAT, j, true);
    c.include_usage = include_usage;
    r->st = calloc(1, OPS->stream_size);
    assert_non_null(r->st);
    OPS->stream_init(r->st, &c); /* the call is borrowed for init only */
    json_object_put(j);
    bsc_buf_init(&r->out, 1 << 20);
    fail_info_init(&r->fail);
}

static void srun_cleanup(struct srun *r)
{
    OPS->stream_cleanup(r->st);
    free(r->st);
    bsc_buf_cleanup(&r->out);
}

static enum prov_stream_status ev(struct srun *r, const char *data)
{
    return OPS->stream_event(r->st, BSC_STR(""), bsc_str_cstr(data), &r->out, &r->fail);
}

static enum prov_stream_status line(struct srun *r, const char *text)
{
    return OPS->stream_line(r->st, bsc_str_cstr(text), &r->out, &r->fail);
}

static enum prov_stream_status end(struct srun *r)
{
    return OPS->stream_end(r->st, &r->out, &r->fail);
}

/* Checks that <out> is exactly the frames <want> (JSON compared as values; "[DONE]"
 * literally), each framed as "data: ...\n\n". */
static void expect_frames(const char *ctx, struct bsc_str out, const char *const *want, size_t n)
{
    size_t off = 0, i = 0;

    while (off < out.len) {
        const char *p = out.p + off, *sep = memmem(p, out.len - off, "\n\n", 2);
        if (!sep || strncmp(p, "data: ", 6) != 0)
            fail_msg("%s: frame %zu is not \"data: ...\\n\\n\": %.*s", ctx, i,
                     (int)(out.len - off), p);
        if (i >= n)
            fail_msg("%s: more than %zu frames; extra: %.*s", ctx, n, (int)(sep - p), p);
        if (strcmp(want[i], "[DONE]") == 0) {
            if ((size_t)(sep - p - 6) != 6 || memcmp(p + 6, "[DONE]", 6) != 0)
                fail_msg("%s: frame %zu: want [DONE], got %.*s", ctx, i, (int)(sep - p), p);
        } else {
            char name[96];
            snprintf(name, sizeof(name), "%s frame %zu", ctx, i);
            expect_json(name, bsc_str_make(p + 6, (size_t)(sep - p - 6)), want[i]);
        }
        off = (size_t)(sep + 2 - out.p);
        i++;
    }
    if (i != n)
        fail_msg("%s: %zu frames, want %zu:\n%.*s", ctx, i, n, (int)out.len, out.p);
}

#define CH(id, model) "\"id\":\"" id "\",\"object\":\"chat.completion.chunk\",\"created\":0," \
                      "\"model\":\"" model "\""

static void stream_text_with_usage(void **state)
{
    struct srun r;
    struct prov_usage u;
    static const char *const want[] = {
        "{" CH("chatcmpl-r1", "gemini-2.5-flash-001") ",\"choices\":[{\"index\":0,\"delta\":"
        "{\"role\":\"assistant\",\"content\":\"Hel\"},\"logprobs\":null,\"finish_reason\":null}]}",
        "{" CH("chatcmpl-r1", "gemini-2.5-flash-001") ",\"choices\":[{\"index\":0,\"delta\":"
        "{\"content\":\"lo\"},\"logprobs\":null,\"finish_reason\":null}]}",
        "{" CH("chatcmpl-r1", "gemini-2.5-flash-001") ",\"choices\":[{\"index\":0,\"delta\":{},"
        "\"logprobs\":null,\"finish_reason\":\"stop\"}]}",
        "{" CH("chatcmpl-r1", "gemini-2.5-flash-001") ",\"choices\":[],\"usage\":{"
        "\"prompt_tokens\":9,\"completion_tokens\":5,\"total_tokens\":14,"
        "\"prompt_tokens_details\":{\"cached_tokens\":0},\"completion_tokens_details\":"
        "{\"reasoning_tokens\":3}}}",
        "[DONE]",
    };

    (void)state;
    srun_init(&r, "gemini-2.5-flash", NULL, true);
    assert_int_equal(ev(&r, "{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":["
                            "{\"text\":\"hmm\",\"thought\":true},{\"text\":\"Hel\"}]},"
                            "\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":9,"
                            "\"totalTokenCount\":9},\"modelVersion\":\"gemini-2.5-flash-001\","
                            "\"responseId\":\"r1\"}"),
                     PROV_STREAM_MORE);
    assert_int_equal(ev(&r, "{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":["
                            "{\"text\":\"lo\"}]},\"finishReason\":\"STOP\",\"index\":0}],"
                            "\"usageMetadata\":{\"promptTokenCount\":9,\"candidatesTokenCount\":2,"
                            "\"thoughtsTokenCount\":3,\"totalTokenCount\":14},\"modelVersion\":"
                            "\"other\",\"responseId\":\"r2\"}"),
                     PROV_STREAM_MORE);
    assert_int_equal(ev(&r, ""), PROV_STREAM_MORE); /* keep-alive-ish empty data */
    assert_int_equal(end(&r), PROV_STREAM_DONE);
    expect_frames("text", bsc_buf_str(&r.out), want, BSC_ARRAY_LEN(want));
    OPS->stream_usage(r.st, &u);
    assert_int_equal(u.input_tokens, 9);
    assert_int_equal(u.output_tokens, 5);
    /* Idempotent after the end. */
    assert_int_equal(end(&r), PROV_STREAM_DONE);
    assert_int_equal(ev(&r, "{}"), PROV_STREAM_DONE);
    srun_cleanup(&r);
}

static void stream_tool_calls(void **state)
{
    struct srun r;
    static const char *const want[] = {
        "{" CH("chatcmpl-gemini", "gemini-3-pro") ",\"choices\":[{\"index\":0,\"delta\":"
        "{\"role\":\"assistant\",\"content\":\"Checking.\"},\"logprobs\":null,"
        "\"finish_reason\":null}]}",
        "{" CH("chatcmpl-gemini", "gemini-3-pro") ",\"choices\":[{\"index\":0,\"delta\":"
        "{\"tool_calls\":[{\"index\":0,\"id\":\"call_0\",\"type\":\"function\",\"function\":"
        "{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Oslo\\\"}\"},"
        "\"extra_content\":{\"google\":{\"thought_signature\":\"c2lnLUE=\"}}}]},"
        "\"logprobs\":null,\"finish_reason\":null}]}",
        "{" CH("chatcmpl-gemini", "gemini-3-pro") ",\"choices\":[{\"index\":0,\"delta\":"
        "{\"tool_calls\":[{\"index\":1,\"id\":\"call_1\",\"type\":\"function\",\"function\":"
        "{\"name\":\"get_time\",\"arguments\":\"{}\"}}]},\"logprobs\":null,"
        "\"finish_reason\":null}]}",
        "{" CH("chatcmpl-gemini", "gemini-3-pro") ",\"choices\":[{\"index\":0,\"delta\":{},"
        "\"logprobs\":null,\"finish_reason\":\"tool_calls\"}]}",
        "[DONE]",
    };

    (void)state;
    srun_init(&r, "models/gemini-3-pro", NULL, false);
    assert_int_equal(ev(&r, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":"
                            "\"Checking.\"}]}}]}"),
                     PROV_STREAM_MORE);
    assert_int_equal(ev(&r, "{\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{"
                            "\"name\":\"get_weather\",\"args\":{\"city\":\"Oslo\"}},"
                            "\"thoughtSignature\":\"c2lnLUE=\"},{\"functionCall\":{\"name\":"
                            "\"get_time\"}}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":"
                            "{\"promptTokenCount\":3,\"candidatesTokenCount\":4}}"),
                     PROV_STREAM_MORE);
    assert_int_equal(end(&r), PROV_STREAM_DONE);
    expect_frames("tools", bsc_buf_str(&r.out), want, BSC_ARRAY_LEN(want));
    srun_cleanup(&r);

    /* parallel_tool_calls: false; a call as the very first delta carries role and null. */
    srun_init(&r, "g", "{\"parallel_tool_calls\":false}", false);
    assert_int_equal(ev(&r, "{\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{"
                            "\"name\":\"a\"}},{\"functionCall\":{\"name\":\"b\"}}]}}]}"),
                     PROV_STREAM_MORE);
    assert_int_equal(ev(&r, "{\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{"
                            "\"name\":\"c\"}}]},\"finishReason\":\"STOP\"}]}"),
                     PROV_STREAM_MORE);
    assert_int_equal(end(&r), PROV_STREAM_DONE);
    {
        static const char *const want1[] = {
            "{" CH("chatcmpl-gemini", "g") ",\"choices\":[{\"index\":0,\"delta\":{\"role\":"
            "\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"call_0\","
            "\"type\":\"function\",\"function\":{\"name\":\"a\",\"arguments\":\"{}\"}}]},"
            "\"logprobs\":null,\"finish_reason\":null}]}",
            "{" CH("chatcmpl-gemini", "g") ",\"choices\":[{\"index\":0,\"delta\":{},"
            "\"logprobs\":null,\"finish_reason\":\"tool_calls\"}]}",
            "[DONE]",
        };
        expect_frames("single tool", bsc_buf_str(&r.out), want1, BSC_ARRAY_LEN(want1));
    }
    srun_cleanup(&r);
}

/* The text of every content delta in <out>, concatenated; each must be valid UTF-8. */
static void collect_content(struct bsc_str out, struct bsc_buf *text, size_t *frames)
{
    size_t off = 0;

    *frames = 0;
    while (off < out.len) {
        const char *p = out.p + off, *sep = memmem(p, out.len - off, "\n\n", 2);
        struct json_object *o, *c;
        assert_non_null(sep);
        if (memcmp(p + 6, "[DONE]", 6) != 0) {
            o = prov_parse_json(bsc_str_make(p + 6, (size_t)(sep - p - 6)));
            assert_non_null(o);
            c = bsc_json_get(bsc_json_get(json_object_array_get_idx(bsc_json_get(o, "choices"), 0), "delta"),
                        "content");
            if (c && json_object_is_type(c, json_type_string)) {
                assert_true(bsc_utf8_valid(json_object_get_string(c),
                                       (size_t)json_object_get_string_len(c)));
                assert_int_equal(bsc_buf_append(text, json_object_get_string(c),
                                                (size_t)json_object_get_string_len(c)),
                                 BSC_OK);
                (*frames)++;
            }
            json_object_put(o);
        }
        off = (size_t)(sep + 2 - out.p);
    }
}

/* An event whose text part is the raw bytes <p>[0..len) (JSON-escaped, but multi-byte
 * sequences left as they are, even when cut). */
static void text_event(struct bsc_buf *b, const char *p, size_t len, bool finish)
{
    bsc_buf_reset(b);
    assert_int_equal(bsc_buf_append_cstr(b, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":"),
                     BSC_OK);
    assert_int_equal(bsc_buf_append_json_str(b, bsc_str_make(p, len)), BSC_OK);
    assert_int_equal(bsc_buf_appendf(b, "}]}%s}]}", finish ? ",\"finishReason\":\"STOP\"" : ""),
                     BSC_OK);
}

static void stream_utf8_every_split(void **state)
{
    static const char text[] = "h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93 \xf0\x9f\x9a\x80!";
    size_t len = sizeof(text) - 1;
    struct bsc_buf e, got;

    (void)state;
    bsc_buf_init(&e, 4096);
    bsc_buf_init(&got, 4096);
    for (size_t k = 0; k <= len; k++) {
        struct srun r;
        size_t frames;
        srun_init(&r, "g", NULL, false);
        text_event(&e, text, k, false);
        assert_int_equal(ev(&r, e.p), PROV_STREAM_MORE);
        text_event(&e, text + k, len - k, true);
        assert_int_equal(ev(&r, e.p), PROV_STREAM_MORE);
        assert_int_equal(end(&r), PROV_STREAM_DONE);
        bsc_buf_reset(&got);
        collect_content(bsc_buf_str(&r.out), &got, &frames);
        if (got.len != len || memcmp(got.p, text, len) != 0)
            fail_msg("split at %zu: got \"%.*s\"", k, (int)got.len, got.p);
        assert_true(frames >= 1 && frames <= 2);
        srun_cleanup(&r);
    }
    /* Three-way splits inside the 4-byte character (bytes 18..21). */
    for (size_t a = 18; a <= 22; a++) {
        for (size_t b = a; b <= 22; b++) {
            struct srun r;
            size_t frames;
            srun_init(&r, "g", NULL, false);
            text_event(&e, text, a, false);
            assert_int_equal(ev(&r, e.p), PROV_STREAM_MORE);
            text_event(&e, text + a, b - a, false);
            assert_int_equal(ev(&r, e.p), PROV_STREAM_MORE);
            text_event(&e, text + b, len - b, true);
            assert_int_equal(ev(&r, e.p), PROV_STREAM_MORE);
            assert_int_equal(end(&r), PROV_STREAM_DONE);
            bsc_buf_reset(&got);
            collect_content(bsc_buf_str(&r.out), &got, &frames);
            assert_int_equal(got.len, len);
            assert_memory_equal(got.p, text, len);
            srun_cleanup(&r);
        }
    }
    /* Ill-formed bytes become U+FFFD; a character cut by the end of the text too. */
    {
        struct srun r;
        size_t frames;
        srun_init(&r, "g", NULL, false);
        text_event(&e, "a\xff" "b\xf0\x9f", 5, true);
        assert_int_equal(ev(&r, e.p), PROV_STREAM_MORE);
        assert_int_equal(end(&r), PROV_STREAM_DONE);
        bsc_buf_reset(&got);
        collect_content(bsc_buf_str(&r.out), &got, &frames);
        assert_int_equal(got.len, 1 + 3 + 1 + 3);
        assert_memory_equal(got.p, "a\xef\xbf\xbd" "b\xef\xbf\xbd", 8);
        srun_cleanup(&r);
    }
    bsc_buf_cleanup(&e);
    bsc_buf_cleanup(&got);
}

static void stream_two_candidates(void **state)
{
    struct srun r;
    static const char *const want[] = {
        "{" CH("chatcmpl-gemini", "g") ",\"choices\":[{\"index\":0,\"delta\":{\"role\":"
        "\"assistant\",\"content\":\"A\"},\"logprobs\":null,\"finish_reason\":null}]}",
        "{" CH("chatcmpl-gemini", "g") ",\"choices\":[{\"index\":1,\"delta\":{\"role\":"
        "\"assistant\",\"content\":\"B\"},\"logprobs\":null,\"finish_reason\":null}]}",
        "{" CH("chatcmpl-gemini", "g") ",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":"
        "null,\"finish_reason\":\"length\"}]}",
        "{" CH("chatcmpl-gemini", "g") ",\"choices\":[{\"index\":1,\"delta\":{},\"logprobs\":"
        "null,\"finish_reason\":\"stop\"}]}",
        "[DONE]",
    };

    (void)state;
    srun_init(&r, "g", NULL, false);
    assert_int_equal(ev(&r, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"A\"}]},"
                            "\"index\":0},{\"content\":{\"parts\":[{\"text\":\"B\"}]},"
                            "\"index\":1}]}"),
                     PROV_STREAM_MORE);
    assert_int_equal(ev(&r, "{\"candidates\":[{\"finishReason\":\"MAX_TOKENS\",\"index\":0}]}"),
                     PROV_STREAM_MORE);
    /* Candidate 1 has not finished: the stream is not complete yet. */
    {
        struct srun probe;
        srun_init(&probe, "g", NULL, false);
        assert_int_equal(ev(&probe, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"A\"}]},"
                                    "\"index\":0,\"finishReason\":\"STOP\"},{\"content\":{"
                                    "\"parts\":[{\"text\":\"B\"}]},\"index\":1}]}"),
                         PROV_STREAM_MORE);
        assert_int_equal(end(&probe), PROV_STREAM_ERROR);
        assert_int_equal(probe.fail.kind, FAIL_PARTIAL_OUTPUT);
        srun_cleanup(&probe);
    }
    assert_int_equal(ev(&r, "{\"candidates\":[{\"finishReason\":\"STOP\",\"index\":1}]}"),
                     PROV_STREAM_MORE);
    assert_int_equal(end(&r), PROV_STREAM_DONE);
    expect_frames("two", bsc_buf_str(&r.out), want, BSC_ARRAY_LEN(want));
    srun_cleanup(&r);
}

struct sfail_row {
    const char *name;
    const char *events[3]; /* fed in order before the failing one */
    const char *last;      /* the failing event */
    enum fail_kind kind;
    bool no_output;        /* nothing at all was emitted */
};

static const struct sfail_row sfail_rows[] = {
    {"data error object", {"{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"x\"}]}}]}"},
     "{\"error\":{\"code\":503,\"message\":\"The model is overloaded.\",\"status\":"
     "\"UNAVAILABLE\"}}",
     FAIL_OVERLOADED, false},
    {"error as the first event", {NULL},
     "{\"error\":{\"code\":429,\"message\":\"quota\",\"status\":\"RESOURCE_EXHAUSTED\","
     "\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.QuotaFailure\",\"violations\":"
     "[{\"quotaId\":\"GenerateRequestsPerDayPerProjectPerModel-FreeTier\"}]}]}}",
     FAIL_QUOTA_EXHAUSTED, true},
    {"blocked prompt", {NULL}, "{\"promptFeedback\":{\"blockReason\":\"OTHER\"}}",
     FAIL_CONTENT_POLICY, true},
    {"not JSON", {NULL}, "{\"candidates\":[", FAIL_SERVER_ERROR, true},
    {"JSON but not an object", {NULL}, "[1,2]", FAIL_SERVER_ERROR, true},
    {"broken call first", {NULL},
     "{\"candidates\":[{\"finishReason\":\"MALFORMED_FUNCTION_CALL\"}]}",
     FAIL_CONTRACT_FAILURE, true},
    {"candidate index out of range", {NULL},
     "{\"candidates\":[{\"index\":8,\"content\":{\"parts\":[{\"text\":\"x\"}]}}]}",
     FAIL_SERVER_ERROR, true},
};

static void stream_failures(void **state)
{
    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(sfail_rows); i++) {
        const struct sfail_row *row = &sfail_rows[i];
        struct srun r;
        enum prov_stream_status st;

        srun_init(&r, "g", NULL, false);
        for (size_t k = 0; k < 3 && row->events[k]; k++)
            assert_int_equal(ev(&r, row->events[k]), PROV_STREAM_MORE);
        st = ev(&r, row->last);
        if (st != PROV_STREAM_ERROR || r.fail.kind != row->kind)
            fail_msg("%s: status %d kind %s (%s)", row->name, st, fail_kind_name(r.fail.kind),
                     r.fail.message);
        assert_int_equal(r.fail.status, 200);
        if (row->no_output)
            assert_int_equal(r.out.len, 0);
        srun_cleanup(&r);
    }
}

/* A broken call after text: the answer simply stops. */
static void stream_broken_call_after_text(void **state)
{
    struct srun r;

    (void)state;
    srun_init(&r, "g", NULL, false);
    assert_int_equal(ev(&r, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"x\"}]}}]}"),
                     PROV_STREAM_MORE);
    assert_int_equal(ev(&r, "{\"candidates\":[{\"finishReason\":\"MALFORMED_FUNCTION_CALL\"}]}"),
                     PROV_STREAM_MORE);
    assert_int_equal(end(&r), PROV_STREAM_DONE);
    assert_non_null(strstr(r.out.p, "\"finish_reason\":\"stop\""));
    srun_cleanup(&r);
}

static void stream_eof_without_finish(void **state)
{
    struct srun r;

    (void)state;
    srun_init(&r, "g", NULL, true);
    assert_int_equal(ev(&r, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"x\"}]}}]}"),
                     PROV_STREAM_MORE);
    assert_int_equal(end(&r), PROV_STREAM_ERROR);
    assert_int_equal(r.fail.kind, FAIL_PARTIAL_OUTPUT);
    assert_null(strstr(r.out.p, "[DONE]"));
    srun_cleanup(&r);

    srun_init(&r, "g", NULL, false); /* nothing at all */
    assert_int_equal(end(&r), PROV_STREAM_ERROR);
    assert_int_equal(r.fail.kind, FAIL_PARTIAL_OUTPUT);
    srun_cleanup(&r);
}

/* Gemini's bare, pretty-printed JSON error after (or among) the events. */
static void stream_bare_json_error(void **state)
{
    static const char *const pretty[] = {
        "{",
        "  \"error\": {",
        "    \"code\": 429,",
        "    \"message\": \"Resource has been exhausted (e.g. check quota).\",",
        "    \"status\": \"RESOURCE_EXHAUSTED\",",
        "    \"details\": [",
        "      {",
        "        \"@type\": \"type.googleapis.com/google.rpc.RetryInfo\",",
        "        \"retryDelay\": \"36s\"",
        "      }",
        "    ]",
        "  }",
        "}",
    };
    struct srun r;

    (void)state;
    srun_init(&r, "g", NULL, false);
    assert_int_equal(ev(&r, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"x\"}]}}]}"),
                     PROV_STREAM_MORE);
    assert_int_equal(line(&r, "some-unknown-field"), PROV_STREAM_MORE); /* ignored */
    assert_int_equal(line(&r, "   "), PROV_STREAM_MORE);
    for (size_t i = 0; i + 1 < BSC_ARRAY_LEN(pretty); i++)
        assert_int_equal(line(&r, pretty[i]), PROV_STREAM_MORE);
    assert_int_equal(line(&r, pretty[BSC_ARRAY_LEN(pretty) - 1]), PROV_STREAM_ERROR);
    assert_int_equal(r.fail.kind, FAIL_RATE_LIMITED);
    assert_int_equal(r.fail.retry_after_ms, 36000);
    assert_string_equal(r.fail.type, "RESOURCE_EXHAUSTED");
    assert_int_equal(r.fail.status, 200);
    srun_cleanup(&r);

    /* One line, wrapped in an array. */
    srun_init(&r, "g", NULL, false);
    assert_int_equal(line(&r, "[{\"error\":{\"code\":500,\"message\":\"boom\",\"status\":"
                              "\"INTERNAL\"}}]"),
                     PROV_STREAM_ERROR);
    assert_int_equal(r.fail.kind, FAIL_SERVER_ERROR);
    srun_cleanup(&r);

    /* A complete JSON object that is no error is ignored; garbage that starts like JSON is
     * a broken stream; an object cut by EOF is a partial stream. */
    srun_init(&r, "g", NULL, false);
    assert_int_equal(line(&r, "{\"note\": 1}"), PROV_STREAM_MORE);
    assert_int_equal(line(&r, "{ not json"), PROV_STREAM_ERROR);
    assert_int_equal(r.fail.kind, FAIL_SERVER_ERROR);
    srun_cleanup(&r);
    srun_init(&r, "g", NULL, false);
    assert_int_equal(ev(&r, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"x\"}]},"
                            "\"finishReason\":\"STOP\"}]}"),
                     PROV_STREAM_MORE);
    assert_int_equal(line(&r, "{"), PROV_STREAM_MORE);
    assert_int_equal(line(&r, "  \"error\": {"), PROV_STREAM_MORE);
    assert_int_equal(end(&r), PROV_STREAM_ERROR);
    assert_int_equal(r.fail.kind, FAIL_PARTIAL_OUTPUT);
    srun_cleanup(&r);

    /* An error after the finish chunk still fails the stream (no [DONE]). */
    srun_init(&r, "g", NULL, false);
    assert_int_equal(ev(&r, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"x\"}]},"
                            "\"finishReason\":\"STOP\"}]}"),
                     PROV_STREAM_MORE);
    assert_int_equal(line(&r, "{\"error\":{\"code\":503,\"status\":\"UNAVAILABLE\"}}"),
                     PROV_STREAM_ERROR);
    assert_int_equal(r.fail.kind, FAIL_OVERLOADED);
    srun_cleanup(&r);

    /* The collected object is bounded (GEM_ERR_JSON_MAX). */
    srun_init(&r, "g", NULL, false);
    {
        char piece[512];
        enum prov_stream_status st = line(&r, "[");
        memset(piece, 'a', sizeof(piece));
        piece[0] = '"';
        piece[sizeof(piece) - 3] = '"';
        piece[sizeof(piece) - 2] = ',';
        piece[sizeof(piece) - 1] = '\0';
        for (size_t i = 0; i < 2 * GEM_ERR_JSON_MAX / sizeof(piece) && st == PROV_STREAM_MORE; i++)
            st = line(&r, piece);
        assert_int_equal(st, PROV_STREAM_ERROR);
        assert_non_null(strstr(r.fail.message, "bound"));
    }
    srun_cleanup(&r);
}

/* ---- error classification ---- */

struct cls_row {
    const char *name;
    int status;
    const char *body;
    const char *retry_after; /* header */
    enum fail_kind kind;
    int64_t retry_ms;
    const char *code; /* NULL: not checked */
};

#define GERR(code, status, msg, details)                                                   \
    "{\"error\":{\"code\":" #code ",\"message\":\"" msg "\",\"status\":\"" status "\""       \
    details "}}"
#define QUOTA(id, value)                                                                   \
    "{\"@type\":\"type.googleapis.com/google.rpc.QuotaFailure\",\"violations\":[{"         \
    "\"quotaMetric\":\"generativelanguage.googleapis.com/generate_content_free_tier_requests\"," \
    "\"quotaId\":\"" id "\",\"quotaValue\":\"" value "\"}]}"
#define RETRY(d) "{\"@type\":\"type.googleapis.com/google.rpc.RetryInfo\",\"retryDelay\":\"" d "\"}"
#define INFO(r) "{\"@type\":\"type.googleapis.com/google.rpc.ErrorInfo\",\"reason\":\"" r "\"," \
                "\"domain\":\"googleapis.com\"}"

static const struct cls_row cls_rows[] = {
    {"per-minute 429 with RetryInfo", 429,
     GERR(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan "
          "and billing details.",
          ",\"details\":[" QUOTA("GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "10")
          "," RETRY("36s") "]"),
     NULL, FAIL_RATE_LIMITED, 36000, "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"},
    {"per-day 429", 429,
     GERR(429, "RESOURCE_EXHAUSTED", "quota",
          ",\"details\":[" QUOTA("GenerateRequestsPerDayPerProjectPerModel-FreeTier", "250")
          "," RETRY("2s") "]"),
     NULL, FAIL_QUOTA_EXHAUSTED, 2000, NULL},
    {"zero quota (free tier unavailable)", 429,
     GERR(429, "RESOURCE_EXHAUSTED", "Quota exceeded for metric: x, limit: 0, model: m", ""),
     NULL, FAIL_QUOTA_EXHAUSTED, -1, NULL},
    {"zero quota value", 429,
     GERR(429, "RESOURCE_EXHAUSTED", "quota",
          ",\"details\":[" QUOTA("InputTokensPerMinute", "0") "]"),
     NULL, FAIL_QUOTA_EXHAUSTED, -1, NULL},
    {"prepaid credits gone", 429,
     GERR(429, "RESOURCE_EXHAUSTED", "Your prepayment credits are depleted.", ""), NULL,
     FAIL_QUOTA_EXHAUSTED, -1, NULL},
    {"Retry-After header wins", 429,
     GERR(429, "RESOURCE_EXHAUSTED", "x", ",\"details\":[" RETRY("36s") "]"),
     "5", FAIL_RATE_LIMITED, 5000, NULL},
    {"retry hint in the message", 429,
     GERR(429, "RESOURCE_EXHAUSTED", "Please retry in 36.4s.", ""), NULL, FAIL_RATE_LIMITED,
     36400, NULL},
    {"fractional RetryInfo", 429,
     GERR(429, "RESOURCE_EXHAUSTED", "x", ",\"details\":[" RETRY("0.5s") "]"),
     NULL, FAIL_RATE_LIMITED, 500, NULL},
    {"429 without status text", 429, "{\"error\":{\"code\":429,\"message\":\"slow\"}}", NULL,
     FAIL_RATE_LIMITED, -1, "429"},
    {"invalid key is a 400", 400,
     GERR(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.",
          ",\"details\":[" INFO("API_KEY_INVALID") "]"),
     NULL, FAIL_AUTH, -1, "API_KEY_INVALID"},
    {"expired key", 400,
     GERR(400, "INVALID_ARGUMENT", "API key expired. Please renew the API key.", ""),
     NULL, FAIL_AUTH, -1, NULL},
    {"missing key is a 403", 403,
     GERR(403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers (callers without "
          "established identity).", ""),
     NULL, FAIL_AUTH, -1, NULL},
    {"unauthenticated", 401, GERR(401, "UNAUTHENTICATED", "Request had invalid credentials.", ""),
     NULL, FAIL_AUTH, -1, NULL},
    {"context overflow", 400,
     GERR(400, "INVALID_ARGUMENT", "The input token count (1200000) exceeds the maximum number of "
          "tokens allowed (1048576).", ""),
     NULL, FAIL_CONTEXT_OVERFLOW, -1, NULL},
    {"invalid argument", 400,
     GERR(400, "INVALID_ARGUMENT",
          "* GenerateContentRequest.contents: contents is not specified", ""),
     NULL, FAIL_INVALID_REQUEST, -1, "400"},
    {"missing thought signature", 400,
     GERR(400, "INVALID_ARGUMENT", "Function call is missing a thought_signature in functionCall "
          "parts.", ""),
     NULL, FAIL_INVALID_REQUEST, -1, NULL},
    {"location not supported", 400,
     GERR(400, "FAILED_PRECONDITION", "User location is not supported for the API use.", ""), NULL,
     FAIL_PERMISSION, -1, NULL},
    {"billing not enabled", 400,
     GERR(400, "FAILED_PRECONDITION", "Gemini API free tier is not available. Please enable "
          "billing.", ""),
     NULL, FAIL_QUOTA_EXHAUSTED, -1, NULL},
    {"permission denied", 403,
     GERR(403, "PERMISSION_DENIED", "The caller does not have permission",
          ",\"details\":[" INFO("SERVICE_DISABLED") "]"),
     NULL, FAIL_PERMISSION, -1, "SERVICE_DISABLED"},
    {"not found", 404, GERR(404, "NOT_FOUND", "models/x is not found for API version v1beta", ""),
     NULL, FAIL_NOT_FOUND, -1, NULL},
    {"internal", 500, GERR(500, "INTERNAL", "An internal error has occurred.", ""), NULL,
     FAIL_SERVER_ERROR, -1, NULL},
    {"overloaded", 503, GERR(503, "UNAVAILABLE", "The model is overloaded.", ""), NULL,
     FAIL_OVERLOADED, -1, NULL},
    {"deadline", 504, GERR(504, "DEADLINE_EXCEEDED", "Deadline expired.", ""), NULL,
     FAIL_TIMEOUT, -1, NULL},
    {"aborted", 409, GERR(409, "ABORTED", "aborted", ""), NULL, FAIL_SERVER_ERROR, -1, NULL},
    {"array-wrapped", 503, "[{" "\"error\":{\"code\":503,\"message\":\"busy\",\"status\":"
                           "\"UNAVAILABLE\"}}]",
     NULL, FAIL_OVERLOADED, -1, NULL},
    {"HTML page: by status", 502, "<html><body>Bad Gateway</body></html>", NULL,
     FAIL_SERVER_ERROR, -1, NULL},
    {"empty 429 body", 429, "", "7", FAIL_RATE_LIMITED, 7000, NULL},
    {"unknown status text: by status", 400, GERR(400, "SOMETHING_NEW", "x", ""), NULL,
     FAIL_INVALID_REQUEST, -1, NULL},
    {"a normal 200", 200, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"x\"}]}}]}", NULL,
     FAIL_NONE, -1, NULL},
    {"an unparsable 200 is not judged here", 200, "{oops", NULL, FAIL_NONE, -1, NULL},
    {"blocked prompt in a 200", 200, "{\"promptFeedback\":{\"blockReason\":\"SAFETY\"}}", NULL,
     FAIL_CONTENT_POLICY, -1, "SAFETY"},
    {"error in a 200", 200, GERR(500, "INTERNAL", "boom", ""), NULL, FAIL_SERVER_ERROR, -1, NULL},
    {"quota error in a 200", 200,
     GERR(429, "RESOURCE_EXHAUSTED", "x", ",\"details\":[" QUOTA("RequestsPerDay", "9") "]"), NULL,
     FAIL_QUOTA_EXHAUSTED, -1, NULL},
};

static void classify_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(cls_rows); i++) {
        const struct cls_row *r = &cls_rows[i];
        struct test_headers h = test_retry_headers(r->retry_after, NULL);
        struct prov_err_input in = {.status = r->status,
                                    .body = bsc_str_cstr(r->body),
                                    .header = test_header,
                                    .header_ctx = &h,
                                    .now_wall_ms = 1700000000000ull};
        struct fail_info out;

        OPS->classify(&in, &out);
        if (out.kind != r->kind)
            fail_msg("%s: kind %s, want %s (%s)", r->name, fail_kind_name(out.kind),
                     fail_kind_name(r->kind), out.message);
        if (r->kind != FAIL_NONE && out.retry_after_ms != r->retry_ms)
            fail_msg("%s: retry %lld, want %lld", r->name, (long long)out.retry_after_ms,
                     (long long)r->retry_ms);
        if (r->code && strcmp(out.code, r->code) != 0)
            fail_msg("%s: code \"%s\", want \"%s\"", r->name, out.code, r->code);
        if (r->kind != FAIL_NONE)
            assert_int_equal(out.status, r->status);
    }
}

/* ---- the sim's Gemini dialect ---- */

/* Headers of a struct sim_in, looked up in an adapter-built header block. */
static struct bsc_str http_header(const void *ctx, struct bsc_str name)
{
    const struct prov_http *h = ctx;
    char n[64];
    const char *v;

    snprintf(n, sizeof(n), "%.*s", BSC_STR_FMT(name));
    v = h ? header_value(h, n) : NULL;
    return v ? bsc_str_cstr(v) : BSC_STR_NULL;
}

/* The sim's view of an adapter-built request. */
static struct sim_in sim_in_of(const struct prov_http *h)
{
    const char *path = h->url.p + strlen("https://generativelanguage.googleapis.com");
    const char *q = strchr(path, '?');

    return (struct sim_in){.method = bsc_str_cstr(h->method),
                           .path = bsc_str_make(path, q ? (size_t)(q - path) : strlen(path)),
                           .query = q ? bsc_str_cstr(q + 1) : BSC_STR_NULL,
                           .body = bsc_buf_str(&h->body),
                           .header = http_header,
                           .ctx = h};
}

static void sim_routes(void **state)
{
    static const struct {
        const char *method, *path;
        enum sim_ep ep;
    } rows[] = {
        {"POST", "/v1beta/models/gemini-2.5-flash:generateContent", SIM_EP_CHAT},
        {"POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", SIM_EP_CHAT},
        {"POST", "/v1beta/models/e:embedContent", SIM_EP_EMBED},
        {"POST", "/v1beta/models/e:batchEmbedContents", SIM_EP_EMBED},
        {"GET", "/v1beta/models", SIM_EP_MODELS},
        {"GET", "/v1beta/models/gemini-2.5-flash", SIM_EP_MODEL},
        {"POST", "/v1beta/models/x:countTokens", SIM_EP_NONE},
        {"GET", "/v1beta/models/x:generateContent", SIM_EP_NONE},
        {"POST", "/v1beta/models/:generateContent", SIM_EP_NONE},
        {"POST", "/v1beta/models/a/b:generateContent", SIM_EP_NONE},
        {"POST", "/v1/chat/completions", SIM_EP_NONE},
        {"GET", "/v1/models", SIM_EP_NONE},
        {"DELETE", "/v1beta/models/x", SIM_EP_NONE},
    };

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        enum sim_ep ep;
        const struct sim_dialect *d;
        if (sim_dialect_gemini.route(bsc_str_cstr(rows[i].method), bsc_str_cstr(rows[i].path)) !=
            rows[i].ep)
            fail_msg("%s %s: not endpoint %d", rows[i].method, rows[i].path, rows[i].ep);
        /* Registered in the sim's table, and no other dialect claims its paths first. */
        d = sim_dialect_route(bsc_str_cstr(rows[i].method), bsc_str_cstr(rows[i].path), &ep);
        if (rows[i].ep != SIM_EP_NONE && (d != &sim_dialect_gemini || ep != rows[i].ep))
            fail_msg("%s %s: the sim routes it to %s", rows[i].method, rows[i].path,
                     d ? d->name : "nothing");
    }
}

/* A sim error body classified by the adapter. */
static void classify_body(int status, struct bsc_str body, struct fail_info *out)
{
    struct prov_err_input in = {.status = status, .body = body};

    OPS->classify(&in, out);
}

static void sim_auth(void **state)
{
    struct prov_http h;
    struct sim_in in;
    struct sim_reject rej = {0};
    struct bsc_buf body;
    struct fail_info fail;
    char why[256];

    (void)state;
    http_init(&h);
    assert_int_equal(build("g", PROV_OP_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":"
                                              "\"x\"}]}", false, &h, why, sizeof(why)),
                     BSC_OK);
    in = sim_in_of(&h);
    assert_true(sim_dialect_gemini.authorize(&in, &rej));
    in.ctx = NULL; /* no headers */
    assert_false(sim_dialect_gemini.authorize(&in, &rej));
    assert_int_equal(rej.status, 403);
    assert_string_equal(rej.type, "PERMISSION_DENIED");
    bsc_buf_init(&body, 65536);
    assert_int_equal(sim_dialect_gemini.error_body(rej.status, rej.type, rej.code, rej.message,
                                                   &body), BSC_OK);
    classify_body(403, bsc_buf_str(&body), &fail);
    assert_int_equal(fail.kind, FAIL_AUTH);
    in.query = BSC_STR("alt=sse&key=AIza-q");
    assert_true(sim_dialect_gemini.authorize(&in, &rej));
    in.query = BSC_STR("key=sk-sim-bad-2");
    assert_false(sim_dialect_gemini.authorize(&in, &rej));
    assert_int_equal(rej.status, 400);
    assert_string_equal(rej.code, "API_KEY_INVALID");
    bsc_buf_reset(&body);
    assert_int_equal(sim_dialect_gemini.error_body(rej.status, rej.type, rej.code, rej.message,
                                                   &body), BSC_OK);
    assert_non_null(strstr(body.p, "\n  \"error\": {")); /* pretty-printed, as Google */
    classify_body(400, bsc_buf_str(&body), &fail);
    assert_int_equal(fail.kind, FAIL_AUTH);
    assert_string_equal(fail.code, "API_KEY_INVALID");
    bsc_buf_cleanup(&body);
    http_cleanup(&h);
}

struct sim_bad_row {
    const char *path, *query, *body;
    const char *msg_has;
};

#define GC "/v1beta/models/g:generateContent"
#define C1 "\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}]"
static const struct sim_bad_row sim_bad_rows[] = {
    {GC, "", "[]", "Expected an object"},
    {GC, "", "{}", "contents is not specified"},
    {GC, "", "{\"contents\":[]}", "contents is not specified"},
    {GC, "", "{\"contents\":[{\"role\":\"user\",\"parts\":[]}]}", "must not be empty"},
    {GC, "", "{\"contents\":[{\"role\":\"assistant\",\"parts\":[{\"text\":\"x\"}]}]}",
     "valid role"},
    {GC, "", "{\"contents\":[{\"parts\":[{\"txt\":\"x\"}]}]}", "Unknown name \"txt\""},
    {GC, "", "{" C1 ",\"system_prompt\":\"x\"}", "Unknown name \"system_prompt\""},
    {GC, "", "{\"contents\":[{\"parts\":[{\"text\":\"x\",\"inlineData\":{\"mimeType\":\"a\","
             "\"data\":\"b\"}}]}]}", "oneof"},
    {GC, "", "{\"contents\":[{\"parts\":[{\"inlineData\":{\"data\":\"b\"}}]}]}", "mime_type"},
    {GC, "", "{\"contents\":[{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"f\","
             "\"args\":[]}}]}]}", "not an object"},
    {GC, "",
     "{\"contents\":[{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"f\"}}]}]}",
     "missing a thought_signature"},
    {GC, "", "{\"contents\":[{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"f\"},"
             "\"thoughtSignature\":\"not base64!\"}]}]}", "Base64"},
    {GC, "", "{\"contents\":[{\"parts\":[{\"functionResponse\":{\"name\":\"f\",\"response\":"
             "\"str\"}}]}]}", "not an object"},
    {GC, "", "{" C1 ",\"generationConfig\":{\"maxOutputTokens\":0}}", "positive"},
    {GC, "", "{" C1 ",\"generationConfig\":{\"candidateCount\":2}}", "one candidate"},
    {GC, "", "{" C1 ",\"generationConfig\":{\"response_json_schema\":{}}}", "response_mime_type"},
    {GC, "", "{" C1 ",\"generationConfig\":{\"responseMimeType\":\"application/json\","
             "\"responseSchema\":{},\"responseJsonSchema\":{}}}", "cannot both"},
    {GC, "", "{" C1 ",\"generationConfig\":{\"maxTokens\":5}}", "Unknown name \"maxTokens\""},
    {GC, "", "{" C1 ",\"tools\":[{\"functionDeclarations\":[{\"name\":\"f\",\"parameters\":{},"
             "\"parametersJsonSchema\":{}}]}]}", "mutually exclusive"},
    {GC, "", "{" C1 ",\"tools\":[{\"functionDeclarations\":[{\"name\":\"f\"}]}],\"toolConfig\":"
             "{\"functionCallingConfig\":{\"mode\":\"AUTO\",\"allowedFunctionNames\":[\"f\"]}}}",
     "only allowed when mode is ANY"},
    {"/v1beta/models/g:streamGenerateContent", "", "{" C1 "}", "alt=sse"},
    {"/v1beta/models/e:batchEmbedContents", "", "{\"requests\":[]}", "1 to 100"},
    {"/v1beta/models/e:batchEmbedContents", "",
     "{\"requests\":[{\"model\":\"models/other\",\"content\":{\"parts\":[{\"text\":\"a\"}]}}]}",
     "must be models/e"},
    {"/v1beta/models/e:embedContent", "", "{\"content\":{}}", "content is not specified"},
};
#undef C1

static void sim_validation(void **state)
{
    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(sim_bad_rows); i++) {
        const struct sim_bad_row *r = &sim_bad_rows[i];
        struct sim_in in = {.method = BSC_STR("POST"),
                            .path = bsc_str_cstr(r->path),
                            .query = bsc_str_cstr(r->query),
                            .body = bsc_str_cstr(r->body),
                            .header = http_header};
        enum sim_ep ep = sim_dialect_gemini.route(in.method, in.path);
        struct sim_call call = {0};
        struct sim_reject rej = {0};

        assert_int_not_equal(ep, SIM_EP_NONE);
        if (sim_dialect_gemini.parse(ep, &in, &call, &rej))
            fail_msg("%s %s: accepted", r->path, r->body);
        if (rej.status != 400 || strcmp(rej.type, "INVALID_ARGUMENT") != 0 ||
            !strstr(rej.message, r->msg_has))
            fail_msg("%s %s: %d %s \"%s\", want \"%s\"", r->path, r->body, rej.status, rej.type,
                     rej.message, r->msg_has);
        sim_call_free(&call);
    }
}
#undef GC

/* Builds <req> for <model>, has the sim parse it (must pass) into <call>. */
static void through_sim(const char *model, enum prov_op op, const char *req, bool stream,
                        struct sim_call *call, uint32_t tokens)
{
    struct prov_http h;
    struct sim_in in;
    struct sim_reject rej = {0};
    enum sim_ep ep;
    char why[256];

    http_init(&h);
    if (build(model, op, req, stream, &h, why, sizeof(why)))
        fail_msg("%s: build failed: %s", req, why);
    in = sim_in_of(&h);
    ep = sim_dialect_gemini.route(in.method, in.path);
    assert_int_not_equal(ep, SIM_EP_NONE);
    assert_true(sim_dialect_gemini.authorize(&in, &rej));
    if (!sim_dialect_gemini.parse(ep, &in, call, &rej))
        fail_msg("%s: the sim refused %.*s: %d %s", req, (int)h.body.len, h.body.p, rej.status,
                 rej.message);
    call->n_tokens = call->max_tokens && call->max_tokens < tokens ? call->max_tokens : tokens;
    call->finish_length = call->max_tokens && call->max_tokens < tokens;
    call->seq = 7;
    http_cleanup(&h);
}

static void sim_round_trip_text(void **state)
{
    struct sim_call call = {0};
    struct bsc_buf body, out, text, want;
    struct prov_usage u;
    struct fail_info fail;
    struct json_object *o, *msg;

    (void)state;
    through_sim("gemini-2.5-flash", PROV_OP_CHAT,
                "{\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\","
                "\"content\":\"hello\"}],\"max_tokens\":5,\"stop\":[\"x\"],\"temperature\":0.2,"
                "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"n\","
                "\"schema\":{\"type\":\"object\"}}}}",
                false, &call, 12);
    assert_string_equal(call.model, "gemini-2.5-flash");
    assert_int_equal(call.max_tokens, 5);
    assert_null(call.tool_name);
    bsc_buf_init(&body, 1 << 20);
    bsc_buf_init(&out, 1 << 20);
    bsc_buf_init(&want, 4096);
    assert_int_equal(sim_dialect_gemini.body(&call, &body), BSC_OK);
    assert_int_equal(map("gemini-2.5-flash", PROV_OP_CHAT, NULL, NULL, body.p, &out, &u, &fail),
                     BSC_OK);
    o = parse(out.p);
    msg = bsc_json_get(json_object_array_get_idx(bsc_json_get(o, "choices"), 0), "message");
    assert_int_equal(sim_content_text(5, &want), BSC_OK);
    assert_string_equal(json_object_get_string(bsc_json_get(msg, "content")), want.p);
    assert_string_equal(json_object_get_string(bsc_json_get(
                            json_object_array_get_idx(bsc_json_get(o, "choices"), 0), "finish_reason")),
                        "length");
    assert_string_equal(json_object_get_string(bsc_json_get(o, "id")), "chatcmpl-sim-7");
    assert_int_equal(u.output_tokens, 5);
    json_object_put(o);
    sim_call_free(&call);

    /* Streamed: every event through the adapter; the text arrives whole, then [DONE]. */
    through_sim("gemini-2.5-flash", PROV_OP_CHAT,
                "{\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}],\"stream\":true}", true,
                &call, 12);
    assert_true(call.stream);
    {
        struct srun r;
        size_t frames, n = sim_dialect_gemini.event_count(&call);
        srun_init(&r, "gemini-2.5-flash", NULL, true);
        for (size_t i = 0; i < n; i++) {
            bsc_buf_reset(&body);
            assert_int_equal(sim_dialect_gemini.event(&call, i, &body), BSC_OK);
            /* framed "data: <json>\r\n\r\n" */
            assert_true(bsc_str_starts(bsc_buf_str(&body), BSC_STR("data: ")));
            assert_memory_equal(body.p + body.len - 4, "\r\n\r\n", 4);
            assert_int_equal(OPS->stream_event(r.st, BSC_STR(""),
                                               bsc_str_make(body.p + 6, body.len - 10), &r.out,
                                               &r.fail),
                             PROV_STREAM_MORE);
        }
        bsc_buf_reset(&body);
        assert_int_equal(sim_dialect_gemini.end_event(&call, &body), BSC_OK);
        assert_int_equal(body.len, 0); /* no terminator */
        assert_int_equal(end(&r), PROV_STREAM_DONE);
        bsc_buf_init(&text, 4096);
        collect_content(bsc_buf_str(&r.out), &text, &frames);
        bsc_buf_reset(&want);
        assert_int_equal(sim_content_text(12, &want), BSC_OK);
        assert_int_equal(text.len, want.len);
        assert_memory_equal(text.p, want.p, want.len);
        assert_int_equal(frames, 12);
        assert_non_null(strstr(r.out.p, "\"completion_tokens\":12"));
        bsc_buf_cleanup(&text);
        srun_cleanup(&r);
    }
    sim_call_free(&call);
    bsc_buf_cleanup(&body);
    bsc_buf_cleanup(&out);
    bsc_buf_cleanup(&want);
}

static void sim_round_trip_tools(void **state)
{
    static const char *const tools =
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":"
        "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}}}]";
    struct sim_call call = {0};
    struct bsc_buf body, out, next;
    struct prov_usage u;
    struct fail_info fail;
    struct json_object *o, *msg, *tc;
    char req[4096];

    (void)state;
    snprintf(req, sizeof(req), "{\"messages\":[{\"role\":\"user\",\"content\":\"Oslo \xc3\xb8?\"}],"
                               "%s,\"tool_choice\":\"required\"}", tools);
    through_sim("gemini-3-sim", PROV_OP_CHAT, req, false, &call, 12);
    assert_string_equal(call.tool_name, "get_weather");
    bsc_buf_init(&body, 1 << 20);
    bsc_buf_init(&out, 1 << 20);
    bsc_buf_init(&next, 1 << 20);
    assert_int_equal(sim_dialect_gemini.body(&call, &body), BSC_OK);
    assert_int_equal(map("gemini-3-sim", PROV_OP_CHAT, NULL, "req-9", body.p, &out, &u, &fail),
                     BSC_OK);
    o = parse(out.p);
    msg = bsc_json_get(json_object_array_get_idx(bsc_json_get(o, "choices"), 0), "message");
    tc = json_object_array_get_idx(bsc_json_get(msg, "tool_calls"), 0);
    assert_string_equal(json_object_get_string(bsc_json_get(bsc_json_get(tc, "function"), "arguments")),
                        "{\"city\":\"Oslo\"}");
    assert_string_equal(
        json_object_get_string(bsc_json_get(bsc_json_get(bsc_json_get(tc, "extra_content"), "google"),
                                       "thought_signature")),
        SIM_SIGNATURE);
    sim_call_free(&call);

    /* Turn 2: the assistant message as the client got it, then the tool result. The sim
     * demands the signature back, and answers text after a function response. */
    assert_int_equal(bsc_buf_appendf(&next, "{\"messages\":[{\"role\":\"user\",\"content\":"
                                            "\"Oslo?\"},%s,{\"role\":\"tool\",\"tool_call_id\":",
                                     json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN)),
                     BSC_OK);
    assert_int_equal(bsc_buf_append_json_str(&next, bsc_str_cstr(json_object_get_string(
                                                        bsc_json_get(tc, "id")))),
                     BSC_OK);
    assert_int_equal(bsc_buf_appendf(&next, ",\"content\":\"4 C\"}],%s}", tools), BSC_OK);
    through_sim("gemini-3-sim", PROV_OP_CHAT, next.p, false, &call, 3);
    assert_null(call.tool_name);
    sim_call_free(&call);

    /* A client that dropped the signature still passes on Gemini 3 (placeholder)... */
    {
        struct prov_http h;
        struct sim_in in;
        struct sim_reject rej = {0};
        struct sim_call c2 = {0};
        char why[256];
        const char *dropped =
            "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\","
            "\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\","
            "\"arguments\":\"{}\"}}]},{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":"
            "\"ok\"}]}";
        through_sim("gemini-3-sim", PROV_OP_CHAT, dropped, false, &c2, 3);
        sim_call_free(&c2);
        /* ... but not on a model the adapter believes needs none (the sim acts as Gemini 3). */
        http_init(&h);
        assert_int_equal(build("gemini-2.5-flash", PROV_OP_CHAT, dropped, false, &h, why,
                               sizeof(why)), BSC_OK);
        in = sim_in_of(&h);
        assert_false(sim_dialect_gemini.parse(SIM_EP_CHAT, &in, &c2, &rej));
        assert_non_null(strstr(rej.message, "thought_signature"));
        sim_call_free(&c2);
        http_cleanup(&h);
    }
    json_object_put(o);
    bsc_buf_cleanup(&body);
    bsc_buf_cleanup(&out);
    bsc_buf_cleanup(&next);
}

static void sim_round_trip_embeddings(void **state)
{
    struct sim_call call = {0};
    struct bsc_buf body, out;
    struct prov_usage u;
    struct fail_info fail;
    struct json_object *o;
    float v[SIM_EMBED_DIM];

    (void)state;
    bsc_buf_init(&body, 1 << 20);
    bsc_buf_init(&out, 1 << 20);
    through_sim("text-embedding-004", PROV_OP_EMBEDDINGS, "{\"input\":[\"a\",\"b\",\"c\"]}",
                false, &call, 1);
    assert_int_equal(call.n_inputs, 3);
    assert_string_equal(call.inputs[2], "c");
    assert_int_equal(sim_dialect_gemini.body(&call, &body), BSC_OK);
    assert_int_equal(map("text-embedding-004", PROV_OP_EMBEDDINGS,
                         "{\"input\":[\"a\",\"b\",\"c\"]}",
                         NULL, body.p, &out, &u, &fail),
                     BSC_OK);
    o = parse(out.p);
    assert_int_equal(json_object_array_length(bsc_json_get(o, "data")), 3);
    sim_content_embedding(BSC_STR("b"), v);
    assert_true(fabs(json_object_get_double(json_object_array_get_idx(
                         bsc_json_get(json_object_array_get_idx(bsc_json_get(o, "data"), 1), "embedding"),
                         0)) - (double)v[0]) < 1e-6);
    json_object_put(o);
    sim_call_free(&call);

    bsc_buf_reset(&body);
    bsc_buf_reset(&out);
    through_sim("text-embedding-004", PROV_OP_EMBEDDINGS, "{\"input\":\"solo\"}", false, &call, 1);
    assert_int_equal(call.n_inputs, 1);
    assert_int_equal(sim_dialect_gemini.body(&call, &body), BSC_OK);
    assert_true(bsc_str_starts(bsc_buf_str(&body), BSC_STR("{\"embedding\":")));
    assert_int_equal(map("text-embedding-004", PROV_OP_EMBEDDINGS, "{\"input\":\"solo\"}", NULL,
                         body.p, &out, &u, &fail),
                     BSC_OK);
    sim_call_free(&call);
    bsc_buf_cleanup(&body);
    bsc_buf_cleanup(&out);
}

/* The sim's faults, read back by the adapter. */
static void sim_faults(void **state)
{
    struct sim_call call = {.model = (char *)"gemini-x"};
    struct bsc_buf b;
    struct fail_info fail;
    const char *type, *code;
    char msg[512];
    static const struct {
        int status;
        enum fail_kind kind;
    } rows[] = {{400, FAIL_INVALID_REQUEST}, {401, FAIL_AUTH}, {403, FAIL_PERMISSION},
                {404, FAIL_NOT_FOUND}, {429, FAIL_RATE_LIMITED}, {500, FAIL_SERVER_ERROR},
                {503, FAIL_OVERLOADED}, {504, FAIL_TIMEOUT}};

    (void)state;
    bsc_buf_init(&b, 65536);
    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        bsc_buf_reset(&b);
        sim_dialect_gemini.default_error(&call, rows[i].status, &type, &code, msg, sizeof(msg));
        assert_int_equal(sim_dialect_gemini.error_body(rows[i].status, type, code, msg, &b),
                         BSC_OK);
        classify_body(rows[i].status, bsc_buf_str(&b), &fail);
        if (fail.kind != rows[i].kind)
            fail_msg("%d: %s", rows[i].status, fail_kind_name(fail.kind));
        if (rows[i].status == 429) {
            assert_int_equal(fail.retry_after_ms, 1000);
            assert_string_equal(fail.code, "GenerateRequestsPerMinutePerProjectPerModel");
        }
    }
    /* A per-day quota scripted as error_code. */
    bsc_buf_reset(&b);
    assert_int_equal(sim_dialect_gemini.error_body(429, "RESOURCE_EXHAUSTED",
                                                   "GenerateRequestsPerDayPerProjectPerModel", "q",
                                                   &b),
                     BSC_OK);
    classify_body(429, bsc_buf_str(&b), &fail);
    assert_int_equal(fail.kind, FAIL_QUOTA_EXHAUSTED);
    /* error_200: the body goes out under 200 and still names its own code. */
    bsc_buf_reset(&b);
    sim_dialect_gemini.default_error(&call, 500, &type, &code, msg, sizeof(msg));
    assert_int_equal(sim_dialect_gemini.error_body(200, type, code, msg, &b), BSC_OK);
    assert_non_null(strstr(b.p, "\"code\": 500"));
    classify_body(200, bsc_buf_str(&b), &fail);
    assert_int_equal(fail.kind, FAIL_SERVER_ERROR);
    /* The in-stream error is bare pretty-printed JSON: fed line by line as the SSE parser
     * hands over unknown lines. */
    bsc_buf_reset(&b);
    assert_int_equal(sim_dialect_gemini.error_event(200, "UNAVAILABLE", NULL, "busy", &b), BSC_OK);
    assert_false(bsc_str_starts(bsc_buf_str(&b), BSC_STR("data:")));
    {
        struct srun r;
        enum prov_stream_status st = PROV_STREAM_MORE;
        srun_init(&r, "g", NULL, false);
        for (char *p = b.p, *nl; st == PROV_STREAM_MORE && (nl = strchr(p, '\n')); p = nl + 1)
            st = line(&r, (*nl = '\0', p));
        assert_int_equal(st, PROV_STREAM_ERROR);
        assert_int_equal(r.fail.kind, FAIL_OVERLOADED);
        srun_cleanup(&r);
    }
    /* Malformed answers. */
    bsc_buf_reset(&b);
    call.seq = 1;
    assert_int_equal(sim_dialect_gemini.malformed_body(&call, &b), BSC_OK);
    {
        struct bsc_buf out;
        struct prov_usage u;
        bsc_buf_init(&out, 65536);
        assert_int_equal(map("g", PROV_OP_CHAT, NULL, NULL, b.p, &out, &u, &fail), BSC_EPARSE);
        assert_int_equal(fail.kind, FAIL_SERVER_ERROR);
        bsc_buf_cleanup(&out);
    }
    bsc_buf_cleanup(&b);
}

/* Scripted finish reasons, in Gemini's words. */
static void sim_scripted_finish(void **state)
{
    struct sim_call call = {.model = (char *)"g", .n_tokens = 2, .seq = 3};
    struct bsc_buf b, out;
    struct prov_usage u;
    struct fail_info fail;

    (void)state;
    bsc_buf_init(&b, 65536);
    bsc_buf_init(&out, 65536);
    call.finish_reason = "SAFETY";
    assert_int_equal(sim_dialect_gemini.body(&call, &b), BSC_OK);
    assert_int_equal(map("g", PROV_OP_CHAT, NULL, NULL, b.p, &out, &u, &fail), BSC_OK);
    assert_non_null(strstr(out.p, "\"finish_reason\":\"content_filter\""));
    bsc_buf_reset(&b);
    call.finish_reason = "MALFORMED_FUNCTION_CALL";
    assert_int_equal(sim_dialect_gemini.body(&call, &b), BSC_OK);
    assert_null(strstr(b.p, "\"content\""));
    assert_int_equal(map("g", PROV_OP_CHAT, NULL, NULL, b.p, &out, &u, &fail), BSC_EPARSE);
    assert_int_equal(fail.kind, FAIL_CONTRACT_FAILURE);
    assert_int_equal(sim_dialect_gemini.event_count(&call), 1);
    bsc_buf_cleanup(&b);
    bsc_buf_cleanup(&out);
}

static void sim_models(void **state)
{
    static const char *const names[] = {"gemini-2.5-flash", "we\"ird"};
    struct sim_call call = {.ep = SIM_EP_MODELS};
    struct bsc_buf b, out;
    struct prov_usage u;
    struct fail_info fail;

    (void)state;
    bsc_buf_init(&b, 65536);
    bsc_buf_init(&out, 65536);
    assert_int_equal(sim_dialect_gemini.models(&call, names, 2, &b), BSC_OK);
    assert_int_equal(map("g", PROV_OP_PROBE_MODELS, NULL, NULL, b.p, &out, &u, &fail), BSC_OK);
    expect_json("models", bsc_buf_str(&out),
                "{\"object\":\"list\",\"data\":[{\"id\":\"gemini-2.5-flash\",\"object\":\"model\","
                "\"created\":0,\"owned_by\":\"google\"},{\"id\":\"we\\\"ird\",\"object\":\"model\","
                "\"created\":0,\"owned_by\":\"google\"}]}");
    bsc_buf_reset(&b);
    call.ep = SIM_EP_MODEL;
    call.model = (char *)"gemini-2.5-flash";
    assert_int_equal(sim_dialect_gemini.models(&call, NULL, 0, &b), BSC_OK);
    assert_non_null(strstr(b.p, "\"name\":\"models/gemini-2.5-flash\""));
    bsc_buf_cleanup(&b);
    bsc_buf_cleanup(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(request_goldens),
        cmocka_unit_test(request_url_and_headers),
        cmocka_unit_test(request_probes),
        cmocka_unit_test(request_embeddings),
        cmocka_unit_test(request_refusals),
        cmocka_unit_test(request_helpers),
        cmocka_unit_test(answer_text_and_usage),
        cmocka_unit_test(answer_tool_calls),
        cmocka_unit_test(answer_tool_ids),
        cmocka_unit_test(answer_candidates),
        cmocka_unit_test(answer_finish_reasons),
        cmocka_unit_test(answer_failures),
        cmocka_unit_test(answer_broken_call_with_text),
        cmocka_unit_test(answer_embeddings),
        cmocka_unit_test(answer_models),
        cmocka_unit_test(stream_text_with_usage),
        cmocka_unit_test(stream_tool_calls),
        cmocka_unit_test(stream_utf8_every_split),
        cmocka_unit_test(stream_two_candidates),
        cmocka_unit_test(stream_failures),
        cmocka_unit_test(stream_broken_call_after_text),
        cmocka_unit_test(stream_eof_without_finish),
        cmocka_unit_test(stream_bare_json_error),
        cmocka_unit_test(classify_table),
        cmocka_unit_test(sim_routes),
        cmocka_unit_test(sim_auth),
        cmocka_unit_test(sim_validation),
        cmocka_unit_test(sim_round_trip_text),
        cmocka_unit_test(sim_round_trip_tools),
        cmocka_unit_test(sim_round_trip_embeddings),
        cmocka_unit_test(sim_faults),
        cmocka_unit_test(sim_scripted_finish),
        cmocka_unit_test(sim_models),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
