/* SPDX-License-Identifier: MIT */
/* trace.c -- glue from a request to its spans (trace.h). Everything about ids, sampling,
 * encoding and export is src/telemetry/; this file only reads what request.c hands it of
 * the request (struct trace_request): its route, outcome, usage and attempts[] records. No
 * prompt, answer or error text goes into a span: ids, kinds and numbers only.
 * docs/internals/telemetry.md lists the attributes. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "providers/provider.h"
#include "config/config.h"
#include "policy/attempt.h"
#include "policy/envelope.h"
#include "router/req_attempt.h"
#include "router/trace.h"
#include "telemetry/exporter.h"
#include "telemetry/trace.h"

void req_trace_begin(struct tel_trace *t, const struct cfg_telemetry *tc, struct bsc_str tp)
{
    struct tel_parent parent;

    /* No collector: nothing is recorded. A client's trace is still continued upstream
     * (flagged not sampled by the gateway); without one the upstream request gets no
     * traceparent at all, as before telemetry existed. */
    if (!tc->otlp_endpoint[0] && !tel_traceparent_parse(tp, &parent))
        return;
    tel_trace_begin(t, tp, tc->otlp_endpoint[0] ? tc->sample : 0.0);
}

enum bsc_err req_trace_header(const struct tel_trace *t, unsigned n, struct bsc_buf *h)
{
    char tp[TEL_TRACEPARENT_LEN + 1];

    if (!t->begun)
        return BSC_OK;
    tel_trace_header(t, n, tp);
    return prov_header(h, "traceparent", "%s", tp);
}

/* Unix nanoseconds of the monotonic microsecond <us>, by the offset of the two clocks now. */
static uint64_t unix_ns(uint64_t us, int64_t offset_ns)
{
    return (uint64_t)((int64_t)us * 1000 + offset_ns);
}

static int64_t clock_offset_ns(void)
{
    struct timespec wall, mono;

    clock_gettime(CLOCK_REALTIME, &wall);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    return ((int64_t)wall.tv_sec - (int64_t)mono.tv_sec) * 1000000000 +
           ((int64_t)wall.tv_nsec - (int64_t)mono.tv_nsec);
}

static void request_span(const struct tel_trace *t, const struct trace_request *r,
                         struct tel_span *s, int64_t off)
{
    const struct attempt *last = r->att->n ? &r->att->recs[r->att->n - 1] : NULL;

    memcpy(s->trace_id, t->trace_id, 16);
    memcpy(s->span_id, t->span_id, 8);
    memcpy(s->parent_id, t->parent_id, 8);
    s->has_parent = t->has_parent;
    s->name = "bascule.request";
    s->kind = TEL_KIND_SERVER;
    s->start_ns = unix_ns(r->start_us, off);
    s->end_ns = unix_ns(bsc_now_us(), off);
    s->error = strcmp(r->outcome, "ok") != 0;
    tel_span_str(s, "bascule.request_id", r->id);
    tel_span_str(s, "bascule.route", r->route);
    tel_span_str(s, "bascule.workflow", last ? attempt_workflow_name(last->workflow) : "none");
    tel_span_str(s, "bascule.outcome", r->outcome);
    tel_span_int(s, "http.response.status_code", r->status);
    tel_span_int(s, "bascule.attempts", r->att->n);
    tel_span_str(s, "bascule.target", r->target);
    if (r->usage->input_tokens >= 0)
        tel_span_int(s, "gen_ai.usage.input_tokens", r->usage->input_tokens);
    if (r->usage->output_tokens >= 0)
        tel_span_int(s, "gen_ai.usage.output_tokens", r->usage->output_tokens);
    tel_span_dbl(s, "bascule.cost_usd", r->cost_usd);
}

static void attempt_span(const struct tel_trace *t, const struct trace_request *r, unsigned n,
                         struct tel_span *s, int64_t off)
{
    const struct attempt *a = &r->att->recs[n - 1];
    uint64_t end = a->end_us ? a->end_us : bsc_now_us();

    memcpy(s->trace_id, t->trace_id, 16);
    tel_trace_attempt_id(t, n, s->span_id);
    memcpy(s->parent_id, t->span_id, 8);
    s->has_parent = true;
    s->name = "bascule.attempt";
    s->kind = TEL_KIND_CLIENT;
    s->start_ns = unix_ns(a->start_us, off);
    s->end_ns = unix_ns(end, off);
    s->error = a->outcome != ATTEMPT_OK && a->outcome != ATTEMPT_COMMITTED;
    tel_span_int(s, "bascule.attempt", n);
    tel_span_str(s, "bascule.target", a->target->id);
    tel_span_str(s, "bascule.provider", a->target->provider->id);
    tel_span_str(s, "gen_ai.request.model", a->target->model);
    tel_span_str(s, "bascule.workflow", attempt_workflow_name(a->workflow));
    tel_span_str(s, "bascule.outcome", attempt_outcome_name(a->outcome));
    tel_span_str(s, "bascule.failure_kind", a->kind);
    tel_span_int(s, "http.response.status_code", a->status);
    tel_span_int(s, "bascule.delay_ms", a->delay_ms);
    tel_span_str(s, "bascule.delay_reason", a->delay_why);
    tel_span_int(s, "bascule.time_left_ms",
                 (int64_t)envelope_remaining_ms(r->env, a->start_us / 1000));
    tel_span_str(s, "bascule.circuit", a->circuit);
}

void req_trace_finish(const struct tel_trace *t, const struct cfg_telemetry *tc,
                      struct metrics *m, const struct trace_request *r)
{
    unsigned n = r->att->n;
    struct tel_span *spans;
    int64_t off;

    if (!t->begun || !t->sampled || !tc->otlp_endpoint[0])
        return;
    spans = calloc(1 + n, sizeof(*spans)); /* ~2.4 KB each: not on a loop stack */
    if (!spans)
        return;
    off = clock_offset_ns();
    request_span(t, r, &spans[0], off);
    for (unsigned i = 1; i <= n; i++)
        attempt_span(t, r, i, &spans[i], off);
    tel_export(tc, m, spans, 1 + n);
    free(spans);
}
