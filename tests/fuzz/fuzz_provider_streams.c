/* SPDX-License-Identifier: MIT */
/* fuzz-sources: src/providers/[a-z]*.c src/stream/sse_parse.c src/stream/utf8.c */
/* fuzz-sources: src/fail/taxonomy.c */
/* fuzz_provider_streams.c -- libFuzzer target for the answer side of every provider adapter
 * (prov_ops_for each kind): the input is an upstream body. It goes through the SSE parser
 * into the adapter's stream hooks the way router/exchange.c drives them (stop at the first
 * DONE or ERROR, stream_line for non-SSE lines, stream_end at EOF), and, whole, through
 * map_response and classify. Input layout:
 *   byte 0     bits 0-2 the adapter (openai, anthropic, gemini, dashscope, azure), bit 3
 *              include_usage, bit 4 response_format json_object in the request, bit 5
 *              parallel_tool_calls false, bit 6 a small output bound, bit 7 the op that
 *              map_response sees (embeddings / the model list instead of chat)
 *   byte 1     the size of the pieces the stream is fed in (0: all at once)
 *   byte 2     the HTTP status classify sees
 *   the rest   the upstream body
 * Beyond "no crash, no leak, no UB" it aborts when an invariant breaks:
 *   - each hook appends whole frames only: `data: <payload>\n\n`, the payload on one line,
 *     `[DONE]` or a JSON object json-c parses; nothing after `[DONE]`; DONE comes with
 *     `[DONE]` and `[DONE]` only with DONE; stream_end never says MORE;
 *   - when the input is valid UTF-8 every payload is (no character split between frames);
 *     the translating adapters (anthropic, gemini) emit valid UTF-8 whatever the input;
 *   - map_response output, when there is some, is one JSON object (valid UTF-8 likewise);
 *   - every fail_info: kind in range and not FAIL_NONE on ERROR/EPARSE, retry hint -1 or
 *     within 24 h, texts NUL-terminated valid UTF-8; classify never says FAIL_NONE for a
 *     non-2xx status. Built and run by scripts/fuzz. */
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
#include "providers/provider.h"
#include "providers/retry_after.h"
#include "stream/sse_parse.h"
#include "stream/utf8.h"

#define SSE_MAX (64u * 1024u)
#define OUT_BIG (1u << 20)
#define OUT_SMALL 512u

static void die(const char *what)
{
    fprintf(stderr, "fuzz_provider_streams: invariant broken: %s\n", what);
    abort();
}

static const enum cfg_provider_kind kinds[] = {CFG_PROV_OPENAI, CFG_PROV_ANTHROPIC,
                                               CFG_PROV_GEMINI, CFG_PROV_DASHSCOPE,
                                               CFG_PROV_AZURE};

static const int statuses[] = {200, 400, 401, 403, 404, 408, 413, 429, 500, 503, 504, 529};

struct run {
    const struct prov_ops *ops;
    void *st;
    struct bsc_buf out;
    bool strict_utf8; /* every payload must be valid UTF-8 */
    bool stopped;     /* a hook said DONE or ERROR: nothing more is fed */
    bool done_frame;  /* `data: [DONE]` went out */
    bool ended;       /* a hook said DONE */
};

/* ---- checks ---- */

static void check_text(const char *field, size_t cap)
{
    const char *nul = memchr(field, '\0', cap);

    if (!nul)
        die("a fail_info text is not NUL-terminated");
    if (!bsc_utf8_valid(field, (size_t)(nul - field)))
        die("a fail_info text is not valid UTF-8");
}

static void check_fail(const struct fail_info *f, bool failed)
{
    if ((unsigned)f->kind >= FAIL_KIND_COUNT)
        die("fail kind out of range");
    if (failed && f->kind == FAIL_NONE)
        die("a failure without a kind");
    if (f->retry_after_ms != -1 &&
        (f->retry_after_ms < 0 || f->retry_after_ms > PROV_RETRY_AFTER_CAP_MS))
        die("retry_after_ms out of range");
    check_text(f->code, sizeof(f->code));
    check_text(f->type, sizeof(f->type));
    check_text(f->message, sizeof(f->message));
}

/* True when <s> is exactly one JSON object (json-c, strict), whitespace around allowed. */
static bool is_json_object(struct bsc_str s)
{
    struct json_object *o = bsc_json_parse_whole(s, JSON_TOKENER_DEFAULT_DEPTH * 8);
    bool ok = o && json_object_is_type(o, json_type_object);

    json_object_put(o);
    return ok;
}

