/* SPDX-License-Identifier: MIT */
/* internal.h -- shared between multi.c and transfer.c only. */
#ifndef BSC_UPSTREAM_INTERNAL_H
#define BSC_UPSTREAM_INTERNAL_H

#include <curl/curl.h>

#include "core/buf.h"
#include "upstream/h1.h"
#include "upstream/line_rules.h"
#include "upstream/upstream.h"

#define UP_MAX_HEAD_BYTES (64u * 1024u)
#define UP_EASY_CACHE     64
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
    struct h1_pool *h1; /* owned: the builtin client's connections */
    struct up_gate gates[UP_GATE_MAX];
    size_t n_gates;
    bool gates_ready; /* a probe connected: hand its origin's waiting transfers to curl */
};

struct up_transfer {
    struct up_multi *m; /* borrowed */
    struct up_transfer *prev, *next;
    CURL *easy;         /* owned */
    struct up_url *url; /* held: the parsed URL curl reads, or NULL */
    struct up_callbacks cb;
    void *ud;
    struct bsc_buf head; /* owned: raw response header lines of the final response */
    int status;
    bool head_done;
    bool paused;
    bool cancelled; /* up_cancel ran inside a curl callback; finish silently */
    bool in_callback;
    bool request_sent;
    bool plain;  /* an http:// URL: the connection speaks HTTP/1.x in clear */
    bool excess; /* libcurl found bytes after the answer in a read (and closed) */
    const char *violation; /* static: the wire rule the answer broke, or NULL */
    struct up_gate *gate; /* borrowed: its origin's gate while it is the probe or waits */
    struct up_transfer *gate_next; /* the next transfer waiting at the same gate */
    bool gated; /* waiting at its gate: not yet given to curl */
    struct up_line_rules rules;
    struct up_h1 h1; /* the builtin client's part; h1.on is false for a curl transfer */
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
void up__transfer_unlink(struct up_transfer *t);
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
/* transfer.c: the options every transfer shares, set once on a new easy handle. */
void up__easy_defaults(CURL *e, struct up_multi *m);
/* transfer.c */
void up__transfer_done(struct up_transfer *t, CURLcode code);
/* Removes and frees <t>; <clean>: it completed normally, its easy handle may be reused. */
void up__transfer_free(struct up_transfer *t, bool clean);

#endif
