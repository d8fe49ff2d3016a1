/* SPDX-License-Identifier: MIT */
/* responses.c -- POST /v1/responses, the OpenAI Responses API. A route of openai targets
 * gets the client's bytes passed through (model replaced); every other route gets the
 * request (input items, instructions, function tools, text.format, previous_response_id,
 * item_reference) translated into the canonical chat.completions request, which the router
 * runs like any other; responses_down.c shapes the answer. Built-in tools have no chat
 * equivalent and are refused by name there. See docs/internals/responses.md. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "api/access.h"
#include "api/auth.h"
#include "api/inspect.h"
#include "api/xlate.h"
#include "api/openai_chat.h"
#include "api/responses.h"
#include "core/clock.h"
#include "core/id.h"
#include "core/json_check.h"
#include "core/json_get.h"
#include "providers/provider.h"
#include "router/gateway.h"
#include "router/request.h"
#include "router/resp_owner.h"
#include "store/store.h"

#define RESP_JSON_MAX_DEPTH 64

/* ---- the translation (the context and its builders: api/xlate.c) ---- */

static bool is(struct json_object *o, enum json_type t)
{
    return o && json_object_is_type(o, t);
}

static const char *str_or(struct json_object *o, const char *dflt)
{
    return is(o, json_type_string) ? json_object_get_string(o) : dflt;
}

/* ---- content parts ---- */

/* Appends the text parts of <content> (a string, or input_text/output_text/text parts)
 * to <b>, joined with "\n"; other parts are refused under <path>. */
static bool join_text(struct api_xl *x, struct json_object *content, struct bsc_buf *b,
                      const char *path)
{
    if (is(content, json_type_string))
        return bsc_buf_append_cstr(b, json_object_get_string(content)) == BSC_OK || api__xl_oom(x);
    if (!is(content, json_type_array))
        return api__xl_fail(x, "%s: must be a string or an array of content parts", path);
    for (size_t i = 0; i < json_object_array_length(content); i++) {
        struct json_object *p = json_object_array_get_idx(content, i);
        const char *type = str_or(bsc_json_get(p, "type"), "");
        const char *text = str_or(bsc_json_get(p, "text"), NULL);

        if (strcmp(type, "refusal") == 0)
            text = str_or(bsc_json_get(p, "refusal"), NULL);
        else if (strcmp(type, "input_text") && strcmp(type, "output_text") && strcmp(type, "text"))
            return api__xl_fail(x, "%s.%zu.type: '%s' is not supported here (text parts only)",
                                path, i, type);
        if (!text)
            return api__xl_fail(x, "%s.%zu.text: field required (a string)", path, i);
        if ((b->len && bsc_buf_append_cstr(b, "\n")) || bsc_buf_append_cstr(b, text))
            return api__xl_oom(x);
    }
    return true;
}

/* A user/system content array: input_text -> text part, input_image -> image_url part. */
static struct json_object *user_parts(struct api_xl *x, struct json_object *content,
                                      const char *path)
{
    struct json_object *parts = json_object_new_array();

    if (!parts)
        return api__xl_oom(x), NULL;
    for (size_t i = 0; !x->err && i < json_object_array_length(content); i++) {
        struct json_object *p = json_object_array_get_idx(content, i), *part, *img;
        const char *type = str_or(bsc_json_get(p, "type"), "");
        const char *url;

        part = json_object_new_object();
        if (!part) {
            api__xl_oom(x);
            break;
        }
        if (!strcmp(type, "input_text") || !strcmp(type, "output_text") || !strcmp(type, "text")) {
            struct json_object *text = bsc_json_get(p, "text");
            if (!is(text, json_type_string))
                api__xl_fail(x, "%s.%zu.text: field required (a string)", path, i);
            else if (api__xl_put(x, part, "type", json_object_new_string("text")))
                api__xl_put(x, part, "text", json_object_get(text));
        } else if (!strcmp(type, "input_image")) {
            url = str_or(bsc_json_get(p, "image_url"), NULL);
            if (!url) {
                api__xl_fail(x, "%s.%zu: only input_image parts with an image_url are supported "
                        "(file_id needs the Files API)", path, i);
            } else if (api__xl_put(x, part, "type", json_object_new_string("image_url")) &&
                       (img = json_object_new_object()) && api__xl_put(x, part, "image_url", img) &&
                       api__xl_put(x, img, "url", json_object_new_string(url))) {
                struct json_object *detail = bsc_json_get(p, "detail");
                if (is(detail, json_type_string))
                    api__xl_put(x, img, "detail", json_object_get(detail));
            } else if (!x->err) {
                api__xl_oom(x);
            }
        } else {
            api__xl_fail(x, "%s.%zu.type: '%s' is not supported", path, i, type);
        }
        api__xl_push(x, parts, part);
    }
    if (x->err) {
        json_object_put(parts);
        return NULL;
    }
    return parts;
}

