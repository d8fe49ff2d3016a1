/* SPDX-License-Identifier: MIT */
/* clients.c -- the `clients:` section: virtual keys, each with the routes it may call and
 * limits kept for the governance code. Decoded in the second pass (routes must exist to be
 * named). A key is hashed as it is read; the plaintext lives only until the redaction set
 * has its copy (cfg__clients_wipe), so a running snapshot holds hashes only. Lookups hash
 * the presented key and compare it with every client's hash in constant time. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "config/bursts.h"
#include "config/clients.h"
#include "config/diag.h"
#include "config/internal.h"
#include "config/lookup.h"
#include "config/schema.h"
#include "config/types.h"
#include "core/clock.h"
#include "core/sha256.h"
#include "core/str.h"

#define MAX_CLIENTS 10000

static const char *const period_names[] = {"day", "month", "total"};
_Static_assert(BSC_ARRAY_LEN(period_names) == CFG_PERIOD_COUNT, "period_names");
static const char *const feedback_names[] = {"own", "trusted", "none"};
_Static_assert(BSC_ARRAY_LEN(feedback_names) == CFG_FEEDBACK_COUNT, "feedback_names");

void cfg__clients_note(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                       void *base, const char *where)
{
    (void)f, (void)base, (void)where;
    v->clients_src = e;
}

static void wipe(char *p)
{
    volatile char *q = p;

    while (p && *q)
        *q++ = '\0';
}

static void key_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                   void *base, const char *where)
{
    struct cfg_client *c = base;
    const char *s;

    if (!cfg__get_str(v, e->value, where, f->name, &s))
        return;
    if (!*s) {
        cfg__diag(v->s, false, e->value->line, e->value->column,
                  "'key' in %s: must not be empty (an unset variable?)", where);
        return;
    }
    if (c->key) {
        wipe(c->key);
        free(c->key);
    }
    c->key = bsc_str_dup(bsc_str_cstr(s));
    if (!c->key) {
        cfg__oom(v);
        return;
    }
    bsc_sha256(s, strlen(s), c->key_hash);
}

static bool route_into(struct cfg__v *v, struct cfg_client *c, const struct cfg__node *item,
                       const char *where)
{
    const struct cfg_route *r;

    if (item->bad)
        return true;
    if (item->kind != CFG__SCALAR || item->is_null) {
        cfg__bad_type(v, item, where, "routes", "a list of route ids");
        return true;
    }
    if (strcmp(item->text, "*") == 0) {
        c->all_routes = true;
        return true;
    }
    r = cfg_route_find(v->cfg, bsc_str_make(item->text, item->len));
    if (!r) {
        cfg__diag(v->s, false, item->line, item->column,
                  "'routes' in %s: unknown route '%.128s'", where, item->text);
        return true;
    }
    c->routes[c->n_routes++] = r;
    return true;
}

static void routes_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                      void *base, const char *where)
{
    struct cfg_client *c = base;
    const struct cfg__node *n = e->value;

    if (n->bad || n->is_null)
        return;
    if (n->kind != CFG__SEQ) {
        cfg__bad_type(v, n, where, f->name, "a list of route ids");
        return;
    }
    free(c->routes);
    c->n_routes = 0;
    c->all_routes = false;
    c->routes = calloc(n->n ? n->n : 1, sizeof(*c->routes));
    if (!c->routes) {
        cfg__oom(v);
        return;
    }
    for (size_t i = 0; i < n->n; i++)
        route_into(v, c, n->items[i].value, where);
}

static const struct cfg__field budget_fields[] = {
    {.name = "usd", .type = CFG__F_DBL, .off = offsetof(struct cfg_budget, usd), .dlo = 0,
     .dhi = 1e12, .required = true},
    {.name = "period", .type = CFG__F_ENUM, .off = offsetof(struct cfg_budget, period),
     .names = period_names, .n_names = BSC_ARRAY_LEN(period_names)},
};

#define LIMIT(key, m)                                                                        \
    .name = key, .type = CFG__F_U32, .off = offsetof(struct cfg_client, m), .lo = 0,         \
    .hi = 100000000

static const struct cfg__field client_fields[] = {
    {.name = "key", .type = CFG__F_FN, .fn = key_fn, .required = true},
    {.name = "routes", .type = CFG__F_FN, .fn = routes_fn, .required = true},
    {LIMIT("rpm", rpm)},
    {LIMIT("tpm", tpm)},
    {LIMIT("max_concurrency", max_concurrency)},
    {LIMIT("rpm_burst", rpm_burst)},
    {LIMIT("tpm_burst", tpm_burst)},
    {.name = "weight", .type = CFG__F_U32, .off = offsetof(struct cfg_client, weight), .lo = 1,
     .hi = 1000},
    {.name = "budget", .type = CFG__F_MAP, .off = offsetof(struct cfg_client, budget),
     .sub = budget_fields, .n_sub = BSC_ARRAY_LEN(budget_fields)},
    {.name = "feedback", .type = CFG__F_ENUM, .off = offsetof(struct cfg_client, feedback),
     .names = feedback_names, .n_names = BSC_ARRAY_LEN(feedback_names)},
};

/* Ids go into logs, metrics labels and store scopes: a short, plain alphabet. */
static bool id_ok(const struct cfg__node *key)
{
    bool ok = key->len > 0 && key->len <= CFG_CLIENT_ID_MAX;

    for (size_t i = 0; ok && i < key->len; i++) {
        char ch = key->text[i];

        ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '.' || ch == '_' || ch == '-';
    }
    return ok;
}

