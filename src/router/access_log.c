/* SPDX-License-Identifier: MIT */
/* access_log.c -- the access-log line, built in a stack-bounded buffer. */
#include "router/access_log.h"

#include <stdint.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/log.h"
#include "router/req_state.h"

/* Each line is built in this thread's scratch buffer: no allocation per line once warm. */
static _Thread_local struct bsc_buf scratch = {NULL, 0, 0, 16384};

/* Keys are literals: ",\"name\":" is spelled out at compile time and copied whole. */
#define KEY(name) ",\"" name "\":"
#define PUT_KEY(b, name) BSC_BUF_APPEND_LIT(b, KEY(name))
#define PUT_STR(b, name, val) put_str(b, KEY(name), sizeof(KEY(name)) - 1, val)
#define PUT_U64(b, name, v) (PUT_KEY(b, name), bsc_buf_append_u64(b, v))
#define PUT_I64(b, name, v) (PUT_KEY(b, name), bsc_buf_append_i64(b, v))
#define PUT_MS(b, name, us) (PUT_KEY(b, name), bsc_buf_append_milli(b, us))

static void put_str(struct bsc_buf *b, const char *key, size_t key_len, const char *val)
{
    bsc_buf_append(b, key, key_len);
    if (val)
        bsc_buf_append_json_str(b, bsc_str_cstr(val));
    else
        BSC_BUF_APPEND_LIT(b, "null");
}

/* ",\"cost_usd\":N" with exactly eight decimals, as "%.8f" prints it, without printf. */
static void put_usd(struct bsc_buf *b, double usd)
{
    if (!(usd >= 0.0) || usd >= 1e10) { /* NaN, negative or absurd: printf knows best */
        bsc_buf_appendf(b, KEY("cost_usd") "%.8f", usd);
        return;
    }
    PUT_KEY(b, "cost_usd");
    bsc_buf_append_fixed(b, (unsigned long long)(usd * 1e8 + 0.5), 8);
}

/* Starts a line in this thread's scratch buffer: {"type":<type>,"ts_ms":..,"request_id":..
 * (<open> is the literal up to the type, made by LINE_BEGIN). */
#define LINE_BEGIN(type, request_id) \
    line_begin("{\"type\":\"" type "\"", sizeof("{\"type\":\"" type "\"") - 1, request_id)

static struct bsc_buf *line_begin(const char *open, size_t open_len, const char *request_id)
{
    struct bsc_buf *b = &scratch;

    bsc_buf_reset(b);
    bsc_buf_append(b, open, open_len);
    PUT_U64(b, "ts_ms", bsc_wall_ms());
    PUT_STR(b, "request_id", request_id);
    return b;
}

/* Closes the line and hands it to the log (nothing when the buffer could not grow). */
static void line_end(struct bsc_buf *b)
{
    bsc_buf_append_char(b, '}');
    if (b->p)
        bsc_log_line(b->p, b->len);
}

static uint64_t span_us(const struct attempt *a)
{
    return a->end_us > a->start_us ? a->end_us - a->start_us : 0;
}

static void put_attempts(struct bsc_buf *b, const struct attempt *a, size_t n)
{
    BSC_BUF_APPEND_LIT(b, ",\"attempt_log\":[");
    for (size_t i = 0; i < n; i++) {
        bsc_buf_append_cstr(b, i ? ",{\"target\":" : "{\"target\":");
        bsc_buf_append_json_str(b, bsc_str_cstr(a[i].target ? a[i].target->id : "-"));
        PUT_STR(b, "workflow", attempt_workflow_name(a[i].workflow));
        PUT_STR(b, "outcome", attempt_outcome_name(a[i].outcome));
        PUT_I64(b, "status", a[i].status);
        PUT_STR(b, "kind", a[i].kind);
        PUT_MS(b, "ms", span_us(&a[i]));
        bsc_buf_append_char(b, '}');
    }
    bsc_buf_append_char(b, ']');
}

/* ",\"states\":{\"pick\":0.0,\"attempt\":12.3,...}": milliseconds in each state the request
 * entered, DONE left out (the line is written in it). */
static void put_states(struct bsc_buf *b, const struct req_times *t)
{
    bool first = true;

    PUT_KEY(b, "states");
    bsc_buf_append_char(b, '{');
    for (unsigned s = 0; s < REQ_ST_COUNT; s++) {
        if (s == REQ_ST_DONE || !(t->visited & (1u << s)))
            continue;
        if (!first)
            bsc_buf_append_char(b, ',');
        first = false;
        bsc_buf_append_json_str(b, bsc_str_cstr(req_state_name(s)));
        bsc_buf_append_char(b, ':');
        bsc_buf_append_milli(b, t->spent_us[s]);
    }
    bsc_buf_append_char(b, '}');
}

