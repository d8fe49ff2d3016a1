/* SPDX-License-Identifier: MIT */
/* health.c -- GET /health/live (the process answers) and GET /health/ready (a config
 * is loaded and at least one route has an eligible target: enabled, circuit not open). */
#include "api/health.h"
#include "core/clock.h"
#include "health/hstate.h"
#include "router/gateway.h"
#include "store/store.h"

static const char live_body[] = "{\"status\":\"ok\"}";

void api__health_live(struct worker *w, struct srv_req *req)
{
    (void)w;
    srv_resp_send(req, 200, "application/json", NULL, 0, live_body, sizeof(live_body) - 1);
}

/* A target of a tier can serve when it is enabled, not switched off at run time, and its
 * circuit is not open; the whole tier has none when its kill switch is on. */
size_t api__tier_eligible(struct hstate *hs, const struct cfg_tier *t, uint64_t now)
{
    size_t n = 0;

    if (t->disabled)
        return 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct cfg_target *tg = t->targets[i];
        struct target_view v;
        if (tg->disabled || tg->provider->disabled)
            continue;
        hstate_view(hs, tg, now, &v);
        if (!v.admin_disabled && v.state != BRK_OPEN)
            n++;
    }
    return n;
}

/* Ready, and when a shared store is unreachable, why: the gateway still serves, on local
 * state (store.on_unavailable), so a load balancer must not take it out. */
static void send_ready(struct srv_req *req, const struct store *st)
{
    static const char ready[] = "{\"status\":\"ready\"}";
    const char *why = NULL;
    char body[256];
    int n;

    if (store_is_up(st, &why)) {
        srv_resp_send(req, 200, "application/json", NULL, 0, ready, sizeof(ready) - 1);
        return;
    }
    n = snprintf(body, sizeof(body), "{\"status\":\"ready\",\"store\":\"unavailable\","
                 "\"reason\":\"%s\"}", why ? why : "store unavailable");
    srv_resp_send(req, 200, "application/json", NULL, 0, body, (size_t)n);
}

void api__health_ready(struct worker *w, struct srv_req *req)
{
    static const char not_ready[] = "{\"status\":\"unavailable\",\"reason\":\"no_eligible_target\"}";
    struct cfg *cfg = cfg_current_get();
    bool ok = false;

    uint64_t now = bsc_now_ms();

    for (size_t i = 0; cfg && i < cfg->n_routes && !ok; i++) {
        const struct cfg_route *r = &cfg->routes[i];
        ok = api__tier_eligible(w->gw->hs, &r->primary, now) ||
             api__tier_eligible(w->gw->hs, &r->equivalent, now) ||
             api__tier_eligible(w->gw->hs, &r->fallback, now);
    }
    cfg_unref(cfg);
    if (ok)
        send_ready(req, w->gw->store);
    else
        srv_resp_send(req, 503, "application/json", NULL, 0, not_ready, sizeof(not_ready) - 1);
}
