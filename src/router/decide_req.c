/* SPDX-License-Identifier: MIT */
/* decide_req.c -- the request's side of the pure decision (decide.h): copies what a decision
 * reads into a decide_in (the request's needs against each candidate, each candidate's
 * health view and key availability read once, the clock, random draws, the retry budget),
 * asks a breaker when decide.c needs its answer, and carries out the decide_out -- metrics,
 * the retry budget taken, the ledger entry of an uncertain side effect, the error body.
 * Also the answer when no target may take a first attempt. */
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "core/id.h"
#include "health/hstate.h"
#include "limits/limits.h"
#include "metrics/metrics.h"
#include "router/decide_req.h"
#include "router/deliver_note.h"
#include "router/exchange.h"
#include "router/feedback.h"
#include "router/guard.h"
#include "router/input.h"
#include "router/internal.h"
#include "router/limit.h"
#include "policy/params.h"
#include "router/machine.h"
#include "router/req_error.h"
#include "router/resume.h"
#include "router/trim.h"

#define M(r) req__metrics(r)

/* The capabilities of <t> that the route and the request need but <t> lacks. */
static uint32_t missing_caps(const struct request *r, const struct cfg_target *t)
{
    uint32_t need = r->route->requires.capabilities | r->input.need_caps;

    return need & ~t->capabilities;
}

/* The route's minimums, and the request's estimated size against the target's window. */
static bool satisfies_sizes(const struct request *r, const struct cfg_target *t)
{
    const struct cfg_requires *q = &r->route->requires;

    if (q->context_window_min && t->context_window && t->context_window < q->context_window_min)
        return false;
    if (q->max_output_tokens_min && t->max_output_tokens &&
        t->max_output_tokens < q->max_output_tokens_min)
        return false;
    if (r->trim.msgs) /* context.overflow: trim -- as far as it may be trimmed */
        return trim_req_fits(&r->trim, &r->input, t);
    return !t->context_window || r->input.est_tokens <= t->context_window;
}

/* Kill switches: config, provider, and the run-time admin switch. */
static bool switched_off(struct request *r, const struct cfg_target *t)
{
    return t->disabled || t->provider->disabled || hstate_is_disabled(r->gw->hs, t);
}

/* The parameters of the request that <t>'s adapter cannot honour (params.h). The request's
 * parameters are read on the first target whose adapter declares any limit, so the OpenAI
 * fast path never reads them. */
static uint32_t unhonoured_params(struct request *r, const struct cfg_target *t)
{
    const struct prov_ops *ops = prov_ops_for(t->provider->kind);

    if (r->input.op != PROV_OP_CHAT || (!ops->unhonoured && !ops->max_choices))
        return 0;
    return params_unhonoured(req__params(r), ops);
}

/* True when <t> can never serve this request as it is: a capability it lacks, a size it
 * cannot take, a parameter it cannot honour. Each is recorded, to be named in the answer
 * if no target is left. A stream continued in Anthropic's own events cannot go on in
 * another dialect (resume.h). */
static bool request_excludes(struct request *r, const struct cfg_target *t)
{
    uint32_t missing, params;
    bool small;

    if (!resume_target_fits(r, t))
        return true;
    missing = missing_caps(r, t);
    params = unhonoured_params(r, t);
    small = !satisfies_sizes(r, t);
    r->notes.missing_caps |= missing;
    r->notes.unhonoured |= params;
    r->notes.too_small |= small;
    return missing || params || small;
}

/* Appends the names of the capability bits in <caps> to <buf>, comma-separated. */
void req__caps_names(uint32_t caps, char *buf, size_t len)
{
    static const char *const names[] = {"text",  "vision",      "streaming", "tools",
                                        "parallel_tool_calls", "json_schema", "json_object",
                                        "embeddings", "prefill"};
    size_t used = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < BSC_ARRAY_LEN(names) && used < len; i++) {
        if (!(caps & (1u << i)))
            continue;
        used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", names[i]);
    }
}

