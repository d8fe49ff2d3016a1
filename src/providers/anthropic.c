/* SPDX-License-Identifier: MIT */
/* anthropic.c -- the adapter for the Anthropic Messages API (kind anthropic). The
 * canonical OpenAI chat request becomes POST {base_url}/messages: system and developer
 * messages hoisted into `system`, same-role turns merged, tool calls and tool results as
 * blocks. Answers and errors come back OpenAI-shaped; the stream translator lives in
 * anthropic_stream.c. A client that itself spoke Anthropic (prov_call.native) has its own
 * bytes forwarded, model replaced, and its answer carried back whole beside the
 * translation. Anthropic has no embeddings API: that op is refused. Mapping tables,
 * and which behaviours are documented and which assumed: docs/internals/provider-anthropic.md.
 *
 * Request fields, one decision each (anything not listed is dropped, as OpenAI-only):
 *
 *   field                          decision
 *   model                          replaced by the target's model
 *   messages                       translated (below); roles function -> EINVAL
 *   max_completion_tokens          -> max_tokens (wins over max_tokens)
 *   max_tokens                     -> max_tokens; neither: target max_output_tokens, else 4096
 *   stream                         -> stream (from the call, not the body)
 *   stream_options                 consumed: Anthropic streams always report usage
 *   temperature                    -> temperature, clamped to [0, 1] (OpenAI allows 0..2)
 *   top_p                          -> top_p
 *   stop (string | [strings])      -> stop_sequences
 *   user, else safety_identifier   -> metadata.user_id
 *   tools (type function)          -> tools {name, description, input_schema}; custom -> EINVAL
 *   tool_choice                    auto/none/required/named -> auto/none/any/tool;
 *                                  allowed_tools -> EINVAL; omitted when there are no tools
 *   parallel_tool_calls false      -> tool_choice.disable_parallel_tool_use true
 *   response_format text           dropped (the default)
 *   response_format json_object,   emulated: one forced tool PROV_ANTH_JSON_TOOL whose
 *     json_schema                  input_schema is the schema; its input is the answer.
 *                                  With client tools as well -> EINVAL
 *   n > 1                          EINVAL (one answer per call)
 *   logprobs true, top_logprobs>0  EINVAL (no token log-probabilities)
 *   logit_bias (non-empty)         EINVAL (cannot ban or force tokens)
 *   modalities with audio, audio   EINVAL (no audio output)
 *   functions, function_call       EINVAL (the deprecated API; clients must send tools)
 *   web_search_options             EINVAL (a hosted tool with its own contract)
 *   seed, presence_penalty,        dropped: sampling hints without a contract (OpenAI does
 *   frequency_penalty                not promise determinism or repetition either)
 *   reasoning_effort, verbosity,   dropped: no Anthropic field with the same meaning
 *   service_tier, store, metadata, prediction, prompt_cache_key
 *
 * Content parts: text -> text block (empty ones dropped); image_url data: URL -> image
 * base64 source, http(s) URL -> image url source, other -> EINVAL; file with file_data ->
 * document base64 source (file_id -> EINVAL); input_audio -> EINVAL; refusal (assistant)
 * -> text. A `name` on a message is dropped. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "core/json_get.h"
#include "core/utf8.h"
#include "providers/anthropic.h"
#include "providers/retry_after.h"
#include "stream/utf8.h"

/* ---- small json-c helpers ---- */

static bool is_type(struct json_object *o, json_type t)
{
    return o && json_object_is_type(o, t);
}

static struct json_object *str_block(const char *type, const char *key, struct json_object *val)
{
    struct json_object *b = json_object_new_object();

    json_object_object_add(b, "type", json_object_new_string(type));
    json_object_object_add(b, key, val);
    return b;
}

/* ---- the request translator ---- */

/* One translation in progress. The open turn collects its tool_result blocks apart from
 * its other blocks so that results always come first, as Anthropic requires. */
struct xl {
    const struct prov_call *c;
    char *why;
    size_t why_len;
    struct json_object *system;  /* owned: array of text blocks */
    struct json_object *msgs;    /* owned: the Anthropic messages */
    const char *role;            /* static: the open turn's role, NULL when none */
    struct json_object *results; /* owned: the open turn's tool_result blocks */
    struct json_object *blocks;  /* owned: the open turn's other blocks */
};

static enum bsc_err refuse(struct xl *x, const char *fmt, ...) BSC_PRINTF(2, 3);

/* Records the client-facing reason and returns BSC_EINVAL. */
static enum bsc_err refuse(struct xl *x, const char *fmt, ...)
{
    va_list ap;

    if (x->why && x->why_len) {
        va_start(ap, fmt);
        vsnprintf(x->why, x->why_len, fmt, ap);
        va_end(ap);
        /* A client's value (a role, a name) cut by the buffer can end inside a character. */
        bsc_utf8_scrub(x->why);
    }
    return BSC_EINVAL;
}

/* Closes the open turn into a message (tool results first), if it has any block. */
static void flush_turn(struct xl *x)
{
    size_t nr = json_object_array_length(x->results), nb = json_object_array_length(x->blocks);
    struct json_object *content, *msg;

    if (x->role && nr + nb > 0) {
        content = json_object_new_array_ext((int)(nr + nb));
        for (size_t i = 0; i < nr; i++)
            json_object_array_add(content, json_object_get(json_object_array_get_idx(x->results, i)));
        for (size_t i = 0; i < nb; i++)
            json_object_array_add(content, json_object_get(json_object_array_get_idx(x->blocks, i)));
        msg = json_object_new_object();
        json_object_object_add(msg, "role", json_object_new_string(x->role));
        json_object_object_add(msg, "content", content);
        json_object_array_add(x->msgs, msg);
    }
    json_object_put(x->results);
    json_object_put(x->blocks);
    x->results = json_object_new_array();
    x->blocks = json_object_new_array();
    x->role = NULL;
}

/* Adds <block> (ownership taken) to the turn of <role>, closing a turn of the other role
 * first: consecutive same-role messages become one turn. */
static void add_block(struct xl *x, const char *role, struct json_object *block, bool result)
{
    if (x->role && strcmp(x->role, role) != 0)
        flush_turn(x);
    x->role = role;
    json_object_array_add(result ? x->results : x->blocks, block);
}

/* A text block for <s>, or NULL for an empty string (Anthropic refuses empty text). */
static struct json_object *text_block(struct json_object *s)
{
    if (!is_type(s, json_type_string) || json_object_get_string_len(s) == 0)
        return NULL;
    return str_block("text", "text", json_object_get(s));
}

