/* SPDX-License-Identifier: MIT */
/* multi.c -- glue between one libcurl multi handle and one libuv loop: curl tells us
 * which sockets to watch (socket callback) and when to wake it (timer callback); libuv
 * tells curl when a socket is ready. Completed transfers are reaped after each action.
 * It never calls curl_multi_socket_action() from inside a curl callback. */
#include <stdlib.h>
#include <string.h>

#include "upstream/internal.h"

/* One watched socket. Freed in the uv close callback, never before. */
struct up_sock {
    uv_poll_t poll;
    struct up_multi *m;
    curl_socket_t fd;
    int events; /* what the poll handle watches now */
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
}

static void on_poll(uv_poll_t *h, int status, int events)
{
    struct up_sock *s = h->data;
    struct up_multi *m = s->m;
    int flags = 0, running;

    if (status < 0)
        flags = CURL_CSELECT_ERR;
    if (events & UV_READABLE)
        flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE)
        flags |= CURL_CSELECT_OUT;
    curl_multi_socket_action(m->curlm, s->fd, flags, &running);
    check_done(m);
}

static void on_timer(uv_timer_t *h)
{
    struct up_multi *m = h->data;
    int running;

    curl_multi_socket_action(m->curlm, CURL_SOCKET_TIMEOUT, 0, &running);
    check_done(m);
}

static void sock_closed(uv_handle_t *h)
{
    free(h->data);
}

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
    struct up_multi *m = userp;
    struct up_sock *s = socketp;
    int events = 0;

    (void)easy;
    if (what == CURL_POLL_REMOVE) {
        if (s) {
            uv_poll_stop(&s->poll);
            curl_multi_assign(m->curlm, fd, NULL);
            uv_close((uv_handle_t *)&s->poll, sock_closed);
        }
        return 0;
    }
    if (!s) {
        s = calloc(1, sizeof(*s));
        if (!s)
            return -1;
        s->m = m;
        s->fd = fd;
        if (uv_poll_init_socket(m->loop, &s->poll, fd) != 0) {
            free(s);
            return -1;
        }
        s->poll.data = s;
        curl_multi_assign(m->curlm, fd, s);
    }
    if (what & CURL_POLL_IN)
        events |= UV_READABLE;
    if (what & CURL_POLL_OUT)
        events |= UV_WRITABLE;
    if (events != s->events) { /* each change is an epoll_ctl: skip the no-ops */
        uv_poll_start(&s->poll, events, on_poll);
        s->events = events;
    }
    return 0;
}

static int on_curl_timer(CURLM *multi, long timeout_ms, void *userp)
{
    struct up_multi *m = userp;

    (void)multi;
    if (timeout_ms < 0)
        uv_timer_stop(&m->timer);
    else
        uv_timer_start(&m->timer, on_timer, (uint64_t)timeout_ms, 0);
    return 0;
}

enum bsc_err up_multi_new(uv_loop_t *loop, const struct up_limits *limits,
                          struct up_multi **out)
{
    struct up_multi *m = calloc(1, sizeof(*m));

    if (!m)
        return BSC_ENOMEM;
    m->loop = loop;
    m->curlm = curl_multi_init();
    if (!m->curlm) {
        free(m);
        return BSC_ENOMEM;
    }
    uv_timer_init(loop, &m->timer);
    m->timer.data = m;
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

static void multi_timer_closed(uv_handle_t *h)
{
    struct up_multi *m = h->data;

    free(m);
}

void up_multi_free(struct up_multi *m)
{
    if (!m)
        return;
    m->closing = true;
    while (m->transfers)
        up_cancel(m->transfers);
    for (size_t i = 0; i < m->n_easy_cache; i++)
        curl_easy_cleanup(m->easy_cache[i]);
    m->n_easy_cache = 0;
    /* Cleaning up the multi closes cached connections, which calls on_socket(REMOVE)
     * for each watched socket; their handles close through the loop. */
    curl_multi_cleanup(m->curlm);
    uv_timer_stop(&m->timer);
    uv_close((uv_handle_t *)&m->timer, multi_timer_closed);
}

size_t up_multi_active(const struct up_multi *m)
{
    return m->n_active;
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

CURL *up__acquire_easy(struct up_multi *m)
{
    if (m->n_easy_cache)
        return m->easy_cache[--m->n_easy_cache];
    return curl_easy_init();
}

void up__release_easy(struct up_multi *m, CURL *easy)
{
    if (!m->closing && m->n_easy_cache < UP_EASY_CACHE) {
        curl_easy_reset(easy);
        m->easy_cache[m->n_easy_cache++] = easy;
        return;
    }
    curl_easy_cleanup(easy);
}
