/* SPDX-License-Identifier: MIT */
/* balance.c -- connections spread evenly over the workers of one gateway. SO_REUSEPORT
 * picks a worker by a hash of the connection's addresses: with few long-lived keep-alive
 * connections (an application's pool) one worker often holds twice the share of another,
 * and its requests queue behind each other while the other worker idles. A worker that
 * accepts a connection while it holds more than the least-loaded member of its group
 * hands the socket to that member (a mutex-guarded inbox and a uv_async wake-up), which
 * serves it from then on. See docs/internals/server.md, "Balancing". */
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include <uv.h>

#include "core/log.h"
#include "server/internal.h"

struct srv__member {
    _Atomic size_t load; /* connections it owns, plus those sent and not yet taken */
    _Atomic bool open;   /* joined and still accepting: a target for hand-offs */
    uv_mutex_t lock;     /* guards <srv> and the inbox */
    struct srv *srv;     /* NULL once it has left */
    int *inbox;          /* sockets handed over, not yet taken */
    size_t n_inbox, cap_inbox;
};

struct srv_group {
    unsigned n;
    struct srv__member m[];
};

struct srv_group *srv_group_new(unsigned n)
{
    struct srv_group *g;

    if (!n)
        return NULL;
    g = calloc(1, sizeof(*g) + n * sizeof(g->m[0]));
    if (!g)
        return NULL;
    g->n = n;
    for (unsigned i = 0; i < n; i++) {
        if (uv_mutex_init(&g->m[i].lock) != 0) {
            while (i--)
                uv_mutex_destroy(&g->m[i].lock);
            free(g);
            return NULL;
        }
    }
    return g;
}

void srv_group_free(struct srv_group *g)
{
    if (!g)
        return;
    for (unsigned i = 0; i < g->n; i++) {
        BSC_BUG_ON(g->m[i].srv != NULL); /* every member left first */
        for (size_t k = 0; k < g->m[i].n_inbox; k++)
            close(g->m[i].inbox[k]);
        free(g->m[i].inbox);
        uv_mutex_destroy(&g->m[i].lock);
    }
    free(g);
}

/* Empties <m>'s inbox: the sockets (owned by the caller, free() the array) and *<n>. */
static int *inbox_take(struct srv__member *m, size_t *n)
{
    int *fds;

    uv_mutex_lock(&m->lock);
    fds = m->inbox;
    *n = m->n_inbox;
    m->inbox = NULL;
    m->n_inbox = m->cap_inbox = 0;
    uv_mutex_unlock(&m->lock);
    return fds;
}

/* Takes what was handed to <srv>: each socket becomes one of its connections. */
static void on_handoff(uv_async_t *h)
{
    struct srv *srv = h->data;
    struct srv__member *me = srv->member;
    size_t n;
    int *fds;

    if (!me)
        return; /* it left: the inbox was emptied then */
    fds = inbox_take(me, &n);
    for (size_t i = 0; i < n; i++) {
        atomic_fetch_sub(&me->load, 1); /* the reservation; the connection counts itself */
        srv__accept_fd(srv, fds[i]);
    }
    free(fds);
}

enum bsc_err srv_group_join(struct srv_group *g, unsigned idx, struct srv *srv)
{
    struct srv__member *me;

    if (!g || idx >= g->n || srv->member || srv->stopping)
        return BSC_EINVAL;
    me = &g->m[idx];
    if (uv_async_init(srv->loop, &srv->handoff, on_handoff) != 0)
        return BSC_EIO;
    srv->handoff.data = srv;
    srv->open_handles++;
    srv->group = g;
    srv->member = me;
    atomic_store(&me->load, srv->n_conns);
    uv_mutex_lock(&me->lock);
    me->srv = srv;
    uv_mutex_unlock(&me->lock);
    atomic_store(&me->open, true);
    return BSC_OK;
}

void srv__group_leave(struct srv *srv)
{
    struct srv__member *me = srv->member;
    size_t n;
    int *fds;

    if (!me)
        return;
    atomic_store(&me->open, false);
    uv_mutex_lock(&me->lock);
    me->srv = NULL; /* from now on nothing is sent here, nor is <handoff> touched */
    uv_mutex_unlock(&me->lock);
    fds = inbox_take(me, &n);
    for (size_t i = 0; i < n; i++)
        close(fds[i]); /* handed over while this server was stopping: refused */
    free(fds);
    srv->member = NULL;
    uv_close((uv_handle_t *)&srv->handoff, srv__handle_closed);
}

void srv__group_count(struct srv *srv, int delta)
{
    if (!srv->member)
        return;
    if (delta > 0)
        atomic_fetch_add(&srv->member->load, (size_t)delta);
    else
        atomic_fetch_sub(&srv->member->load, (size_t)-delta);
}

/* Appends <fd> to <m>'s inbox; the caller holds its lock. */
static bool inbox_push(struct srv__member *m, int fd)
{
    if (m->n_inbox == m->cap_inbox) {
        size_t cap = m->cap_inbox ? m->cap_inbox * 2 : 16;
        int *p = realloc(m->inbox, cap * sizeof(*p));

        if (!p)
            return false;
        m->inbox = p;
        m->cap_inbox = cap;
    }
    m->inbox[m->n_inbox++] = fd;
    return true;
}

bool srv__group_handoff(struct srv *srv, int fd)
{
    struct srv_group *g = srv->group;
    struct srv__member *me = srv->member, *best = NULL;
    size_t mine, least;
    bool sent = false;

    if (!me)
        return false;
    mine = atomic_load(&me->load);
    least = mine;
    for (unsigned i = 0; i < g->n; i++) {
        struct srv__member *m = &g->m[i];
        size_t l;

        if (m == me || !atomic_load(&m->open))
            continue;
        l = atomic_load(&m->load);
        if (l < least) {
            least = l;
            best = m;
        }
    }
    if (!best)
        return false; /* this worker is (one of) the least loaded: keep it */
    uv_mutex_lock(&best->lock);
    if (best->srv && inbox_push(best, fd)) {
        atomic_fetch_add(&best->load, 1);
        uv_async_send(&best->srv->handoff); /* under the lock: it cannot be closing */
        sent = true;
    }
    uv_mutex_unlock(&best->lock);
    return sent;
}
