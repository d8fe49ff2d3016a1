/* SPDX-License-Identifier: MIT */
/* anthropic_down.c -- the answer side of POST /v1/messages: the router's OpenAI
 * chat.completion, chunk stream and errors become Anthropic's message object, its event
 * stream (message_start, content blocks, message_delta, message_stop) and its error body.
 * JSON is written by hand into the caller's bounded buffer; the OpenAI side is parsed
 * with json-c and only read. An answer from an anthropic target that got the client's own
 * bytes arrives with the upstream's message (or events) carried whole: those go out
 * unchanged. It never sees the request (stop sequences, tools), so what it cannot know is
 * documented in docs/internals/anthropic-inbound.md. */
#include <stdint.h>
#include <string.h>

#include "api/anthropic_down.h"
#include "api/xlate.h"
#include "core/json_get.h"
#include "core/json_parse.h"
#include "core/json_scan.h"
#include "providers/provider.h"

#define ANTH_MAX_TOOLS 128 /* tool calls in one streamed answer (OpenAI index 0..127) */
#define ANTH_ID_MAX    160 /* msg_/toolu_ ids we make; longer upstream ids are cut */

/* ---- a JSON writer with a sticky error: one check at the end, all-or-nothing ---- */

struct jw {
    struct bsc_buf *b;
    size_t start; /* <b>'s length before this unit: restored on error */
    enum bsc_err err;
};

static void jw_begin(struct jw *w, struct bsc_buf *b)
{
    w->b = b;
    w->start = b->len;
    w->err = BSC_OK;
}

static void jw_lit(struct jw *w, const char *s)
{
    if (!w->err)
        w->err = bsc_buf_append_cstr(w->b, s);
}

static void jw_str(struct jw *w, struct bsc_str s)
{
    if (!w->err)
        w->err = bsc_buf_append_json_str(w->b, s);
}

/* A JSON string, or null when <s> is NULL. */
static void jw_cstr_or_null(struct jw *w, const char *s)
{
    if (s)
        jw_str(w, bsc_str_cstr(s));
    else
        jw_lit(w, "null");
}

static void jw_i64(struct jw *w, int64_t v)
{
    if (!w->err)
        w->err = bsc_buf_appendf(w->b, "%lld", (long long)v);
}

static void jw_json(struct jw *w, struct json_object *o)
{
    if (!w->err)
        w->err = prov_append_json(w->b, o);
}

/* Ends the unit: on error <b> is as it was at jw_begin(). */
static enum bsc_err jw_end(struct jw *w)
{
    if (w->err) {
        w->b->len = w->start;
        if (w->b->p)
            w->b->p[w->start] = '\0';
    }
    return w->err;
}

/* An SSE event: "event: <name>\ndata: " ... "\n\n". Compact JSON escapes every line
 * break, so the data always fits one data line. */
static void ev_begin(struct jw *w, const char *name)
{
    jw_lit(w, "event: ");
    jw_lit(w, name);
    jw_lit(w, "\ndata: ");
}

static void ev_end(struct jw *w)
{
    jw_lit(w, "\n\n");
}

/* ---- reading the OpenAI side (never trusted: every type is checked) ---- */

static struct bsc_str get_str(struct json_object *o, const char *key)
{
    struct json_object *v = bsc_json_get(o, key);

    if (!v || !json_object_is_type(v, json_type_string))
        return BSC_STR_NULL;
    return bsc_str_make(json_object_get_string(v), (size_t)json_object_get_string_len(v));
}

/* The choice with index 0 (or the first when none says its index), or NULL. */
static struct json_object *first_choice(struct json_object *root)
{
    struct json_object *choices = bsc_json_get(root, "choices");
    size_t n;

    if (!choices || !json_object_is_type(choices, json_type_array))
        return NULL;
    n = json_object_array_length(choices);
    for (size_t i = 0; i < n; i++) {
        struct json_object *c = json_object_array_get_idx(choices, i);
        if (api__json_count(c, "index") <= 0 && json_object_is_type(c, json_type_object))
            return c;
    }
    return NULL;
}

/* Parses <s> as one JSON value with nothing but whitespace after it. New ref or NULL. */
static struct json_object *parse_whole(struct bsc_str s)
{
    return bsc_json_parse_whole(s, 64);
}

