/* SPDX-License-Identifier: MIT */
/* metrics.h -- GET /metrics, the Prometheus text (metrics.c). */
#ifndef BSC_API_METRICS_H
#define BSC_API_METRICS_H

struct worker;
struct srv_req;

void api__metrics(struct worker *w, struct srv_req *req);

#endif
