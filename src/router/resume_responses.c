/* SPDX-License-Identifier: MIT */
/* resume_responses.c -- on_stream_failure: continue for a Responses client on a route of
 * `openai` targets, whose stream is the upstream's own typed events relayed as they are
 * ("event: <type>\ndata: <json>"). Watching, the one message item's text is noted (its id,
 * output index and the last sequence number kept); a reasoning item, a tool call, a refusal
 * or a second item makes the stream ineligible. A continuation is always a replay (this
 * API has no prefill): its own response.created, in_progress, output_item.added and
 * content_part.added are dropped, its text deltas pass once past what was sent, and every
 * event that passes takes the first item's id and index and the next sequence number; one
 * response.completed ends it, with every attempt's usage. docs/internals/streaming.md §6. */
#include <stdio.h>
#include <string.h>

#include "core/json_get.h"
#include "core/json_parse.h"
#include "router/internal.h"
#include "router/resume.h"

/* The closing events a client may have before the break (resume.ends_sent). */
enum { END_TEXT_DONE = 1u << 0, END_PART_DONE = 1u << 1, END_ITEM_DONE = 1u << 2 };

struct typed_event {
    struct bsc_str type;    /* borrowed from the frame: the event line's name */
    struct json_object *ev; /* owned: the data, or NULL */
};

/* The typed event <type> with <data> parsed. False when it has no type or its data is not a
 * JSON object; e->ev is for the caller to put either way. */
static bool read_event(struct bsc_str type, struct bsc_str data, struct typed_event *e)
{
    memset(e, 0, sizeof(*e));
    if (!type.len)
        return false;
    e->type = type;
    e->ev = bsc_json_parse_whole(data, 128);
    return e->ev && json_object_is_type(e->ev, json_type_object);
}

static bool is(const struct typed_event *e, const char *type)
{
    return bsc_str_eq(e->type, bsc_str_cstr(type));
}

/* The bit of the closing event <e> (a part of the one item done), or 0. */
static unsigned end_bit(const struct typed_event *e)
{
    return is(e, "response.output_text.done")    ? END_TEXT_DONE
           : is(e, "response.content_part.done") ? END_PART_DONE
           : is(e, "response.output_item.done")  ? END_ITEM_DONE
                                                 : 0;
}

static int64_t int_of(struct json_object *o, const char *key, int64_t absent)
{
    struct json_object *v = bsc_json_get_type(o, key, json_type_int);

    return v ? json_object_get_int64(v) : absent;
}

static bool str_is(struct json_object *o, const char *key, const char *want)
{
    const char *v = bsc_json_get_str(o, key);

    return v && strcmp(v, want) == 0;
}

/* The response's framing events before any output: nothing of the answer. */
static bool is_preamble(const struct typed_event *e)
{
    return is(e, "response.created") || is(e, "response.in_progress") || is(e, "response.queued");
}

/* The event's part is the first text part of the item the client has. */
static bool own_text_part(const struct resume *s, struct json_object *ev)
{
    return str_is(ev, "item_id", s->item_id) && int_of(ev, "content_index", -1) == 0;
}

/* The first output item, a message: its id and index kept for the continuation's events. */
static bool keep_item(struct resume *s, struct json_object *ev)
{
    struct json_object *item = bsc_json_get_type(ev, "item", json_type_object);
    const char *id = bsc_json_get_str(item, "id");

    if (s->item_seen || !str_is(item, "type", "message") || !id || strlen(id) > RESUME_ITEM_ID_MAX)
        return false;
    snprintf(s->item_id, sizeof(s->item_id), "%s", id);
    s->output_index = int_of(ev, "output_index", 0);
    s->item_seen = true;
    return true;
}

/* Whether the watched event <e> leaves the stream one a continuation can carry on. */
static bool watch_event(struct request *r, const struct typed_event *e)
{
    struct resume *s = &r->resume;
    struct json_object *part = bsc_json_get_type(e->ev, "part", json_type_object);
    struct json_object *delta;

    if (is_preamble(e) || is(e, "response.output_text.done") ||
        is(e, "response.content_part.done") || is(e, "response.output_item.done") ||
        is(e, "response.completed") || is(e, "response.incomplete"))
        return true;
    if (is(e, "response.output_item.added"))
        return keep_item(s, e->ev);
    if (is(e, "response.content_part.added"))
        return own_text_part(s, e->ev) && str_is(part, "type", "output_text");
    if (!is(e, "response.output_text.delta") || !own_text_part(s, e->ev))
        return false; /* reasoning, tool calls, refusals, annotations, ... */
    delta = bsc_json_get_type(e->ev, "delta", json_type_string);
    if (!delta)
        return false;
    resume__note_sent(r, json_object_get_string(delta), (size_t)json_object_get_string_len(delta));
    return true;
}

void resume__resp_watch(struct request *r, struct bsc_str type, struct bsc_str data)
{
    struct typed_event e;

    if (!read_event(type, data, &e) || !watch_event(r, &e)) {
        r->resume.ineligible = true;
    } else {
        r->resume.ends_sent |= end_bit(&e);
        if (int_of(e.ev, "sequence_number", -1) >= 0)
            r->resume.next_seq = int_of(e.ev, "sequence_number", 0) + 1;
    }
    json_object_put(e.ev);
}

/* The event as the client's stream goes on: the first item's id and index, the next
 * sequence number; then appended, after the seam. */
