/* SPDX-License-Identifier: MIT */
/* internal.h -- shared by the upstream module's files only: the multi, the transfer, and
 * the two clients a transfer runs on (libcurl: easy.c, multi.c, gate.c; the builtin
 * HTTP/1.1 client: h1*.c) behind struct up_client_ops. */
#ifndef BSC_UPSTREAM_INTERNAL_H
#define BSC_UPSTREAM_INTERNAL_H

#include <curl/curl.h>

#include "core/buf.h"
#include "upstream/h1.h"
#include "upstream/line_rules.h"
#include "upstream/upstream.h"

#define UP_MAX_HEAD_BYTES (64u * 1024u)
#define UP_EASY_CACHE     64
/* Finished builtin transfers kept on the multi for the next ones (no malloc/free a
 * request), each with its response head's storage when at most UP_SPARE_HEAD_KEEP bytes, and
 * as many request heads' storage, each at most UP_SPARE_REQ_KEEP bytes, put back as soon as
 * the response head came (a held stream keeps none): memory-bounds.md. */
#define UP_SPARE_TRANSFERS 16
#define UP_SPARE_REQ_KEEP  4096
#define UP_SPARE_HEAD_KEEP 4096
#define UP_MAX_HEADERS    (UP_REQUEST_MAX_HEADERS + 2) /* the caller's lines and ours */
#define UP_URL_CACHE      32 /* parsed URLs kept per multi */
#define UP_GATE_MAX       32 /* https origins whose first connection is gated (gate.c) */
/* curl's receive buffer, one per easy handle, kept while the handle is: a held stream
 * reads a few hundred bytes at a time, and 16 KiB (curl's default) a stream is most of
 * what a thousand held streams cost (docs/internals/streams-memory.md). */
#define UP_RECV_BUFFER    4096

/* A URL parsed once and handed to curl as a CURLU for every transfer to it. curl reads
 * the CURLU until the transfer ends (at connect time, not at setopt), so an entry is
 * replaced only when no transfer holds it. */
struct up_url {
    char *text;    /* owned */
    CURLU *handle; /* owned */
    unsigned refs; /* transfers using it */
};

/* One https:// origin (gate.c): until a handshake to it has completed, one transfer (the
 * probe) connects and the others to it wait here, outside curl. */
struct up_gate {
    char *origin; /* owned: "https://host[:port]" */
    bool known;   /* a connection to it completed its handshake: curl knows its ALPN */
    struct up_transfer *probe;      /* borrowed: the transfer making the first connection */
    struct up_transfer *head, *tail; /* borrowed FIFO of waiting transfers (gate_next) */
};

struct up_multi {
    uv_loop_t *loop; /* borrowed */
    CURLM *curlm;    /* owned */
    uv_timer_t timer;
    uv_check_t kick; /* runs curl's "now" timeouts after this loop pass's I/O callbacks */
    struct up_transfer *transfers; /* owned doubly linked list of running transfers */
    size_t n_active;
    CURL *easy_cache[UP_EASY_CACHE]; /* reusable easy handles, up__easy_defaults set */
    struct up_sock **socks; /* owned table indexed by fd: watched sockets, parked ones too */
    size_t n_socks;
    size_t n_easy_cache;
    struct up_url urls[UP_URL_CACHE]; /* filled in order, then unused entries replaced */
    size_t n_urls, next_url;
    unsigned open_handles; /* while closing: handles whose close callback is pending */
    bool closing;
    bool env_proxy; /* a proxy variable is set: curl reads the environment per transfer */
    bool builtin;   /* http:// transfers use the builtin client (up_limits.builtin_http) */
    bool builtin_https; /* https:// ones too (up_limits.builtin_https) */
    struct h1_pool *h1; /* owned: the builtin client's connections */
    struct up_gate gates[UP_GATE_MAX];
    size_t n_gates;
    bool gates_ready; /* a probe connected: hand its origin's waiting transfers to curl */
    struct up_transfer *spare[UP_SPARE_TRANSFERS]; /* owned: finished builtin transfers */
    struct bsc_buf spare_req[UP_SPARE_TRANSFERS];  /* owned: request heads' storage */
    size_t n_spare, n_spare_req;
};

struct up_transfer;

/* The client a transfer runs on, chosen once by up_start (up__client_for) and called
 * through by transfer.c, which has no other knowledge of the client kind (as curl's
 * connection filters or Redis's ConnectionType). Two implementations: up__curl_ops
 * (easy.c: libcurl, for HTTP/2 and everything else) and up__h1_ops (h1.c: the builtin
 * HTTP/1.1 client, for http:// and, with its own TLS, https://). What every client shares -- the callbacks, the response
 * head and status, request_sent, the paused/cancelled/in_callback flags, the multi's list
 * of running transfers -- lives in struct up_transfer and is read by transfer.c directly,
 * so up_header, up_take_head, up_status and up_request_sent need no entry here. */
struct up_client_ops {
    const char *name; /* "curl" or "builtin" */
    /* Bytes to allocate for a transfer of <req> (the shared part and this client's). */
    size_t (*size)(const struct up_request *req);
    /* Starts <t>: allocated with size(), zeroed up to header_nodes, its shared members set
     * and linked into its multi. BSC_OK: the client owns it and ends it exactly once, by
     * on_done (then freeing it) or by cancel; no callback runs before start returns. On an
     * error the client has released what it took and the caller frees <t>. */
    enum bsc_err (*start)(struct up_transfer *t, const struct up_request *req);
    /* up_cancel: end <t> now, no callback afterwards; from inside a callback it only marks
     * <t>, and the client finishes it silently when the callback returns. */
    void (*cancel)(struct up_transfer *t);
    /* up_pause/up_resume: stop and restart reading the body; resume may deliver what was
     * held through on_data before it returns. Both no-ops when cancelled. */
    void (*pause)(struct up_transfer *t);
    void (*resume)(struct up_transfer *t);
};

