/* SPDX-License-Identifier: MIT */
/* dialect_gemini.c -- bascule-sim speaking the Gemini API (generativelanguage v1beta):
 * POST /v1beta/models/{model}:generateContent, :streamGenerateContent?alt=sse (one whole
 * GenerateContentResponse per CRLF-framed event, no terminator: the stream just ends after
 * the chunk carrying finishReason), :embedContent, :batchEmbedContents, GET /v1beta/models
 * and /v1beta/models/{model}; google.rpc.Status error bodies, pretty-printed as Google
 * prints them, and the bare JSON error object a stream can end with (docs/providers.md §3).
 * It validates what the real API rejects with 400 (unknown fields, empty parts, oneof
 * parts, function calls replayed without a thought signature, schema fields that exclude
 * each other), so an adapter's mistakes show. Parsing and rendering only; the runtime
 * (exchange.c) decides what to send and when. See docs/internals/sim.md. */
#include "dialect.h"

#include <ctype.h>
#include <stdarg.h>

#include "content.h"
#include "schema_gen.h"
#include "sjson.h"

#include "core/compat.h"

#define SIMGEM_PREFIX "/v1beta/models"
#define SIMGEM_MAX_BATCH 100u /* batchEmbedContents requests per call, as the API */
/* struct sim_call has no field for the embeddings method; Gemini has no base64 encoding,
 * so this dialect keeps "the call was batchEmbedContents" in <base64>, which it never
 * uses otherwise. */
#define SIMGEM_IS_BATCH(call) ((call)->base64)
/* The thought signature the sim puts on its function calls (base64, like a real one). */
#define SIMGEM_SIM_SIGNATURE "YmFzY3VsZS1zaW0gdGhvdWdodCBzaWduYXR1cmU="

/* ---- routing and auth ---- */

/* Splits "/v1beta/models/<model>[:<method>]" into its pieces; false for other paths. */
static bool gs_split_path(struct bsc_str path, struct bsc_str *model, struct bsc_str *method)
{
    const char *colon;
    size_t n = sizeof(SIMGEM_PREFIX) - 1;

    if (path.len <= n + 1 || memcmp(path.p, SIMGEM_PREFIX "/", n + 1) != 0)
        return false;
    *model = bsc_str_make(path.p + n + 1, path.len - n - 1);
    colon = memchr(model->p, ':', model->len);
    *method = BSC_STR_NULL;
    if (colon) {
        *method = bsc_str_make(colon + 1, model->len - (size_t)(colon + 1 - model->p));
        model->len = (size_t)(colon - model->p);
    }
    return model->len > 0 && !memchr(model->p, '/', model->len);
}

static enum sim_ep gs_route(struct bsc_str method, struct bsc_str path)
{
    struct bsc_str model, verb;
    bool get = bsc_str_eq(method, BSC_STR("GET"));

    if (get && bsc_str_eq(path, BSC_STR(SIMGEM_PREFIX)))
        return SIM_EP_MODELS;
    if (!gs_split_path(path, &model, &verb))
        return SIM_EP_NONE;
    if (get)
        return verb.p ? SIM_EP_NONE : SIM_EP_MODEL;
    if (!bsc_str_eq(method, BSC_STR("POST")))
        return SIM_EP_NONE;
    if (bsc_str_eq(verb, BSC_STR("generateContent")) ||
        bsc_str_eq(verb, BSC_STR("streamGenerateContent")))
        return SIM_EP_CHAT;
    if (bsc_str_eq(verb, BSC_STR("embedContent")) ||
        bsc_str_eq(verb, BSC_STR("batchEmbedContents")))
        return SIM_EP_EMBED;
    return SIM_EP_NONE;
}

/* The value of query parameter <name> (not decoded), or empty. */
static struct bsc_str gs_query_param(struct bsc_str q, const char *name)
{
    size_t n = strlen(name);

    for (size_t i = 0; i < q.len;) {
        size_t end = i;
        while (end < q.len && q.p[end] != '&')
            end++;
        if (end - i > n && memcmp(q.p + i, name, n) == 0 && q.p[i + n] == '=')
            return bsc_str_make(q.p + i + n + 1, end - i - n - 1);
        i = end + 1;
    }
    return BSC_STR_NULL;
}

static bool gs_authorize(const struct sim_in *in, struct sim_reject *rej)
{
    struct bsc_str key = bsc_str_trim(in->header(in->ctx, BSC_STR("x-goog-api-key")));

    if (!key.len)
        key = gs_query_param(in->query, "key");
    if (!key.len) {
        /* What the API answers a call without credentials: a 403, not a 401. */
        sim_reject_set(rej, 403, "PERMISSION_DENIED", NULL,
                       "Method doesn't allow unregistered callers (callers without established "
                       "identity). Please use API Key or other form of API consumer identity to "
                       "call this API.");
        return false;
    }
    /* Every key starting with sk-sim-bad is refused: an invalid key is a 400 with reason
     * API_KEY_INVALID. */
    if (bsc_str_starts(key, BSC_STR("sk-sim-bad"))) {
        sim_reject_set(rej, 400, "INVALID_ARGUMENT", "API_KEY_INVALID",
                       "API key not valid. Please pass a valid API key.");
        return false;
    }
    return true;
}

/* ---- request validation ---- */

static bool gs_bad(struct sim_reject *rej, const char *fmt, ...) BSC_PRINTF(2, 3);

static bool gs_bad(struct sim_reject *rej, const char *fmt, ...)
{
    va_list ap;

    rej->status = 400;
    rej->type = "INVALID_ARGUMENT";
    rej->code = NULL;
    va_start(ap, fmt);
    vsnprintf(rej->message, sizeof(rej->message), fmt, ap);
    va_end(ap);
    return false;
}

