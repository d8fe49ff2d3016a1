/* SPDX-License-Identifier: MIT */
/* h1_pool.c -- the builtin client's connections, per host:port and per loop: numeric
 * addresses are used as they are, names resolve once through uv_getaddrinfo (IPv4 first)
 * and stay cached; a transfer takes an idle connection, else a new one within
 * max_host_connections / max_total_connections, else waits in its host's queue. Idle
 * connections keep reading (a byte or EOF closes them), are reused without a system call
 * once that reading has had a whole poll (take_idle), and are closed after H1_IDLE_MS or
 * past max_cached_connections. docs/internals/upstream.md ("Reuse without a system call"). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "upstream/internal.h"

/* ---- lists ---------------------------------------------------------------------------- */

static void wait_push(struct h1_host *h, struct up_transfer *t)
{
    t->h1.waiting = true;
    t->h1.wait_next = NULL;
    t->h1.wait_prev = h->wait_tail;
    if (h->wait_tail)
        h->wait_tail->h1.wait_next = t;
    else
        h->wait_head = t;
    h->wait_tail = t;
}

void h1_unqueue(struct up_transfer *t)
{
    struct h1_host *h = t->h1.host;
    struct h1_pool *p = t->m->h1;

    if (t->h1.waiting) {
        if (t->h1.wait_prev)
            t->h1.wait_prev->h1.wait_next = t->h1.wait_next;
        else
            h->wait_head = t->h1.wait_next;
        if (t->h1.wait_next)
            t->h1.wait_next->h1.wait_prev = t->h1.wait_prev;
        else
            h->wait_tail = t->h1.wait_prev;
        t->h1.waiting = false;
    }
    if (t->h1.later) {
        if (t->h1.later_prev)
            t->h1.later_prev->h1.later_next = t->h1.later_next;
        else
            p->later_head = t->h1.later_next;
        if (t->h1.later_next)
            t->h1.later_next->h1.later_prev = t->h1.later_prev;
        t->h1.later = false;
    }
}

/* Idle connections of every pool of the process, for /metrics (up_idle_connections). */
static atomic_size_t h1_idle_total;

size_t up_idle_connections(void)
{
    return atomic_load_explicit(&h1_idle_total, memory_order_relaxed);
}

static void idle_remove(struct h1_conn *c)
{
    struct h1_host *h = c->host;

    if (!c->idle)
        return;
    if (c->prev)
        c->prev->next = c->next;
    else
        h->idle = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
    c->idle = false;
    h->pool->n_idle--;
    atomic_fetch_sub_explicit(&h1_idle_total, 1, memory_order_relaxed);
}

/* ---- finishing later ------------------------------------------------------------------ */

static void on_later(uv_timer_t *timer)
{
    struct h1_pool *p = timer->data;

    /* Bounded: each pass takes one transfer off the list for good. */
    while (p->later_head) {
        struct up_transfer *t = p->later_head;

        h1_unqueue(t);
        h1_finish(t, t->h1.later_res, t->h1.later_detail);
    }
}

void h1_later(struct up_transfer *t, enum up_result res, const char *detail)
{
    struct h1_pool *p = t->m->h1;

    if (t->h1.later)
        return;
    h1_unqueue(t);
    t->h1.later = true;
    t->h1.later_res = res;
    t->h1.later_detail = detail;
    t->h1.later_prev = NULL;
    t->h1.later_next = p->later_head;
    if (p->later_head)
        p->later_head->h1.later_prev = t;
    p->later_head = t;
    uv_timer_start(&p->later, on_later, 0, 0);
}

/* ---- connections ---------------------------------------------------------------------- */

void h1_conn_close(struct h1_conn *c)
{
    struct h1_pool *p = c->host->pool;

    if (c->closing)
        return;
    idle_remove(c);
    c->closing = true;
    c->host->n_conns--;
    p->n_conns--;
    h1_conn_handles_close(c);
}

void h1_idle_read(struct h1_conn *c, ssize_t nread)
{
    if (nread != 0)
        h1_conn_close(c); /* the server closed it, or sent what nobody asked for */
}