/* ---- input items ---- */

static struct json_object *new_msg(struct api_xl *x, const char *role)
{
    struct json_object *m = json_object_new_object();

    if (!m || !api__xl_put(x, m, "role", json_object_new_string(role))) {
        json_object_put(m);
        api__xl_oom(x);
        return NULL;
    }
    return m;
}

/* A message item: {role, content} (type "message" or none). */
static bool xl_message(struct api_xl *x, struct json_object *item, struct json_object *msgs,
                       size_t i)
{
    const char *role = str_or(bsc_json_get(item, "role"), NULL);
    struct json_object *content = bsc_json_get(item, "content"), *m;
    char path[64];
    struct bsc_buf b;

    snprintf(path, sizeof(path), "input.%zu.content", i);
    if (!role)
        return api__xl_fail(x, "input.%zu.role: field required", i);
    if (!strcmp(role, "developer"))
        role = "system"; /* every dialect has system; not every one has developer */
    else if (strcmp(role, "user") && strcmp(role, "system") && strcmp(role, "assistant"))
        return api__xl_fail(x, "input.%zu.role: '%s' is not supported (user, assistant, system, "
                       "developer)", i, role);
    if (!(m = new_msg(x, role)))
        return false;
    if (is(content, json_type_string) || strcmp(role, "user")) {
        /* system and assistant content is text only: joined into one string */
        bsc_buf_init(&b, 64u << 20);
        if (join_text(x, content, &b, path))
            api__xl_put(x, m, "content", json_object_new_string_len(b.p ? b.p : "", (int)b.len));
        bsc_buf_cleanup(&b);
    } else if (is(content, json_type_array)) {
        struct json_object *parts = user_parts(x, content, path);
        if (parts)
            api__xl_put(x, m, "content", parts);
    } else {
        api__xl_fail(x, "%s: field required (a string or an array of content parts)", path);
    }
    if (x->err) {
        json_object_put(m);
        return false;
    }
    return api__xl_push(x, msgs, m);
}

/* The assistant message function_call items attach to: the last message when it is an
 * assistant's (consecutive calls are one turn), else a new one. */
static struct json_object *assistant_for_call(struct api_xl *x, struct json_object *msgs)
{
    size_t n = json_object_array_length(msgs);
    struct json_object *last = n ? json_object_array_get_idx(msgs, n - 1) : NULL, *m;

    if (last && !strcmp(str_or(bsc_json_get(last, "role"), ""), "assistant"))
        return last;
    if (!(m = new_msg(x, "assistant")))
        return NULL;
    if (json_object_object_add(m, "content", NULL)) { /* json-c's null is NULL */
        json_object_put(m);
        return api__xl_oom(x), NULL;
    }
    if (!api__xl_push(x, msgs, m))
        return NULL;
    return m;
}

static bool xl_function_call(struct api_xl *x, struct json_object *item, struct json_object *msgs,
                             size_t i)
{
    struct json_object *call_id = bsc_json_get(item, "call_id"), *name = bsc_json_get(item, "name");
    struct json_object *args = bsc_json_get(item, "arguments"), *m, *calls, *tc, *fn;

    if (!is(call_id, json_type_string) || !is(name, json_type_string) ||
        !is(args, json_type_string))
        return api__xl_fail(
            x, "input.%zu: a function_call needs call_id, name and arguments (strings)", i);
    if (!(m = assistant_for_call(x, msgs)))
        return false;
    calls = bsc_json_get(m, "tool_calls");
    if (!calls && !api__xl_put(x, m, "tool_calls", calls = json_object_new_array()))
        return false;
    if (!(tc = json_object_new_object()) || !api__xl_push(x, calls, tc))
        return api__xl_oom(x);
    return api__xl_put(x, tc, "id", json_object_get(call_id)) &&
           api__xl_put(x, tc, "type", json_object_new_string("function")) &&
           api__xl_put(x, tc, "function", fn = json_object_new_object()) &&
           api__xl_put(x, fn, "name", json_object_get(name)) &&
           api__xl_put(x, fn, "arguments", json_object_get(args));
}

static bool xl_function_output(struct api_xl *x, struct json_object *item, struct json_object *msgs,
                               size_t i)
{
    struct json_object *call_id = bsc_json_get(item, "call_id"), *m;
    char path[64];
    struct bsc_buf b;

    if (!is(call_id, json_type_string))
        return api__xl_fail(x, "input.%zu.call_id: field required (a string)", i);
    snprintf(path, sizeof(path), "input.%zu.output", i);
    if (!(m = new_msg(x, "tool")))
        return false;
    bsc_buf_init(&b, 64u << 20);
    if (api__xl_put(x, m, "tool_call_id", json_object_get(call_id)) &&
        join_text(x, bsc_json_get(item, "output"), &b, path))
        api__xl_put(x, m, "content", json_object_new_string_len(b.p ? b.p : "", (int)b.len));
    bsc_buf_cleanup(&b);
    if (x->err) {
        json_object_put(m);
        return false;
    }
    return api__xl_push(x, msgs, m);
}