/* Proto3 JSON accepts a field as lowerCamelCase or as its snake_case proto name: compare
 * with underscores dropped and case folded. */
static bool gs_same_field(const char *a, const char *b)
{
    for (;;) {
        while (*a == '_')
            a++;
        while (*b == '_')
            b++;
        if (!*a || !*b)
            return !*a && !*b;
        if (tolower((unsigned char)*a++) != tolower((unsigned char)*b++))
            return false;
    }
}

/* False with a 400 when <o> has a field not in <known> (the API refuses unknown names). */
static bool gs_known_fields(struct json_object *o, const char *const *known, size_t n,
                            const char *where, struct sim_reject *rej)
{
    if (!o || !json_object_is_type(o, json_type_object))
        return true;
    json_object_object_foreach(o, key, val)
    {
        bool ok = false;
        (void)val;
        for (size_t i = 0; i < n && !ok; i++)
            ok = gs_same_field(key, known[i]);
        if (!ok)
            return gs_bad(rej, "Invalid JSON payload received. Unknown name \"%.64s\" at '%s': "
                               "Cannot find field.", key, where);
    }
    return true;
}

/* Field <camel> of <o> in either spelling; NULL when absent or <o> is not an object. */
static struct json_object *gs_field(struct json_object *o, const char *camel)
{
    if (!o || !json_object_is_type(o, json_type_object))
        return NULL;
    json_object_object_foreach(o, key, val)
    {
        if (gs_same_field(key, camel))
            return val;
    }
    return NULL;
}

static bool gs_is_base64(struct bsc_str s)
{
    for (size_t i = 0; i < s.len; i++)
        if (!isalnum((unsigned char)s.p[i]) && !strchr("+/=_-", s.p[i]))
            return false;
    return s.len > 0;
}

struct gs_scan {
    size_t text_bytes;         /* all text, for prompt tokens */
    struct json_object *last;  /* the last content */
};

static const char *const gs_part_fields[] = {"text", "inlineData", "fileData", "functionCall",
                                          "functionResponse", "thought", "thoughtSignature",
                                          "executableCode", "codeExecutionResult",
                                          "videoMetadata"};

static bool gs_check_call(struct json_object *fc, const char *where, struct sim_reject *rej)
{
    struct json_object *args = gs_field(fc, "args");

    if (!json_object_is_type(fc, json_type_object) || !sim_json_get_str(fc, "name").len)
        return gs_bad(rej, "* GenerateContentRequest.%s.function_call.name: Name cannot be empty.",
                      where);
    if (args && !json_object_is_type(args, json_type_object))
        return gs_bad(rej, "Invalid value at '%s.function_call.args' (type.googleapis.com/"
                           "google.protobuf.Struct), not an object", where);
    return true;
}

static bool gs_check_response(struct json_object *fr, const char *where, struct sim_reject *rej)
{
    if (!json_object_is_type(fr, json_type_object) || !sim_json_get_str(fr, "name").len)
        return gs_bad(rej, "* GenerateContentRequest.%s.function_response.name: Name cannot be "
                           "empty.", where);
    if (!json_object_is_type(gs_field(fr, "response"), json_type_object))
        return gs_bad(rej, "Invalid value at '%s.function_response.response' (type.googleapis."
                           "com/google.protobuf.Struct), not an object", where);
    return true;
}

/* One part: exactly one kind of data, each well formed. */
static bool gs_check_part(struct json_object *p, const char *where, struct gs_scan *sc,
                          struct sim_reject *rej)
{
    static const char *const kinds[] = {"text", "inlineData", "fileData", "functionCall",
                                        "functionResponse"};
    struct json_object *v, *sig = gs_field(p, "thoughtSignature");
    size_t n = 0;

    if (!json_object_is_type(p, json_type_object))
        return gs_bad(rej, "Invalid value at '%s': not an object", where);
    if (!gs_known_fields(p, gs_part_fields, BSC_ARRAY_LEN(gs_part_fields), where, rej))
        return false;
    for (size_t i = 0; i < BSC_ARRAY_LEN(kinds); i++)
        n += gs_field(p, kinds[i]) != NULL;
    if (n != 1)
        return gs_bad(rej, "* GenerateContentRequest.%s.data: required oneof field 'data' must "
                           "have one initialized field", where);
    if ((v = gs_field(p, "text"))) {
        if (!json_object_is_type(v, json_type_string))
            return gs_bad(rej, "Invalid value at '%s.text' (TYPE_STRING)", where);
        sc->text_bytes += (size_t)json_object_get_string_len(v);
    }
    if ((v = gs_field(p, "inlineData")) &&
        (!sim_json_get_str(v, "mimeType").len || !sim_json_get_str(v, "data").len))
        return gs_bad(rej, "* GenerateContentRequest.%s.inline_data: mime_type and data are "
                           "required", where);
    if ((v = gs_field(p, "functionCall")) && !gs_check_call(v, where, rej))
        return false;
    if ((v = gs_field(p, "functionResponse")) && !gs_check_response(v, where, rej))
        return false;
    if (sig && (!json_object_is_type(sig, json_type_string) ||
                !gs_is_base64(bsc_str_make(json_object_get_string(sig),
                                           (size_t)json_object_get_string_len(sig)))))
        return gs_bad(rej, "Invalid value at '%s.thought_signature' (TYPE_BYTES), Base64 "
                           "decoding failed", where);
    return true;
}

/* A model turn replaying function calls must carry the signature on its first call, as
 * Gemini 3 models demand. */
