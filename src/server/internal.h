/* SPDX-License-Identifier: MIT */
/* internal.h -- types and helpers shared by the files of src/server/ only (and by their
 * unit tests and fuzz targets). h1_parse.c reads one request (h1_fields.c the framing
 * fields, h1_head.c the complete head); conn.c the per-connection state machine; resp.c
 * response framing and the JSON errors; req.c the request accessors; listener.c the
 * socket, accept, drain and the deferred-work pass. Never included from outside src/server/.
 * See docs/internals/server.md. */
#ifndef BSC_SERVER_INTERNAL_H
#define BSC_SERVER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/str.h"
#include "server/server.h"

/* ---- h1_parse.c: one request at a time, no I/O ------------------------------------------ */

#define SRV__H1_MAX_HEADERS 256 /* more header fields than this: 431 */

enum srv__h1_err {
    SRV__H1_OK = 0,
    SRV__H1_E_BAD_REQUEST,     /* malformed: 400 */
    SRV__H1_E_HEAD_TOO_LARGE,  /* request line + headers (or trailers) over the limit: 431 */
    SRV__H1_E_BODY_TOO_LARGE,  /* Content-Length or de-chunked body over the limit: 413 */
    SRV__H1_E_NOT_IMPLEMENTED, /* a transfer coding other than chunked, CONNECT: 501 */
    SRV__H1_E_NOMEM,           /* allocation failed: 503 */
    SRV__H1_E_COUNT
};

/* One header field, as offsets into srv__h1.head (which may move while it grows). */
struct srv__h1_hdr {
    uint32_t name_off, name_len;
    uint32_t value_off, value_len;
};

struct srv__h1 {
    struct bsc_buf head;       /* owned: the URL, then each name and value; max = head limit */
    struct srv__h1_hdr *hdrs;  /* owned; <hdrs_cap> slots, <n_hdrs> used */
    uint32_t n_hdrs, hdrs_cap;
    uint32_t url_len;          /* the URL is head[0, url_len) */
    struct bsc_str path;       /* set when <head_done>: borrowed from <head>, or a literal */
    struct bsc_str query;      /* after '?', without the fragment; may be empty */
    struct bsc_str authority;  /* absolute-form target's "host[:port]"; {NULL,0} otherwise */
    struct bsc_buf body;       /* owned: the de-chunked body; max = body limit */
    uint64_t max_body;
    uint32_t max_head;
    uint32_t head_bytes;       /* request line + headers (+ trailers) seen, canonical size */
    enum srv__h1_err err;      /* first failure, sticky until srv__h1_next() */
    const char *why;           /* static text that goes with <err> */
    bool head_done;            /* headers complete: path, flags and headers are final */
    bool complete;             /* the message ended; the reader stopped right after it */
    bool keep_alive;           /* the connection may carry another request after this one */
    bool expect_continue;      /* Expect: 100-continue on an HTTP/1.1 request */
    bool http10;               /* HTTP/1.0 (or 0.9): no chunked responses */
    /* The reader (h1_parse.c): where it is in the message, and what the head said so far. */
    uint8_t state;             /* enum in h1_parse.c */
    uint8_t method;            /* index into the method table; valid once the line is read */
    uint8_t url_state;         /* where the request target's grammar is */
    uint8_t field;             /* what the current field name/value matches (framing fields) */
    uint8_t index;             /* keyword bytes matched; in a name: it began with SP (obs-fold);
                                * after chunk data: its first byte was CR */
    uint8_t tok_len;           /* bytes of the method in <tok> */
    uint8_t http_major, http_minor;
    uint16_t flags;            /* framing facts (Content-Length seen, chunked, close, ...) */
    bool trailers;             /* reading the trailer section of a chunked body */
    bool in_field;             /* a field name was started and is not yet a header slot */
    bool name_space;           /* a head field's name has a space (refused with the head) */
    uint32_t raw;              /* raw bytes of the current head/chunk line section */
    uint64_t content_length;   /* Content-Length; then the body or chunk bytes still due */
    char tok[12];              /* the method as read so far */
    char tname[17];            /* a trailer name's first bytes, to classify it */
    uint32_t tname_len;        /* its length so far */
    uint32_t tname_end;        /* one past its last byte that is not a space */
    /* A filter over the head's field names, set at each name's colon: bit (length & 63) of
     * <name_lens>, bit (lowercased first byte & 63) of <name_firsts>. A lookup whose name
     * misses either bit is no field's (srv__h1_header); false hits only cost the search. */
    uint64_t name_lens, name_firsts;
};

