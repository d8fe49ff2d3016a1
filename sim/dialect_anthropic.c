/* SPDX-License-Identifier: MIT */
/* dialect_anthropic.c -- bascule-sim speaking the Anthropic Messages API (docs/providers.md §2):
 * POST /v1/messages (also under /anthropic/v1), plain and streamed with the named events
 * (message_start, content_block_*, ping, message_delta, message_stop), tool_use blocks,
 * Anthropic usage and the {"type":"error","error":{...}} shape, `event: error` mid-stream.
 * The model list lives at /anthropic/v1/models because GET /v1/models is the OpenAI
 * dialect's. Validation is strict on purpose (unknown fields, tool_use/tool_result
 * pairing, roles), so a gateway translation bug shows up as the 400 Anthropic would send.
 * Parsing and rendering only; see docs/internals/sim.md and provider-anthropic.md. */
#include "dialect.h"
#include "core/json_get.h"

#include <stdarg.h>

#include "content.h"
#include "schema_gen.h"
#include "sjson.h"

#include "core/compat.h"

#define ANT_PREFIX     "/anthropic"
#define ANT_MAX_TOOLS  128u
#define ANT_MAX_IDS    64u /* tool_use ids tracked between two turns */

/* ---- routing and auth ---- */

/* <path> without the optional /anthropic prefix. */
static struct bsc_str unprefixed(struct bsc_str path, bool *prefixed)
{
    *prefixed = bsc_str_starts(path, BSC_STR(ANT_PREFIX "/"));
    if (*prefixed)
        return bsc_str_make(path.p + sizeof(ANT_PREFIX) - 1, path.len - (sizeof(ANT_PREFIX) - 1));
    return path;
}

static enum sim_ep ant_route(struct bsc_str method, struct bsc_str path)
{
    bool prefixed;
    struct bsc_str p = unprefixed(path, &prefixed);

    if (bsc_str_eq(method, BSC_STR("POST")) &&
        (bsc_str_eq(p, BSC_STR("/v1/messages")) ||
         bsc_str_eq(p, BSC_STR("/v1/messages/count_tokens"))))
        return SIM_EP_CHAT;
    if (!prefixed || !bsc_str_eq(method, BSC_STR("GET")))
        return SIM_EP_NONE; /* GET /v1/models is the OpenAI dialect's */
    if (bsc_str_eq(p, BSC_STR("/v1/models")))
        return SIM_EP_MODELS;
    if (p.len > 11 && bsc_str_starts(p, BSC_STR("/v1/models/")))
        return SIM_EP_MODEL;
    return SIM_EP_NONE;
}

static bool ant_authorize(const struct sim_in *in, struct sim_reject *rej)
{
    struct bsc_str key = bsc_str_trim(in->header(in->ctx, BSC_STR("x-api-key")));

    if (key.len == 0) {
        sim_reject_set(rej, 401, "authentication_error", NULL, "x-api-key header is required");
        return false;
    }
    /* Every key starting with sk-sim-bad is refused, as in the OpenAI dialect. */
    if (bsc_str_starts(key, BSC_STR("sk-sim-bad"))) {
        sim_reject_set(rej, 401, "authentication_error", NULL, "invalid x-api-key");
        return false;
    }
    return true;
}

/* ---- request validation ---- */

static bool bad(struct sim_reject *rej, const char *fmt, ...) BSC_PRINTF(2, 3);

static bool bad(struct sim_reject *rej, const char *fmt, ...)
{
    va_list ap;

    rej->status = 400;
    rej->type = "invalid_request_error";
    rej->code = NULL;
    va_start(ap, fmt);
    vsnprintf(rej->message, sizeof(rej->message), fmt, ap);
    va_end(ap);
    return false;
}

static bool is(struct json_object *o, json_type t)
{
    return o && json_object_is_type(o, t);
}

/* Top-level fields the Messages API knows; anything else is "Extra inputs are not
 * permitted" (which catches OpenAI fields a gateway forgot to translate). */
static const char *const known_fields[] = {
    "model",       "messages", "max_tokens", "system",   "stop_sequences", "stream",
    "temperature", "top_p",    "top_k",      "tools",    "tool_choice",    "metadata",
    "thinking",    "service_tier", "container", "mcp_servers",
    /* newer and beta members the gateway forwards as they are (tests assert they arrive) */
    "output_config", "output_format", "context_management", "thread", "cache_control",
};

static bool check_fields(struct json_object *o, struct sim_reject *rej)
{
    json_object_object_foreach(o, key, val)
    {
        bool known = false;
        (void)val;
        for (size_t i = 0; i < BSC_ARRAY_LEN(known_fields) && !known; i++)
            known = strcmp(key, known_fields[i]) == 0;
        if (!known)
            return bad(rej, "%s: Extra inputs are not permitted", key);
    }
    return true;
}

/* What a turn's blocks amount to, for pairing and token counting. */
struct turn_scan {
    size_t text_bytes;
    size_t n_use, n_result, n_text;
    char *use_ids[ANT_MAX_IDS];    /* borrowed from the request JSON */
    size_t n_use_ids;
};

static bool check_source(struct json_object *src, const char *where, struct sim_reject *rej)
{
    struct bsc_str type = sim_json_get_str(src, "type");

    if (bsc_str_eq(type, BSC_STR("base64"))) {
        if (!sim_json_get_str(src, "media_type").len || !sim_json_get_str(src, "data").len)
            return bad(rej, "%s.source: base64 sources need media_type and data", where);
        return true;
    }
    if (bsc_str_eq(type, BSC_STR("url"))) {
        if (!sim_json_get_str(src, "url").len)
            return bad(rej, "%s.source.url: Field required", where);
        return true;
    }
    return bad(rej, "%s.source.type: Input should be 'base64' or 'url'", where);
}

