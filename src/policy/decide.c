/* SPDX-License-Identifier: MIT */
/* decide.c -- which target next, or stop (docs/design.md §3), from a decide_in alone:
 * eligibility (kill switches, keys, the request's needs, the circuit), the balance mode
 * within a tier, and after each failure the workflows in order -- the same target again
 * (next key, or after backoff or Retry-After), an equivalent target, an approved fallback
 * model -- each gated by the envelope (time, attempts, added latency, cost) and the
 * gateway-wide retry budget. decide_req.c builds the input and carries out the answer. */
#include "policy/decide.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/compat.h"
#include "policy/cost.h"
#include "policy/pick.h"
#include "policy/retry.h"

/* ---- choosing targets ---- */

static unsigned attempts_on(const struct decide_in *in, const struct cfg_target *t)
{
    unsigned n = 0;

    for (unsigned i = 0; i < in->n_attempts; i++)
        n += in->attempts[i].target == t;
    return n;
}

static const struct cfg_tier *route_tier(const struct cfg_route *route, enum tier tier)
{
    return tier == TIER_PRIMARY      ? &route->primary
           : tier == TIER_EQUIVALENT ? &route->equivalent
                                     : &route->fallback;
}

/* Static eligibility but for the circuit: the request's needs, kill switches, keys, not yet
 * tried, a window larger than <min_window>, a fallback canary's share. */
static bool usable_but_circuit(const struct decide_in *in, const struct decide_cand *c,
                               enum tier tier, uint64_t min_window)
{
    const struct cfg_target *t = c->t;

    if (c->excluded || c->off || attempts_on(in, t))
        return false;
    if (c->keys_available == 0 || c->limited_by)
        return false;
    /* After a context overflow: a window declared no larger is skipped; one not declared
     * may be larger, and is tried. */
    if (min_window && t->context_window && t->context_window <= min_window)
        return false;
    /* A fallback in canary (canary_percent < 100) takes only that share of the failures
     * that reach it; the others go on to the next candidate. */
    if (tier == TIER_FALLBACK && t->canary_percent < 100 &&
        !(c->canary_draw * 100.0 < (double)t->canary_percent))
        return false;
    return true;
}

/* Eligibility: usable_but_circuit, and a circuit not open or refusing. */
static bool usable(const struct decide_in *in, const struct decide_cand *c, enum tier tier,
                   uint64_t min_window)
{
    return usable_but_circuit(in, c, tier, min_window) && c->v.state != BRK_OPEN &&
           c->admit != ADMIT_DENIED;
}

/* Picks the best usable target of <tier> by the route's balance mode. DECIDE_ADMIT when its
 * breaker is still to be asked, DECIDE_GO (out->target set) when it said yes, DECIDE_STOP
 * when none is left. */
/* balance: score: the best eligible candidate of <dt> by score.h's ranking (priority order
 * while samples are few); the order goes to <out> for the attempt log. -1: none. */
static int rank_by_score(const struct decide_in *in, const struct decide_tier *dt,
                         const struct pick_cand *c, struct decide_out *out)
{
    struct score_cand sc[DECIDE_MAX_CANDS];
    size_t order[DECIDE_MAX_CANDS], m;
    double scores[DECIDE_MAX_CANDS];

    for (size_t k = 0; k < dt->n; k++) {
        sc[k] = dt->c[k].sc;
        sc[k].eligible = c[k].eligible;
    }
    m = score_rank(&in->route->score, sc, dt->n, order, scores, &out->by_score);
    out->n_ranked = m < DECIDE_RANK_MAX ? m : DECIDE_RANK_MAX;
    for (size_t k = 0; k < out->n_ranked; k++) {
        out->ranked[k] = order[k];
        out->scores[k] = scores[k];
    }
    return m ? (int)order[0] : -1;
}

static enum decision choose(const struct decide_in *in, enum tier tier, uint64_t min_window,
                            struct decide_out *out)
{
    const struct cfg_tier *ct = route_tier(in->route, tier);
    const struct decide_tier *dt = &in->tiers[tier];
    struct pick_cand c[DECIDE_MAX_CANDS];
    int i;

