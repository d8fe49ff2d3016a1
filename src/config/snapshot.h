/* SPDX-License-Identifier: MIT */
/* snapshot.h -- a snapshot's refs, the process-wide current one, and freeing it and what its
 * providers, targets and routes own (snapshot.c). */
#ifndef BSC_CONFIG_SNAPSHOT_H
#define BSC_CONFIG_SNAPSHOT_H

#include "config/types.h"
#include "core/str.h"

/* Frees <cfg> and everything it owns, whatever its refcount; NULL is fine. */
void cfg__free(struct cfg *cfg);
/* Frees what one provider, target or route owns (not the struct itself). */
void cfg__provider_cleanup(struct cfg_provider *p);
void cfg__target_cleanup(struct cfg_target *t);
void cfg__route_cleanup(struct cfg_route *r);

struct cfg *cfg_ref(struct cfg *cfg);
/* Drops one ref; frees the snapshot when it was the last. NULL is fine. */
void cfg_unref(struct cfg *cfg);

/* The process-wide current snapshot (one of the three commented globals, docs/design.md §13.6).
 * cfg_current_get returns a new ref (caller unrefs); cfg_current_swap takes ownership of
 * <next>'s ref and drops the old snapshot's. Both are safe from any thread. */
struct cfg *cfg_current_get(void);
void cfg_current_swap(struct cfg *next);

#endif
