/* SPDX-License-Identifier: MIT */
/* anthropic_messages.c -- POST /v1/messages and /v1/messages/count_tokens: an Anthropic-SDK
 * client's request, checked strictly (duplicates refused), translated into the canonical
 * OpenAI chat.completions request, and handed to the router with the Anthropic downstream
 * dialect (anthropic_down.c) and the client's own bytes, which anthropic targets receive
 * as they are. Fields only Anthropic honours are refused for other kinds, naming them
 * (per-field rules in docs/internals/anthropic-inbound.md §2). Errors are Anthropic-shaped.
 * It does not route, retry or talk to anyone. */
#include <stdarg.h>
#include <string.h>

#include "api/anthropic.h"
#include "api/anthropic_down.h"
#include "core/json_get.h"
#include "api/auth.h"
#include "api/inspect.h"
#include "api/xlate.h"
#include "core/buf.h"
#include "api/openai_chat.h"
#include "core/json_check.h"
#include "core/json_parse.h"
#include "core/json_scan.h"
#include "router/request.h"

#define ANTH_JSON_MAX_DEPTH 64
/* Text joined from several blocks is never longer than the body it came from, which the
 * server already bounds (limits.max_body_bytes); this bound only guards the arithmetic. */
#define ANTH_TEXT_MAX ((size_t)1 << 30)
#define ANTH_WHERE    96 /* "messages.12.content.3.content.1" and the like */

/* ---- the translation (the context and its builders, first error wins: api/xlate.c) ---- */

static bool is(struct json_object *v, enum json_type t)
{
    return v && json_object_is_type(v, t);
}

/* Absent and JSON null both mean "not given". */
static bool given(struct json_object *v)
{
    return v && !json_object_is_type(v, json_type_null);
}

static struct bsc_str str_of(struct json_object *v)
{
    if (!is(v, json_type_string))
        return BSC_STR_NULL;
    return bsc_str_make(json_object_get_string(v), (size_t)json_object_get_string_len(v));
}

static struct json_object *new_str(struct bsc_str s)
{
    return json_object_new_string_len(s.p ? s.p : "", (int)s.len);
}

/* {"role": <role>, "content": <content>}; takes ownership of <content> (NULL = JSON null
 * when <null_ok>). NULL with x->err set on failure. */
static struct json_object *msg_new(struct api_xl *x, const char *role, struct json_object *content,
                                   bool null_ok)
{
    struct json_object *m;

    if (!content && !null_ok) {
        api__xl_oom(x); /* the caller's allocation of <content> failed */
        return NULL;
    }
    m = json_object_new_object();
    if (!m || !api__xl_put(x, m, "role", json_object_new_string(role))) {
        json_object_put(m);
        json_object_put(content);
        api__xl_oom(x);
        return NULL;
    }
    if (content ? !api__xl_put(x, m, "content", content)
                : json_object_object_add(m, "content", NULL) != 0) {
        json_object_put(m);
        api__xl_oom(x);
        return NULL;
    }
    return m;
}

/* The "type" of content block <b> at <where>; false (error set) when <b> has none. */
static bool block_type(struct api_xl *x, struct json_object *b, const char *where,
                       struct bsc_str *type)
{
    *type = BSC_STR_NULL;
    if (!is(b, json_type_object))
        return api__xl_fail(x, "%s: each content block must be an object", where);
    *type = str_of(bsc_json_get(b, "type"));
    if (!type->len)
        return api__xl_fail(x, "%s.type: field required", where);
    return true;
}

static bool type_is(struct bsc_str type, const char *lit)
{
    return bsc_str_eq(type, bsc_str_cstr(lit));
}

/* A text block's "text", which must be a string. */
static bool block_text(struct api_xl *x, struct json_object *b, const char *where,
                       struct bsc_str *text)
{
    struct json_object *t = bsc_json_get(b, "text");

    if (!is(t, json_type_string))
        return api__xl_fail(x, "%s.text: must be a string", where);
    *text = str_of(t);
    return true;
}

static bool append(struct api_xl *x, struct bsc_buf *b, struct bsc_str s)
{
    enum bsc_err err = bsc_buf_append_str(b, s);

    if (err == BSC_ELIMIT)
        return api__xl_fail(x, "the text of the request is too large");
    return err ? api__xl_oom(x) : true;
}

/* "<where>.<i>", the JSON path of an error message. A path cut short only shortens the
 * message (the return value is read so that the compiler knows it is deliberate). */
static void sub_path(char *at, size_t len, const char *where, size_t i)
{
    if (snprintf(at, len, "%s.%zu", where, i) >= (int)len)
        at[len - 1] = '\0';
}

static void content_path(char *at, size_t len, const char *where)
{
    if (snprintf(at, len, "%s.content", where) >= (int)len)
        at[len - 1] = '\0';
}

/* ---- content blocks ---- */

/* An image block -> {"type":"image_url","image_url":{"url":...}}: a base64 source becomes
 * a data: URL, a url source stays a URL. NULL with x->err set on failure. */
static struct json_object *xl_image(struct api_xl *x, struct json_object *b, const char *where)
{
    struct json_object *src = bsc_json_get(b, "source"), *part, *iu;
    struct bsc_str stype = str_of(bsc_json_get(src, "type")), media, data, url;
    struct bsc_buf u;

