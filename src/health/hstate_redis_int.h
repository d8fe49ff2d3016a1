/* SPDX-License-Identifier: MIT */
/* hstate_redis_int.h -- inside the Redis health backend: its state, shared by
 * hstate_redis.c (circuits, key cooldowns, the connections) and hstate_redis_limits.c (the
 * fleet's buckets and leases). Everything but the event queue belongs to the backend's
 * own thread. */
#ifndef BSC_HEALTH_HSTATE_REDIS_INT_H
#define BSC_HEALTH_HSTATE_REDIS_INT_H

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <uv.h>

#include "config/config.h"
#include "core/redis_keys.h"
#include "health/hstate.h"
#include "limits/limits.h"

#define HR_MAX 1024             /* circuits, providers */
#define HR_MAX_QUEUED 10000     /* events waiting for Redis; more are dropped (local only) */
#define HR_BACKOFF_MIN_MS 100
#define HR_BACKOFF_MAX_MS 2000
#define HR_CONNECT_MS 1000
#define HR_CLAIM_MARGIN_MS 100  /* the probe lease is asked for this long before the end */
#define HR_PING_MS 1000

struct hr_circuit {
    char key[256];     /* the breaker key (hstate__breaker_key) */
    uint32_t open_ms;  /* guarded by hs_redis.mu */
    uv_timer_t claim;  /* the store thread only, as is <armed> */
    bool armed;
    struct hs_redis *h;
};

struct hr_provider {
    char id[128];
    size_t n_keys;
};

/* A transition a worker saw, on its way to Redis. */
struct hr_event {
    struct hr_event *next;
    char kind;         /* 'o' opened, 'c' closed, 'k' key cooldown, 'm' a model's cooldown,
                          'L' a limit's ask, 'G' slots given back, 'K' the shared records
                          changed (announced, never applied to circuits) */
    uint64_t ms;       /* 'o': open_ms; 'k': the cooldown left */
    int reason, idx;
    char id[256];      /* circuit key, or provider id */
    struct lim_set *set; /* 'L', 'G': the set; idx is the lim_kind */
    uint64_t need, want; /* 'L': the ask; 'G': want is the slots */
    uint32_t cap, burst; /* 'L': the limit and its burst (lim_burst) */
};

struct hr_conn {
    struct hs_redis *h;
    redisAsyncContext *ac;
    bool up, sub;
    uv_timer_t retry, watchdog;
    uint64_t backoff_ms;
};

struct hs_redis {
    struct hstate base;
    struct hstate *local; /* the mirror: every decision */
    struct redis_url url;
    char prefix[128], channel[160], instance[24];
    uv_thread_t thread;
    uv_loop_t loop;
    uv_async_t wake;
    uv_mutex_t mu;
    struct hr_event *head, *tail; /* guarded by mu, with what follows */
    size_t queued;
    bool stopping;
    struct hr_circuit *circ[HR_MAX];
    size_t n_circ;
    struct hr_provider prov[HR_MAX];
    size_t n_prov;
    struct hr_conn cmd, sub; /* the store thread only, as is what follows */
    uv_timer_t ping;
    bool ping_out;         /* a PING is out, sent at <ping_sent_ms> */
    bool ping_local;       /* ... and so late that the limits turned local */
    uint64_t ping_sent_ms;
    bool closing;
    struct lim_share share;  /* the fleet's limits (hstate_redis_limits.c) */
    struct lim_set **sets;   /* tracked sets; guarded by mu with n_sets */
    size_t n_sets, cap_sets;
    uv_timer_t renew;        /* keeps held leases alive */
    uint32_t lease_ttl_ms;
    void (*notify_fn)(void *ud); /* guarded by mu; called on the store thread */
    void *notify_ud;
};

/* hstate_redis.c */
void hr__enqueue(struct hs_redis *h, struct hr_event *ev); /* takes <ev> (calloc'd) */
/* Sends a command on the command connection; false when not sent (<fn> never called). */
bool hr__cmd(struct hs_redis *h, redisCallbackFn *fn, void *priv, int argc, const char **argv);

/* hstate_redis_limits.c */
void hr__limits_init(struct hs_redis *h, const struct cfg_store *st);
void hr__limits_start(struct hs_redis *h);   /* on the backend's thread, before the loop runs */
void hr__limits_run(struct hs_redis *h, const struct hr_event *ev); /* 'L', 'G' */
void hr__limits_connected(struct hs_redis *h, bool up);
void hr__limits_close(struct hs_redis *h);
void hr__limits_free(struct hs_redis *h);

#endif


