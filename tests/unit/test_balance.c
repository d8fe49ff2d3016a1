/* SPDX-License-Identifier: MIT */
/* test_balance.c -- connections spread over the servers of a group (src/server/balance.c).
 * Two servers run as two workers do: each on its own libuv loop in its own thread, with its
 * own listening socket. Unlike workers, the two sockets have different ports, so a test
 * chooses which server the kernel hands a connection to; the group then decides who serves
 * it. Each server answers with its own name, which is how the client side sees who served.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <uv.h>

#include "server/server.h"

#define N_SRV   2
#define WAIT_MS 3000

struct worker {
    uv_loop_t loop;
    uv_async_t wake;
    pthread_t thread;
    struct srv *srv;
    char name;               /* 'A' or 'B': the body of every answer */
    uint16_t port;
    atomic_size_t conns;     /* srv_conn_count(), published after each loop wake */
    atomic_int closed;
    atomic_int cmd;          /* CMD_* for the loop thread */
};

enum { CMD_NONE, CMD_COUNT, CMD_DRAIN, CMD_STOP };

struct fx {
    struct srv_group *group;
    struct worker w[N_SRV];
    bool started;
    int fds[8];    /* client sockets, closed by teardown; -1 when none */
};

static void handler(struct srv_req *req, void *ud)
{
    struct worker *w = ud;

    srv_resp_send(req, 200, "text/plain", NULL, 0, &w->name, 1);
}

static void on_closed(struct srv *srv, void *ud)
{
    struct worker *w = ud;

    srv_free(srv);
    w->srv = NULL;
    atomic_store(&w->conns, 0);
    atomic_store(&w->closed, 1);
    uv_close((uv_handle_t *)&w->wake, NULL);
}

static void on_wake(uv_async_t *h)
{
    struct worker *w = h->data;
    int cmd = atomic_exchange(&w->cmd, CMD_NONE);

    if (w->srv)
        atomic_store(&w->conns, srv_conn_count(w->srv));
    if (cmd == CMD_DRAIN && w->srv)
        srv_drain(w->srv, on_closed, w);
    else if (cmd == CMD_STOP && w->srv)
        srv_close_all(w->srv, on_closed, w);
}

static void *loop_main(void *arg)
{
    struct worker *w = arg;

    uv_run(&w->loop, UV_RUN_DEFAULT);
    return NULL;
}

static void start_worker(struct fx *fx, unsigned i, size_t max_connections)
{
    struct worker *w = &fx->w[i];
    struct srv_limits lim = {
        .max_body_bytes = 1 << 16,
        .max_header_bytes = 8192,
        .header_timeout_ms = 5000,
        .idle_timeout_ms = 5000,
        .max_connections = max_connections,
        .max_pending_output = 1 << 16,
    };
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);
    char err[256];
    int fd;

    w->name = (char)('A' + i);
    assert_int_equal(uv_loop_init(&w->loop), 0);
    assert_int_equal(uv_async_init(&w->loop, &w->wake, on_wake), 0);
    w->wake.data = w;
    assert_int_equal(srv_listen_socket("127.0.0.1", 0, &fd, err, sizeof(err)), BSC_OK);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
    w->port = ntohs(sin.sin_port);
    assert_int_equal(srv_new(&w->loop, fd, &lim, handler, w, &w->srv), BSC_OK);
    /* As main.c does: joined before the loop runs. */
    assert_int_equal(srv_group_join(fx->group, i, w->srv), BSC_OK);
}

static void start(struct fx *fx, size_t max_connections)
{
    fx->group = srv_group_new(N_SRV);
    assert_non_null(fx->group);
    for (unsigned i = 0; i < N_SRV; i++)
        start_worker(fx, i, max_connections);
    for (unsigned i = 0; i < N_SRV; i++)
        assert_int_equal(pthread_create(&fx->w[i].thread, NULL, loop_main, &fx->w[i]), 0);
    fx->started = true;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

static void send_cmd(struct worker *w, int cmd)
{
    atomic_store(&w->cmd, cmd);
    uv_async_send(&w->wake);
}

/* Waits until worker <w> holds <want> connections (as its loop sees them). */
static void wait_conns(struct worker *w, size_t want)
{
    for (int waited = 0; waited < WAIT_MS; waited += 5) {
        send_cmd(w, CMD_COUNT);
        sleep_ms(5);
        if (atomic_load(&w->conns) == want)
            return;
    }
    fail_msg("worker %c holds %zu connections, expected %zu", w->name,
             atomic_load(&w->conns), want);
}

static void stop(struct fx *fx)
{
    if (!fx->started)
        return;
    fx->started = false;
    for (unsigned i = 0; i < N_SRV; i++) {
        if (!atomic_load(&fx->w[i].closed))
            send_cmd(&fx->w[i], CMD_STOP);
    }
    for (unsigned i = 0; i < N_SRV; i++) {
        pthread_join(fx->w[i].thread, NULL);
        assert_int_equal(uv_loop_close(&fx->w[i].loop), 0);
    }
    srv_group_free(fx->group);
}

static int setup(void **state)
{
    struct fx *fx = calloc(1, sizeof(*fx));

    if (!fx)
        return -1;
    for (unsigned i = 0; i < 8; i++)
        fx->fds[i] = -1;
    *state = fx;
    return 0;
}

/* Also after a failed assertion: the clients close, the servers stop, the threads end. */
static int teardown(void **state)
{
    struct fx *fx = *state;

    for (unsigned i = 0; i < 8; i++)
        if (fx->fds[i] >= 0)
            close(fx->fds[i]);
    stop(fx);
    free(fx);
    return 0;
}

static int connect_to(uint16_t port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    return fd;
}

/* One request on <fd>; returns the whole answer (status line to body) in <out>. */
static void ask(int fd, char *out, size_t cap)
{
    static const char req[] = "GET /who HTTP/1.1\r\nHost: t\r\n\r\n";
    size_t got = 0;

    assert_int_equal(send(fd, req, sizeof(req) - 1, 0), (ssize_t)(sizeof(req) - 1));
    out[0] = '\0';
    while (got + 1 < cap) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        const char *body;
        ssize_t n;

        assert_int_equal(poll(&p, 1, WAIT_MS), 1);
        n = recv(fd, out + got, cap - 1 - got, 0);
        assert_true(n > 0);
        got += (size_t)n;
        out[got] = '\0';
        body = strstr(out, "\r\n\r\n");
        if (body && strstr(out, "Content-Length:") && (size_t)(out + got - body) > 4)
            return; /* every answer here has a body of at least one byte */
    }
    fail_msg("answer too long");
}

