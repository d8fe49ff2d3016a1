/* SPDX-License-Identifier: MIT */
/* responses_down.c -- the answer side of POST /v1/responses: the router's OpenAI
 * chat.completion, chunk stream and errors become a Response object, the Responses typed
 * event stream (response.created ... response.completed, each with sequence_number) and
 * OpenAI's error body. A finished turn is kept in the store for previous_response_id
 * before its last bytes go out. It never re-chunks text: each chat delta (already cut at
 * whole UTF-8 characters by the adapters) becomes one output_text delta.
 * See docs/internals/responses.md. */
#include <stdio.h>
#include <string.h>

#include "api/xlate.h"
#include "api/responses.h"
#include "core/json_get.h"
#include "core/json_parse.h"
#include "core/log.h"
#include "providers/provider.h"
#include "store/store.h"

#define RESP_MAX_TOOLS  128      /* tool calls in one streamed answer (OpenAI index 0..127) */
#define RESP_MAX_ACCUM  (8u << 20) /* text or arguments accumulated for the done events */

static bool is(struct json_object *o, enum json_type t)
{
    return o && json_object_is_type(o, t);
}

static struct bsc_str get_str(struct json_object *o, const char *key)
{
    struct json_object *v = bsc_json_get(o, key);

    if (!is(v, json_type_string))
        return BSC_STR_NULL;
    return bsc_str_make(json_object_get_string(v), (size_t)json_object_get_string_len(v));
}

static struct json_object *first_choice(struct json_object *root)
{
    struct json_object *choices = bsc_json_get(root, "choices");

    if (!is(choices, json_type_array))
        return NULL;
    for (size_t i = 0; i < json_object_array_length(choices); i++) {
        struct json_object *c = json_object_array_get_idx(choices, i);
        if (api__json_count(c, "index") <= 0 && is(c, json_type_object))
            return c;
    }
    return NULL;
}

/* A sticky out-of-memory flag for building trees: one check at the end. */
struct jb {
    bool oom;
};

static struct json_object *add(struct jb *b, struct json_object *o, const char *key,
                               struct json_object *v)
{
    if (!o || !v || json_object_object_add(o, key, v)) {
        json_object_put(v);
        b->oom = true;
        return NULL;
    }
    return v;
}

/* JSON null is a NULL json_object in json-c: it cannot go through add(). */
static void add_null(struct jb *b, struct json_object *o, const char *key)
{
    if (!o || json_object_object_add(o, key, NULL))
        b->oom = true;
}

/* <v> (taken), or null when <v> is NULL. */
static void add_or_null(struct jb *b, struct json_object *o, const char *key,
                        struct json_object *v)
{
    if (v)
        add(b, o, key, v);
    else
        add_null(b, o, key);
}

static void add_str(struct jb *b, struct json_object *o, const char *key, struct bsc_str s)
{
    add(b, o, key, json_object_new_string_len(s.p ? s.p : "", (int)s.len));
}

static void push(struct jb *b, struct json_object *arr, struct json_object *v)
{
    if (!arr || !v || json_object_array_add(arr, v)) {
        json_object_put(v);
        b->oom = true;
    }
}

/* ---- usage ---- */

static struct json_object *usage_json(struct jb *b, const struct api_usage *u)
{
    struct json_object *o = json_object_new_object(), *d;

    add(b, o, "input_tokens", json_object_new_int64(u->input));
    d = add(b, o, "input_tokens_details", json_object_new_object());
    add(b, d, "cached_tokens", json_object_new_int64(u->cached));
    add(b, o, "output_tokens", json_object_new_int64(u->output));
    d = add(b, o, "output_tokens_details", json_object_new_object());
    add(b, d, "reasoning_tokens", json_object_new_int64(0));
    add(b, o, "total_tokens",
        json_object_new_int64(u->input > INT64_MAX - u->output
                                  ? INT64_MAX /* an upstream's absurd counts */
                                  : u->input + u->output));
    if (!o)
        b->oom = true;
    return o;
}

