/* SPDX-License-Identifier: MIT */
/* admin_keys.h -- the `admin.keys` list (admin_keys.c). */
#ifndef BSC_CONFIG_ADMIN_KEYS_H
#define BSC_CONFIG_ADMIN_KEYS_H

#include "config/internal.h"

struct cfg;

void cfg__admin_keys_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                        void *base, const char *where);
void cfg__admin_keys_free(struct cfg *cfg);
/* An admin.keys key that is also a client's key: an error naming both ids (never the key). */
void cfg__admin_keys_check_clients(struct cfg__v *v);

#endif
