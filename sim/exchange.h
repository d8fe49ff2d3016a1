/* SPDX-License-Identifier: MIT */
/* exchange.h -- the fault runtime of bascule-sim: carries one scripted step out on one
 * request (delay, status, reset, hang, cut, error_200, malformed, trickle, ok), pacing
 * stream events with uv timers (never sleeping) and respecting the server's
 * back-pressure. It counts the call's end exactly once: completed when the sim ended
 * the response, cancelled when the client went away first. See docs/internals/sim.md. */
#ifndef BSC_SIM_EXCHANGE_H
#define BSC_SIM_EXCHANGE_H

#include "app.h"
#include "dialect.h"
#include "models.h"

#include "server/server.h"

/* Answers <req> with <d> for <call> as <plan> says. Takes ownership of what <call> and
 * <plan> own (both are left empty). Never fails: without memory it answers 503 (and still
 * counts the call's end). May answer before returning, or later from the loop. */
void sim_xchg_start(struct sim_app *app, struct srv_req *req, const struct sim_dialect *d,
                    struct sim_call *call, struct sim_plan *plan);

#endif