static void decode_client(struct cfg__v *v, const struct cfg__entry *item, struct cfg_client *c)
{
    const struct cfg__node *key = item->key;
    char w[CFG_CLIENT_ID_MAX + 80];

    c->budget = (struct cfg_budget){.usd = -1.0, .period = CFG_PERIOD_MONTH};
    c->weight = 1;
    if (!id_ok(key))
        cfg__diag(v->s, false, key->line, key->column,
                  "invalid client id '%.64s': ids are 1 to %d characters of A-Z a-z 0-9 . _ -",
                  key->text, CFG_CLIENT_ID_MAX);
    c->id = bsc_str_dup(bsc_str_make(key->text, key->len));
    if (!c->id) {
        cfg__oom(v);
        return;
    }
    snprintf(w, sizeof(w), "client '%.64s'", key->text);
    cfg__decode_map(v, item->value, client_fields, BSC_ARRAY_LEN(client_fields), c, w,
                    key->line, key->column);
    cfg__burst_check(v, item->value, w,
                     &(struct cfg__bursts){c->rpm, c->rpm_burst, c->tpm, c->tpm_burst});
}

/* Two clients with one key could not be told apart: an error at the second. */
static void check_duplicates(struct cfg__v *v, const struct cfg__node *m)
{
    const struct cfg *cfg = v->cfg;

    for (size_t i = 1; i < cfg->n_clients; i++) {
        for (size_t j = 0; j < i; j++) {
            if (!cfg->clients[i].key || !cfg->clients[j].key ||
                memcmp(cfg->clients[i].key_hash, cfg->clients[j].key_hash, 32) != 0)
                continue;
            cfg__diag(v->s, false, m->items[i].key->line, m->items[i].key->column,
                      "client '%s' has the same key as client '%s'", cfg->clients[i].id,
                      cfg->clients[j].id);
            break;
        }
    }
}

void cfg__clients_build(struct cfg__v *v)
{
    const struct cfg__node *m = v->clients_src ? v->clients_src->value : NULL;
    struct cfg *cfg = v->cfg;

    if (!m || m->bad || m->is_null)
        return; /* absent or null: an open gateway */
    if (m->kind != CFG__MAP) {
        cfg__bad_type(v, m, NULL, "clients", "a map of client ids to clients");
        return;
    }
    if (m->n > MAX_CLIENTS) {
        cfg__diag(v->s, false, m->line, m->column, "'clients': more than %d clients",
                  MAX_CLIENTS);
        return;
    }
    cfg->clients = calloc(m->n ? m->n : 1, sizeof(*cfg->clients));
    if (!cfg->clients) {
        cfg__oom(v);
        return;
    }
    for (size_t i = 0; i < m->n && !v->oom; i++)
        decode_client(v, &m->items[i], &cfg->clients[cfg->n_clients++]);
    if (!v->oom)
        check_duplicates(v, m);
}

