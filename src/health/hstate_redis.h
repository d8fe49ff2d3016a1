/* SPDX-License-Identifier: MIT */
/* hstate_redis.h -- the health backend that shares circuits and key cooldowns among the
 * gateway processes using one Redis (store.kind: redis). Decisions stay local and
 * immediate; see hstate_redis.c and docs/internals/redis.md. */
#ifndef BSC_HEALTH_HSTATE_REDIS_H
#define BSC_HEALTH_HSTATE_REDIS_H

#include "config/config.h"
#include "health/hstate.h"

struct lim_share;

/* A shared backend for the Redis <st> names (kind redis), started on its own thread; it
 * connects, and reconnects, in the background. NULL with <err> set when the URL is bad or
 * out of memory. Freed with hstate_free(). */
struct hstate *hstate_redis_new(const struct cfg_store *st, char *err, size_t errlen);
/* The fleet's limits through the same Redis (limits/limits.h): hand it to lim_reg_share(). */
struct lim_share *hstate_redis_share(struct hstate *hs);

#endif