/* ---- the Response object ---- */

/* "completed", or "incomplete" with its reason for a cut answer. */
static const char *status_of(struct bsc_str finish, const char **reason)
{
    *reason = NULL;
    if (bsc_str_eq(finish, BSC_STR("length")))
        *reason = "max_output_tokens";
    else if (bsc_str_eq(finish, BSC_STR("content_filter")))
        *reason = "content_filter";
    return *reason ? "incomplete" : "completed";
}

/* A Response with <status>, <output> (taken; NULL: []), <usage> (taken; NULL: null),
 * <error> (taken; NULL: null) and <reason> for incomplete_details. */
static struct json_object *response_new(struct jb *b, const struct resp_arg *a,
                                        const char *model, const char *status,
                                        struct json_object *output, struct json_object *usage,
                                        struct json_object *error, const char *reason)
{
    static const char *const echoed[] = {"instructions", "max_output_tokens",
                                         "previous_response_id", "temperature", "top_p",
                                         "metadata", "user"};
    struct json_object *r = json_object_new_object(), *v, *d;
    const char *id = a ? a->id : "resp_bascule";

    if (!r)
        b->oom = true;
    add_str(b, r, "id", bsc_str_cstr(id));
    add_str(b, r, "object", BSC_STR("response"));
    add(b, r, "created_at", json_object_new_int64(a ? a->created_at : 0));
    add_str(b, r, "status", bsc_str_cstr(status));
    add_or_null(b, r, "error", error);
    if (reason) {
        d = add(b, r, "incomplete_details", json_object_new_object());
        add_str(b, d, "reason", bsc_str_cstr(reason));
    } else {
        add_null(b, r, "incomplete_details");
    }
    for (size_t i = 0; i < sizeof(echoed) / sizeof(echoed[0]); i++) {
        v = a ? bsc_json_get(a->echo, echoed[i]) : NULL;
        add_or_null(b, r, echoed[i], json_object_get(v));
    }
    add_str(b, r, "model", bsc_str_cstr(model ? model : ""));
    add(b, r, "output", output ? output : json_object_new_array());
    v = a ? bsc_json_get(a->echo, "parallel_tool_calls") : NULL;
    add(b, r, "parallel_tool_calls", v ? json_object_get(v) : json_object_new_boolean(1));
    v = a ? bsc_json_get(a->echo, "tool_choice") : NULL;
    add(b, r, "tool_choice", v ? json_object_get(v) : json_object_new_string("auto"));
    v = a ? bsc_json_get(a->echo, "tools") : NULL;
    add(b, r, "tools", v ? json_object_get(v) : json_object_new_array());
    v = a ? bsc_json_get(a->echo, "text") : NULL;
    if (v) {
        add(b, r, "text", json_object_get(v));
    } else {
        d = add(b, r, "text", json_object_new_object());
        d = add(b, d, "format", json_object_new_object());
        add_str(b, d, "type", BSC_STR("text"));
    }
    add(b, r, "store", json_object_new_boolean(a && a->turn));
    add_or_null(b, r, "usage", usage);
    return r;
}

/* Output items, named from the response id so that every id is unique per turn. */
static void item_id(char *buf, size_t len, const char *prefix, const struct resp_arg *a, int k)
{
    const char *rid = a ? a->id + 5 : "bascule"; /* without "resp_" */

    if (k < 0)
        snprintf(buf, len, "%s_%s", prefix, rid);
    else
        snprintf(buf, len, "%s_%s_%d", prefix, rid, k);
}

static struct json_object *message_item(struct jb *b, const struct resp_arg *a, int k,
                                        struct bsc_str text, bool refusal, const char *status)
{
    struct json_object *m = json_object_new_object(), *content, *part;
    char id[RESP_ID_MAX + 8];

