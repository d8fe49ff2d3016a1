/* SPDX-License-Identifier: MIT */
/* metrics_seed.c -- the series the running config knows, made present at zero before their
 * first event (a dashboard or an alert on rate() needs the series to exist; an absent one
 * reads as "no data", not 0). Touched at every scrape, so a reload's new routes, targets,
 * providers, clients, shadows and limits show from the next scrape on; a touch finds an
 * existing series, so nothing is ever doubled. Only label values the config (or a fixed
 * vocabulary in the code) names are seeded, so the count stays a small multiple of the
 * config's size. Values only traffic names (failure kinds) appear with it.
 * docs/internals/metrics.md "Present at zero" lists every family and what it seeds. */
#include "api/metrics_seed.h"
#include "health/breaker.h"
#include "health/keys.h"
#include "limits/limits.h"
#include "metrics/metrics.h"
#include "policy/attempt.h"
#include "router/gateway.h"
#include "router/shadow.h"

/* The layers a request's outcome is checked at and their two results (router/feedback.c,
 * router/contract.c, api/feedback.c). */
static const char *const layers[] = {"transport", "contract", "task"};
static const char *const results[] = {"ok", "failed"};

/* Every seeded series lives in the shared shard, whose METRICS_MAX_SERIES must keep room for
 * the gauges set at scrape time, the main thread's and the probes' updates. The first pass
 * (each route's and target's core series, the cost) is always made; the second (every other
 * value the config knows) creates series only while the shard holds fewer than this many.
 * A config past it (hundreds of routes and targets) has the rest come with use. */
#define SEED_SHARD_MAX 6000u

/* Where the seed writes, and whether it is the bounded second pass. */
struct seed {
    struct metrics *m;
    unsigned sh;
    bool bounded;
};

static void touch4(struct seed *sd, enum metric_id id, const char *l1, const char *l2,
                   const char *l3, const char *l4)
{
    if (sd->bounded)
        metrics_touch_within(sd->m, sd->sh, SEED_SHARD_MAX, id, l1, l2, l3, l4);
    else
        metrics_touch4(sd->m, sd->sh, id, l1, l2, l3, l4);
}

static void touch(struct seed *sd, enum metric_id id, const char *l1, const char *l2,
                  const char *l3)
{
    touch4(sd, id, l1, l2, l3, NULL);
}

/* Every layer x result of outcome family <id> for <subject> (a route, target, workflow). */
static void seed_outcomes(struct seed *sd, enum metric_id id, const char *subject)
{
    for (size_t l = 0; l < BSC_ARRAY_LEN(layers); l++)
        for (size_t r = 0; r < BSC_ARRAY_LEN(results); r++)
            touch(sd, id, subject, layers[l], results[r]);
}

/* A route's shadow candidates: what each mirrored copy counts (router/shadow.c). Outcomes
 * other than ok and skipped are failure kinds, left to traffic as for attempts. */
static void seed_shadow(struct seed *sd, const struct cfg_route *r)
{
    static const char *const outcomes[] = {"ok", "skipped"};
    static const char *const directions[] = {"input", "output"};

    for (size_t i = 0; i < r->shadow.targets.n; i++) {
        const char *t = r->shadow.targets.targets[i]->id;

        for (size_t k = 0; k < BSC_ARRAY_LEN(outcomes); k++)
            touch(sd, METRIC_SHADOW_REQUESTS, r->id, t, outcomes[k]);
        for (int a = 0; a < SHADOW_AGREE_COUNT; a++)
            touch(sd, METRIC_SHADOW_AGREEMENT, r->id, t, shadow_agree_name((enum shadow_agree)a));
        for (size_t k = 0; k < BSC_ARRAY_LEN(directions); k++)
            touch(sd, METRIC_SHADOW_TOKENS, r->id, t, directions[k]);
        touch(sd, METRIC_SHADOW_LATENCY, r->id, t, NULL);
        touch(sd, METRIC_SHADOW_COST, r->id, t, NULL);
    }
}

