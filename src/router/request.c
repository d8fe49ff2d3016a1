/* SPDX-License-Identifier: MIT */
/* request.c -- the request state machine (DESIGN §3, STYLE §6). One list of states, one
 * handler per state, one place that changes state (req_goto). Events (upstream head,
 * body bytes, completion, timers, client abort) record what happened and call req_run();
 * handlers never call each other. RELAY is the commit point: once the first byte went to
 * the client there is no path back to PICK. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/log.h"
#include "router/access_log.h"
#include "router/attempt.h"
#include "router/request.h"
#include "router/state.h"
#include "router/gateway.h"
#include "stream/sse_parse.h"
#include "stream/sse_write.h"
#include "upstream/upstream.h"

#define REQ_STATES(X)                                                                     \
    X(PICK, pick, "choose the next target; stop when none is eligible")                   \
    X(ATTEMPT, attempt, "upstream transfer running until head, first event or error")     \
    X(RELAY, relay, "committed: streaming to the client; no way back to PICK")            \
    X(REPLY, reply, "a complete upstream answer is written to the client")                \
    X(REPLY_ERROR, reply_error, "write the typed, OpenAI-shaped error")                   \
    X(DONE, done, "log, account, release")

enum req_state {
#define X(NAME, name, doc) REQ_ST_##NAME,
    REQ_STATES(X)
#undef X
        REQ_ST_COUNT
};

/* How the upstream body is consumed during an attempt. */
enum body_mode { BODY_NONE = 0, BODY_BUFFER, BODY_SSE };

struct request {
    struct worker *w;         /* borrowed */
    struct srv_req *sreq;     /* borrowed; NULL once the client went away or was answered */
    struct cfg *cfg;          /* a ref */
    const struct cfg_route *route; /* borrowed from cfg */
    struct json_object *json; /* owned */
    struct bsc_str body;      /* borrowed from sreq */
    struct bsc_str model_span;
    bool stream, include_usage;
    char id[130];             /* copy of the request id, for logs after sreq is gone */

    enum req_state state;
    uint64_t start_us, deadline_ms;
    uv_timer_t timer;         /* the attempt / deadline timer */
    bool timer_armed;

    /* the current attempt */
    const struct cfg_target *target; /* borrowed from cfg */
    struct up_transfer *xfer;        /* NULL when none is running */
    struct bsc_buf up_body;          /* owned: the request body sent upstream */
    char *up_hdr_store;              /* owned: storage for the upstream header lines */
    enum body_mode mode;
    struct bsc_buf resp;             /* owned: buffered upstream body (BODY_BUFFER) */
    struct sse_parser sse;           /* BODY_SSE */
    struct bsc_buf out;              /* owned: SSE bytes to write downstream */
    int up_status;
    char up_ctype[128];
    bool saw_done;                   /* the upstream stream ended with [DONE] */
    bool stream_error;               /* an error event arrived in the stream */
    bool timed_out;
    enum up_result up_res;
    char up_detail[256];

    /* the answer */
    bool committed; /* response head sent */
    int status;
    uint64_t bytes_out;
    uint64_t ttfb_us;
    const char *termination; /* access-log termination code */
    struct attempt attempts[ATTEMPT_MAX];
    unsigned n_attempts;

    /* the error to reply with (REPLY_ERROR) */
    int err_status;
    const char *err_type, *err_code;
    char err_msg[256];
};

typedef void req_step_fn(struct request *r);

#define X(NAME, name, doc) static req_step_fn st_##name;
REQ_STATES(X)
#undef X

static const struct {
    const char *name;
    req_step_fn *step;
} req_states[REQ_ST_COUNT] = {
#define X(NAME, name, doc) [REQ_ST_##NAME] = {#name, st_##name},
    REQ_STATES(X)
#undef X
};

static void req_goto(struct request *r, enum req_state next)
{
    BSC_BUG_ON(r->state == REQ_ST_DONE);
    BSC_BUG_ON(r->state == REQ_ST_RELAY && next == REQ_ST_PICK);
    LOG_DEBUG("%s: %s -> %s", r->id, req_states[r->state].name, req_states[next].name);
    r->state = next;
}

