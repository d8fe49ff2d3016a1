/* SPDX-License-Identifier: MIT */
/* conn.c -- one inbound connection: reads land in the server's read buffer and go through
 * h1_parse.c; one request at a time is dispatched (pipelined bytes wait in a bounded
 * backlog); output is written with one uv_write in flight while the next batch coalesces
 * behind it; timers for head, body stall, idle and send stall; keep-alive, lingering close,
 * and the abort callback, run from the close callback. Response framing is resp.c's, the
 * deferred-work pass listener.c's. See docs/internals/server.md. */
#include <errno.h>
#include <sys/socket.h>

#include <uv.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/compat.h"
#include "core/id.h"
#include "core/log.h"
#include "server/internal.h"

static const char *const state_names[] = {
#define X(NAME, doc) [SRV__CONN_ST_##NAME] = #NAME,
    SRV__CONN_STATES(X)
#undef X
};

static void conn_goto(struct srv_conn *c, enum srv__conn_state st)
{
    LOG_DEBUG("srv: conn %p %s -> %s", (void *)c, state_names[c->state], state_names[st]);
    c->state = st;
    srv__shed_track(c->srv, c); /* which connections may be closed for room: cap.c */
}

static uint64_t now_ms(const struct srv_conn *c)
{
    return uv_now(c->srv->loop);
}

static void on_timer(uv_timer_t *t);

/* The connection's one timer is lazy, as nginx keeps its timers: <due_ms> is the deadline
 * that counts (0: none) and the armed timer may be due earlier, in which case it re-arms
 * for the rest when it fires (on_timer). A request moves the deadline four times (the head
 * timeout, none while it is handled, the send stall, the keep-alive idle timeout); only a
 * deadline earlier than the armed one touches the loop's timer heap, so a request costs one
 * heap operation instead of a removal and an insertion at each step. A zero timeout means
 * "none" (the limit is off). */
static void timer_arm(struct srv_conn *c, uint64_t ms)
{
    uint64_t due;

    if (ms == 0) {
        c->due_ms = 0;
        return;
    }
    due = now_ms(c) + ms;
    c->due_ms = due;
    if (uv_is_active((const uv_handle_t *)&c->timer) && c->armed_ms <= due)
        return;
    c->armed_ms = due;
    uv_timer_start(&c->timer, on_timer, ms, 0);
}

/* No deadline: the armed timer, if any, fires and finds none. */
static void timer_stop(struct srv_conn *c)
{
    c->due_ms = 0;
}

static size_t in_len(const struct srv_conn *c)
{
    return c->in.len - c->in_off;
}

/* After this request the connection closes, so later input is worthless. */
static bool discarding(const struct srv_conn *c)
{
    return c->req.close_after || !c->h1.keep_alive;
}

/* ---- life and death -------------------------------------------------------------------- */

struct srv_conn *srv__conn_new(struct srv *srv)
{
    struct srv_conn *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->srv = srv;
    c->lim = srv->lim;
    c->state = SRV__CONN_ST_IDLE;
    c->shed = SRV__SHED_NONE; /* on no list until it counts (srv__conn_start) */
    srv__h1_init(&c->h1, c->lim.max_header_bytes, c->lim.max_body_bytes);
    bsc_buf_init(&c->in, SRV__BACKLOG_MAX + SRV__READ_CHUNK);
    bsc_buf_init(&c->out, SRV__OUT_MAX);
    bsc_buf_init(&c->wbuf, SRV__OUT_MAX);
    c->req.conn = c;
    c->req.resp_left = -1;
    uv_tcp_init(srv->loop, &c->tcp);   /* no socket yet: cannot fail */
    uv_timer_init(srv->loop, &c->timer); /* cannot fail */
    c->tcp.data = c;
    c->timer.data = c;
    c->wreq.data = c;
    c->sreq.data = c;
    c->open_handles = 2;
    c->next = srv->conns;
    if (srv->conns)
        srv->conns->prev = c;
    srv->conns = c;
    srv->n_conns++;
    srv__group_count(srv, 1);
    return c;
}

