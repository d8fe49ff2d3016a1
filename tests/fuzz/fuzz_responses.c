/* SPDX-License-Identifier: MIT */
/* fuzz-libs: -lsqlite3 -lhiredis -lssl -lcrypto */
/* fuzz_responses.c -- libFuzzer target for the Responses API surface (api/responses.h):
 * the request translator and the down_ops that turn the router's chat answers into a
 * Response and its typed events. No fuzz-sources line: responses.c also holds the HTTP
 * handler, whose router and store symbols come from the archive of every source. Input:
 *   byte 0     bit 0 end the stream with stream_error instead of stream_done, bit 1 no
 *              response arg, bit 2 a small output bound
 *   the rest   used three ways: as a Responses request (with itself as the item_reference
 *              map); as an OpenAI chat.completion; as OpenAI chunk events, one per line
 * Beyond "no crash, no leak, no UB" it aborts when an invariant breaks:
 *   - translate: BSC_OK gives a chat request with a non-empty messages array, the same bytes
 *     twice, never changes the request it reads; an error leaves nothing and says why;
 *   - map_response: a JSON object with object "response" when BSC_OK; EPARSE only for input
 *     that is not a JSON object;
 *   - the stream: whole frames `event: <type>\ndata: <json>\n\n` whose data has that "type"
 *     and sequence_number 0, 1, 2, ...; response.created first; nothing after
 *     response.completed, response.incomplete or response.failed. Built by scripts/fuzz. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "api/responses.h"
#include "core/buf.h"
#include "core/compat.h"
#include "core/json_parse.h"

#define OUT_BIG   (1u << 20)
#define OUT_SMALL 512u

static void die(const char *what)
{
    fprintf(stderr, "fuzz_responses: invariant broken: %s\n", what);
    abort();
}

static char *dump(struct json_object *o)
{
    char *copy = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                              JSON_C_TO_STRING_NOSLASHESCAPE));

    if (!copy)
        die("out of memory");
    return copy;
}

static char *translate_once(struct json_object *rq, enum bsc_err *err)
{
    struct json_object *out = NULL, *turn = NULL;
    char why[256], *text = NULL;

    why[0] = 'x';
    *err = api__responses_to_chat(rq, NULL, rq, &out, &turn, why, sizeof(why));
    if (*err == BSC_OK) {
        struct json_object *msgs = NULL;
        if (!json_object_object_get_ex(out, "messages", &msgs) ||
            !json_object_is_type(msgs, json_type_array) || !json_object_array_length(msgs))
            die("a translation without messages");
        if (!turn || !json_object_is_type(turn, json_type_array))
            die("a translation without its turn");
        text = dump(out);
    } else {
        if (out || turn)
            die("a failed translation left something");
        if (!why[0] || !memchr(why, '\0', sizeof(why)))
            die("a failed translation did not say why");
    }
    json_object_put(out);
    json_object_put(turn);
    return text;
}

static void check_translate(struct bsc_str body)
{
    struct json_object *rq = bsc_json_parse_whole(body, 64);
    char *before, *after, *a, *b;
    enum bsc_err e1, e2;

    if (!rq)
        return;
    before = dump(rq);
    a = translate_once(rq, &e1);
    b = translate_once(rq, &e2);
    if (e1 != e2 || (a && strcmp(a, b)))
        die("translating twice differs");
    after = dump(rq);
    if (strcmp(before, after))
        die("the translation changed its input");
    free(before);
    free(after);
    free(a);
    free(b);
    json_object_put(rq);
}

static void check_map(struct bsc_str body, const struct down_ctx *ctx, size_t max)
{
    struct bsc_buf out;
    struct json_object *o, *in = bsc_json_parse_whole(body, 64), *v = NULL;
    enum bsc_err err;

    bsc_buf_init(&out, max);
    err = api_responses_down.map_response(body, ctx, &out);
    if (err == BSC_OK) {
        o = bsc_json_parse_whole(bsc_buf_str(&out), 64);
        if (!o || !json_object_object_get_ex(o, "object", &v) ||
            strcmp(json_object_get_string(v), "response"))
            die("map_response did not give a Response");
        json_object_put(o);
    } else if (err == BSC_EPARSE) {
        if (in && json_object_is_type(in, json_type_object))
            die("EPARSE for a JSON object");
        if (out.len)
            die("output left after EPARSE");
    } else if (out.len) {
        die("output left after an error");
    }
    json_object_put(in);
    bsc_buf_cleanup(&out);
}

/* Checks the frames in <s> from <from>; *<seq> the next number, *<ended> after the end. */
static void check_frames(struct bsc_str s, size_t from, int64_t *seq, bool *ended)
{
    const char *p = s.p + from, *end = s.p + s.len;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *stop;
        struct json_object *o, *t = NULL, *n = NULL;
        size_t name_len;

        if (*ended)
            die("a frame after the end");
        if (!nl || strncmp(p, "event: ", 7) || strncmp(nl + 1, "data: ", 6))
            die("not an event frame");
        name_len = (size_t)(nl - p - 7);
        stop = memmem(nl + 7, (size_t)(end - nl - 7), "\n\n", 2);
        if (!stop)
            die("a half frame");
        o = bsc_json_parse_whole(bsc_str_make(nl + 7, (size_t)(stop - nl - 7)), 64);
        if (!o || !json_object_object_get_ex(o, "type", &t) ||
            !json_object_object_get_ex(o, "sequence_number", &n))
            die("event data without type or sequence_number");
        if ((size_t)json_object_get_string_len(t) != name_len ||
            memcmp(json_object_get_string(t), p + 7, name_len))
            die("event name and type differ");
        if (json_object_get_int64(n) != (*seq)++)
            die("sequence numbers not dense");
        if (*seq == 1 && strcmp(json_object_get_string(t), "response.created"))
            die("the first event is not response.created");
        *ended = !strcmp(json_object_get_string(t), "response.completed") ||
                 !strcmp(json_object_get_string(t), "response.incomplete") ||
                 !strcmp(json_object_get_string(t), "response.failed");
        json_object_put(o);
        p = stop + 2;
    }
}

