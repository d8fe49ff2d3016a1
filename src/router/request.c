/* SPDX-License-Identifier: MIT */
/* request.c -- the request state machine (docs/design.md §3, §13.3). One list of states
 * (internal.h), one handler per state, one place that changes state (req__goto). Events
 * (upstream head, body bytes, completion, timers, client abort) record what happened and
 * call req__run(); handlers never call each other. The workflows are decisions taken in
 * PICK after a failure (decide.c); the upstream side of an attempt is exchange.c, the
 * client side deliver.c. RELAY is the commit point: once the first byte went to the
 * client there is no path back to PICK. See docs/internals/request-lifecycle.md. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/json_name.h"
#include "core/json_scan.h"
#include "core/log.h"
#include "metrics/metrics.h"
#include "router/access_log.h"
#include "router/contract.h"
#include "router/feedback.h"
#include "router/guard.h"
#include "router/internal.h"
#include "router/select.h"
#include "router/shadow.h"
#include "ledger/ledger.h"
#include "router/state.h"

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

void req__goto(struct request *r, enum req_state next)
{
    BSC_BUG_ON(r->state == REQ_ST_DONE);
    BSC_BUG_ON(r->state == REQ_ST_RELAY && next == REQ_ST_PICK);
    LOG_DEBUG("%s: %s -> %s", r->id, req_states[r->state].name, req_states[next].name);
    r->state = next;
}

void req__run(struct request *r)
{
    while (r->state != REQ_ST_DONE) {
        enum req_state prev = r->state;

        req_states[prev].step(r);
        if (r->state == prev)
            return; /* waiting for an event */
    }
    st_done(r);
}

struct metrics *req__metrics(const struct request *r)
{
    return r->gw->metrics;
}

#define M(r) req__metrics(r)

uint64_t req__time_left(const struct request *r)
{
    return envelope_remaining_ms(&r->env, bsc_now_ms());
}

struct attempt *req__cur_attempt(struct request *r)
{
    return r->n_attempts ? &r->attempts[r->n_attempts - 1] : NULL;
}

/* ---- errors ---- */

void req__set_error(struct request *r, int status, const char *type, const char *code,
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

void req__set_retry(struct request *r, enum reply_outlook outlook, int64_t wait_ms)
{
    struct reply_cause c = {
        .outlook = outlook,
        .kind = r->n_attempts ? r->fail.kind : FAIL_NONE,
        .wait_ms = wait_ms,
        .attempted = r->n_attempts > 0,
    };

    reply_set_retry(&r->err, &c);
}

/* A stop decided by the router: the typed failure of docs/design.md §9. */
void req__set_typed_failure(struct request *r, const char *reason, enum reply_outlook outlook,
                            int64_t wait_ms, const char *fmt, ...)
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
    };
    req__set_retry(r, outlook, wait_ms);
    r->termination = reason;
}

/* The provider's own error, normalized: a client fault, or a kind with no recovery left. */
void req__set_provider_error(struct request *r)
{
    const struct fail_policy *pol = fail_policy(r->fail.kind);
    const char *code = pol->client_code && pol->client_code[0] ? pol->client_code
                       : r->fail.code[0]                         ? r->fail.code
                                                                 : NULL;

    if (pol->forward_message && r->fail.message[0])
        req__set_error(r, pol->client_status, pol->client_type, code, "%s", r->fail.message);
    else
        req__set_error(r, pol->client_status, pol->client_type, code,
                  "upstream %s failed: %s%s%s", r->target ? r->target->id : "-",
                  fail_kind_name(r->fail.kind), r->fail.message[0] ? ": " : "",
                  pol->forward_message ? r->fail.message : "");
    /* Only a client fault or an uncertain side effect stops here: nothing a retry of the
     * same request would change (the row's client_should_retry is false for them all). */
    req__set_retry(r, REPLY_OUTLOOK_NEVER, -1);
    r->termination = fail_kind_name(r->fail.kind);
}