/* Splits "data:<media>;base64,<data>" into its media type and data. False when <url> is
 * not a base64 data URL with a media type. */
static bool data_url(const char *url, struct bsc_str *media, struct bsc_str *data)
{
    const char *semi, *comma;

    if (strncasecmp(url, "data:", 5) != 0)
        return false;
    comma = strchr(url, ',');
    if (!comma)
        return false;
    semi = memchr(url + 5, ';', (size_t)(comma - (url + 5)));
    if (!semi || semi == url + 5 || (size_t)(comma - semi) != 7 ||
        strncasecmp(semi, ";base64", 7) != 0)
        return false;
    *media = bsc_str_make(url + 5, (size_t)(semi - (url + 5)));
    *data = bsc_str_cstr(comma + 1);
    return data->len > 0;
}

static struct json_object *base64_source(struct bsc_str media, struct bsc_str data)
{
    struct json_object *src = json_object_new_object();

    json_object_object_add(src, "type", json_object_new_string("base64"));
    json_object_object_add(src, "media_type", json_object_new_string_len(media.p, (int)media.len));
    json_object_object_add(src, "data", json_object_new_string_len(data.p, (int)data.len));
    return src;
}

static enum bsc_err image_block(struct xl *x, size_t i, struct json_object *part,
                                struct json_object **out)
{
    struct json_object *iu = bsc_json_get(part, "image_url"), *src;
    const char *url = is_type(iu, json_type_string) ? json_object_get_string(iu)
                                                    : bsc_json_get_str(iu, "url");
    struct bsc_str media, data;

    if (!url || !url[0])
        return refuse(x, "messages[%zu]: an image_url part without a url", i);
    if (data_url(url, &media, &data)) {
        src = base64_source(media, data);
    } else if (strncasecmp(url, "https://", 8) == 0 || strncasecmp(url, "http://", 7) == 0) {
        src = json_object_new_object();
        json_object_object_add(src, "type", json_object_new_string("url"));
        json_object_object_add(src, "url", json_object_new_string(url));
    } else {
        return refuse(x, "messages[%zu]: an image_url must be an http(s) URL or a base64 data "
                         "URL",
                      i);
    }
    *out = str_block("image", "source", src);
    return BSC_OK;
}

static enum bsc_err file_block(struct xl *x, size_t i, struct json_object *part,
                               struct json_object **out)
{
    struct json_object *f = bsc_json_get(part, "file");
    const char *fd = bsc_json_get_str(f, "file_data");
    struct bsc_str media, data;

    if (!fd || !fd[0])
        return refuse(x, "messages[%zu]: file parts need file_data (file_id is OpenAI-only)",
                      i);
    if (!data_url(fd, &media, &data)) { /* bare base64: OpenAI's file inputs are PDFs */
        media = BSC_STR("application/pdf");
        data = bsc_str_cstr(fd);
    }
    *out = str_block("document", "source", base64_source(media, data));
    return BSC_OK;
}

/* The block for one content part of a user (or, with <assistant>, an assistant) message;
 * *<out> stays NULL for a part that translates to nothing. */
static enum bsc_err part_block(struct xl *x, size_t i, struct json_object *part, bool assistant,
                               struct json_object **out)
{
    const char *type = bsc_json_get_str(part, "type");

    *out = NULL;
    if (!type)
        return refuse(x, "messages[%zu]: a content part without a type", i);
    if (strcmp(type, "text") == 0) {
        *out = text_block(bsc_json_get(part, "text"));
        return BSC_OK;
    }
    if (assistant && strcmp(type, "refusal") == 0) {
        *out = text_block(bsc_json_get(part, "refusal"));
        return BSC_OK;
    }
    if (!assistant && strcmp(type, "image_url") == 0)
        return image_block(x, i, part, out);
    if (!assistant && strcmp(type, "file") == 0)
        return file_block(x, i, part, out);
    return refuse(x, "messages[%zu]: content parts of type \"%s\" are not supported by "
                     "Anthropic targets",
                  i, type);
}

/* The content of a user or assistant message into the open turn. */
static enum bsc_err put_content(struct xl *x, size_t i, struct json_object *content,
                                const char *role)
{
    bool assistant = strcmp(role, "assistant") == 0;
    struct json_object *b;
    enum bsc_err err;

    if (!content)
        return BSC_OK;
    if (is_type(content, json_type_string)) {
        b = text_block(content);
        if (b)
            add_block(x, role, b, false);
        return BSC_OK;
    }
    if (!is_type(content, json_type_array))
        return refuse(x, "messages[%zu]: content must be a string or an array of parts", i);
    for (size_t k = 0; k < json_object_array_length(content); k++) {
        err = part_block(x, i, json_object_array_get_idx(content, k), assistant, &b);
        if (err)
            return err;
        if (b)
            add_block(x, role, b, false);
    }
    return BSC_OK;
}

/* The text of a system, developer or tool message: a string, or its text parts. Appends
 * one JSON string per piece to <pieces>; other part types are refused. */
static enum bsc_err text_pieces(struct xl *x, size_t i, struct json_object *content,
                                struct json_object *pieces)
{
    if (!content)
        return BSC_OK;
    if (is_type(content, json_type_string)) {
        if (json_object_get_string_len(content))
            json_object_array_add(pieces, json_object_get(content));
        return BSC_OK;
    }
    if (!is_type(content, json_type_array))
        return refuse(x, "messages[%zu]: content must be a string or an array of parts", i);
    for (size_t k = 0; k < json_object_array_length(content); k++) {
        struct json_object *part = json_object_array_get_idx(content, k);
        const char *type = bsc_json_get_str(part, "type");
        struct json_object *t = bsc_json_get(part, "text");
        if (!type || strcmp(type, "text") != 0 || !is_type(t, json_type_string))
            return refuse(x, "messages[%zu]: only text parts are allowed here", i);
        if (json_object_get_string_len(t))
            json_object_array_add(pieces, json_object_get(t));
    }
    return BSC_OK;
}

static enum bsc_err put_system(struct xl *x, size_t i, struct json_object *msg)
{
    struct json_object *pieces = json_object_new_array();
    enum bsc_err err = text_pieces(x, i, bsc_json_get(msg, "content"), pieces);

    for (size_t k = 0; !err && k < json_object_array_length(pieces); k++)
        json_object_array_add(x->system,
                              str_block("text", "text",
                                        json_object_get(json_object_array_get_idx(pieces, k))));
    json_object_put(pieces);
    return err;
}