static bool check_result_content(struct json_object *c, const char *where,
                                 struct turn_scan *ts, struct sim_reject *rej)
{
    if (!c || is(c, json_type_string)) {
        ts->text_bytes += c ? (size_t)json_object_get_string_len(c) : 0;
        return true;
    }
    if (!is(c, json_type_array))
        return bad(rej, "%s.content: Input should be a valid string or list", where);
    for (size_t i = 0; i < json_object_array_length(c); i++) {
        struct json_object *b = json_object_array_get_idx(c, i);
        struct bsc_str type = sim_json_get_str(b, "type"), text = sim_json_get_str(b, "text");
        if (bsc_str_eq(type, BSC_STR("text")) && text.len)
            ts->text_bytes += text.len;
        else if (!bsc_str_eq(type, BSC_STR("image")))
            return bad(rej, "%s.content.%zu: text blocks must be non-empty", where, i);
    }
    return true;
}

/* One content block of message <mi> in role <assistant or not>. */
static bool check_block(struct json_object *b, size_t mi, size_t bi, bool assistant,
                        struct turn_scan *ts, struct sim_reject *rej)
{
    struct bsc_str type = sim_json_get_str(b, "type");
    char where[64];

    snprintf(where, sizeof(where), "messages.%zu.content.%zu", mi, bi);
    if (!is(b, json_type_object) || !type.len)
        return bad(rej, "%s.type: Field required", where);
    if (bsc_str_eq(type, BSC_STR("text"))) {
        struct bsc_str t = sim_json_get_str(b, "text");
        if (!t.len)
            return bad(rej, "messages: text content blocks must be non-empty");
        ts->n_text++;
        ts->text_bytes += t.len;
        return true;
    }
    if (bsc_str_eq(type, BSC_STR("image")) || bsc_str_eq(type, BSC_STR("document"))) {
        if (assistant)
            return bad(rej, "%s: %.*s blocks are not allowed in assistant turns", where,
                       BSC_STR_FMT(type));
        return check_source(bsc_json_get(b, "source"), where, rej);
    }
    if (bsc_str_eq(type, BSC_STR("tool_use"))) {
        struct bsc_str id = sim_json_get_str(b, "id");
        if (!assistant)
            return bad(rej, "%s: tool_use blocks are only allowed in assistant turns", where);
        if (!id.len || !sim_json_get_str(b, "name").len || !is(bsc_json_get(b, "input"),
                                                                json_type_object))
            return bad(rej, "%s: tool_use needs id, name and an input object", where);
        if (ts->n_use_ids < ANT_MAX_IDS)
            ts->use_ids[ts->n_use_ids++] = (char *)id.p;
        ts->n_use++;
        return true;
    }
    if (bsc_str_eq(type, BSC_STR("tool_result"))) {
        if (assistant)
            return bad(rej, "%s: tool_result blocks are only allowed in user turns", where);
        if (!sim_json_get_str(b, "tool_use_id").len)
            return bad(rej, "%s.tool_use_id: Field required", where);
        if (ts->n_text)
            return bad(rej, "%s: tool_result blocks must come before other content", where);
        ts->n_result++;
        return check_result_content(bsc_json_get(b, "content"), where, ts, rej);
    }
    if (assistant && (bsc_str_eq(type, BSC_STR("thinking")) ||
                      bsc_str_eq(type, BSC_STR("redacted_thinking"))))
        return true;
    return bad(rej, "%s.type: unsupported content block type '%.*s'", where, BSC_STR_FMT(type));
}

static bool id_in(const struct turn_scan *ts, struct bsc_str id)
{
    for (size_t i = 0; i < ts->n_use_ids; i++)
        if (bsc_str_eq(bsc_str_cstr(ts->use_ids[i]), id))
            return true;
    return false;
}

/* Every tool_use of <prev> needs its tool_result in <msg> (the very next message), and
 * every tool_result of <msg> needs its tool_use in <prev>. */
static bool check_pairing(struct json_object *content, size_t mi, const struct turn_scan *prev,
                          struct sim_reject *rej)
{
    for (size_t i = 0; is(content, json_type_array) && i < json_object_array_length(content);
         i++) {
        struct json_object *b = json_object_array_get_idx(content, i);
        struct bsc_str id = sim_json_get_str(b, "tool_use_id");
        if (bsc_str_eq(sim_json_get_str(b, "type"), BSC_STR("tool_result")) && !id_in(prev, id))
            return bad(rej,
                       "messages.%zu.content.%zu: unexpected `tool_use_id` found in "
                       "`tool_result` blocks: %.*s. Each `tool_result` block must have a "
                       "corresponding `tool_use` block in the previous message.",
                       mi, i, (int)(id.len > 64 ? 64 : id.len), id.p);
    }
    for (size_t k = 0; k < prev->n_use_ids; k++) {
        bool found = false;
        for (size_t i = 0; is(content, json_type_array) &&
                           i < json_object_array_length(content) && !found;
             i++) {
            struct json_object *b = json_object_array_get_idx(content, i);
            found = bsc_str_eq(sim_json_get_str(b, "type"), BSC_STR("tool_result")) &&
                    bsc_str_eq(sim_json_get_str(b, "tool_use_id"),
                               bsc_str_cstr(prev->use_ids[k]));
        }
        if (!found)
            return bad(rej,
                       "messages.%zu: `tool_use` ids were found without `tool_result` blocks "
                       "immediately after: %.64s. Each `tool_use` block must have a "
                       "corresponding `tool_result` block in the next message.",
                       mi ? mi - 1 : 0, prev->use_ids[k]);
    }
    return true;
}