/* ---- timers ---- */

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
    req__run(r);
}

void req__arm_timer(struct request *r, uint64_t delay_ms)
{
    uv_timer_start(&r->timer, on_timer, delay_ms, 0);
}

/* ---- attempt accounting ---- */

static void note_breaker_change(struct request *r, const struct brk_change *c)
{
    if (!c->changed)
        return;
    LOG_WARN("circuit of %s: %s -> %s", r->target->id, brk_state_name(c->from),
             brk_state_name(c->to));
    metrics_inc(M(r), r->w->idx, METRIC_BREAKER_TRANSITIONS, r->target->id,
                brk_state_name(c->to), 1);

}

/* Reports the end of the current attempt to the shared state, once. */
static void report_attempt(struct request *r, enum brk_outcome outcome, const char *kind,
                           bool misconfigured)
{
    struct attempt *a = req__cur_attempt(r);
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
    r->circuit = change.to; /* for the attempt's log line */
    hstate_inflight(r->gw->hs, r->target, -1);
    metrics_gauge_add(M(r), r->w->idx, METRIC_UPSTREAM_INFLIGHT, r->target->id, NULL, -1);
    metrics_inc(M(r), r->w->idx, METRIC_ATTEMPTS, r->target->id, kind ? kind : "ok", 1);
    note_breaker_change(r, &change);
}

