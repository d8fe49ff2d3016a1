/* SPDX-License-Identifier: MIT */
/* admin_teams.c -- teams of run-time keys (admin API; writes need role admin):
 *   POST   /admin/teams          {id, routes?, rpm?, tpm?, max_concurrency?, budget?,
 *                                 budgets?, metadata?} a new team
 *   GET    /admin/teams          every team, with its spend this period and its keys
 *   GET    /admin/teams/{id}     one team
 *   PATCH  /admin/teams/{id}     routes, limits, budgets, metadata
 *   DELETE /admin/teams/{id}     gone; refused (409) while a live key is in it
 * Teams live in the keyring document beside the keys ("teams"), so they are stored, shared
 * with the fleet and audited exactly as keys are (router/keyring.h, admin_keys.c). A key
 * joins a team with `team` on its create or PATCH. See docs/internals/keys.md "Teams". */
#include <stdlib.h>
#include <string.h>

#include "api/admin_keys.h"
#include "api/admin_teams.h"
#include "api/openai_chat.h"
#include "core/clock.h"
#include "router/gateway.h"
#include "router/keyring.h"
#include "router/spend.h"

#define TEAMS_MAX 1000

static const char *const period_names[] = {"day", "month", "total"};

static struct json_object *get(struct json_object *o, const char *name)
{
    struct json_object *v = NULL;

    return json_object_object_get_ex(o, name, &v) ? v : NULL;
}

static struct json_object *teams_of(struct json_object *doc)
{
    struct json_object *t = get(doc, "teams");

    if (!t) {
        t = json_object_new_array();
        json_object_object_add(doc, "teams", t);
    }
    return t;
}

static int team_index(struct json_object *doc, struct bsc_str id)
{
    struct json_object *teams = get(doc, "teams");

    for (size_t i = 0; teams && i < json_object_array_length(teams); i++) {
        const char *tid = json_object_get_string(get(json_object_array_get_idx(teams, i), "id"));

        if (tid && bsc_str_eq(bsc_str_cstr(tid), id))
            return (int)i;
    }
    return -1;
}

static bool id_ok(struct json_object *v)
{
    const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
    size_t n = s ? strlen(s) : 0;

    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' || s[i] == '-'))
            return false;
    return n > 0 && n <= CFG_TEAM_ID_MAX;
}

/* The ids of the live keys of team <id> (a new array). */
static struct json_object *members(struct json_object *doc, const char *id)
{
    struct json_object *keys = get(doc, "keys"), *out = json_object_new_array();

    for (size_t i = 0; keys && i < json_object_array_length(keys); i++) {
        struct json_object *k = json_object_array_get_idx(keys, i);
        const char *team = json_object_get_string(get(k, "team"));

        if (team && strcmp(team, id) == 0 && !get(k, "revoked_ms"))
            json_object_array_add(out, api__json_copy(get(k, "id")));
    }
    return out;
}

static enum cfg_period period_of(struct json_object *t)
{
    const char *pn = json_object_get_string(get(get(t, "budget"), "period"));

    for (unsigned i = 0; pn && i < CFG_PERIOD_COUNT; i++)
        if (strcmp(pn, period_names[i]) == 0)
            return (enum cfg_period)i;
    return CFG_PERIOD_MONTH;
}

/* Team <t> as shown: its fields, and with <w> its keys and spend this period. */
static struct json_object *team_view(struct json_object *doc, struct json_object *t,
                                     struct worker *w)
{
    struct json_object *v = NULL;
    const char *id = json_object_get_string(get(t, "id"));

    json_object_deep_copy(t, &v, NULL);
    if (w && v) {
        char sid[CFG_SPEND_ID_MAX + 1];
        struct spend_view sv;

        snprintf(sid, sizeof(sid), "team:%s", id);
        spend_peek(w->gw->spend, sid, period_of(t), bsc_wall_ms(), &sv);
        json_object_object_add(v, "spend_usd", sv.known ? json_object_new_double(sv.usd) : NULL);
        json_object_object_add(v, "keys", members(doc, id));
    }
    return v;
}

static void send_json(struct srv_req *req, int status, struct json_object *o)
{
    const char *t = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);

    srv_resp_send(req, status, "application/json", NULL, 0, t, strlen(t));
}

