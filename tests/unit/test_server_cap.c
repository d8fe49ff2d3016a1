/* SPDX-License-Identifier: MIT */
/* test_server_cap.c -- the connection cap of src/server/cap.c (the rule that fits it to
 * RLIMIT_NOFILE; which connection gives way to a new one: lingering, then the oldest still
 * receiving its request, then the longest idle), limits.body_timeout_ms and
 * limits.min_body_rate_bps, over real sockets on 127.0.0.1: the server runs on its own
 * loop in a second thread, the test thread is a blocking-socket client. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <uv.h>

#include "core/clock.h"
#include "server/server.h"

#define RECV_MS 3000

struct fx {
    uv_loop_t loop;
    uv_async_t wake;
    pthread_t thread;
    struct srv *srv;
    struct srv_limits lim;
    uint16_t port;
    bool hold;     /* the handler keeps every request until its client leaves */
    atomic_int n_req;
};

static void on_abort(struct srv_req *req, void *ud)
{
    (void)req;
    (void)ud;
}

static void handler(struct srv_req *req, void *ud)
{
    struct fx *fx = ud;

    atomic_fetch_add(&fx->n_req, 1);
    if (fx->hold) {
        srv_req_on_abort(req, on_abort, fx);
        return;
    }
    srv_resp_send(req, 200, "text/plain", NULL, 0, "ok", 2);
}

static void on_closed(struct srv *srv, void *ud)
{
    struct fx *fx = ud;

    srv_free(srv);
    fx->srv = NULL;
    uv_close((uv_handle_t *)&fx->wake, NULL); /* the last handle: the loop ends */
}

static void on_wake(uv_async_t *a)
{
    struct fx *fx = a->data;

    srv_close_all(fx->srv, on_closed, fx);
}

static void *loop_main(void *arg)
{
    struct fx *fx = arg;

    uv_run(&fx->loop, UV_RUN_DEFAULT);
    return NULL;
}

static void fx_start(struct fx *fx)
{
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);
    char err[256];
    int fd = -1;

    assert_int_equal(uv_loop_init(&fx->loop), 0);
    assert_int_equal(uv_async_init(&fx->loop, &fx->wake, on_wake), 0);
    fx->wake.data = fx;
    assert_int_equal(srv_listen_socket("127.0.0.1", 0, &fd, err, sizeof(err)), BSC_OK);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
    fx->port = ntohs(sin.sin_port);
    assert_int_equal(srv_new(&fx->loop, fd, &fx->lim, handler, fx, &fx->srv), BSC_OK);
    assert_int_equal(pthread_create(&fx->thread, NULL, loop_main, fx), 0);
}

static int setup(void **state)
{
    struct fx *fx = calloc(1, sizeof(*fx));

    if (!fx)
        return -1;
    fx->lim = (struct srv_limits){
        .max_body_bytes = 1 << 20,
        .max_header_bytes = 16384,
        .header_timeout_ms = 5000,
        .idle_timeout_ms = 5000,
        .max_connections = 2,
        .max_pending_output = 64 * 1024,
    };
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fx *fx = *state;

    if (fx->srv) {
        uv_async_send(&fx->wake);
        pthread_join(fx->thread, NULL);
        assert_int_equal(uv_loop_close(&fx->loop), 0);
    }
    free(fx);
    return 0;
}

/* ---- the client ---------------------------------------------------------------------------- */

static int cl_open(uint16_t port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
    struct timeval tv = {RECV_MS / 1000, (RECV_MS % 1000) * 1000};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    return fd;
}

static void cl_sends(int fd, const char *s)
{
    size_t n = strlen(s);

    while (n) {
        ssize_t k = send(fd, s, n, MSG_NOSIGNAL);

        assert_true(k > 0);
        s += k;
        n -= (size_t)k;
    }
}

/* Reads one response (head and Content-Length body) into <buf>; returns its status, or -1
 * when the connection closed or timed out first. */
static int cl_read(int fd, char *buf, size_t cap)
{
    size_t have = 0;

    for (;;) {
        char *end = memmem(buf, have, "\r\n\r\n", 4);
        ssize_t k;

        if (end) {
            const char *cl = strcasestr(buf, "content-length:");
            size_t body = cl ? strtoul(cl + 15, NULL, 10) : 0;

            if ((size_t)(end + 4 - buf) + body <= have)
                return (int)strtol(buf + 9, NULL, 10);
        }
        if (have + 1 >= cap)
            return -1;
        k = recv(fd, buf + have, cap - 1 - have, 0);
        if (k <= 0)
            return -1;
        have += (size_t)k;
        buf[have] = '\0';
    }
}

