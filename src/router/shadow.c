/* SPDX-License-Identifier: MIT */
/* shadow.c -- mirrored copies of a route's requests to candidate targets. A copy is its own
 * small transfer on the worker's loop, started after the primary's first attempt, with its
 * own timer (the route's deadline_ms); nothing of it reaches the client or the client's
 * limits and budgets. It feeds the candidate's health statistics with a neutral breaker
 * outcome, so a failing candidate never opens a circuit for live traffic. A stream request
 * is mirrored as a stream, for its time to first token; its deltas are put back together
 * into one answer for the contract check and agreement. See docs/internals/shadow.md. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/jsonschema.h"
#include "core/clock.h"
#include "core/json_get.h"
#include "core/log.h"
#include "health/hstate.h"
#include "metrics/metrics.h"
#include "policy/cost.h"
#include "router/input.h"
#include "router/internal.h"
#include "router/gateway.h"
#include "router/shadow.h"
#include "router/shadow_purse.h"
#include "stream/sse_parse.h"

#define SHADOW_MAX_RESPONSE (8u << 20)
#define SHADOW_MAX_TOOLS    32
#define SHADOW_MAX_SSE      (4u << 20)

/* A streamed copy's answer, put back together from its OpenAI delta frames. */
struct shadow_stream {
    void *prov_st; /* owned: the adapter's stream state */
    bool live;     /* stream_init ran: cleanup due */
    struct sse_parser sse;
    struct bsc_buf conv;    /* owned: the adapter's frames of one read */
    struct bsc_buf content; /* owned: the text deltas */
    char names[SHADOW_MAX_TOOLS][65];
    struct bsc_buf args[SHADOW_MAX_TOOLS]; /* owned: each call's argument deltas */
    size_t n_calls;
    bool saw_done, failed;
    struct fail_info fail;
};

struct shadow {
    struct worker *w;                /* borrowed */
    struct cfg *cfg;                 /* a ref: route and target stay valid */
    const struct cfg_route *route;   /* borrowed from cfg */
    const struct cfg_target *target; /* borrowed from cfg */
    const struct prov_ops *ops;
    struct request *primary;       /* borrowed; NULL once the primary ended */
    struct shadow *sib;            /* next copy of the same primary */
    struct shadow *wnext, **wprev; /* the worker's list */
    struct json_object *req;       /* a ref: the primary's canonical request */
    struct json_object *schemas;   /* borrowed from <req>: the request, for the contract */
    char id[130];
    int64_t created;
    int key_idx;
    uv_timer_t timer;            /* the copy's deadline */
    struct up_transfer *xfer;    /* NULL when none is running */
    struct prov_http http;       /* owned */
    struct bsc_buf resp, answer; /* owned */
    int up_status;
    char up_ctype[128];
    enum up_result up_res;
    bool timed_out, unsent, ended;
    bool stream;                        /* the client asked for a stream: so does the copy */
    struct shadow_stream *st;           /* owned; a 2xx event stream only */
    uint64_t start_us, end_us, ttft_us; /* ttft_us: 0 until the first frame */
    struct fail_info fail;
    const char *outcome;  /* static: "ok", a kind name, or "contract_failure" */
    const char *contract; /* static: "ok", "failed", "unchecked" */
    struct prov_usage usage;
    double cost_usd;
    struct shadow_summary mine, theirs;
};

/* ---- pure parts ---- */

bool shadow_sample(uint64_t seq, uint32_t percent)
{
    if (percent >= 100)
        return true;
    /* Taken when floor((seq + 1) p / 100) steps up: p of every 100, evenly spread. */
    return (seq % 100 + 1) * percent / 100 != (seq % 100) * percent / 100;
}

enum shadow_agree shadow_agreement(const struct shadow_summary *primary,
                                   const struct shadow_summary *cand)
{
    if (!primary->answered || !cand->answered)
        return SHADOW_UNKNOWN;
    if (primary->valid && cand->valid && strcmp(primary->tools, cand->tools) == 0)
        return SHADOW_AGREE;
    return SHADOW_DISAGREE;
}