/* A tool message: one tool_result block in the user turn (consecutive results merge). */
static enum bsc_err put_tool_result(struct xl *x, size_t i, struct json_object *msg)
{
    const char *id = bsc_json_get_str(msg, "tool_call_id");
    struct json_object *content = bsc_json_get(msg, "content"), *pieces, *b;
    enum bsc_err err;

    if (!id || !id[0])
        return refuse(x, "messages[%zu]: a tool message needs tool_call_id", i);
    b = json_object_new_object();
    json_object_object_add(b, "type", json_object_new_string("tool_result"));
    json_object_object_add(b, "tool_use_id", json_object_new_string(id));
    if (is_type(content, json_type_string)) {
        if (json_object_get_string_len(content))
            json_object_object_add(b, "content", json_object_get(content));
    } else if (content) {
        pieces = json_object_new_array();
        err = text_pieces(x, i, content, pieces);
        if (err) {
            json_object_put(pieces);
            json_object_put(b);
            return err;
        }
        for (size_t k = 0; k < json_object_array_length(pieces); k++)
            json_object_array_put_idx(
                pieces, k,
                str_block("text", "text", json_object_get(json_object_array_get_idx(pieces, k))));
        if (json_object_array_length(pieces))
            json_object_object_add(b, "content", pieces);
        else
            json_object_put(pieces);
    }
    add_block(x, "user", b, true);
    return BSC_OK;
}

/* One assistant tool call as a tool_use block: arguments (a JSON string) become input
 * (an object); "" stands for {}. */
static enum bsc_err tool_use_block(struct xl *x, size_t i, size_t k, struct json_object *call,
                                   struct json_object **out)
{
    struct json_object *fn = bsc_json_get(call, "function"), *input;
    const char *type = bsc_json_get_str(call, "type"), *id = bsc_json_get_str(call, "id");
    const char *name = bsc_json_get_str(fn, "name"), *args = bsc_json_get_str(fn, "arguments");

    if (type && strcmp(type, "function") != 0)
        return refuse(x, "messages[%zu].tool_calls[%zu]: tool calls of type \"%s\" are not "
                         "supported by Anthropic targets",
                      i, k, type);
    if (!id || !id[0] || !name || !name[0])
        return refuse(x, "messages[%zu].tool_calls[%zu]: id and function.name are required", i,
                      k);
    if (!args || !args[0]) {
        input = json_object_new_object();
    } else {
        input = prov_parse_json(bsc_str_cstr(args));
        if (!is_type(input, json_type_object)) {
            json_object_put(input);
            return refuse(x, "messages[%zu].tool_calls[%zu].function.arguments is not a JSON "
                             "object",
                          i, k);
        }
    }
    *out = json_object_new_object();
    json_object_object_add(*out, "type", json_object_new_string("tool_use"));
    json_object_object_add(*out, "id", json_object_new_string(id));
    json_object_object_add(*out, "name", json_object_new_string(name));
    json_object_object_add(*out, "input", input);
    return BSC_OK;
}

static enum bsc_err put_assistant(struct xl *x, size_t i, struct json_object *msg)
{
    struct json_object *calls = bsc_json_get(msg, "tool_calls"), *b = NULL;
    enum bsc_err err;

    if (bsc_json_get(msg, "function_call"))
        return refuse(x, "messages[%zu]: function_call is deprecated; use tool_calls", i);
    err = put_content(x, i, bsc_json_get(msg, "content"), "assistant");
    if (err || !calls)
        return err;
    if (!is_type(calls, json_type_array))
        return refuse(x, "messages[%zu]: tool_calls must be an array", i);
    for (size_t k = 0; k < json_object_array_length(calls); k++) {
        err = tool_use_block(x, i, k, json_object_array_get_idx(calls, k), &b);
        if (err)
            return err;
        add_block(x, "assistant", b, false);
    }
    return BSC_OK;
}

static enum bsc_err put_message(struct xl *x, size_t i, struct json_object *msg)
{
    const char *role = bsc_json_get_str(msg, "role");

    if (!role)
        return refuse(x, "messages[%zu]: role is required", i);
    if (strcmp(role, "system") == 0 || strcmp(role, "developer") == 0)
        return put_system(x, i, msg);
    if (strcmp(role, "user") == 0)
        return put_content(x, i, bsc_json_get(msg, "content"), "user");
    if (strcmp(role, "assistant") == 0)
        return put_assistant(x, i, msg);
    if (strcmp(role, "tool") == 0)
        return put_tool_result(x, i, msg);
    return refuse(x, "messages[%zu]: role \"%s\" is not supported by Anthropic targets", i,
                  role);
}

static enum bsc_err put_messages(struct xl *x, struct json_object *root)
{
    struct json_object *msgs = bsc_json_get(x->c->req, "messages");
    size_t n;
    enum bsc_err err;

    if (!is_type(msgs, json_type_array))
        return refuse(x, "messages must be an array");
    n = json_object_array_length(msgs);
    for (size_t i = 0; i < n; i++) {
        struct json_object *m = json_object_array_get_idx(msgs, i);
        if (!is_type(m, json_type_object))
            return refuse(x, "messages[%zu] must be an object", i);
        err = put_message(x, i, m);
        if (err)
            return err;
    }
    flush_turn(x);
    if (json_object_array_length(x->msgs) == 0)
        return refuse(x, "the request has no user or assistant content");
    if (json_object_array_length(x->system) == 1)
        json_object_object_add(root, "system",
                               json_object_get(bsc_json_get(json_object_array_get_idx(x->system, 0),
                                                   "text")));
    else if (json_object_array_length(x->system) > 1)
        json_object_object_add(root, "system", json_object_get(x->system));
    json_object_object_add(root, "messages", json_object_get(x->msgs));
    return BSC_OK;
}

/* ---- tools, tool_choice, response_format ---- */

static enum bsc_err put_tools(struct xl *x, struct json_object *root, struct json_object *tools)
{
    struct json_object *out = json_object_new_array();

    for (size_t i = 0; i < json_object_array_length(tools); i++) {
        struct json_object *t = json_object_array_get_idx(tools, i), *fn = bsc_json_get(t, "function");
        struct json_object *params = bsc_json_get(fn, "parameters"), *o;
        const char *type = bsc_json_get_str(t, "type"), *name = bsc_json_get_str(fn, "name");
        const char *desc = bsc_json_get_str(fn, "description");

        if (!type || strcmp(type, "function") != 0 || !name || !name[0]) {
            json_object_put(out);
            return refuse(x, "tools[%zu]: only function tools with a name are supported by "
                             "Anthropic targets",
                          i);
        }
        o = json_object_new_object();
        json_object_object_add(o, "name", json_object_new_string(name));
        if (desc && desc[0])
            json_object_object_add(o, "description", json_object_new_string(desc));
        if (is_type(params, json_type_object)) {
            json_object_object_add(o, "input_schema", json_object_get(params));
        } else {
            struct json_object *schema = json_object_new_object();
            json_object_object_add(schema, "type", json_object_new_string("object"));
            json_object_object_add(schema, "properties", json_object_new_object());
            json_object_object_add(o, "input_schema", schema);
        }
        json_object_array_add(out, o);
    }
    json_object_object_add(root, "tools", out);
    return BSC_OK;
}

