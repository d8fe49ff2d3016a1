/* SPDX-License-Identifier: MIT */
/* trace.h -- the router's three touch points with tracing (trace.c): the trace begins with
 * the request (continuing the client's traceparent), each attempt sends its own traceparent
 * upstream, and the finished request becomes a request span and one span per attempt,
 * built from the attempts[] records and queued for export. Router-private. */
#ifndef BSC_ROUTER_TRACE_H
#define BSC_ROUTER_TRACE_H

#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/str.h"

struct cfg_telemetry;
struct envelope;
struct metrics;
struct prov_usage;
struct req_attempts;
struct tel_trace;

/* What the request span says of the request, handed over by request.c at its end. */
struct trace_request {
    const char *id;                  /* the request id */
    const char *route;               /* the route's id */
    const char *outcome;             /* the termination code */
    const char *target;              /* the last attempt's target's id, or NULL */
    int status;                      /* the status the client got */
    uint64_t start_us;               /* when it began (bsc_now_us clock) */
    const struct req_attempts *att;  /* its attempt records, one span each */
    const struct prov_usage *usage;  /* the delivered answer's usage */
    double cost_usd;
    const struct envelope *env;      /* for each attempt's time left */
};

/* At the start of the request, while the client's headers are readable: <t> continues the
 * client's <traceparent> (empty when none) under the telemetry config <tc>. */
void req_trace_begin(struct tel_trace *t, const struct cfg_telemetry *tc,
                     struct bsc_str traceparent);
/* Appends attempt <n>'s traceparent to the upstream headers <h> (a sampled or not trace
 * alike: the provider may sample on its own); nothing when <t> never began. */
enum bsc_err req_trace_header(const struct tel_trace *t, unsigned n, struct bsc_buf *h);
/* At the end of the request (st_done): the spans of <req>, when <t> is sampled, exported
 * under <tc> and counted in <m>. */
void req_trace_finish(const struct tel_trace *t, const struct cfg_telemetry *tc,
                      struct metrics *m, const struct trace_request *req);

#endif
