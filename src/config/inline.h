/* SPDX-License-Identifier: MIT */
/* inline.h -- the small pure helpers of the public header, defined here inline (no .c defines
 * them): the providers and limits that read them link no config code. */
#ifndef BSC_CONFIG_INLINE_H
#define BSC_CONFIG_INLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/types.h"

/* An open gateway: no client in the file and no key ever made through the admin API, so
 * the API surfaces need no key. Revoking the last run-time key does not open it. */
static inline bool cfg_open(const struct cfg *cfg)
{
    return cfg->n_clients == 0 && !cfg->keyring_used;
}

/* A limit written per key (a target's rpm, tpm and max_concurrency; a provider's rpm and
 * tpm) as the gateway counts it: over all <n_keys> keys of the provider together (key
 * rotation spreads the calls evenly). 0 (unlimited) stays 0; saturates at UINT32_MAX. */
static inline uint32_t cfg_per_key(uint32_t v, size_t n_keys)
{
    uint64_t total = (uint64_t)v * (n_keys ? n_keys : 1);

    return total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
}

/* "deepseek", ...; NULL for CFG_PROFILE_AUTO (choose by host). */
static inline const char *cfg_profile_name(enum cfg_profile p)
{
    static const char *const names[] = {
#define X(NAME, name) name,
        CFG_PROFILES(X)
#undef X
    };

    return p != CFG_PROFILE_AUTO && (unsigned)p < CFG_PROFILE_COUNT ? names[p] : NULL;
}

#endif