/* Checks the bytes one hook call appended: whole frames, each payload on one line. */
static void check_frames(struct run *r, size_t from)
{
    const char *p = r->out.p ? r->out.p + from : "";
    const char *end = r->out.p ? r->out.p + r->out.len : p;

    while (p < end) {
        const char *lf = memchr(p, '\n', (size_t)(end - p));
        struct bsc_str payload;

        if ((size_t)(end - p) < 6 || memcmp(p, "data: ", 6) != 0)
            die("a frame does not start with \"data: \"");
        if (!lf || lf + 1 >= end || lf[1] != '\n')
            die("a frame does not end with a blank line (or its payload spans lines)");
        payload = bsc_str_make(p + 6, (size_t)(lf - p - 6));
        if (memchr(payload.p, '\r', payload.len))
            die("a payload holds a CR");
        if (r->done_frame)
            die("a frame after [DONE]");
        if (bsc_str_eq(payload, BSC_STR("[DONE]"))) {
            r->done_frame = true;
        } else {
            if (!is_json_object(payload))
                die("a frame payload is not a JSON object");
            if (r->strict_utf8 && !bsc_utf8_valid(payload.p, payload.len))
                die("a frame payload is not valid UTF-8");
        }
        p = lf + 2;
    }
}

/* After a hook returned <st>: frames, the DONE contract, the failure. */
static void after_hook(struct run *r, size_t mark, enum prov_stream_status st,
                       const struct fail_info *fail, bool at_end)
{
    bool had_done = r->done_frame;

    if ((unsigned)st > PROV_STREAM_ERROR)
        die("a stream status out of range");
    if (at_end && st == PROV_STREAM_MORE)
        die("stream_end said MORE");
    check_frames(r, mark);
    if (st == PROV_STREAM_DONE) {
        if (!r->done_frame)
            die("DONE without a [DONE] frame");
        r->ended = true;
        r->stopped = true;
    } else if (!had_done && r->done_frame) {
        die("a [DONE] frame without DONE");
    }
    if (st == PROV_STREAM_ERROR) {
        check_fail(fail, true);
        r->stopped = true;
    }
    bsc_buf_reset(&r->out); /* delivered, as deliver_convert() consumes it */
}

/* ---- the SSE side, as router/exchange.c has it ---- */

static int on_event(void *ud, struct bsc_str event, struct bsc_str data)
{
    struct run *r = ud;
    struct fail_info fail;
    enum prov_stream_status st;

    if (r->stopped)
        return 1;
    fail_info_init(&fail);
    st = r->ops->stream_event(r->st, event, data, &r->out, &fail);
    after_hook(r, 0, st, &fail, false);
    return r->stopped;
}

static int on_comment(void *ud, struct bsc_str text)
{
    (void)ud;
    (void)text;
    return 0;
}

static int on_line(void *ud, struct bsc_str line)
{
    struct run *r = ud;
    struct fail_info fail;
    enum prov_stream_status st;

    if (r->stopped)
        return 1;
    if (!r->ops->stream_line)
        return 0;
    fail_info_init(&fail);
    st = r->ops->stream_line(r->st, line, &r->out, &fail);
    after_hook(r, 0, st, &fail, false);
    return r->stopped;
}

static const struct sse_callbacks sse_cb = {on_event, on_comment, on_line};

static void run_stream(const struct prov_call *call, const struct prov_ops *ops,
                       struct bsc_str body, size_t piece, size_t out_max, bool strict_utf8)
{
    struct run r = {.ops = ops, .strict_utf8 = strict_utf8};
    struct sse_parser sp;
    struct prov_usage usage;
    bool parse_failed = false;
    size_t from = 0;

    r.st = calloc(1, ops->stream_size ? ops->stream_size : 1);
    if (!r.st)
        die("out of memory");
    bsc_buf_init(&r.out, out_max);
    ops->stream_init(r.st, call);
    sse_parser_init(&sp, SSE_MAX, &sse_cb, &r);
    while (from < body.len && !r.stopped) {
        size_t n = piece && piece < body.len - from ? piece : body.len - from;
        ssize_t used = sse_parser_feed(&sp, body.p + from, n);

        if (used < 0) {
            parse_failed = true; /* the router fails the attempt; no stream_end */
            break;
        }
        if ((size_t)used != n && !r.stopped)
            die("the parser paused without a stop");
        from += n;
    }
    if (!parse_failed && !r.stopped) {
        bool pending = false;

        sse_parser_finish(&sp, &pending);
        if (!r.stopped) {
            struct fail_info fail;
            enum prov_stream_status st;

            fail_info_init(&fail);
            st = ops->stream_end(r.st, &r.out, &fail);
            after_hook(&r, 0, st, &fail, true);
        }
    }
    ops->stream_usage(r.st, &usage);
    sse_parser_cleanup(&sp);
    ops->stream_cleanup(r.st);
    free(r.st);
    bsc_buf_cleanup(&r.out);
}

/* ---- whole answers ---- */

static void run_map(const struct prov_call *call, const struct prov_ops *ops, struct bsc_str body,
                    size_t out_max, bool strict_utf8)
{
    struct bsc_buf out;
    struct prov_usage usage = {-1, -1, -1};
    struct fail_info fail;
    enum bsc_err err;

    bsc_buf_init(&out, out_max);
    fail_info_init(&fail);
    err = ops->map_response(call, body, &out, &usage, &fail);
    if (err == BSC_EPARSE) {
        check_fail(&fail, true);
    } else if (err == BSC_OK) {
        if (out.len && !is_json_object(bsc_buf_str(&out)))
            die("map_response wrote something that is not a JSON object");
        if (out.len && strict_utf8 && !bsc_utf8_valid(out.p, out.len))
            die("map_response wrote invalid UTF-8");
    } else if (err != BSC_ELIMIT && err != BSC_ENOMEM) {
        die("map_response returned an undocumented error");
    }
    bsc_buf_cleanup(&out);
}

