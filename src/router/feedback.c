/* SPDX-License-Identifier: MIT */
/* feedback.c -- the router's side of task feedback (feedback.h): the signals each attempt
 * and each answered request leave behind, and the balance: score pick that reads them
 * back. Outcome windows and the recent-request table are health/verdicts.c; the ranking
 * itself is the pure score.c. */
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "health/verdicts.h"
#include "metrics/metrics.h"
#include "policy/cost.h"
#include "policy/decide.h"
#include "router/feedback.h"
#include "policy/pick.h"
#include "policy/score.h"
#include "health/hstate.h"

#define SCORE_MAX_CANDS 64 /* as decide.c's choose() */

void feedback_policy(const struct cfg *cfg, struct vd_policy *out)
{
    *out = (struct vd_policy){.half_life_ms = cfg->feedback.half_life_ms,
                              .max_weight = (double)cfg->feedback.max_client_verdicts};
}

bool feedback_is_shared(const struct cfg_client *client)
{
    return !client || client->feedback == CFG_FEEDBACK_TRUSTED;
}

static const char *ok_word(bool ok)
{
    return ok ? "ok" : "failed";
}

/* The answer about to be delivered is remembered for POST /v1/feedback. Before the
 * response ends, not in st_done: a client may send its verdict as soon as it has read the
 * answer, before the request's last bookkeeping ran. */
static void remember(const struct feedback_attempt *fa)
{
    struct vd_request rq = {
        .id = fa->id,
        .route = fa->route,
        .target = fa->target,
        .scope = fa->scope,
        .workflow = (int)fa->wf,
        .finish_ms = bsc_now_ms(),
        .shard = fa->shard,
    };

    if (verdicts_finished(fa->vd, &rq) != BSC_OK)
        LOG_DEBUG("%s: not kept for feedback", fa->id);
}

void feedback_attempt(const struct feedback_attempt *fa)
{
    const char *wf = attempt_workflow_name(fa->wf);

    /* <wf> and the words are static, <target> a string of the snapshot it names */
    metrics_inc_scoped(fa->m, fa->shard, fa->labels_scope, METRIC_WORKFLOW_OUTCOMES, wf,
                       "transport", ok_word(fa->transport_ok), 1);
    metrics_inc_scoped(fa->m, fa->shard, fa->labels_scope, METRIC_TARGET_OUTCOMES, fa->target,
                       "transport", ok_word(fa->transport_ok), 1);
    if (fa->contract_counted)
        metrics_inc_scoped(fa->m, fa->shard, fa->labels_scope, METRIC_WORKFLOW_OUTCOMES, wf,
                           "contract", ok_word(fa->usable), 1);
    if (!fa->vd)
        return;
    verdicts_attempt(fa->vd, fa->target, fa->usable);
    if (fa->usable)
        remember(fa);
}

/* The estimated cost of the request on <t>: its token estimate at <t>'s price. */
static double est_cost(const struct feedback_asker *q, const struct cfg_target *t)
{
    uint64_t out = q->est_out_tokens, in = q->est_tokens > out ? q->est_tokens - out : 0;

    return cost_estimate(&t->price, in, out);
}

void feedback_score_cand(const struct feedback_asker *q, const struct cfg_target *t,
                         const struct target_view *view, struct score_cand *out)
{
    struct vd_policy p;
    struct vd_rates v;
    double lat = q->stream && view->ewma_ttft_ms >= 0.0 ? view->ewma_ttft_ms
                                                  : view->ewma_latency_ms;

    memset(out, 0, sizeof(*out));
    if (!q->vd)
        return;
    /* The shared verdicts and the caller's own: an `own` client's verdicts rank its own
     * requests only (docs/internals/feedback.md). */
    feedback_policy(q->cfg, &p);
    verdicts_rates(q->vd, t->id, q->scope, bsc_now_ms(), &p, &v);
    *out = (struct score_cand){
        .samples = v.attempts,
        .contract_rate = v.attempts ? (double)v.attempts_ok / v.attempts : 0.0,
        .task_rate = v.tasks > 0.0 ? v.tasks_ok / v.tasks : -1.0,
        .latency_ms = lat,
        .cost_usd = est_cost(q, t),
    };
}

/* "score b=1.950 a=0.120" or "priority a(3 samples) b(12 samples)", cut to fit. */
void feedback_note_ranking(struct req_balance *b, enum cfg_balance mode,
                           const struct decide_in *in, const struct decide_out *out)
{
    const struct decide_tier *dt = &in->tiers[out->tier];
    size_t used, len = sizeof(b->ranking);

    b->ranking[0] = '\0';
    if (mode != CFG_BALANCE_SCORE || !out->n_ranked)
        return;
    used = (size_t)snprintf(b->ranking, len, "%s", out->by_score ? "score" : "priority");
    for (size_t k = 0; k < out->n_ranked && used < len; k++) {
        const struct decide_cand *c = &dt->c[out->ranked[k]];

        if (out->by_score)
            used += (size_t)snprintf(b->ranking + used, len - used, " %s=%.3f", c->t->id,
                                     out->scores[k]);
        else
            used += (size_t)snprintf(b->ranking + used, len - used, " %s(%u samples)",
                                     c->t->id, c->sc.samples);
    }
}

void feedback_take_ranking(struct req_balance *b, char *dst, size_t cap)
{
    bsc_str_copy(dst, cap, bsc_str_cstr(b->ranking));
    b->ranking[0] = '\0';
}