static enum bsc_err put_tool_choice(struct xl *x, struct json_object *root,
                                    struct json_object *choice, bool no_parallel)
{
    struct json_object *tc = json_object_new_object();
    const char *s = is_type(choice, json_type_string) ? json_object_get_string(choice) : NULL;
    const char *type = s ? NULL : bsc_json_get_str(choice, "type");
    const char *name = bsc_json_get_str(bsc_json_get(choice, "function"), "name");
    bool none = false;

    if (!choice || (s && strcmp(s, "auto") == 0)) {
        json_object_object_add(tc, "type", json_object_new_string("auto"));
    } else if (s && strcmp(s, "none") == 0) {
        json_object_object_add(tc, "type", json_object_new_string("none"));
        none = true;
    } else if (s && strcmp(s, "required") == 0) {
        json_object_object_add(tc, "type", json_object_new_string("any"));
    } else if (type && strcmp(type, "function") == 0 && name && name[0]) {
        json_object_object_add(tc, "type", json_object_new_string("tool"));
        json_object_object_add(tc, "name", json_object_new_string(name));
    } else {
        json_object_put(tc);
        return refuse(x, "tool_choice %s is not supported by Anthropic targets",
                      s ? s : type ? type : "of this shape");
    }
    if (no_parallel && !none)
        json_object_object_add(tc, "disable_parallel_tool_use", json_object_new_boolean(1));
    if (!choice && !no_parallel)
        json_object_put(tc); /* Anthropic's default is auto as well */
    else
        json_object_object_add(root, "tool_choice", tc);
    return BSC_OK;
}

bool prov__anth_native(const struct prov_call *call)
{
    return call && call->op == PROV_OP_CHAT && call->native &&
           call->native->kind == CFG_PROV_ANTHROPIC && call->native->body.p &&
           call->native->model_span.p;
}

bool prov__anth_json_mode(const struct prov_call *call)
{
    const char *type = call && !prov__anth_native(call)
                           ? bsc_json_get_str(bsc_json_get(call->req, "response_format"), "type")
                           : NULL;

    return type && (strcmp(type, "json_object") == 0 || strcmp(type, "json_schema") == 0);
}

/* response_format json_object / json_schema: one tool the model is forced to call. */
static enum bsc_err put_json_mode(struct xl *x, struct json_object *root)
{
    struct json_object *rf = bsc_json_get(x->c->req, "response_format");
    struct json_object *schema = bsc_json_get(bsc_json_get(rf, "json_schema"), "schema");
    struct json_object *tool = json_object_new_object(), *tools, *tc;
    const char *desc = bsc_json_get_str(bsc_json_get(rf, "json_schema"), "description");

    if (is_type(bsc_json_get(x->c->req, "tools"), json_type_array) &&
        json_object_array_length(bsc_json_get(x->c->req, "tools")) > 0) {
        json_object_put(tool);
        return refuse(x, "response_format together with tools is not supported by Anthropic "
                         "targets");
    }
    json_object_object_add(tool, "name", json_object_new_string(PROV_ANTH_JSON_TOOL));
    json_object_object_add(tool, "description",
                           json_object_new_string(desc && desc[0]
                                                      ? desc
                                                      : "Give the answer as this tool's input."));
    if (is_type(schema, json_type_object)) {
        json_object_object_add(tool, "input_schema", json_object_get(schema));
    } else {
        schema = json_object_new_object();
        json_object_object_add(schema, "type", json_object_new_string("object"));
        json_object_object_add(tool, "input_schema", schema);
    }
    tools = json_object_new_array();
    json_object_array_add(tools, tool);
    json_object_object_add(root, "tools", tools);
    tc = json_object_new_object();
    json_object_object_add(tc, "type", json_object_new_string("tool"));
    json_object_object_add(tc, "name", json_object_new_string(PROV_ANTH_JSON_TOOL));
    json_object_object_add(root, "tool_choice", tc);
    return BSC_OK;
}

static enum bsc_err put_tooling(struct xl *x, struct json_object *root)
{
    struct json_object *req = x->c->req, *tools = bsc_json_get(req, "tools"), *ptc;
    bool no_parallel;

    if (prov__anth_json_mode(x->c))
        return put_json_mode(x, root);
    if (!tools || (is_type(tools, json_type_array) && json_object_array_length(tools) == 0))
        return BSC_OK; /* a tool_choice without tools says nothing */
    if (!is_type(tools, json_type_array))
        return refuse(x, "tools must be an array");
    ptc = bsc_json_get(req, "parallel_tool_calls");
    no_parallel = is_type(ptc, json_type_boolean) && !json_object_get_boolean(ptc);
    if (put_tools(x, root, tools))
        return BSC_EINVAL;
    return put_tool_choice(x, root, bsc_json_get(req, "tool_choice"), no_parallel);
}

/* ---- sampling and the fields that cannot be translated ---- */

static bool truthy(struct json_object *v)
{
    if (!v)
        return false;
    if (is_type(v, json_type_boolean))
        return json_object_get_boolean(v);
    if (is_type(v, json_type_int))
        return json_object_get_int64(v) != 0;
    if (is_type(v, json_type_object))
        return json_object_object_length(v) > 0;
    if (is_type(v, json_type_array))
        return json_object_array_length(v) > 0;
    return true;
}

static bool has_audio(struct json_object *modalities)
{
    for (size_t i = 0; is_type(modalities, json_type_array) &&
                       i < json_object_array_length(modalities);
         i++) {
        struct json_object *m = json_object_array_get_idx(modalities, i);
        if (is_type(m, json_type_string) && strcmp(json_object_get_string(m), "audio") == 0)
            return true;
    }
    return false;
}

/* The OpenAI fields whose meaning Anthropic cannot keep: refused, not dropped. */
static enum bsc_err check_untranslatable(struct xl *x)
{
    struct json_object *req = x->c->req, *n = bsc_json_get(req, "n");

