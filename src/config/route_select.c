/* SPDX-License-Identifier: MIT */
/* route_select.c -- the `select` key of a route (task routing): a route that names other routes
 * by rules instead of tiers. Pass 1 keeps a select route's map to `select` alone; pass 2 decodes
 * the rules (conditions through a schema table, last_user_matches compiled with the linear-time
 * engine of contract/regex.h) and resolves the routes they name: no unknown route, no chain to
 * another select route, no rule after one that always holds. Matching a request is
 * policy/select.c. See docs/configuration.md "select" and docs/internals/config.md. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/diag.h"
#include "config/internal.h"
#include "config/route_select.h"
#include "config/schema.h"
#include "config/types.h"
#include "contract/regex.h"
#include "core/compat.h"

#define MAX_RULES 64 /* rules of one route; matching is linear in them */
#define MAX_META  16 /* metadata conditions of one rule */

/* ---- pass 1 --------------------------------------------------------------------------- */

static void select_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                      void *base, const char *where)
{
    (void)f, (void)base, (void)where;
    ((struct cfg__route_src *)v->cur)->select = e;
}

static const struct cfg__field select_route_fields[] = {
    {.name = "select", .type = CFG__F_FN, .fn = select_fn, .required = true},
};

static bool is_route_key(const struct cfg__node *key, const struct cfg__field *fields, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(fields[i].name, key->text) == 0)
            return true;
    return false;
}

void cfg__select_route(struct cfg__v *v, const struct cfg__node *map,
                       const struct cfg__field *route_fields, size_t n_route_fields,
                       const char *where)
{
    struct cfg__route_src *src = v->cur;
    struct cfg__node rest = *map; /* the map without the keys refused below */

    rest.items = calloc(map->n ? map->n : 1, sizeof(*rest.items));
    if (!rest.items) {
        cfg__oom(v);
        return;
    }
    rest.n = 0;
    for (size_t i = 0; i < map->n; i++) {
        const struct cfg__node *key = map->items[i].key;

        if (strcmp(key->text, "select") != 0 && is_route_key(key, route_fields, n_route_fields))
            cfg__diag(v->s, false, key->line, key->column,
                      "'%s' in %s: a route with 'select' has no tiers, envelope or contract of "
                      "its own (the route a rule selects brings them)",
                      key->text, where);
        else
            rest.items[rest.n++] = map->items[i];
    }
    cfg__decode_map(v, &rest, select_route_fields, BSC_ARRAY_LEN(select_route_fields), &rest, where,
                    map->line, map->column);
    free(rest.items);
    if (src->select) /* point into the document, not into <rest> */
        src->select = cfg__map_find(map, "select");
}

/* ---- conditions ----------------------------------------------------------------------- */

/* An HTTP token, so that the key also names a header (X-Bascule-Meta-<key>). */
static bool is_token(const char *s)
{
    if (!*s || strlen(s) > 128)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              strchr("!#$%&'*+-.^_`|~", *s)))
            return false;
    return true;
}

/* Frees <rule>'s metadata pairs: a key written twice in one `if` map is decoded twice, and
 * the later one replaces the earlier. */
static void drop_metadata(struct cfg_sel_rule *rule)
{
    for (size_t k = 0; k < rule->n_metadata; k++) {
        free(rule->metadata[k].key);
        free(rule->metadata[k].value);
    }
    BSC_FREE(rule->metadata);
    rule->n_metadata = 0;
}

