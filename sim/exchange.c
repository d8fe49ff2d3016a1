/* SPDX-License-Identifier: MIT */
/* exchange.c -- one scripted answer of bascule-sim, from the step's delay to the last
 * byte. An answer is a head and a sequence of units (stream events, or pieces of a
 * body) followed by a tail (end, abort, in-band error, malformed event); each fault is a
 * choice of how many units, how fast, and which tail. Timers pace units; the server's
 * drain callback bounds what is queued. Rendering belongs to the dialect.
 * See docs/internals/sim.md. */
#include "exchange.h"

#include <string.h>

#include "core/compat.h"
#include "content.h"

#define XCHG_BODY_PIECES 4u /* a trickled non-stream body comes in this many pieces */

enum tail {
    TAIL_END = 0,   /* the dialect's terminator (streams), then a clean end */
    TAIL_ABORT,     /* close the connection: the answer must not look complete */
    TAIL_ERROR,     /* an in-band error event, then a clean end */
    TAIL_MALFORMED, /* a malformed event, then a clean end */
    TAIL_CLEAN,     /* a clean end without the terminator */
    TAIL_COUNT
};

struct xchg {
    struct sim_app *app;         /* borrowed; outlives every exchange */
    struct srv_req *req;         /* borrowed; NULL once the response ended or the client left */
    const struct sim_dialect *d; /* static */
    struct sim_call call;        /* owned */
    struct sim_step step;        /* owned */
    uint64_t gen;                /* the models generation the call was counted in */
    bool counted;                /* its end was counted */
    bool held;                   /* waiting for the client to read (stats "held") */
    uv_timer_t timer;            /* closed before the exchange is freed */
    void (*fire)(struct xchg *); /* what the timer runs next */
    bool stream;                 /* units are dialect events, else pieces of <body> */
    size_t next;                 /* the next unit */
    size_t limit;                /* units to send before the tail */
    uint32_t pace_ms;            /* between units; 0: as fast as back-pressure allows */
    size_t stall_at;             /* stall: the unit before which the silence comes */
    bool stalled;                /* ... it came (or there is none: SIZE_MAX) */
    enum tail tail;
    struct bsc_buf body;         /* non-stream: the whole body, owned */
    size_t piece;                /* non-stream: bytes per unit */
    struct bsc_buf out;          /* scratch for one unit, owned */
};

/* ---- the end of an exchange ---- */

static void on_closed(uv_handle_t *h)
{
    struct xchg *x = h->data;

    x->app->live--;
    sim_call_cleanup(&x->call);
    sim_step_cleanup(&x->step);
    bsc_buf_cleanup(&x->body);
    bsc_buf_cleanup(&x->out);
    free(x);
}

/* The response waits (or no longer waits) for the client to read: the stats' "held". */
static void set_held(struct xchg *x, bool held)
{
    if (x->held == held)
        return;
    x->held = held;
    sim_models_held(&x->app->models, bsc_str_cstr(x->call.model), x->gen, held);
}

static void count_end(struct xchg *x, bool cancelled)
{
    set_held(x, false);
    if (x->counted)
        return;
    x->counted = true;
    sim_models_end(&x->app->models, bsc_str_cstr(x->call.model), x->gen, cancelled);
}

/* Forgets the request (after its response ended) and frees the exchange via the loop. */
static void release(struct xchg *x)
{
    x->req = NULL;
    uv_timer_stop(&x->timer);
    if (!uv_is_closing((uv_handle_t *)&x->timer))
        uv_close((uv_handle_t *)&x->timer, on_closed);
}

static void on_abort(struct srv_req *req, void *ud)
{
    struct xchg *x = ud;

    (void)req;
    count_end(x, true);
    release(x);
}

/* How the sim ends a response itself; <x>->req is gone afterwards. */
enum finish { FIN_END = 0, FIN_ABORT, FIN_RESET, FIN_COUNT };

