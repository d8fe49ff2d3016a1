/* SPDX-License-Identifier: MIT */
/* test_h1_client.c -- the builtin HTTP/1.1 client (upstream/h1.c, h1_pool.c) through the
 * up_* API against a libuv server on the same loop: no callback from inside up_start, the
 * whole-transfer timeout and the connect timeout (a listener whose accept queue is full),
 * refused connects, pause and resume (nothing delivered while paused; on_done never from
 * inside up_resume), cancel from inside on_head closing the connection, freeing the multi
 * with transfers and idle connections left, and reuse without a system call: a connection
 * the server closed after the last poll is taken as it is and the request replayed once; a
 * transfer that finds only a connection idle since the last pass waits for the pass's check
 * (without blocking in the poll) and takes it there. A finished transfer's object and its
 * request head's storage are kept on the multi for the next transfer, poisoned for
 * AddressSanitizer while kept, at most UP_SPARE_TRANSFERS of them, and a request head past
 * UP_SPARE_REQ_KEEP is freed instead. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/asan.h"
#include "upstream/internal.h"

#ifdef BSC_ASAN
#define POISONED(p) __asan_address_is_poisoned(p)
#else
#define POISONED(p) true
#endif

#define BIG_BODY (256 * 1024)

enum mode { SILENT, BIG, EACH }; /* EACH: a short answer to every read */

static uv_loop_t loop;
static struct up_multi *m;
static uv_tcp_t server;
static int port;
static enum mode mode;
static int server_eofs; /* connections the client closed */
static int accepts;
static struct sconn *last_sconn; /* the connection accepted last */
static char *big_response;
static size_t big_len;

struct sconn {
    uv_tcp_t tcp;
    uv_write_t w;
    bool answered;
};

struct rec {
    struct up_transfer *t;
    int heads, done, status;
    enum up_result res;
    size_t body;
    bool pause_first, paused_now, in_resume, cancel_in_head, sent, replayed;
    int data_calls;
};

static void sconn_closed(uv_handle_t *h)
{
    free(h->data);
}

static void s_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    static char buf[65536];

    (void)h;
    (void)hint;
    *b = uv_buf_init(buf, sizeof(buf));
}

static void s_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    static char each[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    struct sconn *c = s->data;
    uv_buf_t out;

    (void)b;
    if (n < 0) {
        server_eofs++;
        if (c == last_sconn)
            last_sconn = NULL;
        uv_close((uv_handle_t *)&c->tcp, sconn_closed);
        return;
    }
    if (n > 0 && mode == EACH) {
        out = uv_buf_init(each, sizeof(each) - 1);
        assert_int_equal(uv_try_write(s, &out, 1), (int)out.len);
        return;
    }
    if (n == 0 || mode == SILENT || c->answered)
        return;
    c->answered = true;
    out = uv_buf_init(big_response, (unsigned)big_len);
    uv_write(&c->w, s, &out, 1, NULL);
}

static void on_conn(uv_stream_t *srv, int status)
{
    struct sconn *c = calloc(1, sizeof(*c));

    assert_int_equal(status, 0);
    uv_tcp_init(&loop, &c->tcp);
    c->tcp.data = c;
    assert_int_equal(uv_accept(srv, (uv_stream_t *)&c->tcp), 0);
    accepts++;
    last_sconn = c;
    uv_read_start((uv_stream_t *)&c->tcp, s_alloc, s_read);
}

