/* SPDX-License-Identifier: MIT */
/* cap.c -- the connection cap. The cap the process can honour comes from RLIMIT_NOFILE:
 * a client connection may need an upstream socket as well, and a gateway whose fds are all
 * held by idle keep-alive connections can accept no one. At the cap, the idle connections
 * (no request in progress) of a server are closed, the longest idle first, so that a new
 * client is served instead of refused. See docs/internals/server.md, "The connection cap". */
#include <sys/resource.h>

#include "core/log.h"
#include "server/internal.h"

/* Fds kept for everything but client connections and their upstream sockets: listeners,
 * loop internals (epoll, eventfd, timerfd per worker), the store, log files, probes. A
 * fixed floor plus a share, so a large limit keeps a large margin. */
#define CAP_RESERVE_MIN    64
#define CAP_RESERVE_SHARE  64    /* 1/64 of the limit */
#define EVICT_LOG_EVERY_MS 10000 /* closing idle connections for room is logged this often */

uint32_t srv_conn_cap_for(uint32_t configured, uint64_t nofile)
{
    uint64_t reserve, room;

    if (nofile == 0)
        return configured;
    reserve = CAP_RESERVE_MIN + nofile / CAP_RESERVE_SHARE;
    room = nofile > reserve ? (nofile - reserve) / 2 : 0;
    if (room < 1)
        room = 1;
    if (configured && configured <= room)
        return configured;
    return room > UINT32_MAX ? UINT32_MAX : (uint32_t)room;
}

uint64_t srv_nofile_wanted(uint32_t configured)
{
    /* Inverts srv_conn_cap_for: n - (CAP_RESERVE_MIN + n / CAP_RESERVE_SHARE) >= 2 * cap. */
    uint64_t core = 2 * (uint64_t)configured + CAP_RESERVE_MIN;

    return core + core / (CAP_RESERVE_SHARE - 1) + 1;
}

uint64_t srv_raise_nofile(uint32_t configured)
{
    struct rlimit rl;
    uint64_t want = srv_nofile_wanted(configured);

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 0;
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
        return rl.rlim_cur == RLIM_INFINITY ? 0 : rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0 && getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 0;
    return rl.rlim_cur;
}

uint32_t srv_conn_cap(uint32_t configured, uint64_t *nofile)
{
    struct rlimit rl;
    uint64_t n = 0;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        n = rl.rlim_cur;
    if (nofile)
        *nofile = n;
    return srv_conn_cap_for(configured, n);
}

/* ---- idle connections, oldest first ------------------------------------------------------ */

void srv__lru_add(struct srv *srv, struct srv_conn *c)
{
    if (c->in_lru)
        return;
    c->in_lru = true;
    c->lru_prev = srv->lru_tail;
    c->lru_next = NULL;
    if (srv->lru_tail)
        srv->lru_tail->lru_next = c;
    else
        srv->lru_head = c;
    srv->lru_tail = c;
}

void srv__lru_remove(struct srv *srv, struct srv_conn *c)
{
    if (!c->in_lru)
        return;
    if (c->lru_prev)
        c->lru_prev->lru_next = c->lru_next;
    else
        srv->lru_head = c->lru_next;
    if (c->lru_next)
        c->lru_next->lru_prev = c->lru_prev;
    else
        srv->lru_tail = c->lru_prev;
    c->lru_prev = NULL;
    c->lru_next = NULL;
    c->in_lru = false;
}

bool srv__at_cap(const struct srv *srv)
{
    return srv->lim.max_connections && srv->n_active >= srv->lim.max_connections;
}

/* Closes the connection idle the longest. Its client sees the close a keep-alive timeout
 * would have given it later; one that sent a request at this very moment sees the usual
 * keep-alive race, which HTTP clients retry for idempotent requests. */
bool srv__make_room(struct srv *srv)
{
    struct srv_conn *c = srv->lru_head;
    uint64_t now = uv_now(srv->loop);

    if (!c)
        return false;
    if (!srv->evict_log_ms || now - srv->evict_log_ms >= EVICT_LOG_EVERY_MS) {
        LOG_WARN("srv: at the connection cap (%u on this worker): closing idle connections, "
                 "the longest idle first, to serve new ones",
                 srv->lim.max_connections);
        srv->evict_log_ms = now ? now : 1;
    }
    srv__conn_close(c); /* leaves the list and the count at once; its fd is closed now */
    return true;
}
