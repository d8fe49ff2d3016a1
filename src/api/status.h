/* SPDX-License-Identifier: MIT */
/* status.h -- GET /status and /status.json (status.c). */
#ifndef BSC_API_STATUS_H
#define BSC_API_STATUS_H

struct worker;
struct srv_req;

void api__status_page(struct worker *w, struct srv_req *req);
void api__status_json(struct worker *w, struct srv_req *req);

#endif