    if (ct->disabled || dt->n == 0)
        return DECIDE_STOP;
    for (size_t k = 0; k < dt->n; k++) {
        const struct decide_cand *d = &dt->c[k];
        c[k] = (struct pick_cand){
            .eligible = usable(in, d, tier, min_window),
            .weight = ct->weights ? ct->weights[k] : 1,
            .ewma_latency_ms = d->v.ewma_latency_ms,
            .ewma_ttft_ms = d->v.ewma_ttft_ms,
            .inflight = d->v.inflight,
            .price_per_mtok = pick_blend_price(&d->t->price),
            .ramp_fraction = d->v.ramp_fraction,
        };
    }
    i = in->route->balance == CFG_BALANCE_SCORE
            ? rank_by_score(in, dt, c, out)
            : pick_next(c, dt->n, in->route->balance, in->draw_pick);
    if (i < 0)
        return DECIDE_STOP;
    out->target = dt->c[i].t;
    out->tier = tier;
    out->cand = (size_t)i;
    if (dt->c[i].admit == ADMIT_UNASKED)
        return DECIDE_ADMIT;
    out->admitted = true;
    out->probe = dt->c[i].admit == ADMIT_PROBE;
    return DECIDE_GO;
}

/* ---- panic: every candidate kept out by its breaker (breaker.panic) ---- */

/* <c> could be tried in panic: only its circuit keeps it out (open, every probe slot taken,
 * or refused by the ramp), its breaker allows panic, and its panic admission did not say
 * no. */
static bool panic_candidate(const struct decide_in *in, const struct decide_cand *c,
                            enum tier tier, uint64_t min_window)
{
    return c->t->breaker.panic && c->t->breaker.mode != CFG_BRK_MODE_ADAPTIVE &&
           c->panic != ADMIT_DENIED &&
           (c->v.state == BRK_OPEN || c->admit == ADMIT_DENIED) &&
           usable_but_circuit(in, c, tier, min_window);
}

/* True when <a> goes before <b> in a panic: a closed circuit (only the ramp refused it)
 * first, then the circuit that opened longest ago. Ties keep tier order. */
static bool panic_before(const struct decide_cand *a, const struct decide_cand *b)
{
    bool a_closed = a->v.state == BRK_CLOSED, b_closed = b->v.state == BRK_CLOSED;

    if (a_closed != b_closed)
        return a_closed;
    return a->v.opened_ms < b->v.opened_ms;
}

/* The panic pick over the tiers in <tiers> (bit per enum tier; <min_window> applies to the
 * fallback tier): the candidate kept out by its breaker that is most likely back. DECIDE_STOP
 * when none (then nothing in <out> changed), DECIDE_ADMIT when its panic admission is still
 * to be asked, DECIDE_GO when it said yes. Never after the deadline. */
static enum decision choose_panic(const struct decide_in *in, unsigned tiers,
                                  uint64_t min_window, struct decide_out *out)
{
    const struct decide_cand *best = NULL;
    enum tier best_tier = TIER_PRIMARY;
    size_t best_k = 0;

    if (in->time_left_ms == 0)
        return DECIDE_STOP;
    for (enum tier t = TIER_PRIMARY; t < TIER_COUNT; t++) {
        if (!(tiers & (1u << t)) || route_tier(in->route, t)->disabled)
            continue;
        for (size_t k = 0; k < in->tiers[t].n; k++) {
            const struct decide_cand *c = &in->tiers[t].c[k];
            if (!panic_candidate(in, c, t, t == TIER_FALLBACK ? min_window : 0) ||
                (best && !panic_before(c, best)))
                continue;
            best = c, best_tier = t, best_k = k;
        }
    }
    if (!best)
        return DECIDE_STOP;
    out->target = best->t;
    out->tier = best_tier;
    out->cand = best_k;
    out->panic = true;
    out->n_ranked = 0;
    if (best->panic == ADMIT_UNASKED)
        return DECIDE_ADMIT;
    out->admitted = true;
    out->probe = best->panic == ADMIT_PROBE;
    return DECIDE_GO;
}

bool decide_later_tier(const struct cfg_route *route, const struct envelope *env, enum tier tier)
{
    return (env->allow_equivalent && tier < TIER_EQUIVALENT && route->equivalent.n &&
            !route->equivalent.disabled) ||
           (env->allow_fallback && tier < TIER_FALLBACK && route->fallback.n &&
            !route->fallback.disabled);
}

/* ---- stopping ---- */

static enum decision stop(struct decide_out *out, enum decide_stop kind, const char *why)
{
    out->stop = kind;
    out->why = why;
    return DECIDE_STOP;
}