static bool is_blank(struct bsc_str s)
{
    for (size_t i = 0; i < s.len; i++) {
        if (s.p[i] != ' ' && s.p[i] != '\t' && s.p[i] != '\n' && s.p[i] != '\r')
            return false;
    }
    return true;
}

/* ---- shared pieces ---- */

/* Anthropic's input_tokens exclude the cache reads and writes (docs/configuration.md "Cost"),
 * OpenAI's prompt_tokens include them. <write> is the cache writes when the upstream said
 * (an OpenAI usage object never does: they are then in input_tokens). */
static void put_usage_w(struct jw *w, const struct api_usage *u, int64_t write)
{
    int64_t cached = u->cached, left = u->input - cached;

    write = write > 0 && write <= left ? write : 0;
    jw_lit(w, "{\"input_tokens\":");
    jw_i64(w, left - write);
    jw_lit(w, ",\"cache_creation_input_tokens\":");
    jw_i64(w, write);
    jw_lit(w, ",\"cache_read_input_tokens\":");
    jw_i64(w, cached);
    jw_lit(w, ",\"output_tokens\":");
    jw_i64(w, u->output);
    jw_lit(w, "}");
}

static void put_usage(struct jw *w, const struct api_usage *u)
{
    put_usage_w(w, u, 0);
}

/* "msg_" + the OpenAI id without its "chatcmpl-" prefix, else + the request id; an id that
 * already is a message id (an Anthropic upstream's, through the adapter) is kept whole. */
static void put_msg_id(struct jw *w, struct bsc_str oai_id, const char *request_id)
{
    char id[ANTH_ID_MAX];
    struct bsc_str pre = BSC_STR("chatcmpl-");

    if (bsc_str_starts(oai_id, BSC_STR("msg_")) && oai_id.len > 4) {
        oai_id.p += 4;
        oai_id.len -= 4;
    } else if (bsc_str_starts(oai_id, pre)) {
        oai_id.p += pre.len;
        oai_id.len -= pre.len;
    }
    if (oai_id.len > sizeof(id) - 5) { /* cut, but never inside a UTF-8 character */
        oai_id.len = sizeof(id) - 5;
        while (oai_id.len && ((unsigned char)oai_id.p[oai_id.len] & 0xc0) == 0x80)
            oai_id.len--;
    }
    if (oai_id.len)
        snprintf(id, sizeof(id), "msg_%.*s", BSC_STR_FMT(oai_id));
    else
        snprintf(id, sizeof(id), "msg_%s", request_id ? request_id : "bascule");
    jw_str(w, bsc_str_cstr(id));
}

/* A tool_use id: the upstream's, else one made from the request id and the call's index. */
static void put_tool_id(struct jw *w, struct bsc_str id, const char *request_id, size_t k)
{
    char made[ANTH_ID_MAX];

    if (id.len) {
        jw_str(w, id);
        return;
    }
    snprintf(made, sizeof(made), "toolu_%s_%zu", request_id ? request_id : "bascule", k);
    jw_str(w, bsc_str_cstr(made));
}

/* Maps the OpenAI finish_reason. "stop" becomes tool_use when the answer has tool calls
 * (servers that say stop there), stop_sequence when the upstream named the sequence, and
 * refusal when the answer was a refusal. */
static const char *stop_reason(struct bsc_str finish, bool has_tools, bool refusal, bool stop_seq)
{
    if (bsc_str_eq(finish, BSC_STR("length")))
        return "max_tokens";
    if (bsc_str_eq(finish, BSC_STR("tool_calls")) || bsc_str_eq(finish, BSC_STR("function_call")))
        return "tool_use";
    if (bsc_str_eq(finish, BSC_STR("content_filter")) || refusal)
        return "refusal";
    if (has_tools)
        return "tool_use";
    if (stop_seq)
        return "stop_sequence";
    return "end_turn";
}

/* vLLM and some compatible servers put the matched stop string in choices[].stop_reason. */
static struct bsc_str matched_stop(struct json_object *choice)
{
    return get_str(choice, "stop_reason");
}

/* ---- errors ---- */