static bool gs_check_signature(struct json_object *parts, size_t ci, struct sim_reject *rej)
{
    for (size_t j = 0; j < json_object_array_length(parts); j++) {
        struct json_object *p = json_object_array_get_idx(parts, j);
        struct json_object *fc = gs_field(p, "functionCall");
        if (!fc)
            continue;
        if (gs_field(p, "thoughtSignature"))
            return true;
        return gs_bad(rej, "Function call is missing a thought_signature in functionCall parts. "
                           "This is required for tools to work correctly. Additional data, "
                           "function call `default_api:%.64s`, position %zu.",
                   sim_json_get_str(fc, "name").p ? sim_json_get_str(fc, "name").p : "", ci + 1);
    }
    return true;
}

static bool gs_check_content(struct json_object *c, size_t ci, struct gs_scan *sc,
                             struct sim_reject *rej)
{
    static const char *const fields[] = {"role", "parts"};
    struct json_object *parts = gs_field(c, "parts");
    struct bsc_str role = sim_json_get_str(c, "role");
    char where[64];

    snprintf(where, sizeof(where), "contents[%zu]", ci);
    if (!json_object_is_type(c, json_type_object))
        return gs_bad(rej, "Invalid value at '%s': not an object", where);
    if (!gs_known_fields(c, fields, BSC_ARRAY_LEN(fields), where, rej))
        return false;
    if (role.p && !bsc_str_eq(role, BSC_STR("user")) && !bsc_str_eq(role, BSC_STR("model")))
        return gs_bad(rej, "Please use a valid role: user, model.");
    if (!json_object_is_type(parts, json_type_array) || json_object_array_length(parts) == 0)
        return gs_bad(rej, "* GenerateContentRequest.%s.parts: contents.parts must not be empty.",
                      where);
    for (size_t j = 0; j < json_object_array_length(parts); j++) {
        char pw[96];
        snprintf(pw, sizeof(pw), "%s.parts[%zu]", where, j);
        if (!gs_check_part(json_object_array_get_idx(parts, j), pw, sc, rej))
            return false;
    }
    if (bsc_str_eq(role, BSC_STR("model")) && !gs_check_signature(parts, ci, rej))
        return false;
    sc->last = c;
    return true;
}

static bool gs_check_system(struct json_object *si, struct gs_scan *sc, struct sim_reject *rej)
{
    struct json_object *parts = gs_field(si, "parts");

    if (!si)
        return true;
    if (!json_object_is_type(parts, json_type_array))
        return gs_bad(rej, "* GenerateContentRequest.system_instruction.parts: must be a list");
    for (size_t j = 0; j < json_object_array_length(parts); j++) {
        struct json_object *t = gs_field(json_object_array_get_idx(parts, j), "text");
        if (!json_object_is_type(t, json_type_string))
            return gs_bad(rej, "* GenerateContentRequest.system_instruction.parts[%zu]: text "
                               "parts only", j);
        sc->text_bytes += (size_t)json_object_get_string_len(t);
    }
    return true;
}

static const char *const gs_gen_fields[] = {
    "stopSequences", "responseMimeType", "responseSchema", "responseJsonSchema",
    "responseModalities", "candidateCount", "maxOutputTokens", "temperature", "topP", "topK",
    "seed", "presencePenalty", "frequencyPenalty", "responseLogprobs", "logprobs",
    "enableEnhancedCivicAnswers", "speechConfig", "thinkingConfig", "mediaResolution",
    "imageConfig"};

static bool gs_check_generation(struct json_object *g, struct sim_call *call,
                                struct sim_reject *rej)
{
    struct json_object *v;
    struct bsc_str mime;
    int64_t n;

    if (!g)
        return true;
    if (!json_object_is_type(g, json_type_object) ||
        !gs_known_fields(g, gs_gen_fields, BSC_ARRAY_LEN(gs_gen_fields), "generation_config", rej))
        return rej->status ? false : gs_bad(rej, "generation_config must be an object");
    if ((v = gs_field(g, "maxOutputTokens"))) {
        if (!json_object_is_type(v, json_type_int) || (n = json_object_get_int64(v)) < 1)
            return gs_bad(rej, "* GenerateContentRequest.generation_config.max_output_tokens: "
                               "must be a positive integer");
        call->max_tokens = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
    }
    if ((v = gs_field(g, "candidateCount")) && json_object_get_int64(v) > 1)
        return gs_bad(rej, "bascule-sim answers one candidate only (candidateCount %lld)",
                      (long long)json_object_get_int64(v));
    if ((v = gs_field(g, "stopSequences")) &&
        (!json_object_is_type(v, json_type_array) || json_object_array_length(v) > 5))
        return gs_bad(rej, "* GenerateContentRequest.generation_config.stop_sequences: at most 5");
    mime = sim_json_get_str(g, "responseMimeType");
    if (gs_field(g, "responseSchema") && gs_field(g, "responseJsonSchema"))
        return gs_bad(rej, "responseSchema and responseJsonSchema cannot both be set");
    if ((gs_field(g, "responseSchema") || gs_field(g, "responseJsonSchema")) &&
        !bsc_str_eq(mime, BSC_STR("application/json")) && !bsc_str_eq(mime, BSC_STR("text/x.enum")))
        return gs_bad(rej, "* GenerateContentRequest.generation_config.response_mime_type: "
                           "response_mime_type must be application/json when a schema is set");
    return true;
}

/* Tool declarations; *<first> is the first function's name, *<allowed> the first
 * allowedFunctionNames entry, *<none> when the mode is NONE. */
