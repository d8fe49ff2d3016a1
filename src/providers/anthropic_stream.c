/* SPDX-License-Identifier: MIT */
/* anthropic_stream.c -- Anthropic Messages stream events -> OpenAI chat.completion.chunk
 * frames (docs/providers.md §2.4, §2.7). text_delta becomes delta.content, a tool_use block
 * becomes a tool call whose OpenAI index counts tool blocks only (dense from 0), and
 * message_stop becomes the finish chunk, the usage chunk when the client asked, and
 * [DONE]. The first frame (delta.role) waits for the first content, so an error event
 * before any content leaves nothing sent and the router may still fail over. Text is
 * re-framed through a UTF-8 carry: no frame ends inside a character. In native mode each
 * event also goes out whole (a carrier frame) and the translation becomes the router's
 * shadow.
 * See docs/internals/provider-anthropic.md. */
#include <string.h>

#include "core/clock.h"
#include "core/json_get.h"
#include "core/json_scan.h"
#include "providers/anthropic.h"
#include "stream/sse_parse.h"

#define ANTH_HELD_MAX    (1u << 20) /* events before the first content: a few hundred bytes */
#define ANTH_SCRATCH_MAX (8u << 20) /* the translated frames of one event */

static bool str_is(const char *a, const char *b)
{
    return a && strcmp(a, b) == 0;
}

static void copy_cstr(char *dst, size_t cap, const char *src)
{
    fail_copy_text(dst, cap, bsc_str_cstr(src ? src : ""));
}

static enum prov_stream_status fail_with(struct fail_info *fail, enum fail_kind kind,
                                         const char *what)
{
    fail_info_init(fail);
    fail->kind = kind;
    fail->status = 200;
    fail_copy_text(fail->message, sizeof(fail->message), bsc_str_cstr(what));
    return PROV_STREAM_ERROR;
}

static enum prov_stream_status bound_failure(struct anth_stream *s, struct fail_info *fail)
{
    return fail_with(fail, s->role_sent ? FAIL_PARTIAL_OUTPUT : FAIL_SERVER_ERROR,
                     "an upstream event passed the gateway's output bound");
}

void prov__anth_stream_init(void *st, const struct prov_call *call)
{
    struct anth_stream *s = st;

    memset(s, 0, sizeof(*s));
    s->include_usage = call->include_usage;
    s->json_mode = prov__anth_json_mode(call);
    s->created = call->created;
    s->usage = ANTH_USAGE_UNKNOWN;
    utf8_carry_init(&s->carry);
    copy_cstr(s->model, sizeof(s->model), call->target ? call->target->model : "");
    s->native = prov__anth_native(call);
    bsc_buf_init(&s->held, ANTH_HELD_MAX);
    bsc_buf_init(&s->scratch, ANTH_SCRATCH_MAX);
}

/* ---- frames ---- */

/* One chunk frame with <delta> (ownership taken) and <finish> (NULL while streaming). The
 * first frame of the answer also says role "assistant" (and content null when <delta>
 * carries tool calls instead). */
static enum bsc_err emit(struct anth_stream *s, struct bsc_buf *out, struct json_object *delta,
                         const char *finish)
{
    struct json_object *chunk = prov_chunk_new(s->id[0] ? s->id : NULL, s->created, s->model);
    struct json_object *v;
    enum bsc_err err;

    if (!s->role_sent) {
        json_object_object_add(delta, "role", json_object_new_string("assistant"));
        if (!json_object_object_get_ex(delta, "content", &v))
            json_object_object_add(delta, "content", NULL);
    }
    prov_chunk_choice(chunk, delta, finish);
    err = prov_emit_chunk(out, chunk);
    json_object_put(chunk);
    if (!err)
        s->role_sent = true;
    return err;
}

/* A delta of the open block: content text, or a piece of the open tool call's arguments. */
static enum bsc_err emit_piece(struct anth_stream *s, struct bsc_buf *out, struct bsc_str piece)
{
    struct json_object *delta = json_object_new_object(), *calls, *call, *fn;

    if (s->block != ANTH_BLK_TOOL) {
        json_object_object_add(delta, "content",
                               json_object_new_string_len(piece.p, (int)piece.len));
        return emit(s, out, delta, NULL);
    }
    fn = json_object_new_object();
    json_object_object_add(fn, "arguments", json_object_new_string_len(piece.p, (int)piece.len));
    call = json_object_new_object();
    json_object_object_add(call, "index", json_object_new_int(s->n_tools - 1));
    json_object_object_add(call, "function", fn);
    calls = json_object_new_array();
    json_object_array_add(calls, call);
    json_object_object_add(delta, "tool_calls", calls);
    return emit(s, out, delta, NULL);
}

/* Feeds text of the open block through the UTF-8 carry; emits what is complete. With
 * <flush>, also what the carry holds (as U+FFFD: it can no longer complete). */