    item_id(id, sizeof(id), "msg", a, k);
    if (!m)
        b->oom = true;
    add_str(b, m, "id", bsc_str_cstr(id));
    add_str(b, m, "type", BSC_STR("message"));
    add_str(b, m, "status", bsc_str_cstr(status));
    add_str(b, m, "role", BSC_STR("assistant"));
    content = add(b, m, "content", json_object_new_array());
    if (text.p || refusal) {
        part = json_object_new_object();
        if (refusal) {
            add_str(b, part, "type", BSC_STR("refusal"));
            add_str(b, part, "refusal", text);
        } else {
            add_str(b, part, "type", BSC_STR("output_text"));
            add_str(b, part, "text", text);
            add(b, part, "annotations", json_object_new_array());
            add(b, part, "logprobs", json_object_new_array());
        }
        push(b, content, part);
    }
    return m;
}

static struct json_object *call_item(struct jb *b, const struct resp_arg *a, int k,
                                     struct bsc_str call_id, struct bsc_str name,
                                     struct bsc_str args, const char *status)
{
    struct json_object *c = json_object_new_object();
    char id[RESP_ID_MAX + 8];

    item_id(id, sizeof(id), "fc", a, k);
    if (!c)
        b->oom = true;
    add_str(b, c, "id", bsc_str_cstr(id));
    add_str(b, c, "type", BSC_STR("function_call"));
    add_str(b, c, "status", bsc_str_cstr(status));
    add_str(b, c, "call_id", call_id);
    add_str(b, c, "name", name);
    add_str(b, c, "arguments", args);
    return c;
}

/* ---- keeping the turn for previous_response_id ---- */

/* The chat assistant message that <output> (Response items) stands for. New ref or NULL. */
static struct json_object *assistant_of(struct jb *b, struct json_object *output)
{
    struct json_object *m = json_object_new_object(), *calls = NULL, *content = NULL;

    add_str(b, m, "role", BSC_STR("assistant"));
    for (size_t i = 0; i < json_object_array_length(output); i++) {
        struct json_object *it = json_object_array_get_idx(output, i), *tc, *fn, *part;
        struct bsc_str type = get_str(it, "type");

        if (bsc_str_eq(type, BSC_STR("message"))) {
            part = json_object_array_get_idx(bsc_json_get(it, "content"), 0);
            if (bsc_json_get(part, "text"))
                content = bsc_json_get(part, "text");
            else if (bsc_json_get(part, "refusal"))
                content = bsc_json_get(part, "refusal");
            continue;
        }
        if (!calls)
            calls = add(b, m, "tool_calls", json_object_new_array());
        tc = json_object_new_object();
        add(b, tc, "id", json_object_get(bsc_json_get(it, "call_id")));
        add_str(b, tc, "type", BSC_STR("function"));
        fn = add(b, tc, "function", json_object_new_object());
        add(b, fn, "name", json_object_get(bsc_json_get(it, "name")));
        add(b, fn, "arguments", json_object_get(bsc_json_get(it, "arguments")));
        push(b, calls, tc);
    }
    add_or_null(b, m, "content", json_object_get(content));
    return m;
}

static void on_kept(enum bsc_err err, void *ud)
{
    (void)ud;
    if (err)
        bsc_log(BSC_LOG_WARN, "responses: a turn could not be kept: %s", bsc_err_str(err));
}

/* Stores the conversation up to and including <output> under the response id. The put is
 * submitted before the caller hands the answer to the client: the store runs jobs in
 * order, so a next turn sent at once finds it. A failure only costs that next turn. */
