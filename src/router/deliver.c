/* SPDX-License-Identifier: MIT */
/* deliver.c -- the client side of a request: the commit point (the SSE head), relaying
 * stream frames with back-pressure, the complete answer, and errors -- each in the
 * client's dialect (OpenAI bytes pass unchanged; another dialect goes through its
 * down_ops). It never decides anything: request.c calls it once a decision is made. */
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "metrics/metrics.h"
#include "router/cache_req.h"
#include "router/contract.h"
#include "router/deliver.h"
#include "router/deliver_note.h"
#include "router/exchange.h"
#include "router/guard.h"
#include "router/internal.h"
#include "router/overhead.h"
#include "router/reply.h"
#include "router/req_error.h"
#include "router/req_wake.h"
#include "router/resume.h"
#include "stream/sse_parse.h"
#include "stream/sse_write.h"

/* What the upstream said of the prompt so far (a stream: the events read until now). */
static struct prov_usage usage_so_far(const struct request *r)
{
    struct prov_usage u = PROV_USAGE_UNKNOWN;

    if (r->x.mode == BODY_SSE && r->x.prov_st_live && r->x.ops && r->x.ops->stream_usage)
        r->x.ops->stream_usage(r->x.prov_st, &u);
    return u;
}

static int64_t or_zero(int64_t v)
{
    return v > 0 ? v : 0;
}

static struct down_ctx down_ctx(const struct request *r)
{
    struct prov_usage u = usage_so_far(r);

    return (struct down_ctx){
        .request_id = r->ident.id,
        .model = r->route->id,
        .include_usage = r->input.include_usage,
        .input_tokens = u.input_tokens,
        .cached_tokens = or_zero(u.cached_tokens),
        .cache_write_tokens = or_zero(u.cache_write_tokens) + or_zero(u.cache_write_1h_tokens),
        .arg = r->d.down_arg,
        .native = r->input.native.body.p && r->trim.dropped <= 0 && r->cur.target &&
                  prov_target_dialect(r->cur.target) == r->input.native.kind,
    };
}

/* What the client is sent, kept for the idempotency record and the response cache. */
static void record_out(struct request *r, const void *p, size_t len)
{
    guard_idem_record(r, p, len);
    reqcache_record(r, p, len);
}

static void on_drain(struct srv_req *sreq, void *ud)
{
    struct request *r = ud;

    (void)sreq;
    if (r->x.xfer)
        up_resume(r->x.xfer);
}

/* Writes r->d.out without recording it, to the socket at once when <now> (else with the
 * loop pass's other writes); true when the upstream should pause. */
static bool write_out(struct request *r, bool now)
{
    if (r->d.out.len == 0)
        return false;
    if (now)
        srv_resp_stream(r->sreq, r->d.out.p, r->d.out.len);
    else
        srv_resp_body(r->sreq, r->d.out.p, r->d.out.len);
    r->d.bytes_out += r->d.out.len;
    bsc_buf_reset(&r->d.out);
    if (srv_req_pending(r->sreq) > r->cfg->limits.max_stream_buffer_bytes) {
        srv_req_on_drain(r->sreq, on_drain, r);
        return true;
    }
    return false;
}

bool deliver_flush(struct request *r)
{
    if (!r->sreq || r->d.out.len == 0)
        return false;
    record_out(r, r->d.out.p, r->d.out.len);
    /* A stream's events leave as they arrive: waiting for the end of the loop pass would
     * add its length (thousands of other streams' events) to each event's latency. */
    if (!write_out(r, true))
        return false;
    metrics_inc(req__metrics(r), r->w->idx, METRIC_STREAM_PAUSES, r->route->id, NULL, 1);
    return true; /* the upstream transfer pauses until the client reads */
}