static void seed_continued_tier(struct seed *sd, const struct cfg_route *r,
                                const struct cfg_tier *tier)
{
    static const char *const hows[] = {"prefill", "replay"};
    static const char *const outcomes[] = {"ok", "diverged", "refused", "failed"};

    for (size_t i = 0; i < tier->n; i++)
        for (size_t h = 0; h < BSC_ARRAY_LEN(hows); h++)
            for (size_t o = 0; o < BSC_ARRAY_LEN(outcomes); o++)
                touch4(sd, METRIC_STREAM_CONTINUATIONS, r->id, tier->targets[i]->id, hows[h],
                       outcomes[o]);
}

/* A route whose broken streams go on (on_stream_failure: continue), per target that may
 * carry the continuation: any of its tiers' (router/resume.c). */
static void seed_continued(struct seed *sd, const struct cfg_route *r)
{
    if (r->envelope.on_stream_failure != CFG_SF_CONTINUE)
        return;
    seed_continued_tier(sd, r, &r->primary);
    seed_continued_tier(sd, r, &r->equivalent);
    seed_continued_tier(sd, r, &r->fallback);
}

/* A route's core series (the first pass). */
static void seed_route_core(struct seed *sd, const struct cfg_route *r)
{
    static const char *const outcomes[] = {"ok", "error", "client_error"};
    static const char *const directions[] = {"input", "output"};

    for (size_t i = 0; i < BSC_ARRAY_LEN(outcomes); i++)
        touch(sd, METRIC_REQUESTS, r->id, outcomes[i], NULL);
    for (size_t i = 0; i < BSC_ARRAY_LEN(directions); i++)
        touch(sd, METRIC_TOKENS, r->id, directions[i], NULL);
    touch(sd, METRIC_OUTCOMES, r->id, "transport", "ok");
    touch(sd, METRIC_OUTCOMES, r->id, "transport", "failed");
    touch(sd, METRIC_RETRIES, r->id, NULL, NULL);
    touch(sd, METRIC_FAILOVERS, r->id, NULL, NULL);
    touch(sd, METRIC_FALLBACKS, r->id, NULL, NULL);
    touch(sd, METRIC_REQUEST_DURATION, r->id, NULL, NULL);
    touch(sd, METRIC_TTFT, r->id, NULL, NULL);
    touch(sd, METRIC_OVERHEAD, r->id, NULL, NULL);
}

/* The rest of a route's series (the second pass). */
static void seed_route_more(struct seed *sd, const struct cfg_route *r)
{
    /* request.c outcome_label(), cost.c cost_token_counts(), guard.c's two transport words */
    static const char *const outcomes[] = {"partial", "client_abort"};
    static const char *const directions[] = {"cached_input", "cache_write", "reasoning"};
    static const char *const uncertain[] = {"partial_output", "side_effect_uncertain"};
    static const char *const cache_results[] = {"hit", "miss", "bypass"};

    for (size_t i = 0; i < BSC_ARRAY_LEN(outcomes); i++)
        touch(sd, METRIC_REQUESTS, r->id, outcomes[i], NULL);
    for (size_t i = 0; i < BSC_ARRAY_LEN(directions); i++)
        touch(sd, METRIC_TOKENS, r->id, directions[i], NULL);
    seed_outcomes(sd, METRIC_OUTCOMES, r->id);
    for (size_t i = 0; i < BSC_ARRAY_LEN(uncertain); i++)
        touch(sd, METRIC_OUTCOMES, r->id, "transport", uncertain[i]);
    touch(sd, METRIC_STREAM_PAUSES, r->id, NULL, NULL);
    if (r->cache.mode != CFG_CACHE_OFF)
        for (size_t i = 0; i < BSC_ARRAY_LEN(cache_results); i++)
            touch(sd, METRIC_CACHE_REQUESTS, r->id, cache_results[i], NULL);
    seed_shadow(sd, r);
    seed_continued(sd, r);
}

