/* SPDX-License-Identifier: MIT */
/* admin_keys.c -- client keys at run time (admin API; writes need role admin):
 *   POST   /admin/keys              a new key; its secret (bsk_...) is in this answer only
 *   GET    /admin/keys              every key: the API's and the config file's (read-only)
 *   GET    /admin/keys/{id}         one key, with its spend this period
 *   PATCH  /admin/keys/{id}         routes, limits, budget, expiry, client, metadata
 *   POST   /admin/keys/{id}/rotate  a new secret; the old one works for grace_s more
 *   DELETE /admin/keys/{id}         revoked: refused (401) from the answer on
 *   GET    /admin/audit?since=&subject=   the audit trail of admin writes
 * A write changes the keyring (router/keyring.h), rebuilds the snapshot so that this
 * instance serves the change before answering, and answers once the store has it. The
 * config file's clients answer 409 to every write. Secrets never reach a log, an error or
 * the audit trail; only their SHA-256 is kept. See docs/internals/keys.md. */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "api/access.h"
#include "api/admin_keys.h"
#include "api/openai_chat.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/sha256.h"
#include "router/gateway.h"
#include "router/keyring.h"
#include "router/keyring_sync.h"
#include "router/spend.h"
#include "store/store.h"

#define SECRET_PREFIX "bsk_"
#define SECRET_RANDOM_BYTES 24 /* 192 bits, 48 hex digits */
#define DEFAULT_GRACE_S 3600
#define MAX_GRACE_S (30 * 86400)
#define MAX_METADATA_BYTES 4096

static const char *const period_names[] = {"day", "month", "total"};

/* ---- small helpers ---- */

static void hex(const uint8_t *p, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";

    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * n] = '\0';
}

static bool random_hex(size_t bytes, char *out)
{
    uint8_t r[64];

    if (bytes > sizeof(r) || getrandom(r, bytes, 0) != (ssize_t)bytes)
        return false;
    hex(r, bytes, out);
    explicit_bzero(r, sizeof(r));
    return true;
}

/* A new secret in <secret> and its hash (hex) in <hash_hex>. */
static bool new_secret(char *secret, size_t len, char *hash_hex)
{
    uint8_t h[BSC_SHA256_LEN];
    char rnd[2 * SECRET_RANDOM_BYTES + 1];

    if (len < sizeof(SECRET_PREFIX) + sizeof(rnd) || !random_hex(SECRET_RANDOM_BYTES, rnd))
        return false;
    snprintf(secret, len, SECRET_PREFIX "%s", rnd);
    explicit_bzero(rnd, sizeof(rnd));
    bsc_sha256(secret, strlen(secret), h);
    hex(h, sizeof(h), hash_hex);
    return true;
}

static struct json_object *get(struct json_object *o, const char *name)
{
    struct json_object *v = NULL;

    return json_object_object_get_ex(o, name, &v) ? v : NULL;
}

static int64_t int_of(struct json_object *o, const char *name)
{
    struct json_object *v = get(o, name);

    return v ? json_object_get_int64(v) : 0;
}

static struct json_object *key_find(struct json_object *doc, struct bsc_str id)
{
    struct json_object *keys = get(doc, "keys");

    for (size_t i = 0; keys && i < json_object_array_length(keys); i++) {
        struct json_object *k = json_object_array_get_idx(keys, i);
        const char *kid = json_object_get_string(get(k, "id"));

        if (kid && bsc_str_eq(bsc_str_cstr(kid), id))
            return k;
    }
    return NULL;
}

static const char *status_of(struct json_object *k, uint64_t now)
{
    int64_t exp = int_of(k, "expires_ms");

    if (int_of(k, "revoked_ms"))
        return "revoked";
    return exp > 0 && (uint64_t)exp <= now ? "expired" : "active";
}

/* What may be shown of key <k>: everything but the hashes, with its status and, when
 * <w> is given, its spend this period and requests in flight. */
