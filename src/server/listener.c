/* SPDX-License-Identifier: MIT */
/* listener.c -- the server of one worker loop: its SO_REUSEPORT listening socket, accept
 * and the connection cap, the deferred-work pass (a uv_idle that runs only while some
 * connection has work), drain, close and free. Connections themselves are conn.c's.
 * See docs/internals/server.md. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uv.h>

#include "core/compat.h"
#include "core/log.h"
#include "server/internal.h"

#define LISTEN_BACKLOG   4096
#define ACCEPT_RETRY_MS  100

/* ---- the listening socket -------------------------------------------------------------- */

/* Fills <ss> from an IPv4 or IPv6 literal; "[::1]" is accepted too. */
static bool parse_addr(const char *host, uint16_t port, struct sockaddr_storage *ss,
                       socklen_t *len)
{
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    char tmp[INET6_ADDRSTRLEN + 2];
    size_t n = strlen(host);

    memset(ss, 0, sizeof(*ss));
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        *len = sizeof(*v4);
        return true;
    }
    if (n >= 2 && host[0] == '[' && host[n - 1] == ']' && n - 2 < sizeof(tmp)) {
        memcpy(tmp, host + 1, n - 2);
        tmp[n - 2] = '\0';
        host = tmp;
    }
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        *len = sizeof(*v6);
        return true;
    }
    return false;
}

enum bsc_err srv_listen_socket(const char *host, uint16_t port, int *fd, char *errbuf,
                               size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t len;
    const char *what;
    int one = 1, s, saved;

    if (!host || !parse_addr(host, port, &ss, &len)) {
        snprintf(errbuf, errlen, "listen: \"%s\" is not an IPv4 or IPv6 literal",
                 host ? host : "(null)");
        return BSC_EIO;
    }
    s = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0) {
        snprintf(errbuf, errlen, "listen %s:%u: socket: %s", host, port, strerror(errno));
        return BSC_EIO;
    }
    what = "SO_REUSEADDR";
    if (setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0)
        goto fail;
    what = "SO_REUSEPORT";
    if (setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0)
        goto fail;
    what = "bind";
    if (bind(s, (struct sockaddr *)&ss, len) != 0)
        goto fail;
    what = "listen";
    if (listen(s, LISTEN_BACKLOG) != 0)
        goto fail;
    *fd = s;
    return BSC_OK;
fail:
    saved = errno;
    close(s);
    snprintf(errbuf, errlen, "listen %s:%u: %s: %s", host, port, what, strerror(saved));
    return BSC_EIO;
}

/* ---- closing the server's own handles --------------------------------------------------- */

static void on_srv_handle_closed(uv_handle_t *h)
{
    struct srv *srv = h->data;
    srv_closed_cb *cb;

    if (--srv->open_handles)
        return;
    if (srv->free_on_close) { /* srv_new failed after its handles existed */
        free(srv->scratch);
        free(srv);
        return;
    }
    cb = srv->closed_cb;
    srv->closed_cb = NULL;
    if (cb)
        cb(srv, srv->closed_ud); /* may srv_free(): <srv> is not touched after */
}

static void close_listener(struct srv *srv)
{
    if (srv->listener_closed)
        return;
    srv->listener_closed = true;
    uv_close((uv_handle_t *)&srv->listener, on_srv_handle_closed);
}

/* Once stopping and without connections, the remaining handles go; their last close
 * callback runs the closed callback, which is thus always deferred. */
static void maybe_closed(struct srv *srv)
{
    if (!srv->stopping || srv->n_conns || uv_is_closing((uv_handle_t *)&srv->idle))
        return;
    close_listener(srv);
    uv_close((uv_handle_t *)&srv->idle, on_srv_handle_closed);
    uv_close((uv_handle_t *)&srv->accept_timer, on_srv_handle_closed);
}

/* ---- accepting ------------------------------------------------------------------------- */

static void on_accept_retry(uv_timer_t *t);

static void accept_one(struct srv *srv)
{
    bool reject = srv->lim.max_connections &&
                  srv->n_conns - srv->n_rejecting >= srv->lim.max_connections;
    struct srv_conn *c = srv__conn_new(srv);
    int err;

    if (!c) {
        /* libuv keeps the accepted socket and stops polling until uv_accept(): retry. */
        LOG_WARN("srv: out of memory accepting a connection; retrying");
        srv->accept_paused = true;
        uv_timer_start(&srv->accept_timer, on_accept_retry, ACCEPT_RETRY_MS, 0);
        return;
    }
    err = uv_accept((uv_stream_t *)&srv->listener, (uv_stream_t *)&c->tcp);
    if (err) {
        LOG_WARN("srv: accept: %s", uv_strerror(err));
        srv__conn_close(c);
        return;
    }
    srv__conn_start(c, reject);
}