static enum bsc_err feed(struct anth_stream *s, struct bsc_buf *out, struct bsc_str text,
                         bool flush)
{
    struct bsc_buf tmp;
    enum bsc_err err = BSC_OK;

    /* Each ill-formed byte may become a 3-byte U+FFFD; the carry adds at most 3 bytes. */
    bsc_buf_init(&tmp, 3 * (text.len + 4));
    if (text.len)
        err = utf8_carry_feed(&s->carry, &tmp, text.p, text.len);
    if (!err && flush)
        err = utf8_carry_flush(&s->carry, &tmp);
    if (!err && tmp.len)
        err = emit_piece(s, out, bsc_buf_str(&tmp));
    bsc_buf_cleanup(&tmp);
    return err;
}

static enum bsc_err close_block(struct anth_stream *s, struct bsc_buf *out)
{
    enum bsc_err err = BSC_OK;

    if (s->block != ANTH_BLK_NONE && s->block != ANTH_BLK_OTHER)
        err = feed(s, out, bsc_str_make(NULL, 0), true);
    utf8_carry_init(&s->carry);
    s->block = ANTH_BLK_NONE;
    return err;
}

/* The end of the answer: the finish chunk, the usage chunk when asked, [DONE]. */
static enum bsc_err finish_frames(struct anth_stream *s, struct bsc_buf *out)
{
    const char *finish = prov__anth_finish_reason(s->stop_reason[0] ? s->stop_reason : NULL,
                                                  s->json_mode);
    struct json_object *chunk, *delta;
    struct prov_usage u;
    enum bsc_err err = close_block(s, out);

    if (!err && !s->role_sent) { /* an empty answer still has its first chunk */
        delta = json_object_new_object();
        json_object_object_add(delta, "content", json_object_new_string(""));
        err = emit(s, out, delta, NULL);
    }
    if (strcmp(finish, "tool_calls") == 0 && s->n_tools == 0)
        finish = "stop";
    if (!err)
        err = emit(s, out, json_object_new_object(), finish);
    if (!err && s->include_usage) {
        chunk = prov_chunk_new(s->id[0] ? s->id : NULL, s->created, s->model);
        u = prov__anth_usage(&s->usage);
        json_object_object_add(chunk, "usage", prov_usage_json(&u));
        err = prov_emit_chunk(out, chunk);
        json_object_put(chunk);
    }
    if (!err)
        err = bsc_buf_append_cstr(out, "data: [DONE]\n\n");
    return err;
}

/* ---- events ---- */

static void on_message_start(struct anth_stream *s, struct json_object *ev)
{
    struct json_object *msg = bsc_json_get(ev, "message");
    const char *id = bsc_json_get_str(msg, "id"), *model = bsc_json_get_str(msg, "model");

    if (id && id[0])
        copy_cstr(s->id, sizeof(s->id), id);
    if (model && model[0])
        copy_cstr(s->model, sizeof(s->model), model);
    prov__anth_usage_read(bsc_json_get(msg, "usage"), &s->usage);
}

/* A tool_use block opens a tool call: its first fragment carries id, type and name. */
static enum bsc_err open_tool(struct anth_stream *s, struct bsc_buf *out,
                              struct json_object *block)
{
    const char *id = bsc_json_get_str(block, "id"), *name = bsc_json_get_str(block, "name");
    struct json_object *delta = json_object_new_object(), *calls, *call, *fn;

    s->block = ANTH_BLK_TOOL;
    fn = json_object_new_object();
    json_object_object_add(fn, "name", json_object_new_string(name ? name : ""));
    json_object_object_add(fn, "arguments", json_object_new_string(""));
    call = json_object_new_object();
    json_object_object_add(call, "index", json_object_new_int(s->n_tools++));
    json_object_object_add(call, "id", json_object_new_string(id ? id : ""));
    json_object_object_add(call, "type", json_object_new_string("function"));
    json_object_object_add(call, "function", fn);
    calls = json_object_new_array();
    json_object_array_add(calls, call);
    json_object_object_add(delta, "tool_calls", calls);
    return emit(s, out, delta, NULL);
}

static enum bsc_err on_block_start(struct anth_stream *s, struct bsc_buf *out,
                                   struct json_object *ev)
{
    struct json_object *block = bsc_json_get(ev, "content_block"), *text;
    const char *type = bsc_json_get_str(block, "type");
    enum bsc_err err = close_block(s, out); /* a missing content_block_stop */

