/* SPDX-License-Identifier: MIT */
/* server.h -- the inbound HTTP/1.1 server of one worker loop (libuv + http-parser).
 * It owns connections and requests: keep-alive, Content-Length and chunked bodies,
 * pipelined requests answered in order, Expect: 100-continue, and the limits of
 * docs/configuration.md (413, 431, 408, idle close, connection cap), each protocol error answered
 * with a body from the error body callback main.c sets (the client dialect's shape, with the
 * request id): the server sends status and bytes only. It knows nothing of
 * LLMs: a complete request (head and body) is handed to one handler callback, which
 * answers through srv_resp_*, at once or later, streaming or not.
 * See docs/internals/server.md. */
#ifndef BSC_SERVER_SERVER_H
#define BSC_SERVER_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/str.h"

struct srv;     /* one per worker loop; opaque */
struct srv_req; /* one inbound request; owned by the server; opaque */

struct srv_limits {
    uint64_t max_body_bytes;     /* body (after de-chunking) over this: 413 */
    uint32_t max_header_bytes;   /* request line + headers over this: 431 */
    uint32_t header_timeout_ms;  /* head not complete in time, or a body stalls this long: 408 */
    uint32_t idle_timeout_ms;    /* keep-alive connection with no request this long: closed */
    uint32_t max_connections;    /* open connections of this server; at it, see cap.c */
    uint32_t max_pending_output; /* a response's unsent bytes; srv_req_pending() vs this */
    uint32_t body_timeout_ms;    /* whole body not received this long after the head: 408 */
    uint32_t min_body_rate_bps;  /* body slower than this (bytes/s) past the grace: 408; 0 off */
};

/* The allowance a body has before limits.min_body_rate_bps is applied: it must have
 * min_body_rate_bps * (elapsed - grace) / 1000 bytes at any time. See conn.c. */
#define SRV_BODY_RATE_GRACE_MS 2000

struct srv_header {
    struct bsc_str name;
    struct bsc_str value;
};

/* Called once per complete request, in arrival order per connection; the next pipelined
 * request of the same connection is not dispatched before this one's response ends. */
typedef void srv_handler_fn(struct srv_req *req, void *ud);
typedef void srv_req_cb(struct srv_req *req, void *ud);
/* Told of an answer the server wrote itself (a request it could not hand to the handler:
 * bad framing, limits, timeouts) with its <status>, after the answer was queued. <req>'s
 * method and path may be empty (a head that never completed). Must not keep <req>. */
typedef void srv_refused_fn(struct srv_req *req, int status, void *ud);
typedef void srv_closed_cb(struct srv *srv, void *ud);
/* Looks at the head of a request whose body has not all arrived yet, before any more of it
 * is read (and before a 100 Continue). Returns true to read the body and hand the request
 * to the handler as usual; false after answering it with srv_resp_*() (the answer says
 * Connection: close; the rest of the body is never read and the connection closes after
 * it). A request that arrives whole is never shown here: the handler decides. Must not
 * keep <req> past the call. */
typedef bool srv_head_check_fn(struct srv_req *req, void *ud);

/* Creates a listening socket for <host>:<port> (IPv4 or IPv6 literal) with SO_REUSEADDR
 * and SO_REUSEPORT, bound and listening, non-blocking. Each worker makes its own, so the
 * kernel spreads connections. Returns BSC_OK and *<fd>, or BSC_EIO (message in <errbuf>). */
enum bsc_err srv_listen_socket(const char *host, uint16_t port, int *fd, char *errbuf,
                               size_t errlen);
/* The same, for a process's first socket on the address: BSC_EEXIST (message naming the
 * address in <errbuf>) when another socket already listens there, so that a second process
 * fails to start instead of joining the first one's SO_REUSEPORT group and splitting its
 * traffic. The process's other workers then use srv_listen_socket(). */
enum bsc_err srv_listen_first(const char *host, uint16_t port, int *fd, char *errbuf,
                              size_t errlen);

/* Starts serving on <loop> from <listen_fd>, a listening socket from srv_listen_socket()
 * (ownership taken: closed by the server).
 * <limits> is copied. <handler> gets each request. Returns BSC_OK and *<out>. */
enum bsc_err srv_new(uv_loop_t *loop, int listen_fd, const struct srv_limits *limits,
                     srv_handler_fn *handler, void *ud, struct srv **out);

/* Writes the JSON body of an error answer for request <request_id> into <out>: the client
 * dialect's error shape, which the server does not know. <type> and <code> may be NULL.
 * Returns BSC_OK, or an error with <out> unusable. Must not call back into the server. */
typedef enum bsc_err srv_error_body_fn(int status, const char *type, const char *code,
                                       const char *message, const char *request_id,
                                       struct bsc_buf *out);