static int setup(void **state)
{
    struct up_limits lim = {.builtin_http = true, .max_cached_connections = 8};
    struct sockaddr_in a;
    int len = sizeof(a);

    (void)state;
    uv_loop_init(&loop);
    uv_tcp_init(&loop, &server);
    uv_ip4_addr("127.0.0.1", 0, &a);
    uv_tcp_bind(&server, (const struct sockaddr *)&a, 0);
    uv_listen((uv_stream_t *)&server, 16, on_conn);
    uv_tcp_getsockname(&server, (struct sockaddr *)&a, &len);
    port = ntohs(a.sin_port);
    server_eofs = accepts = 0;
    last_sconn = NULL;
    big_len = (size_t)snprintf(NULL, 0, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", BIG_BODY);
    big_response = malloc(big_len + BIG_BODY);
    snprintf(big_response, big_len + 1, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", BIG_BODY);
    memset(big_response + big_len, 'x', BIG_BODY);
    big_len += BIG_BODY;
    return up_multi_new(&loop, &lim, &m) == BSC_OK ? 0 : -1;
}

static void walk_close(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, h->data == NULL || h == (uv_handle_t *)&server ? NULL : sconn_closed);
}

static int teardown(void **state)
{
    (void)state;
    up_multi_free(m);
    uv_walk(&loop, walk_close, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    free(big_response);
    return uv_loop_close(&loop) == 0 ? 0 : -1;
}

static void on_head(void *ud, struct up_transfer *t, int status)
{
    struct rec *r = ud;

    r->heads++;
    r->status = status;
    if (r->cancel_in_head)
        up_cancel(t);
}

static bool on_data(void *ud, struct up_transfer *t, const char *p, size_t len)
{
    struct rec *r = ud;

    (void)t;
    (void)p;
    assert_false(r->paused_now); /* nothing is delivered while paused */
    r->data_calls++;
    r->body += len;
    if (r->pause_first && r->data_calls == 1) {
        r->paused_now = true;
        return true;
    }
    return false;
}

static void on_done(void *ud, struct up_transfer *t, enum up_result res, const char *detail)
{
    struct rec *r = ud;

    (void)detail;
    assert_false(r->in_resume);
    r->sent = up_request_sent(t);
    r->replayed = t->h1.replayed;
    r->done++;
    r->res = res;
}

static const struct up_callbacks cbs = {on_head, on_data, on_done};

static void start(struct rec *r, int to_port, uint32_t connect_ms, uint32_t total_ms)
{
    char url[64];
    const char *hs[] = {"Content-Type: application/json"};
    struct up_request req = {
        .url = url, .method = "POST", .headers = hs, .n_headers = 1, .body = "{}",
        .body_len = 2, .connect_timeout_ms = connect_ms, .timeout_ms = total_ms,
    };

    snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/x", to_port);
    assert_int_equal(up_start(m, &req, &cbs, r, &r->t), BSC_OK);
    assert_int_equal(r->done, 0); /* never from inside up_start */
}

static void start_with(struct rec *r, const char *header)
{
    char url[64];
    const char *hs[] = {header};
    struct up_request req = {.url = url, .method = "POST", .headers = hs, .n_headers = 1,
                             .body = "{}", .body_len = 2};

    snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/x", port);
    assert_int_equal(up_start(m, &req, &cbs, r, &r->t), BSC_OK);
}

static void run_until_done(struct rec *r)
{
    for (int i = 0; i < 100000 && !r->done; i++)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(r->done, 1);
}

static void test_total_timeout(void **state)
{
    struct rec r = {0};

    (void)state;
    mode = SILENT;
    start(&r, port, 0, 50);
    run_until_done(&r);
    assert_int_equal(r.res, UP_TIMEOUT);
    assert_int_equal(r.heads, 0);
}

static void test_refused(void **state)
{
    struct rec r = {0};
    static uv_tcp_t probe;
    struct sockaddr_in a;
    int len = sizeof(a);

    (void)state;
    /* A port nobody listens on: bound, never listened. */
    uv_tcp_init(&loop, &probe);
    uv_ip4_addr("127.0.0.1", 0, &a);
    uv_tcp_bind(&probe, (const struct sockaddr *)&a, 0);
    uv_tcp_getsockname(&probe, (struct sockaddr *)&a, &len);
    start(&r, ntohs(a.sin_port), 0, 0);
    run_until_done(&r);
    assert_int_equal(r.res, UP_CONNECT);
    assert_false(r.sent);
    uv_close((uv_handle_t *)&probe, NULL);
}

/* A listener with a full accept queue drops new SYNs: the connect never completes. */
static void test_connect_timeout(void **state)
{
    struct rec r = {0};
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t len = sizeof(a);
    int lfd = socket(AF_INET, SOCK_STREAM, 0), filler = socket(AF_INET, SOCK_STREAM, 0);

    (void)state;
    a.sin_addr.s_addr = htonl(0x7f000001);
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(lfd, 0), 0);
    getsockname(lfd, (struct sockaddr *)&a, &len);
    assert_int_equal(connect(filler, (struct sockaddr *)&a, sizeof(a)), 0); /* queued */
    start(&r, ntohs(a.sin_port), 50, 0);
    run_until_done(&r);
    assert_int_equal(r.res, UP_TIMEOUT);
    close(filler);
    close(lfd);
}

static void test_pause_resume(void **state)
{
    struct rec r = {.pause_first = true};

    (void)state;
    mode = BIG;
    start(&r, port, 0, 0);
    for (int i = 0; i < 100000 && !r.data_calls; i++)
        uv_run(&loop, UV_RUN_ONCE);
    assert_true(r.paused_now);
    /* Let the rest of the body reach the client's socket: nothing may be delivered. */
    for (int i = 0; i < 20; i++)
        uv_run(&loop, UV_RUN_NOWAIT);
    assert_int_equal(r.data_calls, 1);
    r.paused_now = false;
    r.in_resume = true;
    up_resume(r.t);
    r.in_resume = false;
    run_until_done(&r);
    assert_int_equal(r.res, UP_OK);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body, BIG_BODY);
}

