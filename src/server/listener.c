/* SPDX-License-Identifier: MIT */
/* listener.c -- the server of one worker loop: its SO_REUSEPORT listening socket, accept
 * (accept4 from a uv_poll_t, so that a socket can be handed to another worker whole, see
 * balance.c) and the connection cap, the deferred-work pass (a uv_idle that runs only
 * while some connection has work), drain, close and free. Connections themselves are
 * conn.c's. See docs/internals/server.md. */
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
#define ACCEPT_BATCH     64

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

/* "host:port", or "[v6]:port" for an IPv6 literal given without its brackets. */
static const char *addr_text(const char *host, uint16_t port, char *buf, size_t len)
{
    bool bare_v6 = strchr(host, ':') && host[0] != '[';

    snprintf(buf, len, bare_v6 ? "[%s]:%u" : "%s:%u", host, port);
    return buf;
}

/* 0 when no socket listens on <ss>, else the errno of binding there. The probe binds
 * without SO_REUSEPORT, so any listener on the address -- another gateway's reuseport group
 * included -- refuses it with EADDRINUSE; it sets SO_REUSEADDR, so the TIME_WAIT
 * connections of a previous run on the port do not count as a listener. */
static int probe_bind(const struct sockaddr_storage *ss, socklen_t len)
{
    int one = 1, err = 0;
    int s = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (s < 0)
        return errno;
    if (setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(s, (const struct sockaddr *)ss, len) != 0)
        err = errno;
    close(s);
    return err;
}

static enum bsc_err listen_socket(const char *host, uint16_t port, bool first, int *fd,
                                  char *errbuf, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t len;
    const char *what;
    char addr[INET6_ADDRSTRLEN + 16];
    int one = 1, s, saved;

    if (!host || !parse_addr(host, port, &ss, &len)) {
        snprintf(errbuf, errlen, "listen: \"%s\" is not an IPv4 or IPv6 literal",
                 host ? host : "(null)");
        return BSC_EIO;
    }
    addr_text(host, port, addr, sizeof(addr));
    /* Port 0 needs no probe: the kernel never picks a port some reuseport group holds. */
    if (first && port != 0 && probe_bind(&ss, len) == EADDRINUSE) {
        snprintf(errbuf, errlen, "listen %s: address already in use by another process", addr);
        return BSC_EEXIST;
    }
    s = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0) {
        snprintf(errbuf, errlen, "listen %s: socket: %s", addr, strerror(errno));
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
    snprintf(errbuf, errlen, "listen %s: %s: %s", addr, what, strerror(saved));
    return BSC_EIO;
}

enum bsc_err srv_listen_first(const char *host, uint16_t port, int *fd, char *errbuf,
                              size_t errlen)
{
    return listen_socket(host, port, true, fd, errbuf, errlen);
}

enum bsc_err srv_listen_socket(const char *host, uint16_t port, int *fd, char *errbuf,
                               size_t errlen)
{
    return listen_socket(host, port, false, fd, errbuf, errlen);
}

/* ---- closing the server's own handles --------------------------------------------------- */

