/* SPDX-License-Identifier: MIT */
/* bedrock_stream.c -- ConverseStream: the AWS event-stream frames decoded (core/evstream.c,
 * both CRCs checked) and each event handed to the Anthropic stream translator as the
 * Anthropic event it mirrors: messageStart -> message_start, contentBlockStart (a tool) and
 * the first delta of a text block -> content_block_start, contentBlockDelta -> text_delta /
 * input_json_delta, contentBlockStop -> content_block_stop, messageStop + metadata (usage)
 * -> message_delta + message_stop. An exception message (throttling, model stream error,
 * ...) is a typed failure like any mid-stream error. Reasoning blocks are not relayed.
 * See docs/internals/provider-bedrock-vertex.md. */
#include <stdio.h>
#include <string.h>

#include "core/json_get.h"
#include "providers/bedrock.h"

extern const struct prov_ops prov_anthropic;

/* Hands one Anthropic event (a JSON object, consumed) to the inner translator. */
static void hand_on(struct br_stream *s, struct json_object *ev)
{
    struct bsc_buf tmp;
    const char *type = bsc_json_get_str(ev, "type");

    bsc_buf_init(&tmp, BR_EVENT_MAX * 2);
    if (s->status == PROV_STREAM_MORE && prov_append_json(&tmp, ev) == BSC_OK)
        s->status = prov_anthropic.stream_event(&s->inner, bsc_str_cstr(type ? type : ""),
                                                bsc_buf_str(&tmp), s->out, s->fail);
    bsc_buf_cleanup(&tmp);
    json_object_put(ev);
}

static struct json_object *event_of(const char *type)
{
    struct json_object *ev = json_object_new_object();

    json_object_object_add(ev, "type", json_object_new_string(type));
    return ev;
}

static void message_start(struct br_stream *s)
{
    struct json_object *ev = event_of("message_start"), *msg = json_object_new_object();

    json_object_object_add(msg, "type", json_object_new_string("message"));
    json_object_object_add(msg, "role", json_object_new_string("assistant"));
    json_object_object_add(msg, "model", json_object_new_string(s->model));
    json_object_object_add(msg, "content", json_object_new_array());
    json_object_object_add(ev, "message", msg);
    s->started = true;
    hand_on(s, ev);
}

static void block_start(struct br_stream *s, int index, struct json_object *block)
{
    struct json_object *ev = event_of("content_block_start");

    json_object_object_add(ev, "index", json_object_new_int(index));
    json_object_object_add(ev, "content_block", block);
    s->open_index = index;
    s->open_skipped = false;
    hand_on(s, ev);
}

static void block_stop(struct br_stream *s)
{
    struct json_object *ev = event_of("content_block_stop");

    json_object_object_add(ev, "index", json_object_new_int(s->open_index));
    s->open_index = -1;
    if (s->open_skipped) {
        s->open_skipped = false;
        json_object_put(ev);
        return;
    }
    hand_on(s, ev);
}

static void on_block_start(struct br_stream *s, struct json_object *p)
{
    struct json_object *tu = bsc_json_get(bsc_json_get(p, "start"), "toolUse"), *b;
    int index = (int)json_object_get_int(bsc_json_get(p, "contentBlockIndex"));

    if (s->open_index >= 0)
        block_stop(s);
    if (!tu) {
        s->open_index = index;
        s->open_skipped = true; /* a block kind the translator does not take */
        return;
    }
    b = json_object_new_object();
    json_object_object_add(b, "type", json_object_new_string("tool_use"));
    json_object_object_add(b, "id",
                           json_object_new_string(bsc_json_get_str(tu, "toolUseId") ?: ""));
    json_object_object_add(b, "name", json_object_new_string(bsc_json_get_str(tu, "name") ?: ""));
    json_object_object_add(b, "input", json_object_new_object());
    block_start(s, index, b);
}

static void on_block_delta(struct br_stream *s, struct json_object *p)
{
    struct json_object *d = bsc_json_get(p, "delta"), *ev, *ad;
    const char *text = bsc_json_get_str(d, "text");
    const char *input = bsc_json_get_str(bsc_json_get(d, "toolUse"), "input");
    int index = (int)json_object_get_int(bsc_json_get(p, "contentBlockIndex"));

    if (!text && !input)
        return; /* reasoningContent, citations and newer deltas: not relayed */
    if (text && s->open_index != index) {
        struct json_object *b = json_object_new_object();

        if (s->open_index >= 0)
            block_stop(s);
        json_object_object_add(b, "type", json_object_new_string("text"));
        json_object_object_add(b, "text", json_object_new_string(""));
        block_start(s, index, b); /* Converse opens text blocks with their first delta */
    }
    if (s->open_skipped || s->open_index != index)
        return;
    ev = event_of("content_block_delta");
    ad = json_object_new_object();
    json_object_object_add(ad, "type",
                           json_object_new_string(text ? "text_delta" : "input_json_delta"));
    json_object_object_add(ad, text ? "text" : "partial_json",
                           json_object_new_string(text ?: input));
    json_object_object_add(ev, "index", json_object_new_int(index));
    json_object_object_add(ev, "delta", ad);
    hand_on(s, ev);
}

/* message_delta (stop reason, usage) and message_stop: on metadata, or at the end. */
static void finish(struct br_stream *s, struct json_object *usage)
{
    struct json_object *ev = event_of("message_delta"), *d = json_object_new_object();
    struct json_object *u = prov__br_anthropic_usage(usage);

    if (s->open_index >= 0)
        block_stop(s);
    json_object_object_add(d, "stop_reason", json_object_new_string(s->stop_reason));
    json_object_object_add(ev, "delta", d);
    if (u)
        json_object_object_add(ev, "usage", u);
    hand_on(s, ev);
    hand_on(s, event_of("message_stop"));
}