static void keep_turn(struct resp_arg *a, struct json_object *output)
{
    struct jb b = {0};
    struct json_object *doc, *msgs;
    char key[RESP_ID_MAX + 64];
    const char *text;
    size_t len;
    enum bsc_err err;

    if (!a || !a->turn || !a->store)
        return;
    doc = json_object_new_object();
    msgs = add(&b, doc, "messages", json_object_get(a->turn));
    push(&b, msgs, assistant_of(&b, output));
    add(&b, doc, "output", json_object_get(output)); /* for item_reference */
    text = b.oom ? NULL : json_object_to_json_string_length(doc, JSON_C_TO_STRING_PLAIN, &len);
    err = text ? store_blob_put(a->store, a->loop,
                                api__resp_store_key(a->scope, a->id, key, sizeof(key)),
                                bsc_str_make(text, len), a->ttl_ms, on_kept, NULL)
               : BSC_ENOMEM;
    if (err)
        bsc_log(BSC_LOG_WARN, "responses: a turn could not be kept: %s", bsc_err_str(err));
    json_object_put(doc);
}

/* ---- errors ---- */

static enum bsc_err error_body(const struct reply_error *e, const char *request_id,
                               struct bsc_buf *out)
{
    return reply_error_body(e, request_id, out);
}

/* ---- the non-stream answer ---- */

/* The text of message.content: a string, or text parts joined. */
static enum bsc_err content_text(struct json_object *content, struct bsc_buf *b)
{
    enum bsc_err err = BSC_OK;

    if (is(content, json_type_string))
        return bsc_buf_append(b, json_object_get_string(content),
                              (size_t)json_object_get_string_len(content));
    for (size_t i = 0; !err && is(content, json_type_array) &&
                       i < json_object_array_length(content); i++) {
        struct bsc_str t = get_str(json_object_array_get_idx(content, i), "text");
        err = bsc_buf_append(b, t.p, t.len);
    }
    return err;
}

static enum bsc_err map_response(struct bsc_str openai_json, const struct down_ctx *ctx,
                                 struct bsc_buf *out)
{
    struct json_object *root = bsc_json_parse_whole(openai_json, 64), *choice, *msg, *calls;
    struct json_object *output, *resp;
    struct resp_arg *a = ctx->arg;
    struct api_usage usage = {0};
    struct bsc_str refusal;
    const char *reason, *status;
    struct jb b = {0};
    struct bsc_buf text;
    enum bsc_err err;

    if (!is(root, json_type_object)) {
        json_object_put(root);
        return BSC_EPARSE;
    }
    choice = first_choice(root);
    msg = bsc_json_get(choice, "message");
    refusal = get_str(msg, "refusal");
    api__usage_read(bsc_json_get(root, "usage"), &usage);
    status = status_of(get_str(choice, "finish_reason"), &reason);
    output = json_object_new_array();
    bsc_buf_init(&text, RESP_MAX_ACCUM);
    err = content_text(bsc_json_get(msg, "content"), &text);
    if (text.len)
        push(&b, output, message_item(&b, a, 0, bsc_buf_str(&text), false, "completed"));
    else if (refusal.len)
        push(&b, output, message_item(&b, a, 0, refusal, true, "completed"));
    bsc_buf_cleanup(&text);
    calls = bsc_json_get(msg, "tool_calls");
    for (size_t i = 0; is(calls, json_type_array) && i < json_object_array_length(calls); i++) {
        struct json_object *c = json_object_array_get_idx(calls, i);
        struct json_object *fn = bsc_json_get(c, "function");
        struct json_object *args = bsc_json_get(fn, "arguments");
        struct bsc_str s = get_str(fn, "arguments");

        if (is(args, json_type_object)) /* a compatible server that sent an object */
            s = bsc_str_cstr(json_object_to_json_string_ext(args, JSON_C_TO_STRING_PLAIN));
        push(&b, output, call_item(&b, a, (int)json_object_array_length(output), get_str(c, "id"),
                                   get_str(fn, "name"), s, "completed"));
    }
    if (!b.oom && !err)
        keep_turn(a, output);
    resp = response_new(&b, a, ctx->model, status, json_object_get(output), usage_json(&b, &usage),
                        NULL, reason);
    if (!err)
        err = b.oom ? BSC_ENOMEM : prov_append_json(out, resp);
    json_object_put(resp);
    json_object_put(output);
    json_object_put(root);
    return err;
}