static struct json_object *key_view(struct json_object *k, struct worker *w)
{
    struct json_object *v = json_object_new_object();
    uint64_t now = bsc_wall_ms();

    json_object_object_foreach(k, name, val)
    {
        if (strcmp(name, "hash") != 0 && strcmp(name, "old_hash") != 0)
            json_object_object_add(v, name, api__json_copy(val));
    }
    json_object_object_add(v, "source", json_object_new_string("api"));
    json_object_object_add(v, "status", json_object_new_string(status_of(k, now)));
    if (w) {
        struct json_object *bud = get(k, "budget");
        const char *pn = bud ? json_object_get_string(get(bud, "period")) : "month";
        enum cfg_period p = CFG_PERIOD_MONTH;
        struct spend_view sv;

        for (unsigned i = 0; pn && i < CFG_PERIOD_COUNT; i++)
            if (strcmp(pn, period_names[i]) == 0)
                p = (enum cfg_period)i;
        spend_peek(w->gw->spend, json_object_get_string(get(k, "id")), p, now, &sv);
        json_object_object_add(v, "spend_usd", sv.known ? json_object_new_double(sv.usd) : NULL);
        json_object_object_add(v, "in_flight", json_object_new_int64(sv.inflight));
        json_object_object_add(v, "last_used_ms",
                               sv.last_used_ms ? json_object_new_int64((int64_t)sv.last_used_ms)
                                               : NULL);
    }
    return v;
}

static struct json_object *client_view(const struct cfg_client *c)
{
    struct json_object *v = json_object_new_object(), *routes = json_object_new_array();

    json_object_object_add(v, "id", json_object_new_string(c->id));
    json_object_object_add(v, "source", json_object_new_string("config"));
    if (c->all_routes)
        json_object_array_add(routes, json_object_new_string("*"));
    for (size_t i = 0; i < c->n_routes; i++)
        json_object_array_add(routes, json_object_new_string(c->routes[i]->id));
    json_object_object_add(v, "routes", routes);
    json_object_object_add(v, "rpm", json_object_new_int64(c->rpm));
    json_object_object_add(v, "tpm", json_object_new_int64(c->tpm));
    json_object_object_add(v, "max_concurrency", json_object_new_int64(c->max_concurrency));
    if (c->budget.usd >= 0) {
        struct json_object *b = json_object_new_object();

        json_object_object_add(b, "usd", json_object_new_double(c->budget.usd));
        json_object_object_add(b, "period", json_object_new_string(period_names[c->budget.period]));
        json_object_object_add(v, "budget", b);
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
    api__bad_request(req, "invalid_key_request", param, msg);
}

struct json_object *api__json_copy(struct json_object *v)
{
    struct json_object *copy = NULL;

    if (!v || json_object_deep_copy(v, &copy, NULL) != 0)
        return NULL;
    return copy;
}

void api__keyring_unsynced(struct srv_req *req)
{
    srv_resp_error(req, 503, "server_error", "store_unavailable",
                   "the keyring has not been read from the store yet; try again");
}

/* ---- the fields a create or a patch may set ---- */

static bool label_ok(const char *s)
{
    size_t n = strlen(s);

    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return n > 0 && n <= 128;
}

bool api__routes_ok(const struct cfg *cfg, struct json_object *v)
{
    size_t n = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;

    if (n == 0 || n > 256)
        return false;
    for (size_t i = 0; i < n; i++) {
        struct json_object *r = json_object_array_get_idx(v, i);
        const char *s = json_object_is_type(r, json_type_string) ? json_object_get_string(r) : NULL;

        if (!s || (strcmp(s, "*") != 0 && !cfg_route_find(cfg, bsc_str_cstr(s))))
            return false;
    }
    return true;
}

/* "50/month" or {usd, period}: a normalised {usd, period}, or NULL when neither. */
struct json_object *api__budget_norm(struct json_object *v)
{
    double usd = -1;
    const char *period = "month";
    char pbuf[16] = "";
    struct json_object *b;

