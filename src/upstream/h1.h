/* SPDX-License-Identifier: MIT */
/* h1.h -- the builtin HTTP/1.1 client for http:// and https:// upstreams, shared by h1.c
 * (one transfer on a connection), h1_tls.c (the TLS layer of an https:// connection) and
 * h1_pool.c (connections per host:port and trust, name resolution, limits, waiting
 * transfers, idle connections). Only the upstream module includes it. */
#ifndef BSC_UPSTREAM_H1_H
#define BSC_UPSTREAM_H1_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "core/buf.h"
#include "upstream/h1_wire.h"
#include "upstream/tls.h"
#include "upstream/upstream.h"

#define H1_READ_BUFFER     (64u * 1024u)
#define H1_REQ_HEAD_MAX    (1024u * 1024u) /* the request head we write */
#define H1_IDLE_MS         60000u  /* an idle connection is closed after this */
#define H1_SWEEP_MS        5000u   /* how often idle connections are looked at */
#define H1_CONNECT_DEFAULT 300000u /* libcurl's default connect timeout */
#define H1_PLAIN_BUFFER    (16u * 1024u) /* one TLS record's plaintext at most */

struct h1_pool;
struct h1_conn;

/* One upstream host:port (and trust, for https) of a pool: its address, idle connections,
 * waiting transfers, and the TLS session to offer on its next connection. */
struct h1_host {
    struct h1_host *next;
    struct h1_pool *pool;
    char *name; /* owned: the host as in the URL (no brackets) */
    uint16_t port;
    struct tls_trust *trust; /* borrowed from the pool: https, else NULL */
    SSL_SESSION *session;    /* held: the last session the host gave, or NULL */
    struct sockaddr_storage addr; /* once resolved */
    uv_getaddrinfo_t gai;
    bool resolved, resolving;
    struct h1_conn *idle; /* idle connections, most recent first */
    unsigned n_conns;     /* open ones: connecting, busy or idle */
    struct up_transfer *wait_head, *wait_tail; /* waiting for an address or a slot */
};

struct h1_conn {
    uv_tcp_t tcp;
    uv_timer_t timer; /* the connect and total deadlines of its transfer */
    uv_connect_t creq;
    uv_write_t wreq;
    struct h1_host *host;
    struct h1_conn *prev, *next; /* in the host's idle list */
    struct up_transfer *t;       /* the transfer on it; NULL when idle */
    struct h1_resp resp;
    struct tls_conn tls; /* https: the session (tls.ssl != NULL) */
    struct bsc_buf wout; /* https: ciphertext a uv_write is sending */
    uint64_t idle_since;
    uint64_t idle_pass; /* the pool's <passes> when it went idle */
    unsigned open; /* handles whose close callback is pending */
    /* connected: the TCP connection is up and, for https, its handshake done */
    bool connected, reused, writing, reading, idle, closing;
    bool spent; /* must not carry another request (bytes after the response, EOF) */
};

struct h1_pool {
    uv_loop_t *loop;
    struct up_limits lim;
    struct h1_host *hosts;
    struct tls_trust *trusts; /* owned: one per CA file used (NULL: the system's) */
    uv_timer_t sweep; /* closes idle connections past H1_IDLE_MS */
    uv_timer_t later; /* runs the transfers to be finished outside any up_* call */
    /* Counts the loop's passes: its callback runs after each poll phase has dispatched its
     * I/O callbacks (unreferenced: it never keeps the loop alive). See h1_idle_settled. */
    uv_check_t pass;
    uint64_t passes;
    uv_idle_t settle; /* active while transfers wait for this pass's check (take_idle) */
    bool settling, in_check;
    struct up_transfer *later_head;
    unsigned n_conns, n_idle;
    unsigned open; /* handles and requests a closing pool waits for */
    bool closing;
    char rbuf[H1_READ_BUFFER]; /* every read of the loop lands here, one at a time */
    char pbuf[H1_PLAIN_BUFFER]; /* and what TLS decrypts from it */
    /* A request head and body put together to be sealed as one record. Not pbuf: a
     * transfer may start (and send) from a callback of the reader while it parses pbuf. */
    char seal[H1_PLAIN_BUFFER];
};

/* The builtin client's part of a transfer. */
struct up_h1 {
    struct h1_host *host;
    struct h1_conn *conn;
    struct up_transfer *wait_prev, *wait_next;   /* in host->wait_* */
    struct up_transfer *later_prev, *later_next; /* in pool->later_head */
    struct bsc_buf req; /* owned: the request head */
    const char *body;   /* borrowed */
    size_t body_len;
    uint64_t started;   /* uv_now at up_start */
    uint32_t connect_timeout_ms, timeout_ms;
    enum up_result later_res; /* what the "later" run finishes with */
    const char *later_detail;
    bool fresh;   /* fresh_connection */
    bool head_request; /* the method is HEAD: the answer has no body */
    bool replayed; /* the one replay after the keep-alive race was used */
    bool waiting, later;
};

