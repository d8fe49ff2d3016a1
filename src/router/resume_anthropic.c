/* SPDX-License-Identifier: MIT */
/* resume_anthropic.c -- on_stream_failure: continue for an Anthropic client on an Anthropic
 * target, whose stream is Anthropic's own events carried whole by the adapter
 * ({"bascule_native":"<name>","choices":[],"data":<event>}, beside the "bascule_shadow"
 * OpenAI frames the router reads). Watching, the text of the one text block is noted and
 * anything else makes the stream ineligible. A continuation (the client's own bytes again,
 * or with the text sent as a trailing assistant message) becomes the rest of the same
 * message: its message_start and content_block_start are dropped, its text deltas keep
 * index 0 and pass once past what was sent, its message_delta carries every attempt's
 * usage. docs/internals/streaming.md §6, "Pass-through streams". */
#include <string.h>

#include "core/json_get.h"
#include "core/json_parse.h"
#include "core/json_scan.h"
#include "router/internal.h"
#include "router/resume.h"

static const struct bsc_str carrier_head = BSC_STR("{\"bascule_native\":\"");
static const struct bsc_str carrier_mid = BSC_STR("\",\"choices\":[],\"data\":");
static const struct bsc_str shadow_head = BSC_STR("{\"bascule_shadow\":1,");

/* The closing events a client may have before the break (resume.ends_sent). */
enum { END_BLOCK_STOP = 1u << 0, END_MESSAGE_DELTA = 1u << 1 };

struct carrier {
    struct bsc_str name;    /* borrowed from the frame: the event's name */
    struct json_object *ev; /* owned: the event, or NULL */
};

/* Splits the carrier frame <f> and parses its event. False when <f> is not one or its event
 * is not a JSON object; c->ev is for the caller to put either way. */
static bool read_carrier(struct bsc_str f, struct carrier *c)
{
    const char *q;
    struct bsc_str data;

    memset(c, 0, sizeof(*c));
    if (!bsc_str_starts(f, carrier_head) || f.p[f.len - 1] != '}')
        return false;
    q = memchr(f.p + carrier_head.len, '"', f.len - carrier_head.len);
    if (!q || (size_t)(f.p + f.len - q) < carrier_mid.len + 2 ||
        memcmp(q, carrier_mid.p, carrier_mid.len) != 0)
        return false;
    c->name = bsc_str_make(f.p + carrier_head.len, (size_t)(q - f.p) - carrier_head.len);
    data = bsc_str_make(q + carrier_mid.len, (size_t)(f.p + f.len - 1 - (q + carrier_mid.len)));
    c->ev = bsc_json_parse_whole(data, 64);
    return c->ev && json_object_is_type(c->ev, json_type_object);
}

static bool is(const struct carrier *c, const char *name)
{
    return bsc_str_eq(c->name, bsc_str_cstr(name));
}

/* The event's block index, or -1. */
static int64_t block_index(struct json_object *ev)
{
    struct json_object *v = bsc_json_get_type(ev, "index", json_type_int);

    return v ? json_object_get_int64(v) : -1;
}

/* The start of the one block a continuation can carry: text, at index 0, empty. */
static bool text_block_start(struct json_object *ev)
{
    struct json_object *cb = bsc_json_get_type(ev, "content_block", json_type_object);
    const char *type = bsc_json_get_str(cb, "type"), *text = bsc_json_get_str(cb, "text");

    return block_index(ev) == 0 && type && strcmp(type, "text") == 0 && (!text || !text[0]);
}

/* The delta of a text_delta at index 0 (with its "text" a string), else NULL. */
static struct json_object *text_delta(struct json_object *ev)
{
    struct json_object *d = bsc_json_get_type(ev, "delta", json_type_object);
    const char *type = bsc_json_get_str(d, "type");

    if (block_index(ev) != 0 || !type || strcmp(type, "text_delta") != 0 ||
        !bsc_json_get_type(d, "text", json_type_string))
        return NULL;
    return d;
}

static struct bsc_str string_of(struct json_object *s)
{
    return bsc_str_make(json_object_get_string(s), (size_t)json_object_get_string_len(s));
}

