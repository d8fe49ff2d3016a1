/* SPDX-License-Identifier: MIT */
/* load.c -- `bascule load`: the driver. C slots, each running one request at a time on
 * one libuv loop through the gateway's libcurl multi glue (keep-alive connections, one
 * per slot); a finished request is counted (report.c) and its slot starts the next, until
 * N were started or the duration timer (or SIGINT) cancels what is in flight. Progress goes
 * to stderr, the report to stdout and --json. It does not retry or pace: it measures the
 * gateway, closed loop. Options: args.c; docs/load.md. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <uv.h>

#include "core/buf.h"
#include "core/clock.h"
#include "load/args.h"
#include "load/body.h"
#include "load/load.h"
#include "load/report.h"
#include "load/response.h"
#include "stream/sse_parse.h"
#include "upstream/upstream.h"

#define LOAD_BODY_MAX      (1u << 20) /* an answer body kept for reading usage and errors */
#define LOAD_SSE_MAX       (1u << 20) /* one SSE line or event */
#define LOAD_FILE_MAX      (16u << 20)
#define LOAD_TTY_TICK_MS   200
#define LOAD_PLAIN_TICK_MS 1000
#define LOAD_BAR_WIDTH     30

struct load_run;

/* One request at a time. */
struct load_slot {
    struct load_run *run;       /* borrowed */
    struct up_transfer *t;      /* the running request; NULL when idle */
    uint64_t start_us;
    uint64_t ttft_us;
    bool has_ttft;
    bool sse;                   /* the answer is fed to <parser> (a 2xx head of a stream) */
    struct sse_parser parser;   /* owned */
    struct bsc_buf body;        /* owned: a JSON answer, bounded by LOAD_BODY_MAX */
    bool body_cut;
    struct load_seen seen;
};

struct load_run {
    const struct load_opts *o; /* borrowed */
    uv_loop_t loop;
    struct up_multi *up;       /* owned until the teardown */
    const char *headers[3];    /* borrowed lines: static, or <auth> */
    size_t n_headers;
    char *auth;                /* owned "Authorization: Bearer ..." */
    char *body;                /* owned */
    size_t body_len;
    struct load_slot *slots;   /* owned, o->concurrency of them */
    unsigned active;
    uint64_t sent, cancelled;
    uint64_t start_us, end_us;
    bool stopping, stop_scheduled, interrupted, tty;
    uv_timer_t duration, progress, stop;
    uv_signal_t sigint;
    struct load_stats stats;
};

static const struct up_callbacks load_cb;
static const struct sse_callbacks load_sse_cb;

/* ---- progress ---- */

static void progress_line(struct load_run *r, bool final)
{
    double el = (bsc_now_us() - r->start_us) / 1e6;
    double rps = el > 0 ? (double)r->stats.completed / el : 0;
    unsigned long long done = r->stats.completed, errs = r->stats.errors;
    double frac;

    if (!r->o->requests_set && r->o->duration_ms)
        frac = el * 1000.0 / (double)r->o->duration_ms;
    else
        frac = (double)done / (double)r->o->requests;
    if (frac > 1)
        frac = 1;
    if (!r->tty) {
        fprintf(stderr, "load: %llu/%llu done, %.1f s, %.1f req/s, %llu errors\n", done,
                (unsigned long long)r->o->requests, el, rps, errs);
        return;
    }
    char bar[LOAD_BAR_WIDTH + 1];
    int fill = (int)(frac * LOAD_BAR_WIDTH);
    memset(bar, '#', (size_t)fill);
    memset(bar + fill, '.', (size_t)(LOAD_BAR_WIDTH - fill));
    bar[LOAD_BAR_WIDTH] = '\0';
    fprintf(stderr, "\r[%s] %llu/%llu  %.1f s  %.1f req/s  %llu errors\033[K%s", bar, done,
            (unsigned long long)r->o->requests, el, rps, errs, final ? "\n" : "");
}

static void on_progress(uv_timer_t *h)
{
    progress_line(h->data, false);
}

