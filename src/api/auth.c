/* SPDX-License-Identifier: MIT */
/* auth.c -- who is calling. With `clients:` configured every API surface needs a client key
 * (Authorization: Bearer <key> or x-api-key), else 401 in the surface's dialect; the client's
 * id is kept on the request (srv_req_set_principal) for route allow-lists, store scopes and
 * the access log. Operator surfaces (/status, /metrics, /admin/...) answer on the admin
 * listener when admin.listen is set (404 on the API port), else behind the admin key (and
 * metrics.key). No client key opens an operator surface: that is 403. See
 * docs/internals/auth.md. */
#include <string.h>

#include "api/anthropic_down.h"
#include "api/auth.h"
#include "config/config.h"
#include "core/buf.h"
#include "server/server.h"

enum surface { SURF_API = 0, SURF_STATUS, SURF_METRICS, SURF_ADMIN, SURF_CONSOLE, SURF_OPEN };

static bool is(struct bsc_str s, const char *lit)
{
    return bsc_str_eq(s, bsc_str_cstr(lit));
}

static enum surface surface_of(struct bsc_str path)
{
    if (is(path, "/status") || is(path, "/status.json"))
        return SURF_STATUS;
    if (is(path, "/metrics"))
        return SURF_METRICS;
    if (is(path, "/console")) /* a static page: its data comes from /admin/ with a key */
        return SURF_CONSOLE;
    if (bsc_str_starts(path, BSC_STR("/admin/")))
        return SURF_ADMIN;
    if (bsc_str_starts(path, BSC_STR("/v1/")) || is(path, "/chat/completions") ||
        is(path, "/responses") || is(path, "/embeddings") || is(path, "/models"))
        return SURF_API;
    return SURF_OPEN; /* health probes, unknown paths (404 from the dispatcher) */
}

/* The key the caller presented: a bearer token, else x-api-key; {NULL,0} when none. */
static struct bsc_str presented_key(struct srv_req *req)
{
    struct bsc_str auth = srv_req_header(req, BSC_STR("authorization"));

    if (auth.len > 7 && strncasecmp(auth.p, "Bearer ", 7) == 0)
        return bsc_str_trim(bsc_str_make(auth.p + 7, auth.len - 7));
    return bsc_str_trim(srv_req_header(req, BSC_STR("x-api-key")));
}

bool api__key_equal(struct bsc_str given, const char *want)
{
    return bsc_str_secret_eq(given, want);
}

static bool anthropic_path(struct bsc_str path)
{
    return bsc_str_starts(path, BSC_STR("/v1/messages"));
}

static void unauthorized(struct srv_req *req, bool given)
{
    const char *msg = given ? "Incorrect API key provided. Use a client key of this gateway."
                            : "You didn't provide an API key. Send it as 'Authorization: "
                              "Bearer <key>' or 'x-api-key: <key>'.";
    struct reply_error e = {.status = 401, .message = msg, .retry_after_ms = -1};
    struct srv_header h = {BSC_STR("x-should-retry"), BSC_STR("false")};
    struct bsc_buf b;

    if (!anthropic_path(srv_req_path(req))) {
        srv_resp_error(req, 401, "invalid_request_error", "invalid_api_key", msg);
        return;
    }
    bsc_buf_init(&b, 4096);
    if (api_anthropic_down.error_body(&e, srv_req_id(req), &b) == BSC_OK)
        srv_resp_send(req, 401, "application/json", &h, 1, b.p, b.len);
    else
        srv_resp_error(req, 401, "authentication_error", "invalid_api_key", msg);
    bsc_buf_cleanup(&b);
}

/* An API surface with clients configured: the caller must be one of them. */
static bool client_gate(struct srv_req *req, const struct cfg *cfg, const char **why)
{
    struct bsc_str key = presented_key(req);
    const struct cfg_client *c = cfg_client_by_key(cfg, key);

    if (!c) {
        *why = key.len ? "client key unknown" : "client key missing";
        unauthorized(req, key.len > 0);
        return false;
    }
    srv_req_set_principal(req, bsc_str_cstr(c->id));
    return true;
}

/* An operator surface: <want> (the admin or metrics key) or the admin key opens it; a client
 * key is recognised and refused (403), anything else is 401. */
