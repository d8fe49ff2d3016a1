/* SPDX-License-Identifier: MIT */
/* state.h -- routing state that outlives a request and is shared by every worker: key
 * rotation per provider now; breakers, target stats, cooldowns and the retry budget
 * join it. Keyed by id, so it survives config reloads. This is the in-process store;
 * a shared (Redis) one implements the same calls. Thread-safe. */
#ifndef BSC_ROUTER_STATE_H
#define BSC_ROUTER_STATE_H

#include "config/config.h"

struct hstate;

struct hstate *hstate_new(void);
void hstate_free(struct hstate *hs);

/* The next API key of <p> in round-robin order; NULL when it has none. The pointer is
 * borrowed from <p> (the caller's config snapshot). */
const char *hstate_next_key(struct hstate *hs, const struct cfg_provider *p);

#endif