void cfg__clients_wipe(struct cfg *cfg)
{
    for (size_t i = 0; i < cfg->n_clients; i++) {
        wipe(cfg->clients[i].key);
        BSC_FREE(cfg->clients[i].key);
    }
}

void cfg__clients_free(struct cfg *cfg)
{
    cfg__clients_wipe(cfg);
    for (size_t i = 0; i < cfg->n_clients; i++) {
        free(cfg->clients[i].id);
        free(cfg->clients[i].routes);
    }
    BSC_FREE(cfg->clients);
    cfg->n_clients = 0;
    for (size_t i = 0; i < cfg->n_teams; i++) {
        free(cfg->teams[i].id);
        free(cfg->teams[i].routes);
    }
    BSC_FREE(cfg->teams);
    cfg->n_teams = 0;
}

/* ---- lookups -------------------------------------------------------------------------- */

static unsigned char hash_diff(const uint8_t *a, const uint8_t *b)
{
    unsigned char diff = 0;

    for (size_t j = 0; j < BSC_SHA256_LEN; j++)
        diff |= (unsigned char)(a[j] ^ b[j]);
    return diff;
}

/* Whether client <c> takes the key hashed to <h> at wall time <now>: its secret, or the one
 * before a rotation while the grace lasts; never once expired. Both hashes are compared in
 * full whatever the first gave. */
static bool takes(const struct cfg_client *c, const uint8_t *h, uint64_t now)
{
    bool cur = hash_diff(h, c->key_hash) == 0;
    bool old = hash_diff(h, c->old_hash) == 0 && now < c->old_until_ms;

    return (cur | old) && (c->expires_ms == 0 || now < c->expires_ms);
}

const struct cfg_client *cfg_client_by_key(const struct cfg *cfg, struct bsc_str key)
{
    const struct cfg_client *found = NULL;
    uint8_t h[BSC_SHA256_LEN];
    uint64_t now = bsc_wall_ms();

    if (!cfg || !key.len)
        return NULL;
    bsc_sha256(key.p, key.len, h);
    /* Every client is compared, in full, whatever matched: the time does not say which
     * client (or how much of a hash) a guess came close to. */
    for (size_t i = 0; i < cfg->n_clients; i++)
        if (takes(&cfg->clients[i], h, now))
            found = &cfg->clients[i];
    return found;
}

const struct cfg_client *cfg_client_find(const struct cfg *cfg, struct bsc_str id)
{
    for (size_t i = 0; cfg && i < cfg->n_clients; i++)
        if (bsc_str_eq(bsc_str_cstr(cfg->clients[i].id), id))
            return &cfg->clients[i];
    return NULL;
}

static bool list_allows(const struct cfg_route *const *routes, size_t n, bool all,
                        const struct cfg_route *r)
{
    if (all)
        return true;
    for (size_t i = 0; i < n; i++)
        if (routes[i] == r)
            return true;
    return false;
}

bool cfg_client_allows(const struct cfg_client *c, const struct cfg_route *r)
{
    if (!c || !r)
        return false;
    if (c->team && !list_allows(c->team->routes, c->team->n_routes, c->team->all_routes, r))
        return false;
    return list_allows(c->routes, c->n_routes, c->all_routes, r);
}

const struct cfg_team *cfg_team_find(const struct cfg *cfg, struct bsc_str id)
{
    for (size_t i = 0; cfg && i < cfg->n_teams; i++)
        if (bsc_str_eq(bsc_str_cstr(cfg->teams[i].id), id))
            return &cfg->teams[i];
    return NULL;
}