/* Sets the writer of the bodies of srv_resp_error() on <srv> (the server's own framing
 * errors included). Without one, an error's body is "<code>: <message>" as text/plain. */
void srv_set_error_body(struct srv *srv, srv_error_body_fn *fn);

/* Sets the callback told of every answer <srv> writes itself (NULL: none). The handler's
 * <ud> is passed to it. Set before the loop runs. */
void srv_set_refused(struct srv *srv, srv_refused_fn *fn);

/* Sets the head check of <srv> (NULL: none); the handler's <ud> is passed to it. Set
 * before the loop runs. */
void srv_set_head_check(struct srv *srv, srv_head_check_fn *fn);

/* ---- balancing: connections spread evenly over the workers ---- */
struct srv_group; /* shared by the servers of one gateway's workers; opaque */

/* A group for <n> servers, or NULL (out of memory). Each worker's server joins it with
 * srv_group_join(<idx>) before its loop runs. From then on a server that accepts a
 * connection while it holds more connections than the least-loaded member hands the socket
 * to that member, whatever the SO_REUSEPORT hash chose. A server leaves when it stops
 * accepting (drain, close). srv_group_free() comes after every member's srv_free(). */
struct srv_group *srv_group_new(unsigned n);
enum bsc_err srv_group_join(struct srv_group *g, unsigned idx, struct srv *srv);
void srv_group_free(struct srv_group *g);

/* The process's connection cap: <configured> (limits.max_connections), lowered when the
 * soft RLIMIT_NOFILE cannot hold that many: every connection may need an upstream socket
 * too, and the listeners, the loops, the store and the logs need their own. *<nofile>
 * (may be NULL) gets the soft limit, 0 when unlimited or unknown. See cap.c. */
uint32_t srv_conn_cap(uint32_t configured, uint64_t *nofile);
/* The soft RLIMIT_NOFILE that lets srv_conn_cap honour <configured> in full. Pure. */
uint64_t srv_nofile_wanted(uint32_t configured);
/* Raises the soft RLIMIT_NOFILE toward srv_nofile_wanted(<configured>), never above the
 * hard limit and never lowering it (what Redis does for maxclients): a default soft limit
 * of 1024 would otherwise cap a gateway at a few hundred connections. Returns the soft
 * limit in force afterwards (0 = unlimited or unknown). Call once at start. */
uint64_t srv_raise_nofile(uint32_t configured);
/* The same rule for a given soft limit (0 = unlimited): pure, for tests. */
uint32_t srv_conn_cap_for(uint32_t configured, uint64_t nofile);

/* New limits for connections and requests that start from now on (config reload). */
void srv_set_limits(struct srv *srv, const struct srv_limits *limits);

/* Stops accepting. Idle connections close at once; busy ones close after their current
 * response. <cb> runs once (deferred, on the loop) when the last connection has closed;
 * then the caller may srv_free(). srv_close_all() instead closes every connection now
 * (in-flight requests get their abort callback) and then calls <cb> the same way. */
void srv_drain(struct srv *srv, srv_closed_cb *cb, void *ud);
void srv_close_all(struct srv *srv, srv_closed_cb *cb, void *ud);
/* The end of a drain that timed out: each request whose handler set srv_req_on_stop() has
 * that callback run, here, to end its response (a stream's error event); what that queued
 * is written before its connection closes. Every other connection closes now, as with
 * srv_close_all(), and <cb> runs the same way. */
void srv_stop(struct srv *srv, srv_closed_cb *cb, void *ud);
void srv_free(struct srv *srv);

/* Open connections right now. */
size_t srv_conn_count(const struct srv *srv);

/* ---- the request: everything borrowed from <req>, valid until its response ends ---- */
struct bsc_str srv_req_method(const struct srv_req *req);
struct bsc_str srv_req_path(const struct srv_req *req);  /* the URL path, no query */
struct bsc_str srv_req_query(const struct srv_req *req); /* after '?', may be empty */
/* The authority ("host[:port]") of an absolute-form request target ("POST http://h:1/p");
 * {NULL,0} for the usual origin-form ("/p"). The scheme was http or https and had no
 * userinfo (else the server answered 400). The Host header is not compared with it. */
struct bsc_str srv_req_authority(const struct srv_req *req);
/* First header named <name> (ASCII case-insensitive); {NULL,0} when absent. */
struct bsc_str srv_req_header(const struct srv_req *req, struct bsc_str name);
size_t srv_req_header_count(const struct srv_req *req);
struct srv_header srv_req_header_at(const struct srv_req *req, size_t i);
struct bsc_str srv_req_body(const struct srv_req *req); /* complete, de-chunked */
/* The request id: the client's X-Request-Id when it is 1..128 printable ASCII chars,
 * else a generated "req_..." id. NUL-terminated. */