bool req__later_tier_exists(const struct request *r)
{
    return decide_later_tier(r->route, &r->env, r->cur.tier);
}

const char *req__count_workflow(struct request *r, enum attempt_workflow wf)
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

/* What kept the targets of a request from its first attempt, by what could change it. */
struct none_eligible {
    unsigned request;  /* targets that cannot serve the request as it is */
    unsigned off;      /* targets that could, switched off (config, admin) */
    unsigned waiting;  /* targets that could, unavailable for a while */
    bool cooling_only; /* every waiting one only waits for its keys */
    unsigned key_reasons; /* why the keys they wait for cool: 1 << enum key_reason */
    uint64_t back_at;  /* the soonest a waiting one may be back */
};

/* When waiting target <t> may be back: the end of its circuit's open time and of its
 * keys' cooldowns, whichever is later; a second when neither says (a ramp, the probe
 * slots of a half-open circuit, a canary's share). */
static void note_waiting(struct request *r, const struct cfg_target *t, uint64_t now,
                         struct none_eligible *ne)
{
    struct target_view v;
    uint64_t at = 0, keys_at = hstate_tkeys_ready_at(r->gw->hs, t, now);
    bool open;

    hstate_view(r->gw->hs, t, now, &v);
    open = v.state == BRK_OPEN;
    if (open)
        at = now + v.retry_after_ms;
    if (keys_at > now) {
        ne->key_reasons |= hstate_tkeys_reasons(r->gw->hs, t, now);
        /* A refused key may be back at its next re-verification: say so, not 600 s. */
        keys_at = hstate_tkeys_hint_at(r->gw->hs, t, now);
        keys_at = keys_at > now ? keys_at : now + 1;
        at = keys_at > at ? keys_at : at;
    }
    ne->cooling_only = ne->cooling_only && !open && keys_at > now;
    if (!at)
        at = now + OUTLOOK_DEFAULT_RETRY_MS;
    ne->back_at = at < ne->back_at ? at : ne->back_at;
    ne->waiting++;
}

/* The 400 for a request no target can serve as it is. */
static void answer_request_excluded(struct request *r)
{
    const char *param = params_first_name(r->notes.unhonoured);
    char caps[160];

    req__caps_names(r->notes.missing_caps, caps, sizeof(caps));
    if (param) {
        /* OpenAI's own answer for a parameter a model does not take. */
        req__set_error(r, 400, "invalid_request_error", "unsupported_parameter",
                       "no target of route '%s' can honour the parameter '%s'%s%s%s",
                       r->route->id, param, r->notes.missing_caps ? "; missing: " : "", caps,
                       r->notes.too_small ? "; context window too small" : "");
        req__set_error_param(r, param);
        deliver_set_termination(r, "unsupported_parameter");
        return;
    }
    req__set_typed_failure(r, "no_eligible_fallback", OUTLOOK_NEVER, -1,
                           "no target of route '%s' satisfies this request%s%s%s",
                           r->route->id, r->notes.missing_caps ? "; missing: " : "", caps,
                           r->notes.too_small ? "; context window too small" : "");
    req__set_error_status(r, 400, "invalid_request_error");
}

/* The answer when every target that could serve waits a while. Only rate limits in the way
 * (every key cooling after a 429): a 429 rate_limited. Otherwise a retryable 503 that says
 * what holds the targets: keys that all cool, and why (a refused key says auth_failed, not
 * "rate limits", so an operator sees a credential problem), or circuits and ramps. */