static void finish(struct xchg *x, enum finish how)
{
    struct srv_req *req = x->req;

    /* Our own ending is not the client leaving: no abort callback from here on. */
    srv_req_on_abort(req, NULL, NULL);
    srv_req_on_drain(req, NULL, NULL);
    count_end(x, false);
    if (how == FIN_RESET)
        srv_resp_reset(req);
    else if (how == FIN_ABORT)
        srv_resp_abort(req);
    else
        srv_resp_end(req);
    release(x);
}

/* ---- timers and back-pressure ---- */

static void on_timer(uv_timer_t *t)
{
    struct xchg *x = t->data;

    if (x->req && x->fire)
        x->fire(x);
}

/* Fires <fire> at least <ms> after now. The loop's clock is whole milliseconds, read when the
 * loop last polled: a timer counted from it can fire early by the callbacks run since and by
 * the part of a millisecond the clock dropped, so the clock is read again and one more
 * millisecond given. A scripted delay is then never shorter than the script says. */
static void arm(struct xchg *x, uint32_t ms, void (*fire)(struct xchg *))
{
    x->fire = fire;
    if (ms) {
        uv_update_time(x->timer.loop);
        ms = ms < UINT32_MAX ? ms + 1 : ms;
    }
    uv_timer_start(&x->timer, on_timer, ms, 0);
}

/* ---- heads ---- */

/* The step's own content-type header, or NULL. */
static const char *step_content_type(const struct xchg *x)
{
    for (size_t i = 0; i < x->step.n_headers; i++)
        if (strcmp(x->step.headers[i].name, "content-type") == 0)
            return x->step.headers[i].value;
    return NULL;
}

/* Sends the head: <status>, <content_type>, the step's extra headers. A step's own
 * content-type replaces <content_type> (a JSON error labelled as a stream, or a scripted
 * SSE body on a `status` 200), never doubles it. */
static enum bsc_err send_head_err(struct xchg *x, int status, const char *content_type,
                                  int64_t content_length, const char *error_type)
{
    struct srv_header h[SIM_STEP_MAX_HEADERS + 4];
    size_t n = 0;

    if (error_type && x->d->error_type_header)
        h[n++] = (struct srv_header){bsc_str_cstr(x->d->error_type_header),
                                     bsc_str_cstr(error_type)};
    if (!step_content_type(x))
        h[n++] = (struct srv_header){BSC_STR("content-type"), bsc_str_cstr(content_type)};
    h[n++] = (struct srv_header){BSC_STR("x-sim-action"),
                                 bsc_str_cstr(sim_action_name(x->step.action))};
    if (x->stream)
        h[n++] = (struct srv_header){BSC_STR("cache-control"), BSC_STR("no-cache")};
    for (size_t i = 0; i < x->step.n_headers; i++)
        h[n++] = (struct srv_header){bsc_str_cstr(x->step.headers[i].name),
                                     bsc_str_cstr(x->step.headers[i].value)};
    return srv_resp_head(x->req, status, h, n, content_length);
}

static enum bsc_err send_head(struct xchg *x, int status, const char *content_type,
                              int64_t content_length)
{
    return send_head_err(x, status, content_type, content_length, NULL);
}

/* A whole answer in one go, then the end. */
static void send_whole(struct xchg *x, int status, const char *content_type,
                       struct bsc_str body, const char *error_type)
{
    enum bsc_err err = send_head_err(x, status, content_type, (int64_t)body.len, error_type);

    if (!err && body.len)
        err = srv_resp_body(x->req, body.p, body.len);
    finish(x, err ? FIN_ABORT : FIN_END);
}

/* The error answer for the step: its own body, or the dialect's default for its status
 * with the step's type/code/message overrides. */
