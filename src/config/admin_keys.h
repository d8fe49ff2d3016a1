/* SPDX-License-Identifier: MIT */
/* admin_keys.h -- the `admin.keys` list, and the role of an operator key (admin_keys.c). */
#ifndef BSC_CONFIG_ADMIN_KEYS_H
#define BSC_CONFIG_ADMIN_KEYS_H

#include "config/internal.h"
#include "config/types.h"
#include "core/str.h"

void cfg__admin_keys_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                        void *base, const char *where);
void cfg__admin_keys_free(struct cfg *cfg);
/* An admin.keys key that is also a client's key: an error naming both ids (never the key). */
void cfg__admin_keys_check_clients(struct cfg__v *v);

/* The role of the operator key <key>: admin.key or an admin.keys entry (constant time);
 * *<id> (may be NULL) is its id ("admin" for admin.key). NONE when it matches none. */
enum cfg_admin_role cfg_admin_role_of(const struct cfg *cfg, struct bsc_str key,
                                      const char **id);

#endif