/* The Anthropic error body of <e> (dialect/error.c), inside the unit of <w>. */
static void put_error(struct jw *w, const struct reply_error *e, const char *request_id)
{
    struct dialect_error d = reply_error_view(e, request_id);

    if (!w->err)
        w->err = dialect_anthropic_error(&d, w->b);
}

static enum bsc_err error_body(const struct reply_error *e, const char *request_id,
                               struct bsc_buf *out)
{
    struct jw w;

    jw_begin(&w, out);
    put_error(&w, e, request_id);
    return jw_end(&w);
}

/* ---- the non-stream answer ---- */

/* tool_use "input": the arguments object; "" or blanks mean {}; anything that is not a
 * JSON object is kept, untouched, as {"_raw": "<arguments>"} so nothing is lost. */
static void put_tool_input(struct jw *w, struct json_object *args)
{
    struct bsc_str s;
    struct json_object *o;

    if (args && json_object_is_type(args, json_type_object)) {
        jw_json(w, args); /* some compatible servers send an object, not a string */
        return;
    }
    s = args && json_object_is_type(args, json_type_string)
            ? bsc_str_make(json_object_get_string(args), (size_t)json_object_get_string_len(args))
            : BSC_STR_NULL;
    if (is_blank(s)) {
        jw_lit(w, "{}");
        return;
    }
    o = parse_whole(s);
    if (o && json_object_is_type(o, json_type_object)) {
        jw_json(w, o);
    } else {
        jw_lit(w, "{\"_raw\":");
        jw_str(w, s);
        jw_lit(w, "}");
    }
    json_object_put(o);
}

/* The text of message.content: a string, or an array of text parts (some servers). */
static void put_text_blocks(struct jw *w, struct json_object *content, bool *comma)
{
    if (content && json_object_is_type(content, json_type_string)) {
        if (json_object_get_string_len(content) == 0)
            return;
        jw_lit(w, *comma ? ",{\"type\":\"text\",\"text\":" : "{\"type\":\"text\",\"text\":");
        jw_str(w, bsc_str_make(json_object_get_string(content),
                               (size_t)json_object_get_string_len(content)));
        jw_lit(w, "}");
        *comma = true;
        return;
    }
    if (!content || !json_object_is_type(content, json_type_array))
        return;
    for (size_t i = 0; i < json_object_array_length(content); i++) {
        struct json_object *part = json_object_array_get_idx(content, i);
        struct bsc_str text = get_str(part, "text");
        if (!bsc_str_eq(get_str(part, "type"), BSC_STR("text")) || !text.len)
            continue;
        jw_lit(w, *comma ? ",{\"type\":\"text\",\"text\":" : "{\"type\":\"text\",\"text\":");
        jw_str(w, text);
        jw_lit(w, "}");
        *comma = true;
    }
}

/* Appends the tool_use blocks; returns how many. */
static size_t put_tool_blocks(struct jw *w, struct json_object *calls, const char *request_id,
                              bool *comma)
{
    size_t n = 0;

    if (!calls || !json_object_is_type(calls, json_type_array))
        return 0;
    for (size_t i = 0; i < json_object_array_length(calls); i++) {
        struct json_object *call = json_object_array_get_idx(calls, i);
        struct json_object *fn = bsc_json_get(call, "function");
        if (!fn)
            continue;
        jw_lit(w, *comma ? ",{\"type\":\"tool_use\",\"id\":" : "{\"type\":\"tool_use\",\"id\":");
        put_tool_id(w, get_str(call, "id"), request_id, i);
        jw_lit(w, ",\"name\":");
        jw_str(w, get_str(fn, "name"));
        jw_lit(w, ",\"input\":");
        put_tool_input(w, bsc_json_get(fn, "arguments"));
        jw_lit(w, "}");
        *comma = true;
        n++;
    }
    return n;
}

/* The model to show: the upstream model the answer came from (docs/configuration.md, "The
 * model in answers"), else the route the client named. */
static struct bsc_str shown_model(struct json_object *root, const char *route)
{
    struct bsc_str m = get_str(root, "model");

    return m.len ? m : bsc_str_cstr(route ? route : "");
}

/* The client's request went to Anthropic as it was (prov_call.native): the adapter put the
 * upstream's own message beside the OpenAI form the router read; it goes out unchanged. */
