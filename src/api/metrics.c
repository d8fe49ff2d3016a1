/* SPDX-License-Identifier: MIT */
/* metrics.c -- GET /metrics: the Prometheus text exposition of the gateway's registry. */
#include "api/internal.h"
#include "core/buf.h"
#include "metrics/metrics.h"
#include "router/gateway.h"

void api__metrics(struct worker *w, struct srv_req *req)
{
    struct bsc_buf b;
    size_t conns = srv_conn_count(w->srv);

    metrics_gauge_set(w->gw->metrics, w->idx, METRIC_CONNECTIONS, NULL, NULL, (double)conns);
    bsc_buf_init(&b, 32u << 20);
    if (metrics_render(w->gw->metrics, &b) != BSC_OK) {
        srv_resp_error(req, 503, "server_error", "metrics_unavailable",
                       "the metrics could not be rendered");
    } else {
        srv_resp_send(req, 200, METRICS_CONTENT_TYPE, NULL, 0, b.p, b.len);
    }
    bsc_buf_cleanup(&b);
}
