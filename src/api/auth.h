/* SPDX-License-Identifier: MIT */
/* auth.h -- who is calling: client keys, operator keys and the routes a client may see
 * (auth.c). */
#ifndef BSC_API_AUTH_H
#define BSC_API_AUTH_H

#include <stdbool.h>

#include "core/str.h"

struct srv_req;
struct cfg;
struct cfg_route;

/* The client-key and operator-key policy of <cfg> for <req> (arrived on the admin listener
 * when <on_admin_port>). Returns true when the request goes on, the authenticated client's
 * id set as its principal; false when it has been answered (401, 403, 404), with *<why>
 * for the access log. */
bool api__auth(struct srv_req *req, const struct cfg *cfg, bool on_admin_port,
               const char **why);
/* Compares a presented key with <want> in time independent of where they differ; an empty
 * or NULL <want> matches nothing. */
bool api__key_equal(struct bsc_str given, const char *want);
/* The route <name> as <req>'s client may see it: NULL when unknown or outside its
 * `routes` (so both answer the same 404). */
const struct cfg_route *api__route_find(struct srv_req *req, const struct cfg *cfg,
                                        struct bsc_str name);
bool api__route_allowed(struct srv_req *req, const struct cfg *cfg, const struct cfg_route *r);

#endif
