/* SPDX-License-Identifier: MIT */
/* models.c -- GET /v1/models lists the route aliases (what clients send as "model");
 * GET /v1/models/{id} one of them, 404 when unknown. */
#include "api/internal.h"
#include "core/buf.h"
#include "router/gateway.h"

static void put_model(struct bsc_buf *b, const char *id, uint64_t created)
{
    bsc_buf_append_cstr(b, "{\"id\":");
    bsc_buf_append_json_str(b, bsc_str_cstr(id));
    bsc_buf_appendf(b, ",\"object\":\"model\",\"created\":%llu,\"owned_by\":\"bascule\"}",
                    (unsigned long long)created);
}

void api__models(struct worker *w, struct srv_req *req, struct bsc_str id)
{
    struct cfg *cfg = cfg_current_get();
    uint64_t created = w->gw->started_ms / 1000;
    struct bsc_buf b;

    bsc_buf_init(&b, 1u << 20);
    if (id.p) {
        const struct cfg_route *r = cfg_route_find(cfg, id);
        if (!r) {
            char msg[200];
            snprintf(msg, sizeof(msg), "The model '%.*s' does not exist",
                     (int)(id.len > 120 ? 120 : id.len), id.p);
            srv_resp_error(req, 404, "invalid_request_error", "model_not_found", msg);
            goto out;
        }
        put_model(&b, r->id, created);
    } else {
        bsc_buf_append_cstr(&b, "{\"object\":\"list\",\"data\":[");
        for (size_t i = 0; i < cfg->n_routes; i++) {
            if (i)
                bsc_buf_append_char(&b, ',');
            put_model(&b, cfg->routes[i].id, created);
        }
        bsc_buf_append_cstr(&b, "]}");
    }
    srv_resp_send(req, 200, "application/json", NULL, 0, b.p, b.len);
out:
    bsc_buf_cleanup(&b);
    cfg_unref(cfg);
}
