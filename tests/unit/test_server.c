/* SPDX-License-Identifier: MIT */
/* test_server.c -- the inbound HTTP/1.1 server (src/server/) over real sockets on
 * 127.0.0.1. Each test starts a server on its own libuv loop in a second thread; the test
 * thread is a plain blocking-socket client, so the assertions are about the bytes a real
 * client sees. The handler's behaviour is chosen by the request path. Functions that must
 * touch the server run on the loop thread through run_on_loop(). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>
#include <http_parser.h>
#include <json-c/json.h>
#include <uv.h>

#include "core/clock.h"
#include "core/compat.h"
#include "dialect/error.h"
#include "server/server.h"

#define BIG_TOTAL  (4u << 20)
#define BIG_CHUNK  (16u * 1024)
#define RECV_MS    3000
#define MAX_CLIENTS 16

struct client;

/* ---- the server side, on the loop thread ------------------------------------------------ */

struct fx {
    uv_loop_t loop;
    uv_async_t wake;
    uv_timer_t defer;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    void (*call)(struct fx *);
    bool call_done;
    struct srv *srv;
    struct srv_limits lim;
    struct srv_limits new_lim; /* for call_set_limits */
    uint16_t port;
    bool started;
    bool head_check;           /* fx_start sets head_refuse() as the head check */
    /* written on the loop thread, read by the test thread */
    atomic_int n_req, n_abort, n_drain, n_closed;
    atomic_int n_head;         /* heads shown to the head check */
    atomic_int n_wait_drain; /* times the /big handler waited for its drain callback */
    atomic_size_t max_pending;
    atomic_size_t conn_count;
    atomic_size_t pending_after_body, pending_after_stream; /* the /now handler's view */
    /* loop thread only */
    struct srv_req *held;
    struct srv_req *deferred;
    struct srv_req *big;
    size_t big_sent;
    char big_chunk[BIG_CHUNK];
    /* test_next_request_at_once: its own handles, made on the loop thread by the test */
    uv_async_t nap;
    uv_check_t check;
    atomic_int napping, go, ended, n_req_at_check;
    /* test thread only: clients not yet closed, closed by teardown when an assertion
     * jumped out of the test before its own cl_close() */
    struct client *clients[MAX_CLIENTS];
};

static void on_abort(struct srv_req *req, void *ud)
{
    struct fx *fx = ud;

    if (fx->held == req)
        fx->held = NULL;
    if (fx->deferred == req) {
        fx->deferred = NULL;
        uv_timer_stop(&fx->defer);
    }
    if (fx->big == req)
        fx->big = NULL;
    atomic_fetch_add(&fx->n_abort, 1);
}

/* "<method> <path> q=<query> n=<body length> t=<X-Test> b=<body>" */
static void echo(struct srv_req *req)
{
    struct bsc_str m = srv_req_method(req), p = srv_req_path(req), q = srv_req_query(req);
    struct bsc_str t = srv_req_header(req, BSC_STR("x-test")), b = srv_req_body(req);
    size_t cap = 256 + p.len + q.len + t.len + b.len;
    char *out = malloc(cap);
    int n;

    assert_non_null(out);
    if (!t.p)
        t = BSC_STR(""); /* absent */
    n = snprintf(out, cap, "%.*s %.*s q=%.*s n=%zu t=%.*s b=%.*s", BSC_STR_FMT(m),
                 BSC_STR_FMT(p), BSC_STR_FMT(q), b.len, BSC_STR_FMT(t), BSC_STR_FMT(b));
    srv_resp_send(req, 200, "text/plain", NULL, 0, out, (size_t)n);
    free(out);
}

static void big_pump(struct srv_req *req, void *ud);

static void big_drained(struct srv_req *req, void *ud)
{
    struct fx *fx = ud;

    atomic_fetch_add(&fx->n_drain, 1);
    big_pump(req, ud);
}

/* Writes while pending output is under the limit, then waits for the drain callback. */
static void big_pump(struct srv_req *req, void *ud)
{
    struct fx *fx = ud;

    while (fx->big_sent < BIG_TOTAL && srv_req_pending(req) <= fx->lim.max_pending_output) {
        memset(fx->big_chunk, 'a' + (int)(fx->big_sent / BIG_CHUNK % 26), BIG_CHUNK);
        assert_int_equal(srv_resp_body(req, fx->big_chunk, BIG_CHUNK), BSC_OK);
        fx->big_sent += BIG_CHUNK;
        if (srv_req_pending(req) > atomic_load(&fx->max_pending))
            atomic_store(&fx->max_pending, srv_req_pending(req));
    }
    if (fx->big_sent >= BIG_TOTAL) {
        fx->big = NULL;
        srv_resp_end(req);
        return;
    }
    atomic_fetch_add(&fx->n_wait_drain, 1);
    srv_req_on_drain(req, big_drained, fx);
}

static void on_defer(uv_timer_t *t)
{
    struct fx *fx = t->data;
    struct srv_req *req = fx->deferred;

    fx->deferred = NULL;
    if (req)
        echo(req);
}

/* More than the socket can take at once: twice the largest send buffer TCP grows to here
 * (net.ipv4.tcp_wmem's third field), and a MiB. */
static size_t direct_big(void)
{
    unsigned long lo = 0, def = 0, max = 4ul << 20;
    FILE *f = fopen("/proc/sys/net/ipv4/tcp_wmem", "r");

    if (f) {
        if (fscanf(f, "%lu %lu %lu", &lo, &def, &max) != 3)
            max = 4ul << 20;
        fclose(f);
    }
    return 2 * (size_t)max + (1u << 20);
}

static void handle_misc(struct fx *fx, struct srv_req *req, struct bsc_str p)
{
    if (bsc_str_eq(p, BSC_STR("/release"))) { /* answers the held request, then itself */
        if (fx->held)
            echo(fx->held);
        fx->held = NULL;
        atomic_store(&fx->ended, 1);
        echo(req);
        return;
    }
    if (bsc_str_eq(p, BSC_STR("/stream"))) {
        char line[16];

        assert_int_equal(srv_resp_head(req, 200, NULL, 0, -1), BSC_OK);
        assert_int_equal(srv_resp_head(req, 200, NULL, 0, -1), BSC_ESTATE);
        for (int i = 0; i < 5; i++) {
            int n = snprintf(line, sizeof(line), "chunk-%d\n", i);

            assert_int_equal(srv_resp_body(req, line, (size_t)n), BSC_OK);
        }
        srv_resp_end(req);
    } else if (bsc_str_eq(p, BSC_STR("/now"))) {
        /* srv_resp_body waits for the end of the loop pass; srv_resp_stream writes at once,
         * with whatever srv_resp_body queued before it. */
        assert_int_equal(srv_resp_head(req, 200, NULL, 0, -1), BSC_OK);
        assert_int_equal(srv_resp_body(req, "queued,", 7), BSC_OK);
        atomic_store(&fx->pending_after_body, srv_req_pending(req));
        assert_int_equal(srv_resp_stream(req, "now,", 4), BSC_OK);
        atomic_store(&fx->pending_after_stream, srv_req_pending(req));
        assert_int_equal(srv_resp_stream(req, "", 0), BSC_OK); /* nothing to write */
        assert_int_equal(srv_resp_body(req, "last", 4), BSC_OK);
        srv_resp_end(req);
    } else if (bsc_str_eq(p, BSC_STR("/direct"))) {
        /* After the head has gone out with the first chunk, a chunk goes straight from the
         * caller's bytes; what the socket does not take waits in the output buffer. */
        size_t big_len = direct_big();
        char *big = malloc(big_len);

        assert_non_null(big);
        memset(big, 'z', big_len);
        assert_int_equal(srv_resp_head(req, 200, NULL, 0, -1), BSC_OK);
        assert_int_equal(srv_resp_stream(req, "first,", 6), BSC_OK);
        assert_int_equal(srv_resp_stream(req, "second,", 7), BSC_OK);
        atomic_store(&fx->pending_after_body, srv_req_pending(req));
        assert_int_equal(srv_resp_stream(req, big, big_len), BSC_OK);
        atomic_store(&fx->pending_after_stream, srv_req_pending(req));
        free(big); /* the socket has what it took, the output buffer a copy of the rest */
        srv_resp_end(req);
    } else if (bsc_str_eq(p, BSC_STR("/reset"))) {
        srv_resp_reset(req);
    } else if (bsc_str_eq(p, BSC_STR("/abort"))) {
        assert_int_equal(srv_resp_head(req, 200, NULL, 0, -1), BSC_OK);
        assert_int_equal(srv_resp_body(req, "partial", 7), BSC_OK);
        srv_resp_abort(req);
    } else if (bsc_str_eq(p, BSC_STR("/error"))) {
        srv_resp_error(req, 429, NULL, "rate_limit_exceeded", "slow \"down\"\n");
    } else if (bsc_str_eq(p, BSC_STR("/error-null"))) {
        srv_resp_error(req, 502, NULL, NULL, "upstream failed");
    } else if (bsc_str_eq(p, BSC_STR("/close"))) {
        srv_req_set_close(req);
        echo(req);
    } else if (bsc_str_eq(p, BSC_STR("/headers"))) {
        struct srv_header h[] = {
            {BSC_STR("X-Request-Id"), BSC_STR("mine")},
            {BSC_STR("Bad\r\nName"), BSC_STR("x")},
            {BSC_STR("Connection"), BSC_STR("upgrade")},
            {BSC_STR("X-Custom"), BSC_STR("v\r\nInjected: 1")},
            {BSC_STR("X-Good"), BSC_STR("yes")},
        };

        srv_resp_send(req, 200, "text/plain", h, BSC_ARRAY_LEN(h), "ok", 2);
    } else if (bsc_str_eq(p, BSC_STR("/empty"))) {
        assert_int_equal(srv_resp_head(req, 204, NULL, 0, 0), BSC_OK);
        srv_resp_end(req);
    } else if (bsc_str_eq(p, BSC_STR("/noresp"))) {
        srv_resp_end(req);
    } else if (bsc_str_eq(p, BSC_STR("/short"))) {
        assert_int_equal(srv_resp_head(req, 200, NULL, 0, 10), BSC_OK);
        assert_int_equal(srv_resp_body(req, "0123456789ab", 12), BSC_ELIMIT);
        assert_int_equal(srv_resp_body(req, "01234", 5), BSC_OK);
        srv_resp_end(req);
    } else {
        echo(req);
    }
    (void)fx;
}