static bool gs_check_tools(struct json_object *o, const char **first, const char **allowed,
                           bool *none, struct sim_reject *rej)
{
    struct json_object *tools = gs_field(o, "tools"), *cfg, *names;
    struct bsc_str mode;

    for (size_t i = 0; tools && i < json_object_array_length(tools); i++) {
        struct json_object *decls = gs_field(json_object_array_get_idx(tools, i),
                                             "functionDeclarations");
        for (size_t k = 0; decls && k < json_object_array_length(decls); k++) {
            struct json_object *d = json_object_array_get_idx(decls, k);
            struct bsc_str name = sim_json_get_str(d, "name");
            if (!name.len || name.len > 64)
                return gs_bad(rej, "* GenerateContentRequest.tools[%zu].function_declarations[%zu]"
                                   ".name: Invalid function name.", i, k);
            if (gs_field(d, "parameters") && gs_field(d, "parametersJsonSchema"))
                return gs_bad(rej, "parameters and parameters_json_schema are mutually exclusive");
            if (!*first)
                *first = name.p;
        }
    }
    cfg = gs_field(gs_field(o, "toolConfig"), "functionCallingConfig");
    mode = sim_json_get_str(cfg, "mode");
    names = gs_field(cfg, "allowedFunctionNames");
    if (mode.p && !bsc_str_eq(mode, BSC_STR("AUTO")) && !bsc_str_eq(mode, BSC_STR("ANY")) &&
        !bsc_str_eq(mode, BSC_STR("NONE")) && !bsc_str_eq(mode, BSC_STR("VALIDATED")))
        return gs_bad(rej, "Invalid value at 'tool_config.function_calling_config.mode'");
    if (names && json_object_array_length(names) && !bsc_str_eq(mode, BSC_STR("ANY")))
        return gs_bad(rej, "* GenerateContentRequest.tool_config.function_calling_config."
                           "allowed_function_names: only allowed when mode is ANY");
    if (names && json_object_array_length(names))
        *allowed = json_object_get_string(json_object_array_get_idx(names, 0));
    *none = bsc_str_eq(mode, BSC_STR("NONE"));
    return true;
}

/* The text of the last content, for the tool-call echo; NULL when it is not a user turn
 * of its own (a function response gets a text answer). */
static bool gs_user_text(struct json_object *last, struct bsc_buf *out)
{
    struct json_object *parts = gs_field(last, "parts");
    struct bsc_str role = sim_json_get_str(last, "role");

    if (role.p && !bsc_str_eq(role, BSC_STR("user")))
        return false;
    for (size_t j = 0; j < json_object_array_length(parts); j++) {
        struct json_object *p = json_object_array_get_idx(parts, j);
        struct bsc_str t = sim_json_get_str(p, "text");
        size_t room = out->max > out->len ? out->max - out->len : 0;
        if (gs_field(p, "functionResponse"))
            return false;
        bsc_buf_append(out, t.p, t.len < room ? t.len : room);
    }
    return true;
}

/* The parameters of function <name>: parametersJsonSchema, else the OpenAPI-style
 * parameters (borrowed), or NULL. */
static struct json_object *gs_tool_schema(struct json_object *o, const char *name)
{
    struct json_object *tools = gs_field(o, "tools"), *decls, *d, *v;

    for (size_t i = 0; json_object_is_type(tools, json_type_array) &&
                       i < json_object_array_length(tools);
         i++) {
        decls = gs_field(json_object_array_get_idx(tools, i), "functionDeclarations");
        for (size_t k = 0; json_object_is_type(decls, json_type_array) &&
                           k < json_object_array_length(decls);
             k++) {
            d = json_object_array_get_idx(decls, k);
            if (!bsc_str_eq(sim_json_get_str(d, "name"), bsc_str_cstr(name)))
                continue;
            v = gs_field(d, "parametersJsonSchema");
            return v ? v : gs_field(d, "parameters");
        }
    }
    return NULL;
}

static bool gs_pick_tool(struct json_object *o, struct json_object *last, struct sim_call *call,
                         struct sim_reject *rej)
{
    const char *first = NULL, *allowed = NULL, *name;
    bool none = false, ok;
    struct bsc_buf text;

    if (!gs_check_tools(o, &first, &allowed, &none, rej))
        return false;
    if (!first || none)
        return true;
    bsc_buf_init(&text, SIM_ECHO_CHARS * 8);
    ok = true;
    if (gs_user_text(last, &text)) {
        name = allowed ? allowed : first;
        call->tool_args = sim_schema_tool_args(gs_tool_schema(o, name), bsc_buf_str(&text));
        call->tool_name = call->tool_args ? bsc_str_dup(bsc_str_cstr(name)) : NULL;
        ok = call->tool_name && call->tool_args;
    }
    bsc_buf_cleanup(&text);
    if (!ok)
        sim_reject_set(rej, 500, "INTERNAL", NULL, "out of memory");
    return ok;
}

/* responseMimeType application/json: an instance of responseJsonSchema / responseSchema,
 * or {"answer": ...} without one; text/x.enum: the enum value itself, as text. Kept in
 * <call>->json_answer for a text answer. */
