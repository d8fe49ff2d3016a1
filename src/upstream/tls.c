/* SPDX-License-Identifier: MIT */
/* tls.c -- the builtin client's TLS sessions on OpenSSL 3 (see tls.h). The socket side is
 * a BIO method of our own: its read takes from the slice tls_feed borrowed (the loop's read
 * buffer, so ciphertext is not copied on the way in; a partial record is kept by OpenSSL's
 * record layer), its write appends to the connection's <out> buffer. With
 * SSL_MODE_RELEASE_BUFFERS OpenSSL frees its record buffers when they are empty, so an idle
 * or held connection keeps little besides the SSL object. */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "core/str.h"
#include "upstream/tls.h"

static const unsigned char alpn_http11[] = "\x08http/1.1";

/* ---- the BIO ------------------------------------------------------------------------------ */

static BIO_METHOD *bio_method; /* made once, read-only afterwards */

static int bio_read(BIO *b, char *buf, int len)
{
    struct tls_conn *tc = BIO_get_data(b);
    size_t n;

    BIO_clear_retry_flags(b);
    if (!tc->in_len) {
        BIO_set_retry_read(b);
        return -1;
    }
    n = tc->in_len < (size_t)len ? tc->in_len : (size_t)len;
    memcpy(buf, tc->in, n);
    tc->in += n;
    tc->in_len -= n;
    return (int)n;
}

static int bio_write(BIO *b, const char *buf, int len)
{
    struct tls_conn *tc = BIO_get_data(b);

    BIO_clear_retry_flags(b);
    if (bsc_buf_append(&tc->out, buf, (size_t)len) != BSC_OK)
        return -1;
    return len;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b;
    (void)num;
    (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int bio_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

static void make_bio_method(void)
{
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "bascule-uv");

    if (!m)
        return;
    BIO_meth_set_read(m, bio_read);
    BIO_meth_set_write(m, bio_write);
    BIO_meth_set_ctrl(m, bio_ctrl);
    BIO_meth_set_create(m, bio_create);
    bio_method = m;
}

static pthread_once_t bio_once = PTHREAD_ONCE_INIT;

/* ---- errors ------------------------------------------------------------------------------ */

/* SSL_get_error needs the thread's error queue empty before the call it judges. Every
 * failure here clears it after reading it, so it is empty but for what other code on the
 * thread left: peeking (cheap) before clearing (a loop over every slot) keeps the common
 * case cheap. */
static void errors_reset(void)
{
    if (ERR_peek_error())
        ERR_clear_error();
}

/* The first OpenSSL error queued (or <fallback>) in <err>; the queue is cleared. */
static void error_text(char *err, size_t errlen, const char *what, const char *fallback)
{
    unsigned long e = ERR_peek_error();
    char reason[120];

    if (e)
        ERR_error_string_n(e, reason, sizeof(reason));
    snprintf(err, errlen, "%s: %s", what, e ? reason : fallback);
    ERR_clear_error();
}

/* ---- trust -------------------------------------------------------------------------------- */

static int on_new_session(SSL *ssl, SSL_SESSION *s)
{
    struct tls_conn *tc = SSL_get_app_data(ssl);

    if (!tc || !tc->on_session)
        return 0; /* not kept: OpenSSL frees it */
    tc->on_session(tc->ud, s);
    return 1; /* the callee holds the reference */
}

static bool ctx_settings(SSL_CTX *ctx, const char *ca_file)
{
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    /* Sessions are kept per host by the pool (on_session), not in OpenSSL's cache. */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx, on_new_session);
    if (!SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) ||
        SSL_CTX_set_alpn_protos(ctx, alpn_http11, sizeof(alpn_http11) - 1) != 0)
        return false;
    if (ca_file)
        return SSL_CTX_load_verify_locations(ctx, ca_file, NULL) == 1;
    return SSL_CTX_set_default_verify_paths(ctx) == 1;
}

enum bsc_err tls_trust_new(const char *ca_file, struct tls_trust **out, char *err, size_t errlen)
{
    struct tls_trust *tr = calloc(1, sizeof(*tr));

    ERR_clear_error();
    pthread_once(&bio_once, make_bio_method);
    if (!tr || !bio_method || (ca_file && !(tr->ca_file = strdup(ca_file))) ||
        !(tr->ctx = SSL_CTX_new(TLS_client_method()))) {
        snprintf(err, errlen, "out of memory");
        tls_trust_free(tr);
        return BSC_ENOMEM;
    }
    if (!ctx_settings(tr->ctx, ca_file)) {
        error_text(err, errlen, ca_file ? ca_file : "the system's CA store", "cannot be loaded");
        tls_trust_free(tr);
        return BSC_EINVAL;
    }
    *out = tr;
    return BSC_OK;
}

void tls_trust_free(struct tls_trust *tr)
{
    if (!tr)
        return;
    SSL_CTX_free(tr->ctx);
    free(tr->ca_file);
    free(tr);
}

/* ---- a session ---------------------------------------------------------------------------- */

static bool is_ip_literal(const char *host)
{
    unsigned char a[16];

    return inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;
}

/* SNI and the name (or address) the certificate must carry. */
static bool set_peer(SSL *ssl, const char *host)
{
    if (is_ip_literal(host))
        return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1;
    return SSL_set_tlsext_host_name(ssl, host) == 1 && SSL_set1_host(ssl, host) == 1;
}

/* Offers a copy of <resume>: a TLS 1.3 session that resumed is marked not resumable by
 * OpenSSL (tickets are meant for one use), and the host's copy must outlive this connection
 * for the ones that open before a new ticket comes. A failure only means a full handshake. */