static enum decision stop_typed(struct decide_out *out, const char *reason,
                                enum outlook outlook, int64_t wait_ms, const char *why,
                                const char *fmt, ...) BSC_PRINTF(6, 7);

/* A typed failure: <reason>, what a client retry may expect, and the message. */
static enum decision stop_typed(struct decide_out *out, const char *reason,
                                enum outlook outlook, int64_t wait_ms, const char *why,
                                const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(out->msg, sizeof(out->msg), fmt, ap);
    va_end(ap);
    out->reason = reason;
    out->outlook = outlook;
    out->wait_ms = wait_ms;
    return stop(out, DECIDE_STOP_TYPED, why);
}

double decide_attempt_cost(uint64_t est_tokens, uint64_t est_out_tokens,
                           const struct cfg_target *t, bool failed)
{
    uint64_t in = est_tokens - est_out_tokens;
    uint64_t out = est_out_tokens ? est_out_tokens : in / 4;

    return cost_estimate(&t->price, in, failed ? 0 : out);
}

/* Whether starting an attempt on <next> keeps the request within the envelope's added
 * latency and cost budgets; when not, out is the typed failure and false. */
static bool within_budgets(const struct decide_in *in, const struct cfg_target *next,
                           struct decide_out *out)
{
    const struct envelope *e = in->env;
    double spent = 0, cost;

    if (in->n_attempts && e->max_added_latency_ms) {
        /* Recovery started when the first attempt ended; the next wait counts too. */
        uint64_t added_ms = (in->now_us - in->attempts[0].end_us) / 1000 + out->delay_ms;
        if (added_ms > e->max_added_latency_ms) {
            stop_typed(out, "latency_budget_exhausted", OUTLOOK_KIND,
                       in->fail->retry_after_ms, "latency_budget_exhausted",
                       "recovering would add %llu ms, more than the route's "
                       "max_added_latency_ms of %u",
                       (unsigned long long)added_ms, e->max_added_latency_ms);
            return false;
        }
    }
    if (e->max_cost_usd < 0)
        return true;
    for (unsigned i = 0; i < in->n_attempts; i++)
        spent += decide_attempt_cost(in->est_tokens, in->est_out_tokens, in->attempts[i].target,
                                     true);
    cost = spent + decide_attempt_cost(in->est_tokens, in->est_out_tokens, next, false);
    if (cost <= e->max_cost_usd)
        return true;
    /* Too dear from the start: never retryable. After failed attempts, a fresh request has
     * spent nothing yet: the last failure decides. */
    stop_typed(out, "cost_budget_exhausted",
               in->n_attempts ? OUTLOOK_KIND : OUTLOOK_NEVER,
               in->n_attempts ? in->fail->retry_after_ms : -1, "cost_budget_exhausted",
               "an attempt on %s would bring the estimated cost to $%.6f, over the route's "
               "max_cost_usd of $%.6f",
               next->id, cost, e->max_cost_usd);
    return false;
}

/* ---- deciding what comes next (docs/design.md §3 workflows) ---- */

/* Commits the next attempt to <next> in workflow <wf> when the request's own budgets and
 * the gateway's retry budget both allow it; else stops. */
static enum decision go(const struct decide_in *in, const struct cfg_target *next,
                        enum attempt_workflow wf, struct decide_out *out)
{
    if (!within_budgets(in, next, out))
        return DECIDE_STOP;
    if (!in->budget_ok) {
        /* A gateway-wide brake: it eases within the budget's window. */
        out->budget_rejected = true;
        return stop_typed(out, "retry_budget_exhausted", OUTLOOK_TIME,
                          OUTLOOK_DEFAULT_RETRY_MS, "retry_budget_exhausted",
                          "%s failed (%s) and the gateway's retry budget is spent",
                          in->failed.t->id, fail_kind_name(in->fail->kind));
    }
    out->target = next;
    out->wf = wf;
    return DECIDE_GO;
}

/* The wait before the same target again: backoff or Retry-After, and at least until one
 * of the provider's keys is usable again. */
static struct retry_delay same_target_delay(const struct decide_in *in,
                                            const struct fail_policy *pol, unsigned done)
{
    struct retry_delay d = retry_choose_delay(in->retry, done - 1,
                                              pol->needs_delay ? in->fail->retry_after_ms : -1,
                                              in->draw_jitter, in->time_left_ms);
    uint64_t key_at = in->failed.keys_ready_at;

    if (!pol->needs_delay)
        d.delay_ms = 0;
    if (key_at > in->now_ms + d.delay_ms) {
        d.delay_ms = (uint32_t)(key_at - in->now_ms);
        d.exceeds_deadline = d.delay_ms >= in->time_left_ms;
    }
    return d;
}