    if (json_object_is_type(v, json_type_string)) {
        if (sscanf(json_object_get_string(v), "%lf/%15s", &usd, pbuf) < 1)
            return NULL;
        if (pbuf[0])
            period = pbuf;
    } else if (json_object_is_type(v, json_type_object)) {
        struct json_object *u = get(v, "usd"), *p = get(v, "period");

        if (!u || !(json_object_is_type(u, json_type_double) || json_object_is_type(u, json_type_int)))
            return NULL;
        usd = json_object_get_double(u);
        if (p)
            period = json_object_get_string(p);
        if (json_object_object_length(v) > (p ? 2 : 1))
            return NULL;
    } else {
        return NULL;
    }
    if (!(usd >= 0 && usd <= 1e12) || !period ||
        (strcmp(period, "day") && strcmp(period, "month") && strcmp(period, "total")))
        return NULL;
    b = json_object_new_object();
    json_object_object_add(b, "usd", json_object_new_double(usd));
    json_object_object_add(b, "period", json_object_new_string(period));
    return b;
}

bool api__limit_ok(struct json_object *v)
{
    return json_object_is_type(v, json_type_int) && json_object_get_int64(v) >= 0 &&
           json_object_get_int64(v) <= 100000000;
}

/* `budgets: [{usd, period?, route?}]`: a normalised copy, or NULL when it is not that (at
 * most CFG_BUDGETS_MAX entries, each route one of the config's). */
struct json_object *api__budgets_norm(const struct cfg *cfg, struct json_object *v)
{
    size_t n = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
    struct json_object *out;

    if (!json_object_is_type(v, json_type_array) || n > CFG_BUDGETS_MAX)
        return NULL;
    out = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        struct json_object *b = json_object_array_get_idx(v, i), *copy, *nb, *route;
        const char *rs;

        if (!json_object_is_type(b, json_type_object))
            break;
        route = get(b, "route");
        rs = json_object_is_type(route, json_type_string) ? json_object_get_string(route) : NULL;
        if (route && (!rs || strlen(rs) > CFG_BUDGET_ROUTE_MAX ||
                      !cfg_route_find(cfg, bsc_str_cstr(rs))))
            break;
        copy = json_object_new_object();
        json_object_object_foreach(b, name, val)
        {
            if (strcmp(name, "route") != 0)
                json_object_object_add(copy, name, api__json_copy(val));
        }
        nb = api__budget_norm(copy);
        json_object_put(copy);
        if (!nb)
            break;
        if (rs)
            json_object_object_add(nb, "route", json_object_new_string(rs));
        json_object_array_add(out, nb);
    }
    if (json_object_array_length(out) != n) {
        json_object_put(out);
        return NULL;
    }
    return out;
}

int api__apply_grant_field(const struct cfg *cfg, const char *name, struct json_object *v,
                           struct json_object *out, const char **why)
{
    if (strcmp(name, "routes") == 0) {
        if (!api__routes_ok(cfg, v))
            return *why = "'routes' must list 1 to 256 routes of the config, or \"*\"", -1;
        json_object_object_add(out, "routes", api__json_copy(v));
    } else if (!strcmp(name, "rpm") || !strcmp(name, "tpm") || !strcmp(name, "max_concurrency")) {
        if (!api__limit_ok(v))
            return *why = "limits are integers from 0 (unlimited) to 100000000", -1;
        json_object_object_add(out, name, api__json_copy(v));
    } else if (strcmp(name, "budget") == 0) {
        struct json_object *b = v ? api__budget_norm(v) : NULL;

        if (v && !b)
            return *why = "'budget' is {usd, period: day|month|total} or \"50/month\"", -1;
        json_object_object_add(out, "budget", b);
    } else if (strcmp(name, "budgets") == 0) {
        struct json_object *b = v ? api__budgets_norm(cfg, v) : NULL;

        if (v && !b)
            return *why = "'budgets' is a list of at most 8 {usd, period, route?}", -1;
        json_object_object_add(out, "budgets", b);
    } else if (strcmp(name, "metadata") == 0) {
        if (v && (!json_object_is_type(v, json_type_object) ||
                  strlen(json_object_to_json_string(v)) > MAX_METADATA_BYTES))
            return *why = "'metadata' is an object of at most 4096 bytes", -1;
        json_object_object_add(out, "metadata", api__json_copy(v));
    } else {
        return 0;
    }
    return 1;
}