static void metadata_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                        void *base, const char *where)
{
    struct cfg_sel_rule *rule = base;
    const struct cfg__node *m = e->value;

    if (m->bad || m->is_null)
        return;
    if (m->kind != CFG__MAP || m->n == 0 || m->n > MAX_META) {
        cfg__bad_type(v, m, where, f->name, "a map of 1..16 keys to strings");
        return;
    }
    drop_metadata(rule);
    rule->metadata = calloc(m->n, sizeof(*rule->metadata));
    if (!rule->metadata) {
        cfg__oom(v);
        return;
    }
    for (size_t i = 0; i < m->n; i++) {
        const struct cfg__node *key = m->items[i].key, *val = m->items[i].value;
        struct cfg_sel_meta *md;
        char w[400];

        if (!is_token(key->text)) {
            cfg__diag(v->s, false, key->line, key->column,
                      "metadata key '%.64s' in %s: 1..128 letters, digits or !#$%%&'*+-.^_`|~ "
                      "(it also names the header X-Bascule-Meta-<key>)",
                      key->text, where);
            continue;
        }
        snprintf(w, sizeof(w), "%s metadata", where);
        if (val->bad)
            continue;
        if (val->kind != CFG__SCALAR || val->is_null) {
            cfg__bad_type(v, val, w, key->text, "a string");
            continue;
        }
        md = &rule->metadata[rule->n_metadata++];
        md->key = bsc_str_dup(bsc_str_make(key->text, key->len));
        md->value = bsc_str_dup(bsc_str_make(val->text, val->len));
        if (!md->key || !md->value)
            cfg__oom(v);
    }
}

static void last_user_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                         void *base, const char *where)
{
    struct cfg_sel_rule *rule = base;
    const struct cfg__node *n = e->value;
    const char *p;
    unsigned flags = 0;
    char why[200];
    enum bsc_err err;

    if (!cfg__get_str(v, n, where, f->name, &p))
        return;
    /* (?i) is the one inline flag: ECMA-262 has no inline flags, and case is all we need. */
    if (strncmp(p, "(?i)", 4) == 0) {
        p += 4;
        flags |= JS_REGEX_ICASE;
    }
    js_regex_free(rule->last_user); /* the same key written twice: the later one holds */
    rule->last_user = NULL;
    err = js_regex_compile(p, strlen(p), flags, &rule->last_user, why, sizeof(why));
    if (err == BSC_ENOMEM)
        cfg__oom(v);
    else if (err)
        cfg__diag(v->s, false, n->line, n->column, "'%s' in %s: bad pattern: %s", f->name, where,
                  why);
}

static const struct cfg__field cond_fields[] = {
    {.name = "tools", .type = CFG__F_BOOL, .off = offsetof(struct cfg_sel_rule, tools)},
    {.name = "images", .type = CFG__F_BOOL, .off = offsetof(struct cfg_sel_rule, images)},
    {.name = "json_schema", .type = CFG__F_BOOL, .off = offsetof(struct cfg_sel_rule, json_schema)},
    {.name = "stream", .type = CFG__F_BOOL, .off = offsetof(struct cfg_sel_rule, stream)},
    {.name = "min_input_tokens",
     .type = CFG__F_U64,
     .off = offsetof(struct cfg_sel_rule, min_input_tokens),
     .hi = 1000000000000ull},
    {.name = "max_input_tokens",
     .type = CFG__F_U64,
     .off = offsetof(struct cfg_sel_rule, max_input_tokens),
     .hi = 1000000000000ull},
    {.name = "min_messages",
     .type = CFG__F_U32,
     .off = offsetof(struct cfg_sel_rule, min_messages),
     .hi = 1000000},
    {.name = "max_messages",
     .type = CFG__F_U32,
     .off = offsetof(struct cfg_sel_rule, max_messages),
     .hi = 1000000},
    {.name = "metadata", .type = CFG__F_FN, .fn = metadata_fn},
    {.name = "last_user_matches", .type = CFG__F_FN, .fn = last_user_fn},
};
/* Row i of cond_fields is bit i of enum cfg_sel_cond. */
_Static_assert(1u << (BSC_ARRAY_LEN(cond_fields) - 1) == CFG_SEL_LAST_USER_MATCHES, "conds");