void srv__handle_closed(uv_handle_t *h)
{
    struct srv *srv = h->data;
    srv_closed_cb *cb;

    if (h == (uv_handle_t *)&srv->listener && srv->listen_fd >= 0) {
        close(srv->listen_fd); /* the poll handle is gone: nothing watches it now */
        srv->listen_fd = -1;
    }
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

/* The listening fd is closed here, not in the close callback: from the moment a drain
 * starts the kernel refuses new connects, instead of queueing them on a socket nobody will
 * accept from until the next loop pass. uv_close() has stopped the poll synchronously
 * (the fd left epoll), so closing it now is safe. */
static void close_listener(struct srv *srv)
{
    if (srv->listener_closed)
        return;
    srv->listener_closed = true;
    srv__group_leave(srv);
    uv_close((uv_handle_t *)&srv->listener, srv__handle_closed);
    if (srv->listen_fd >= 0) {
        close(srv->listen_fd);
        srv->listen_fd = -1;
    }
}

/* Once stopping and without connections, the remaining handles go; their last close
 * callback runs the closed callback, which is thus always deferred. */
static void maybe_closed(struct srv *srv)
{
    if (!srv->stopping || srv->n_conns || uv_is_closing((uv_handle_t *)&srv->idle))
        return;
    close_listener(srv);
    uv_close((uv_handle_t *)&srv->idle, srv__handle_closed);
    uv_close((uv_handle_t *)&srv->accept_timer, srv__handle_closed);
}

/* ---- accepting ------------------------------------------------------------------------- */

static void on_listener(uv_poll_t *h, int status, int events);
static void on_accept_retry(uv_timer_t *t);

/* Makes <fd>, an accepted socket, one of this server's connections (or its 503). */
void srv__accept_fd(struct srv *srv, int fd)
{
    struct srv_conn *c;
    bool reject;
    int err;

    if (srv->stopping) {
        close(fd);
        return;
    }
    /* At the cap an idle connection makes room (cap.c); only when none is idle is the new
     * one refused. Connections whose response has just ended become idle in the deferred
     * pass: run it first, or a client that opens its next connection right after an answer
     * read at accept (read_now) would find its earlier ones not yet idle. */
    if (srv__at_cap(srv) && srv->n_work)
        srv__run_work(srv);
    reject = srv__at_cap(srv) && !srv__make_room(srv);
    c = srv__conn_new(srv);
    if (!c) {
        LOG_WARN("srv: out of memory accepting a connection; closed it");
        close(fd);
        return;
    }
    err = uv_tcp_open(&c->tcp, fd);
    if (err) {
        LOG_WARN("srv: accepted socket: %s", uv_strerror(err));
        close(fd); /* not taken by the handle */
        srv__conn_close(c);
        return;
    }
    srv__conn_start(c, reject);
}

/* Out of fds or kernel memory: the connections wait in the listen queue meanwhile. */
static void pause_accepting(struct srv *srv, int err)
{
    if (!srv->accept_warned) /* once per shortage, not every retry */
        LOG_WARN("srv: accept: %s; retrying every %d ms, connections wait in the queue",
                 strerror(err), ACCEPT_RETRY_MS);
    srv->accept_warned = true;
    srv->accept_paused = true;
    uv_poll_stop(&srv->listener);
    uv_timer_start(&srv->accept_timer, on_accept_retry, ACCEPT_RETRY_MS, 0);
}

static void on_accept_retry(uv_timer_t *t)
{
    struct srv *srv = t->data;

    if (srv->listener_closed || !srv->accept_paused)
        return;
    srv->accept_paused = false;
    uv_poll_start(&srv->listener, UV_READABLE, on_listener);
}

/* Takes up to ACCEPT_BATCH waiting connections; the rest wait for the next loop pass, so a
 * flood of connects cannot starve the requests of connections already open. */
static void on_listener(uv_poll_t *h, int status, int events)
{
    struct srv *srv = h->data;

    (void)events;
    if (status < 0) {
        LOG_WARN("srv: listening socket: %s", uv_strerror(status));
        return;
    }
    for (int i = 0; i < ACCEPT_BATCH && !srv->listener_closed; i++) {
        int fd = accept4(srv->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                pause_accepting(srv, errno);
            else if (errno != EAGAIN && errno != EWOULDBLOCK)
                LOG_WARN("srv: accept: %s", strerror(errno));
            return;
        }
        if (srv->accept_warned) {
            LOG_INFO("srv: accepting again");
            srv->accept_warned = false;
        }
        if (srv->group && srv__group_handoff(srv, fd))
            continue; /* a less loaded worker serves it */
        srv__accept_fd(srv, fd);
    }
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
void srv__run_work(struct srv *srv)
{
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

static void on_idle(uv_idle_t *h)
{
    srv__run_work(h->data);
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
    srv__group_count(srv, -1);
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
    srv->listen_fd = listen_fd;
    uv_idle_init(loop, &srv->idle);
    uv_timer_init(loop, &srv->accept_timer);
    srv->listener.data = srv;
    srv->idle.data = srv;
    srv->accept_timer.data = srv;
    srv->open_handles = 2;
    err = uv_poll_init_socket(loop, &srv->listener, listen_fd);
    if (!err) {
        srv->open_handles++;
        err = uv_poll_start(&srv->listener, UV_READABLE, on_listener);
    } else {
        srv->listener_closed = true; /* no handle: the fd is closed here */
        close(listen_fd);
        srv->listen_fd = -1;
    }
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

void srv_stop(struct srv *srv, srv_closed_cb *cb, void *ud)
{
    shut_down(srv, cb, ud, srv__conn_stop);
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
