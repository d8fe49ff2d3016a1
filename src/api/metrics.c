/* SPDX-License-Identifier: MIT */
/* metrics.c -- GET /metrics: the Prometheus text exposition of the gateway's registry, then
 * the process_* families. */
#include <string.h>

#include "api/health.h"
#include "api/metrics.h"
#include "api/metrics_seed.h"
#include "core/buf.h"
#include "core/build_info.h"
#include "core/clock.h"
#include "health/hstate.h"
#include "metrics/metrics.h"
#include "router/gateway.h"
#include "router/spend.h"
#include "store/store.h"
#include "upstream/upstream.h"

static const char *const breaker_states[] = {"closed", "open", "half_open", "ramping"};

/* The one state of <v> among breaker_states. */
static const char *breaker_state_of(const struct target_view *v)
{
    return v->state == BRK_OPEN ? "open" : v->state == BRK_HALF_OPEN ? "half_open"
           : v->ramping ? "ramping" : "closed";
}

/* Breaker states are read from the routing state at scrape time: a shared circuit moves
 * for every target that uses it, and an untouched one still shows as closed. Every state
 * has its series, 1 for the current one, so a panel or alert selects a state by label. */
static void breaker_gauges(struct worker *w, const struct cfg *cfg)
{
    struct metrics *m = w->gw->metrics;
    unsigned sh = metrics_shared_shard(m);
    uint64_t now = bsc_now_ms();

    for (size_t i = 0; i < cfg->n_targets; i++) {
        const char *id = cfg->targets[i].id, *cur;
        struct target_view v;

        hstate_view(w->gw->hs, &cfg->targets[i], now, &v);
        cur = breaker_state_of(&v);
        for (size_t s = 0; s < BSC_ARRAY_LEN(breaker_states); s++)
            metrics_gauge_set(m, sh, METRIC_BREAKER_STATE, id, breaker_states[s],
                              strcmp(cur, breaker_states[s]) == 0);
        metrics_gauge_set(m, sh, METRIC_TARGET_EFFECTIVE_CONCURRENCY, id, NULL,
                          v.eff.concurrency);
        metrics_gauge_set(m, sh, METRIC_TARGET_EFFECTIVE_RPM, id, NULL, v.eff.rpm);
    }
}

/* Per route, the targets that could serve now (every tier: whether a tier may be used is
 * the envelope's call, per request). 0 is the "all targets of a route ineligible" alert. */
static void route_gauges(struct worker *w, const struct cfg *cfg)
{
    struct metrics *m = w->gw->metrics;
    uint64_t now = bsc_now_ms();

    for (size_t i = 0; i < cfg->n_routes; i++) {
        const struct cfg_route *r = &cfg->routes[i];
        size_t n = api__tier_eligible(w->gw->hs, &r->primary, now) +
                   api__tier_eligible(w->gw->hs, &r->equivalent, now) +
                   api__tier_eligible(w->gw->hs, &r->fallback, now);

        metrics_gauge_set(m, metrics_shared_shard(m), METRIC_ROUTE_ELIGIBLE_TARGETS, r->id, NULL,
                          (double)n);
    }
}

/* Each client's budget and its spend this period as the book holds it (what admission
 * checks); a client whose period is not loaded yet shows 0 spent. */
static void client_gauges(struct worker *w, const struct cfg *cfg)
{
    struct metrics *m = w->gw->metrics;
    unsigned sh = metrics_shared_shard(m);
    uint64_t now = bsc_wall_ms();

    for (size_t i = 0; i < cfg->n_clients; i++) {
        const struct cfg_client *c = &cfg->clients[i];
        struct spend_view v;

        if (c->budget.usd < 0)
            continue;
        spend_peek(w->gw->spend, c->id, c->budget.period, now, &v);
        metrics_gauge_set(m, sh, METRIC_CLIENT_BUDGET, c->id, NULL, c->budget.usd);
        metrics_gauge_set(m, sh, METRIC_CLIENT_SPEND, c->id, NULL, v.known ? v.usd : 0);
    }
}

/* The gauges read at scrape time, and the series the config knows. */
static void scrape_gauges(struct worker *w)
{
    struct metrics *m = w->gw->metrics;
    unsigned sh = metrics_shared_shard(m);
    struct cfg *cfg = cfg_current_get();

    metrics_gauge_set(m, w->idx, METRIC_CONNECTIONS, NULL, NULL, (double)srv_conn_count(w->srv));
    metrics_gauge_set(m, sh, METRIC_BUILD_INFO, bsc_build_version, bsc_build_revision, 1);
    metrics_gauge_set(m, sh, METRIC_UPSTREAM_IDLE_CONNECTIONS, NULL, NULL,
                      (double)up_idle_connections());
    metrics_gauge_set(m, sh, METRIC_STORE_UP, NULL, NULL, store_is_up(w->gw->store, NULL) ? 1 : 0);
    if (cfg) {
        breaker_gauges(w, cfg);
        route_gauges(w, cfg);
        client_gauges(w, cfg);
        api__metrics_seed(m, cfg);
    }
    cfg_unref(cfg);
}

void api__metrics(struct worker *w, struct srv_req *req)
{
    struct bsc_buf b;

    scrape_gauges(w);
    bsc_buf_init(&b, 32u << 20);
    if (metrics_render(w->gw->metrics, &b) != BSC_OK ||
        metrics_render_process(&b, (double)w->gw->started_ms / 1e3) != BSC_OK) {
        srv_resp_error(req, 503, "server_error", "metrics_unavailable",
                       "the metrics could not be rendered");
    } else {
        srv_resp_send(req, 200, METRICS_CONTENT_TYPE, NULL, 0, b.p, b.len);
    }
    bsc_buf_cleanup(&b);
}