static void bad(struct srv_req *req, const char *param, const char *msg)
{
    api__bad_request(req, "invalid_team_request", param, msg);
}

static void not_found(struct srv_req *req)
{
    srv_resp_error(req, 404, "invalid_request_error", "team_not_found", "no such team");
}

/* Checks <body>'s fields and copies them onto <t>: NULL, or the field at fault (*<why>). */
static const char *apply_fields(const struct cfg *cfg, struct json_object *body,
                                struct json_object *t, bool creating, const char **why)
{
    json_object_object_foreach(body, name, v)
    {
        if (strcmp(name, "id") == 0) {
            if (!creating || !id_ok(v))
                return *why = creating ? "'id' is 1 to 48 of [A-Za-z0-9._-]"
                                       : "a team's id does not change",
                       name;
            json_object_object_add(t, "id", api__json_copy(v));
        } else {
            int applied = api__apply_grant_field(cfg, name, v, t, why);

            if (applied <= 0)
                return applied == 0 ? (*why = "unknown field", name) : name;
        }
    }
    return NULL;
}

/* The keyring locked and read from the store, or NULL (answered 503). */
static struct json_object *lock_synced(struct worker *w, struct srv_req *req)
{
    struct json_object *doc = keyring_lock(w->gw->keyring);

    if (keyring_synced_locked(w->gw->keyring))
        return doc;
    keyring_unlock(w->gw->keyring);
    api__keyring_unsynced(req);
    return NULL;
}

static void create(struct worker *w, struct srv_req *req, const struct cfg *cfg,
                   const char *admin)
{
    struct json_object *body = api__admin_body(req, false), *t, *doc, *saved;
    const char *why = NULL, *field;
    char detail[96], subject[64];

    if (!body)
        return;
    t = json_object_new_object();
    if (!get(body, "id"))
        field = "id", why = "'id' is required";
    else
        field = apply_fields(cfg, body, t, true, &why);
    json_object_put(body);
    if (field) {
        json_object_put(t);
        bad(req, field, why);
        return;
    }
    if (!(doc = lock_synced(w, req))) {
        json_object_put(t);
        return;
    }
    if (team_index(doc, bsc_str_cstr(json_object_get_string(get(t, "id")))) >= 0) {
        keyring_unlock(w->gw->keyring);
        json_object_put(t);
        srv_resp_error(req, 409, "invalid_request_error", "team_exists", "that team exists");
        return;
    }
    if (json_object_array_length(teams_of(doc)) >= TEAMS_MAX ||
        !(saved = keyring_save_locked(w->gw->keyring))) {
        keyring_unlock(w->gw->keyring);
        json_object_put(t);
        srv_resp_error(req, 507, "server_error", "keyring_full", "no room for another team");
        return;
    }
    json_object_object_add(t, "created_ms", json_object_new_int64((int64_t)bsc_wall_ms()));
    json_object_object_add(t, "created_by", json_object_new_string(admin));
    json_object_array_add(teams_of(doc), t);
    snprintf(subject, sizeof(subject), "team:%s", json_object_get_string(get(t, "id")));
    snprintf(detail, sizeof(detail), "team.create %s", subject);
    api__keyring_commit(w, req, saved,
                        keyring_audit_entry(admin, "team.create", subject, NULL,
                                            team_view(doc, t, NULL)),
                        201, team_view(doc, t, NULL), detail);
}

static void list(struct worker *w, struct srv_req *req)
{
    struct json_object *out = json_object_new_object(), *arr = json_object_new_array();
    struct json_object *doc = keyring_lock(w->gw->keyring), *teams = get(doc, "teams");

    for (size_t i = 0; teams && i < json_object_array_length(teams); i++)
        json_object_array_add(arr, team_view(doc, json_object_array_get_idx(teams, i), w));
    keyring_unlock(w->gw->keyring);
    json_object_object_add(out, "teams", arr);
    send_json(req, 200, out);
    json_object_put(out);
}