    if (!is(src, json_type_object)) {
        api__xl_fail(x, "%s.source: field required (an object)", where);
        return NULL;
    }
    bsc_buf_init(&u, ANTH_TEXT_MAX);
    if (type_is(stype, "base64")) {
        media = str_of(bsc_json_get(src, "media_type"));
        data = str_of(bsc_json_get(src, "data"));
        if (!media.len || !data.len) {
            api__xl_fail(x, "%s.source: a base64 source needs media_type and data", where);
            return NULL;
        }
        if (!append(x, &u, BSC_STR("data:")) || !append(x, &u, media) ||
            !append(x, &u, BSC_STR(";base64,")) || !append(x, &u, data)) {
            bsc_buf_cleanup(&u);
            return NULL;
        }
        url = bsc_buf_str(&u);
    } else if (type_is(stype, "url")) {
        url = str_of(bsc_json_get(src, "url"));
        if (!url.len) {
            api__xl_fail(x, "%s.source.url: field required", where);
            return NULL;
        }
    } else {
        api__xl_fail(x, "%s.source.type: '%.*s' is not supported (use base64 or url)", where,
             (int)(stype.len > 40 ? 40 : stype.len), stype.p ? stype.p : "");
        return NULL;
    }
    part = json_object_new_object();
    iu = json_object_new_object();
    if (!part || !iu) {
        json_object_put(part);
        json_object_put(iu);
        bsc_buf_cleanup(&u);
        api__xl_oom(x);
        return NULL;
    }
    if (!api__xl_put(x, iu, "url", new_str(url)) ||
        !api__xl_put(x, part, "type", json_object_new_string("image_url")) ||
        !api__xl_put(x, part, "image_url", json_object_get(iu))) {
        json_object_put(part);
        part = NULL;
    }
    json_object_put(iu);
    bsc_buf_cleanup(&u);
    return part;
}

static struct json_object *text_part(struct api_xl *x, struct json_object *text)
{
    struct json_object *p = json_object_new_object();

    if (!p) {
        api__xl_oom(x);
        return NULL;
    }
    if (!api__xl_put(x, p, "type", json_object_new_string("text")) ||
        !api__xl_put(x, p, "text", json_object_get(text))) {
        json_object_put(p);
        return NULL;
    }
    return p;
}

/* Joins the text blocks of <blocks> with <sep> into <out>; images go to <images> as
 * image_url parts when it is not NULL, and are refused otherwise. Other kinds are refused. */
static bool join_text(struct api_xl *x, struct json_object *blocks, const char *where,
                      const char *sep, struct bsc_buf *out, struct json_object *images)
{
    char at[ANTH_WHERE];
    struct bsc_str type, text;

    for (size_t i = 0; i < json_object_array_length(blocks); i++) {
        struct json_object *b = json_object_array_get_idx(blocks, i);
        sub_path(at, sizeof(at), where, i);
        if (!block_type(x, b, at, &type))
            return false;
        if (type_is(type, "image") && images) {
            if (!api__xl_push(x, images, xl_image(x, b, at)))
                return false;
            continue;
        }
        if (!type_is(type, "text"))
            return api__xl_fail(x, "%s.type: only text%s blocks are allowed here, not '%.*s'", at,
                        images ? " and image" : "", (int)(type.len > 40 ? 40 : type.len), type.p);
        if (!block_text(x, b, at, &text))
            return false;
        if (out->len && text.len && !append(x, out, bsc_str_cstr(sep)))
            return false;
        if (!append(x, out, text))
            return false;
    }
    return true;
}

/* A tool_result block -> a "tool" message appended to <msgs>. Its content is a string or
 * text blocks (joined by newlines); images in it go to <parts>, the user message that
 * follows the tool messages, since OpenAI tool messages carry text only. is_error is
 * kept as an "Error: " prefix. */
static bool xl_tool_result(struct api_xl *x, struct json_object *b, const char *where,
                           struct json_object *msgs, struct json_object *parts)
{
    struct json_object *content = bsc_json_get(b, "content"), *err = bsc_json_get(b, "is_error"),
                       *m;
    struct bsc_str id = str_of(bsc_json_get(b, "tool_use_id"));
    char at[ANTH_WHERE];
    struct bsc_buf text, inner;
    bool ok = true;

    if (!id.len)
        return api__xl_fail(x, "%s.tool_use_id: field required (a string)", where);
    if (given(err) && !is(err, json_type_boolean))
        return api__xl_fail(x, "%s.is_error: must be a boolean", where);
    bsc_buf_init(&text, ANTH_TEXT_MAX);
    bsc_buf_init(&inner, ANTH_TEXT_MAX);
    if (is(err, json_type_boolean) && json_object_get_boolean(err))
        ok = append(x, &text, BSC_STR("Error: "));
    if (ok && is(content, json_type_string)) {
        ok = append(x, &text, str_of(content));
    } else if (ok && is(content, json_type_array)) {
        content_path(at, sizeof(at), where);
        ok =
            join_text(x, content, at, "\n", &inner, parts) && append(x, &text, bsc_buf_str(&inner));
    } else if (ok && given(content)) {
        ok = api__xl_fail(x, "%s.content: must be a string or an array of content blocks", where);
    }
    if (ok) {
        m = msg_new(x, "tool", new_str(bsc_buf_str(&text)), false);
        ok = m && api__xl_put(x, m, "tool_call_id", new_str(id));
        if (ok)
            ok = api__xl_push(x, msgs, m);
        else
            json_object_put(m);
    }
    bsc_buf_cleanup(&inner);
    bsc_buf_cleanup(&text);
    return ok;
}