static void on_accept_retry(uv_timer_t *t)
{
    struct srv *srv = t->data;

    if (srv->listener_closed || !srv->accept_paused)
        return;
    srv->accept_paused = false;
    accept_one(srv);
}

static void on_connection(uv_stream_t *server, int status)
{
    struct srv *srv = server->data;

    if (status < 0) {
        LOG_WARN("srv: accept: %s", uv_strerror(status));
        return;
    }
    accept_one(srv);
}

/* ---- deferred work --------------------------------------------------------------------- */

static void on_idle(uv_idle_t *h);

void srv__work_add(struct srv *srv, struct srv_conn *c)
{
    c->work_prev = srv->work_tail;
    c->work_next = NULL;
    if (srv->work_tail)
        srv->work_tail->work_next = c;
    else
        srv->work_head = c;
    srv->work_tail = c;
    srv->n_work++;
    uv_idle_start(&srv->idle, on_idle); /* no-op when already active */
}

void srv__work_remove(struct srv *srv, struct srv_conn *c)
{
    if (c->work_prev)
        c->work_prev->work_next = c->work_next;
    else
        srv->work_head = c->work_next;
    if (c->work_next)
        c->work_next->work_prev = c->work_prev;
    else
        srv->work_tail = c->work_prev;
    c->work_prev = NULL;
    c->work_next = NULL;
    c->work = 0;
    srv->n_work--;
}

/* One pass over the connections that had work when it started; work added meanwhile
 * waits for the next pass (the idle handle keeps the loop from blocking until then). */
static void on_idle(uv_idle_t *h)
{
    struct srv *srv = h->data;
    size_t n = srv->n_work;

    for (size_t i = 0; i < n && srv->work_head; i++) {
        struct srv_conn *c = srv->work_head;
        unsigned work = c->work;

        srv__work_remove(srv, c);
        srv__conn_run_work(c, work);
    }
    if (!srv->work_head)
        uv_idle_stop(&srv->idle);
}

void srv__conn_gone(struct srv *srv, struct srv_conn *c)
{
    if (c->work)
        srv__work_remove(srv, c);
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    srv->n_conns--;
    if (c->rejecting)
        srv->n_rejecting--;
    maybe_closed(srv);
}

/* ---- the public API ---------------------------------------------------------------------- */

enum bsc_err srv_new(uv_loop_t *loop, int listen_fd, const struct srv_limits *limits,
                     srv_handler_fn *handler, void *ud, struct srv **out)
{
    struct srv *srv = calloc(1, sizeof(*srv));
    int err;

    if (srv)
        srv->scratch = malloc(SRV__READ_CHUNK);
    if (!srv || !srv->scratch) {
        if (srv)
            free(srv);
        close(listen_fd);
        return BSC_ENOMEM;
    }
    srv->loop = loop;
    srv->lim = *limits;
    srv->handler = handler;
    srv->ud = ud;
    uv_tcp_init(loop, &srv->listener); /* no socket yet: cannot fail */
    uv_idle_init(loop, &srv->idle);
    uv_timer_init(loop, &srv->accept_timer);
    srv->listener.data = srv;
    srv->idle.data = srv;
    srv->accept_timer.data = srv;
    srv->open_handles = 3;
    err = uv_tcp_open(&srv->listener, listen_fd);
    if (err)
        close(listen_fd); /* not taken by the handle */
    else
        err = uv_listen((uv_stream_t *)&srv->listener, LISTEN_BACKLOG, on_connection);
    if (err) {
        LOG_ERR("srv: listen: %s", uv_strerror(err));
        srv->stopping = true;
        srv->free_on_close = true; /* the last close callback frees */
        maybe_closed(srv);
        return BSC_EIO;
    }
    *out = srv;
    return BSC_OK;
}

void srv_set_limits(struct srv *srv, const struct srv_limits *limits)
{
    srv->lim = *limits;
}

/* Stops accepting and applies <each> to every connection; <cb> runs once all are gone. */
static void shut_down(struct srv *srv, srv_closed_cb *cb, void *ud,
                      void (*each)(struct srv_conn *c))
{
    srv->closed_cb = cb;
    srv->closed_ud = ud;
    srv->stopping = true;
    srv->draining = true;
    close_listener(srv);
    for (struct srv_conn *c = srv->conns; c; c = c->next)
        each(c); /* closing frees nothing yet: the list stays walkable */
    maybe_closed(srv);
}

void srv_drain(struct srv *srv, srv_closed_cb *cb, void *ud)
{
    shut_down(srv, cb, ud, srv__conn_drain);
}

void srv_close_all(struct srv *srv, srv_closed_cb *cb, void *ud)
{
    shut_down(srv, cb, ud, srv__conn_close);
}

void srv_free(struct srv *srv)
{
    if (!srv)
        return;
    BSC_BUG_ON(srv->open_handles || srv->n_conns);
    free(srv->scratch);
    free(srv);
}

size_t srv_conn_count(const struct srv *srv)
{
    return srv->n_conns;
}