static void decode_if(struct cfg__v *v, const struct cfg__entry *e, struct cfg_sel_rule *rule,
                      const char *where)
{
    const struct cfg__node *m = e->value;

    if (m->is_null)
        return; /* null keeps the default: no condition */
    cfg__decode_map(v, m, cond_fields, BSC_ARRAY_LEN(cond_fields), rule, where, m->line, m->column);
    if (m->kind != CFG__MAP)
        return;
    for (size_t i = 0; i < BSC_ARRAY_LEN(cond_fields); i++) {
        const struct cfg__entry *c = cfg__map_find(m, cond_fields[i].name);

        if (c && !c->value->is_null)
            rule->conds |= 1u << i;
    }
    if ((rule->conds & CFG_SEL_MIN_INPUT_TOKENS) && (rule->conds & CFG_SEL_MAX_INPUT_TOKENS) &&
        rule->min_input_tokens > rule->max_input_tokens)
        cfg__diag(v->s, false, m->line, m->column,
                  "%s: min_input_tokens is above max_input_tokens: the rule never holds", where);
    if ((rule->conds & CFG_SEL_MIN_MESSAGES) && (rule->conds & CFG_SEL_MAX_MESSAGES) &&
        rule->min_messages > rule->max_messages)
        cfg__diag(v->s, false, m->line, m->column,
                  "%s: min_messages is above max_messages: the rule never holds", where);
}

/* ---- rules ---------------------------------------------------------------------------- */

/* The entries of one rule map, kept by its table's decoders. */
struct rule_src {
    const struct cfg__entry *if_e, *route_e;
};

static void rule_if_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                       void *base, const char *where)
{
    (void)v, (void)f, (void)where;
    ((struct rule_src *)base)->if_e = e;
}

static void rule_route_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                          void *base, const char *where)
{
    (void)v, (void)f, (void)where;
    ((struct rule_src *)base)->route_e = e;
}

static const struct cfg__field rule_fields[] = {
    {.name = "if", .type = CFG__F_FN, .fn = rule_if_fn},
    {.name = "route", .type = CFG__F_FN, .fn = rule_route_fn, .required = true},
};

/* Sorted route ids, for the references of every rule. */
struct route_ent {
    const char *id; /* borrowed */
    size_t idx;
};

static int ent_cmp(const void *a, const void *b)
{
    return strcmp(((const struct route_ent *)a)->id, ((const struct route_ent *)b)->id);
}

struct routes_ix {
    struct route_ent *sorted; /* owned */
    const char **names;       /* owned array of borrowed ids, for suggestions */
    size_t n;
};

static long ix_find(const struct routes_ix *ix, const char *id)
{
    struct route_ent key = {id, 0}, *hit;

    hit = bsearch(&key, ix->sorted, ix->n, sizeof(*ix->sorted), ent_cmp);
    return hit ? (long)hit->idx : -1;
}

static void resolve_ref(struct cfg__v *v, const struct routes_ix *ix, struct cfg_sel_rule *rule,
                        const struct cfg__entry *e, const char *where)
{
    const struct cfg__node *n = e->value;
    const char *id, *close;
    long idx;

    if (!cfg__get_str(v, n, where, "route", &id))
        return;
    idx = ix_find(ix, id);
    if (idx < 0) {
        close = ix->n <= 1000 ? cfg__closest(id, ix->names, ix->n) : NULL;
        cfg__diag(v->s, false, n->line, n->column, "unknown route '%.64s' in %s%s%s%s", id, where,
                  close ? " (did you mean '" : "", close ? close : "", close ? "'?)" : "");
        return;
    }
    if (v->rsrc[idx].select) {
        cfg__diag(v->s, false, n->line, n->column,
                  "%s names route '%.64s', which has 'select' itself: a rule must name a route "
                  "with tiers (no chains)",
                  where, id);
        return;
    }
    rule->route = &v->cfg->routes[idx];
}