/* Workflow 1: the same target again (next key, or after a wait). True with out's delay set
 * when it may; *<wait_too_long> when only the deadline is in the way. */
static bool try_same_target(const struct decide_in *in, const struct fail_policy *pol,
                            struct decide_out *out, bool *wait_too_long, int64_t *wait_ms,
                            bool *no_room)
{
    const struct decide_cand *f = &in->failed;
    unsigned done = attempts_on(in, f->t);
    struct retry_delay d;

    if (done >= in->env->max_same_target_attempts || f->off)
        return false;
    if (pol->next_key && f->t->provider->n_keys > 1 && f->keys_available > 0 &&
        !f->limited_by) {
        out->why = "next_key";
        return true;
    }
    if (!pol->replay_same_target || (pol->max_replays && done > pol->max_replays))
        return false;
    /* An immediate replay of an attempt that timed out would eat the time kept in
     * reserve for the next tier: go there instead when there is one. */
    if (!pol->needs_delay && decide_later_tier(in->route, in->env, in->tier))
        return false;
    d = same_target_delay(in, pol, done);
    if (d.exceeds_deadline) {
        *wait_too_long = true;
        *wait_ms = d.delay_ms;
        return false;
    }
    if (f->limited_by) { /* no room for it under the local limits now */
        *no_room = true;
        return false;
    }
    out->delay_ms = d.delay_ms;
    out->delay_why = d.delay_ms ? retry_delay_why_name(d.why) : NULL;
    out->why = out->delay_why ? out->delay_why : "replay";
    return true;
}

/* The stops that come before any workflow: the client's fault, WORKFLOW_3, no time or no
 * attempts left. DECIDE_GO means none applies. */
static enum decision stop_early(const struct decide_in *in, const struct fail_policy *pol,
                                struct decide_out *out)
{
    const struct fail_info *f = in->fail;

    if (pol->client_fault && !pol->fallback_needs_larger_window)
        return stop(out, DECIDE_STOP_PROVIDER_ERROR, "client_error");
    /* The upstream may have acted on it and we cannot know: never replay blindly. */
    if (in->env->side_effects == CFG_SE_WRITE_POSSIBLE && f->request_sent &&
        f->transport != FT_OK)
        return stop(out, DECIDE_STOP_UNCERTAIN, "side_effect_uncertain");
    if (in->time_left_ms == 0)
        return stop_typed(out, "deadline_exhausted", OUTLOOK_KIND, f->retry_after_ms,
                          "deadline_exhausted",
                          "the request deadline passed after %u attempts (last: %s)",
                          in->n_attempts, fail_kind_name(f->kind));
    if (in->n_attempts >= in->env->max_attempts)
        return stop_typed(out, "attempts_exhausted", OUTLOOK_KIND, f->retry_after_ms,
                          "max_attempts", "all %u attempts failed (last: %s on %s)",
                          in->n_attempts, fail_kind_name(f->kind), in->failed.t->id);
    return DECIDE_GO;
}

/* Workflow 2: an equivalent target (the primary tier's others first), then an approved
 * fallback model (one with a larger window when the context overflowed). DECIDE_STOP:
 * none. */
static enum decision try_other_targets(const struct decide_in *in, const struct fail_policy *pol,
                                       struct decide_out *out)
{
    const struct cfg_target *failed = in->failed.t;
    uint64_t min_window = 0;
    enum decision d = DECIDE_STOP;

    if (pol->equivalent_failover && in->env->allow_equivalent) {
        if (in->tier == TIER_PRIMARY)
            d = choose(in, TIER_PRIMARY, 0, out);
        if (d == DECIDE_STOP)
            d = choose(in, TIER_EQUIVALENT, 0, out);
        if (d != DECIDE_STOP) {
            out->why = fail_kind_name(in->fail->kind);
            return d == DECIDE_ADMIT ? d : go(in, out->target, ATTEMPT_WF_EQUIVALENT_FAILOVER, out);
        }
    }
    if (pol->cross_model_fallback && in->env->allow_fallback) {
        if (pol->fallback_needs_larger_window)
            min_window = failed->context_window ? failed->context_window : 1;
        d = choose(in, TIER_FALLBACK, min_window, out);
        if (d != DECIDE_STOP) {
            out->why = fail_kind_name(in->fail->kind);
            return d == DECIDE_ADMIT ? d
                                     : go(in, out->target, ATTEMPT_WF_CROSS_MODEL_FALLBACK, out);
        }
    }
    return DECIDE_STOP;
}

