/* SPDX-License-Identifier: MIT */
/* dialect_openai.c -- bascule-sim speaking the OpenAI API: /v1/chat/completions (plain,
 * streamed, tool calls), /v1/embeddings and /v1/models, with OpenAI-shaped errors
 * (docs/providers.md §1). Request parsing and rendering only; when and whether to send is the
 * runtime's business (exchange.c). See docs/internals/sim.md. */
#include "dialect.h"

#include "content.h"
#include "schema_gen.h"
#include "sjson.h"

#include "core/compat.h"

#define OAI_MAX_INPUTS 2048u /* embeddings inputs per request, as OpenAI */

/* ---- routing and auth ---- */

static enum sim_ep oai_route(struct bsc_str method, struct bsc_str path)
{
    bool get = bsc_str_eq(method, BSC_STR("GET"));
    bool post = bsc_str_eq(method, BSC_STR("POST"));

    if (post && (bsc_str_eq(path, BSC_STR("/v1/chat/completions")) ||
                 bsc_str_eq(path, BSC_STR("/v1/responses"))))
        return SIM_EP_CHAT;
    if (post && bsc_str_eq(path, BSC_STR("/v1/embeddings")))
        return SIM_EP_EMBED;
    if (get && bsc_str_eq(path, BSC_STR("/v1/models")))
        return SIM_EP_MODELS;
    if (get && path.len > 11 && bsc_str_starts(path, BSC_STR("/v1/models/")))
        return SIM_EP_MODEL;
    return SIM_EP_NONE;
}

static bool oai_authorize(const struct sim_in *in, struct sim_reject *rej)
{
    struct bsc_str auth = bsc_str_trim(in->header(in->ctx, BSC_STR("authorization")));
    struct bsc_str key;

    if (auth.len < 7 || strncasecmp(auth.p, "bearer ", 7) != 0 ||
        (key = bsc_str_trim(bsc_str_make(auth.p + 7, auth.len - 7))).len == 0) {
        sim_reject_set(rej, 401, "invalid_request_error", NULL,
                       "You didn't provide an API key. You need to provide your API key in an "
                       "Authorization header using Bearer auth (i.e. Authorization: Bearer "
                       "YOUR_KEY).");
        return false;
    }
    /* Every key starting with sk-sim-bad is refused, so tests can rotate among several. */
    if (bsc_str_starts(key, BSC_STR("sk-sim-bad"))) {
        sim_reject_set(rej, 401, "invalid_request_error", "invalid_api_key",
                       "Incorrect API key provided: %.*s.", (int)(key.len > 64 ? 64 : key.len),
                       key.p);
        return false;
    }
    return true;
}

/* ---- request parsing ---- */

static bool bad_request(struct sim_reject *rej, const char *param, const char *msg)
{
    (void)param;
    sim_reject_set(rej, 400, "invalid_request_error", NULL, "%s", msg);
    return false;
}

/* Appends what fits of <p> into <out>'s room. */
static void append_capped(struct bsc_buf *out, const char *p, size_t n)
{
    size_t room = out->max > out->len ? out->max - out->len : 0;

    bsc_buf_append(out, p, n < room ? n : room);
}

/* The text of a message's "content": a string, or the "text" of its text parts. Appends
 * what fits to <out> (which may be NULL to only count); returns the full byte count. */
static size_t content_text(struct json_object *content, struct bsc_buf *out)
{
    size_t n = 0;

    if (json_object_is_type(content, json_type_string)) {
        n = (size_t)json_object_get_string_len(content);
        if (out)
            append_capped(out, json_object_get_string(content), n);
        return n;
    }
    if (!json_object_is_type(content, json_type_array))
        return 0;
    for (size_t i = 0; i < json_object_array_length(content); i++) {
        struct bsc_str t = sim_json_get_str(json_object_array_get_idx(content, i), "text");
        n += t.len;
        if (out && t.len)
            append_capped(out, t.p, t.len);
    }
    return n;
}

static bool parse_model(struct json_object *o, struct sim_call *call, struct sim_reject *rej)
{
    struct bsc_str model = sim_json_get_str(o, "model");

    if (model.len == 0 || model.len > 256 || memchr(model.p, '\0', model.len))
        return bad_request(rej, "model", "you must provide a model parameter");
    call->model = bsc_str_dup(model);
    if (!call->model) {
        sim_reject_set(rej, 500, "server_error", NULL, "out of memory");
        return false;
    }
    return true;
}