static void check_stream(struct bsc_str body, const struct down_ctx *ctx, size_t max,
                         bool error_end)
{
    void *st = calloc(1, api_responses_down.stream_size);
    struct reply_error e = {.type = "server_error", .code = "upstream_interrupted",
                            .message = "cut", .retry_after_ms = -1};
    const char *p = body.p, *end = body.p + body.len;
    struct bsc_buf out;
    int64_t seq = 0;
    bool ended = false;
    size_t mark;

    if (!st)
        die("out of memory");
    bsc_buf_init(&out, max);
    api_responses_down.stream_init(st, ctx);
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);

        mark = out.len;
        if (api_responses_down.stream_chunk(st, bsc_str_make(p, len), &out) != BSC_OK) {
            if (out.len != mark)
                die("stream_chunk left output after an error");
            break; /* the router ends the stream */
        }
        check_frames(bsc_buf_str(&out), mark, &seq, &ended);
        p += len + 1;
    }
    mark = out.len;
    if ((error_end ? api_responses_down.stream_error(st, &e, &out)
                   : api_responses_down.stream_done(st, &out)) == BSC_OK)
        check_frames(bsc_buf_str(&out), mark, &seq, &ended);
    else if (out.len != mark)
        die("the end left output after an error");
    api_responses_down.stream_cleanup(st);
    free(st);
    bsc_buf_cleanup(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct resp_arg *a = NULL;
    struct down_ctx ctx;
    struct bsc_str body;
    size_t max;

    if (size < 1)
        return 0;
    body = bsc_str_make((const char *)data + 1, size - 1);
    if (!(data[0] & 2)) {
        a = calloc(1, sizeof(*a));
        if (!a)
            die("out of memory");
        snprintf(a->id, sizeof(a->id), "resp_req_fuzz");
        a->echo = json_object_new_object();
    }
    ctx = (struct down_ctx){.request_id = "req_fuzz", .model = "route", .arg = a};
    max = data[0] & 4 ? OUT_SMALL : OUT_BIG;
    check_translate(body);
    check_map(body, &ctx, max);
    check_stream(body, &ctx, max, data[0] & 1);
    api__resp_arg_free(a);
    return 0;
}
