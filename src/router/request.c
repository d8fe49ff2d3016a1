/* SPDX-License-Identifier: MIT */
/* request.c -- the request state machine (DESIGN §3, STYLE §6). One list of states, one
 * handler per state, one place that changes state (req_goto). Events (upstream head,
 * body bytes, completion, timers, client abort) record what happened and call req_run();
 * handlers never call each other. The workflows are decisions taken in PICK after a
 * failure (decide_next): retry the same target, fail over to equivalent capacity, fall
 * back to an approved model, or stop with a typed failure. RELAY is the commit point:
 * once the first byte went to the client there is no path back to PICK.
 * See docs/internals/request-lifecycle.md. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/id.h"
#include "core/log.h"
#include "metrics/metrics.h"
#include "providers/openai_errors.h"
#include "router/access_log.h"
#include "router/attempt.h"
#include "router/envelope.h"
#include "router/gateway.h"
#include "router/pick.h"
#include "router/reply.h"
#include "router/request.h"
#include "router/retry.h"
#include "router/state.h"
#include "router/taxonomy.h"
#include "stream/sse_parse.h"
#include "stream/sse_write.h"
#include "upstream/upstream.h"

#define REQ_STATES(X)                                                                     \
    X(PICK, pick, "choose the next target, or decide to stop, after each failure")        \
    X(BACKOFF, backoff, "wait (backoff or Retry-After) before the next attempt")          \
    X(ATTEMPT, attempt, "upstream transfer running until its answer or first event")      \
    X(RELAY, relay, "committed: streaming to the client; no way back to PICK")            \
    X(REPLY, reply, "a complete upstream answer is written to the client")                \
    X(REPLY_ERROR, reply_error, "write the normalized error or the typed failure")         \
    X(DONE, done, "log, account, release")

enum req_state {
#define X(NAME, name, doc) REQ_ST_##NAME,
    REQ_STATES(X)
#undef X
        REQ_ST_COUNT
};

enum tier { TIER_PRIMARY = 0, TIER_EQUIVALENT, TIER_FALLBACK, TIER_COUNT };

/* How the upstream body is consumed during an attempt. */
enum body_mode { BODY_NONE = 0, BODY_BUFFER, BODY_SSE };

#define REQ_MAX_RESPONSE_BYTES (64u << 20)
#define REQ_MAX_SSE_EVENT      (4u << 20)

struct request {
    struct worker *w;         /* borrowed */
    struct gateway *gw;       /* borrowed */
    struct srv_req *sreq;     /* borrowed; NULL once the client went away or was answered */
    struct cfg *cfg;          /* a ref */
    const struct cfg_route *route; /* borrowed from cfg */
    struct json_object *json; /* owned */
    struct bsc_str body;      /* borrowed from sreq */
    struct bsc_str model_span;
    bool stream, include_usage, has_tools;
    char id[130];             /* copy of the request id, for logs after sreq is gone */
    struct envelope env;

    enum req_state state;
    uint64_t start_us;
    uv_timer_t timer; /* attempt timeout, stream idle bound, or backoff */

    /* the current attempt */
    const struct cfg_target *target; /* borrowed from cfg */
    enum tier tier;
    int key_idx;                     /* -2: no key configured */
    bool probe;                      /* admitted as a half-open probe */
    bool attempt_open;               /* inflight counted and outcome not yet reported */
    struct up_transfer *xfer;        /* NULL when none is running */
    struct bsc_buf up_body;          /* owned: the request body sent upstream */
    enum body_mode mode;
    struct bsc_buf resp;             /* owned: buffered upstream body (BODY_BUFFER) */
    struct sse_parser sse;           /* BODY_SSE */
    struct bsc_buf out;              /* owned: SSE bytes to write downstream */
    int up_status;
    char up_ctype[128];
    char up_retry_after[64], up_retry_after_ms[64]; /* saved from the head */
    bool saw_done;                   /* the upstream stream ended with [DONE] */
    bool timed_out;
    bool stream_failed;              /* an in-band error or a bad stream: fail */
    enum up_result up_res;
    struct fail_info fail;           /* the last failure */
    struct fail_info stream_fail;    /* an in-band error seen in the stream */

    /* the next step, chosen by decide_next */
    enum attempt_workflow next_wf;
    uint32_t next_delay_ms;
    const char *next_delay_why;
    const char *recovery_reason; /* static: kind of the first failure that made us recover */
    bool all_rate_limited;       /* every failure so far was a rate limit or quota */