static void test_cancel_in_head_closes(void **state)
{
    struct rec r = {.cancel_in_head = true};

    (void)state;
    mode = BIG;
    start(&r, port, 0, 0);
    for (int i = 0; i < 100000 && !r.heads; i++)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(r.heads, 1);
    for (int i = 0; i < 100000 && !server_eofs; i++)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(server_eofs, 1); /* the upstream saw the cancellation */
    assert_int_equal(r.done, 0);
    assert_int_equal(r.data_calls, 0);
    assert_int_equal(up_multi_active(m), 0);
}

static void test_free_with_work_left(void **state)
{
    struct rec done = {0}, silent = {0};

    (void)state;
    mode = BIG;
    start(&done, port, 0, 0);
    run_until_done(&done); /* leaves an idle connection */
    mode = SILENT;
    start(&silent, port, 0, 0);
    assert_int_equal(up_multi_active(m), 1);
    /* teardown frees the multi with this transfer running and a connection idle */
}

/* Runs passes until the connection left idle has been through a whole poll. */
static void settle(void)
{
    for (int i = 0; i < 3; i++)
        uv_run(&loop, UV_RUN_NOWAIT);
    assert_int_equal(m->h1->n_idle, 1);
}

/* The server closes the idle connection and, before the loop polls again, a transfer takes
 * it: settled, it is not checked, so the request goes out on a closed connection, which
 * fails before any answer byte and is replayed once on a new one. */
static void test_closed_after_last_poll_replays(void **state)
{
    struct rec a = {0}, b = {0};

    (void)state;
    mode = EACH;
    start(&a, port, 0, 0);
    run_until_done(&a);
    assert_int_equal(a.res, UP_OK);
    settle();
    assert_non_null(last_sconn);
    uv_close((uv_handle_t *)&last_sconn->tcp, sconn_closed); /* the FIN goes out now */
    last_sconn = NULL;
    start(&b, port, 0, 0);
    assert_true(b.t->h1.conn != NULL); /* the idle connection, taken at once */
    run_until_done(&b);
    assert_int_equal(b.res, UP_OK);
    assert_int_equal(b.status, 200);
    assert_true(b.replayed);
    assert_int_equal(accepts, 2);
}

static void on_guard(uv_timer_t *t)
{
    (void)t;
}

/* A transfer started between passes finds the connection that went idle in the last one:
 * it waits for this pass's check, the poll does not block meanwhile (a guard timer would
 * end it after 2 s), and the check hands it the connection, not checked: one connection. */