static bool gs_parse_format(struct json_object *o, struct sim_call *call, struct sim_reject *rej)
{
    struct json_object *g = gs_field(o, "generationConfig");
    struct json_object *mime = gs_field(g, "responseMimeType");
    struct json_object *schema = gs_field(g, "responseJsonSchema"), *v = NULL;
    bool as_enum = json_object_is_type(mime, json_type_string) &&
                   strcmp(json_object_get_string(mime), "text/x.enum") == 0;
    struct bsc_buf b;

    if (!schema)
        schema = gs_field(g, "responseSchema");
    if (call->tool_name || !json_object_is_type(mime, json_type_string) ||
        (!as_enum && strcmp(json_object_get_string(mime), "application/json") != 0))
        return true;
    if (as_enum) {
        if (schema && sim_schema_gen(schema, &v) == BSC_OK &&
            json_object_is_type(v, json_type_string))
            call->json_answer = bsc_str_dup(bsc_str_cstr(json_object_get_string(v)));
        json_object_put(v);
        return true; /* without an enum to pick from: the sentence */
    }
    if (schema)
        call->json_answer = sim_schema_gen_dup(schema);
    if (!call->json_answer) {
        bsc_buf_init(&b, 4096);
        if (sim_content_json_answer(&b) == BSC_OK)
            call->json_answer = bsc_buf_take(&b, NULL);
        bsc_buf_cleanup(&b);
    }
    if (!call->json_answer)
        sim_reject_set(rej, 500, "INTERNAL", NULL, "out of memory");
    return call->json_answer != NULL;
}

static const char *const gs_req_fields[] = {"contents", "systemInstruction", "tools", "toolConfig",
                                         "generationConfig", "safetySettings", "cachedContent",
                                         "model", "labels"};

static bool gs_parse_chat(struct json_object *o, const struct sim_in *in, struct bsc_str verb,
                          struct sim_call *call, struct sim_reject *rej)
{
    struct json_object *contents = gs_field(o, "contents");
    struct gs_scan sc = {0};
    size_t n;

    call->stream = bsc_str_eq(verb, BSC_STR("streamGenerateContent"));
    if (call->stream && !bsc_str_eq(gs_query_param(in->query, "alt"), BSC_STR("sse")))
        return gs_bad(rej, "bascule-sim serves streamGenerateContent with alt=sse only");
    if (!gs_known_fields(o, gs_req_fields, BSC_ARRAY_LEN(gs_req_fields), "GenerateContentRequest",
                         rej))
        return false;
    if (!json_object_is_type(contents, json_type_array) ||
        (n = json_object_array_length(contents)) == 0)
        return gs_bad(rej, "* GenerateContentRequest.contents: contents is not specified");
    for (size_t i = 0; i < n; i++)
        if (!gs_check_content(json_object_array_get_idx(contents, i), i, &sc, rej))
            return false;
    if (!gs_check_system(gs_field(o, "systemInstruction"), &sc, rej) ||
        !gs_check_generation(gs_field(o, "generationConfig"), call, rej))
        return false;
    call->prompt_tokens = sim_content_prompt_tokens(sc.text_bytes, n);
    return gs_pick_tool(o, sc.last, call, rej) && gs_parse_format(o, call, rej);
}

/* The text of an EmbedContentRequest's content, as one input. */
static char *gs_embed_text(struct json_object *req, const char *where, struct sim_reject *rej)
{
    struct json_object *parts = gs_field(gs_field(req, "content"), "parts");
    struct bsc_buf t;
    char *s;

    if (!json_object_is_type(parts, json_type_array) || json_object_array_length(parts) == 0) {
        gs_bad(rej, "* %s.content.parts: content is not specified", where);
        return NULL;
    }
    bsc_buf_init(&t, SIZE_MAX / 4);
    for (size_t j = 0; j < json_object_array_length(parts); j++)
        bsc_buf_append_str(&t, sim_json_get_str(json_object_array_get_idx(parts, j), "text"));
    s = t.p ? bsc_buf_take(&t, NULL) : bsc_str_dup(BSC_STR(""));
    bsc_buf_cleanup(&t);
    if (!s)
        sim_reject_set(rej, 500, "INTERNAL", NULL, "out of memory");
    return s;
}

static bool gs_parse_embed(struct json_object *o, struct bsc_str verb, struct sim_call *call,
                           struct sim_reject *rej)
{
    bool batch = bsc_str_eq(verb, BSC_STR("batchEmbedContents"));
    struct json_object *reqs = gs_field(o, "requests");
    size_t n = batch ? (json_object_is_type(reqs, json_type_array)
                            ? json_object_array_length(reqs) : 0)
                     : 1;
    size_t bytes = 0;
    char want[300];

    if (n == 0 || n > SIMGEM_MAX_BATCH)
        return gs_bad(rej, "* BatchEmbedContentsRequest.requests: 1 to %u requests",
                      SIMGEM_MAX_BATCH);
    snprintf(want, sizeof(want), "models/%s", call->model);
    call->inputs = calloc(n, sizeof(*call->inputs));
    if (!call->inputs) {
        sim_reject_set(rej, 500, "INTERNAL", NULL, "out of memory");
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        struct json_object *r = batch ? json_object_array_get_idx(reqs, i) : o;
        char where[64];
        snprintf(where, sizeof(where), batch ? "requests[%zu]" : "EmbedContentRequest", i);
        if (batch && !bsc_str_eq(sim_json_get_str(r, "model"), bsc_str_cstr(want)))
            return gs_bad(rej, "* BatchEmbedContentsRequest.%s.model: the model of every request "
                               "must be %s", where, want);
        call->inputs[i] = gs_embed_text(r, where, rej);
        if (!call->inputs[i])
            return false;
        call->n_inputs = i + 1;
        bytes += strlen(call->inputs[i]);
    }
    call->prompt_tokens = sim_content_prompt_tokens(bytes, 0);
    SIMGEM_IS_BATCH(call) = batch;
    return true;
}

static bool gs_parse(enum sim_ep ep, const struct sim_in *in, struct sim_call *call,
                      struct sim_reject *rej)
{
    struct bsc_str model = BSC_STR_NULL, verb = BSC_STR_NULL;
    struct json_object *o;
    bool ok;