    /* the answer */
    bool committed; /* response head sent */
    int status;
    uint64_t bytes_out;
    uint64_t ttfb_us;
    const char *termination; /* access-log termination code */
    struct attempt attempts[ATTEMPT_MAX];
    unsigned n_attempts;
    struct reply_error err;
    char err_msg[320];
    char err_code[64];
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

static struct metrics *M(const struct request *r)
{
    return r->gw->metrics;
}

static uint64_t time_left(const struct request *r)
{
    return envelope_remaining_ms(&r->env, bsc_now_ms());
}

/* ---- errors ---- */

static void set_error(struct request *r, int status, const char *type, const char *code,
                      const char *fmt, ...) BSC_PRINTF(5, 6);

static void set_error(struct request *r, int status, const char *type, const char *code,
                      const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(r->err_msg, sizeof(r->err_msg), fmt, ap);
    va_end(ap);
    snprintf(r->err_code, sizeof(r->err_code), "%s", code ? code : "");
    r->err = (struct reply_error){.status = status,
                                  .type = type,
                                  .code = code ? r->err_code : NULL,
                                  .message = r->err_msg,
                                  .retry_after_ms = -1};
}

/* A stop decided by the router: the typed failure of DESIGN §9. */
static void set_typed_failure(struct request *r, const char *reason, int64_t retry_after_ms,
                              const char *fmt, ...) BSC_PRINTF(4, 5);

static void set_typed_failure(struct request *r, const char *reason, int64_t retry_after_ms,
                              const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(r->err_msg, sizeof(r->err_msg), fmt, ap);
    va_end(ap);
    snprintf(r->err_code, sizeof(r->err_code), "%s", reason);
    r->err = (struct reply_error){
        .status = r->n_attempts && r->all_rate_limited ? 429 : 503,
        .type = r->n_attempts && r->all_rate_limited ? "rate_limit_error" : "server_error",
        .code = r->err_code,
        .message = r->err_msg,
        .reason = reason,
        .retryable = true,
        .retry_after_ms = retry_after_ms >= 0 ? retry_after_ms : 1000,
        /* The gateway already spent its retries; a client retry helps only when the
         * gateway itself made no upstream attempt (everything was open or cooling). */
        .should_retry = r->n_attempts == 0,
    };
    r->termination = reason;
}

/* The provider's own error, normalized: a client fault, or a kind with no recovery left. */
static void set_provider_error(struct request *r)
{
    const struct fail_policy *pol = fail_policy(r->fail.kind);
    const char *code = pol->client_code && pol->client_code[0] ? pol->client_code
                       : r->fail.code[0]                         ? r->fail.code
                                                                 : NULL;

    if (pol->forward_message && r->fail.message[0])
        set_error(r, pol->client_status, pol->client_type, code, "%s", r->fail.message);
    else
        set_error(r, pol->client_status, pol->client_type, code,
                  "upstream %s failed: %s%s%s", r->target ? r->target->id : "-",
                  fail_kind_name(r->fail.kind), r->fail.message[0] ? ": " : "",
                  pol->forward_message ? r->fail.message : "");
    r->err.should_retry = false;
    r->termination = fail_kind_name(r->fail.kind);
}

/* ---- timers ---- */

static void on_timer(uv_timer_t *h);

static void arm_timer(struct request *r, uint64_t delay_ms)
{
    uv_timer_start(&r->timer, on_timer, delay_ms, 0);
}

static void on_timer(uv_timer_t *h)
{
    struct request *r = h->data;

    switch (r->state) {
    case REQ_ST_BACKOFF:
        break; /* st_backoff sees the timer is no longer active */
    case REQ_ST_ATTEMPT:
    case REQ_ST_RELAY:
        if (r->xfer) { /* else an attempt aborted from a callback continues here */
            r->timed_out = true;
            up_cancel(r->xfer);
            r->xfer = NULL;
        }
        break;
    default:
        return;
    }
    req_run(r);
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

/* The x-bascule-* headers that explain the routing (DESIGN §9). */
static size_t route_headers(struct request *r, struct srv_header *h, char *attempts, size_t len)
{
    size_t n = 0;

    snprintf(attempts, len, "%u", r->n_attempts);
    if (r->target)
        h[n++] = (struct srv_header){BSC_STR("x-bascule-target"), bsc_str_cstr(r->target->id)};
    h[n++] = (struct srv_header){BSC_STR("x-bascule-attempts"), bsc_str_cstr(attempts)};
    h[n++] = (struct srv_header){
        BSC_STR("x-bascule-workflow"),
        bsc_str_cstr(attempt_workflow_name(
            r->n_attempts ? r->attempts[r->n_attempts - 1].workflow : ATTEMPT_WF_PRIMARY))};
    if (r->recovery_reason && (r->n_attempts > 1 || r->attempts[0].workflow != ATTEMPT_WF_PRIMARY))
        h[n++] = (struct srv_header){BSC_STR("x-bascule-recovery-reason"),
                                     bsc_str_cstr(r->recovery_reason)};
    return n;
}

/* Appends the one error event that ends a committed stream (DESIGN §5). */
static void write_error_event(struct request *r, const char *message)
{
    struct reply_error e = {.type = "server_error",
                            .code = "upstream_interrupted",
                            .message = message,
                            .retry_after_ms = -1};

    bsc_buf_append_cstr(&r->out, "data: ");
    reply_error_body(&r->out, &e, r->id);
    bsc_buf_append_cstr(&r->out, "\n\n");
}

/* Sends the SSE response head: the commit point. */
static void commit_stream(struct request *r)
{
    struct srv_header h[10];
    size_t n;
    char attempts[16];

    h[0] = (struct srv_header){BSC_STR("Content-Type"), BSC_STR("text/event-stream; charset=utf-8")};
    h[1] = (struct srv_header){BSC_STR("Cache-Control"), BSC_STR("no-cache")};
    h[2] = (struct srv_header){BSC_STR("X-Accel-Buffering"), BSC_STR("no")};
    n = 3 + route_headers(r, h + 3, attempts, sizeof(attempts));
    srv_resp_head(r->sreq, 200, h, n, -1);
    r->committed = true;
    r->status = 200;
    r->ttfb_us = bsc_now_us() - r->start_us;
}

/* ---- attempt accounting ---- */

static struct attempt *cur_attempt(struct request *r)
{
    return r->n_attempts ? &r->attempts[r->n_attempts - 1] : NULL;
}

static void note_breaker_change(struct request *r, const struct brk_change *c)
{
    static const double gauge[BRK_STATE_COUNT] = {0, 1, 2};

    if (!c->changed)
        return;
    LOG_WARN("circuit of %s: %s -> %s", r->target->id, brk_state_name(c->from),
             brk_state_name(c->to));
    metrics_inc(M(r), r->w->idx, METRIC_BREAKER_TRANSITIONS, r->target->id,
                brk_state_name(c->to), 1);
    metrics_gauge_set(M(r), metrics_shared_shard(M(r)), METRIC_BREAKER_STATE, r->target->id, NULL,
                      gauge[c->to]);
}

/* Reports the end of the current attempt to the shared state, once. */
static void report_attempt(struct request *r, enum brk_outcome outcome, const char *kind,
                           bool misconfigured)
{
    struct attempt *a = cur_attempt(r);
    struct attempt_report rep = {
        .outcome = outcome,
        .was_probe = r->probe,
        .latency_ms = -1,
        .ttft_ms = -1,
        .error = kind,
        .misconfigured = misconfigured,
    };
    struct brk_change change;

    if (!r->attempt_open)
        return;
    r->attempt_open = false;
    if (outcome == BRK_SUCCESS) {
        rep.latency_ms = (double)(bsc_now_us() - a->start_us) / 1e3;
        if (r->stream && r->ttfb_us)
            rep.ttft_ms = (double)(r->start_us + r->ttfb_us - a->start_us) / 1e3;
    }
    hstate_record(r->gw->hs, r->target, bsc_now_ms(), &rep, &change);
    hstate_inflight(r->gw->hs, r->target, -1);
    metrics_gauge_add(M(r), r->w->idx, METRIC_UPSTREAM_INFLIGHT, r->target->id, NULL, -1);
    metrics_inc(M(r), r->w->idx, METRIC_ATTEMPTS, r->target->id, kind ? kind : "ok", 1);
    note_breaker_change(r, &change);
}

static enum brk_outcome breaker_outcome(const struct fail_info *f)
{
    switch (fail_policy(f->kind)->breaker) {
    case FAIL_BRK_TARGET:
        return BRK_FAILURE;
    case FAIL_BRK_IF_INFRA:
        return f->transport != FT_OK || f->status >= 500 || f->status == 200 ? BRK_FAILURE
                                                                             : BRK_NEUTRAL;
    default:
        return BRK_NEUTRAL;
    }
}

static int key_reason_of(enum fail_kind kind)
{
    switch (kind) {
    case FAIL_RATE_LIMITED: return 0; /* KEY_RATE_LIMITED */
    case FAIL_QUOTA_EXHAUSTED: return 1; /* KEY_QUOTA */
    default: return 2; /* KEY_AUTH */
    }
}

static void log_attempt(struct request *r, const char *next, const char *why)
{
    struct target_view v;
    struct attempt_line l;

    hstate_view(r->gw->hs, r->target->id, bsc_now_ms(), &v);
    l = (struct attempt_line){
        .request_id = r->id,
        .route = r->route->id,
        .number = r->n_attempts,
        .a = cur_attempt(r),
        .circuit = brk_state_name(v.state),
        .time_left_ms = time_left(r),
        .next = next,
        .why = why,
        .next_delay_ms = r->next_delay_ms,
        .delay_why = r->next_delay_why,
    };
    attempt_log_write(&l);
}

/* The current attempt failed before anything was committed: account for it. */
static void attempt_failed(struct request *r)
{
    struct attempt *a = cur_attempt(r);
    const struct fail_policy *pol = fail_policy(r->fail.kind);

    attempt_end(a, bsc_now_us(), ATTEMPT_FAILED, fail_kind_name(r->fail.kind));
    a->status = r->fail.status;
    if (pol->cools_key && r->key_idx >= 0) {
        int reason = key_reason_of(r->fail.kind);
        static const char *const reasons[] = {"rate_limited", "quota", "auth"};
        hstate_key_cooldown(r->gw->hs, r->target->provider, r->key_idx, reason,
                            r->fail.retry_after_ms, bsc_now_ms());
        metrics_inc(M(r), r->w->idx, METRIC_KEY_COOLDOWNS, r->target->provider->id,
                    reasons[reason], 1);
    }
    report_attempt(r, breaker_outcome(&r->fail), fail_kind_name(r->fail.kind),
                   pol->flags_misconfigured);
    if (r->fail.kind != FAIL_RATE_LIMITED && r->fail.kind != FAIL_QUOTA_EXHAUSTED)
        r->all_rate_limited = false;
    if (!r->recovery_reason)
        r->recovery_reason = fail_kind_name(r->fail.kind);
}

/* ---- choosing targets ---- */

static unsigned attempts_on(const struct request *r, const struct cfg_target *t)
{
    unsigned n = 0;

    for (unsigned i = 0; i < r->n_attempts; i++)
        n += r->attempts[i].target == t;
    return n;
}

/* What the request and the route require of a target outside the primary tier. */
static bool satisfies_contract(const struct request *r, const struct cfg_target *t)
{
    const struct cfg_requires *q = &r->route->requires;
    uint32_t need = q->capabilities;

    if (r->stream)
        need |= CFG_CAP_STREAMING;
    if (r->has_tools)
        need |= CFG_CAP_TOOLS;
    if ((t->capabilities & need) != need)
        return false;
    if (q->context_window_min && t->context_window && t->context_window < q->context_window_min)
        return false;
    if (q->max_output_tokens_min && t->max_output_tokens &&
        t->max_output_tokens < q->max_output_tokens_min)
        return false;
    return true;
}

/* Kill switches: config, provider, and the run-time admin switch. */
static bool switched_off(struct request *r, const struct cfg_target *t)
{
    return t->disabled || t->provider->disabled || hstate_is_disabled(r->gw->hs, t->id);
}

/* Static eligibility: kill switches, keys, contract, not yet tried when <fresh>. */
static bool usable(struct request *r, const struct cfg_target *t, enum tier tier, bool fresh,
                   uint64_t min_window)
{
    uint64_t now = bsc_now_ms();

    if (switched_off(r, t))
        return false;
    if (fresh && attempts_on(r, t))
        return false;
    if (hstate_keys_available(r->gw->hs, t->provider, now) == 0)
        return false;
    if (tier != TIER_PRIMARY && !satisfies_contract(r, t))
        return false;
    if (min_window && (!t->context_window || t->context_window <= min_window))
        return false;
    return true;
}

/* Picks the best usable target of <tier> by the route's balance mode, then asks its
 * breaker; a denied candidate is dropped and the pick repeats. NULL when none. */
static const struct cfg_target *choose(struct request *r, enum tier tier, bool fresh,
                                       uint64_t min_window)
{
    const struct cfg_tier *t = tier == TIER_PRIMARY      ? &r->route->primary
                               : tier == TIER_EQUIVALENT ? &r->route->equivalent
                                                         : &r->route->fallback;
    struct pick_cand c[64];
    size_t n = t->n < BSC_ARRAY_LEN(c) ? t->n : BSC_ARRAY_LEN(c);
    uint64_t now = bsc_now_ms();

    if (t->disabled || n == 0)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const struct cfg_target *ct = t->targets[i];
        struct target_view v;

        hstate_view(r->gw->hs, ct->id, now, &v);
        c[i] = (struct pick_cand){
            .eligible = usable(r, ct, tier, fresh, min_window) && v.state != BRK_OPEN,
            .weight = t->weights ? t->weights[i] : 1,
            .ewma_latency_ms = v.ewma_latency_ms,
            .ewma_ttft_ms = v.ewma_ttft_ms,
            .inflight = v.inflight,
            .price_per_mtok = pick_blend_price(&ct->price),
            .ramp_fraction = v.ramp_fraction,
        };
    }
    for (size_t tries = 0; tries < n; tries++) {
        int i = pick_next(c, n, r->route->balance, bsc_rand01());
        enum brk_decision d;

        if (i < 0)
            return NULL;
        /* Weighted picks already scaled by the ramp: do not apply it twice. */
        d = hstate_admit(r->gw->hs, t->targets[i], now,
                         r->route->balance == CFG_BALANCE_WEIGHTED ? 0.0 : bsc_rand01());
        if (d == BRK_ALLOW || d == BRK_ALLOW_PROBE) {
            r->probe = d == BRK_ALLOW_PROBE;
            r->tier = tier;
            return t->targets[i];
        }
        c[i].eligible = false;
    }
    return NULL;
}

static bool later_tier_exists(const struct request *r)
{
    return (r->env.allow_equivalent && r->tier < TIER_EQUIVALENT && r->route->equivalent.n &&
            !r->route->equivalent.disabled) ||
           (r->env.allow_fallback && r->tier < TIER_FALLBACK && r->route->fallback.n &&
            !r->route->fallback.disabled);
}

/* ---- upstream ---- */

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

static int on_sse_event(void *ud, struct bsc_str event, struct bsc_str data);
static int on_sse_comment(void *ud, struct bsc_str text);
static const struct sse_callbacks sse_cb = {on_sse_event, on_sse_comment, NULL};

static void on_up_head(void *ud, struct up_transfer *t, int status)
{
    struct request *r = ud;
    struct bsc_str ct = up_header(t, BSC_STR("content-type"));

    struct bsc_str ra = up_header(t, BSC_STR("retry-after"));
    struct bsc_str ra_ms = up_header(t, BSC_STR("retry-after-ms"));

    r->up_status = status;
    snprintf(r->up_ctype, sizeof(r->up_ctype), "%.*s", BSC_STR_FMT(ct));
    snprintf(r->up_retry_after, sizeof(r->up_retry_after), "%.*s", BSC_STR_FMT(ra));
    snprintf(r->up_retry_after_ms, sizeof(r->up_retry_after_ms), "%.*s", BSC_STR_FMT(ra_ms));
    if (r->stream && status == 200 && ct.len >= 17 &&
        strncasecmp(ct.p, "text/event-stream", 17) == 0) {
        r->mode = BODY_SSE;
        sse_parser_init(&r->sse, REQ_MAX_SSE_EVENT, &sse_cb, r);
    } else {
        r->mode = BODY_BUFFER;
    }
}

/* Fails the running attempt from inside an upstream callback. */
static void abort_attempt(struct request *r)
{
    r->stream_failed = true;
    if (r->xfer) {
        up_cancel(r->xfer);
        r->xfer = NULL;
    }
    /* Not from inside a curl callback: continue on the next loop turn. */
    arm_timer(r, 0);
}

static bool on_up_data(void *ud, struct up_transfer *t, const char *p, size_t len)
{
    struct request *r = ud;

    (void)t;
    if (r->mode == BODY_BUFFER) {
        if (bsc_buf_append(&r->resp, p, len) != BSC_OK) {
            fail_info_init(&r->stream_fail);
            r->stream_fail.kind = FAIL_SERVER_ERROR;
            snprintf(r->stream_fail.message, sizeof(r->stream_fail.message),
                     "the upstream answer passed %zu bytes", r->resp.max);
            abort_attempt(r);
        }
        return false;
    }
    if (r->saw_done || r->stream_failed)
        return false;
    if (sse_parser_feed(&r->sse, p, len) < 0 && !r->stream_failed && !r->saw_done) {
        fail_info_init(&r->stream_fail);
        r->stream_fail.kind = r->committed ? FAIL_PARTIAL_OUTPUT : FAIL_SERVER_ERROR;
        snprintf(r->stream_fail.message, sizeof(r->stream_fail.message),
                 "the upstream stream could not be parsed");
        r->stream_failed = true;
    }
    if (r->stream_failed) {
        abort_attempt(r);
        return false;
    }
    if (r->out.len == 0)
        return false;
    if (!r->committed) {
        commit_stream(r);
        req_goto(r, REQ_ST_RELAY);
    }
    arm_timer(r, r->route->envelope.deadline_ms); /* the longest gap between events */
    return flush_out(r);
}

static int on_sse_event(void *ud, struct bsc_str event, struct bsc_str data)
{
    struct request *r = ud;
    struct fail_info f;

    (void)event;
    if (sse_is_done(data)) {
        r->saw_done = true;
        sse_write_done(&r->out);
        return 1; /* nothing after [DONE] matters */
    }
    if (memmem(data.p, data.len, "\"error\"", 7) && prov_openai_classify_event(data, &f)) {
        r->stream_fail = f;
        r->stream_failed = true;
        return 1;
    }
    if (sse_write_data(&r->out, data) != BSC_OK) {
        fail_info_init(&r->stream_fail);
        r->stream_fail.kind = r->committed ? FAIL_PARTIAL_OUTPUT : FAIL_SERVER_ERROR;
        snprintf(r->stream_fail.message, sizeof(r->stream_fail.message),
                 "an upstream event passed the gateway's output bound");
        r->stream_failed = true;
        return 1;
    }
    return 0;
}

static int on_sse_comment(void *ud, struct bsc_str text)
{
    (void)ud;
    (void)text; /* upstream keep-alives are not relayed */
    return 0;
}

static void on_up_done(void *ud, struct up_transfer *t, enum up_result res, const char *detail)
{
    struct request *r = ud;

    (void)t;
    r->xfer = NULL;
    r->up_res = res;
    if (res != UP_OK) {
        fail_info_init(&r->fail);
        snprintf(r->fail.message, sizeof(r->fail.message), "%s: %s", up_result_name(res),
                 detail ? detail : "");
    }
    if (r->mode == BODY_SSE && !r->saw_done && !r->stream_failed) {
        bool pending = false;
        sse_parser_finish(&r->sse, &pending);
        if (r->out.len && !r->committed && !r->stream_failed) {
            commit_stream(r);
            req_goto(r, REQ_ST_RELAY);
        }
        flush_out(r);
    }
    req_run(r);
}

static const struct up_callbacks up_cb = {on_up_head, on_up_data, on_up_done};

static enum bsc_err start_transfer(struct request *r)
{
    const struct cfg_provider *p = r->target->provider;
    struct bsc_buf hb, url;
    const char *lines[40];
    size_t n = 0, offs[40];
    struct up_request ureq;
    enum bsc_err err;

