/* SPDX-License-Identifier: MIT */
/* req_ident.h -- who asked, when, and which route it named (types only): request.c fills
 * it once at the start; everyone reads it, the access log after sreq is gone.
 * Router-private. */
#ifndef BSC_ROUTER_REQ_IDENT_H
#define BSC_ROUTER_REQ_IDENT_H

#include <stdint.h>

#include "config/config.h"

struct req_ident {
    char id[130];                     /* copy of the request id, for logs after sreq is gone */
    char path[64];                    /* copy of the request path, for the access log */
    uint64_t start_us;
    int64_t created;                  /* wall-clock seconds at the start, for "created" */
    const struct cfg_client *client;  /* clients: the authenticated caller (borrowed from
                                         the request's cfg); NULL on an open gateway */
    char client_scope[40];            /* req_client_scope() of the caller (feedback.c) */
    const struct cfg_route *select_route; /* borrowed: the select route the client named,
                                             or NULL; its rule <select_rule> chose the route */
    int select_rule;                  /* 0-based; -1 when no rule held */
};

#endif