static void error_parts(struct xchg *x, int status, const char **type, const char **code,
                        char *msg, size_t msglen)
{
    x->d->default_error(&x->call, status, type, code, msg, msglen);
    if (x->step.error_type)
        *type = x->step.error_type;
    if (x->step.error_code)
        *code = x->step.error_code;
    if (x->step.message)
        snprintf(msg, msglen, "%s", x->step.message);
}

/* Answers with <http_status> and the error body that <status> stands for. */
static void send_error(struct xchg *x, int http_status, int status)
{
    const char *type = NULL, *code;
    char msg[512];
    enum bsc_err err = BSC_OK;

    bsc_buf_reset(&x->out);
    if (x->step.body) {
        err = bsc_buf_append_cstr(&x->out, x->step.body);
    } else {
        error_parts(x, status, &type, &code, msg, sizeof(msg));
        /* The status the body goes out with (200 for error_200), as error_event gets. */
        err = x->d->error_body(http_status, type, code, msg, &x->out);
    }
    if (err) {
        finish(x, FIN_RESET);
        return;
    }
    send_whole(x, http_status, "application/json", bsc_buf_str(&x->out), type);
}

/* ---- units and tails ---- */

static enum bsc_err render_tail(struct xchg *x, struct bsc_buf *out)
{
    const char *type, *code;
    char msg[512];

    switch (x->tail) {
    case TAIL_END:
        return x->stream ? x->d->end_event(&x->call, out) : BSC_OK;
    case TAIL_ERROR:
        error_parts(x, 500, &type, &code, msg, sizeof(msg));
        if (x->step.body) /* a custom in-band payload, framed as one event */
            return bsc_buf_appendf(out, "data: %s\n\n", x->step.body);
        return x->d->error_event(200, type, code, msg, out);
    case TAIL_MALFORMED:
        return x->d->malformed_event(&x->call, out);
    default:
        return BSC_OK;
    }
}

static void send_tail(struct xchg *x)
{
    enum bsc_err err;

    if (x->tail == TAIL_ABORT) {
        finish(x, FIN_ABORT);
        return;
    }
    bsc_buf_reset(&x->out);
    err = render_tail(x, &x->out);
    if (!err && x->out.len)
        err = srv_resp_body(x->req, x->out.p, x->out.len);
    finish(x, err ? FIN_ABORT : FIN_END);
}

/* Sends unit <i>: stream event <i>, or the <i>-th piece of the body. */
static enum bsc_err send_unit(struct xchg *x, size_t i)
{
    size_t off, len;
    enum bsc_err err;

    if (!x->stream) {
        off = i * x->piece;
        len = off >= x->body.len ? 0 : x->body.len - off;
        if (len > x->piece)
            len = x->piece;
        return len ? srv_resp_body(x->req, x->body.p + off, len) : BSC_OK;
    }
    bsc_buf_reset(&x->out);
    err = x->d->event(&x->call, i, &x->out);
    return err ? err : srv_resp_body(x->req, x->out.p, x->out.len);
}

static void pump(struct xchg *x);

static void on_drain(struct srv_req *req, void *ud)
{
    struct xchg *x = ud;

    (void)req;
    set_held(x, false);
    if (x->req)
        pump(x);
}

/* Sends units until the limit, a pacing wait or back-pressure; then the tail. */
static void pump(struct xchg *x)
{
    while (x->next < x->limit) {
        if (x->next == x->stall_at && !x->stalled) {
            x->stalled = true;
            arm(x, x->step.stall_ms, pump);
            return;
        }
        if (send_unit(x, x->next)) {
            finish(x, FIN_ABORT);
            return;
        }
        x->next++;
        if (x->pace_ms) {
            arm(x, x->pace_ms, x->next < x->limit ? pump : send_tail);
            return;
        }
        if (srv_req_pending(x->req) > SIM_MAX_PENDING / 2) {
            set_held(x, true);
            srv_req_on_drain(x->req, on_drain, x);
            return;
        }
    }
    send_tail(x);
}

/* ---- the shapes of an answer ---- */