static bool check_message(struct json_object *m, size_t mi, struct turn_scan *ts,
                          struct sim_reject *rej)
{
    struct bsc_str role = sim_json_get_str(m, "role");
    struct json_object *c = bsc_json_get(m, "content");
    bool assistant = bsc_str_eq(role, BSC_STR("assistant"));

    if (!is(m, json_type_object))
        return bad(rej, "messages.%zu: Input should be a valid dictionary", mi);
    if (!assistant && !bsc_str_eq(role, BSC_STR("user")))
        return bad(rej,
                   "messages.%zu.role: Input should be 'user' or 'assistant' (the Messages "
                   "API takes a top-level `system` parameter, not a \"%.*s\" role)",
                   mi, (int)(role.len > 32 ? 32 : role.len), role.p ? role.p : "");
    if (is(c, json_type_string)) {
        if (json_object_get_string_len(c) == 0)
            return bad(rej, "messages.%zu: all messages must have non-empty content", mi);
        ts->text_bytes += (size_t)json_object_get_string_len(c);
        ts->n_text++;
        return true;
    }
    if (!is(c, json_type_array))
        return bad(rej, "messages.%zu.content: Input should be a valid string or list", mi);
    if (json_object_array_length(c) == 0)
        return bad(rej, "messages.%zu: all messages must have non-empty content", mi);
    for (size_t i = 0; i < json_object_array_length(c); i++)
        if (!check_block(json_object_array_get_idx(c, i), mi, i, assistant, ts, rej))
            return false;
    return true;
}

/* Validates messages; sums their text bytes into *<bytes>. */
/* <continued>: the request continues a server-side thread (thread.type "continue", the
 * SDK's tool runner): the earlier turns live upstream, so the first message's tool
 * results answer a tool_use the request does not repeat. */
static bool check_messages(struct json_object *msgs, bool continued, size_t *bytes,
                           struct sim_reject *rej)
{
    struct turn_scan prev = {0}, cur;
    size_t n;

    if (!is(msgs, json_type_array))
        return bad(rej, "messages: Field required");
    n = json_object_array_length(msgs);
    if (n == 0)
        return bad(rej, "messages: at least one message is required");
    for (size_t i = 0; i < n; i++) {
        struct json_object *m = json_object_array_get_idx(msgs, i);
        memset(&cur, 0, sizeof(cur));
        if (!check_message(m, i, &cur, rej))
            return false;
        if ((prev.n_use_ids || cur.n_result) && !(continued && i == 0) &&
            !check_pairing(bsc_json_get(m, "content"), i, &prev, rej))
            return false;
        *bytes += cur.text_bytes;
        prev = cur;
    }
    return true;
}

static bool check_system(struct json_object *sys, size_t *bytes, struct sim_reject *rej)
{
    if (!sys)
        return true;
    if (is(sys, json_type_string)) {
        *bytes += (size_t)json_object_get_string_len(sys);
        return true;
    }
    if (!is(sys, json_type_array))
        return bad(rej, "system: Input should be a valid string or list of text blocks");
    for (size_t i = 0; i < json_object_array_length(sys); i++) {
        struct json_object *b = json_object_array_get_idx(sys, i);
        struct bsc_str t = sim_json_get_str(b, "text");
        if (!bsc_str_eq(sim_json_get_str(b, "type"), BSC_STR("text")) || !t.len)
            return bad(rej, "system.%zu: text blocks must be non-empty", i);
        *bytes += t.len;
    }
    return true;
}

static bool check_number(struct json_object *o, const char *key, double max,
                         struct sim_reject *rej)
{
    struct json_object *v = bsc_json_get(o, key);

    if (!v)
        return true;
    if (!is(v, json_type_double) && !is(v, json_type_int))
        return bad(rej, "%s: Input should be a valid number", key);
    if (json_object_get_double(v) < 0 || json_object_get_double(v) > max)
        return bad(rej, "%s: Input should be less than or equal to %g", key, max);
    return true;
}

static bool check_sampling(struct json_object *o, struct sim_call *call, struct sim_reject *rej)
{
    struct json_object *v = bsc_json_get(o, "max_tokens"), *stop = bsc_json_get(o, "stop_sequences");
    struct json_object *meta = bsc_json_get(o, "metadata");

    if (!v)
        return bad(rej, "max_tokens: Field required");
    if (!is(v, json_type_int) || json_object_get_int64(v) < 1)
        return bad(rej, "max_tokens: Input should be greater than or equal to 1");
    call->max_tokens = json_object_get_int64(v) > UINT32_MAX ? UINT32_MAX
                                                             : (uint32_t)json_object_get_int64(v);
    if ((v = bsc_json_get(o, "stream")) && !is(v, json_type_boolean))
        return bad(rej, "stream: Input should be a valid boolean");
    call->stream = v && json_object_get_boolean(v);
    if (!check_number(o, "temperature", 1.0, rej) || !check_number(o, "top_p", 1.0, rej))
        return false;
    for (size_t i = 0; stop && i < (is(stop, json_type_array) ? json_object_array_length(stop)
                                                               : 1);
         i++)
        if (!is(stop, json_type_array) ||
            !is(json_object_array_get_idx(stop, i), json_type_string))
            return bad(rej, "stop_sequences: Input should be a valid list of strings");
    if (meta) {
        json_object_object_foreach(meta, key, val)
        {
            if (strcmp(key, "user_id") != 0)
                return bad(rej, "metadata.%s: Extra inputs are not permitted", key);
            if (val && !is(val, json_type_string))
                return bad(rej, "metadata.user_id: Input should be a valid string");
        }
    }
    return true;
}