/* Checks <body>'s fields and copies them onto <k>. NULL when all is well, else the name
 * of the field at fault (and *<why>). */
static const char *apply_fields(const struct cfg *cfg, struct json_object *body,
                                struct json_object *k, const char **why)
{
    json_object_object_foreach(body, name, v)
    {
        if (strcmp(name, "client") == 0) {
            if (!json_object_is_type(v, json_type_string) || !label_ok(json_object_get_string(v)))
                return *why = "'client' must be 1 to 128 printable characters", name;
            json_object_object_add(k, "client", api__json_copy(v));
        } else if (strcmp(name, "expires_at") == 0) {
            if (v && (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) <= 0))
                return *why = "'expires_at' is a time in seconds since the epoch, or null", name;
            json_object_object_add(k, "expires_ms",
                                   json_object_new_int64(v ? json_object_get_int64(v) * 1000 : 0));
        } else if (strcmp(name, "team") == 0) {
            if (v && (!json_object_is_type(v, json_type_string) ||
                      !cfg_team_find(cfg, bsc_str_cstr(json_object_get_string(v)))))
                return *why = "'team' names a team of /admin/teams, or is null", name;
            if (v)
                json_object_object_add(k, "team", api__json_copy(v));
            else
                json_object_object_del(k, "team");
        } else {
            int applied = api__apply_grant_field(cfg, name, v, k, why);

            if (applied <= 0)
                return applied == 0 ? (*why = "unknown field", name) : name;
        }
    }
    return NULL;
}

/* ---- a write: the keyring changed, the snapshot rebuilt, the store answered ---- */

struct write_call {
    struct srv_req *req; /* borrowed; NULL once the client went away */
    struct gateway *gw;
    int status;
    struct json_object *answer;
    bool applied;        /* the rebuilt snapshot serves the change */
    char detail[160];
};

static void write_answer(struct write_call *c, enum bsc_err err)
{
    if (err)
        srv_resp_error(c->req, 503, "server_error", "store_unavailable",
                       "the change is served by this instance but was not stored; repeat it");
    else if (!c->applied)
        srv_resp_error(c->req, 500, "server_error", "not_applied",
                       "the change is stored but the config file does not load: fix it");
    else
        send_json(c->req, c->status, c->answer);
}

static void on_written(enum bsc_err err, void *ud)
{
    struct write_call *c = ud;

    if (!err)
        keyring_announce(c->gw); /* stored: the other instances read it now */
    if (c->req) {
        struct api_line line;

        srv_req_on_abort(c->req, NULL, NULL);
        api__line_begin(&line, c->req);
        snprintf(line.detail, sizeof(line.detail), "%s", c->detail);
        write_answer(c, err);
        api__line_end(&line, err ? 503 : c->applied ? c->status : 500, NULL);
    }
    json_object_put(c->answer);
    free(c);
}

static void on_write_gone(struct srv_req *req, void *ud)
{
    struct write_call *c = ud;
    struct api_line line;

    api__line_begin(&line, req);
    api__line_end(&line, 499, "client_abort");
    c->req = NULL;
}

/* Called with the keyring locked and <doc> changed (<saved> is the document before, taken):
 * commits, unlocks, rebuilds. A change too large to store is undone: 507. */