/* A user message with content blocks: tool_result blocks become "tool" messages first
 * (OpenAI wants them right after the assistant's tool calls), then one user message with
 * the text and image parts, if any. A lone text part stays a plain string. */
static bool xl_user(struct api_xl *x, struct json_object *blocks, const char *where,
                    struct json_object *msgs)
{
    struct json_object *parts = json_object_new_array(), *content;
    char at[ANTH_WHERE];
    struct bsc_str type;
    bool ok = parts != NULL;

    if (!parts)
        return api__xl_oom(x);
    for (size_t i = 0; ok && i < json_object_array_length(blocks); i++) {
        struct json_object *b = json_object_array_get_idx(blocks, i);
        struct bsc_str text;

        sub_path(at, sizeof(at), where, i);
        if (!block_type(x, b, at, &type))
            ok = false;
        else if (type_is(type, "text"))
            ok = block_text(x, b, at, &text) &&
                 api__xl_push(x, parts, text_part(x, bsc_json_get(b, "text")));
        else if (type_is(type, "image"))
            ok = api__xl_push(x, parts, xl_image(x, b, at));
        else if (type_is(type, "tool_result"))
            ok = xl_tool_result(x, b, at, msgs, parts);
        else if (type_is(type, "thinking") || type_is(type, "redacted_thinking"))
            continue;
        else if (type_is(type, "tool_use"))
            ok = api__xl_fail(x, "%s: tool_use blocks belong in assistant messages", at);
        else
            ok = api__xl_fail(x, "%s.type: '%.*s' blocks are not supported by this gateway", at,
                      (int)(type.len > 40 ? 40 : type.len), type.p);
    }
    if (ok && json_object_array_length(parts) > 0) {
        struct json_object *only = json_object_array_get_idx(parts, 0);
        if (json_object_array_length(parts) == 1 &&
            type_is(str_of(bsc_json_get(only, "type")), "text"))
            content = json_object_get(bsc_json_get(only, "text"));
        else
            content = json_object_get(parts);
        ok = api__xl_push(x, msgs, msg_new(x, "user", content, false));
    }
    json_object_put(parts);
    return ok;
}

/* A tool_use block -> {"id","type":"function","function":{"name","arguments"}}, the input
 * object serialized as the arguments string. */
static bool xl_tool_call(struct api_xl *x, struct json_object *b, const char *where,
                         struct json_object *calls)
{
    struct json_object *input = bsc_json_get(b, "input"), *call, *fn;
    struct bsc_str id = str_of(bsc_json_get(b, "id")), name = str_of(bsc_json_get(b, "name"));
    const char *args = "{}";

    if (!id.len)
        return api__xl_fail(x, "%s.id: field required (a string)", where);
    if (!name.len)
        return api__xl_fail(x, "%s.name: field required (a string)", where);
    if (given(input) && !is(input, json_type_object))
        return api__xl_fail(x, "%s.input: must be an object", where);
    if (given(input)) {
        args = json_object_to_json_string_ext(input, JSON_C_TO_STRING_PLAIN |
                                                         JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!args)
            return api__xl_oom(x);
    }
    call = json_object_new_object();
    fn = json_object_new_object();
    if (!call || !fn) {
        json_object_put(call);
        json_object_put(fn);
        return api__xl_oom(x);
    }
    if (!api__xl_put(x, fn, "name", new_str(name)) ||
        !api__xl_put(x, fn, "arguments", json_object_new_string(args)) ||
        !api__xl_put(x, call, "id", new_str(id)) ||
        !api__xl_put(x, call, "type", json_object_new_string("function")) ||
        !api__xl_put(x, call, "function", json_object_get(fn))) {
        json_object_put(call);
        json_object_put(fn);
        return false;
    }
    json_object_put(fn);
    return api__xl_push(x, calls, call);
}

/* An assistant message with content blocks: the text blocks joined (as OpenAI clients
 * read one content string), tool_use blocks as tool_calls, thinking blocks dropped. */
static bool xl_assistant(struct api_xl *x, struct json_object *blocks, const char *where,
                         struct json_object *msgs)
{
    struct json_object *calls = json_object_new_array(), *m = NULL, *content = NULL;
    char at[ANTH_WHERE];
    struct bsc_str type, text;
    struct bsc_buf buf;
    bool ok = calls != NULL;

    if (!calls)
        return api__xl_oom(x);
    bsc_buf_init(&buf, ANTH_TEXT_MAX);
    for (size_t i = 0; ok && i < json_object_array_length(blocks); i++) {
        struct json_object *b = json_object_array_get_idx(blocks, i);
        sub_path(at, sizeof(at), where, i);
        if (!block_type(x, b, at, &type))
            ok = false;
        else if (type_is(type, "text"))
            ok = block_text(x, b, at, &text) && append(x, &buf, text);
        else if (type_is(type, "tool_use"))
            ok = xl_tool_call(x, b, at, calls);
        else if (type_is(type, "thinking") || type_is(type, "redacted_thinking"))
            continue;
        else
            ok = api__xl_fail(x, "%s.type: '%.*s' blocks are not allowed in assistant messages", at,
                      (int)(type.len > 40 ? 40 : type.len), type.p);
    }
    if (ok) {
        bool has_calls = json_object_array_length(calls) > 0;
        if (buf.len || !has_calls) {
            content = new_str(bsc_buf_str(&buf));
            if (!content)
                ok = api__xl_oom(x);
        }
        m = ok ? msg_new(x, "assistant", content, true) : NULL;
        ok = m && (!has_calls || api__xl_put(x, m, "tool_calls", json_object_get(calls)));
        if (ok)
            ok = api__xl_push(x, msgs, m);
        else
            json_object_put(m);
    }
    bsc_buf_cleanup(&buf);
    json_object_put(calls);
    return ok;
}

