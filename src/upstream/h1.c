/* SPDX-License-Identifier: MIT */
/* h1.c -- one builtin HTTP/1.1 transfer on one connection: the request head and body go
 * out in one uv_write (two iovecs, the body not copied), the response is read into the
 * loop's shared read buffer and fed to the h1_wire reader (on https://, h1_tls.c encrypts
 * the request and decrypts the response in between). A reused connection that dies
 * before any response byte is replayed once on a new one, as libcurl does; a transfer
 * asking for a fresh connection never is. Failures found inside an up_* call are
 * finished later from the loop (h1_later), so no callback runs inside one. */
#include <stdlib.h>
#include <string.h>

#include "upstream/internal.h"

static void conn_arm(struct h1_conn *c);

/* ---- hooks the response reader calls --------------------------------------------------- */

static enum h1_take take_head(void *ud, int status)
{
    struct up_transfer *t = ud;

    t->status = status;
    t->head_done = true;
    t->request_sent = true;
    /* No replay once a head came: a held stream need not keep its request head. */
    if (!t->h1.conn->writing)
        up__req_head_put(t->m, &t->h1.req);
    t->in_callback = true;
    t->cb.on_head(t->ud, t, status);
    t->in_callback = false;
    return t->cancelled ? H1_STOP : H1_GO;
}

static enum h1_take take_body(void *ud, const char *p, size_t len)
{
    struct up_transfer *t = ud;
    bool pause;

    if (t->cancelled)
        return H1_STOP;
    t->in_callback = true;
    pause = t->cb.on_data(t->ud, t, p, len);
    t->in_callback = false;
    if (t->cancelled)
        return H1_STOP;
    if (pause)
        t->paused = true;
    return pause || t->paused ? H1_HOLD : H1_GO;
}

/* ---- reading -------------------------------------------------------------------------- */

static void read_stop(struct h1_conn *c)
{
    if (c->reading)
        uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = false;
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    struct h1_conn *c = h->data;

    (void)hint;
    *buf = uv_buf_init(c->host->pool->rbuf, sizeof(c->host->pool->rbuf));
}

/* Whether the keep-alive race may be answered by sending <t> again on a new connection. */
static bool may_replay(const struct h1_conn *c, const struct up_transfer *t)
{
    return c->reused && !t->h1.replayed && !t->h1.fresh && c->resp.taken == 0 &&
           !c->host->pool->closing;
}

static void replay(struct up_transfer *t)
{
    struct h1_conn *c = t->h1.conn;

    c->t = NULL;
    t->h1.conn = NULL;
    h1_conn_close(c);
    t->h1.replayed = true;
    t->request_sent = false;
    h1_dispatch(t);
}

void h1_conn_broke(struct h1_conn *c, struct up_transfer *t, bool eof, const char *detail)
{
    if (eof && h1_resp_eof(&c->resp) == H1_DONE) {
        c->spent = true;
        if (c->resp.hold) {
            read_stop(c); /* held bytes still to hand over: up_resume finishes */
            return;
        }
        h1_finish(t, UP_OK, "");
        return;
    }
    if (may_replay(c, t)) {
        replay(t);
        return;
    }
    h1_finish(t, UP_RESET, detail);
}

void h1_after_feed(struct h1_conn *c, struct up_transfer *t, enum h1_state st, bool rest)
{
    if (t->cancelled) {
        h1_finish(t, UP_RESET, "cancelled");
        return;
    }
    switch (st) {
    case H1_MORE:
        if (c->resp.hold)
            read_stop(c);
        return;
    case H1_DONE:
        if (rest) {
            /* Bytes past a complete answer: the upstream is out of step with its requests
             * (a body on a 204, more than Content-Length, a response nobody asked for), so
             * which bytes answer this request is unknown. The answer fails and the
             * connection closes, never to carry another request. */
            c->spent = true;
            h1_finish(t, UP_PROTOCOL, "bytes after the end of the response");
            return;
        }
        if (c->resp.hold) {
            read_stop(c);
            return;
        }
        h1_finish(t, UP_OK, "");
        return;
    case H1_TOO_LARGE:
        h1_finish(t, UP_TOO_LARGE, "response head too large");
        return;
    case H1_BAD:
    case H1_STOPPED:
    default:
        h1_finish(t, UP_PROTOCOL, h1_resp_why(&c->resp));
        return;
    }
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct h1_conn *c = s->data;
    struct up_transfer *t = c->t;
    size_t used = 0;
    enum h1_state st;

    if (c->tls.ssl) {
        h1_tls_on_read(c, nread, buf);
        return;
    }
    if (!t) {
        h1_idle_read(c, nread);
        return;
    }
    if (nread == 0)
        return;
    if (nread < 0) {
        h1_conn_broke(c, t, nread == UV_EOF, nread == UV_EOF
                      ? "connection closed by upstream before the response ended"
                      : uv_strerror((int)nread));
        return;
    }
    st = h1_resp_feed(&c->resp, buf->base, (size_t)nread, &used);
    h1_after_feed(c, t, st, used < (size_t)nread);
}