static uint32_t after_events(const struct xchg *x, uint32_t dflt)
{
    return x->step.has_after_events ? x->step.after_events : dflt;
}

static void start_stream(struct xchg *x, size_t limit, enum tail tail, uint32_t pace_ms)
{
    size_t count = x->d->event_count(&x->call);

    x->stream = true;
    x->limit = limit < count ? limit : count;
    x->tail = tail;
    x->pace_ms = pace_ms;
    if (send_head(x, 200, x->d->stream_content_type, -1)) {
        finish(x, FIN_ABORT);
        return;
    }
    pump(x);
}

/* A non-stream body in <pieces> pieces; with <cut>, only the first half, then abort. */
static void start_body(struct xchg *x, size_t pieces, bool cut, uint32_t pace_ms)
{
    int64_t full = (int64_t)x->body.len;

    x->stream = false;
    x->pace_ms = pace_ms;
    if (cut) {
        x->piece = x->body.len / 2;
        x->limit = x->piece ? 1 : 0;
        x->tail = TAIL_ABORT;
    } else {
        x->piece = (x->body.len + pieces - 1) / pieces;
        x->limit = x->piece ? (x->body.len + x->piece - 1) / x->piece : 0;
        x->tail = TAIL_END;
    }
    if (send_head(x, 200, "application/json", full)) {
        finish(x, FIN_ABORT);
        return;
    }
    pump(x);
}

static uint32_t token_pace(const struct xchg *x, int32_t spec_delay)
{
    return spec_delay >= 0 ? (uint32_t)spec_delay : x->app->token_delay_ms;
}

static void respond_non_stream(struct xchg *x)
{
    enum bsc_err err;

    if (x->step.action == SIM_ACT_MALFORMED) {
        err = x->d->malformed_body(&x->call, &x->out);
        if (err)
            finish(x, FIN_RESET);
        else
            send_whole(x, 200, "application/json", bsc_buf_str(&x->out), NULL);
        return;
    }
    err = x->d->body(&x->call, &x->body);
    if (err) {
        finish(x, FIN_RESET);
        return;
    }
    if (x->step.action == SIM_ACT_CUT)
        start_body(x, 1, true, 0);
    else if (x->step.action == SIM_ACT_TRICKLE)
        start_body(x, XCHG_BODY_PIECES, false, x->step.interval_ms);
    else
        send_whole(x, 200, "application/json", bsc_buf_str(&x->body), NULL);
}

static void respond(struct xchg *x)
{
    size_t count = x->d->event_count(&x->call);
    /* A step's "stream" answers in that shape whatever the request asked. */
    bool stream = x->call.ep == SIM_EP_CHAT &&
                  (x->step.has_stream ? x->step.stream : x->call.stream);

    switch (x->step.action) {
    case SIM_ACT_RESET:
        finish(x, FIN_RESET);
        return;
    case SIM_ACT_HANG:
        return; /* only on_abort ends it */
    case SIM_ACT_STATUS:
        send_error(x, x->step.status, x->step.status);
        return;
    case SIM_ACT_ERROR_200:
        if (stream) {
            start_stream(x, after_events(x, 0), TAIL_ERROR, x->pace_ms);
        } else {
            send_error(x, 200, 500); /* a server-error object under a 200 status */
        }
        return;
    default:
        break;
    }
    if (!stream) {
        respond_non_stream(x);
        return;
    }
    if (x->step.action == SIM_ACT_STALL)
        x->stall_at = after_events(x, 1);
    if (x->step.action == SIM_ACT_MALFORMED)
        start_stream(x, after_events(x, 1), TAIL_MALFORMED, x->pace_ms);
    else if (x->step.action == SIM_ACT_NO_DONE)
        start_stream(x, count, TAIL_CLEAN, x->pace_ms);
    else if (x->step.action == SIM_ACT_CUT)
        start_stream(x, after_events(x, (uint32_t)(count / 2)), TAIL_ABORT, x->pace_ms);
    else if (x->step.action == SIM_ACT_TRICKLE)
        start_stream(x, count, TAIL_END, x->step.interval_ms);
    else
        start_stream(x, count, TAIL_END, x->pace_ms);
}