static void req_run(struct request *r)
{
    enum req_state prev;

    do {
        prev = r->state;
        req_states[prev].step(r);
    } while (r->state != prev && r->state != REQ_ST_DONE);
    if (r->state == REQ_ST_DONE)
        st_done(r);
}

static void set_error(struct request *r, int status, const char *type, const char *code,
                      const char *fmt, ...) BSC_PRINTF(5, 6);

static void set_error(struct request *r, int status, const char *type, const char *code,
                      const char *fmt, ...)
{
    va_list ap;

    r->err_status = status;
    r->err_type = type;
    r->err_code = code;
    va_start(ap, fmt);
    vsnprintf(r->err_msg, sizeof(r->err_msg), fmt, ap);
    va_end(ap);
}

/* ---- timers ---- */

static void on_timer(uv_timer_t *h)
{
    struct request *r = h->data;

    r->timer_armed = false;
    if (r->state != REQ_ST_ATTEMPT && r->state != REQ_ST_RELAY)
        return;
    r->timed_out = true;
    if (r->xfer) {
        up_cancel(r->xfer);
        r->xfer = NULL;
    }
    if (r->state == REQ_ST_RELAY) {
        r->termination = "upstream_timeout"; /* st_relay ends the stream with an error event */
    } else {
        set_error(r, 504, "server_error", "deadline_exhausted",
                  "no answer from %s within the request deadline", r->target->id);
        r->termination = "upstream_timeout";
        req_goto(r, REQ_ST_REPLY_ERROR);
    }
    req_run(r);
}

static void arm_timer(struct request *r, uint64_t at_ms)
{
    uint64_t now = bsc_now_ms();

    uv_timer_start(&r->timer, on_timer, at_ms > now ? at_ms - now : 0, 0);
    r->timer_armed = true;
}

/* ---- downstream writes ---- */

static void on_drain(struct srv_req *sreq, void *ud)
{
    struct request *r = ud;

    (void)sreq;
    if (r->xfer)
        up_resume(r->xfer);
}

/* Writes what is in r->out; returns true when the upstream should pause. */
static bool flush_out(struct request *r)
{
    if (!r->sreq || r->out.len == 0)
        return false;
    srv_resp_body(r->sreq, r->out.p, r->out.len);
    r->bytes_out += r->out.len;
    bsc_buf_reset(&r->out);
    if (srv_req_pending(r->sreq) > r->cfg->limits.max_stream_buffer_bytes) {
        srv_req_on_drain(r->sreq, on_drain, r);
        return true;
    }
    return false;
}

static void add_route_headers(struct request *r, struct srv_header *h, size_t *n, char *attempts,
                              size_t attempts_len)
{
    snprintf(attempts, attempts_len, "%u", r->n_attempts);
    if (r->target) {
        h[(*n)++] = (struct srv_header){BSC_STR("x-bascule-target"), bsc_str_cstr(r->target->id)};
    }
    h[(*n)++] = (struct srv_header){BSC_STR("x-bascule-attempts"), bsc_str_cstr(attempts)};
    h[(*n)++] = (struct srv_header){BSC_STR("x-bascule-workflow"),
                                    bsc_str_cstr(r->n_attempts
                                                     ? attempt_workflow_name(
                                                           r->attempts[r->n_attempts - 1].workflow)
                                                     : "primary")};
}

/* Appends the one error event that ends a committed stream (DESIGN §5). */
static void write_error_event(struct request *r, const char *message)
{
    struct bsc_buf *b = &r->out;

    bsc_buf_append_cstr(b, "data: {\"error\":{\"message\":");
    bsc_buf_append_json_str(b, bsc_str_cstr(message));
    bsc_buf_append_cstr(b, ",\"type\":\"server_error\",\"param\":null,"
                           "\"code\":\"upstream_interrupted\"},\"request_id\":");
    bsc_buf_append_json_str(b, bsc_str_cstr(r->id));
    bsc_buf_append_cstr(b, "}\n\n");
}

