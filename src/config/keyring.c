/* SPDX-License-Identifier: MIT */
/* keyring.c -- client keys made through the admin API, merged into a snapshot. The admin
 * API keeps them as one JSON document in the store (api/admin_keys.c writes it); every
 * build of a snapshot (start, SIGHUP, an admin change, a change seen in a shared store)
 * appends the live ones to cfg->clients, so the request path treats them exactly as the
 * file's clients: the same allow-lists, limits and budgets. Only hashes are in the document
 * and in the snapshot. See docs/internals/keys.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "config/clients.h"
#include "config/keyring.h"
#include "config/lookup.h"
#include "config/types.h"
#include "core/json_parse.h"
#include "core/str.h"

/* A keyring text nests a few levels; read as before (json-c's default
 * depth, lenient). */
#define KEYRING_DEPTH 32

static const char *const period_names[] = {"day", "month", "total"};

/* A line about key <id>, or team <id> when <id> is "team:<team id>" (team_of passes that). */
static void warnf(char *warn, size_t len, const char *id, const char *why)
{
    size_t at = warn ? strlen(warn) : 0;
    bool team = strncmp(id, "team:", 5) == 0;

    if (warn && at + 1 < len)
        snprintf(warn + at, len - at, "%s%s '%.64s': %s", at ? "; " : "", team ? "team" : "key",
                 team ? id + 5 : id, why);
}

static uint64_t u64_of(struct json_object *o, const char *name)
{
    struct json_object *v;

    if (!json_object_object_get_ex(o, name, &v) || !json_object_is_type(v, json_type_int))
        return 0;
    return (uint64_t)json_object_get_int64(v) > 0 ? (uint64_t)json_object_get_int64(v) : 0;
}

