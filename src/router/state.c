/* SPDX-License-Identifier: MIT */
/* state.c -- the in-process shared routing state: a small table keyed by provider id
 * with one round-robin counter each, behind a mutex held for a few instructions. */
#include "router/state.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define HSTATE_MAX_PROVIDERS 256

struct prov_state {
    char *id; /* owned */
    uint64_t next_key;
};

struct hstate {
    pthread_mutex_t lock;
    struct prov_state provs[HSTATE_MAX_PROVIDERS];
    size_t n_provs;
};

struct hstate *hstate_new(void)
{
    struct hstate *hs = calloc(1, sizeof(*hs));

    if (hs)
        pthread_mutex_init(&hs->lock, NULL);
    return hs;
}

void hstate_free(struct hstate *hs)
{
    if (!hs)
        return;
    for (size_t i = 0; i < hs->n_provs; i++)
        free(hs->provs[i].id);
    pthread_mutex_destroy(&hs->lock);
    free(hs);
}

/* Finds or adds the provider's slot; NULL when the table is full. Lock held. */
static struct prov_state *prov_slot(struct hstate *hs, const char *id)
{
    for (size_t i = 0; i < hs->n_provs; i++)
        if (strcmp(hs->provs[i].id, id) == 0)
            return &hs->provs[i];
    if (hs->n_provs == HSTATE_MAX_PROVIDERS)
        return NULL;
    hs->provs[hs->n_provs].id = strdup(id);
    if (!hs->provs[hs->n_provs].id)
        return NULL;
    return &hs->provs[hs->n_provs++];
}

const char *hstate_next_key(struct hstate *hs, const struct cfg_provider *p)
{
    struct prov_state *ps;
    uint64_t n = 0;

    if (p->n_keys == 0)
        return NULL;
    if (p->n_keys == 1)
        return p->keys[0];
    pthread_mutex_lock(&hs->lock);
    ps = prov_slot(hs, p->id);
    if (ps)
        n = ps->next_key++;
    pthread_mutex_unlock(&hs->lock);
    return p->keys[n % p->n_keys];
}