static bool parse_limits(struct json_object *o, struct sim_call *call, struct sim_reject *rej)
{
    static const char *const keys[] = {"max_completion_tokens", "max_tokens"};
    struct json_object *v;

    for (size_t i = 0; i < BSC_ARRAY_LEN(keys); i++) {
        int64_t n;
        if (!json_object_object_get_ex(o, keys[i], &v) || json_object_is_type(v, json_type_null))
            continue;
        if (!json_object_is_type(v, json_type_int) || (n = json_object_get_int64(v)) < 1) {
            sim_reject_set(rej, 400, "invalid_request_error", "invalid_value",
                           "Invalid '%s': expected an integer of at least 1.", keys[i]);
            return false;
        }
        if (call->max_tokens == 0)
            call->max_tokens = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
    }
    if (json_object_object_get_ex(o, "stream", &v) && !json_object_is_type(v, json_type_null)) {
        if (!json_object_is_type(v, json_type_boolean))
            return bad_request(rej, "stream", "Invalid 'stream': expected a boolean.");
        call->stream = json_object_get_boolean(v);
    }
    if (call->stream && json_object_object_get_ex(o, "stream_options", &v) &&
        json_object_object_get_ex(v, "include_usage", &v))
        call->include_usage = json_object_get_boolean(v);
    return true;
}

/* The name of the tool to call, or NULL for a text answer (borrowed from <o>). */
static const char *pick_tool(struct json_object *o, struct json_object *last)
{
    struct json_object *tools, *choice, *fn, *first;
    struct bsc_str role = sim_json_get_str(last, "role");
    const char *name = NULL;

    if (!json_object_object_get_ex(o, "tools", &tools) ||
        !json_object_is_type(tools, json_type_array) || json_object_array_length(tools) == 0)
        return NULL;
    if (!bsc_str_eq(role, BSC_STR("user")))
        return NULL;
    if (json_object_object_get_ex(o, "tool_choice", &choice)) {
        if (json_object_is_type(choice, json_type_string) &&
            strcmp(json_object_get_string(choice), "none") == 0)
            return NULL;
        if (json_object_object_get_ex(choice, "function", &fn) &&
            sim_json_get_str(fn, "name").len)
            return sim_json_get_str(fn, "name").p;
    }
    first = json_object_array_get_idx(tools, 0);
    if (json_object_object_get_ex(first, "function", &fn))
        name = sim_json_get_str(fn, "name").p;
    else if (json_object_object_get_ex(first, "custom", &fn))
        name = sim_json_get_str(fn, "name").p;
    return name ? name : "tool";
}

/* The "parameters" schema of the function tool named <name> (borrowed), or NULL. */
static struct json_object *tool_params(struct json_object *o, const char *name)
{
    struct json_object *tools, *fn, *params;

    if (!json_object_object_get_ex(o, "tools", &tools) ||
        !json_object_is_type(tools, json_type_array))
        return NULL;
    for (size_t i = 0; i < json_object_array_length(tools); i++) {
        if (!json_object_object_get_ex(json_object_array_get_idx(tools, i), "function", &fn) ||
            !bsc_str_eq(sim_json_get_str(fn, "name"), bsc_str_cstr(name)))
            continue;
        return json_object_object_get_ex(fn, "parameters", &params) ? params : NULL;
    }
    return NULL;
}

static bool parse_tools(struct json_object *o, struct json_object *last, struct sim_call *call,
                        struct sim_reject *rej)
{
    const char *name = pick_tool(o, last);
    struct json_object *content = NULL;
    struct bsc_buf text;

    if (!name)
        return true;
    bsc_buf_init(&text, SIM_ECHO_CHARS * 8); /* 32 code points take at most 128 bytes */
    json_object_object_get_ex(last, "content", &content);
    content_text(content, &text); /* only the first 32 code points matter */
    /* Arguments valid against the tool's parameters; the echo for a tool without any. */
    call->tool_args = sim_schema_tool_args(tool_params(o, name), bsc_buf_str(&text));
    call->tool_name = call->tool_args ? bsc_str_dup(bsc_str_cstr(name)) : NULL;
    bsc_buf_cleanup(&text);
    if (!call->tool_name || !call->tool_args) {
        sim_reject_set(rej, 500, "server_error", NULL, "out of memory");
        return false;
    }
    return true;
}

/* response_format json_schema: an instance of the schema; json_object (or a json_schema
 * without a schema): {"answer": ...}. Kept in <call>->json_answer for a text answer. */