/* The input: a string (one user message) or a list of items. An item_reference is
 * replaced by the item it names, found in <refs> (item id -> item, borrowed). */
static bool xl_input(struct api_xl *x, struct json_object *input, struct json_object *refs,
                     struct json_object *msgs)
{
    struct json_object *m;

    if (is(input, json_type_string)) {
        if (!(m = new_msg(x, "user")) || !api__xl_put(x, m, "content", json_object_get(input)))
            return false;
        return api__xl_push(x, msgs, m);
    }
    if (!is(input, json_type_array))
        return api__xl_fail(x, "input: field required (a string or an array of input items)");
    for (size_t i = 0; i < json_object_array_length(input); i++) {
        struct json_object *item = json_object_array_get_idx(input, i);
        const char *type = str_or(bsc_json_get(item, "type"), "message");
        bool ok;

        if (!is(item, json_type_object))
            return api__xl_fail(x, "input.%zu: must be an object", i);
        if (!strcmp(type, "item_reference")) {
            const char *id = str_or(bsc_json_get(item, "id"), "");
            item = bsc_json_get(refs, id);
            if (!is(item, json_type_object))
                return api__xl_fail(x,
                                    "input.%zu.id: item '%.100s' not found (unknown, expired, or "
                                    "stored with store: false)",
                                    i, id);
            type = str_or(bsc_json_get(item, "type"), "message");
        }
        if (!strcmp(type, "message"))
            ok = xl_message(x, item, msgs, i);
        else if (!strcmp(type, "function_call"))
            ok = xl_function_call(x, item, msgs, i);
        else if (!strcmp(type, "function_call_output"))
            ok = xl_function_output(x, item, msgs, i);
        else if (!strcmp(type, "reasoning"))
            ok = true; /* a model's reasoning summary: nothing a chat model can take back */
        else
            ok = api__xl_fail(x, "input.%zu.type: '%s' is not supported by this gateway", i, type);
        if (!ok)
            return false;
    }
    return true;
}

/* ---- tools and parameters ---- */

static bool xl_tools(struct api_xl *x, struct json_object *rq, struct json_object *oreq, bool *has)
{
    struct json_object *tools = bsc_json_get(rq, "tools"), *out;

    *has = false;
    if (!tools || is(tools, json_type_null))
        return true;
    if (!is(tools, json_type_array))
        return api__xl_fail(x, "tools: must be an array");
    if (json_object_array_length(tools) == 0)
        return true;
    if (!api__xl_put(x, oreq, "tools", out = json_object_new_array()))
        return false;
    for (size_t i = 0; i < json_object_array_length(tools); i++) {
        struct json_object *t = json_object_array_get_idx(tools, i), *ct, *fn, *v;
        const char *type = str_or(bsc_json_get(t, "type"), "");

        if (strcmp(type, "function"))
            return api__xl_fail(x,
                                "tools.%zu.type: the built-in tool '%s' is not supported by this "
                                "route's targets (function tools only)",
                                i, type);
        if (!is(bsc_json_get(t, "name"), json_type_string))
            return api__xl_fail(x, "tools.%zu.name: field required (a string)", i);
        if (!(ct = json_object_new_object()) || !api__xl_push(x, out, ct) ||
            !api__xl_put(x, ct, "type", json_object_new_string("function")) ||
            !api__xl_put(x, ct, "function", fn = json_object_new_object()))
            return api__xl_oom(x);
        if (!api__xl_put(x, fn, "name", json_object_get(bsc_json_get(t, "name"))))
            return false;
        if (is(v = bsc_json_get(t, "description"), json_type_string) &&
            !api__xl_put(x, fn, "description", json_object_get(v)))
            return false;
        if (is(v = bsc_json_get(t, "parameters"), json_type_object) &&
            !api__xl_put(x, fn, "parameters", json_object_get(v)))
            return false;
        if (is(v = bsc_json_get(t, "strict"), json_type_boolean) &&
            !api__xl_put(x, fn, "strict", json_object_get(v)))
            return false;
    }
    *has = true;
    return true;
}

static bool xl_tool_choice(struct api_xl *x, struct json_object *rq, struct json_object *oreq,
                           bool has_tools)
{
    struct json_object *tc = bsc_json_get(rq, "tool_choice"), *o, *fn;
    const char *s;

    if (!tc || is(tc, json_type_null) || !has_tools)
        return true; /* chat refuses tool_choice without tools */
    if (is(tc, json_type_string)) {
        s = json_object_get_string(tc);
        if (strcmp(s, "auto") && strcmp(s, "none") && strcmp(s, "required"))
            return api__xl_fail(x, "tool_choice: '%s' is not one of auto, none, required", s);
        return api__xl_put(x, oreq, "tool_choice", json_object_get(tc));
    }
    s = str_or(bsc_json_get(tc, "type"), "");
    if (strcmp(s, "function") || !is(bsc_json_get(tc, "name"), json_type_string))
        return api__xl_fail(x,
                            "tool_choice: only auto, none, required or {type: function, name} are "
                            "supported here");
    return api__xl_put(x, oreq, "tool_choice", o = json_object_new_object()) &&
           api__xl_put(x, o, "type", json_object_new_string("function")) &&
           api__xl_put(x, o, "function", fn = json_object_new_object()) &&
           api__xl_put(x, fn, "name", json_object_get(bsc_json_get(tc, "name")));
}