    if (err)
        return err;
    if (str_is(type, "text") && !s->json_mode) {
        s->block = ANTH_BLK_TEXT;
        text = bsc_json_get(block, "text");
        if (text && json_object_is_type(text, json_type_string))
            return feed(s, out,
                        bsc_str_make(json_object_get_string(text),
                                     (size_t)json_object_get_string_len(text)),
                        false);
        return BSC_OK;
    }
    if (str_is(type, "tool_use") && s->json_mode &&
        str_is(bsc_json_get_str(block, "name"), PROV_ANTH_JSON_TOOL)) {
        s->block = ANTH_BLK_JSON;
        return BSC_OK;
    }
    if (str_is(type, "tool_use"))
        return open_tool(s, out, block);
    s->block = ANTH_BLK_OTHER; /* thinking, server tools, json-mode text: not relayed */
    return BSC_OK;
}

static enum bsc_err on_block_delta(struct anth_stream *s, struct bsc_buf *out,
                                   struct json_object *ev)
{
    struct json_object *delta = bsc_json_get(ev, "delta"), *v;
    const char *type = bsc_json_get_str(delta, "type");

    if (str_is(type, "text_delta")) {
        if (s->block == ANTH_BLK_NONE && !s->json_mode)
            s->block = ANTH_BLK_TEXT; /* tolerate a missing content_block_start */
        if (s->block != ANTH_BLK_TEXT)
            return BSC_OK;
        v = bsc_json_get(delta, "text");
    } else if (str_is(type, "input_json_delta")) {
        if (s->block != ANTH_BLK_TOOL && s->block != ANTH_BLK_JSON)
            return BSC_OK;
        v = bsc_json_get(delta, "partial_json");
    } else {
        return BSC_OK; /* thinking_delta, signature_delta, citations_delta, newer types */
    }
    if (!v || !json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0)
        return BSC_OK;
    return feed(s, out,
                bsc_str_make(json_object_get_string(v), (size_t)json_object_get_string_len(v)),
                false);
}

static void on_message_delta(struct anth_stream *s, struct json_object *ev)
{
    const char *stop = bsc_json_get_str(bsc_json_get(ev, "delta"), "stop_reason");

    if (stop && stop[0])
        copy_cstr(s->stop_reason, sizeof(s->stop_reason), stop);
    /* Counts are cumulative: the last one wins. */
    prov__anth_usage_read(bsc_json_get(ev, "usage"), &s->usage);
}

static enum prov_stream_status translate_event(struct anth_stream *s, struct bsc_str event,
                                               struct bsc_str data, struct bsc_buf *out,
                                               struct fail_info *fail)
{
    struct json_object *ev;
    const char *type;
    enum bsc_err err = BSC_OK;
    enum prov_stream_status ret = PROV_STREAM_MORE;

    if (s->done)
        return PROV_STREAM_DONE;
    if (data.len == 0 || bsc_str_eq(event, BSC_STR("ping")))
        return PROV_STREAM_MORE;
    ev = prov_parse_json(data);
    if (!ev || !json_object_is_type(ev, json_type_object)) {
        json_object_put(ev);
        return fail_with(fail, s->role_sent ? FAIL_PARTIAL_OUTPUT : FAIL_SERVER_ERROR,
                         "an upstream stream event is not a JSON object");
    }
    type = bsc_json_get_str(ev, "type");
    if (!type && event.len) /* the data's type repeats the event name; trust either */
        type = bsc_str_eq(event, BSC_STR("error")) ? "error" : NULL;
    if (str_is(type, "error")) {
        prov__anth_fail_from_error(bsc_json_get(ev, "error"), 200, fail);
        ret = PROV_STREAM_ERROR;
    } else if (str_is(type, "message_start")) {
        on_message_start(s, ev);
    } else if (str_is(type, "content_block_start")) {
        err = on_block_start(s, out, ev);
    } else if (str_is(type, "content_block_delta")) {
        err = on_block_delta(s, out, ev);
    } else if (str_is(type, "content_block_stop")) {
        err = close_block(s, out);
    } else if (str_is(type, "message_delta")) {
        on_message_delta(s, ev);
    } else if (str_is(type, "message_stop")) {
        err = finish_frames(s, out);
        s->done = !err;
        ret = err ? PROV_STREAM_MORE : PROV_STREAM_DONE;
    } /* ping and unknown event types are ignored, as the API asks */
    json_object_put(ev);
    if (err)
        return bound_failure(s, fail);
    return ret;
}

/* ---- native mode: the client speaks Anthropic too ---- */

/* The event's name: the SSE event field, else the data's "type"; only [a-z_] names, so the
 * name needs no escaping in the carrier frame. */
static struct bsc_str event_name(struct bsc_str event, struct bsc_str data)
{
    struct bsc_str t;

    if (!event.len && bsc_json_member_span(data, BSC_STR("type"), &t))
        event = bsc_json_string_raw(t);
    if (!event.len || event.len > 64)
        return BSC_STR_NULL;
    for (size_t i = 0; i < event.len; i++)
        if (!((event.p[i] >= 'a' && event.p[i] <= 'z') || event.p[i] == '_'))
            return BSC_STR_NULL;
    return event;
}