/* The abort callback runs here, from the loop, once both handles are closed: the handler
 * hears of the request one last time and the memory goes right after. */
static void on_close(uv_handle_t *h)
{
    struct srv_conn *c = h->data;
    struct srv_req *req = &c->req;

    if (--c->open_handles)
        return;
    if (req->dispatched && !req->ended) {
        req->ended = true;
        if (req->on_abort)
            req->on_abort(req, req->abort_ud);
    }
    srv__conn_gone(c->srv, c);
    srv__h1_cleanup(&c->h1);
    bsc_buf_cleanup(&c->in);
    bsc_buf_cleanup(&c->out);
    bsc_buf_cleanup(&c->wbuf);
    free(c);
}

/* <c> no longer counts against the cap (it is closing, or only sends a refusal). */
static void uncount(struct srv_conn *c)
{
    if (!c->counted)
        return;
    c->counted = false;
    c->srv->n_active--;
    srv__shed_track(c->srv, c);
}

static void close_common(struct srv_conn *c)
{
    conn_goto(c, SRV__CONN_ST_CLOSED);
    uncount(c);
    if (c->work)
        srv__work_remove(c->srv, c);
    c->reading = false;
    uv_close((uv_handle_t *)&c->timer, on_close);
}

void srv__conn_close(struct srv_conn *c)
{
    if (c->state == SRV__CONN_ST_CLOSED)
        return;
    close_common(c);
    uv_close((uv_handle_t *)&c->tcp, on_close);
}

void srv__conn_close_reset(struct srv_conn *c)
{
    if (c->state == SRV__CONN_ST_CLOSED)
        return;
    close_common(c);
    if (c->shut || uv_tcp_close_reset(&c->tcp, on_close) != 0)
        uv_close((uv_handle_t *)&c->tcp, on_close);
}

/* ---- reading --------------------------------------------------------------------------- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct srv_conn *c = h->data;

    (void)suggested;
    /* Every read is consumed (parsed, kept in the backlog or dropped) before the next one,
     * so all connections of the loop share one buffer. */
    buf->base = c->srv->scratch;
    buf->len = SRV__READ_CHUNK;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static bool wants_input(const struct srv_conn *c)
{
    if (c->eof)
        return false;
    switch (c->state) {
    case SRV__CONN_ST_IDLE:
    case SRV__CONN_ST_HEAD:
    case SRV__CONN_ST_BODY:
    case SRV__CONN_ST_LINGER:
        return true;
    case SRV__CONN_ST_HANDLING:
    case SRV__CONN_ST_FLUSHING:
        /* Reading on while busy is how a client going away is seen; the backlog bound
         * is the back-pressure on pipelining clients. */
        return discarding(c) || in_len(c) < SRV__BACKLOG_MAX;
    default:
        return false;
    }
}

static void update_reading(struct srv_conn *c)
{
    bool want = wants_input(c);

    if (want == c->reading)
        return;
    if (!want) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = false;
        return;
    }
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0) {
        srv__conn_close(c);
        return;
    }
    c->reading = true;
}

/* Bytes after the request being handled: kept for later unless they cannot matter. */
static void keep_input(struct srv_conn *c, const char *p, size_t n)
{
    if (discarding(c))
        return;
    if (c->in_off) {
        memmove(c->in.p, c->in.p + c->in_off, in_len(c));
        c->in.len -= c->in_off;
        c->in.p[c->in.len] = '\0'; /* keep the bsc_buf invariant */
        c->in_off = 0;
    }
    if (bsc_buf_append(&c->in, p, n) != BSC_OK) {
        srv__conn_close(c);
        return;
    }
    update_reading(c);
}