void api__keyring_commit(struct worker *w, struct srv_req *req, struct json_object *saved,
                   struct json_object *audit, int status, struct json_object *answer,
                   const char *detail)
{
    struct write_call *c = calloc(1, sizeof(*c));
    enum bsc_err err = c ? BSC_OK : BSC_ENOMEM;

    if (c) {
        *c = (struct write_call){.req = req, .gw = w->gw, .status = status, .answer = answer};
        snprintf(c->detail, sizeof(c->detail), "%s", detail);
        err = keyring_commit_locked(w->gw->keyring, w->gw->store, srv_req_loop(req), audit,
                                    on_written, c);
    } else {
        json_object_put(audit);
    }
    if (err == BSC_ELIMIT || err == BSC_ENOMEM) { /* nothing queued: put the document back */
        keyring_restore_locked(w->gw->keyring, saved);
        keyring_unlock(w->gw->keyring);
        json_object_put(answer);
        free(c);
        api__line_detail(req, "%s: refused, the keyring is full", detail);
        srv_resp_error(req, 507, "server_error", "keyring_full",
                       "the keyring would be too large to store; nothing was changed");
        return;
    }
    json_object_put(saved);
    keyring_unlock(w->gw->keyring);
    c->applied = w->gw->rebuild(w->gw) == BSC_OK;
    if (err) {
        api__line_detail(req, "%s", detail);
        write_answer(c, err);
        json_object_put(answer);
        free(c);
        return;
    }
    srv_req_on_abort(req, on_write_gone, c);
}

/* ---- the endpoints ---- */

struct json_object *api__admin_body(struct srv_req *req, bool may_be_empty)
{
    struct bsc_str body = srv_req_body(req);
    char msg[200];
    struct json_object *o;

    if (!body.len && may_be_empty)
        return json_object_new_object();
    o = api__parse_json(body, msg, sizeof(msg));
    if (!o) {
        bad(req, NULL, msg);
        return NULL;
    }
    if (!json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        bad(req, NULL, "the body must be a JSON object");
        return NULL;
    }
    return o;
}

static bool unique_id(const struct cfg *cfg, struct json_object *doc, char *id, size_t len)
{
    char rnd[17];

    for (int tries = 0; tries < 8; tries++) {
        if (!random_hex(8, rnd))
            return false;
        snprintf(id, len, "key_%s", rnd);
        if (!cfg_client_find(cfg, bsc_str_cstr(id)) && !key_find(doc, bsc_str_cstr(id)))
            return true;
    }
    return false;
}

static void create(struct worker *w, struct srv_req *req, const struct cfg *cfg,
                   const char *admin)
{
    struct json_object *body = api__admin_body(req, false), *k, *doc, *view, *keys, *saved = NULL;
    char secret[80], hash[65], id[32], prefix[16];
    const char *why = NULL, *field;

    if (!body)
        return;
    if (!get(body, "client") || !get(body, "routes")) {
        const char *missing = get(body, "client") ? "routes" : "client";

        json_object_put(body);
        bad(req, missing, "'client' and 'routes' are required");
        return;
    }
    k = json_object_new_object();
    if ((field = apply_fields(cfg, body, k, &why))) {
        bad(req, field, why);
        json_object_put(body);
        json_object_put(k);
        return;
    }
    json_object_put(body);
    doc = keyring_lock(w->gw->keyring);
    if (!keyring_synced_locked(w->gw->keyring)) {
        keyring_unlock(w->gw->keyring);
        json_object_put(k);
        api__keyring_unsynced(req);
        return;
    }
    keys = get(doc, "keys");
    if (json_object_array_length(keys) >= KEYRING_MAX_KEYS || !unique_id(cfg, doc, id, sizeof(id)) ||
        !new_secret(secret, sizeof(secret), hash) || !(saved = keyring_save_locked(w->gw->keyring))) {
        keyring_unlock(w->gw->keyring);
        json_object_put(k);
        srv_resp_error(req, 507, "server_error", "keyring_full", "no room for another key");
        return;
    }
    snprintf(prefix, sizeof(prefix), "%.8s", secret);
    json_object_object_add(k, "id", json_object_new_string(id));
    json_object_object_add(k, "hash", json_object_new_string(hash));
    json_object_object_add(k, "prefix", json_object_new_string(prefix));
    json_object_object_add(k, "created_ms", json_object_new_int64((int64_t)bsc_wall_ms()));
    json_object_object_add(k, "created_by", json_object_new_string(admin));
    json_object_array_add(keys, k);
    view = key_view(k, NULL);
    json_object_object_add(view, "secret", json_object_new_string(secret));
    explicit_bzero(secret, sizeof(secret));
    {
        char detail[80];

        snprintf(detail, sizeof(detail), "create key %s", id);
        api__keyring_commit(w, req, saved,
               keyring_audit_entry(admin, "key.create", id, NULL, key_view(k, NULL)), 201, view,
               detail);
    }
}

