/* SPDX-License-Identifier: MIT */
/* models.c -- GET /v1/models lists the route aliases (what clients send as "model");
 * GET /v1/models/{id} one of them, 404 when unknown. A client that sends anthropic-version
 * (the Anthropic SDK always does) gets Anthropic's shapes. A client key sees only the routes
 * it may call (auth.c). */
#include <time.h>

#include "api/auth.h"
#include "api/models.h"
#include "core/buf.h"
#include "router/gateway.h"

static void put_model(struct bsc_buf *b, const char *id, uint64_t created)
{
    bsc_buf_append_cstr(b, "{\"id\":");
    bsc_buf_append_json_str(b, bsc_str_cstr(id));
    bsc_buf_appendf(b, ",\"object\":\"model\",\"created\":%llu,\"owned_by\":\"bascule\"}",
                    (unsigned long long)created);
}

/* Anthropic's model object; created_at is RFC 3339 (the gateway's start). */
static void put_anth_model(struct bsc_buf *b, const char *id, uint64_t created)
{
    time_t t = (time_t)created;
    struct tm tm;
    char when[32];

    gmtime_r(&t, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    bsc_buf_append_cstr(b, "{\"type\":\"model\",\"id\":");
    bsc_buf_append_json_str(b, bsc_str_cstr(id));
    bsc_buf_append_cstr(b, ",\"display_name\":");
    bsc_buf_append_json_str(b, bsc_str_cstr(id));
    bsc_buf_appendf(b, ",\"created_at\":\"%s\"}", when);
}

/* Anthropic's list; only the routes <req>'s client may call. */
static void anth_list(struct bsc_buf *b, struct srv_req *req, const struct cfg *cfg,
                      uint64_t created)
{
    const char *first = NULL, *last = NULL;

    bsc_buf_append_cstr(b, "{\"data\":[");
    for (size_t i = 0; i < cfg->n_routes; i++) {
        if (!api__route_allowed(req, cfg, &cfg->routes[i]))
            continue;
        if (first)
            bsc_buf_append_char(b, ',');
        put_anth_model(b, cfg->routes[i].id, created);
        first = first ? first : cfg->routes[i].id;
        last = cfg->routes[i].id;
    }
    bsc_buf_append_cstr(b, "],\"has_more\":false,\"first_id\":");
    if (first) {
        bsc_buf_append_json_str(b, bsc_str_cstr(first));
        bsc_buf_append_cstr(b, ",\"last_id\":");
        bsc_buf_append_json_str(b, bsc_str_cstr(last));
        bsc_buf_append_char(b, '}');
    } else {
        bsc_buf_append_cstr(b, "null,\"last_id\":null}");
    }
}

static void openai_list(struct bsc_buf *b, struct srv_req *req, const struct cfg *cfg,
                        uint64_t created)
{
    bool any = false;

    bsc_buf_append_cstr(b, "{\"object\":\"list\",\"data\":[");
    for (size_t i = 0; i < cfg->n_routes; i++) {
        if (!api__route_allowed(req, cfg, &cfg->routes[i]))
            continue;
        if (any)
            bsc_buf_append_char(b, ',');
        put_model(b, cfg->routes[i].id, created);
        any = true;
    }
    bsc_buf_append_cstr(b, "]}");
}

void api__models(struct worker *w, struct srv_req *req, struct bsc_str id)
{
    bool anth = srv_req_header(req, BSC_STR("anthropic-version")).p != NULL;
    struct cfg *cfg = cfg_current_get();
    uint64_t created = w->gw->started_ms / 1000;
    struct bsc_buf b;

    bsc_buf_init(&b, 1u << 20);
    if (id.p) {
        const struct cfg_route *r = api__route_find(req, cfg, id);
        if (!r) {
            char msg[200];
            snprintf(msg, sizeof(msg), "The model '%.*s' does not exist",
                     (int)(id.len > 120 ? 120 : id.len), id.p);
            srv_resp_error(req, 404, "invalid_request_error", "model_not_found", msg);
            goto out;
        }
        if (anth)
            put_anth_model(&b, r->id, created);
        else
            put_model(&b, r->id, created);
    } else if (anth) {
        anth_list(&b, req, cfg, created);
    } else {
        openai_list(&b, req, cfg, created);
    }
    srv_resp_send(req, 200, "application/json", NULL, 0, b.p, b.len);
out:
    bsc_buf_cleanup(&b);
    cfg_unref(cfg);
}