/* text.format -> response_format. */
static bool xl_format(struct api_xl *x, struct json_object *rq, struct json_object *oreq)
{
    struct json_object *fmt = bsc_json_get(bsc_json_get(rq, "text"), "format"), *rf, *js, *v;
    const char *type = str_or(bsc_json_get(fmt, "type"), "text");
    static const char *const copy[] = {"name", "description", "schema", "strict"};

    if (!fmt || !strcmp(type, "text"))
        return true;
    if (!strcmp(type, "json_object"))
        return api__xl_put(x, oreq, "response_format", rf = json_object_new_object()) &&
               api__xl_put(x, rf, "type", json_object_new_string("json_object"));
    if (strcmp(type, "json_schema"))
        return api__xl_fail(
            x, "text.format.type: '%s' is not one of text, json_object, json_schema", type);
    if (!is(bsc_json_get(fmt, "schema"), json_type_object))
        return api__xl_fail(x, "text.format.schema: field required (an object)");
    if (!api__xl_put(x, oreq, "response_format", rf = json_object_new_object()) ||
        !api__xl_put(x, rf, "type", json_object_new_string("json_schema")) ||
        !api__xl_put(x, rf, "json_schema", js = json_object_new_object()))
        return false;
    for (size_t i = 0; i < sizeof(copy) / sizeof(copy[0]); i++) {
        if ((v = bsc_json_get(fmt, copy[i])) && !is(v, json_type_null) &&
            !api__xl_put(x, js, copy[i], json_object_get(v)))
            return false;
    }
    if (!bsc_json_get(js, "name"))
        return api__xl_put(x, js, "name", json_object_new_string("response"));
    return true;
}

static bool xl_params(struct api_xl *x, struct json_object *rq, struct json_object *oreq)
{
    static const char *const same[] = {"temperature", "top_p", "user", "parallel_tool_calls"};
    struct json_object *v, *opts;

    for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
        if ((v = bsc_json_get(rq, same[i])) && !is(v, json_type_null) &&
            !api__xl_put(x, oreq, same[i], json_object_get(v)))
            return false;
    }
    v = bsc_json_get(rq, "max_output_tokens");
    if (v && !is(v, json_type_null)) {
        if (!is(v, json_type_int) || json_object_get_int64(v) < 1)
            return api__xl_fail(x, "max_output_tokens: must be an integer >= 1");
        if (!api__xl_put(x, oreq, "max_tokens", json_object_get(v)))
            return false;
    }
    v = bsc_json_get(rq, "stream");
    if (v && !is(v, json_type_null) && !is(v, json_type_boolean))
        return api__xl_fail(x, "stream: must be a boolean");
    if (!is(v, json_type_boolean) || !json_object_get_boolean(v))
        return true;
    return api__xl_put(x, oreq, "stream", json_object_new_boolean(1)) &&
           api__xl_put(x, oreq, "stream_options", opts = json_object_new_object()) &&
           api__xl_put(x, opts, "include_usage", json_object_new_boolean(1));
}

/* Copies the messages of <from> (borrowed) to the end of <to>. */
static bool append_all(struct api_xl *x, struct json_object *to, struct json_object *from)
{
    for (size_t i = 0; is(from, json_type_array) && i < json_object_array_length(from); i++) {
        if (!api__xl_push(x, to, json_object_get(json_object_array_get_idx(from, i))))
            return false;
    }
    return true;
}

enum bsc_err api__responses_to_chat(struct json_object *rq, struct json_object *history,
                                    struct json_object *refs, struct json_object **out,
                                    struct json_object **turn, char *why, size_t why_len)
{
    struct api_xl x = {why, why_len, BSC_OK};
    struct json_object *model = bsc_json_get(rq, "model");
    struct json_object *instr = bsc_json_get(rq, "instructions");
    struct json_object *oreq = NULL, *msgs = NULL, *mine = NULL, *m;
    bool has_tools = false;