/* Sends the SSE response head: the commit point. */
static void commit_stream(struct request *r)
{
    struct srv_header h[8];
    size_t n = 0;
    char attempts[16];

    h[n++] = (struct srv_header){BSC_STR("Content-Type"), BSC_STR("text/event-stream; charset=utf-8")};
    h[n++] = (struct srv_header){BSC_STR("Cache-Control"), BSC_STR("no-cache")};
    h[n++] = (struct srv_header){BSC_STR("X-Accel-Buffering"), BSC_STR("no")};
    add_route_headers(r, h, &n, attempts, sizeof(attempts));
    srv_resp_head(r->sreq, 200, h, n, -1);
    r->committed = true;
    r->status = 200;
    r->ttfb_us = bsc_now_us() - r->start_us;
}

/* ---- upstream callbacks ---- */

static int on_sse_event(void *ud, struct bsc_str event, struct bsc_str data)
{
    struct request *r = ud;

    (void)event;
    if (sse_is_done(data)) {
        r->saw_done = true;
        sse_write_done(&r->out);
        return 1; /* nothing after [DONE] matters */
    }
    if (data.len > 10 && memmem(data.p, data.len, "\"error\"", 7) && data.p[0] == '{') {
        /* An in-band error: classified by the resilience engine; relayed as is. */
        r->stream_error = true;
    }
    sse_write_data(&r->out, data);
    return 0;
}

static int on_sse_comment(void *ud, struct bsc_str text)
{
    (void)ud;
    (void)text; /* keep-alive comments are not relayed: the gateway sends its own */
    return 0;
}

static const struct sse_callbacks sse_cb = {on_sse_event, on_sse_comment, NULL};

static void on_up_head(void *ud, struct up_transfer *t, int status)
{
    struct request *r = ud;
    struct bsc_str ct = up_header(t, BSC_STR("content-type"));

    r->up_status = status;
    snprintf(r->up_ctype, sizeof(r->up_ctype), "%.*s", BSC_STR_FMT(ct));
    if (r->stream && status == 200 && ct.len >= 17 &&
        strncasecmp(ct.p, "text/event-stream", 17) == 0) {
        r->mode = BODY_SSE;
        sse_parser_init(&r->sse, 4u << 20, &sse_cb, r);
    } else {
        r->mode = BODY_BUFFER;
    }
}

static bool on_up_data(void *ud, struct up_transfer *t, const char *p, size_t len)
{
    struct request *r = ud;

    (void)t;
    if (r->mode == BODY_BUFFER) {
        if (bsc_buf_append(&r->resp, p, len) != BSC_OK) {
            up_cancel(r->xfer);
            r->xfer = NULL;
            set_error(r, 502, "server_error", "upstream_response_too_large",
                      "the upstream answer passed %zu bytes", r->resp.max);
            r->termination = "upstream_too_large";
            req_goto(r, r->committed ? REQ_ST_DONE : REQ_ST_REPLY_ERROR);
            req_run(r);
        }
        return false;
    }
    if (r->saw_done)
        return false;
    if (sse_parser_feed(&r->sse, p, len) < 0) {
        up_cancel(r->xfer);
        r->xfer = NULL;
        r->termination = "upstream_bad_stream";
        if (!r->committed) {
            set_error(r, 502, "server_error", "upstream_bad_stream",
                      "the upstream stream could not be parsed");
            req_goto(r, REQ_ST_REPLY_ERROR);
        } else {
            write_error_event(r, "the upstream stream could not be parsed");
            flush_out(r);
            req_goto(r, REQ_ST_DONE);
        }
        req_run(r);
        return false;
    }
    if (r->out.len == 0)
        return false;
    if (r->committed)
        arm_timer(r, bsc_now_ms() + r->route->envelope.deadline_ms); /* idle gap bound */
    if (!r->committed) {
        commit_stream(r);
        attempt_end(&r->attempts[r->n_attempts - 1], bsc_now_us(), ATTEMPT_COMMITTED, NULL);
        req_goto(r, REQ_ST_RELAY);
    }
    return flush_out(r);
}

static void on_up_done(void *ud, struct up_transfer *t, enum up_result res, const char *detail)
{
    struct request *r = ud;

    (void)t;
    r->xfer = NULL;
    r->up_res = res;
    snprintf(r->up_detail, sizeof(r->up_detail), "%s", detail ? detail : "");
    if (r->mode == BODY_SSE) {
        bool pending = false;
        if (!r->saw_done)
            sse_parser_finish(&r->sse, &pending);
        if (r->out.len && !r->committed) {
            commit_stream(r);
            req_goto(r, REQ_ST_RELAY);
        }
        flush_out(r);
    }
    req_run(r);
}