/* Tools: a name and an input_schema object each (server tools carry a versioned type). */
static bool check_tools(struct json_object *tools, struct sim_reject *rej)
{
    if (!tools)
        return true;
    if (!is(tools, json_type_array) || json_object_array_length(tools) > ANT_MAX_TOOLS)
        return bad(rej, "tools: Input should be a valid list of at most %u tools",
                   ANT_MAX_TOOLS);
    for (size_t i = 0; i < json_object_array_length(tools); i++) {
        struct json_object *t = json_object_array_get_idx(tools, i);
        struct bsc_str name = sim_json_get_str(t, "name"), type = sim_json_get_str(t, "type");
        if (!name.len || name.len > 64)
            return bad(rej, "tools.%zu.name: String should match pattern "
                            "'^[a-zA-Z0-9_-]{1,64}$'",
                       i);
        if ((!type.len || bsc_str_eq(type, BSC_STR("custom"))) &&
            !is(bsc_json_get(t, "input_schema"), json_type_object))
            return bad(rej, "tools.%zu.input_schema: Field required", i);
        if (bsc_json_get(t, "parameters") || bsc_json_get(t, "function"))
            return bad(rej, "tools.%zu: Extra inputs are not permitted", i);
    }
    return true;
}

static bool has_tool(struct json_object *tools, struct bsc_str name)
{
    for (size_t i = 0; is(tools, json_type_array) && i < json_object_array_length(tools); i++)
        if (bsc_str_eq(sim_json_get_str(json_object_array_get_idx(tools, i), "name"), name))
            return true;
    return false;
}

static bool check_tool_choice(struct json_object *o, struct sim_reject *rej)
{
    struct json_object *tc = bsc_json_get(o, "tool_choice"), *tools = bsc_json_get(o, "tools");
    struct bsc_str type = sim_json_get_str(tc, "type"), name = sim_json_get_str(tc, "name");
    struct json_object *dp = bsc_json_get(tc, "disable_parallel_tool_use");

    if (!tc)
        return true;
    if (!is(tc, json_type_object))
        return bad(rej, "tool_choice: Input should be a valid dictionary");
    if (!bsc_str_eq(type, BSC_STR("auto")) && !bsc_str_eq(type, BSC_STR("any")) &&
        !bsc_str_eq(type, BSC_STR("tool")) && !bsc_str_eq(type, BSC_STR("none")))
        return bad(rej, "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'");
    if (bsc_str_eq(type, BSC_STR("tool")) && !has_tool(tools, name))
        return bad(rej, "tool_choice.name: tool '%.*s' is not in tools",
                   (int)(name.len > 64 ? 64 : name.len), name.p ? name.p : "");
    if (dp && (!is(dp, json_type_boolean) || bsc_str_eq(type, BSC_STR("none"))))
        return bad(rej, "tool_choice.disable_parallel_tool_use: not allowed here");
    return true;
}

/* ---- what to answer ---- */

/* The text blocks of <m> (a string content, or its text blocks) appended to <out>,
 * capped. True when <m> has a tool_result block. */
static bool user_text(struct json_object *m, struct bsc_buf *out)
{
    struct json_object *c = bsc_json_get(m, "content");
    bool results = false;

    if (is(c, json_type_string)) {
        size_t n = (size_t)json_object_get_string_len(c), room = out->max - out->len;
        bsc_buf_append(out, json_object_get_string(c), n < room ? n : room);
        return false;
    }
    for (size_t i = 0; is(c, json_type_array) && i < json_object_array_length(c); i++) {
        struct json_object *b = json_object_array_get_idx(c, i);
        struct bsc_str type = sim_json_get_str(b, "type"), t = sim_json_get_str(b, "text");
        size_t room = out->max - out->len;
        results |= bsc_str_eq(type, BSC_STR("tool_result"));
        if (bsc_str_eq(type, BSC_STR("text")))
            bsc_buf_append(out, t.p, t.len < room ? t.len : room);
    }
    return results;
}

/* The tool to call (borrowed from <o>), or NULL for a text answer. A forced choice (any,
 * tool) always calls; auto calls when the last turn is the user's and is not a turn of
 * tool results (then the model answers in text, ending the round trip). */
static const char *ant_pick_tool(struct json_object *o, struct json_object *last, bool *forced,
                             struct bsc_buf *text)
{
    struct json_object *tools = bsc_json_get(o, "tools"), *tc = bsc_json_get(o, "tool_choice");
    struct bsc_str type = sim_json_get_str(tc, "type");
    bool results;

    *forced = false;
    if (!is(tools, json_type_array) || json_object_array_length(tools) == 0 ||
        bsc_str_eq(type, BSC_STR("none")))
        return NULL;
    results = user_text(last, text);
    if (bsc_str_eq(type, BSC_STR("tool"))) {
        *forced = true;
        return sim_json_get_str(tc, "name").p;
    }
    *forced = bsc_str_eq(type, BSC_STR("any"));
    if (!*forced && (!bsc_str_eq(sim_json_get_str(last, "role"), BSC_STR("user")) || results))
        return NULL;
    return sim_json_get_str(json_object_array_get_idx(tools, 0), "name").p;
}

/* The input_schema of the tool named <name> (borrowed), or NULL (server tools have none). */
static struct json_object *ant_tool_schema(struct json_object *o, const char *name)
{
    struct json_object *tools = bsc_json_get(o, "tools");

    for (size_t i = 0; is(tools, json_type_array) && i < json_object_array_length(tools); i++) {
        struct json_object *t = json_object_array_get_idx(tools, i);
        if (bsc_str_eq(sim_json_get_str(t, "name"), bsc_str_cstr(name)))
            return bsc_json_get(t, "input_schema");
    }
    return NULL;
}

