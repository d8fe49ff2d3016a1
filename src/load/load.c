/* SPDX-License-Identifier: MIT */
/* load.c -- `bascule load`: the driver. T worker threads, each with its own libuv loop and
 * the gateway's libcurl multi glue (src/upstream/), share the C slots; a slot runs one
 * request at a time on a keep-alive connection and starts the next as soon as one ends,
 * until N were started (a shared atomic count) or the main thread -- which owns the
 * duration timer, SIGINT and the progress line -- tells the workers to stop and cancel
 * what is in flight. Each worker counts into its own load_stats, merged at the end
 * (report.c). It does not retry or pace: closed loop. Options: args.c; docs/load.md. */
#include <signal.h>
#include <stdatomic.h>
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

struct load_worker;

/* One request at a time. */
struct load_slot {
    struct load_worker *w; /* borrowed */
    struct up_transfer *t; /* the running request; NULL when idle */
    uint64_t start_us;
    uint64_t ttft_us;
    bool has_ttft;
    bool sse;                 /* the answer is fed to <parser> (a 2xx head of a stream) */
    struct sse_parser parser; /* owned */
    struct bsc_buf body;      /* owned: a JSON answer, bounded by LOAD_BODY_MAX */
    bool body_cut;
    struct load_seen seen;
};

/* What every thread reads; written before the workers start, except the atomics. */
struct load_run {
    const struct load_opts *o; /* borrowed */
    const char *headers[3];    /* borrowed lines: static, or <auth> */
    size_t n_headers;
    char *auth; /* owned "Authorization: Bearer ..." */
    char *body; /* owned */
    size_t body_len;
    atomic_uint_fast64_t claimed; /* request numbers handed out, all workers */
    atomic_bool stop;             /* the duration ended or SIGINT came */
    atomic_uint finished;         /* workers whose loop is done */
    struct load_worker *workers;  /* owned, o->threads of them */
    uv_loop_t loop;               /* the main thread's: timers, SIGINT, progress */
    uv_timer_t duration, progress;
    uv_signal_t sigint;
    uv_async_t done; /* a worker finished */
    bool interrupted, tty;
    uint64_t start_us, end_us;
};

/* One thread: a loop, a multi, a share of the slots. */
struct load_worker {
    struct load_run *run; /* borrowed */
    uv_thread_t thread;
    uv_loop_t loop;
    struct up_multi *up;     /* owned until the teardown */
    uv_async_t wake;         /* the main thread says stop; closed by the main thread */
    uv_timer_t stop;         /* the teardown, from a fresh loop pass */
    struct load_slot *slots; /* owned */
    unsigned n_slots, active;
    uint64_t sent, cancelled;
    bool stopping, stop_scheduled;
    bool has_loop;                      /* worker_init got as far as the loop and its handles */
    struct load_stats stats;            /* this thread's only, until the merge */
    atomic_uint_fast64_t done_n, err_n; /* copies for the progress line */
};

static const struct up_callbacks load_cb;
static const struct sse_callbacks load_sse_cb;

/* ---- a worker's end ---- */

static void on_stop(uv_timer_t *h)
{
    struct load_worker *w = h->data;

    for (unsigned i = 0; i < w->n_slots; i++) {
        struct load_slot *s = &w->slots[i];
        if (s->t) {
            up_cancel(s->t);
            s->t = NULL;
            w->cancelled++;
            w->active--;
        }
    }
    uv_close((uv_handle_t *)&w->stop, NULL);
    uv_unref((uv_handle_t *)&w->wake); /* the main thread may still signal it */
    up_multi_free(w->up);
    w->up = NULL;
}

/* Ends this worker from the next loop pass: never from inside a curl callback, where the
 * multi must not be freed. */
static void stop_soon(struct load_worker *w)
{
    w->stopping = true;
    if (w->stop_scheduled)
        return;
    w->stop_scheduled = true;
    uv_timer_start(&w->stop, on_stop, 0, 0);
}