    bsc_buf_init(&hb, 64 * 1024);
    bsc_buf_init(&url, 8192);
    err = bsc_buf_appendf(&url, "%s/chat/completions", p->base_url);
    /* Header lines go into one buffer, NUL-separated; pointers are fixed up after. */
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
    if (r->key_idx >= 0)
        HDR("Authorization: Bearer %s", p->keys[r->key_idx]);
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
        .fresh_connection = r->env.side_effects == CFG_SE_WRITE_POSSIBLE,
    };
    err = up_start(r->w->up, &ureq, &up_cb, r, &r->xfer);
out:
    bsc_buf_cleanup(&url);
    bsc_buf_cleanup(&hb);
    return err;
}

static void reset_attempt(struct request *r)
{
    if (r->mode == BODY_SSE)
        sse_parser_cleanup(&r->sse);
    r->mode = BODY_NONE;
    r->up_status = 0;
    r->up_ctype[0] = '\0';
    r->up_retry_after[0] = r->up_retry_after_ms[0] = '\0';
    r->saw_done = false;
    r->timed_out = false;
    r->stream_failed = false;
    r->up_res = UP_OK;
    fail_info_init(&r->fail);
    fail_info_init(&r->stream_fail);
    bsc_buf_reset(&r->resp);
    bsc_buf_reset(&r->out);
}

