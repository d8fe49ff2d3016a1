/* SPDX-License-Identifier: MIT */
/* gateway.h -- the process-wide object: workers, the config path, and the state that
 * outlives one request and is shared by every worker (keys, breakers, stats, budget). */
#ifndef BSC_ROUTER_GATEWAY_H
#define BSC_ROUTER_GATEWAY_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/err.h"
#include "router/shadow_purse.h"

struct cache_mem;
struct cache_sem;
#include "router/worker.h"

struct hstate;
struct keyring;
struct lim_reg;
struct metrics;
struct spend_book;
struct status_history;
struct store;
struct verdicts;

struct gateway {
    const char *config_path; /* borrowed from argv */
    struct worker *workers;  /* owned array */
    unsigned n_workers;
    struct hstate *hs;       /* owned: shared health and routing state */
    struct lim_reg *lim;     /* owned: client, target and provider limits (limits/limits.h) */
    struct metrics *metrics; /* owned: one shard per worker */
    struct store *store;     /* owned: idempotency records and the tool ledger */
    struct verdicts *verdicts; /* owned: recent requests and verdicts (health/verdicts.h) */
    struct spend_book *spend; /* owned: client spend per budget period (router/spend.h) */
    struct srv_group *conns; /* owned: the workers' servers even out their connections */
    struct status_history *history; /* owned: status.json's series and events (api/) */
    uint64_t started_ms;     /* wall clock */
    struct cache_mem *cache; /* owned: the response cache (cache/lru.h) */
    struct cache_sem *sem;   /* owned: the semantic cache's index (cache/semantic.h) */
    struct shadow_purse shadow_purse; /* today's shadow spend, kept across reloads */
    struct keyring *keyring; /* owned: run-time keys and the audit trail (router/keyring.h) */
    /* Builds and publishes a new snapshot: the config file plus the keyring (main.c); any
     * thread. BSC_OK, or an error when the file no longer loads (the old one keeps serving). */
    enum bsc_err (*rebuild)(struct gateway *gw);
    atomic_ullong reloads_ok, reloads_failed;
    atomic_uint running;     /* worker loops not yet ended */
    uv_async_t *ended;       /* borrowed: sent by the last worker whose loop ends */
};

#endif
