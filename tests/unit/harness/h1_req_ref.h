/* SPDX-License-Identifier: MIT */
/* h1_req_ref.h -- the reference request parser (http-parser based) that the differential fuzz
 * target and unit tests compare src/server/h1_parse.c with; see h1_req_ref.c. Same API as
 * srv__h1_*, same error classes (enum srv__h1_err). */
#ifndef BSC_TESTS_H1_REQ_REF_H
#define BSC_TESTS_H1_REQ_REF_H

#include <stdbool.h>
#include <stdint.h>

#include <http_parser.h>

#include "core/buf.h"
#include "core/str.h"
#include "server/internal.h"

struct h1_req_ref {
    http_parser hp;            /* hp.data points back here */
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
    enum srv__h1_err err;      /* first failure, sticky until h1_req_ref_next() */
    const char *why;           /* static text that goes with <err> */
    uint8_t last_cb;           /* which header callback ran last (field, value, none) */
    bool head_done;            /* headers complete: path, flags and headers are final */
    bool complete;             /* the message ended; the parser is paused on it */
    bool keep_alive;           /* http_should_keep_alive() for this message */
    bool expect_continue;      /* Expect: 100-continue on an HTTP/1.1 request */
    bool http10;               /* HTTP/1.0 (or 0.9): no chunked responses */
    const char *scan_at;       /* next unchecked byte of the buffer being fed */
    uint8_t ld_phase;          /* before the request line, in the head, after it */
    bool ld_cr;                /* the last framing byte was a CR: an LF must follow */
    bool ld_bol;               /* no byte of the current line yet (a CR does not count) */
};

void h1_req_ref_init(struct h1_req_ref *h, uint32_t max_head, uint64_t max_body);
void h1_req_ref_cleanup(struct h1_req_ref *h);
void h1_req_ref_next(struct h1_req_ref *h, uint32_t max_head, uint64_t max_body);
int h1_req_ref_feed(struct h1_req_ref *h, const char *p, size_t len, size_t *consumed);
struct srv_header h1_req_ref_header_at(const struct h1_req_ref *h, size_t i);
struct bsc_str h1_req_ref_header(const struct h1_req_ref *h, struct bsc_str name);
struct bsc_str h1_req_ref_method(const struct h1_req_ref *h);
bool h1_req_ref_is_head(const struct h1_req_ref *h);

#endif
