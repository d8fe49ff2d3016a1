/* SPDX-License-Identifier: MIT */
/* test_upstream_tls.c -- the builtin client's TLS sessions (upstream/tls.c) against an
 * OpenSSL server in memory (its certificate made by the openssl command in a temp dir:
 * P-256, IP 127.0.0.1 only, its own CA): a handshake trusted through the CA file, data both
 * ways in any split, close_notify, a forged record, session resumption with the copy
 * offered; and the refusals with their reasons: a wrong host name, an untrusted
 * certificate, a CA file that cannot be loaded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/ssl.h>

#include "upstream/tls.h"

static char dir[64], cert[96], key[96];
static SSL_CTX *server_ctx;
static char wire[64 * 1024];

static int setup(void **state)
{
    char cmd[512];

    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/bascule-unit-tls-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(cert, sizeof(cert), "%s/ca.pem", dir);
    snprintf(key, sizeof(key), "%s/key.pem", dir);
    snprintf(cmd, sizeof(cmd),
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-days 1 -subj /CN=unit -addext subjectAltName=IP:127.0.0.1 "
             "-addext basicConstraints=critical,CA:TRUE -keyout %s -out %s >/dev/null 2>&1",
             key, cert);
    if (system(cmd) != 0)
        return -1;
    server_ctx = SSL_CTX_new(TLS_server_method());
    if (!server_ctx || SSL_CTX_use_certificate_file(server_ctx, cert, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_use_PrivateKey_file(server_ctx, key, SSL_FILETYPE_PEM) != 1)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    SSL_CTX_free(server_ctx);
    unlink(cert);
    unlink(key);
    rmdir(dir);
    return 0;
}

struct pair {
    struct tls_conn c;
    SSL *s;
    SSL_SESSION *kept; /* the newest session the client was given */
    char err[TLS_ERR_MAX];
};

static void keep(void *ud, SSL_SESSION *s)
{
    struct pair *p = ud;

    SSL_SESSION_free(p->kept);
    p->kept = s;
}

static void pair_start(struct pair *p, const struct tls_trust *tr, const char *host,
                       SSL_SESSION *resume)
{
    assert_int_equal(tls_conn_start(&p->c, tr, host, resume), BSC_OK);
    p->c.on_session = keep;
    p->c.ud = p;
    assert_non_null(p->s = SSL_new(server_ctx));
    SSL_set_bio(p->s, BIO_new(BIO_s_mem()), BIO_new(BIO_s_mem()));
    SSL_set_accept_state(p->s);
}

/* Client bytes to the server. */
static void up(struct pair *p)
{
    if (p->c.out.len)
        assert_int_equal(BIO_write(SSL_get_rbio(p->s), p->c.out.p, (int)p->c.out.len),
                         (int)p->c.out.len);
    bsc_buf_reset(&p->c.out);
}

/* Server bytes into <wire>; the count. */
static size_t down(struct pair *p)
{
    int n = BIO_read(SSL_get_wbio(p->s), wire, (int)sizeof(wire));

    return n > 0 ? (size_t)n : 0;
}

static enum tls_step handshake(struct pair *p)
{
    enum tls_step st = TLS_AGAIN;

    for (int i = 0; i < 8 && st == TLS_AGAIN; i++) {
        st = tls_handshake(&p->c, p->err, sizeof(p->err));
        up(p);
        (void)SSL_do_handshake(p->s);
        tls_feed(&p->c, wire, down(p));
    }
    if (st == TLS_DONE) /* the server's last flight (tickets): taken, no data */
        assert_int_equal(tls_read(&p->c, wire + sizeof(wire) / 2, 64, p->err, sizeof(p->err)), 0);
    return st;
}

static void pair_end(struct pair *p)
{
    tls_conn_cleanup(&p->c);
    SSL_free(p->s);
    SSL_SESSION_free(p->kept);
    p->kept = NULL;
}

static struct tls_trust *trust_cert(void)
{
    struct tls_trust *tr = NULL;
    char err[TLS_ERR_MAX];

    assert_int_equal(tls_trust_new(cert, &tr, err, sizeof(err)), BSC_OK);
    return tr;
}