const char *shadow_agree_name(enum shadow_agree a)
{
    static const char *const names[SHADOW_AGREE_COUNT] = {"agree", "disagree", "unknown"};

    return (unsigned)a < SHADOW_AGREE_COUNT ? names[a] : "unknown";
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static struct json_object *first_message(struct json_object *root)
{
    return bsc_json_get(bsc_json_idx(bsc_json_get(root, "choices"), 0), "message");
}

bool shadow_summarize(struct bsc_str answer, struct shadow_summary *s)
{
    struct json_object *root = prov_parse_json(answer), *msg, *calls;
    const char *names[SHADOW_MAX_TOOLS];
    size_t n = 0, off = 0;

    s->tools[0] = '\0';
    msg = first_message(root);
    if (!msg) {
        json_object_put(root);
        return false;
    }
    s->answered = true;
    calls = bsc_json_get(msg, "tool_calls");
    for (size_t i = 0; calls && i < json_object_array_length(calls) && n < SHADOW_MAX_TOOLS; i++) {
        struct json_object *fn = bsc_json_get(json_object_array_get_idx(calls, i), "function");
        const char *name = json_object_get_string(bsc_json_get(fn, "name"));
        names[n++] = name ? name : "";
    }
    qsort(names, n, sizeof(*names), cmp_str);
    for (size_t i = 0; i < n && off < sizeof(s->tools); i++) {
        int k = snprintf(s->tools + off, sizeof(s->tools) - off, "%s%s", i ? "," : "", names[i]);
        off += k > 0 ? (size_t)k : 0;
    }
    json_object_put(root);
    return true;
}

/* ---- the contract of a copy's answer ---- */

/* True when <text> is valid against <schema> (JSON Schema, compiled for this check);
 * *<checked> false when the validator cannot take the schema. */
static bool valid_against(struct json_object *schema, struct bsc_str text, bool *checked)
{
    struct js_schema *s = NULL;
    struct js_error e;
    char err[128];
    bool ok;

    if (!schema)
        return true;
    if (js_compile(schema, &s, err, sizeof(err)) != BSC_OK) {
        *checked = false;
        return true;
    }
    ok = js_validate_text(s, text, &e);
    js_free(s);
    return ok;
}

static struct json_object *tool_params(struct json_object *req, const char *name, bool *found)
{
    struct json_object *tools = bsc_json_get(req, "tools");

    for (size_t i = 0; tools && i < json_object_array_length(tools); i++) {
        struct json_object *fn = bsc_json_get(json_object_array_get_idx(tools, i), "function");
        const char *n = json_object_get_string(bsc_json_get(fn, "name"));
        if (n && strcmp(n, name) == 0) {
            *found = true;
            return bsc_json_get(fn, "parameters");
        }
    }
    *found = false;
    return NULL;
}

/* The same rules as the router's contract check (contract.c): content valid against the
 * response schema when no tool is called; every call names a declared tool, with
 * arguments valid against its parameters. */
static bool check_contract(const struct shadow *s, struct bsc_str answer, bool *checked)
{
    struct json_object *root = prov_parse_json(answer), *msg = first_message(root), *calls;
    struct json_object *schema = bsc_json_get(
        bsc_json_get(bsc_json_get(s->schemas, "response_format"), "json_schema"), "schema");
    bool ok = msg != NULL;

    calls = bsc_json_get(msg, "tool_calls");
    if (ok && schema && !(calls && json_object_array_length(calls) > 0)) {
        const char *c = json_object_get_string(bsc_json_get(msg, "content"));
        ok = valid_against(schema, bsc_str_cstr(c ? c : ""), checked);
    }
    for (size_t i = 0; ok && calls && i < json_object_array_length(calls); i++) {
        struct json_object *fn = bsc_json_get(json_object_array_get_idx(calls, i), "function");
        const char *name = json_object_get_string(bsc_json_get(fn, "name"));
        const char *args = json_object_get_string(bsc_json_get(fn, "arguments"));
        bool found;
        struct json_object *params = tool_params(s->schemas, name ? name : "", &found);

        ok = found && valid_against(params, bsc_str_cstr(args ? args : ""), checked);
    }
    json_object_put(root);
    return ok;
}

/* ---- accounting ---- */

static struct metrics *shadow_metrics(const struct shadow *s)
{
    return s->w->gw->metrics;
}

static void log_line(const struct shadow *s, enum shadow_agree agree)
{
    struct bsc_buf b;

    bsc_buf_init(&b, 4096);
    bsc_buf_appendf(&b, "{\"type\":\"shadow\",\"ts_ms\":%llu,\"request_id\":",
                    (unsigned long long)bsc_wall_ms());
    bsc_buf_append_json_str(&b, bsc_str_cstr(s->id));
    bsc_buf_append_cstr(&b, ",\"route\":");
    bsc_buf_append_json_str(&b, bsc_str_cstr(s->route->id));
    bsc_buf_append_cstr(&b, ",\"target\":");
    bsc_buf_append_json_str(&b, bsc_str_cstr(s->target->id));
    bsc_buf_appendf(&b,
                    ",\"outcome\":\"%s\",\"transport\":\"%s\",\"kind\":\"%s\","
                    "\"contract\":\"%s\",\"status\":%d,\"stream\":%s,\"latency_ms\":%.3f,",
                    s->outcome, s->mine.answered ? "ok" : "failed",
                    s->fail.kind == FAIL_NONE ? "ok" : fail_kind_name(s->fail.kind), s->contract,
                    s->up_status, s->stream ? "true" : "false",
                    (double)(s->end_us - s->start_us) / 1e3);
    if (s->ttft_us)
        bsc_buf_appendf(&b, "\"ttft_ms\":%.3f", (double)(s->ttft_us - s->start_us) / 1e3);
    else
        bsc_buf_append_cstr(&b, "\"ttft_ms\":null");
    bsc_buf_appendf(&b,
                    ",\"input_tokens\":%lld,\"output_tokens\":%lld,\"cost_usd\":%.8f,"
                    "\"tools\":",
                    (long long)s->usage.input_tokens, (long long)s->usage.output_tokens,
                    s->cost_usd);
    bsc_buf_append_json_str(&b, bsc_str_cstr(s->mine.tools));
    bsc_buf_appendf(&b, ",\"agreement\":\"%s\"}", shadow_agree_name(agree));
    if (b.p)
        bsc_log_line(b.p, b.len);
    bsc_buf_cleanup(&b);
}

/* The copy's own results, once its transfer ended: metrics and the candidate's health. */
static void account(struct shadow *s)
{
    const struct cfg_price *p = &s->target->price;
    struct attempt_report rep = {
        .outcome = BRK_NEUTRAL, /* health statistics only, never the live breaker */
        .latency_ms = s->mine.answered ? (double)(s->end_us - s->start_us) / 1e3 : -1,
        .ttft_ms = s->mine.answered && s->ttft_us ? (double)(s->ttft_us - s->start_us) / 1e3 : -1,
        .error = s->mine.answered ? NULL : s->outcome,
    };
    unsigned shard = s->w->idx;
    const char *rid = s->route->id, *tid = s->target->id;

    /* The exact clock, as report_attempt passes it (the health state is shared). */
    hstate_record(s->w->gw->hs, s->target, bsc_now_us() / 1000, &rep, NULL);
    hstate_inflight(s->w->gw->hs, s->target, -1);
    metrics_inc3(shadow_metrics(s), shard, METRIC_SHADOW_REQUESTS, rid, tid, s->outcome, 1);
    if (s->mine.answered)
        metrics_observe(shadow_metrics(s), shard, METRIC_SHADOW_LATENCY, rid, tid,
                        (double)(s->end_us - s->start_us) / 1e6);
    if (s->usage.input_tokens > 0)
        metrics_inc3(shadow_metrics(s), shard, METRIC_SHADOW_TOKENS, rid, tid, "input",
                     (double)s->usage.input_tokens);
    if (s->usage.output_tokens > 0)
        metrics_inc3(shadow_metrics(s), shard, METRIC_SHADOW_TOKENS, rid, tid, "output",
                     (double)s->usage.output_tokens);
    s->cost_usd = cost_of_usage(p, &s->usage);
    if (s->cost_usd > 0) {
        metrics_inc(shadow_metrics(s), shard, METRIC_SHADOW_COST, rid, tid, s->cost_usd);
        /* The day's shadow spend, against shadow.max_usd_per_day; never a client's. */
        shadow_purse_add(&s->w->gw->shadow_purse, s->cost_usd, bsc_wall_ms());
    }
}

/* ---- streamed copies ---- */

static void feed_delta(struct shadow_stream *st, struct json_object *delta)
{
    struct json_object *content = bsc_json_get(delta, "content");
    struct json_object *calls = bsc_json_get(delta, "tool_calls");

    if (content && json_object_is_type(content, json_type_string))
        bsc_buf_append(&st->content, json_object_get_string(content),
                       (size_t)json_object_get_string_len(content));
    for (size_t i = 0; calls && i < json_object_array_length(calls); i++) {
        struct json_object *tc = json_object_array_get_idx(calls, i);
        struct json_object *fn = bsc_json_get(tc, "function");
        int idx = json_object_get_int(bsc_json_get(tc, "index"));
        const char *name = json_object_get_string(bsc_json_get(fn, "name"));
        const char *args = json_object_get_string(bsc_json_get(fn, "arguments"));

        if (idx < 0 || idx >= SHADOW_MAX_TOOLS)
            continue;
        while (st->n_calls <= (size_t)idx) {
            st->names[st->n_calls][0] = '\0';
            bsc_buf_init(&st->args[st->n_calls++], SHADOW_MAX_RESPONSE);
        }
        if (name)
            snprintf(st->names[idx], sizeof(st->names[idx]), "%s", name);
        if (args)
            bsc_buf_append_cstr(&st->args[idx], args);
    }
}

/* One event of the adapter's frames: an unnamed one whose data is a JSON object is a chunk. */
static int frame_event(void *ud, struct bsc_str name, struct bsc_str data)
{
    struct shadow_stream *st = ud;
    struct json_object *chunk;

    if (name.len || !data.len || data.p[0] != '{')
        return 0;
    chunk = prov_parse_json(data);
    feed_delta(st, bsc_json_get(bsc_json_idx(bsc_json_get(chunk, "choices"), 0), "delta"));
    json_object_put(chunk);
    return 0;
}

/* Takes the adapter's frames ("data: {chunk}\n\n" ...) out of st->conv: the first one is the
 * copy's first token; the deltas are kept. */
static void take_frames(struct shadow *s)
{
    struct shadow_stream *st = s->st;
    if (st->conv.len && !s->ttft_us)
        s->ttft_us = bsc_now_us();
    sse_each_event(bsc_buf_str(&st->conv), frame_event, st); /* out of memory: deltas lost */
    bsc_buf_reset(&st->conv);
}

static int stream_status(struct shadow *s, enum prov_stream_status status)
{
    take_frames(s);
    if (status == PROV_STREAM_ERROR)
        s->st->failed = true;
    else if (status == PROV_STREAM_DONE)
        s->st->saw_done = true;
    return status != PROV_STREAM_MORE; /* nothing after the end or an error matters */
}

static int on_sse_event(void *ud, struct bsc_str name, struct bsc_str data)
{
    struct shadow *s = ud;

    if (s->st->saw_done || s->st->failed)
        return 1;
    return stream_status(
        s, s->ops->stream_event(s->st->prov_st, name, data, &s->st->conv, &s->st->fail));
}

static int on_sse_line(void *ud, struct bsc_str line)
{
    struct shadow *s = ud;

    if (!s->ops->stream_line || s->st->saw_done || s->st->failed)
        return 0;
    return stream_status(s, s->ops->stream_line(s->st->prov_st, line, &s->st->conv, &s->st->fail));
}

static const struct sse_callbacks sse_cb = {on_sse_event, NULL, on_sse_line};

static struct prov_call make_call(const struct shadow *s);

static bool stream_begin(struct shadow *s)
{
    struct prov_call call = make_call(s);
    struct shadow_stream *st = calloc(1, sizeof(*st));

    if (!st)
        return false;
    st->prov_st = calloc(1, s->ops->stream_size ? s->ops->stream_size : 1);
    if (!st->prov_st) {
        free(st);
        return false;
    }
    s->ops->stream_init(st->prov_st, &call);
    st->live = true;
    sse_parser_init(&st->sse, SHADOW_MAX_SSE, &sse_cb, s);
    bsc_buf_init(&st->conv, 8u << 20);
    bsc_buf_init(&st->content, SHADOW_MAX_RESPONSE);
    fail_info_init(&st->fail);
    s->st = st;
    return true;
}

/* EOF: the adapter says whether the stream ended properly. */
static void stream_eof(struct shadow *s)
{
    struct shadow_stream *st = s->st;
    bool pending = false;

    if (st->saw_done || st->failed)
        return;
    sse_parser_finish(&st->sse, &pending);
    if (st->saw_done || st->failed)
        return;
    stream_status(s, s->ops->stream_end(st->prov_st, &st->conv, &st->fail));
    if (!st->saw_done)
        st->failed = true;
}

/* The deltas as one OpenAI chat.completion, for the same checks as a single answer. */
static void stream_answer(struct shadow *s)
{
    struct shadow_stream *st = s->st;
    struct json_object *root = json_object_new_object(), *choices = json_object_new_array();
    struct json_object *choice = json_object_new_object(), *msg = json_object_new_object();
    struct json_object *calls = json_object_new_array();
    const char *text;
    size_t len = 0;

    json_object_object_add(
        msg, "content",
        json_object_new_string_len(st->content.p ? st->content.p : "", (int)st->content.len));
    for (size_t i = 0; i < st->n_calls; i++) {
        struct json_object *call = json_object_new_object(), *fn = json_object_new_object();
        json_object_object_add(fn, "name", json_object_new_string(st->names[i]));
        json_object_object_add(
            fn, "arguments",
            json_object_new_string_len(st->args[i].p ? st->args[i].p : "", (int)st->args[i].len));
        json_object_object_add(call, "function", fn);
        json_object_array_add(calls, call);
    }
    json_object_object_add(msg, "tool_calls", calls);
    json_object_object_add(choice, "message", msg);
    json_object_array_add(choices, choice);
    json_object_object_add(root, "choices", choices);
    text = json_object_to_json_string_length(root, JSON_C_TO_STRING_PLAIN, &len);
    bsc_buf_reset(&s->answer);
    if (text)
        bsc_buf_append(&s->answer, text, len);
    json_object_put(root);
    if (s->ops->stream_usage)
        s->ops->stream_usage(st->prov_st, &s->usage);
}

static void stream_free(struct shadow *s)
{
    struct shadow_stream *st = s->st;

    if (!st)
        return;
    sse_parser_cleanup(&st->sse);
    if (st->live)
        s->ops->stream_cleanup(st->prov_st);
    free(st->prov_st);
    bsc_buf_cleanup(&st->conv);
    bsc_buf_cleanup(&st->content);
    for (size_t i = 0; i < st->n_calls; i++)
        bsc_buf_cleanup(&st->args[i]);
    BSC_FREE(s->st);
}

/* ---- lifetime ---- */

static void on_closed(uv_handle_t *h)
{
    struct shadow *s = h->data;

    stream_free(s);
    json_object_put(s->req);
    bsc_buf_cleanup(&s->http.url);
    bsc_buf_cleanup(&s->http.headers);
    bsc_buf_cleanup(&s->http.body);
    bsc_buf_cleanup(&s->resp);
    bsc_buf_cleanup(&s->answer);
    cfg_unref(s->cfg);
    free(s);
}

static void unlink_primary(struct shadow *s)
{
    struct shadow **pp;

    if (!s->primary)
        return;
    for (pp = &s->primary->shadows; *pp; pp = &(*pp)->sib)
        if (*pp == s) {
            *pp = s->sib;
            break;
        }
    s->primary = NULL;
}

/* Both sides are known (or the primary will never answer): agreement, the log line, free. */
static void settle(struct shadow *s)
{
    enum shadow_agree agree = shadow_agreement(&s->theirs, &s->mine);

    metrics_inc3(shadow_metrics(s), s->w->idx, METRIC_SHADOW_AGREEMENT, s->route->id, s->target->id,
                 shadow_agree_name(agree), 1);
    log_line(s, agree);
    unlink_primary(s);
    if (s->wnext)
        s->wnext->wprev = s->wprev;
    *s->wprev = s->wnext;
    uv_close((uv_handle_t *)&s->timer, on_closed);
}

static struct prov_call make_call(const struct shadow *s)
{
    return (struct prov_call){
        .op = PROV_OP_CHAT,
        .provider = s->target->provider,
        .target = s->target,
        .key = s->key_idx >= 0 ? s->target->provider->keys[s->key_idx] : NULL,
        .req = s->req,
        .stream = s->stream,
        .include_usage = s->stream,
        .request_id = s->id,
        .created = s->created,
    };
}

static void classify(struct shadow *s)
{
    struct prov_call call = make_call(s);
    struct prov_err_input in;
    static const enum fail_transport map[UP_RESULT_COUNT] = {
        [UP_OK] = FT_OK,
        [UP_CONNECT] = FT_CONNECT,
        [UP_DNS] = FT_DNS,
        [UP_TIMEOUT] = FT_TIMEOUT,
        [UP_RESET] = FT_RESET,
        [UP_TLS] = FT_TLS,
        [UP_PROTOCOL] = FT_PROTOCOL,
        [UP_TOO_LARGE] = FT_PROTOCOL,
    };

    fail_info_init(&s->fail);
    if (s->unsent) { /* the adapter cannot express the request for this target */
        s->fail.kind = FAIL_CONTRACT_FAILURE;
        return;
    }
    if (s->timed_out) {
        fail_from_transport(FT_TIMEOUT, true, &s->fail);
        return;
    }
    if (s->st && s->st->saw_done) { /* complete, whatever the transport did after */
        stream_answer(s);
        return;
    }
    if (s->st && s->st->failed && s->st->fail.kind != FAIL_NONE) {
        s->fail = s->st->fail;
        return;
    }
    if (s->up_res != UP_OK) {
        fail_from_transport(map[s->up_res], s->up_status != 0 || s->up_res == UP_RESET, &s->fail);
        return;
    }
    if (s->st) {
        s->fail.kind = FAIL_SERVER_ERROR; /* the stream broke or ended before its end */
        return;
    }
    in = (struct prov_err_input){
        .status = s->up_status,
        .body = bsc_buf_str(&s->resp),
        .content_type = bsc_str_cstr(s->up_ctype),
        .now_wall_ms = bsc_wall_ms(),
        .base_url = bsc_str_cstr(s->target->provider->base_url),
        .profile = bsc_str_cstr(cfg_profile_name(s->target->provider->profile)),
    };
    prov_classify(s->ops, &in, &s->fail); /* the adapter's verdict, as for a real attempt */
    if (s->fail.kind != FAIL_NONE)
        return;
    prov_map_response(s->ops, &call, s->up_status, bsc_buf_str(&s->resp), &s->answer, &s->usage,
                      &s->fail);
}

/* The transfer ended (or was cancelled): classify, check the contract, account. */
static void finish(struct shadow *s)
{
    struct bsc_str answer;
    bool checked = true;

    if (s->ended)
        return;
    s->ended = true;
    s->end_us = bsc_now_us();
    uv_timer_stop(&s->timer);
    if (s->xfer) {
        up_cancel(s->xfer);
        s->xfer = NULL;
    }
    atomic_fetch_sub(&((struct cfg_route *)s->route)->shadow.inflight, 1);
    classify(s);
    s->outcome = s->fail.kind == FAIL_NONE ? "ok" : fail_kind_name(s->fail.kind);
    s->contract = "unchecked";
    answer = s->answer.len ? bsc_buf_str(&s->answer) : bsc_buf_str(&s->resp);
    if (s->fail.kind == FAIL_NONE && shadow_summarize(answer, &s->mine)) {
        s->mine.valid = check_contract(s, answer, &checked);
        s->contract = !checked ? "unchecked" : s->mine.valid ? "ok" : "failed";
        if (!s->mine.valid)
            s->outcome = "contract_failure";
    } else if (s->fail.kind == FAIL_NONE) {
        s->fail.kind = FAIL_SERVER_ERROR; /* a 2xx that is no chat.completion */
        s->outcome = fail_kind_name(s->fail.kind);
    }
    account(s);
    if (!s->primary)
        settle(s);
}

static void on_timer(uv_timer_t *h);

/* Ends the transfer from inside a curl callback (too large, out of memory, unreadable):
 * curl reaps it silently; the copy ends on the next loop turn, outside curl. */
static void cut(struct shadow *s)
{
    if (s->xfer) {
        up_cancel(s->xfer);
        s->xfer = NULL;
    }
    if (s->up_res == UP_OK)
        s->up_res = UP_TOO_LARGE;
    uv_timer_start(&s->timer, on_timer, 0, 0);
}

static void on_head(void *ud, struct up_transfer *t, int status)
{
    struct shadow *s = ud;
    struct bsc_str v = up_header(t, BSC_STR("content-type"));
    size_t n = v.len < sizeof(s->up_ctype) - 1 ? v.len : sizeof(s->up_ctype) - 1;

    s->up_status = status;
    memcpy(s->up_ctype, v.p ? v.p : "", n);
    s->up_ctype[n] = '\0';
    if (s->stream && status >= 200 && status < 300 &&
        strncasecmp(s->up_ctype, "text/event-stream", 17) == 0 && !stream_begin(s))
        cut(s);
}

static bool on_data(void *ud, struct up_transfer *t, const char *p, size_t len)
{
    struct shadow *s = ud;

    (void)t;
    if (s->st) {
        if (!s->st->saw_done && !s->st->failed && sse_parser_feed(&s->st->sse, p, len) < 0) {
            s->st->failed = true;
            cut(s);
        }
        return false;
    }
    if (bsc_buf_append(&s->resp, p, len) != BSC_OK)
        cut(s);
    return false;
}

static void on_done(void *ud, struct up_transfer *t, enum up_result res, const char *detail)
{
    struct shadow *s = ud;

    (void)t, (void)detail;
    s->xfer = NULL;
    s->up_res = res;
    if (s->st)
        stream_eof(s);
    finish(s);
}

static const struct up_callbacks up_cb = {on_head, on_data, on_done};

static void on_timer(uv_timer_t *h)
{
    struct shadow *s = h->data;

    if (s->up_res == UP_OK)
        s->timed_out = true;
    finish(s);
}

/* ---- starting ---- */

/* The canonical request, shared with the primary (same loop, so the non-atomic json-c
 * refcount is safe): the adapters restore whatever they change while they serialise it. */
static struct json_object *request_for_copy(struct request *r)
{
    struct json_object *req = req__json(r);

    return req ? json_object_get(req) : NULL;
}

static bool send_copy(struct shadow *s)
{
    struct prov_call call = make_call(s);
    const char *lines[UP_REQUEST_MAX_HEADERS];
    size_t n = 0;
    char why[256];
    struct up_request ureq;

    bsc_buf_init(&s->http.url, 8192);
    bsc_buf_init(&s->http.headers, 64u * 1024u);
    bsc_buf_init(&s->http.body, s->cfg->limits.max_body_bytes * 2 + 65536);
    if (s->ops->build(&call, &s->http, why, sizeof(why)) != BSC_OK ||
        prov_header(&s->http.headers, "X-Request-Id", "%s", s->id) != BSC_OK ||
        prov_header(&s->http.headers, "X-Bascule-Shadow", "1") != BSC_OK)
        return false;
    for (size_t off = 0; off < s->http.headers.len && n < BSC_ARRAY_LEN(lines);) {
        lines[n++] = s->http.headers.p + off;
        off += strlen(s->http.headers.p + off) + 1;
    }
    ureq = (struct up_request){
        .url = s->http.url.p,
        .method = s->http.method,
        .headers = lines,
        .n_headers = n,
        .body = s->http.body.p,
        .body_len = s->http.body.len,
        .connect_timeout_ms = s->target->provider->connect_timeout_ms,
        .ca_file = s->target->provider->tls_ca_file,
    };
    return up_start(s->w->up, &ureq, &up_cb, s, &s->xfer) == BSC_OK;
}

static void count_skip(struct request *r, const struct cfg_target *t)
{
    metrics_inc3(req__metrics(r), r->w->idx, METRIC_SHADOW_REQUESTS, r->route->id, t->id, "skipped",
                 1);
}

/* Takes a slot of the route's max_concurrency; false when all are taken. */
static bool take_slot(struct cfg_shadow *sh)
{
    if (atomic_fetch_add(&sh->inflight, 1) < sh->max_concurrency)
        return true;
    atomic_fetch_sub(&sh->inflight, 1);
    return false;
}

static void start_one(struct request *r, const struct cfg_target *t, struct cfg_shadow *sh)
{
    struct shadow *s;
    uint64_t soonest = 0;
    int key;

    if (t->disabled || t->provider->disabled || hstate_is_disabled(r->gw->hs, t) ||
        (key = hstate_key_next(r->gw->hs, t->provider, bsc_now_ms(), &soonest)) == -1) {
        count_skip(r, t);
        return;
    }
    /* The gateway's shadow purse for the day is spent: no copy until the next UTC day. */
    if (!shadow_purse_allows(&r->gw->shadow_purse, r->cfg->shadow.max_usd_per_day,
                             bsc_wall_ms())) {
        count_skip(r, t);
        return;
    }
    if (!take_slot(sh)) {
        count_skip(r, t);
        return;
    }
    s = calloc(1, sizeof(*s));
    if (!s || !(s->req = request_for_copy(r))) {
        free(s);
        atomic_fetch_sub(&sh->inflight, 1);
        count_skip(r, t);
        return;
    }
    s->w = r->w;
    s->cfg = cfg_ref(r->cfg);
    s->route = r->route;
    s->target = t;
    s->ops = prov_ops_for(t->provider->kind);
    s->schemas = s->req;
    s->key_idx = key;
    s->created = r->ident.created;
    s->stream = r->input.stream;
    s->usage = PROV_USAGE_UNKNOWN;
    snprintf(s->id, sizeof(s->id), "%s", r->ident.id);
    bsc_buf_init(&s->resp, SHADOW_MAX_RESPONSE);
    bsc_buf_init(&s->answer, SHADOW_MAX_RESPONSE);
    uv_timer_init(&r->w->loop, &s->timer);
    s->timer.data = s;
    s->wnext = r->w->shadows;
    if (s->wnext)
        s->wnext->wprev = &s->wnext;
    s->wprev = &r->w->shadows;
    r->w->shadows = s;
    s->primary = r;
    s->sib = r->shadows;
    r->shadows = s;
    s->start_us = bsc_now_us();
    hstate_inflight(r->gw->hs, t, +1);
    uv_timer_start(&s->timer, on_timer, r->route->envelope.deadline_ms, 0);
    if (!send_copy(s)) {
        s->unsent = true;
        uv_timer_start(&s->timer, on_timer, 0, 0); /* ends on the next loop turn */
    }
}

void shadow_start(struct request *r)
{
    struct cfg_shadow *sh;

    /* The counters are the snapshot's one mutable part (config.h): cast, not copied. */
    sh = (struct cfg_shadow *)&r->route->shadow;
    if (!sh->targets.n || r->att.n != 1 || r->input.op != PROV_OP_CHAT)
        return;
    /* A copy of a request that may act would act twice: none, whatever the percent. */
    if (r->env.side_effects != CFG_SE_NONE)
        return;
    if (!shadow_sample(atomic_fetch_add(&sh->seq, 1), sh->percent))
        return;
    for (size_t i = 0; i < sh->targets.n; i++)
        start_one(r, sh->targets.targets[i], sh);
}

void shadow_primary_done(struct request *r)
{
    struct shadow_summary sum = {0};
    struct shadow *s, *next;

    if (!r->shadows)
        return;
    /* Only a single answer is kept whole; a relayed stream is not, so its agreement is
     * unknown. An answer delivered passed the router's own contract check. */
    if (!r->input.stream && r->d.status == 200 && r->x.answer.len &&
        shadow_summarize(bsc_buf_str(&r->x.answer), &sum))
        sum.valid = true;
    for (s = r->shadows; s; s = next) {
        next = s->sib;
        s->primary = NULL;
        s->sib = NULL;
        s->theirs = sum;
        if (s->ended)
            settle(s);
    }
    r->shadows = NULL;
}

void shadow_worker_stop(struct worker *w)
{
    struct shadow *s = w->shadows;

    /* finish() settles a copy whose primary is gone; a primary still alive here is being
     * torn down too: detach first. Bounded: each pass removes one copy. */
    while (s) {
        unlink_primary(s);
        if (!s->ended) {
            if (s->xfer) {
                up_cancel(s->xfer);
                s->xfer = NULL;
            }
            s->up_res = UP_CONNECT;
            finish(s);
        } else {
            settle(s);
        }
        s = w->shadows;
    }
}