static const struct up_callbacks up_cb = {on_up_head, on_up_data, on_up_done};

/* ---- states ---- */

/* Builds the upstream body: the client's bytes with "model" replaced. */
static enum bsc_err build_up_body(struct request *r)
{
    struct bsc_buf *b = &r->up_body;
    size_t pre = (size_t)(r->model_span.p - r->body.p);
    size_t post = r->body.len - pre - r->model_span.len;
    enum bsc_err err;

    bsc_buf_reset(b);
    err = bsc_buf_append(b, r->body.p, pre);
    if (!err)
        err = bsc_buf_append_json_str(b, bsc_str_cstr(r->target->model));
    if (!err)
        err = bsc_buf_append(b, r->model_span.p + r->model_span.len, post);
    return err;
}

static enum bsc_err start_transfer(struct request *r)
{
    const struct cfg_provider *p = r->target->provider;
    struct bsc_buf hb, url;
    const char *lines[40];
    size_t n = 0, offs[40];
    struct up_request ureq;
    enum bsc_err err;
    const char *key = hstate_next_key(r->w->gw->hs, p);

    bsc_buf_init(&hb, 64 * 1024);
    bsc_buf_init(&url, 8192);
    err = bsc_buf_appendf(&url, "%s/chat/completions", p->base_url);
    /* Header lines are appended into one buffer, NUL-separated; pointers fixed after. */
#define HDR(...)                                                                           \
    do {                                                                                   \
        if (!err && n < BSC_ARRAY_LEN(lines)) {                                            \
            offs[n++] = hb.len;                                                            \
            err = bsc_buf_appendf(&hb, __VA_ARGS__);                                       \
            if (!err)                                                                      \
                err = bsc_buf_append_char(&hb, '\0');                                      \
        }                                                                                  \
    } while (0)
    HDR("Content-Type: application/json");
    HDR("Accept: %s", r->stream ? "text/event-stream" : "application/json");
    HDR("X-Request-Id: %s", r->id);
    if (key)
        HDR("Authorization: Bearer %s", key);
    for (size_t i = 0; i < p->n_headers; i++)
        HDR("%s: %s", p->headers[i].name, p->headers[i].value);
#undef HDR
    if (err)
        goto out;
    for (size_t i = 0; i < n; i++)
        lines[i] = hb.p + offs[i];
    ureq = (struct up_request){
        .url = url.p,
        .method = "POST",
        .headers = lines,
        .n_headers = n,
        .body = r->up_body.p,
        .body_len = r->up_body.len,
        .connect_timeout_ms = p->connect_timeout_ms,
    };
    err = up_start(r->w->up, &ureq, &up_cb, r, &r->xfer);
out:
    bsc_buf_cleanup(&url);
    bsc_buf_cleanup(&hb);
    return err;
}

static void reset_attempt(struct request *r)
{
    r->mode = BODY_NONE;
    r->up_status = 0;
    r->up_ctype[0] = '\0';
    r->saw_done = false;
    r->stream_error = false;
    r->timed_out = false;
    r->up_res = UP_OK;
    r->up_detail[0] = '\0';
    bsc_buf_reset(&r->resp);
    bsc_buf_reset(&r->out);
}

static void begin_attempt(struct request *r, enum attempt_workflow wf)
{
    reset_attempt(r);
    if (r->n_attempts == ATTEMPT_MAX || build_up_body(r) != BSC_OK) {
        set_error(r, 503, "server_error", "gateway_overloaded", "could not start an attempt");
        req_goto(r, REQ_ST_REPLY_ERROR);
        return;
    }
    attempt_begin(&r->attempts[r->n_attempts++], r->target, wf, bsc_now_us());
    if (start_transfer(r) != BSC_OK) {
        set_error(r, 503, "server_error", "gateway_overloaded", "could not start an attempt");
        req_goto(r, REQ_ST_REPLY_ERROR);
        return;
    }
    arm_timer(r, r->deadline_ms);
    req_goto(r, REQ_ST_ATTEMPT);
}