static void set_req_id(struct srv_conn *c)
{
    struct bsc_str v = srv__h1_header(&c->h1, BSC_STR("x-request-id"));
    bool ok = v.len >= 1 && v.len <= SRV__REQ_ID_MAX;

    for (size_t i = 0; ok && i < v.len; i++)
        ok = v.p[i] >= 0x20 && v.p[i] <= 0x7e;
    if (!ok) {
        bsc_req_id(c->req.id);
        return;
    }
    memcpy(c->req.id, v.p, v.len);
    c->req.id[v.len] = '\0';
}

/* A body has three limits, each off at zero: no byte for header_timeout_ms (a stall); not
 * complete body_timeout_ms after the head (a client trickling a byte now and then); and,
 * past SRV_BODY_RATE_GRACE_MS, an average of min_body_rate_bps since the head -- each body
 * byte received buys 1000 / rate ms more, as Apache's mod_reqtimeout MinRate does, so a
 * body that started well may pause, and one that never did is cut after the grace. */
enum body_limit { BODY_LIM_NONE = 0, BODY_LIM_DEADLINE, BODY_LIM_RATE, BODY_LIM_STALL };

/* Folds one limit into the earliest: <used> of its <limit> ms are gone. */
static void body_limit(uint64_t used, uint64_t limit, enum body_limit which, uint64_t *left,
                       enum body_limit *hit)
{
    if (used >= limit) {
        if (!*hit)
            *hit = which;
    } else if (limit - used < *left) {
        *left = limit - used;
    }
}

/* The time the body may have taken so far at min_body_rate_bps: the grace, plus what each
 * body byte received bought. */
static uint64_t rate_allowance_ms(const struct srv_conn *c)
{
    return SRV_BODY_RATE_GRACE_MS + (uint64_t)c->h1.body.len * 1000 / c->lim.min_body_rate_bps;
}

/* The ms until the first body limit expires (0: none is on), or *<hit> says which one
 * already did. The de-chunked body bytes count for the rate, not the framing. */
static uint64_t body_ms_left(const struct srv_conn *c, uint64_t now, enum body_limit *hit)
{
    uint64_t left = UINT64_MAX, since_head = now - c->body_start_ms;

    *hit = BODY_LIM_NONE;
    if (c->lim.body_timeout_ms)
        body_limit(since_head, c->lim.body_timeout_ms, BODY_LIM_DEADLINE, &left, hit);
    if (c->lim.min_body_rate_bps)
        body_limit(since_head, rate_allowance_ms(c), BODY_LIM_RATE, &left, hit);
    if (c->lim.header_timeout_ms)
        body_limit(now - c->last_rx_ms, c->lim.header_timeout_ms, BODY_LIM_STALL, &left, hit);
    return left == UINT64_MAX ? 0 : left;
}

static void body_timer_arm(struct srv_conn *c)
{
    enum body_limit hit;

    timer_arm(c, body_ms_left(c, now_ms(c), &hit));
}

static void begin_request(struct srv_conn *c)
{
    conn_goto(c, SRV__CONN_ST_HEAD);
    c->req.start_us = bsc_now_us();
    timer_arm(c, c->lim.header_timeout_ms); /* a deadline from the first byte, not a stall */
}

static void send_continue(struct srv_conn *c)
{
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";

    if (bsc_buf_append(&c->out, cont, sizeof(cont) - 1) != BSC_OK) {
        srv__conn_close(c);
        return;
    }
    srv__conn_flush(c);
}

/* Shows the head of a request whose body is still to come to the head check. False when it
 * answered: its reply says Connection: close, and the body is never read. Headers it added
 * without answering are dropped: the handler's own policy adds them again. */
static bool head_passes(struct srv_conn *c)
{
    struct srv *srv = c->srv;
    bool close_after = c->req.close_after;
    uint8_t n_extra = c->req.n_extra;

    if (!srv->head_check)
        return true;
    c->req.close_after = true;
    if (srv->head_check(&c->req, srv->ud)) {
        c->req.close_after = close_after;
        c->req.n_extra = n_extra;
        return true;
    }
    if (!c->req.head_sent) /* said no without answering: nothing sensible to send */
        srv__conn_close(c);
    return false;
}