    if (n && (!is_type(n, json_type_int) || json_object_get_int64(n) != 1))
        return refuse(x, "n must be 1 for Anthropic targets (one answer per call)");
    if (truthy(bsc_json_get(req, "logprobs")) || truthy(bsc_json_get(req, "top_logprobs")))
        return refuse(x, "logprobs are not available from Anthropic targets");
    if (truthy(bsc_json_get(req, "logit_bias")))
        return refuse(x, "logit_bias is not supported by Anthropic targets");
    if (bsc_json_get(req, "audio") || has_audio(bsc_json_get(req, "modalities")))
        return refuse(x, "audio output is not supported by Anthropic targets");
    if (bsc_json_get(req, "functions") || bsc_json_get(req, "function_call"))
        return refuse(x, "functions/function_call are deprecated; use tools");
    if (bsc_json_get(req, "web_search_options"))
        return refuse(x, "web_search_options is not supported by Anthropic targets");
    return BSC_OK;
}

static enum bsc_err put_max_tokens(struct xl *x, struct json_object *root)
{
    static const char *const keys[] = {"max_completion_tokens", "max_tokens"};
    int64_t n = 0;

    for (size_t i = 0; i < BSC_ARRAY_LEN(keys) && n == 0; i++) {
        struct json_object *v = bsc_json_get(x->c->req, keys[i]);
        if (!v)
            continue;
        if (!is_type(v, json_type_int) || json_object_get_int64(v) < 1)
            return refuse(x, "%s must be a positive integer", keys[i]);
        n = json_object_get_int64(v);
    }
    if (n == 0)
        n = x->c->target && x->c->target->max_output_tokens
                ? (int64_t)x->c->target->max_output_tokens
                : PROV_ANTH_DEFAULT_MAX_TOKENS;
    json_object_object_add(root, "max_tokens", json_object_new_int64(n));
    return BSC_OK;
}

static enum bsc_err put_sampling(struct xl *x, struct json_object *root)
{
    struct json_object *req = x->c->req, *t = bsc_json_get(req, "temperature"), *p = bsc_json_get(req, "top_p");
    struct json_object *stop = bsc_json_get(req, "stop"), *seqs, *meta;
    const char *user = bsc_json_get_str(req, "user");

    if (t) {
        if (!is_type(t, json_type_double) && !is_type(t, json_type_int))
            return refuse(x, "temperature must be a number");
        if (json_object_get_double(t) > 1.0) /* OpenAI's 1..2 has no Anthropic equivalent */
            json_object_object_add(root, "temperature", json_object_new_double(1.0));
        else
            json_object_object_add(root, "temperature", json_object_get(t));
    }
    if (p)
        json_object_object_add(root, "top_p", json_object_get(p));
    if (is_type(stop, json_type_string)) {
        seqs = json_object_new_array();
        json_object_array_add(seqs, json_object_get(stop));
        json_object_object_add(root, "stop_sequences", seqs);
    } else if (is_type(stop, json_type_array) && json_object_array_length(stop) > 0) {
        for (size_t i = 0; i < json_object_array_length(stop); i++)
            if (!is_type(json_object_array_get_idx(stop, i), json_type_string))
                return refuse(x, "stop must be a string or an array of strings");
        json_object_object_add(root, "stop_sequences", json_object_get(stop));
    } else if (stop && !is_type(stop, json_type_array)) {
        return refuse(x, "stop must be a string or an array of strings");
    }
    if (!user || !user[0])
        user = bsc_json_get_str(req, "safety_identifier");
    if (user && user[0]) {
        meta = json_object_new_object();
        json_object_object_add(meta, "user_id", json_object_new_string(user));
        json_object_object_add(root, "metadata", meta);
    }
    return BSC_OK;
}

/* The whole Messages request for a chat call, appended to <body>. */
static enum bsc_err chat_body(const struct prov_call *c, struct bsc_buf *body, char *why,
                              size_t why_len)
{
    struct xl x = {.c = c, .why = why, .why_len = why_len};
    struct json_object *root;
    enum bsc_err err;

    if (!is_type(c->req, json_type_object))
        return refuse(&x, "the request is not a JSON object");
    x.system = json_object_new_array();
    x.msgs = json_object_new_array();
    x.results = json_object_new_array();
    x.blocks = json_object_new_array();
    root = json_object_new_object();
    json_object_object_add(root, "model", json_object_new_string(c->target->model));
    err = check_untranslatable(&x);
    if (!err)
        err = put_max_tokens(&x, root);
    if (!err)
        err = put_messages(&x, root);
    if (!err)
        err = put_tooling(&x, root);
    if (!err)
        err = put_sampling(&x, root);
    if (!err && c->stream)
        json_object_object_add(root, "stream", json_object_new_boolean(1));
    if (!err)
        err = prov_append_json(body, root);
    json_object_put(root);
    json_object_put(x.system);
    json_object_put(x.msgs);
    json_object_put(x.results);
    json_object_put(x.blocks);
    return err;
}

/* ---- build ---- */

static bool has_header(const struct cfg_provider *p, const char *name)
{
    for (size_t i = 0; i < p->n_headers; i++)
        if (strcasecmp(p->headers[i].name, name) == 0)
            return true;
    return false;
}

/* The client's own Messages bytes with "model" replaced by the target's: everything the
 * client said (top_k, thinking, cache_control, system blocks, betas' fields) reaches
 * Anthropic as written. The api layer checked the bytes strictly (one "model"). */
static enum bsc_err native_body(const struct prov_call *c, struct bsc_buf *body)
{
    const struct prov_native *n = c->native;
    size_t pre = (size_t)(n->model_span.p - n->body.p);
    enum bsc_err err;

    if (bsc_buf_reserve(body, n->body.len + strlen(c->target->model) + 16) != BSC_OK)
        return BSC_ELIMIT;
    err = bsc_buf_append(body, n->body.p, pre);
    if (!err)
        err = bsc_buf_append_json_str(body, bsc_str_cstr(c->target->model));
    if (!err)
        err = bsc_buf_append(body, n->model_span.p + n->model_span.len,
                             n->body.len - pre - n->model_span.len);
    return err;
}

/* A client's header value forwarded upstream: visible ASCII and blanks only (the header
 * lines are NUL-separated; nothing may start a line of its own). Anything else is not
 * forwarded. */
static bool header_safe(struct bsc_str v)
{
    for (size_t i = 0; i < v.len; i++)
        if (!((v.p[i] >= 0x20 && v.p[i] < 0x7f) || v.p[i] == '\t'))
            return false;
    return v.len > 0 && v.len <= 1024;
}

/* anthropic-version: the client's own when it forwards its bytes (the shapes are its), else
 * the provider's api_version, else PROV_ANTH_VERSION; a configured header wins over all. */