static void on_wake(uv_async_t *h)
{
    struct load_worker *w = h->data;

    if (atomic_load(&w->run->stop))
        stop_soon(w);
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

/* Whether one more request may start: the shared count is below N and no stop came. */
static bool claim(struct load_worker *w)
{
    struct load_run *r = w->run;

    if (w->stopping || atomic_load_explicit(&r->stop, memory_order_relaxed))
        return false;
    return atomic_fetch_add(&r->claimed, 1) < r->o->requests;
}

static void slot_start(struct load_slot *s)
{
    struct load_worker *w = s->w;
    struct load_run *r = w->run;
    struct up_request req = {
        .url = r->o->url,
        .method = "POST",
        .headers = r->headers,
        .n_headers = r->n_headers,
        .body = r->body,
        .body_len = r->body_len,
        .timeout_ms = r->o->timeout_ms,
    };

    if (!claim(w)) {
        if (!w->active)
            stop_soon(w);
        return;
    }
    slot_reset(s);
    s->start_us = bsc_now_us();
    if (up_start(w->up, &req, &load_cb, s, &s->t) != BSC_OK) {
        fprintf(stderr, "bascule load: cannot start a request (out of memory)\n");
        s->t = NULL;
        if (!w->active)
            stop_soon(w);
        return;
    }
    w->sent++;
    w->active++;
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

static int on_sse_comment(void *ud, struct bsc_str text)
{
    struct load_slot *s = ud;

    load_seen_comment(&s->seen, text);
    return 0;
}

static void on_head(void *ud, struct up_transfer *t, int status)
{
    struct load_slot *s = ud;

    (void)t;
    if (s->w->run->o->stream && status >= 200 && status <= 299) {
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
    struct load_worker *w = s->w;
    struct load_result out = {
        .status = up_status(t),
        .transport = res == UP_OK ? NULL : up_result_name(res),
        .latency_us = bsc_now_us() - s->start_us,
        .stream = w->run->o->stream,
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
    if (s->sse && s->seen.cost[0]) /* a stream's cost comes after its head */
        out.cost = bsc_str_cstr(s->seen.cost);
    out.has_usage = s->seen.has_usage;
    out.input_tokens = s->seen.input_tokens;
    out.output_tokens = s->seen.output_tokens;
    load_stats_add(&w->stats, &out);
    atomic_store_explicit(&w->done_n, w->stats.completed, memory_order_relaxed);
    atomic_store_explicit(&w->err_n, w->stats.errors, memory_order_relaxed);
    s->t = NULL;
    w->active--;
    /* The next request at once: curl picks its connection only when the multi runs next,
     * after this transfer has handed its connection back to the pool. */
    slot_start(s);
}

static const struct up_callbacks load_cb = {on_head, on_data, on_done};
static const struct sse_callbacks load_sse_cb = {.on_event = on_sse_event,
                                                 .on_comment = on_sse_comment};

/* ---- workers ---- */

static void worker_main(void *arg)
{
    struct load_worker *w = arg;

    for (unsigned i = 0; i < w->n_slots && !w->stopping; i++)
        slot_start(&w->slots[i]);
    if (!w->n_slots)
        stop_soon(w);
    uv_run(&w->loop, UV_RUN_DEFAULT);
    atomic_fetch_add(&w->run->finished, 1);
    uv_async_send(&w->run->done);
}

/* Sets up <w> of <r> with <n_slots> slots, on the main thread. Returns false when out of
 * memory (worker_free then releases what was set up). */
static bool worker_init(struct load_run *r, struct load_worker *w, unsigned n_slots)
{
    struct up_limits lim = {.max_cached_connections = n_slots + 16};

    w->run = r;
    load_stats_init(&w->stats);
    if (uv_loop_init(&w->loop) != 0)
        return false;
    w->has_loop = true;
    uv_async_init(&w->loop, &w->wake, on_wake);
    uv_timer_init(&w->loop, &w->stop);
    w->wake.data = w->stop.data = w;
    w->slots = calloc(n_slots ? n_slots : 1, sizeof(*w->slots));
    if (!w->slots || up_multi_new(&w->loop, &lim, &w->up) != BSC_OK)
        return false;
    w->n_slots = n_slots;
    for (unsigned i = 0; i < n_slots; i++) {
        w->slots[i].w = w;
        bsc_buf_init(&w->slots[i].body, LOAD_BODY_MAX);
    }
    return true;
}

/* After the thread ended: closes what the main thread owns and frees the slots. */
static void worker_free(struct load_worker *w)
{
    if (!w->has_loop)
        return;
    if (w->up) /* never started */
        up_multi_free(w->up);
    uv_close((uv_handle_t *)&w->wake, NULL);
    if (!w->stop_scheduled)
        uv_close((uv_handle_t *)&w->stop, NULL);
    uv_run(&w->loop, UV_RUN_DEFAULT);
    uv_loop_close(&w->loop);
    for (unsigned i = 0; i < w->n_slots; i++) {
        slot_reset(&w->slots[i]);
        bsc_buf_cleanup(&w->slots[i].body);
    }
    free(w->slots);
    load_stats_cleanup(&w->stats);
}

/* ---- the main thread: progress, duration, SIGINT ---- */

static void progress_line(struct load_run *r, bool final)
{
    const struct load_opts *o = r->o;
    double el = (bsc_now_us() - r->start_us) / 1e6, frac, rps;
    bool by_time = !o->requests_set && o->duration_ms; /* no N given: time is the bound */
    unsigned long long done = 0, errs = 0;
    char bar[LOAD_BAR_WIDTH + 1], total[48];
    int fill;

    for (unsigned i = 0; i < o->threads; i++) {
        done += atomic_load_explicit(&r->workers[i].done_n, memory_order_relaxed);
        errs += atomic_load_explicit(&r->workers[i].err_n, memory_order_relaxed);
    }
    rps = el > 0 ? (double)done / el : 0;
    if (by_time)
        snprintf(total, sizeof(total), "%llu in %.1f/%.1f s", done, el, o->duration_ms / 1000.0);
    else
        snprintf(total, sizeof(total), "%llu/%llu in %.1f s", done, (unsigned long long)o->requests,
                 el);
    if (!r->tty) {
        fprintf(stderr, "load: %s, %.1f req/s, %llu errors\n", total, rps, errs);
        return;
    }
    frac = by_time ? el * 1000.0 / (double)o->duration_ms : (double)done / (double)o->requests;
    fill = (int)((frac > 1 ? 1 : frac) * LOAD_BAR_WIDTH);
    memset(bar, '#', (size_t)fill);
    memset(bar + fill, '.', (size_t)(LOAD_BAR_WIDTH - fill));
    bar[LOAD_BAR_WIDTH] = '\0';
    fprintf(stderr, "\r[%s] %s  %.1f req/s  %llu errors\033[K%s", bar, total, rps, errs,
            final ? "\n" : "");
}

static void on_progress(uv_timer_t *h)
{
    progress_line(h->data, false);
}

static void stop_all(struct load_run *r)
{
    atomic_store(&r->stop, true);
    for (unsigned i = 0; i < r->o->threads; i++)
        uv_async_send(&r->workers[i].wake);
}

static void on_duration(uv_timer_t *h)
{
    stop_all(h->data);
}

static void on_sigint(uv_signal_t *h, int signum)
{
    struct load_run *r = h->data;

    (void)signum;
    r->interrupted = true;
    stop_all(r);
}

static void on_worker_done(uv_async_t *h)
{
    struct load_run *r = h->data;

    if (atomic_load(&r->finished) < r->o->threads)
        return;
    r->end_us = bsc_now_us();
    uv_close((uv_handle_t *)&r->duration, NULL);
    uv_close((uv_handle_t *)&r->progress, NULL);
    uv_close((uv_handle_t *)&r->sigint, NULL);
    uv_close((uv_handle_t *)&r->done, NULL);
}

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
        if (!file || !len) {
            fprintf(stderr, "bascule load: --body %s: %s\n", r->o->body_file, file ? "empty" : why);
            free(file);
            return 2;
        }
        base = bsc_str_make(file, len);
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

static void main_loop_init(struct load_run *r)
{
    uint64_t tick;

    uv_loop_init(&r->loop);
    uv_timer_init(&r->loop, &r->duration);
    uv_timer_init(&r->loop, &r->progress);
    uv_signal_init(&r->loop, &r->sigint);
    uv_async_init(&r->loop, &r->done, on_worker_done);
    r->duration.data = r->progress.data = r->sigint.data = r->done.data = r;
    uv_signal_start(&r->sigint, on_sigint, SIGINT);
    if (r->o->duration_ms)
        uv_timer_start(&r->duration, on_duration, r->o->duration_ms, 0);
    r->tty = isatty(STDERR_FILENO);
    tick = r->tty ? LOAD_TTY_TICK_MS : LOAD_PLAIN_TICK_MS;
    uv_timer_start(&r->progress, on_progress, tick, tick);
}

/* Runs the workers to their end. Returns 0, or 1 when they could not be set up. */
static int run_workers(struct load_run *r)
{
    unsigned n = r->o->threads, started = 0;

    r->workers = calloc(n, sizeof(*r->workers));
    if (!r->workers) {
        fprintf(stderr, "bascule load: out of memory\n");
        return 1;
    }
    for (unsigned i = 0; i < n; i++) {
        /* C spread evenly: the first C mod T workers take one more. */
        unsigned share = r->o->concurrency / n + (i < r->o->concurrency % n);
        if (!worker_init(r, &r->workers[i], share)) {
            fprintf(stderr, "bascule load: cannot set up worker %u\n", i);
            for (unsigned j = 0; j <= i; j++)
                worker_free(&r->workers[j]);
            BSC_FREE(r->workers);
            return 1;
        }
    }
    main_loop_init(r);
    r->start_us = bsc_now_us();
    for (; started < n; started++)
        if (uv_thread_create(&r->workers[started].thread, worker_main, &r->workers[started]))
            break;
    if (started < n) {
        /* Those never started count as finished; the others are told to stop. */
        atomic_fetch_add(&r->finished, n - started);
        stop_all(r);
        uv_async_send(&r->done);
    }
    uv_run(&r->loop, UV_RUN_DEFAULT);
    uv_loop_close(&r->loop);
    for (unsigned i = 0; i < started; i++)
        uv_thread_join(&r->workers[i].thread);
    progress_line(r, true);
    return 0;
}

/* Every worker's counts in one. */
static void merge(struct load_run *r, struct load_stats *all, struct load_meta *meta)
{
    for (unsigned i = 0; i < r->o->threads; i++) {
        load_stats_merge(all, &r->workers[i].stats);
        meta->sent += r->workers[i].sent;
        meta->cancelled += r->workers[i].cancelled;
    }
}

static int write_json(const char *path, struct load_stats *st, const struct load_meta *meta)
{
    struct bsc_buf b;
    FILE *f;
    int rc = 0;

    bsc_buf_init(&b, 64u << 20);
    if (load_report_json(&b, st, meta) != BSC_OK || !(f = fopen(path, "w"))) {
        fprintf(stderr, "bascule load: cannot write %s\n", path);
        bsc_buf_cleanup(&b);
        return 1;
    }
    if (fwrite(b.p, 1, b.len, f) != b.len)
        rc = 1;
    if (fclose(f) != 0)
        rc = 1;
    if (rc)
        fprintf(stderr, "bascule load: cannot write %s\n", path);
    bsc_buf_cleanup(&b);
    return rc;
}

static int report(struct load_run *r)
{
    const struct load_opts *o = r->o;
    struct load_stats all;
    struct load_meta meta = {
        .url = o->url,
        .model = o->model,
        .stream = o->stream,
        .concurrency = o->concurrency,
        .planned = o->requests_set || !o->duration_ms ? o->requests : 0,
        .duration_ms = o->duration_ms,
        .elapsed_us = r->end_us - r->start_us,
        .interrupted = r->interrupted,
    };
    int rc = 0;

    load_stats_init(&all);
    merge(r, &all, &meta);
    load_report_text(stdout, &all, &meta);
    fflush(stdout);
    if (o->json_file)
        rc = write_json(o->json_file, &all, &meta);
    load_stats_cleanup(&all);
    return rc;
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
    raise_nofile(o.concurrency);
    atomic_init(&r.claimed, 0);
    atomic_init(&r.stop, false);
    atomic_init(&r.finished, 0);
    rc = prepare(&r);
    if (!rc)
        rc = run_workers(&r);
    if (!rc)
        rc = report(&r);
    for (unsigned i = 0; r.workers && i < o.threads; i++)
        worker_free(&r.workers[i]);
    free(r.workers);
    free(r.body);
    free(r.auth);
    return rc;
}