/* Cannot fail; allocates nothing until bytes arrive. */
void srv__h1_init(struct srv__h1 *h, uint32_t max_head, uint64_t max_body);
void srv__h1_cleanup(struct srv__h1 *h);
/* Forgets the current message and readies the parser for the next one with new limits.
 * Keeps small buffers for reuse and frees big ones, so an idle connection stays cheap. */
void srv__h1_next(struct srv__h1 *h, uint32_t max_head, uint64_t max_body);
/* Parses <len> bytes of <p> (borrowed for this call only: what is kept is copied).
 * Three-way return: 1 = a message is complete and the parser stops right after it
 * (*<consumed> tells where; the rest belongs to the next message); 0 = all consumed, need
 * more; -1 = error, h->err and h->why say which. Feeding a complete or failed parser
 * consumes nothing and returns the same result again. */
int srv__h1_feed(struct srv__h1 *h, const char *p, size_t len, size_t *consumed);
/* Header access; valid once head_done, until srv__h1_next(). */
struct srv_header srv__h1_header_at(const struct srv__h1 *h, size_t i);
struct bsc_str srv__h1_header(const struct srv__h1 *h, struct bsc_str name);
struct bsc_str srv__h1_method(const struct srv__h1 *h);
bool srv__h1_is_head(const struct srv__h1 *h);

/* h1_head.c: the head as a whole, judged once it is complete (no I/O). */
enum {
    SRV__H1_F_CONTENT_LENGTH = 1u << 0, /* a Content-Length field was read */
    SRV__H1_F_CHUNKED = 1u << 1,        /* a Transfer-Encoding ended in "chunked" */
    SRV__H1_F_TE = 1u << 2,             /* a Transfer-Encoding field was named */
    SRV__H1_F_KEEP_ALIVE = 1u << 3,     /* Connection: keep-alive */
    SRV__H1_F_CLOSE = 1u << 4,          /* Connection: close */
    SRV__H1_F_CONN_UPGRADE = 1u << 5,   /* Connection: upgrade */
    SRV__H1_F_UPGRADE = 1u << 6,        /* an Upgrade field */
};
#define SRV__H1_METHOD_CONNECT 5u
#define SRV__H1_METHOD_HEAD    2u
/* Records the first failure (sticky); returns -1. */
int srv__h1_fail(struct srv__h1 *h, enum srv__h1_err err, const char *why);
/* Counts <n> canonical head bytes against the limit: 0, or -1 after srv__h1_fail(). */
int srv__h1_count(struct srv__h1 *h, size_t n);
/* The head's last byte arrived: checks it as a whole (names, version, Host, target,
 * framing), sets path/query/authority and the flags. 0, or -1 after srv__h1_fail(). */
int srv__h1_head_complete(struct srv__h1 *h);
/* Whether the connection may carry another request (from the version and Connection). */
bool srv__h1_keep_alive(const struct srv__h1 *h);
/* The name of method number <m> of the reader's table. */
struct bsc_str srv__h1_method_name(unsigned m);