void resume__anth_watch(struct request *r, struct bsc_str f)
{
    struct carrier c;
    struct json_object *d;

    if (bsc_str_starts(f, shadow_head))
        return; /* the router's translation of the same events */
    if (!read_carrier(f, &c)) {
        r->resume.ineligible = true;
    } else if (is(&c, "content_block_start")) {
        if (!text_block_start(c.ev))
            r->resume.ineligible = true; /* tool_use, thinking, a second block, ... */
    } else if (is(&c, "content_block_delta")) {
        if ((d = text_delta(c.ev))) {
            struct bsc_str t = string_of(bsc_json_get(d, "text"));

            resume__note_sent(r, t.p, t.len);
        } else {
            r->resume.ineligible = true; /* input_json, thinking, citations, ... */
        }
    } else if (is(&c, "content_block_stop")) {
        r->resume.ends_sent |= END_BLOCK_STOP;
    } else if (is(&c, "message_delta")) {
        r->resume.ends_sent |= END_MESSAGE_DELTA;
    } else if (!is(&c, "message_start") && !is(&c, "ping") && !is(&c, "message_stop")) {
        r->resume.ineligible = true; /* an event this gateway cannot carry across a seam */
    }
    json_object_put(c.ev);
}

/* Appends the carrier of <ev> named <name>. */
static enum bsc_err emit_carrier(struct bsc_buf *out, struct bsc_str name, struct json_object *ev)
{
    const char *s = json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN |
                                                           JSON_C_TO_STRING_NOSLASHESCAPE);

    return s ? bsc_buf_appendf(out,
                               "data: {\"bascule_native\":\"%.*s\",\"choices\":[],"
                               "\"data\":%s}\n\n",
                               BSC_STR_FMT(name), s)
             : BSC_ENOMEM;
}

/* The passed text as a shadow frame: the router's readers (the checks) see what the client
 * gets; the client dialect skips it. */
static enum bsc_err emit_shadow(struct bsc_buf *out, struct bsc_str text)
{
    enum bsc_err err = bsc_buf_append_cstr(out, "data: {\"bascule_shadow\":1,\"choices\":[{"
                                                "\"index\":0,\"delta\":{\"content\":");

    if (!err)
        err = bsc_buf_append_json_str(out, text);
    return err ? err : bsc_buf_append_cstr(out, "}}]}\n\n");
}

/* A text delta of the continuation: held while a replay covers what was sent, then its new
 * part passes, at index 0. */
static enum bsc_err pass_delta(struct request *r, const struct carrier *c, struct bsc_buf *out)
{
    struct json_object *d = text_delta(c->ev), *rest;
    struct bsc_str t;
    size_t from;
    enum bsc_err err;

    if (!d)
        return BSC_EINVAL; /* a tool call, thinking, citations: never spliced */
    t = string_of(bsc_json_get(d, "text"));
    err = resume__pass_text(r, t, &from);
    if (err || from == t.len)
        return err;
    if (r->resume.ends_sent)
        return BSC_EINVAL; /* more text than the block the client saw closed: another answer */
    if (from) {
        rest = json_object_new_string_len(t.p + from, (int)(t.len - from));
        if (!rest)
            return BSC_ENOMEM;
        json_object_object_add(d, "text", rest); /* frees the old text: <t> is gone */
        t = string_of(rest);
    }
    err = resume__seam(r);
    if (!err)
        err = emit_carrier(out, c->name, c->ev);
    return err ? err : emit_shadow(out, t);
}

static int64_t count_of(struct json_object *o, const char *key)
{
    struct json_object *v = bsc_json_get_type(o, key, json_type_int);

    return v && json_object_get_int64(v) > 0 ? json_object_get_int64(v) : 0;
}

/* The message_delta: its usage becomes every attempt's, the client's one message counting
 * all the tokens it cost. */
static enum bsc_err pass_usage(struct request *r, const struct carrier *c, struct bsc_buf *out)
{
    struct json_object *u = bsc_json_get_type(c->ev, "usage", json_type_object);
    const struct prov_usage *p = &r->resume.prior;
    int64_t in = r->resume.cont_input, prior_in = resume__prior_fresh_input(r);
    enum bsc_err err;

    if (!u) {
        u = json_object_new_object();
        if (!u)
            return BSC_ENOMEM;
        json_object_object_add(c->ev, "usage", u);
    }
    if (bsc_json_get_type(u, "input_tokens", json_type_int))
        in = count_of(u, "input_tokens"); /* a newer API says it here as well */
    json_object_object_add(u, "output_tokens",
                           json_object_new_int64((p->output_tokens > 0 ? p->output_tokens : 0) +
                                                 count_of(u, "output_tokens")));
    if (in >= 0 || prior_in > 0)
        json_object_object_add(u, "input_tokens",
                               json_object_new_int64(prior_in + (in > 0 ? in : 0)));
    err = resume__seam(r);
    return err ? err : emit_carrier(out, c->name, c->ev);
}

/* An event that passes as it is once the continuation passes: after the cover. One the
 * client has already (<end> in ends_sent) is not sent twice. */
