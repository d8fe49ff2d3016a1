/* SPDX-License-Identifier: MIT */
/* access.c -- the access-log line of a request the router does not take: admin, ledger,
 * models, health, metrics, status, unknown paths, input refused before routing, CORS and
 * Host refusals. api_handle writes it once the handler returns, unless someone kept the
 * request (the router writes its own, richer line; the ledger writes this one when the
 * store answers), so no handler can forget it. The line shape is router/access_log.c's. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "api/access.h"
#include "core/clock.h"
#include "router/access_log.h"

void api__line_begin(struct api_line *l, struct srv_req *req)
{
    struct bsc_str m = srv_req_method(req), path = srv_req_path(req);

    bsc_str_copy(l->id, sizeof(l->id), bsc_str_cstr(srv_req_id(req)));
    bsc_str_copy(l->method, sizeof(l->method), m);
    bsc_str_copy(l->path, sizeof(l->path), path);
    l->start_us = srv_req_start_us(req);
    l->bytes_in = srv_req_body(req).len;
    l->detail[0] = '\0';
    bsc_str_copy(l->client, sizeof(l->client), bsc_str_cstr(srv_req_principal(req)));
}

void api__line_detail(struct srv_req *req, const char *fmt, ...)
{
    struct api_line *l = srv_req_data(req);
    va_list ap;

    if (!l) /* not inside api_handle (an async answer): its owner logs */
        return;
    va_start(ap, fmt);
    vsnprintf(l->detail, sizeof(l->detail), fmt, ap);
    va_end(ap);
}

void api__line_end(const struct api_line *l, int status, const char *termination)
{
    uint64_t now = bsc_now_us();
    struct access_entry e = {
        .request_id = l->id,
        .method = l->method,
        .path = l->path,
        .client = l->client[0] ? l->client : NULL,
        .status = status,
        .bytes_in = l->bytes_in,
        .duration_us = now > l->start_us ? now - l->start_us : 0,
        .termination = termination ? termination : "local",
        .input_tokens = -1,
        .output_tokens = -1,
        .detail = l->detail[0] ? l->detail : NULL,
    };

    access_log_write(&e);
}

void api_refused(struct srv_req *req, int status, void *ud)
{
    struct api_line l;

    (void)ud;
    api__line_begin(&l, req);
    if (!l.path[0]) /* the request line never completed: the parser's method means nothing */
        l.method[0] = '\0';
    snprintf(l.detail, sizeof(l.detail), "refused by the HTTP server");
    api__line_end(&l, status, "server");
}