static void answer_waiting(struct request *r, const struct none_eligible *ne, uint64_t now)
{
    const unsigned rate_only = 1u << KEY_RATE_LIMITED;
    char why[64];
    int64_t wait = (int64_t)(ne->back_at - now);

    keys_reasons_text(ne->key_reasons, why, sizeof(why));
    if (ne->cooling_only && ne->key_reasons == rate_only) {
        req__set_typed_failure(r, "rate_limited", OUTLOOK_TIME, wait,
                               "route '%s' has no eligible target now (all keys cooled: %s; "
                               "every key is cooling down after rate limits)",
                               r->route->id, why);
        req__set_error_status(r, 429, "rate_limit_error");
    } else if (ne->cooling_only && why[0]) {
        req__set_typed_failure(r, "no_eligible_fallback", OUTLOOK_TIME, wait,
                               "route '%s' has no eligible target now (all keys cooled: %s)",
                               r->route->id, why);
    } else {
        req__set_typed_failure(r, "no_eligible_fallback", OUTLOOK_TIME, wait,
                               "route '%s' has no eligible target now (circuits open, keys "
                               "cooling down%s%s or targets ramping up)",
                               r->route->id, why[0] ? ": " : "", why);
    }
}

/* No target was eligible for the first attempt: sets the answer by what could change --
 * read at <now>, the decision's own clock, so that a cooldown that made a target
 * ineligible and ends a moment later is still seen as the reason --
 * a 400 when no target can serve the request as it is (a parameter, a capability, its
 * size), a 503 that is not retryable when the only ones that could are switched off, else
 * a retryable 503 (429 when only rate-limited keys are in the way) with the soonest time
 * one of them may be back. */
static void none_eligible(struct request *r, uint64_t now)
{
    const struct cfg_tier *tiers[] = {&r->route->primary,
                                      r->env.allow_equivalent ? &r->route->equivalent : NULL,
                                      r->env.allow_fallback ? &r->route->fallback : NULL};
    struct none_eligible ne = {.cooling_only = true, .back_at = UINT64_MAX};

    for (size_t i = 0; i < BSC_ARRAY_LEN(tiers); i++) {
        for (size_t j = 0; tiers[i] && j < tiers[i]->n; j++) {
            const struct cfg_target *t = tiers[i]->targets[j];
            if (request_excludes(r, t))
                ne.request++;
            else if (tiers[i]->disabled || switched_off(r, t))
                ne.off++;
            else
                note_waiting(r, t, now, &ne);
        }
    }
    if (ne.waiting) {
        answer_waiting(r, &ne, now);
    } else if (ne.off) {
        /* Only the operator can bring them back: no retry helps, and no time can be said. */
        req__set_typed_failure(r, "no_eligible_fallback", OUTLOOK_NEVER, -1,
                               "every target of route '%s' that could serve this request is "
                               "disabled", r->route->id);
    } else if (ne.request) {
        answer_request_excluded(r);
    } else {
        req__set_typed_failure(r, "no_eligible_fallback", OUTLOOK_NEVER, -1,
                               "route '%s' has no target this request may use", r->route->id);
    }
}

/* ---- the decision's input ---- */

/* Copies what a decision reads of candidate <t>. */
static void fill_cand(struct request *r, const struct cfg_target *t, uint64_t now,
                      struct decide_cand *c)
{
    struct hstate_keys k;

    c->t = t;
    c->excluded = request_excludes(r, t);
    c->off = switched_off(r, t);
    r->gw->hs->ops->keys(r->gw->hs, t->provider, t, now, &k);
    c->keys_available = k.available;
    c->keys_ready_at = k.ready_at;
    c->canary_draw = t->canary_percent < 100 ? bsc_rand01() : 0.0;
    c->admit = ADMIT_UNASKED;
    c->panic = ADMIT_UNASKED;
    reqlim_fill(r, c, now);
    hstate_view(r->gw->hs, t, now, &c->v);
    if (r->route->balance == CFG_BALANCE_SCORE) {
        struct feedback_asker q = {
            .vd = r->gw->verdicts,
            .cfg = r->cfg,
            .scope = r->ident.client_scope,
            .stream = r->input.stream,
            .est_tokens = r->input.est_tokens,
            .est_out_tokens = r->input.est_out_tokens,
        };

        feedback_score_cand(&q, t, &c->v, &c->sc);
    }
}

