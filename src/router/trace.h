/* SPDX-License-Identifier: MIT */
/* trace.h -- the router's three touch points with tracing (trace.c): the trace begins with
 * the request (continuing the client's traceparent), each attempt sends its own traceparent
 * upstream, and the finished request becomes a request span and one span per attempt,
 * built from the attempts[] records and queued for export. Router-private. */
#ifndef BSC_ROUTER_TRACE_H
#define BSC_ROUTER_TRACE_H

#include "core/err.h"
#include "core/buf.h"

struct request;

/* At the start of the request, while the client's headers are readable. */
void req_trace_begin(struct request *r);
/* Appends the current attempt's traceparent to the upstream headers <h> (a sampled or not
 * trace alike: the provider may sample on its own). */
enum bsc_err req_trace_header(struct request *r, struct bsc_buf *h);
/* At the end of the request (st_done): the spans, when the trace is sampled. */
void req_trace_finish(struct request *r);

#endif
