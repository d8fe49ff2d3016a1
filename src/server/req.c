/* SPDX-License-Identifier: MIT */
/* req.c -- read access to a dispatched request: everything is borrowed from the
 * connection's parser state and stays valid until the response ends. No copies.
 * See docs/internals/server.md. */
#include "core/compat.h"
#include "server/internal.h"

struct bsc_str srv_req_method(const struct srv_req *req)
{
    return srv__h1_method(&req->conn->h1);
}

struct bsc_str srv_req_path(const struct srv_req *req)
{
    return req->conn->h1.path;
}

struct bsc_str srv_req_query(const struct srv_req *req)
{
    return req->conn->h1.query;
}

struct bsc_str srv_req_authority(const struct srv_req *req)
{
    return req->conn->h1.authority;
}

struct bsc_str srv_req_header(const struct srv_req *req, struct bsc_str name)
{
    return srv__h1_header(&req->conn->h1, name);
}

size_t srv_req_header_count(const struct srv_req *req)
{
    return req->conn->h1.n_hdrs;
}

struct srv_header srv_req_header_at(const struct srv_req *req, size_t i)
{
    return srv__h1_header_at(&req->conn->h1, i);
}

struct bsc_str srv_req_body(const struct srv_req *req)
{
    const struct bsc_buf *b = &req->conn->h1.body;

    return b->len ? bsc_str_make(b->p, b->len) : BSC_STR("");
}

const char *srv_req_id(const struct srv_req *req)
{
    return req->id;
}

uint64_t srv_req_start_us(const struct srv_req *req)
{
    return req->start_us;
}

uv_loop_t *srv_req_loop(const struct srv_req *req)
{
    return req->conn->srv->loop;
}

void srv_req_set_data(struct srv_req *req, void *data)
{
    req->data = data;
}

void *srv_req_data(const struct srv_req *req)
{
    return req->data;
}

void srv_req_set_principal(struct srv_req *req, struct bsc_str who)
{
    size_t n = who.len > SRV_PRINCIPAL_MAX ? SRV_PRINCIPAL_MAX : who.len;

    if (n)
        memcpy(req->principal, who.p, n);
    req->principal[n] = '\0';
}

const char *srv_req_principal(const struct srv_req *req)
{
    return req->principal;
}

bool srv_req_abort_watched(const struct srv_req *req)
{
    return req->on_abort != NULL;
}