/* ---- the stream ---- */

struct resp_tool {
    int out_index;  /* its output_index */
    char *call_id;  /* owned */
    char *name;     /* owned */
    struct bsc_buf args;
    bool done;
};

struct resp_stream {
    struct resp_arg *a;  /* borrowed from the request (down_ctx.arg) */
    char *model;         /* owned copy of ctx->model */
    int64_t seq;         /* the next sequence_number */
    bool started, ended;
    char finish[32];
    struct json_object *output; /* owned: the items done so far */
    int text_index;             /* output_index of the open message item + 1; 0 = none */
    struct bsc_buf text;
    unsigned n_items, n_tools;
    int open_tool;              /* the open tool slot + 1; 0 = none */
    unsigned last_tool;
    unsigned tool_slot[RESP_MAX_TOOLS]; /* OpenAI tool index -> slot + 1 */
    struct resp_tool tools[RESP_MAX_TOOLS];
    struct api_usage usage;
};

static void stream_init(void *vst, const struct down_ctx *ctx)
{
    struct resp_stream *st = vst;

    st->a = ctx->arg;
    st->model = bsc_str_dup(bsc_str_cstr(ctx->model ? ctx->model : ""));
    st->output = json_object_new_array();
    bsc_buf_init(&st->text, RESP_MAX_ACCUM);
}

static void stream_cleanup(void *vst)
{
    struct resp_stream *st = vst;

    BSC_FREE(st->model);
    json_object_put(st->output);
    st->output = NULL;
    bsc_buf_cleanup(&st->text);
    for (unsigned i = 0; i < st->n_tools; i++) {
        BSC_FREE(st->tools[i].call_id);
        BSC_FREE(st->tools[i].name);
        bsc_buf_cleanup(&st->tools[i].args);
    }
}

/* Writes one event: <ev> (taken) gets "type" and "sequence_number" first. */
static void emit(struct jb *b, struct resp_stream *st, struct bsc_buf *out, const char *type,
                 struct json_object *ev)
{
    struct json_object *full = json_object_new_object();

    add_str(b, full, "type", bsc_str_cstr(type));
    add(b, full, "sequence_number", json_object_new_int64(st->seq++));
    if (ev) {
        json_object_object_foreach(ev, k, v) add_or_null(b, full, k, json_object_get(v));
    }
    json_object_put(ev);
    if (!b->oom && (bsc_buf_appendf(out, "event: %s\ndata: ", type) ||
                    prov_append_json(out, full) || bsc_buf_append_cstr(out, "\n\n")))
        b->oom = true; /* BSC_ELIMIT from the bounded buffer ends the stream the same way */
    json_object_put(full);
}

static struct json_object *ev_new(struct jb *b)
{
    struct json_object *o = json_object_new_object();

    if (!o)
        b->oom = true;
    return o;
}

static void put_started(struct jb *b, struct resp_stream *st, struct bsc_buf *out)
{
    struct json_object *ev;

    ev = ev_new(b);
    add(b, ev, "response",
        response_new(b, st->a, st->model, "in_progress", NULL, NULL, NULL, NULL));
    emit(b, st, out, "response.created", ev);
    ev = ev_new(b);
    add(b, ev, "response",
        response_new(b, st->a, st->model, "in_progress", NULL, NULL, NULL, NULL));
    emit(b, st, out, "response.in_progress", ev);
    st->started = true;
}

static void item_event(struct jb *b, struct resp_stream *st, struct bsc_buf *out, const char *type,
                       int index, struct json_object *item)
{
    struct json_object *ev = ev_new(b);

    add(b, ev, "output_index", json_object_new_int(index));
    add(b, ev, "item", item);
    emit(b, st, out, type, ev);
}