static void fill_tier(struct request *r, enum tier tier, bool allowed, uint64_t now,
                      struct decide_tier *dt)
{
    const struct cfg_tier *ct = tier == TIER_PRIMARY      ? &r->route->primary
                                : tier == TIER_EQUIVALENT ? &r->route->equivalent
                                                          : &r->route->fallback;

    dt->n = 0;
    if (!allowed || ct->disabled)
        return;
    dt->n = ct->n < DECIDE_MAX_CANDS ? ct->n : DECIDE_MAX_CANDS;
    for (size_t i = 0; i < dt->n; i++)
        fill_cand(r, ct->targets[i], now, &dt->c[i]);
}

/* Everything a decision about <r> reads, once. */
static void build_in(struct request *r, struct decide_in *in)
{
    uint64_t now = bsc_now_ms();

    in->route = r->route;
    in->env = &r->env;
    in->retry = &r->cfg->retry;
    in->fail = &r->x.fail;
    in->attempts = r->att.recs;
    in->n_attempts = r->att.n;
    in->tier = r->cur.tier;
    in->now_ms = now;
    in->now_us = req__now_us(r);
    in->time_left_ms = req__time_left(r);
    in->est_tokens = r->input.est_tokens;
    in->est_out_tokens = r->input.est_out_tokens;
    in->draw_pick = bsc_rand01();
    in->draw_jitter = bsc_rand01();
    in->budget_ok = r->att.n == 0 || hstate_budget_available(r->gw->hs, now);
    fill_tier(r, TIER_PRIMARY, true, now, &in->tiers[TIER_PRIMARY]);
    fill_tier(r, TIER_EQUIVALENT, r->env.allow_equivalent, now, &in->tiers[TIER_EQUIVALENT]);
    fill_tier(r, TIER_FALLBACK, r->env.allow_fallback, now, &in->tiers[TIER_FALLBACK]);
    if (r->att.n)
        fill_cand(r, r->cur.target, now, &in->failed);
}

/* Takes one unit of the gateway-wide retry budget for a decided step; false when another
 * request took the last one since the decision read it. */
static bool take_budget(struct request *r)
{
    if (!hstate_budget_take(r->gw->hs, bsc_now_ms()))
        return false;
    metrics_inc(M(r), r->w->idx, METRIC_RETRY_BUDGET_SPENT, NULL, NULL, 1);
    return true;
}

static enum decide_admit admit_of(enum brk_decision b)
{
    return b == BRK_ALLOW ? ADMIT_ALLOWED : b == BRK_ALLOW_PROBE ? ADMIT_PROBE : ADMIT_DENIED;
}

/* The panic admission of candidate <c>. A probe of an open circuit on a first attempt pays
 * with a unit of the retry budget (a later attempt pays in req__decide_next, as any
 * failover): it is load the breaker would have spared, so the budget bounds it as it bounds
 * retries. The budget is asked before and taken only once the circuit admitted the probe, so
 * the requests that find every probe slot taken cost nothing (another request may take the
 * last unit in between: the overdraft is at most the probe slots). Letting a closed circuit's
 * request past its ramp is not a probe, and is free. */
static enum decide_admit admit_panic(struct request *r, const struct decide_cand *c,
                                     uint64_t now_ms)
{
    bool pays = r->att.n == 0 && c->v.state != BRK_CLOSED;
    enum brk_decision b;

    if (pays && !hstate_budget_available(r->gw->hs, now_ms))
        return ADMIT_DENIED;
    b = hstate_admit_panic(r->gw->hs, c->t, now_ms);
    if (pays && b == BRK_ALLOW_PROBE)
        (void)take_budget(r);
    return admit_of(b);
}

/* The draw for <t>'s breaker: 0 for a weighted pick, which already scaled by the ramp (do
 * not apply it twice), except in adaptive mode, whose throttle needs a real draw. */
static double admit_draw(const struct request *r, const struct cfg_target *t)
{
    if (r->route->balance == CFG_BALANCE_WEIGHTED && t->breaker.mode != CFG_BRK_MODE_ADAPTIVE)
        return 0.0;
    return bsc_rand01();
}