    *out = *turn = NULL;
    if (why_len)
        why[0] = '\0';
    if (!is(rq, json_type_object))
        return api__xl_fail(&x, "the request body must be a JSON object"), x.err;
    if (!is(model, json_type_string) || json_object_get_string_len(model) == 0)
        return api__xl_fail(&x, "model: field required (a string)"), x.err;
    if (instr && !is(instr, json_type_null) && !is(instr, json_type_string))
        return api__xl_fail(&x, "instructions: must be a string"), x.err;
    oreq = json_object_new_object();
    msgs = json_object_new_array();
    mine = json_object_new_array();
    if (!oreq || !msgs || !mine) {
        api__xl_oom(&x);
        goto out;
    }
    if (!api__xl_put(&x, oreq, "model", json_object_get(model)) ||
        !api__xl_put(&x, oreq, "messages", json_object_get(msgs)))
        goto out;
    if (is(instr, json_type_string) && json_object_get_string_len(instr)) {
        if (!(m = new_msg(&x, "system")) ||
            !api__xl_put(&x, m, "content", json_object_get(instr)) || !api__xl_push(&x, msgs, m))
            goto out;
    }
    if (!append_all(&x, mine, history) || !xl_input(&x, bsc_json_get(rq, "input"), refs, mine) ||
        !append_all(&x, msgs, mine))
        goto out;
    if (json_object_array_length(msgs) == 0) {
        api__xl_fail(&x, "input: must not be empty");
        goto out;
    }
    if (xl_tools(&x, rq, oreq, &has_tools) && xl_tool_choice(&x, rq, oreq, has_tools) &&
        xl_format(&x, rq, oreq))
        xl_params(&x, rq, oreq);
out:
    json_object_put(msgs);
    if (x.err) {
        json_object_put(oreq);
        json_object_put(mine);
        return x.err;
    }
    *out = oreq;
    *turn = mine;
    return BSC_OK;
}

struct bsc_str api__resp_store_key(const char *scope, const char *id, char *buf, size_t len)
{
    snprintf(buf, len, "responses:%s:%s", scope, id);
    return bsc_str_cstr(buf);
}

/* ---- the handler ---- */

void api__resp_arg_free(struct resp_arg *a)
{
    if (!a)
        return;
    json_object_put(a->echo);
    json_object_put(a->turn);
    free(a);
}

/* The request fields a Response object repeats back. */
static struct json_object *echo_of(struct json_object *rq)
{
    static const char *const keys[] = {"instructions", "tools", "tool_choice", "temperature",
                                       "top_p", "text", "max_output_tokens", "metadata",
                                       "previous_response_id", "parallel_tool_calls", "store",
                                       "user"};
    struct json_object *e = json_object_new_object(), *v;

    for (size_t i = 0; e && i < sizeof(keys) / sizeof(keys[0]); i++) {
        if ((v = bsc_json_get(rq, keys[i])) && json_object_object_add(e, keys[i],
                                                                      json_object_get(v))) {
            json_object_put(v);
            json_object_put(e);
            return NULL;
        }
    }
    return e;
}

#define RESP_MAX_LOOKUPS 16 /* kept responses one request may name (previous + references) */

/* One request between the handler and the router: kept while the store looks up the
 * responses it names. Freed by start() or the store's callback. */
struct resp_call {
    struct worker *w;
    struct srv_req *req;     /* borrowed; NULL once the client went away */
    struct json_object *rq;  /* owned: the parsed request */
    struct cfg *cfg;         /* a ref */
    const struct cfg_route *route;
    bool has_prev;           /* ids[0] is previous_response_id */
    unsigned n_ids, next;    /* responses to fetch, and the next one */
    char ids[RESP_MAX_LOOKUPS][RESP_ID_MAX];
    char scope[40];           /* req_client_scope(): only this client's turns are found */
    struct json_object *docs; /* owned: response id -> the kept {"messages","output"} */
    /* pass-through: spans of the client's body (borrowed from req), kept across the
     * lookup of whose previous_response_id names */
    struct bsc_str body, model_span, stream_span;
};

static void call_free(struct resp_call *c)
{
    json_object_put(c->rq);
    json_object_put(c->docs);
    cfg_unref(c->cfg);
    free(c);
}

static bool want_store(struct json_object *rq)
{
    struct json_object *s = bsc_json_get(rq, "store");

    return !is(s, json_type_boolean) || json_object_get_boolean(s);
}

/* item id -> item, over every kept response fetched. New ref or NULL. */
static struct json_object *refs_of(struct json_object *docs)
{
    struct json_object *refs = json_object_new_object();

    if (!refs || !docs)
        return refs;
    json_object_object_foreach(docs, rid, doc) {
        struct json_object *out = bsc_json_get(doc, "output");
        (void)rid;
        for (size_t i = 0; is(out, json_type_array) && i < json_object_array_length(out); i++) {
            struct json_object *it = json_object_array_get_idx(out, i);
            const char *id = str_or(bsc_json_get(it, "id"), NULL);
            if (id && json_object_object_add(refs, id, json_object_get(it))) {
                json_object_put(it);
                json_object_put(refs);
                return NULL;
            }
        }
    }
    return refs;
}

