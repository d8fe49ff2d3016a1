/* SPDX-License-Identifier: MIT */
/* req_err.h -- the error the request will answer with (types only). req_error.c alone
 * writes it (req__set_error and its siblings); deliver.c and the access log read it.
 * Router-private. */
#ifndef BSC_ROUTER_REQ_ERR_H
#define BSC_ROUTER_REQ_ERR_H

#include "router/reply.h"

struct req_err {
    struct reply_error reply;
    struct {
        char msg[320], code[64];
    } text;                 /* what reply.message and reply.code point into */
    const char *limited_by; /* static: the limit that refused it (x-bascule-limited-by) */
};

#endif
