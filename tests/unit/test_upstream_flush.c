/* SPDX-License-Identifier: MIT */
/* test_upstream_flush.c -- up_multi_flush() (multi.c): a transfer started on a pooled
 * connection has its request sent by the flush itself, before the loop runs again; without
 * it the request waits for the loop's check phase. The upstream is a plain socket served
 * by the test between loop steps, so what it has received is known at each point. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <uv.h>

#include "upstream/upstream.h"

#define ANSWER "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok"

struct fx {
    uv_loop_t loop;
    struct up_multi *m;
    int lfd;   /* the upstream's listening socket */
    int cfd;   /* its end of the pooled connection */
    char url[64];
    int done;  /* transfers ended */
    enum up_result res;
};

static void on_head(void *ud, struct up_transfer *t, int status)
{
    (void)ud;
    (void)t;
    assert_int_equal(status, 200);
}

static bool on_data(void *ud, struct up_transfer *t, const char *p, size_t len)
{
    (void)ud;
    (void)t;
    (void)p;
    (void)len;
    return false;
}

static void on_done(void *ud, struct up_transfer *t, enum up_result res, const char *detail)
{
    struct fx *fx = ud;

    (void)t;
    (void)detail;
    fx->res = res;
    fx->done++;
}

static const struct up_callbacks cb = {on_head, on_data, on_done};

static int setup(void **state)
{
    static struct fx fx;
    struct sockaddr_in sin = {.sin_family = AF_INET};
    socklen_t len = sizeof(sin);

    memset(&fx, 0, sizeof(fx));
    fx.cfd = -1;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fx.lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fx.lfd < 0 || bind(fx.lfd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
        listen(fx.lfd, 8) != 0 || getsockname(fx.lfd, (struct sockaddr *)&sin, &len) != 0)
        return -1;
    snprintf(fx.url, sizeof(fx.url), "http://127.0.0.1:%u/v1/x", ntohs(sin.sin_port));
    uv_loop_init(&fx.loop);
    if (up_multi_new(&fx.loop, NULL, &fx.m) != BSC_OK)
        return -1;
    *state = &fx;
    return 0;
}

static int teardown(void **state)
{
    struct fx *fx = *state;

    up_multi_free(fx->m);
    uv_run(&fx->loop, UV_RUN_DEFAULT);
    if (fx->cfd >= 0)
        close(fx->cfd);
    close(fx->lfd);
    return uv_loop_close(&fx->loop) == 0 ? 0 : -1;
}

static void start(struct fx *fx, struct up_transfer **t)
{
    static const char *const headers[] = {"Content-Type: text/plain"};
    struct up_request req = {
        .url = fx->url, .method = "POST", .headers = headers, .n_headers = 1,
        .body = "hello", .body_len = 5, .connect_timeout_ms = 2000,
    };

    assert_int_equal(up_start(fx->m, &req, &cb, fx, t), BSC_OK);
}

/* What the upstream has received on its connection right now, without waiting. */
static size_t upstream_has(struct fx *fx, char *buf, size_t cap)
{
    ssize_t n = recv(fx->cfd, buf, cap - 1, MSG_DONTWAIT);

    if (n < 0) {
        assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
        n = 0;
    }
    buf[n] = '\0';
    return (size_t)n;
}

/* Runs the loop until the current transfer ends, serving it: accept, read, answer. */
static void serve_one(struct fx *fx, int done_before)
{
    char buf[4096];

    for (int i = 0; i < 2000 && fx->done == done_before; i++) {
        struct pollfd p = {.fd = fx->cfd >= 0 ? fx->cfd : fx->lfd, .events = POLLIN};

        uv_run(&fx->loop, UV_RUN_NOWAIT);
        if (poll(&p, 1, 1) != 1)
            continue;
        if (fx->cfd < 0) {
            fx->cfd = accept(fx->lfd, NULL, NULL);
            assert_true(fx->cfd >= 0);
            continue;
        }
        if (upstream_has(fx, buf, sizeof(buf)) && strstr(buf, "hello"))
            assert_int_equal(send(fx->cfd, ANSWER, strlen(ANSWER), 0), (ssize_t)strlen(ANSWER));
    }
    assert_int_equal(fx->done, done_before + 1);
    assert_int_equal(fx->res, UP_OK);
}

static void test_flush_sends_on_a_pooled_connection(void **state)
{
    struct fx *fx = *state;
    struct up_transfer *t;
    char buf[4096];

    start(fx, &t);
    serve_one(fx, 0); /* the first transfer opens the connection the second reuses */

    start(fx, &t);
    assert_int_equal(upstream_has(fx, buf, sizeof(buf)), 0); /* started, not sent */
    up_multi_flush(fx->m);
    assert_true(upstream_has(fx, buf, sizeof(buf)) > 0); /* sent, no loop pass between */
    assert_non_null(strstr(buf, "POST /v1/x HTTP/1.1\r\n"));
    assert_non_null(strstr(buf, "hello"));
    assert_int_equal(send(fx->cfd, ANSWER, strlen(ANSWER), 0), (ssize_t)strlen(ANSWER));
    for (int i = 0; i < 2000 && fx->done == 1; i++)
        uv_run(&fx->loop, UV_RUN_ONCE);
    assert_int_equal(fx->done, 2);
    assert_int_equal(fx->res, UP_OK);
}

static void test_without_flush_the_loop_sends(void **state)
{
    struct fx *fx = *state;
    struct up_transfer *t;
    char buf[4096];

    start(fx, &t);
    serve_one(fx, 0);
    start(fx, &t);
    up_multi_flush(fx->m);
    up_multi_flush(fx->m); /* nothing new: a no-op */
    assert_true(upstream_has(fx, buf, sizeof(buf)) > 0);
    assert_int_equal(send(fx->cfd, ANSWER, strlen(ANSWER), 0), (ssize_t)strlen(ANSWER));
    for (int i = 0; i < 2000 && fx->done == 1; i++)
        uv_run(&fx->loop, UV_RUN_ONCE);
    assert_int_equal(fx->done, 2);

    start(fx, &t); /* no flush: one loop pass sends it (the check phase) */
    assert_int_equal(upstream_has(fx, buf, sizeof(buf)), 0);
    uv_run(&fx->loop, UV_RUN_NOWAIT);
    assert_true(upstream_has(fx, buf, sizeof(buf)) > 0);
    assert_int_equal(send(fx->cfd, ANSWER, strlen(ANSWER), 0), (ssize_t)strlen(ANSWER));
    for (int i = 0; i < 2000 && fx->done == 2; i++)
        uv_run(&fx->loop, UV_RUN_ONCE);
    assert_int_equal(fx->done, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_flush_sends_on_a_pooled_connection, setup, teardown),
        cmocka_unit_test_setup_teardown(test_without_flush_the_loop_sends, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
