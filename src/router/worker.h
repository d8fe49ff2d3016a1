/* SPDX-License-Identifier: MIT */
/* worker.h -- one worker: a thread with its own libuv loop, its own listener socket
 * (SO_REUSEPORT) and its own libcurl multi. Shared-nothing except the config snapshot
 * pointer and the process-wide health state (health/hstate.h). */
#ifndef BSC_ROUTER_WORKER_H
#define BSC_ROUTER_WORKER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "config/config.h"
#include "server/server.h"
#include "upstream/upstream.h"

struct prober;
struct gateway; /* the process: config, health state, metrics (router/gateway.h) */

#define WORKER_REQ_POOL 64

struct request;
struct shadow;

struct worker {
    unsigned idx;
    uv_loop_t loop;
    uv_thread_t thread;
    uv_async_t wake;           /* main -> worker: reload limits, drain, stop */
    atomic_uint pending;       /* WORKER_CMD_* bits set by main before waking */
    struct srv *srv;           /* owned */
    struct srv *admin_srv;     /* owned; worker 0 with admin.listen only, else NULL */
    bool admin_closing;
    struct up_multi *up;       /* owned */
    struct prober *prober;     /* owned; worker 0 only: active health checks */
    struct gateway *gw;        /* borrowed */
    size_t inflight;           /* requests being handled on this loop */
    bool draining;
    bool drained;              /* the server reported every connection closed */
    uv_timer_t drain_timer;
    uv_timer_t log_flush;      /* writes the batched log lines every few milliseconds */
    /* Freed requests kept for the next ones (request.c): a request is about 4 KiB, which
     * glibc serves from its large bins, consolidating its fast bins first, every time. */
    struct request *req_pool[WORKER_REQ_POOL];
    unsigned n_req_pool;
    struct shadow *shadows;    /* mirrored requests running on this loop (router/shadow.c) */
    struct request *lim_waiting; /* requests queued for a target's capacity (router/limit.c) */
    bool lim_closed;           /* <wake> is closing: limit.c wakes it no more */
};

enum worker_cmd {
    WORKER_CMD_RELOAD = 1u << 0,
    WORKER_CMD_DRAIN = 1u << 1,
    WORKER_CMD_STOP = 1u << 2,    /* the drain timed out: streams get their error event */
    WORKER_CMD_CAPACITY = 1u << 3, /* a limit this loop's queued requests wait on has room */
    WORKER_CMD_CLOSE = 1u << 4     /* a second signal: every connection closes now */
};

#endif
