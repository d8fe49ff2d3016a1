/* SPDX-License-Identifier: MIT */
/* control.h -- the control API of bascule-sim under /_sim/: set a model's fault script at
 * run time, read counters and the request log, reset. Pure: a request's method, path,
 * query and body in, a status and a JSON body out; app.c wires it to the server.
 * See docs/internals/sim.md for the endpoints. */
#ifndef BSC_SIM_CONTROL_H
#define BSC_SIM_CONTROL_H

#include <stdbool.h>

#include "models.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/str.h"

#define SIM_CONTROL_PREFIX "/_sim/"

/* True when <path> belongs to the control API. */
bool sim_control_is_path(struct bsc_str path);

/* Serves one control request against <m>. Returns the HTTP status and appends the JSON
 * answer to <out> (an OpenAI-shaped error object for 4xx/5xx). */
int sim_control_dispatch(struct sim_models *m, struct bsc_str method, struct bsc_str path,
                         struct bsc_str query, struct bsc_str body, struct bsc_buf *out);

/* Appends the percent-decoding of <in> to <out> ('+' becomes a space when <plus_space>).
 * BSC_EINVAL on a bad escape; <out> may then hold a partial result. */
enum bsc_err sim_url_decode(struct bsc_str in, bool plus_space, struct bsc_buf *out);

/* Finds parameter <name> in the query string <query> (no '?') and appends its decoded
 * value to <out>. False when absent or badly escaped. */
bool sim_query_param(struct bsc_str query, const char *name, struct bsc_buf *out);

#endif