/* h1_pool.c */
enum bsc_err h1_pool_new(uv_loop_t *loop, const struct up_limits *lim, struct h1_pool **out);
/* Closes idle connections and the timers; freed when the last handle has closed. */
void h1_pool_free(struct h1_pool *p);
/* One handle or request of <p> has finished closing. */
void h1_pool_unref(struct h1_pool *p);
/* The entry for <name>:<port> over <trust> (NULL: http), made on first use. NULL when out
 * of memory. */
struct h1_host *h1_host_get(struct h1_pool *p, struct bsc_str name, uint16_t port,
                            struct tls_trust *trust);
/* Gives <t> a connection (idle, new, or a place in the queue); never calls back. */
void h1_dispatch(struct up_transfer *t);
/* Takes <t> out of its host's queue and the pool's "later" list, wherever it is. */
void h1_unqueue(struct up_transfer *t);
/* Finishes <t> with <res> from the loop, outside the current call. */
void h1_later(struct up_transfer *t, enum up_result res, const char *detail);
/* <c> carried a complete response: back to the idle list (or closed past the limits). */
void h1_conn_idle(struct h1_conn *c);
void h1_conn_close(struct h1_conn *c);
/* A connection slot may have come free: start what waits. */
void h1_kick(struct h1_pool *p);
/* Whether an idle connection that went idle at pass <idle_pass> has had a whole poll phase
 * (epoll_wait and the dispatch of what it returned) begin and end since, now that the pool
 * is at pass <now>: its armed read watcher then saw any byte or EOF that came before that
 * poll, so it need not be checked with a system call before reuse. */
static inline bool h1_idle_settled(uint64_t idle_pass, uint64_t now)
{
    /* The pass it went idle in may have polled already (it went idle from an I/O
     * callback): that pass's end does not count, the next pass's does. */
    return now - idle_pass >= 2;
}

/* h1.c: the up_* calls on a builtin transfer are its up__h1_ops (internal.h) */
/* Puts <t> on <c> (new or idle) and starts it. */
void h1_attach(struct h1_conn *c, struct up_transfer *t);
/* A new connection to <h>, connecting; NULL when it cannot even be started. */
struct h1_conn *h1_conn_new(struct h1_host *h);
/* Reads on <c> (a no-op when it already does). */
void h1_read_start(struct h1_conn *c);
/* Closes <c>'s handles; the last close callback frees it. */
void h1_conn_handles_close(struct h1_conn *c);
/* Ends <t>: callbacks (unless cancelled), its connection reused or closed, freed. */
void h1_finish(struct up_transfer *t, enum up_result res, const char *detail);
/* Reads on an idle connection: any byte or EOF closes it. */
void h1_idle_read(struct h1_conn *c, ssize_t nread);
/* <c> is connected (and for https, its handshake done): its transfer's request goes out,
 * or, when the transfer went away meanwhile, it goes idle. */
void h1_conn_ready(struct h1_conn *c);
/* What a feed of the response left (<rest>: bytes past its end came): finish, hold, go on. */
void h1_after_feed(struct h1_conn *c, struct up_transfer *t, enum h1_state st, bool rest);
/* The connection ended (<eof>: cleanly, which completes a close-delimited body) or broke
 * while <t> was on it: done, replayed once, or UP_RESET with <detail>. */
void h1_conn_broke(struct h1_conn *c, struct up_transfer *t, bool eof, const char *detail);
/* uv_write's callback for every write of a connection. */
void h1_on_written(uv_write_t *req, int status);

/* h1_tls.c: the TLS layer of an https:// connection */
/* The pool's trust for <ca_file> (NULL: the system's), made on first use; NULL with the
 * reason in <err> when it cannot be. */
struct tls_trust *h1_trust_get(struct h1_pool *p, const char *ca_file, char *err, size_t errlen);
/* The TCP connection of <c> is up: starts the handshake. False when it cannot start. */
bool h1_tls_begin(struct h1_conn *c);
/* A read of <c>'s socket (any state). */
void h1_tls_on_read(struct h1_conn *c, ssize_t nread, const uv_buf_t *buf);
/* Encrypts <t>'s request and sends it. */
void h1_tls_send_request(struct h1_conn *c, struct up_transfer *t);
/* A buffer of ciphertext went out: a small one is kept for the next request, a large one
 * given back. */
void h1_tls_out_sent(struct bsc_buf *b);
/* Sends the ciphertext the session produced. 0, or a libuv error. */
int h1_tls_flush(struct h1_conn *c);
/* Whether idle <c> cannot carry a request: the peer closed, or sent what nobody asked for;
 * TLS records that carry no data (session tickets) are taken here. */
bool h1_tls_stale(struct h1_conn *c);
/* Whether the session of idle <c> holds bytes its read watcher left (part of a record, or a
 * close_notify): then h1_tls_stale must look. No system call. */
bool h1_tls_held(const struct h1_conn *c);

#endif