static void part_event(struct jb *b, struct resp_stream *st, struct bsc_buf *out, const char *type,
                       struct bsc_str text)
{
    struct json_object *ev = ev_new(b), *part;
    char id[RESP_ID_MAX + 8];

    item_id(id, sizeof(id), "msg", st->a, st->text_index - 1);
    add_str(b, ev, "item_id", bsc_str_cstr(id));
    add(b, ev, "output_index", json_object_new_int(st->text_index - 1));
    add(b, ev, "content_index", json_object_new_int(0));
    part = add(b, ev, "part", json_object_new_object());
    add_str(b, part, "type", BSC_STR("output_text"));
    add_str(b, part, "text", text);
    add(b, part, "annotations", json_object_new_array());
    emit(b, st, out, type, ev);
}

static void text_event(struct jb *b, struct resp_stream *st, struct bsc_buf *out, const char *type,
                       const char *key, struct bsc_str text)
{
    struct json_object *ev = ev_new(b);
    char id[RESP_ID_MAX + 8];

    item_id(id, sizeof(id), "msg", st->a, st->text_index - 1);
    add_str(b, ev, "item_id", bsc_str_cstr(id));
    add(b, ev, "output_index", json_object_new_int(st->text_index - 1));
    add(b, ev, "content_index", json_object_new_int(0));
    add_str(b, ev, key, text);
    add(b, ev, "logprobs", json_object_new_array());
    emit(b, st, out, type, ev);
}

static void close_text(struct jb *b, struct resp_stream *st, struct bsc_buf *out)
{
    struct bsc_str text = bsc_str_make(st->text.p ? st->text.p : "", st->text.len);
    struct json_object *item;

    if (!st->text_index)
        return;
    text_event(b, st, out, "response.output_text.done", "text", text);
    part_event(b, st, out, "response.content_part.done", text);
    item = message_item(b, st->a, st->text_index - 1, text, false, "completed");
    item_event(b, st, out, "response.output_item.done", st->text_index - 1, json_object_get(item));
    push(b, st->output, item);
    st->text_index = 0;
}

static void close_tool(struct jb *b, struct resp_stream *st, struct bsc_buf *out)
{
    struct resp_tool *t;
    struct json_object *ev, *item;
    struct bsc_str args;
    char id[RESP_ID_MAX + 8];

    if (!st->open_tool)
        return;
    t = &st->tools[st->open_tool - 1];
    st->open_tool = 0;
    args = bsc_str_make(t->args.p ? t->args.p : "", t->args.len);
    item_id(id, sizeof(id), "fc", st->a, t->out_index);
    ev = ev_new(b);
    add_str(b, ev, "item_id", bsc_str_cstr(id));
    add(b, ev, "output_index", json_object_new_int(t->out_index));
    add_str(b, ev, "name", bsc_str_cstr(t->name));
    add_str(b, ev, "arguments", args);
    emit(b, st, out, "response.function_call_arguments.done", ev);
    item = call_item(b, st->a, t->out_index, bsc_str_cstr(t->call_id), bsc_str_cstr(t->name),
                     args, "completed");
    item_event(b, st, out, "response.output_item.done", t->out_index, json_object_get(item));
    push(b, st->output, item);
    t->done = true;
}

static void put_text(struct jb *b, struct resp_stream *st, struct bsc_buf *out, struct bsc_str text)
{
    if (!st->text_index) {
        close_tool(b, st, out);
        bsc_buf_reset(&st->text); /* text after a tool call: a new message item */
        st->text_index = (int)++st->n_items;
        item_event(b, st, out, "response.output_item.added", st->text_index - 1,
                   message_item(b, st->a, st->text_index - 1, BSC_STR_NULL, false,
                                "in_progress"));
        part_event(b, st, out, "response.content_part.added", BSC_STR(""));
    }
    if (bsc_buf_append(&st->text, text.p, text.len))
        b->oom = true;
    text_event(b, st, out, "response.output_text.delta", "delta", text);
}

