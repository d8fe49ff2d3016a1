/* SPDX-License-Identifier: MIT */
/* xchg.h -- one attempt's upstream side (exchange.c): the adapter, the transfer, what came
 * back (status, headers, body or SSE stream, the adapter's OpenAI frames), the failure and
 * the usage. exchange.c alone writes it; request.c reads the outcome once the transfer is
 * over (or a first frame arrived) and decides. Types only: exchange.c's functions are in
 * exchange.h. Router-private. */
#ifndef BSC_ROUTER_XCHG_H
#define BSC_ROUTER_XCHG_H

#include <stdbool.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/compat.h"
#include "core/err.h"
#include "providers/provider.h"
#include "fail/taxonomy.h"
#include "stream/sse_parse.h"
#include "upstream/upstream.h"

struct request;

/* How the upstream body is consumed during an attempt. */
enum body_mode { BODY_NONE = 0, BODY_BUFFER, BODY_SSE };

#define REQ_MAX_RESPONSE_BYTES (64u << 20)
#define REQ_MAX_SSE_EVENT      (4u << 20)

/* The most storage each of an exchange's buffers keeps, parked, for the next request on a
 * pooled request object (xchg_park); a buffer grown past it is freed when the request ends,
 * so one large request does not pin memory. docs/internals/memory-bounds.md. */
#define XCHG_KEEP_BYTES (16u << 10)
#define XCHG_KEPT_BUFS  7

/* An exchange's parked buffers, carried across the zeroing of a pooled request (request.c):
 * their storage and bounds only, never their contents. */
struct xchg_store {
    struct bsc_buf b[XCHG_KEPT_BUFS];
};

struct xchg {
    const struct prov_ops *ops;      /* the target's adapter */
    void *prov_st;                   /* owned: ops->stream_size bytes, for streams */
    bool prov_st_live;               /* stream_init ran; cleanup due */
    struct up_transfer *xfer;        /* NULL when none is running */
    struct prov_http http;           /* owned: what was sent upstream */
    enum body_mode mode;
    struct bsc_buf resp;             /* owned: buffered upstream body (BODY_BUFFER) */
    struct bsc_buf answer;           /* owned: the OpenAI-shaped answer (non-stream) */
    struct sse_parser sse;           /* BODY_SSE */
    struct bsc_buf conv;             /* owned: OpenAI frames from the adapter, per read */
    int up_status;
    char up_ctype[128];
    struct bsc_buf up_head;          /* owned: the response head, taken at on_done, for the
                                        adapter's classify to read its headers from */
    bool saw_done;                   /* the upstream stream ended properly */
    bool first_frame;                /* client bytes are ready: st_attempt commits */
    bool timed_out;
    bool ftt_armed;                  /* the timer is envelope.first_token_timeout_ms's */
    bool first_token_late;           /* ... and it fired: no content event in time */
    bool content_seen;               /* a frame with generated text (or tool arguments) */
    bool stream_failed;              /* an in-band error or a bad stream */
    enum up_result up_res;
    struct fail_info fail;           /* the last failure */
    struct fail_info stream_fail;    /* an in-band error seen in the stream */
    struct prov_usage usage;         /* of the delivered answer */
};

#endif
