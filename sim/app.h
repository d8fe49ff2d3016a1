/* SPDX-License-Identifier: MIT */
/* app.h -- the bascule-sim application object and its request router: /_sim/... goes to
 * the control API, dialect paths to their dialect and then the fault runtime, anything
 * else is a 404. One loop, one thread: the object is only touched from its loop.
 * See docs/internals/sim.md. */
#ifndef BSC_SIM_APP_H
#define BSC_SIM_APP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "models.h"

#include "server/server.h"

#define SIM_MAX_BODY_BYTES   (16u * 1024u * 1024u)
#define SIM_MAX_PENDING      (1024u * 1024u) /* srv max_pending_output */
#define SIM_OUT_MAX          (64u * 1024u * 1024u) /* one rendered answer */

struct sim_app {
    uv_loop_t *loop;          /* borrowed */
    struct srv *srv;          /* owned; NULL once freed */
    struct sim_models models; /* owned: every spec, counter and log */
    uint32_t token_delay_ms;  /* the CLI default pacing of stream chunks */
    bool quiet;               /* no per-request log line */
    uint64_t seq;             /* API requests numbered from 1 */
    size_t live;              /* exchanges not yet freed */
};

/* Cannot fail; allocates nothing. */
void sim_app_init(struct sim_app *app, uv_loop_t *loop, uint32_t token_delay_ms, bool quiet);
/* Frees the state; the server must be gone and no exchange live. */
void sim_app_cleanup(struct sim_app *app);

/* The srv handler (<ud> is the struct sim_app). Answers now or later through srv_resp_*. */
void sim_app_handle(struct srv_req *req, void *ud);

/* Loads a script file's JSON text, {"models": {"name": spec, ...}}, into <app>. On error
 * returns BSC_EPARSE/BSC_EINVAL with a reason naming the model in <errbuf>. */
enum bsc_err sim_app_load_script(struct sim_app *app, struct bsc_str json, char *errbuf,
                                 size_t errlen);

#endif