extern const struct up_client_ops up__curl_ops; /* easy.c */
extern const struct up_client_ops up__h1_ops;   /* h1.c */

/* The client for a transfer to <url> on <m>: the builtin one for http:// when the multi
 * has its pool (up_limits.builtin_http), and for https:// too with up_limits.builtin_https,
 * when no proxy is set in the environment (a proxy is libcurl's to honour: the builtin
 * client speaks direct), else libcurl. */
const struct up_client_ops *up__client_for(const struct up_multi *m, const char *url);

struct up_transfer {
    const struct up_client_ops *ops; /* static: the client it runs on, set by up_start */
    struct up_multi *m; /* borrowed */
    struct up_transfer *prev, *next;
    struct up_callbacks cb;
    void *ud;
    struct bsc_buf head; /* owned: raw response header lines of the final response */
    int status;
    bool head_done;
    bool paused;
    bool cancelled; /* up_cancel ran inside a callback; finish silently */
    bool in_callback;
    bool request_sent;
    struct up_h1 h1; /* the builtin client's part (h1*.c), unused by a curl transfer */
    /* libcurl's part (easy.c, multi.c, gate.c), unused by a builtin transfer */
    CURL *easy;         /* owned */
    struct up_url *url; /* held: the parsed URL curl reads, or NULL */
    bool plain;  /* an http:// URL: the connection speaks HTTP/1.x in clear */
    bool excess; /* libcurl found bytes after the answer in a read (and closed) */
    const char *violation; /* static: the wire rule the answer broke, or NULL */
    struct up_gate *gate; /* borrowed: its origin's gate while it is the probe or waits */
    struct up_transfer *gate_next; /* the next transfer waiting at the same gate */
    bool gated; /* waiting at its gate: not yet given to curl */
    struct up_line_rules rules;
    char errbuf[CURL_ERROR_SIZE];
    /* The request header list, its nodes in place: curl only reads a CURLOPT_HTTPHEADER
     * list, so it needs no curl_slist_append (a malloc and a strdup a line). Sized to the
     * request's headers (at most UP_MAX_HEADERS), not the bound: a held stream keeps its
     * transfer. Last: it is the one member up_start does not zero. */
    struct curl_slist header_nodes[];
};

struct up_sock;

/* multi.c */
/* Shuts <fd> down both ways and drops what it holds unread: libcurl's liveness check then
 * finds it closed, and a request written on it fails before any answer byte (which curl
 * replays on a new connection), so no byte that came on it is ever read as an answer. */
void up__sock_quarantine(curl_socket_t fd);
/* Sets the socket-close callback that keeps the watch table right (every easy handle). */
void up__watch_close(CURL *easy, struct up_multi *m);
/* Puts <t> on / takes it off its multi's list of running transfers (up_multi_active). */
void up__transfer_link(struct up_transfer *t);
void up__transfer_unlink(struct up_transfer *t);
/* Frees a finished builtin transfer (its response head; its request head as
 * up__req_head_put), or keeps it on its multi for the next up_start: at most
 * UP_SPARE_TRANSFERS, none while the multi closes, with its response head's storage when at
 * most UP_SPARE_HEAD_KEEP bytes; a kept one and that storage are poisoned for
 * AddressSanitizer until reused (transfer.c). */
void up__transfer_release(struct up_transfer *t);
/* Empties <req> (a builtin transfer's request head): its storage kept on <m> for the next
 * request head when at most UP_SPARE_REQ_KEEP bytes and a place is free (poisoned until
 * reused), else freed. */
void up__req_head_put(struct up_multi *m, struct bsc_buf *req);
/* Frees the kept transfers and request heads (up_multi_free). */
void up__spares_free(struct up_multi *m);
/* Hands <easy> back: kept for the next transfer when <clean> (it ended normally), else
 * cleaned up, so that no state of an aborted or paused transfer is ever reused. */
void up__release_easy(struct up_multi *m, CURL *easy, bool clean);
CURL *up__acquire_easy(struct up_multi *m);
/* The parsed form of <url>, from the cache or parsed now, held (refs + 1) until
 * up__url_release; NULL when it cannot be parsed or every entry is in use (the caller
 * then passes the text, and curl parses it, or reports the error). */
struct up_url *up__url(struct up_multi *m, const char *url);
void up__url_release(struct up_url *u);
/* gate.c. Whether <t> (to <url>) must wait for its origin's first connection: true means
 * it was queued and is not to be added to curl now. */
bool up__gate_hold(struct up_transfer *t, const char *url);
/* <t>'s connection is up (curl's pre-request callback): its origin is known. */
void up__gate_connected(struct up_transfer *t);
/* Hands the waiting transfers of known origins to curl; never from a curl callback. */
void up__gate_release(struct up_multi *m);
/* <t> ends: off its gate's queue; a probe passes the role on. */
void up__gate_leave(struct up_transfer *t);
void up__gates_free(struct up_multi *m);
/* easy.c: the options every transfer shares, set once on a new easy handle. */
void up__easy_defaults(CURL *e, struct up_multi *m);
/* easy.c: curl reported <t> done with <code>: on_done (unless cancelled), then freed. */
void up__transfer_done(struct up_transfer *t, CURLcode code);

#endif