/* Starts an attempt on r->target with the workflow and delay decided before. */
static void begin_attempt(struct request *r)
{
    struct attempt *a;
    uint64_t now = bsc_now_ms(), soonest = 0;

    reset_attempt(r);
    r->key_idx = hstate_key_next(r->gw->hs, r->target->provider, now, &soonest);
    if (r->n_attempts == ATTEMPT_MAX || build_up_body(r) != BSC_OK) {
        set_error(r, 503, "server_error", "gateway_overloaded", "could not start an attempt");
        req_goto(r, REQ_ST_REPLY_ERROR);
        return;
    }
    a = &r->attempts[r->n_attempts++];
    attempt_begin(a, r->target, r->next_wf, bsc_now_us());
    a->delay_ms = r->next_delay_ms;
    a->delay_why = r->next_delay_why;
    r->next_delay_ms = 0;
    r->next_delay_why = NULL;
    r->attempt_open = true;
    hstate_inflight(r->gw->hs, r->target, +1);
    metrics_gauge_add(M(r), r->w->idx, METRIC_UPSTREAM_INFLIGHT, r->target->id, NULL, 1);
    if (r->key_idx == -1) {
        /* Another request cooled the last key meanwhile: a local rate limit. */
        fail_info_init(&r->fail);
        r->fail.kind = FAIL_RATE_LIMITED;
        r->fail.retry_after_ms = soonest > now ? (int64_t)(soonest - now) : 0;
        snprintf(r->fail.message, sizeof(r->fail.message), "every key of %s is cooling down",
                 r->target->provider->id);
        req_goto(r, REQ_ST_ATTEMPT);
        return;
    }
    if (start_transfer(r) != BSC_OK) {
        set_error(r, 503, "server_error", "gateway_overloaded", "could not start an attempt");
        report_attempt(r, BRK_NEUTRAL, NULL, false);
        req_goto(r, REQ_ST_REPLY_ERROR);
        return;
    }
    arm_timer(r, envelope_attempt_timeout_ms(&r->env, now, later_tier_exists(r)));
    req_goto(r, REQ_ST_ATTEMPT);
}