static bool native_answer(struct bsc_str body, struct bsc_buf *out, enum bsc_err *err)
{
    struct bsc_str v;

    if (!bsc_str_starts(body, BSC_STR("{\"bascule_native\":")))
        return false;
    *err = bsc_json_member_span(body, BSC_STR("bascule_native"), &v)
               ? bsc_buf_append(out, v.p, v.len)
               : BSC_EPARSE;
    return true;
}

static enum bsc_err map_response(struct bsc_str openai_json, const struct down_ctx *ctx,
                                 struct bsc_buf *out)
{
    struct json_object *root, *choice, *msg;
    struct api_usage usage = {0};
    struct bsc_str refusal, stop;
    bool comma = false;
    size_t n_tools;
    enum bsc_err nerr;
    struct jw w;

    if (ctx->native && native_answer(openai_json, out, &nerr))
        return nerr;
    root = parse_whole(openai_json);
    if (!root || !json_object_is_type(root, json_type_object)) {
        json_object_put(root);
        return BSC_EPARSE;
    }
    choice = first_choice(root);
    msg = bsc_json_get(choice, "message");
    refusal = get_str(msg, "refusal");
    stop = matched_stop(choice);
    api__usage_read(bsc_json_get(root, "usage"), &usage);

    jw_begin(&w, out);
    jw_lit(&w, "{\"id\":");
    put_msg_id(&w, get_str(root, "id"), ctx->request_id);
    jw_lit(&w, ",\"type\":\"message\",\"role\":\"assistant\",\"model\":");
    jw_str(&w, shown_model(root, ctx->model));
    jw_lit(&w, ",\"content\":[");
    put_text_blocks(&w, bsc_json_get(msg, "content"), &comma);
    if (refusal.len) {
        jw_lit(&w, comma ? ",{\"type\":\"text\",\"text\":" : "{\"type\":\"text\",\"text\":");
        jw_str(&w, refusal);
        jw_lit(&w, "}");
        comma = true;
    }
    n_tools = put_tool_blocks(&w, bsc_json_get(msg, "tool_calls"), ctx->request_id, &comma);
    jw_lit(&w, "],\"stop_reason\":\"");
    jw_lit(&w, stop_reason(get_str(choice, "finish_reason"), n_tools > 0, refusal.len > 0,
                           stop.len > 0));
    jw_lit(&w, "\",\"stop_sequence\":");
    if (stop.len && n_tools == 0 && !refusal.len)
        jw_str(&w, stop);
    else
        jw_lit(&w, "null");
    jw_lit(&w, ",\"usage\":");
    put_usage(&w, &usage);
    jw_lit(&w, "}");
    json_object_put(root);
    return jw_end(&w);
}

/* ---- the stream ---- */

enum blk { BLK_NONE = 0, BLK_TEXT, BLK_TOOL, BLK_COUNT };

struct anth_stream {
    char *model;      /* owned copy of ctx->model; NULL on ENOMEM (then "") */
    char *request_id; /* owned copy of ctx->request_id; may be NULL */
    char *stop_seq;   /* owned: the matched stop string, when the upstream named it */
    char finish[32];  /* the OpenAI finish_reason seen, "" until then */
    bool started;     /* message_start sent */
    bool ended;       /* message_stop or an error event sent: nothing more goes out */
    bool refusal;     /* the text came as a refusal */
    enum blk open;    /* the kind of the open content block */
    unsigned open_index;
    unsigned next_index;                 /* the next content block's index */
    unsigned n_tools;                    /* tool calls started */
    unsigned last_tool;                  /* the OpenAI index of the latest tool fragment */
    unsigned tool_block[ANTH_MAX_TOOLS]; /* OpenAI tool index -> block index + 1; 0 = none */
    struct api_usage usage;
    struct api_usage start; /* the upstream's prompt count before the first frame, if any */
    int64_t start_write;    /* ... and the cache writes it named */
    bool native;        /* ctx->native: the frames carry the upstream's own events */
};