static void resolve_rules(struct cfg__v *v, struct cfg_route *r, const struct cfg__entry *sel,
                          const struct routes_ix *ix)
{
    const struct cfg__node *list = sel->value;
    size_t always = 0; /* 1 + the index of the first rule that always holds */
    char where[CFG__MAX_ID + 64], owner[CFG__MAX_ID + 16];

    snprintf(owner, sizeof(owner), "route '%.*s'", CFG__MAX_ID, r->id ? r->id : "");
    if (list->bad || list->is_null)
        return;
    if (list->kind == CFG__SEQ && list->n == 0) {
        cfg__diag(v->s, false, list->line, list->column,
                  "'select' in %s must list at least one "
                  "rule",
                  owner);
        return;
    }
    if (list->kind != CFG__SEQ || list->n > MAX_RULES) {
        cfg__bad_type(v, list, owner, "select", "a list of 1..64 rules");
        return;
    }
    r->select = calloc(list->n, sizeof(*r->select));
    if (!r->select) {
        cfg__oom(v);
        return;
    }
    r->n_select = list->n;
    for (size_t i = 0; i < list->n && !v->oom; i++) {
        const struct cfg__node *item = list->items[i].value;
        struct cfg_sel_rule *rule = &r->select[i];
        struct rule_src src = {0};

        snprintf(where, sizeof(where), "%s select rule %zu", owner, i + 1);
        if (always)
            cfg__diag(v->s, false, item->line, item->column,
                      "%s is never used: rule %zu has no condition and takes every request", where,
                      always);
        cfg__decode_map(v, item, rule_fields, BSC_ARRAY_LEN(rule_fields), &src, where, item->line,
                        item->column);
        if (src.if_e) {
            char w[CFG__MAX_ID + 80];

            snprintf(w, sizeof(w), "%s if", where);
            decode_if(v, src.if_e, rule, w);
        }
        if (src.route_e)
            resolve_ref(v, ix, rule, src.route_e, where);
        if (!rule->conds && !always)
            always = i + 1;
    }
    if (!always)
        cfg__diag(v->s, true, sel->key->line, sel->key->column,
                  "%s: every rule of 'select' has a condition: a request none of them takes is "
                  "refused (400 no_route_selected)",
                  owner);
}

static bool ix_build(struct routes_ix *ix, const struct cfg *cfg)
{
    ix->n = cfg->n_routes;
    ix->sorted = calloc(ix->n ? ix->n : 1, sizeof(*ix->sorted));
    ix->names = calloc(ix->n ? ix->n : 1, sizeof(*ix->names));
    if (!ix->sorted || !ix->names)
        return false;
    for (size_t i = 0; i < ix->n; i++) {
        ix->names[i] = cfg->routes[i].id ? cfg->routes[i].id : "";
        ix->sorted[i] = (struct route_ent){ix->names[i], i};
    }
    qsort(ix->sorted, ix->n, sizeof(*ix->sorted), ent_cmp);
    return true;
}

void cfg__select_resolve(struct cfg__v *v)
{
    struct routes_ix ix = {0};
    bool any = false;

    for (size_t i = 0; i < v->cfg->n_routes && !any; i++)
        any = v->rsrc[i].select != NULL;
    if (!any)
        return;
    if (!ix_build(&ix, v->cfg)) {
        cfg__oom(v);
        goto out;
    }
    for (size_t i = 0; i < v->cfg->n_routes && !v->oom; i++)
        if (v->rsrc[i].select)
            resolve_rules(v, &v->cfg->routes[i], v->rsrc[i].select, &ix);
out:
    free(ix.sorted);
    free(ix.names);
}

void cfg__select_cleanup(struct cfg_route *r)
{
    for (size_t i = 0; i < r->n_select; i++) {
        struct cfg_sel_rule *rule = &r->select[i];

        drop_metadata(rule);
        js_regex_free(rule->last_user);
    }
    BSC_FREE(r->select);
    r->n_select = 0;
}