/* ---- deciding what comes next (DESIGN §3 workflows) ---- */

enum decision { DECIDE_GO, DECIDE_STOP };

static const char *wf_metric_count(struct request *r, enum attempt_workflow wf)
{
    switch (wf) {
    case ATTEMPT_WF_RETRY:
        metrics_inc(M(r), r->w->idx, METRIC_RETRIES, r->route->id, NULL, 1);
        return "retry";
    case ATTEMPT_WF_EQUIVALENT_FAILOVER:
        metrics_inc(M(r), r->w->idx, METRIC_FAILOVERS, r->route->id, NULL, 1);
        return "equivalent_failover";
    case ATTEMPT_WF_CROSS_MODEL_FALLBACK:
        metrics_inc(M(r), r->w->idx, METRIC_FALLBACKS, r->route->id, NULL, 1);
        return "cross_model_fallback";
    default:
        return "primary";
    }
}

/* Takes one unit of the gateway-wide retry budget; false (and counted) when spent. */
static bool take_budget(struct request *r)
{
    if (hstate_budget_take(r->gw->hs, bsc_now_ms())) {
        metrics_inc(M(r), r->w->idx, METRIC_RETRY_BUDGET_SPENT, NULL, NULL, 1);
        return true;
    }
    metrics_inc(M(r), r->w->idx, METRIC_RETRY_BUDGET_REJECTIONS, NULL, NULL, 1);
    return false;
}

/* Workflow 1, first half: the same target again (next key, or after a wait that honours
 * Retry-After and lasts at least until one of the provider's keys is usable again). */
static bool try_same_target(struct request *r, const struct fail_policy *pol, const char **why,
                            bool *wait_too_long, int64_t *wait_ms)
{
    const struct cfg_target *t = r->target;
    unsigned done = attempts_on(r, t);
    uint64_t now = bsc_now_ms(), key_at;
    struct retry_delay d;

    if (done >= r->env.max_same_target_attempts || switched_off(r, t))
        return false;
    if (pol->next_key && t->provider->n_keys > 1 &&
        hstate_keys_available(r->gw->hs, t->provider, now) > 0) {
        r->next_delay_ms = 0;
        r->next_delay_why = NULL;
        *why = "next_key";
        return true;
    }
    if (!pol->replay_same_target || (pol->max_replays && done > pol->max_replays))
        return false;
    /* An immediate replay of an attempt that timed out would eat the time kept in
     * reserve for the next tier: go there instead when there is one. */
    if (!pol->needs_delay && later_tier_exists(r))
        return false;
    d = retry_choose_delay(&r->cfg->retry, done - 1, pol->needs_delay ? r->fail.retry_after_ms : -1,
                           bsc_rand01(), time_left(r));
    if (!pol->needs_delay)
        d.delay_ms = 0;
    key_at = hstate_keys_ready_at(r->gw->hs, t->provider, now);
    if (key_at > now + d.delay_ms) {
        d.delay_ms = (uint32_t)(key_at - now);
        d.exceeds_deadline = d.delay_ms >= time_left(r);
    }
    if (d.exceeds_deadline) {
        *wait_too_long = true;
        *wait_ms = d.delay_ms;
        return false;
    }
    r->next_delay_ms = d.delay_ms;
    r->next_delay_why = d.delay_ms ? retry_delay_why_name(d.why) : NULL;
    *why = r->next_delay_why ? r->next_delay_why : "replay";
    return true;
}