/* h1_fields.c: the fields that frame the message or the connection. */
/* What a field is, by its name, then where its value's matcher is. */
enum srv__h1_field {
    SRV__FM_GENERAL = 0,
    SRV__FM_CONNECTION, /* Connection or Proxy-Connection */
    SRV__FM_CL,
    SRV__FM_TE,
    SRV__FM_UPGRADE,
    SRV__FM_CL_NUM,
    SRV__FM_CL_WS,
    SRV__FM_TE_TOKEN_START,
    SRV__FM_TE_M_CHUNKED,
    SRV__FM_TE_TOKEN,
    SRV__FM_TE_CHUNKED,
    SRV__FM_CONN_TOKEN_START,
    SRV__FM_CONN_TOKEN,
    SRV__FM_M_KEEP,
    SRV__FM_M_CLOSE,
    SRV__FM_M_UPG,
    SRV__FM_IS_KEEP,
    SRV__FM_IS_CLOSE,
    SRV__FM_IS_UPG
};
/* tchar (RFC 9110), lowercased; 0 for anything else. */
extern const char srv__h1_tokens[256];
/* Classifies the field named [<n>, <n> + min(<len>, stored)) whose last non-space byte ends
 * at <end>; notes a Transfer-Encoding field. */
void srv__h1_classify_name(struct srv__h1 *h, const char *n, size_t len, size_t end);
/* The first byte of a value (or of a folded trailer line); NULL, or why it is refused. */
const char *srv__h1_value_first(struct srv__h1 *h, unsigned char ch);
/* A later value byte (a valid one, not CR/LF); NULL, or why it is refused. */
const char *srv__h1_value_step(struct srv__h1 *h, unsigned char ch);
/* A field line ended unfolded: what its value said (close, keep-alive, chunked, ...). */
void srv__h1_finish_field(struct srv__h1 *h);

/* ---- the connection state machine (conn.c) ----------------------------------------------- */

#define SRV__REQ_ID_MAX    128           /* longest client X-Request-Id we keep */
#define SRV__READ_CHUNK    (64u * 1024)  /* the per-server read buffer */
#define SRV__BACKLOG_MAX   (64u * 1024)  /* input kept while a request is handled */
#define SRV__FLUSH_NOW     (64u * 1024)  /* queued output that is written at once */
#define SRV__OUT_MAX       (256u << 20)  /* hard cap on one connection's queued output */
#define SRV__LINGER_MS     2000          /* discard input this long after a closing reply */
#define SRV__LINGER_BYTES  (1u << 20)    /* ... or this many bytes, then close */
#define SRV__REJECT_MAX    64            /* 503 replies in flight past max_connections */
#define SRV__KEEP_BUF      (16u * 1024)  /* buffers up to this are kept between requests */

/* One row per state, with what it waits for. conn.c has one handler per event and state. */
#define SRV__CONN_STATES(X)                                                                   \
    X(IDLE, "fresh or keep-alive: no byte of the next request yet (idle timer)")              \
    X(HEAD, "reading the request line and headers (deadline from the first byte)")           \
    X(BODY, "reading the body (stall timer); 100 Continue sent if asked")                     \
    X(HANDLING, "dispatched: the handler owns the response; input is only buffered")          \
    X(FLUSHING, "response ended: writing what is queued, then next request or linger")        \
    X(LINGER, "write side shut after a closing reply; input discarded until EOF or timeout")  \
    X(CLOSED, "uv_close called: memory is released in the close callback")

enum srv__conn_state {
#define X(NAME, doc) SRV__CONN_ST_##NAME,
    SRV__CONN_STATES(X)
#undef X
    SRV__CONN_ST_COUNT
};

/* Deferred work bits, run by the per-server idle pass (never inside a srv_* call). */
enum {
    SRV__WORK_FLUSH = 1u << 0, /* queued output to hand to uv_write */
    SRV__WORK_DRAIN = 1u << 1, /* check the drain callback */
    SRV__WORK_DONE = 1u << 2   /* the response ended with nothing in flight */
};

/* What a connection is worth keeping at the cap; cap.c closes the first class's oldest
 * connection first. A connection not counted in n_active is on no list. */