/* A target's core series (the first pass). */
static void seed_target_core(struct seed *sd, const struct cfg_target *t)
{
    touch(sd, METRIC_ATTEMPTS, t->id, "ok", NULL);
    touch(sd, METRIC_BREAKER_TRANSITIONS, t->id, brk_state_name(BRK_OPEN), NULL);
    touch(sd, METRIC_UPSTREAM_INFLIGHT, t->id, NULL, NULL);
    touch(sd, METRIC_QUEUE_DEPTH, t->id, NULL, NULL);
    touch(sd, METRIC_ATTEMPT_DURATION, t->id, NULL, NULL);
    touch(sd, METRIC_ATTEMPT_TTFT, t->id, NULL, NULL);
}

/* The rest of a target's series (the second pass). */
static void seed_target_more(struct seed *sd, const struct cfg_target *t)
{
    for (int s = 0; s < BRK_STATE_COUNT; s++)
        touch(sd, METRIC_BREAKER_TRANSITIONS, t->id, brk_state_name((enum brk_state)s), NULL);
    seed_outcomes(sd, METRIC_TARGET_OUTCOMES, t->id);
}

/* A provider's keys cool and are re-verified (router/request.c, health/probe.c); one
 * without keys (an open endpoint, cloud credentials) has none to cool. */
static void seed_provider(struct seed *sd, const struct cfg_provider *p)
{
    if (p->n_keys == 0)
        return;
    for (int r = 0; r < KEY_REASON_COUNT; r++)
        touch(sd, METRIC_KEY_COOLDOWNS, p->id, keys_reason_name((enum key_reason)r), NULL);
    for (int v = 0; v < KEY_VERIFY_COUNT; v++)
        touch(sd, METRIC_KEY_REVERIFICATIONS, p->id, keys_verdict_name((enum key_verdict)v), NULL);
}

/* ---- limit decisions: the limits some config entry sets ---- */

/* Which limits are set anywhere: [subject][kind]. */
struct limits_set {
    bool on[LIM_SUBJ_COUNT][LIM_KIND_COUNT];
};

static void note_caps(struct limits_set *ls, enum lim_subject subj, uint32_t rpm, uint32_t tpm,
                      uint32_t conc)
{
    ls->on[subj][LIM_RPM] |= rpm != 0;
    ls->on[subj][LIM_TPM] |= tpm != 0;
    ls->on[subj][LIM_CONC] |= conc != 0;
}

/* The same caps limits/limits_reg.c gives the sets: non-zero is enforced (a provider's
 * max_concurrency has a default, so it always is). */
static void limits_of(const struct cfg *cfg, struct limits_set *ls)
{
    for (size_t i = 0; i < cfg->n_clients; i++)
        note_caps(ls, LIM_SUBJ_CLIENT, cfg->clients[i].rpm, cfg->clients[i].tpm,
                  cfg->clients[i].max_concurrency);
    for (size_t i = 0; i < cfg->n_teams; i++)
        note_caps(ls, LIM_SUBJ_TEAM, cfg->teams[i].rpm, cfg->teams[i].tpm,
                  cfg->teams[i].max_concurrency);
    for (size_t i = 0; i < cfg->n_targets; i++)
        note_caps(ls, LIM_SUBJ_TARGET, cfg->targets[i].rpm, cfg->targets[i].tpm,
                  cfg->targets[i].max_concurrency);
    for (size_t i = 0; i < cfg->n_providers; i++)
        note_caps(ls, LIM_SUBJ_PROVIDER, cfg->providers[i].rpm, cfg->providers[i].tpm,
                  cfg->providers[i].max_concurrency);
}

/* A client's or team's limit admits or refuses (router/limit.c admit_set); a target's or
 * provider's also moves a request on to another candidate or queues it. */