/* Decides the step after the failure in r->fail. Sets r->target/next_wf/next_delay_ms
 * and returns DECIDE_GO, or sets the error to reply with and returns DECIDE_STOP. */
static enum decision decide_next(struct request *r, const char **why)
{
    const struct fail_policy *pol = fail_policy(r->fail.kind);
    bool wait_too_long = false;
    int64_t wait_ms = -1;
    uint64_t min_window = 0;
    const struct cfg_target *failed = r->target, *next;

    r->next_delay_ms = 0;
    r->next_delay_why = NULL;
    if (pol->client_fault && !pol->fallback_needs_larger_window) {
        set_provider_error(r);
        *why = "client_error";
        return DECIDE_STOP;
    }
    if (r->env.side_effects == CFG_SE_WRITE_POSSIBLE && r->fail.request_sent &&
        r->fail.transport != FT_OK) {
        /* The upstream may have acted on it and we cannot know: never replay blindly. */
        r->fail.kind = FAIL_SIDE_EFFECT_UNCERTAIN;
        set_provider_error(r);
        r->err.code = "reconcile_required";
        r->termination = "reconcile_required";
        *why = "side_effect_uncertain";
        return DECIDE_STOP;
    }
    if (time_left(r) == 0) {
        set_typed_failure(r, "deadline_exhausted", -1, "the request deadline passed after %u attempts (last: %s)",
                          r->n_attempts, fail_kind_name(r->fail.kind));
        *why = "deadline_exhausted";
        return DECIDE_STOP;
    }
    if (r->n_attempts >= r->env.max_attempts) {
        set_typed_failure(r, "attempts_exhausted", r->fail.retry_after_ms,
                          "all %u attempts failed (last: %s on %s)", r->n_attempts,
                          fail_kind_name(r->fail.kind), failed->id);
        *why = "max_attempts";
        return DECIDE_STOP;
    }
    if (!pol->fallback_needs_larger_window &&
        try_same_target(r, pol, why, &wait_too_long, &wait_ms)) {
        if (!take_budget(r))
            goto budget;
        r->next_wf = ATTEMPT_WF_RETRY;
        return DECIDE_GO;
    }
    if (pol->equivalent_failover && r->env.allow_equivalent) {
        next = r->tier == TIER_PRIMARY ? choose(r, TIER_PRIMARY, true, 0) : NULL;
        if (!next)
            next = choose(r, TIER_EQUIVALENT, true, 0);
        if (next) {
            if (!take_budget(r))
                goto budget;
            r->target = next;
            r->next_wf = ATTEMPT_WF_EQUIVALENT_FAILOVER;
            *why = fail_kind_name(r->fail.kind);
            return DECIDE_GO;
        }
    }
    if (pol->cross_model_fallback && r->env.allow_fallback) {
        if (pol->fallback_needs_larger_window)
            min_window = failed->context_window ? failed->context_window : UINT64_MAX - 1;
        next = choose(r, TIER_FALLBACK, true, min_window);
        if (next) {
            if (!take_budget(r))
                goto budget;
            r->target = next;
            r->next_wf = ATTEMPT_WF_CROSS_MODEL_FALLBACK;
            *why = fail_kind_name(r->fail.kind);
            return DECIDE_GO;
        }
    }
    if (pol->client_fault) { /* context overflow with no larger window to go to */
        set_provider_error(r);
        *why = "no_larger_window";
        return DECIDE_STOP;
    }
    if (wait_too_long) {
        set_typed_failure(r, "deadline_exhausted", wait_ms,
                          "%s asked to wait %lld ms, more than the %llu ms left",
                          failed->id, (long long)wait_ms, (unsigned long long)time_left(r));
        *why = "wait_exceeds_deadline";
        return DECIDE_STOP;
    }
    set_typed_failure(r, "no_eligible_fallback", r->fail.retry_after_ms,
                      "%s failed (%s) and no eligible target is left to try", failed->id,
                      fail_kind_name(r->fail.kind));
    *why = "no_eligible_fallback";
    return DECIDE_STOP;
budget:
    set_typed_failure(r, "retry_budget_exhausted", 1000,
                      "%s failed (%s) and the gateway's retry budget is spent", failed->id,
                      fail_kind_name(r->fail.kind));
    *why = "retry_budget_exhausted";
    return DECIDE_STOP;
}

/* ---- states ---- */

/* The first attempt: the best primary, else (all unavailable) the next allowed tier. */
static void pick_first(struct request *r)
{
    const struct cfg_target *t = choose(r, TIER_PRIMARY, true, 0);

    r->next_wf = ATTEMPT_WF_PRIMARY;
    if (!t && r->env.allow_equivalent && (t = choose(r, TIER_EQUIVALENT, true, 0))) {
        r->next_wf = ATTEMPT_WF_EQUIVALENT_FAILOVER;
        r->recovery_reason = "primary_unavailable";
    }
    if (!t && r->env.allow_fallback && (t = choose(r, TIER_FALLBACK, true, 0))) {
        r->next_wf = ATTEMPT_WF_CROSS_MODEL_FALLBACK;
        r->recovery_reason = "primary_unavailable";
    }
    if (!t) {
        set_typed_failure(r, "no_eligible_fallback", 1000,
                          "route '%s' has no eligible target (circuits open, disabled or "
                          "keys cooling down)", r->route->id);
        req_goto(r, REQ_ST_REPLY_ERROR);
        return;
    }
    r->target = t;
    if (r->next_wf != ATTEMPT_WF_PRIMARY)
        wf_metric_count(r, r->next_wf);
    begin_attempt(r);
}

static void st_pick(struct request *r)
{
    const char *why = NULL;

    if (r->n_attempts == 0) {
        pick_first(r);
        return;
    }
    if (decide_next(r, &why) == DECIDE_STOP) {
        log_attempt(r, "stop", why);
        req_goto(r, REQ_ST_REPLY_ERROR);
        return;
    }
    log_attempt(r, wf_metric_count(r, r->next_wf), why);
    if (r->next_delay_ms) {
        arm_timer(r, r->next_delay_ms);
        req_goto(r, REQ_ST_BACKOFF);
        return;
    }
    begin_attempt(r);
}