enum srv__shed {
    SRV__SHED_LINGER = 0, /* answered and closing: nothing is lost */
    SRV__SHED_RECEIVING,  /* a request head or body still arriving: the oldest request first */
    SRV__SHED_IDLE,       /* fresh or keep-alive with no request: the longest idle first */
    SRV__SHED_NONE,       /* handled, flushing, or not counted: never closed for room */
    SRV__SHED_COUNT
};

struct srv_conn;

struct srv_req {
    struct srv_conn *conn;          /* the owner: the request is embedded in it */
    char id[SRV__REQ_ID_MAX + 1];   /* NUL-terminated; "" until the head is parsed */
    uint64_t start_us;
    void *data;                     /* the handler's, never touched here */
    char principal[SRV_PRINCIPAL_MAX + 1]; /* who the handler authenticated; "" = nobody */
    srv_req_cb *on_abort;
    void *abort_ud;
    srv_req_cb *on_drain;
    void *drain_ud;
    srv_req_cb *on_stop;            /* srv_stop(): end the response now (srv_req_on_stop) */
    void *stop_ud;
    int64_t resp_left;              /* Content-Length bytes still owed; -1 if not counted */
    bool dispatched;                /* the handler has it and has not ended it */
    bool head_sent, ended;
    bool chunked;                   /* the response is chunked */
    bool no_body;                   /* HEAD, 204, 304: body bytes are dropped */
    bool close_after;               /* Connection: close: no further request on this conn */
    int status;                     /* of the response head once sent; 0 before */
    struct srv_header extra[SRV_RESP_EXTRA_MAX]; /* srv_resp_add_header(); borrowed */
    uint8_t n_extra;
};

struct srv_conn {
    struct srv *srv;
    struct srv_conn *prev, *next;           /* srv->conns */
    struct srv_conn *work_prev, *work_next; /* srv->work, when <work> != 0 */
    struct srv_conn *shed_prev, *shed_next; /* srv->shed[<shed>], oldest first */
    uv_tcp_t tcp;
    uv_timer_t timer;            /* lazy: see timer_arm in conn.c */
    uint64_t due_ms;             /* the deadline that counts (loop ms), 0: none */
    uint64_t armed_ms;           /* when <timer> is due while it is active */
    uv_write_t wreq;
    uv_shutdown_t sreq;
    enum srv__conn_state state;
    unsigned work;               /* SRV__WORK_* bits; on srv->work when non-zero */
    unsigned open_handles;       /* tcp and timer until their close callbacks ran */
    bool reading, writing, eof, shut, rejecting;
    enum srv__shed shed;         /* the list it is on (SRV__SHED_NONE: none) */
    bool counted;                /* counts in srv->n_active (served, not yet closing) */
    uint64_t last_rx_ms, last_tx_ms;
    uint64_t body_start_ms;      /* the head completed: the body deadline runs from here */
    size_t last_wq;              /* tcp.write_queue_size when the send-stall timer last ran */
    size_t discarded;            /* bytes dropped while lingering */
    struct srv_limits lim;       /* the limits this request started with */
    struct srv__h1 h1;
    struct bsc_buf in;           /* owned: input received while busy, from <in_off> */
    size_t in_off;
    struct bsc_buf out;          /* owned: queued output not yet given to uv_write */
    struct bsc_buf wbuf;         /* owned: the output of <wreq>, in flight */
    struct srv_req req;
};

