/* SPDX-License-Identifier: MIT */
/* client_scope.h -- the name space a client's stored records live under (guard.c defines
 * it; the api's surfaces that store per-client records use it through request.h). */
#ifndef BSC_ROUTER_CLIENT_SCOPE_H
#define BSC_ROUTER_CLIENT_SCOPE_H

#include <stddef.h>

struct srv_req;

/* The name space of the client that sent <sreq>: "auth:" or "xkey:" and a digest of the
 * credential it presented (never the credential), or "anonymous". What one client stores
 * (idempotency records, Responses API turns) is kept under it, out of other clients' reach.
 * At most 40 bytes with the NUL; <out> is cut to <len>. Reads only <sreq>'s headers. */
void req_client_scope(struct srv_req *sreq, char *out, size_t len);

#endif