void h1_read_start(struct h1_conn *c)
{
    if (!c->reading && uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0)
        c->reading = true;
}

/* ---- writing -------------------------------------------------------------------------- */

void h1_on_written(uv_write_t *req, int status)
{
    struct h1_conn *c = req->data;
    struct up_transfer *t = c->t;

    c->writing = false;
    if (c->closing)
        return;
    if (status == 0 && c->tls.ssl) {
        h1_tls_out_sent(&c->wout);
        status = h1_tls_flush(c); /* what the session wrote meanwhile */
        if (status == 0 && c->writing)
            return;
    }
    if (!t)
        return;
    if (status == 0) {
        if (c->connected) /* else it was the handshake's */
            t->request_sent = true;
        return;
    }
    if (may_replay(c, t)) {
        replay(t);
        return;
    }
    h1_finish(t, UP_RESET, uv_strerror(status));
}

/* Drops the first <n> bytes of <bufs>; returns where the rest starts and its count. */
static uv_buf_t *bufs_skip(uv_buf_t *bufs, unsigned *nbufs, size_t n)
{
    while (*nbufs && n >= bufs->len) {
        n -= bufs->len;
        bufs++;
        (*nbufs)--;
    }
    if (*nbufs) {
        bufs->base += n;
        bufs->len -= n;
    }
    return bufs;
}

/* The request goes out with a direct write when the socket takes it whole, which it does
 * but for bodies larger than the socket buffer: a uv_write costs an epoll_ctl more (libuv
 * re-arms the watcher when its queue drains) and a callback from the next pass. What the
 * socket does not take, and any error (the keep-alive race included), goes through
 * uv_write and on_written, as before. */
static void send_request(struct h1_conn *c, struct up_transfer *t)
{
    uv_buf_t bufs[2] = {
        uv_buf_init(t->h1.req.p, (unsigned)t->h1.req.len),
        uv_buf_init((char *)(uintptr_t)t->h1.body, (unsigned)t->h1.body_len),
    };
    unsigned n = t->h1.body_len ? 2 : 1;
    uv_buf_t *rest = bufs;
    int rc;

    if (c->tls.ssl) {
        h1_tls_send_request(c, t);
        return;
    }
    rc = uv_try_write((uv_stream_t *)&c->tcp, bufs, n);

    if (rc > 0)
        rest = bufs_skip(bufs, &n, (size_t)rc);
    if (n == 0) {
        t->request_sent = true;
        if (!c->resp.hold)
            h1_read_start(c);
        return;
    }
    c->wreq.data = c;
    rc = uv_write(&c->wreq, (uv_stream_t *)&c->tcp, rest, n, h1_on_written);
    if (rc != 0) {
        h1_later(t, UP_RESET, uv_strerror(rc));
        return;
    }
    c->writing = true;
    if (!c->resp.hold)
        h1_read_start(c);
}

/* ---- connecting and deadlines ----------------------------------------------------------- */