static void stream_init(void *vst, const struct down_ctx *ctx)
{
    struct anth_stream *st = vst;

    if (ctx->input_tokens >= 0) {
        st->start = (struct api_usage){.seen = true, .input = ctx->input_tokens,
                                       .cached = ctx->cached_tokens};
        if (st->start.cached > st->start.input)
            st->start.cached = 0;
        st->start_write = ctx->cache_write_tokens;
    }
    st->native = ctx->native;
    st->model = bsc_str_dup(bsc_str_cstr(ctx->model ? ctx->model : ""));
    st->request_id = ctx->request_id ? bsc_str_dup(bsc_str_cstr(ctx->request_id)) : NULL;
}

static void stream_cleanup(void *vst)
{
    struct anth_stream *st = vst;

    BSC_FREE(st->model);
    BSC_FREE(st->request_id);
    BSC_FREE(st->stop_seq);
}

static void put_message_start(struct jw *w, struct anth_stream *st, struct bsc_str oai_id,
                              struct bsc_str model)
{
    struct api_usage u = st->usage.seen ? st->usage : st->start;
    int64_t write = st->usage.seen ? 0 : st->start_write;

    u.output = 0; /* the output count goes in message_delta */
    /* Clients (LangChain) read the input tokens from message_start alone: it carries the
     * upstream's own count when the upstream gave it before the first frame (Gemini), else
     * 0 -- never an estimate a client would take for the real count. message_delta always
     * carries the upstream's final count (docs/internals/anthropic-inbound.md). */
    if (!u.seen)
        u = (struct api_usage){0};
    ev_begin(w, "message_start");
    jw_lit(w, "{\"type\":\"message_start\",\"message\":{\"id\":");
    put_msg_id(w, oai_id, st->request_id);
    jw_lit(w, ",\"type\":\"message\",\"role\":\"assistant\",\"model\":");
    jw_str(w, model.len ? model : bsc_str_cstr(st->model ? st->model : ""));
    jw_lit(w, ",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":");
    put_usage_w(w, &u, write);
    jw_lit(w, "}}");
    ev_end(w);
    st->started = true;
}

static void close_block(struct jw *w, struct anth_stream *st)
{
    if (st->open == BLK_NONE)
        return;
    ev_begin(w, "content_block_stop");
    jw_lit(w, "{\"type\":\"content_block_stop\",\"index\":");
    jw_i64(w, st->open_index);
    jw_lit(w, "}");
    ev_end(w);
    st->open = BLK_NONE;
}

/* Opens block <kind> with the next index: closes the open one, writes the start event's
 * head up to the content_block object, which the caller writes and closes with "}". */
static void open_block(struct jw *w, struct anth_stream *st, enum blk kind)
{
    close_block(w, st);
    st->open = kind;
    st->open_index = st->next_index++;
    ev_begin(w, "content_block_start");
    jw_lit(w, "{\"type\":\"content_block_start\",\"index\":");
    jw_i64(w, st->open_index);
    jw_lit(w, ",\"content_block\":");
}

static void put_delta_head(struct jw *w, unsigned index, const char *type)
{
    ev_begin(w, "content_block_delta");
    jw_lit(w, "{\"type\":\"content_block_delta\",\"index\":");
    jw_i64(w, index);
    jw_lit(w, ",\"delta\":{\"type\":\"");
    jw_lit(w, type);
    jw_lit(w, "\",");
}

static void put_text(struct jw *w, struct anth_stream *st, struct bsc_str text)
{
    if (st->open != BLK_TEXT) {
        open_block(w, st, BLK_TEXT);
        jw_lit(w, "{\"type\":\"text\",\"text\":\"\"}}");
        ev_end(w);
    }
    put_delta_head(w, st->open_index, "text_delta");
    jw_lit(w, "\"text\":");
    jw_str(w, text);
    jw_lit(w, "}}");
    ev_end(w);
}

/* Which OpenAI tool index a fragment is for: its "index"; without one (some compatible
 * servers send each call whole), a fragment with an id starts a new call and one without
 * continues the latest. Returns false when out of range. */
static bool tool_index(struct anth_stream *st, struct json_object *tc, unsigned *k)
{
    struct json_object *v = bsc_json_get(tc, "index");
    int64_t i;

    if (v && json_object_is_type(v, json_type_int))
        i = json_object_get_int64(v);
    else if (get_str(tc, "id").len)
        i = st->n_tools;
    else
        i = st->n_tools ? st->last_tool : 0;
    if (i < 0 || i >= ANTH_MAX_TOOLS)
        return false;
    *k = (unsigned)i;
    return true;
}

/* One entry of delta.tool_calls: its first fragment opens a tool_use block (id, name,
 * input {}), every argument piece becomes an input_json_delta. A fragment for an earlier
 * call whose block was already closed (an upstream interleaving calls, which OpenAI does
 * not do) still goes to that block's index: nothing is dropped, the SDKs accept it. */
static void put_tool_fragment(struct jw *w, struct anth_stream *st, struct json_object *tc)
{
    struct json_object *fn = bsc_json_get(tc, "function"), *args;
    struct bsc_str piece = BSC_STR_NULL;
    unsigned k, index;

    if (!tool_index(st, tc, &k)) {
        if (!w->err)
            w->err = BSC_ELIMIT;
        return;
    }
    st->last_tool = k;
    if (!st->tool_block[k]) {
        open_block(w, st, BLK_TOOL);
        st->tool_block[k] = st->open_index + 1;
        st->n_tools++;
        jw_lit(w, "{\"type\":\"tool_use\",\"id\":");
        put_tool_id(w, get_str(tc, "id"), st->request_id, k);
        jw_lit(w, ",\"name\":");
        jw_str(w, get_str(fn, "name"));
        jw_lit(w, ",\"input\":{}}}");
        ev_end(w);
    }
    index = st->tool_block[k] - 1;
    args = bsc_json_get(fn, "arguments");
    if (args && json_object_is_type(args, json_type_string))
        piece =
            bsc_str_make(json_object_get_string(args), (size_t)json_object_get_string_len(args));
    else if (args && json_object_is_type(args, json_type_object))
        piece = bsc_str_cstr(json_object_to_json_string_ext(args, JSON_C_TO_STRING_PLAIN));
    if (!piece.len)
        return;
    put_delta_head(w, index, "input_json_delta");
    jw_lit(w, "\"partial_json\":");
    jw_str(w, piece);
    jw_lit(w, "}}");
    ev_end(w);
}

static void put_choice(struct jw *w, struct anth_stream *st, struct json_object *choice)
{
    struct json_object *delta = bsc_json_get(choice, "delta"),
                       *calls = bsc_json_get(delta, "tool_calls");
    struct bsc_str text = get_str(delta, "content"), refusal = get_str(delta, "refusal");
    struct bsc_str finish = get_str(choice, "finish_reason"), stop = matched_stop(choice);

    if (text.len)
        put_text(w, st, text);
    if (refusal.len) {
        put_text(w, st, refusal);
        st->refusal = true;
    }
    if (calls && json_object_is_type(calls, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(calls); i++)
            put_tool_fragment(w, st, json_object_array_get_idx(calls, i));
    }
    if (finish.len) {
        snprintf(st->finish, sizeof(st->finish), "%.*s", BSC_STR_FMT(finish));
        close_block(w, st);
    }
    if (stop.len && !st->stop_seq) {
        st->stop_seq = bsc_str_dup(stop);
        if (!st->stop_seq && !w->err)
            w->err = BSC_ENOMEM;
    }
}

/* An OpenAI in-band error frame ({"error":{...}}) that reached us: it ends the stream. */
static void put_inband_error(struct jw *w, struct anth_stream *st, struct json_object *err)
{
    /* json-c strings are NUL-terminated, so the slices' pointers are C strings. */
    struct reply_error e = {
        .type = get_str(err, "type").p,
        .code = get_str(err, "code").p,
        .message = get_str(err, "message").p,
        .retry_after_ms = -1,
    };

    if (!e.message)
        e.message = "the upstream stream failed";
    ev_begin(w, "error");
    put_error(w, &e, st->request_id);
    ev_end(w);
    st->ended = true;
}

/* An upstream Anthropic event carried whole by the adapter in native mode,
 * {"bascule_native":"<name>","choices":[],"data":<event>}: written out as the event it was. */
static enum bsc_err native_event(struct anth_stream *st, struct bsc_str c, struct bsc_buf *out)
{
    static const struct bsc_str head = BSC_STR("{\"bascule_native\":\"");
    static const struct bsc_str mid = BSC_STR("\",\"choices\":[],\"data\":");
    const char *q = memchr(c.p + head.len, '"', c.len - head.len);
    struct bsc_str name, data;
    size_t start = out->len;
    enum bsc_err err;