static enum bsc_err version_header(const struct prov_call *c, struct prov_http *out)
{
    const struct cfg_provider *p = c->provider;

    if (has_header(p, "anthropic-version"))
        return BSC_OK;
    if (prov__anth_native(c) && header_safe(c->native->version))
        return prov_header(&out->headers, "anthropic-version", "%.*s",
                           BSC_STR_FMT(c->native->version));
    return prov_header(&out->headers, "anthropic-version", "%s",
                       p->api_version && p->api_version[0] ? p->api_version : PROV_ANTH_VERSION);
}

static enum bsc_err headers(const struct prov_call *c, struct prov_http *out)
{
    const struct cfg_provider *p = c->provider;
    enum bsc_err err = BSC_OK;

    if (c->key)
        err = prov_header(&out->headers, "x-api-key", "%s", c->key);
    if (!err)
        err = version_header(c, out);
    if (!err && prov__anth_native(c) && header_safe(c->native->beta) &&
        !has_header(p, "anthropic-beta"))
        err = prov_header(&out->headers, "anthropic-beta", "%.*s", BSC_STR_FMT(c->native->beta));
    if (!err && c->op != PROV_OP_PROBE_MODELS)
        err = prov_header(&out->headers, "content-type", "application/json");
    if (!err && c->op == PROV_OP_CHAT)
        err = prov_header(&out->headers, "accept", "%s",
                          c->stream ? "text/event-stream" : "application/json");
    if (!err)
        err = prov_extra_headers(&out->headers, p);
    return err;
}

static enum bsc_err anth_build(const struct prov_call *c, struct prov_http *out, char *why,
                               size_t why_len)
{
    const char *path = "messages";
    enum bsc_err err;

    if (c->op == PROV_OP_EMBEDDINGS) {
        if (why && why_len)
            snprintf(why, why_len, "Anthropic has no embeddings API");
        return BSC_EINVAL;
    }
    out->method = c->op == PROV_OP_PROBE_MODELS ? "GET" : "POST";
    if (c->op == PROV_OP_PROBE_MODELS)
        path = "models";
    else if (prov__anth_native(c) && c->native->count_tokens)
        path = "messages/count_tokens";
    err = bsc_buf_appendf(&out->url, "%s/%s", c->provider->base_url, path);
    if (!err)
        err = headers(c, out);
    if (err || c->op == PROV_OP_PROBE_MODELS)
        return err;
    if (c->op == PROV_OP_PROBE_COMPLETION)
        return prov_probe_chat_body(c, &out->body);
    if (prov__anth_native(c))
        return native_body(c, &out->body);
    return chat_body(c, &out->body, why, why_len);
}

/* ---- errors ---- */

/* error.type -> kind; the status map covers the rest (docs/providers.md §2.5, §6.2). */
static const struct {
    const char *type;
    enum fail_kind kind;
} type_kinds[] = {
    {"invalid_request_error", FAIL_INVALID_REQUEST},
    {"request_too_large", FAIL_INVALID_REQUEST},
    {"authentication_error", FAIL_AUTH},
    {"permission_error", FAIL_PERMISSION},
    {"not_found_error", FAIL_NOT_FOUND},
    {"billing_error", FAIL_QUOTA_EXHAUSTED},
    {"rate_limit_error", FAIL_RATE_LIMITED},
    {"overloaded_error", FAIL_OVERLOADED},
    {"api_error", FAIL_SERVER_ERROR},
    {"timeout_error", FAIL_SERVER_ERROR}, /* the server's own timeout, not ours */
};

/* Lower-case phrases of a 400 invalid_request_error that mean something more precise. */
static const char *const overflow_phrases[] = {
    "prompt is too long",
    "input length and `max_tokens` exceed context limit",
    "exceed context limit",
};
static const char *const billing_phrases[] = {
    "credit balance is too low",
    "spend limit",
    "billing",
};

static bool has_icase(const char *hay, const char *needle)
{
    return hay && strcasestr(hay, needle) != NULL;
}

enum fail_kind prov__anth_error_kind(const char *type, int status, const char *message)
{
    enum fail_kind kind = FAIL_KIND_COUNT;

    for (size_t i = 0; type && i < BSC_ARRAY_LEN(type_kinds); i++)
        if (strcmp(type, type_kinds[i].type) == 0)
            kind = type_kinds[i].kind;
    if (kind == FAIL_KIND_COUNT)
        kind = status >= 300 ? fail_kind_from_status(status) : FAIL_UNKNOWN;
    if (kind == FAIL_INVALID_REQUEST) {
        for (size_t i = 0; i < BSC_ARRAY_LEN(overflow_phrases); i++)
            if (has_icase(message, overflow_phrases[i]))
                return FAIL_CONTEXT_OVERFLOW;
        for (size_t i = 0; i < BSC_ARRAY_LEN(billing_phrases); i++)
            if (has_icase(message, billing_phrases[i]))
                return FAIL_QUOTA_EXHAUSTED;
    }
    return kind;
}

void prov__anth_fail_from_error(struct json_object *err, int status, struct fail_info *out)
{
    const char *type = bsc_json_get_str(err, "type"), *msg = bsc_json_get_str(err, "message");

    fail_info_init(out);
    out->status = status;
    out->kind = prov__anth_error_kind(type, status, msg);
    if (type)
        fail_copy_text(out->type, sizeof(out->type), bsc_str_cstr(type));
    if (msg)
        fail_copy_text(out->message, sizeof(out->message), bsc_str_cstr(msg));
}

/* The error object of an Anthropic error body ({"type":"error","error":{...}}, or a bare
 * {"error":{...}} from a proxy), borrowed from <root>; NULL when there is none. */
static struct json_object *error_object(struct json_object *root)
{
    struct json_object *err = bsc_json_get(root, "error");
    const char *type = bsc_json_get_str(root, "type");

    if (!is_type(err, json_type_object))
        return NULL;
    if (type && strcmp(type, "error") != 0)
        return NULL; /* a message that happens to have an "error" member */
    return err;
}

static void anth_classify(const struct prov_err_input *in, struct fail_info *out)
{
    bool ok = in->status >= 200 && in->status < 300;
    struct json_object *root = NULL, *err = NULL;
    struct bsc_str body = bsc_str_trim(in->body);
    int64_t hint;

    if (body.len && body.p[0] == '{')
        root = prov_parse_json(body);
    err = error_object(root);
    if (ok && !err) {
        json_object_put(root);
        fail_info_init(out);
        out->status = in->status;
        return; /* a normal answer, or not JSON at all: map_response says which */
    }
    prov__anth_fail_from_error(err, in->status, out);
    if (!err) /* HTML from a proxy, an empty body: the status decides */
        out->kind = fail_kind_from_status(in->status);
    hint = prov_err_retry_after(in); /* Anthropic's retry-after (s); retry-after-ms if sent */
    if (hint < 0 && out->message[0])
        hint = prov_parse_retry_hint_text(bsc_str_cstr(out->message));
    out->retry_after_ms = hint;
    json_object_put(root);
}

