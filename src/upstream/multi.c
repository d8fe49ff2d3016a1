/* SPDX-License-Identifier: MIT */
/* multi.c -- glue between one libcurl multi handle and one libuv loop: curl tells us
 * which sockets to watch (socket callback) and when to wake it (timer callback); libuv
 * tells curl when a socket is ready. Completed transfers are reaped after each action.
 * It never calls curl_multi_socket_action() from inside a curl callback. */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "upstream/internal.h"

/* One watched socket. A connection that goes back to curl's pool stays watched (parked)
 * for readability: the next transfer on it then needs no epoll_ctl at all. A parked clear
 * HTTP/1 connection that turns readable either was closed by the server or got bytes nobody
 * asked for (the upstream is out of step): either way it is quarantined, so libcurl never
 * reads those bytes as the next request's answer (libcurl 7.88's liveness check only asks
 * whether the peer closed). Other parked sockets (TLS, HTTP/2: their records may come at
 * any time) are simply stopped, and curl checks them before reuse. The handle is
 * closed when curl closes the socket (on_close_socket), before the fd is released, so
 * a reused fd number never meets a stale handle. Freed in the uv close callback. */
struct up_sock {
    uv_poll_t poll;
    struct up_multi *m;
    curl_socket_t fd;
    int events;  /* what the poll handle watches now */
    bool parked; /* curl does not watch it: an idle pooled connection */
    bool pooled; /* ... a clear HTTP/1 one between answers: a byte on it is out of step */
};

static void check_done(struct up_multi *m)
{
    CURLMsg *msg;
    int left;

    while ((msg = curl_multi_info_read(m->curlm, &left))) {
        struct up_transfer *t = NULL;

        if (msg->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&t);
        if (t)
            up__transfer_done(t, msg->data.result);
    }
    if (m->gates_ready)
        up__gate_release(m);
}

static void watch(struct up_sock *s, int events);

static void on_poll(uv_poll_t *h, int status, int events)
{
    struct up_sock *s = h->data;
    struct up_multi *m = s->m;
    int flags = 0, running;

    if (s->parked) {
        if (s->pooled)
            up__sock_quarantine(s->fd);
        watch(s, 0); /* an idle pooled connection woke: curl checks it before reuse */
        return;
    }
    if (status < 0)
        flags = CURL_CSELECT_ERR;
    if (events & UV_READABLE)
        flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE)
        flags |= CURL_CSELECT_OUT;
    curl_multi_socket_action(m->curlm, s->fd, flags, &running);
    check_done(m);
}

/* Each change of the watched events is an epoll_ctl: only real changes are made. */
static void watch(struct up_sock *s, int events)
{
    if (events == s->events)
        return;
    if (events)
        uv_poll_start(&s->poll, events, on_poll);
    else
        uv_poll_stop(&s->poll);
    s->events = events;
}

/* Lets curl act on its expired timeouts, then reaps what ended. */
static void run_timeouts(struct up_multi *m)
{
    int running;

    curl_multi_socket_action(m->curlm, CURL_SOCKET_TIMEOUT, 0, &running);
    check_done(m);
}

static void on_timer(uv_timer_t *h)
{
    run_timeouts(h->data);
}

static void sock_closed(uv_handle_t *h)
{
    free(h->data);
}

static struct up_sock *sock_lookup(struct up_multi *m, curl_socket_t fd)
{
    return fd >= 0 && (size_t)fd < m->n_socks ? m->socks[fd] : NULL;
}

/* Makes the table hold index <fd>. */
static bool sock_table_fit(struct up_multi *m, curl_socket_t fd)
{
    size_t n = m->n_socks ? m->n_socks : 64;
    struct up_sock **t;

    if ((size_t)fd < m->n_socks)
        return true;
    while (n <= (size_t)fd)
        n *= 2;
    t = realloc(m->socks, n * sizeof(*t));
    if (!t)
        return false;
    memset(t + m->n_socks, 0, (n - m->n_socks) * sizeof(*t));
    m->socks = t;
    m->n_socks = n;
    return true;
}

static struct up_sock *sock_new(struct up_multi *m, curl_socket_t fd)
{
    struct up_sock *s;

    if (fd < 0 || !sock_table_fit(m, fd) || !(s = calloc(1, sizeof(*s))))
        return NULL;
    s->m = m;
    s->fd = fd;
    if (uv_poll_init_socket(m->loop, &s->poll, fd) != 0) {
        free(s);
        return NULL;
    }
    s->poll.data = s;
    m->socks[fd] = s;
    return s;
}

void up__sock_quarantine(curl_socket_t fd)
{
    char sink[4096];

    shutdown(fd, SHUT_RDWR);
    /* Bounded: what the receive queue holds, a few reads at most; after the shutdown a
     * peer's further data resets the connection instead of queueing (RFC 1122 4.2.2.13). */
    for (int i = 0; i < 64 && recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; i++)
        ;
}

