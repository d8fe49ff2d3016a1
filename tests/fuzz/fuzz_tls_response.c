/* SPDX-License-Identifier: MIT */
/* fuzz-sources: src/upstream/tls.c src/upstream/h1_wire.c src/upstream/h1_read.c src/upstream/line_rules.c */
/* fuzz-libs: -lssl -lcrypto */
/* fuzz_tls_response.c -- libFuzzer target for the builtin client's TLS glue (upstream/tls.c)
 * feeding the HTTP/1.1 response reader (upstream/h1_read.c), all in memory: a client
 * session of ours completes a real handshake with an OpenSSL server (a certificate made at
 * start, trusted through a CA file, verified for 127.0.0.1), sends a request, and then the
 * input is what the server sends. The first byte picks the mode and the piece size:
 *   - even: the rest is the plaintext the server writes (in records of up to <step>
 *     bytes), its ciphertext handed to the client in pieces of <step> bytes (partial
 *     records across feeds), then close_notify. Invariant: the client decrypts exactly the
 *     bytes written, in order, whatever the split, and then sees the close;
 *   - odd: the rest is raw bytes on the wire after the handshake (forged records). The
 *     client must take every byte fed and end with data, nothing, a close or an error,
 *     never loop.
 * Whatever comes out is fed to the response reader (then EOF) as h1_tls.c does. Built and
 * run by scripts/fuzz. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "core/buf.h"
#include "upstream/h1_wire.h"
#include "upstream/tls.h"

#define WIRE_MAX (256u * 1024u)

static SSL_CTX *server_ctx;
static struct tls_trust *trust;
static char wire[WIRE_MAX]; /* ciphertext from the server, handed to the client */

static void die(const char *what)
{
    fprintf(stderr, "fuzz_tls_response: invariant broken: %s\n", what);
    abort();
}

static bool add_ext(X509 *x, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509_EXTENSION *e;
    bool ok;

    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    if (!(e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value)))
        return false;
    ok = X509_add_ext(x, e, -1) == 1;
    X509_EXTENSION_free(e);
    return ok;
}

/* A self-signed P-256 certificate for IP 127.0.0.1, its own CA. */
static X509 *make_cert(EVP_PKEY *pk)
{
    X509 *x = X509_new();
    X509_NAME *n;

    if (!x)
        return NULL;
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_set_pubkey(x, pk);
    n = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"fuzz", -1, -1, 0);
    X509_set_issuer_name(x, n);
    if (!add_ext(x, NID_subject_alt_name, "IP:127.0.0.1") ||
        !add_ext(x, NID_basic_constraints, "critical,CA:TRUE") || !X509_sign(x, pk, EVP_sha256())) {
        X509_free(x);
        return NULL;
    }
    return x;
}

/* The client's trust: the certificate through a CA file, as a provider's tls.ca_file. */
static struct tls_trust *trust_for(X509 *x)
{
    char path[] = "/tmp/fuzz-tls-ca-XXXXXX", err[TLS_ERR_MAX];
    struct tls_trust *tr = NULL;
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

    if (f && PEM_write_X509(f, x) == 1 && fclose(f) == 0) {
        f = NULL;
        if (tls_trust_new(path, &tr, err, sizeof(err)) != BSC_OK)
            fprintf(stderr, "fuzz_tls_response: %s\n", err);
    }
    if (f)
        fclose(f);
    if (fd >= 0)
        unlink(path);
    return tr;
}

static void setup(void)
{
    EVP_PKEY *pk = EVP_EC_gen("P-256");
    X509 *x = pk ? make_cert(pk) : NULL;

    server_ctx = SSL_CTX_new(TLS_server_method());
    if (!x || !server_ctx || SSL_CTX_use_certificate(server_ctx, x) != 1 ||
        SSL_CTX_use_PrivateKey(server_ctx, pk) != 1 || !(trust = trust_for(x)))
        die("setup");
    X509_free(x);
    EVP_PKEY_free(pk);
}

/* Moves what the client wrote to the server. */
static void to_server(struct tls_conn *c, SSL *s)
{
    if (c->out.len && BIO_write(SSL_get_rbio(s), c->out.p, (int)c->out.len) != (int)c->out.len)
        die("server BIO write");
    bsc_buf_reset(&c->out);
}

/* What the server wrote, into <wire>; its length. */
static size_t from_server(SSL *s)
{
    int n = BIO_read(SSL_get_wbio(s), wire, (int)sizeof(wire));

    return n > 0 ? (size_t)n : 0;
}

static bool handshake(struct tls_conn *c, SSL *s)
{
    char err[TLS_ERR_MAX];

    /* Bounded: a TLS 1.3 handshake takes two client steps, 1.2 three. */
    for (int i = 0; i < 8; i++) {
        enum tls_step st = tls_handshake(c, err, sizeof(err));

        if (st == TLS_FAIL) {
            fprintf(stderr, "fuzz_tls_response: %s\n", err);
            return false;
        }
        to_server(c, s);
        (void)SSL_do_handshake(s);
        tls_feed(c, wire, from_server(s));
        if (st == TLS_DONE && SSL_is_init_finished(s))
            return true;
    }
    return false;
}

