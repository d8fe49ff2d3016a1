/* SPDX-License-Identifier: MIT */
/* access_log.c -- the access-log line, built in a stack-bounded buffer. */
#include "router/access_log.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/log.h"

/* Each line is built in this thread's scratch buffer: no allocation per line once warm. */
static _Thread_local struct bsc_buf scratch = {NULL, 0, 0, 16384};

static struct bsc_buf *line_begin(void)
{
    bsc_buf_reset(&scratch);
    return &scratch;
}

static void put_key(struct bsc_buf *b, const char *key)
{
    bsc_buf_append_cstr(b, ",\"");
    bsc_buf_append_cstr(b, key);
    bsc_buf_append(b, "\":", 2);
}

static void put_str(struct bsc_buf *b, const char *key, const char *val)
{
    put_key(b, key);
    if (val)
        bsc_buf_append_json_str(b, bsc_str_cstr(val));
    else
        bsc_buf_append_cstr(b, "null");
}

static void put_u64(struct bsc_buf *b, const char *key, unsigned long long v)
{
    put_key(b, key);
    bsc_buf_append_u64(b, v);
}

static void put_ms(struct bsc_buf *b, const char *key, uint64_t us)
{
    put_key(b, key);
    bsc_buf_append_milli(b, us);
}

static uint64_t span_us(const struct attempt *a)
{
    return a->end_us > a->start_us ? a->end_us - a->start_us : 0;
}

static void put_attempts(struct bsc_buf *b, const struct attempt *a, size_t n)
{
    bsc_buf_append_cstr(b, ",\"attempt_log\":[");
    for (size_t i = 0; i < n; i++) {
        bsc_buf_append_cstr(b, i ? ",{\"target\":" : "{\"target\":");
        bsc_buf_append_json_str(b, bsc_str_cstr(a[i].target ? a[i].target->id : "-"));
        put_str(b, "workflow", attempt_workflow_name(a[i].workflow));
        put_str(b, "outcome", attempt_outcome_name(a[i].outcome));
        put_key(b, "status");
        bsc_buf_append_i64(b, a[i].status);
        put_str(b, "kind", a[i].kind);
        put_ms(b, "ms", span_us(&a[i]));
        bsc_buf_append_char(b, '}');
    }
    bsc_buf_append_char(b, ']');
}

void access_log_write(const struct access_entry *e)
{
    struct bsc_buf *b = line_begin();

    bsc_buf_append_cstr(b, "{\"type\":\"access\"");
    put_u64(b, "ts_ms", bsc_wall_ms());
    put_str(b, "request_id", e->request_id);
    put_str(b, "method", e->method ? e->method : "POST");
    put_str(b, "path", e->path ? e->path : "/v1/chat/completions");
    put_str(b, "route", e->route);
    put_str(b, "target", e->target);
    put_key(b, "status");
    bsc_buf_append_i64(b, e->status);
    bsc_buf_append_cstr(b, e->stream ? ",\"stream\":true" : ",\"stream\":false");
    put_u64(b, "bytes_in", e->bytes_in);
    put_u64(b, "bytes_out", e->bytes_out);
    put_ms(b, "duration_ms", e->duration_us);
    put_ms(b, "ttfb_ms", e->ttfb_us);
    put_u64(b, "attempts", e->n_attempts);
    put_str(b, "termination", e->termination);
    if (e->input_tokens >= 0 || e->output_tokens >= 0) {
        put_key(b, "input_tokens");
        bsc_buf_append_i64(b, e->input_tokens);
        put_key(b, "output_tokens");
        bsc_buf_append_i64(b, e->output_tokens);
        bsc_buf_appendf(b, ",\"cost_usd\":%.8f", e->cost_usd);
    }
    if (e->n_attempts)
        put_attempts(b, e->attempts, e->n_attempts);
    bsc_buf_append_char(b, '}');
    if (b->p)
        bsc_log_line(b->p, b->len);
}

void attempt_log_write(const struct attempt_line *l)
{
    struct bsc_buf *b = line_begin();
    const struct attempt *a = l->a;

    bsc_buf_append_cstr(b, "{\"type\":\"attempt\"");
    put_u64(b, "ts_ms", bsc_wall_ms());
    put_str(b, "request_id", l->request_id);
    put_str(b, "route", l->route);
    put_u64(b, "attempt", l->number);
    put_str(b, "target", a->target ? a->target->id : NULL);
    put_str(b, "workflow", attempt_workflow_name(a->workflow));
    put_str(b, "outcome", attempt_outcome_name(a->outcome));
    put_str(b, "kind", a->kind);
    put_key(b, "status");
    bsc_buf_append_i64(b, a->status);
    put_ms(b, "ms", span_us(a));
    put_u64(b, "delay_before_ms", a->delay_ms);
    put_str(b, "circuit", l->circuit);
    put_u64(b, "time_left_ms", l->time_left_ms);
    put_str(b, "next", l->next);
    put_str(b, "why", l->why);
    put_u64(b, "next_delay_ms", l->next_delay_ms);
    put_str(b, "delay_why", l->delay_why);
    bsc_buf_append_char(b, '}');
    if (b->p)
        bsc_log_line(b->p, b->len);
}

void access_log_thread_cleanup(void)
{
    bsc_buf_cleanup(&scratch);
}
