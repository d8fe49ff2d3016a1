/* SPDX-License-Identifier: MIT */
/* h1_wire.h -- the pure parts of the builtin HTTP/1.1 client: splitting an http:// URL,
 * writing a request head (h1_wire.c), and reading a response (h1_read.c: 1xx heads
 * skipped up to a bound, Content-Length, chunked and close-delimited bodies, a bounded
 * head) under strict wire rules: CRLF line endings, no obs-fold, Transfer-Encoding only
 * "chunked", no 101, no body on 204/304/HEAD. Body bytes parsed while the consumer holds
 * them back are kept and handed over by h1_resp_drain. No I/O here: h1.c feeds it what a
 * socket read. See docs/internals/upstream.md ("Out of step"). */
#ifndef BSC_UPSTREAM_H1_WIRE_H
#define BSC_UPSTREAM_H1_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/str.h"

/* The parts of an http:// or https:// URL a request needs; borrowed from the URL text. */
struct h1_url {
    bool tls;                 /* https:// */
    struct bsc_str host;      /* without brackets for IPv6 literals */
    struct bsc_str authority; /* host[:port] as written: the Host header */
    uint16_t port;            /* 80 (443 for https) when absent */
    struct bsc_str target;    /* path and query; "/" when absent */
};

/* Whether <url> is http:// (https://), any case: the builtin client's schemes. */
bool h1_url_is_http(const char *url);
bool h1_url_is_https(const char *url);
/* Splits <url>. BSC_EINVAL when it is not a well-formed http:// or https:// URL. */
enum bsc_err h1_url_split(const char *url, struct h1_url *out);

/* Writes the request head for <method> to <u> into <out>: the caller's "Name: value"
 * lines, then Host, Accept, Accept-Encoding and Content-Length (POST) unless the caller
 * gave them. A caller line "Name:" (no value) drops that default, as with libcurl.
 * BSC_EINVAL for a line with CR/LF or without a colon; BSC_ENOMEM. */
enum bsc_err h1_request_head(struct bsc_buf *out, const char *method, const struct h1_url *u,
                             const char *const *headers, size_t n_headers, size_t body_len);
#ifdef BSC_UNIT_TEST
/* Whether one of the <len> bytes at <p> is CR or LF (h1_wire.c, sixteen at a time). */
bool h1__has_cr_lf(const char *p, size_t len);
#endif

/* Interim (1xx) heads a response may send before its final one; one more is H1_BAD. */
#define H1_INTERIM_MAX 8

/* What the consumer says to a piece of body. */
enum h1_take { H1_GO, H1_HOLD, H1_STOP };

/* Where a response is after a feed. */
enum h1_state {
    H1_MORE,      /* all bytes taken, the message goes on */
    H1_DONE,      /* the message is complete (it may still be held) */
    H1_STOPPED,   /* a hook said stop */
    H1_BAD,       /* malformed HTTP, or a wire rule broken (h1_resp_why says which) */
    H1_TOO_LARGE, /* the head passed its bound */
};

struct h1_resp {
    struct bsc_buf *head; /* borrowed: the final head's raw lines go here */
    struct bsc_buf held;  /* owned: body bytes parsed while held */
    struct bsc_buf line;  /* owned: a head or trailer line cut by a read, so far */
    /* The final head is in <head>: H1_STOP ends the response. */
    enum h1_take (*on_head)(void *ud, int status);
    enum h1_take (*on_body)(void *ud, const char *p, size_t len);
    void *ud;
    size_t taken;   /* bytes of the response fed so far */
    int status;     /* the final status, once its head is complete */
    bool hold;      /* body bytes are kept, not handed over */
    bool head_done; /* the final head is complete */
    bool done;      /* the message is complete */
    bool stop;
    bool too_large;
    bool no_body;   /* the request was HEAD: the answer has no body whatever it says */
    const char *why; /* static text: the rule the response broke, else NULL */
    unsigned interim; /* 1xx heads seen */
    /* The reader's own state (h1_read.c). */
    unsigned char phase;        /* RD_*: where in the message */
    unsigned char ld_phase;     /* line discipline of a head: LD_* */
    bool ld_cr, ld_bol;
    unsigned char ck;           /* a chunk-size line: CK_*, or bytes of a chunk's CRLF */
    unsigned char major, minor; /* the head's HTTP version */
    bool status_seen;           /* the current head's status line was read */
    bool colon;                 /* the current field line's colon was seen */
    bool put_ok;                /* every line of the head went into <head> */
    bool te_ok;                 /* the Transfer-Encoding line said "chunked" */
    bool to_eof;                /* the body runs to the close */
    unsigned hflags;            /* HF_*: the framing fields of the head (and trailers) */
    unsigned te_lines;
    int code;        /* the current head's status code */
    size_t lpos;     /* bytes of the current line checked */
    size_t name_len; /* its field name's length, once the colon came */
    size_t section;  /* raw bytes of the current head, chunk line or trailers */
    uint64_t length; /* Content-Length */
    uint64_t left;   /* body or chunk bytes to go; a chunk size being read */
};

/* Sets <r> up with its hooks, once. */
void h1_resp_setup(struct h1_resp *r, enum h1_take (*on_head)(void *ud, int status),
                   enum h1_take (*on_body)(void *ud, const char *p, size_t len));
/* Starts reading a response into <head> (reset, its bound kept); hooks get <ud>. <no_body>:
 * the request was HEAD, so the answer ends with its head and any byte after it is extra. */
void h1_resp_start(struct h1_resp *r, struct bsc_buf *head, void *ud, bool no_body);
void h1_resp_cleanup(struct h1_resp *r);
/* Feeds <len> bytes; *<used> (may be NULL) says how many belong to this response. */
enum h1_state h1_resp_feed(struct h1_resp *r, const char *p, size_t len, size_t *used);
/* The connection ended: H1_DONE when that completes a close-delimited body. */
enum h1_state h1_resp_eof(struct h1_resp *r);
/* Stops holding and hands the held bytes over in one on_body call. Returns H1_STOP when
 * the consumer said so, H1_HOLD when it holds again, else H1_GO. */
enum h1_take h1_resp_drain(struct h1_resp *r);
/* Whether the connection may carry another request after this complete response. */
bool h1_resp_keep_alive(const struct h1_resp *r);
/* Why the response is H1_BAD: the rule it broke. Static text. */
const char *h1_resp_why(const struct h1_resp *r);

#endif