static void on_sweep(uv_timer_t *timer)
{
    struct h1_pool *p = timer->data;
    uint64_t now = uv_now(p->loop);

    for (struct h1_host *h = p->hosts; h; h = h->next) {
        struct h1_conn *c = h->idle, *next;

        for (; c; c = next) {
            next = c->next;
            if (now - c->idle_since >= H1_IDLE_MS)
                h1_conn_close(c);
        }
    }
    if (!p->n_idle)
        uv_timer_stop(&p->sweep);
}

/* The least recently used idle connection of the pool, to make room. */
static struct h1_conn *oldest_idle(struct h1_pool *p)
{
    struct h1_conn *old = NULL;

    for (struct h1_host *h = p->hosts; h; h = h->next) {
        for (struct h1_conn *c = h->idle; c; c = c->next) {
            if (!old || c->idle_since < old->idle_since)
                old = c;
        }
    }
    return old;
}

void h1_conn_idle(struct h1_conn *c)
{
    struct h1_host *h = c->host;
    struct h1_pool *p = h->pool;

    if (p->closing) {
        h1_conn_close(c);
        return;
    }
    c->idle = true;
    c->reused = true; /* from now on, a transfer on it is on a reused connection */
    c->idle_since = uv_now(p->loop);
    c->idle_pass = p->passes;
    c->prev = NULL;
    c->next = h->idle;
    if (h->idle)
        h->idle->prev = c;
    h->idle = c;
    p->n_idle++;
    atomic_fetch_add_explicit(&h1_idle_total, 1, memory_order_relaxed);
    h1_read_start(c);
    if (p->lim.max_cached_connections && p->n_idle > p->lim.max_cached_connections)
        h1_conn_close(oldest_idle(p));
    if (!uv_is_active((uv_handle_t *)&p->sweep))
        uv_timer_start(&p->sweep, on_sweep, H1_SWEEP_MS, H1_SWEEP_MS);
}

/* ---- hosts and addresses ---------------------------------------------------------------- */

struct h1_host *h1_host_get(struct h1_pool *p, struct bsc_str name, uint16_t port,
                            struct tls_trust *trust)
{
    struct h1_host *h;
    struct sockaddr_in *v4;
    struct sockaddr_in6 *v6;

    for (h = p->hosts; h; h = h->next) {
        if (h->port == port && h->trust == trust && bsc_str_eq(bsc_str_cstr(h->name), name))
            return h;
    }
    if (!(h = calloc(1, sizeof(*h))) || !(h->name = bsc_str_dup(name))) {
        free(h);
        return NULL;
    }
    h->pool = p;
    h->port = port;
    h->trust = trust;
    h->gai.data = h;
    v4 = (struct sockaddr_in *)&h->addr;
    v6 = (struct sockaddr_in6 *)&h->addr;
    if (uv_ip4_addr(h->name, port, v4) == 0 || uv_ip6_addr(h->name, port, v6) == 0)
        h->resolved = true; /* a numeric address: nothing to look up */
    h->next = p->hosts;
    p->hosts = h;
    return h;
}

static void fail_waiting(struct h1_host *h, enum up_result res, const char *detail)
{
    while (h->wait_head)
        h1_later(h->wait_head, res, detail); /* takes it off the queue */
}

/* The first IPv4 address, else the first one (local servers often listen on 127.0.0.1
 * only, while "localhost" may list ::1 first). */
static const struct addrinfo *pick(const struct addrinfo *res)
{
    for (const struct addrinfo *a = res; a; a = a->ai_next) {
        if (a->ai_family == AF_INET)
            return a;
    }
    return res;
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    struct h1_host *h = req->data;
    struct h1_pool *p = h->pool;
    const struct addrinfo *a = status == 0 ? pick(res) : NULL;

    h->resolving = false;
    if (p->closing) {
        uv_freeaddrinfo(res);
        h1_pool_unref(p);
        return;
    }
    p->open--;
    if (a && a->ai_addrlen <= sizeof(h->addr)) {
        memcpy(&h->addr, a->ai_addr, a->ai_addrlen);
        ((struct sockaddr_in *)&h->addr)->sin_port = htons(h->port); /* same place in v6 */
        h->resolved = true;
    }
    uv_freeaddrinfo(res);
    if (!h->resolved)
        fail_waiting(h, UP_DNS, status ? uv_strerror(status) : "no address");
    h1_kick(p);
}

