/* SPDX-License-Identifier: MIT */
/* admin.c -- the admin API, guarded by admin.key (off when the key is empty):
 *   GET  /admin/targets                      every target's circuit, health, latency, load
 *   POST /admin/targets/{id}/disable|enable  the run-time kill switch of one target
 *   /admin/clients...                        clients and their spend (admin_clients.c)
 *   /admin/keys..., /admin/audit             run-time keys, the audit trail (admin_keys.c)
 * Roles (admin.key, admin.keys): a read key may GET, never change (403).
 * The kill switch lives in the shared routing state, so it survives config reloads. */
#include <string.h>

#include "api/internal.h"
#include "core/buf.h"
#include "core/clock.h"
#include "health/hstate.h"
#include "router/gateway.h"
#include "router/keyring.h"

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
               api__admin_keys(w, req, cfg, rest, admin)) {
        /* answered there, now or once the store has answered */
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