static void handler(struct srv_req *req, void *ud)
{
    struct fx *fx = ud;
    struct bsc_str p = srv_req_path(req);

    atomic_fetch_add(&fx->n_req, 1);
    assert_ptr_equal(srv_req_loop(req), &fx->loop);
    assert_true(srv_req_start_us(req) > 0 && srv_req_start_us(req) <= bsc_now_us());
    assert_false(srv_resp_started(req));
    srv_req_set_data(req, fx);
    assert_ptr_equal(srv_req_data(req), fx);
    srv_req_on_abort(req, on_abort, fx);
    for (size_t i = 0; i < srv_req_header_count(req); i++) {
        struct srv_header h = srv_req_header_at(req, i);
        struct bsc_str first = srv_req_header(req, h.name);

        assert_non_null(first.p); /* every listed field is found by name, any case */
    }
    assert_null(srv_req_header_at(req, srv_req_header_count(req)).name.p);
    if (bsc_str_eq(p, BSC_STR("/hold"))) {
        fx->held = req;
    } else if (bsc_str_eq(p, BSC_STR("/slow"))) {
        fx->deferred = req;
        uv_timer_start(&fx->defer, on_defer, 100, 0);
    } else if (bsc_str_eq(p, BSC_STR("/big"))) {
        fx->big = req;
        fx->big_sent = 0;
        assert_int_equal(srv_resp_head(req, 200, NULL, 0, -1), BSC_OK);
        big_pump(req, fx);
    } else {
        handle_misc(fx, req, p);
    }
}

static void on_wake(uv_async_t *a)
{
    struct fx *fx = a->data;

    pthread_mutex_lock(&fx->mu);
    if (fx->call && !fx->call_done) {
        fx->call(fx);
        fx->call_done = true;
        pthread_cond_broadcast(&fx->cv);
    }
    pthread_mutex_unlock(&fx->mu);
}

/* Runs <fn> on the loop thread and waits for it. */
static void run_on_loop(struct fx *fx, void (*fn)(struct fx *))
{
    pthread_mutex_lock(&fx->mu);
    fx->call = fn;
    fx->call_done = false;
    uv_async_send(&fx->wake);
    while (!fx->call_done)
        pthread_cond_wait(&fx->cv, &fx->mu);
    fx->call = NULL;
    pthread_mutex_unlock(&fx->mu);
}

static void *loop_main(void *arg)
{
    struct fx *fx = arg;

    uv_run(&fx->loop, UV_RUN_DEFAULT);
    return NULL;
}

/* The head check of test_head_check: refuses a head carrying x-deny with a 401; a head it
 * passes gets a response header that the server must drop (the handler decides again). */
static bool head_refuse(struct srv_req *req, void *ud)
{
    struct fx *fx = ud;

    atomic_fetch_add(&fx->n_head, 1);
    if (srv_req_header(req, BSC_STR("x-deny")).p) {
        srv_resp_error(req, 401, "invalid_request_error", "invalid_api_key", "no key");
        return false;
    }
    assert_int_equal(srv_resp_add_header(req, BSC_STR("x-from-head"), BSC_STR("1")), BSC_OK);
    return true;
}

static void fx_start(struct fx *fx)
{
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);
    char err[256];
    int fd = -1;

    assert_int_equal(uv_loop_init(&fx->loop), 0);
    assert_int_equal(uv_async_init(&fx->loop, &fx->wake, on_wake), 0);
    uv_timer_init(&fx->loop, &fx->defer);
    fx->wake.data = fx;
    fx->defer.data = fx;
    assert_int_equal(srv_listen_socket("127.0.0.1", 0, &fd, err, sizeof(err)), BSC_OK);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
    fx->port = ntohs(sin.sin_port);
    assert_int_equal(srv_new(&fx->loop, fd, &fx->lim, handler, fx, &fx->srv), BSC_OK);
    srv_set_error_body(fx->srv, dialect_openai_srv_error);
    if (fx->head_check)
        srv_set_head_check(fx->srv, head_refuse);
    assert_int_equal(pthread_create(&fx->thread, NULL, loop_main, fx), 0);
    fx->started = true;
}

static void on_closed(struct srv *srv, void *ud)
{
    struct fx *fx = ud;

    assert_ptr_equal(srv, fx->srv);
    assert_int_equal(srv_conn_count(srv), 0);
    srv_free(srv);
    fx->srv = NULL;
    atomic_fetch_add(&fx->n_closed, 1);
}

