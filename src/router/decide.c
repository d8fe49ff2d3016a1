/* SPDX-License-Identifier: MIT */
/* decide.c -- which target next, or stop (docs/design.md §3): eligibility (kill switches, keys,
 * contract, breaker admission), the balance mode within a tier, and after each failure
 * the workflows in order -- the same target again (next key, or after backoff or
 * Retry-After), an equivalent target, an approved fallback model -- each gated by the
 * envelope (time, attempts) and the gateway-wide retry budget. What it returns is a
 * decision; request.c carries it out. */
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "core/id.h"
#include "metrics/metrics.h"
#include "router/feedback.h"
#include "router/guard.h"
#include "router/internal.h"
#include "router/params.h"
#include "router/pick.h"
#include "router/retry.h"
#include "router/state.h"

#define M(r) req__metrics(r)

/* ---- choosing targets ---- */

static unsigned attempts_on(const struct request *r, const struct cfg_target *t)
{
    unsigned n = 0;

    for (unsigned i = 0; i < r->n_attempts; i++)
        n += r->attempts[i].target == t;
    return n;
}

/* The capabilities of <t> that the route and the request need but <t> lacks. */
static uint32_t missing_caps(const struct request *r, const struct cfg_target *t)
{
    uint32_t need = r->route->requires.capabilities | r->need_caps;

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
        return trim_req_fits(r, t);
    return !t->context_window || r->est_tokens <= t->context_window;
}

/* A fallback in canary (canary_percent < 100) takes only that share of the failures
 * that reach it; the others go on to the next candidate. One draw per request. */
static bool canary_admits(const struct cfg_target *t)
{
    return t->canary_percent >= 100 || bsc_rand01() * 100.0 < (double)t->canary_percent;
}

/* Kill switches: config, provider, and the run-time admin switch. */
static bool switched_off(struct request *r, const struct cfg_target *t)
{
    return t->disabled || t->provider->disabled || hstate_is_disabled(r->gw->hs, t->id);
}

/* The parameters of the request that <t>'s adapter cannot honour (params.h). The request's
 * parameters are read on the first target whose adapter declares any limit, so the OpenAI
 * fast path never reads them. */
static uint32_t unhonoured_params(struct request *r, const struct cfg_target *t)
{
    const struct prov_ops *ops = prov_ops_for(t->provider->kind);

    if (r->op != PROV_OP_CHAT || (!ops->unhonoured && !ops->max_choices))
        return 0;
    if (!r->params_read) {
        r->params_read = true;
        if (r->json)
            params_of_json(r->json, &r->params);
        else
            params_of_body(r->body, &r->params);
    }
    return params_unhonoured(&r->params, ops);
}

/* True when <t> can never serve this request as it is: a capability it lacks, a size it
 * cannot take, a parameter it cannot honour. Each is recorded, to be named in the answer
 * if no target is left. */
static bool request_excludes(struct request *r, const struct cfg_target *t)
{
    uint32_t missing = missing_caps(r, t), params = unhonoured_params(r, t);
    bool small = !satisfies_sizes(r, t);

    r->missing_caps |= missing;
    r->unhonoured |= params;
    r->too_small |= small;
    return missing || params || small;
}

/* Static eligibility: contract, kill switches, keys, not yet tried when <fresh>. */
static bool usable(struct request *r, const struct cfg_target *t, enum tier tier, bool fresh,
                   uint64_t min_window)
{
    uint64_t now = bsc_now_ms();

    if (request_excludes(r, t) || switched_off(r, t))
        return false;
    if (fresh && attempts_on(r, t))
        return false;
    if (hstate_keys_available(r->gw->hs, t->provider, now) == 0)
        return false;
    if (min_window && (!t->context_window || t->context_window <= min_window))
        return false;
    if (tier == TIER_FALLBACK && fresh && !canary_admits(t))
        return false;
    return true;
}

/* Appends the names of the capability bits in <caps> to <buf>, comma-separated. */
void decide_caps_names(uint32_t caps, char *buf, size_t len)
{
    static const char *const names[] = {"text",  "vision",      "streaming", "tools",
                                        "parallel_tool_calls", "json_schema", "json_object",
                                        "embeddings"};
    size_t used = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < BSC_ARRAY_LEN(names) && used < len; i++) {
        if (!(caps & (1u << i)))
            continue;
        used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", names[i]);
    }
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
        int i = r->route->balance == CFG_BALANCE_SCORE ? feedback_score_pick(r, t, c, n)
                                                        : pick_next(c, n, r->route->balance,
                                                                    bsc_rand01());
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