/* ---- the request ---- */

/* Top-level "system": a string or text blocks -> one leading system message. */
static bool xl_system(struct api_xl *x, struct json_object *areq, struct json_object *msgs)
{
    struct json_object *sys = bsc_json_get(areq, "system");
    struct bsc_buf text;
    bool ok;

    if (!given(sys))
        return true;
    if (is(sys, json_type_string)) {
        if (json_object_get_string_len(sys) == 0)
            return true;
        return api__xl_push(x, msgs, msg_new(x, "system", json_object_get(sys), false));
    }
    if (!is(sys, json_type_array))
        return api__xl_fail(x, "system: must be a string or an array of text blocks");
    bsc_buf_init(&text, ANTH_TEXT_MAX);
    ok = join_text(x, sys, "system", "\n", &text, NULL);
    if (ok && text.len)
        ok = api__xl_push(x, msgs, msg_new(x, "system", new_str(bsc_buf_str(&text)), false));
    bsc_buf_cleanup(&text);
    return ok;
}

static bool xl_messages(struct api_xl *x, struct json_object *areq, struct json_object *msgs)
{
    struct json_object *arr = bsc_json_get(areq, "messages");
    char at[ANTH_WHERE];

    if (!is(arr, json_type_array) || json_object_array_length(arr) == 0)
        return api__xl_fail(x, "messages: field required (a non-empty array)");
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        struct json_object *m = json_object_array_get_idx(arr, i), *content;
        struct bsc_str role;
        bool user, ok;

        if (!is(m, json_type_object))
            return api__xl_fail(x, "messages.%zu: must be an object", i);
        role = str_of(bsc_json_get(m, "role"));
        content = bsc_json_get(m, "content");
        user = type_is(role, "user");
        if (!user && !type_is(role, "assistant"))
            return api__xl_fail(x, "messages.%zu.role: must be 'user' or 'assistant'", i);
        snprintf(at, sizeof(at), "messages.%zu.content", i);
        if (is(content, json_type_string))
            ok = api__xl_push(x, msgs,
                      msg_new(x, user ? "user" : "assistant", json_object_get(content), false));
        else if (user && is(content, json_type_array) && json_object_array_length(content) == 0)
            ok = api__xl_fail(x, "%s: a user message needs at least one content block", at);
        else if (is(content, json_type_array))
            ok = user ? xl_user(x, content, at, msgs) : xl_assistant(x, content, at, msgs);
        else
            ok = api__xl_fail(x, "%s: must be a string or an array of content blocks", at);
        if (!ok)
            return false;
    }
    return true;
}

/* tools[] {name, description, input_schema} -> function tools. Server tools (a "type"
 * other than "custom") run on Anthropic's side and cannot be expressed: refused. */
static bool xl_tools(struct api_xl *x, struct json_object *areq, struct json_object *oreq,
                     bool *has_tools)
{
    struct json_object *tools = bsc_json_get(areq, "tools"), *out;

    *has_tools = false;
    if (!given(tools))
        return true;
    if (!is(tools, json_type_array))
        return api__xl_fail(x, "tools: must be an array");
    if (json_object_array_length(tools) == 0)
        return true;
    out = json_object_new_array();
    if (!out || !api__xl_put(x, oreq, "tools", out))
        return api__xl_oom(x);
    for (size_t i = 0; i < json_object_array_length(tools); i++) {
        struct json_object *t = json_object_array_get_idx(tools, i), *schema, *fn, *tool;
        struct bsc_str type = str_of(bsc_json_get(t, "type")),
                       name = str_of(bsc_json_get(t, "name"));
        struct json_object *desc = bsc_json_get(t, "description");

        if (!is(t, json_type_object))
            return api__xl_fail(x, "tools.%zu: must be an object", i);
        if (type.len && !type_is(type, "custom"))
            return api__xl_fail(
                x, "tools.%zu.type: server tool '%.*s' is not supported by this gateway", i,
                (int)(type.len > 40 ? 40 : type.len), type.p);
        if (!name.len)
            return api__xl_fail(x, "tools.%zu.name: field required (a string)", i);
        if (given(desc) && !is(desc, json_type_string))
            return api__xl_fail(x, "tools.%zu.description: must be a string", i);
        schema = bsc_json_get(t, "input_schema");
        if (given(schema) && !is(schema, json_type_object))
            return api__xl_fail(x, "tools.%zu.input_schema: must be an object", i);
        fn = json_object_new_object();
        tool = json_object_new_object();
        if (!fn || !tool) {
            json_object_put(fn);
            json_object_put(tool);
            return api__xl_oom(x);
        }
        if (!api__xl_push(x, out, tool)) {
            json_object_put(fn);
            return false;
        }
        if (!api__xl_put(x, tool, "type", json_object_new_string("function")) ||
            !api__xl_put(x, tool, "function", fn) || !api__xl_put(x, fn, "name", new_str(name)) ||
            (given(desc) && !api__xl_put(x, fn, "description", json_object_get(desc))) ||
            !api__xl_put(x, fn, "parameters",
                 given(schema) ? json_object_get(schema)
                               : bsc_json_parse_whole(BSC_STR("{\"type\":\"object\",\"properties\":{}}"), 2)))
            return false;
    }
    *has_tools = true;
    return true;
}

