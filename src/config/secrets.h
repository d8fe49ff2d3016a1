/* SPDX-License-Identifier: MIT */
/* secrets.h -- which names hold secrets, and the redaction set of a snapshot (secrets.c). */
#ifndef BSC_CONFIG_SECRETS_H
#define BSC_CONFIG_SECRETS_H

#include <stdbool.h>

#include "core/err.h"

struct cfg;

/* True when the YAML key or header name <name> holds a secret ("keys", "key", "api_key",
 * "x-goog-api-key", "authorization", "token", ...); NULL is not. */
bool cfg__is_secret_name(const char *name);
/* Builds cfg->secrets from the decoded <cfg>: BSC_OK, BSC_ENOMEM or BSC_ELIMIT. */
enum bsc_err cfg__secrets_build(struct cfg *cfg);

#endif