static void list(struct worker *w, struct srv_req *req, const struct cfg *cfg)
{
    struct json_object *out = json_object_new_object(), *arr = json_object_new_array();
    struct json_object *doc, *keys;

    for (size_t i = 0; i < cfg->n_clients; i++)
        if (!cfg->clients[i].runtime)
            json_object_array_add(arr, client_view(&cfg->clients[i]));
    doc = keyring_lock(w->gw->keyring);
    keys = get(doc, "keys");
    for (size_t i = 0; i < json_object_array_length(keys); i++)
        json_object_array_add(arr, key_view(json_object_array_get_idx(keys, i), w));
    keyring_unlock(w->gw->keyring);
    json_object_object_add(out, "keys", arr);
    send_json(req, 200, out);
    json_object_put(out);
}

static void read_only(struct srv_req *req)
{
    srv_resp_error(req, 409, "invalid_request_error", "config_client",
                   "this client comes from the config file: change it there");
}

static void not_found(struct srv_req *req)
{
    srv_resp_error(req, 404, "invalid_request_error", "key_not_found", "no such key");
}

/* PATCH, rotate or DELETE of key <id> (the keyring locked here). */
static void change(struct worker *w, struct srv_req *req, const struct cfg *cfg,
                   struct bsc_str id, const char *verb, const char *admin)
{
    struct json_object *body = api__admin_body(req, true), *doc, *k, *before, *answer, *saved;
    const char *why = NULL, *field = NULL, *action;
    char secret[80] = "", hash[65], detail[128];
    uint64_t now = bsc_wall_ms();
    int64_t grace_s = DEFAULT_GRACE_S;