static bool tool_index(struct resp_stream *st, struct json_object *tc, unsigned *k)
{
    struct json_object *v = bsc_json_get(tc, "index");
    int64_t i;

    if (is(v, json_type_int))
        i = json_object_get_int64(v);
    else if (get_str(tc, "id").len)
        i = st->n_tools;
    else
        i = st->n_tools ? st->last_tool : 0;
    if (i < 0 || i >= RESP_MAX_TOOLS)
        return false;
    *k = (unsigned)i;
    return true;
}

/* One entry of delta.tool_calls. A fragment for a call already done (an upstream that
 * interleaves calls, which OpenAI does not) is dropped: its item was already final. */
static void put_tool_fragment(struct jb *b, struct resp_stream *st, struct bsc_buf *out,
                              struct json_object *tc)
{
    struct json_object *fn = bsc_json_get(tc, "function"), *args, *ev;
    struct bsc_str piece = BSC_STR_NULL;
    struct resp_tool *t;
    unsigned k;
    char id[RESP_ID_MAX + 8];

    if (!tool_index(st, tc, &k)) {
        b->oom = true;
        return;
    }
    st->last_tool = k;
    if (!st->tool_slot[k]) {
        close_text(b, st, out);
        close_tool(b, st, out);
        t = &st->tools[st->n_tools];
        st->tool_slot[k] = ++st->n_tools;
        st->open_tool = (int)st->n_tools;
        t->out_index = (int)st->n_items++;
        t->call_id = bsc_str_dup(get_str(tc, "id"));
        t->name = bsc_str_dup(get_str(fn, "name"));
        bsc_buf_init(&t->args, RESP_MAX_ACCUM);
        if (!t->call_id || !t->name)
            b->oom = true;
        item_event(b, st, out, "response.output_item.added", t->out_index,
                   call_item(b, st->a, t->out_index, bsc_str_cstr(t->call_id),
                             bsc_str_cstr(t->name), BSC_STR(""), "in_progress"));
    }
    t = &st->tools[st->tool_slot[k] - 1];
    if (t->done)
        return;
    args = bsc_json_get(fn, "arguments");
    if (is(args, json_type_string))
        piece = bsc_str_make(json_object_get_string(args),
                             (size_t)json_object_get_string_len(args));
    else if (is(args, json_type_object))
        piece = bsc_str_cstr(json_object_to_json_string_ext(args, JSON_C_TO_STRING_PLAIN));
    if (!piece.len)
        return;
    if (bsc_buf_append(&t->args, piece.p, piece.len))
        b->oom = true;
    item_id(id, sizeof(id), "fc", st->a, t->out_index);
    ev = ev_new(b);
    add_str(b, ev, "item_id", bsc_str_cstr(id));
    add(b, ev, "output_index", json_object_new_int(t->out_index));
    add_str(b, ev, "delta", piece);
    emit(b, st, out, "response.function_call_arguments.delta", ev);
}

static void put_choice(struct jb *b, struct resp_stream *st, struct bsc_buf *out,
                       struct json_object *choice)
{
    struct json_object *delta = bsc_json_get(choice, "delta");
    struct json_object *calls = bsc_json_get(delta, "tool_calls");
    struct bsc_str text = get_str(delta, "content"), refusal = get_str(delta, "refusal");
    struct bsc_str finish = get_str(choice, "finish_reason");

    if (text.len)
        put_text(b, st, out, text);
    if (refusal.len)
        put_text(b, st, out, refusal);
    for (size_t i = 0; is(calls, json_type_array) && i < json_object_array_length(calls); i++)
        put_tool_fragment(b, st, out, json_object_array_get_idx(calls, i));
    if (finish.len)
        snprintf(st->finish, sizeof(st->finish), "%.*s", BSC_STR_FMT(finish));
}