bool decide_later_tier_exists(const struct request *r)
{
    return (r->env.allow_equivalent && r->tier < TIER_EQUIVALENT && r->route->equivalent.n &&
            !r->route->equivalent.disabled) ||
           (r->env.allow_fallback && r->tier < TIER_FALLBACK && r->route->fallback.n &&
            !r->route->fallback.disabled);
}

/* ---- deciding what comes next (docs/design.md §3 workflows) ---- */

const char *decide_count_workflow(struct request *r, enum attempt_workflow wf)
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
    if (!pol->needs_delay && decide_later_tier_exists(r))
        return false;
    d = retry_choose_delay(&r->cfg->retry, done - 1, pol->needs_delay ? r->fail.retry_after_ms : -1,
                           bsc_rand01(), req__time_left(r));
    if (!pol->needs_delay)
        d.delay_ms = 0;
    key_at = hstate_keys_ready_at(r->gw->hs, t->provider, now);
    if (key_at > now + d.delay_ms) {
        d.delay_ms = (uint32_t)(key_at - now);
        d.exceeds_deadline = d.delay_ms >= req__time_left(r);
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

/* Commits the next attempt to <next> in workflow <wf> when the request's own budgets and
 * the gateway's retry budget both allow it; else sets the error and stops. r->target is
 * still the target that failed. */
static enum decision go(struct request *r, const struct cfg_target *next,
                        enum attempt_workflow wf, const char **why)
{
    if (!decide_within_budgets(r, next)) {
        *why = r->err.reason;
        return DECIDE_STOP;
    }
    if (!take_budget(r)) {
        /* A gateway-wide brake: it eases within the budget's window. */
        req__set_typed_failure(r, "retry_budget_exhausted", REPLY_OUTLOOK_TIME,
                               REPLY_DEFAULT_RETRY_MS,
                               "%s failed (%s) and the gateway's retry budget is spent",
                               r->target->id, fail_kind_name(r->fail.kind));
        *why = "retry_budget_exhausted";
        return DECIDE_STOP;
    }
    r->target = next;
    r->next_wf = wf;
    return DECIDE_GO;
}

/* Decides the step after the failure in r->fail. Sets r->target/next_wf/next_delay_ms
 * and returns DECIDE_GO, or sets the error to reply with and returns DECIDE_STOP. */
enum decision decide_next(struct request *r, const char **why)
{
    const struct fail_policy *pol = fail_policy(r->fail.kind);
    bool wait_too_long = false;
    int64_t wait_ms = -1;
    uint64_t min_window = 0;
    const struct cfg_target *failed = r->target, *next;

    r->next_delay_ms = 0;
    r->next_delay_why = NULL;
    if (pol->client_fault && !pol->fallback_needs_larger_window) {
        req__set_provider_error(r);
        *why = "client_error";
        return DECIDE_STOP;
    }
    if (r->env.side_effects == CFG_SE_WRITE_POSSIBLE && r->fail.request_sent &&
        r->fail.transport != FT_OK) {
        /* The upstream may have acted on it and we cannot know: never replay blindly. */
        r->fail.kind = FAIL_SIDE_EFFECT_UNCERTAIN;
        req__set_provider_error(r);
        r->err.code = "reconcile_required";
        r->termination = "reconcile_required";
        guard_record_uncertain(r, "side_effect_uncertain");
        *why = "side_effect_uncertain";
        return DECIDE_STOP;
    }
    if (req__time_left(r) == 0) {
        req__set_typed_failure(r, "deadline_exhausted", REPLY_OUTLOOK_KIND, r->fail.retry_after_ms,
                               "the request deadline passed after %u attempts (last: %s)",
                               r->n_attempts, fail_kind_name(r->fail.kind));
        *why = "deadline_exhausted";
        return DECIDE_STOP;
    }
    if (r->n_attempts >= r->env.max_attempts) {
        req__set_typed_failure(r, "attempts_exhausted", REPLY_OUTLOOK_KIND,
                               r->fail.retry_after_ms,
                          "all %u attempts failed (last: %s on %s)", r->n_attempts,
                          fail_kind_name(r->fail.kind), failed->id);
        *why = "max_attempts";
        return DECIDE_STOP;
    }
    if (!pol->fallback_needs_larger_window &&
        try_same_target(r, pol, why, &wait_too_long, &wait_ms)) {
        return go(r, r->target, ATTEMPT_WF_RETRY, why);
    }
    if (pol->equivalent_failover && r->env.allow_equivalent) {
        next = r->tier == TIER_PRIMARY ? choose(r, TIER_PRIMARY, true, 0) : NULL;
        if (!next)
            next = choose(r, TIER_EQUIVALENT, true, 0);
        if (next) {
            *why = fail_kind_name(r->fail.kind);
            return go(r, next, ATTEMPT_WF_EQUIVALENT_FAILOVER, why);
        }
    }
    if (pol->cross_model_fallback && r->env.allow_fallback) {
        if (pol->fallback_needs_larger_window)
            min_window = failed->context_window ? failed->context_window : UINT64_MAX - 1;
        next = choose(r, TIER_FALLBACK, true, min_window);
        if (next) {
            *why = fail_kind_name(r->fail.kind);
            return go(r, next, ATTEMPT_WF_CROSS_MODEL_FALLBACK, why);
        }
    }
    if (pol->client_fault) { /* context overflow with no larger window to go to */
        req__set_provider_error(r);
        *why = "no_larger_window";
        return DECIDE_STOP;
    }
    if (r->fail.kind == FAIL_CONTRACT_FAILURE) {
        /* Never the invalid answer presented as success. */
        req__set_typed_failure(r, "contract_failure", REPLY_OUTLOOK_NEVER, -1, "%s",
                               r->fail.message);
        r->err.status = 502;
        *why = "contract_failure";
        return DECIDE_STOP;
    }
    if (wait_too_long) {
        /* The upstream said when: the client may come back then. */
        req__set_typed_failure(r, "deadline_exhausted", REPLY_OUTLOOK_TIME, wait_ms,
                          "%s asked to wait %lld ms, more than the %llu ms left",
                          failed->id, (long long)wait_ms, (unsigned long long)req__time_left(r));
        *why = "wait_exceeds_deadline";
        return DECIDE_STOP;
    }
    req__set_typed_failure(r, "no_eligible_fallback", REPLY_OUTLOOK_KIND, r->fail.retry_after_ms,
                      "%s failed (%s) and no eligible target is left to try", failed->id,
                      fail_kind_name(r->fail.kind));
    *why = "no_eligible_fallback";
    return DECIDE_STOP;
}

/* The first attempt: the best primary, else (all unavailable) the next allowed tier. */
const struct cfg_target *decide_first(struct request *r)
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
    return t;
}