static void run_classify(const struct prov_ops *ops, const struct cfg_provider *prov, int status,
                         struct bsc_str body)
{
    struct prov_err_input in = {
        .status = status,
        .body = body,
        .content_type = BSC_STR("application/json"),
        .now_wall_ms = 1700000000000ull,
        .base_url = bsc_str_cstr(prov->base_url),
    };
    struct fail_info f;

    memset(&f, 0xa5, sizeof(f));
    ops->classify(&in, &f);
    check_fail(&f, status < 200 || status > 299);
}

/* ---- the fake configuration ---- */

static char url_openai[] = "https://api.openai.com/v1";
static char url_anthropic[] = "https://api.anthropic.com/v1";
static char url_gemini[] = "https://generativelanguage.googleapis.com/v1beta";
static char url_dashscope[] = "https://dashscope-intl.aliyuncs.com/compatible-mode/v1";
static char url_azure[] = "https://res.openai.azure.com/openai";
static char prov_id[] = "fuzz-provider";
static char target_id[] = "fuzz-model@fuzz-provider";
static char model_plain[] = "fuzz-model";
static char model_gemini[] = "models/gemini-2.5-flash";

static char *base_url(enum cfg_provider_kind kind)
{
    switch (kind) {
    case CFG_PROV_ANTHROPIC: return url_anthropic;
    case CFG_PROV_GEMINI: return url_gemini;
    case CFG_PROV_DASHSCOPE: return url_dashscope;
    case CFG_PROV_AZURE: return url_azure;
    default: return url_openai;
    }
}

static struct json_object *make_request(uint8_t flags)
{
    struct json_object *req = json_object_new_object(), *msgs = json_object_new_array();
    struct json_object *msg = json_object_new_object(), *rf;

    json_object_object_add(msg, "role", json_object_new_string("user"));
    json_object_object_add(msg, "content", json_object_new_string("hi"));
    json_object_array_add(msgs, msg);
    json_object_object_add(req, "model", json_object_new_string("route"));
    json_object_object_add(req, "messages", msgs);
    if (flags & 0x10) {
        rf = json_object_new_object();
        json_object_object_add(rf, "type", json_object_new_string("json_object"));
        json_object_object_add(req, "response_format", rf);
        json_object_object_add(req, "encoding_format", json_object_new_string("base64"));
    }
    if (flags & 0x20)
        json_object_object_add(req, "parallel_tool_calls", json_object_new_boolean(0));
    return req;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cfg_provider prov;
    struct cfg_target target;
    struct prov_call call;
    const struct prov_ops *ops;
    struct bsc_str body;
    enum cfg_provider_kind kind;
    uint8_t flags;
    bool valid, translating;
    size_t out_max;

    if (size < 3)
        return 0;
    flags = data[0];
    kind = kinds[(flags & 7) % BSC_ARRAY_LEN(kinds)];
    ops = prov_ops_for(kind);
    if (!ops || !ops->stream_init || !ops->stream_event || !ops->stream_end ||
        !ops->map_response || !ops->classify)
        die("an adapter misses a hook");
    body = bsc_str_make((const char *)data + 3, size - 3);
    valid = bsc_utf8_valid(body.p, body.len);
    translating = kind == CFG_PROV_ANTHROPIC || kind == CFG_PROV_GEMINI;
    out_max = flags & 0x40 ? OUT_SMALL : OUT_BIG;

    memset(&prov, 0, sizeof(prov));
    prov.id = prov_id;
    prov.kind = kind;
    prov.base_url = base_url(kind);
    memset(&target, 0, sizeof(target));
    target.id = target_id;
    target.provider = &prov;
    target.model = kind == CFG_PROV_GEMINI ? model_gemini : model_plain;
    call = (struct prov_call){
        .op = PROV_OP_CHAT,
        .provider = &prov,
        .target = &target,
        .key = "sk-fuzz",
        .req = make_request(flags),
        .stream = true,
        .include_usage = (flags & 0x08) != 0,
        .request_id = "req-fuzz-1",
        .created = 1700000000,
    };

    run_stream(&call, ops, body, data[1], out_max, valid || translating);

    call.stream = false;
    run_map(&call, ops, body, out_max, valid || translating);
    if (flags & 0x80) {
        call.op = data[1] & 1 ? PROV_OP_PROBE_MODELS : PROV_OP_EMBEDDINGS;
        run_map(&call, ops, body, out_max, valid || translating);
    }
    run_classify(ops, &prov, statuses[data[2] % BSC_ARRAY_LEN(statuses)], body);
    json_object_put(call.req);
    return 0;
}