static void on_event(struct br_stream *s, struct bsc_str type, struct json_object *p)
{
    if (!s->started)
        message_start(s);
    if (bsc_str_eq(type, BSC_STR("contentBlockStart"))) {
        on_block_start(s, p);
    } else if (bsc_str_eq(type, BSC_STR("contentBlockDelta"))) {
        on_block_delta(s, p);
    } else if (bsc_str_eq(type, BSC_STR("contentBlockStop"))) {
        if (s->open_index >= 0)
            block_stop(s);
    } else if (bsc_str_eq(type, BSC_STR("messageStop"))) {
        snprintf(s->stop_reason, sizeof(s->stop_reason), "%s",
                 prov__br_stop_reason(bsc_json_get_str(p, "stopReason")));
        s->stopped = true;
    } else if (bsc_str_eq(type, BSC_STR("metadata"))) {
        if (!s->stopped)
            snprintf(s->stop_reason, sizeof(s->stop_reason), "end_turn");
        finish(s, bsc_json_get(p, "usage"));
    } /* messageStart was handled above; unknown events are ignored */
}

static void stream_fail(struct br_stream *s, enum fail_kind kind, struct bsc_str type,
                        const char *message)
{
    fail_info_init(s->fail);
    s->fail->kind = kind;
    s->fail->status = 200;
    fail_copy_text(s->fail->type, sizeof(s->fail->type), type);
    fail_copy_text(s->fail->message, sizeof(s->fail->message), bsc_str_cstr(message));
    s->status = PROV_STREAM_ERROR;
}

/* An exception (or error) message in the stream: the failure it names. After the first
 * byte reached the client the router turns it into the stream's error; before, it retries
 * or fails over by kind. */
static void on_exception(struct br_stream *s, const struct evs_msg *m, struct json_object *p)
{
    struct bsc_str name = m->exception_type.len ? m->exception_type : m->error_code;
    const char *msg = bsc_json_get_str(p, "message");
    enum fail_kind k;
    char fallback[FAIL_TEXT_MESSAGE];

    if (!msg) {
        snprintf(fallback, sizeof(fallback), "%.*s", (int)m->error_message.len,
                 m->error_message.p ? m->error_message.p : "");
        msg = fallback;
    }
    k = prov__br_exception_kind(name, 0, bsc_str_cstr(msg));
    stream_fail(s, k == FAIL_UNKNOWN ? FAIL_SERVER_ERROR : k, name,
                msg[0] ? msg : "an exception in the upstream stream");
}

static int on_message(void *ud, const struct evs_msg *m)
{
    struct br_stream *s = ud;
    struct json_object *p = m->payload.len ? prov_parse_json(m->payload) : NULL;

    if (m->payload.len && !p) {
        stream_fail(s, s->started ? FAIL_PARTIAL_OUTPUT : FAIL_SERVER_ERROR, BSC_STR(""),
                    "an upstream stream event is not JSON");
    } else if (bsc_str_eq(m->message_type, BSC_STR("exception")) ||
               bsc_str_eq(m->message_type, BSC_STR("error"))) {
        on_exception(s, m, p);
    } else {
        on_event(s, m->event_type, p);
    }
    json_object_put(p);
    return s->status == PROV_STREAM_MORE ? 0 : 1;
}

void prov__br_stream_init(void *st, const struct prov_call *call)
{
    struct br_stream *s = st;
    struct prov_call c2 = *call;

    BSC_BUG_ON(prov_anthropic.stream_size > sizeof(s->inner));
    c2.native = NULL; /* the client's Anthropic bytes never reach Bedrock: translate */
    prov_anthropic.stream_init(&s->inner, &c2);
    evs_decoder_init(&s->dec, BR_EVENT_MAX, on_message, s);
    s->status = PROV_STREAM_MORE;
    s->open_index = -1;
    snprintf(s->stop_reason, sizeof(s->stop_reason), "end_turn");
    snprintf(s->model, sizeof(s->model), "%s", call->target ? call->target->model : "");
}

enum prov_stream_status prov__br_stream_bytes(void *st, struct bsc_str bytes, struct bsc_buf *out,
                                              struct fail_info *fail)
{
    struct br_stream *s = st;
    int rc;

    if (s->status != PROV_STREAM_MORE)
        return s->status;
    s->out = out;
    s->fail = fail;
    rc = evs_feed(&s->dec, bytes.p, bytes.len);
    if (rc < 0)
        stream_fail(s, s->started ? FAIL_PARTIAL_OUTPUT : FAIL_PROTOCOL_ERROR, BSC_STR(""),
                    s->dec.why);
    s->out = NULL;
    s->fail = NULL;
    return s->status;
}

enum prov_stream_status prov__br_stream_end(void *st, struct bsc_buf *out, struct fail_info *fail)
{
    struct br_stream *s = st;

    if (s->status == PROV_STREAM_MORE && s->stopped && !evs_pending(&s->dec)) {
        s->out = out, s->fail = fail;
        finish(s, NULL); /* messageStop without metadata: no usage, the answer is whole */
        s->out = NULL, s->fail = NULL;
    }
    if (s->status == PROV_STREAM_DONE)
        return PROV_STREAM_DONE;
    if (s->status == PROV_STREAM_ERROR)
        return PROV_STREAM_ERROR;
    return prov_anthropic.stream_end(&s->inner, out, fail);
}

void prov__br_stream_usage(void *st, struct prov_usage *usage)
{
    prov_anthropic.stream_usage(&((struct br_stream *)st)->inner, usage);
}

void prov__br_stream_cleanup(void *st)
{
    struct br_stream *s = st;

    prov_anthropic.stream_cleanup(&s->inner);
    evs_decoder_cleanup(&s->dec);
}
