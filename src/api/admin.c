/* SPDX-License-Identifier: MIT */
/* admin.c -- the admin API, guarded by admin.key (off when the key is empty):
 *   GET  /admin/targets                      every target's circuit, health, latency, load
 *   POST /admin/targets/{id}/disable|enable  the run-time kill switch of one target
 *   /admin/clients...                        clients and their spend (admin_clients.c)
 *   /admin/keys..., /admin/audit             run-time keys, the audit trail (admin_keys.c)
 * Roles (admin.key, admin.keys): a read key may GET, never change (403).
 *   GET  /admin/cache                        the response cache's entries, bytes, bound
 *   DELETE /admin/cache[?route=<id>]         drops a route's cached answers (every route's
 *                                            without the parameter; in Redis a new
 *                                            generation: admin_cache_shared.c)
 * The kill switch lives in the shared routing state, so it survives config reloads. */
#include <string.h>

#include "api/access.h"
#include "api/admin.h"
#include "api/admin_cache_shared.h"
#include "api/admin_clients.h"
#include "api/admin_keys.h"
#include "api/admin_teams.h"
#include "api/targets_json.h"
#include "cache/lru.h"
#include "cache/semantic.h"
#include "core/buf.h"
#include "core/clock.h"
#include "health/hstate.h"
#include "router/gateway.h"
#include "router/keyring.h"
#include "store/store.h"

/* The role of the operator key presented (Authorization: Bearer, else x-admin-key), and in
 * *<id> its id for the audit trail. */
static enum cfg_admin_role role_of(struct srv_req *req, const struct cfg *cfg, const char **id)
{
    struct bsc_str auth = srv_req_header(req, BSC_STR("authorization"));
    struct bsc_str key = srv_req_header(req, BSC_STR("x-admin-key"));

    if (auth.len > 7 && strncasecmp(auth.p, "Bearer ", 7) == 0)
        key = bsc_str_trim(bsc_str_make(auth.p + 7, auth.len - 7));
    return key.p ? cfg_admin_role_of(cfg, key, id) : CFG_ADMIN_ROLE_NONE;
}

static bool is_read(struct bsc_str method)
{
    return bsc_str_eq(method, BSC_STR("GET")) || bsc_str_eq(method, BSC_STR("HEAD"));
}

static void list_targets(struct worker *w, struct srv_req *req, const struct cfg *cfg)
{
    struct bsc_buf b;
    uint64_t now = bsc_now_ms();

    bsc_buf_init(&b, 8u << 20);
    bsc_buf_append_cstr(&b, "{\"targets\":[");
    for (size_t i = 0; i < cfg->n_targets; i++) {
        if (i)
            bsc_buf_append_char(&b, ',');
        api__put_target(&b, w, &cfg->targets[i], now);
    }
    bsc_buf_append_cstr(&b, "]}");
    srv_resp_send(req, 200, "application/json", NULL, 0, b.p, b.len);
    bsc_buf_cleanup(&b);
}

static void switch_target(struct worker *w, struct srv_req *req, const struct cfg *cfg,
                          struct bsc_str id, bool disable, const char *admin)
{
    const struct cfg_target *t = cfg_target_find(cfg, id);
    struct bsc_buf b;

    if (!t || hstate_set_disabled(w->gw->hs, t, disable) != BSC_OK) {
        api__line_detail(req, "%s target %.*s: not found", disable ? "disable" : "enable",
                         (int)(id.len > 128 ? 128 : id.len), id.p);
        srv_resp_error(req, 404, "invalid_request_error", "target_not_found",
                       "no such target in the running config");
        return;
    }
    api__line_detail(req, "%s target %s", disable ? "disable" : "enable", t->id);
    keyring_audit(w->gw->keyring, w->gw->store, srv_req_loop(req),
                  keyring_audit_entry(admin, disable ? "target.disable" : "target.enable", t->id,
                                      NULL, NULL),
                  NULL, NULL);
    bsc_buf_init(&b, 4096);
    api__put_target(&b, w, t, bsc_now_ms());
    srv_resp_send(req, 200, "application/json", NULL, 0, b.p, b.len);
    bsc_buf_cleanup(&b);
}

/* The value of <name> in the query string <q> ("a=1&route=x"), as written (not decoded). */
static bool query_param(struct bsc_str q, struct bsc_str name, struct bsc_str *out)
{
    const char *p = q.p, *end = q.p + q.len;

    while (p && p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        struct bsc_str kv = bsc_str_make(p, (size_t)((amp ? amp : end) - p));
        if (kv.len > name.len && kv.p[name.len] == '=' && memcmp(kv.p, name.p, name.len) == 0) {
            *out = bsc_str_make(kv.p + name.len + 1, kv.len - name.len - 1);
            return true;
        }
        p = amp ? amp + 1 : end;
    }
    return false;
}