/* Whether the socket <easy> stops watching goes back to the pool as a clear HTTP/1
 * connection between answers, rather than being held by a paused transfer. */
static bool goes_to_pool(CURL *easy)
{
    struct up_transfer *t = NULL;

    curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&t);
    return t && t->plain && !t->paused;
}

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
    struct up_multi *m = userp;
    struct up_sock *s = socketp ? socketp : sock_lookup(m, fd);
    int events = 0;

    if (what == CURL_POLL_REMOVE) {
        if (s) {
            s->parked = true;
            s->pooled = goes_to_pool(easy);
            watch(s, UV_READABLE);
            curl_multi_assign(m->curlm, fd, NULL);
        }
        return 0;
    }
    if (!s && !(s = sock_new(m, fd)))
        return -1;
    /* Taken from the pool: not peeked here. curl calls this after it wrote the request,
     * so a byte waiting now may be the new answer already (seen: 1 in 75,788 requests to
     * a well-behaved nginx), and quarantining it would make curl send the request twice. */
    s->parked = s->pooled = false;
    curl_multi_assign(m->curlm, fd, s);
    if (what & CURL_POLL_IN)
        events |= UV_READABLE;
    if (what & CURL_POLL_OUT)
        events |= UV_WRITABLE;
    watch(s, events);
    return 0;
}

/* curl closes a socket: the poll handle goes first (uv_close stops watching the fd at
 * once), then the fd itself. */
static int on_close_socket(void *clientp, curl_socket_t fd)
{
    struct up_multi *m = clientp;
    struct up_sock *s = sock_lookup(m, fd);

    if (s) {
        m->socks[fd] = NULL;
        uv_close((uv_handle_t *)&s->poll, sock_closed);
    }
    return close(fd);
}

void up__watch_close(CURL *easy, struct up_multi *m)
{
    curl_easy_setopt(easy, CURLOPT_CLOSESOCKETFUNCTION, on_close_socket);
    curl_easy_setopt(easy, CURLOPT_CLOSESOCKETDATA, m);
}

static void on_kick(uv_check_t *h)
{
    struct up_multi *m = h->data;

    uv_check_stop(&m->kick);
    run_timeouts(m);
}

/* A zero timeout (a transfer was just added, say) is served by the check handle, later in
 * this same loop pass, rather than by a zero timer, which costs a loop pass of its own
 * (another epoll_wait) per request. The zero timer stays armed behind it in case the
 * check phase has already run; curl re-arms or stops it when the kick has acted. */
static int on_curl_timer(CURLM *multi, long timeout_ms, void *userp)
{
    struct up_multi *m = userp;

    (void)multi;
    if (timeout_ms < 0) {
        uv_timer_stop(&m->timer);
        uv_check_stop(&m->kick);
        return 0;
    }
    uv_timer_start(&m->timer, on_timer, (uint64_t)timeout_ms, 0);
    if (timeout_ms == 0)
        uv_check_start(&m->kick, on_kick);
    return 0;
}

/* Whether curl would find a proxy in the environment (the variables it reads). Read once:
 * the environment of a running gateway does not change. */
static bool env_has_proxy(void)
{
    static const char *const vars[] = {"http_proxy", "HTTP_PROXY", "https_proxy",
                                       "HTTPS_PROXY", "all_proxy", "ALL_PROXY"};

    for (size_t i = 0; i < BSC_ARRAY_LEN(vars); i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return true;
    }
    return false;
}

enum bsc_err up_multi_new(uv_loop_t *loop, const struct up_limits *limits,
                          struct up_multi **out)
{
    struct up_multi *m = calloc(1, sizeof(*m));