/* ---- the end ---- */

static void on_stop(uv_timer_t *h)
{
    struct load_run *r = h->data;

    for (unsigned i = 0; i < r->o->concurrency; i++) {
        struct load_slot *s = &r->slots[i];
        if (s->t) {
            up_cancel(s->t);
            s->t = NULL;
            r->cancelled++;
            r->active--;
        }
    }
    r->end_us = bsc_now_us();
    uv_close((uv_handle_t *)&r->duration, NULL);
    uv_close((uv_handle_t *)&r->progress, NULL);
    uv_close((uv_handle_t *)&r->stop, NULL);
    uv_close((uv_handle_t *)&r->sigint, NULL);
    up_multi_free(r->up);
    r->up = NULL;
}

/* Ends the run from the next loop pass: never from inside a curl callback, where the multi
 * must not be freed. */
static void stop_soon(struct load_run *r)
{
    r->stopping = true;
    if (r->stop_scheduled)
        return;
    r->stop_scheduled = true;
    uv_timer_start(&r->stop, on_stop, 0, 0);
}

static void on_duration(uv_timer_t *h)
{
    stop_soon(h->data);
}

static void on_sigint(uv_signal_t *h, int signum)
{
    struct load_run *r = h->data;

    (void)signum;
    r->interrupted = true;
    stop_soon(r);
}

/* ---- one request ---- */

static void slot_reset(struct load_slot *s)
{
    if (s->sse)
        sse_parser_cleanup(&s->parser);
    s->sse = false;
    s->has_ttft = false;
    s->body_cut = false;
    bsc_buf_reset(&s->body);
    memset(&s->seen, 0, sizeof(s->seen));
}

static void slot_start(struct load_slot *s)
{
    struct load_run *r = s->run;
    struct up_request req = {
        .url = r->o->url,
        .method = "POST",
        .headers = r->headers,
        .n_headers = r->n_headers,
        .body = r->body,
        .body_len = r->body_len,
        .timeout_ms = r->o->timeout_ms,
    };

    if (r->stopping || r->sent >= r->o->requests) {
        if (!r->active)
            stop_soon(r);
        return;
    }
    slot_reset(s);
    s->start_us = bsc_now_us();
    if (up_start(r->up, &req, &load_cb, s, &s->t) != BSC_OK) {
        fprintf(stderr, "bascule load: cannot start a request (out of memory)\n");
        s->t = NULL;
        if (!r->active)
            stop_soon(r);
        return;
    }
    r->sent++;
    r->active++;
}

static int on_sse_event(void *ud, struct bsc_str name, struct bsc_str data)
{
    struct load_slot *s = ud;

    (void)name;
    if (!s->has_ttft) {
        s->has_ttft = true;
        s->ttft_us = bsc_now_us() - s->start_us;
    }
    load_seen_event(&s->seen, data);
    return 0;
}

static void on_head(void *ud, struct up_transfer *t, int status)
{
    struct load_slot *s = ud;

    (void)t;
    if (s->run->o->stream && status >= 200 && status <= 299) {
        s->sse = true;
        sse_parser_init(&s->parser, LOAD_SSE_MAX, &load_sse_cb, s);
    }
}

static bool on_data(void *ud, struct up_transfer *t, const char *p, size_t len)
{
    struct load_slot *s = ud;

    (void)t;
    if (s->sse)
        (void)sse_parser_feed(&s->parser, p, len); /* an error is sticky: the rest is skipped */
    else if (!s->body_cut && bsc_buf_append(&s->body, p, len) != BSC_OK)
        s->body_cut = true;
    return false;
}

