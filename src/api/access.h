/* SPDX-License-Identifier: MIT */
/* access.h -- the access-log line of requests the router does not take (access.c). */
#ifndef BSC_API_ACCESS_H
#define BSC_API_ACCESS_H

#include <stdint.h>

#include "server/server.h"

struct api_line {
    char id[129];
    char method[16];
    char path[256];      /* truncated */
    uint64_t start_us, bytes_in;
    char detail[192];    /* "" = none; what an admin action changed, why a refusal */
    char client[SRV_PRINCIPAL_MAX + 1]; /* the authenticated client, "" = none */
};

/* Copies what the line needs from <req> (valid until the response ends) into <l>. */
void api__line_begin(struct api_line *l, struct srv_req *req);
/* Writes the line with <status>; <termination> NULL means "local" (answered here). */
void api__line_end(const struct api_line *l, int status, const char *termination);
/* Sets the detail of the line api_handle writes for <req> (admin: "disable target t1").
 * A no-op outside the handler call. */
void api__line_detail(struct srv_req *req, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