/* The head is complete; <rc> is what the feed that completed it returned. */
static void on_head(struct srv_conn *c, int rc)
{
    conn_goto(c, SRV__CONN_ST_BODY);
    set_req_id(c);
    if (rc != 0)
        return; /* the body is already here, or the request failed */
    if (!head_passes(c))
        return;
    c->last_rx_ms = now_ms(c);
    c->body_start_ms = c->last_rx_ms;
    body_timer_arm(c); /* from now on: a stall timer and a deadline, see on_timer */
    if (c->h1.expect_continue)
        send_continue(c);
}

/* Feeds input in a reading state. Returns the bytes used; *<rc> as srv__h1_feed. */
static size_t feed(struct srv_conn *c, const char *p, size_t n, int *rc)
{
    size_t used;

    if (c->state == SRV__CONN_ST_IDLE)
        begin_request(c);
    *rc = srv__h1_feed(&c->h1, p, n, &used);
    if (c->h1.head_done && c->state == SRV__CONN_ST_HEAD)
        on_head(c, *rc);
    if (c->state == SRV__CONN_ST_CLOSED)
        *rc = 0; /* the 100 Continue could not be written: the connection is gone */
    return used;
}

static void fail_parse(struct srv_conn *c)
{
    static const struct {
        int status;
        const char *code;
    } map[SRV__H1_E_COUNT] = {
        [SRV__H1_OK] = {400, "bad_request"},
        [SRV__H1_E_BAD_REQUEST] = {400, "bad_request"},
        [SRV__H1_E_HEAD_TOO_LARGE] = {431, "headers_too_large"},
        [SRV__H1_E_BODY_TOO_LARGE] = {413, "request_too_large"},
        [SRV__H1_E_NOT_IMPLEMENTED] = {501, "not_implemented"},
        [SRV__H1_E_NOMEM] = {503, "server_busy"},
    };
    enum srv__h1_err e = c->h1.err < SRV__H1_E_COUNT ? c->h1.err : SRV__H1_E_BAD_REQUEST;

    LOG_DEBUG("srv: request rejected (%d): %s", map[e].status, c->h1.why ? c->h1.why : "?");
    srv__conn_error(c, map[e].status, map[e].code, c->h1.why ? c->h1.why : "bad request");
}

static void dispatch(struct srv_conn *c)
{
    struct srv *srv = c->srv;

    c->req.dispatched = true;
    c->req.principal[0] = '\0'; /* each request authenticates on its own */
    timer_stop(c);
    update_reading(c);
    srv->handler(&c->req, srv->ud);
}

/* Parses what waits in the backlog; dispatches at most one request. */
static void feed_backlog(struct srv_conn *c)
{
    int rc;
    size_t used = feed(c, c->in.p + c->in_off, in_len(c), &rc);

    c->in_off += used;
    if (c->in_off == c->in.len) {
        c->in_off = 0;
        bsc_buf_reset(&c->in);
    }
    if (rc < 0) {
        fail_parse(c);
        return;
    }
    if (rc > 0) {
        conn_goto(c, SRV__CONN_ST_HANDLING);
        dispatch(c);
        return;
    }
    update_reading(c);
}

static void on_input(struct srv_conn *c, const char *p, size_t n)
{
    int rc;
    size_t used;

    if (in_len(c)) { /* not expected in a reading state; keep the order if it happens */
        if (bsc_buf_append(&c->in, p, n) != BSC_OK) {
            srv__conn_close(c);
            return;
        }
        feed_backlog(c);
        return;
    }
    used = feed(c, p, n, &rc);
    if (rc < 0) {
        fail_parse(c);
        return;
    }
    if (rc == 0)
        return;
    conn_goto(c, SRV__CONN_ST_HANDLING);
    if (used < n)
        keep_input(c, p + used, n - used); /* before the handler runs: <p> is the loop's */
    if (c->state == SRV__CONN_ST_HANDLING)
        dispatch(c);
}

