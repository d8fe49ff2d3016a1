/* SPDX-License-Identifier: MIT */
/* clients.h -- the `clients:` section (clients.c). */
#ifndef BSC_CONFIG_CLIENTS_H
#define BSC_CONFIG_CLIENTS_H

#include "config/internal.h"

struct cfg;

/* Pass 1: notes the `clients` entry (a CFG__F_FN decoder). */
void cfg__clients_note(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                       void *base, const char *where);
/* Pass 2, once routes exist: decodes every client, refuses unknown routes and shared keys. */
void cfg__clients_build(struct cfg__v *v);
/* Zeroes and frees every client's plaintext key (once the redaction set holds it). */
void cfg__clients_wipe(struct cfg *cfg);
void cfg__clients_free(struct cfg *cfg);

#endif