static bool parse_tool_call(struct json_object *o, struct json_object *last,
                            struct sim_call *call, struct sim_reject *rej)
{
    struct bsc_buf text;
    bool forced;
    const char *name;

    bsc_buf_init(&text, SIM_ECHO_CHARS * 8);
    name = ant_pick_tool(o, last, &forced, &text);
    if (!name) {
        bsc_buf_cleanup(&text);
        return true;
    }
    /* An input valid against the tool's input_schema: the gateway's forced tool for
     * response_format carries the client's schema, so this input is the JSON answer. */
    call->tool_args = sim_schema_tool_args(ant_tool_schema(o, name), bsc_buf_str(&text));
    call->tool_name = call->tool_args ? bsc_str_dup(bsc_str_cstr(name)) : NULL;
    /* include_usage has no meaning here (Anthropic always reports usage); the dialect
     * reuses it to remember that a forced call has no text preface. */
    call->include_usage = forced;
    bsc_buf_cleanup(&text);
    if (!call->tool_name || !call->tool_args) {
        sim_reject_set(rej, 500, "api_error", NULL, "out of memory");
        return false;
    }
    return true;
}

/* output_config.format (or the older beta's output_format) json_schema: the text answer is
 * an instance of the schema, as Claude's structured outputs give. */
static bool output_schema(struct json_object *o, struct sim_call *call, struct sim_reject *rej)
{
    struct json_object *fmt = bsc_json_get(bsc_json_get(o, "output_config"), "format");

    if (!fmt)
        fmt = bsc_json_get(o, "output_format");
    if (!fmt)
        return true;
    if (!bsc_str_eq(sim_json_get_str(fmt, "type"), BSC_STR("json_schema")) ||
        !is(bsc_json_get(fmt, "schema"), json_type_object))
        return bad(rej, "output_config.format: a json_schema with a schema object is required");
    call->json_answer = sim_schema_gen_dup(bsc_json_get(fmt, "schema"));
    if (!call->json_answer) {
        sim_reject_set(rej, 500, "api_error", NULL, "out of memory");
        return false;
    }
    return true;
}

/* A last message of the assistant is the start of the answer (Anthropic's prefill): its text
 * (a string, or its text blocks joined) goes to <call>->prefill. False: out of memory. */
static bool read_prefill(struct json_object *last, struct sim_call *call)
{
    struct json_object *c = bsc_json_get(last, "content");
    struct bsc_buf text;
    bool ok = true;

    if (!bsc_str_eq(sim_json_get_str(last, "role"), BSC_STR("assistant")))
        return true;
    if (is(c, json_type_string)) {
        call->prefill = bsc_str_dup(bsc_str_cstr(json_object_get_string(c)));
        return call->prefill != NULL;
    }
    if (!is(c, json_type_array))
        return true;
    bsc_buf_init(&text, 16u << 20); /* the bound of a request body */
    for (size_t i = 0; ok && i < json_object_array_length(c); i++) {
        struct json_object *b = json_object_array_get_idx(c, i);
        if (bsc_str_eq(sim_json_get_str(b, "type"), BSC_STR("text")))
            ok = bsc_buf_append_str(&text, sim_json_get_str(b, "text")) == BSC_OK;
    }
    if (ok)
        ok = (call->prefill = bsc_str_dup(bsc_buf_str(&text))) != NULL;
    bsc_buf_cleanup(&text);
    return ok;
}

static bool parse_messages_call(struct json_object *o, const struct sim_in *in,
                                struct sim_call *call, struct sim_reject *rej)
{
    struct bsc_str model = sim_json_get_str(o, "model");
    struct json_object *msgs = bsc_json_get(o, "messages");
    size_t bytes = 0;
    bool continued;

    if (model.len == 0 || model.len > 256 || memchr(model.p, '\0', model.len))
        return bad(rej, "model: Field required");
    call->model = bsc_str_dup(model);
    if (!call->model) {
        sim_reject_set(rej, 500, "api_error", NULL, "out of memory");
        return false;
    }
    if (!in->header(in->ctx, BSC_STR("anthropic-version")).len)
        return bad(rej, "anthropic-version: header is required");
    continued = bsc_str_eq(sim_json_get_str(bsc_json_get(o, "thread"), "type"),
                           BSC_STR("continue"));
    call->count_tokens = in->path.len > 13 &&
                         memcmp(in->path.p + in->path.len - 13, "/count_tokens", 13) == 0;
    if (!check_fields(o, rej) || (!call->count_tokens && !check_sampling(o, call, rej)) ||
        !check_system(bsc_json_get(o, "system"), &bytes, rej) ||
        !check_messages(msgs, continued, &bytes, rej) ||
        !check_tools(bsc_json_get(o, "tools"), rej) || !check_tool_choice(o, rej))
        return false;
    call->prompt_tokens = sim_content_prompt_tokens(bytes, json_object_array_length(msgs));
    if (call->count_tokens)
        return true;
    if (!read_prefill(json_object_array_get_idx(msgs, json_object_array_length(msgs) - 1), call)) {
        sim_reject_set(rej, 500, "api_error", NULL, "out of memory");
        return false;
    }
    if (!output_schema(o, call, rej))
        return false;
    return parse_tool_call(o, json_object_array_get_idx(msgs, json_object_array_length(msgs) - 1),
                           call, rej);
}

static bool ant_parse(enum sim_ep ep, const struct sim_in *in, struct sim_call *call,
                      struct sim_reject *rej)
{
    struct json_object *o;
    bool prefixed, ok;
    struct bsc_str p;