static void st_pick(struct request *r)
{
    const struct cfg_tier *tier = &r->route->primary;

    if (bsc_now_ms() >= r->deadline_ms) {
        set_error(r, 504, "server_error", "deadline_exhausted", "the request deadline passed");
        req_goto(r, REQ_ST_REPLY_ERROR);
        return;
    }
    r->target = NULL;
    for (size_t i = 0; i < tier->n; i++) {
        const struct cfg_target *t = tier->targets[i];
        if (!t->disabled && !t->provider->disabled) {
            r->target = t;
            break;
        }
    }
    if (!r->target) {
        set_error(r, 503, "server_error", "no_eligible_target",
                  "route '%s' has no enabled target", r->route->id);
        r->termination = "no_target";
        req_goto(r, REQ_ST_REPLY_ERROR);
        return;
    }
    begin_attempt(r, ATTEMPT_WF_PRIMARY);
}

static void st_attempt(struct request *r)
{
    struct attempt *a;

    if (r->xfer)
        return; /* still running */
    /* The transfer ended before anything was committed downstream. */
    a = &r->attempts[r->n_attempts - 1];
    if (r->up_res != UP_OK) {
        attempt_end(a, bsc_now_us(), ATTEMPT_FAILED, up_result_name(r->up_res));
        set_error(r, r->up_res == UP_TIMEOUT ? 504 : 502, "server_error", "upstream_unavailable",
                  "upstream %s failed: %s (%s)", r->target->id, up_result_name(r->up_res),
                  r->up_detail);
        r->termination = "upstream_error";
        req_goto(r, REQ_ST_REPLY_ERROR);
        return;
    }
    if (r->mode == BODY_SSE) {
        /* A stream that produced no event at all. */
        attempt_end(a, bsc_now_us(), ATTEMPT_FAILED, "empty_stream");
        set_error(r, 502, "server_error", "upstream_interrupted",
                  "the upstream stream ended before any event");
        r->termination = "upstream_empty_stream";
        req_goto(r, REQ_ST_REPLY_ERROR);
        return;
    }
    attempt_end(a, bsc_now_us(), r->up_status < 400 ? ATTEMPT_OK : ATTEMPT_FAILED, NULL);
    req_goto(r, REQ_ST_REPLY);
}

static void st_relay(struct request *r)
{
    if (r->xfer)
        return; /* streaming: upstream events drive us */
    if (r->timer_armed) {
        uv_timer_stop(&r->timer);
        r->timer_armed = false;
    }
    if (!r->sreq) {
        req_goto(r, REQ_ST_DONE);
        return;
    }
    if (r->saw_done) {
        srv_resp_end(r->sreq);
        r->sreq = NULL;
        r->termination = r->termination ? r->termination : "ok";
    } else {
        /* Dropped without [DONE]: a failure, never a clean end (DESIGN §5). */
        write_error_event(r, r->timed_out ? "the upstream stream stalled past the deadline"
                                          : "the upstream stream was interrupted");
        flush_out(r);
        srv_resp_abort(r->sreq);
        r->sreq = NULL;
        r->termination = "upstream_interrupted";
        if (r->n_attempts)
            r->attempts[r->n_attempts - 1].outcome = ATTEMPT_PARTIAL;
    }
    req_goto(r, REQ_ST_DONE);
}

static void st_reply(struct request *r)
{
    struct srv_header h[8];
    size_t n = 0;
    char attempts[16];
    const char *ctype = r->up_ctype[0] ? r->up_ctype : "application/json";

    if (r->timer_armed) {
        uv_timer_stop(&r->timer);
        r->timer_armed = false;
    }
    if (r->sreq) {
        add_route_headers(r, h, &n, attempts, sizeof(attempts));
        srv_resp_send(r->sreq, r->up_status, ctype, h, n, r->resp.p, r->resp.len);
        r->status = r->up_status;
        r->bytes_out += r->resp.len;
        r->ttfb_us = bsc_now_us() - r->start_us;
        r->sreq = NULL;
    }
    r->termination = r->termination ? r->termination : "ok";
    req_goto(r, REQ_ST_DONE);
}

