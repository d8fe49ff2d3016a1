/* SPDX-License-Identifier: MIT */
/* tls.h -- the builtin client's TLS, on OpenSSL 3, without sockets: a session reads the
 * ciphertext a socket read handed over (tls_feed, not copied) through a BIO of our own and
 * writes the ciphertext to send into its <out> buffer, which the caller writes to the
 * socket. No call blocks. One trust (an SSL_CTX: the system's CAs or a provider's
 * tls.ca_file) serves every connection of a loop that uses it. Peer verification is always
 * on: the chain, the host name (or IP address) of the URL, TLS >= 1.2; ALPN offers only
 * "http/1.1". docs/internals/upstream.md ("TLS of its own"). */
#ifndef BSC_UPSTREAM_TLS_H
#define BSC_UPSTREAM_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <openssl/ssl.h>

#include "core/buf.h"
#include "core/err.h"

#define TLS_ERR_MAX 200 /* room for a failure's text */
#define TLS_OUT_MAX (64u * 1024u * 1024u) /* ciphertext waiting to go out; a request body is
                                           * bounded well below */

/* The CAs a connection trusts and the settings every connection shares. */
struct tls_trust {
    struct tls_trust *next; /* in its owner's list */
    char *ca_file;          /* owned; NULL = the system's store */
    SSL_CTX *ctx;           /* owned */
};

/* The trust for <ca_file> (NULL: the system's CAs). BSC_EINVAL (the file cannot be loaded)
 * or BSC_ENOMEM, with the reason in <err>. */
enum bsc_err tls_trust_new(const char *ca_file, struct tls_trust **out, char *err, size_t errlen);
void tls_trust_free(struct tls_trust *tr);

struct tls_conn {
    SSL *ssl;
    struct bsc_buf out; /* ciphertext to send */
    const char *in;     /* borrowed: ciphertext fed and not yet taken */
    size_t in_len;
    /* A new session (ticket) for this connection's peer: offer it on the next connect.
     * The callee takes the reference. */
    void (*on_session)(void *ud, SSL_SESSION *s);
    void *ud;
    bool shook;       /* the handshake completed */
    bool peer_closed; /* the peer sent close_notify */
    bool broken;      /* a fatal error (alert, broken record): its session is not kept */
};

/* Starts a client session on <tc> to <host> (a name: SNI and name verification; an IP
 * literal: address verification, no SNI), offering <resume> when not NULL. */
enum bsc_err tls_conn_start(struct tls_conn *tc, const struct tls_trust *tr, const char *host,
                            SSL_SESSION *resume);
void tls_conn_cleanup(struct tls_conn *tc);

/* Hands <len> bytes of ciphertext to <tc>; they are borrowed until the next tls_read
 * or tls_handshake returns, which take all of them. */
void tls_feed(struct tls_conn *tc, const char *p, size_t len);

enum tls_step { TLS_AGAIN, TLS_DONE, TLS_FAIL };
/* Advances the handshake with what was fed; ciphertext to send lands in <out>. TLS_FAIL
 * with the reason (a verification failure names the certificate error and the host). */
enum tls_step tls_handshake(struct tls_conn *tc, char *err, size_t errlen);

#define TLS_READ_CLOSED (-1) /* the peer sent close_notify */
#define TLS_READ_ERROR  (-2) /* a fatal alert or a broken record: reason in <err> */
/* Plaintext decrypted from what was fed, at most <cap> bytes: > 0 bytes, 0 when all that
 * was fed is taken (a partial record is kept inside), or TLS_READ_CLOSED / _ERROR. */
ssize_t tls_read(struct tls_conn *tc, char *buf, size_t cap, char *err, size_t errlen);

/* Encrypts <len> bytes into <out>. BSC_ENOMEM, or BSC_EINVAL when the session failed. */
enum bsc_err tls_write(struct tls_conn *tc, const void *p, size_t len);

/* Whether the peer agreed to resume the session offered (for tests and metrics). */
bool tls_resumed(const struct tls_conn *tc);

#endif