/* A trailing assistant message is the start of the answer (a prefill): the answer goes on
 * after it. When the answer the call would get begins with that text, only the rest is
 * said; otherwise the whole answer (a model is free to go its own way). Tool calls and
 * embeddings are left alone. Out of memory: the whole answer. */
static void continue_prefill(struct sim_call *call)
{
    struct bsc_buf full;
    struct bsc_str p;

    if (!call->prefill || call->ep != SIM_EP_CHAT || call->tool_name)
        return;
    p = bsc_str_cstr(call->prefill);
    bsc_buf_init(&full, SIM_OUT_MAX);
    if (sim_content_answer(call->content, call->n_tokens, &full) == BSC_OK && full.len >= p.len &&
        memcmp(full.p, p.p, p.len) == 0 &&
        (call->prefill_rest = bsc_str_dup(bsc_str_make(full.p + p.len, full.len - p.len)))) {
        call->content = bsc_str_cstr(call->prefill_rest);
        call->n_tokens = sim_content_pieces(call->content);
        call->finish_length = false;
    }
    bsc_buf_cleanup(&full);
}

/* Answers <status> with the dialect's error body of <type>, <code>, <message>. */
static void send_error_text(struct xchg *x, int status, const char *type, const char *code,
                            const char *message)
{
    bsc_buf_reset(&x->out);
    if (x->d->error_body(status, type, code, message, &x->out)) {
        finish(x, FIN_RESET);
        return;
    }
    send_whole(x, status, "application/json", bsc_buf_str(&x->out), type);
}

void sim_xchg_start(struct sim_app *app, struct srv_req *req, const struct sim_dialect *d,
                    struct sim_call *call, struct sim_plan *plan)
{
    struct xchg *x = calloc(1, sizeof(*x));
    bool refuse;

    if (!x) {
        sim_models_end(&app->models, bsc_str_cstr(call->model), plan->gen, false);
        sim_call_cleanup(call);
        sim_plan_cleanup(plan);
        srv_resp_error(req, 503, "server_error", NULL, "bascule-sim: out of memory");
        return;
    }
    x->app = app;
    x->req = req;
    x->d = d;
    x->call = *call;
    x->step = plan->step;
    x->gen = plan->gen;
    x->pace_ms = token_pace(x, plan->token_delay_ms);
    x->stall_at = SIZE_MAX;
    memset(call, 0, sizeof(*call));
    memset(&plan->step, 0, sizeof(plan->step));
    x->call.finish_reason = x->step.finish_reason; /* both owned by <x> */
    sim_step_apply(&x->step, &x->call); /* scripted content / tool arguments, same owner */
    sim_call_json_content(&x->call);    /* else the generated JSON, when the request asked */
    refuse = x->call.prefill && plan->prefill_refuse && x->call.ep == SIM_EP_CHAT;
    if (!refuse)
        continue_prefill(&x->call);
    bsc_buf_init(&x->body, SIM_OUT_MAX);
    bsc_buf_init(&x->out, SIM_OUT_MAX);
    uv_timer_init(app->loop, &x->timer);
    x->timer.data = x;
    app->live++;
    srv_req_on_abort(req, on_abort, x);
    if (refuse) { /* "prefill": "refuse": the trailing assistant message is not taken */
        send_error_text(x, 400, "invalid_request_error", "prefill_not_supported",
                        "this model does not take a trailing assistant message");
        return;
    }
    if (x->step.action == SIM_ACT_HANG)
        return;
    if (x->step.delay_ms)
        arm(x, x->step.delay_ms, respond);
    else
        respond(x);
}