    call->ep = ep;
    if (ep == SIM_EP_MODELS)
        return true;
    if (ep == SIM_EP_MODEL) {
        p = unprefixed(in->path, &prefixed);
        call->model = bsc_str_dup(bsc_str_make(p.p + 11, p.len - 11));
        if (!call->model)
            sim_reject_set(rej, 500, "api_error", NULL, "out of memory");
        return call->model != NULL;
    }
    o = sim_json_parse(in->body, NULL, 0);
    if (!o || !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        return bad(rej, "The request body is not valid JSON.");
    }
    ok = parse_messages_call(o, in, call, rej);
    json_object_put(o);
    return ok;
}

/* ---- answers ---- */

/* A tool call answered with auto choice is preceded by a short text block, as Claude
 * does; a forced one is not. The text block makes the tool block's index 1, which a
 * translator must not use as the OpenAI tool-call index. */
static bool has_preface(const struct sim_call *call)
{
    return call->tool_name && !call->include_usage;
}

/* How many argument fragments a streamed tool call has, and the <i>-th of them. */
static size_t ant_arg_pieces(const struct sim_call *call)
{
    return sim_utf8_piece_count(bsc_str_cstr(call->tool_args), SIM_ARG_PIECE_BYTES);
}

static struct bsc_str ant_arg_piece(const struct sim_call *call, size_t i)
{
    return sim_utf8_piece_at(bsc_str_cstr(call->tool_args), SIM_ARG_PIECE_BYTES, i);
}

static uint32_t output_tokens(const struct sim_call *call)
{
    if (!call->tool_name)
        return call->n_tokens;
    return (uint32_t)ant_arg_pieces(call) + (has_preface(call) ? 1u : 0u);
}

static const char *stop_reason(const struct sim_call *call)
{
    if (call->tool_name)
        return "tool_use";
    return call->finish_length ? "max_tokens" : "end_turn";
}

static enum bsc_err preface_text(const struct sim_call *call, struct bsc_buf *out)
{
    return bsc_buf_appendf(out, "Let me call %s.", call->tool_name);
}

static enum bsc_err ant_usage_json(const struct sim_call *call, struct bsc_buf *out)
{
    if (call->usage.len)
        return bsc_buf_append_str(out, call->usage);
    return bsc_buf_appendf(out,
                           "{\"input_tokens\":%u,\"cache_creation_input_tokens\":0,"
                           "\"cache_read_input_tokens\":0,\"output_tokens\":%u}",
                           call->prompt_tokens, output_tokens(call));
}

static enum bsc_err text_block(struct bsc_str text, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_append_cstr(out, "{\"type\":\"text\",\"text\":");

    if (!err)
        err = bsc_buf_append_json_str(out, text);
    return err ? err : bsc_buf_append_char(out, '}');
}

/* A tool_use block; <input> is the raw JSON text of the input ("{}" when streaming), or
 * with <as_string> scripted text that is not JSON (sent as a JSON string). */
static enum bsc_err tool_block(const struct sim_call *call, const char *input, bool as_string,
                               struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_appendf(out, "{\"type\":\"tool_use\",\"id\":\"toolu_sim_%llu\","
                                            "\"name\":",
                                       (unsigned long long)call->seq);

    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(call->tool_name));
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"input\":");
    if (!err)
        err = sim_content_args_value(bsc_str_cstr(input), as_string, out);
    return err ? err : bsc_buf_append_char(out, '}');
}

static enum bsc_err content_json(const struct sim_call *call, struct bsc_buf *out)
{
    struct bsc_buf text;
    enum bsc_err err;

    bsc_buf_init(&text, out->max);
    if (call->tool_name)
        err = has_preface(call) ? preface_text(call, &text) : BSC_OK;
    else
        err = sim_content_answer(call->content, call->n_tokens, &text);
    if (!err)
        err = bsc_buf_append_char(out, '[');
    if (!err && text.len)
        err = text_block(bsc_buf_str(&text), out);
    if (!err && call->tool_name) {
        if (text.len)
            err = bsc_buf_append_char(out, ',');
        if (!err)
            err = tool_block(call, call->tool_args, call->tool_args_raw, out);
    }
    bsc_buf_cleanup(&text);
    return err ? err : bsc_buf_append_char(out, ']');
}

static enum bsc_err ant_body(const struct sim_call *call, struct bsc_buf *out)
{
    enum bsc_err err;

    if (call->count_tokens)
        return bsc_buf_appendf(out, "{\"input_tokens\":%u}", call->prompt_tokens);
    err = bsc_buf_appendf(out, "{\"id\":\"msg_sim_%llu\",\"type\":\"message\","
                                            "\"role\":\"assistant\",\"model\":",
                                       (unsigned long long)call->seq);

    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(call->model));
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"content\":");
    if (!err)
        err = content_json(call, out);
    if (!err)
        err = bsc_buf_appendf(out, ",\"stop_reason\":\"%s\",\"stop_sequence\":null,\"usage\":",
                              stop_reason(call));
    if (!err)
        err = ant_usage_json(call, out);
    return err ? err : bsc_buf_append_char(out, '}');
}

/* ---- streams ---- */

/* The event layout: message_start, [preface text block: start, delta, stop], the main
 * block's start, its deltas, its stop, message_delta; a ping right after the first block
 * start (where the API's own example has it); then message_stop as the end event. */
enum ev_kind {
    EV_MESSAGE_START = 0,
    EV_PREFACE_START,
    EV_PREFACE_DELTA,
    EV_PREFACE_STOP,
    EV_BLOCK_START,
    EV_PING,
    EV_BLOCK_DELTA,
    EV_BLOCK_STOP,
    EV_MESSAGE_DELTA,
    EV_COUNT
};

static size_t body_deltas(const struct sim_call *call)
{
    return call->tool_name ? ant_arg_pieces(call) : call->n_tokens;
}