static void on_eof(struct srv_conn *c)
{
    c->eof = true;
    c->reading = false; /* libuv stopped reading */
    switch (c->state) {
    case SRV__CONN_ST_FLUSHING:
        c->req.close_after = true; /* finish writing, then close */
        break;
    case SRV__CONN_ST_LINGER:
        if (c->shut)
            srv__conn_close(c);
        break;
    default:
        /* Idle, a partial request, or one being handled: the client is gone. A handled
         * request gets its abort callback from on_close. */
        srv__conn_close(c);
    }
}

/* The next request of a keep-alive connection arrived while the end of the last one waits
 * for the deferred pass (SRV__WORK_DONE). A read callback is not inside a handler, so it
 * starts now: the deferred pass runs after the poll phase, which on a loaded loop is up to
 * 48 full batches of other connections' events later (49 ms at the median, 105 ms at most,
 * measured beside 9,500 held streams), all of it added to this request's time. */
static void start_next_now(struct srv_conn *c)
{
    unsigned work = c->work;

    if (c->state != SRV__CONN_ST_FLUSHING || !(work & SRV__WORK_DONE) || c->writing ||
        c->out.len)
        return;
    srv__work_remove(c->srv, c);
    srv__conn_run_work(c, work);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct srv_conn *c = s->data;

    if (nread == 0)
        return;
    if (nread < 0) {
        if (nread == UV_EOF)
            on_eof(c);
        else
            srv__conn_close(c);
        return;
    }
    c->last_rx_ms = now_ms(c);
    switch (c->state) {
    case SRV__CONN_ST_IDLE:
    case SRV__CONN_ST_HEAD:
    case SRV__CONN_ST_BODY:
        on_input(c, buf->base, (size_t)nread);
        break;
    case SRV__CONN_ST_HANDLING:
        keep_input(c, buf->base, (size_t)nread);
        break;
    case SRV__CONN_ST_FLUSHING:
        keep_input(c, buf->base, (size_t)nread);
        start_next_now(c);
        break;
    case SRV__CONN_ST_LINGER:
        c->discarded += (size_t)nread;
        if (c->discarded > SRV__LINGER_BYTES)
            srv__conn_close(c);
        break;
    default:
        break;
    }
}

/* ---- starting, errors, draining -------------------------------------------------------- */

/* A connection just accepted has its request waiting more often than not (the client sent
 * it right after the handshake): reading it now saves the loop pass a new socket waits for
 * before epoll reports it, which under load is the length of a whole pass of other
 * connections' events. Nothing there yet: epoll reports it when it comes. */
static void read_now(struct srv_conn *c)
{
    uv_os_fd_t fd;
    uv_buf_t buf;
    ssize_t n;

    if (uv_fileno((const uv_handle_t *)&c->tcp, &fd) != 0)
        return;
    on_alloc((uv_handle_t *)&c->tcp, SRV__READ_CHUNK, &buf);
    do
        n = recv(fd, buf.base, buf.len, 0);
    while (n < 0 && errno == EINTR);
    if (n > 0)
        on_read((uv_stream_t *)&c->tcp, n, &buf);
    else if (n == 0)
        on_read((uv_stream_t *)&c->tcp, UV_EOF, &buf);
    /* An error other than EAGAIN is seen again by the loop's own read. */
}

void srv__conn_start(struct srv_conn *c, bool reject)
{
    struct srv *srv = c->srv;

    uv_tcp_nodelay(&c->tcp, 1);
    if (reject) {
        c->rejecting = true;
        srv->n_rejecting++;
        if (srv->n_rejecting > SRV__REJECT_MAX) { /* a flood: no reply at all */
            srv__conn_close(c);
            return;
        }
        srv__conn_error(c, 503, "too_many_connections", "too many open connections");
        return;
    }
    c->counted = true;
    srv->n_active++;
    srv__shed_track(srv, c); /* idle until its first byte: it may make room for another */
    /* A fresh connection has the head timeout to start sending (slow clients are cut). */
    timer_arm(c, c->lim.header_timeout_ms);
    update_reading(c);
    if (c->reading)
        read_now(c);
}

