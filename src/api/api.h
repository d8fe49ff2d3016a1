/* SPDX-License-Identifier: MIT */
/* api.h -- the inbound surfaces: one handler that dispatches each complete request by
 * method and path to the file that owns that surface (chat, models, health, ...). The
 * api layer validates and normalizes client input; the router does the rest. */
#ifndef BSC_API_API_H
#define BSC_API_API_H

#include "server/server.h"

/* The srv handler of every worker; <ud> is the struct worker. */
void api_handle(struct srv_req *req, void *ud);
/* The same for the admin listener (admin.listen): operator surfaces and health only. */
void api_handle_admin(struct srv_req *req, void *ud);
/* The srv head check (srv_set_head_check) of each listener: the Host and Origin policy and
 * the credential check run on the head of a request whose body is still to come, so that a
 * request they refuse is answered at once, its body never read and its connection closed
 * (with clients: configured, a head without a valid key is a 401 before its body). True
 * when the request passes and its body is read. */
bool api_head_check(struct srv_req *req, void *ud);
bool api_head_check_admin(struct srv_req *req, void *ud);
/* The access line of a request the server answered itself (srv_set_refused): malformed
 * framing, oversized heads or bodies, slow clients. */
void api_refused(struct srv_req *req, int status, void *ud);

#endif