/* What kept the targets of a request from its first attempt, by what could change it. */
struct none_eligible {
    unsigned request;  /* targets that cannot serve the request as it is */
    unsigned off;      /* targets that could, switched off (config, admin) */
    unsigned waiting;  /* targets that could, unavailable for a while */
    bool cooling_only; /* every waiting one only waits for a rate-limited key */
    uint64_t back_at;  /* the soonest a waiting one may be back */
};

/* When waiting target <t> may be back: the end of its circuit's open time and of its
 * keys' cooldowns, whichever is later; a second when neither says (a ramp, the probe
 * slots of a half-open circuit, a canary's share). */
static void note_waiting(struct request *r, const struct cfg_target *t, uint64_t now,
                         struct none_eligible *ne)
{
    struct target_view v;
    uint64_t at = 0, keys_at = hstate_keys_ready_at(r->gw->hs, t->provider, now);
    bool open;

    hstate_view(r->gw->hs, t->id, now, &v);
    open = v.state == BRK_OPEN;
    if (open)
        at = now + v.retry_after_ms;
    if (keys_at > now) {
        /* A refused key may be back at its next re-verification: say so, not 600 s. */
        keys_at = hstate_keys_hint_at(r->gw->hs, t->provider, now);
        keys_at = keys_at > now ? keys_at : now + 1;
        at = keys_at > at ? keys_at : at;
    }
    ne->cooling_only = ne->cooling_only && !open && keys_at > now;
    if (!at)
        at = now + REPLY_DEFAULT_RETRY_MS;
    ne->back_at = at < ne->back_at ? at : ne->back_at;
    ne->waiting++;
}