static void close_fx_handles(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static void call_stop(struct fx *fx)
{
    if (fx->srv)
        srv_close_all(fx->srv, on_closed, fx);
}

static void call_finish(struct fx *fx)
{
    uv_walk(&fx->loop, close_fx_handles, NULL);
}

static int setup(void **state)
{
    struct fx *fx = calloc(1, sizeof(*fx));

    if (!fx)
        return -1;
    pthread_mutex_init(&fx->mu, NULL);
    pthread_cond_init(&fx->cv, NULL);
    fx->lim = (struct srv_limits){
        .max_body_bytes = 1 << 20,
        .max_header_bytes = 16384,
        .header_timeout_ms = 5000,
        .idle_timeout_ms = 5000,
        .max_connections = 100,
        .max_pending_output = 64 * 1024,
    };
    *state = fx;
    return 0;
}

static void wait_until(atomic_int *v, int want, int ms);
static void cl_close(struct client *cl);

static int teardown(void **state)
{
    struct fx *fx = *state;

    for (int i = 0; i < MAX_CLIENTS; i++)
        if (fx->clients[i])
            cl_close(fx->clients[i]);
    if (fx->started) {
        run_on_loop(fx, call_stop);
        wait_until(&fx->n_closed, 1, 3000);
        run_on_loop(fx, call_finish);
        pthread_join(fx->thread, NULL);
        assert_int_equal(uv_loop_close(&fx->loop), 0);
    }
    pthread_cond_destroy(&fx->cv);
    pthread_mutex_destroy(&fx->mu);
    free(fx);
    return 0;
}

static void call_count(struct fx *fx)
{
    atomic_store(&fx->conn_count, fx->srv ? srv_conn_count(fx->srv) : 0);
}

static size_t conn_count(struct fx *fx)
{
    run_on_loop(fx, call_count);
    return atomic_load(&fx->conn_count);
}

static void call_set_limits(struct fx *fx)
{
    srv_set_limits(fx->srv, &fx->new_lim);
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* Waits for <v> to reach <want>, polling; <ms> only bounds a wait for an event that
 * never comes, it is not a guess at how long the event takes. */
static void wait_until_least(atomic_int *v, int want, int ms)
{
    uint64_t t0 = bsc_now_ms();

    while (atomic_load(v) < want && bsc_now_ms() - t0 < (uint64_t)ms)
        sleep_ms(5);
    assert_true(atomic_load(v) >= want);
}

static void wait_until(atomic_int *v, int want, int ms)
{
    wait_until_least(v, want, ms);
    assert_int_equal(atomic_load(v), want);
}

/* ---- the client side, on the test thread ------------------------------------------------- */

struct client {
    struct fx *fx;
    int fd;
    char buf[1 << 16];
    size_t len;
};

struct resp {
    int status;
    int n_hdrs;
    char names[64][64];
    char values[64][256];
    char *body;
    size_t body_len;
    char *raw;
    size_t raw_len;
    bool complete;
    bool head_req;
    bool last_was_value;
};

static int cl_connect_fd(uint16_t port, int rcvbuf)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
    struct timeval tv = {RECV_MS / 1000, (RECV_MS % 1000) * 1000};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (rcvbuf)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* A connected client with <rcvbuf> (0: the default), known to <fx> until cl_close(). */
static struct client *cl_open_rcvbuf(struct fx *fx, int rcvbuf)
{
    struct client *cl = calloc(1, sizeof(*cl));
    int slot = 0;

    assert_non_null(cl);
    while (slot < MAX_CLIENTS && fx->clients[slot])
        slot++;
    if (slot == MAX_CLIENTS)
        free(cl);
    assert_true(slot < MAX_CLIENTS);
    cl->fx = fx;
    fx->clients[slot] = cl;
    cl->fd = cl_connect_fd(fx->port, rcvbuf);
    assert_true(cl->fd >= 0);
    return cl;
}

static struct client *cl_open(struct fx *fx)
{
    return cl_open_rcvbuf(fx, 0);
}

static void cl_close(struct client *cl)
{
    for (int i = 0; i < MAX_CLIENTS; i++)
        if (cl->fx->clients[i] == cl)
            cl->fx->clients[i] = NULL;
    if (cl->fd >= 0)
        close(cl->fd);
    free(cl);
}

static void grow_append(char **p, size_t *len, const char *at, size_t n)
{
    char *q = realloc(*p, *len + n + 1);

    assert_non_null(q);
    memcpy(q + *len, at, n);
    *len += n;
    q[*len] = '\0';
    *p = q;
}

/* HTTP/1.1 requires Host (the server answers 400 without one), and most requests here are
 * not about Host: an HTTP/1.1 request line sent without a Host among the header lines that
 * follow it in the same send gets "Host: x" inserted after it. Returns a new buffer (or
 * NULL when nothing was inserted) and its length in *<out_n>. */
static char *with_host(const char *p, size_t n, size_t *out_n)
{
    static const char line_end[] = "HTTP/1.1\r\n", host[] = "Host: x\r\n";
    char *out = NULL;
    size_t len = 0, from = 0;

    for (size_t i = 0; i + sizeof(line_end) - 1 <= n; i++) {
        const char *end, *q;

        if (memcmp(p + i, line_end, sizeof(line_end) - 1) != 0)
            continue;
        i += sizeof(line_end) - 1;
        end = memmem(p + i, n - i, "\r\n\r\n", 4);
        end = end ? end + 2 : p + n;
        for (q = p + i; q && q < end; q = q ? q + 1 : NULL) {
            if (end - q >= 5 && strncasecmp(q, "host:", 5) == 0)
                break;
            q = memchr(q, '\n', (size_t)(end - q));
        }
        if (q && q < end)
            continue; /* it has one */
        grow_append(&out, &len, p + from, i - from);
        grow_append(&out, &len, host, sizeof(host) - 1);
        from = i;
    }
    if (!out)
        return NULL;
    grow_append(&out, &len, p + from, n - from);
    *out_n = len;
    return out;
}

static void cl_send(struct client *cl, const void *p, size_t n)
{
    char *copy = with_host(p, n, &n);
    const char *s = copy ? copy : p;

    while (n) {
        ssize_t k = send(cl->fd, s, n, MSG_NOSIGNAL);

        assert_true(k > 0);
        s += k;
        n -= (size_t)k;
    }
    free(copy);
}

static void cl_sends(struct client *cl, const char *s)
{
    cl_send(cl, s, strlen(s));
}

static void resp_free(struct resp *r)
{
    free(r->body);
    free(r->raw);
    memset(r, 0, sizeof(*r));
}

static int rp_field(http_parser *p, const char *at, size_t n)
{
    struct resp *r = p->data;

    if (r->last_was_value || r->n_hdrs == 0) {
        if (r->n_hdrs == 64)
            return 1;
        r->n_hdrs++;
        r->names[r->n_hdrs - 1][0] = '\0';
        r->values[r->n_hdrs - 1][0] = '\0';
    }
    r->last_was_value = false;
    strncat(r->names[r->n_hdrs - 1], at, n < 63 ? n : 63);
    return 0;
}

static int rp_value(http_parser *p, const char *at, size_t n)
{
    struct resp *r = p->data;

    r->last_was_value = true;
    strncat(r->values[r->n_hdrs - 1], at, n < 255 ? n : 255);
    return 0;
}

static int rp_headers_done(http_parser *p)
{
    struct resp *r = p->data;

    r->status = (int)p->status_code;
    return r->head_req ? 1 : 0;
}

static int rp_body(http_parser *p, const char *at, size_t n)
{
    struct resp *r = p->data;

    grow_append(&r->body, &r->body_len, at, n);
    return 0;
}

static int rp_done(http_parser *p)
{
    struct resp *r = p->data;

    r->complete = true;
    http_parser_pause(p, 1);
    return 0;
}

static const http_parser_settings rp_settings = {
    .on_header_field = rp_field,
    .on_header_value = rp_value,
    .on_headers_complete = rp_headers_done,
    .on_body = rp_body,
    .on_message_complete = rp_done,
};

/* Reads one response. Returns 0, or -1 on EOF/timeout/parse error before it completed. */
static int cl_read(struct client *cl, struct resp *r, bool head_req)
{
    http_parser p;

    memset(r, 0, sizeof(*r));
    r->head_req = head_req;
    http_parser_init(&p, HTTP_RESPONSE);
    p.data = r;
    for (;;) {
        size_t used;

        if (cl->len == 0) {
            ssize_t k = recv(cl->fd, cl->buf, sizeof(cl->buf), 0);

            if (k <= 0) {
                if (k == 0)
                    http_parser_execute(&p, &rp_settings, NULL, 0); /* EOF ends a body */
                return r->complete ? 0 : -1;
            }
            cl->len = (size_t)k;
        }
        used = http_parser_execute(&p, &rp_settings, cl->buf, cl->len);
        grow_append(&r->raw, &r->raw_len, cl->buf, used);
        memmove(cl->buf, cl->buf + used, cl->len - used);
        cl->len -= used;
        if (r->complete)
            return 0;
        if (HTTP_PARSER_ERRNO(&p) != HPE_OK)
            return -1;
    }
}

static const char *hdr(const struct resp *r, const char *name)
{
    for (int i = 0; i < r->n_hdrs; i++)
        if (strcasecmp(r->names[i], name) == 0)
            return r->values[i];
    return NULL;
}

static int hdr_count(const struct resp *r, const char *name)
{
    int n = 0;

    for (int i = 0; i < r->n_hdrs; i++)
        n += strcasecmp(r->names[i], name) == 0;
    return n;
}

/* Waits for the server to close: 0 on FIN, or -errno (e.g. -ECONNRESET). No data allowed. */
static int cl_wait_close(struct client *cl)
{
    char tmp[256];
    ssize_t k;

    assert_int_equal(cl->len, 0);
    k = recv(cl->fd, tmp, sizeof(tmp), 0);
    if (k > 0)
        fail_msg("unexpected %zd bytes: %.*s", k, (int)k, tmp);
    return k == 0 ? 0 : -errno;
}

/* One request on a fresh connection, one response. */
static void roundtrip(struct fx *fx, const char *req, struct resp *r)
{
    struct client *cl = cl_open(fx);

    cl_sends(cl, req);
    assert_int_equal(cl_read(cl, r, false), 0);
    cl_close(cl);
}

/* Whether the response's bytes begin with <prefix> (the status line, byte for byte). */
static bool raw_starts(const struct resp *r, const char *prefix)
{
    return r->raw && r->raw_len >= strlen(prefix) && memcmp(r->raw, prefix, strlen(prefix)) == 0;
}

static void check_error_json(const struct resp *r, int status, const char *type, const char *code)
{
    json_object *root, *err, *v;

    assert_int_equal(r->status, status);
    assert_string_equal(hdr(r, "content-type"), "application/json");
    assert_non_null(hdr(r, "x-request-id"));
    root = json_tokener_parse(r->body);
    assert_non_null(root);
    assert_true(json_object_object_get_ex(root, "error", &err));
    assert_true(json_object_object_get_ex(err, "message", &v));
    assert_true(json_object_is_type(v, json_type_string));
    assert_true(json_object_object_get_ex(err, "type", &v));
    assert_string_equal(json_object_get_string(v), type);
    assert_true(json_object_object_get_ex(err, "param", &v));
    assert_null(v);
    assert_true(json_object_object_get_ex(err, "code", &v));
    assert_string_equal(json_object_get_string(v), code);
    assert_true(json_object_object_get_ex(root, "request_id", &v));
    assert_string_equal(json_object_get_string(v), hdr(r, "x-request-id"));
    json_object_put(root);
}

static uint64_t ms_since(uint64_t t0)
{
    return bsc_now_ms() - t0;
}

/* ---- tests ------------------------------------------------------------------------------- */

static void test_get_and_post(void **state)
{
    struct fx *fx = *state;
    struct resp r;

    fx_start(fx);
    roundtrip(fx, "GET /echo?a=1&b=2#frag HTTP/1.1\r\nHost: x\r\nX-Test:  hi  \r\n\r\n", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "GET /echo q=a=1&b=2 n=0 t=hi b=");
    assert_string_equal(hdr(&r, "server"), "bascule");
    assert_string_equal(hdr(&r, "connection"), "keep-alive");
    assert_string_equal(hdr(&r, "content-type"), "text/plain");
    assert_int_equal(atoll(hdr(&r, "content-length")), (long long)r.body_len);
    assert_non_null(hdr(&r, "date"));
    assert_true(strstr(hdr(&r, "date"), " GMT") != NULL);
    assert_int_equal(strncmp(hdr(&r, "x-request-id"), "req_", 4), 0);
    resp_free(&r);

    roundtrip(fx, "POST /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "POST /echo q= n=5 t= b=hello");
    resp_free(&r);

    roundtrip(fx, "GET http://example.com/abs/p?z=9 HTTP/1.1\r\n\r\n", &r);
    assert_string_equal(r.body, "GET /abs/p q=z=9 n=0 t= b=");
    resp_free(&r);
    assert_int_equal(atomic_load(&fx->n_req), 3);
}

static void test_keepalive(void **state)
{
    struct fx *fx = *state;
    struct client *cl;
    struct resp r;

    fx_start(fx);
    cl = cl_open(fx);
    for (int i = 0; i < 3; i++) {
        cl_sends(cl, "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_int_equal(cl_read(cl, &r, false), 0);
        assert_int_equal(r.status, 200);
        assert_string_equal(hdr(&r, "connection"), "keep-alive");
        resp_free(&r);
    }
    assert_int_equal(conn_count(fx), 1);
    /* Connection: close from the client: answered, then closed. */
    cl_sends(cl, "GET /echo HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert_int_equal(cl_read(cl, &r, false), 0);
    assert_string_equal(hdr(&r, "connection"), "close");
    resp_free(&r);
    assert_int_equal(cl_wait_close(cl), 0);
    cl_close(cl);
    /* The handler asks to close. */
    cl = cl_open(fx);
    cl_sends(cl, "GET /close HTTP/1.1\r\n\r\n");
    assert_int_equal(cl_read(cl, &r, false), 0);
    assert_string_equal(hdr(&r, "connection"), "close");
    resp_free(&r);
    assert_int_equal(cl_wait_close(cl), 0);
    cl_close(cl);
}

static void test_http10(void **state)
{
    struct fx *fx = *state;
    struct client *cl;
    struct resp r;

    fx_start(fx);
    cl = cl_open(fx);
    cl_sends(cl, "GET /echo HTTP/1.0\r\n\r\n");
    assert_int_equal(cl_read(cl, &r, false), 0);
    assert_string_equal(hdr(&r, "connection"), "close");
    resp_free(&r);
    assert_int_equal(cl_wait_close(cl), 0);
    cl_close(cl);

    cl = cl_open(fx);
    for (int i = 0; i < 2; i++) {
        cl_sends(cl, "GET /echo HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        assert_int_equal(cl_read(cl, &r, false), 0);
        assert_string_equal(hdr(&r, "connection"), "keep-alive");
        resp_free(&r);
    }
    /* No chunked for HTTP/1.0: the body ends with the connection. */
    cl_sends(cl, "GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert_int_equal(cl_read(cl, &r, false), 0);
    assert_null(hdr(&r, "transfer-encoding"));
    assert_null(hdr(&r, "content-length"));
    assert_string_equal(hdr(&r, "connection"), "close");
    assert_string_equal(r.body, "chunk-0\nchunk-1\nchunk-2\nchunk-3\nchunk-4\n");
    resp_free(&r);
    cl_close(cl);
}

static void test_head_and_bodyless(void **state)
{
    struct fx *fx = *state;
    struct client *cl;
    struct resp r;

    fx_start(fx);
    cl = cl_open(fx);
    cl_sends(cl, "HEAD /echo HTTP/1.1\r\n\r\n");
    assert_int_equal(cl_read(cl, &r, true), 0);
    assert_int_equal(r.status, 200);
    assert_string_equal(hdr(&r, "content-length"), "23"); /* "HEAD /echo q= n=0 t= b=" */
    assert_int_equal(r.body_len, 0);
    resp_free(&r);
    cl_sends(cl, "GET /empty HTTP/1.1\r\n\r\n");
    assert_int_equal(cl_read(cl, &r, false), 0);
    assert_int_equal(r.status, 204);
    assert_null(hdr(&r, "content-length"));
    assert_null(hdr(&r, "transfer-encoding"));
    resp_free(&r);
    /* Still in step: no stray body bytes were sent. */
    cl_sends(cl, "GET /echo HTTP/1.1\r\n\r\n");
    assert_int_equal(cl_read(cl, &r, false), 0);
    assert_string_equal(r.body, "GET /echo q= n=0 t= b=");
    resp_free(&r);
    cl_close(cl);
}

static void test_chunked_request(void **state)
{
    struct fx *fx = *state;
    struct client *cl;
    struct resp r;

    fx_start(fx);
    cl = cl_open(fx);
    cl_sends(cl, "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhel");
    sleep_ms(20);
    cl_sends(cl, "lo\r\n6\r\n world\r\n");
    sleep_ms(20);
    cl_sends(cl, "0\r\nX-Trailer: t\r\n\r\n");
    assert_int_equal(cl_read(cl, &r, false), 0);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "POST /echo q= n=11 t= b=hello world");
    resp_free(&r);
    cl_close(cl);
}

static void test_pipelined(void **state)
{
    struct fx *fx = *state;
    struct client *cl;
    struct resp r;

    fx_start(fx);
    cl = cl_open(fx);
    /* The first is answered 100 ms later; the others must wait their turn. */
    cl_sends(cl, "GET /slow?1 HTTP/1.1\r\n\r\n"
                 "POST /echo?2 HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
                 "POST /echo?3 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nxy\r\n0\r\n\r\n"
                 "GET /echo?4 HTTP/1.1\r\n\r\n");
    assert_int_equal(cl_read(cl, &r, false), 0);
    assert_string_equal(r.body, "GET /slow q=1 n=0 t= b=");
    resp_free(&r);
    assert_int_equal(cl_read(cl, &r, false), 0);
    assert_string_equal(r.body, "POST /echo q=2 n=3 t= b=abc");
    resp_free(&r);
    assert_int_equal(cl_read(cl, &r, false), 0);
    assert_string_equal(r.body, "POST /echo q=3 n=2 t= b=xy");
    resp_free(&r);
    assert_int_equal(cl_read(cl, &r, false), 0);
    assert_string_equal(r.body, "GET /echo q=4 n=0 t= b=");
    resp_free(&r);
    cl_close(cl);
}

static void call_answer_held(struct fx *fx)
{
    if (fx->held)
        echo(fx->held);
    fx->held = NULL;
}

/* The loop naps until the test says go: what the test does meanwhile is all there when
 * epoll is asked next, in the order it was done. */
static void on_nap(uv_async_t *a)
{
    struct fx *fx = a->data;
    struct timespec ts = {0, 1000000};

    atomic_store(&fx->napping, 1);
    while (!atomic_load(&fx->go))
        nanosleep(&ts, NULL);
}

/* Right after the poll phase in which the held request was answered. */
static void on_check(uv_check_t *h)
{
    struct fx *fx = h->data;

    if (atomic_load(&fx->ended) == 1) {
        atomic_store(&fx->n_req_at_check, atomic_load(&fx->n_req));
        atomic_store(&fx->ended, 2);
    }
}

static void call_arm_nap(struct fx *fx)
{
    uv_async_init(&fx->loop, &fx->nap, on_nap);
    uv_check_init(&fx->loop, &fx->check);
    fx->nap.data = fx->check.data = fx;
    uv_check_start(&fx->check, on_check);
}

/* A keep-alive connection's next request that arrives in the same poll phase as the end of
 * the one before is started there, not after the phase: the deferred pass that would start
 * it runs only after every other event of the phase (on a loaded loop, many batches). */
static void test_next_request_at_once(void **state)
{
    struct fx *fx = *state;
    struct client *cl, *other;
    struct resp r;

    fx_start(fx);
    cl = cl_open(fx);
    other = cl_open(fx);
    cl_sends(cl, "GET /hold HTTP/1.1\r\n\r\n");
    wait_until(&fx->n_req, 1, 2000);
    run_on_loop(fx, call_arm_nap);
    uv_async_send(&fx->nap);
    wait_until(&fx->napping, 1, 5000);
    /* While the loop naps: another connection asks for the held request's end, then the
     * next request comes on the first; the next poll reports both, in this order. */
    cl_sends(other, "GET /release HTTP/1.1\r\n\r\n");
    cl_sends(cl, "GET /echo?2 HTTP/1.1\r\n\r\n");
    atomic_store(&fx->go, 1);
    assert_int_equal(cl_read(cl, &r, false), 0);
    assert_string_equal(r.body, "GET /hold q= n=0 t= b=");
    resp_free(&r);
    assert_int_equal(cl_read(cl, &r, false), 0);
    assert_string_equal(r.body, "GET /echo q=2 n=0 t= b=");
    resp_free(&r);
    assert_int_equal(cl_read(other, &r, false), 0);
    resp_free(&r);
    wait_until(&fx->ended, 2, 2000);
    /* /hold, /release and the next request: all three before the phase ended. */
    assert_int_equal(atomic_load(&fx->n_req_at_check), 3);
    cl_close(other);
    cl_close(cl);
}

/* More pipelined input than the backlog holds while a request is held: reading stops,
 * then resumes, and every request is answered in order. */
static void test_pipelined_backpressure(void **state)
{
    struct fx *fx = *state;
    enum { N = 2000 };
    struct client *cl;
    struct resp r;
    char line[64], want[64];

    fx_start(fx);
    cl = cl_open(fx);
    cl_sends(cl, "GET /hold HTTP/1.1\r\n\r\n");
    for (int i = 0; i < N; i++) {
        int n = snprintf(line, sizeof(line), "GET /echo?%d HTTP/1.1\r\nX-Pad: 01234\r\n\r\n",
                         i);

        cl_send(cl, line, (size_t)n);
    }
    wait_until(&fx->n_req, 1, 2000);
    sleep_ms(50);
    assert_int_equal(atomic_load(&fx->n_req), 1); /* nothing else dispatched meanwhile */
    run_on_loop(fx, call_answer_held);
    assert_int_equal(cl_read(cl, &r, false), 0);
    assert_string_equal(r.body, "GET /hold q= n=0 t= b=");
    resp_free(&r);
    for (int i = 0; i < N; i++) {
        assert_int_equal(cl_read(cl, &r, false), 0);
        snprintf(want, sizeof(want), "GET /echo q=%d n=0 t= b=", i);
        assert_string_equal(r.body, want);
        resp_free(&r);
    }
    assert_int_equal(atomic_load(&fx->n_req), N + 1);
    cl_close(cl);
}

static void test_expect_continue(void **state)
{
    struct fx *fx = *state;
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    struct client *cl;
    struct resp r;
    char got[sizeof(cont)] = {0};
    size_t have = 0;

    fx_start(fx);
    cl = cl_open(fx);
    cl_sends(cl, "POST /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
    while (have < sizeof(cont) - 1) {
        ssize_t k = recv(cl->fd, got + have, sizeof(cont) - 1 - have, 0);

        assert_true(k > 0);
        have += (size_t)k;
    }
    assert_string_equal(got, cont);
    cl_sends(cl, "hello");
    assert_int_equal(cl_read(cl, &r, false), 0);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "POST /echo q= n=5 t= b=hello");
    resp_free(&r);
    /* The body already sent with the head: no 100. */
    cl_sends(cl, "POST /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok");
    assert_int_equal(cl_read(cl, &r, false), 0);
    assert_int_equal(r.status, 200);
    resp_free(&r);
    cl_close(cl);
}

static void test_body_limits(void **state)
{
    struct fx *fx = *state;
    struct client *cl;
    struct resp r;
    char req[256];

    fx->lim.max_body_bytes = 16;
    fx_start(fx);
    /* At the limit: fine. */
    roundtrip(fx, "POST /echo HTTP/1.1\r\nContent-Length: 16\r\n\r\n0123456789abcdef", &r);
    assert_int_equal(r.status, 200);
    resp_free(&r);
    /* One over, with Expect: 413 at once, never 100, then the connection closes. */
    cl = cl_open(fx);
    cl_sends(cl, "POST /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 17\r\n\r\n");
    assert_int_equal(cl_read(cl, &r, false), 0);
    check_error_json(&r, 413, "invalid_request_error", "request_too_large");
    assert_string_equal(hdr(&r, "connection"), "close");
    resp_free(&r);
    assert_int_equal(cl_wait_close(cl), 0);
    cl_close(cl);
    /* Chunked: 10 + 6 fits, 10 + 7 does not. */
    roundtrip(fx, "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "a\r\n0123456789\r\n6\r\nabcdef\r\n0\r\n\r\n", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "POST /echo q= n=16 t= b=0123456789abcdef");
    resp_free(&r);
    cl = cl_open(fx);
    snprintf(req, sizeof(req), "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
                               "X-Request-Id: mine-413\r\n\r\na\r\n0123456789\r\n7\r\nabcdefg\r\n");
    cl_sends(cl, req);
    assert_int_equal(cl_read(cl, &r, false), 0);
    check_error_json(&r, 413, "invalid_request_error", "request_too_large");
    assert_string_equal(hdr(&r, "x-request-id"), "mine-413");
    resp_free(&r);
    assert_int_equal(cl_wait_close(cl), 0);
    cl_close(cl);
    assert_int_equal(atomic_load(&fx->n_req), 2);
}

static void test_header_limits(void **state)
{
    struct fx *fx = *state;
    char req[70000], pad[300];
    struct resp r;
    size_t n;

    fx->lim.max_header_bytes = 256;
    fx_start(fx);
    /* "GET /echo HTTP/1.1\r\n" (20) + "Host: x\r\n" (9) + "X-Pad: " (7) + pad + "\r\n" (2)
     * + "\r\n" (2) */
    memset(pad, 'p', sizeof(pad));
    snprintf(req, sizeof(req), "GET /echo HTTP/1.1\r\nHost: x\r\nX-Pad: %.*s\r\n\r\n", 216, pad);
    assert_int_equal(strlen(req), 256);
    roundtrip(fx, req, &r);
    assert_int_equal(r.status, 200);
    resp_free(&r);
    snprintf(req, sizeof(req), "GET /echo HTTP/1.1\r\nHost: x\r\nX-Pad: %.*s\r\n\r\n", 217, pad);
    roundtrip(fx, req, &r);
    check_error_json(&r, 431, "invalid_request_error", "headers_too_large");
    assert_string_equal(hdr(&r, "connection"), "close");
    resp_free(&r);
    /* Too many fields, each small. */
    fx->new_lim = fx->lim;
    fx->new_lim.max_header_bytes = 65536;
    run_on_loop(fx, call_set_limits);
    n = (size_t)snprintf(req, sizeof(req), "GET /echo HTTP/1.1\r\n");
    for (int i = 0; i < 300; i++)
        n += (size_t)snprintf(req + n, sizeof(req) - n, "A%d: b\r\n", i);
    snprintf(req + n, sizeof(req) - n, "\r\n");
    roundtrip(fx, req, &r);
    check_error_json(&r, 431, "invalid_request_error", "headers_too_large");
    resp_free(&r);
    assert_int_equal(atomic_load(&fx->n_req), 1);
}

/* Every t0 is read before the bytes that start the server's timer are sent, so the timer
 * cannot have started before t0, however late either thread runs: the lower bounds hold
 * on a loaded machine (less 20 ms for libuv's coarse loop clock). The sleeps only make
 * the gap a timer must see; the timeouts leave 600 ms for a stalled loop to catch up. */
#define SLOW_TIMEOUT_MS 1000
#define SLOW_SLACK_MS   20

static void test_slow_head_408(void **state)
{
    struct fx *fx = *state;
    struct client *cl;
    struct resp r;
    uint64_t t0;

    fx->lim.header_timeout_ms = SLOW_TIMEOUT_MS;
    fx_start(fx);
    t0 = bsc_now_ms();
    cl = cl_open(fx);
    cl_sends(cl, "GET /echo HTTP/1.1\r\nHost: x\r\n");
    sleep_ms(100);
    cl_sends(cl, "X-More: 1\r\n"); /* progress does not extend the head deadline */
    assert_int_equal(cl_read(cl, &r, false), 0);
    assert_true(ms_since(t0) >= SLOW_TIMEOUT_MS - SLOW_SLACK_MS);
    check_error_json(&r, 408, "invalid_request_error", "request_timeout");
    resp_free(&r);
    assert_int_equal(cl_wait_close(cl), 0);
    cl_close(cl);

    /* A body that stalls; progress starts the stall timer over: the 408 comes a whole
     * timeout after the last bytes, not 400 ms earlier as it would from the first ones. */
    cl = cl_open(fx);
    cl_sends(cl, "POST /echo HTTP/1.1\r\nContent-Length: 10\r\n\r\n012");
    sleep_ms(400);
    t0 = bsc_now_ms();
    cl_sends(cl, "34");
    assert_int_equal(cl_read(cl, &r, false), 0);
    assert_true(ms_since(t0) >= SLOW_TIMEOUT_MS - SLOW_SLACK_MS);
    check_error_json(&r, 408, "invalid_request_error", "request_timeout");
    resp_free(&r);
    cl_close(cl);

    /* A connection that never sends is closed silently. */
    t0 = bsc_now_ms();
    cl = cl_open(fx);
    assert_int_equal(cl_wait_close(cl), 0);
    assert_true(ms_since(t0) >= SLOW_TIMEOUT_MS - SLOW_SLACK_MS);
    cl_close(cl);
    assert_int_equal(atomic_load(&fx->n_req), 0);
}

static void test_idle_close(void **state)
{
    struct fx *fx = *state;
    struct client *cl;
    struct resp r;
    uint64_t t0;

    fx->lim.idle_timeout_ms = 200;
    fx_start(fx);
    cl = cl_open(fx);
    t0 = bsc_now_ms(); /* before the request: the idle timer starts after its response */
    cl_sends(cl, "GET /echo HTTP/1.1\r\n\r\n");
    assert_int_equal(cl_read(cl, &r, false), 0);
    resp_free(&r);
    assert_int_equal(cl_wait_close(cl), 0);
    assert_true(ms_since(t0) >= 200 - SLOW_SLACK_MS);
    assert_true(ms_since(t0) < 4000); /* closed by the idle timer, not the 5 s default */
    cl_close(cl);
}

/* Starts a request whose body the server then awaits: once the 100 Continue is read, the
 * connection is surely busy, not idle (an idle one may be closed to make room). */
static void start_body(struct client *cl)
{
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    char got[sizeof(cont)] = {0};
    size_t have = 0;

    cl_sends(cl, "POST /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
    while (have < sizeof(cont) - 1) {
        ssize_t k = recv(cl->fd, got + have, sizeof(cont) - 1 - have, 0);

        assert_true(k > 0);
        have += (size_t)k;
    }
    assert_string_equal(got, cont);
}

/* A head whose body is still to come is shown to the head check before any body byte is
 * read and before a 100 Continue: refused, it is answered with Connection: close and the
 * connection closes without waiting for the body. Passed, the body is read as usual and
 * what the check added to the response is gone. A request that arrives whole is left to
 * the handler. */
static void test_head_check(void **state)
{
    struct fx *fx = *state;
    struct client *cl;
    struct resp r;

    fx->head_check = true;
    fx_start(fx);
    cl = cl_open(fx);
    cl_sends(cl, "POST /echo HTTP/1.1\r\nx-deny: 1\r\nExpect: 100-continue\r\n"
                 "Content-Length: 5\r\n\r\n");
    assert_int_equal(cl_read(cl, &r, false), 0);
    check_error_json(&r, 401, "invalid_request_error", "invalid_api_key");
    assert_string_equal(hdr(&r, "connection"), "close");
    resp_free(&r);
    assert_int_equal(cl_wait_close(cl), 0); /* no body sent, yet closed */
    cl_close(cl);
    assert_int_equal(atomic_load(&fx->n_head), 1);
    assert_int_equal(atomic_load(&fx->n_req), 0);

    cl = cl_open(fx);
    start_body(cl);
    cl_sends(cl, "hello");
    assert_int_equal(cl_read(cl, &r, false), 0);
    assert_int_equal(r.status, 200);
    assert_null(hdr(&r, "x-from-head"));
    assert_string_equal(hdr(&r, "connection"), "keep-alive");
    resp_free(&r);
    cl_close(cl);
    assert_int_equal(atomic_load(&fx->n_head), 2);

    roundtrip(fx, "POST /echo HTTP/1.1\r\nx-deny: 1\r\nContent-Length: 2\r\n\r\nok", &r);
    assert_int_equal(r.status, 200);
    resp_free(&r);
    assert_int_equal(atomic_load(&fx->n_head), 2);
    assert_int_equal(atomic_load(&fx->n_req), 2);
}

/* At the cap with no connection that may give way (cap.c: none lingers, receives or idles;
 * the one there is with the handler), a new connection gets the 503 and is closed. */
static void test_connection_cap(void **state)
{
    struct fx *fx = *state;
    struct client *a, *c, *d;
    struct resp r;

    fx->lim.max_connections = 1;
    fx_start(fx);
    a = cl_open(fx);
    cl_sends(a, "GET /hold HTTP/1.1\r\n\r\n");
    wait_until(&fx->n_req, 1, 2000);
    c = cl_open(fx);
    cl_sends(c, "GET /echo HTTP/1.1\r\n\r\n");
    assert_int_equal(cl_read(c, &r, false), 0);
    check_error_json(&r, 503, "server_error", "too_many_connections");
    assert_string_equal(hdr(&r, "connection"), "close");
    resp_free(&r);
    assert_int_equal(cl_wait_close(c), 0);
    cl_close(c);
    /* Once a slot frees, new connections are served again. */
    cl_close(a);
    wait_until(&fx->n_abort, 1, 2000);
    for (int i = 0; i < 200 && conn_count(fx) > 0; i++)
        sleep_ms(5);
    assert_int_equal(conn_count(fx), 0);
    d = cl_open(fx);
    cl_sends(d, "GET /echo HTTP/1.1\r\n\r\n");
    assert_int_equal(cl_read(d, &r, false), 0);
    assert_int_equal(r.status, 200);
    resp_free(&r);
    cl_close(d);
}

static void test_malformed(void **state)
{
    struct fx *fx = *state;
    struct client *cl;
    struct resp r;

    fx_start(fx);
    cl = cl_open(fx);
    cl_sends(cl, "GARBAGE\r\n\r\n");
    assert_int_equal(cl_read(cl, &r, false), 0);
    check_error_json(&r, 400, "invalid_request_error", "bad_request");
    assert_string_equal(hdr(&r, "connection"), "close");
    resp_free(&r);
    assert_int_equal(cl_wait_close(cl), 0);
    cl_close(cl);
    /* Content-Length with chunked: a smuggling shape, refused. */
    roundtrip(fx, "POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "0\r\n\r\n", &r);
    check_error_json(&r, 400, "invalid_request_error", "bad_request");
    resp_free(&r);
    roundtrip(fx, "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", &r);
    check_error_json(&r, 501, "server_error", "not_implemented");
    resp_free(&r);
    roundtrip(fx, "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", &r);
    check_error_json(&r, 501, "server_error", "not_implemented");
    resp_free(&r);
    roundtrip(fx, "GET / HTTP/1.1\r\nBad Header: x\r\n\r\n", &r);
    check_error_json(&r, 400, "invalid_request_error", "bad_request");
    resp_free(&r);
    /* A good request, then garbage: the first is answered, then 400. */
    cl = cl_open(fx);
    cl_sends(cl, "GET /echo HTTP/1.1\r\n\r\nGET / HTTP/9\r\n\r\n");
    assert_int_equal(cl_read(cl, &r, false), 0);
    assert_int_equal(r.status, 200);
    resp_free(&r);
    assert_int_equal(cl_read(cl, &r, false), 0);
    assert_int_equal(r.status, 400);
    resp_free(&r);
    cl_close(cl);
    assert_int_equal(atomic_load(&fx->n_req), 1);
}

static void test_abort_on_disconnect(void **state)
{
    struct fx *fx = *state;
    struct client *cl;
    struct resp r;

    fx_start(fx);
    cl = cl_open(fx);
    cl_sends(cl, "GET /hold HTTP/1.1\r\n\r\n");
    wait_until(&fx->n_req, 1, 2000);
    cl_close(cl);
    wait_until(&fx->n_abort, 1, 2000);
    /* Half-close after a complete request counts as going away too. */
    cl = cl_open(fx);
    cl_sends(cl, "GET /hold HTTP/1.1\r\n\r\n");
    wait_until(&fx->n_req, 2, 2000);
    shutdown(cl->fd, SHUT_WR);
    wait_until(&fx->n_abort, 2, 2000);
    cl_close(cl);
    /* A response that ended is never aborted afterwards. */
    cl = cl_open(fx);
    cl_sends(cl, "GET /hold HTTP/1.1\r\n\r\n");
    wait_until(&fx->n_req, 3, 2000);
    run_on_loop(fx, call_answer_held);
    assert_int_equal(cl_read(cl, &r, false), 0);
    assert_int_equal(r.status, 200);
    resp_free(&r);
    cl_close(cl);
    sleep_ms(100);
    assert_int_equal(atomic_load(&fx->n_abort), 2);
    /* A deferred response whose client left is aborted, and its timer never fires. */
    cl = cl_open(fx);
    cl_sends(cl, "GET /slow HTTP/1.1\r\n\r\n");
    wait_until(&fx->n_req, 4, 2000);
    cl_close(cl);
    wait_until(&fx->n_abort, 3, 2000);
}

static void test_drain_callback(void **state)
{
    struct fx *fx = *state;
    struct client *cl;
    struct resp r;

    fx->lim.max_pending_output = 64 * 1024;
    fx_start(fx);
    cl = cl_open_rcvbuf(fx, 32 * 1024);
    cl_sends(cl, "GET /big HTTP/1.1\r\n\r\n");
    /* Nothing is read until the socket buffers are full and the handler waits for drain. */
    wait_until_least(&fx->n_wait_drain, 1, 5000);
    assert_int_equal(cl_read(cl, &r, false), 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_len, BIG_TOTAL);
    for (size_t i = 0; i < BIG_TOTAL; i += BIG_CHUNK)
        assert_int_equal(r.body[i], 'a' + (int)(i / BIG_CHUNK % 26));
    resp_free(&r);
    assert_true(atomic_load(&fx->n_drain) >= 1);
    /* The handler never queued more than the limit plus one chunk and its framing. */
    assert_true(atomic_load(&fx->max_pending) <= fx->lim.max_pending_output + BIG_CHUNK + 64);
    cl_close(cl);
}

static void test_chunked_response(void **state)
{
    struct fx *fx = *state;
    struct resp r;

    fx_start(fx);
    roundtrip(fx, "GET /stream HTTP/1.1\r\n\r\n", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(hdr(&r, "transfer-encoding"), "chunked");
    assert_null(hdr(&r, "content-length"));
    assert_string_equal(r.body, "chunk-0\nchunk-1\nchunk-2\nchunk-3\nchunk-4\n");
    assert_non_null(strstr(r.raw, "\r\n\r\n8\r\nchunk-0\n\r\n8\r\nchunk-1\n\r\n"));
    assert_int_equal(strcmp(r.raw + r.raw_len - 15, "chunk-4\n\r\n0\r\n\r\n"), 0);
    resp_free(&r);
}

static void test_stream_writes_at_once(void **state)
{
    struct fx *fx = *state;
    struct resp r;

    fx_start(fx);
    roundtrip(fx, "GET /now HTTP/1.1\r\n\r\n", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "queued,now,last");
    /* The head and the first chunk were still queued after srv_resp_body; srv_resp_stream
     * handed everything to the socket before returning. */
    assert_true(atomic_load(&fx->pending_after_body) > 7);
    assert_int_equal(atomic_load(&fx->pending_after_stream), 0);
    resp_free(&r);
}

static void test_stream_direct_and_rest(void **state)
{
    struct fx *fx = *state;
    struct client *cl;
    struct resp r;
    char framing[96];

    fx_start(fx);
    cl = cl_open_rcvbuf(fx, 32 * 1024);
    cl_sends(cl, "GET /direct HTTP/1.1\r\n\r\n");
    wait_until_least(&fx->n_req, 1, 5000);
    assert_int_equal(cl_read(cl, &r, false), 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_len, 13 + direct_big());
    assert_int_equal(memcmp(r.body, "first,second,", 13), 0);
    for (size_t i = 13; i < r.body_len; i++)
        if (r.body[i] != 'z')
            fail_msg("byte %zu of the body is %d", i, r.body[i]);
    /* Chunk framing intact around the direct write and the queued rest. */
    snprintf(framing, sizeof(framing), "\r\n\r\n6\r\nfirst,\r\n7\r\nsecond,\r\n%zx\r\nzzz", direct_big());
    assert_non_null(strstr(r.raw, framing));
    assert_int_equal(strcmp(r.raw + r.raw_len - 10, "zzz\r\n0\r\n\r\n"), 0);
    assert_int_equal(atomic_load(&fx->pending_after_body), 0);
    assert_true(atomic_load(&fx->pending_after_stream) > 0);
    resp_free(&r);
    cl_close(cl);
}

static void test_error_json_and_ids(void **state)
{
    struct fx *fx = *state;
    char req[512], id[200];
    json_object *root, *err, *v;
    struct resp r;

    fx_start(fx);
    roundtrip(fx, "GET /error HTTP/1.1\r\nX-Request-Id: client-id-1\r\n\r\n", &r);
    check_error_json(&r, 429, "invalid_request_error", "rate_limit_exceeded");
    assert_true(raw_starts(&r, "HTTP/1.1 429 Too Many Requests\r\n"));
    assert_string_equal(hdr(&r, "x-request-id"), "client-id-1");
    assert_string_equal(hdr(&r, "connection"), "keep-alive"); /* a handler error keeps it */
    root = json_tokener_parse(r.body);
    assert_true(json_object_object_get_ex(root, "error", &err));
    assert_true(json_object_object_get_ex(err, "message", &v));
    assert_string_equal(json_object_get_string(v), "slow \"down\"\n");
    json_object_put(root);
    resp_free(&r);
    /* No code: JSON null, and a 5xx is a server_error. */
    roundtrip(fx, "GET /error-null HTTP/1.1\r\n\r\n", &r);
    assert_int_equal(r.status, 502);
    assert_true(raw_starts(&r, "HTTP/1.1 502 Bad Gateway\r\n"));
    root = json_tokener_parse(r.body);
    assert_non_null(root);
    assert_true(json_object_object_get_ex(root, "error", &err));
    assert_true(json_object_object_get_ex(err, "code", &v));
    assert_null(v);
    assert_true(json_object_object_get_ex(err, "type", &v));
    assert_string_equal(json_object_get_string(v), "server_error");
    json_object_put(root);
    resp_free(&r);
    /* 128 printable chars are kept; 129 are not. */
    memset(id, 'i', sizeof(id));
    snprintf(req, sizeof(req), "GET /echo HTTP/1.1\r\nX-Request-Id: %.*s\r\n\r\n", 128, id);
    roundtrip(fx, req, &r);
    assert_int_equal(strlen(hdr(&r, "x-request-id")), 128);
    resp_free(&r);
    snprintf(req, sizeof(req), "GET /echo HTTP/1.1\r\nX-Request-Id: %.*s\r\n\r\n", 129, id);
    roundtrip(fx, req, &r);
    assert_int_equal(strncmp(hdr(&r, "x-request-id"), "req_", 4), 0);
    assert_int_equal(strlen(hdr(&r, "x-request-id")), 24);
    resp_free(&r);
    roundtrip(fx, "GET /echo HTTP/1.1\r\nX-Request-Id: a\x7f" "b\r\n\r\n", &r);
    assert_int_equal(strncmp(hdr(&r, "x-request-id"), "req_", 4), 0);
    resp_free(&r);
    /* The handler's own x-request-id wins; unsafe headers are dropped. */
    roundtrip(fx, "GET /headers HTTP/1.1\r\n\r\n", &r);
    assert_true(raw_starts(&r, "HTTP/1.1 200 OK\r\n"));
    assert_non_null(strstr(r.raw, "\r\nX-Request-Id: mine\r\nX-Good: yes\r\n"));
    assert_int_equal(hdr_count(&r, "x-request-id"), 1);
    assert_string_equal(hdr(&r, "x-request-id"), "mine");
    assert_string_equal(hdr(&r, "connection"), "keep-alive");
    assert_int_equal(hdr_count(&r, "connection"), 1);
    assert_null(hdr(&r, "x-custom"));
    assert_null(hdr(&r, "injected"));
    assert_string_equal(hdr(&r, "x-good"), "yes");
    resp_free(&r);
}

static void test_handler_mistakes(void **state)
{
    struct fx *fx = *state;
    struct client *cl;
    struct resp r;

    fx_start(fx);
    /* Ending without a head: 500. */
    roundtrip(fx, "GET /noresp HTTP/1.1\r\n\r\n", &r);
    check_error_json(&r, 500, "server_error", "internal_error");
    resp_free(&r);
    /* Ending short of the Content-Length: the connection closes so nothing looks whole. */
    cl = cl_open(fx);
    cl_sends(cl, "GET /short HTTP/1.1\r\n\r\n");
    assert_int_equal(cl_read(cl, &r, false), -1);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_len, 5);
    resp_free(&r);
    cl_close(cl);
}

static void test_reset_and_abort(void **state)
{
    struct fx *fx = *state;
    struct client *cl;
    struct resp r;

    fx_start(fx);
    cl = cl_open(fx);
    cl_sends(cl, "GET /reset HTTP/1.1\r\n\r\n");
    assert_int_equal(cl_wait_close(cl), -ECONNRESET);
    cl_close(cl);
    /* An aborted stream ends with the connection, without the last chunk. */
    cl = cl_open(fx);
    cl_sends(cl, "GET /abort HTTP/1.1\r\n\r\n");
    assert_int_equal(cl_read(cl, &r, false), -1);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "partial");
    /* the stream stops right after the chunk: no terminal "0\r\n\r\n" */
    assert_true(r.raw_len > 16);
    assert_string_equal(r.raw + r.raw_len - 16, "\r\n\r\n7\r\npartial\r\n");
    resp_free(&r);
    cl_close(cl);
    assert_int_equal(atomic_load(&fx->n_abort), 0);
}

static void call_drain(struct fx *fx)
{
    srv_drain(fx->srv, on_closed, fx);
}

static void test_srv_drain(void **state)
{
    struct fx *fx = *state;
    struct client *busy, *idle;
    struct resp r;
    int fd;

    fx_start(fx);
    busy = cl_open(fx);
    idle = cl_open(fx);
    cl_sends(idle, "GET /echo HTTP/1.1\r\n\r\n");
    assert_int_equal(cl_read(idle, &r, false), 0);
    resp_free(&r);
    cl_sends(busy, "GET /hold HTTP/1.1\r\n\r\n");
    wait_until(&fx->n_req, 2, 2000);
    run_on_loop(fx, call_drain);
    /* No longer accepting from the moment srv_drain() returned: the kernel refuses. */
    fd = cl_connect_fd(fx->port, 0);
    if (fd >= 0)
        close(fd);
    assert_int_equal(fd, -1);
    assert_int_equal(cl_wait_close(idle), 0); /* idle: closed at once */
    assert_int_equal(atomic_load(&fx->n_closed), 0);
    run_on_loop(fx, call_answer_held);
    assert_int_equal(cl_read(busy, &r, false), 0);
    assert_int_equal(r.status, 200);
    assert_string_equal(hdr(&r, "connection"), "close");
    resp_free(&r);
    assert_int_equal(cl_wait_close(busy), 0);
    cl_close(busy);
    cl_close(idle);
    wait_until(&fx->n_closed, 1, 3000);
    assert_int_equal(atomic_load(&fx->n_abort), 0);
}

static void test_close_all(void **state)
{
    struct fx *fx = *state;
    struct client *cl;

    fx_start(fx);
    cl = cl_open(fx);
    cl_sends(cl, "GET /hold HTTP/1.1\r\n\r\n");
    wait_until(&fx->n_req, 1, 2000);
    run_on_loop(fx, call_stop);
    wait_until(&fx->n_abort, 1, 2000);
    wait_until(&fx->n_closed, 1, 2000);
    assert_true(cl_wait_close(cl) <= 0);
    cl_close(cl);
}

static void test_set_limits(void **state)
{
    struct fx *fx = *state;
    struct resp r;

    fx_start(fx);
    roundtrip(fx, "POST /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", &r);
    assert_int_equal(r.status, 200);
    resp_free(&r);
    fx->new_lim = fx->lim;
    fx->new_lim.max_body_bytes = 4;
    run_on_loop(fx, call_set_limits);
    roundtrip(fx, "POST /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", &r);
    check_error_json(&r, 413, "invalid_request_error", "request_too_large");
    resp_free(&r);
}

static void test_listen_socket(void **state)
{
    char err[256] = "";
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);
    int a = -1, b = -1;

    (void)state;
    assert_int_equal(srv_listen_socket("localhost", 0, &a, err, sizeof(err)), BSC_EIO);
    assert_non_null(strstr(err, "localhost"));
    assert_int_equal(srv_listen_socket("127.0.0.1", 0, &a, err, sizeof(err)), BSC_OK);
    assert_int_equal(getsockname(a, (struct sockaddr *)&sin, &len), 0);
    /* SO_REUSEPORT: a second worker binds the same port. */
    assert_int_equal(srv_listen_socket("127.0.0.1", ntohs(sin.sin_port), &b, err, sizeof(err)),
                     BSC_OK);
    close(b);
    close(a);
    if (srv_listen_socket("[::1]", 0, &a, err, sizeof(err)) == BSC_OK) /* IPv6 may be off */
        close(a);
    else
        assert_non_null(strstr(err, "::1"));
}

static uint16_t port_of(int fd)
{
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);

    assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
    return ntohs(sin.sin_port);
}

/* A process's first socket refuses an address another socket listens on -- a second
 * gateway must not join the first one's SO_REUSEPORT group -- while its workers join. */
static void test_listen_first(void **state)
{
    char err[256] = "";
    uint16_t port;
    int a = -1, b = -1, c = -1;

    (void)state;
    assert_int_equal(srv_listen_first("127.0.0.1", 0, &a, err, sizeof(err)), BSC_OK);
    port = port_of(a);
    assert_int_equal(srv_listen_socket("127.0.0.1", port, &b, err, sizeof(err)), BSC_OK);
    /* What a second process would do: its first socket is refused, naming the address. */
    assert_int_equal(srv_listen_first("127.0.0.1", port, &c, err, sizeof(err)), BSC_EEXIST);
    assert_int_equal(c, -1);
    assert_non_null(strstr(err, "127.0.0.1:"));
    assert_non_null(strstr(err, "in use by another process"));
    /* Also when the other listens on the wildcard address. */
    close(b);
    close(a);
    a = socket(AF_INET, SOCK_STREAM, 0);
    {
        struct sockaddr_in any = {.sin_family = AF_INET, .sin_port = htons(port)};

        assert_int_equal(bind(a, (struct sockaddr *)&any, sizeof(any)), 0);
    }
    assert_int_equal(listen(a, 1), 0);
    assert_int_equal(srv_listen_first("127.0.0.1", port, &c, err, sizeof(err)), BSC_EEXIST);
    close(a);
    /* Free again: the first socket binds. */
    assert_int_equal(srv_listen_first("127.0.0.1", port, &a, err, sizeof(err)), BSC_OK);
    close(a);
}

/* The TIME_WAIT connections a stopped gateway leaves on its port are no listener. */
static void test_listen_first_after_time_wait(void **state)
{
    char err[256] = "";
    uint16_t port;
    int l = -1, cl, sv;

    (void)state;
    assert_int_equal(srv_listen_first("127.0.0.1", 0, &l, err, sizeof(err)), BSC_OK);
    port = port_of(l);
    cl = cl_connect_fd(port, 0);
    assert_true(cl >= 0);
    sv = accept(l, NULL, NULL); /* connect() returned: the connection is in the queue */
    assert_true(sv >= 0);
    close(sv); /* the server side closes first: its end of the connection is in TIME_WAIT */
    close(l);
    close(cl);
    assert_int_equal(srv_listen_first("127.0.0.1", port, &l, err, sizeof(err)), BSC_OK);
    close(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listen_socket),
        cmocka_unit_test(test_listen_first),
        cmocka_unit_test(test_listen_first_after_time_wait),
        cmocka_unit_test_setup_teardown(test_get_and_post, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keepalive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http10, setup, teardown),
        cmocka_unit_test_setup_teardown(test_head_and_bodyless, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chunked_request, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipelined, setup, teardown),
        cmocka_unit_test_setup_teardown(test_next_request_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipelined_backpressure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expect_continue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_body_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_header_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_head_408, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connection_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_head_check, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abort_on_disconnect, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drain_callback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chunked_response, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_writes_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_direct_and_rest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_json_and_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handler_mistakes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reset_and_abort, setup, teardown),
        cmocka_unit_test_setup_teardown(test_srv_drain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_all, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_limits, setup, teardown),
    };

    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