static enum bsc_err pass(struct request *r, const struct typed_event *e, struct bsc_buf *out)
{
    struct resume *s = &r->resume;
    const char *js;
    enum bsc_err err;

    if (bsc_json_get(e->ev, "item_id"))
        json_object_object_add(e->ev, "item_id", json_object_new_string(s->item_id));
    if (bsc_json_get(e->ev, "output_index"))
        json_object_object_add(e->ev, "output_index", json_object_new_int64(s->output_index));
    json_object_object_add(e->ev, "sequence_number", json_object_new_int64(s->next_seq++));
    js = json_object_to_json_string_ext(e->ev,
                                        JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    if (!js)
        return BSC_ENOMEM;
    err = resume__seam(r);
    return err ? err : bsc_buf_appendf(out, "event: %.*s\ndata: %s\n\n", BSC_STR_FMT(e->type), js);
}

/* A text delta: held while the replay covers what was sent, then its new part passes. */
static enum bsc_err pass_delta(struct request *r, const struct typed_event *e, struct bsc_buf *out)
{
    struct json_object *d = bsc_json_get_type(e->ev, "delta", json_type_string);
    struct bsc_str t;
    size_t from;
    enum bsc_err err;

    if (!d || int_of(e->ev, "content_index", -1) != 0)
        return BSC_EINVAL;
    t = bsc_str_make(json_object_get_string(d), (size_t)json_object_get_string_len(d));
    err = resume__pass_text(r, t, &from);
    if (err || from == t.len)
        return err;
    if (r->resume.ends_sent)
        return BSC_EINVAL; /* more text than the part the client saw done: another answer */
    if (from)
        json_object_object_add(e->ev, "delta",
                               json_object_new_string_len(t.p + from, (int)(t.len - from)));
    return pass(r, e, out);
}

static void add_count(struct json_object *o, const char *key, int64_t more)
{
    if (o && more > 0)
        json_object_object_add(o, key, json_object_new_int64(int_of(o, key, 0) + more));
}

/* The end: the one message item keeps the id the client has; the usage counts every
 * attempt. The response's own id is the continuation's: the upstream response that holds
 * the whole answer, the one a next turn's previous_response_id must name. */
static enum bsc_err pass_end(struct request *r, const struct typed_event *e, struct bsc_buf *out)
{
    struct json_object *resp = bsc_json_get_type(e->ev, "response", json_type_object);
    struct json_object *output = bsc_json_get_type(resp, "output", json_type_array);
    struct json_object *usage = bsc_json_get_type(resp, "usage", json_type_object);
    const struct prov_usage *p = &r->resume.prior;

    for (size_t i = 0; output && i < json_object_array_length(output); i++) {
        struct json_object *item = json_object_array_get_idx(output, i);

        if (str_is(item, "type", "message")) {
            json_object_object_add(item, "id", json_object_new_string(r->resume.item_id));
            break;
        }
    }
    add_count(usage, "input_tokens", p->input_tokens);
    add_count(usage, "output_tokens", p->output_tokens);
    add_count(usage, "total_tokens",
              (p->input_tokens > 0 ? p->input_tokens : 0) +
                  (p->output_tokens > 0 ? p->output_tokens : 0));
    add_count(bsc_json_get_type(usage, "input_tokens_details", json_type_object), "cached_tokens",
              p->cached_tokens);
    return pass(r, e, out);
}

/* The rewrite of one continuation event; BSC_EINVAL: give up. */
static enum bsc_err continue_event(struct request *r, const struct typed_event *e,
                                   struct bsc_buf *out)
{
    struct resume *s = &r->resume;
    struct json_object *item = bsc_json_get_type(e->ev, "item", json_type_object);
    struct json_object *part = bsc_json_get_type(e->ev, "part", json_type_object);

    if (is_preamble(e))
        return BSC_OK; /* the client has its response */
    if (is(e, "response.output_item.added")) {
        if (s->item_seen || !str_is(item, "type", "message"))
            return BSC_EINVAL; /* a second item, reasoning, a tool call: never spliced */
        s->item_seen = true;
        return BSC_OK; /* the client's item goes on */
    }
    if (is(e, "response.content_part.added"))
        return int_of(e->ev, "content_index", -1) == 0 && str_is(part, "type", "output_text")
                   ? BSC_OK
                   : BSC_EINVAL;
    if (is(e, "response.output_text.delta"))
        return pass_delta(r, e, out);
    if (!resume__passing(r))
        return BSC_EINVAL; /* the replay ended before it covered what was sent */
    if (s->ends_sent & end_bit(e))
        return BSC_OK; /* the client has this one already: not twice */
    if (is(e, "response.output_text.done") || is(e, "response.content_part.done"))
        return int_of(e->ev, "content_index", -1) == 0 ? pass(r, e, out) : BSC_EINVAL;
    if (is(e, "response.output_item.done")) {
        if (!item)
            return BSC_EINVAL;
        json_object_object_add(item, "id", json_object_new_string(s->item_id));
        return pass(r, e, out);
    }
    if (is(e, "response.completed") || is(e, "response.incomplete"))
        return pass_end(r, e, out);
    return BSC_EINVAL; /* anything a continuation cannot carry */
}

enum bsc_err resume__resp_frame(struct request *r, struct bsc_str type, struct bsc_str data,
                                struct bsc_buf *out)
{
    struct typed_event e;
    enum bsc_err err = read_event(type, data, &e) ? continue_event(r, &e, out) : BSC_EINVAL;

    json_object_put(e.ev);
    return err;
}
