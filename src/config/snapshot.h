/* SPDX-License-Identifier: MIT */
/* snapshot.h -- freeing a snapshot and what its providers, targets and routes own (snapshot.c). */
#ifndef BSC_CONFIG_SNAPSHOT_H
#define BSC_CONFIG_SNAPSHOT_H

struct cfg;
struct cfg_provider;
struct cfg_target;
struct cfg_route;

/* Frees <cfg> and everything it owns, whatever its refcount; NULL is fine. */
void cfg__free(struct cfg *cfg);
/* Frees what one provider, target or route owns (not the struct itself). */
void cfg__provider_cleanup(struct cfg_provider *p);
void cfg__target_cleanup(struct cfg_target *t);
void cfg__route_cleanup(struct cfg_route *r);

#endif