/* ---- usage and stop reasons ---- */

/* A non-negative integer member <key> of <o> into *<dst>; untouched otherwise. */
static void read_count(struct json_object *o, const char *key, int64_t *dst)
{
    struct json_object *v = bsc_json_get(o, key);

    if (is_type(v, json_type_int) && json_object_get_int64(v) >= 0)
        *dst = json_object_get_int64(v);
}

void prov__anth_usage_read(struct json_object *usage, struct anth_usage *a)
{
    struct json_object *split = bsc_json_get(usage, "cache_creation");

    read_count(usage, "input_tokens", &a->in);
    read_count(usage, "cache_read_input_tokens", &a->cache_read);
    read_count(usage, "cache_creation_input_tokens", &a->cache_create);
    read_count(usage, "output_tokens", &a->out);
    if (is_type(split, json_type_object)) {
        read_count(split, "ephemeral_5m_input_tokens", &a->cache_5m);
        read_count(split, "ephemeral_1h_input_tokens", &a->cache_1h);
    }
}

/* <a> + <b> for counts >= 0 from the upstream, saturated instead of overflowing. */
static int64_t add_count(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

static int64_t or_zero(int64_t v)
{
    return v > 0 ? v : 0;
}

struct prov_usage prov__anth_usage(const struct anth_usage *a)
{
    struct prov_usage u = PROV_USAGE_UNKNOWN;
    int64_t create = a->cache_create, h1;

    if (create < 0 && (a->cache_5m >= 0 || a->cache_1h >= 0))
        create = add_count(or_zero(a->cache_5m), or_zero(a->cache_1h));
    if (a->in >= 0 || a->cache_read >= 0 || create >= 0) {
        create = or_zero(create);
        h1 = or_zero(a->cache_1h) < create ? or_zero(a->cache_1h) : create;
        u.input_tokens = add_count(add_count(or_zero(a->in), or_zero(a->cache_read)), create);
        u.cached_tokens = or_zero(a->cache_read);
        u.cache_write_1h_tokens = h1;
        u.cache_write_tokens = create - h1;
    }
    u.output_tokens = a->out;
    return u;
}

const char *prov__anth_finish_reason(const char *stop_reason, bool json_mode)
{
    if (!stop_reason)
        return "stop";
    if (strcmp(stop_reason, "max_tokens") == 0 ||
        strcmp(stop_reason, "model_context_window_exceeded") == 0)
        return "length";
    if (strcmp(stop_reason, "tool_use") == 0)
        return json_mode ? "stop" : "tool_calls";
    if (strcmp(stop_reason, "refusal") == 0)
        return "content_filter";
    return "stop"; /* end_turn, stop_sequence, pause_turn, anything newer */
}

/* ---- the non-streamed answer ---- */

static enum bsc_err parse_failure(struct fail_info *fail, const char *what)
{
    fail_info_init(fail);
    fail->kind = FAIL_SERVER_ERROR;
    fail->status = 200;
    fail_copy_text(fail->message, sizeof(fail->message), bsc_str_cstr(what));
    return BSC_EPARSE;
}

/* Serialises <o> compactly into a new JSON string object (the OpenAI arguments text). */
static struct json_object *json_text(struct json_object *o)
{
    size_t len = 0;
    const char *s = json_object_to_json_string_length(
        o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);

    return json_object_new_string_len(s ? s : "{}", s ? (int)len : 2);
}

static struct json_object *tool_call_json(struct json_object *block)
{
    struct json_object *tc = json_object_new_object(), *fn = json_object_new_object();
    const char *id = bsc_json_get_str(block, "id"), *name = bsc_json_get_str(block, "name");
    struct json_object *input = bsc_json_get(block, "input");

    json_object_object_add(tc, "id", json_object_new_string(id ? id : ""));
    json_object_object_add(tc, "type", json_object_new_string("function"));
    json_object_object_add(fn, "name", json_object_new_string(name ? name : ""));
    if (input)
        json_object_object_add(fn, "arguments", json_text(input));
    else
        json_object_object_add(fn, "arguments", json_object_new_string("{}"));
    json_object_object_add(tc, "function", fn);
    return tc;
}

/* Walks the content blocks: text into <text>, tool_use into <calls>. In json mode the
 * forced tool's input is the text and other text is dropped. */
static enum bsc_err collect(struct json_object *content, bool json_mode, struct bsc_buf *text,
                            struct json_object *calls)
{
    enum bsc_err err = BSC_OK;

    for (size_t i = 0; !err && i < json_object_array_length(content); i++) {
        struct json_object *b = json_object_array_get_idx(content, i);
        const char *type = bsc_json_get_str(b, "type"), *t = bsc_json_get_str(b, "text");
        const char *name = bsc_json_get_str(b, "name");

        if (!type)
            continue;
        if (strcmp(type, "text") == 0 && t && !json_mode) {
            err = utf8_sanitize(text, t, strlen(t));
        } else if (strcmp(type, "tool_use") == 0 && json_mode && name &&
                   strcmp(name, PROV_ANTH_JSON_TOOL) == 0) {
            bsc_buf_reset(text);
            if (bsc_json_get(b, "input"))
                err = prov_append_json(text, bsc_json_get(b, "input"));
            else
                err = bsc_buf_append(text, "{}", 2);
        } else if (strcmp(type, "tool_use") == 0) {
            json_object_array_add(calls, tool_call_json(b));
        }
        /* thinking, redacted_thinking, server tool blocks: not part of the OpenAI answer */
    }
    return err;
}

static enum bsc_err map_translated(const struct prov_call *c, struct bsc_str body,
                                   struct bsc_buf *out, struct prov_usage *usage,
                                   struct fail_info *fail)
{
    struct json_object *root = prov_parse_json(body), *content, *calls, *res, *choice, *msg;
    struct json_object *choices;
    bool json_mode = prov__anth_json_mode(c);
    const char *id, *model, *finish;
    struct anth_usage au = ANTH_USAGE_UNKNOWN;
    struct bsc_buf text;
    enum bsc_err err;

    *usage = PROV_USAGE_UNKNOWN;
    if (!is_type(root, json_type_object)) {
        json_object_put(root);
        return parse_failure(fail, "the upstream answer is not a JSON object");
    }
    if (error_object(root)) {
        prov__anth_fail_from_error(error_object(root), 200, fail);
        json_object_put(root);
        return BSC_EPARSE;
    }
    content = bsc_json_get(root, "content");
    if (!is_type(content, json_type_array)) {
        json_object_put(root);
        return parse_failure(fail, "the upstream answer has no content array");
    }
    prov__anth_usage_read(bsc_json_get(root, "usage"), &au);
    *usage = prov__anth_usage(&au);
    bsc_buf_init(&text, body.len + 16);
    calls = json_object_new_array();
    err = collect(content, json_mode, &text, calls);
    id = bsc_json_get_str(root, "id");
    model = bsc_json_get_str(root, "model");
    finish = prov__anth_finish_reason(bsc_json_get_str(root, "stop_reason"), json_mode);
    if (json_object_array_length(calls) == 0 && strcmp(finish, "tool_calls") == 0)
        finish = "stop";

    msg = json_object_new_object();
    json_object_object_add(msg, "role", json_object_new_string("assistant"));
    if (text.len || json_object_array_length(calls) == 0)
        json_object_object_add(msg, "content",
                               json_object_new_string_len(text.p ? text.p : "", (int)text.len));
    else
        json_object_object_add(msg, "content", NULL);
    json_object_object_add(msg, "refusal", NULL);
    if (json_object_array_length(calls))
        json_object_object_add(msg, "tool_calls", calls);
    else
        json_object_put(calls);
    choice = json_object_new_object();
    json_object_object_add(choice, "index", json_object_new_int(0));
    json_object_object_add(choice, "message", msg);
    json_object_object_add(choice, "logprobs", NULL);
    json_object_object_add(choice, "finish_reason", json_object_new_string(finish));
    choices = json_object_new_array();
    json_object_array_add(choices, choice);
    res = json_object_new_object();
    json_object_object_add(res, "id", json_object_new_string(id ? id : "chatcmpl-bascule"));
    json_object_object_add(res, "object", json_object_new_string("chat.completion"));
    json_object_object_add(res, "created", json_object_new_int64(c->created));
    json_object_object_add(res, "model", json_object_new_string(model ? model : c->target->model));
    json_object_object_add(res, "choices", choices);
    json_object_object_add(res, "usage", prov_usage_json(usage));
    if (!err)
        err = prov_append_json(out, res);
    json_object_put(res);
    json_object_put(root);
    bsc_buf_cleanup(&text);
    if (err)
        return parse_failure(fail, "the translated answer passed the gateway's output bound");
    return BSC_OK;
}

/* count_tokens answers {"input_tokens": N}: the router gets a chat.completion with no
 * content and zero usage (counting is free), the client the body itself. */
static enum bsc_err map_count(const struct prov_call *c, struct bsc_str body, struct bsc_buf *out,
                              struct prov_usage *usage, struct fail_info *fail)
{
    struct json_object *root = prov_parse_json(body);
    bool ok = is_type(bsc_json_get(root, "input_tokens"), json_type_int);
    enum bsc_err err;

    json_object_put(root);
    if (!ok)
        return parse_failure(fail, "the upstream count_tokens answer has no input_tokens");
    *usage = (struct prov_usage){0, 0, 0, 0, 0, 0};
    err = bsc_buf_append_cstr(out, "{\"bascule_native\":");
    if (!err)
        err = bsc_buf_append(out, body.p, body.len);
    if (!err)
        err = bsc_buf_appendf(out,
                              ",\"id\":\"count_tokens\",\"object\":\"chat.completion\","
                              "\"created\":%lld,\"model\":",
                              (long long)c->created);
    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(c->target->model));
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"choices\":[{\"index\":0,\"message\":{\"role\":"
                                       "\"assistant\",\"content\":\"\"},\"finish_reason\":"
                                       "\"stop\"}],\"usage\":{\"prompt_tokens\":0,"
                                       "\"completion_tokens\":0,\"total_tokens\":0}}");
    return err ? parse_failure(fail, "the answer passed the gateway's output bound") : BSC_OK;
}

