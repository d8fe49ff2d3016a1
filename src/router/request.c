/* SPDX-License-Identifier: MIT */
/* request.c -- the request state machine (docs/design.md §3, §13.3). One list of states
 * (req_state.h, with the transition mask), one handler per state, one place that changes
 * state (req__goto). Events (first upstream frame, completion, store callbacks, timers,
 * client abort) record what happened and call req__run(); handlers never call each other.
 * ADMIT runs the admission checks (admit.c); the workflows are decisions taken in PICK
 * after a failure (decide.c); the upstream side of an attempt is exchange.c, the client
 * side deliver.c. RELAY is the commit point: once the first byte went to the client
 * there is no path back to PICK. See docs/internals/request-lifecycle.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/json_scan.h"
#include "core/log.h"
#include "health/hstate.h"
#include "limits/limits.h"
#include "ledger/ledger.h"
#include "metrics/metrics.h"
#include "router/access_log.h"
#include "router/admit.h"
#include "router/cache_req.h"
#include "router/client_scope.h"
#include "router/contract.h"
#include "policy/cost.h"
#include "router/decide_req.h"
#include "router/deliver.h"
#include "router/deliver_note.h"
#include "router/exchange.h"
#include "router/feedback.h"
#include "router/guard.h"
#include "router/internal.h"
#include "router/limit.h"
#include "router/machine.h"
#include "router/overhead.h"
#include "router/req_error.h"
#include "router/req_state.h"
#include "router/req_wake.h"
#include "router/request.h"
#include "router/resp_owner.h"
#include "policy/select.h"
#include "router/resume.h"
#include "router/shadow.h"
#include "router/spend.h"
#include "router/trace.h"
#include "router/trim.h"

typedef void req_step_fn(struct request *r);

#define X(NAME, name, doc, to) static req_step_fn st_##name;
REQ_STATES(X)
#undef X

static req_step_fn *const req_steps[REQ_ST_COUNT] = {
#define X(NAME, name, doc, to) [REQ_ST_##NAME] = st_##name,
    REQ_STATES(X)
#undef X
};

#ifdef BSC_UNIT_TEST
/* Test seam (unit builds only): told of every transition req__goto makes, after the mask
 * check; the request harness (tests/unit/harness/) records the edges taken. */
req__goto_hook_fn *req__goto_hook;
#endif

/* The one place that changes state. A transition the mask (req_state.h) does not allow is
 * a bug: test builds stop on it; in production the request ends (DONE) and says why. */
void req__goto(struct request *r, enum req_state next)
{
    BSC_BUG_ON(r->m.state == REQ_ST_DONE);
    if (!req_state_may_go(r->m.state, next)) {
        LOG_ERR("%s: forbidden transition %s -> %s: the request ends", r->ident.id,
                  req_state_name(r->m.state), req_state_name(next));
#ifdef BSC_UNIT_TEST
        bsc_bug(__FILE__, __LINE__, "forbidden request state transition");
#endif
        next = REQ_ST_DONE;
    }
    LOG_DEBUG("%s: %s -> %s", r->ident.id, req_state_name(r->m.state), req_state_name(next));
#ifdef BSC_UNIT_TEST
    if (req__goto_hook)
        req__goto_hook(r->ident.id, r->m.state, next);
#endif
    req_times_move(&r->m.times, r->m.state, next, req__now_us(r));
    r->m.state = next;
}

static void account_usage(struct request *r, bool complete);

/* The client went away (on_client_abort): whatever the state, the request ends here. */
static void req_abort(struct request *r)
{
    struct attempt *a = req__cur_attempt(r);

    xchg_cancel(&r->x);
    if (a && a->outcome == ATTEMPT_RUNNING) {
        /* The provider bills what it was asked and generated, whether or not the client
         * stayed: the prompt and the output so far, estimated where no usage came. */
        account_usage(r, false);
        attempt_end(a, req__now_us(r), ATTEMPT_CANCELLED, "cancelled");
    }
    deliver_client_gone(r);
    req__goto(r, REQ_ST_DONE);
}

/* Runs the steps until one waits or the request is done. <outer>: this run owns the run's
 * clock (req__now_us) and ends it; a run nested in another keeps the outer one's. */
static void run_steps(struct request *r, bool outer)
{
    while (r->m.state != REQ_ST_DONE) {
        enum req_state prev = r->m.state;

        if (r->m.client_gone) {
            req_abort(r);
            break;
        }
        req_steps[prev](r);
        if (r->m.state == prev) { /* waiting for an event */
            if (outer)
                r->m.running = false;
            return;
        }
    }
    if (outer) /* before st_done, which may free r; its log line reads the clock afresh */
        r->m.running = false;
    st_done(r);
}

void req__run(struct request *r)
{
    bool outer = !r->m.running;

    if (outer) {
        r->m.running = true;
        r->m.step_us = 0;
    }
    run_steps(r, outer);
}

#define M(r) req__metrics(r)

/* The request's metric updates, scoped by its config snapshot (metrics_inc_scoped): every
 * label passed here is a literal or a string of r->cfg (a route, target, provider or
 * client id), which the request holds, so a repeated update is confirmed on the label
 * pointers alone. A label from anywhere else must go through metrics_inc(). */
static void count(const struct request *r, enum metric_id id, const char *l1, const char *l2,
                  const char *l3, double v)
{
    metrics_inc_scoped(M(r), r->w->idx, r->cfg ? r->cfg->serial : 0, id, l1, l2, l3, v);
}

static void observe(const struct request *r, enum metric_id id, const char *l1, double v)
{
    metrics_observe_scoped(M(r), r->w->idx, r->cfg ? r->cfg->serial : 0, id, l1, v);
}


/* ---- timers ---- */