static bool parse_format(struct json_object *o, struct sim_call *call, struct sim_reject *rej)
{
    struct json_object *rf, *js, *schema = NULL;
    struct bsc_str type;
    struct bsc_buf b;

    if (call->tool_name || !json_object_object_get_ex(o, "response_format", &rf))
        return true;
    type = sim_json_get_str(rf, "type");
    if (bsc_str_eq(type, BSC_STR("json_schema")) &&
        json_object_object_get_ex(rf, "json_schema", &js))
        json_object_object_get_ex(js, "schema", &schema);
    else if (!bsc_str_eq(type, BSC_STR("json_object")))
        return true;
    if (schema)
        call->json_answer = sim_schema_gen_dup(schema);
    if (!call->json_answer) { /* JSON mode, or a schema past the generator's bounds */
        bsc_buf_init(&b, 4096);
        if (sim_content_json_answer(&b) == BSC_OK)
            call->json_answer = bsc_buf_take(&b, NULL);
        bsc_buf_cleanup(&b);
    }
    if (!call->json_answer) {
        sim_reject_set(rej, 500, "server_error", NULL, "out of memory");
        return false;
    }
    return true;
}

static bool parse_chat(struct json_object *o, struct sim_call *call, struct sim_reject *rej)
{
    struct json_object *msgs, *last;
    size_t n, bytes = 0;

    if (!parse_model(o, call, rej))
        return false;
    if (!json_object_object_get_ex(o, "messages", &msgs) ||
        !json_object_is_type(msgs, json_type_array))
        return bad_request(rej, "messages", "'messages' is a required property");
    n = json_object_array_length(msgs);
    if (n == 0)
        return bad_request(rej, "messages", "[] is too short - 'messages'");
    for (size_t i = 0; i < n; i++) {
        struct json_object *m = json_object_array_get_idx(msgs, i), *c;
        if (!json_object_is_type(m, json_type_object) || !sim_json_get_str(m, "role").p)
            return bad_request(rej, "messages", "each message needs a 'role'");
        if (json_object_object_get_ex(m, "content", &c))
            bytes += content_text(c, NULL);
    }
    call->prompt_tokens = sim_content_prompt_tokens(bytes, n);
    if (!parse_limits(o, call, rej))
        return false;
    last = json_object_array_get_idx(msgs, n - 1);
    if (bsc_str_eq(sim_json_get_str(last, "role"), BSC_STR("assistant")) &&
        sim_json_get_str(last, "content").p &&
        !(call->prefill = bsc_str_dup(sim_json_get_str(last, "content"))))
        return bad_request(rej, "messages", "out of memory");
    return parse_tools(o, last, call, rej) && parse_format(o, call, rej);
}

/* Embedding inputs: a string, strings, token ids, or arrays of token ids (their JSON
 * text stands for them). */
static bool parse_inputs(struct json_object *input, struct sim_call *call,
                         struct sim_reject *rej)
{
    bool single = !json_object_is_type(input, json_type_array);
    size_t n = single ? 1 : json_object_array_length(input);

    if (n == 0 || n > OAI_MAX_INPUTS)
        return bad_request(rej, "input", "'input' must hold 1 to 2048 items");
    /* An array of integers is one input of token ids. */
    if (!single && json_object_is_type(json_object_array_get_idx(input, 0), json_type_int)) {
        single = true;
        n = 1;
    }
    call->inputs = calloc(n, sizeof(*call->inputs));
    if (!call->inputs)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        struct json_object *v = single ? input : json_object_array_get_idx(input, i);
        if (json_object_is_type(v, json_type_string))
            call->inputs[i] = bsc_str_dup(
                bsc_str_make(json_object_get_string(v), (size_t)json_object_get_string_len(v)));
        else if (json_object_is_type(v, json_type_array))
            call->inputs[i] = bsc_str_dup(bsc_str_cstr(json_object_to_json_string_ext(
                v, JSON_C_TO_STRING_PLAIN)));
        else
            return bad_request(rej, "input", "'input' items must be strings or token arrays");
        call->n_inputs = i + 1;
        if (!call->inputs[i])
            goto oom;
    }
    return true;
oom:
    sim_reject_set(rej, 500, "server_error", NULL, "out of memory");
    return false;
}

static bool parse_embed(struct json_object *o, struct sim_call *call, struct sim_reject *rej)
{
    struct json_object *input;
    struct bsc_str fmt = sim_json_get_str(o, "encoding_format");
    size_t bytes = 0;

    if (!parse_model(o, call, rej))
        return false;
    if (!json_object_object_get_ex(o, "input", &input) ||
        json_object_is_type(input, json_type_null))
        return bad_request(rej, "input", "'input' is a required property");
    if (!parse_inputs(input, call, rej))
        return false;
    if (fmt.p && !bsc_str_eq(fmt, BSC_STR("float")) && !bsc_str_eq(fmt, BSC_STR("base64")))
        return bad_request(rej, "encoding_format",
                           "'encoding_format' must be 'float' or 'base64'");
    call->base64 = bsc_str_eq(fmt, BSC_STR("base64"));
    for (size_t i = 0; i < call->n_inputs; i++)
        bytes += strlen(call->inputs[i]);
    call->prompt_tokens = sim_content_prompt_tokens(bytes, 0);
    return true;
}