    if (!q || (size_t)(c.p + c.len - q) < mid.len + 2 || memcmp(q, mid.p, mid.len) != 0 ||
        c.p[c.len - 1] != '}')
        return BSC_EPARSE;
    name = bsc_str_make(c.p + head.len, (size_t)(q - c.p) - head.len);
    data = bsc_str_make(q + mid.len, (size_t)(c.p + c.len - 1 - (q + mid.len)));
    st->started = true;
    err = bsc_buf_appendf(out, "event: %.*s\ndata: %.*s\n\n", BSC_STR_FMT(name), BSC_STR_FMT(data));
    if (err)
        out->len = start;
    return err;
}

static enum bsc_err stream_chunk(void *vst, struct bsc_str chunk_json, struct bsc_buf *out)
{
    struct anth_stream *st = vst;
    struct json_object *root, *err;
    struct jw w;

    if (st->ended || bsc_str_eq(bsc_str_trim(chunk_json), BSC_STR("[DONE]")))
        return BSC_OK;
    /* Native mode: the OpenAI frames are the router's shadows; the events go out whole. */
    if (st->native && bsc_str_starts(chunk_json, BSC_STR("{\"bascule_shadow\":1,")))
        return BSC_OK;
    if (st->native && bsc_str_starts(chunk_json, BSC_STR("{\"bascule_native\":\"")))
        return native_event(st, chunk_json, out);
    root = parse_whole(chunk_json);
    if (!root || !json_object_is_type(root, json_type_object)) {
        json_object_put(root);
        return BSC_EPARSE;
    }
    jw_begin(&w, out);
    err = bsc_json_get(root, "error");
    if (err && json_object_is_type(err, json_type_object)) {
        put_inband_error(&w, st, err);
    } else {
        api__usage_read(bsc_json_get(root, "usage"), &st->usage);
        if (!st->started)
            put_message_start(&w, st, get_str(root, "id"), get_str(root, "model"));
        put_choice(&w, st, first_choice(root));
    }
    json_object_put(root);
    return jw_end(&w);
}

static enum bsc_err stream_done(void *vst, struct bsc_buf *out)
{
    struct anth_stream *st = vst;
    struct bsc_str finish = bsc_str_cstr(st->finish);
    bool stop_seq = st->stop_seq != NULL;
    const char *reason = stop_reason(finish, st->n_tools > 0, st->refusal, stop_seq);
    struct jw w;

