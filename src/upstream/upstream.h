/* SPDX-License-Identifier: MIT */
/* upstream.h -- outbound HTTP(S) transfers driven by the worker's libuv loop: one up_multi
 * per loop, one transfer per attempt, made by one of two clients behind one ops table
 * (upstream/internal.h): bascule's own HTTP/1.1 client for http://, libcurl's multi_socket
 * interface (one easy handle per transfer) for https:// and the rest.
 * Connections are reused per upstream host; HTTP/2 is negotiated over TLS (ALPN) only,
 * since curl 7.88's h2c reuse is broken; libcurl's own retries and redirects are off:
 * the router is the only retry owner (docs/design.md §3). See docs/internals/upstream.md. */
#ifndef BSC_UPSTREAM_UPSTREAM_H
#define BSC_UPSTREAM_UPSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/str.h"

struct up_multi;    /* one per worker loop; opaque */
struct up_transfer; /* one attempt; opaque */

/* How a transfer ended, as seen by the transport. */
enum up_result {
    UP_OK = 0,     /* the whole response arrived */
    UP_CONNECT,    /* could not connect (refused, unreachable) */
    UP_DNS,        /* name did not resolve */
    UP_TIMEOUT,    /* connect or total timeout */
    UP_RESET,      /* the connection broke while sending or receiving */
    UP_TLS,        /* TLS handshake or certificate failure */
    UP_PROTOCOL,   /* malformed HTTP from upstream */
    UP_TOO_LARGE,  /* the response head passed its bound */
    UP_RESULT_COUNT
};

const char *up_result_name(enum up_result r);

/* Header lines one request may carry (up_start fails with BSC_ELIMIT past it). */
#define UP_REQUEST_MAX_HEADERS 64

struct up_request {
    const char *url;    /* borrowed until the transfer is created (copied by curl) */
    const char *method; /* "POST" or "GET" */
    const char *const *headers; /* borrowed array of "Name: value" lines; the array is
                                 * copied, the lines stay borrowed until on_done/up_cancel */
    size_t n_headers;           /* at most UP_REQUEST_MAX_HEADERS */
    const char *body;   /* borrowed until on_done or up_cancel: curl does not copy it */
    size_t body_len;
    uint32_t connect_timeout_ms; /* 0 = curl's default */
    const char *ca_file; /* https: PEM CAs to trust instead of the system's; NULL = system */
    uint32_t timeout_ms;         /* whole transfer; 0 = none (the router runs its own timers) */
    /* A new connection, closed afterwards. libcurl replays a request once, silently, when
     * a reused connection dies before any response byte (the keep-alive race); a fresh
     * connection is the only way to rule that out, for requests that must never be sent
     * twice. */
    bool fresh_connection;
};

/* Callbacks. Each runs on the loop, never from inside the up_* call that caused it, except
 * that up_resume() may deliver buffered data through on_data before it returns. After
 * on_done, or after up_cancel, nothing more is called and the transfer is gone. */
struct up_callbacks {
    /* The final response head (1xx skipped). Headers: up_header(). */
    void (*on_head)(void *ud, struct up_transfer *t, int status);
    /* Body bytes as they arrive. Return true to pause the transfer (back-pressure). */
    bool (*on_data)(void *ud, struct up_transfer *t, const char *p, size_t len);
    /* The end. <res> is UP_OK when the response completed; <detail> describes failures. */
    void (*on_done)(void *ud, struct up_transfer *t, enum up_result res, const char *detail);
};

struct up_limits {
    uint32_t max_host_connections; /* per upstream host; 0 = unlimited */
    uint32_t max_total_connections;
    uint32_t max_cached_connections;
    bool builtin_http;  /* http:// URLs go through the builtin HTTP/1.1 client, not libcurl */
    bool builtin_https; /* and https:// ones too (with builtin_http): its own TLS, HTTP/1.1 */
};

/* Creates the multi for <loop>. Returns BSC_OK and *<out>, or BSC_ENOMEM. */
enum bsc_err up_multi_new(uv_loop_t *loop, const struct up_limits *limits,
                          struct up_multi **out);
/* Cancels every transfer (no callbacks), closes its handles through the loop, frees. */
void up_multi_free(struct up_multi *m);
/* Transfers running now. */
size_t up_multi_active(const struct up_multi *m);
/* Kept-alive upstream connections of the builtin client waiting idle in the process's pools
 * (libcurl's own cache is not counted). Thread-safe. */
size_t up_idle_connections(void);

/* Starts a transfer. On BSC_OK *<out> is set and exactly one of on_done or the caller's
 * up_cancel ends it; on error no callback is ever called. */
enum bsc_err up_start(struct up_multi *m, const struct up_request *req,
                      const struct up_callbacks *cb, void *ud, struct up_transfer **out);
/* Ends <t> now: the connection is closed if the response was incomplete, so the upstream
 * sees the cancellation. No callback runs afterwards. Safe from inside a callback. */
void up_cancel(struct up_transfer *t);
/* Back-pressure: stop and restart reading the response body. */
void up_pause(struct up_transfer *t);
void up_resume(struct up_transfer *t);

/* A response header's value (first match, case-insensitive), valid until on_done/cancel. */
struct bsc_str up_header(const struct up_transfer *t, struct bsc_str name);
/* Hands the response head of <t> (the raw header lines of the final response) to <dst>, an
 * initialised or zeroed buffer the caller owns, for reading after on_done with
 * up_head_find(); <t> takes the old contents of <dst> and frees them. From on_done only:
 * up_header() on <t> finds nothing afterwards. Never fails, allocates nothing. */
void up_take_head(struct up_transfer *t, struct bsc_buf *dst);
/* The value of the header <name> (first match, case-insensitive, trimmed) among the raw
 * header lines <head>, borrowed from <head>; empty when absent. <name> is a header name:
 * no ':', no line break, no NUL. Pure. */
struct bsc_str up_head_find(struct bsc_str head, struct bsc_str name);
/* up_head_find for each of <names>[0..<n>) into <values>, in one pass over <head>. */
void up_head_find_each(struct bsc_str head, const struct bsc_str *names, size_t n,
                       struct bsc_str *values);
int up_status(const struct up_transfer *t);
/* Whether any request body byte was sent (used to judge replay safety). */
bool up_request_sent(const struct up_transfer *t);

#endif
