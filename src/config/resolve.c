/* SPDX-License-Identifier: MIT */
/* resolve.c -- the second pass of a load, once every section is decoded: breaker overrides
 * (top level -> provider -> target), target -> provider and route tier -> target
 * references, route weights, and the warnings that need several sections (a provider
 * without keys, a tier target that cannot meet its route's contract). Every lookup goes
 * through a sorted index and every duplicate check through stamps, so a huge file costs
 * O(n log n), not O(n^2). See docs/internals/config.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cloud.h"
#include "config/diag.h"
#include "config/internal.h"
#include "config/kinds.h"
#include "config/resolve.h"
#include "config/route_select.h"
#include "config/schema.h"
#include "config/types.h"
#include "config/validate.h"
#include "core/compat.h"

#define SUGGEST_MAX 1000 /* no "did you mean" among more candidates than this */

struct id_ent {
    const char *name; /* borrowed from the snapshot */
    size_t idx;       /* in the section's array */
};

struct ids {
    const char **names;    /* owned array of borrowed ids, in section order */
    struct id_ent *sorted; /* owned; by name */
    size_t n;
};

/* Scratch for the routes: which targets a route or tier already holds, and weights. */
struct marks {
    size_t *tier;   /* owned; per target: the serial of the last tier holding it */
    size_t *route;  /* owned; per target: the serial of the last route holding it */
    unsigned *tier_of; /* owned; per target: which tier of the current route holds it */
    uint32_t *weight;  /* owned; per target: its weight in the current route */
    size_t *weight_set; /* owned; per target: the route serial whose weights set it */
    size_t tier_serial, route_serial;
};

static const char *const tier_names[CFG__TIER_COUNT] = {"primary", "equivalent", "fallback"};

/* ---- sorted ids ----------------------------------------------------------------------- */

static int cmp_ent(const void *a, const void *b)
{
    return strcmp(((const struct id_ent *)a)->name, ((const struct id_ent *)b)->name);
}

static bool ids_build(struct ids *ids, const char *const *names, size_t n)
{
    ids->n = n;
    ids->names = calloc(n ? n : 1, sizeof(*ids->names));
    ids->sorted = calloc(n ? n : 1, sizeof(*ids->sorted));
    if (!ids->names || !ids->sorted)
        return false;
    for (size_t i = 0; i < n; i++) {
        ids->names[i] = names[i] ? names[i] : "";
        ids->sorted[i] = (struct id_ent){ids->names[i], i};
    }
    qsort(ids->sorted, n, sizeof(*ids->sorted), cmp_ent);
    return true;
}

static void ids_cleanup(struct ids *ids)
{
    BSC_FREE(ids->names);
    BSC_FREE(ids->sorted);
}

/* Returns the index of <name>, or -1. */
static long ids_find(const struct ids *ids, const char *name)
{
    size_t lo = 0, hi = ids->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(name, ids->sorted[mid].name);

        if (c == 0)
            return (long)ids->sorted[mid].idx;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return -1;
}

/* Reports "unknown <what> '<name>' in <where>", with a suggestion when one is close. */
static void unknown_ref(struct cfg__v *v, const struct cfg__node *n, const struct ids *ids,
                        const char *what, const char *where)
{
    const char *close = NULL;

    if (!v->s->full && ids->n <= SUGGEST_MAX)
        close = cfg__closest(n->text, ids->names, ids->n);
    if (close)
        cfg__diag(v->s, false, n->line, n->column, "unknown %s '%.*s' in %s (did you mean '%s'?)",
                  what, n->len > 64 ? 64 : (int)n->len, n->text, where, close);
    else
        cfg__diag(v->s, false, n->line, n->column, "unknown %s '%.*s' in %s", what,
                  n->len > 64 ? 64 : (int)n->len, n->text, where);
}

/* ---- breaker overrides ---------------------------------------------------------------- */

static void breaker_override(struct cfg__v *v, const struct cfg__entry *e, struct cfg_breaker *b,
                             const char *owner)
{
    char where[CFG__MAX_ID + 96];

    snprintf(where, sizeof(where), "%s breaker", owner);
    cfg__decode_map(v, e->value, cfg__breaker_fields, cfg__n_breaker_fields, b, where,
                    e->key->line, e->key->column);
    if (e->value->kind == CFG__MAP)
        cfg__breaker_check(v, e->value, b, where);
}