void srv__conn_shed(struct srv_conn *c)
{
    struct srv *srv = c->srv;

    if (c->state != SRV__CONN_ST_HEAD && c->state != SRV__CONN_ST_BODY) {
        srv__conn_close(c); /* idle or lingering: nothing in progress to explain */
        return;
    }
    uncount(c);
    c->rejecting = true; /* its reply is one of the cap's replies in flight */
    srv->n_rejecting++;
    if (srv->n_rejecting > SRV__REJECT_MAX) {
        srv__conn_close(c);
        return;
    }
    srv__conn_error(c, 503, "too_many_connections",
                    "the connection cap was reached while this request was still arriving");
}

void srv__conn_error(struct srv_conn *c, int status, const char *code, const char *message)
{
    if (c->state == SRV__CONN_ST_CLOSED)
        return;
    if (c->req.head_sent || c->req.dispatched) { /* the handler owns the reply: cut it */
        srv__conn_close(c);
        return;
    }
    if (!c->req.id[0])
        bsc_req_id(c->req.id);
    c->req.close_after = true;
    timer_stop(c);
    srv_resp_error(&c->req, status, NULL, code, message);
    if (c->srv->refused)
        c->srv->refused(&c->req, status, c->srv->ud);
}

void srv_set_error_body(struct srv *srv, srv_error_body_fn *fn)
{
    srv->error_body = fn;
}

void srv_set_refused(struct srv *srv, srv_refused_fn *fn)
{
    srv->refused = fn;
}

void srv_set_head_check(struct srv *srv, srv_head_check_fn *fn)
{
    srv->head_check = fn;
}

void srv__conn_drain(struct srv_conn *c)
{
    if (c->state == SRV__CONN_ST_IDLE && !in_len(c))
        srv__conn_close(c);
    /* Any other state ends with response_done(), which sees srv->draining. */
}

/* The drain's end: a handler that asked (srv_req_on_stop) ends its response now, and what
 * it queued is written out before the close (bounded by the send-stall and linger timers);
 * every other connection closes at once. */
void srv__conn_stop(struct srv_conn *c)
{
    struct srv_req *req = &c->req;
    srv_req_cb *cb = req->on_stop;

    if (c->state == SRV__CONN_ST_HANDLING && !req->ended && cb) {
        req->on_stop = NULL; /* once */
        cb(req, req->stop_ud);
    }
    if (c->state == SRV__CONN_ST_FLUSHING && req->close_after)
        return;
    if (c->state == SRV__CONN_ST_LINGER)
        return;
    srv__conn_close(c);
}

/* ---- writing --------------------------------------------------------------------------- */

static void on_write(uv_write_t *w, int status);

/* Writes what the socket takes at once; the caller queues the rest. Returns the number
 * of bytes written (0 when the socket is full), or -1 after closing the connection. A
 * direct write costs one syscall; a uv_write that completes at once costs an epoll_ctl
 * more (libuv re-arms the watcher when its write queue drains). */
static ssize_t write_now(struct srv_conn *c)
{
    uv_buf_t buf = uv_buf_init(c->out.p, (unsigned)c->out.len);
    int n = uv_try_write((uv_stream_t *)&c->tcp, &buf, 1);

    if (n == UV_EAGAIN)
        return 0;
    if (n < 0) {
        srv__conn_close(c);
        return -1;
    }
    c->last_tx_ms = now_ms(c);
    return n;
}

