/* SPDX-License-Identifier: MIT */
/* test_upstream_client.c -- the two upstream clients behind one table (transfer.c): the
 * client is chosen once per transfer by scheme, builtin_http and a proxy in the
 * environment; up_start links a transfer it started and leaves nothing behind when the
 * client refuses it; cancel, pause and resume reach the transfer's own client, for both
 * (a cancelled transfer closes its connection and calls nothing back; a refused connect
 * ends with one on_done). Against a server on the same loop that never answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "upstream/internal.h"

static uv_loop_t loop;
static struct up_multi *builtin_m; /* builtin_http: http:// goes through h1.c */
static struct up_multi *curl_m;    /* builtin_http off: everything through libcurl */
static uv_tcp_t server;
static int port;
static int server_eofs;  /* connections the client closed */
static int server_reads; /* reads with request bytes */

struct rec {
    struct up_transfer *t;
    int heads, data, done;
    enum up_result res;
};

static void sconn_closed(uv_handle_t *h)
{
    free(h);
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
    (void)b;
    if (n > 0)
        server_reads++;
    if (n < 0) {
        server_eofs++;
        uv_close((uv_handle_t *)s, sconn_closed);
    }
}

static void on_conn(uv_stream_t *srv, int status)
{
    uv_tcp_t *c = calloc(1, sizeof(*c));

    assert_int_equal(status, 0);
    uv_tcp_init(&loop, c);
    c->data = c;
    assert_int_equal(uv_accept(srv, (uv_stream_t *)c), 0);
    uv_read_start((uv_stream_t *)c, s_alloc, s_read);
}