/* tool_choice auto / any / tool / none -> auto / required / named / none;
 * disable_parallel_tool_use -> parallel_tool_calls: false. Without tools there is nothing
 * to choose from, and OpenAI refuses both fields then: they are left out. */
static bool xl_tool_choice(struct api_xl *x, struct json_object *areq, struct json_object *oreq,
                           bool has_tools)
{
    struct json_object *tc = bsc_json_get(areq, "tool_choice"), *dp, *named, *fn;
    struct bsc_str type, name;

    if (!given(tc))
        return true;
    if (!is(tc, json_type_object))
        return api__xl_fail(x, "tool_choice: must be an object");
    type = str_of(bsc_json_get(tc, "type"));
    dp = bsc_json_get(tc, "disable_parallel_tool_use");
    if (given(dp) && !is(dp, json_type_boolean))
        return api__xl_fail(x, "tool_choice.disable_parallel_tool_use: must be a boolean");
    if (type_is(type, "auto") || type_is(type, "any") || type_is(type, "none")) {
        if (has_tools && !api__xl_put(x, oreq, "tool_choice",
                              json_object_new_string(type_is(type, "any")    ? "required"
                                                     : type_is(type, "none") ? "none"
                                                                             : "auto")))
            return false;
    } else if (type_is(type, "tool")) {
        name = str_of(bsc_json_get(tc, "name"));
        if (!name.len)
            return api__xl_fail(x, "tool_choice.name: field required when type is 'tool'");
        if (has_tools) {
            named = json_object_new_object();
            fn = json_object_new_object();
            if (!named || !fn) {
                json_object_put(named);
                json_object_put(fn);
                return api__xl_oom(x);
            }
            if (!api__xl_put(x, oreq, "tool_choice", named)) {
                json_object_put(fn);
                return false;
            }
            if (!api__xl_put(x, named, "type", json_object_new_string("function")) ||
                !api__xl_put(x, named, "function", fn) ||
                !api__xl_put(x, fn, "name", new_str(name)))
                return false;
        }
    } else {
        return api__xl_fail(x, "tool_choice.type: must be one of auto, any, tool, none");
    }
    if (has_tools && !type_is(type, "none") && is(dp, json_type_boolean) &&
        json_object_get_boolean(dp))
        return api__xl_put(x, oreq, "parallel_tool_calls", json_object_new_boolean(0));
    return true;
}

/* A number in [lo, hi] (temperature, top_p), shared into <oreq> as is. */
static bool xl_number(struct api_xl *x, struct json_object *areq, struct json_object *oreq,
                      const char *key, double lo, double hi)
{
    struct json_object *v = bsc_json_get(areq, key);
    double d;

    if (!given(v))
        return true;
    if (!is(v, json_type_double) && !is(v, json_type_int))
        return api__xl_fail(x, "%s: must be a number", key);
    d = json_object_get_double(v);
    if (d < lo || d > hi)
        return api__xl_fail(x, "%s: must be between %g and %g", key, lo, hi);
    return api__xl_put(x, oreq, key, json_object_get(v));
}

/* max_tokens, stop_sequences, temperature, top_p, metadata.user_id, stream. top_k has no
 * OpenAI equivalent and is dropped; so are thinking, service_tier and the like. */
static bool xl_params(struct api_xl *x, struct json_object *areq, struct json_object *oreq,
                      bool *stream)
{
    struct json_object *mt = bsc_json_get(areq, "max_tokens"),
                       *stop = bsc_json_get(areq, "stop_sequences");
    struct json_object *meta = bsc_json_get(areq, "metadata"), *st = bsc_json_get(areq, "stream"),
                       *opts;
    struct bsc_str user;

    *stream = false;
    if (!is(mt, json_type_int) || json_object_get_int64(mt) < 1)
        return api__xl_fail(x, "max_tokens: field required (an integer >= 1)");
    if (!api__xl_put(x, oreq, "max_tokens", json_object_new_int64(json_object_get_int64(mt))))
        return false;
    if (given(stop)) {
        if (!is(stop, json_type_array))
            return api__xl_fail(x, "stop_sequences: must be an array of strings");
        for (size_t i = 0; i < json_object_array_length(stop); i++) {
            if (!is(json_object_array_get_idx(stop, i), json_type_string))
                return api__xl_fail(x, "stop_sequences.%zu: must be a string", i);
        }
        if (json_object_array_length(stop) && !api__xl_put(x, oreq, "stop", json_object_get(stop)))
            return false;
    }
    if (!xl_number(x, areq, oreq, "temperature", 0.0, 1.0) ||
        !xl_number(x, areq, oreq, "top_p", 0.0, 1.0))
        return false;
    if (given(meta) && !is(meta, json_type_object))
        return api__xl_fail(x, "metadata: must be an object");
    if (given(bsc_json_get(meta, "user_id")) &&
        !is(bsc_json_get(meta, "user_id"), json_type_string))
        return api__xl_fail(x, "metadata.user_id: must be a string");
    user = str_of(bsc_json_get(meta, "user_id"));
    if (user.len && !api__xl_put(x, oreq, "user", new_str(user)))
        return false;
    if (given(st) && !is(st, json_type_boolean))
        return api__xl_fail(x, "stream: must be a boolean");
    *stream = is(st, json_type_boolean) && json_object_get_boolean(st);
    if (!*stream)
        return true;
    /* Anthropic streams always carry usage: ask for OpenAI's usage chunk. */
    opts = json_object_new_object();
    return api__xl_put(x, oreq, "stream", json_object_new_boolean(1)) &&
           api__xl_put(x, oreq, "stream_options", opts) &&
           api__xl_put(x, opts, "include_usage", json_object_new_boolean(1));
}