void srv__conn_flush(struct srv_conn *c)
{
    struct bsc_buf tmp;
    uv_buf_t buf;
    ssize_t done;

    if (c->state == SRV__CONN_ST_CLOSED || c->writing || !c->out.len)
        return;
    if ((done = write_now(c)) < 0)
        return;
    if ((size_t)done == c->out.len) {
        bsc_buf_reset(&c->out);
        if (c->req.on_drain) /* a paused handler waits for room: tell it from the loop */
            srv__conn_schedule(c, SRV__WORK_DRAIN);
        return;
    }
    tmp = c->wbuf; /* empty: nothing is in flight */
    c->wbuf = c->out;
    c->out = tmp;
    buf = uv_buf_init(c->wbuf.p + done, (unsigned)(c->wbuf.len - (size_t)done));
    if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &buf, 1, on_write) != 0) {
        srv__conn_close(c);
        return;
    }
    c->writing = true;
}

void srv__conn_schedule(struct srv_conn *c, unsigned work)
{
    if (c->state == SRV__CONN_ST_CLOSED)
        return;
    if (!c->work)
        srv__work_add(c->srv, c);
    c->work |= work;
}

static void check_drain(struct srv_conn *c)
{
    struct srv_req *req = &c->req;
    srv_req_cb *cb = req->on_drain;

    if (!cb || req->ended || srv__pending(c) > c->lim.max_pending_output / 2)
        return;
    req->on_drain = NULL; /* once */
    cb(req, req->drain_ud);
}

static void on_shutdown(uv_shutdown_t *r, int status)
{
    struct srv_conn *c = r->data;

    if (c->state == SRV__CONN_ST_CLOSED)
        return;
    c->shut = true;
    if (status < 0 || c->eof)
        srv__conn_close(c);
}

static void linger(struct srv_conn *c)
{
    conn_goto(c, SRV__CONN_ST_LINGER);
    c->discarded = 0;
    timer_arm(c, SRV__LINGER_MS);
    if (uv_shutdown(&c->sreq, (uv_stream_t *)&c->tcp, on_shutdown) != 0) {
        srv__conn_close(c);
        return;
    }
    update_reading(c);
}

static void next_request(struct srv_conn *c)
{
    struct srv_req *req = &c->req;

    c->lim = c->srv->lim;
    memset(req, 0, sizeof(*req));
    req->conn = c;
    req->resp_left = -1;
    srv__h1_next(&c->h1, c->lim.max_header_bytes, c->lim.max_body_bytes);
    if (c->out.cap > SRV__KEEP_BUF)
        bsc_buf_cleanup(&c->out);
    if (c->wbuf.cap > SRV__KEEP_BUF)
        bsc_buf_cleanup(&c->wbuf);
    conn_goto(c, SRV__CONN_ST_IDLE);
    timer_arm(c, c->lim.idle_timeout_ms);
    if (in_len(c)) {
        feed_backlog(c);
        return;
    }
    if (c->in.cap > SRV__KEEP_BUF)
        bsc_buf_cleanup(&c->in);
    update_reading(c);
}

/* The connection closes after the response that is ending. */
static bool closes_after(const struct srv_conn *c)
{
    return c->req.close_after || c->eof || c->srv->draining;
}

/* Everything of the ended response is written. */
static void response_done(struct srv_conn *c)
{
    if (closes_after(c)) {
        linger(c);
        return;
    }
    next_request(c);
}

static void after_write(struct srv_conn *c)
{
    srv__conn_flush(c);
    switch (c->state) {
    case SRV__CONN_ST_HANDLING:
        check_drain(c);
        break;
    case SRV__CONN_ST_FLUSHING:
        if (!c->writing && !c->out.len)
            response_done(c);
        break;
    default:
        break;
    }
}

static void on_write(uv_write_t *w, int status)
{
    struct srv_conn *c = w->data;

    c->writing = false;
    bsc_buf_reset(&c->wbuf);
    if (c->state == SRV__CONN_ST_CLOSED) /* UV_ECANCELED from uv_close */
        return;
    if (status < 0) {
        srv__conn_close(c);
        return;
    }
    c->last_tx_ms = now_ms(c);
    after_write(c);
}

