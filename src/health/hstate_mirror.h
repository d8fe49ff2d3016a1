/* SPDX-License-Identifier: MIT */
/* hstate_mirror.h -- what a shared health backend (hstate_redis.c) needs of the in-process
 * one it keeps as its local mirror: a circuit's identity, and applying a transition or a
 * key cooldown another gateway process announced. Inside health/ only. */
#ifndef BSC_HEALTH_HSTATE_MIRROR_H
#define BSC_HEALTH_HSTATE_MIRROR_H

#include "health/hstate.h"

/* The circuit <t> reports to ("provider|model|region|deployment" as breaker.key selects). */
void hstate__breaker_key(const struct cfg_target *t, char *out, size_t len);

/* Opens (for <open_ms> from <now_ms>; 0: the circuit's next open time, with <opens>
 * openings since its last recovery when more than its own: brk_force_open_for()) or closes
 * the circuit <key> of the local backend <hs>. False when no such circuit is known.
 * Thread-safe. */
bool hstate__force(struct hstate *hs, const char *key, bool open, uint64_t now_ms,
                   uint64_t open_ms, uint32_t opens);

/* Cools key <idx> of provider <provider_id> until <until_ms> for <reason> (enum key_reason),
 * for <model> only when it is not NULL (a rate limit), as hstate_tkey_cooldown() would
 * have; NULL: for every model. Thread-safe; unknown ids are ignored. */
void hstate__key_cool(struct hstate *hs, const char *provider_id, const char *model, int idx,
                      int reason, uint64_t until_ms);

#endif