/* output_config.format (and the older beta's output_format) {type: json_schema, schema}:
 * OpenAI's response_format json_schema, which the router checks answers against. */
static bool xl_output(struct api_xl *x, struct json_object *areq, struct json_object *oreq)
{
    struct json_object *fmt = bsc_json_get(bsc_json_get(areq, "output_config"), "format");
    struct json_object *schema, *rf, *js;

    if (!given(fmt))
        fmt = bsc_json_get(areq, "output_format");
    if (!given(fmt))
        return true;
    if (!type_is(str_of(bsc_json_get(fmt, "type")), "json_schema"))
        return api__xl_fail(x, "output_config.format.type: only 'json_schema' is supported");
    schema = bsc_json_get(fmt, "schema");
    if (!is(schema, json_type_object))
        return api__xl_fail(x, "output_config.format.schema: must be an object");
    rf = json_object_new_object();
    js = json_object_new_object();
    if (!api__xl_put(x, oreq, "response_format", rf)) {
        json_object_put(js);
        return false;
    }
    return api__xl_put(x, rf, "type", json_object_new_string("json_schema")) &&
           api__xl_put(x, rf, "json_schema", js) &&
           api__xl_put(x, js, "name", json_object_new_string("output")) &&
           api__xl_put(x, js, "schema", json_object_get(schema)) &&
           api__xl_put(x, js, "strict", json_object_new_boolean(1));
}

enum bsc_err api__anthropic_to_openai(struct json_object *areq, struct json_object **out, char *why,
                                      size_t why_len)
{
    struct api_xl x = {why, why_len, BSC_OK};
    struct json_object *model = bsc_json_get(areq, "model"), *oreq, *msgs;
    bool has_tools = false, stream = false;

    *out = NULL;
    if (why_len)
        why[0] = '\0';
    if (!is(areq, json_type_object)) {
        api__xl_fail(&x, "the request body must be a JSON object");
        return x.err;
    }
    if (!is(model, json_type_string) || json_object_get_string_len(model) == 0) {
        api__xl_fail(&x, "model: field required (a string)");
        return x.err;
    }
    oreq = json_object_new_object();
    msgs = json_object_new_array();
    if (!oreq || !msgs) {
        json_object_put(oreq);
        json_object_put(msgs);
        api__xl_oom(&x);
        return x.err;
    }
    if (api__xl_put(&x, oreq, "model", json_object_get(model)) &&
        api__xl_put(&x, oreq, "messages", json_object_get(msgs)) && xl_system(&x, areq, msgs) &&
        xl_messages(&x, areq, msgs) && xl_params(&x, areq, oreq, &stream) &&
        xl_tools(&x, areq, oreq, &has_tools) && xl_tool_choice(&x, areq, oreq, has_tools))
        xl_output(&x, areq, oreq);
    json_object_put(msgs);
    if (x.err) {
        json_object_put(oreq);
        return x.err;
    }
    *out = oreq;
    return BSC_OK;
}

/* ---- the handler ---- */

static void parse_error(struct bsc_str body, size_t off, const char *what, char *why,
                        size_t why_len)
{
    unsigned line, col;

    bsc_json_line_col(body, off, &line, &col);
    snprintf(why, why_len,
             "We could not parse the JSON body of your request: %s at line %u column %u",
             body.len ? what : "empty body", line, col);
}

/* Parses <body> strictly. NULL with <why> filled (or *<err> = BSC_ENOMEM). The body is
 * first checked by the validator /v1/chat/completions uses (core/json_check.h), so every
 * endpoint shares one rule: json-c's own UTF-8 check lets overlong forms, surrogates and
 * code points past U+10FFFF through, which the canonical request would then carry. */
static struct json_object *parse_body(struct bsc_str body, char *why, size_t why_len,
                                      enum bsc_err *err)
{
    struct json_object *o;
    struct bsc_json_error jerr;
    struct bsc_json_where w;

    *err = BSC_EINVAL;
    if (!bsc_json_check(body, ANTH_JSON_MAX_DEPTH, &jerr)) {
        parse_error(body, jerr.offset, jerr.what, why, why_len);
        return NULL;
    }
    /* Nothing but whitespace follows: bsc_json_check saw to that. */
    o = bsc_json_parse(body, ANTH_JSON_MAX_DEPTH, BSC_JSON_UTF8, &w);
    if (!o && w.why == BSC_JSONP_NOMEM) {
        *err = BSC_ENOMEM;
        snprintf(why, why_len, "out of memory");
    } else if (!o) { /* json-c's own limits (depth counted its way) */
        parse_error(body, w.offset, w.what, why, why_len);
    }
    return o;
}