/* r->cost.usd as a plain decimal, to the 1e-8 dollar, without trailing zeros: "0.000123". */
static struct bsc_str cost_text(const struct request *r, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "%.8f", r->cost.usd > 0 ? r->cost.usd : 0.0);

    while (n > 1 && buf[n - 1] == '0' && buf[n - 2] != '.')
        buf[--n] = '\0';
    return bsc_str_make(buf, n < len ? n : len - 1);
}

/* A target with a price: its answers carry their cost (x-bascule-cost-usd). */
static bool is_priced(const struct request *r)
{
    return r->cur.target && (r->cur.target->price.input_per_mtok > 0 ||
                         r->cur.target->price.output_per_mtok > 0);
}

/* A stream's cost is known only at its end, after the head: it goes out as a last SSE
 * comment, ": x-bascule-cost-usd: 0.0031", which every SSE reader ignores (docs/api.md). */
static void append_cost_comment(struct request *r)
{
    char cost[48];
    struct bsc_str text;

    if (!is_priced(r) || r->d.status != 200)
        return;
    text = cost_text(r, cost, sizeof(cost));
    (void)bsc_buf_appendf(&r->d.out, ": x-bascule-cost-usd: %.*s\n\n", BSC_STR_FMT(text));
}

/* Ends the response with what r->d.out holds, as <termination>. A stream that ended whole
 * had its record stored and acknowledged already (st_relay); otherwise the record is
 * settled (released) here, before the last bytes are handed to the socket. */
static void end_response(struct request *r, const char *termination, bool complete)
{
    r->d.termination = termination;
    if (r->sreq && r->d.out.len)
        record_out(r, r->d.out.p, r->d.out.len);
    if (complete && strcmp(termination, "ok") == 0)
        reqcache_store(r);
    guard_idem_finish(r);
    if (!r->sreq)
        return;
    if (complete && strcmp(termination, "ok") == 0)
        append_cost_comment(r); /* after the record: a replay has no cost of its own */
    write_out(r, false); /* the end follows: one write for both */
    if (complete)
        srv_resp_end(r->sreq);
    else
        srv_resp_abort(r->sreq);
    req_wake_release_sreq(r);
}

void deliver_end(struct request *r, const char *termination)
{
    end_response(r, termination, true);
}

void deliver_break(struct request *r, const char *termination)
{
    end_response(r, termination, false);
}

void deliver_commit(struct request *r)
{
    struct srv_header h[11];
    char attempts[BSC_NUM_TEXT_MAX];
    size_t n;

    h[0] = (struct srv_header){BSC_STR("Content-Type"), BSC_STR("text/event-stream; charset=utf-8")};
    h[1] = (struct srv_header){BSC_STR("Cache-Control"), BSC_STR("no-cache")};
    h[2] = (struct srv_header){BSC_STR("X-Accel-Buffering"), BSC_STR("no")};
    n = 3 + deliver_route_headers(r, h + 3, attempts);
    if (r->sreq)
        srv_resp_head(r->sreq, 200, h, n, -1);
    r->d.committed = true;
    r->d.status = 200;
    r->d.ttfb_us = req__now_us_fresh(r) - r->ident.start_us;
}

/* Splits the adapter's frames ("data: <json>\n\n") and feeds them to the client dialect. */
/* The client dialect's stream state, made on first use. */
static bool down_stream_ready(struct request *r)
{
    struct down_ctx ctx;

    if (r->d.down_st)
        return true;
    ctx = down_ctx(r);
    r->d.down_st = calloc(1, r->d.ops->stream_size ? r->d.ops->stream_size : 1);
    if (r->d.down_st)
        r->d.ops->stream_init(r->d.down_st, &ctx);
    return r->d.down_st != NULL;
}

/* convert_down's walk: the request and the first error. */
struct down_walk {
    struct request *r;
    enum bsc_err err;
};

/* One whole event of the adapter's frames: an unnamed data event is a chunk or [DONE]. Stops
 * the walk at the first error. */