static void on_done(void *ud, struct up_transfer *t, enum up_result res, const char *detail)
{
    struct load_slot *s = ud;
    struct load_run *r = s->run;
    struct load_result out = {
        .status = up_status(t),
        .transport = res == UP_OK ? NULL : up_result_name(res),
        .latency_us = bsc_now_us() - s->start_us,
        .stream = r->o->stream,
        .target = up_header(t, BSC_STR("x-bascule-target")),
        .workflow = up_header(t, BSC_STR("x-bascule-workflow")),
        .attempts = up_header(t, BSC_STR("x-bascule-attempts")),
        .cost = up_header(t, BSC_STR("x-bascule-cost-usd")),
    };

    (void)detail;
    if (s->sse)
        (void)sse_parser_finish(&s->parser, NULL);
    else if (s->body.len && !s->body_cut)
        load_seen_json(&s->seen, bsc_buf_str(&s->body));
    out.has_ttft = s->has_ttft;
    out.ttft_us = s->ttft_us;
    out.stream_done = s->seen.done;
    out.error_event = s->sse && s->seen.has_error;
    out.error_code = bsc_str_cstr(s->seen.has_error ? s->seen.code : "");
    out.has_usage = s->seen.has_usage;
    out.input_tokens = s->seen.input_tokens;
    out.output_tokens = s->seen.output_tokens;
    load_stats_add(&r->stats, &out);
    s->t = NULL;
    r->active--;
    /* The next request at once: curl picks its connection only when the multi runs next,
     * after this transfer has handed its connection back to the pool. */
    slot_start(s);
}

static const struct up_callbacks load_cb = {on_head, on_data, on_done};
static const struct sse_callbacks load_sse_cb = {.on_event = on_sse_event};

/* ---- setup ---- */

/* Reads <path> whole (at most LOAD_FILE_MAX). NULL with <why> set on failure. */
static char *read_file(const char *path, size_t *len, const char **why)
{
    FILE *f = fopen(path, "rb");
    char *p;

    if (!f) {
        *why = "cannot open it";
        return NULL;
    }
    p = malloc(LOAD_FILE_MAX + 1);
    *len = p ? fread(p, 1, LOAD_FILE_MAX + 1, f) : 0;
    if (!p || ferror(f) || *len > LOAD_FILE_MAX) {
        *why = !p ? "out of memory" : ferror(f) ? "cannot read it" : "larger than 16 MiB";
        BSC_FREE(p);
    }
    fclose(f);
    return p;
}

/* The request body and header lines. Returns 0, or the exit status with the reason printed. */
static int prepare(struct load_run *r)
{
    struct bsc_str base = BSC_STR_NULL;
    char *file = NULL;
    size_t len = 0;
    const char *why = "";
    enum bsc_err err;

    if (r->o->body_file) {
        file = read_file(r->o->body_file, &len, &why);
        if (!file) {
            fprintf(stderr, "bascule load: --body %s: %s\n", r->o->body_file, why);
            return 2;
        }
        base = bsc_str_make(file, len);
        if (!len) {
            fprintf(stderr, "bascule load: --body %s: empty\n", r->o->body_file);
            free(file);
            return 2;
        }
    }
    err = load_body_build(base, r->o->model, r->o->stream, &r->body, &r->body_len, &why);
    free(file);
    if (err) {
        fprintf(stderr, "bascule load: --body %s: %s\n", r->o->body_file ? r->o->body_file : "",
                err == BSC_EPARSE ? why : bsc_err_str(err));
        return err == BSC_EPARSE ? 2 : 1;
    }
    r->headers[r->n_headers++] = "Content-Type: application/json";
    r->headers[r->n_headers++] = "User-Agent: bascule-load";
    if (r->o->key) {
        size_t n = strlen(r->o->key) + sizeof("Authorization: Bearer ");
        if (!(r->auth = malloc(n)))
            return 1;
        snprintf(r->auth, n, "Authorization: Bearer %s", r->o->key);
        r->headers[r->n_headers++] = r->auth;
    }
    return 0;
}