/* A Responses API request, text answers only: model, input (a string or items), stream,
 * max_output_tokens. Tools are not simulated here (the gateway translates tool traffic to
 * chat for every kind but openai). */
static bool parse_responses(struct json_object *o, struct sim_call *call, struct sim_reject *rej)
{
    struct json_object *input, *v;
    size_t bytes = 0, n = 1;

    if (!parse_model(o, call, rej))
        return false;
    if (!json_object_object_get_ex(o, "input", &input))
        return bad_request(rej, "input", "'input' is a required property");
    if (json_object_is_type(input, json_type_array)) {
        n = json_object_array_length(input);
        for (size_t i = 0; i < n; i++) {
            struct json_object *c;
            if (json_object_object_get_ex(json_object_array_get_idx(input, i), "content", &c))
                bytes += content_text(c, NULL);
        }
    } else if (json_object_is_type(input, json_type_string)) {
        bytes = (size_t)json_object_get_string_len(input);
    } else {
        return bad_request(rej, "input", "'input' must be a string or an array");
    }
    call->prompt_tokens = sim_content_prompt_tokens(bytes, n);
    if (json_object_object_get_ex(o, "stream", &v) && json_object_get_boolean(v))
        call->stream = true;
    if (json_object_object_get_ex(o, "max_output_tokens", &v) &&
        json_object_is_type(v, json_type_int) && json_object_get_int64(v) >= 1)
        call->max_tokens = (uint32_t)json_object_get_int64(v);
    return true;
}

static bool oai_parse(enum sim_ep ep, const struct sim_in *in, struct sim_call *call,
                      struct sim_reject *rej)
{
    struct json_object *o;
    bool ok;

    call->ep = ep;
    if (ep == SIM_EP_MODELS)
        return true;
    if (ep == SIM_EP_MODEL) {
        call->model = bsc_str_dup(bsc_str_make(in->path.p + 11, in->path.len - 11));
        if (!call->model)
            sim_reject_set(rej, 500, "server_error", NULL, "out of memory");
        return call->model != NULL;
    }
    o = sim_json_parse(in->body, NULL, 0);
    if (!o || !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        return bad_request(rej, NULL,
                           "We could not parse the JSON body of your request. (HINT: This "
                           "likely means you aren't using your HTTP library correctly.)");
    }
    call->responses = bsc_str_eq(in->path, BSC_STR("/v1/responses"));
    if (call->responses)
        ok = parse_responses(o, call, rej);
    else
        ok = ep == SIM_EP_CHAT ? parse_chat(o, call, rej) : parse_embed(o, call, rej);
    json_object_put(o);
    return ok;
}

/* ---- answers ---- */

static enum bsc_err usage_json(const struct sim_call *call, uint32_t completion,
                               struct bsc_buf *out)
{
    if (call->usage.len)
        return bsc_buf_append_str(out, call->usage);
    return bsc_buf_appendf(out,
                           "{\"prompt_tokens\":%u,\"completion_tokens\":%u,\"total_tokens\":%llu,"
                           "\"prompt_tokens_details\":{\"cached_tokens\":0},"
                           "\"completion_tokens_details\":{\"reasoning_tokens\":0}}",
                           call->prompt_tokens, completion,
                           (unsigned long long)call->prompt_tokens + completion);
}

/* How many argument fragments a streamed tool call has, and the <i>-th of them. */
static size_t arg_pieces(const struct sim_call *call)
{
    return sim_utf8_piece_count(bsc_str_cstr(call->tool_args), SIM_ARG_PIECE_BYTES);
}

static struct bsc_str arg_piece(const struct sim_call *call, size_t i)
{
    return sim_utf8_piece_at(bsc_str_cstr(call->tool_args), SIM_ARG_PIECE_BYTES, i);
}

static uint32_t completion_tokens(const struct sim_call *call)
{
    return call->tool_name ? (uint32_t)arg_pieces(call) : call->n_tokens;
}

static const char *finish_reason(const struct sim_call *call)
{
    if (call->finish_reason)
        return call->finish_reason;
    if (call->tool_name)
        return "tool_calls";
    return call->finish_length ? "length" : "stop";
}

static enum bsc_err tool_call_json(const struct sim_call *call, bool stream_head,
                                   struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_appendf(out, "{%s\"id\":\"call_sim_%llu\",\"type\":\"function\","
                                            "\"function\":{\"name\":",
                                       stream_head ? "\"index\":0," : "",
                                       (unsigned long long)call->seq);
    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(call->tool_name));
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"arguments\":");
    if (!err)
        err = bsc_buf_append_json_str(out, stream_head ? BSC_STR("")
                                                       : bsc_str_cstr(call->tool_args));
    if (!err)
        err = bsc_buf_append(out, "}}", 2);
    return err;
}