void srv__conn_ended(struct srv_conn *c)
{
    conn_goto(c, SRV__CONN_ST_FLUSHING);
    c->last_tx_ms = now_ms(c);
    timer_arm(c, c->lim.idle_timeout_ms); /* a send stall, see on_timer */
    srv__conn_flush(c);
    if (c->state != SRV__CONN_ST_FLUSHING)
        return;
    if (!c->writing && !c->out.len) {
        /* A connection that closes after this response starts closing now: a response
         * whose head promised keep-alive (a stream broken after its commit point) looks
         * complete to the client, which may reuse the connection for its next request
         * in the time a deferred close would give it. The next request of a keep-alive
         * connection still waits for the loop pass: never from inside the handler. */
        if (closes_after(c)) {
            linger(c);
            return;
        }
        srv__conn_schedule(c, SRV__WORK_DONE);
    }
    update_reading(c);
}

void srv__conn_run_work(struct srv_conn *c, unsigned work)
{
    if (work & SRV__WORK_FLUSH)
        srv__conn_flush(c);
    if ((work & SRV__WORK_DRAIN) && c->state == SRV__CONN_ST_HANDLING)
        check_drain(c);
    if ((work & SRV__WORK_DONE) && c->state == SRV__CONN_ST_FLUSHING && !c->writing &&
        !c->out.len)
        response_done(c);
}

/* ---- timers ---------------------------------------------------------------------------- */

/* The stall timers are lazy: progress only stamps last_rx/last_tx, and an early firing
 * re-arms for what is left. */
static void rearm_stall(struct srv_conn *c, uint64_t since, uint64_t limit, bool *expired)
{
    uint64_t idle = now_ms(c) - since;

    *expired = idle >= limit;
    if (!*expired)
        timer_arm(c, limit - idle);
}

static void body_timeout(struct srv_conn *c)
{
    enum body_limit hit;
    uint64_t left = body_ms_left(c, now_ms(c), &hit);
    char msg[96];

    switch (hit) {
    case BODY_LIM_NONE:
        timer_arm(c, left);
        break;
    case BODY_LIM_DEADLINE:
        srv__conn_error(c, 408, "request_timeout", "request body not received in time");
        break;
    case BODY_LIM_RATE:
        snprintf(msg, sizeof(msg), "request body too slow: under %u bytes/s on average",
                 c->lim.min_body_rate_bps);
        srv__conn_error(c, 408, "request_timeout", msg);
        break;
    default:
        srv__conn_error(c, 408, "request_timeout", "request body stalled");
    }
}

static void on_timer(uv_timer_t *t)
{
    struct srv_conn *c = t->data;
    uint64_t now = now_ms(c);
    bool expired;

    if (!c->due_ms)
        return; /* the deadline was dropped after the timer was armed */
    if (now < c->due_ms) { /* armed for an earlier deadline, since moved later */
        c->armed_ms = c->due_ms;
        uv_timer_start(&c->timer, on_timer, c->due_ms - now, 0);
        return;
    }
    c->due_ms = 0;

    switch (c->state) {
    case SRV__CONN_ST_IDLE:
        srv__conn_close(c); /* idle keep-alive, or a fresh connection that sent nothing */
        break;
    case SRV__CONN_ST_HEAD:
        srv__conn_error(c, 408, "request_timeout", "request headers not received in time");
        break;
    case SRV__CONN_ST_BODY:
        body_timeout(c);
        break;
    case SRV__CONN_ST_FLUSHING:
        if (c->writing && c->tcp.write_queue_size != c->last_wq) { /* a big write moves */
            c->last_wq = c->tcp.write_queue_size;
            c->last_tx_ms = now_ms(c);
        }
        rearm_stall(c, c->last_tx_ms, c->lim.idle_timeout_ms, &expired);
        if (expired)
            srv__conn_close(c);
        break;
    case SRV__CONN_ST_LINGER:
        srv__conn_close(c);
        break;
    default:
        break;
    }
}