static void on_timer(uv_timer_t *h)
{
    struct request *r = h->data;

    switch (r->m.state) {
    case REQ_ST_BACKOFF:
        break; /* st_backoff sees the timer is no longer active */
    case REQ_ST_PICK:
    case REQ_ST_ADMIT:
        break; /* the wait for a target's or a client's room (limit.c) is over: again */
    case REQ_ST_RELAY:
        if (deliver_stream_rearm(r))
            return; /* events came since it was armed: not a stall yet */
        /* fall through */
    case REQ_ST_ATTEMPT:
        xchg_time_out(r, r->m.state == REQ_ST_ATTEMPT);
        break;
    default:
        return;
    }
    req__run(r);
}

void req__arm_timer(struct request *r, uint64_t delay_ms)
{
    /* Timers count from the loop's cached time, which lags the clock the decisions read
     * (bsc_now_ms) by however long this loop pass has run. Refresh it, so a wait for a key's
     * cooldown or a Retry-After never ends before the time it was computed for. */
    uv_update_time(r->timer.loop);
    uv_timer_start(&r->timer, on_timer, delay_ms, 0);
    deliver_stream_disarmed(r); /* deliver_stream_arm marks its own */
}

/* ---- members request.c owns, changed for the helper that saw why ---- */

void req__release_sreq(struct request *r)
{
    r->sreq = NULL;
}

void req__aim(struct request *r, const struct cfg_target *target, enum tier tier)
{
    r->cur.target = target;
    r->cur.tier = tier;
}

void req__aim_probe(struct request *r, bool probe)
{
    r->cur.probe = probe;
}

/* ---- attempt accounting ---- */

/* adaptive: the target's configured rpm and max_concurrency, as the limiter enforces them,
 * follow the AIMD factor the last report left (health/adaptive.h). */
static void adapt_limits(struct request *r)
{
    struct adaptive_eff eff;
    uint32_t inflight;

    if (!r->cur.target->adaptive || !r->cur.target->lim ||
        (!r->cur.target->max_concurrency && !r->cur.target->rpm))
        return;
    hstate_adaptive(r->gw->hs, r->cur.target, &eff, &inflight);
    lim_set_factor(r->cur.target->lim, eff.factor);
}

static void note_breaker_change(struct request *r, const struct brk_change *c)
{
    if (!c->changed)
        return;
    LOG_WARN("circuit of %s: %s -> %s", r->cur.target->id, brk_state_name(c->from),
             brk_state_name(c->to));
    count(r, METRIC_BREAKER_TRANSITIONS, r->cur.target->id, brk_state_name(c->to), NULL, 1);

}

/* Reports the end of the current attempt to the shared state, once. */
/* The answer's rate-limit headers, read before any 429: a key with nothing left in a window
 * rests, for this target's model, until the window resets (docs/internals/adaptive.md). A
 * 429 that says when to retry has cooled the key by that already: its Retry-After is the
 * provider's word for this refusal and wins over the window's reset. */
static void note_rate_limits(struct request *r)
{
    struct rl_headers rl;
    int64_t rest;

    if (r->cur.key_idx < 0 || !r->x.up_head.len)
        return;
    if (r->x.up_status == 429 && r->x.fail.retry_after_ms >= 0)
        return;
    xchg_rate_limits(r, &rl);
    rest = rl_exhausted_ms(&rl);
    if (rest <= 0)
        return;
    hstate_tkey_cooldown(r->gw->hs, r->cur.target, r->cur.key_idx, KEY_RATE_LIMITED, rest, bsc_now_ms());
    count(r, METRIC_KEY_COOLDOWNS, r->cur.target->provider->id,
          keys_reason_name(KEY_RATE_LIMITED), NULL, 1);
}

/* What the attempt tells the target's AIMD controller: a provider 429 shrinks, a success
 * grows; a failure the gateway made itself (no answer) says nothing. */
static enum adapt_signal adapt_signal_of(const struct request *r, enum brk_outcome outcome)
{
    if (r->x.up_status == 429)
        return ADAPT_LIMITED;
    return outcome == BRK_SUCCESS ? ADAPT_OK : ADAPT_NONE;
}

static void report_attempt(struct request *r, enum brk_outcome outcome, const char *kind,
                           bool misconfigured)
{
    struct attempt *a = req__cur_attempt(r);
    struct attempt_report rep = {
        .outcome = outcome,
        .was_probe = r->cur.probe,
        .latency_ms = -1,
        .ttft_ms = -1,
        .error = kind,
        .misconfigured = misconfigured,
        .adapt = adapt_signal_of(r, outcome),
        .started_ms = a ? a->start_us / 1000 : 0,
    };
    struct brk_change change;
    uint64_t now_us;

    if (!r->cur.open)
        return;
    r->cur.open = false;
    note_rate_limits(r);
    now_us = req__now_us(r); /* the run's: its attempt_end, just before, read the same */
    if (outcome == BRK_SUCCESS) {
        rep.latency_ms = (double)(now_us - a->start_us) / 1e3;
        if (r->input.stream && r->d.ttfb_us)
            rep.ttft_ms = (double)(r->ident.start_us + r->d.ttfb_us - a->start_us) / 1e3;
    }
    /* The exact clock (this run's reading), as the attempt's start is read: the shared
     * health state compares the two across workers (the adaptive controller's "started
     * before the last cut"), and a worker's loop-pass milliseconds may lag its start by up
     * to a pass. */
    hstate_record(r->gw->hs, r->cur.target, now_us / 1000, &rep, &change);
    adapt_limits(r);
    r->cur.circuit = change.to; /* for the attempt's log line */
    if (a)
        a->circuit = brk_state_name(change.to); /* and its span */
    hstate_inflight(r->gw->hs, r->cur.target, -1);
    reqlim_attempt_done(r);
    count(r, METRIC_UPSTREAM_INFLIGHT, r->cur.target->id, NULL, NULL, -1); /* a gauge */
    count(r, METRIC_ATTEMPTS, r->cur.target->id, kind ? kind : "ok", NULL, 1);
    if (a)
        observe(r, METRIC_ATTEMPT_DURATION, r->cur.target->id,
                (double)(now_us - a->start_us) / 1e6);
    if (rep.ttft_ms >= 0)
        observe(r, METRIC_ATTEMPT_TTFT, r->cur.target->id, rep.ttft_ms / 1e3);
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
    struct access_attempt_line l = {
        .request_id = r->ident.id,
        .route = r->route->id,
        .number = r->att.n,
        .a = req__cur_attempt(r),
        .circuit = brk_state_name(r->cur.circuit),
        .time_left_ms = req__time_left(r),
        .next = next,
        .why = why,
        .next_delay_ms = r->next.delay_ms,
        .delay_why = r->next.delay_why,
        .limited_by = r->lim.queue_start_ms ? r->lim.queued_for : NULL,
        .queued_ms = r->lim.queue_start_ms ? (int64_t)r->lim.queued_ms : -1,
    };

    access_log_write_attempt(&l);
}