    call->ep = ep;
    if (ep == SIM_EP_MODELS)
        return true;
    if (!gs_split_path(in->path, &model, &verb) || model.len > 256) {
        sim_reject_set(rej, 404, "NOT_FOUND", NULL, "bascule-sim: no such model path");
        return false;
    }
    call->model = bsc_str_dup(model);
    if (!call->model) {
        sim_reject_set(rej, 500, "INTERNAL", NULL, "out of memory");
        return false;
    }
    if (ep == SIM_EP_MODEL)
        return true;
    o = sim_json_parse(in->body, NULL, 0);
    if (!o || !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        return gs_bad(rej, "Invalid JSON payload received. Expected an object.");
    }
    ok = ep == SIM_EP_CHAT ? gs_parse_chat(o, in, verb, call, rej)
                           : gs_parse_embed(o, verb, call, rej);
    json_object_put(o);
    return ok;
}

/* ---- answers ---- */

static uint32_t gs_completion_tokens(const struct sim_call *call)
{
    return call->tool_name ? 1 : call->n_tokens;
}

static enum bsc_err gs_usage_json(const struct sim_call *call, uint32_t completion,
                                  struct bsc_buf *out)
{
    if (call->usage.len)
        return bsc_buf_appendf(out, "\"usageMetadata\":%.*s", BSC_STR_FMT(call->usage));
    return bsc_buf_appendf(out,
                           "\"usageMetadata\":{\"promptTokenCount\":%u,\"candidatesTokenCount\":%u,"
                           "\"totalTokenCount\":%llu}",
                           call->prompt_tokens, completion,
                           (unsigned long long)call->prompt_tokens + completion);
}

/* ,"modelVersion":"m","responseId":"sim-N"} closing a GenerateContentResponse. */
static enum bsc_err gs_response_tail(const struct sim_call *call, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_append_cstr(out, ",\"modelVersion\":");

    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(call->model));
    if (!err)
        err = bsc_buf_appendf(out, ",\"responseId\":\"sim-%llu\"}", (unsigned long long)call->seq);
    return err;
}

static enum bsc_err gs_call_part(const struct sim_call *call, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_append_cstr(out, "{\"functionCall\":{\"name\":");

    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(call->tool_name));
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"args\":");
    if (!err)
        err = sim_content_args_value(bsc_str_cstr(call->tool_args), call->tool_args_raw, out);
    if (!err)
        err = bsc_buf_appendf(out, "},\"thoughtSignature\":\"%s\"}", SIMGEM_SIM_SIGNATURE);
    return err;
}

/* One GenerateContentResponse: <parts> already rendered, <finish> or NULL. */
static enum bsc_err gs_response(const struct sim_call *call, struct bsc_str parts,
                                const char *finish, uint32_t completion, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_append_cstr(out, "{\"candidates\":[{");

    if (!err && parts.p) { /* NULL: a candidate without content */
        err = bsc_buf_append_cstr(out, "\"content\":{\"parts\":[");
        if (!err)
            err = bsc_buf_append_str(out, parts);
        if (!err)
            err = bsc_buf_append_cstr(out, "],\"role\":\"model\"},");
    }
    if (!err && finish)
        err = bsc_buf_appendf(out, "\"finishReason\":\"%s\",", finish);
    if (!err)
        err = bsc_buf_append_cstr(out, "\"index\":0}],");
    if (!err)
        err = gs_usage_json(call, completion, out);
    return err ? err : gs_response_tail(call, out);
}

/* The scripted finish reason (in Gemini's words, e.g. "SAFETY"), else the natural one. */
static const char *gs_finish_reason(const struct sim_call *call)
{
    if (call->finish_reason)
        return call->finish_reason;
    return !call->tool_name && call->finish_length ? "MAX_TOKENS" : "STOP";
}

/* A scripted broken function call: Gemini sends the candidate without any content. */
static bool gs_broken_call(const struct sim_call *call)
{
    static const char *const broken[] = {"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL",
                                         "TOO_MANY_TOOL_CALLS"};

    for (size_t i = 0; call->finish_reason && i < BSC_ARRAY_LEN(broken); i++)
        if (strcmp(call->finish_reason, broken[i]) == 0)
            return true;
    return false;
}

static enum bsc_err gs_text_part(struct bsc_str text, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_append_cstr(out, "{\"text\":");

    if (!err)
        err = bsc_buf_append_json_str(out, text);
    return err ? err : bsc_buf_append_char(out, '}');
}

static enum bsc_err gs_chat_body(const struct sim_call *call, struct bsc_buf *out)
{
    struct bsc_buf parts, text;
    enum bsc_err err;

    bsc_buf_init(&parts, out->max);
    bsc_buf_init(&text, out->max);
    if (gs_broken_call(call)) {
        err = BSC_OK;
    } else if (call->tool_name) {
        err = gs_call_part(call, &parts);
    } else {
        err = sim_content_answer(call->content, call->n_tokens, &text);
        if (!err)
            err = gs_text_part(bsc_buf_str(&text), &parts);
    }
    if (!err)
        err = gs_response(call, gs_broken_call(call) ? BSC_STR_NULL : bsc_buf_str(&parts),
                          gs_finish_reason(call),
                          gs_broken_call(call) ? 0 : gs_completion_tokens(call), out);
    bsc_buf_cleanup(&parts);
    bsc_buf_cleanup(&text);
    return err;
}

static enum bsc_err gs_embed_body(const struct sim_call *call, struct bsc_buf *out)
{
    enum bsc_err err = BSC_OK;