static const char *str_of(struct json_object *o, const char *name)
{
    struct json_object *v;

    if (!json_object_object_get_ex(o, name, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

/* 64 hex digits into 32 bytes; false when <hex> is not that. */
static bool unhex32(const char *hex, uint8_t *out)
{
    if (!hex || strlen(hex) != 64)
        return false;
    for (size_t i = 0; i < 32; i++) {
        unsigned v;

        if (sscanf(hex + 2 * i, "%2x", &v) != 1)
            return false;
        out[i] = (uint8_t)v;
    }
    return true;
}

static uint32_t limit_of(struct json_object *o, const char *name)
{
    uint64_t v = u64_of(o, name);

    return v > 100000000u ? 100000000u : (uint32_t)v;
}

static void budget_read(struct json_object *bud, struct cfg_budget *b)
{
    struct json_object *usd;
    const char *period;

    b->usd = -1.0;
    b->period = CFG_PERIOD_MONTH;
    if (!bud || !json_object_is_type(bud, json_type_object))
        return;
    if (json_object_object_get_ex(bud, "usd", &usd) &&
        (json_object_is_type(usd, json_type_double) || json_object_is_type(usd, json_type_int)))
        b->usd = json_object_get_double(usd);
    period = str_of(bud, "period");
    for (size_t i = 0; period && i < CFG_PERIOD_COUNT; i++)
        if (strcmp(period, period_names[i]) == 0)
            b->period = (enum cfg_period)i;
}

static void budget_of(struct json_object *o, struct cfg_budget *b)
{
    struct json_object *bud = NULL;

    json_object_object_get_ex(o, "budget", &bud);
    budget_read(bud, b);
}

/* `budgets: [{usd, period, route?}]` of key or team <o> into <out> (at most
 * CFG_BUDGETS_MAX); one naming a route the config does not have is skipped, with a line in
 * <warn>: a budget that cannot apply to any request bounds nothing. */
static size_t budgets_of(const struct cfg *cfg, struct json_object *o,
                         struct cfg_budget_line *out, const char *id, char *warn,
                         size_t warnlen)
{
    struct json_object *arr;
    size_t n = 0;

    if (!json_object_object_get_ex(o, "budgets", &arr) || !json_object_is_type(arr, json_type_array))
        return 0;
    for (size_t i = 0; i < json_object_array_length(arr) && n < CFG_BUDGETS_MAX; i++) {
        struct json_object *b = json_object_array_get_idx(arr, i);
        const char *route = str_of(b, "route");
        struct cfg_budget_line l = {0};

        budget_read(b, &l.budget);
        if (l.budget.usd < 0)
            continue;
        if (route && !(l.route = cfg_route_find(cfg, bsc_str_cstr(route)))) {
            warnf(warn, warnlen, id, "has a budget on a route the config does not have");
            continue;
        }
        out[n++] = l;
    }
    return n;
}

/* The routes of key or team <o> that <cfg> has; false on no memory. */
static bool routes_of(struct cfg *cfg, struct json_object *o, const struct cfg_route ***routes,
                      size_t *n_routes, bool *all, const char *id, char *warn, size_t warnlen)
{
    struct json_object *rs;
    size_t n;

    if (!json_object_object_get_ex(o, "routes", &rs) || !json_object_is_type(rs, json_type_array))
        return true; /* no routes: the key can call nothing */
    n = json_object_array_length(rs);
    *routes = calloc(n ? n : 1, sizeof(**routes));
    if (!*routes)
        return false;
    for (size_t i = 0; i < n; i++) {
        const char *name = json_object_get_string(json_object_array_get_idx(rs, i));
        const struct cfg_route *r = name ? cfg_route_find(cfg, bsc_str_cstr(name)) : NULL;

        if (name && strcmp(name, "*") == 0)
            *all = true;
        else if (r)
            (*routes)[(*n_routes)++] = r;
        else
            warnf(warn, warnlen, id, "names a route the config does not have");
    }
    return true;
}

static bool id_taken(const struct cfg *cfg, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(cfg->clients[i].id, id) == 0)
            return true;
    return false;
}

/* Fills <c> from key <o>; false when the key is not live (revoked, malformed, a taken id),
 * <oom> set on no memory. */
static bool client_of(struct cfg *cfg, size_t n_file, struct json_object *o, struct cfg_client *c,
                      bool *oom, char *warn, size_t warnlen)
{
    const char *id = str_of(o, "id");

    memset(c, 0, sizeof(*c));
    if (!id || !*id || strlen(id) > CFG_CLIENT_ID_MAX || u64_of(o, "revoked_ms"))
        return false;
    if (id_taken(cfg, n_file, id)) {
        warnf(warn, warnlen, id, "has the id of a client of the config file: skipped");
        return false;
    }
    if (!unhex32(str_of(o, "hash"), c->key_hash)) {
        warnf(warn, warnlen, id, "has no valid hash: skipped");
        return false;
    }
    if (unhex32(str_of(o, "old_hash"), c->old_hash))
        c->old_until_ms = u64_of(o, "old_until_ms");
    c->id = bsc_str_dup(bsc_str_cstr(id));
    if (!c->id ||
        !routes_of(cfg, o, &c->routes, &c->n_routes, &c->all_routes, id, warn, warnlen)) {
        free(c->id);
        free(c->routes);
        *oom = true;
        return false;
    }
    c->runtime = true;
    c->rpm = limit_of(o, "rpm");
    c->tpm = limit_of(o, "tpm");
    c->max_concurrency = limit_of(o, "max_concurrency");
    c->expires_ms = u64_of(o, "expires_ms");
    budget_of(o, &c->budget);
    c->n_budgets = budgets_of(cfg, o, c->budgets, id, warn, warnlen);
    if (str_of(o, "team")) {
        c->team = cfg_team_find(cfg, bsc_str_cstr(str_of(o, "team")));
        if (!c->team) { /* it would escape its team's bounds: refused until fixed */
            warnf(warn, warnlen, id, "names a team the keyring does not have: skipped");
            free(c->id);
            free(c->routes);
            return false;
        }
    }
    return true;
}

/* Fills <t> from team <o>; false when malformed or deleted, <oom> set on no memory. */
static bool team_of(struct cfg *cfg, struct json_object *o, struct cfg_team *t, bool *oom,
                    char *warn, size_t warnlen)
{
    const char *id = str_of(o, "id");
    char label[CFG_TEAM_ID_MAX + 6];

    memset(t, 0, sizeof(*t));
    if (!id || !*id || strlen(id) > CFG_TEAM_ID_MAX || u64_of(o, "deleted_ms"))
        return false;
    snprintf(label, sizeof(label), "team:%s", id);
    t->id = bsc_str_dup(bsc_str_cstr(id));
    t->all_routes = !json_object_object_get_ex(o, "routes", NULL); /* no list: no bound */
    if (!t->id ||
        !routes_of(cfg, o, &t->routes, &t->n_routes, &t->all_routes, label, warn, warnlen)) {
        free(t->id);
        free(t->routes);
        *oom = true;
        return false;
    }
    t->rpm = limit_of(o, "rpm");
    t->tpm = limit_of(o, "tpm");
    t->max_concurrency = limit_of(o, "max_concurrency");
    budget_of(o, &t->budget);
    t->n_budgets = budgets_of(cfg, o, t->budgets, label, warn, warnlen);
    return true;
}

/* The keyring's teams into cfg->teams (before the keys, which point at them). */
static enum bsc_err merge_teams(struct cfg *cfg, struct json_object *doc, char *warn,
                                size_t warnlen)
{
    struct json_object *teams;
    size_t n;
    bool oom = false;

    if (!json_object_object_get_ex(doc, "teams", &teams) ||
        !json_object_is_type(teams, json_type_array))
        return BSC_OK;
    n = json_object_array_length(teams);
    cfg->teams = calloc(n ? n : 1, sizeof(*cfg->teams));
    if (!cfg->teams)
        return BSC_ENOMEM;
    for (size_t i = 0; i < n && !oom; i++)
        if (team_of(cfg, json_object_array_get_idx(teams, i), &cfg->teams[cfg->n_teams], &oom,
                    warn, warnlen))
            cfg->n_teams++;
    return oom ? BSC_ENOMEM : BSC_OK;
}

enum bsc_err cfg_keyring_merge(struct cfg *cfg, const char *json, size_t len, char *warn,
                               size_t warnlen)
{
    struct json_object *doc =
        bsc_json_parse(bsc_str_make(json, len), KEYRING_DEPTH, BSC_JSON_LENIENT, NULL);
    struct json_object *keys;
    struct cfg_client *grown;
    size_t n, n_file = cfg->n_clients;
    bool oom = false;

    if (!doc || !json_object_object_get_ex(doc, "keys", &keys) ||
        !json_object_is_type(keys, json_type_array)) {
        json_object_put(doc);
        return BSC_EPARSE;
    }
    if (merge_teams(cfg, doc, warn, warnlen) != BSC_OK) {
        json_object_put(doc);
        return BSC_ENOMEM;
    }
    n = json_object_array_length(keys);
    grown = realloc(cfg->clients, (n_file + n + 1) * sizeof(*grown));
    if (!grown) {
        json_object_put(doc);
        return BSC_ENOMEM;
    }
    cfg->clients = grown;
    cfg->keyring_used = cfg->keyring_used || n > 0;
    for (size_t i = 0; i < n && !oom; i++)
        if (client_of(cfg, n_file, json_object_array_get_idx(keys, i),
                      &cfg->clients[cfg->n_clients], &oom, warn, warnlen))
            cfg->n_clients++;
    json_object_put(doc);
    return oom ? BSC_ENOMEM : BSC_OK;
}
