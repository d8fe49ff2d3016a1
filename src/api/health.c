/* SPDX-License-Identifier: MIT */
/* health.c -- GET /health/live (the process answers) and GET /health/ready (a config
 * is loaded and at least one route has an enabled target). */
#include "api/internal.h"

static const char live_body[] = "{\"status\":\"ok\"}";

void api__health_live(struct worker *w, struct srv_req *req)
{
    (void)w;
    srv_resp_send(req, 200, "application/json", NULL, 0, live_body, sizeof(live_body) - 1);
}

static bool tier_has_enabled(const struct cfg_tier *t)
{
    if (t->disabled)
        return false;
    for (size_t i = 0; i < t->n; i++)
        if (!t->targets[i]->disabled && !t->targets[i]->provider->disabled)
            return true;
    return false;
}

void api__health_ready(struct worker *w, struct srv_req *req)
{
    static const char ready[] = "{\"status\":\"ready\"}";
    static const char not_ready[] = "{\"status\":\"unavailable\",\"reason\":\"no_eligible_target\"}";
    struct cfg *cfg = cfg_current_get();
    bool ok = false;

    (void)w;
    for (size_t i = 0; cfg && i < cfg->n_routes && !ok; i++) {
        const struct cfg_route *r = &cfg->routes[i];
        ok = tier_has_enabled(&r->primary) || tier_has_enabled(&r->equivalent) ||
             tier_has_enabled(&r->fallback);
    }
    cfg_unref(cfg);
    if (ok)
        srv_resp_send(req, 200, "application/json", NULL, 0, ready, sizeof(ready) - 1);
    else
        srv_resp_send(req, 503, "application/json", NULL, 0, not_ready, sizeof(not_ready) - 1);
}
