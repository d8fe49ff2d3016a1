/* SPDX-License-Identifier: MIT */
/* metrics_seed.c -- the series the running config knows, made present at zero before their
 * first event (a dashboard or an alert on rate() needs the series to exist; an absent one
 * reads as "no data", not 0). Touched at every scrape, so a reload's new routes, targets,
 * providers and clients show from the next scrape on. Values that only traffic can name
 * (failure kinds, key-cooldown reasons) appear with it. */
#include "api/internal.h"
#include "metrics/metrics.h"
#include "router/gateway.h"

static void seed_route(struct metrics *m, unsigned sh, const struct cfg_route *r)
{
    static const char *const outcomes[] = {"ok", "error", "client_error"};
    static const char *const directions[] = {"input", "output"};

    for (size_t i = 0; i < BSC_ARRAY_LEN(outcomes); i++)
        metrics_touch(m, sh, METRIC_REQUESTS, r->id, outcomes[i], NULL);
    for (size_t i = 0; i < BSC_ARRAY_LEN(directions); i++)
        metrics_touch(m, sh, METRIC_TOKENS, r->id, directions[i], NULL);
    metrics_touch(m, sh, METRIC_OUTCOMES, r->id, "transport", "ok");
    metrics_touch(m, sh, METRIC_OUTCOMES, r->id, "transport", "failed");
    metrics_touch(m, sh, METRIC_RETRIES, r->id, NULL, NULL);
    metrics_touch(m, sh, METRIC_FAILOVERS, r->id, NULL, NULL);
    metrics_touch(m, sh, METRIC_FALLBACKS, r->id, NULL, NULL);
    metrics_touch(m, sh, METRIC_REQUEST_DURATION, r->id, NULL, NULL);
    metrics_touch(m, sh, METRIC_TTFT, r->id, NULL, NULL);
    metrics_touch(m, sh, METRIC_OVERHEAD, r->id, NULL, NULL);
}

static void seed_target(struct metrics *m, unsigned sh, const struct cfg_target *t)
{
    metrics_touch(m, sh, METRIC_ATTEMPTS, t->id, "ok", NULL);
    metrics_touch(m, sh, METRIC_BREAKER_TRANSITIONS, t->id, "open", NULL);
    metrics_touch(m, sh, METRIC_UPSTREAM_INFLIGHT, t->id, NULL, NULL);
    metrics_touch(m, sh, METRIC_QUEUE_DEPTH, t->id, NULL, NULL);
    metrics_touch(m, sh, METRIC_ATTEMPT_DURATION, t->id, NULL, NULL);
    metrics_touch(m, sh, METRIC_ATTEMPT_TTFT, t->id, NULL, NULL);
}

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

static void seed_cost_tier(struct metrics *m, unsigned sh, const char *client,
                           const struct cfg_route *r, const struct cfg_tier *t, unsigned *left)
{
    for (size_t i = 0; i < t->n && *left; i++, (*left)--)
        metrics_touch(m, sh, METRIC_COST, client, r->id, t->targets[i]->id);
}

/* bascule_cost_usd_total{client,route,target}: every client with every target of every
 * route it may call (an open gateway's requests count as client METRICS_CLIENT_OPEN). */
static void seed_cost(struct metrics *m, unsigned sh, const struct cfg *cfg)
{
    unsigned left = SEED_COST_MAX;

    for (size_t ri = 0; ri < cfg->n_routes; ri++) {
        const struct cfg_route *r = &cfg->routes[ri];

        for (size_t ci = 0; ci < (cfg->n_clients ? cfg->n_clients : 1); ci++) {
            const char *client = cfg->n_clients ? cfg->clients[ci].id : METRICS_CLIENT_OPEN;

            if (cfg->n_clients && !client_has_route(&cfg->clients[ci], r))
                continue;
            seed_cost_tier(m, sh, client, r, &r->primary, &left);
            seed_cost_tier(m, sh, client, r, &r->equivalent, &left);
            seed_cost_tier(m, sh, client, r, &r->fallback, &left);
        }
    }
}

void api__metrics_seed(struct metrics *m, const struct cfg *cfg)
{
    unsigned sh = metrics_shared_shard(m);

    metrics_touch(m, sh, METRIC_CONFIG_RELOADS, "ok", NULL, NULL);
    metrics_touch(m, sh, METRIC_CONFIG_RELOADS, "rejected", NULL, NULL);
    for (size_t i = 0; i < cfg->n_routes; i++)
        seed_route(m, sh, &cfg->routes[i]);
    for (size_t i = 0; i < cfg->n_targets; i++)
        seed_target(m, sh, &cfg->targets[i]);
    seed_cost(m, sh, cfg);
}