    for (size_t i = 0; i < call->n_inputs && !err; i++) {
        float v[SIM_EMBED_DIM];
        sim_content_embedding(bsc_str_cstr(call->inputs[i]), v);
        err = bsc_buf_append_cstr(out, i ? ",{\"values\":[" : "{\"values\":[");
        for (size_t k = 0; k < SIM_EMBED_DIM && !err; k++)
            err = bsc_buf_appendf(out, "%s%.9g", k ? "," : "", (double)v[k]);
        if (!err)
            err = bsc_buf_append(out, "]}", 2);
    }
    return err;
}

static enum bsc_err gs_body(const struct sim_call *call, struct bsc_buf *out)
{
    struct bsc_buf list;
    enum bsc_err err;

    if (call->ep != SIM_EP_EMBED)
        return gs_chat_body(call, out);
    bsc_buf_init(&list, out->max);
    err = gs_embed_body(call, &list);
    if (!err) /* embedContent answers {"embedding":...}, batchEmbedContents a list */
        err = SIMGEM_IS_BATCH(call)
                  ? bsc_buf_appendf(out, "{\"embeddings\":[%.*s]}", BSC_STR_FMT(bsc_buf_str(&list)))
                  : bsc_buf_appendf(out, "{\"embedding\":%.*s}", BSC_STR_FMT(bsc_buf_str(&list)));
    bsc_buf_cleanup(&list);
    return err;
}

/* ---- streams ---- */

/* A text answer streams one token per event, the last one carrying finishReason; a tool
 * call comes whole in one event. usageMetadata rides on every event, growing. */
static size_t gs_event_count(const struct sim_call *call)
{
    return call->tool_name || gs_broken_call(call) ? 1 : call->n_tokens;
}

static enum bsc_err gs_event(const struct sim_call *call, size_t i, struct bsc_buf *out)
{
    size_t count = gs_event_count(call);
    struct bsc_buf parts;
    enum bsc_err err;

    if (i >= count)
        return BSC_EINVAL;
    bsc_buf_init(&parts, out->max);
    if (gs_broken_call(call))
        err = BSC_OK;
    else
        err = call->tool_name ? gs_call_part(call, &parts)
                              : gs_text_part(sim_content_chunk(call->content, (uint32_t)i), &parts);
    if (!err)
        err = bsc_buf_append_cstr(out, "data: ");
    if (!err)
        err = gs_response(call, gs_broken_call(call) ? BSC_STR_NULL : bsc_buf_str(&parts),
                          i + 1 == count ? gs_finish_reason(call) : NULL,
                          call->tool_name ? 1 : (uint32_t)i + 1, out);
    if (!err)
        err = bsc_buf_append_cstr(out, "\r\n\r\n"); /* Google frames events with CRLF */
    bsc_buf_cleanup(&parts);
    return err;
}

static enum bsc_err gs_end_event(const struct sim_call *call, struct bsc_buf *out)
{
    (void)call;
    (void)out;
    return BSC_OK; /* no terminator: the server closes the stream */
}

/* ---- errors ---- */

static void gs_default_error(const struct sim_call *call, int status, const char **type,
                              const char **code, char *msgbuf, size_t msglen)
{
    const char *model = call && call->model ? call->model : "unknown";

    *code = NULL;
    *type = status >= 500 ? "INTERNAL" : "INVALID_ARGUMENT";
    switch (status) {
    case 400:
        snprintf(msgbuf, msglen, "Request contains an invalid argument.");
        break;
    case 401:
        *type = "UNAUTHENTICATED";
        snprintf(msgbuf, msglen, "Request had invalid authentication credentials.");
        break;
    case 403:
        *type = "PERMISSION_DENIED";
        snprintf(msgbuf, msglen, "The caller does not have permission");
        break;
    case 404:
        *type = "NOT_FOUND";
        snprintf(msgbuf, msglen,
                 "models/%s is not found for API version v1beta, or is not supported for "
                 "generateContent. Call ListModels to see the list of available models and "
                 "their supported methods.", model);
        break;
    case 409:
        *type = "ABORTED";
        snprintf(msgbuf, msglen, "The operation was aborted.");
        break;
    case 429:
        *type = "RESOURCE_EXHAUSTED";
        *code = "GenerateRequestsPerMinutePerProjectPerModel";
        snprintf(msgbuf, msglen,
                 "You exceeded your current quota, please check your plan and billing details. "
                 "For more information on this error, head to: https://ai.google.dev/gemini-api/"
                 "docs/rate-limits. (simulated for %s)", model);
        break;
    case 500:
        snprintf(msgbuf, msglen, "An internal error has occurred. Please retry or report in "
                                 "https://developers.generativeai.google/guide/troubleshooting");
        break;
    case 503:
        *type = "UNAVAILABLE";
        snprintf(msgbuf, msglen, "The model is overloaded. Please try again later.");
        break;
    case 504:
        *type = "DEADLINE_EXCEEDED";
        snprintf(msgbuf, msglen, "Deadline expired before operation could complete.");
        break;
    default:
        snprintf(msgbuf, msglen, "Simulated error with status %d.", status);
    }
}

static struct json_object *gs_detail(const char *type)
{
    struct json_object *d = json_object_new_object();
    char t[96];

    snprintf(t, sizeof(t), "type.googleapis.com/google.rpc.%s", type);
    json_object_object_add(d, "@type", json_object_new_string(t));
    return d;
}

/* The details list: for a 429 the violated quota (<code> is its quotaId) and a RetryInfo;
 * otherwise an ErrorInfo whose reason is <code>. */
static struct json_object *gs_details(int status, const char *code)
{
    struct json_object *list = json_object_new_array(), *d, *v, *viol;