/* ---- providers ------------------------------------------------------------------------ */

static void provider_warnings(struct cfg__v *v, const struct cfg_provider *p,
                              const struct cfg__prov_src *src, const char *where)
{
    if (p->n_keys == 0 && !src->keys_bad && p->kind != CFG_PROV_OPENAI_COMPATIBLE &&
        !cfg__is_cloud_kind(p->kind))
        cfg__diag(v->s, true, src->line, src->column,
                  "%s has no keys, but kind %s needs one", where,
                  cfg_provider_kind_name(p->kind));
    if (p->kind == CFG_PROV_AZURE && !p->api_version)
        cfg__diag(v->s, true, src->line, src->column,
                  "%s of kind azure has no 'api_version'; Azure requires one", where);
    if (p->kind != CFG_PROV_AZURE && p->api_version)
        cfg__diag(v->s, true, src->line, src->column,
                  "'api_version' in %s is only used by kind azure", where);
    /* An error, not a warning: the operator expects rules that would silently not apply. */
    if (p->kind != CFG_PROV_OPENAI_COMPATIBLE && p->profile != CFG_PROFILE_AUTO)
        cfg__diag(v->s, false, src->line, src->column,
                  "'profile' in %s is only used by kind openai_compatible", where);
}

static void resolve_providers(struct cfg__v *v)
{
    struct cfg *cfg = v->cfg;

    for (size_t i = 0; i < cfg->n_providers; i++) {
        struct cfg_provider *p = &cfg->providers[i];
        const struct cfg__prov_src *src = &v->psrc[i];
        char where[CFG__MAX_ID + 16];

        snprintf(where, sizeof(where), "provider '%.*s'", CFG__MAX_ID, p->id ? p->id : "");
        p->breaker = cfg->breaker;
        if (src->breaker) {
            p->has_breaker = true;
            breaker_override(v, src->breaker, &p->breaker, where);
        }
        provider_warnings(v, p, src, where);
        cfg__resolve_cloud(v, p, src, where);
    }
}

/* ---- targets -------------------------------------------------------------------------- */

/* Why <m> cannot be a Gemini model id, or NULL when it can. The id goes into the URL path
 * ({base_url}/models/<id>:generateContent), where "/" and ".." would move the request to
 * another resource; so: letters, digits, '-', '_' and '.', never "..", with at most one
 * leading collection ("models/", "tunedModels/"), which is letters only. */