static int down_event(void *ud, struct bsc_str name, struct bsc_str data)
{
    struct down_walk *w = ud;
    struct request *r = w->r;

    if (name.len)
        return 0;
    w->err = sse_is_done(data) ? r->d.ops->stream_done(r->d.down_st, &r->d.out)
                               : r->d.ops->stream_chunk(r->d.down_st, data, &r->d.out);
    return w->err != BSC_OK;
}

static enum bsc_err convert_down(struct request *r)
{
    struct down_walk w = {r, BSC_OK};
    enum bsc_err err;

    if (!down_stream_ready(r))
        return BSC_ENOMEM;
    err = sse_each_event(bsc_buf_str(&r->x.conv), down_event, &w);
    return w.err ? w.err : err;
}

/* True when <frame> has the member <name> (with its colon and opening quote) followed by
 * a non-empty string. The adapters write their frames compactly, so the three are adjacent. */
static bool has_text(struct bsc_str frame, struct bsc_str name)
{
    const char *at = bsc_str_find(frame, name);

    return at && at + name.len < frame.p + frame.len && at[name.len] != '"';
}

/* How many of the OpenAI chunk frames in <conv> carry generated text: a delta with a
 * non-empty "content" (or "reasoning_content") or tool-call "arguments". One such frame
 * counts as one output token when a stream ends without its usage (docs/internals/spend.md,
 * "Cost"). Pure. */
uint64_t deliver_text_frames(struct bsc_str conv)
{
    const char *p = conv.p, *end = conv.p + conv.len;
    uint64_t n = 0;

    while (p && p < end) {
        const char *e = bsc_str_find((struct bsc_str){p, (size_t)(end - p)}, BSC_STR("\n\n"));
        struct bsc_str frame = {p, (size_t)((e ? e : end) - p)};

        if (has_text(frame, BSC_STR("content\":\"")) ||
            has_text(frame, BSC_STR("\"arguments\":\"")))
            n++;
        p = e ? e + 2 : end;
    }
    return n;
}

enum bsc_err deliver_convert(struct request *r)
{
    enum bsc_err err;

    if (r->x.conv.len == 0)
        return BSC_OK;
    if (r->cur.target->price.input_per_mtok > 0 || r->cur.target->price.output_per_mtok > 0)
        r->d.text_frames += deliver_text_frames(bsc_buf_str(&r->x.conv)); /* for its cost */
    err = resume_filter(r); /* on_stream_failure: continue; after the count: held is billed */
    if (err)
        return err;
    if (r->x.conv.len == 0)
        return BSC_OK;
    contract_feed_checks(r, bsc_buf_str(&r->x.conv)); /* what the client gets, checked */
    if (r->d.ops) {
        err = convert_down(r);
        xchg_drop_frames(r);
    } else { /* OpenAI frames to an OpenAI client: as they are */
        err = xchg_hand_frames(r, &r->d.out);
    }
    return err;
}

/* Milliseconds from the commit point to <now_us> (bsc_now_us). */
static uint64_t stream_age_ms(const struct request *r, uint64_t now_us)
{
    return (now_us - r->ident.start_us - r->d.ttfb_us) / 1000;
}

bool deliver_stream_over(struct request *r, bool timer)
{
    const struct cfg_limits *l = &r->cfg->limits;

    if (r->d.limit_cut || !r->d.committed)
        return r->d.limit_cut != NULL;
    if (r->d.bytes_out + r->d.out.len > l->max_stream_bytes) {
        r->d.limit_cut = "stream_too_large";
        xchg_note_stream_cut(r, "the stream passed limits.max_stream_bytes (%llu bytes)",
                             (unsigned long long)l->max_stream_bytes);
    } else if ((timer && r->d.limit_timer) || stream_age_ms(r, bsc_now_us()) >= l->max_stream_ms) {
        r->d.limit_cut = "stream_too_long";
        xchg_note_stream_cut(r, "the stream passed limits.max_stream_ms (%u ms)",
                             l->max_stream_ms);
    } else {
        return false;
    }
    bsc_buf_reset(&r->d.out); /* what would pass the limit is not sent: the error event is */
    return true;
}