/* Workflow 2 in panic: the other targets workflow 2 may go to are all kept out by their
 * breakers; the one most likely back is tried (within the retry budget, as any failover). */
static enum decision try_panic_next(const struct decide_in *in, const struct fail_policy *pol,
                                    struct decide_out *out)
{
    unsigned tiers = 0;
    uint64_t min_window = 0;
    enum decision d;

    if (pol->equivalent_failover && in->env->allow_equivalent)
        tiers |= (in->tier == TIER_PRIMARY ? 1u << TIER_PRIMARY : 0) | 1u << TIER_EQUIVALENT;
    if (pol->cross_model_fallback && in->env->allow_fallback) {
        tiers |= 1u << TIER_FALLBACK;
        if (pol->fallback_needs_larger_window)
            min_window = in->failed.t->context_window ? in->failed.t->context_window : 1;
    }
    /* With a larger window needed, only the fallback tier can help. */
    if (pol->fallback_needs_larger_window)
        tiers &= 1u << TIER_FALLBACK;
    d = choose_panic(in, tiers, min_window, out);
    if (d != DECIDE_GO)
        return d;
    out->why = "breaker_panic";
    return go(in, out->target,
              out->tier == TIER_FALLBACK ? ATTEMPT_WF_CROSS_MODEL_FALLBACK
                                         : ATTEMPT_WF_EQUIVALENT_FAILOVER,
              out);
}

/* Nothing left to try: why, by the failure and what was in the way. */
static enum decision stop_exhausted(const struct decide_in *in, const struct fail_policy *pol,
                                    bool wait_too_long, int64_t wait_ms, struct decide_out *out)
{
    const struct fail_info *f = in->fail;
    const char *failed = in->failed.t->id;

    if (pol->client_fault) /* context overflow with no larger window to go to */
        return stop(out, DECIDE_STOP_PROVIDER_ERROR, "no_larger_window");
    if (f->kind == FAIL_CONTRACT_FAILURE) {
        /* Never the invalid answer presented as success. */
        out->status = 502;
        return stop_typed(out, "contract_failure", OUTLOOK_NEVER, -1, "contract_failure",
                          "%s", f->message);
    }
    if (wait_too_long) /* the upstream said when: the client may come back then */
        return stop_typed(out, "deadline_exhausted", OUTLOOK_TIME, wait_ms,
                          "wait_exceeds_deadline",
                          "%s asked to wait %lld ms, more than the %llu ms left", failed,
                          (long long)wait_ms, (unsigned long long)in->time_left_ms);
    return stop_typed(out, "no_eligible_fallback", OUTLOOK_KIND, f->retry_after_ms,
                      "no_eligible_fallback",
                      "%s failed (%s) and no eligible target is left to try", failed,
                      fail_kind_name(f->kind));
}

/* ---- local limits ---- */

/* <c> would be usable in <tier> but for its room under the local limits. */
static bool only_room_lacks(const struct decide_in *in, const struct decide_cand *c,
                            enum tier tier)
{
    struct decide_cand d;

    if (!c->limited_by)
        return false;
    d = *c;
    d.limited_by = NULL;
    return usable(in, &d, tier, 0);
}

/* Folds candidate <c>, kept out by its room alone, into the capacity stop: the soonest
 * known return of room names the limit, and the longest queue_ms bounds the wait. */
static void note_room(const struct decide_cand *c, int64_t *soonest, struct decide_out *out)
{
    if (!out->limited_by || (c->room_in_ms >= 0 && c->room_in_ms < *soonest)) {
        out->limited_by = c->limited_by;
        out->limited = c->t;
    }
    if (c->room_in_ms >= 0 && c->room_in_ms < *soonest)
        *soonest = c->room_in_ms;
    if (c->t->queue_ms > out->queue_ms)
        out->queue_ms = c->t->queue_ms;
}

