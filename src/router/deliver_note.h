/* SPDX-License-Identifier: MIT */
/* deliver_note.h -- what the client side records of an answer that did not go through the
 * relay, or of a request that ended: its termination code, a client gone, a whole answer
 * sent by the file that had it (a cache hit, an idempotent replay), and the x-bascule-*
 * headers every answer carries. Kept apart from
 * deliver.h so that the files that stop a request (admit.c, guard.c, limit.c,
 * req_error.c, cache_req.c) name its end without depending on the relay, which calls
 * them. Writes struct downstream (r->d) only. Router-private. */
#ifndef BSC_ROUTER_DELIVER_NOTE_H
#define BSC_ROUTER_DELIVER_NOTE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/str.h"

struct request;
struct srv_header;

/* The termination code of the request's access line (docs/internals/request-lifecycle.md):
 * the helpers that stop a request name it here; <code> is static. */
void deliver_set_termination(struct request *r, const char *code);
/* The client went away: 499 unless a status was already sent, client_abort. */
void deliver_client_gone(struct request *r);
/* A whole answer sent outside the relay (a cache hit, an idempotent replay): before it is
 * sent, its <status> and <termination>, which the idempotency record and the cache read;
 * once sent, its <bytes>, the time to first byte when <timed>, and the borrowed srv_req
 * dropped. */
void deliver_whole_begin(struct request *r, int status, const char *termination);
void deliver_whole_sent(struct request *r, size_t bytes, bool timed);
/* The x-bascule-* headers of an answer, x-bascule-cache included; returns how many were
 * put in <h> (room for 8). <buf> holds the attempts count's digits while <h> is used. */
size_t deliver_route_headers(struct request *r, struct srv_header *h,
                             char buf[BSC_NUM_TEXT_MAX]);

#endif