const char *cfg__gemini_model_problem(const char *m)
{
    const char *slash = strchr(m, '/'), *id = slash ? slash + 1 : m;

    for (const char *p = m; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_' || *p == '.' || *p == '/'))
            return "only letters, digits, '-', '_' and '.' are allowed (and one collection "
                   "prefix such as 'models/')";
    if (slash && strchr(id, '/'))
        return "only one collection prefix such as 'models/' is allowed";
    for (const char *p = m; slash && p < slash; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
            return "the part before '/' must be a collection such as 'models'";
    if (slash == m)
        return "it starts with '/'";
    if (!*id)
        return "it is empty after the collection";
    if (strlen(id) > 256)
        return "it is longer than 256 bytes";
    if (strstr(id, "..") || strcmp(id, ".") == 0)
        return "'.' and '..' would change the URL path";
    return NULL;
}

/* Checks what a target's kind puts into the URL path. Gemini: the model (above). Azure:
 * the deployment (else the model), percent-encoded by the adapter, so only the dot
 * segments are left to refuse. */
static void check_url_names(struct cfg__v *v, const struct cfg_target *t,
                            const struct cfg__target_src *src, const char *where)
{
    bool dep = t->provider && t->provider->kind == CFG_PROV_AZURE && t->deployment &&
               src->deployment;
    const struct cfg__entry *e = dep ? src->deployment : src->model;
    const char *name = dep ? t->deployment : t->model, *problem = NULL;
    char got[64];

    if (!t->provider || !e || !name || e->value->kind != CFG__SCALAR)
        return;
    if (t->provider->kind == CFG_PROV_GEMINI)
        problem = cfg__gemini_model_problem(name);
    else if (t->provider->kind == CFG_PROV_AZURE && (!strcmp(name, ".") || !strcmp(name, "..")))
        problem = "'.' and '..' would change the URL path";
    if (!problem)
        return;
    cfg__describe(got, sizeof(got), e->value);
    cfg__diag(v->s, false, e->value->line, e->value->column,
              "'%s' in %s: %s is not a valid %s %s: %s", dep ? "deployment" : "model", where, got,
              cfg_provider_kind_name(t->provider->kind), dep ? "deployment name" : "model id",
              problem);
}

/* Fills the cache prices <t> leaves unset: Anthropic's multipliers of the input price for
 * kind anthropic; the input price for the others, which may overcharge cache-heavy traffic
 * and so is said at load (a target without a price costs nothing and is not warned of). */
static void price_defaults(struct cfg__v *v, struct cfg_target *t,
                           const struct cfg__target_src *src, const char *where)
{
    struct cfg_price *p = &t->price;
    bool anth = (t->provider && t->provider->kind == CFG_PROV_ANTHROPIC) || cfg__is_cloud_claude(t);

    if (!anth && p->cached_input_per_mtok < 0 && p->input_per_mtok > 0 && t->provider)
        cfg__diag(v->s, true, src->line, src->column,
                  "%s has no 'price.cached_input_per_mtok': prompt tokens its provider serves "
                  "from cache are priced at input_per_mtok, which may overcharge", where);
    if (p->cached_input_per_mtok < 0)
        p->cached_input_per_mtok = anth ? p->input_per_mtok * CFG_ANTH_CACHE_READ_X
                                        : p->input_per_mtok;
    if (p->cache_write_per_mtok < 0)
        p->cache_write_per_mtok = anth ? p->input_per_mtok * CFG_ANTH_CACHE_WRITE_X
                                       : p->input_per_mtok;
    if (p->cache_write_1h_per_mtok < 0)
        p->cache_write_1h_per_mtok = anth ? p->input_per_mtok * CFG_ANTH_CACHE_WRITE_1H_X
                                          : p->input_per_mtok;
}

static void resolve_targets(struct cfg__v *v, const struct ids *providers)
{
    struct cfg *cfg = v->cfg;

    for (size_t i = 0; i < cfg->n_targets; i++) {
        struct cfg_target *t = &cfg->targets[i];
        const struct cfg__target_src *src = &v->tsrc[i];
        char where[CFG__MAX_ID + 16];

        snprintf(where, sizeof(where), "target '%.*s'", CFG__MAX_ID, t->id ? t->id : "");
        if (src->provider) {
            long idx = ids_find(providers, src->provider->value->text);

            if (idx < 0)
                unknown_ref(v, src->provider->value, providers, "provider", where);
            else
                t->provider = &cfg->providers[idx];
        }
        /* Overrides cascade: top level, then the provider's, then the target's own. */
        t->breaker = t->provider ? t->provider->breaker : cfg->breaker;
        if (src->breaker) {
            t->has_breaker = true;
            breaker_override(v, src->breaker, &t->breaker, where);
        }
        check_url_names(v, t, src, where);
        if (t->publisher && (!t->provider || t->provider->kind != CFG_PROV_VERTEX ||
                             (strcmp(t->publisher, "anthropic") && strcmp(t->publisher, "google"))))
            cfg__diag(v->s, false, src->line, src->column,
                      "%s: 'publisher' is \"anthropic\" or \"google\", on a vertex target only",
                      where);
        price_defaults(v, t, src, where);
        if (t->provider && t->provider->kind == CFG_PROV_AZURE && !t->deployment)
            cfg__diag(v->s, true, src->line, src->column,
                      "%s on azure provider '%s' has no 'deployment'", where, t->provider->id);
    }
}

/* ---- routes --------------------------------------------------------------------------- */

static struct cfg_tier *tier_of(struct cfg_route *r, unsigned id)
{
    return id == CFG__PRIMARY ? &r->primary : id == CFG__EQUIVALENT ? &r->equivalent : &r->fallback;
}

/* Warns when <t> cannot meet <r>'s contract (unknown sizes are not held against it). */
static void contract_warning(struct cfg__v *v, const struct cfg_route *r,
                             const struct cfg_target *t, unsigned tier,
                             const struct cfg__node *at)
{
    uint32_t missing = r->requires.capabilities & ~t->capabilities;
    char why[512];
    size_t o = 0;

    why[0] = '\0';
    for (size_t b = 0; b < cfg__n_cap_names && o < sizeof(why); b++)
        if (missing & (1u << b))
            o += (size_t)snprintf(why + o, sizeof(why) - o, "%s%s", o ? ", " : "missing ",
                                  cfg__cap_names[b]);
    if (o < sizeof(why) && t->context_window && t->context_window < r->requires.context_window_min)
        o += (size_t)snprintf(why + o, sizeof(why) - o, "%scontext_window %llu < %llu",
                              o ? "; " : "", (unsigned long long)t->context_window,
                              (unsigned long long)r->requires.context_window_min);
    if (o < sizeof(why) && t->max_output_tokens &&
        t->max_output_tokens < r->requires.max_output_tokens_min)
        o += (size_t)snprintf(why + o, sizeof(why) - o, "%smax_output_tokens %llu < %llu",
                              o ? "; " : "", (unsigned long long)t->max_output_tokens,
                              (unsigned long long)r->requires.max_output_tokens_min);
    if (o)
        cfg__diag(v->s, true, at->line, at->column, "%s target '%s' cannot satisfy route '%s': %s",
                  tier_names[tier], t->id, r->id, why);
}

/* Resolves one tier list of route <r> (the <ri>th). */
static void resolve_tier(struct cfg__v *v, struct cfg_route *r, const struct cfg__entry *e,
                         unsigned tier, const struct ids *targets, struct marks *mk)
{
    struct cfg_tier *t = tier_of(r, tier);
    const struct cfg__node *n = e->value;
    char where[CFG__MAX_ID + 32];

    snprintf(where, sizeof(where), "route '%.*s' %s", CFG__MAX_ID, r->id ? r->id : "",
             tier_names[tier]);
    if (n->bad || n->is_null)
        return;
    if (n->kind != CFG__SEQ) {
        char kr[CFG__MAX_ID + 32];

        snprintf(kr, sizeof(kr), "route '%.*s'", CFG__MAX_ID, r->id ? r->id : "");
        cfg__bad_type(v, n, kr, tier_names[tier], "a list of target ids");
        return;
    }
    t->targets = calloc(n->n ? n->n : 1, sizeof(*t->targets));
    t->weights = calloc(n->n ? n->n : 1, sizeof(*t->weights));
    if (!t->targets || !t->weights) {
        cfg__oom(v);
        return;
    }
    mk->tier_serial++;
    for (size_t i = 0; i < n->n; i++) {
        const struct cfg__node *item = n->items[i].value;
        long idx;

        if (item->bad)
            continue;
        if (item->kind != CFG__SCALAR || item->is_null) {
            cfg__bad_type(v, item, NULL, where, "a target id");
            continue;
        }
        idx = ids_find(targets, item->text);
        if (idx < 0) {
            unknown_ref(v, item, targets, "target", where);
            continue;
        }
        if (mk->tier[idx] == mk->tier_serial) {
            cfg__diag(v->s, false, item->line, item->column, "target '%s' is listed twice in %s",
                      item->text, where);
            continue;
        }
        if (mk->route[idx] == mk->route_serial)
            cfg__diag(v->s, true, item->line, item->column,
                      "target '%s' is in both %s and %s of route '%s'", item->text,
                      tier_names[mk->tier_of[idx]], tier_names[tier], r->id);
        mk->tier[idx] = mk->tier_serial;
        mk->route[idx] = mk->route_serial;
        mk->tier_of[idx] = tier;
        t->targets[t->n] = &v->cfg->targets[idx];
        t->weights[t->n] = 1;
        t->n++;
        contract_warning(v, r, &v->cfg->targets[idx], tier, item);
    }
}

/* Reads `weights: {target: n}` into mk->weight for the targets of the current route. */
static void read_weights(struct cfg__v *v, struct cfg_route *r, const struct cfg__entry *e,
                         const struct ids *targets, struct marks *mk)
{
    const struct cfg__node *n = e->value;
    char where[CFG__MAX_ID + 32];

    snprintf(where, sizeof(where), "route '%.*s' weights", CFG__MAX_ID, r->id ? r->id : "");
    if (n->bad || n->is_null)
        return;
    if (n->kind != CFG__MAP) {
        char owner[CFG__MAX_ID + 16];

        snprintf(owner, sizeof(owner), "route '%.*s'", CFG__MAX_ID, r->id ? r->id : "");
        cfg__bad_type(v, n, owner, "weights", "a map of target ids to integers");
        return;
    }
    if (r->balance != CFG_BALANCE_WEIGHTED && n->n)
        cfg__diag(v->s, true, e->key->line, e->key->column,
                  "'weights' in route '%s' are ignored unless balance is weighted", r->id);
    for (size_t i = 0; i < n->n; i++) {
        const struct cfg__node *key = n->items[i].key;
        long idx = ids_find(targets, key->text);
        uint64_t w;

        if (idx < 0 || mk->route[idx] != mk->route_serial) {
            cfg__diag(v->s, false, key->line, key->column,
                      "%s names target '%.*s', which is not in this route", where,
                      key->len > 64 ? 64 : (int)key->len, key->text);
            continue;
        }
        if (!cfg__get_u64(v, n->items[i].value, where, key->text, 0, 1000000, &w))
            continue;
        mk->weight[idx] = (uint32_t)w;
        mk->weight_set[idx] = mk->route_serial;
    }
}

static void apply_weights(struct cfg__v *v, struct cfg_route *r, const struct cfg__entry *e,
                          struct marks *mk)
{
    bool positive = false;

    for (unsigned tier = 0; tier < CFG__TIER_COUNT; tier++) {
        struct cfg_tier *t = tier_of(r, tier);

        for (size_t i = 0; i < t->n; i++) {
            size_t idx = (size_t)(t->targets[i] - v->cfg->targets);

            if (mk->weight_set[idx] == mk->route_serial)
                t->weights[i] = mk->weight[idx];
            if (tier == CFG__PRIMARY && t->weights[i])
                positive = true;
        }
    }
    if (r->balance == CFG_BALANCE_WEIGHTED && r->primary.n && !positive)
        cfg__diag(v->s, false, e->key->line, e->key->column,
                  "'weights' in route '%s' leave no primary target with a weight above 0", r->id);
}

static void route_checks(struct cfg__v *v, const struct cfg_route *r,
                         const struct cfg__route_src *src)
{
    const struct cfg__entry *p = src->tier[CFG__PRIMARY];
    bool any_enabled = false;

    /* A primary that is missing or null is reported by the schema; an empty one here. */
    if (p && p->value->kind == CFG__SEQ && p->value->n == 0)
        cfg__diag(v->s, false, p->value->line, p->value->column,
                  "'primary' in route '%s' must list at least one target", r->id);
    for (unsigned tier = 0; tier < CFG__TIER_COUNT; tier++) {
        const struct cfg_tier *t = tier == CFG__PRIMARY      ? &r->primary
                                   : tier == CFG__EQUIVALENT ? &r->equivalent
                                                             : &r->fallback;

        for (size_t i = 0; i < t->n && !t->disabled; i++)
            if (!t->targets[i]->disabled &&
                !(t->targets[i]->provider && t->targets[i]->provider->disabled))
                any_enabled = true;
    }
    if (r->primary.n && !any_enabled)
        cfg__diag(v->s, true, src->line, src->column,
                  "route '%s' has no enabled target: every request to it will fail", r->id);
}

/* Resolves `shadow.targets` of route <r>: known target ids, each once. */
static void resolve_shadow(struct cfg__v *v, struct cfg_route *r, const struct cfg__entry *e,
                           const struct ids *targets)
{
    const struct cfg__node *n = e->value;
    struct cfg_tier *t = &r->shadow.targets;
    char where[CFG__MAX_ID + 32];

    snprintf(where, sizeof(where), "route '%.*s' shadow", CFG__MAX_ID, r->id ? r->id : "");
    if (n->bad || n->is_null)
        return;
    if (n->kind != CFG__SEQ) {
        cfg__bad_type(v, n, where, "targets", "a list of target ids");
        return;
    }
    t->targets = calloc(n->n ? n->n : 1, sizeof(*t->targets));
    if (!t->targets) {
        cfg__oom(v);
        return;
    }
    for (size_t i = 0; i < n->n; i++) {
        const struct cfg__node *item = n->items[i].value;
        long idx;
        bool dup = false;

        if (item->bad)
            continue;
        if (item->kind != CFG__SCALAR || item->is_null) {
            cfg__bad_type(v, item, NULL, where, "a target id");
            continue;
        }
        idx = ids_find(targets, item->text);
        if (idx < 0) {
            unknown_ref(v, item, targets, "target", where);
            continue;
        }
        for (size_t k = 0; k < t->n; k++)
            dup = dup || t->targets[k] == &v->cfg->targets[idx];
        if (dup) {
            cfg__diag(v->s, false, item->line, item->column, "target '%s' is listed twice in %s",
                      item->text, where);
            continue;
        }
        t->targets[t->n++] = &v->cfg->targets[idx];
    }
}

/* Resolves `cache.embeddings_target` of route <r> (a semantic cache): a known target id. */
static void resolve_cache_target(struct cfg__v *v, struct cfg_route *r,
                                 const struct cfg__entry *e, const struct ids *targets)
{
    const struct cfg__node *n = e->value;
    char where[CFG__MAX_ID + 32];
    long idx;

    snprintf(where, sizeof(where), "route '%.*s' cache", CFG__MAX_ID, r->id ? r->id : "");
    if (n->bad || n->kind != CFG__SCALAR)
        return; /* reported by the first pass: not a string */
    if (n->is_null || !n->len) {
        cfg__diag(v->s, false, n->line, n->column,
                  "'embeddings_target' in %s: semantic needs a target id", where);
        return;
    }
    idx = ids_find(targets, n->text);
    if (idx < 0) {
        unknown_ref(v, n, targets, "target", where);
        return;
    }
    r->cache.embed_target = &v->cfg->targets[idx];
}

static void resolve_routes(struct cfg__v *v, const struct ids *targets)
{
    struct cfg *cfg = v->cfg;
    size_t n = cfg->n_targets ? cfg->n_targets : 1;
    struct marks mk = {
        .tier = calloc(n, sizeof(size_t)),
        .route = calloc(n, sizeof(size_t)),
        .tier_of = calloc(n, sizeof(unsigned)),
        .weight = calloc(n, sizeof(uint32_t)),
        .weight_set = calloc(n, sizeof(size_t)),
    };

    if (!mk.tier || !mk.route || !mk.tier_of || !mk.weight || !mk.weight_set) {
        cfg__oom(v);
        goto out;
    }
    for (size_t i = 0; i < cfg->n_routes && !v->oom; i++) {
        struct cfg_route *r = &cfg->routes[i];
        const struct cfg__route_src *src = &v->rsrc[i];

        mk.route_serial++;
        for (unsigned tier = 0; tier < CFG__TIER_COUNT && !v->oom; tier++)
            if (src->tier[tier])
                resolve_tier(v, r, src->tier[tier], tier, targets, &mk);
        if (v->oom)
            break;
        if (src->weights) {
            read_weights(v, r, src->weights, targets, &mk);
            apply_weights(v, r, src->weights, &mk);
        }
        route_checks(v, r, src);
        if (src->shadow_targets)
            resolve_shadow(v, r, src->shadow_targets, targets);
        if (src->cache_target)
            resolve_cache_target(v, r, src->cache_target, targets);
    }
out:
    free(mk.tier);
    free(mk.route);
    free(mk.tier_of);
    free(mk.weight);
    free(mk.weight_set);
}

/* ---- entry ---------------------------------------------------------------------------- */

static bool section_ids(struct ids *ids, const void *arr, size_t n, size_t stride, size_t id_off)
{
    const char **names = calloc(n ? n : 1, sizeof(*names));
    bool ok;

    if (!names)
        return false;
    for (size_t i = 0; i < n; i++)
        names[i] = *(char *const *)(const void *)((const char *)arr + i * stride + id_off);
    ok = ids_build(ids, names, n);
    free(names);
    return ok;
}

void cfg__resolve(struct cfg__v *v)
{
    struct cfg *cfg = v->cfg;
    struct ids providers = {0}, targets = {0};

    resolve_providers(v);
    if (!section_ids(&providers, cfg->providers, cfg->n_providers, sizeof(*cfg->providers),
                     offsetof(struct cfg_provider, id)) ||
        !section_ids(&targets, cfg->targets, cfg->n_targets, sizeof(*cfg->targets),
                     offsetof(struct cfg_target, id))) {
        cfg__oom(v);
        goto out;
    }
    resolve_targets(v, &providers);
    resolve_routes(v, &targets);
    cfg__select_resolve(v);
out:
    ids_cleanup(&providers);
    ids_cleanup(&targets);
}