enum bsc_err api__anthropic_parse(struct bsc_str body, struct anth_req *out, char *why,
                                  size_t why_len)
{
    enum bsc_err err;
    struct json_object *areq = parse_body(body, why, why_len, &err), *oreq, *stream;

    memset(out, 0, sizeof(*out));
    if (!areq)
        return err;
    err = api__anthropic_to_openai(areq, &oreq, why, why_len);
    json_object_put(areq); /* what <oreq> shares with it stays alive by its refs */
    if (err)
        return err;
    out->openai = oreq;
    out->model = str_of(bsc_json_get(oreq, "model"));
    stream = bsc_json_get(oreq, "stream");
    out->stream = is(stream, json_type_boolean) && json_object_get_boolean(stream);
    return BSC_OK;
}

/* Answers <status> with an Anthropic-shaped error (type chosen from the status). */
static void reply_anthropic_error(struct srv_req *req, int status, const char *message)
{
    static const char fallback[] =
        "{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"out of memory\"}}";
    struct reply_error e = {.status = status, .message = message, .retry_after_ms = -1};
    struct srv_header h = {BSC_STR("x-should-retry"),
                           status >= 500 ? BSC_STR("true") : BSC_STR("false")};
    struct bsc_buf b;

    bsc_buf_init(&b, 16384);
    if (api_anthropic_down.error_body(&e, srv_req_id(req), &b) == BSC_OK)
        srv_resp_send(req, status, "application/json", &h, 1, b.p, b.len);
    else
        srv_resp_send(req, 500, "application/json", &h, 1, fallback, sizeof(fallback) - 1);
    bsc_buf_cleanup(&b);
}

/* ---- fields only Anthropic can honour ---- */

/* Top-level members the translation carries, and hints whose loss changes no answer
 * (anthropic-inbound.md §2): anything else needs an anthropic target. */
static const char *const translated[] = {
    "model", "messages", "max_tokens", "system", "stop_sequences", "stream", "temperature",
    "top_p", "tools", "tool_choice", "metadata", "output_format",
    "service_tier", "cache_control", /* hints: dropped for other kinds */
};

/* The first member of <areq> only an Anthropic target can honour, in <name> ("" when
 * none): thinking other than disabled, output_config beyond format, top_k,
 * context_management and every member the gateway does not know. */
static void native_only(struct json_object *areq, char *name, size_t len)
{
    name[0] = '\0';
    json_object_object_foreach(areq, key, val)
    {
        bool ok = false;

        for (size_t i = 0; i < BSC_ARRAY_LEN(translated) && !ok; i++)
            ok = strcmp(key, translated[i]) == 0;
        if (!ok && strcmp(key, "thinking") == 0)
            ok = !given(val) || type_is(str_of(bsc_json_get(val, "type")), "disabled");
        if (!ok && strcmp(key, "output_config") == 0) {
            ok = true;
            json_object_object_foreach(val, k2, v2)
            {
                (void)v2;
                if (ok && strcmp(k2, "format") != 0) {
                    snprintf(name, len, "output_config.%s", k2);
                    return;
                }
            }
        }
        if (!ok) {
            snprintf(name, len, "%s", key);
            return;
        }
    }
}

/* True when some target of <route> (any tier) is of <kind>, or with <spoken>, speaks the
 * dialect <kind> (Claude on Vertex speaks Anthropic's: prov_target_dialect). */
static bool route_has_kind(const struct cfg_route *route, enum cfg_provider_kind kind, bool spoken)
{
    const struct cfg_tier *tiers[] = {&route->primary, &route->equivalent, &route->fallback};

    for (size_t t = 0; t < BSC_ARRAY_LEN(tiers); t++)
        for (size_t i = 0; i < tiers[t]->n; i++) {
            const struct cfg_target *tg = tiers[t]->targets[i];

            if ((spoken ? prov_target_dialect(tg) : tg->provider->kind) == kind)
                return true;
        }
    return false;
}

/* The canonical request when the Anthropic one has no translation and only an anthropic
 * target takes it: enough for the router (model, one turn, the budget, stream). */
static struct json_object *stub_request(struct json_object *areq, bool stream)
{
    struct json_object *o = json_object_new_object(), *msgs = json_object_new_array();
    struct json_object *m = json_object_new_object(), *mt = bsc_json_get(areq, "max_tokens");

    json_object_object_add(o, "model", json_object_get(bsc_json_get(areq, "model")));
    json_object_object_add(m, "role", json_object_new_string("user"));
    json_object_object_add(m, "content", json_object_new_string("(native request)"));
    json_object_array_add(msgs, m);
    json_object_object_add(o, "messages", msgs);
    json_object_object_add(o, "max_tokens", json_object_new_int64(is(mt, json_type_int)
                                                                      ? json_object_get_int64(mt)
                                                                      : 1));
    if (stream) {
        struct json_object *opts = json_object_new_object();

        json_object_object_add(opts, "include_usage", json_object_new_boolean(1));
        json_object_object_add(o, "stream", json_object_new_boolean(1));
        json_object_object_add(o, "stream_options", opts);
    }
    return o;
}

/* What both endpoints read first: the strict check (one "model", duplicates refused,
 * escaped ones too), the parse, the route. False when an error was answered. */
