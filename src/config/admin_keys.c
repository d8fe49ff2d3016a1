/* SPDX-License-Identifier: MIT */
/* admin_keys.c -- `admin.keys: [{id, key, role: admin | read}]`, operator keys beside
 * admin.key (which is role admin, id "admin"). A read key may list and view the admin API,
 * never change anything; the id names the operator in the audit trail. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "config/admin_keys.h"
#include "config/clients.h"
#include "config/diag.h"
#include "config/internal.h"
#include "config/schema.h"
#include "config/types.h"
#include "core/str.h"

static const char *const role_names[] = {"none", "read", "admin"};

static const struct cfg__field admin_key_fields[] = {
    {.name = "id", .type = CFG__F_STR, .off = offsetof(struct cfg_admin_key, id),
     .required = true, .nonempty = true},
    {.name = "key", .type = CFG__F_STR, .off = offsetof(struct cfg_admin_key, key),
     .required = true, .nonempty = true},
    {.name = "role", .type = CFG__F_ENUM, .off = offsetof(struct cfg_admin_key, role),
     .names = role_names, .n_names = BSC_ARRAY_LEN(role_names), .required = true},
};

static void check_one(struct cfg__v *v, const struct cfg__node *item, struct cfg *cfg, size_t i)
{
    const struct cfg_admin_key *k = &cfg->admin_keys[i];

    if (!k->id || !k->key)
        return;
    if (k->role == CFG_ADMIN_ROLE_NONE)
        cfg__diag(v->s, false, item->line, item->column,
                  "admin.keys '%.64s': role must be admin or read", k->id);
    if (strlen(k->id) > CFG_ADMIN_ID_MAX)
        cfg__diag(v->s, false, item->line, item->column,
                  "admin.keys: an id is at most %d bytes", CFG_ADMIN_ID_MAX);
    if (strlen(k->key) < 16)
        cfg__diag(v->s, true, item->line, item->column,
                  "admin.keys '%.64s': the key is shorter than 16 characters", k->id);
    for (size_t j = 0; j < i; j++)
        if (cfg->admin_keys[j].id && strcmp(cfg->admin_keys[j].id, k->id) == 0)
            cfg__diag(v->s, false, item->line, item->column,
                      "admin.keys: the id '%.64s' is used twice", k->id);
}

void cfg__admin_keys_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                        void *base, const char *where)
{
    struct cfg *cfg = base;
    const struct cfg__node *n = e->value;

    if (n->bad || n->is_null)
        return;
    if (n->kind != CFG__SEQ) {
        cfg__bad_type(v, n, where, f->name, "a list of {id, key, role}");
        return;
    }
    cfg__admin_keys_free(cfg);
    cfg->admin_keys = calloc(n->n ? n->n : 1, sizeof(*cfg->admin_keys));
    if (!cfg->admin_keys) {
        cfg__oom(v);
        return;
    }
    for (size_t i = 0; i < n->n; i++) {
        const struct cfg__node *item = n->items[i].value;

        cfg__decode_map(v, item, admin_key_fields, BSC_ARRAY_LEN(admin_key_fields),
                        &cfg->admin_keys[i], "admin.keys", item->line, item->column);
        cfg->n_admin_keys++;
        check_one(v, item, cfg, i);
    }
}

void cfg__admin_keys_check_clients(struct cfg__v *v)
{
    const struct cfg *cfg = v->cfg;

    for (size_t i = 0; i < cfg->n_admin_keys; i++) {
        const struct cfg_admin_key *k = &cfg->admin_keys[i];
        const struct cfg_client *c = k->key ? cfg_client_by_key(cfg, bsc_str_cstr(k->key)) : NULL;

        if (c)
            cfg__diag(v->s, false, 0, 0,
                      "admin.keys '%.64s': is the key of client '%s'; an operator key must "
                      "differ from every client key, or that client could act as the operator",
                      k->id ? k->id : "", c->id);
    }
}

void cfg__admin_keys_free(struct cfg *cfg)
{
    for (size_t i = 0; i < cfg->n_admin_keys; i++) {
        free(cfg->admin_keys[i].id);
        free(cfg->admin_keys[i].key);
    }
    BSC_FREE(cfg->admin_keys);
    cfg->n_admin_keys = 0;
}

enum cfg_admin_role cfg_admin_role_of(const struct cfg *cfg, struct bsc_str key,
                                      const char **id)
{
    enum cfg_admin_role role = CFG_ADMIN_ROLE_NONE;
    const char *who = NULL;

    if (!cfg || !key.len)
        return CFG_ADMIN_ROLE_NONE;
    /* Every key is compared whatever matched: the time does not say which. */
    if (bsc_str_secret_eq(key, cfg->admin_key)) {
        role = CFG_ADMIN_ROLE_ADMIN;
        who = "admin";
    }
    for (size_t i = 0; i < cfg->n_admin_keys; i++) {
        if (bsc_str_secret_eq(key, cfg->admin_keys[i].key)) {
            role = cfg->admin_keys[i].role;
            who = cfg->admin_keys[i].id;
        }
    }
    if (id)
        *id = who;
    return role;
}