/* Runs <fn> until it no longer needs a breaker's answer: each candidate it asks about is
 * admitted (or refused) once, and asked in panic at most once more, so the loop ends within
 * twice the number of candidates. */
static enum decision decide_admitted(struct request *r, struct decide_in *in,
                                     enum decision (*fn)(const struct decide_in *,
                                                         struct decide_out *),
                                     struct decide_out *out)
{
    enum decision d = fn(in, out);

    for (unsigned n = 0; d == DECIDE_ADMIT && n <= 2 * TIER_COUNT * DECIDE_MAX_CANDS; n++) {
        struct decide_cand *c = &in->tiers[out->tier].c[out->cand];

        if (out->panic)
            c->panic = admit_panic(r, c, in->now_ms);
        else
            c->admit = admit_of(hstate_admit(r->gw->hs, c->t, in->now_ms, admit_draw(r, c->t)));
        d = fn(in, out);
    }
    return d == DECIDE_ADMIT ? DECIDE_STOP : d;
}

/* Marks every copy of <t> in <in> as out of room. */
static void mark_no_room(struct decide_in *in, const struct cfg_target *t, const char *by,
                         int64_t wait_ms)
{
    for (int tier = 0; tier < TIER_COUNT; tier++) {
        for (size_t k = 0; k < in->tiers[tier].n; k++) {
            if (in->tiers[tier].c[k].t != t)
                continue;
            in->tiers[tier].c[k].limited_by = by;
            in->tiers[tier].c[k].room_in_ms = wait_ms;
        }
    }
    if (in->failed.t == t) {
        in->failed.limited_by = by;
        in->failed.room_in_ms = wait_ms;
    }
}

/* decide_admitted, then the room the decision saw taken under the local limits: when
 * another request took it meanwhile, the target is marked out of room and the decision
 * made again (at most once per candidate, like the breakers). */
static enum decision decide_room(struct request *r, struct decide_in *in,
                                 enum decision (*fn)(const struct decide_in *,
                                                     struct decide_out *),
                                 struct decide_out *out)
{
    enum decision d = decide_admitted(r, in, fn, out);
    const char *by;
    int64_t wait_ms;

    for (unsigned n = 0; d == DECIDE_GO && n <= TIER_COUNT * DECIDE_MAX_CANDS; n++) {
        if (!(by = reqlim_take(r, out->target, &wait_ms))) {
            reqlim_note_moved(r, in, out->target);
            return d;
        }
        if (wait_ms == LIM_WAIT_FLEET) { /* asked the fleet for room: wait for its answer */
            out->stop = DECIDE_STOP_CAPACITY;
            out->limited = out->target;
            return DECIDE_STOP;
        }
        mark_no_room(in, out->target, by, wait_ms);
        d = decide_admitted(r, in, fn, out);
    }
    return d == DECIDE_GO ? DECIDE_STOP : d;
}

/* ---- carrying out the answer ---- */

static void apply_stop(struct request *r, const struct decide_in *in, const struct decide_out *out)
{
    switch (out->stop) {
    case DECIDE_STOP_NONE_ELIGIBLE:
        none_eligible(r, in->now_ms);
        break;
    case DECIDE_STOP_UNCERTAIN:
        xchg_note_uncertain(r);
        req__set_provider_error(r);
        req__set_error_code(r, "reconcile_required");
        deliver_set_termination(r, "reconcile_required");
        guard_record_uncertain(r, "side_effect_uncertain");
        break;
    case DECIDE_STOP_TYPED:
        /* Nothing left after a stream whose first token was late: say so (retryable). */
        if (strcmp(r->x.fail.code, "first_token_timeout") == 0 &&
            (strcmp(out->reason, "no_eligible_fallback") == 0 ||
             strcmp(out->reason, "attempts_exhausted") == 0))
            req__set_typed_failure(r, "first_token_timeout", OUTLOOK_KIND, out->wait_ms,
                                   "%s", out->msg);
        else
            req__set_typed_failure(r, out->reason, out->outlook, out->wait_ms, "%s", out->msg);
        if (out->status)
            req__set_error_status(r, out->status, NULL);
        break;
    case DECIDE_STOP_CAPACITY:
        req__set_typed_failure(r, out->reason, out->outlook, out->wait_ms, "%s", out->msg);
        req__set_error_status(r, 429, "rate_limit_error");
        reqlim_refused_by(r, out->limited_by);
        metrics_inc(M(r), r->w->idx, METRIC_LIMIT_DECISIONS, out->limited_by, "rejected", 1);
        break;
    default:
        req__set_provider_error(r);
        break;
    }
}