struct reader {
    struct h1_resp resp;
    struct bsc_buf head;
    enum h1_state st;
    struct bsc_buf plain; /* every byte the client decrypted */
};

static enum h1_take on_head(void *ud, int status)
{
    (void)ud;
    (void)status;
    return H1_GO;
}

static enum h1_take on_body(void *ud, const char *p, size_t len)
{
    (void)ud;
    (void)p;
    (void)len;
    return H1_GO;
}

/* Decrypts what was fed, as h1_tls.c does; false once the session ended (close, error). */
static bool drain(struct tls_conn *c, struct reader *r)
{
    static char buf[16384];
    char err[TLS_ERR_MAX];

    /* Bounded: each pass takes a record out of what was fed (at most WIRE_MAX bytes). */
    for (size_t guard = 0; guard <= WIRE_MAX; guard++) {
        ssize_t n = tls_read(c, buf, sizeof(buf), err, sizeof(err));

        if (n == 0) {
            if (c->in_len)
                die("bytes fed and not taken");
            return true;
        }
        if (n < 0)
            return false;
        if (bsc_buf_append(&r->plain, buf, (size_t)n) != BSC_OK)
            die("plain append");
        if (r->st == H1_MORE)
            r->st = h1_resp_feed(&r->resp, buf, (size_t)n, NULL);
    }
    die("tls_read did not stop");
    return false;
}

/* Hands <len> bytes of wire to the client in pieces of <step>. */
static bool feed_wire(struct tls_conn *c, struct reader *r, const char *p, size_t len, size_t step)
{
    for (size_t off = 0; off < len;) {
        size_t n = len - off < step ? len - off : step;

        tls_feed(c, p + off, n);
        off += n;
        if (!drain(c, r))
            return false;
    }
    return true;
}

static void keep_nothing(void *ud, SSL_SESSION *s)
{
    (void)ud;
    SSL_SESSION_free(s);
}

/* The server writes <data> in records of <step>, then close_notify. */
static void plaintext_mode(struct tls_conn *c, SSL *s, struct reader *r, const uint8_t *data,
                           size_t size, size_t step)
{
    size_t off = 0, len;
    bool open = true;

    while (off < size && open) {
        size_t n = size - off < step ? size - off : step;

        if (SSL_write(s, data + off, (int)n) != (int)n)
            die("server write");
        off += n;
        len = from_server(s);
        open = feed_wire(c, r, wire, len, step);
    }
    if (!open)
        die("the session ended before close_notify");
    (void)SSL_shutdown(s);
    len = from_server(s);
    if (feed_wire(c, r, wire, len, step) || !c->peer_closed)
        die("close_notify not seen");
    if (r->plain.len != size || (size && memcmp(r->plain.p, data, size) != 0))
        die("decrypted bytes differ from the bytes written");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char req[] = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                              "Content-Length: 2\r\n\r\n{}";
    struct tls_conn c = {0};
    struct reader r = {.st = H1_MORE};
    SSL *s;
    size_t step;

    if (!size || size > WIRE_MAX / 2)
        return 0;
    if (!server_ctx)
        setup();
    step = (data[0] >> 1) ? (size_t)(data[0] >> 1) * 37u : WIRE_MAX;
    if (tls_conn_start(&c, trust, "127.0.0.1", NULL) != BSC_OK || !(s = SSL_new(server_ctx)))
        die("start");
    c.on_session = keep_nothing;
    SSL_set_bio(s, BIO_new(BIO_s_mem()), BIO_new(BIO_s_mem()));
    SSL_set_accept_state(s);
    bsc_buf_init(&r.head, 4096);
    bsc_buf_init(&r.plain, WIRE_MAX);
    h1_resp_setup(&r.resp, on_head, on_body);
    h1_resp_start(&r.resp, &r.head, &r, false);
    /* The server's last flight (TLS 1.3 session tickets) is taken before anything else. */
    if (!handshake(&c, s) || !drain(&c, &r) || r.plain.len)
        die("handshake with our own server failed");
    if (tls_write(&c, req, sizeof(req) - 1) != BSC_OK)
        die("request write");
    to_server(&c, s);
    if (data[0] & 1)
        (void)feed_wire(&c, &r, (const char *)data + 1, size - 1, step);
    else
        plaintext_mode(&c, s, &r, data + 1, size - 1, step);
    if (r.st == H1_MORE)
        (void)h1_resp_eof(&r.resp);
    h1_resp_cleanup(&r.resp);
    bsc_buf_cleanup(&r.head);
    bsc_buf_cleanup(&r.plain);
    tls_conn_cleanup(&c);
    SSL_free(s);
    ERR_clear_error();
    return 0;
}