static void on_connected(uv_connect_t *req, int status)
{
    struct h1_conn *c = req->data;
    struct up_transfer *t = c->t;

    if (c->closing)
        return;
    if (status != 0) {
        if (t)
            h1_finish(t, status == UV_ETIMEDOUT ? UP_TIMEOUT : UP_CONNECT, uv_strerror(status));
        else
            h1_conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    if (c->host->trust) {
        if (!h1_tls_begin(c)) {
            if (t)
                h1_finish(t, UP_TLS, "cannot start a TLS session");
            else
                h1_conn_close(c);
        }
        return; /* h1_tls.c calls h1_conn_ready once the handshake is done */
    }
    c->connected = true;
    h1_conn_ready(c);
}

void h1_conn_ready(struct h1_conn *c)
{
    struct up_transfer *t = c->t;

    if (!t) {
        h1_conn_idle(c); /* its transfer went away while it connected */
        return;
    }
    conn_arm(c);
    send_request(c, t);
}

static void on_deadline(uv_timer_t *h)
{
    struct h1_conn *c = h->data;
    struct up_transfer *t = c->t;

    if (!t)
        return;
    h1_finish(t, UP_TIMEOUT, c->connected ? "operation timed out" : "connection timed out");
}

/* The nearer of the connect deadline (while connecting) and the whole-transfer one. */
static void conn_arm(struct h1_conn *c)
{
    struct up_transfer *t = c->t;
    uint64_t now = uv_now(c->host->pool->loop), due = UINT64_MAX;

    if (!c->connected)
        due = now + (t->h1.connect_timeout_ms ? t->h1.connect_timeout_ms : H1_CONNECT_DEFAULT);
    if (t->h1.timeout_ms && t->h1.started + t->h1.timeout_ms < due)
        due = t->h1.started + t->h1.timeout_ms;
    if (due == UINT64_MAX) {
        uv_timer_stop(&c->timer);
        return;
    }
    uv_timer_start(&c->timer, on_deadline, due > now ? due - now : 0, 0);
}

static void conn_handle_closed(uv_handle_t *h)
{
    struct h1_conn *c = h->data;
    struct h1_pool *p = c->host->pool;

    if (--c->open)
        return;
    h1_resp_cleanup(&c->resp);
    tls_conn_cleanup(&c->tls);
    bsc_buf_cleanup(&c->wout);
    free(c);
    h1_pool_unref(p);
}

struct h1_conn *h1_conn_new(struct h1_host *h)
{
    struct h1_conn *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->host = h;
    h1_resp_setup(&c->resp, take_head, take_body);
    bsc_buf_init(&c->tls.out, 0);
    bsc_buf_init(&c->wout, 0);
    if (uv_tcp_init(h->pool->loop, &c->tcp) != 0) {
        h1_resp_cleanup(&c->resp);
        free(c);
        return NULL;
    }
    uv_timer_init(h->pool->loop, &c->timer);
    c->tcp.data = c->timer.data = c->creq.data = c;
    c->open = 2;
    h->pool->open++;
    h->n_conns++;
    h->pool->n_conns++;
    if (uv_tcp_connect(&c->creq, &c->tcp, (const struct sockaddr *)&h->addr, on_connected)) {
        h1_conn_close(c);
        return NULL;
    }
    return c;
}

/* Closes the handles; the connection is freed by the last close callback. */
void h1_conn_handles_close(struct h1_conn *c)
{
    uv_close((uv_handle_t *)&c->tcp, conn_handle_closed);
    uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
}

void h1_attach(struct h1_conn *c, struct up_transfer *t)
{
    c->t = t;
    t->h1.conn = c;
    h1_resp_start(&c->resp, &t->head, t, t->h1.head_request);
    c->resp.hold = t->paused;
    conn_arm(c);
    if (c->connected)
        send_request(c, t);
}

/* ---- the end -------------------------------------------------------------------------- */

static void detach(struct up_transfer *t, enum up_result res)
{
    struct h1_conn *c = t->h1.conn;

    h1_unqueue(t);
    if (!c)
        return;
    c->t = NULL;
    t->h1.conn = NULL;
    uv_timer_stop(&c->timer);
    if (res == UP_OK && !t->cancelled && !t->h1.fresh && !c->writing && !c->spent &&
        h1_resp_keep_alive(&c->resp))
        h1_conn_idle(c);
    else
        h1_conn_close(c);
}

void h1_finish(struct up_transfer *t, enum up_result res, const char *detail)
{
    struct up_multi *m = t->m;
    struct h1_pool *p = m->h1;

    detach(t, res);
    up__transfer_unlink(t);
    if (!t->cancelled) {
        t->in_callback = true;
        t->cb.on_done(t->ud, t, res, res == UP_OK ? "" : detail);
    }
    up__transfer_release(t);
    h1_kick(p);
}

/* ---- the client's table (up__h1_ops) --------------------------------------------------------------------- */

/* The request head and the host. For https://, a trust that cannot be loaded leaves
 * <t> without a host and the reason in t->errbuf: the transfer fails with UP_TLS. */
static enum bsc_err prepare(struct up_transfer *t, const struct up_request *req,
                            struct h1_url *u)
{
    struct tls_trust *trust = NULL;
    enum bsc_err err;

    if (req->n_headers > UP_REQUEST_MAX_HEADERS)
        return BSC_ELIMIT;
    if ((err = h1_url_split(req->url, u)) != BSC_OK)
        return err;
    bsc_buf_reuse(&t->h1.req, H1_REQ_HEAD_MAX); /* a kept transfer's storage (up_start) */
    err = h1_request_head(&t->h1.req, req->method, u, req->headers, req->n_headers,
                          req->body_len);
    if (err)
        return err;
    if (u->tls && !(trust = h1_trust_get(t->m->h1, req->ca_file, t->errbuf,
                                         sizeof(t->errbuf))))
        return BSC_OK;
    if (!(t->h1.host = h1_host_get(t->m->h1, u->host, u->port, trust)))
        return BSC_ENOMEM;
    t->h1.body = req->body ? req->body : "";
    t->h1.body_len = req->body ? req->body_len : 0;
    t->h1.connect_timeout_ms = req->connect_timeout_ms;
    t->h1.timeout_ms = req->timeout_ms;
    t->h1.fresh = req->fresh_connection;
    t->h1.head_request = strcmp(req->method, "HEAD") == 0;
    t->h1.started = uv_now(t->m->loop);
    return BSC_OK;
}

/* up__h1_ops.size: the shared part alone; the builtin part is in it (struct up_h1), and
 * the curl header nodes after it are not used. */
static size_t h1_size(const struct up_request *req)
{
    (void)req;
    return offsetof(struct up_transfer, header_nodes);
}

/* up__h1_ops.start: the request head built, the host found, then a connection, a place in
 * its host's queue, or a failure finished later (h1_dispatch never calls back). */
static enum bsc_err h1_start(struct up_transfer *t, const struct up_request *req)
{
    struct h1_url u;
    enum bsc_err err;

    if (!t->head.p) /* a kept transfer has its last head's storage (up_start) */
        (void)bsc_buf_reserve(&t->head, 256); /* a short head in one allocation */
    if ((err = prepare(t, req, &u)) != BSC_OK) {
        bsc_buf_cleanup(&t->h1.req);
        return err;
    }
    if (!t->h1.host) {
        h1_later(t, UP_TLS, t->errbuf);
        return BSC_OK;
    }
    h1_dispatch(t);
    return BSC_OK;
}

static void h1_cancel(struct up_transfer *t)
{
    t->cancelled = true;
    if (t->in_callback)
        return; /* the code that called back finishes it when the callback returns */
    h1_finish(t, UP_RESET, "cancelled");
}

static void h1_pause(struct up_transfer *t)
{
    if (t->paused || t->cancelled)
        return;
    t->paused = true;
    if (t->h1.conn) {
        t->h1.conn->resp.hold = true;
        read_stop(t->h1.conn);
    }
}

static void h1_resume(struct up_transfer *t)
{
    struct h1_conn *c = t->h1.conn;

    if (!t->paused || t->cancelled)
        return;
    t->paused = false;
    if (!c)
        return;
    if (h1_resp_drain(&c->resp) == H1_STOP || t->cancelled) {
        if (!t->in_callback)
            h1_later(t, UP_RESET, "cancelled");
        return;
    }
    if (c->resp.hold)
        return; /* held again */
    if (c->resp.done) {
        h1_later(t, UP_OK, "");
        return;
    }
    h1_read_start(c);
}

const struct up_client_ops up__h1_ops = {
    .name = "builtin",
    .size = h1_size,
    .start = h1_start,
    .cancel = h1_cancel,
    .pause = h1_pause,
    .resume = h1_resume,
};