static void test_waits_for_check(void **state)
{
    struct rec a = {0}, b = {0};
    static uv_timer_t guard; /* a failed assertion leaves it to the teardown */
    uint64_t t0;

    (void)state;
    mode = EACH;
    start(&a, port, 0, 0);
    run_until_done(&a); /* ends with the pass it went idle in */
    start(&b, port, 0, 0);
    assert_null(b.t->h1.conn);
    assert_true(b.t->h1.waiting);
    uv_timer_init(&loop, &guard);
    uv_timer_start(&guard, on_guard, 2000, 0);
    uv_update_time(&loop);
    t0 = uv_now(&loop);
    uv_run(&loop, UV_RUN_ONCE);
    uv_update_time(&loop);
    assert_true(uv_now(&loop) - t0 < 1000);
    assert_non_null(b.t->h1.conn);
    assert_true(b.t->request_sent);
    uv_close((uv_handle_t *)&guard, NULL);
    run_until_done(&b);
    assert_int_equal(b.res, UP_OK);
    assert_false(b.replayed);
    assert_int_equal(accepts, 1);
}

/* The next transfer is the last one's object with its request and response heads' storage:
 * no malloc. */
static void test_finished_transfer_kept(void **state)
{
    struct rec a = {0}, b = {0};
    struct up_transfer *kept;
    char *kept_req, *kept_head;

    (void)state;
    mode = EACH;
    start(&a, port, 0, 0);
    kept_head = a.t->head.p;
    assert_non_null(kept_head);
    run_until_done(&a);
    assert_int_equal(m->n_spare, 1);
    assert_int_equal(m->n_spare_req, 1);
    kept = m->spare[0];
    kept_req = m->spare_req[0].p;
    assert_true(POISONED(kept)); /* a use after release is still reported */
    assert_true(POISONED(kept_req));
    start(&b, port, 0, 0);
    assert_ptr_equal(b.t, kept);
    assert_ptr_equal(b.t->h1.req.p, kept_req);
    assert_ptr_equal(b.t->head.p, kept_head); /* its response head's storage too, empty */
    assert_int_equal(b.t->head.len, 0);
    assert_int_equal(b.t->head.max, UP_MAX_HEAD_BYTES);
    assert_int_equal(m->n_spare, 0);
    run_until_done(&b);
    assert_int_equal(b.res, UP_OK);
    assert_int_equal(b.status, 200);
    assert_int_equal(m->n_spare, 1);
}

/* More transfers finishing than the multi keeps: the rest are freed (LeakSanitizer would
 * report one kept past the bound and never freed). */
static void test_spares_bounded(void **state)
{
    struct rec r[UP_SPARE_TRANSFERS + 3] = {{0}};

    (void)state;
    mode = EACH;
    for (size_t i = 0; i < BSC_ARRAY_LEN(r); i++)
        start(&r[i], port, 0, 0);
    for (size_t i = 0; i < BSC_ARRAY_LEN(r); i++) {
        run_until_done(&r[i]);
        assert_int_equal(r[i].res, UP_OK);
    }
    assert_int_equal(m->n_spare, UP_SPARE_TRANSFERS);
    assert_true(m->n_spare_req <= UP_SPARE_TRANSFERS);
}

/* A request head that grew past UP_SPARE_REQ_KEEP is freed when its answer's head came. */
static void test_big_request_head_not_kept(void **state)
{
    static char big[UP_SPARE_REQ_KEEP + 100];
    struct rec a = {0};

    (void)state;
    mode = EACH;
    memset(big, 'x', sizeof(big) - 1);
    memcpy(big, "X-Big: ", 7);
    start_with(&a, big);
    assert_true(a.t->h1.req.cap > UP_SPARE_REQ_KEEP);
    run_until_done(&a);
    assert_int_equal(a.res, UP_OK);
    assert_int_equal(m->n_spare, 1);
    assert_int_equal(m->n_spare_req, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_total_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connect_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pause_resume, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_in_head_closes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_with_work_left, setup, teardown),
        cmocka_unit_test_setup_teardown(test_closed_after_last_poll_replays, setup, teardown),
        cmocka_unit_test_setup_teardown(test_waits_for_check, setup, teardown),
        cmocka_unit_test_setup_teardown(test_finished_transfer_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spares_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_big_request_head_not_kept, setup, teardown),
    };

    return cmocka_run_group_tests_name("h1_client", tests, NULL, NULL);
}
