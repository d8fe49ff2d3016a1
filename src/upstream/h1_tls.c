/* SPDX-License-Identifier: MIT */
/* h1_tls.c -- the TLS layer of the builtin client's https:// connections: the handshake
 * once the TCP connection is up (its failures are UP_TLS), then every read is decrypted
 * into the loop's plaintext buffer and fed to the response reader, and the request is
 * encrypted into the session's output and sent in one write. The end of a response is
 * read from its framing (Content-Length, chunked) or, for a close-delimited body, from the
 * peer's close_notify alone: a TCP end without close_notify is a cut (the truncation
 * attack), never a complete answer. The session a host gives is offered on its next
 * connection. docs/internals/upstream.md ("TLS of its own"). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "upstream/internal.h"

/* ---- trust and sessions ----------------------------------------------------------------- */

static bool same_file(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

struct tls_trust *h1_trust_get(struct h1_pool *p, const char *ca_file, char *err, size_t errlen)
{
    struct tls_trust *tr;

    for (tr = p->trusts; tr; tr = tr->next) {
        if (same_file(tr->ca_file, ca_file))
            return tr;
    }
    if (tls_trust_new(ca_file, &tr, err, errlen) != BSC_OK)
        return NULL;
    tr->next = p->trusts;
    p->trusts = tr;
    return tr;
}

/* tls_conn.on_session: the host keeps the newest session its peer gave. */
static void keep_session(void *ud, SSL_SESSION *s)
{
    struct h1_host *h = ((struct h1_conn *)ud)->host;

    SSL_SESSION_free(h->session);
    h->session = s;
}

/* ---- writing ------------------------------------------------------------------------------ */

void h1_tls_out_sent(struct bsc_buf *b)
{
    if (b->cap > 4096)
        bsc_buf_cleanup(b);
    else
        bsc_buf_reset(b);
}

/* Any error but a full socket goes through uv_write, whose callback reports it (the
 * keep-alive race is judged there, as on http://). */
int h1_tls_flush(struct h1_conn *c)
{
    struct bsc_buf *o = &c->tls.out, swap;
    uv_buf_t b;
    int rc;

    if (c->writing || !o->len)
        return 0;
    b = uv_buf_init(o->p, (unsigned)o->len);
    rc = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    if (rc > 0 && (size_t)rc == o->len) {
        h1_tls_out_sent(o);
        return 0;
    }
    if (rc > 0)
        bsc_buf_consume(o, (size_t)rc);
    swap = c->wout; /* empty: no write is in flight */
    c->wout = *o;
    *o = swap;
    b = uv_buf_init(c->wout.p, (unsigned)c->wout.len);
    c->wreq.data = c;
    rc = uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, h1_on_written);
    if (rc != 0)
        return rc;
    c->writing = true;
    return 0;
}

/* The head and body in one record when they fit one (each record costs its own seal and
 * header), put together in the pool's seal buffer; else one after the other. */
static enum bsc_err encrypt_request(struct h1_conn *c, struct up_transfer *t)
{
    char *one = c->host->pool->seal;
    size_t head = t->h1.req.len, body = t->h1.body_len;
    enum bsc_err err;

    if (head + body <= sizeof(c->host->pool->seal)) {
        memcpy(one, t->h1.req.p, head);
        if (body)
            memcpy(one + head, t->h1.body, body);
        return tls_write(&c->tls, one, head + body);
    }
    if ((err = tls_write(&c->tls, t->h1.req.p, head)) != BSC_OK)
        return err;
    return body ? tls_write(&c->tls, t->h1.body, body) : BSC_OK;
}

void h1_tls_send_request(struct h1_conn *c, struct up_transfer *t)
{
    int rc;

    if (encrypt_request(c, t) != BSC_OK) {
        h1_later(t, UP_RESET, "cannot encrypt the request");
        return;
    }
    if ((rc = h1_tls_flush(c)) != 0) {
        h1_later(t, UP_RESET, uv_strerror(rc));
        return;
    }
    if (!c->writing)
        t->request_sent = true;
    if (!c->resp.hold)
        h1_read_start(c);
}

/* ---- the handshake ------------------------------------------------------------------------ */

static void handshake_failed(struct h1_conn *c, const char *why)
{
    struct up_transfer *t = c->t;

    if (!t) {
        h1_conn_close(c);
        return;
    }
    snprintf(t->errbuf, sizeof(t->errbuf), "%s", why);
    h1_finish(t, UP_TLS, t->errbuf);
}

/* Advances the handshake with what was fed. True when it is done and <c> is still open. */
static bool handshake_step(struct h1_conn *c)
{
    char err[TLS_ERR_MAX];
    enum tls_step st = tls_handshake(&c->tls, err, sizeof(err));
    int rc;

    if (st == TLS_FAIL) {
        handshake_failed(c, err);
        return false;
    }
    if ((rc = h1_tls_flush(c)) != 0) {
        handshake_failed(c, uv_strerror(rc));
        return false;
    }
    if (st == TLS_AGAIN)
        return false;
    c->connected = true;
    h1_conn_ready(c); /* the request goes out, or the connection goes idle */
    return !c->closing;
}

