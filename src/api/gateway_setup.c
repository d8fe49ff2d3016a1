/* SPDX-License-Identifier: MIT */
/* gateway_setup.c -- see gateway_setup.h. */
#include "api/gateway_setup.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "api/api.h"
#include "api/status_history.h"
#include "cache/lru.h"
#include "cache/semantic.h"
#include "core/clock.h"
#include "core/log.h"
#include "health/hstate.h"
#include "health/hstate_redis.h"
#include "health/verdicts.h"
#include "limits/limits.h"
#include "metrics/metrics.h"
#include "router/keyring.h"
#include "router/keyring_sync.h"
#include "router/limit.h"
#include "router/spend.h"
#include "server/server.h"
#include "store/store.h"
#include "dialect/error.h"

static unsigned worker_count(const struct cfg *cfg)
{
    long n = cfg->workers ? (long)cfg->workers : sysconf(_SC_NPROCESSORS_ONLN);

    return n < 1 ? 1 : n > 256 ? 256 : (unsigned)n;
}

/* Health state and limits: the process's own, or with store.kind redis shared with the
 * other instances on that Redis (circuits and key cooldowns; rate buckets and concurrency
 * leases, taken in slices). */
static enum bsc_err open_health_and_limits(struct gateway *gw, const struct cfg *cfg)
{
    if (cfg->store.kind == CFG_STORE_REDIS) {
        char err[256] = "";

        if (!(gw->hs = hstate_redis_new(&cfg->store, err, sizeof(err)))) {
            LOG_ERR("cannot start the shared health state: %s", err);
            return BSC_EIO;
        }
    } else {
        gw->hs = hstate_new();
    }
    gw->lim = lim_reg_new();
    if (gw->lim && cfg->store.kind == CFG_STORE_REDIS) {
        struct lim_share *sh = hstate_redis_share(gw->hs);

        sh->wake = reqlim_wake_loops;
        sh->wake_ctx = gw;
        lim_reg_share(gw->lim, sh);
    }
    return BSC_OK;
}

enum bsc_err gateway_open(struct gateway *gw, struct cfg *cfg)
{
    char err[256] = "";

    gw->started_ms = bsc_wall_ms();
    if (open_health_and_limits(gw, cfg) != BSC_OK)
        return BSC_EIO;
    gw->n_workers = worker_count(cfg);
    gw->metrics = metrics_new(gw->n_workers);
    gw->conns = srv_group_new(gw->n_workers);
    gw->verdicts = verdicts_new_sharded(VERDICTS_MAX_REQUESTS, VERDICTS_MAX_AGE_MS, gw->n_workers);
    gw->spend = spend_book_new();
    gw->keyring = keyring_new();
    gw->history = status_history_new();
    gw->cache = cache_mem_new();
    gw->sem = cache_sem_new();
    if (!gw->keyring || !gw->hs || !gw->lim || !gw->metrics || !gw->conns || !gw->verdicts ||
        !gw->spend || !gw->history || !gw->cache || !gw->sem ||
        hstate_sync(gw->hs, cfg, bsc_now_ms()) != BSC_OK ||
        lim_reg_sync(gw->lim, cfg) != BSC_OK) {
        LOG_ERR("out of memory at start");
        return BSC_ENOMEM;
    }
    if (store_open(&cfg->store, &gw->store, err, sizeof(err)) != BSC_OK) {
        LOG_ERR("cannot open the store: %s", err);
        return BSC_EIO;
    }
    return BSC_OK;
}

enum bsc_err gateway_merge_keyring(struct gateway *gw, struct cfg *cfg)
{
    char warn[1024] = "";
    char *text = keyring_text(gw->keyring);
    enum bsc_err err = text ? cfg_keyring_merge(cfg, text, strlen(text), warn, sizeof(warn))
                            : BSC_ENOMEM;

    free(text);
    if (warn[0])
        LOG_WARN("keyring: %s", warn);
    if (err)
        LOG_ERR("keyring not merged: %s", bsc_err_str(err));
    return err;
}

enum bsc_err gateway_keyring_start(struct gateway *gw, struct cfg *cfg)
{
    enum bsc_err err = keyring_load_blocking(gw->keyring, gw->store, uv_default_loop());

    /* Redis may still be connecting: a few more tries, then the poll takes over (admin
     * writes wait for it). A local store that cannot be read is a failed start. */
    for (int i = 0; err && store_is_shared(gw->store) && i < 20; i++) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        err = keyring_load_blocking(gw->keyring, gw->store, uv_default_loop());
    }
    if (err && store_is_shared(gw->store)) {
        LOG_WARN("cannot read the keyring from the store yet (%s): keys made through the "
                 "admin API are served once it answers", bsc_err_str(err));
        err = BSC_OK;
    } else if (err) {
        LOG_ERR("cannot read the keyring from the store: %s", bsc_err_str(err));
        return err;
    }
    if (strcmp(store_kind_name(gw->store), "memory") == 0)
        LOG_WARN("store.kind memory: keys made through the admin API (/admin/keys) and the "
                 "audit trail die with the process; use sqlite or redis to keep them");
    err = gateway_merge_keyring(gw, cfg);
    if (!err && lim_reg_sync(gw->lim, cfg) != BSC_OK)
        err = BSC_ENOMEM;
    return err;
}

enum bsc_err gateway_worker_serve(struct worker *w, int fd, const struct srv_limits *lim,
                                  const struct up_limits *ul)
{
    enum bsc_err err = srv_new(&w->loop, fd, lim, api_handle, w, &w->srv);

    if (!err)
        err = srv_group_join(w->gw->conns, w->idx, w->srv);
    if (!err)
        err = up_multi_new(&w->loop, ul, &w->up);
    if (err)
        return err;
    srv_set_refused(w->srv, api_refused);
    srv_set_head_check(w->srv, api_head_check);
    srv_set_error_body(w->srv, dialect_openai_srv_error);
    return BSC_OK;
}

void gateway_close(struct gateway *gw)
{
    hstate_free(gw->hs); /* its thread may wake the loops (limits): before they go */
    free(gw->workers);
    srv_group_free(gw->conns);
    lim_reg_free(gw->lim);
    verdicts_free(gw->verdicts);
    metrics_free(gw->metrics);
    store_close(gw->store);
    keyring_free(gw->keyring);
    spend_book_free(gw->spend);
    status_history_free(gw->history);
    cache_mem_free(gw->cache);
    cache_sem_free(gw->sem);
    cfg_current_swap(NULL);
}