static int setup(void **state)
{
    struct up_limits on = {.builtin_http = true, .max_cached_connections = 8};
    struct up_limits off = {.builtin_http = false, .max_cached_connections = 8};
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
    server_eofs = server_reads = 0;
    if (up_multi_new(&loop, &on, &builtin_m) != BSC_OK)
        return -1;
    return up_multi_new(&loop, &off, &curl_m) == BSC_OK ? 0 : -1;
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
    up_multi_free(builtin_m);
    up_multi_free(curl_m);
    uv_walk(&loop, walk_close, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    return uv_loop_close(&loop) == 0 ? 0 : -1;
}

static void on_head(void *ud, struct up_transfer *t, int status)
{
    (void)t;
    (void)status;
    ((struct rec *)ud)->heads++;
}

static bool on_data(void *ud, struct up_transfer *t, const char *p, size_t len)
{
    (void)t;
    (void)p;
    (void)len;
    ((struct rec *)ud)->data++;
    return false;
}

static void on_done(void *ud, struct up_transfer *t, enum up_result res, const char *detail)
{
    struct rec *r = ud;

    (void)t;
    (void)detail;
    r->done++;
    r->res = res;
}

static const struct up_callbacks cbs = {on_head, on_data, on_done};

static enum bsc_err start(struct up_multi *mm, struct rec *r, int to_port, size_t n_headers)
{
    static const char *hs[UP_REQUEST_MAX_HEADERS + 1];
    char url[64];
    struct up_request req = {
        .url = url, .method = "POST", .headers = hs, .n_headers = n_headers, .body = "{}",
        .body_len = 2,
    };

    for (size_t i = 0; i < BSC_ARRAY_LEN(hs); i++)
        hs[i] = "X-Test: 1";
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/x", to_port);
    return up_start(mm, &req, &cbs, r, &r->t);
}

/* Bounded: the loop runs until <flag> reaches <want> or the passes run out. */
static void run_until(const int *flag, int want)
{
    for (int i = 0; i < 100000 && *flag < want; i++)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(*flag, want);
}

static void test_choice(void **state)
{
    (void)state;
    assert_ptr_equal(up__client_for(builtin_m, "http://127.0.0.1:9/v1/x"), &up__h1_ops);
    assert_ptr_equal(up__client_for(builtin_m, "HTTP://localhost/v1/x"), &up__h1_ops);
    assert_ptr_equal(up__client_for(builtin_m, "https://127.0.0.1:9/v1/x"), &up__curl_ops);
    assert_ptr_equal(up__client_for(curl_m, "http://127.0.0.1:9/v1/x"), &up__curl_ops);
    assert_ptr_equal(up__client_for(curl_m, "https://127.0.0.1:9/v1/x"), &up__curl_ops);
    /* A proxy in the environment (read once by up_multi_new) is libcurl's to honour. */
    builtin_m->env_proxy = true;
    assert_ptr_equal(up__client_for(builtin_m, "http://127.0.0.1:9/v1/x"), &up__curl_ops);
    builtin_m->env_proxy = false;
    /* https:// too with builtin_https (http_client: builtin), unless a proxy is set. */
    builtin_m->builtin_https = true;
    assert_ptr_equal(up__client_for(builtin_m, "https://127.0.0.1:9/v1/x"), &up__h1_ops);
    assert_ptr_equal(up__client_for(builtin_m, "HTTPS://api.example.com/v1/x"), &up__h1_ops);
    builtin_m->env_proxy = true;
    assert_ptr_equal(up__client_for(builtin_m, "https://127.0.0.1:9/v1/x"), &up__curl_ops);
    builtin_m->env_proxy = false;
    builtin_m->builtin_https = false;
    assert_string_equal(up__h1_ops.name, "builtin");
    assert_string_equal(up__curl_ops.name, "curl");
}

/* A transfer the client refuses (too many header lines) is not left on the multi's list,
 * and nothing is ever called back. */
static void refused_start(struct up_multi *mm)
{
    struct rec r = {0};

    assert_int_equal(start(mm, &r, port, UP_REQUEST_MAX_HEADERS + 1), BSC_ELIMIT);
    assert_int_equal(up_multi_active(mm), 0);
    for (int i = 0; i < 20; i++)
        uv_run(&loop, UV_RUN_NOWAIT);
    assert_int_equal(r.done + r.heads + r.data, 0);
}

static void test_refused_start_builtin(void **state)
{
    (void)state;
    refused_start(builtin_m);
}

static void test_refused_start_curl(void **state)
{
    (void)state;
    refused_start(curl_m);
}

/* Started on its client, paused and resumed through the table, then cancelled: off the
 * list at once, its connection closed (the server sees EOF), no callback. */
static void cancel_through_table(struct up_multi *mm, const struct up_client_ops *want)
{
    struct rec r = {0};

    assert_int_equal(start(mm, &r, port, 1), BSC_OK);
    assert_ptr_equal(r.t->ops, want);
    assert_int_equal(up_multi_active(mm), 1);
    up_pause(r.t);
    up_resume(r.t);
    /* Until the request came: the connection exists and the upstream will see it go. */
    run_until(&server_reads, 1);
    up_cancel(r.t);
    assert_int_equal(up_multi_active(mm), 0);
    run_until(&server_eofs, 1);
    assert_int_equal(r.done + r.heads + r.data, 0);
}

static void test_cancel_builtin(void **state)
{
    (void)state;
    cancel_through_table(builtin_m, &up__h1_ops);
}

static void test_cancel_curl(void **state)
{
    (void)state;
    cancel_through_table(curl_m, &up__curl_ops);
}

/* A refused connect ends in one on_done from the loop, on either client. */
static void refused_connect(struct up_multi *mm)
{
    struct rec r = {0};
    static uv_tcp_t probe;
    struct sockaddr_in a;
    int len = sizeof(a);

    /* A port nobody listens on: bound, never listened. */
    uv_tcp_init(&loop, &probe);
    uv_ip4_addr("127.0.0.1", 0, &a);
    uv_tcp_bind(&probe, (const struct sockaddr *)&a, 0);
    uv_tcp_getsockname(&probe, (struct sockaddr *)&a, &len);
    assert_int_equal(start(mm, &r, ntohs(a.sin_port), 1), BSC_OK);
    assert_int_equal(r.done, 0); /* never from inside up_start */
    run_until(&r.done, 1);
    assert_int_equal(r.res, UP_CONNECT);
    assert_int_equal(up_multi_active(mm), 0);
    uv_close((uv_handle_t *)&probe, NULL);
}

static void test_refused_connect_builtin(void **state)
{
    (void)state;
    refused_connect(builtin_m);
}

static void test_refused_connect_curl(void **state)
{
    (void)state;
    refused_connect(curl_m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_choice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_start_builtin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_start_curl, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_builtin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_curl, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_connect_builtin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_connect_curl, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