/* Translates and hands over to the router. Frees <c>. Returns false when it answered the
 * client itself (an invalid request, out of memory). */
static bool start(struct resp_call *c)
{
    struct chat_in in = {.op = PROV_OP_CHAT};
    struct json_object *oreq = NULL, *turn = NULL, *stream, *refs = refs_of(c->docs), *history;
    struct resp_arg *a = NULL;
    char why[400], rid[BSC_REQ_ID_LEN + 1];
    enum bsc_err err = refs ? BSC_OK : BSC_ENOMEM;

    history = c->has_prev ? bsc_json_get(bsc_json_get(c->docs, c->ids[0]), "messages") : NULL;
    if (!err)
        err = api__responses_to_chat(c->rq, history, refs, &oreq, &turn, why, sizeof(why));
    json_object_put(refs);
    if (!err && (!(a = calloc(1, sizeof(*a))) || !(a->echo = echo_of(c->rq))))
        err = BSC_ENOMEM;
    if (err) {
        json_object_put(oreq);
        json_object_put(turn);
        api__resp_arg_free(a);
        if (err == BSC_ENOMEM)
            srv_resp_error(c->req, 503, "server_error", "out_of_memory", "out of memory");
        else
            api__bad_request(c->req, "invalid_request", NULL, why);
        call_free(c);
        return false;
    }
    /* Never the client's X-Request-Id: an id a client can choose is one it can make collide
     * with another's stored turn. bsc_req_id's base32 has no '_' (item ids split on it). */
    bsc_req_id(rid);
    snprintf(a->id, sizeof(a->id), "resp_%s", rid + 4);
    snprintf(a->scope, sizeof(a->scope), "%s", c->scope);
    a->created_at = (int64_t)(bsc_wall_ms() / 1000);
    a->loop = &c->w->loop;
    a->ttl_ms = (uint64_t)c->cfg->responses.ttl_s * 1000;
    if (want_store(c->rq) && c->w->gw->store && a->ttl_ms) {
        a->store = c->w->gw->store;
        a->turn = turn;
    } else {
        json_object_put(turn);
    }
    stream = bsc_json_get(oreq, "stream");
    in.cfg = c->cfg;
    in.route = c->route;
    in.json = oreq;
    in.stream = is(stream, json_type_boolean) && json_object_get_boolean(stream);
    in.include_usage = true;
    in.down = &api_responses_down;
    in.down_arg = a;
    c->cfg = NULL; /* taken by the router */
    api__inspect(&in, NULL);
    req_chat_start(c->w, c->req, &in);
    call_free(c);
    return true;
}

static void on_client_gone(struct srv_req *req, void *ud)
{
    struct resp_call *c = ud;
    struct api_line line;

    api__line_begin(&line, req);
    api__line_end(&line, 499, "client_abort");
    c->req = NULL; /* the store still calls back; the call is freed there */
}

/* The 400 of a kept response that is not there: ids[<k>]. */
static void not_found(struct resp_call *c, unsigned k)
{
    char msg[RESP_ID_MAX + 160];

    if (k == 0 && c->has_prev) {
        snprintf(msg, sizeof(msg), "previous_response_id: response '%s' not found (unknown, "
                 "expired, or stored with store: false)", c->ids[0]);
        api__bad_request(c->req, "previous_response_not_found", "previous_response_id", msg);
    } else {
        snprintf(msg, sizeof(msg), "input: an item_reference names an item of response '%s', "
                 "which is not found (unknown, expired, or stored with store: false)",
                 c->ids[k]);
        api__bad_request(c->req, "item_not_found", "input", msg);
    }
}

static void fetch_next(struct resp_call *c, bool async);

static void on_doc(enum bsc_err err, struct bsc_str value, void *ud)
{
    struct resp_call *c = ud;
    struct json_object *doc = NULL;
    struct api_line line;
    char msg[64];
    unsigned k = c->next++;

    if (!c->req)
        return call_free(c);
    srv_req_on_abort(c->req, NULL, NULL);
    if (!err && !is(bsc_json_get(doc = api__parse_json(value, msg, sizeof(msg)), "messages"),
                    json_type_array))
        err = BSC_ENOTFOUND; /* not ours: treat as absent */
    if (!err) {
        if (json_object_object_add(c->docs, c->ids[k], doc))
            err = BSC_ENOMEM;
        else
            doc = NULL; /* now <docs>'s */
    }
    json_object_put(doc);
    if (!err)
        return fetch_next(c, true);
    api__line_begin(&line, c->req);
    if (err == BSC_ENOTFOUND)
        not_found(c, k);
    else
        srv_resp_error(c->req, 503, "server_error", "store_unavailable",
                       "the state store could not be read; try again");
    api__line_end(&line, srv_resp_status(c->req), NULL);
    call_free(c);
}

/* Fetches the next kept response, or starts once all are in. <async>: called from a
 * store callback, so an answer given here needs its own access-log line. */