/* Nothing usable was chosen: when some candidate of the tiers the request may use (or the
 * failed target, <failed>, when it could have been retried) lacks only room under the local
 * limits, a typed 429 rate_limited with when room returns, and how long the request may wait
 * for it. Moving past such a candidate is not a retry: nothing was sent. */
static bool stop_capacity(const struct decide_in *in, const struct decide_cand *failed,
                          struct decide_out *out)
{
    int64_t soonest = INT64_MAX;

    out->limited_by = NULL;
    out->queue_ms = 0;
    if (failed)
        note_room(failed, &soonest, out);
    for (enum tier t = TIER_PRIMARY; t < TIER_COUNT; t++) {
        if (route_tier(in->route, t)->disabled)
            continue;
        for (size_t k = 0; k < in->tiers[t].n; k++)
            if (only_room_lacks(in, &in->tiers[t].c[k], t))
                note_room(&in->tiers[t].c[k], &soonest, out);
    }
    if (!out->limited_by)
        return false;
    if (out->queue_ms > in->time_left_ms)
        out->queue_ms = (uint32_t)in->time_left_ms;
    stop_typed(out, "rate_limited", OUTLOOK_TIME, soonest == INT64_MAX ? -1 : soonest,
               "no_capacity", "route '%s' has no target with room under its limits now (%s)",
               in->route->id, out->limited_by);
    out->stop = DECIDE_STOP_CAPACITY;
    out->status = 429;
    return true;
}

enum decision decide_next(const struct decide_in *in, struct decide_out *out)
{
    const struct fail_policy *pol = fail_policy(in->fail->kind);
    bool wait_too_long = false, no_room = false;
    int64_t wait_ms = -1;
    enum decision d;

    memset(out, 0, sizeof(*out));
    out->tier = in->tier;
    if (stop_early(in, pol, out) == DECIDE_STOP)
        return DECIDE_STOP;
    if (!pol->fallback_needs_larger_window &&
        try_same_target(in, pol, out, &wait_too_long, &wait_ms, &no_room))
        return go(in, in->failed.t, ATTEMPT_WF_RETRY, out);
    d = try_other_targets(in, pol, out);
    if (d != DECIDE_STOP || out->stop != DECIDE_STOP_NONE)
        return d;
    if ((no_room || pol->equivalent_failover || pol->cross_model_fallback) &&
        stop_capacity(in, no_room ? &in->failed : NULL, out))
        return DECIDE_STOP;
    d = try_panic_next(in, pol, out);
    if (d != DECIDE_STOP || out->stop != DECIDE_STOP_NONE)
        return d;
    return stop_exhausted(in, pol, wait_too_long, wait_ms, out);
}

/* The tiers a first attempt may use (bit per enum tier). */
static unsigned first_tiers(const struct decide_in *in)
{
    return 1u << TIER_PRIMARY | (in->env->allow_equivalent ? 1u << TIER_EQUIVALENT : 0) |
           (in->env->allow_fallback ? 1u << TIER_FALLBACK : 0);
}

enum decision decide_first(const struct decide_in *in, struct decide_out *out)
{
    static const enum attempt_workflow wfs[TIER_COUNT] = {
        ATTEMPT_WF_PRIMARY, ATTEMPT_WF_EQUIVALENT_FAILOVER, ATTEMPT_WF_CROSS_MODEL_FALLBACK};
    enum decision d = DECIDE_STOP;
    enum tier t;

    memset(out, 0, sizeof(*out));
    for (t = TIER_PRIMARY; t < TIER_COUNT && d == DECIDE_STOP; t++) {
        if ((t == TIER_EQUIVALENT && !in->env->allow_equivalent) ||
            (t == TIER_FALLBACK && !in->env->allow_fallback))
            continue;
        d = choose(in, t, 0, out);
    }
    if (d == DECIDE_STOP && stop_capacity(in, NULL, out))
        return DECIDE_STOP;
    if (d == DECIDE_STOP)
        d = choose_panic(in, first_tiers(in), 0, out);
    if (d == DECIDE_STOP)
        return stop(out, DECIDE_STOP_NONE_ELIGIBLE, "none_eligible");
    out->wf = wfs[out->tier];
    out->recovery = out->panic                  ? "breaker_panic"
                    : out->tier == TIER_PRIMARY ? NULL
                                                : "primary_unavailable";
    if (d == DECIDE_GO && !within_budgets(in, out->target, out))
        return DECIDE_STOP;
    return d;
}