static void resolve(struct h1_host *h)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC};
    int rc;

    if (h->resolving)
        return;
    rc = uv_getaddrinfo(h->pool->loop, &h->gai, on_resolved, h->name, NULL, &hints);
    if (rc != 0) {
        fail_waiting(h, UP_DNS, uv_strerror(rc));
        return;
    }
    h->resolving = true;
    h->pool->open++;
}

/* ---- dispatch --------------------------------------------------------------------------- */

static bool room_for_new(const struct h1_pool *p, const struct h1_host *h)
{
    return (!p->lim.max_host_connections || h->n_conns < p->lim.max_host_connections) &&
           (!p->lim.max_total_connections || p->n_conns < p->lim.max_total_connections);
}

/* Whether idle <c>, not settled, holds a byte or an EOF that its read callback has not seen
 * yet (it went idle in this loop pass, or after the last poll began). Either way the byte
 * answers no request of ours (see h1_idle_read). One system call, which the steady state
 * does without (take_idle). */
static bool stale(struct h1_conn *c)
{
    uv_os_fd_t fd;
    char b;

    if (uv_fileno((const uv_handle_t *)&c->tcp, &fd) != 0)
        return true;
    return recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) >= 0;
}

/* An idle connection of <h> fit to carry a request, or NULL; stale ones are closed. The most
 * recent settled one (h1_idle_settled: its read watcher has had a whole poll to see a byte
 * or an EOF) is taken as it is, but for what TLS may hold. Else, when one went idle in the
 * last pass, NULL with <soon> set: this pass's check settles it (settle_later); in the
 * check itself, or with none from the last pass, the most recent one is checked with a
 * system call. The walk passes over the connections that went idle in the last two passes
 * alone; both loops are bounded by the idle list, which the second one only shrinks. */
static struct h1_conn *take_idle(struct h1_host *h, bool *soon)
{
    struct h1_pool *p = h->pool;
    uint64_t now = p->passes;
    bool last = false; /* one went idle in the last pass */

    for (struct h1_conn *c = h->idle; c; c = c->next) {
        if (!h1_idle_settled(c->idle_pass, now)) {
            last = last || now - c->idle_pass == 1;
            continue;
        }
        if (c->tls.ssl && h1_tls_held(c))
            break; /* part of a record waits inside OpenSSL: the full check below */
        idle_remove(c);
        return c;
    }
    if (last && !p->in_check) {
        *soon = true;
        return NULL;
    }
    while (h->idle) {
        struct h1_conn *c = h->idle;

        if (!(c->tls.ssl ? h1_tls_stale(c) : stale(c))) {
            idle_remove(c);
            return c;
        }
        h1_conn_close(c);
    }
    return NULL;
}

/* An active idle handle keeps the poll phase from blocking; it has nothing to do. */
static void no_op_idle(uv_idle_t *idle)
{
    (void)idle;
}

/* A transfer waits for this pass's check, which takes the connection it settles: the poll
 * must not block before (a transfer may wait from the timers phase). */
static void settle_later(struct h1_pool *p)
{
    if (p->settling)
        return;
    p->settling = true;
    uv_idle_start(&p->settle, no_op_idle);
}

/* A connection for <t> now, or NULL (it waits; with <soon> set, for this pass's check). A
 * transfer that must not reuse one may close an idle connection to make room for its own. */
static struct h1_conn *take_conn(struct up_transfer *t, bool *soon)
{
    struct h1_host *h = t->h1.host;
    struct h1_pool *p = h->pool;
    bool reuse = !t->h1.fresh && !t->h1.replayed;
    struct h1_conn *c;

