/* SPDX-License-Identifier: MIT */
/* status_history.h -- what /status.json adds to the snapshot: time and events. The series
 * (the last 15 minutes at 10-second resolution: requests/s, errors/s, p50/p95/p99 latency
 * and TTFT, failovers and fallbacks, per route and per target) are the differences between
 * consecutive reads of the metrics registry; the events (the last 200: circuit transitions,
 * key cooldowns and re-verifications, adaptive-limit changes, reloads, run-time switches,
 * store up/down) are the changes between consecutive observations of the routing state and
 * of those counters. See docs/internals/status.md. */
#ifndef BSC_API_STATUS_HISTORY_H
#define BSC_API_STATUS_HISTORY_H

#include <stdbool.h>
#include <stdint.h>

#include "core/buf.h"

#define STATUS_SERIES_INTERVAL_MS 10000u
#define STATUS_SERIES_POINTS 90u /* 15 minutes */
#define STATUS_EVENTS 200u

struct status_history;
struct gateway;
struct cfg;

/* NULL when out of memory. Free with status_history_free() (NULL is fine). */
struct status_history *status_history_new(void);
void status_history_free(struct status_history *h);

/* Observes the gateway at wall-clock <wall_ms>: records an event for every change since the
 * previous observation (the first one is the baseline and records none), and, when
 * <sample>, appends a series point made of the counters' growth since the previous sample.
 * Thread-safe: the main loop samples every STATUS_SERIES_INTERVAL_MS, a status.json request
 * observes without sampling so that its events are current. */
void status_history_observe(struct status_history *h, struct gateway *gw, const struct cfg *cfg,
                            uint64_t wall_ms, bool sample);

/* Records an event the observations cannot see (an admin action that leaves no state to
 * compare: a client's spend reset). NULL <h> is fine. */
void status_history_note(struct status_history *h, uint64_t wall_ms, const char *kind,
                         const char *subject, const char *from, const char *to,
                         const char *reason);

/* Appends ,"series":{...},"events":[...] to <b>. */
void status_history_put_json(struct status_history *h, struct bsc_buf *b);

#endif