static void fetch_next(struct resp_call *c, bool async)
{
    struct store *st = c->w->gw->store;
    char key[RESP_ID_MAX + 64];
    struct api_line line;
    enum bsc_err err = BSC_ENOTFOUND;

    if (c->next == c->n_ids) {
        struct srv_req *req = c->req; /* start() frees <c> */
        if (async)
            api__line_begin(&line, req);
        if (!start(c) && async)
            api__line_end(&line, srv_resp_status(req), NULL);
        return;
    }
    if (st)
        err = store_blob_get(st, &c->w->loop,
                             api__resp_store_key(c->scope, c->ids[c->next], key, sizeof(key)),
                             on_doc, c);
    if (err == BSC_OK) {
        srv_req_on_abort(c->req, on_client_gone, c);
        return;
    }
    if (async)
        api__line_begin(&line, c->req);
    if (err == BSC_ENOTFOUND)
        not_found(c, c->next);
    else
        srv_resp_error(c->req, 503, "server_error", "store_busy",
                       "the state store is overloaded; try again later");
    if (async)
        api__line_end(&line, srv_resp_status(c->req), NULL);
    call_free(c);
}

/* The response an output item id we made names: "fc_<rid>_<k>" or "msg_<rid>_<k>" ->
 * "resp_<rid>". False when <id> is not one of ours. */
static bool response_of_item(const char *id, char *out, size_t len)
{
    const char *us = strchr(id, '_'), *last = strrchr(id, '_');

    if (!us || last == us || (strncmp(id, "fc_", 3) && strncmp(id, "msg_", 4)))
        return false;
    return snprintf(out, len, "resp_%.*s", (int)(last - us - 1), us + 1) < (int)len;
}

/* Adds <rid> to the responses to fetch unless it is there. False when there are too many. */
static bool want_id(struct resp_call *c, const char *rid)
{
    for (unsigned i = 0; i < c->n_ids; i++) {
        if (!strcmp(c->ids[i], rid))
            return true;
    }
    if (c->n_ids == RESP_MAX_LOOKUPS)
        return false;
    snprintf(c->ids[c->n_ids++], RESP_ID_MAX, "%s", rid);
    return true;
}

/* Lists the responses the input's item_reference entries name. False (answered) on a
 * reference that cannot be ours or too many of them. */
static bool collect_refs(struct resp_call *c)
{
    struct json_object *input = bsc_json_get(c->rq, "input");
    char rid[RESP_ID_MAX], msg[RESP_ID_MAX + 120];

    for (size_t i = 0; is(input, json_type_array) && i < json_object_array_length(input); i++) {
        struct json_object *item = json_object_array_get_idx(input, i);
        const char *id = str_or(bsc_json_get(item, "id"), "");

        if (strcmp(str_or(bsc_json_get(item, "type"), ""), "item_reference"))
            continue;
        if (!response_of_item(id, rid, sizeof(rid))) {
            snprintf(msg, sizeof(msg), "input.%zu.id: item '%.100s' not found", i, id);
            api__bad_request(c->req, "item_not_found", "input", msg);
            return false;
        }
        if (!want_id(c, rid)) {
            api__bad_request(c->req, "invalid_request", "input",
                             "input: item_reference entries name too many responses (16 at most)");
            return false;
        }
    }
    return true;
}

/* ---- pass-through ---- */

/* True when every target of <route> is of kind openai: the upstream speaks the Responses
 * API itself (built-in tools, its own stored responses), so the client's bytes go there
 * with only "model" replaced. A route with any other kind translates for all its targets:
 * one turn may fail over between them, and previous_response_id must mean the same thing
 * on each. */
static bool passes_through(const struct cfg_route *route)
{
    const struct cfg_tier *tiers[] = {&route->primary, &route->equivalent, &route->fallback};
    size_t n = 0;

    for (size_t t = 0; t < 3; t++) {
        for (size_t i = 0; i < tiers[t]->n; i++, n++) {
            if (tiers[t]->targets[i]->provider->kind != CFG_PROV_OPENAI)
                return false;
        }
    }
    return n > 0;
}

/* Hands the client's own bytes to the router (op PROV_OP_RESPONSES, no down_ops: the
 * upstream's Response and events pass unchanged). Frees <c>. */
static void pass_through(struct resp_call *c)
{
    struct chat_in in = {.op = PROV_OP_RESPONSES};

    in.cfg = c->cfg;
    in.route = c->route;
    in.body = c->body;
    in.model_span = c->model_span;
    in.stream = bsc_str_eq(bsc_str_trim(c->stream_span), BSC_STR("true"));
    in.include_usage = true;
    c->cfg = NULL; /* taken by the router */
    api__inspect(&in, NULL);
    req_chat_start(c->w, c->req, &in);
    call_free(c);
}

/* The store's answer on whether the pass-through's previous_response_id was returned to
 * this caller: yes passes the request through, anything else answers here. */