static enum bsc_err chat_body(const struct sim_call *call, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_appendf(
        out, "{\"id\":\"chatcmpl-sim-%llu\",\"object\":\"chat.completion\",\"created\":%llu,"
             "\"model\":",
        (unsigned long long)call->seq, (unsigned long long)call->created);

    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(call->model));
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"choices\":[{\"index\":0,\"message\":{\"role\":"
                                       "\"assistant\",\"content\":");
    if (!err && call->tool_name) {
        err = bsc_buf_append_cstr(out, "null,\"refusal\":null,\"tool_calls\":[");
        if (!err)
            err = tool_call_json(call, false, out);
        if (!err)
            err = bsc_buf_append_char(out, ']');
    } else if (!err) {
        struct bsc_buf text;
        bsc_buf_init(&text, out->max);
        err = sim_content_answer(call->content, call->n_tokens, &text);
        if (!err)
            err = bsc_buf_append_json_str(out, bsc_buf_str(&text));
        if (!err)
            err = bsc_buf_append_cstr(out, ",\"refusal\":null");
        bsc_buf_cleanup(&text);
    }
    if (!err)
        err = bsc_buf_appendf(out, "},\"logprobs\":null,\"finish_reason\":\"%s\"}],\"usage\":",
                              finish_reason(call));
    if (!err)
        err = usage_json(call, completion_tokens(call), out);
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"system_fingerprint\":\"fp_sim\"}");
    return err;
}

/* base64 of <len> bytes, RFC 4648 with padding. */
static enum bsc_err base64_append(struct bsc_buf *out, const unsigned char *p, size_t len)
{
    static const char tbl[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    enum bsc_err err = BSC_OK;

    for (size_t i = 0; i < len && !err; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        char q[4];
        if (i + 1 < len)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < len)
            v |= p[i + 2];
        q[0] = tbl[(v >> 18) & 63];
        q[1] = tbl[(v >> 12) & 63];
        q[2] = i + 1 < len ? tbl[(v >> 6) & 63] : '=';
        q[3] = i + 2 < len ? tbl[v & 63] : '=';
        err = bsc_buf_append(out, q, 4);
    }
    return err;
}

static enum bsc_err embedding_json(const struct sim_call *call, size_t i, struct bsc_buf *out)
{
    float v[SIM_WORDS_DIM > SIM_EMBED_DIM ? SIM_WORDS_DIM : SIM_EMBED_DIM];
    size_t dim = SIM_EMBED_DIM;
    enum bsc_err err;

    if (call->model && sim_content_words_model(bsc_str_cstr(call->model))) {
        sim_content_embedding_words(bsc_str_cstr(call->inputs[i]), v);
        dim = SIM_WORDS_DIM;
    } else {
        sim_content_embedding(bsc_str_cstr(call->inputs[i]), v);
    }
    err = bsc_buf_appendf(out, "{\"object\":\"embedding\",\"index\":%zu,\"embedding\":", i);
    if (!err && call->base64) {
        unsigned char raw[sizeof(v)];
        for (size_t k = 0; k < dim; k++) {
            uint32_t bits;
            memcpy(&bits, &v[k], 4);
            for (int b = 0; b < 4; b++) /* little-endian whatever the host */
                raw[k * 4 + (size_t)b] = (unsigned char)(bits >> (8 * b));
        }
        err = bsc_buf_append_char(out, '"');
        if (!err)
            err = base64_append(out, raw, dim * 4);
        if (!err)
            err = bsc_buf_append_char(out, '"');
    } else {
        for (size_t k = 0; k < dim && !err; k++)
            err = bsc_buf_appendf(out, "%s%.9g", k ? "," : "[", (double)v[k]);
        if (!err)
            err = bsc_buf_append_char(out, ']');
    }
    if (!err)
        err = bsc_buf_append_char(out, '}');
    return err;
}

static enum bsc_err embed_body(const struct sim_call *call, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_append_cstr(out, "{\"object\":\"list\",\"data\":[");

    for (size_t i = 0; i < call->n_inputs && !err; i++) {
        if (i)
            err = bsc_buf_append_char(out, ',');
        if (!err)
            err = embedding_json(call, i, out);
    }
    if (!err)
        err = bsc_buf_append_cstr(out, "],\"model\":");
    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(call->model));
    if (!err)
        err = bsc_buf_appendf(out, ",\"usage\":{\"prompt_tokens\":%u,\"total_tokens\":%u}}",
                              call->prompt_tokens, call->prompt_tokens);
    return err;
}

/* ---- the Responses API (text answers) ---- */