    if (!body)
        return;
    doc = keyring_lock(w->gw->keyring);
    if (!keyring_synced_locked(w->gw->keyring)) {
        keyring_unlock(w->gw->keyring);
        json_object_put(body);
        api__keyring_unsynced(req);
        return;
    }
    k = key_find(doc, id);
    if (!k || int_of(k, "revoked_ms")) {
        keyring_unlock(w->gw->keyring);
        json_object_put(body);
        if (cfg_client_find(cfg, id) && !k)
            read_only(req);
        else
            not_found(req);
        return;
    }
    saved = keyring_save_locked(w->gw->keyring);
    if (!saved) {
        keyring_unlock(w->gw->keyring);
        json_object_put(body);
        srv_resp_error(req, 503, "server_error", "out_of_memory", "out of memory");
        return;
    }
    before = key_view(k, NULL);
    if (strcmp(verb, "patch") == 0) {
        struct json_object *scratch = json_object_new_object();

        action = "key.update"; /* checked on a scratch object first: all or nothing */
        field = apply_fields(cfg, body, scratch, &why);
        json_object_put(scratch);
        if (!field)
            apply_fields(cfg, body, k, &why);
    } else if (strcmp(verb, "rotate") == 0) {
        struct json_object *g = get(body, "grace_s");

        action = "key.rotate";
        if (g && (!json_object_is_type(g, json_type_int) || json_object_get_int64(g) < 0 ||
                  json_object_get_int64(g) > MAX_GRACE_S))
            field = "grace_s", why = "'grace_s' is 0 to 2592000 seconds";
        else if (json_object_object_length(body) > (g ? 1 : 0))
            field = "body", why = "rotate takes only grace_s";
        else if (g)
            grace_s = json_object_get_int64(g);
        if (!field && !new_secret(secret, sizeof(secret), hash))
            field = "secret", why = "no randomness";
        if (!field) {
            json_object_object_add(k, "old_hash", api__json_copy(get(k, "hash")));
            json_object_object_add(k, "old_until_ms",
                                   json_object_new_int64((int64_t)(now + (uint64_t)grace_s * 1000)));
            json_object_object_add(k, "hash", json_object_new_string(hash));
            json_object_object_add(k, "prefix", json_object_new_string_len(secret, 8));
            json_object_object_add(k, "rotated_ms", json_object_new_int64((int64_t)now));
        }
    } else {
        action = "key.revoke";
        json_object_object_add(k, "revoked_ms", json_object_new_int64((int64_t)now));
        json_object_object_add(k, "revoked_by", json_object_new_string(admin));
        json_object_object_del(k, "old_hash"); /* nothing of it stays usable */
    }
    json_object_put(body);
    if (field) {
        keyring_restore_locked(w->gw->keyring, saved);
        keyring_unlock(w->gw->keyring);
        json_object_put(before);
        bad(req, field, why);
        return;
    }
    answer = key_view(k, NULL);
    if (secret[0]) {
        json_object_object_add(answer, "secret", json_object_new_string(secret));
        explicit_bzero(secret, sizeof(secret));
    }
    snprintf(detail, sizeof(detail), "%s %.*s", action, (int)(id.len > 64 ? 64 : id.len), id.p);
    api__keyring_commit(w, req, saved,
           keyring_audit_entry(admin, action, json_object_get_string(get(k, "id")), before,
                               key_view(k, NULL)),
           200, answer, detail);
}

/* GET of one key: its view, with the spend of its period as the store has it. */
struct show_call {
    struct srv_req *req; /* borrowed; NULL once the client went away */
    struct json_object *view;
};

static void on_show_spend(enum bsc_err err, double usd, void *ud)
{
    struct show_call *c = ud;

    if (c->req) {
        struct api_line line;

        if (!err)
            json_object_object_add(c->view, "spend_usd", json_object_new_double(usd));
        srv_req_on_abort(c->req, NULL, NULL);
        api__line_begin(&line, c->req);
        snprintf(line.detail, sizeof(line.detail), "show key");
        send_json(c->req, 200, c->view);
        api__line_end(&line, 200, NULL);
    }
    json_object_put(c->view);
    free(c);
}

static void on_show_gone(struct srv_req *req, void *ud)
{
    struct show_call *c = ud;
    struct api_line line;

    api__line_begin(&line, req);
    api__line_end(&line, 499, "client_abort");
    c->req = NULL;
}

static void show(struct worker *w, struct srv_req *req, const struct cfg *cfg, struct bsc_str id)
{
    struct json_object *doc = keyring_lock(w->gw->keyring), *k = key_find(doc, id), *v = NULL;
    const struct cfg_client *c = cfg_client_find(cfg, id);
    struct show_call *call;

    if (k)
        v = key_view(k, w);
    keyring_unlock(w->gw->keyring);
    if (!v && c && !c->runtime)
        v = client_view(c);
    if (!v) {
        not_found(req);
        return;
    }
    call = c && w->gw->store ? calloc(1, sizeof(*call)) : NULL;
    if (call) {
        *call = (struct show_call){req, v};
        if (store_spend_add(w->gw->store, srv_req_loop(req), bsc_str_cstr(c->id),
                            spend_period_start(c->budget.period, bsc_wall_ms()), 0, 0,
                            on_show_spend, call) == BSC_OK) {
            srv_req_on_abort(req, on_show_gone, call);
            return;
        }
        free(call);
    }
    send_json(req, 200, v);
    json_object_put(v);
}