static void st_reply_error(struct request *r)
{
    if (r->timer_armed) {
        uv_timer_stop(&r->timer);
        r->timer_armed = false;
    }
    if (r->sreq) {
        srv_resp_error(r->sreq, r->err_status, r->err_type, r->err_code, r->err_msg);
        r->status = r->err_status;
        r->sreq = NULL;
    }
    r->termination = r->termination ? r->termination : "error";
    req_goto(r, REQ_ST_DONE);
}

static void request_free(uv_handle_t *h)
{
    struct request *r = h->data;

    bsc_buf_cleanup(&r->up_body);
    bsc_buf_cleanup(&r->resp);
    bsc_buf_cleanup(&r->out);
    free(r);
}

static void st_done(struct request *r)
{
    struct access_entry e;

    if (r->xfer) {
        up_cancel(r->xfer);
        r->xfer = NULL;
    }
    if (r->sreq) {
        /* Not answered yet (a relay that ended abnormally): close without a clean end. */
        srv_resp_abort(r->sreq);
        r->sreq = NULL;
    }
    if (r->mode == BODY_SSE)
        sse_parser_cleanup(&r->sse);
    r->mode = BODY_NONE;
    e = (struct access_entry){
        .request_id = r->id,
        .route = r->route ? r->route->id : NULL,
        .target = r->target ? r->target->id : NULL,
        .status = r->status,
        .stream = r->stream,
        .bytes_in = r->body.len,
        .bytes_out = r->bytes_out,
        .duration_us = bsc_now_us() - r->start_us,
        .ttfb_us = r->ttfb_us,
        .attempts = r->attempts,
        .n_attempts = r->n_attempts,
        .termination = r->termination ? r->termination : "ok",
    };
    access_log_write(&e);
    r->body = BSC_STR_NULL;
    json_object_put(r->json);
    r->json = NULL;
    cfg_unref(r->cfg);
    r->cfg = NULL;
    r->w->inflight--;
    uv_timer_stop(&r->timer);
    uv_close((uv_handle_t *)&r->timer, request_free);
}

/* ---- entry points ---- */

static void on_client_abort(struct srv_req *sreq, void *ud)
{
    struct request *r = ud;

    (void)sreq;
    r->sreq = NULL;
    r->body = BSC_STR_NULL; /* borrowed from the now freed srv_req */
    if (r->xfer) {
        up_cancel(r->xfer);
        r->xfer = NULL;
    }
    if (r->n_attempts && r->attempts[r->n_attempts - 1].outcome == ATTEMPT_RUNNING)
        attempt_end(&r->attempts[r->n_attempts - 1], bsc_now_us(), ATTEMPT_CANCELLED,
                    "client_abort");
    r->termination = "client_abort";
    r->status = r->status ? r->status : 499;
    if (r->state != REQ_ST_DONE) {
        r->state = REQ_ST_DONE;
        st_done(r);
    }
}

void req_chat_start(struct worker *w, struct srv_req *sreq, struct chat_in *in)
{
    struct request *r = calloc(1, sizeof(*r));

    if (!r) {
        json_object_put(in->json);
        cfg_unref(in->cfg);
        srv_resp_error(sreq, 503, "server_error", "gateway_overloaded", "out of memory");
        return;
    }
    r->w = w;
    r->sreq = sreq;
    r->cfg = in->cfg;
    r->route = in->route;
    r->json = in->json;
    r->body = in->body;
    r->model_span = in->model_span;
    r->stream = in->stream;
    r->include_usage = in->include_usage;
    snprintf(r->id, sizeof(r->id), "%s", srv_req_id(sreq));
    r->start_us = srv_req_start_us(sreq);
    r->deadline_ms = r->start_us / 1000 + r->route->envelope.deadline_ms;
    bsc_buf_init(&r->up_body, r->cfg->limits.max_body_bytes + 4096);
    bsc_buf_init(&r->resp, 64u << 20);
    bsc_buf_init(&r->out, 8u << 20);
    uv_timer_init(&w->loop, &r->timer);
    r->timer.data = r;
    r->state = REQ_ST_PICK;
    w->inflight++;
    srv_req_on_abort(sreq, on_client_abort, r);
    req_run(r);
}