/* Re-arming a timer per event costs a heap removal and insertion among every held
 * stream's timers, and a clock read. The due time only moves forward (the gap is fixed, the
 * max_stream_ms end is fixed and sooner), so a timer already armed fires early, never late:
 * each event just records the new due time, and the timer, when it fires, is armed again
 * for what is left -- once per gap rather than once per event. */
void deliver_stream_arm(struct request *r, uint64_t gap_ms)
{
    uint64_t now_us = bsc_now_us(); /* one clock read for the age and the due time */
    uint64_t max = r->cfg->limits.max_stream_ms, age = stream_age_ms(r, now_us);
    uint64_t left = age < max ? max - age : 0;

    r->d.limit_timer = left <= gap_ms;
    r->d.relay_due_ms = now_us / 1000 + (r->d.limit_timer ? left : gap_ms);
    if (r->d.relay_timer && uv_is_active((uv_handle_t *)&r->timer))
        return;
    req_wake_timer(r, r->d.limit_timer ? left : gap_ms);
    r->d.relay_timer = true;
}

void deliver_stream_disarmed(struct request *r)
{
    r->d.relay_timer = false;
}

void deliver_stream_cut(struct request *r, const char *limit)
{
    r->d.limit_cut = limit;
}

enum bsc_err deliver_stream_seam(struct request *r, const char *target_id, const char *how)
{
    return bsc_buf_appendf(&r->d.out, ": bascule continued on %s by %s\n\n", target_id, how);
}

void deliver_restart_frame_count(struct request *r)
{
    r->d.text_frames = 0;
}

bool deliver_stream_rearm(struct request *r)
{
    uint64_t now = bsc_now_ms();

    if (!r->d.relay_timer || now >= r->d.relay_due_ms)
        return false;
    req_wake_timer(r, r->d.relay_due_ms - now);
    r->d.relay_timer = true;
    return true;
}

void deliver_stream_error(struct request *r, const char *message)
{
    struct reply_error e = {.type = "server_error",
                            .code = r->d.limit_cut ? r->d.limit_cut : "upstream_interrupted",
                            .message = message,
                            .retry_after_ms = -1};

    if (r->d.ops && down_stream_ready(r)) {
        r->d.ops->stream_error(r->d.down_st, &e, &r->d.out);
        return;
    }
    bsc_buf_append_cstr(&r->d.out, "data: ");
    reply_error_body(&e, r->ident.id, &r->d.out);
    bsc_buf_append_cstr(&r->d.out, "\n\n");
}

void deliver_stream_complete(struct request *r)
{
    struct srv_header h[12];
    char attempts[BSC_NUM_TEXT_MAX], cost[48];
    size_t n;

    if (!r->sreq)
        return;
    h[0] = (struct srv_header){BSC_STR("Content-Type"), BSC_STR("text/event-stream; charset=utf-8")};
    h[1] = (struct srv_header){BSC_STR("Cache-Control"), BSC_STR("no-cache")};
    h[2] = (struct srv_header){BSC_STR("x-bascule-buffered"), BSC_STR("true")};
    n = 3 + deliver_route_headers(r, h + 3, attempts);
    if (is_priced(r)) /* the whole stream was held: its cost is known before the head */
        h[n++] = (struct srv_header){BSC_STR("x-bascule-cost-usd"),
                                     cost_text(r, cost, sizeof(cost))};
    srv_resp_head(r->sreq, 200, h, n, -1);
    r->d.committed = true;
    r->d.status = 200;
    r->d.ttfb_us = req__now_us_fresh(r) - r->ident.start_us;
    deliver_end(r, "ok");
}