/* The current attempt failed before anything was committed: account for it. */
static void attempt_failed(struct request *r)
{
    struct attempt *a = req__cur_attempt(r);
    const struct fail_policy *pol = fail_policy(r->x.fail.kind);

    attempt_end(a, req__now_us(r), ATTEMPT_FAILED, fail_kind_name(r->x.fail.kind));
    a->status = r->x.fail.status;
    if (pol->cools_key && r->cur.key_idx >= 0) {
        int reason = key_reason_of(r->x.fail.kind);
        hstate_tkey_cooldown(r->gw->hs, r->cur.target, r->cur.key_idx, reason, r->x.fail.retry_after_ms,
                             bsc_now_ms());
        count(r, METRIC_KEY_COOLDOWNS, r->cur.target->provider->id,
              keys_reason_name((enum key_reason)reason), NULL, 1);
    }
    report_attempt(r, breaker_outcome(&r->x.fail), fail_kind_name(r->x.fail.kind),
                   pol->flags_misconfigured);
    req__note_failed(r, r->x.fail.kind);
}

/* ---- states ---- */

/* True when r->cur.target, which has no configured max_concurrency, runs as many attempts as its
 * learnt adaptive concurrency allows: the attempt ends as a local rate limit. */
static bool adaptive_full(struct request *r)
{
    struct adaptive_eff eff;
    uint32_t inflight;

    if (!r->cur.target->adaptive || r->cur.target->max_concurrency)
        return false; /* a configured cap: the limiter enforces it, scaled (adapt_limits) */
    hstate_adaptive(r->gw->hs, r->cur.target, &eff, &inflight);
    return eff.concurrency && inflight >= eff.concurrency;
}

/* The attempt cannot go: every key cools for this model (another request cooled the last
 * one meanwhile) or the target is at its adaptive limit (<full>): a local rate limit. */
static void limited_locally(struct request *r, bool full, uint64_t soonest, uint64_t now)
{
    char why[64];

    if (full) {
        xchg_note_rate_limited(r, ADAPTIVE_RETRY_MS, "%s is at its adaptive concurrency limit",
                               r->cur.target->id);
        return;
    }
    keys_reasons_text(hstate_tkeys_reasons(r->gw->hs, r->cur.target, now), why, sizeof(why));
    xchg_note_rate_limited(r, soonest > now ? (int64_t)(soonest - now) : 0,
                           "every key of %s is cooling down (all keys cooled: %s)",
                           r->cur.target->provider->id, why[0] ? why : "unknown");
}

/* Room for the next attempt's record (r->att.recs[r->att.n]): in place for the first
 * ATTEMPT_INLINE, then in a heap array that doubles up to ATTEMPT_MAX. NULL (the request
 * fails) past the bound or without memory. */
static struct attempt *attempt_slot(struct request *r)
{
    unsigned cap = r->att.cap * 2;
    struct attempt *grown;

    if (r->att.n == ATTEMPT_MAX)
        return NULL;
    if (r->att.n < r->att.cap)
        return &r->att.recs[r->att.n];
    if (cap > ATTEMPT_MAX)
        cap = ATTEMPT_MAX;
    if (!(grown = malloc(cap * sizeof(*grown))))
        return NULL;
    memcpy(grown, r->att.recs, r->att.n * sizeof(*grown));
    if (r->att.recs != r->att.inline_recs)
        free(r->att.recs);
    r->att.recs = grown;
    r->att.cap = cap;
    return &r->att.recs[r->att.n];
}

/* The attempt's timer: what the envelope leaves it, or for a stream
 * envelope.first_token_timeout_ms when that ends first (the wait for the first content
 * event, a timeout before the commit point). */
static void arm_attempt_timer(struct request *r, uint64_t now)
{
    uint64_t t = envelope_attempt_timeout_ms(&r->env, now, req__later_tier_exists(r));
    uint32_t ftt = r->env.first_token_timeout_ms;

    if (r->input.stream && !r->buffering && ftt && !r->d.committed && ftt < t) {
        t = ftt;
        xchg_arm_first_token(r);
    }
    req__arm_timer(r, t);
}