    if (!m)
        return BSC_ENOMEM;
    m->loop = loop;
    m->env_proxy = env_has_proxy();
    m->builtin_https = limits && limits->builtin_https;
    m->curlm = curl_multi_init();
    if (m->curlm && limits && limits->builtin_http && h1_pool_new(loop, limits, &m->h1)) {
        curl_multi_cleanup(m->curlm);
        m->curlm = NULL;
    }
    if (!m->curlm) {
        free(m);
        return BSC_ENOMEM;
    }
    uv_timer_init(loop, &m->timer);
    m->timer.data = m;
    uv_check_init(loop, &m->kick);
    m->kick.data = m;
    curl_multi_setopt(m->curlm, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(m->curlm, CURLMOPT_SOCKETDATA, m);
    curl_multi_setopt(m->curlm, CURLMOPT_TIMERFUNCTION, on_curl_timer);
    curl_multi_setopt(m->curlm, CURLMOPT_TIMERDATA, m);
    curl_multi_setopt(m->curlm, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    if (limits) {
        curl_multi_setopt(m->curlm, CURLMOPT_MAX_HOST_CONNECTIONS,
                          (long)limits->max_host_connections);
        curl_multi_setopt(m->curlm, CURLMOPT_MAX_TOTAL_CONNECTIONS,
                          (long)limits->max_total_connections);
        if (limits->max_cached_connections)
            curl_multi_setopt(m->curlm, CURLMOPT_MAXCONNECTS,
                              (long)limits->max_cached_connections);
    }
    *out = m;
    return BSC_OK;
}

/* The timer and the kick handle close through the loop; the last one frees the multi. */
static void multi_handle_closed(uv_handle_t *h)
{
    struct up_multi *m = h->data;

    if (--m->open_handles == 0)
        free(m);
}

void up_multi_free(struct up_multi *m)
{
    if (!m)
        return;
    m->closing = true;
    while (m->transfers)
        up_cancel(m->transfers);
    up__spares_free(m);
    h1_pool_free(m->h1); /* its connections close through the loop, then it is freed */
    for (size_t i = 0; i < m->n_easy_cache; i++)
        curl_easy_cleanup(m->easy_cache[i]);
    m->n_easy_cache = 0;
    /* Cleaning up the multi closes cached connections, which calls on_socket(REMOVE)
     * for each watched socket; their handles close through the loop. */
    curl_multi_cleanup(m->curlm);
    /* Sockets curl did not close (none should be left) are closed with the multi. */
    for (size_t i = 0; i < m->n_socks; i++) {
        if (m->socks[i]) {
            uv_close((uv_handle_t *)&m->socks[i]->poll, sock_closed);
            m->socks[i] = NULL;
        }
    }
    BSC_FREE(m->socks);
    up__gates_free(m);
    for (size_t i = 0; i < m->n_urls; i++) {
        curl_url_cleanup(m->urls[i].handle);
        free(m->urls[i].text);
    }
    m->n_urls = 0;
    uv_timer_stop(&m->timer);
    uv_check_stop(&m->kick);
    m->open_handles = 2;
    uv_close((uv_handle_t *)&m->kick, multi_handle_closed);
    uv_close((uv_handle_t *)&m->timer, multi_handle_closed);
}

size_t up_multi_active(const struct up_multi *m)
{
    return m->n_active;
}

void up__transfer_link(struct up_transfer *t)
{
    struct up_multi *m = t->m;

    t->prev = NULL;
    t->next = m->transfers;
    if (m->transfers)
        m->transfers->prev = t;
    m->transfers = t;
    m->n_active++;
}

void up__transfer_unlink(struct up_transfer *t)
{
    struct up_multi *m = t->m;

    if (t->prev)
        t->prev->next = t->next;
    else if (m->transfers == t)
        m->transfers = t->next;
    if (t->next)
        t->next->prev = t->prev;
    t->prev = t->next = NULL;
    m->n_active--;
}

/* A slot for a new entry: a fresh one, else the next unused one round the table. */
static struct up_url *url_slot(struct up_multi *m)
{
    if (m->n_urls < UP_URL_CACHE)
        return &m->urls[m->n_urls++];
    for (size_t k = 0; k < UP_URL_CACHE; k++) {
        struct up_url *u = &m->urls[m->next_url++ % UP_URL_CACHE];
        if (!u->refs) {
            curl_url_cleanup(u->handle);
            free(u->text);
            u->handle = NULL;
            u->text = NULL;
            return u;
        }
    }
    return NULL;
}

struct up_url *up__url(struct up_multi *m, const char *url)
{
    struct up_url *u;
    CURLU *h;
    char *text;

    for (size_t i = 0; i < m->n_urls; i++) {
        if (strcmp(m->urls[i].text, url) == 0) {
            m->urls[i].refs++;
            return &m->urls[i];
        }
    }
    if (!(h = curl_url()))
        return NULL;
    if (curl_url_set(h, CURLUPART_URL, url, 0) != CURLUE_OK || !(text = strdup(url))) {
        curl_url_cleanup(h);
        return NULL;
    }
    if (!(u = url_slot(m))) {
        curl_url_cleanup(h);
        free(text);
        return NULL;
    }
    u->text = text;
    u->handle = h;
    u->refs = 1;
    return u;
}

void up__url_release(struct up_url *u)
{
    if (u)
        u->refs--;
}

CURL *up__acquire_easy(struct up_multi *m)
{
    CURL *e;

    if (m->n_easy_cache)
        return m->easy_cache[--m->n_easy_cache];
    if ((e = curl_easy_init()))
        up__easy_defaults(e, m);
    return e;
}

void up__release_easy(struct up_multi *m, CURL *easy, bool clean)
{
    if (clean && !m->closing && m->n_easy_cache < UP_EASY_CACHE) {
        m->easy_cache[m->n_easy_cache++] = easy;
        return;
    }
    curl_easy_cleanup(easy);
}
