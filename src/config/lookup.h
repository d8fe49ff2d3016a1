/* SPDX-License-Identifier: MIT */
/* lookup.h -- a snapshot's providers, targets and routes by id (lookup.c). */
#ifndef BSC_CONFIG_LOOKUP_H
#define BSC_CONFIG_LOOKUP_H

#include "config/types.h"
#include "core/str.h"

/* Lookups; NULL when absent. The results are borrowed from <cfg>. */
const struct cfg_route *cfg_route_find(const struct cfg *cfg, struct bsc_str id);
const struct cfg_target *cfg_target_find(const struct cfg *cfg, struct bsc_str id);
const struct cfg_provider *cfg_provider_find(const struct cfg *cfg, struct bsc_str id);

#endif