/* Starts an attempt on r->cur.target with the workflow and delay decided before. */
static void begin_attempt(struct request *r)
{
    struct attempt *a = attempt_slot(r);
    uint64_t now = bsc_now_ms(), soonest = 0;
    enum bsc_err err;
    bool full;

    if (!a) {
        req__set_error(r, 503, "server_error", "gateway_overloaded", "too many attempts");
        req__goto(r, REQ_ST_REPLY_ERROR);
        return;
    }
    xchg_reset(r);
    /* A retry that waited for a key's cooldown may wake a millisecond early by the loop's
     * coarser clock: a small grace keeps it from failing on its own wait. */
    full = adaptive_full(r);
    r->cur.key_idx = full ? -1
                      : hstate_tkey_next(r->gw->hs, r->cur.target,
                                         r->next.wf == ATTEMPT_WF_RETRY ? now + 10 : now, &soonest);
    r->att.n++;
    attempt_begin(a, r->cur.target, r->next.wf, req__now_us(r));
    feedback_take_ranking(&r->balance, a->ranking, sizeof(a->ranking));
    a->delay_ms = r->next.delay_ms;
    a->delay_why = r->next.delay_why;
    req__next_delay_taken(r);
    r->cur.open = true;
    hstate_inflight(r->gw->hs, r->cur.target, +1);
    count(r, METRIC_UPSTREAM_INFLIGHT, r->cur.target->id, NULL, NULL, 1); /* a gauge */
    req__goto(r, REQ_ST_ATTEMPT);
    if (r->cur.key_idx == -1) {
        limited_locally(r, full, soonest, now);
        return;
    }
    err = xchg_start(r);
    if (err == BSC_EINVAL)
        return; /* r->x.fail says why the target cannot take it; st_attempt moves on */
    if (err) {
        req__set_error(r, 503, "server_error", "gateway_overloaded", "could not start an attempt");
        report_attempt(r, BRK_NEUTRAL, NULL, false);
        req__goto(r, REQ_ST_REPLY_ERROR);
        return;
    }
    arm_attempt_timer(r, now);
    if (r->att.n == 1)
        shadow_start(r); /* after the primary started: a copy never delays it */
}

/* Whether the request may start, or after a failure be replayed (admit.c). */
static void st_admit(struct request *r)
{
    unsigned at = r->m.admit_at;
    enum admit_verdict v = admit_run(r, &at);

    r->m.admit_at = at; /* a check that waits runs again when the request is woken */
    switch (v) {
    case ADMIT_WAIT:
        return; /* a store lookup is running: its callback runs the machine */
    case ADMIT_REFUSE:
        req__goto(r, REQ_ST_REPLY_ERROR);
        return;
    case ADMIT_ANSWERED:
        req__goto(r, REQ_ST_DONE);
        return;
    case ADMIT_PASS:
        req__goto(r, REQ_ST_PICK);
        return;
    }
}

/* The message a broken stream ends with. */
static const char *break_message(const struct request *r)
{
    return r->x.timed_out ? "the upstream stream stalled past the deadline"
           : r->x.stream_failed && r->x.stream_fail.message[0]
               ? r->x.stream_fail.message
               : "the upstream stream was interrupted";
}

/* How a committed stream broke, for its attempt line: a stall, a cut connection (the
 * transfer failed), or an error or bad event in a body that ended cleanly. */
static const char *break_why(const struct request *r)
{
    if (r->x.timed_out)
        return "stream_stalled";
    return r->x.stream_failed && r->x.up_res == UP_OK ? "error_event" : "stream_cut";
}

/* A continued stream that cannot go on: the client gets the original interruption (never
 * a continuation's own error), then the connection closes. */
static void end_interrupted(struct request *r)
{
    uv_timer_stop(&r->timer);
    guard_record_uncertain(r, "partial_output");
    deliver_stream_error(r, r->resume.why[0] ? r->resume.why : "the upstream stream was interrupted");
    deliver_break(r, "upstream_interrupted");
    req__goto(r, REQ_ST_DONE);
}