static void show(struct worker *w, struct srv_req *req, struct bsc_str id)
{
    struct json_object *doc = keyring_lock(w->gw->keyring), *v = NULL;
    int i = team_index(doc, id);

    if (i >= 0)
        v = team_view(doc, json_object_array_get_idx(get(doc, "teams"), (size_t)i), w);
    keyring_unlock(w->gw->keyring);
    if (!v) {
        not_found(req);
        return;
    }
    send_json(req, 200, v);
    json_object_put(v);
}

/* PATCH or DELETE of team <id>. */
static void change(struct worker *w, struct srv_req *req, const struct cfg *cfg,
                   struct bsc_str id, bool del, const char *admin)
{
    struct json_object *body = api__admin_body(req, true), *doc, *t, *before, *saved, *in;
    const char *why = NULL, *field = NULL;
    char detail[96], subject[64];
    bool used;
    int i;

    if (!body || !(doc = lock_synced(w, req))) {
        json_object_put(body);
        return;
    }
    i = team_index(doc, id);
    t = i >= 0 ? json_object_array_get_idx(get(doc, "teams"), (size_t)i) : NULL;
    in = t && del ? members(doc, json_object_get_string(get(t, "id"))) : NULL;
    used = in && json_object_array_length(in) > 0;
    json_object_put(in);
    if (!t || used || !(saved = keyring_save_locked(w->gw->keyring))) {
        keyring_unlock(w->gw->keyring);
        json_object_put(body);
        if (!t)
            not_found(req);
        else if (used)
            srv_resp_error(req, 409, "invalid_request_error", "team_in_use",
                           "the team still has live keys: move or revoke them first");
        else
            srv_resp_error(req, 503, "server_error", "out_of_memory", "out of memory");
        return;
    }
    snprintf(subject, sizeof(subject), "team:%s", json_object_get_string(get(t, "id")));
    before = team_view(doc, t, NULL);
    if (!del) {
        struct json_object *scratch = json_object_new_object(); /* all or nothing */

        field = apply_fields(cfg, body, scratch, false, &why);
        json_object_put(scratch);
        if (!field)
            apply_fields(cfg, body, t, false, &why);
    }
    json_object_put(body);
    if (field) {
        keyring_restore_locked(w->gw->keyring, saved);
        keyring_unlock(w->gw->keyring);
        json_object_put(before);
        bad(req, field, why);
        return;
    }
    snprintf(detail, sizeof(detail), "team.%s %s", del ? "delete" : "update", subject);
    if (del) {
        json_object_array_del_idx(get(doc, "teams"), (size_t)i, 1);
        api__keyring_commit(w, req, saved,
                            keyring_audit_entry(admin, "team.delete", subject, before, NULL),
                            200, api__json_copy(before), detail);
        return;
    }
    api__keyring_commit(w, req, saved,
                        keyring_audit_entry(admin, "team.update", subject, before,
                                            team_view(doc, t, NULL)),
                        200, team_view(doc, t, NULL), detail);
}

bool api__admin_teams(struct worker *w, struct srv_req *req, struct cfg *cfg,
                      struct bsc_str rest, const char *admin)
{
    struct bsc_str m = srv_req_method(req), id;
    bool get_ = bsc_str_eq(m, BSC_STR("GET"));

    if (bsc_str_eq(rest, BSC_STR("teams"))) {
        if (get_)
            list(w, req);
        else if (bsc_str_eq(m, BSC_STR("POST")))
            create(w, req, cfg, admin);
        else
            srv_resp_error(req, 405, "invalid_request_error", "method_not_allowed",
                           "use GET or POST");
        return true;
    }
    id = bsc_str_make(rest.p + 6, rest.len - 6);
    if (!id.len || memchr(id.p, '/', id.len))
        srv_resp_error(req, 404, "invalid_request_error", "unknown_url", "no such admin endpoint");
    else if (get_)
        show(w, req, id);
    else if (bsc_str_eq(m, BSC_STR("PATCH")))
        change(w, req, cfg, id, false, admin);
    else if (bsc_str_eq(m, BSC_STR("DELETE")))
        change(w, req, cfg, id, true, admin);
    else
        srv_resp_error(req, 405, "invalid_request_error", "method_not_allowed",
                       "use GET, PATCH or DELETE");
    return true;
}