static void seed_limits(struct seed *sd, const struct cfg *cfg)
{
    static const char *const outcomes[] = {"allowed", "rejected", "moved_on", "queued"};
    struct limits_set ls = {0};

    limits_of(cfg, &ls);
    for (int s = 0; s < LIM_SUBJ_COUNT; s++) {
        size_t n = s == LIM_SUBJ_CLIENT || s == LIM_SUBJ_TEAM ? 2 : BSC_ARRAY_LEN(outcomes);

        for (int k = LIM_RPM; k < LIM_KIND_COUNT; k++)
            for (size_t o = 0; ls.on[s][k] && o < n; o++)
                touch(sd, METRIC_LIMIT_DECISIONS,
                      lim_limit_name((enum lim_subject)s, (enum lim_kind)k), outcomes[o], NULL);
    }
}

/* ---- cost: clients x routes x targets ---- */

/* Whether <client> may call route <r>. */
static bool client_has_route(const struct cfg_client *c, const struct cfg_route *r)
{
    if (c->all_routes)
        return true;
    for (size_t i = 0; i < c->n_routes; i++)
        if (c->routes[i] == r)
            return true;
    return false;
}

/* Cost series seeded at most: clients x routes x targets can be large, and the registry's
 * series bound (METRICS_MAX_SERIES a shard) is for traffic. Past it, they come with use. */
#define SEED_COST_MAX 2000u

static void seed_cost_tier(struct seed *sd, const char *client, const struct cfg_route *r,
                           const struct cfg_tier *t, unsigned *left)
{
    for (size_t i = 0; i < t->n && *left; i++, (*left)--)
        touch(sd, METRIC_COST, client, r->id, t->targets[i]->id);
}

/* bascule_cost_usd_total{client,route,target}: every client with every target of every
 * route it may call (an open gateway's requests count as client METRICS_CLIENT_OPEN). */
static void seed_cost(struct seed *sd, const struct cfg *cfg)
{
    unsigned left = SEED_COST_MAX;

    for (size_t ri = 0; ri < cfg->n_routes; ri++) {
        const struct cfg_route *r = &cfg->routes[ri];

        for (size_t ci = 0; ci < (cfg->n_clients ? cfg->n_clients : 1); ci++) {
            const char *client = cfg->n_clients ? cfg->clients[ci].id : METRICS_CLIENT_OPEN;

            if (cfg->n_clients && !client_has_route(&cfg->clients[ci], r))
                continue;
            seed_cost_tier(sd, client, r, &r->primary, &left);
            seed_cost_tier(sd, client, r, &r->equivalent, &left);
            seed_cost_tier(sd, client, r, &r->fallback, &left);
        }
    }
}

void api__metrics_seed(struct metrics *m, const struct cfg *cfg)
{
    struct seed seed = {m, metrics_shared_shard(m), false}, *sd = &seed;

    touch(sd, METRIC_CONFIG_RELOADS, "ok", NULL, NULL);
    touch(sd, METRIC_CONFIG_RELOADS, "rejected", NULL, NULL);
    for (size_t i = 0; i < cfg->n_routes; i++)
        seed_route_core(sd, &cfg->routes[i]);
    for (size_t i = 0; i < cfg->n_targets; i++)
        seed_target_core(sd, &cfg->targets[i]);
    seed_cost(sd, cfg);
    seed.bounded = true;
    for (int wf = 0; wf < ATTEMPT_WF_COUNT; wf++)
        seed_outcomes(sd, METRIC_WORKFLOW_OUTCOMES,
                      attempt_workflow_name((enum attempt_workflow)wf));
    seed_limits(sd, cfg);
    for (size_t i = 0; i < cfg->n_providers; i++)
        seed_provider(sd, &cfg->providers[i]);
    for (size_t i = 0; i < cfg->n_targets; i++)
        seed_target_more(sd, &cfg->targets[i]);
    for (size_t i = 0; i < cfg->n_routes; i++)
        seed_route_more(sd, &cfg->routes[i]);
}
