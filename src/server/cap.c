/* SPDX-License-Identifier: MIT */
/* cap.c -- the connection cap. The cap the process can honour comes from RLIMIT_NOFILE:
 * a client connection may need an upstream socket as well, and a gateway whose fds are all
 * held by idle keep-alive connections, or by clients that trickle their requests, can accept
 * no one. At the cap a server closes a lingering connection, else the one whose request has
 * been arriving the longest, else the one idle the longest, so that a new client is served
 * instead of refused. See docs/internals/server.md, "The connection cap". */
#include <sys/resource.h>

#include "core/clock.h"
#include "core/log.h"
#include "server/internal.h"

/* Fds kept for everything but client connections and their upstream sockets: listeners,
 * loop internals (epoll, eventfd, timerfd per worker), the store, log files, probes. A
 * fixed floor plus a share, so a large limit keeps a large margin. */
#define CAP_RESERVE_MIN    64
#define CAP_RESERVE_SHARE  64    /* 1/64 of the limit */
#define EVICT_LOG_EVERY_MS 10000 /* closing connections for room is logged this often (a class) */
#define SHED_SCAN          16    /* receiving connections compared, the oldest requests first */

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

/* ---- the connections that may be closed for room, by class, oldest first ---------------- */

static enum srv__shed shed_class(const struct srv_conn *c)
{
    if (!c->counted)
        return SRV__SHED_NONE;
    switch (c->state) {
    case SRV__CONN_ST_LINGER:
        return SRV__SHED_LINGER;
    case SRV__CONN_ST_HEAD:
    case SRV__CONN_ST_BODY:
        return SRV__SHED_RECEIVING;
    case SRV__CONN_ST_IDLE:
        return SRV__SHED_IDLE;
    default:
        return SRV__SHED_NONE;
    }
}

static void shed_unlink(struct srv *srv, struct srv_conn *c)
{
    enum srv__shed k = c->shed;

    if (k == SRV__SHED_NONE)
        return;
    if (c->shed_prev)
        c->shed_prev->shed_next = c->shed_next;
    else
        srv->shed[k].head = c->shed_next;
    if (c->shed_next)
        c->shed_next->shed_prev = c->shed_prev;
    else
        srv->shed[k].tail = c->shed_prev;
    c->shed_prev = NULL;
    c->shed_next = NULL;
    c->shed = SRV__SHED_NONE;
}

static void shed_append(struct srv *srv, struct srv_conn *c, enum srv__shed k)
{
    c->shed = k;
    c->shed_prev = srv->shed[k].tail;
    c->shed_next = NULL;
    if (srv->shed[k].tail)
        srv->shed[k].tail->shed_next = c;
    else
        srv->shed[k].head = c;
    srv->shed[k].tail = c;
}

void srv__shed_track(struct srv *srv, struct srv_conn *c)
{
    enum srv__shed k = shed_class(c);

    if (k == c->shed)
        return;
    shed_unlink(srv, c);
    if (k != SRV__SHED_NONE)
        shed_append(srv, c, k);
}

bool srv__at_cap(const struct srv *srv)
{
    return srv->lim.max_connections && srv->n_active >= srv->lim.max_connections;
}

static void log_shedding(struct srv *srv, enum srv__shed k)
{
    static const char *const what[SRV__SHED_NONE] = {
        [SRV__SHED_LINGER] = "closing connections that were answered and linger",
        [SRV__SHED_RECEIVING] = "closing connections still receiving a request head or body, "
                                "the oldest request first (503)",
        [SRV__SHED_IDLE] = "closing idle connections, the longest idle first",
    };
    uint64_t now = uv_now(srv->loop);

    if (srv->evict_log_ms[k] && now - srv->evict_log_ms[k] < EVICT_LOG_EVERY_MS)
        return;
    LOG_WARN("srv: at the connection cap (%u on this worker): %s, to serve new ones",
             srv->lim.max_connections, what[k]);
    srv->evict_log_ms[k] = now ? now : 1;
}

/* The bytes of its request <c> has received (head, and de-chunked body). */
static uint64_t request_bytes(const struct srv_conn *c)
{
    return (uint64_t)c->h1.head_bytes + c->h1.body.len;
}

/* Among the SHED_SCAN connections whose requests began first, the one that received its
 * request the slowest (bytes per time since it began). A large upload that is going well
 * is passed over for a slower one, so that opening connections at the cap is no way to cut
 * the oldest upload in progress; the scan is bounded, so the cost at the cap is too. */
static struct srv_conn *slowest_receiving(struct srv *srv)
{
    struct srv_conn *best = srv->shed[SRV__SHED_RECEIVING].head;
    uint64_t now = bsc_now_us();
    unsigned n = 0;

    /* Rates compared cross-multiplied, ages in ms: a request is at most a day old (the
     * timeouts' bound, 2^27 ms) and at most 2^31 bytes, so no product passes 2^58. Ties
     * keep the older. */
    for (struct srv_conn *c = best; c && n < SHED_SCAN; c = c->shed_next, n++) {
        uint64_t c_age = (now - c->req.start_us) / 1000 + 1;
        uint64_t best_age = (now - best->req.start_us) / 1000 + 1;

        if (request_bytes(c) * best_age < request_bytes(best) * c_age)
            best = c;
    }
    return best;
}

/* Which connection gives way, in order: one already answered and only lingering (its
 * client has its answer); one still receiving its request, the slowest of those whose
 * requests began first -- a head or body that takes long is the slow client the cap must
 * not be held by, where a client that sends its request at once never stays in that
 * state; then the one idle the longest. Closing an idle keep-alive connection can race a request
 * its client sends at that moment (HTTP clients retry idempotent ones); a slow request
 * is cut with a 503 that says why. nginx and HAProxy close idle connections under
 * pressure the same way. */
bool srv__make_room(struct srv *srv)
{
    for (enum srv__shed k = 0; k < SRV__SHED_NONE; k++) {
        struct srv_conn *c =
            k == SRV__SHED_RECEIVING ? slowest_receiving(srv) : srv->shed[k].head;

        if (!c)
            continue;
        log_shedding(srv, k);
        srv__conn_shed(c); /* leaves its list and the count at once */
        return true;
    }
    return false;
}