static void clear_cache(struct worker *w, struct srv_req *req, const struct cfg *cfg)
{
    struct bsc_str route = BSC_STR_NULL;
    struct bsc_buf b;
    size_t n, sem;

    if (query_param(srv_req_query(req), BSC_STR("route"), &route) &&
        (!route.len || route.len > STORE_BLOB_KEY_MAX)) {
        srv_resp_error(req, 400, "invalid_request_error", "invalid_route",
                       "route= names the route whose cached answers are dropped");
        return;
    }
    /* The semantic index lives in this process's memory whatever cache.store says. */
    sem = w->gw->sem ? cache_sem_drop_route(w->gw->sem, route) : 0;
    if (cfg->cache.store == CFG_CACHE_REDIS) {
        api__admin_cache_clear_shared(w, req, cfg, route);
        return;
    }
    n = cache_mem_drop_route(w->gw->cache, route);
    api__line_detail(req, "cache cleared: %zu entries (%zu semantic) of %.*s", n + sem, sem,
                     route.len ? (int)(route.len > 128 ? 128 : route.len) : 3,
                     route.len ? route.p : "all");
    bsc_buf_init(&b, 4096);
    bsc_buf_append_cstr(&b, "{\"route\":");
    if (route.len)
        bsc_buf_append_json_str(&b, route);
    else
        bsc_buf_append_cstr(&b, "null");
    bsc_buf_appendf(&b, ",\"deleted\":%zu,\"semantic_deleted\":%zu}", n, sem);
    srv_resp_send(req, 200, "application/json", NULL, 0, b.p, b.len);
    bsc_buf_cleanup(&b);
}

static void cache_usage(struct worker *w, struct srv_req *req, const struct cfg *cfg)
{
    size_t entries, sem_entries = 0;
    uint64_t bytes, evicted, sem_bytes = 0, sem_evicted = 0;
    struct bsc_buf b;

    cache_mem_usage(w->gw->cache, &entries, &bytes, &evicted);
    if (w->gw->sem)
        cache_sem_usage(w->gw->sem, &sem_entries, &sem_bytes, &sem_evicted);
    bsc_buf_init(&b, 4096);
    bsc_buf_appendf(&b,
                    "{\"entries\":%zu,\"bytes\":%llu,\"limit_bytes\":%llu,\"evicted\":%llu,"
                    "\"semantic\":{\"entries\":%zu,\"bytes\":%llu,\"evicted\":%llu}}",
                    entries, (unsigned long long)bytes,
                    (unsigned long long)(cfg->cache.memory_mb * 1048576.0),
                    (unsigned long long)evicted, sem_entries, (unsigned long long)sem_bytes,
                    (unsigned long long)sem_evicted);
    srv_resp_send(req, 200, "application/json", NULL, 0, b.p, b.len);
    bsc_buf_cleanup(&b);
}

/* The keyring's surfaces: /admin/teams[/{id}] (admin_teams.c), then /admin/keys... and
 * /admin/audit (admin_keys.c). False when <rest> is none of them. */
static bool keyring_admin(struct worker *w, struct srv_req *req, struct cfg *cfg,
                          struct bsc_str rest, const char *admin)
{
    if (bsc_str_eq(rest, BSC_STR("teams")) || bsc_str_starts(rest, BSC_STR("teams/")))
        return api__admin_teams(w, req, cfg, rest, admin);
    return api__admin_keys(w, req, cfg, rest, admin);
}

void api__admin(struct worker *w, struct srv_req *req, struct bsc_str rest)
{
    struct cfg *cfg = cfg_current_get();
    struct bsc_str m = srv_req_method(req);
    bool post = bsc_str_eq(m, BSC_STR("POST")), get = bsc_str_eq(m, BSC_STR("GET"));
    const char *slash, *admin = NULL;
    enum cfg_admin_role role = role_of(req, cfg, &admin);

    if ((!cfg->admin_key || !cfg->admin_key[0]) && !cfg->n_admin_keys) {
        srv_resp_error(req, 404, "invalid_request_error", "admin_disabled",
                       "the admin API is off (set admin.key)");
    } else if (role == CFG_ADMIN_ROLE_NONE) {
        api__line_detail(req, "admin key missing or wrong");
        srv_resp_error(req, 401, "authentication_error", "invalid_admin_key",
                       "a valid admin key is required (Authorization: Bearer <admin.key>)");
    } else if (role != CFG_ADMIN_ROLE_ADMIN && !is_read(m)) {
        api__line_detail(req, "admin key %s has role read: write refused", admin);
        srv_resp_error(req, 403, "permission_error", "read_only_admin_key",
                       "this admin key may only read (role: read)");
    } else if (api__admin_clients(w, req, cfg, rest, admin) ||
               keyring_admin(w, req, cfg, rest, admin)) {
        /* answered there, now or once the store has answered */
    } else if (bsc_str_eq(rest, BSC_STR("cache")) && bsc_str_eq(m, BSC_STR("DELETE"))) {
        clear_cache(w, req, cfg);
    } else if (bsc_str_eq(rest, BSC_STR("cache")) && get) {
        cache_usage(w, req, cfg);
    } else if (bsc_str_eq(rest, BSC_STR("targets")) && get) {
        list_targets(w, req, cfg);
    } else if (bsc_str_starts(rest, BSC_STR("targets/")) && post &&
               (slash = memrchr(rest.p, '/', rest.len)) && slash > rest.p + 8) {
        struct bsc_str id = bsc_str_make(rest.p + 8, (size_t)(slash - rest.p - 8));
        struct bsc_str verb = bsc_str_make(slash + 1, rest.len - (size_t)(slash + 1 - rest.p));
        if (bsc_str_eq(verb, BSC_STR("disable")) || bsc_str_eq(verb, BSC_STR("enable")))
            switch_target(w, req, cfg, id, bsc_str_eq(verb, BSC_STR("disable")), admin);
        else
            srv_resp_error(req, 404, "invalid_request_error", "unknown_url",
                           "use /admin/targets/{id}/disable or /enable");
    } else {
        srv_resp_error(req, 404, "invalid_request_error", "unknown_url", "no such admin endpoint");
    }
    cfg_unref(cfg);
}
