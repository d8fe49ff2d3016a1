/* SPDX-License-Identifier: MIT */
/* fuzz-libs: -lsqlite3 -lhiredis -lssl -lcrypto */
/* fuzz_anthropic_inbound.c -- libFuzzer target for the Anthropic-compatible surface
 * (api/anthropic.h): the /v1/messages request parser and translator, and the down_ops
 * that turn the router's OpenAI answers back into Anthropic's. No fuzz-sources line:
 * anthropic_messages.c also holds the HTTP handler, whose router and server symbols come
 * from the archive of every source (hence libcurl and sqlite3). Input layout:
 *   byte 0     bit 0 end the stream with stream_error instead of stream_done, bit 1 no
 *              request id, bit 2 no model name, bit 3 a small output bound, bits 4-7 the
 *              status of the error body
 *   the rest   used three ways: as a /v1/messages request body; as an OpenAI
 *              chat.completion; as OpenAI chunk events, one per line
 * Beyond "no crash, no leak, no UB" it aborts when an invariant breaks:
 *   - parse: BSC_OK gives an OpenAI request json-c reads back, whose "model" is the slice
 *     returned and whose "stream" is the flag; an error leaves nothing and says why;
 *     translating never changes the Anthropic request it reads (serialised before and
 *     after), and translating the same request twice gives the same bytes;
 *   - map_response: a JSON object of type "message" when BSC_OK; EPARSE only for input
 *     that is not a JSON object;
 *   - the stream: whole frames `event: <name>\ndata: <json>\n\n` whose data is a JSON
 *     object with "type" equal to <name>; message_start first (or an error), content
 *     block indexes dense from 0, a stop only for the open block, deltas only for started
 *     blocks, nothing after message_stop or error, stream_done ends with message_stop;
 *   - everything written is valid UTF-8 when the input is. Built and run by scripts/fuzz. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "core/compat.h"
#include "core/buf.h"
#include "core/json_parse.h"
#include "api/anthropic.h"
#include "api/anthropic_down.h"
#include "stream/utf8.h"

#define OUT_BIG (1u << 20)
#define OUT_SMALL 384u

static void die(const char *what)
{
    fprintf(stderr, "fuzz_anthropic_inbound: invariant broken: %s\n", what);
    abort();
}

/* Parses all of <s> (blanks around allowed) strictly; NULL when it is not one JSON value. */
static struct json_object *parse_all(struct bsc_str s)
{
    return bsc_json_parse_whole(s, JSON_TOKENER_DEFAULT_DEPTH * 8);
}

static const char *str_member(struct json_object *o, const char *k)
{
    struct json_object *v = NULL;

    if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, k, &v) ||
        !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

static int64_t int_member(struct json_object *o, const char *k)
{
    struct json_object *v = NULL;

    if (!o || !json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_int))
        return -1;
    return json_object_get_int64(v);
}

/* A serialisation that changes whenever the tree does (a new string each call). */
static char *dump(struct json_object *o)
{
    const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                          JSON_C_TO_STRING_NOSLASHESCAPE);
    char *copy = strdup(s ? s : "");

    if (!copy)
        die("out of memory");
    return copy;
}

/* ---- the request side ---- */

static void check_parse(struct bsc_str body)
{
    struct anth_req ar;
    char why[256];
    enum bsc_err err;

    memset(why, 'x', sizeof(why));
    err = api__anthropic_parse(body, &ar, why, sizeof(why));
    if (err == BSC_OK) {
        struct json_object *model = NULL, *stream = NULL, *msgs = NULL;
        char *text;
        struct json_object *back;

        if (!ar.openai || !json_object_is_type(ar.openai, json_type_object))
            die("parse gave no OpenAI object");
        if (!json_object_object_get_ex(ar.openai, "model", &model) ||
            !json_object_is_type(model, json_type_string) || ar.model.len == 0 ||
            ar.model.p != json_object_get_string(model) ||
            ar.model.len != (size_t)json_object_get_string_len(model))
            die("the model slice is not the request's model");
        if (!json_object_object_get_ex(ar.openai, "messages", &msgs) ||
            !json_object_is_type(msgs, json_type_array))
            die("the OpenAI request has no messages array");
        json_object_object_get_ex(ar.openai, "stream", &stream);
        if (ar.stream != (stream && json_object_is_type(stream, json_type_boolean) &&
                          json_object_get_boolean(stream)))
            die("the stream flag does not match the request");
        text = dump(ar.openai);
        if (!bsc_utf8_valid(text, strlen(text)))
            die("the OpenAI request is not valid UTF-8");
        back = parse_all(bsc_str_cstr(text));
        if (!back)
            die("the OpenAI request does not parse back");
        json_object_put(back);
        free(text);
        json_object_put(ar.openai);
    } else {
        if (err != BSC_EINVAL && err != BSC_ENOMEM)
            die("parse returned an undocumented error");
        if (ar.openai)
            die("a failed parse left an object");
        if (!memchr(why, '\0', sizeof(why)) || !why[0])
            die("a failed parse did not say why");
    }
}

