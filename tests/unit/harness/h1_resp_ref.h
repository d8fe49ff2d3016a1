/* SPDX-License-Identifier: MIT */
/* h1_resp_ref.h -- the reference response reader (http-parser based) the differential fuzz
 * target and unit tests compare upstream/h1_wire.c with; see h1_resp_ref.c. Same API as
 * h1_resp_*, same enums. */
#ifndef BSC_TESTS_H1_RESP_REF_H
#define BSC_TESTS_H1_RESP_REF_H

#include <http_parser.h>

#include "upstream/h1_wire.h"

struct h1_ref {
    http_parser p;
    struct bsc_buf *head; /* borrowed: the final head's raw lines go here */
    struct bsc_buf held;  /* owned: body bytes parsed while held */
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
    unsigned char last; /* the last head piece: H1__NONE, _STATUS, _FIELD, _VALUE */
    bool line_open; /* the status line was started */
    bool no_body;   /* the request was HEAD: the answer has no body whatever it says */
    const char *why; /* static text: the wire rule the response broke, else NULL */
    unsigned interim; /* 1xx heads seen */
    /* Line discipline of the framing bytes (heads, chunk lines), checked before the
     * parser sees a head and around each body piece: see h1_wire.c. */
    unsigned char ld_phase;
    bool ld_cr, ld_bol;
    const char *scan_at; /* in the piece being fed: framing bytes before it are checked */
    /* For the differential target: H1_REF_Q_* seen in what http-parser was given. */
    unsigned quirks;
    struct bsc_buf raw;  /* the current head's raw bytes, for the quirk checks */
    size_t raw_checked;  /* bytes of <raw> in whole lines already checked */
    bool raw_status;     /* <raw> holds the status line */
    bool raw_reset;      /* an interim head ended: the next one starts afresh */
    int q_crlf;          /* bytes of a chunk's CRLF still to look at */
    bool q_sizeline;     /* in a chunk-size line */
};

/* What the reference let through that the new reader refuses on purpose. */
enum {
    H1_REF_Q_STATUS = 1,           /* a status line other than "HTTP/d.d ddd[ ...]", ddd >= 100 */
    H1_REF_Q_NAME_SPACE = 2,       /* whitespace in a field name (head or trailers) */
    H1_REF_Q_TRAILER_FOLD = 4,     /* a trailer line starting with SP/HT */
    H1_REF_Q_DATA_CRLF = 8,        /* other bytes than CRLF after a chunk's data */
    H1_REF_Q_TRAILER_IN_HEAD = 16, /* trailer fields appended to the head buffer */
    H1_REF_Q_VALUE_CTL = 32,       /* a control byte (or DEL) first in a field value */
    H1_REF_Q_CHUNK_HIGH = 64,      /* a byte >= 0x80 in a chunk-size line (read as 0) */
};

/* Sets <r> up with its hooks, once. */
void h1_ref_setup(struct h1_ref *r, enum h1_take (*on_head)(void *ud, int status),
                   enum h1_take (*on_body)(void *ud, const char *p, size_t len));
/* Starts reading a response into <head> (reset, its bound kept); hooks get <ud>. <no_body>:
 * the request was HEAD, so the answer ends with its head and any byte after it is extra. */
void h1_ref_start(struct h1_ref *r, struct bsc_buf *head, void *ud, bool no_body);
void h1_ref_cleanup(struct h1_ref *r);
/* Feeds <len> bytes; *<used> (may be NULL) says how many belong to this response. */
enum h1_state h1_ref_feed(struct h1_ref *r, const char *p, size_t len, size_t *used);
/* The connection ended: H1_DONE when that completes a close-delimited body. */
enum h1_state h1_ref_eof(struct h1_ref *r);
/* Stops holding and hands the held bytes over in one on_body call. Returns H1_STOP when
 * the consumer said so, H1_HOLD when it holds again, else H1_GO. */
enum h1_take h1_ref_drain(struct h1_ref *r);
/* Whether the connection may carry another request after this complete response. */
bool h1_ref_keep_alive(const struct h1_ref *r);
/* Why the response is H1_BAD: the wire rule it broke, else http-parser's description.
 * Static text. */
const char *h1_ref_why(const struct h1_ref *r);

#endif