static size_t ant_event_count(const struct sim_call *call)
{
    return 5 + (has_preface(call) ? 3 : 0) + body_deltas(call);
}

/* Which event <i> is; *<k> is the delta number for EV_BLOCK_DELTA. */
static enum ev_kind ev_at(const struct sim_call *call, size_t i, size_t *k)
{
    static const enum ev_kind with_preface[] = {EV_MESSAGE_START, EV_PREFACE_START, EV_PING,
                                                EV_PREFACE_DELTA, EV_PREFACE_STOP,
                                                EV_BLOCK_START};
    static const enum ev_kind plain[] = {EV_MESSAGE_START, EV_BLOCK_START, EV_PING};
    const enum ev_kind *head = has_preface(call) ? with_preface : plain;
    size_t n_head = has_preface(call) ? BSC_ARRAY_LEN(with_preface) : BSC_ARRAY_LEN(plain);
    size_t n = body_deltas(call);

    *k = 0;
    if (i < n_head)
        return head[i];
    i -= n_head;
    if (i < n) {
        *k = i;
        return EV_BLOCK_DELTA;
    }
    return i == n ? EV_BLOCK_STOP : EV_MESSAGE_DELTA;
}

static enum bsc_err ev_open(const char *name, struct bsc_buf *out)
{
    return bsc_buf_appendf(out, "event: %s\ndata: {\"type\":\"%s\"", name, name);
}

static enum bsc_err ev_close(struct bsc_buf *out)
{
    return bsc_buf_append_cstr(out, "}\n\n");
}

static enum bsc_err message_start(const struct sim_call *call, struct bsc_buf *out)
{
    enum bsc_err err = ev_open("message_start", out);

    if (!err)
        err = bsc_buf_appendf(out, ",\"message\":{\"id\":\"msg_sim_%llu\",\"type\":\"message\","
                                   "\"role\":\"assistant\",\"model\":",
                              (unsigned long long)call->seq);
    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(call->model));
    if (!err && call->usage_start.len)
        err = bsc_buf_appendf(out,
                              ",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,"
                              "\"usage\":%.*s}", BSC_STR_FMT(call->usage_start));
    else if (!err)
        err = bsc_buf_appendf(out,
                              ",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,"
                              "\"usage\":{\"input_tokens\":%u,\"cache_creation_input_tokens\":0,"
                              "\"cache_read_input_tokens\":0,\"output_tokens\":1}}",
                              call->prompt_tokens);
    return err ? err : ev_close(out);
}

static enum bsc_err block_start(const struct sim_call *call, size_t index, bool tool,
                                struct bsc_buf *out)
{
    enum bsc_err err = ev_open("content_block_start", out);

    if (!err)
        err = bsc_buf_appendf(out, ",\"index\":%zu,\"content_block\":", index);
    if (!err)
        err = tool ? tool_block(call, "{}", false, out)
                   : bsc_buf_append_cstr(out, "{\"type\":\"text\",\"text\":\"\"}");
    return err ? err : ev_close(out);
}

static enum bsc_err block_delta(size_t index, bool tool, struct bsc_str piece,
                                struct bsc_buf *out)
{
    enum bsc_err err = ev_open("content_block_delta", out);

    if (!err)
        err = bsc_buf_appendf(out, ",\"index\":%zu,\"delta\":{\"type\":\"%s\",\"%s\":", index,
                              tool ? "input_json_delta" : "text_delta",
                              tool ? "partial_json" : "text");
    if (!err)
        err = bsc_buf_append_json_str(out, piece);
    if (!err)
        err = bsc_buf_append_char(out, '}');
    return err ? err : ev_close(out);
}

static enum bsc_err block_stop(size_t index, struct bsc_buf *out)
{
    enum bsc_err err = ev_open("content_block_stop", out);

    if (!err)
        err = bsc_buf_appendf(out, ",\"index\":%zu", index);
    return err ? err : ev_close(out);
}

static enum bsc_err message_delta(const struct sim_call *call, struct bsc_buf *out)
{
    enum bsc_err err = ev_open("message_delta", out);

    if (!err && call->usage.len)
        err = bsc_buf_appendf(out,
                              ",\"delta\":{\"stop_reason\":\"%s\",\"stop_sequence\":null},"
                              "\"usage\":%.*s",
                              stop_reason(call), BSC_STR_FMT(call->usage));
    else if (!err)
        err = bsc_buf_appendf(out,
                              ",\"delta\":{\"stop_reason\":\"%s\",\"stop_sequence\":null},"
                              "\"usage\":{\"output_tokens\":%u}",
                              stop_reason(call), output_tokens(call));
    return err ? err : ev_close(out);
}

static enum bsc_err ant_event(const struct sim_call *call, size_t i, struct bsc_buf *out)
{
    size_t k, main_index = has_preface(call) ? 1 : 0;
    bool tool = call->tool_name != NULL;
    struct bsc_buf text;
    enum bsc_err err;

    if (i >= ant_event_count(call))
        return BSC_EINVAL;
    switch (ev_at(call, i, &k)) {
    case EV_MESSAGE_START:
        return message_start(call, out);
    case EV_PREFACE_START:
        return block_start(call, 0, false, out);
    case EV_PREFACE_DELTA:
        bsc_buf_init(&text, 4096);
        err = preface_text(call, &text);
        if (!err)
            err = block_delta(0, false, bsc_buf_str(&text), out);
        bsc_buf_cleanup(&text);
        return err;
    case EV_PREFACE_STOP:
        return block_stop(0, out);
    case EV_BLOCK_START:
        return block_start(call, main_index, tool, out);
    case EV_PING:
        return bsc_buf_append_cstr(out, "event: ping\ndata: {\"type\":\"ping\"}\n\n");
    case EV_BLOCK_DELTA:
        return block_delta(main_index, tool,
                           tool ? ant_arg_piece(call, k)
                                : sim_content_chunk(call->content, (uint32_t)k),
                           out);
    case EV_BLOCK_STOP:
        return block_stop(main_index, out);
    default:
        return message_delta(call, out);
    }
}