static void st_backoff(struct request *r)
{
    if (uv_is_active((uv_handle_t *)&r->timer))
        return; /* still waiting */
    begin_attempt(r);
}

/* A 2xx JSON answer must parse: a truncated or garbled body is the upstream's failure,
 * never a success to pass on. */
static bool json_ok(const struct request *r)
{
    struct json_tokener *tok;
    struct json_object *o;
    bool ok;

    if (!strstr(r->up_ctype, "json") && r->up_ctype[0])
        return true;
    tok = json_tokener_new_ex(64);
    if (!tok)
        return true;
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    o = json_tokener_parse_ex(tok, r->resp.p ? r->resp.p : "", (int)r->resp.len);
    ok = o && json_tokener_get_error(tok) == json_tokener_success;
    json_object_put(o);
    json_tokener_free(tok);
    return ok;
}

/* Classifies a finished, uncommitted attempt into r->fail; FAIL_NONE means success. */
static void classify_attempt(struct request *r)
{
    struct prov_err_input in;

    if (r->timed_out) {
        fail_from_transport(FT_TIMEOUT, true, &r->fail);
        snprintf(r->fail.message, sizeof(r->fail.message), "no answer from %s within %llu ms",
                 r->target->id,
                 (unsigned long long)((bsc_now_us() - cur_attempt(r)->start_us) / 1000));
        return;
    }
    if (r->stream_failed) {
        r->fail = r->stream_fail;
        return;
    }
    if (r->up_res != UP_OK) {
        static const enum fail_transport map[UP_RESULT_COUNT] = {
            [UP_OK] = FT_OK,           [UP_CONNECT] = FT_CONNECT, [UP_DNS] = FT_DNS,
            [UP_TIMEOUT] = FT_TIMEOUT, [UP_RESET] = FT_RESET,     [UP_TLS] = FT_TLS,
            [UP_PROTOCOL] = FT_PROTOCOL, [UP_TOO_LARGE] = FT_PROTOCOL,
        };
        char msg[FAIL_TEXT_MESSAGE];
        snprintf(msg, sizeof(msg), "%s", r->fail.message);
        fail_from_transport(map[r->up_res], r->up_status != 0 || r->up_res == UP_RESET, &r->fail);
        snprintf(r->fail.message, sizeof(r->fail.message), "%s", msg);
        return;
    }
    if (r->mode == BODY_SSE) { /* ended without a single event */
        fail_info_init(&r->fail);
        r->fail.kind = FAIL_SERVER_ERROR;
        r->fail.status = 200;
        snprintf(r->fail.message, sizeof(r->fail.message), "the stream ended before any event");
        return;
    }
    in = (struct prov_err_input){
        .status = r->up_status,
        .body = bsc_buf_str(&r->resp),
        .content_type = bsc_str_cstr(r->up_ctype),
        .retry_after = bsc_str_cstr(r->up_retry_after),
        .retry_after_ms = bsc_str_cstr(r->up_retry_after_ms),
        .now_wall_ms = bsc_wall_ms(),
    };
    prov_openai_classify(&in, &r->fail);
    if (r->fail.kind == FAIL_NONE && r->up_status >= 300) {
        r->fail.kind = fail_kind_from_status(r->up_status);
        r->fail.status = r->up_status;
    }
    if (r->fail.kind == FAIL_NONE && !json_ok(r)) {
        r->fail.kind = FAIL_SERVER_ERROR;
        r->fail.status = r->up_status;
        snprintf(r->fail.message, sizeof(r->fail.message), "the upstream answer is not valid JSON");
    }
}

static void st_attempt(struct request *r)
{
    if (r->xfer)
        return; /* still running: upstream events drive us */
    uv_timer_stop(&r->timer);
    if (r->key_idx != -1)
        classify_attempt(r);
    if (r->fail.kind == FAIL_NONE) {
        attempt_end(cur_attempt(r), bsc_now_us(), ATTEMPT_OK, NULL);
        cur_attempt(r)->status = r->up_status;
        report_attempt(r, BRK_SUCCESS, NULL, false);
        log_attempt(r, "deliver", "ok");
        req_goto(r, REQ_ST_REPLY);
        return;
    }
    attempt_failed(r);
    req_goto(r, REQ_ST_PICK);
}

static void st_relay(struct request *r)
{
    struct attempt *a = cur_attempt(r);

    if (r->xfer)
        return; /* streaming: upstream events drive us */
    uv_timer_stop(&r->timer);
    if (r->saw_done && !r->stream_failed) {
        attempt_end(a, bsc_now_us(), ATTEMPT_OK, NULL);
        a->status = 200;
        report_attempt(r, BRK_SUCCESS, NULL, false);
        log_attempt(r, "deliver", "ok");
        flush_out(r);
        if (r->sreq)
            srv_resp_end(r->sreq);
        r->sreq = NULL;
        r->termination = "ok";
        req_goto(r, REQ_ST_DONE);
        return;
    }
    /* Broke after the commit point: never replay; one error event, then close. */
    fail_info_init(&r->fail);
    r->fail.kind = FAIL_PARTIAL_OUTPUT;
    r->fail.transport = r->stream_failed ? FT_OK : FT_RESET;
    r->fail.status = 200;
    attempt_end(a, bsc_now_us(), ATTEMPT_PARTIAL, "partial_output");
    a->status = 200;
    report_attempt(r, breaker_outcome(&r->fail), "partial_output", false);
    log_attempt(r, "stop", r->timed_out ? "stream_stalled" : r->stream_failed ? "error_event"
                                                                              : "stream_cut");
    write_error_event(r, r->timed_out        ? "the upstream stream stalled past the deadline"
                         : r->stream_failed && r->stream_fail.message[0] ? r->stream_fail.message
                                                                         : "the upstream stream was interrupted");
    flush_out(r);
    if (r->sreq) {
        /* A well-framed end after the error event, then the connection closes: clients
         * read the event (the SDKs raise on it), and nothing reuses the connection. */
        srv_req_set_close(r->sreq);
        srv_resp_end(r->sreq);
    }
    r->sreq = NULL;
    r->termination = "upstream_interrupted";
    req_goto(r, REQ_ST_DONE);
}

