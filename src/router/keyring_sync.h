/* SPDX-License-Identifier: MIT */
/* keyring_sync.h -- the keyring read from the store at start and polled on a shared one. */
#ifndef BSC_ROUTER_KEYRING_SYNC_H
#define BSC_ROUTER_KEYRING_SYNC_H

#include <uv.h>

#include "core/err.h"

struct gateway;
struct keyring;
struct store;

#define KEYRING_POLL_MS 200

/* Reads the keyring and the audit trail from <st>, running <loop> (idle: at start) until
 * both answered. Absent blobs are fine. */
enum bsc_err keyring_load_blocking(struct keyring *kr, struct store *st, uv_loop_t *loop);
/* Starts <t> on <loop>: every KEYRING_POLL_MS, a newer keyring in the store is adopted and
 * gw->rebuild() publishes it. The caller closes <t>. */
void keyring_poll_start(struct gateway *gw, uv_loop_t *loop, uv_timer_t *t);

#endif