const char *srv_req_id(const struct srv_req *req);
/* Monotonic microseconds when the first byte of this request arrived. */
uint64_t srv_req_start_us(const struct srv_req *req);
/* The loop this request runs on. */
uv_loop_t *srv_req_loop(const struct srv_req *req);
/* Opaque pointer for the handler's own state. */
void srv_req_set_data(struct srv_req *req, void *data);
void *srv_req_data(const struct srv_req *req);
/* Who the handler authenticated for this request (an id, copied, cut to SRV_PRINCIPAL_MAX
 * bytes); "" until set, and again for the next request of the connection. The server only
 * keeps it, so that code reading the request later (store scopes) knows the caller. */
#define SRV_PRINCIPAL_MAX 64
void srv_req_set_principal(struct srv_req *req, struct bsc_str who);
const char *srv_req_principal(const struct srv_req *req);

/* ---- the response ---- */

/* Starts the response: status line, <n> headers, and Content-Length when
 * <content_length> >= 0, else Transfer-Encoding: chunked. The server adds Date,
 * Server, Connection, and X-Request-Id unless <h> has one. BSC_ESTATE if already started. */
enum bsc_err srv_resp_head(struct srv_req *req, int status, const struct srv_header *h, size_t n,
                           int64_t content_length);
/* Queues <len> bytes of body (copied; framed as a chunk when chunked) and starts writing.
 * Never blocks and never calls back. Check srv_req_pending() for back-pressure. */
enum bsc_err srv_resp_body(struct srv_req *req, const void *p, size_t len);
/* srv_resp_body, written to the socket at once rather than at the end of the loop pass
 * (where srv_resp_body leaves it, so that the writes of one pass coalesce): for a relay
 * whose bytes must leave as they arrive, such as each read of a stream's events. Never
 * blocks and never calls back. */
enum bsc_err srv_resp_stream(struct srv_req *req, const void *p, size_t len);
/* Finishes the response (the last chunk when chunked). <req> must not be used after.
 * The next pipelined request, if any, is dispatched once the bytes are written. */
void srv_resp_end(struct srv_req *req);
/* Head, body and end in one call; <content_type> may be NULL. */
void srv_resp_send(struct srv_req *req, int status, const char *content_type,
                   const struct srv_header *h, size_t n, const void *body, size_t len);
/* Sends an error with <status>, its body written by the server's error body callback
 * (srv_set_error_body) from <type>, <code> (either may be NULL), <message> and the
 * request id. Ends the response. */
void srv_resp_error(struct srv_req *req, int status, const char *type, const char *code,
                    const char *message);
/* Ends the response by closing the connection after what is queued (a stream that
 * must not look complete). <req> must not be used after. */
void srv_resp_abort(struct srv_req *req);
/* Ends the response and the connection at once with a TCP RST (tests, fault injection). */
void srv_resp_reset(struct srv_req *req);
/* Adds a header to the response of <req>, whichever code writes its head: a policy layer
 * (CORS) decorates responses it does not produce. <name> and <value> are borrowed and must
 * stay valid until the response ends (literals, or bytes of the request itself). Returns
 * BSC_ELIMIT past SRV_RESP_EXTRA_MAX headers, BSC_ESTATE once the head is sent. */
#define SRV_RESP_EXTRA_MAX 6
enum bsc_err srv_resp_add_header(struct srv_req *req, struct bsc_str name, struct bsc_str value);
/* The status of the response head, 0 before it is sent. Still readable right after the
 * call that ended the response, until control returns to the loop (for the access log). */
int srv_resp_status(const struct srv_req *req);
/* True when an abort callback is set: code that keeps the request past the handler call
 * (the router, an async store call) owns it and its access-log line. */
bool srv_req_abort_watched(const struct srv_req *req);
/* Asks for Connection: close after this response (call before srv_resp_head). */
void srv_req_set_close(struct srv_req *req);
bool srv_resp_started(const struct srv_req *req);

/* Body bytes queued but not yet written to the socket. */
size_t srv_req_pending(const struct srv_req *req);
/* <cb> runs once, later, when pending output falls to max_pending_output / 2 or less.
 * Setting it again replaces it; NULL clears it. */
void srv_req_on_drain(struct srv_req *req, srv_req_cb *cb, void *ud);
/* <cb> runs once, later, if the client goes away (or the server is closed) before the
 * response ends. <req> is freed right after <cb> returns: the handler must drop every
 * pointer to it and cancel its work there. Never called after srv_resp_end/abort. */
void srv_req_on_abort(struct srv_req *req, srv_req_cb *cb, void *ud);
/* <cb> runs at most once, from srv_stop(), if the response has not ended by then: the
 * handler should end it (srv_resp_end/abort) inside <cb>; a response not ended there is
 * cut, and the abort callback follows. NULL clears it. */
void srv_req_on_stop(struct srv_req *req, srv_req_cb *cb, void *ud);

#endif
