/* SPDX-License-Identifier: MIT */
/* kinds.h -- the names of the provider kinds, as written in YAML (kinds.c). */
#ifndef BSC_CONFIG_KINDS_H
#define BSC_CONFIG_KINDS_H

#include "config/types.h"

/* "openai", "anthropic", ...: names[i] is kind i (the `kind` field's table, validate.c). */
extern const char *const cfg__kind_names[CFG_PROV_COUNT];

/* The name of <kind>; "?" for a value out of range. */
const char *cfg_provider_kind_name(enum cfg_provider_kind kind);

#endif
