/* SPDX-License-Identifier: MIT */
/* health.h -- the liveness and readiness probes (health.c). */
#ifndef BSC_API_HEALTH_H
#define BSC_API_HEALTH_H

#include <stddef.h>
#include <stdint.h>

struct worker;
struct srv_req;
struct hstate;
struct cfg_tier;

void api__health_live(struct worker *w, struct srv_req *req);
void api__health_ready(struct worker *w, struct srv_req *req);
/* How many targets of <t> could take a request at <now>. */
size_t api__tier_eligible(struct hstate *hs, const struct cfg_tier *t, uint64_t now);

#endif
