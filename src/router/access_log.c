/* SPDX-License-Identifier: MIT */
/* access_log.c -- the access-log line, built in a stack-bounded buffer. */
#include "router/access_log.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/log.h"

static void put_str(struct bsc_buf *b, const char *key, const char *val)
{
    bsc_buf_appendf(b, ",\"%s\":", key);
    if (val)
        bsc_buf_append_json_str(b, bsc_str_cstr(val));
    else
        bsc_buf_append_cstr(b, "null");
}

static void put_attempts(struct bsc_buf *b, const struct attempt *a, size_t n)
{
    bsc_buf_append_cstr(b, ",\"attempt_log\":[");
    for (size_t i = 0; i < n; i++) {
        bsc_buf_appendf(b, "%s{\"target\":", i ? "," : "");
        bsc_buf_append_json_str(b, bsc_str_cstr(a[i].target ? a[i].target->id : "-"));
        bsc_buf_appendf(b, ",\"workflow\":\"%s\",\"outcome\":\"%s\",\"status\":%d",
                        attempt_workflow_name(a[i].workflow), attempt_outcome_name(a[i].outcome),
                        a[i].status);
        put_str(b, "kind", a[i].kind);
        bsc_buf_appendf(b, ",\"ms\":%.3f}",
                        a[i].end_us > a[i].start_us ? (double)(a[i].end_us - a[i].start_us) / 1e3
                                                    : 0.0);
    }
    bsc_buf_append_char(b, ']');
}

void access_log_write(const struct access_entry *e)
{
    struct bsc_buf b;

    bsc_buf_init(&b, 16384);
    bsc_buf_appendf(&b, "{\"type\":\"access\",\"ts_ms\":%llu",
                    (unsigned long long)bsc_wall_ms());
    put_str(&b, "request_id", e->request_id);
    put_str(&b, "method", e->method ? e->method : "POST");
    put_str(&b, "path", e->path ? e->path : "/v1/chat/completions");
    put_str(&b, "route", e->route);
    put_str(&b, "target", e->target);
    bsc_buf_appendf(&b,
                    ",\"status\":%d,\"stream\":%s,\"bytes_in\":%llu,\"bytes_out\":%llu,"
                    "\"duration_ms\":%.3f,\"ttfb_ms\":%.3f,\"attempts\":%zu",
                    e->status, e->stream ? "true" : "false", (unsigned long long)e->bytes_in,
                    (unsigned long long)e->bytes_out, (double)e->duration_us / 1e3,
                    (double)e->ttfb_us / 1e3, e->n_attempts);
    put_str(&b, "termination", e->termination);
    if (e->input_tokens >= 0 || e->output_tokens >= 0)
        bsc_buf_appendf(&b, ",\"input_tokens\":%lld,\"output_tokens\":%lld,\"cost_usd\":%.8f",
                        (long long)e->input_tokens, (long long)e->output_tokens, e->cost_usd);
    if (e->n_attempts)
        put_attempts(&b, e->attempts, e->n_attempts);
    bsc_buf_append_char(&b, '}');
    if (b.p)
        bsc_log_line(b.p, b.len);
    bsc_buf_cleanup(&b);
}

void attempt_log_write(const struct attempt_line *l)
{
    struct bsc_buf b;
    const struct attempt *a = l->a;

    bsc_buf_init(&b, 4096);
    bsc_buf_appendf(&b, "{\"type\":\"attempt\",\"ts_ms\":%llu", (unsigned long long)bsc_wall_ms());
    put_str(&b, "request_id", l->request_id);
    put_str(&b, "route", l->route);
    bsc_buf_appendf(&b, ",\"attempt\":%u", l->number);
    put_str(&b, "target", a->target ? a->target->id : NULL);
    put_str(&b, "workflow", attempt_workflow_name(a->workflow));
    put_str(&b, "outcome", attempt_outcome_name(a->outcome));
    put_str(&b, "kind", a->kind);
    bsc_buf_appendf(&b, ",\"status\":%d,\"ms\":%.3f,\"delay_before_ms\":%u", a->status,
                    a->end_us > a->start_us ? (double)(a->end_us - a->start_us) / 1e3 : 0.0,
                    a->delay_ms);
    put_str(&b, "circuit", l->circuit);
    bsc_buf_appendf(&b, ",\"time_left_ms\":%llu", (unsigned long long)l->time_left_ms);
    put_str(&b, "next", l->next);
    put_str(&b, "why", l->why);
    bsc_buf_appendf(&b, ",\"next_delay_ms\":%u", l->next_delay_ms);
    put_str(&b, "delay_why", l->delay_why);
    bsc_buf_append_char(&b, '}');
    if (b.p)
        bsc_log_line(b.p, b.len);
    bsc_buf_cleanup(&b);
}