static bool read_request(struct srv_req *req, struct chat_in *in, struct json_object **areq)
{
    static const struct bsc_str model_key = BSC_STR("model");
    struct bsc_str body = srv_req_body(req), model;
    struct bsc_json_error jerr = {0, NULL, BSC_STR_NULL};
    struct api_refusal refusal;
    enum bsc_json_verdict v;
    enum bsc_err err;
    char why[320];

    *areq = NULL;
    v = bsc_json_check_request(body, ANTH_JSON_MAX_DEPTH, &model_key, 1, 0, &in->native.model_span,
                               &jerr);
    if (v != BSC_JSONV_OK) {
        api__json_refusal(body, v, &jerr, &refusal);
        reply_anthropic_error(req, 400, refusal.message);
        return false;
    }
    *areq = parse_body(body, why, sizeof(why), &err);
    if (!*areq) {
        reply_anthropic_error(req, err == BSC_ENOMEM ? 503 : 400, why);
        return false;
    }
    model = str_of(bsc_json_get(*areq, "model"));
    if (!is(*areq, json_type_object) || !is(bsc_json_get(*areq, "model"), json_type_string) ||
        !model.len || bsc_json_kind_of(in->native.model_span) != BSC_JSON_STRING) {
        reply_anthropic_error(req, 400, "model: field required (a string)");
        goto fail;
    }
    in->cfg = cfg_current_get();
    in->route = api__route_find(req, in->cfg, model);
    if (!in->route) {
        snprintf(why, sizeof(why), "model: '%.*s' does not exist or is not routed by this gateway",
                 (int)(model.len > 120 ? 120 : model.len), model.p);
        reply_anthropic_error(req, 404, why);
        cfg_unref(in->cfg);
        goto fail;
    }
    in->native.kind = CFG_PROV_ANTHROPIC;
    in->native.body = body;
    in->native.version = srv_req_header(req, BSC_STR("anthropic-version"));
    in->native.beta = srv_req_header(req, BSC_STR("anthropic-beta"));
    in->down = &api_anthropic_down;
    in->include_usage = true;
    return true;
fail:
    json_object_put(*areq);
    *areq = NULL;
    return false;
}

void api__anthropic_messages(struct worker *w, struct srv_req *req)
{
    struct chat_in in = {.op = PROV_OP_CHAT};
    struct json_object *areq, *oreq = NULL, *st;
    char why[320], field[96];
    bool has_anth;
    enum bsc_err err;

    if (!read_request(req, &in, &areq))
        return;
    has_anth = route_has_kind(in.route, CFG_PROV_ANTHROPIC, true);
    native_only(areq, field, sizeof(field));
    if (field[0] && !has_anth) {
        snprintf(why, sizeof(why),
                 "%s: not supported by the targets of this route (only an anthropic target or "
                 "Claude on Vertex can honour it)", field);
        goto refuse;
    }
    if (field[0])
        snprintf(in.native.required, sizeof(in.native.required),
                 "%s: only an anthropic target or Claude on Vertex can honour it", field);
    err = api__anthropic_to_openai(areq, &oreq, why, sizeof(why));
    if (err == BSC_ENOMEM) {
        reply_anthropic_error(req, 503, "out of memory");
        goto out;
    }
    if (err && !has_anth)
        goto refuse;
    st = bsc_json_get(areq, "stream");
    in.stream = is(st, json_type_boolean) && json_object_get_boolean(st);
    if (err) { /* no translation, but the route can forward it as it is */
        snprintf(in.native.required, sizeof(in.native.required), "%.180s", why);
        oreq = stub_request(areq, in.stream);
    }
    json_object_put(areq);
    if (!has_anth)
        in.native = (struct prov_native){0};
    in.json = oreq;
    api__inspect(&in, NULL);
    req_chat_start(w, req, &in);
    return;
refuse:
    reply_anthropic_error(req, 400, why);
out:
    json_object_put(areq);
    cfg_unref(in.cfg);
}

/* About four bytes of JSON per token, as the router's own budget estimate
 * (request-lifecycle.md): the system prompt, the messages and the tools as written. */
static int64_t estimate_input_tokens(struct json_object *areq)
{
    static const char *const keys[] = {"system", "messages", "tools"};
    size_t bytes = 0;

    for (size_t i = 0; i < BSC_ARRAY_LEN(keys); i++) {
        struct json_object *v = bsc_json_get(areq, keys[i]);
        size_t len = 0;

        if (v)
            json_object_to_json_string_length(v, JSON_C_TO_STRING_PLAIN, &len);
        bytes += len;
    }
    return (int64_t)((bytes + 3) / 4);
}

void api__anthropic_count_tokens(struct worker *w, struct srv_req *req)
{
    struct chat_in in = {.op = PROV_OP_CHAT};
    struct json_object *areq;
    struct srv_header h = {BSC_STR("x-bascule-token-count"), BSC_STR("estimate")};
    char body[64];
    int n;

    if (!read_request(req, &in, &areq))
        return;
    if (!is(bsc_json_get(areq, "messages"), json_type_array)) {
        reply_anthropic_error(req, 400, "messages: field required (an array)");
        json_object_put(areq);
        cfg_unref(in.cfg);
        return;
    }
    if (route_has_kind(in.route, CFG_PROV_ANTHROPIC, false)) { /* Vertex counts elsewhere */
        in.native.count_tokens = true;
        snprintf(in.native.required, sizeof(in.native.required),
                 "count_tokens: only an anthropic target counts tokens");
        in.json = stub_request(areq, false);
        json_object_put(areq);
        api__inspect(&in, NULL);
        req_chat_start(w, req, &in);
        return;
    }
    n = snprintf(body, sizeof(body), "{\"input_tokens\":%lld}",
                 (long long)estimate_input_tokens(areq));
    srv_resp_send(req, 200, "application/json", &h, 1, body, (size_t)n);
    json_object_put(areq);
    cfg_unref(in.cfg);
}