/* Who served <fd>: 'A', 'B', or the status code's first digit for an error answer. */
static char served_by(int fd)
{
    char buf[1024];

    ask(fd, buf, sizeof(buf));
    if (strncmp(buf, "HTTP/1.1 200", 12) != 0)
        return buf[9];
    return strstr(buf, "\r\n\r\n")[4];
}

static void test_connections_spread_evenly(void **state)
{
    struct fx *fx = *state;
    int n[N_SRV] = {0};

    start(fx, 0);
    /* Every connection arrives at A; one at a time, so that each decision sees the last. */
    for (unsigned i = 0; i < 8; i++) {
        char who;

        fx->fds[i] = connect_to(fx->w[0].port);
        who = served_by(fx->fds[i]);
        assert_true(who == 'A' || who == 'B');
        n[who - 'A']++;
    }
    assert_int_equal(n[0], 4);
    assert_int_equal(n[1], 4);
    wait_conns(&fx->w[0], 4);
    wait_conns(&fx->w[1], 4);
    /* A connection stays with the server that took it: keep-alive requests too. */
    for (unsigned i = 0; i < 8; i++) {
        char again = served_by(fx->fds[i]);
        assert_true(again == 'A' || again == 'B');
    }
}

static void test_closed_connections_free_their_share(void **state)
{
    struct fx *fx = *state;
    char who[4];

    start(fx, 0);
    for (unsigned i = 0; i < 4; i++) {
        fx->fds[i] = connect_to(fx->w[1].port); /* all arrive at B this time */
        who[i] = served_by(fx->fds[i]);
    }
    wait_conns(&fx->w[0], 2);
    wait_conns(&fx->w[1], 2);
    /* Close both of A's: the next two arriving at B go to A again. */
    for (unsigned i = 0; i < 4; i++) {
        if (who[i] == 'A') {
            close(fx->fds[i]);
            fx->fds[i] = -1;
        }
    }
    wait_conns(&fx->w[0], 0);
    for (unsigned i = 0; i < 4; i++) {
        if (fx->fds[i] < 0) {
            fx->fds[i] = connect_to(fx->w[1].port);
            assert_int_equal(served_by(fx->fds[i]), 'A');
        }
    }
}

static void test_a_draining_server_takes_no_more(void **state)
{
    struct fx *fx = *state;

    start(fx, 0);
    send_cmd(&fx->w[1], CMD_DRAIN);
    for (int waited = 0; !atomic_load(&fx->w[1].closed) && waited < WAIT_MS; waited += 5)
        sleep_ms(5);
    assert_true(atomic_load(&fx->w[1].closed));
    for (unsigned i = 0; i < 3; i++) {
        fx->fds[i] = connect_to(fx->w[0].port);
        assert_int_equal(served_by(fx->fds[i]), 'A'); /* B left the group: nothing goes there */
    }
}

static void test_the_cap_counts_the_whole_group(void **state)
{
    struct fx *fx = *state;
    int n[N_SRV] = {0};

    start(fx, 2); /* two per server, as main.c divides limits.max_connections */
    for (unsigned i = 0; i < 4; i++) {
        char who;

        fx->fds[i] = connect_to(fx->w[0].port);
        who = served_by(fx->fds[i]);
        assert_true(who == 'A' || who == 'B'); /* A alone would have refused the third */
        n[who - 'A']++;
    }
    assert_int_equal(n[0], 2);
    assert_int_equal(n[1], 2);
    fx->fds[4] = connect_to(fx->w[0].port);
    /* Both full, of idle connections: A closes its longest idle one to serve the new one
     * (cap.c); with none idle this would be the 503 (tests/unit/test_server_cap.c). */
    assert_int_equal(served_by(fx->fds[4]), 'A');
}

static void test_group_arguments(void **state)
{
    (void)state;
    assert_null(srv_group_new(0));
    srv_group_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_connections_spread_evenly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_closed_connections_free_their_share, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_draining_server_takes_no_more, setup, teardown),
        cmocka_unit_test_setup_teardown(test_the_cap_counts_the_whole_group, setup, teardown),
        cmocka_unit_test(test_group_arguments),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
