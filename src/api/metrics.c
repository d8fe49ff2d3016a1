/* SPDX-License-Identifier: MIT */
/* metrics.c -- GET /metrics: the Prometheus text exposition of the gateway's registry. */
#include "api/internal.h"
#include "core/buf.h"
#include "core/clock.h"
#include "health/hstate.h"
#include "metrics/metrics.h"
#include "router/gateway.h"
#include "store/store.h"
#include "upstream/upstream.h"

/* Breaker states are read from the routing state at scrape time: a shared circuit moves
 * for every target that uses it, and an untouched one still shows as closed (0). */
static void breaker_gauges(struct worker *w)
{
    struct cfg *cfg = cfg_current_get();
    struct metrics *m = w->gw->metrics;
    uint64_t now = bsc_now_ms();

    for (size_t i = 0; cfg && i < cfg->n_targets; i++) {
        struct target_view v;
        double value;

        hstate_view(w->gw->hs, &cfg->targets[i], now, &v);
        value = v.state == BRK_OPEN ? 1 : v.state == BRK_HALF_OPEN ? 2 : v.ramping ? 3 : 0;
        metrics_gauge_set(m, metrics_shared_shard(m), METRIC_BREAKER_STATE, cfg->targets[i].id,
                          NULL, value);
        metrics_gauge_set(m, metrics_shared_shard(m), METRIC_TARGET_EFFECTIVE_CONCURRENCY,
                          cfg->targets[i].id, NULL, v.eff.concurrency);
        metrics_gauge_set(m, metrics_shared_shard(m), METRIC_TARGET_EFFECTIVE_RPM,
                          cfg->targets[i].id, NULL, v.eff.rpm);
    }
    cfg_unref(cfg);
}

void api__metrics(struct worker *w, struct srv_req *req)
{
    struct bsc_buf b;
    size_t conns = srv_conn_count(w->srv);

    metrics_gauge_set(w->gw->metrics, w->idx, METRIC_CONNECTIONS, NULL, NULL, (double)conns);
    breaker_gauges(w);
    metrics_gauge_set(w->gw->metrics, metrics_shared_shard(w->gw->metrics),
                      METRIC_UPSTREAM_IDLE_CONNECTIONS, NULL, NULL, (double)up_idle_connections());
    metrics_gauge_set(w->gw->metrics, metrics_shared_shard(w->gw->metrics), METRIC_STORE_UP,
                      NULL, NULL, store_is_up(w->gw->store, NULL) ? 1 : 0);
    bsc_buf_init(&b, 32u << 20);
    if (metrics_render(w->gw->metrics, &b) != BSC_OK) {
        srv_resp_error(req, 503, "server_error", "metrics_unavailable",
                       "the metrics could not be rendered");
    } else {
        srv_resp_send(req, 200, METRICS_CONTENT_TYPE, NULL, 0, b.p, b.len);
    }
    bsc_buf_cleanup(&b);
}