static bool query_param(struct bsc_str q, const char *name, char *out, size_t len)
{
    size_t n = strlen(name);

    while (q.len) {
        const char *amp = memchr(q.p, '&', q.len);
        size_t part = amp ? (size_t)(amp - q.p) : q.len;

        if (part > n && memcmp(q.p, name, n) == 0 && q.p[n] == '=') {
            snprintf(out, len, "%.*s", (int)(part - n - 1), q.p + n + 1);
            return true;
        }
        q = amp ? bsc_str_make(amp + 1, q.len - part - 1) : BSC_STR_NULL;
    }
    return false;
}

static void audit(struct worker *w, struct srv_req *req)
{
    char since[32] = "", subject[128] = "";
    struct bsc_str q = srv_req_query(req);
    bool has_subject = query_param(q, "subject", subject, sizeof(subject));
    char *text, *endp = NULL;
    unsigned long long since_ms = 0;
    struct bsc_buf b;

    if (query_param(q, "since", since, sizeof(since))) {
        since_ms = strtoull(since, &endp, 10);
        if (!since[0] || *endp) {
            bad(req, "since", "'since' is a time in ms since the epoch");
            return;
        }
    }
    text = keyring_audit_select(w->gw->keyring, since_ms, has_subject ? subject : NULL);
    bsc_buf_init(&b, 64u << 20);
    bsc_buf_append_cstr(&b, "{\"entries\":");
    bsc_buf_append_cstr(&b, text ? text : "[]");
    bsc_buf_append_char(&b, '}');
    srv_resp_send(req, 200, "application/json", NULL, 0, b.p, b.len);
    bsc_buf_cleanup(&b);
    free(text);
}

bool api__admin_keys(struct worker *w, struct srv_req *req, struct cfg *cfg,
                     struct bsc_str rest, const char *admin)
{
    struct bsc_str m = srv_req_method(req);
    bool get_ = bsc_str_eq(m, BSC_STR("GET")), post = bsc_str_eq(m, BSC_STR("POST"));
    static const char rotate[] = "/rotate";
    struct bsc_str id;

    if (bsc_str_eq(rest, BSC_STR("audit")) && get_) {
        audit(w, req);
        return true;
    }
    if (bsc_str_eq(rest, BSC_STR("keys"))) {
        if (get_)
            list(w, req, cfg);
        else if (post)
            create(w, req, cfg, admin);
        else
            srv_resp_error(req, 405, "invalid_request_error", "method_not_allowed",
                           "use GET or POST");
        return true;
    }
    if (!bsc_str_starts(rest, BSC_STR("keys/")) || rest.len <= 5)
        return false;
    id = bsc_str_make(rest.p + 5, rest.len - 5);
    if (post && id.len > strlen(rotate) &&
        memcmp(id.p + id.len - strlen(rotate), rotate, strlen(rotate)) == 0) {
        id.len -= strlen(rotate);
        change(w, req, cfg, id, "rotate", admin);
    } else if (memchr(id.p, '/', id.len)) {
        srv_resp_error(req, 404, "invalid_request_error", "unknown_url", "no such admin endpoint");
    } else if (get_) {
        show(w, req, cfg, id);
    } else if (bsc_str_eq(m, BSC_STR("PATCH"))) {
        change(w, req, cfg, id, "patch", admin);
    } else if (bsc_str_eq(m, BSC_STR("DELETE"))) {
        change(w, req, cfg, id, "delete", admin);
    } else {
        srv_resp_error(req, 405, "invalid_request_error", "method_not_allowed",
                       "use GET, PATCH or DELETE");
    }
    return true;
}