static enum bsc_err resp_usage(const struct sim_call *call, struct bsc_buf *out)
{
    return bsc_buf_appendf(out,
                           "{\"input_tokens\":%u,\"input_tokens_details\":{\"cached_tokens\":0},"
                           "\"output_tokens\":%u,"
                           "\"output_tokens_details\":{\"reasoning_tokens\":0},"
                           "\"total_tokens\":%llu}",
                           call->prompt_tokens, call->n_tokens,
                           (unsigned long long)call->prompt_tokens + call->n_tokens);
}

/* The message item; <text> NULL: in progress, no content yet. */
static enum bsc_err resp_item(const struct sim_call *call, const struct bsc_buf *text,
                              struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_appendf(out, "{\"id\":\"msg_sim_%llu\",\"type\":\"message\","
                                            "\"status\":\"%s\",\"role\":\"assistant\","
                                            "\"content\":[",
                                       (unsigned long long)call->seq,
                                       text ? "completed" : "in_progress");
    if (!err && text) {
        err = bsc_buf_append_cstr(out, "{\"type\":\"output_text\",\"annotations\":[],\"text\":");
        if (!err)
            err = bsc_buf_append_json_str(out, bsc_buf_str(text));
        if (!err)
            err = bsc_buf_append_char(out, '}');
    }
    return err ? err : bsc_buf_append(out, "]}", 2);
}

/* The Response object; <done>: completed with output and usage, else in progress. */
static enum bsc_err resp_object(const struct sim_call *call, bool done, struct bsc_buf *out)
{
    struct bsc_buf text;
    enum bsc_err err = bsc_buf_appendf(out, "{\"id\":\"resp_sim_%llu\",\"object\":\"response\","
                                            "\"created_at\":%llu,\"status\":\"%s\",\"model\":",
                                       (unsigned long long)call->seq,
                                       (unsigned long long)call->created,
                                       !done                 ? "in_progress"
                                       : call->finish_length ? "incomplete"
                                                             : "completed");

    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(call->model));
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"output\":[");
    bsc_buf_init(&text, out->max);
    if (!err && done) {
        err = sim_content_answer(call->content, call->n_tokens, &text);
        if (!err)
            err = resp_item(call, &text, out);
    }
    bsc_buf_cleanup(&text);
    if (!err)
        err = bsc_buf_append_cstr(out, "],\"usage\":");
    if (!err)
        err = done ? resp_usage(call, out) : bsc_buf_append_cstr(out, "null");
    return err ? err : bsc_buf_append_char(out, '}');
}

/* Events: created, in_progress, item added, part added, one delta per token, text done,
 * part done, item done, completed: 8 + n_tokens. */
static enum bsc_err resp_event(const struct sim_call *call, size_t i, struct bsc_buf *out)
{
    size_t n = call->n_tokens, last = 7 + n;
    const char *type = i == 0 ? "response.created" : i == 1 ? "response.in_progress"
                       : i == 2 ? "response.output_item.added"
                       : i == 3 ? "response.content_part.added"
                       : i < 4 + n ? "response.output_text.delta"
                       : i == 4 + n ? "response.output_text.done"
                       : i == 5 + n ? "response.content_part.done"
                       : i == 6 + n ? "response.output_item.done"
                                    : "response.completed";
    struct bsc_buf text;
    enum bsc_err err;

    if (i > last)
        return BSC_EINVAL;
    err = bsc_buf_appendf(out, "event: %s\ndata: {\"type\":\"%s\",\"sequence_number\":%zu,",
                          type, type, i);
    bsc_buf_init(&text, out->max);
    if (!err && (i >= 4 + n))
        err = sim_content_answer(call->content, call->n_tokens, &text);
    if (err) {
        /* nothing */
    } else if (i <= 1 || i == last) {
        err = bsc_buf_append_cstr(out, "\"response\":");
        if (!err)
            err = resp_object(call, i == last, out);
    } else if (i == 2 || i == 6 + n) {
        err = bsc_buf_append_cstr(out, "\"output_index\":0,\"item\":");
        if (!err)
            err = resp_item(call, i == 2 ? NULL : &text, out);
    } else {
        err = bsc_buf_appendf(out, "\"item_id\":\"msg_sim_%llu\",\"output_index\":0,"
                                   "\"content_index\":0,",
                              (unsigned long long)call->seq);
        if (!err && (i == 3 || i == 5 + n)) {
            err = bsc_buf_append_cstr(out, "\"part\":{\"type\":\"output_text\",\"annotations\":[],"
                                           "\"text\":");
            if (!err)
                err = bsc_buf_append_json_str(out, i == 3 ? BSC_STR("") : bsc_buf_str(&text));
            if (!err)
                err = bsc_buf_append_char(out, '}');
        } else if (!err) {
            err = bsc_buf_append_cstr(out, i == 4 + n ? "\"text\":" : "\"delta\":");
            if (!err)
                err = bsc_buf_append_json_str(
                    out, i == 4 + n ? bsc_buf_str(&text)
                                    : sim_content_chunk(call->content, (uint32_t)(i - 4)));
        }
    }
    bsc_buf_cleanup(&text);
    return err ? err : bsc_buf_append_cstr(out, "}\n\n");
}