static int roundtrip(int fd)
{
    char buf[4096];

    cl_sends(fd, "GET /x HTTP/1.1\r\nHost: t\r\n\r\n");
    return cl_read(fd, buf, sizeof(buf));
}

/* True when the server closed <fd> (EOF or reset) within RECV_MS. */
static bool cl_closed(int fd)
{
    char c;
    ssize_t k = recv(fd, &c, 1, 0);

    return k == 0 || (k < 0 && errno == ECONNRESET);
}

/* ---- tests --------------------------------------------------------------------------------- */

static void test_cap_for(void **state)
{
    struct rlimit rl;
    uint64_t nofile = 1;

    (void)state;
    assert_int_equal(srv_conn_cap_for(20000, 0), 20000); /* no fd limit */
    /* 1024 fds: 64 + 1024/16 kept back, then half of the rest (an upstream socket each). */
    assert_int_equal(srv_conn_cap_for(20000, 1024), (1024 - 64 - 16) / 2);
    assert_int_equal(srv_conn_cap_for(20000, 20000), (20000 - 64 - 312) / 2);
    assert_int_equal(srv_conn_cap_for(100, 1024), 100);       /* the configured cap fits */
    assert_int_equal(srv_conn_cap_for(0, 1024), 472);         /* no configured cap */
    assert_int_equal(srv_conn_cap_for(20000, 1u << 20), 20000);
    assert_int_equal(srv_conn_cap_for(20000, 10), 1);         /* absurdly low: still one */
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    assert_int_equal(srv_conn_cap(20000, &nofile),
                     srv_conn_cap_for(20000, rl.rlim_cur == RLIM_INFINITY ? 0 : rl.rlim_cur));
    assert_true(rl.rlim_cur == RLIM_INFINITY ? nofile == 0 : nofile == rl.rlim_cur);
}

/* The soft fd limit raised at start is enough for the configured cap, and never more than
 * the hard limit allows. */
static void test_raise_nofile(void **state)
{
    static const uint32_t caps[] = {1, 100, 448, 1000, 20000, 1000000};
    struct rlimit saved, low, now;

    (void)state;
    for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
        uint64_t want = srv_nofile_wanted(caps[i]);

        assert_int_equal(srv_conn_cap_for(caps[i], want), caps[i]);
        if (caps[i] >= 100) /* and not much more than that */
            assert_true(srv_conn_cap_for(caps[i], want - want / 32) < caps[i]);
    }
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
    if (saved.rlim_max != RLIM_INFINITY && saved.rlim_max < 300)
        skip();
    low = (struct rlimit){.rlim_cur = 256, .rlim_max = saved.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    assert_int_equal(srv_raise_nofile(200), srv_nofile_wanted(200) < saved.rlim_max
                                                 ? srv_nofile_wanted(200)
                                                 : saved.rlim_max);
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &now), 0);
    assert_int_equal(srv_conn_cap_for(200, now.rlim_cur), 200);
    assert_int_equal(srv_raise_nofile(10), now.rlim_cur); /* never lowered */
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
}

/* At the cap a new client is served: the connection idle the longest is closed for it. */
static void test_idle_makes_room(void **state)
{
    struct fx *fx = *state;
    int a, b, c, d;

    fx_start(fx);
    a = cl_open(fx->port);
    assert_int_equal(roundtrip(a), 200); /* idle after its request */
    b = cl_open(fx->port);
    assert_int_equal(roundtrip(b), 200);
    c = cl_open(fx->port);              /* the cap is 2: <a> goes, the longest idle */
    assert_int_equal(roundtrip(c), 200);
    assert_true(cl_closed(a));
    d = cl_open(fx->port);              /* then <b> */
    assert_int_equal(roundtrip(d), 200);
    assert_true(cl_closed(b));
    assert_int_equal(roundtrip(c), 200); /* the others still serve */
    assert_int_equal(roundtrip(d), 200);
    close(a);
    close(b);
    close(c);
    close(d);
}

/* Starts a request whose body the server then awaits: once the 100 Continue is read, the
 * server surely holds the connection as busy, not idle. */