    if (status == 429) {
        d = gs_detail("QuotaFailure");
        viol = json_object_new_array();
        v = json_object_new_object();
        json_object_object_add(v, "quotaMetric", json_object_new_string(
                                                     "generativelanguage.googleapis.com/"
                                                     "generate_content_requests"));
        json_object_object_add(v, "quotaId", json_object_new_string(code));
        json_object_object_add(v, "quotaValue", json_object_new_string(
                                                    strstr(code, "PerDay") ? "1500" : "60"));
        json_object_array_add(viol, v);
        json_object_object_add(d, "violations", viol);
        json_object_array_add(list, d);
        d = gs_detail("RetryInfo");
        json_object_object_add(d, "retryDelay", json_object_new_string("1s"));
        json_object_array_add(list, d);
        return list;
    }
    d = gs_detail("ErrorInfo");
    v = json_object_new_object();
    json_object_object_add(d, "reason", json_object_new_string(code));
    json_object_object_add(d, "domain", json_object_new_string("googleapis.com"));
    json_object_object_add(v, "service",
                           json_object_new_string("generativelanguage.googleapis.com"));
    json_object_object_add(d, "metadata", v);
    json_object_array_add(list, d);
    return list;
}

/* The HTTP code a google.rpc status stands for (an error inside a 200 still names it). */
static int gs_code_of(int status, const char *type)
{
    static const struct {
        const char *type;
        int code;
    } map[] = {
        {"INVALID_ARGUMENT", 400}, {"FAILED_PRECONDITION", 400}, {"OUT_OF_RANGE", 400},
        {"UNAUTHENTICATED", 401},  {"PERMISSION_DENIED", 403},   {"NOT_FOUND", 404},
        {"ABORTED", 409},          {"ALREADY_EXISTS", 409},      {"RESOURCE_EXHAUSTED", 429},
        {"CANCELLED", 499},        {"UNIMPLEMENTED", 501},       {"UNAVAILABLE", 503},
        {"DEADLINE_EXCEEDED", 504},
    };

    if (status != 200)
        return status;
    for (size_t i = 0; type && i < BSC_ARRAY_LEN(map); i++)
        if (strcmp(type, map[i].type) == 0)
            return map[i].code;
    return 500;
}

/* {"error":{"code","message","status","details"?}} pretty-printed, as Google sends it.
 * <status> is the HTTP status it goes out with; under a 200 the code comes from <type>. */
static enum bsc_err gs_error_body(int status, const char *type, const char *code,
                                   const char *message, struct bsc_buf *out)
{
    struct json_object *root = json_object_new_object(), *e = json_object_new_object();
    const char *text;
    size_t len = 0;
    enum bsc_err err;

    status = gs_code_of(status, type);
    json_object_object_add(e, "code", json_object_new_int(status));
    json_object_object_add(e, "message", json_object_new_string(message ? message : ""));
    json_object_object_add(e, "status", json_object_new_string(type ? type : "UNKNOWN"));
    if (code)
        json_object_object_add(e, "details", gs_details(status, code));
    json_object_object_add(root, "error", e);
    text = json_object_to_json_string_length(
        root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE,
        &len);
    err = text ? bsc_buf_append(out, text, len) : BSC_ENOMEM;
    if (!err)
        err = bsc_buf_append_char(out, '\n');
    json_object_put(root);
    return err;
}

/* In a stream the error comes as the same pretty-printed object, bare: no "data:". */
static enum bsc_err gs_error_event(int status, const char *type, const char *code,
                                    const char *message, struct bsc_buf *out)
{
    return gs_error_body(status, type, code, message, out);
}

static enum bsc_err gs_malformed_body(const struct sim_call *call, struct bsc_buf *out)
{
    (void)call;
    return bsc_buf_append_cstr(out, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":"
                                    "\"malformed by bascule-sim}]}");
}

static enum bsc_err gs_malformed_event(const struct sim_call *call, struct bsc_buf *out)
{
    (void)call;
    return bsc_buf_append_cstr(out, "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":"
                                    "\"malformed by bascule-sim\r\n\r\n");
}

static enum bsc_err gs_model_json(const char *name, struct bsc_buf *out)
{
    char full[320];
    enum bsc_err err = bsc_buf_append_cstr(out, "{\"name\":");

    snprintf(full, sizeof(full), "models/%s", name);
    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(full));
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"version\":\"001\",\"displayName\":");
    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(name));
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"description\":\"bascule-sim\",\"inputTokenLimit\":"
                                       "1048576,\"outputTokenLimit\":65536,"
                                       "\"supportedGenerationMethods\":[\"generateContent\","
                                       "\"countTokens\",\"embedContent\"]}");
    return err;
}

static enum bsc_err gs_models(const struct sim_call *call, const char *const *names, size_t n,
                               struct bsc_buf *out)
{
    enum bsc_err err;

    if (call->ep == SIM_EP_MODEL)
        return gs_model_json(call->model, out);
    err = bsc_buf_append_cstr(out, "{\"models\":[");
    for (size_t i = 0; i < n && !err; i++) {
        if (i)
            err = bsc_buf_append_char(out, ',');
        if (!err)
            err = gs_model_json(names[i], out);
    }
    return err ? err : bsc_buf_append(out, "]}", 2);
}

const struct sim_dialect sim_dialect_gemini = {
    .name = "gemini",
    .route = gs_route,
    .authorize = gs_authorize,
    .parse = gs_parse,
    .body = gs_body,
    .event_count = gs_event_count,
    .event = gs_event,
    .end_event = gs_end_event,
    .stream_content_type = "text/event-stream",
    .default_error = gs_default_error,
    .error_body = gs_error_body,
    .error_event = gs_error_event,
    .malformed_body = gs_malformed_body,
    .malformed_event = gs_malformed_event,
    .models = gs_models,
};