static void on_owner(enum bsc_err err, struct bsc_str value, void *ud)
{
    struct resp_call *c = ud;
    struct srv_req *req = c->req;
    struct api_line line;

    (void)value;
    if (!req)
        return call_free(c);
    srv_req_on_abort(req, NULL, NULL);
    api__line_begin(&line, req);
    if (!err) {
        pass_through(c);
        return; /* the router writes the request's access line */
    }
    if (err == BSC_ENOTFOUND)
        not_found(c, 0);
    else
        srv_resp_error(req, 503, "server_error", "store_unavailable",
                       "the state store could not be read; try again");
    api__line_end(&line, srv_resp_status(req), NULL);
    call_free(c);
}

/* A pass-through naming previous_response_id <prev>: the upstream would continue any
 * response for anyone (every client reaches it with the gateway's key), so it goes only
 * when the gateway returned that response to this same credential scope
 * (router/resp_owner.h); otherwise 400 previous_response_not_found and nothing is sent.
 * Frees <c>. */
static void pass_through_owned(struct resp_call *c, const char *prev)
{
    struct store *st = c->w->gw->store;
    char key[STORE_BLOB_KEY_MAX + 1];
    enum bsc_err err = BSC_ENOTFOUND;

    c->has_prev = want_id(c, prev);
    if (st && strlen(prev) <= PROV_ANSWER_ID_MAX)
        err = store_blob_get(st, &c->w->loop, resp_owner_key(c->scope, prev, key, sizeof(key)),
                             on_owner, c);
    if (err == BSC_OK) {
        srv_req_on_abort(c->req, on_client_gone, c);
        return;
    }
    if (err == BSC_ENOTFOUND)
        not_found(c, 0);
    else
        srv_resp_error(c->req, 503, "server_error", "store_busy",
                       "the state store is overloaded; try again later");
    call_free(c);
}

void api__responses(struct worker *w, struct srv_req *req)
{
    static const struct bsc_str keys[] = {BSC_STR("model"), BSC_STR("stream")};
    struct bsc_str body = srv_req_body(req), spans[2];
    struct bsc_json_error jerr;
    enum bsc_json_verdict v;
    struct api_refusal ref;
    struct resp_call *c;
    struct json_object *model, *prev;
    char msg[400];

    v = bsc_json_check_request(body, RESP_JSON_MAX_DEPTH, keys, 2, 0, spans, &jerr);
    if (v != BSC_JSONV_OK) {
        api__json_refusal(body, v, &jerr, &ref);
        return api__bad_request(req, ref.code, NULL, ref.message);
    }
    c = calloc(1, sizeof(*c));
    if (!c)
        return srv_resp_error(req, 503, "server_error", "out_of_memory", "out of memory");
    c->w = w;
    c->req = req;
    req_client_scope(req, c->scope, sizeof(c->scope));
    c->rq = api__parse_json(body, msg, sizeof(msg));
    c->cfg = cfg_current_get();
    if (!c->rq || !is(c->rq, json_type_object)) {
        api__bad_request(req, "invalid_json", NULL,
                         c->rq ? "the request body must be a JSON object" : msg);
        return call_free(c);
    }
    model = bsc_json_get(c->rq, "model");
    if (!is(model, json_type_string) || json_object_get_string_len(model) == 0) {
        api__bad_request(req, "missing_model", "model",
                         "you must provide a model parameter (a string)");
        return call_free(c);
    }
    c->route = api__route_find(req, c->cfg, bsc_str_cstr(json_object_get_string(model)));
    if (!c->route) {
        snprintf(msg, sizeof(msg), "The model '%.120s' does not exist or is not routed by this "
                 "gateway", json_object_get_string(model));
        srv_resp_error(req, 404, "invalid_request_error", "model_not_found", msg);
        return call_free(c);
    }
    prev = bsc_json_get(c->rq, "previous_response_id");
    if (prev && !is(prev, json_type_null)) {
        if (!is(prev, json_type_string) || json_object_get_string_len(prev) == 0 ||
            json_object_get_string_len(prev) >= RESP_ID_MAX) {
            api__bad_request(req, "invalid_request", "previous_response_id",
                             "previous_response_id: must be a response id (a string)");
            return call_free(c);
        }
    } else {
        prev = NULL;
    }
    if (passes_through(c->route)) {
        c->body = body;
        c->model_span = spans[0];
        c->stream_span = spans[1];
        if (prev)
            return pass_through_owned(c, json_object_get_string(prev));
        return pass_through(c);
    }
    if (prev)
        c->has_prev = want_id(c, json_object_get_string(prev));
    if (!collect_refs(c))
        return call_free(c);
    if (!(c->docs = json_object_new_object())) {
        srv_resp_error(req, 503, "server_error", "out_of_memory", "out of memory");
        return call_free(c);
    }
    fetch_next(c, false);
}