/* The 400 for a request no target can serve as it is. */
static void answer_request_excluded(struct request *r)
{
    const char *param = params_first_name(r->unhonoured);
    char caps[160];

    decide_caps_names(r->missing_caps, caps, sizeof(caps));
    if (param) {
        /* OpenAI's own answer for a parameter a model does not take. */
        req__set_error(r, 400, "invalid_request_error", "unsupported_parameter",
                       "no target of route '%s' can honour the parameter '%s'%s%s%s",
                       r->route->id, param, r->missing_caps ? "; missing: " : "", caps,
                       r->too_small ? "; context window too small" : "");
        r->err.param = param;
        r->termination = "unsupported_parameter";
        return;
    }
    req__set_typed_failure(r, "no_eligible_fallback", REPLY_OUTLOOK_NEVER, -1,
                           "no target of route '%s' satisfies this request%s%s%s",
                           r->route->id, r->missing_caps ? "; missing: " : "", caps,
                           r->too_small ? "; context window too small" : "");
    r->err.status = 400;
    r->err.type = "invalid_request_error";
}

void decide_none_eligible(struct request *r)
{
    const struct cfg_tier *tiers[] = {&r->route->primary,
                                      r->env.allow_equivalent ? &r->route->equivalent : NULL,
                                      r->env.allow_fallback ? &r->route->fallback : NULL};
    struct none_eligible ne = {.cooling_only = true, .back_at = UINT64_MAX};
    uint64_t now = bsc_now_ms();

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
        req__set_typed_failure(r, ne.cooling_only ? "rate_limited" : "no_eligible_fallback",
                               REPLY_OUTLOOK_TIME, (int64_t)(ne.back_at - now),
                               "route '%s' has no eligible target now (%s)", r->route->id,
                               ne.cooling_only ? "every key is cooling down after rate limits"
                                               : "circuits open, keys cooling down or targets "
                                                 "ramping up");
        if (ne.cooling_only) {
            r->err.status = 429;
            r->err.type = "rate_limit_error";
        }
    } else if (ne.off) {
        /* Only the operator can bring them back: no retry helps, and no time can be said. */
        req__set_typed_failure(r, "no_eligible_fallback", REPLY_OUTLOOK_NEVER, -1,
                               "every target of route '%s' that could serve this request is "
                               "disabled", r->route->id);
    } else if (ne.request) {
        answer_request_excluded(r);
    } else {
        req__set_typed_failure(r, "no_eligible_fallback", REPLY_OUTLOOK_NEVER, -1,
                               "route '%s' has no target this request may use", r->route->id);
    }
}

/* The estimated cost of one attempt on <t>: the prompt (estimated) at the input price and
 * the output budget the client set (or 1/4 of the prompt when it set none) at the output
 * price. A failed attempt is assumed to have cost its prompt: providers bill some. */
static double attempt_cost(const struct request *r, const struct cfg_target *t, bool failed)
{
    uint64_t in = r->est_tokens - r->est_out_tokens;
    uint64_t out = r->est_out_tokens ? r->est_out_tokens : in / 4;

    return ((double)in * t->price.input_per_mtok + (failed ? 0.0 : (double)out * t->price.output_per_mtok)) / 1e6;
}

bool decide_within_budgets(struct request *r, const struct cfg_target *next)
{
    uint64_t now_us = bsc_now_us();

    if (r->n_attempts && r->env.max_added_latency_ms) {
        /* Recovery started when the first attempt ended; the next wait counts too. */
        uint64_t added_ms = (now_us - r->attempts[0].end_us) / 1000 + r->next_delay_ms;
        if (added_ms > r->env.max_added_latency_ms) {
            req__set_typed_failure(r, "latency_budget_exhausted", REPLY_OUTLOOK_KIND,
                                   r->fail.retry_after_ms,
                                   "recovering would add %llu ms, more than the route's "
                                   "max_added_latency_ms of %u",
                                   (unsigned long long)added_ms, r->env.max_added_latency_ms);
            return false;
        }
    }
    if (r->env.max_cost_usd >= 0) {
        double spent = 0;
        for (unsigned i = 0; i < r->n_attempts; i++)
            spent += attempt_cost(r, r->attempts[i].target, true);
        if (spent + attempt_cost(r, next, false) > r->env.max_cost_usd) {
            /* Too dear from the start: never retryable. After failed attempts, a fresh
             * request has spent nothing yet: the last failure decides. */
            req__set_typed_failure(r, "cost_budget_exhausted",
                                   r->n_attempts ? REPLY_OUTLOOK_KIND : REPLY_OUTLOOK_NEVER,
                                   r->fail.retry_after_ms,
                                   "an attempt on %s would bring the estimated cost to $%.6f, "
                                   "over the route's max_cost_usd of $%.6f",
                                   next->id, spent + attempt_cost(r, next, false),
                                   r->env.max_cost_usd);
            return false;
        }
    }
    return true;
}