/* The client sent its own Messages request: the router still gets the OpenAI form (usage,
 * contract checks) and the client's dialect (anthropic_down.c) the Anthropic body itself,
 * carried as {"bascule_native": <body>, ...the chat.completion's members}. */
static enum bsc_err map_native(const struct prov_call *c, struct bsc_str body, struct bsc_buf *out,
                               struct prov_usage *usage, struct fail_info *fail)
{
    struct bsc_buf tr;
    enum bsc_err err;

    if (c->native->count_tokens)
        return map_count(c, body, out, usage, fail);
    bsc_buf_init(&tr, out->max);
    err = map_translated(c, body, &tr, usage, fail);
    if (!err && (tr.len < 2 || tr.p[0] != '{'))
        err = parse_failure(fail, "the translated answer is empty");
    if (!err && (bsc_buf_append_cstr(out, "{\"bascule_native\":") ||
                 bsc_buf_append(out, body.p, body.len) || bsc_buf_append_char(out, ',') ||
                 bsc_buf_append(out, tr.p + 1, tr.len - 1)))
        err = parse_failure(fail, "the answer passed the gateway's output bound");
    bsc_buf_cleanup(&tr);
    return err;
}

static enum bsc_err anth_map_response(const struct prov_call *c, struct bsc_str body,
                                      struct bsc_buf *out, struct prov_usage *usage,
                                      struct fail_info *fail)
{
    if (prov__anth_native(c))
        return map_native(c, body, out, usage, fail);
    return map_translated(c, body, out, usage, fail);
}

const struct prov_ops prov_anthropic = {
    .name = "anthropic",
    /* check_untranslatable() refuses these (seed and the penalties are dropped). */
    .unhonoured = PROV_P(LOGPROBS) | PROV_P(TOP_LOGPROBS) | PROV_P(LOGIT_BIAS) | PROV_P(AUDIO) |
                  PROV_P(MODALITIES) | PROV_P(FUNCTIONS) | PROV_P(FUNCTION_CALL) |
                  PROV_P(WEB_SEARCH_OPTIONS),
    .max_choices = 1,
    .build = anth_build,
    .classify = anth_classify,
    .ratelimit = rl_read_anthropic,
    .map_response = anth_map_response,
    .stream_size = sizeof(struct anth_stream),
    .stream_init = prov__anth_stream_init,
    .stream_event = prov__anth_stream_event,
    .stream_line = NULL,
    .stream_end = prov__anth_stream_end,
    .stream_usage = prov__anth_stream_usage,
    .stream_cleanup = prov__anth_stream_cleanup,
};