static bool operator_gate(struct srv_req *req, const struct cfg *cfg, const char *want,
                          const char **why)
{
    struct bsc_str key = presented_key(req);

    struct bsc_str xadmin = bsc_str_trim(srv_req_header(req, BSC_STR("x-admin-key")));

    if (key.len && (api__key_equal(key, want) ||
                    cfg_admin_role_of(cfg, key, NULL) != CFG_ADMIN_ROLE_NONE))
        return true;
    if (xadmin.len && cfg_admin_role_of(cfg, xadmin, NULL) != CFG_ADMIN_ROLE_NONE)
        return true; /* as the admin API takes it; a read key sees the status page too */
    if (key.len && cfg_client_by_key(cfg, key)) {
        *why = "client key on an operator surface";
        srv_resp_error(req, 403, "permission_error", "operator_only",
                       "a client key cannot use this endpoint");
        return false;
    }
    *why = key.len ? "operator key wrong" : "operator key missing";
    srv_resp_error(req, 401, "authentication_error", "invalid_api_key",
                   "this endpoint needs the operator's key (Authorization: Bearer <key>)");
    return false;
}

static bool not_here(struct srv_req *req, const char **why)
{
    struct bsc_str path = srv_req_path(req);
    char msg[300];

    *why = "not served on this listener";
    snprintf(msg, sizeof(msg), "no such endpoint: %.*s %.*s", BSC_STR_FMT(srv_req_method(req)),
             (int)(path.len > 200 ? 200 : path.len), path.p);
    srv_resp_error(req, 404, "invalid_request_error", "unknown_url", msg);
    return false;
}

/* The admin listener: operator surfaces and health only. /status is open there: reaching
 * that socket is the credential; metrics.key and the admin API's key still apply. */
static bool admin_port(struct srv_req *req, const struct cfg *cfg, enum surface s,
                       const char **why)
{
    if (s == SURF_API)
        return not_here(req, why);
    if (s == SURF_METRICS && cfg->metrics_key[0])
        return operator_gate(req, cfg, cfg->metrics_key, why);
    return true;
}

/* A browser opening /status with no credential gets the page, which holds no data: it asks
 * for the admin key itself when /status.json answers 401 (a browser cannot send a bearer
 * token by itself, so a 401 here would leave it no way in). Any other caller, or one that
 * presents a credential, goes through the gate as before. */
static bool status_page_for_browser(struct srv_req *req)
{
    struct bsc_str accept = srv_req_header(req, BSC_STR("accept"));

    return is(srv_req_path(req), "/status") && presented_key(req).len == 0 &&
           srv_req_header(req, BSC_STR("x-admin-key")).len == 0 &&
           accept.len >= 9 && memmem(accept.p, accept.len, "text/html", 9) != NULL;
}

bool api__auth(struct srv_req *req, const struct cfg *cfg, bool on_admin_port, const char **why)
{
    enum surface s = surface_of(srv_req_path(req));
    bool separate = cfg->admin_listen_host != NULL;

    if (on_admin_port)
        return admin_port(req, cfg, s, why);
    if (separate && (s == SURF_STATUS || s == SURF_METRICS || s == SURF_ADMIN || s == SURF_CONSOLE))
        return not_here(req, why);
    switch (s) {
    case SURF_API: return cfg_open(cfg) || client_gate(req, cfg, why);
    case SURF_STATUS:
        return cfg_open(cfg) || status_page_for_browser(req) ||
               operator_gate(req, cfg, cfg->admin_key, why);
    case SURF_METRICS:
        return !cfg->metrics_key[0] || operator_gate(req, cfg, cfg->metrics_key, why);
    case SURF_ADMIN: /* admin.c checks the admin key itself (401, or 404 when it is off) */
        if (cfg->n_clients && cfg_client_by_key(cfg, presented_key(req)))
            return operator_gate(req, cfg, cfg->admin_key, why);
        return true;
    default: return true;
    }
}

const struct cfg_route *api__route_find(struct srv_req *req, const struct cfg *cfg,
                                        struct bsc_str name)
{
    const struct cfg_route *r = cfg_route_find(cfg, name);

    if (!r || cfg_open(cfg))
        return r;
    /* Outside the caller's allow-list the route answers as if it did not exist. */
    return api__route_allowed(req, cfg, r) ? r : NULL;
}

bool api__route_allowed(struct srv_req *req, const struct cfg *cfg, const struct cfg_route *r)
{
    if (cfg_open(cfg))
        return true;
    return cfg_client_allows(cfg_client_find(cfg, bsc_str_cstr(srv_req_principal(req))), r);
}
