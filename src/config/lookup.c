/* SPDX-License-Identifier: MIT */
/* lookup.c -- a snapshot's providers, targets and routes found by id: linear over small
 * arrays (routes are few). Apart from snapshot.c, which frees the clients, so that the files
 * resolving a route by name (clients.c, keyring.c) do not depend on a snapshot's lifetime. */
#include <stdbool.h>
#include <string.h>

#include "config/lookup.h"
#include "config/types.h"
#include "core/str.h"

static bool id_is(const char *id, struct bsc_str want)
{
    return id && strlen(id) == want.len && memcmp(id, want.p, want.len) == 0;
}

const struct cfg_route *cfg_route_find(const struct cfg *cfg, struct bsc_str id)
{
    for (size_t i = 0; cfg && i < cfg->n_routes; i++)
        if (id_is(cfg->routes[i].id, id))
            return &cfg->routes[i];
    return NULL;
}

const struct cfg_target *cfg_target_find(const struct cfg *cfg, struct bsc_str id)
{
    for (size_t i = 0; cfg && i < cfg->n_targets; i++)
        if (id_is(cfg->targets[i].id, id))
            return &cfg->targets[i];
    return NULL;
}

const struct cfg_provider *cfg_provider_find(const struct cfg *cfg, struct bsc_str id)
{
    for (size_t i = 0; cfg && i < cfg->n_providers; i++)
        if (id_is(cfg->providers[i].id, id))
            return &cfg->providers[i];
    return NULL;
}