/* ,"continued":{"target":...,"how":...,"bytes":N} */
static void put_continued(struct bsc_buf *b, const char *target, const char *how,
                          uint64_t bytes)
{
    PUT_KEY(b, "continued");
    bsc_buf_append_char(b, '{');
    put_str(b, "\"target\":", sizeof("\"target\":") - 1, target);
    PUT_STR(b, "how", how);
    PUT_U64(b, "bytes", bytes);
    bsc_buf_append_char(b, '}');
}

void access_log_write(const struct access_entry *e)
{
    struct bsc_buf *b = LINE_BEGIN("access", e->request_id);

    PUT_STR(b, "method", e->method ? e->method : "POST");
    PUT_STR(b, "path", e->path ? e->path : "/v1/chat/completions");
    PUT_STR(b, "route", e->route);
    if (e->client)
        PUT_STR(b, "client", e->client);
    if (e->selected_by)
        PUT_STR(b, "selected_by", e->selected_by);
    PUT_STR(b, "target", e->target);
    PUT_I64(b, "status", e->status);
    bsc_buf_append_cstr(b, e->stream ? ",\"stream\":true" : ",\"stream\":false");
    PUT_U64(b, "bytes_in", e->bytes_in);
    PUT_U64(b, "bytes_out", e->bytes_out);
    PUT_MS(b, "duration_ms", e->duration_us);
    PUT_MS(b, "ttfb_ms", e->ttfb_us);
    PUT_U64(b, "attempts", e->n_attempts);
    PUT_STR(b, "termination", e->termination);
    if (e->detail)
        PUT_STR(b, "detail", e->detail);
    if (e->limited_by)
        PUT_STR(b, "limited_by", e->limited_by);
    if (e->cache)
        PUT_STR(b, "cache", e->cache);
    if (e->queued_ms > 0 || (e->queued_ms == 0 && e->limited_by))
        PUT_I64(b, "queued_ms", e->queued_ms);
    if (e->continued_target)
        put_continued(b, e->continued_target, e->continued_how, e->continued_bytes);
    if (e->input_tokens >= 0 || e->output_tokens >= 0) {
        PUT_I64(b, "input_tokens", e->input_tokens);
        PUT_I64(b, "output_tokens", e->output_tokens);
        if (e->cached_tokens > 0)
            PUT_I64(b, "cached_input_tokens", e->cached_tokens);
        if (e->cache_write_tokens > 0)
            PUT_I64(b, "cache_write_tokens", e->cache_write_tokens);
        if (e->reasoning_tokens > 0)
            PUT_I64(b, "reasoning_tokens", e->reasoning_tokens);
        put_usd(b, e->cost_usd);
        if (e->cost_estimated)
            BSC_BUF_APPEND_LIT(b, ",\"cost_estimated\":true");
    }
    if (e->n_attempts)
        put_attempts(b, e->attempts, e->n_attempts);
    if (e->states)
        put_states(b, e->states);
    line_end(b);
}

void access_log_write_attempt(const struct access_attempt_line *l)
{
    struct bsc_buf *b = LINE_BEGIN("attempt", l->request_id);
    const struct attempt *a = l->a;

    PUT_STR(b, "route", l->route);
    PUT_U64(b, "attempt", l->number);
    PUT_STR(b, "target", a->target ? a->target->id : NULL);
    PUT_STR(b, "workflow", attempt_workflow_name(a->workflow));
    PUT_STR(b, "outcome", attempt_outcome_name(a->outcome));
    PUT_STR(b, "kind", a->kind);
    PUT_I64(b, "status", a->status);
    PUT_MS(b, "ms", span_us(a));
    PUT_U64(b, "delay_before_ms", a->delay_ms);
    PUT_STR(b, "circuit", l->circuit);
    PUT_U64(b, "time_left_ms", l->time_left_ms);
    PUT_STR(b, "next", l->next);
    PUT_STR(b, "why", l->why);
    PUT_U64(b, "next_delay_ms", l->next_delay_ms);
    PUT_STR(b, "delay_why", l->delay_why);
    if (a->ranking[0])
        PUT_STR(b, "ranking", a->ranking);
    if (a->continued_how)
        put_continued(b, a->target ? a->target->id : NULL, a->continued_how, a->continued_bytes);
    if (l->limited_by)
        PUT_STR(b, "limited_by", l->limited_by);
    if (l->queued_ms >= 0)
        PUT_I64(b, "queued_ms", l->queued_ms);
    line_end(b);
}

void access_log_thread_cleanup(void)
{
    bsc_buf_cleanup(&scratch);
}
