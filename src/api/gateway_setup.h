/* SPDX-License-Identifier: MIT */
/* gateway_setup.h -- the gateway's shared state built from a config, the one way: main.c's
 * serve() and the unit tests' in-process harness (tests/unit/harness/req_harness.c) both
 * call these, so the state a test drives is the state production runs. The listeners,
 * worker loops, signals and the prober stay with the caller. It lives in api/ because the
 * gateway owns status.json's history (api/status_history.h): api/ is the one folder that
 * may use every part the gateway holds. */
#ifndef BSC_API_GATEWAY_SETUP_H
#define BSC_API_GATEWAY_SETUP_H

#include "config/config.h"
#include "core/err.h"
#include "router/gateway.h"
#include "server/server.h"
#include "upstream/upstream.h"

/* Makes every part of <gw> that outlives one request (health state, limits, metrics,
 * connections group, verdicts, spend book, keyring, status history, caches) for <cfg>,
 * sets n_workers and started_ms, syncs health and limits to <cfg> and opens the store
 * (once: a reload that changes store: needs a restart). With store.kind redis, health
 * state and limits are shared with the fleet through it. The caller sets config_path and
 * rebuild. On error the reason is logged; what was made stays in <gw> for
 * gateway_close. */
enum bsc_err gateway_open(struct gateway *gw, struct cfg *cfg);
/* The keyring read from the store and merged into <cfg>, the first snapshot, before any
 * worker runs; limits synced to the merged keys. A shared store still connecting is
 * retried for about 2 s, then left to the keyring's poll (a warning: admin writes wait);
 * a local store that cannot be read is an error (logged). */
enum bsc_err gateway_keyring_start(struct gateway *gw, struct cfg *cfg);
/* Appends the keyring's keys to <cfg> (docs/internals/keys.md); warnings and an error are
 * logged. */
enum bsc_err gateway_merge_keyring(struct gateway *gw, struct cfg *cfg);
/* Worker <w>'s public side, on its loop (made by the caller, not running yet): the API
 * server on <fd> (listening already; the server owns it) with <lim>, joined to the
 * connections group as worker <w>->idx, the error bodies and refusals in the OpenAI
 * dialect, and the upstream multi with <ul>. BSC_OK, or an error when something could not
 * be made (what was made stays in <w> for the caller's close). */
enum bsc_err gateway_worker_serve(struct worker *w, int fd, const struct srv_limits *lim,
                                  const struct up_limits *ul);
/* Frees what gateway_open made (NULL members never were) and the workers array, once every
 * worker loop has ended, and unpublishes the current snapshot. The telemetry exporter
 * counts into the metrics: a caller that started it stops it first (tel_shutdown). */
void gateway_close(struct gateway *gw);

#endif