/* The translator on a leniently parsed tree (no UTF-8 check): never mutates, deterministic. */
static void check_translate(struct bsc_str body)
{
    struct json_object *areq = parse_all(body), *a = NULL, *b = NULL;
    char why[256], *before, *after;
    enum bsc_err e1, e2;

    if (!areq)
        return;
    before = dump(areq);
    e1 = api__anthropic_to_openai(areq, &a, why, sizeof(why));
    after = dump(areq);
    if (strcmp(before, after) != 0)
        die("to_openai changed the Anthropic request");
    e2 = api__anthropic_to_openai(areq, &b, why, sizeof(why));
    if (e1 != e2)
        die("to_openai is not deterministic");
    if (e1 == BSC_OK) {
        char *da, *db;

        if (!a || !b)
            die("to_openai said OK without an object");
        da = dump(a);
        db = dump(b);
        if (strcmp(da, db) != 0)
            die("to_openai gave two different requests");
        free(da);
        free(db);
    } else if (a || b) {
        die("to_openai failed but gave an object");
    }
    json_object_put(a);
    json_object_put(b);
    free(before);
    free(after);
    json_object_put(areq);
}

/* ---- the answer side ---- */

static void check_map(struct bsc_str body, const struct down_ctx *ctx, size_t out_max, bool valid)
{
    struct bsc_buf out;
    struct json_object *in_obj = parse_all(body), *o;
    enum bsc_err err;

    bsc_buf_init(&out, out_max);
    err = api_anthropic_down.map_response(body, ctx, &out);
    if (err == BSC_OK) {
        o = parse_all(bsc_buf_str(&out));
        if (!o || !json_object_is_type(o, json_type_object))
            die("map_response wrote something that is not a JSON object");
        if (!str_member(o, "type") || strcmp(str_member(o, "type"), "message") != 0)
            die("map_response wrote no message");
        json_object_put(o);
        if (valid && !bsc_utf8_valid(out.p, out.len))
            die("map_response wrote invalid UTF-8");
    } else if (err == BSC_EPARSE) {
        if (in_obj && json_object_is_type(in_obj, json_type_object))
            die("map_response refused a JSON object");
        if (out.len)
            die("map_response failed but wrote");
    } else if (err != BSC_ELIMIT && err != BSC_ENOMEM) {
        die("map_response returned an undocumented error");
    } else if (out.len) {
        die("map_response failed but wrote");
    }
    json_object_put(in_obj);
    bsc_buf_cleanup(&out);
}

struct seq {
    bool started, ended, saw_delta_msg;
    int64_t n_blocks; /* content_block_start events so far */
    int64_t open;     /* the open block's index; -1 when none */
};

/* Checks the frames in [from, out->len): shape and the Anthropic event order. */
static void check_events(struct seq *q, const struct bsc_buf *out, size_t from, bool valid)
{
    const char *p = out->p ? out->p + from : "", *end = out->p ? out->p + out->len : p;

    while (p < end) {
        const char *nl1, *nl2;
        struct bsc_str name, data;
        struct json_object *o;
        const char *type;

        if ((size_t)(end - p) < 7 || memcmp(p, "event: ", 7) != 0)
            die("a frame does not start with \"event: \"");
        nl1 = memchr(p, '\n', (size_t)(end - p));
        if (!nl1 || (size_t)(end - nl1) < 7 || memcmp(nl1 + 1, "data: ", 6) != 0)
            die("an event line is not followed by a data line");
        nl2 = memchr(nl1 + 7, '\n', (size_t)(end - nl1 - 7));
        if (!nl2 || nl2 + 1 >= end || nl2[1] != '\n')
            die("a frame does not end with a blank line (or its data spans lines)");
        name = bsc_str_make(p + 7, (size_t)(nl1 - p - 7));
        data = bsc_str_make(nl1 + 7, (size_t)(nl2 - nl1 - 7));
        if (memchr(name.p, '\r', name.len) || memchr(data.p, '\r', data.len))
            die("a frame holds a CR");
        if (valid && (!bsc_utf8_valid(name.p, name.len) || !bsc_utf8_valid(data.p, data.len)))
            die("a frame is not valid UTF-8");
        o = parse_all(data);
        if (!o || !json_object_is_type(o, json_type_object))
            die("a frame's data is not a JSON object");
        type = str_member(o, "type");
        if (!type || !bsc_str_eq(name, bsc_str_cstr(type)))
            die("a frame's type differs from its event name");
        if (q->ended)
            die("an event after message_stop or error");
        if (strcmp(type, "error") == 0) {
            q->ended = true;
        } else if (!q->started && strcmp(type, "message_start") != 0) {
            die("the first event is not message_start");
        } else if (strcmp(type, "message_start") == 0) {
            if (q->started)
                die("a second message_start");
            q->started = true;
        } else if (strcmp(type, "content_block_start") == 0) {
            if (q->open >= 0)
                die("a block started while another is open");
            if (int_member(o, "index") != q->n_blocks)
                die("content block indexes are not dense");
            q->open = q->n_blocks++;
        } else if (strcmp(type, "content_block_delta") == 0) {
            int64_t i = int_member(o, "index");

            if (i < 0 || i >= q->n_blocks)
                die("a delta for a block never started");
            if (q->saw_delta_msg)
                die("a content delta after message_delta");
        } else if (strcmp(type, "content_block_stop") == 0) {
            if (q->open < 0 || int_member(o, "index") != q->open)
                die("a stop for a block that is not open");
            q->open = -1;
        } else if (strcmp(type, "message_delta") == 0) {
            if (q->open >= 0)
                die("message_delta with a block open");
            q->saw_delta_msg = true;
        } else if (strcmp(type, "message_stop") == 0) {
            if (!q->saw_delta_msg)
                die("message_stop without message_delta");
            q->ended = true;
        } else {
            die("an unknown event type");
        }
        json_object_put(o);
        p = nl2 + 2;
    }
}

