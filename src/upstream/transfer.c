/* SPDX-License-Identifier: MIT */
/* transfer.c -- the up_* calls on one upstream attempt, whichever client runs it. The
 * client (struct up_client_ops: libcurl in easy.c, the builtin HTTP/1.1 client in h1.c) is
 * chosen once, when the transfer starts; every later call goes through its table. What the
 * clients share (the response head and status, whether the request went out) is read here
 * directly. docs/internals/upstream.md, "Two clients, one table". */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/asan.h"
#include "upstream/internal.h"

static const char *const result_names[UP_RESULT_COUNT] = {
    [UP_OK] = "ok",           [UP_CONNECT] = "connect",   [UP_DNS] = "dns",
    [UP_TIMEOUT] = "timeout", [UP_RESET] = "reset",       [UP_TLS] = "tls",
    [UP_PROTOCOL] = "protocol", [UP_TOO_LARGE] = "too_large",
};

const char *up_result_name(enum up_result r)
{
    return (unsigned)r < UP_RESULT_COUNT ? result_names[r] : "unknown";
}

const struct up_client_ops *up__client_for(const struct up_multi *m, const char *url)
{
    if (m->h1 && !m->env_proxy &&
        (h1_url_is_http(url) || (m->builtin_https && h1_url_is_https(url))))
        return &up__h1_ops;
    return &up__curl_ops;
}

void up__req_head_put(struct up_multi *m, struct bsc_buf *req)
{
    if (!req->p || req->cap > UP_SPARE_REQ_KEEP || m->closing ||
        m->n_spare_req == UP_SPARE_TRANSFERS) {
        bsc_buf_cleanup(req);
        return;
    }
    BSC_ASAN_POISON(req->p, req->cap + 1);
    m->spare_req[m->n_spare_req++] = *req;
    bsc_buf_init(req, req->max);
}

/* A kept request head's storage, unpoisoned, or an empty buffer. */
static struct bsc_buf req_head_take(struct up_multi *m)
{
    struct bsc_buf req = {0};

    if (m->n_spare_req) {
        req = m->spare_req[--m->n_spare_req];
        BSC_ASAN_UNPOISON(req.p, req.cap + 1);
    }
    return req;
}

/* A builtin transfer's object is of one size (h1_size): the newest kept one, unpoisoned. */
static struct up_transfer *spare_take(struct up_multi *m)
{
    struct up_transfer *t;

    if (!m->n_spare)
        return NULL;
    t = m->spare[--m->n_spare];
    BSC_ASAN_UNPOISON(t, offsetof(struct up_transfer, header_nodes));
    return t;
}

void up__transfer_release(struct up_transfer *t)
{
    struct up_multi *m = t->m;

    up__req_head_put(m, &t->h1.req);
    if (m->closing || m->n_spare == UP_SPARE_TRANSFERS) {
        bsc_buf_cleanup(&t->head);
        free(t);
        return;
    }
    bsc_buf_park(&t->head, UP_SPARE_HEAD_KEEP); /* a response head's storage stays with it */
    BSC_ASAN_POISON(t, offsetof(struct up_transfer, header_nodes));
    m->spare[m->n_spare++] = t;
}

void up__spares_free(struct up_multi *m)
{
    struct up_transfer *t;

    while ((t = spare_take(m)) != NULL) {
        bsc_buf_unpark(&t->head);
        bsc_buf_cleanup(&t->head);
        free(t);
    }
    while (m->n_spare_req) {
        struct bsc_buf req = req_head_take(m);

        bsc_buf_cleanup(&req);
    }
}

enum bsc_err up_start(struct up_multi *m, const struct up_request *req,
                      const struct up_callbacks *cb, void *ud, struct up_transfer **out)
{
    const struct up_client_ops *ops = up__client_for(m, req->url);
    struct up_transfer *t = ops == &up__h1_ops ? spare_take(m) : NULL;
    struct bsc_buf head = {0}; /* a kept transfer's response head storage, parked */
    enum bsc_err err;

    if (t)
        head = t->head;
    else if (!(t = malloc(ops->size(req))))
        return BSC_ENOMEM;
    /* Zeroed but for the curl header nodes, which are set when used (easy.c). */
    memset(t, 0, offsetof(struct up_transfer, header_nodes));
    t->head = head;
    bsc_buf_unpark(&t->head);
    bsc_buf_reuse(&t->head, UP_MAX_HEAD_BYTES);
    if (ops == &up__h1_ops)
        t->h1.req = req_head_take(m); /* h1_start resets it, its storage kept */
    t->ops = ops;
    t->m = m;
    t->cb = *cb;
    t->ud = ud;
    up__transfer_link(t);
    if ((err = ops->start(t, req)) != BSC_OK) {
        up__transfer_unlink(t);
        bsc_buf_cleanup(&t->head);
        free(t);
        return err;
    }
    *out = t;
    return BSC_OK;
}

void up_cancel(struct up_transfer *t)
{
    t->ops->cancel(t);
}

void up_pause(struct up_transfer *t)
{
    t->ops->pause(t);
}

void up_resume(struct up_transfer *t)
{
    t->ops->resume(t);
}

struct bsc_str up_header(const struct up_transfer *t, struct bsc_str name)
{
    return up_head_find(bsc_buf_str(&t->head), name);
}

void up_take_head(struct up_transfer *t, struct bsc_buf *dst)
{
    struct bsc_buf old = *dst;

    *dst = t->head;
    t->head = old;
}

int up_status(const struct up_transfer *t)
{
    return t->status;
}

bool up_request_sent(const struct up_transfer *t)
{
    return t->request_sent;
}