static void apply_go(struct request *r, const struct decide_in *in,
                     const struct decide_out *out)
{
    feedback_note_ranking(&r->balance, r->route->balance, in, out);
    req__aim(r, out->target, out->tier);
    r->next.wf = out->wf;
    if (out->admitted)
        req__aim_probe(r, out->probe);
}

enum decision req__decide_first(struct request *r)
{
    struct decide_in in;
    struct decide_out out;
    enum decision d;

    build_in(r, &in);
    d = decide_room(r, &in, decide_first, &out);
    if (d == DECIDE_STOP && out.stop == DECIDE_STOP_NONE)
        out.stop = DECIDE_STOP_NONE_ELIGIBLE;
    if (d == DECIDE_STOP && out.stop == DECIDE_STOP_CAPACITY && reqlim_wait(r, &out))
        return DECIDE_STOP; /* queued: r->lim.waiting */
    req__aim(r, NULL, r->cur.tier);
    if (out.stop != DECIDE_STOP_NONE_ELIGIBLE) {
        apply_go(r, &in, &out);
        r->notes.recovery_reason = out.recovery ? out.recovery : r->notes.recovery_reason;
    }
    if (d == DECIDE_STOP) {
        apply_stop(r, &in, &out);
        return DECIDE_STOP;
    }
    if (r->next.wf != ATTEMPT_WF_PRIMARY)
        req__count_workflow(r, r->next.wf);
    return DECIDE_GO;
}

enum decision req__decide_next(struct request *r, const char **why)
{
    struct decide_in in;
    struct decide_out out;
    enum decision d;

    build_in(r, &in);
    d = decide_room(r, &in, decide_next, &out);
    if (d == DECIDE_GO && !take_budget(r)) {
        reqlim_untake(r); /* the room it took */
        in.budget_ok = false;
        d = decide_room(r, &in, decide_next, &out);
    }
    if (d == DECIDE_STOP && out.stop == DECIDE_STOP_CAPACITY && reqlim_wait(r, &out))
        return DECIDE_STOP; /* queued: r->lim.waiting */
    r->next.delay_ms = out.delay_ms;
    r->next.delay_why = out.delay_why;
    *why = out.why;
    if (out.budget_rejected)
        metrics_inc(M(r), r->w->idx, METRIC_RETRY_BUDGET_REJECTIONS, NULL, NULL, 1);
    if (d == DECIDE_STOP) {
        apply_stop(r, &in, &out);
        return DECIDE_STOP;
    }
    apply_go(r, &in, &out);
    return DECIDE_GO;
}

void req__notes_init(struct request *r)
{
    r->notes.all_rate_limited = true;
}

void req__note_failed(struct request *r, enum fail_kind kind)
{
    if (kind != FAIL_RATE_LIMITED && kind != FAIL_QUOTA_EXHAUSTED)
        r->notes.all_rate_limited = false;
    req__note_recovery(r, fail_kind_name(kind));
}

void req__note_recovery(struct request *r, const char *why)
{
    if (!r->notes.recovery_reason)
        r->notes.recovery_reason = why;
}

void req__next_delay_taken(struct request *r)
{
    r->next.delay_ms = 0;
    r->next.delay_why = NULL;
}
