/* SPDX-License-Identifier: MIT */
/* admin_clients.h -- the clients' spend, for the admin API and the status page
 * (admin_clients.c). */
#ifndef BSC_API_ADMIN_CLIENTS_H
#define BSC_API_ADMIN_CLIENTS_H

#include <stdbool.h>

#include "core/buf.h"
#include "core/str.h"

struct worker;
struct srv_req;
struct cfg;

/* GET /admin/clients, POST /admin/clients/{id}/reset-spend (<rest> is the path after
 * /admin/, the key already checked). False when <rest> is neither. */
bool api__admin_clients(struct worker *w, struct srv_req *req, struct cfg *cfg,
                        struct bsc_str rest, const char *admin);
/* status.json's ",\"clients\":[...]": in flight, the book's spend (null when not loaded),
 * budget and period of each client. */
void api__put_clients_status(struct bsc_buf *b, struct worker *w, const struct cfg *cfg);

#endif
