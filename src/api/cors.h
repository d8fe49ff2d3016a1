/* SPDX-License-Identifier: MIT */
/* cors.h -- the Host (DNS rebinding) and Origin (CORS) policy (cors.c). */
#ifndef BSC_API_CORS_H
#define BSC_API_CORS_H

#include <stdbool.h>

#include "core/str.h"

struct srv_req;
struct cfg;

#ifdef BSC_UNIT_TEST
/* File-local in release builds (BSC_TESTABLE): whether the authority <auth> of an
 * absolute-form target ({NULL,0}: origin-form, allowed) may be served by a listener on
 * <listen_host> under <cfg>'s Host rule, <host> being the Host value ({NULL,0}: none). */
bool api__target_host_allowed(struct bsc_str auth, struct bsc_str host, const struct cfg *cfg,
                              const char *listen_host);
#endif

/* Host and Origin policy of <cfg> for <req>, which came in on the admin listener when
 * <on_admin_port>. Returns true when the request goes on, with CORS headers added for an
 * allowed origin; false when it has been answered (403 for a Host or Origin refused, 204
 * for a CORS preflight), with *<why> saying which for the access log. */
bool api__guard(struct srv_req *req, const struct cfg *cfg, bool on_admin_port,
                const char **why);

#endif
