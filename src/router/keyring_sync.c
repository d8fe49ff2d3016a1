/* SPDX-License-Identifier: MIT */
/* keyring_sync.c -- the keyring and the store: read at start (SQLite keeps keys across a
 * restart) and, on a shared store (Redis), read again whenever another instance announces a
 * change on the shared state's channel (hstate_notify), or this one (re)subscribes to it: a
 * key made, changed or revoked on another instance is served here one Redis round trip after
 * its write, with no polling traffic while nothing changes. */
#include <stdlib.h>

#include "core/log.h"
#include "core/str.h"
#include "health/hstate.h"
#include "router/gateway.h"
#include "router/keyring.h"
#include "router/keyring_sync.h"
#include "store/store.h"

struct boot_read {
    struct keyring *kr;
    int due;
    enum bsc_err err;
};

static void on_boot_keys(enum bsc_err err, struct bsc_str v, void *ud)
{
    struct boot_read *b = ud;

    if (err == BSC_OK)
        keyring_adopt(b->kr, v.p, v.len);
    else if (err != BSC_ENOTFOUND)
        b->err = err;
    b->due--;
}

static void on_boot_audit(enum bsc_err err, struct bsc_str v, void *ud)
{
    struct boot_read *b = ud;

    if (err == BSC_OK)
        keyring_adopt_audit(b->kr, v.p, v.len);
    else if (err != BSC_ENOTFOUND)
        b->err = err;
    b->due--;
}

enum bsc_err keyring_load_blocking(struct keyring *kr, struct store *st, uv_loop_t *loop)
{
    struct boot_read b = {.kr = kr, .due = 2};
    enum bsc_err err = store_blob_get(st, loop, BSC_STR(KEYRING_BLOB), on_boot_keys, &b);

    if (err)
        return err;
    err = store_blob_get(st, loop, BSC_STR(KEYRING_AUDIT_BLOB), on_boot_audit, &b);
    if (err)
        b.due--;
    while (b.due > 0)
        uv_run(loop, UV_RUN_ONCE);
    err = err ? err : b.err;
    if (!err)
        keyring_set_synced(kr);
    return err;
}

/* ---- following the other instances ---- */

static void on_poll_audit(enum bsc_err err, struct bsc_str v, void *ud)
{
    struct gateway *gw = ud;

    if (err == BSC_OK)
        keyring_adopt_audit(gw->keyring, v.p, v.len);
}

static void on_poll_keys(enum bsc_err err, struct bsc_str v, void *ud)
{
    uv_async_t *a = ud;
    struct gateway *gw = a->data;

    if (err == BSC_ENOTFOUND)
        keyring_set_synced(gw->keyring);
    if (err != BSC_OK)
        return;
    keyring_set_synced(gw->keyring);
    if (!keyring_adopt(gw->keyring, v.p, v.len))
        return;
    LOG_INFO("keyring changed in the store: rebuilding the snapshot");
    if (gw->rebuild(gw) != BSC_OK)
        LOG_ERR("the keyring changed but the config file does not load: not applied");
    if (store_blob_get(gw->store, a->loop, BSC_STR(KEYRING_AUDIT_BLOB), on_poll_audit, gw))
        LOG_WARN("could not queue a read of the audit trail");
}

/* Another instance said the keyring changed, or the shared state (re)subscribed: read it. */
static void on_changed(uv_async_t *a)
{
    struct gateway *gw = a->data;

    if (store_blob_get(gw->store, a->loop, BSC_STR(KEYRING_BLOB), on_poll_keys, a) != BSC_OK)
        LOG_WARN("keyring read not queued (store busy): served as it is until the next change");
}

/* The shared state's thread: wakes the main loop, which reads the keyring. */
static void changed_elsewhere(void *ud)
{
    uv_async_send(ud);
}

void keyring_follow_start(struct gateway *gw, uv_loop_t *loop, uv_async_t *a)
{
    uv_async_init(loop, a, on_changed);
    a->data = gw;
    hstate_on_notify(gw->hs, changed_elsewhere, a);
}

void keyring_follow_stop(struct gateway *gw)
{
    hstate_on_notify(gw->hs, NULL, NULL);
}

void keyring_announce(struct gateway *gw)
{
    hstate_notify(gw->hs);
}
