/* SPDX-License-Identifier: MIT */
/* limits_reg.c -- the registry of limit sets (limits.h): one per client, target and provider
 * id, created when a config first names it and kept until the process ends, so a reload
 * keeps the counters and a request holding an older snapshot still finds its set. Looked up
 * by id only at sync, never on the request path. */
#include <stdlib.h>
#include <string.h>

#include "core/str.h"
#include "limits/limits.h"

struct lim_entry {
    char kind; /* 'c' client, 't' target, 'p' provider, 'T' team: ids of kinds may agree */
    char *id;  /* owned */
    struct lim_set set;
};

struct lim_reg {
    pthread_mutex_t lock; /* the table: only sync changes it */
    struct lim_share *share; /* every set shares the fleet's limits through it, or NULL */
    struct lim_entry **e;
    size_t n, cap;
};

struct lim_reg *lim_reg_new(void)
{
    struct lim_reg *reg = calloc(1, sizeof(*reg));

    if (reg)
        pthread_mutex_init(&reg->lock, NULL);
    return reg;
}

void lim_reg_free(struct lim_reg *reg)
{
    if (!reg)
        return;
    for (size_t i = 0; i < reg->n; i++) {
        lim_set_destroy(&reg->e[i]->set);
        free(reg->e[i]->id);
        free(reg->e[i]);
    }
    free(reg->e);
    pthread_mutex_destroy(&reg->lock);
    free(reg);
}

static struct lim_entry *entry_new(struct lim_reg *reg, char kind, const char *id)
{
    struct lim_entry *e;

    if (reg->n == reg->cap) {
        size_t cap = reg->cap ? reg->cap * 2 : 64;
        struct lim_entry **p = realloc(reg->e, cap * sizeof(*p));

        if (!p)
            return NULL;
        reg->e = p;
        reg->cap = cap;
    }
    e = calloc(1, sizeof(*e));
    if (!e || !(e->id = bsc_str_dup(bsc_str_cstr(id)))) {
        free(e);
        return NULL;
    }
    e->kind = kind;
    lim_set_init(&e->set, (struct lim_caps){0});
    e->set.subject = kind;
    e->set.id = e->id;
    e->set.share = reg->share;
    reg->e[reg->n++] = e;
    if (reg->share && reg->share->track)
        reg->share->track(reg->share, &e->set);
    return e;
}

/* The set of <id>, created when new, with <caps> applied; NULL when out of memory. */
static struct lim_set *resolve(struct lim_reg *reg, char kind, const char *id,
                               struct lim_caps caps, enum bsc_err *err)
{
    struct lim_entry *e = NULL;

    for (size_t i = 0; i < reg->n && !e; i++)
        if (reg->e[i]->kind == kind && strcmp(reg->e[i]->id, id) == 0)
            e = reg->e[i];
    if (!e && !(e = entry_new(reg, kind, id))) {
        *err = BSC_ENOMEM;
        return NULL;
    }
    lim_set_configure(&e->set, caps);
    return &e->set;
}

void lim_reg_share(struct lim_reg *reg, struct lim_share *sh)
{
    pthread_mutex_lock(&reg->lock);
    reg->share = sh;
    pthread_mutex_unlock(&reg->lock);
}

enum bsc_err lim_reg_sync(struct lim_reg *reg, struct cfg *cfg)
{
    enum bsc_err err = BSC_OK;

    pthread_mutex_lock(&reg->lock);
    for (size_t i = 0; i < cfg->n_providers; i++) {
        struct cfg_provider *p = &cfg->providers[i];

        /* rpm and tpm per key; max_concurrency across every key and target */
        p->lim = resolve(reg, 'p', p->id,
                         (struct lim_caps){cfg_per_key(p->rpm, p->n_keys),
                                           cfg_per_key(p->tpm, p->n_keys), p->max_concurrency,
                                           p->max_concurrency_default,
                                           cfg_per_key(p->rpm_burst, p->n_keys),
                                           cfg_per_key(p->tpm_burst, p->n_keys)},
                         &err);
    }
    for (size_t i = 0; i < cfg->n_targets; i++) {
        struct cfg_target *t = &cfg->targets[i];

        size_t keys = t->provider ? t->provider->n_keys : 1;

        t->lim = resolve(reg, 't', t->id,
                         (struct lim_caps){cfg_per_key(t->rpm, keys), cfg_per_key(t->tpm, keys),
                                           cfg_per_key(t->max_concurrency, keys), false,
                                           cfg_per_key(t->rpm_burst, keys),
                                           cfg_per_key(t->tpm_burst, keys)},
                         &err);
    }
    for (size_t i = 0; i < cfg->n_clients; i++) {
        struct cfg_client *c = &cfg->clients[i];

        c->lim = resolve(reg, 'c', c->id,
                         (struct lim_caps){c->rpm, c->tpm, c->max_concurrency, false, c->rpm_burst,
                                           c->tpm_burst},
                         &err);
    }
    for (size_t i = 0; i < cfg->n_teams; i++) {
        struct cfg_team *t = &cfg->teams[i];

        t->lim = resolve(reg, 'T', t->id,
                         (struct lim_caps){t->rpm, t->tpm, t->max_concurrency, false, 0, 0},
                         &err);
    }
    pthread_mutex_unlock(&reg->lock);
    return err;
}