static void st_reply(struct request *r)
{
    struct srv_header h[8];
    char attempts[16];
    size_t n;
    const char *ctype = r->up_ctype[0] ? r->up_ctype : "application/json";

    if (r->sreq) {
        n = route_headers(r, h, attempts, sizeof(attempts));
        srv_resp_send(r->sreq, r->up_status, ctype, h, n, r->resp.p, r->resp.len);
        r->status = r->up_status;
        r->bytes_out += r->resp.len;
        r->ttfb_us = bsc_now_us() - r->start_us;
        r->sreq = NULL;
    }
    r->termination = "ok";
    req_goto(r, REQ_ST_DONE);
}

static void st_reply_error(struct request *r)
{
    struct srv_header h[8];
    char attempts[16];
    size_t n;

    uv_timer_stop(&r->timer);
    if (r->sreq) {
        n = route_headers(r, h, attempts, sizeof(attempts));
        reply_error_send(r->sreq, &r->err, h, n);
        r->status = r->err.status;
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

static const char *outcome_label(const struct request *r)
{
    if (strcmp(r->termination, "ok") == 0)
        return "ok";
    if (strcmp(r->termination, "client_abort") == 0)
        return "client_abort";
    if (strcmp(r->termination, "upstream_interrupted") == 0)
        return "partial";
    return r->status >= 400 && r->status < 500 && r->status != 429 ? "client_error" : "error";
}

static void st_done(struct request *r)
{
    struct access_entry e;
    unsigned shard = r->w->idx;

    uv_timer_stop(&r->timer);
    if (r->xfer) {
        up_cancel(r->xfer);
        r->xfer = NULL;
    }
    report_attempt(r, BRK_NEUTRAL, NULL, false); /* a cancelled attempt frees its probe */
    if (r->sreq) {
        srv_resp_abort(r->sreq);
        r->sreq = NULL;
    }
    if (r->mode == BODY_SSE)
        sse_parser_cleanup(&r->sse);
    r->mode = BODY_NONE;
    if (!r->termination)
        r->termination = "ok";
    e = (struct access_entry){
        .request_id = r->id,
        .route = r->route->id,
        .target = r->target ? r->target->id : NULL,
        .status = r->status,
        .stream = r->stream,
        .bytes_in = r->body.len,
        .bytes_out = r->bytes_out,
        .duration_us = bsc_now_us() - r->start_us,
        .ttfb_us = r->ttfb_us,
        .attempts = r->attempts,
        .n_attempts = r->n_attempts,
        .termination = r->termination,
    };
    access_log_write(&e);
    metrics_inc(M(r), shard, METRIC_REQUESTS, r->route->id, outcome_label(r), 1);
    metrics_observe(M(r), shard, METRIC_REQUEST_DURATION, r->route->id, NULL,
                    (double)e.duration_us / 1e6);
    if (r->ttfb_us && r->status == 200)
        metrics_observe(M(r), shard, METRIC_TTFT, r->route->id, NULL, (double)r->ttfb_us / 1e6);
    r->body = BSC_STR_NULL;
    json_object_put(r->json);
    r->json = NULL;
    cfg_unref(r->cfg);
    r->cfg = NULL;
    r->route = NULL;
    r->w->inflight--;
    uv_close((uv_handle_t *)&r->timer, request_free);
}

/* ---- entry points ---- */

static void on_client_abort(struct srv_req *sreq, void *ud)
{
    struct request *r = ud;
    struct attempt *a = cur_attempt(r);

    (void)sreq;
    r->sreq = NULL;
    r->body = BSC_STR_NULL; /* borrowed from the now freed srv_req */
    if (r->xfer) {
        up_cancel(r->xfer);
        r->xfer = NULL;
    }
    if (a && a->outcome == ATTEMPT_RUNNING)
        attempt_end(a, bsc_now_us(), ATTEMPT_CANCELLED, "cancelled");
    r->termination = "client_abort";
    r->status = r->status ? r->status : 499;
    if (r->state != REQ_ST_DONE) {
        r->state = REQ_ST_DONE;
        st_done(r);
    }
}

static bool has_tools(struct json_object *json)
{
    struct json_object *tools;

    return json_object_object_get_ex(json, "tools", &tools) &&
           json_object_is_type(tools, json_type_array) && json_object_array_length(tools) > 0;
}

void req_chat_start(struct worker *w, struct srv_req *sreq, struct chat_in *in)
{
    struct request *r = calloc(1, sizeof(*r));
    struct envelope_hdrs eh = {
        .deadline_ms = srv_req_header(sreq, BSC_STR("x-bascule-deadline-ms")),
        .max_attempts = srv_req_header(sreq, BSC_STR("x-bascule-max-attempts")),
        .fallback = srv_req_header(sreq, BSC_STR("x-bascule-fallback")),
        .side_effects = srv_req_header(sreq, BSC_STR("x-bascule-side-effects")),
    };
    const char *why = NULL;

    if (!r || envelope_build(&in->route->envelope, &eh, srv_req_start_us(sreq) / 1000,
                             r ? &r->env : NULL, &why) != BSC_OK) {
        if (r)
            srv_resp_error(sreq, 400, "invalid_request_error", "invalid_header", why);
        else
            srv_resp_error(sreq, 503, "server_error", "gateway_overloaded", "out of memory");
        json_object_put(in->json);
        cfg_unref(in->cfg);
        free(r);
        return;
    }
    r->w = w;
    r->gw = w->gw;
    r->sreq = sreq;
    r->cfg = in->cfg;
    r->route = in->route;
    r->json = in->json;
    r->body = in->body;
    r->model_span = in->model_span;
    r->stream = in->stream;
    r->include_usage = in->include_usage;
    r->has_tools = has_tools(in->json);
    r->all_rate_limited = true;
    snprintf(r->id, sizeof(r->id), "%s", srv_req_id(sreq));
    r->start_us = srv_req_start_us(sreq);
    bsc_buf_init(&r->up_body, r->cfg->limits.max_body_bytes + 4096);
    bsc_buf_init(&r->resp, REQ_MAX_RESPONSE_BYTES);
    bsc_buf_init(&r->out, 8u << 20);
    uv_timer_init(&w->loop, &r->timer);
    r->timer.data = r;
    r->state = REQ_ST_PICK;
    w->inflight++;
    hstate_budget_first(r->gw->hs, bsc_now_ms());
    srv_req_on_abort(sreq, on_client_abort, r);
    req_run(r);
}