/* Each slot holds a socket: raise the soft open-files limit when C needs it. */
static void raise_nofile(unsigned concurrency)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)concurrency * 2 + 64;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want) {
        rl.rlim_cur = want < rl.rlim_max ? want : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static int run_loop(struct load_run *r)
{
    struct up_limits lim = {.max_cached_connections = r->o->concurrency + 16};

    if (uv_loop_init(&r->loop) != 0 || up_multi_new(&r->loop, &lim, &r->up) != BSC_OK) {
        fprintf(stderr, "bascule load: cannot set up the event loop\n");
        return 1;
    }
    r->slots = calloc(r->o->concurrency, sizeof(*r->slots));
    if (!r->slots) {
        fprintf(stderr, "bascule load: out of memory\n");
        return 1;
    }
    for (unsigned i = 0; i < r->o->concurrency; i++) {
        r->slots[i].run = r;
        bsc_buf_init(&r->slots[i].body, LOAD_BODY_MAX);
    }
    uv_timer_init(&r->loop, &r->duration);
    uv_timer_init(&r->loop, &r->progress);
    uv_timer_init(&r->loop, &r->stop);
    uv_signal_init(&r->loop, &r->sigint);
    r->duration.data = r->progress.data = r->stop.data = r->sigint.data = r;
    uv_signal_start(&r->sigint, on_sigint, SIGINT);
    if (r->o->duration_ms)
        uv_timer_start(&r->duration, on_duration, r->o->duration_ms, 0);
    r->tty = isatty(STDERR_FILENO);
    {
        uint64_t tick = r->tty ? LOAD_TTY_TICK_MS : LOAD_PLAIN_TICK_MS;
        uv_timer_start(&r->progress, on_progress, tick, tick);
    }
    r->start_us = bsc_now_us();
    for (unsigned i = 0; i < r->o->concurrency && !r->stopping; i++)
        slot_start(&r->slots[i]);
    uv_run(&r->loop, UV_RUN_DEFAULT);
    progress_line(r, true);
    uv_loop_close(&r->loop);
    return 0;
}

static int write_json(struct load_run *r, const struct load_meta *meta)
{
    struct bsc_buf b;
    FILE *f;
    int rc = 0;

    bsc_buf_init(&b, 64u << 20);
    if (load_report_json(&b, &r->stats, meta) != BSC_OK || !(f = fopen(r->o->json_file, "w"))) {
        fprintf(stderr, "bascule load: cannot write %s\n", r->o->json_file);
        bsc_buf_cleanup(&b);
        return 1;
    }
    if (fwrite(b.p, 1, b.len, f) != b.len)
        rc = 1;
    if (fclose(f) != 0)
        rc = 1;
    if (rc)
        fprintf(stderr, "bascule load: cannot write %s\n", r->o->json_file);
    bsc_buf_cleanup(&b);
    return rc;
}

static void run_free(struct load_run *r)
{
    for (unsigned i = 0; r->slots && i < r->o->concurrency; i++) {
        slot_reset(&r->slots[i]);
        bsc_buf_cleanup(&r->slots[i].body);
    }
    free(r->slots);
    free(r->body);
    free(r->auth);
    load_stats_cleanup(&r->stats);
}

int load_main(int argc, char **argv)
{
    struct load_opts o;
    struct load_run r = {.o = &o};
    char why[256];
    int rc;

    if (load_args_parse(argc, argv, &o, why, sizeof(why)) != BSC_OK) {
        fprintf(stderr, "bascule load: %s\n%s", why, load_usage);
        return 2;
    }
    if (o.help) {
        fputs(load_usage, stdout);
        return 0;
    }
    load_stats_init(&r.stats);
    raise_nofile(o.concurrency);
    rc = prepare(&r);
    if (!rc)
        rc = run_loop(&r);
    if (!rc) {
        struct load_meta meta = {
            .url = o.url, .model = o.model, .stream = o.stream, .concurrency = o.concurrency,
            .planned = o.requests_set || !o.duration_ms ? o.requests : 0,
            .duration_ms = o.duration_ms, .elapsed_us = r.end_us - r.start_us, .sent = r.sent,
            .cancelled = r.cancelled, .interrupted = r.interrupted,
        };
        load_report_text(stdout, &r.stats, &meta);
        fflush(stdout);
        if (o.json_file)
            rc = write_json(&r, &meta);
    }
    run_free(&r);
    return rc;
}