static enum bsc_err pass_whole(struct request *r, struct bsc_str f, unsigned end,
                               struct bsc_buf *out)
{
    enum bsc_err err;

    if (!resume__passing(r))
        return BSC_EINVAL; /* the replay ended before it covered what was sent */
    if (r->resume.ends_sent & end)
        return BSC_OK;
    err = resume__seam(r);
    if (!err)
        err = bsc_buf_append_cstr(out, "data: ");
    if (!err)
        err = bsc_buf_append_str(out, f);
    return err ? err : bsc_buf_append(out, "\n\n", 2);
}

/* The continuation's own input count, for the message_delta (message_start is dropped). */
static void note_input(struct request *r, struct json_object *ev)
{
    struct json_object *u = bsc_json_get(bsc_json_get(ev, "message"), "usage");

    if (bsc_json_get_type(u, "input_tokens", json_type_int))
        r->resume.cont_input = count_of(u, "input_tokens");
}

enum bsc_err resume__anth_frame(struct request *r, struct bsc_str f, struct bsc_buf *out)
{
    struct carrier c;
    enum bsc_err err = BSC_OK;

    if (bsc_str_starts(f, shadow_head))
        return BSC_OK; /* its own translation dropped: passed text gets a shadow of its own */
    if (!read_carrier(f, &c)) {
        err = BSC_EINVAL; /* not Anthropic's events: nothing to splice to this stream */
    } else if (is(&c, "message_start")) {
        note_input(r, c.ev); /* the client has its message: this one is not announced */
    } else if (is(&c, "content_block_start")) {
        err = text_block_start(c.ev) ? BSC_OK : BSC_EINVAL; /* the client's block goes on */
    } else if (is(&c, "content_block_delta")) {
        err = pass_delta(r, &c, out);
    } else if (is(&c, "content_block_stop")) {
        err = block_index(c.ev) == 0 ? pass_whole(r, f, END_BLOCK_STOP, out) : BSC_EINVAL;
    } else if (is(&c, "message_delta")) {
        err = !resume__passing(r)                       ? BSC_EINVAL
              : r->resume.ends_sent & END_MESSAGE_DELTA ? BSC_OK /* the client has one */
                                                        : pass_usage(r, &c, out);
    } else if (is(&c, "message_stop")) {
        err = pass_whole(r, f, 0, out);
    } /* ping, and event types the API may add: dropped, as clients are asked to ignore them */
    json_object_put(c.ev);
    return err;
}

/* Whether the array <msgs> ends with a message that is not the assistant's (a client's own
 * prefill would merge with ours into one turn: replay is exact instead). */
static bool ends_with_user_turn(struct bsc_str msgs)
{
    struct json_object *arr = bsc_json_parse_whole(msgs, 64);
    size_t n = arr && json_object_is_type(arr, json_type_array) ? json_object_array_length(arr) : 0;
    const char *role = n ? bsc_json_get_str(bsc_json_idx(arr, n - 1), "role") : NULL;
    bool ok = role && strcmp(role, "assistant") != 0;

    json_object_put(arr);
    return ok;
}

enum bsc_err resume__anth_prefill(struct request *r)
{
    const struct prov_native *n = &r->input.native;
    struct resume *s = &r->resume;
    struct bsc_buf *b = &s->native_body;
    struct bsc_str msgs;
    size_t at, added, model_at;
    enum bsc_err err;

    if (!bsc_json_member_span(n->body, BSC_STR("messages"), &msgs) || msgs.len < 2 ||
        msgs.p[msgs.len - 1] != ']' || !ends_with_user_turn(msgs))
        return BSC_EINVAL;
    /* The client's bytes, with the message spliced in before the array's closing bracket:
     * everything else it said reaches the target as it wrote it. */
    at = (size_t)(msgs.p + msgs.len - 1 - n->body.p);
    bsc_buf_reset(b);
    err = bsc_buf_append(b, n->body.p, at);
    if (!err)
        err = bsc_buf_append_cstr(b, ",{\"role\":\"assistant\",\"content\":");
    if (!err)
        err = bsc_buf_append_json_str(b, bsc_buf_str(&s->sent));
    if (!err)
        err = bsc_buf_append_char(b, '}');
    added = b->len - at;
    if (!err)
        err = bsc_buf_append(b, n->body.p + at, n->body.len - at);
    if (err)
        return err;
    model_at = (size_t)(n->model_span.p - n->body.p);
    if (model_at > at)
        model_at += added;
    s->native = *n;
    s->native.body = bsc_buf_str(b);
    s->native.model_span = bsc_str_make(b->p + model_at, n->model_span.len);
    s->native_prefill = true;
    return BSC_OK;
}