static void check_stream(struct bsc_str body, const struct down_ctx *ctx, size_t out_max,
                         bool valid, bool end_with_error)
{
    const struct down_ops *d = &api_anthropic_down;
    void *st = calloc(1, d->stream_size ? d->stream_size : 1);
    struct seq q = {.open = -1};
    struct bsc_buf out;
    const char *p = body.p, *end = body.p + body.len;
    bool failed = false;
    enum bsc_err err;

    if (!st)
        die("out of memory");
    bsc_buf_init(&out, out_max);
    d->stream_init(st, ctx);
    while (p < end && !failed) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        struct bsc_str line = bsc_str_make(p, nl ? (size_t)(nl - p) : (size_t)(end - p));

        p = nl ? nl + 1 : end;
        if (line.len == 0)
            continue;
        err = d->stream_chunk(st, line, &out);
        if (err) {
            failed = true; /* the router fails the stream: stream_error ends it */
            if (err != BSC_EPARSE && err != BSC_ELIMIT && err != BSC_ENOMEM)
                die("stream_chunk returned an undocumented error");
        }
        check_events(&q, &out, 0, valid);
        bsc_buf_reset(&out); /* delivered */
    }
    if (failed || end_with_error) {
        struct reply_error e = {.status = 0,
                                .type = "server_error",
                                .message = "the upstream stream was interrupted",
                                .retry_after_ms = -1};

        err = d->stream_error(st, &e, &out);
        if (err == BSC_OK && !q.ended && out.len == 0)
            die("stream_error wrote nothing on a live stream");
    } else {
        err = d->stream_done(st, &out);
        if (err == BSC_OK && !q.ended) {
            check_events(&q, &out, 0, valid);
            if (!q.ended)
                die("stream_done did not end the stream");
            out.len = 0;
        }
    }
    if (err != BSC_OK && err != BSC_ELIMIT && err != BSC_ENOMEM)
        die("stream_done/error returned an undocumented error");
    check_events(&q, &out, 0, valid);
    d->stream_cleanup(st);
    free(st);
    bsc_buf_cleanup(&out);
}

static void check_error_body(struct bsc_str body, int status, const char *request_id)
{
    char msg[128], type[32];
    struct reply_error e = {.status = status, .retry_after_ms = -1};
    struct bsc_buf out;
    struct json_object *o;
    size_t n = body.len < sizeof(msg) - 1 ? body.len : sizeof(msg) - 1;

    memcpy(msg, body.p, n);
    msg[n] = '\0';
    snprintf(type, sizeof(type), "%.*s", (int)(n < 20 ? n : 20), msg);
    e.message = msg;
    e.type = type;
    e.code = n > 4 ? msg + 4 : NULL;
    if (status >= 500) {
        e.reason = "no_eligible_fallback";
        e.retry_after_ms = status;
    }
    bsc_buf_init(&out, OUT_BIG);
    if (api_anthropic_down.error_body(&e, request_id, &out) != BSC_OK)
        die("error_body failed within its bound");
    o = parse_all(bsc_buf_str(&out));
    if (!o || !str_member(o, "type") || strcmp(str_member(o, "type"), "error") != 0)
        die("error_body is not an Anthropic error object");
    json_object_put(o);
    bsc_buf_cleanup(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int statuses[] = {400, 401, 403, 404, 413, 429, 500, 503,
                                   529, 0,   200, 422, 402, 504, 408, 409};
    struct down_ctx ctx;
    struct bsc_str body;
    bool valid;
    size_t out_max;

    if (size < 1)
        return 0;
    body = bsc_str_make((const char *)data + 1, size - 1);
    valid = bsc_utf8_valid(body.p, body.len);
    ctx = (struct down_ctx){
        .request_id = data[0] & 2 ? NULL : "req_fuzz_01",
        .model = data[0] & 4 ? NULL : "claude-sonnet-4-5",
        .include_usage = false,
    };
    out_max = data[0] & 8 ? OUT_SMALL : OUT_BIG;

    check_parse(body);
    check_translate(body);
    check_map(body, &ctx, out_max, valid);
    check_stream(body, &ctx, out_max, valid, data[0] & 1);
    check_error_body(body, statuses[data[0] >> 4], ctx.request_id);
    return 0;
}