static void start_body(int fd)
{
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    char got[sizeof(cont)] = {0};
    size_t have = 0;

    cl_sends(fd, "POST /x HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
    while (have < sizeof(cont) - 1) {
        ssize_t k = recv(fd, got + have, sizeof(cont) - 1 - have, 0);

        assert_true(k > 0);
        have += (size_t)k;
    }
    assert_string_equal(got, cont);
}

/* A connection still receiving its request gives way before an idle one: at the cap, the
 * receiving one is answered 503 and closed, the idle one keeps serving. */
static void test_receiving_before_idle(void **state)
{
    struct fx *fx = *state;
    char buf[4096];
    int a, b, c;

    fx_start(fx);
    a = cl_open(fx->port);
    assert_int_equal(roundtrip(a), 200); /* idle after its request */
    b = cl_open(fx->port);
    start_body(b);                       /* its body never comes */
    c = cl_open(fx->port);
    assert_int_equal(roundtrip(c), 200);
    assert_int_equal(cl_read(b, buf, sizeof(buf)), 503);
    assert_non_null(strstr(buf, "too_many_connections"));
    assert_non_null(strstr(buf, "still arriving"));
    assert_true(cl_closed(b));
    assert_int_equal(roundtrip(a), 200); /* the idle one was kept */
    close(a);
    close(b);
    close(c);
}

/* Among connections receiving their requests, the one whose request began first goes. */
static void test_oldest_receiving_first(void **state)
{
    struct fx *fx = *state;
    char buf[4096];
    int a, b, c;

    fx_start(fx);
    a = cl_open(fx->port);
    b = cl_open(fx->port);
    start_body(a);
    start_body(b);
    c = cl_open(fx->port);
    assert_int_equal(roundtrip(c), 200);
    assert_int_equal(cl_read(a, buf, sizeof(buf)), 503);
    assert_true(cl_closed(a));
    cl_sends(b, "ok");
    assert_int_equal(cl_read(b, buf, sizeof(buf)), 200);
    close(a);
    close(b);
    close(c);
}

/* Among those receiving, the slowest gives way, not merely the oldest: an upload well under
 * way is kept while a younger connection that has sent nothing since its head goes. <a>'s
 * bytes are on the wire before <b> connects, so the server has read them (same or earlier
 * poll) by the time <b>'s 100 Continue comes back and <c> connects. */
static void test_slowest_receiving_first(void **state)
{
    struct fx *fx = *state;
    char buf[4096], part[4001];
    int a, b, c;

    memset(part, 'x', 4000);
    part[4000] = '\0';
    fx_start(fx);
    a = cl_open(fx->port);
    cl_sends(a, "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n");
    cl_sends(a, part);
    b = cl_open(fx->port);
    start_body(b);
    c = cl_open(fx->port);
    assert_int_equal(roundtrip(c), 200);
    assert_int_equal(cl_read(b, buf, sizeof(buf)), 503);
    assert_true(cl_closed(b));
    memset(part, 'y', 1000);
    part[1000] = '\0';
    cl_sends(a, part);
    assert_int_equal(cl_read(a, buf, sizeof(buf)), 200);
    close(a);
    close(b);
    close(c);
}

/* A connection that was answered and only lingers gives way first: the one receiving its
 * request is kept and completes. */
static void test_lingering_first(void **state)
{
    struct fx *fx = *state;
    char buf[4096];
    int a, b, c;

    fx_start(fx);
    a = cl_open(fx->port);
    cl_sends(a, "GARBAGE\r\n\r\n");
    assert_int_equal(cl_read(a, buf, sizeof(buf)), 400); /* then it lingers: a is kept open */
    b = cl_open(fx->port);
    start_body(b);
    c = cl_open(fx->port);
    assert_int_equal(roundtrip(c), 200);
    cl_sends(b, "ok");
    assert_int_equal(cl_read(b, buf, sizeof(buf)), 200);
    close(a);
    close(b);
    close(c);
}

/* With every connection with the handler, none gives way: the new one gets the 503. */
static void test_handled_is_kept(void **state)
{
    struct fx *fx = *state;
    char buf[4096];
    int a, b, c;

    fx->hold = true;
    fx_start(fx);
    a = cl_open(fx->port);
    b = cl_open(fx->port);
    cl_sends(a, "GET /x HTTP/1.1\r\nHost: t\r\n\r\n");
    cl_sends(b, "GET /x HTTP/1.1\r\nHost: t\r\n\r\n");
    for (int i = 0; i < 400 && atomic_load(&fx->n_req) < 2; i++)
        usleep(5000);
    assert_int_equal(atomic_load(&fx->n_req), 2);
    c = cl_open(fx->port);
    cl_sends(c, "GET /x HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_int_equal(cl_read(c, buf, sizeof(buf)), 503);
    assert_non_null(strstr(buf, "too_many_connections"));
    close(a);
    close(b);
    close(c);
}

/* A body trickled a byte at a time never stalls for header_timeout_ms, but it must be
 * complete body_timeout_ms after the head. */
static void test_body_timeout(void **state)
{
    struct fx *fx = *state;
    char buf[4096];
    uint64_t t0;
    int fd, status = -1;

    fx->lim.body_timeout_ms = 300;
    fx_start(fx);
    fd = cl_open(fx->port);
    cl_sends(fd, "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n");
    t0 = bsc_now_ms();
    for (int i = 0; i < 100; i++) { /* 5 s at most */
        struct pollfd p = {.fd = fd, .events = POLLIN};

        if (poll(&p, 1, 50) > 0) {
            status = cl_read(fd, buf, sizeof(buf));
            break;
        }
        cl_sends(fd, "x");
    }
    assert_int_equal(status, 408);
    assert_non_null(strstr(buf, "request_timeout"));
    assert_non_null(strstr(buf, "not received in time"));
    assert_true(bsc_now_ms() - t0 >= 250);
    assert_true(cl_closed(fd));
    close(fd);
}

/* Sends "x" every <gap_ms> until the server answers (5 s at most); returns the status
 * and the ms it took, or -1. */
static int trickle(int fd, int gap_ms, char *buf, size_t cap, uint64_t *took)
{
    uint64_t t0 = bsc_now_ms();

    for (int i = 0; i < 5000 / gap_ms; i++) {
        struct pollfd p = {.fd = fd, .events = POLLIN};

        if (poll(&p, 1, gap_ms) > 0) {
            *took = bsc_now_ms() - t0;
            return cl_read(fd, buf, cap);
        }
        cl_sends(fd, "x");
    }
    return -1;
}

/* limits.min_body_rate_bps: a body far slower than the rate is cut once the grace and the
 * time its bytes bought are spent, long before body_timeout_ms; a stall is not the cause. */
static void test_min_body_rate(void **state)
{
    struct fx *fx = *state;
    char buf[4096];
    uint64_t took = 0;
    int fd;

    fx->lim.min_body_rate_bps = 1000;
    fx->lim.body_timeout_ms = 60000;
    fx_start(fx);
    fd = cl_open(fx->port);
    cl_sends(fd, "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n");
    assert_int_equal(trickle(fd, 50, buf, sizeof(buf), &took), 408);
    assert_non_null(strstr(buf, "request_timeout"));
    assert_non_null(strstr(buf, "too slow: under 1000 bytes/s"));
    /* 20 bytes/s: the grace (2 s) plus 1 ms a byte received, so about 2.04 s */
    assert_true(took >= SRV_BODY_RATE_GRACE_MS - 100);
    assert_true(took < SRV_BODY_RATE_GRACE_MS + 1500);
    assert_true(cl_closed(fd));
    close(fd);
}

/* Bytes received buy time: a body that pauses after a good start is not cut while what it
 * sent covers the pause. 1000 bytes at once, each worth 1 ms at 1000 bytes/s, then the rest
 * 2.5 s later: within 2 s of grace + 1 s bought. */
static void test_min_body_rate_credit(void **state)
{
    struct fx *fx = *state;
    char buf[4096], part[1001];
    struct pollfd p;
    int fd;

    memset(part, 'x', 1000);
    part[1000] = '\0';
    fx->lim.min_body_rate_bps = 1000;
    fx_start(fx);
    fd = cl_open(fx->port);
    cl_sends(fd, "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 1002\r\n\r\n");
    cl_sends(fd, part);
    p = (struct pollfd){.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 2500), 0); /* nothing from the server meanwhile */
    cl_sends(fd, "ok");
    assert_int_equal(cl_read(fd, buf, sizeof(buf)), 200);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cap_for),
        cmocka_unit_test(test_raise_nofile),
        cmocka_unit_test_setup_teardown(test_idle_makes_room, setup, teardown),
        cmocka_unit_test_setup_teardown(test_receiving_before_idle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_oldest_receiving_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slowest_receiving_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lingering_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handled_is_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_body_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_min_body_rate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_min_body_rate_credit, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