    *soon = false;
    if (reuse && (c = take_idle(h, soon)))
        return c;
    if (*soon) {
        settle_later(p);
        return NULL;
    }
    if (!room_for_new(p, h) && p->n_idle)
        h1_conn_close(h->idle ? h->idle : oldest_idle(p));
    if (!room_for_new(p, h))
        return NULL;
    return h1_conn_new(h);
}

void h1_dispatch(struct up_transfer *t)
{
    struct h1_host *h = t->h1.host;
    struct h1_conn *c;
    bool soon;

    if (!h->resolved) {
        wait_push(h, t);
        resolve(h);
        return;
    }
    if (h->wait_head && !t->h1.waiting) {
        wait_push(h, t); /* first come, first served */
        return;
    }
    h1_unqueue(t);
    c = take_conn(t, &soon);
    if (c) {
        h1_attach(c, t);
        return;
    }
    if (!soon && room_for_new(h->pool, h))
        h1_later(t, UP_CONNECT, "cannot open a socket");
    else
        wait_push(h, t);
}

void h1_kick(struct h1_pool *p)
{
    if (p->closing)
        return;
    for (struct h1_host *h = p->hosts; h; h = h->next) {
        /* Bounded: each pass either starts the head transfer or stops. */
        while (h->resolved && h->wait_head) {
            struct up_transfer *t = h->wait_head;
            struct h1_conn *c;
            bool soon;

            if (!(c = take_conn(t, &soon)))
                break;
            h1_unqueue(t);
            h1_attach(c, t);
        }
    }
}

/* ---- the pool --------------------------------------------------------------------------- */

/* The check phase: the poll phase of this pass has dispatched its I/O callbacks, so the
 * connections that went idle in the last pass are settled; the transfers waiting for them
 * take them now. */
static void on_pass(uv_check_t *check)
{
    struct h1_pool *p = check->data;

    p->passes++;
    if (!p->settling)
        return;
    p->settling = false;
    uv_idle_stop(&p->settle);
    p->in_check = true; /* no waiting for a later check: checked with a system call */
    h1_kick(p);
    p->in_check = false;
}

enum bsc_err h1_pool_new(uv_loop_t *loop, const struct up_limits *lim, struct h1_pool **out)
{
    struct h1_pool *p = calloc(1, sizeof(*p));

    if (!p)
        return BSC_ENOMEM;
    p->loop = loop;
    if (lim)
        p->lim = *lim;
    uv_timer_init(loop, &p->sweep);
    uv_timer_init(loop, &p->later);
    uv_check_init(loop, &p->pass);
    uv_idle_init(loop, &p->settle);
    p->sweep.data = p->later.data = p->pass.data = p->settle.data = p;
    uv_check_start(&p->pass, on_pass);
    uv_unref((uv_handle_t *)&p->pass);
    p->open = 4; /* the handles; each connection and name lookup adds one while it lives */
    *out = p;
    return BSC_OK;
}

void h1_pool_unref(struct h1_pool *p)
{
    struct h1_host *h, *next;
    struct tls_trust *tr, *tr_next;

    if (--p->open || !p->closing)
        return;
    for (h = p->hosts; h; h = next) {
        next = h->next;
        SSL_SESSION_free(h->session);
        free(h->name);
        free(h);
    }
    for (tr = p->trusts; tr; tr = tr_next) {
        tr_next = tr->next;
        tls_trust_free(tr);
    }
    free(p);
}

static void pool_handle_closed(uv_handle_t *h)
{
    h1_pool_unref(h->data);
}

/* Every transfer is gone already (up_multi_free cancels them first). */
void h1_pool_free(struct h1_pool *p)
{
    if (!p)
        return;
    p->closing = true;
    for (struct h1_host *h = p->hosts; h; h = h->next) {
        while (h->idle)
            h1_conn_close(h->idle);
        if (h->resolving)
            uv_cancel((uv_req_t *)&h->gai);
    }
    uv_close((uv_handle_t *)&p->sweep, pool_handle_closed);
    uv_close((uv_handle_t *)&p->later, pool_handle_closed);
    uv_close((uv_handle_t *)&p->pass, pool_handle_closed);
    uv_close((uv_handle_t *)&p->settle, pool_handle_closed);
}