static enum brk_outcome breaker_outcome(const struct fail_info *f)
{
    return fail_counts_against_target(f) ? BRK_FAILURE : BRK_NEUTRAL;
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
    struct attempt_line l = {
        .request_id = r->id,
        .route = r->route->id,
        .number = r->n_attempts,
        .a = req__cur_attempt(r),
        .circuit = brk_state_name(r->circuit),
        .time_left_ms = req__time_left(r),
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
    struct attempt *a = req__cur_attempt(r);
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

/* ---- states ---- */

/* Starts an attempt on r->target with the workflow and delay decided before. */
static void begin_attempt(struct request *r)
{
    struct attempt *a;
    uint64_t now = bsc_now_ms(), soonest = 0;
    enum bsc_err err;

    if (r->n_attempts == ATTEMPT_MAX) {
        req__set_error(r, 503, "server_error", "gateway_overloaded", "too many attempts");
        req__goto(r, REQ_ST_REPLY_ERROR);
        return;
    }
    xchg_reset(r);
    /* A retry that waited for a key's cooldown may wake a millisecond early by the loop's
     * coarser clock: a small grace keeps it from failing on its own wait. */
    r->key_idx = hstate_key_next(r->gw->hs, r->target->provider,
                                 r->next_wf == ATTEMPT_WF_RETRY ? now + 10 : now, &soonest);
    a = &r->attempts[r->n_attempts++];
    attempt_begin(a, r->target, r->next_wf, bsc_now_us());
    snprintf(a->ranking, sizeof(a->ranking), "%s", r->ranking); /* feedback.c */
    r->ranking[0] = '\0';
    a->delay_ms = r->next_delay_ms;
    a->delay_why = r->next_delay_why;
    r->next_delay_ms = 0;
    r->next_delay_why = NULL;
    r->attempt_open = true;
    hstate_inflight(r->gw->hs, r->target, +1);
    metrics_gauge_add(M(r), r->w->idx, METRIC_UPSTREAM_INFLIGHT, r->target->id, NULL, 1);
    req__goto(r, REQ_ST_ATTEMPT);
    if (r->key_idx == -1) {
        /* Another request cooled the last key meanwhile: a local rate limit. */
        fail_info_init(&r->fail);
        r->fail.kind = FAIL_RATE_LIMITED;
        r->fail.retry_after_ms = soonest > now ? (int64_t)(soonest - now) : 0;
        snprintf(r->fail.message, sizeof(r->fail.message), "every key of %s is cooling down",
                 r->target->provider->id);
        return;
    }
    err = xchg_start(r);
    if (err == BSC_EINVAL)
        return; /* r->fail says why the target cannot take it; st_attempt moves on */
    if (err) {
        req__set_error(r, 503, "server_error", "gateway_overloaded", "could not start an attempt");
        report_attempt(r, BRK_NEUTRAL, NULL, false);
        req__goto(r, REQ_ST_REPLY_ERROR);
        return;
    }
    req__arm_timer(r, envelope_attempt_timeout_ms(&r->env, now, decide_later_tier_exists(r)));
    if (r->n_attempts == 1)
        shadow_start(r); /* after the primary started: a copy never delays it */
}

static void st_pick(struct request *r)
{
    const char *why = NULL;

    if (r->waiting_store)
        return; /* an idempotency or ledger lookup is running */
    if (r->n_attempts > 0 && guard_ledger_check(r) == GUARD_WAIT)
        return;
    if (r->ledger_blocked) {
        req__set_error(r, 409, "invalid_request_error", "reconcile_required",
                       "operation '%s' may already have acted (its ledger entry is %s): "
                       "reconcile it before retrying; the gateway will not replay it",
                       r->op_id, r->ledger_blocked);
        r->termination = "reconcile_required";
        guard_record_uncertain(r, "side_effect_uncertain");
        req__goto(r, REQ_ST_REPLY_ERROR);
        return;
    }
    if (r->n_attempts == 0) {
        r->target = decide_first(r);
        if (!r->target) {
            decide_none_eligible(r);
            req__goto(r, REQ_ST_REPLY_ERROR);
            return;
        }
        if (!decide_within_budgets(r, r->target)) {
            req__goto(r, REQ_ST_REPLY_ERROR);
            return;
        }
        if (r->next_wf != ATTEMPT_WF_PRIMARY)
            decide_count_workflow(r, r->next_wf);
        begin_attempt(r);
        return;
    }
    if (decide_next(r, &why) == DECIDE_STOP) {
        log_attempt(r, "stop", why);
        req__goto(r, REQ_ST_REPLY_ERROR);
        return;
    }
    log_attempt(r, decide_count_workflow(r, r->next_wf), why);
    if (r->next_delay_ms) {
        req__arm_timer(r, r->next_delay_ms);
        req__goto(r, REQ_ST_BACKOFF);
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

/* What the delivered answer cost, from its usage and the target's price. */
static void account_usage(struct request *r)
{
    const struct cfg_price *p = &r->target->price;

    if (r->mode == BODY_SSE && r->prov_st_live && r->ops->stream_usage)
        r->ops->stream_usage(r->prov_st, &r->usage);
    r->cost_usd = 0;
    if (r->usage.input_tokens > 0)
        r->cost_usd += (double)r->usage.input_tokens * p->input_per_mtok / 1e6;
    if (r->usage.output_tokens > 0)
        r->cost_usd += (double)r->usage.output_tokens * p->output_per_mtok / 1e6;
}

static void st_attempt(struct request *r)
{
    bool transport_ok;

    if (r->xfer)
        return; /* still running: upstream events drive us */
    uv_timer_stop(&r->timer);
    if (r->key_idx != -1 && r->fail.kind != FAIL_CONTRACT_FAILURE)
        xchg_classify(r);
    transport_ok = r->fail.kind == FAIL_NONE;
    metrics_inc3(M(r), r->w->idx, METRIC_OUTCOMES, r->route->id, "transport",
                 r->fail.kind == FAIL_NONE ? "ok" : "failed", 1);
    if (r->fail.kind == FAIL_NONE && contract_wanted(r)) {
        bool ok = r->mode == BODY_SSE ? contract_check_stream(r, &r->fail)
                                      : contract_check_answer(r, bsc_buf_str(&r->answer), &r->fail);
        if (r->mode != BODY_SSE || r->buffering) {
            metrics_inc3(M(r), r->w->idx, METRIC_OUTCOMES, r->route->id, "contract",
                         ok ? "ok" : "failed", 1);
            metrics_inc3(M(r), r->w->idx, METRIC_TARGET_OUTCOMES, r->target->id, "contract",
                         ok ? "ok" : "failed", 1);
        }
    }
    feedback_attempt(r, transport_ok);
    if (r->fail.kind == FAIL_NONE) {
        attempt_end(req__cur_attempt(r), bsc_now_us(), ATTEMPT_OK, NULL);
        req__cur_attempt(r)->status = r->up_status;
        report_attempt(r, BRK_SUCCESS, NULL, false);
        account_usage(r);
        log_attempt(r, "deliver", "ok");
        req__goto(r, REQ_ST_REPLY);
        return;
    }
    attempt_failed(r);
    req__goto(r, REQ_ST_PICK);
}

/* The stream passed limits.max_stream_ms or max_stream_bytes: the gateway's own bound, not
 * the upstream's fault, so its circuit hears of a success. One error event, then close. */
static void relay_cut(struct request *r, struct attempt *a)
{
    attempt_end(a, bsc_now_us(), ATTEMPT_PARTIAL, r->limit_cut);
    a->status = 200;
    report_attempt(r, BRK_SUCCESS, NULL, false);
    account_usage(r);
    log_attempt(r, "stop", r->limit_cut);
    guard_record_uncertain(r, "partial_output");
    deliver_stream_error(r, r->stream_fail.message);
    deliver_break(r, r->limit_cut);
    req__goto(r, REQ_ST_DONE);
}

static void st_relay(struct request *r)
{
    struct attempt *a = req__cur_attempt(r);

    if (r->xfer)
        return; /* streaming: upstream events drive us */
    uv_timer_stop(&r->timer);
    if (r->saw_done && !r->stream_failed) {
        attempt_end(a, bsc_now_us(), ATTEMPT_OK, NULL);
        a->status = 200;
        report_attempt(r, BRK_SUCCESS, NULL, false);
        account_usage(r);
        log_attempt(r, "deliver", "ok");
        feedback_attempt(r, true); /* before the end: the client may judge it at once */
        deliver_end(r, "ok");
        req__goto(r, REQ_ST_DONE);
        return;
    }
    if (r->timed_out ? deliver_stream_over(r, true) : r->limit_cut != NULL) {
        relay_cut(r, a);
        return;
    }
    /* Broke after the commit point: never replay; one error event, then close. */
    fail_info_init(&r->fail);
    r->fail.kind = FAIL_PARTIAL_OUTPUT;
    r->fail.transport = r->stream_failed ? FT_OK : FT_RESET;
    r->fail.status = 200;
    r->fail.request_caused = r->stream_failed && r->stream_fail.request_caused;
    attempt_end(a, bsc_now_us(), ATTEMPT_PARTIAL, "partial_output");
    a->status = 200;
    feedback_attempt(r, false);
    report_attempt(r, breaker_outcome(&r->fail), "partial_output", false);
    log_attempt(r, "stop", r->timed_out ? "stream_stalled" : r->stream_failed ? "error_event"
                                                                              : "stream_cut");
    guard_record_uncertain(r, "partial_output");
    deliver_stream_error(r, r->timed_out ? "the upstream stream stalled past the deadline"
                            : r->stream_failed && r->stream_fail.message[0]
                                ? r->stream_fail.message
                                : "the upstream stream was interrupted");
    /* The error event, then the connection closes without the chunked terminator: the
     * SDKs raise on the event; a reader of the raw stream sees it end broken. A well-framed
     * end would look complete and invite reuse of a connection that is closing. */
    deliver_break(r, "upstream_interrupted");
    req__goto(r, REQ_ST_DONE);
}

static void st_reply(struct request *r)
{
    r->termination = "ok"; /* before delivery: the idempotency record is settled there */
    if (r->mode == BODY_SSE)
        deliver_stream_complete(r); /* a buffered stream that passed its checks */
    else
        deliver_answer(r); /* may turn into a translation_failed error */
    req__goto(r, REQ_ST_DONE);
}

static void st_reply_error(struct request *r)
{
    uv_timer_stop(&r->timer);
    deliver_error(r);
    r->termination = r->termination ? r->termination : "error";
    req__goto(r, REQ_ST_DONE);
}

/* A zeroed request, from the worker's pool when it has one. */
static struct request *req_alloc(struct worker *w)
{
    struct request *r;

    if (!w->n_req_pool)
        return calloc(1, sizeof(struct request));
    r = w->req_pool[--w->n_req_pool];
    memset(r, 0, sizeof(*r));
    return r;
}

void req__release(struct request *r)
{
    struct worker *w = r->w;

    if (w && w->n_req_pool < WORKER_REQ_POOL) {
        w->req_pool[w->n_req_pool++] = r;
        return;
    }
    free(r);
}

void req_pool_drain(struct worker *w)
{
    while (w->n_req_pool)
        free(w->req_pool[--w->n_req_pool]);
}

static void request_free(uv_handle_t *h)
{
    struct request *r = h->data;

    bsc_buf_cleanup(&r->idem_copy);
    if (guard_can_free(r))
        req__release(r);
}

static const char *outcome_label(const struct request *r)
{
    if (strcmp(r->termination, "ok") == 0)
        return "ok";
    if (strcmp(r->termination, "client_abort") == 0)
        return "client_abort";
    if (strcmp(r->termination, "upstream_interrupted") == 0 || r->limit_cut)
        return "partial";
    return r->status >= 400 && r->status < 500 && r->status != 429 ? "client_error" : "error";
}

static void st_done(struct request *r)
{
    struct access_entry e;
    unsigned shard = r->w->idx;
    char selected_by[160]; /* a route id is at most 128 bytes */

    if (r->finished)
        return;
    r->finished = true;
    r->state = REQ_ST_DONE;
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
    shadow_primary_done(r); /* before the answer is freed */
    xchg_cleanup(r);
    deliver_cleanup(r);
    contract_cleanup(r);
    if (!r->termination)
        r->termination = "ok";
    guard_idem_finish(r);
    if (r->select_route)
        snprintf(selected_by, sizeof(selected_by), "%.128s#%d", r->select_route->id,
                 r->select_rule + 1);
    e = (struct access_entry){
        .request_id = r->id,
        .path = r->path,
        .route = r->route->id,
        .selected_by = r->select_route && r->select_rule >= 0 ? selected_by : NULL,
        .target = r->target ? r->target->id : NULL,
        .status = r->status,
        .stream = r->stream,
        .bytes_in = r->bytes_in,
        .bytes_out = r->bytes_out,
        .duration_us = bsc_now_us() - r->start_us,
        .ttfb_us = r->ttfb_us,
        .attempts = r->attempts,
        .n_attempts = r->n_attempts,
        .termination = r->termination,
        .input_tokens = r->usage.input_tokens,
        .output_tokens = r->usage.output_tokens,
        .cost_usd = r->cost_usd,
    };
    access_log_write(&e);
    if (r->usage.input_tokens > 0)
        metrics_inc(M(r), shard, METRIC_TOKENS, r->route->id, "input",
                    (double)r->usage.input_tokens);
    if (r->usage.output_tokens > 0)
        metrics_inc(M(r), shard, METRIC_TOKENS, r->route->id, "output",
                    (double)r->usage.output_tokens);
    if (r->cost_usd > 0)
        metrics_inc(M(r), shard, METRIC_COST, r->route->id, NULL, r->cost_usd);
    metrics_inc(M(r), shard, METRIC_REQUESTS, r->route->id, outcome_label(r), 1);
    /* Task outcomes are counted when the client's verdict comes (api/feedback.c). */
    metrics_observe(M(r), shard, METRIC_REQUEST_DURATION, r->route->id, NULL,
                    (double)e.duration_us / 1e6);
    if (r->ttfb_us && r->status == 200)
        metrics_observe(M(r), shard, METRIC_TTFT, r->route->id, NULL, (double)r->ttfb_us / 1e6);
    r->body = BSC_STR_NULL;
    r->native = (struct prov_native){0};
    trim_req_cleanup(r);
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
    struct attempt *a = req__cur_attempt(r);

    (void)sreq;
    r->sreq = NULL;
    r->body = BSC_STR_NULL; /* borrowed from the now freed srv_req */
    r->native = (struct prov_native){0};
    if (r->xfer) {
        up_cancel(r->xfer);
        r->xfer = NULL;
    }
    if (a && a->outcome == ATTEMPT_RUNNING)
        attempt_end(a, bsc_now_us(), ATTEMPT_CANCELLED, "cancelled");
    r->termination = "client_abort";
    r->status = r->status ? r->status : 499;
    st_done(r);
}

struct json_object *req__json(struct request *r)
{
    if (!r->json && r->body.p)
        r->json = prov_parse_json(r->body);
    return r->json;
}

enum { F_MESSAGES, F_TOOLS, F_RESPONSE_FORMAT, F_MAX_TOKENS, F_MAX_COMPLETION_TOKENS, F_COUNT };

/* A cheap, documented estimate of the tokens the request needs: about 4 bytes of JSON
 * per prompt token (OpenAI's tokenizers average 4 characters per token in English; JSON
 * overhead makes the estimate generous) plus the output budget the client asked for. */
static uint64_t estimate_tokens(struct bsc_str body, const struct bsc_str *f, uint64_t *out_part)
{
    unsigned long long out = 0;

    if (!bsc_json_u64(f[F_MAX_COMPLETION_TOKENS], &out) && !bsc_json_u64(f[F_MAX_TOKENS], &out))
        out = 0;
    *out_part = out;
    return body.len / 4 + out;
}

/* True when the string span <v>, its escapes decoded, is <want>: "image\u005furl" is
 * image_url to the upstream, so it must be to the gateway too (json-names.md). A string
 * parsers decode differently (a lone surrogate) equals no plain name. */
static bool str_is(struct bsc_str v, const char *want)
{
    return bsc_json_kind_of(v) == BSC_JSON_STRING &&
           bsc_json_name_eq(bsc_json_string_raw(v), bsc_str_cstr(want)) == 1;
}

/* True when a message has a content part of type image_url. */
static bool has_images(struct bsc_str msgs)
{
    struct bsc_str msg, content, part, type;
    size_t i = 0, j;

    while (bsc_json_array_next(msgs, &i, &msg)) {
        if (bsc_json_member(msg, BSC_STR("content"), &content) != 1 ||
            bsc_json_kind_of(content) != BSC_JSON_ARRAY)
            continue;
        for (j = 0; bsc_json_array_next(content, &j, &part);)
            if (bsc_json_member(part, BSC_STR("type"), &type) == 1 && str_is(type, "image_url"))
                return true;
    }
    return false;
}

/* The capabilities the request itself needs of a target (docs/design.md §2 contract). */
static uint32_t request_caps(const struct request *r, const struct bsc_str *f)
{
    struct bsc_str type;
    uint32_t caps = 0;

    if (r->op == PROV_OP_EMBEDDINGS)
        return CFG_CAP_EMBEDDINGS;
    if (r->stream)
        caps |= CFG_CAP_STREAMING;
    if (bsc_json_array_nonempty(f[F_TOOLS]))
        caps |= CFG_CAP_TOOLS;
    if (f[F_RESPONSE_FORMAT].p &&
        bsc_json_member(f[F_RESPONSE_FORMAT], BSC_STR("type"), &type) == 1) {
        if (str_is(type, "json_schema"))
            caps |= CFG_CAP_JSON_SCHEMA;
        else if (str_is(type, "json_object"))
            caps |= CFG_CAP_JSON_OBJECT;
    }
    if (f[F_MESSAGES].p && bsc_json_may_hold(f[F_MESSAGES], BSC_STR("image_url")) &&
        has_images(f[F_MESSAGES]))
        caps |= CFG_CAP_VISION;
    return caps;
}

static struct bsc_str meta_header(const void *sreq, struct bsc_str name)
{
    return srv_req_header(sreq, name);
}

/* Task routing: a select route hands the request to the route of its first rule that holds,
 * once, before the envelope is built, so that route's envelope, tiers and contract apply. No
 * rule holding leaves r->route on the select route, which req_chat_start refuses (400). */
static void select_route(struct request *r, struct bsc_str messages)
{
    uint64_t budget = SEL_MAX_REGEX_STEPS;
    struct bsc_str meta = BSC_STR_NULL;
    struct sel_facts f = {
        .tools = r->has_tools,
        .images = (r->need_caps & CFG_CAP_VISION) != 0,
        .json_schema = (r->need_caps & CFG_CAP_JSON_SCHEMA) != 0,
        .stream = r->stream,
        .input_tokens = r->est_tokens - r->est_out_tokens,
        .header = meta_header,
        .header_ctx = r->sreq,
    };
    char *text = sel_read_messages(messages, &f.messages, &f.last_user.len);

    f.last_user.p = text ? text : "";
    /* Every dialect (chat, messages, responses) has its metadata at the top of its own body. */
    if (bsc_json_member(srv_req_body(r->sreq), BSC_STR("metadata"), &meta) == 1)
        f.metadata = meta;
    r->select_route = r->route;
    r->select_rule = sel_pick(r->route, &f, &budget);
    if (r->select_rule >= 0)
        r->route = r->route->select[r->select_rule].route;
    free(text);
}

/* Reads what the router needs to know of the request itself: from the spans the api
 * layer found, else in one pass over the OpenAI-shaped body (the client's bytes, or the
 * canonical form of another dialect serialised). */
static void inspect_request(struct request *r, const struct chat_in *in)
{
    static const struct bsc_str keys[F_COUNT] = {
        [F_MESSAGES] = BSC_STR("messages"),
        [F_TOOLS] = BSC_STR("tools"),
        [F_RESPONSE_FORMAT] = BSC_STR("response_format"),
        [F_MAX_TOKENS] = BSC_STR("max_tokens"),
        [F_MAX_COMPLETION_TOKENS] = BSC_STR("max_completion_tokens"),
    };
    struct bsc_str body = r->body, f[F_COUNT];
    const char *text = NULL;
    size_t len = 0;

    if (in->have_spans && body.p) {
        f[F_MESSAGES] = in->messages;
        f[F_TOOLS] = in->tools;
        f[F_RESPONSE_FORMAT] = in->response_format;
        f[F_MAX_TOKENS] = in->max_tokens;
        f[F_MAX_COMPLETION_TOKENS] = in->max_completion_tokens;
    } else {
        if (!body.p && r->json) { /* another dialect: read the canonical form */
            text = json_object_to_json_string_length(r->json, JSON_C_TO_STRING_PLAIN, &len);
            body = bsc_str_make(text, text ? len : 0);
        }
        if (bsc_json_members(body, keys, F_COUNT, f) < 0) /* repeated keys: read none */
            for (size_t i = 0; i < F_COUNT; i++)
                f[i] = BSC_STR_NULL;
    }
    r->need_caps = request_caps(r, f);
    r->has_tools = (r->need_caps & CFG_CAP_TOOLS) != 0;
    r->est_tokens = estimate_tokens(body, f, &r->est_out_tokens);
    if (r->route->n_select)
        select_route(r, f[F_MESSAGES]);
    trim_req_inspect(r, body, f[F_MESSAGES]);
}

/* X-Bascule-Operation-Id ties the call to an operation of the tool ledger. */
static bool read_operation_id(struct request *r)
{
    struct bsc_str id = srv_req_header(r->sreq, BSC_STR("x-bascule-operation-id"));

    if (!id.p)
        return true;
    if (!ledger_op_id_valid(id)) {
        req__set_error(r, 400, "invalid_request_error", "invalid_operation_id",
                       "X-Bascule-Operation-Id must be 1..%d characters of [A-Za-z0-9._:~-]",
                       LEDGER_OP_ID_MAX);
        return false;
    }
    snprintf(r->op_id, sizeof(r->op_id), "%.*s", BSC_STR_FMT(id));
    return true;
}

void req_chat_start(struct worker *w, struct srv_req *sreq, struct chat_in *in)
{
    struct request *r = req_alloc(w);
    struct envelope_hdrs eh = {
        .deadline_ms = srv_req_header(sreq, BSC_STR("x-bascule-deadline-ms")),
        .max_attempts = srv_req_header(sreq, BSC_STR("x-bascule-max-attempts")),
        .fallback = srv_req_header(sreq, BSC_STR("x-bascule-fallback")),
        .side_effects = srv_req_header(sreq, BSC_STR("x-bascule-side-effects")),
    };
    const char *why = NULL;

    if (r) { /* what inspect_request reads; the rest is set once the envelope is built */
        r->sreq = sreq;
        r->route = in->route;
        r->json = in->json;
        r->body = in->body;
        r->stream = in->stream;
        r->op = in->op;
        inspect_request(r, in);
    }
    if (!r || envelope_build(&r->route->envelope, &eh, srv_req_start_us(sreq) / 1000, &r->env,
                             &why) != BSC_OK) {
        if (r)
            srv_resp_error(sreq, 400, "invalid_request_error", "invalid_header", why);
        else
            srv_resp_error(sreq, 503, "server_error", "gateway_overloaded", "out of memory");
        json_object_put(in->json);
        if (in->down && in->down->arg_free)
            in->down->arg_free(in->down_arg);
        cfg_unref(in->cfg);
        free(r); /* never handed out: r->w is not set */
        return;
    }
    r->w = w;
    r->gw = w->gw;
    r->cfg = in->cfg;
    r->bytes_in = srv_req_body(sreq).len;
    r->model_span = in->model_span;
    r->include_usage = in->include_usage;
    r->down = in->down;
    r->native = in->native;
    r->down_arg = in->down_arg;
    r->buffering = r->stream && r->env.on_stream_failure == CFG_SF_BUFFER;
    r->all_rate_limited = true;
    snprintf(r->id, sizeof(r->id), "%s", srv_req_id(sreq));
    req_client_scope(sreq, r->client_scope, sizeof(r->client_scope)); /* feedback.c */
    snprintf(r->path, sizeof(r->path), "%.*s", BSC_STR_FMT(srv_req_path(sreq)));
    r->start_us = srv_req_start_us(sreq);
    r->created = (int64_t)(bsc_wall_ms() / 1000);
    bsc_buf_init(&r->resp, REQ_MAX_RESPONSE_BYTES);
    bsc_buf_init(&r->answer, REQ_MAX_RESPONSE_BYTES);
    bsc_buf_init(&r->conv, 8u << 20);
    bsc_buf_init(&r->out, 8u << 20);
    r->usage = (struct prov_usage){-1, -1, -1};
    uv_timer_init(&w->loop, &r->timer);
    r->timer.data = r;
    bsc_buf_init(&r->idem_copy, 8u << 20);
    r->state = REQ_ST_PICK;
    w->inflight++;
    srv_req_on_abort(sreq, on_client_abort, r);
    if (r->route->n_select) {
        req__set_error(r, 400, "invalid_request_error", "no_route_selected",
                       "no rule of route '%s' takes this request", r->route->id);
        req__goto(r, REQ_ST_REPLY_ERROR);
    } else if (!read_operation_id(r)) {
        req__goto(r, REQ_ST_REPLY_ERROR);
    } else if (guard_idem_start(r) == GUARD_STOP) {
        req__goto(r, REQ_ST_REPLY_ERROR);
    } else {
        hstate_budget_first(r->gw->hs, bsc_now_ms());
    }
    req__run(r);
}