static void st_pick(struct request *r)
{
    const char *why = NULL, *broke;

    reqlim_resume(r);
    if (r->att.n == 0) {
        if (req__decide_first(r) == DECIDE_STOP) {
            if (!r->lim.waiting) /* else queued for room: a timer or a release runs it */
                req__goto(r, REQ_ST_REPLY_ERROR);
            return;
        }
        begin_attempt(r);
        return;
    }
    if (req__decide_next(r, &why) == DECIDE_STOP) {
        if (r->lim.waiting)
            return;
        broke = resume_take_break_why(r);
        log_attempt(r, "stop", broke ? broke : why);
        if (r->d.committed) { /* a continuation with nowhere to go */
            end_interrupted(r);
            return;
        }
        req__goto(r, REQ_ST_REPLY_ERROR);
        return;
    }
    broke = resume_take_break_why(r);
    log_attempt(r, req__count_workflow(r, r->next.wf), broke ? broke : why);
    if (r->next.delay_ms) {
        req__arm_timer(r, r->next.delay_ms);
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

/* The usage the attempt that ends is charged for: the provider's, and where it reported
 * nothing -- or, on an answer that did not end, less output than was relayed -- the
 * estimate (docs/internals/spend.md, "Cost"): the prompt at the router's bytes / 4, the
 * output at one token per text frame relayed (a stream) or the answer's bytes / 4.
 * <complete>: the answer ended properly, its usage is final. True when estimated. */
static bool charged_usage(struct request *r, bool complete)
{
    int64_t out = r->x.mode == BODY_SSE ? (int64_t)r->d.text_frames
                                        : (int64_t)(r->x.answer.len / 4);

    xchg_take_stream_usage(r);
    return xchg_estimate_usage(r, (int64_t)(r->input.est_tokens - r->input.est_out_tokens), out,
                               complete);
}

/* Charges the attempt that ends to the request (r->cost.usd sums its attempts) and to its
 * client's budget: its usage at its target's price (policy/cost.h). */
static void account_usage(struct request *r, bool complete)
{
    const struct cfg_price *p = &r->cur.target->price;
    bool estimated;
    double cost;

    if (!(p->input_per_mtok > 0) && !(p->output_per_mtok > 0)) {
        xchg_take_stream_usage(r); /* nothing to charge: the usage as reported, nothing estimated */
        return;
    }
    estimated = charged_usage(r, complete);
    cost = cost_of_usage(p, &r->x.usage);
    if (!(cost > 0))
        return;
    req_cost_add(&r->cost, cost, estimated);
    spend_record(r, cost);
}

/* The delivered answer is the request's last charge: its usage charged, and what is left
 * of its hold given back now, before the answer goes out -- the client's next request,
 * sent once it has this answer, is judged after the release (one store queue, in order). */
static void account_delivered(struct request *r)
{
    account_usage(r, true);
    spend_settle(r);
}

/* An attempt that failed is charged only once output was generated (the provider bills
 * it): it reported output tokens, or text frames were converted. A failure before any
 * token (a refusal, a reset, an error status) costs nothing. */
static void account_failed(struct request *r)
{
    xchg_take_stream_usage(r);
    if (r->x.usage.output_tokens > 0 || r->d.text_frames > 0)
        account_usage(r, false);
}

/* The attempt's outcome for task feedback and balance: score (feedback.c). */
static void count_feedback(const struct request *r, bool transport_ok)
{
    struct feedback_attempt fa = {
        .m = M(r),
        .shard = r->w->idx,
        .vd = r->gw->verdicts,
        .id = r->ident.id,
        .route = r->route->id,
        .target = r->cur.target->id,
        .labels_scope = r->cfg ? r->cfg->serial : 0,
        .scope = r->ident.client_scope,
        .wf = r->att.recs[r->att.n - 1].workflow,
        .transport_ok = transport_ok,
        .usable = r->x.fail.kind == FAIL_NONE,
        /* as st_attempt's contract count: a pass-through stream's check comes too late */
        .contract_counted = transport_ok && contract_wanted(r) &&
                            (r->x.mode != BODY_SSE || r->buffering),
    };

    feedback_attempt(&fa);
}

/* A delivered pass-through Responses answer: its upstream id is kept for the client's scope
 * (resp_owner.h), so that no other client continues it. */
static void note_owner(const struct request *r)
{
    char id[PROV_ANSWER_ID_MAX + 1];
    uint64_t ttl_ms = (uint64_t)r->cfg->responses.ttl_s * 1000;

    if (r->input.op == PROV_OP_RESPONSES && r->gw->store && ttl_ms &&
        xchg_answer_id(&r->x, id, sizeof(id)))
        resp_owner_note(r->gw->store, &r->w->loop, ttl_ms, r->ident.client_scope, id);
}

static void st_attempt(struct request *r)
{
    bool transport_ok;

    if (r->x.first_frame && (!r->d.committed || r->resume.active)) {
        if (!r->d.committed) /* else a continuation: its first bytes follow the seam */
            deliver_commit(r); /* the commit point: from here on no way back to PICK */
        req__goto(r, REQ_ST_RELAY);
        return;
    }
    if (r->x.xfer)
        return; /* still running: upstream events drive us */
    uv_timer_stop(&r->timer);
    if (r->cur.key_idx != -1 && r->x.fail.kind != FAIL_CONTRACT_FAILURE)
        xchg_classify(r);
    transport_ok = r->x.fail.kind == FAIL_NONE;
    count(r, METRIC_OUTCOMES, r->route->id, "transport",
          r->x.fail.kind == FAIL_NONE ? "ok" : "failed", 1);
    if (r->x.fail.kind == FAIL_NONE && contract_active(r)) {
        struct fail_info broke;
        bool ok = r->x.mode == BODY_SSE
                      ? contract_check_stream(r, &broke)
                      : contract_check_answer(r, bsc_buf_str(&r->x.answer), &broke);

        if (!ok)
            xchg_note_contract_failure(r, &broke);
        if (r->x.mode != BODY_SSE || r->buffering) {
            count(r, METRIC_OUTCOMES, r->route->id, "contract", ok ? "ok" : "failed", 1);
            count(r, METRIC_TARGET_OUTCOMES, r->cur.target->id, "contract", ok ? "ok" : "failed",
                  1);
        }
    }
    count_feedback(r, transport_ok);
    if (r->x.fail.kind == FAIL_NONE) {
        attempt_end(req__cur_attempt(r), req__now_us(r), ATTEMPT_OK, NULL);
        req__cur_attempt(r)->status = r->x.up_status;
        report_attempt(r, BRK_SUCCESS, NULL, false);
        account_delivered(r);
        note_owner(r); /* before the answer goes out: a next turn may follow at once */
        log_attempt(r, "deliver", "ok");
        req__goto(r, REQ_ST_REPLY);
        return;
    }
    account_failed(r);
    if (r->resume.active)
        resume_count(r, resume_attempt_failed(r));
    attempt_failed(r);
    if (r->resume.gave_up) {
        log_attempt(r, "stop", "replay_diverged");
        end_interrupted(r);
        return;
    }
    r->m.admit_at = 0; /* a replay is admitted afresh */
    req__goto(r, REQ_ST_ADMIT);
}

/* The stream passed limits.max_stream_ms or max_stream_bytes: the gateway's own bound, not
 * the upstream's fault, so its circuit hears of a success. One error event, then close. */
static void relay_cut(struct request *r, struct attempt *a)
{
    attempt_end(a, req__now_us(r), ATTEMPT_PARTIAL, r->d.limit_cut);
    a->status = 200;
    report_attempt(r, BRK_SUCCESS, NULL, false);
    account_usage(r, false);
    resume_count(r, "failed");
    log_attempt(r, "stop", r->d.limit_cut);
    guard_record_uncertain(r, "partial_output");
    deliver_stream_error(r, r->x.stream_fail.message);
    deliver_break(r, r->d.limit_cut);
    req__goto(r, REQ_ST_DONE);
}

/* on_stream_failure: continue -- the broken attempt is accounted (billed: its tokens were
 * generated) and the request is re-admitted to choose where the answer goes on. */
static void relay_continue(struct request *r, struct attempt *a)
{
    const char *why = break_why(r);

    attempt_end(a, req__now_us(r), ATTEMPT_PARTIAL, "partial_output");
    a->status = 200;
    account_failed(r);
    resume_add_usage(r);
    resume_count(r, "failed"); /* when the attempt that broke was itself a continuation */
    count_feedback(r, false);
    resume_begin(r, break_message(r));
    report_attempt(r, breaker_outcome(&r->x.fail), "partial_output", false);
    resume_note_break(r, why); /* its attempt line, written once PICK decided, says so */
    req__note_recovery(r, why);
    r->m.admit_at = 0;
    req__goto(r, REQ_ST_ADMIT);
}

/* A stream that ended whole keeps its last frames (r->d.out: the end event, `[DONE]`)
 * until its idempotency record is stored and acknowledged (guard_idem_settle): a client
 * that has read the end and repeats finds the record on any instance. True while the
 * store works. */
static bool stream_end_held(struct request *r)
{
    if (!r->sreq)
        return false;
    deliver_set_termination(r, "ok");
    guard_idem_record(r, r->d.out.p, r->d.out.len); /* a no-op once settled */
    return guard_idem_settle(r) == GUARD_WAIT;
}

static void st_relay(struct request *r)
{
    struct attempt *a = req__cur_attempt(r);

    if (r->x.xfer)
        return; /* streaming: upstream events drive us */
    uv_timer_stop(&r->timer);
    if (r->x.saw_done && !r->x.stream_failed) {
        if (stream_end_held(r))
            return; /* the store's callback runs the machine again */
        attempt_end(a, req__now_us(r), ATTEMPT_OK, NULL);
        a->status = 200;
        report_attempt(r, BRK_SUCCESS, NULL, false);
        account_delivered(r);
        resume_count(r, "ok");
        log_attempt(r, "deliver", "ok");
        contract_record_stream(r); /* pass-through: checks recorded, the bytes are gone */
        count_feedback(r, true); /* before the end: the client may judge it at once */
        note_owner(r);             /* likewise: a next turn may name it at once */
        deliver_end(r, "ok");
        req__goto(r, REQ_ST_DONE);
        return;
    }
    if (r->x.timed_out ? deliver_stream_over(r, true) : r->d.limit_cut != NULL) {
        relay_cut(r, a);
        return;
    }
    /* Broke after the commit point: continued when the route says so and it may be;
     * otherwise never replayed: one error event, then close. */
    if (resume_possible(r)) {
        relay_continue(r, a);
        return;
    }
    xchg_note_partial_output(r);
    attempt_end(a, req__now_us(r), ATTEMPT_PARTIAL, "partial_output");
    a->status = 200;
    account_failed(r); /* cut after tokens were generated: billed */
    resume_count(r, "failed");
    count_feedback(r, false);
    report_attempt(r, breaker_outcome(&r->x.fail), "partial_output", false);
    log_attempt(r, "stop", break_why(r));
    guard_record_uncertain(r, "partial_output");
    deliver_stream_error(r, break_message(r));
    /* The error event, then the connection closes without the chunked terminator: the
     * SDKs raise on the event; a reader of the raw stream sees it end broken. A well-framed
     * end would look complete and invite reuse of a connection that is closing. */
    deliver_break(r, "upstream_interrupted");
    req__goto(r, REQ_ST_DONE);
}

/* A complete answer: its idempotency record is stored, and acknowledged, before the answer
 * goes out (guard_idem_settle), so a repeat finds it on any instance. */
static void st_reply(struct request *r)
{
    if (!deliver_hold(r)) { /* could not be translated: the error went out */
        req__goto(r, REQ_ST_DONE);
        return;
    }
    if (guard_idem_settle(r) == GUARD_WAIT)
        return; /* the store's callback runs the machine again */
    if (r->x.mode == BODY_SSE)
        deliver_stream_complete(r); /* a buffered stream that passed its checks */
    else
        deliver_answer(r); /* may turn into a translation_failed error */
    req__goto(r, REQ_ST_DONE);
}

static void st_reply_error(struct request *r)
{
    if (r->d.committed) { /* a continuation refused at admission: the stream ends broken */
        end_interrupted(r);
        return;
    }
    uv_timer_stop(&r->timer);
    deliver_error(r);
    if (!r->d.termination)
        deliver_set_termination(r, "error");
    req__goto(r, REQ_ST_DONE);
}

/* The machine's timer stops: what it was armed for is over (a limit's wait ended). */
static void disarm_timer(struct request *r)
{
    uv_timer_stop(&r->timer);
}

/* What the router's other files call to hand a request back to the machine (req_wake.h). */
static const struct req_wake machine_wake = {
    .run = req__run,
    .arm_timer = req__arm_timer,
    .disarm_timer = disarm_timer,
    .release = req__release,
    .release_sreq = req__release_sreq,
};

/* A zeroed request, from the worker's pool when it has one. A pooled one keeps only its
 * exchange's parked buffers' storage (xchg_park), empty: nothing of the request before it. */
BSC_TESTABLE struct request *req__alloc(struct worker *w)
{
    struct request *r;

    if (!w->n_req_pool) {
        r = calloc(1, sizeof(struct request));
    } else {
        struct xchg_store kept;

        r = w->req_pool[--w->n_req_pool];
        xchg_store_take(&r->x, &kept);
        memset(r, 0, sizeof(*r));
        xchg_store_give(&r->x, &kept);
    }
    if (r) {
        r->m.wake = &machine_wake;
        r->att.recs = r->att.inline_recs;
        r->att.cap = ATTEMPT_INLINE;
    }
    return r;
}

void req__release(struct request *r)
{
    struct worker *w = r->w;

    if (r->att.recs != r->att.inline_recs)
        free(r->att.recs);
    r->att.recs = NULL;
    if (w && w->n_req_pool < WORKER_REQ_POOL) {
        w->req_pool[w->n_req_pool++] = r;
        return;
    }
    xchg_store_free(&r->x);
    free(r);
}

void req_pool_drain(struct worker *w)
{
    while (w->n_req_pool) {
        struct request *r = w->req_pool[--w->n_req_pool];

        xchg_store_free(&r->x);
        free(r);
    }
}

static void request_free(uv_handle_t *h)
{
    struct request *r = h->data;

    guard_release_copy(r);
    if (guard_can_free(r))
        req__release(r);
}

static const char *outcome_label(const struct request *r)
{
    if (strcmp(r->d.termination, "ok") == 0)
        return "ok";
    if (strcmp(r->d.termination, "client_abort") == 0)
        return "client_abort";
    if (strcmp(r->d.termination, "upstream_interrupted") == 0 || r->d.limit_cut)
        return "partial";
    return r->d.status >= 400 && r->d.status < 500 && r->d.status != 429 ? "client_error" : "error";
}

/* Every prompt token written to the provider's cache, 5-minute and 1-hour. */
static int64_t cache_writes(const struct prov_usage *u)
{
    return (u->cache_write_tokens > 0 ? u->cache_write_tokens : 0) +
           (u->cache_write_1h_tokens > 0 ? u->cache_write_1h_tokens : 0);
}

/* The request's access-log line; returns its duration. */
static uint64_t write_access_line(struct request *r)
{
    struct prov_usage u = resume_usage(r); /* every attempt of a continued stream */
    char selected_by[160]; /* a route id is at most 128 bytes */
    struct access_entry e = {
        .request_id = r->ident.id,
        .path = r->ident.path,
        .route = r->route->id,
        .client = r->ident.client ? r->ident.client->id : NULL,
        .selected_by = r->ident.select_route && r->ident.select_rule >= 0 ? selected_by : NULL,
        .target = r->cur.target ? r->cur.target->id : NULL,
        .status = r->d.status,
        .stream = r->input.stream,
        .bytes_in = r->input.bytes_in,
        .bytes_out = r->d.bytes_out,
        .duration_us = bsc_now_us() - r->ident.start_us,
        .ttfb_us = r->d.ttfb_us,
        .attempts = r->att.recs,
        .n_attempts = r->att.n,
        .termination = r->d.termination,
        .input_tokens = u.input_tokens,
        .output_tokens = u.output_tokens,
        .cached_tokens = u.cached_tokens,
        .cache_write_tokens = cache_writes(&u),
        .reasoning_tokens = u.reasoning_tokens,
        .cost_usd = r->cost.usd,
        .cost_estimated = r->cost.estimated,
        .states = &r->m.times,
        .limited_by = r->lim.limited_by,
        .queued_ms = r->lim.queue_start_ms ? (int64_t)r->lim.queued_ms : -1,
        .continued_target = r->resume.target,
        .continued_how = r->resume.how,
        .continued_bytes = r->resume.seam_bytes,
        .cache = r->c.result,
    };

    if (r->ident.select_route)
        snprintf(selected_by, sizeof(selected_by), "%.128s#%d", r->ident.select_route->id,
                 r->ident.select_rule + 1);
    access_log_write(&e);
    return e.duration_us;
}

/* The request's time in the gateway so far (overhead.c). */
static uint64_t overhead_now(const struct request *r)
{
    return req_overhead_us(r->ident.start_us, &r->att, r->lim.queued_ms, bsc_now_us());
}

/* The request's spans (trace.c), from what it ended with. */
static void finish_trace(const struct request *r)
{
    struct trace_request tr = {
        .id = r->ident.id,
        .route = r->route->id,
        .outcome = r->d.termination,
        .target = r->cur.target ? r->cur.target->id : NULL,
        .status = r->d.status,
        .start_us = r->ident.start_us,
        .att = &r->att,
        .usage = &r->x.usage,
        .cost_usd = r->cost.usd,
        .env = &r->env,
    };

    req_trace_finish(&r->trace, &r->cfg->telemetry, req__metrics(r), &tr);
}

/* The request's metrics: tokens, cost, outcome, duration and time to first token. */
static void count_request(struct request *r, uint64_t duration_us)
{
    struct cost_tokens tokens[COST_TOKEN_TYPES];
    struct prov_usage u = resume_usage(r);
    size_t n = cost_token_counts(&u, tokens);

    for (size_t i = 0; i < n; i++)
        count(r, METRIC_TOKENS, r->route->id, tokens[i].type, NULL, (double)tokens[i].n);
    if (r->c.embed_cost_usd > 0) /* the semantic cache's embedding, under its own target */
        count(r, METRIC_COST, r->ident.client ? r->ident.client->id : METRICS_CLIENT_OPEN,
              r->route->id, r->route->cache.embed_target->id, r->c.embed_cost_usd);
    if (r->cost.usd - r->c.embed_cost_usd > 0)
        count(r, METRIC_COST, r->ident.client ? r->ident.client->id : METRICS_CLIENT_OPEN,
              r->route->id, r->cur.target ? r->cur.target->id : METRICS_TARGET_NONE,
              r->cost.usd - r->c.embed_cost_usd);
    count(r, METRIC_REQUESTS, r->route->id, outcome_label(r), NULL, 1);
    /* Task outcomes are counted when the client's verdict comes (api/feedback.c). */
    observe(r, METRIC_REQUEST_DURATION, r->route->id, (double)duration_us / 1e6);
    if (r->d.ttfb_us && r->d.status == 200)
        observe(r, METRIC_TTFT, r->route->id, (double)r->d.ttfb_us / 1e6);
    observe(r, METRIC_OVERHEAD, r->route->id,
            (double)(r->d.overhead_known ? r->d.overhead_us : overhead_now(r)) / 1e6);
}

static void st_done(struct request *r)
{
    if (r->m.finished)
        return;
    r->m.finished = true;
    uv_timer_stop(&r->timer);
    xchg_cancel(&r->x);
    report_attempt(r, BRK_NEUTRAL, NULL, false); /* a cancelled attempt frees its probe */
    reqlim_done(r); /* after the attempt's report: the usage corrects the client's tokens */
    if (r->sreq) {
        srv_resp_abort(r->sreq);
        r->sreq = NULL;
    }
    shadow_primary_done(r); /* before the answer is freed */
    reqcache_finish(r);     /* stored already, as the answer ended (deliver.c) */
    xchg_cleanup(r);
    resume_cleanup(r);
    deliver_cleanup(r);
    contract_cleanup(r);
    if (!r->d.termination)
        deliver_set_termination(r, "ok");
    guard_idem_finish(r);
    spend_release(r);
    count_request(r, write_access_line(r));
    finish_trace(r); /* the request span and one per attempt, when sampled */
    r->input.body = BSC_STR_NULL;
    r->input.native = (struct prov_native){0};
    trim_req_cleanup(&r->trim);
    json_object_put(r->input.json);
    r->input.json = NULL;
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

    (void)sreq;
    r->sreq = NULL;
    r->input.body = BSC_STR_NULL; /* borrowed from the now freed srv_req */
    r->input.native = (struct prov_native){0};
    r->m.client_gone = true;
    req__run(r);
}

/* The drain timed out (srv_stop): a stream past its commit point ends as a stream past
 * limits.max_stream_ms does, with one error event ("shutting_down"), rather than cut
 * without a word. A request not yet answering is cut: the abort callback follows. */
static void on_server_stop(struct srv_req *sreq, void *ud)
{
    struct request *r = ud;

    (void)sreq;
    if (r->m.state != REQ_ST_RELAY || !r->d.committed || r->d.limit_cut || r->g.idem_settling)
        return; /* complete, its record being stored: it ends within store.timeout_ms */
    deliver_stream_cut(r, "shutting_down");
    xchg_note_stream_cut(r, "the gateway is shutting down (limits.drain_timeout_ms passed)");
    xchg_stop_as_cut(r); /* st_relay takes the cut as made */
    req__run(r);
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
        .tools = r->input.has_tools,
        .images = (r->input.need_caps & CFG_CAP_VISION) != 0,
        .json_schema = (r->input.need_caps & CFG_CAP_JSON_SCHEMA) != 0,
        .stream = r->input.stream,
        .input_tokens = r->input.est_tokens - r->input.est_out_tokens,
        .header = meta_header,
        .header_ctx = r->sreq,
    };
    char *text = sel_read_messages(messages, &f.messages, &f.last_user.len);

    f.last_user.p = text ? text : "";
    /* Every dialect (chat, messages, responses) has its metadata at the top of its own body. */
    if (bsc_json_member(srv_req_body(r->sreq), BSC_STR("metadata"), &meta) == 1)
        f.metadata = meta;
    r->ident.select_route = r->route;
    r->ident.select_rule = sel_pick(r->route, &f, &budget);
    if (r->ident.select_rule >= 0)
        r->route = r->route->select[r->ident.select_rule].route;
    free(text);
}

/* What the router needs to know of the request itself, computed by the client's dialect in
 * api/ (capabilities, token estimate, the OpenAI-shaped messages): copied, then read by
 * route selection and trimming. */
static void inspect_request(struct request *r, const struct chat_in *in)
{
    r->input.need_caps = in->need_caps;
    r->input.has_tools = in->has_tools;
    r->input.est_tokens = in->est_tokens;
    r->input.est_out_tokens = in->est_out_tokens;
    if (r->route->n_select)
        select_route(r, in->messages);
    trim_req_inspect(&r->trim, &r->input, &r->route->context, in->scan_body, in->messages);
}

/* The request could not start (out of memory, or a header that does not tighten the
 * envelope): answered at once, and what <in> handed over is given back. */
static void start_refused(struct srv_req *sreq, struct request *r, struct chat_in *in,
                          const char *why)
{
    if (r)
        srv_resp_error(sreq, 400, "invalid_request_error", "invalid_header", why);
    else
        srv_resp_error(sreq, 503, "server_error", "gateway_overloaded", "out of memory");
    json_object_put(in->json);
    if (in->down && in->down->arg_free)
        in->down->arg_free(in->down_arg);
    cfg_unref(in->cfg);
    if (r) /* never handed out: r->w is not set */
        xchg_store_free(&r->x);
    free(r);
}

void req_chat_start(struct worker *w, struct srv_req *sreq, struct chat_in *in)
{
    struct request *r = req__alloc(w);
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
        r->input.json = in->json;
        r->input.body = in->body;
        r->input.stream = in->stream;
        r->input.op = in->op;
        inspect_request(r, in);
    }
    if (!r || envelope_build(&r->route->envelope, &eh, srv_req_start_us(sreq) / 1000, &r->env,
                             &why) != BSC_OK)
        return start_refused(sreq, r, in, why);
    r->w = w;
    r->gw = w->gw;
    r->cfg = in->cfg;
    /* clients: auth.c put the caller's id on the request (later limits and budgets key on
     * it); NULL when the gateway is open or a reload dropped the client meanwhile. */
    r->ident.client = cfg_client_find(r->cfg, bsc_str_cstr(srv_req_principal(sreq)));
    req_trace_begin(&r->trace, &r->cfg->telemetry, /* continues the client's traceparent */
                    srv_req_header(sreq, BSC_STR("traceparent")));
    r->input.bytes_in = srv_req_body(sreq).len;
    r->input.model_span = in->model_span;
    r->input.include_usage = in->include_usage;
    r->input.native = in->native;
    deliver_init(&r->d, in->down, in->down_arg);
    r->buffering = r->input.stream && r->env.on_stream_failure == CFG_SF_BUFFER;
    resume_init(r);
    req__notes_init(r);
    bsc_str_copy(r->ident.id, sizeof(r->ident.id), bsc_str_cstr(srv_req_id(sreq)));
    req_client_scope(sreq, r->ident.client_scope, sizeof(r->ident.client_scope)); /* feedback.c */
    bsc_str_copy(r->ident.path, sizeof(r->ident.path), srv_req_path(sreq));
    r->ident.start_us = srv_req_start_us(sreq);
    r->ident.created = (int64_t)(bsc_wall_ms() / 1000);
    xchg_init(&r->x);
    uv_timer_init(&w->loop, &r->timer);
    r->timer.data = r;
    guard_init(r);
    r->m.state = REQ_ST_ADMIT;
    r->m.running = true; /* its first run: the reading that starts its times serves it */
    r->m.step_us = 0;
    req_times_start(&r->m.times, r->m.state, req__now_us(r));
    w->inflight++;
    srv_req_on_abort(sreq, on_client_abort, r);
    srv_req_on_stop(sreq, on_server_stop, r);
    run_steps(r, true);
}