bool h1_tls_begin(struct h1_conn *c)
{
    struct h1_host *h = c->host;

    if (tls_conn_start(&c->tls, h->trust, h->name, h->session) != BSC_OK)
        return false;
    c->tls.on_session = keep_session;
    c->tls.ud = c;
    bsc_buf_init(&c->wout, TLS_OUT_MAX);
    h1_read_start(c);
    (void)handshake_step(c); /* the ClientHello; a failure is finished there */
    return true;
}

/* ---- reading ------------------------------------------------------------------------------ */

/* An idle connection's records: a session ticket is taken, anything else closes it. True
 * when it was closed. Any plaintext closes it, so a few bytes of room do: not the loop's
 * buffers, which a reader may be in the middle of (h1_tls_stale runs from dispatch). */
static bool idle_records(struct h1_conn *c)
{
    char err[TLS_ERR_MAX], plain[64];

    if (tls_read(&c->tls, plain, sizeof(plain), err, sizeof(err)) == 0)
        return false;
    h1_conn_close(c); /* data nobody asked for, close_notify or a broken record */
    return true;
}

/* The records of a response, in the order they came; what the reader leaves decides. */
static void response_records(struct h1_conn *c, struct up_transfer *t)
{
    struct h1_pool *p = c->host->pool;
    bool done = false; /* the response is complete; what follows must be no data */

    /* Bounded: each pass takes a record out of what was fed, or returns. */
    for (;;) {
        ssize_t n = tls_read(&c->tls, p->pbuf, sizeof(p->pbuf), t->errbuf, sizeof(t->errbuf));
        enum h1_state st;
        size_t used = 0;

        if (n == 0)
            break;
        if (n < 0 && done) {
            c->spent = true; /* close_notify (or a broken record) after a whole answer */
            break;
        }
        if (n == TLS_READ_CLOSED) {
            h1_conn_broke(c, t, true, "connection closed by upstream before the response ended");
            return;
        }
        if (n < 0) {
            h1_conn_broke(c, t, false, t->errbuf);
            return;
        }
        if (done) {
            h1_after_feed(c, t, H1_DONE, true);
            return;
        }
        st = h1_resp_feed(&c->resp, p->pbuf, (size_t)n, &used);
        if (st == H1_DONE && used == (size_t)n && !t->cancelled) {
            done = true;
            continue;
        }
        if (st != H1_MORE || t->cancelled) {
            h1_after_feed(c, t, st, used < (size_t)n);
            return;
        }
    }
    h1_after_feed(c, t, done ? H1_DONE : H1_MORE, false);
}

/* The TCP connection ended or broke. Without a close_notify first, no response ends here. */
static void tcp_ended(struct h1_conn *c, ssize_t nread)
{
    struct up_transfer *t = c->t;

    if (!c->connected) {
        handshake_failed(c, nread == UV_EOF ? "TLS handshake: connection closed by upstream"
                                            : uv_strerror((int)nread));
        return;
    }
    if (!t) {
        h1_conn_close(c);
        return;
    }
    h1_conn_broke(c, t, false, nread == UV_EOF ? "connection closed by upstream without TLS "
                                                 "close_notify before the response ended"
                                               : uv_strerror((int)nread));
}

void h1_tls_on_read(struct h1_conn *c, ssize_t nread, const uv_buf_t *buf)
{
    if (nread == 0 || c->closing)
        return;
    if (nread < 0) {
        tcp_ended(c, nread);
        return;
    }
    tls_feed(&c->tls, buf->base, (size_t)nread);
    if (!c->connected && !handshake_step(c))
        return;
    if (!c->t) {
        (void)idle_records(c);
        return;
    }
    response_records(c, c->t);
}

/* No system call: after its read watcher had a whole poll (h1_idle_settled), every record
 * that came was taken there (a ticket) or closed the connection (data, close_notify, an
 * alert), so an idle session holds nothing decrypted; what it may still hold is the start of
 * a record whose rest had not come, which h1_tls_stale reads on. */
bool h1_tls_held(const struct h1_conn *c)
{
    return c->tls.peer_closed || SSL_has_pending(c->tls.ssl) == 1;
}

/* Runs from dispatch, maybe inside a reader's callback while the loop's read buffer is being
 * parsed: the bytes land on the stack. A record cut by its end stays inside OpenSSL and is
 * completed by the next read. */
bool h1_tls_stale(struct h1_conn *c)
{
    char b[2048];
    uv_os_fd_t fd;
    ssize_t n;

    if (uv_fileno((const uv_handle_t *)&c->tcp, &fd) != 0)
        return true;
    n = recv(fd, b, sizeof(b), MSG_DONTWAIT);
    if (n < 0)
        return errno != EAGAIN && errno != EWOULDBLOCK;
    if (n == 0)
        return true;
    tls_feed(&c->tls, b, (size_t)n);
    return idle_records(c);
}