static enum bsc_err oai_body(const struct sim_call *call, struct bsc_buf *out)
{
    if (call->responses)
        return resp_object(call, true, out);
    return call->ep == SIM_EP_EMBED ? embed_body(call, out) : chat_body(call, out);
}

/* ---- streams ---- */

/* Events: the role chunk, one chunk per token (or argument fragment), the finish chunk,
 * and the usage chunk when asked for. */
static size_t oai_event_count(const struct sim_call *call)
{
    if (call->responses)
        return 8 + call->n_tokens;
    size_t body = call->tool_name ? arg_pieces(call) : call->n_tokens;

    return 1 + body + 1 + (call->include_usage ? 1 : 0);
}

static enum bsc_err chunk_open(const struct sim_call *call, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_appendf(
        out, "data: {\"id\":\"chatcmpl-sim-%llu\",\"object\":\"chat.completion.chunk\","
             "\"created\":%llu,\"model\":",
        (unsigned long long)call->seq, (unsigned long long)call->created);

    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(call->model));
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"system_fingerprint\":\"fp_sim\",\"choices\":");
    return err;
}

static enum bsc_err chunk_close(const struct sim_call *call, struct bsc_buf *out)
{
    return bsc_buf_append_cstr(out, call->include_usage ? ",\"usage\":null}\n\n" : "}\n\n");
}

/* The delta object of event <i> (0 < i <= body events, or the role event at 0). */
static enum bsc_err delta_json(const struct sim_call *call, size_t i, struct bsc_buf *out)
{
    enum bsc_err err;

    if (i == 0 && call->tool_name) {
        err = bsc_buf_append_cstr(out, "{\"role\":\"assistant\",\"content\":null,"
                                       "\"tool_calls\":[");
        if (!err)
            err = tool_call_json(call, true, out);
        return err ? err : bsc_buf_append(out, "]}", 2);
    }
    if (i == 0)
        return bsc_buf_append_cstr(out, "{\"role\":\"assistant\",\"content\":\"\"}");
    if (call->tool_name) {
        err = bsc_buf_append_cstr(out, "{\"tool_calls\":[{\"index\":0,\"function\":"
                                       "{\"arguments\":");
        if (!err)
            err = bsc_buf_append_json_str(out, arg_piece(call, i - 1));
        return err ? err : bsc_buf_append_cstr(out, "}}]}");
    }
    err = bsc_buf_append_cstr(out, "{\"content\":");
    if (!err)
        err = bsc_buf_append_json_str(out, sim_content_chunk(call->content, (uint32_t)(i - 1)));
    return err ? err : bsc_buf_append_char(out, '}');
}

static enum bsc_err oai_event(const struct sim_call *call, size_t i, struct bsc_buf *out)
{
    size_t count = oai_event_count(call);
    size_t finish = count - 1 - (call->include_usage ? 1 : 0);
    enum bsc_err err;

    if (call->responses)
        return resp_event(call, i, out);
    if (i >= count)
        return BSC_EINVAL;
    err = chunk_open(call, out);
    if (err)
        return err;
    if (call->include_usage && i == count - 1) {
        err = bsc_buf_append_cstr(out, "[],\"usage\":");
        if (!err)
            err = usage_json(call, completion_tokens(call), out);
        return err ? err : bsc_buf_append_cstr(out, "}\n\n");
    }
    if (i == finish) {
        err = bsc_buf_appendf(out, "[{\"index\":0,\"delta\":{},\"logprobs\":null,"
                                   "\"finish_reason\":\"%s\"}]",
                              finish_reason(call));
        return err ? err : chunk_close(call, out);
    }
    err = bsc_buf_append_cstr(out, "[{\"index\":0,\"delta\":");
    if (!err)
        err = delta_json(call, i, out);
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"logprobs\":null,\"finish_reason\":null}]");
    return err ? err : chunk_close(call, out);
}

static enum bsc_err oai_end_event(const struct sim_call *call, struct bsc_buf *out)
{
    if (call->responses)
        return BSC_OK; /* the Responses API ends at response.completed */
    return bsc_buf_append_cstr(out, "data: [DONE]\n\n");
}

/* ---- errors ---- */

