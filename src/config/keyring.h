/* SPDX-License-Identifier: MIT */
/* keyring.h -- the admin API's run-time keys merged into a snapshot (keyring.c). */
#ifndef BSC_CONFIG_KEYRING_H
#define BSC_CONFIG_KEYRING_H

#include <stddef.h>

#include "config/types.h"
#include "core/err.h"

/* Appends the keyring's live keys (the JSON document the admin API keeps in the store) to
 * <cfg>'s clients, hashes only. A key whose id is a file client's, a revoked key and a route
 * the config does not have are skipped, each with a line in <warn> (may be NULL). Returns
 * BSC_OK, BSC_EPARSE for a document that is not a keyring, BSC_ENOMEM. Call before the
 * snapshot is published. */
enum bsc_err cfg_keyring_merge(struct cfg *cfg, const char *json, size_t len, char *warn,
                               size_t warnlen);

#endif