    if (st->ended)
        return BSC_OK;
    jw_begin(&w, out);
    if (!st->started)
        put_message_start(&w, st, BSC_STR_NULL, BSC_STR_NULL);
    close_block(&w, st);
    ev_begin(&w, "message_delta");
    jw_lit(&w, "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"");
    jw_lit(&w, reason);
    jw_lit(&w, "\",\"stop_sequence\":");
    jw_cstr_or_null(&w, strcmp(reason, "stop_sequence") == 0 ? st->stop_seq : NULL);
    jw_lit(&w, "},\"usage\":");
    if (st->usage.seen) {
        put_usage(&w, &st->usage);
    } else {
        jw_lit(&w, "{\"output_tokens\":0}");
    }
    jw_lit(&w, "}");
    ev_end(&w);
    ev_begin(&w, "message_stop");
    jw_lit(&w, "{\"type\":\"message_stop\"}");
    ev_end(&w);
    st->ended = true;
    return jw_end(&w);
}

static enum bsc_err stream_error(void *vst, const struct reply_error *e, struct bsc_buf *out)
{
    struct anth_stream *st = vst;
    struct jw w;

    if (st->ended)
        return BSC_OK;
    jw_begin(&w, out);
    ev_begin(&w, "error");
    put_error(&w, e, st->request_id);
    ev_end(&w);
    st->ended = true;
    return jw_end(&w);
}

const struct down_ops api_anthropic_down = {
    .name = "anthropic",
    .map_response = map_response,
    .stream_size = sizeof(struct anth_stream),
    .stream_init = stream_init,
    .stream_chunk = stream_chunk,
    .stream_done = stream_done,
    .stream_error = stream_error,
    .stream_cleanup = stream_cleanup,
    .error_body = error_body,
};