static void oai_default_error(const struct sim_call *call, int status, const char **type,
                              const char **code, char *msgbuf, size_t msglen)
{
    const char *model = call && call->model ? call->model : "unknown";

    *type = status >= 500 ? "server_error" : "invalid_request_error";
    *code = NULL;
    switch (status) {
    case 401:
        *code = "invalid_api_key";
        snprintf(msgbuf, msglen, "Incorrect API key provided (simulated).");
        break;
    case 403:
        *code = "unsupported_country_region_territory";
        snprintf(msgbuf, msglen, "Country, region, or territory not supported (simulated).");
        break;
    case 404:
        *code = "model_not_found";
        snprintf(msgbuf, msglen,
                 "The model `%s` does not exist or you do not have access to it.", model);
        break;
    case 429:
        *type = "requests";
        *code = "rate_limit_exceeded";
        snprintf(msgbuf, msglen,
                 "Rate limit reached for %s on requests per min (RPM): Limit 60, Used 60, "
                 "Requested 1 (simulated).",
                 model);
        break;
    case 500:
        snprintf(msgbuf, msglen, "The server had an error while processing your request.");
        break;
    case 502:
        snprintf(msgbuf, msglen, "Bad gateway.");
        break;
    case 503:
        *code = "server_is_overloaded";
        snprintf(msgbuf, msglen, "The engine is currently overloaded, please try again later.");
        break;
    case 529:
        *type = "overloaded_error";
        *code = "overloaded";
        snprintf(msgbuf, msglen, "Overloaded.");
        break;
    default:
        snprintf(msgbuf, msglen, "Simulated error with status %d.", status);
    }
}

static enum bsc_err error_obj(const char *type, const char *code, const char *message,
                              struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_append_cstr(out, "{\"error\":{\"message\":");

    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(message));
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"type\":");
    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(type));
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"param\":null,\"code\":");
    if (!err)
        err = code ? bsc_buf_append_json_str(out, bsc_str_cstr(code))
                   : bsc_buf_append_cstr(out, "null");
    if (!err)
        err = bsc_buf_append(out, "}}", 2);
    return err;
}

static enum bsc_err oai_error_body(int status, const char *type, const char *code,
                                   const char *message, struct bsc_buf *out)
{
    (void)status;
    return error_obj(type, code, message, out);
}

static enum bsc_err oai_error_event(int status, const char *type, const char *code,
                                    const char *message, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_append_cstr(out, "data: ");

    (void)status;
    if (!err)
        err = error_obj(type, code, message, out);
    return err ? err : bsc_buf_append(out, "\n\n", 2);
}

static enum bsc_err oai_malformed_body(const struct sim_call *call, struct bsc_buf *out)
{
    /* Complete bytes, wrong JSON: an unterminated string and a missing brace. */
    return bsc_buf_appendf(out,
                           "{\"id\":\"chatcmpl-sim-%llu\",\"object\":\"chat.completion\","
                           "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
                           "\"content\":\"malformed by bascule-sim}]}",
                           (unsigned long long)call->seq);
}

static enum bsc_err oai_malformed_event(const struct sim_call *call, struct bsc_buf *out)
{
    return bsc_buf_appendf(out,
                           "data: {\"id\":\"chatcmpl-sim-%llu\",\"object\":"
                           "\"chat.completion.chunk\",\"choices\":[{\"delta\":{\"content\":"
                           "\"malformed by bascule-sim\n\n",
                           (unsigned long long)call->seq);
}

static enum bsc_err model_json(const char *id, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_append_cstr(out, "{\"id\":");

    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(id));
    return err ? err
               : bsc_buf_append_cstr(out, ",\"object\":\"model\",\"created\":1700000000,"
                                          "\"owned_by\":\"bascule-sim\"}");
}

static enum bsc_err oai_models(const struct sim_call *call, const char *const *names, size_t n,
                               struct bsc_buf *out)
{
    enum bsc_err err;

    if (call->ep == SIM_EP_MODEL)
        return model_json(call->model, out);
    err = bsc_buf_append_cstr(out, "{\"object\":\"list\",\"data\":[");
    for (size_t i = 0; i < n && !err; i++) {
        if (i)
            err = bsc_buf_append_char(out, ',');
        if (!err)
            err = model_json(names[i], out);
    }
    return err ? err : bsc_buf_append(out, "]}", 2);
}

const struct sim_dialect sim_dialect_openai = {
    .name = "openai",
    .route = oai_route,
    .authorize = oai_authorize,
    .parse = oai_parse,
    .body = oai_body,
    .event_count = oai_event_count,
    .event = oai_event,
    .end_event = oai_end_event,
    .stream_content_type = "text/event-stream",
    .default_error = oai_default_error,
    .error_body = oai_error_body,
    .error_event = oai_error_event,
    .malformed_body = oai_malformed_body,
    .malformed_event = oai_malformed_event,
    .models = oai_models,
};