static enum bsc_err ant_end_event(const struct sim_call *call, struct bsc_buf *out)
{
    (void)call;
    return bsc_buf_append_cstr(out, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
}

/* ---- errors ---- */

static void ant_default_error(const struct sim_call *call, int status, const char **type,
                              const char **code, char *msgbuf, size_t msglen)
{
    const char *model = call && call->model ? call->model : "unknown";

    *code = NULL; /* Anthropic errors have a type, no code */
    *type = status >= 500 ? "api_error" : "invalid_request_error";
    switch (status) {
    case 401:
        *type = "authentication_error";
        snprintf(msgbuf, msglen, "invalid x-api-key");
        break;
    case 402:
        *type = "billing_error";
        snprintf(msgbuf, msglen, "Your credit balance is too low to access the Anthropic API "
                                 "(simulated).");
        break;
    case 403:
        *type = "permission_error";
        snprintf(msgbuf, msglen,
                 "Your API key does not have permission to use the specified resource.");
        break;
    case 404:
        *type = "not_found_error";
        snprintf(msgbuf, msglen, "model: %s", model);
        break;
    case 413:
        *type = "request_too_large";
        snprintf(msgbuf, msglen, "Request exceeds the maximum allowed number of bytes.");
        break;
    case 429:
        *type = "rate_limit_error";
        snprintf(msgbuf, msglen,
                 "This request would exceed the rate limit for your organization of 50 "
                 "requests per minute (simulated).");
        break;
    case 500:
        snprintf(msgbuf, msglen, "Internal server error");
        break;
    case 503: /* not documented by Anthropic; rendered as the overload it would mean */
    case 529:
        *type = "overloaded_error";
        snprintf(msgbuf, msglen, "Overloaded");
        break;
    case 504:
        *type = "timeout_error";
        snprintf(msgbuf, msglen, "Request timed out");
        break;
    default:
        snprintf(msgbuf, msglen, "Simulated error with status %d.", status);
    }
}

static enum bsc_err error_json(const char *type, const char *message, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_append_cstr(out, "{\"type\":\"error\",\"error\":{\"type\":");

    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(type));
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"message\":");
    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(message));
    return err ? err : bsc_buf_append(out, "}}", 2);
}

static enum bsc_err ant_error_body(int status, const char *type, const char *code,
                                   const char *message, struct bsc_buf *out)
{
    (void)status;
    (void)code;
    return error_json(type, message, out);
}

static enum bsc_err ant_error_event(int status, const char *type, const char *code,
                                    const char *message, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_append_cstr(out, "event: error\ndata: ");

    (void)status;
    (void)code;
    if (!err)
        err = error_json(type, message, out);
    return err ? err : bsc_buf_append(out, "\n\n", 2);
}

static enum bsc_err ant_malformed_body(const struct sim_call *call, struct bsc_buf *out)
{
    return bsc_buf_appendf(out,
                           "{\"id\":\"msg_sim_%llu\",\"type\":\"message\",\"content\":[{\"type\":"
                           "\"text\",\"text\":\"malformed by bascule-sim}]}",
                           (unsigned long long)call->seq);
}

static enum bsc_err ant_malformed_event(const struct sim_call *call, struct bsc_buf *out)
{
    (void)call;
    return bsc_buf_append_cstr(out, "event: content_block_delta\ndata: {\"type\":"
                                    "\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
                                    "\"text_delta\",\"text\":\"malformed by bascule-sim\n\n");
}

static enum bsc_err ant_model_json(const char *id, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_append_cstr(out, "{\"type\":\"model\",\"id\":");

    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(id));
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"display_name\":");
    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(id));
    return err ? err : bsc_buf_append_cstr(out, ",\"created_at\":\"2025-01-01T00:00:00Z\"}");
}

static enum bsc_err ant_models(const struct sim_call *call, const char *const *names, size_t n,
                               struct bsc_buf *out)
{
    enum bsc_err err;

    if (call->ep == SIM_EP_MODEL)
        return ant_model_json(call->model, out);
    err = bsc_buf_append_cstr(out, "{\"data\":[");
    for (size_t i = 0; i < n && !err; i++) {
        if (i)
            err = bsc_buf_append_char(out, ',');
        if (!err)
            err = ant_model_json(names[i], out);
    }
    if (!err)
        err = bsc_buf_append_cstr(out, "],\"has_more\":false,\"first_id\":");
    if (!err)
        err = n ? bsc_buf_append_json_str(out, bsc_str_cstr(names[0]))
                : bsc_buf_append_cstr(out, "null");
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"last_id\":");
    if (!err)
        err = n ? bsc_buf_append_json_str(out, bsc_str_cstr(names[n - 1]))
                : bsc_buf_append_cstr(out, "null");
    return err ? err : bsc_buf_append_char(out, '}');
}

const struct sim_dialect sim_dialect_anthropic = {
    .name = "anthropic",
    .route = ant_route,
    .authorize = ant_authorize,
    .parse = ant_parse,
    .body = ant_body,
    .event_count = ant_event_count,
    .event = ant_event,
    .end_event = ant_end_event,
    .stream_content_type = "text/event-stream; charset=utf-8",
    .default_error = ant_default_error,
    .error_body = ant_error_body,
    .error_event = ant_error_event,
    .malformed_body = ant_malformed_body,
    .malformed_event = ant_malformed_event,
    .models = ant_models,
};