struct srv {
    uv_loop_t *loop;
    uv_poll_t listener;          /* readable: connections wait in <listen_fd>'s queue */
    int listen_fd;               /* owned; closed with <listener> */
    uv_idle_t idle;              /* runs the work list; active only while it is non-empty */
    uv_timer_t accept_timer;     /* resumes accepting after running out of fds or memory */
    uv_async_t handoff;          /* balance.c: connections handed over by other workers */
    struct srv_group *group;     /* NULL: not balanced with other workers */
    struct srv__member *member;  /* this server's place in <group>; NULL once it left */
    struct srv_limits lim;
    srv_handler_fn *handler;
    srv_refused_fn *refused; /* NULL, or told of the server's own answers (access log) */
    srv_error_body_fn *error_body; /* NULL: plain-text error bodies */
    srv_head_check_fn *head_check; /* NULL, or shown heads whose body is still to come */
    void *ud;
    struct srv_conn *conns;      /* every connection not yet freed */
    struct srv_conn *work_head, *work_tail;
    size_t n_work;
    size_t n_conns, n_rejecting;
    size_t n_active;             /* served connections not closing: what the cap counts */
    struct {
        struct srv_conn *head, *tail; /* oldest first */
    } shed[SRV__SHED_NONE];      /* connections that may be closed at the cap, by class */
    uint64_t evict_log_ms[SRV__SHED_NONE]; /* when closing a class for room was last logged */
    unsigned open_handles;       /* listener, idle, accept_timer (+ handoff) */
    bool listener_closed, stopping, draining, accept_paused;
    bool accept_warned;          /* the current shortage of fds or memory was logged */
    bool free_on_close;          /* srv_new failed: the last handle close frees <srv> */
    srv_closed_cb *closed_cb;
    void *closed_ud;
    char *scratch;               /* owned: SRV__READ_CHUNK bytes every read lands in */
    char date[40];               /* "Date: ...\r\n" for <date_sec> */
    size_t date_len;
    uint64_t date_sec;
};

/* conn.c */
struct srv_conn *srv__conn_new(struct srv *srv);
void srv__conn_start(struct srv_conn *c, bool reject);
void srv__conn_close(struct srv_conn *c);
void srv__conn_close_reset(struct srv_conn *c);
/* Closes <c> to make room at the cap: a request still arriving gets 503 first (the reply
 * no longer counts against the cap, as the cap's own 503s do). */
void srv__conn_shed(struct srv_conn *c);
void srv__conn_drain(struct srv_conn *c);
void srv__conn_stop(struct srv_conn *c);
void srv__conn_flush(struct srv_conn *c);
void srv__conn_ended(struct srv_conn *c);
void srv__conn_schedule(struct srv_conn *c, unsigned work);
void srv__conn_run_work(struct srv_conn *c, unsigned work);
void srv__conn_error(struct srv_conn *c, int status, const char *code, const char *message);

/* listener.c */
void srv__accept_fd(struct srv *srv, int fd);
void srv__handle_closed(uv_handle_t *h);
void srv__work_add(struct srv *srv, struct srv_conn *c);
void srv__work_remove(struct srv *srv, struct srv_conn *c);
/* Runs the deferred work of the connections that have some (what the idle pass does). */
void srv__run_work(struct srv *srv);
void srv__conn_gone(struct srv *srv, struct srv_conn *c);

/* cap.c */
/* Puts <c> on the list its state and count say (SRV__SHED_NONE: off every list). It
 * keeps its place while its class is unchanged (HEAD to BODY), so a list stays in the
 * order its connections entered it. */
void srv__shed_track(struct srv *srv, struct srv_conn *c);
bool srv__at_cap(const struct srv *srv);
/* Closes one connection for a new one: lingering, else the oldest still receiving its
 * request, else the longest idle. True when one was closed. */
bool srv__make_room(struct srv *srv);

/* balance.c */
bool srv__group_handoff(struct srv *srv, int fd); /* true: another worker took <fd> */
void srv__group_count(struct srv *srv, int delta);
void srv__group_leave(struct srv *srv);

/* resp.c */
size_t srv__pending(const struct srv_conn *c);

#ifdef BSC_UNIT_TEST
/* File-local in release builds (BSC_TESTABLE): why the handler's response header <h> is
 * dropped (a bad name, CR/LF/NUL in the value, a header the server sets), NULL to keep it. */
const char *srv__header_bad(const struct srv_header *h);
#endif

#endif