/* `data: {"bascule_native":"<name>","choices":[],"data":<data>}` -- the upstream event
 * whole, for the Anthropic client dialect (api/anthropic_down.c); the empty choices keep it
 * an OpenAI chunk with nothing in it for the router's readers. Line breaks in <data> can only be JSON
 * whitespace; they become spaces so the event stays one line. */
static enum bsc_err carrier_frame(struct bsc_buf *b, struct bsc_str name, struct bsc_str data)
{
    enum bsc_err err = bsc_buf_appendf(b, "data: {\"bascule_native\":\"%.*s\",\"choices\":[],"
                                          "\"data\":",
                                       BSC_STR_FMT(name));

    for (size_t i = 0; !err && i < data.len;) {
        size_t n = 0;

        while (i + n < data.len && data.p[i + n] != '\n' && data.p[i + n] != '\r')
            n++;
        err = bsc_buf_append(b, data.p + i, n);
        i += n;
        if (!err && i < data.len) {
            err = bsc_buf_append_char(b, ' ');
            i++;
        }
    }
    return err ? err : bsc_buf_append_cstr(b, "}\n\n");
}

/* shadow_frames' walk: where the shadows go, and the first error. */
struct shadow_walk {
    struct bsc_buf *out;
    enum bsc_err err;
};

/* One translated frame: an unnamed chunk object ({...}, not empty) again, marked a shadow. */
static int shadow_event(void *ud, struct bsc_str name, struct bsc_str data)
{
    struct shadow_walk *w = ud;

    if (name.len || data.len <= 2 || data.p[0] != '{')
        return 0;
    w->err = bsc_buf_append_cstr(w->out, "data: {\"bascule_shadow\":1,");
    if (!w->err)
        w->err = bsc_buf_append(w->out, data.p + 1, data.len - 1);
    if (!w->err)
        w->err = bsc_buf_append(w->out, "\n\n", 2);
    return w->err != BSC_OK;
}

/* The translated frames of <s->scratch> as shadows ("bascule_shadow" first), [DONE]
 * dropped: the client's stream ends with the upstream's own message_stop. */
static enum bsc_err shadow_frames(struct anth_stream *s, struct bsc_buf *out)
{
    struct shadow_walk w = {out, BSC_OK};
    enum bsc_err err = sse_each_event(bsc_buf_str(&s->scratch), shadow_event, &w);

    return w.err ? w.err : err;
}

/* Each event is translated as usual (usage, stop reason, the router's contract checks) and
 * also kept whole. Whole events wait in <held> until the first translated frame: as in
 * translation, nothing reaches the client before the first content, so an error before
 * it still fails over invisibly. */
static enum prov_stream_status native_event(struct anth_stream *s, struct bsc_str event,
                                            struct bsc_str data, struct bsc_buf *out,
                                            struct fail_info *fail)
{
    struct bsc_str name = event_name(event, data);
    enum prov_stream_status ret;
    enum bsc_err err = BSC_OK;

    bsc_buf_reset(&s->scratch);
    ret = translate_event(s, event, data, &s->scratch, fail);
    if (ret == PROV_STREAM_ERROR)
        return ret; /* the router ends the client's stream with an Anthropic error event */
    if (data.len && name.len)
        err = carrier_frame(&s->held, name, data);
    if (!err && (s->scratch.len || s->role_sent || ret == PROV_STREAM_DONE)) {
        err = bsc_buf_append(out, s->held.p, s->held.len);
        bsc_buf_reset(&s->held);
        if (!err)
            err = shadow_frames(s, out);
    }
    return err ? bound_failure(s, fail) : ret;
}

enum prov_stream_status prov__anth_stream_event(void *st, struct bsc_str event,
                                                struct bsc_str data, struct bsc_buf *out,
                                                struct fail_info *fail)
{
    struct anth_stream *s = st;

    if (s->native)
        return native_event(s, event, data, out, fail);
    return translate_event(s, event, data, out, fail);
}

enum prov_stream_status prov__anth_stream_end(void *st, struct bsc_buf *out,
                                              struct fail_info *fail)
{
    struct anth_stream *s = st;

    (void)out;
    if (s->done)
        return PROV_STREAM_DONE;
    return fail_with(fail, s->role_sent ? FAIL_PARTIAL_OUTPUT : FAIL_SERVER_ERROR,
                     "the upstream stream ended without message_stop");
}

void prov__anth_stream_usage(void *st, struct prov_usage *usage)
{
    struct anth_stream *s = st;

    *usage = prov__anth_usage(&s->usage);
}

void prov__anth_stream_cleanup(void *st)
{
    struct anth_stream *s = st;

    bsc_buf_cleanup(&s->held);
    bsc_buf_cleanup(&s->scratch);
}