/* The error event and response.failed that end a stream. */
static void put_failed(struct jb *b, struct resp_stream *st, struct bsc_buf *out, const char *code,
                       const char *message)
{
    struct json_object *ev = ev_new(b), *err;

    add_str(b, ev, "code", bsc_str_cstr(code));
    add_str(b, ev, "message", bsc_str_cstr(message));
    add_null(b, ev, "param");
    emit(b, st, out, "error", ev);
    err = json_object_new_object();
    add_str(b, err, "code", bsc_str_cstr(code));
    add_str(b, err, "message", bsc_str_cstr(message));
    ev = ev_new(b);
    add(b, ev, "response", response_new(b, st->a, st->model, "failed",
                                        json_object_get(st->output), NULL, err, NULL));
    emit(b, st, out, "response.failed", ev);
    st->ended = true;
}

static enum bsc_err finish(struct jb *b, struct bsc_buf *out, size_t start)
{
    if (!b->oom)
        return BSC_OK;
    out->len = start;
    if (out->p)
        out->p[start] = '\0';
    return BSC_ELIMIT;
}

static enum bsc_err stream_chunk(void *vst, struct bsc_str chunk_json, struct bsc_buf *out)
{
    struct resp_stream *st = vst;
    struct json_object *root, *err;
    struct jb b = {0};
    size_t start = out->len;

    if (st->ended)
        return BSC_OK;
    root = bsc_json_parse_whole(chunk_json, 64);
    if (!is(root, json_type_object)) {
        json_object_put(root);
        return BSC_EPARSE;
    }
    if (!st->started)
        put_started(&b, st, out);
    err = bsc_json_get(root, "error");
    if (is(err, json_type_object)) {
        struct bsc_str code = get_str(err, "code"), msg = get_str(err, "message");
        put_failed(&b, st, out, code.p ? code.p : "server_error",
                   msg.p ? msg.p : "the upstream stream failed");
    } else {
        api__usage_read(bsc_json_get(root, "usage"), &st->usage);
        put_choice(&b, st, out, first_choice(root));
    }
    json_object_put(root);
    return finish(&b, out, start);
}

static enum bsc_err stream_done(void *vst, struct bsc_buf *out)
{
    struct resp_stream *st = vst;
    const char *reason, *status = status_of(bsc_str_cstr(st->finish), &reason);
    struct json_object *ev;
    struct jb b = {0};
    size_t start = out->len;

    if (st->ended)
        return BSC_OK;
    if (!st->started)
        put_started(&b, st, out);
    close_text(&b, st, out);
    close_tool(&b, st, out);
    if (!b.oom)
        keep_turn(st->a, st->output);
    ev = ev_new(&b);
    add(&b, ev, "response", response_new(&b, st->a, st->model, status, json_object_get(st->output),
                                         usage_json(&b, &st->usage), NULL, reason));
    emit(&b, st, out, reason ? "response.incomplete" : "response.completed", ev);
    st->ended = true;
    return finish(&b, out, start);
}

static enum bsc_err stream_error(void *vst, const struct reply_error *e, struct bsc_buf *out)
{
    struct resp_stream *st = vst;
    struct jb b = {0};
    size_t start = out->len;

    if (st->ended)
        return BSC_OK;
    if (!st->started)
        put_started(&b, st, out);
    put_failed(&b, st, out, e->code ? e->code : (e->type ? e->type : "server_error"),
               e->message ? e->message : "the stream failed");
    return finish(&b, out, start);
}

static void arg_free(void *arg)
{
    api__resp_arg_free(arg);
}

const struct down_ops api_responses_down = {
    .name = "responses",
    .map_response = map_response,
    .stream_size = sizeof(struct resp_stream),
    .stream_init = stream_init,
    .stream_chunk = stream_chunk,
    .stream_done = stream_done,
    .stream_error = stream_error,
    .stream_cleanup = stream_cleanup,
    .error_body = error_body,
    .arg_free = arg_free,
};