static void test_data_both_ways_and_close(void **state)
{
    struct tls_trust *tr = trust_cert();
    struct pair p = {0};
    static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
    char got[256], in[64];
    size_t n, len = 0;

    (void)state;
    pair_start(&p, tr, "127.0.0.1", NULL);
    assert_int_equal(handshake(&p), TLS_DONE);
    assert_true(p.c.shook);
    assert_non_null(p.kept); /* a TLS 1.3 ticket came after the handshake */
    assert_int_equal(tls_write(&p.c, "GET / HTTP/1.1\r\n\r\n", 18), BSC_OK);
    up(&p);
    assert_int_equal(SSL_read(p.s, in, sizeof(in)), 18);
    assert_int_equal(SSL_write(p.s, resp, (int)strlen(resp)), (int)strlen(resp));
    n = down(&p);
    /* One byte at a time: every piece is taken, the record comes out once it is whole. */
    for (size_t i = 0; i < n; i++) {
        ssize_t r;

        tls_feed(&p.c, wire + i, 1);
        while ((r = tls_read(&p.c, got + len, sizeof(got) - len, p.err, sizeof(p.err))) > 0)
            len += (size_t)r;
        assert_int_equal(r, 0);
        assert_int_equal(p.c.in_len, 0);
    }
    assert_int_equal(len, strlen(resp));
    assert_memory_equal(got, resp, len);
    (void)SSL_shutdown(p.s);
    tls_feed(&p.c, wire, down(&p));
    assert_int_equal(tls_read(&p.c, got, sizeof(got), p.err, sizeof(p.err)), TLS_READ_CLOSED);
    assert_true(p.c.peer_closed);
    pair_end(&p);
    tls_trust_free(tr);
}

static void test_forged_record_is_an_error(void **state)
{
    struct tls_trust *tr = trust_cert();
    struct pair p = {0};
    char forged[37] = "\x17\x03\x03\x00\x20", got[64];

    (void)state;
    memset(forged + 5, 'A', 32);
    pair_start(&p, tr, "127.0.0.1", NULL);
    assert_int_equal(handshake(&p), TLS_DONE);
    tls_feed(&p.c, forged, sizeof(forged));
    assert_int_equal(tls_read(&p.c, got, sizeof(got), p.err, sizeof(p.err)), TLS_READ_ERROR);
    assert_non_null(strstr(p.err, "TLS"));
    pair_end(&p);
    tls_trust_free(tr);
}

static void test_wrong_host_refused(void **state)
{
    struct tls_trust *tr = trust_cert();
    struct pair p = {0};

    (void)state;
    pair_start(&p, tr, "localhost", NULL); /* the certificate names IP 127.0.0.1 only */
    assert_int_equal(handshake(&p), TLS_FAIL);
    assert_non_null(strstr(p.err, "certificate verify failed"));
    assert_non_null(strstr(p.err, "localhost"));
    pair_end(&p);
    pair_start(&p, tr, "127.0.0.2", NULL); /* another address */
    assert_int_equal(handshake(&p), TLS_FAIL);
    assert_non_null(strstr(p.err, "certificate verify failed"));
    pair_end(&p);
    tls_trust_free(tr);
}

static void test_untrusted_refused(void **state)
{
    struct tls_trust *tr = NULL;
    struct pair p = {0};
    char err[TLS_ERR_MAX];

    (void)state;
    assert_int_equal(tls_trust_new(NULL, &tr, err, sizeof(err)), BSC_OK); /* the system's CAs */
    pair_start(&p, tr, "127.0.0.1", NULL);
    assert_int_equal(handshake(&p), TLS_FAIL);
    assert_non_null(strstr(p.err, "certificate verify failed"));
    pair_end(&p);
    tls_trust_free(tr);
}

static void test_bad_ca_file(void **state)
{
    struct tls_trust *tr = NULL;
    char err[TLS_ERR_MAX], path[128];

    (void)state;
    snprintf(path, sizeof(path), "%s/missing.pem", dir);
    assert_int_equal(tls_trust_new(path, &tr, err, sizeof(err)), BSC_EINVAL);
    assert_null(tr);
    assert_non_null(strstr(err, "missing.pem"));
}

static void test_resumption_with_a_copy(void **state)
{
    struct tls_trust *tr = trust_cert();
    struct pair first = {0}, p = {0};
    SSL_SESSION *s;

    (void)state;
    pair_start(&first, tr, "127.0.0.1", NULL);
    assert_int_equal(handshake(&first), TLS_DONE);
    assert_false(tls_resumed(&first.c));
    s = first.kept;
    first.kept = NULL;
    pair_end(&first);
    /* The same session offered twice: each connection resumes (a copy is offered, so the
     * one kept stays resumable after a TLS 1.3 resumption used it). */
    for (int i = 0; i < 2; i++) {
        pair_start(&p, tr, "127.0.0.1", s);
        assert_int_equal(handshake(&p), TLS_DONE);
        assert_true(tls_resumed(&p.c));
        pair_end(&p);
    }
    SSL_SESSION_free(s);
    tls_trust_free(tr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_data_both_ways_and_close),
        cmocka_unit_test(test_forged_record_is_an_error),
        cmocka_unit_test(test_wrong_host_refused),
        cmocka_unit_test(test_untrusted_refused),
        cmocka_unit_test(test_bad_ca_file),
        cmocka_unit_test(test_resumption_with_a_copy),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