static void offer(SSL *ssl, SSL_SESSION *resume)
{
    SSL_SESSION *copy = SSL_SESSION_dup(resume);

    if (copy) {
        (void)SSL_set_session(ssl, copy);
        SSL_SESSION_free(copy);
    }
    ERR_clear_error();
}

enum bsc_err tls_conn_start(struct tls_conn *tc, const struct tls_trust *tr, const char *host,
                            SSL_SESSION *resume)
{
    BIO *bio;

    ERR_clear_error();
    bsc_buf_init(&tc->out, TLS_OUT_MAX);
    tc->in = NULL;
    tc->in_len = 0;
    tc->shook = tc->peer_closed = tc->broken = false;
    if (!(tc->ssl = SSL_new(tr->ctx)))
        return BSC_ENOMEM;
    if (!(bio = BIO_new(bio_method))) {
        tls_conn_cleanup(tc);
        return BSC_ENOMEM;
    }
    BIO_set_data(bio, tc);
    SSL_set_bio(tc->ssl, bio, bio); /* the SSL owns it */
    SSL_set_app_data(tc->ssl, tc);
    SSL_set_connect_state(tc->ssl);
    if (!set_peer(tc->ssl, host)) {
        tls_conn_cleanup(tc);
        return BSC_EINVAL;
    }
    if (resume)
        offer(tc->ssl, resume);
    return BSC_OK;
}

void tls_conn_cleanup(struct tls_conn *tc)
{
    if (tc->ssl) {
        /* Freed without a shutdown, a session is marked not resumable, and the host's
         * newest one is this connection's: an established connection closes quietly,
         * unless it failed (OpenSSL's caution then stands). */
        if (tc->shook && !tc->broken)
            SSL_set_shutdown(tc->ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
        SSL_set_app_data(tc->ssl, NULL);
        SSL_free(tc->ssl);
        tc->ssl = NULL;
    }
    bsc_buf_cleanup(&tc->out);
    ERR_clear_error();
}

void tls_feed(struct tls_conn *tc, const char *p, size_t len)
{
    tc->in = p;
    tc->in_len = len;
}

/* Why the handshake failed: the certificate's fault when verification said so. */
static void handshake_error(struct tls_conn *tc, int rc, char *err, size_t errlen)
{
    long v = SSL_get_verify_result(tc->ssl);
    const char *host = SSL_get0_peername(tc->ssl);

    if (v != X509_V_OK) {
        if (!host)
            host = X509_VERIFY_PARAM_get0_host(SSL_get0_param(tc->ssl), 0);
        snprintf(err, errlen, "TLS certificate verify failed: %s%s%s",
                 X509_verify_cert_error_string(v), host ? " for " : "", host ? host : "");
        ERR_clear_error();
        return;
    }
    if (SSL_get_error(tc->ssl, rc) == SSL_ERROR_SYSCALL && !ERR_peek_error()) {
        snprintf(err, errlen, "TLS handshake: connection closed by upstream");
        return;
    }
    error_text(err, errlen, "TLS handshake", "failed");
}

enum tls_step tls_handshake(struct tls_conn *tc, char *err, size_t errlen)
{
    int rc;

    errors_reset();
    rc = SSL_do_handshake(tc->ssl);
    if (rc == 1) {
        tc->shook = true;
        return TLS_DONE;
    }
    if (SSL_get_error(tc->ssl, rc) == SSL_ERROR_WANT_READ)
        return TLS_AGAIN; /* all that was fed is taken (the BIO ran dry) */
    handshake_error(tc, rc, err, errlen);
    return TLS_FAIL;
}

ssize_t tls_read(struct tls_conn *tc, char *buf, size_t cap, char *err, size_t errlen)
{
    int rc, e;

    if (tc->peer_closed)
        return TLS_READ_CLOSED;
    /* Nothing fed is left and nothing decrypted waits: what OpenSSL may hold is part of a
     * record, which needs more bytes. Spares an SSL_read that would only say so. */
    if (!tc->in_len && !SSL_pending(tc->ssl))
        return 0;
    errors_reset();
    rc = SSL_read(tc->ssl, buf, cap > INT32_MAX ? INT32_MAX : (int)cap);
    if (rc > 0)
        return rc;
    e = SSL_get_error(tc->ssl, rc);
    if (e == SSL_ERROR_WANT_READ)
        return 0; /* all that was fed is taken (the BIO ran dry) */
    if (e == SSL_ERROR_ZERO_RETURN) {
        tc->peer_closed = true;
        return TLS_READ_CLOSED;
    }
    tc->broken = true;
    error_text(err, errlen, "TLS", "broken record");
    return TLS_READ_ERROR;
}

enum bsc_err tls_write(struct tls_conn *tc, const void *p, size_t len)
{
    size_t done = 0;

    errors_reset();
    /* Bounded: each pass writes at least one byte or returns. */
    while (done < len) {
        size_t n = len - done > INT32_MAX ? INT32_MAX : len - done;
        int rc = SSL_write(tc->ssl, (const char *)p + done, (int)n);

        if (rc <= 0) {
            ERR_clear_error();
            return tc->out.len >= TLS_OUT_MAX ? BSC_ENOMEM : BSC_EINVAL;
        }
        done += (size_t)rc;
    }
    return BSC_OK;
}

bool tls_resumed(const struct tls_conn *tc)
{
    return tc->ssl && SSL_session_reused(tc->ssl);
}
