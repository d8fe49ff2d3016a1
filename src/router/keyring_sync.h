/* SPDX-License-Identifier: MIT */
/* keyring_sync.h -- the keyring read from the store at start and followed on a shared one. */
#ifndef BSC_ROUTER_KEYRING_SYNC_H
#define BSC_ROUTER_KEYRING_SYNC_H

#include <uv.h>

#include "core/err.h"

struct gateway;
struct keyring;
struct store;

/* Reads the keyring and the audit trail from <st>, running <loop> (idle: at start) until
 * both answered. Absent blobs are fine. */
enum bsc_err keyring_load_blocking(struct keyring *kr, struct store *st, uv_loop_t *loop);
/* A shared store: <a> (initialised on <loop>) reads the keyring again when another instance
 * announces a change, or when the shared state (re)subscribes; a newer keyring is adopted and
 * gw->rebuild() publishes it. Stop before closing <a>. */
void keyring_follow_start(struct gateway *gw, uv_loop_t *loop, uv_async_t *a);
void keyring_follow_stop(struct gateway *gw);
/* After a keyring write is stored: tells the other instances to read it. */
void keyring_announce(struct gateway *gw);

#endif
