/* SPDX-License-Identifier: MIT */
/* clients.h -- the `clients:` section, and the lookups of a client, its routes and its team
 * (clients.c). */
#ifndef BSC_CONFIG_CLIENTS_H
#define BSC_CONFIG_CLIENTS_H

#include "config/internal.h"
#include "config/types.h"
#include "core/str.h"

/* Pass 1: notes the `clients` entry (a CFG__F_FN decoder). */
void cfg__clients_note(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                       void *base, const char *where);
/* Pass 2, once routes exist: decodes every client, refuses unknown routes and shared keys. */
void cfg__clients_build(struct cfg__v *v);
/* Zeroes and frees every client's plaintext key (once the redaction set holds it). */
void cfg__clients_wipe(struct cfg *cfg);
void cfg__clients_free(struct cfg *cfg);

/* The client whose key is <key> (every client's hash compared in constant time), or NULL. */
const struct cfg_client *cfg_client_by_key(const struct cfg *cfg, struct bsc_str key);
const struct cfg_client *cfg_client_find(const struct cfg *cfg, struct bsc_str id);
const struct cfg_team *cfg_team_find(const struct cfg *cfg, struct bsc_str id);
/* True when <c> may call route <r> (its `routes`, or ["*"]), and its team's list, if it has
 * a team, names <r> too. */
bool cfg_client_allows(const struct cfg_client *c, const struct cfg_route *r);

#endif