/* The complete answer's body as the client gets it. */
static struct bsc_str answer_body(const struct request *r)
{
    return r->d.ops ? bsc_buf_str(&r->d.answer) : bsc_buf_str(&r->x.answer);
}

bool deliver_hold(struct request *r)
{
    struct down_ctx ctx;

    if (r->d.held || !r->sreq)
        return r->sreq != NULL;
    r->d.held = true;
    r->d.termination = "ok";
    if (r->x.mode == BODY_SSE) { /* a buffered stream: its events are all in r->d.out */
        r->d.status = 200;
        record_out(r, r->d.out.p, r->d.out.len);
        return true;
    }
    ctx = down_ctx(r);
    if (r->d.ops && r->d.ops->map_response(bsc_buf_str(&r->x.answer), &ctx, &r->d.answer) !=
                        BSC_OK) {
        req__set_error(r, 502, "server_error", "translation_failed",
                       "the answer could not be translated to the client's API");
        r->d.termination = "translation_failed";
        deliver_error(r);
        return false;
    }
    r->d.status = r->x.up_status >= 200 && r->x.up_status < 300 ? r->x.up_status : 200;
    record_out(r, answer_body(r).p, answer_body(r).len);
    return true;
}

void deliver_answer(struct request *r)
{
    struct srv_header h[10];
    char attempts[BSC_NUM_TEXT_MAX], cost[48];
    size_t n;
    struct bsc_str body;

    if (!deliver_hold(r)) /* held already when its record was stored first (st_reply) */
        return;
    body = answer_body(r);
    n = deliver_route_headers(r, h, attempts);
    if (is_priced(r))
        h[n++] = (struct srv_header){BSC_STR("x-bascule-cost-usd"),
                                     cost_text(r, cost, sizeof(cost))}; /* priced targets */
    guard_idem_finish(r); /* a no-op once st_reply stored the record */
    reqcache_store(r);    /* before the client can read the answer and ask again */
    srv_resp_send(r->sreq, r->d.status, "application/json", h, n, body.p, body.len);
    r->d.bytes_out += body.len;
    r->d.ttfb_us = req__now_us_fresh(r) - r->ident.start_us;
    req_wake_release_sreq(r);
}

void deliver_error(struct request *r)
{
    struct srv_header h[9];
    char attempts[BSC_NUM_TEXT_MAX];
    size_t n;

    if (!r->sreq)
        return;
    n = deliver_route_headers(r, h, attempts);
    if (r->lim.limited_by)
        h[n++] = (struct srv_header){BSC_STR("x-bascule-limited-by"),
                                     bsc_str_cstr(r->lim.limited_by)};
    r->d.status = r->err.reply.status;
    guard_idem_finish(r); /* released before the client can see the error */
    reply_error_send(r->sreq, &r->err.reply, h, n, r->d.ops ? r->d.ops->error_body : NULL);
    req_wake_release_sreq(r);
}

void deliver_down_reset(struct request *r)
{
    r->d.text_frames = 0; /* a new attempt: the frames a failed one converted went nowhere */
    if (r->d.down_st && r->d.ops)
        r->d.ops->stream_cleanup(r->d.down_st);
    BSC_FREE(r->d.down_st);
}

void deliver_out_reset(struct request *r)
{
    bsc_buf_reset(&r->d.out);
}

void deliver_init(struct downstream *d, const struct down_ops *ops, void *down_arg)
{
    d->ops = ops;
    d->down_arg = down_arg;
    bsc_buf_init(&d->out, 8u << 20);
    bsc_buf_init(&d->answer, REQ_MAX_RESPONSE_BYTES);
}

void deliver_cleanup(struct request *r)
{
    deliver_down_reset(r);
    if (r->d.ops && r->d.ops->arg_free)
        r->d.ops->arg_free(r->d.down_arg);
    r->d.down_arg = NULL;
    bsc_buf_cleanup(&r->d.out);
    bsc_buf_cleanup(&r->d.answer);
}
