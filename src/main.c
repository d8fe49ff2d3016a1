/* SPDX-License-Identifier: MIT */
/* main.c -- the bascule process: command line, config load, one worker thread per loop
 * (each with its own SO_REUSEPORT listener and libcurl multi), and the main thread's
 * signal loop: SIGHUP reloads the config atomically (a bad file is rejected and the old
 * snapshot keeps serving), SIGTERM/SIGINT drain in-flight work up to a timeout. */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <uv.h>

#include "api/api.h"
#include "api/gateway_setup.h"
#include "cli/admin_cli.h"
#include "api/status_history.h"
#include "config/config.h"
#include "load/args.h"
#include "load/load.h"
#include "core/alloc.h"
#include "core/build_info.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/sd_notify.h"
#include "dialect/error.h"
#include "gauth/gauth.h"
#include "health/hstate.h"
#include "limits/limits.h"
#include "health/probe.h"
#include "metrics/metrics.h"
#include "router/access_log.h"
#include "router/gateway.h"
#include "router/keyring.h"
#include "router/keyring_sync.h"
#include "router/limit.h"
#include "router/request.h"
#include "router/shadow.h"
#include "router/worker.h"
#include "server/server.h"
#include "store/store.h"
#include "telemetry/exporter.h"
#include "upstream/upstream.h"

struct main_ctx {
    struct gateway gw;
    uv_loop_t *loop;
    uv_signal_t sig_hup, sig_term, sig_int;
    uv_timer_t drain_timer;
    uv_async_t keyring_follow; /* a shared store: keys changed by other instances */
    uv_async_t workers_ended; /* the last worker's loop ended: the main loop closes */
    uv_timer_t history_timer; /* status.json's series: a sample every 10 s */
    bool stopping;
};

static void usage(FILE *f)
{
    fprintf(f,
            "bascule %s -- an LLM API gateway (man bascule, man bascule.yaml)\n"
            "\n"
            "usage: bascule --config FILE          serve with FILE (bascule.yaml(5))\n"
            "       bascule --check-config FILE    validate FILE and exit\n"
            "       bascule load --url URL --model ROUTE [options]   load-test a gateway\n"
            "       bascule --version              version and library versions\n"
            "       bascule --help                 this text\n"
            "\n"
            "options:\n"
            "  -c, --config FILE        the configuration to serve; ${NAME} and ${NAME:-default}\n"
            "                           in it are read from the environment at load time\n"
            "  -k, --check-config FILE  print every diagnostic of FILE; exit 0 when it would\n"
            "                           load, 1 when it has errors (nothing is started)\n"
            "  -v, --version            print the version and exit\n"
            "  -h, --help               print this text and exit\n"
            "\n"
            "signals (serve):\n"
            "  SIGHUP           reload FILE; a file with errors is rejected, the running\n"
            "                   configuration keeps serving\n"
            "  SIGTERM, SIGINT  stop accepting, let in-flight requests finish for up to\n"
            "                   limits.drain_timeout_ms, then exit 0; a second one stops now\n"
            "\n"
            "Under systemd (Type=notify) readiness is reported on $NOTIFY_SOCKET once the\n"
            "listeners are bound. Exit status: 0 ok, 1 a start or config error, 2 bad usage.\n"
            "\n"
            "load mode (bascule load --help):\n%s",
            bsc_build_version, load_usage);
}

static void apply_log_settings(const struct cfg *cfg)
{
    bsc_log_verbosity = cfg->log.level;
    bsc_log_json = cfg->log.json;
}

static struct srv_limits srv_limits_of(const struct cfg *cfg, unsigned n_workers)
{
    return (struct srv_limits){
        .max_body_bytes = cfg->limits.max_body_bytes,
        .max_header_bytes = cfg->limits.max_header_bytes,
        .header_timeout_ms = cfg->limits.header_timeout_ms,
        .idle_timeout_ms = cfg->limits.idle_timeout_ms,
        .max_connections =
            (srv_conn_cap(cfg->limits.max_connections, NULL) + n_workers - 1) / n_workers,
        .max_pending_output = cfg->limits.max_stream_buffer_bytes,
        .body_timeout_ms = cfg->limits.body_timeout_ms,
        .min_body_rate_bps = cfg->limits.min_body_rate_bps,
    };
}

static bool admin_listen_same(const struct cfg *a, const struct cfg *b)
{
    if (!a->admin_listen_host || !b->admin_listen_host)
        return a->admin_listen_host == b->admin_listen_host;
    return strcmp(a->admin_listen_host, b->admin_listen_host) == 0 &&
           a->admin_listen_port == b->admin_listen_port;
}

/* An open gateway (no clients:) lets anyone who reaches the port spend the provider keys:
 * fine on loopback (the demo), worth a warning anywhere else. */
static void warn_if_open(const struct cfg *cfg)
{
    if (cfg->n_clients || strncmp(cfg->listen_host, "127.", 4) == 0 ||
        strcmp(cfg->listen_host, "::1") == 0)
        return;
    LOG_WARN("no clients: configured and listening on %s: anyone who reaches the port can "
             "use the gateway and its provider keys", cfg->listen_host);
}

/* Every diagnostic of a load as a log line (JSON with log.format: json), so a service's log
 * stays one format; `--check-config` prints them as plain text for a person instead. */
static void log_diags(const struct cfg_diags *diags)
{
    for (size_t i = 0; i < diags->n; i++) {
        const struct cfg_diag *d = &diags->items[i];
        enum bsc_log_level lvl = d->warning ? BSC_LOG_WARN : BSC_LOG_ERR;
        const char *kind = d->warning ? "warning" : "error";

        if (d->line && d->column)
            bsc_log(lvl, "%s:%u:%u: %s: %s", d->file, d->line, d->column, kind, d->message);
        else if (d->line)
            bsc_log(lvl, "%s:%u: %s: %s", d->file, d->line, kind, d->message);
        else
            bsc_log(lvl, "%s: %s: %s", d->file, kind, d->message);
    }
}

/* Loads <path>, printing every diagnostic: as log lines when <serving> (in the format the
 * file asks for, when it loads), else as text. Returns the snapshot or NULL. */
static struct cfg *load_config(const char *path, bool serving)
{
    struct cfg_diags diags = {0};
    struct cfg *cfg = NULL;

    cfg_load(path, &cfg, &diags);
    if (!serving) {
        cfg_diags_print(&diags, stderr);
    } else {
        if (cfg)
            apply_log_settings(cfg);
        log_diags(&diags);
    }
    cfg_diags_cleanup(&diags);
    return cfg;
}

/* ---- core dumps ---- */

/* The process holds every provider key and the admin key: a core file, or another process
 * of the same user reading /proc/<pid>/mem or attaching a debugger, would get them all. So
 * the process turns non-dumpable before the config is read (which also makes its /proc
 * files root's and refuses same-user ptrace), and its soft core size drops to 0 (a
 * non-dumpable process still dumps when fs.suid_dumpable is 2). debug.core_dumps: true
 * undoes both once the config is loaded. */
static void dumps_forbid(struct rlimit *saved)
{
    struct rlimit none;

    if (getrlimit(RLIMIT_CORE, saved) != 0)
        saved->rlim_cur = saved->rlim_max = 0;
    none = (struct rlimit){.rlim_cur = 0, .rlim_max = saved->rlim_max};
    setrlimit(RLIMIT_CORE, &none);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

/* Applies <cfg>'s choice and says what the kernel now reports, read back, not assumed. */
static void dumps_apply(const struct cfg *cfg, const struct rlimit *saved)
{
    if (cfg->core_dumps) {
        prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
        setrlimit(RLIMIT_CORE, saved);
    }
    if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1)
        LOG_INFO("core dumps allowed (debug.core_dumps): a dump would hold the provider keys");
    else
        LOG_INFO("core dumps off (not dumpable): provider keys stay out of dumps and ptrace");
}

/* ---- worker side ---- */

static void worker_closed(struct srv *srv, void *ud)
{
    struct worker *w = ud;

    (void)srv;
    w->drained = true;
    prober_stop(w->prober);
    w->prober = NULL;
    shadow_worker_stop(w); /* copies still running: before their curl multi goes */
    up_multi_free(w->up);
    w->up = NULL;
    reqlim_worker_closing(w);
    uv_close((uv_handle_t *)&w->wake, NULL);
}

static void admin_closed(struct srv *srv, void *ud)
{
    (void)srv, (void)ud; /* freed with the worker's server, after the thread ends */
}

/* The admin listener does not drain: operator calls are short and may be cut. */
static void admin_close(struct worker *w)
{
    if (w->admin_srv && !w->admin_closing) {
        w->admin_closing = true;
        srv_close_all(w->admin_srv, admin_closed, w);
    }
}

static void worker_on_wake(uv_async_t *h)
{
    struct worker *w = h->data;
    unsigned cmd = atomic_exchange(&w->pending, 0);

    if (cmd & WORKER_CMD_RELOAD) {
        struct cfg *cfg = cfg_current_get();
        struct srv_limits lim = srv_limits_of(cfg, w->gw->n_workers);
        srv_set_limits(w->srv, &lim);
        if (w->admin_srv)
            srv_set_limits(w->admin_srv, &lim);
        cfg_unref(cfg);
    }
    if (cmd & WORKER_CMD_CAPACITY)
        reqlim_wake(w);
    if (cmd & (WORKER_CMD_DRAIN | WORKER_CMD_STOP | WORKER_CMD_CLOSE))
        admin_close(w);
    if ((cmd & WORKER_CMD_DRAIN) && !w->draining) {
        w->draining = true;
        srv_drain(w->srv, worker_closed, w);
    }
    if ((cmd & WORKER_CMD_STOP) && !w->drained) {
        w->draining = true;
        srv_stop(w->srv, worker_closed, w); /* streams end with an error event */
    }
    if ((cmd & WORKER_CMD_CLOSE) && !w->drained) {
        w->draining = true;
        srv_close_all(w->srv, worker_closed, w);
    }
}

/* The access and attempt lines of a busy worker are written every LOG_FLUSH_MS (or when
 * the batch fills): one write(2) for many requests instead of one per request. */
#define LOG_FLUSH_MS 50

static void on_log_flush(uv_timer_t *h)
{
    (void)h;
    bsc_log_batch_flush();
}

/* A worker's millisecond clocks are its loop's (bsc_clock_follow). */
static uint64_t loop_now(void *loop)
{
    return uv_now(loop);
}

static void worker_main(void *arg)
{
    struct worker *w = arg;

    bsc_clock_follow(loop_now, &w->loop);
    bsc_log_batch_begin();
    uv_timer_init(&w->loop, &w->log_flush);
    uv_timer_start(&w->log_flush, on_log_flush, LOG_FLUSH_MS, LOG_FLUSH_MS);
    uv_unref((uv_handle_t *)&w->log_flush); /* never keeps the loop alive */
    uv_run(&w->loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&w->log_flush, NULL);
    uv_run(&w->loop, UV_RUN_NOWAIT);
    req_pool_drain(w);
    bsc_log_batch_end();
    access_log_thread_cleanup();
    /* The last one tells the main loop, which closes its handles then joins the threads:
     * its signal handlers and drain timer stay active until every loop has ended. */
    if (atomic_fetch_sub(&w->gw->running, 1) == 1)
        uv_async_send(w->gw->ended);
}

/* admin.listen: the operator surfaces on their own socket, on worker 0's loop. */
static int admin_listen(struct worker *w, const struct cfg *cfg, const struct srv_limits *lim)
{
    char errbuf[256];
    int fd;

    if (srv_listen_first(cfg->admin_listen_host, cfg->admin_listen_port, &fd, errbuf,
                         sizeof(errbuf))) {
        LOG_ERR("cannot listen on %s:%u (admin.listen): %s", cfg->admin_listen_host,
                cfg->admin_listen_port, errbuf);
        return -1;
    }
    if (srv_new(&w->loop, fd, lim, api_handle_admin, w, &w->admin_srv)) {
        LOG_ERR("admin listener: out of memory");
        return -1;
    }
    srv_set_refused(w->admin_srv, api_refused);
    srv_set_head_check(w->admin_srv, api_head_check_admin);
    srv_set_error_body(w->admin_srv, dialect_openai_srv_error);
    LOG_INFO("admin listener on http://%s%s%s:%u (/status, /metrics, /admin/...)",
             strchr(cfg->admin_listen_host, ':') ? "[" : "", cfg->admin_listen_host,
             strchr(cfg->admin_listen_host, ':') ? "]" : "", cfg->admin_listen_port);
    return 0;
}

static int worker_init(struct worker *w, struct gateway *gw, unsigned idx, const struct cfg *cfg)
{
    struct srv_limits lim = srv_limits_of(cfg, gw->n_workers);
    /* No caps: curl's default cache size (4x the transfers it has seen) adapts, and a cap
     * on connections would queue transfers in curl's pending state, invisible to us. */
    struct up_limits ul = {.max_cached_connections = 4096,
                           .builtin_http = cfg->http_client == CFG_HTTP_CLIENT_BUILTIN,
                           .builtin_https = cfg->http_client == CFG_HTTP_CLIENT_BUILTIN};
    char errbuf[256];
    int fd;

    w->idx = idx;
    w->gw = gw;
    uv_loop_init(&w->loop);
    uv_async_init(&w->loop, &w->wake, worker_on_wake);
    w->wake.data = w;
    /* Only the first worker checks that no other process listens there; the others join
     * its SO_REUSEPORT group. */
    if (idx == 0 ? srv_listen_first(cfg->listen_host, cfg->listen_port, &fd, errbuf,
                                    sizeof(errbuf))
                 : srv_listen_socket(cfg->listen_host, cfg->listen_port, &fd, errbuf,
                                     sizeof(errbuf))) {
        LOG_ERR("cannot listen on %s:%u: %s", cfg->listen_host, cfg->listen_port, errbuf);
        return -1;
    }
    if (gateway_worker_serve(w, fd, &lim, &ul) != BSC_OK) {
        LOG_ERR("worker %u: out of memory", idx);
        return -1;
    }
    if (idx == 0 && cfg->admin_listen_host && admin_listen(w, cfg, &lim) != 0)
        return -1;
    if (idx == 0 && !(w->prober = prober_start(&w->loop, w->up, gw->hs, gw->metrics, idx))) {
        LOG_ERR("worker %u: out of memory", idx);
        return -1;
    }
    return 0;
}

/* A worker whose thread will not run (the start failed): what worker_init made is closed
 * on its own loop and the loop ended, as a stop would. */
static void worker_abandon(struct worker *w)
{
    w->drained = true;
    if (w->admin_srv)
        srv_close_all(w->admin_srv, admin_closed, w);
    if (w->srv) {
        srv_close_all(w->srv, worker_closed, w); /* prober, transfers, wake */
    } else {
        up_multi_free(w->up);
        uv_close((uv_handle_t *)&w->wake, NULL);
    }
    uv_run(&w->loop, UV_RUN_DEFAULT);
    if (w->srv)
        srv_free(w->srv);
    if (w->admin_srv)
        srv_free(w->admin_srv);
    uv_loop_close(&w->loop);
}

static void workers_send(struct gateway *gw, unsigned cmd)
{
    for (unsigned i = 0; i < gw->n_workers; i++)
        reqlim_loop_send(&gw->workers[i], cmd); /* not to a loop that has ended its drain */
}

/* ---- main thread: signals ---- */

/* One snapshot build at a time: SIGHUP on the main thread, admin writes on a worker. */
static pthread_mutex_t publish_lock = PTHREAD_MUTEX_INITIALIZER;

static void warn_restart_only(const struct cfg *next)
{
    struct cfg *cur = cfg_current_get();

    if (cur && (strcmp(cur->listen_host, next->listen_host) != 0 ||
                cur->listen_port != next->listen_port || cur->workers != next->workers ||
                cur->store.kind != next->store.kind || cur->core_dumps != next->core_dumps ||
                cur->http_client != next->http_client || !admin_listen_same(cur, next)))
        LOG_WARN("reload: listen, admin.listen, workers, store, http_client and "
                 "debug.core_dumps take effect only at the next start");
    cfg_unref(cur);
}

/* Loads the config file, adds the keyring and publishes the result to every worker. */
static enum bsc_err publish(struct gateway *gw, bool warn_restart)
{
    struct cfg *next;

    pthread_mutex_lock(&publish_lock);
    next = load_config(gw->config_path, true);
    if (!next || gateway_merge_keyring(gw, next) != BSC_OK) {
        pthread_mutex_unlock(&publish_lock);
        cfg_unref(next);
        return BSC_EINVAL;
    }
    if (warn_restart)
        warn_restart_only(next);
    apply_log_settings(next);
    if (hstate_sync(gw->hs, next, bsc_now_ms()) != BSC_OK)
        LOG_WARN("routing state could not track every target of the new config");
    if (lim_reg_sync(gw->lim, next) != BSC_OK)
        LOG_WARN("limits could not track every client and target of the new config");
    if (gauth_sync(next) != BSC_OK)
        LOG_WARN("vertex: the token refresher could not track every credential");
    cfg_current_swap(next);
    workers_send(gw, WORKER_CMD_RELOAD);
    pthread_mutex_unlock(&publish_lock);
    return BSC_OK;
}

static enum bsc_err rebuild(struct gateway *gw)
{
    return publish(gw, false);
}

static void on_hup(uv_signal_t *h, int signum)
{
    struct main_ctx *mc = h->data;

    (void)signum;
    if (mc->stopping) {
        LOG_WARN("SIGHUP while draining: no reload");
        return;
    }
    LOG_INFO("SIGHUP: reloading %s", mc->gw.config_path);
    if (publish(&mc->gw, true) != BSC_OK) {
        atomic_fetch_add(&mc->gw.reloads_failed, 1);
        metrics_inc(mc->gw.metrics, metrics_shared_shard(mc->gw.metrics), METRIC_CONFIG_RELOADS,
                    "rejected", NULL, 1);
        LOG_ERR("config reload rejected: %s has errors; the previous config keeps serving",
                mc->gw.config_path);
        return;
    }
    atomic_fetch_add(&mc->gw.reloads_ok, 1);
    metrics_inc(mc->gw.metrics, metrics_shared_shard(mc->gw.metrics), METRIC_CONFIG_RELOADS,
                "ok", NULL, 1);
    LOG_INFO("config reloaded from %s", mc->gw.config_path);
}

static void on_drain_timeout(uv_timer_t *h)
{
    struct main_ctx *mc = h->data;

    LOG_WARN("drain timeout: closing the remaining connections");
    workers_send(&mc->gw, WORKER_CMD_STOP);
}

static void on_term(uv_signal_t *h, int signum)
{
    struct main_ctx *mc = h->data;
    struct cfg *cfg;

    if (mc->stopping) {
        LOG_WARN("%s again: closing every connection now", signum == SIGINT ? "SIGINT" : "SIGTERM");
        workers_send(&mc->gw, WORKER_CMD_CLOSE);
        return;
    }
    mc->stopping = true;
    cfg = cfg_current_get();
    LOG_INFO("%s: draining (up to %u ms)", signum == SIGINT ? "SIGINT" : "SIGTERM",
             cfg->limits.drain_timeout_ms);
    bsc_sd_notify("STOPPING=1");
    workers_send(&mc->gw, WORKER_CMD_DRAIN);
    uv_timer_start(&mc->drain_timer, on_drain_timeout, cfg->limits.drain_timeout_ms, 0);
    cfg_unref(cfg);
    /* SIGHUP (ignored now), SIGTERM and SIGINT (a second one closes at once) stay handled
     * and the drain timer runs, until the last loop has ended (on_workers_ended): a closed
     * signal handle would give the signal back its default action, which kills. */
}

/* Every worker's loop has ended: the main loop's handles close, and with them the loop. */
static void on_workers_ended(uv_async_t *h)
{
    struct main_ctx *mc = h->data;

    uv_close((uv_handle_t *)&mc->sig_hup, NULL);
    uv_close((uv_handle_t *)&mc->sig_term, NULL);
    uv_close((uv_handle_t *)&mc->sig_int, NULL);
    uv_close((uv_handle_t *)&mc->drain_timer, NULL);
    if (mc->keyring_follow.loop) {
        keyring_follow_stop(&mc->gw);
        uv_close((uv_handle_t *)&mc->keyring_follow, NULL);
    }
    uv_close((uv_handle_t *)&mc->workers_ended, NULL);
    uv_close((uv_handle_t *)&mc->history_timer, NULL);
}

/* ---- status.json's history ---- */

static void history_sample(struct main_ctx *mc)
{
    struct cfg *cfg = cfg_current_get();

    status_history_observe(mc->gw.history, &mc->gw, cfg, bsc_wall_ms(), true);
    cfg_unref(cfg);
}

static void on_history_tick(uv_timer_t *h)
{
    history_sample(h->data);
}

/* The baseline now (a circuit that opens from the first request on is an event), then a
 * point every STATUS_SERIES_INTERVAL_MS. */
static void history_start(struct main_ctx *mc)
{
    uv_timer_init(mc->loop, &mc->history_timer);
    mc->history_timer.data = mc;
    history_sample(mc);
    uv_timer_start(&mc->history_timer, on_history_tick, STATUS_SERIES_INTERVAL_MS,
                   STATUS_SERIES_INTERVAL_MS);
}

static int check_config(const char *path)
{
    struct cfg *cfg = load_config(path, false);

    if (!cfg) {
        fprintf(stderr, "%s: invalid\n", path);
        return 1;
    }
    printf("%s: ok (%zu providers, %zu targets, %zu routes)\n", path, cfg->n_providers,
           cfg->n_targets, cfg->n_routes);
    cfg_unref(cfg);
    return 0;
}

/* The start failed after the gateway's parts were made: <n_loops> workers had their loop
 * made (the last one perhaps not all of the rest). */
static int start_failed(struct gateway *gw, struct cfg *cfg, unsigned n_loops)
{
    for (unsigned i = 0; i < n_loops; i++)
        worker_abandon(&gw->workers[i]);
    tel_shutdown(); /* it counts into the metrics: before they go */
    gateway_close(gw);
    cfg_unref(cfg);
    return 1;
}

static int serve(const char *path, const struct rlimit *core_limit)
{
    struct main_ctx mc = {0};
    struct cfg *cfg = load_config(path, true);
    unsigned i;

    if (!cfg)
        return 1;
    apply_log_settings(cfg);
    warn_if_open(cfg);
    dumps_apply(cfg, core_limit);
    srv_raise_nofile(cfg->limits.max_connections);
    cfg_current_swap(cfg_ref(cfg));
    mc.gw.config_path = path;
    mc.gw.rebuild = rebuild;
    if (gateway_open(&mc.gw, cfg) != BSC_OK || gateway_keyring_start(&mc.gw, cfg) != BSC_OK)
        return start_failed(&mc.gw, cfg, 0);
    if (gauth_sync(cfg) != BSC_OK) /* fetches vertex tokens before the first request */
        LOG_WARN("vertex: the token refresher could not track every credential");
    mc.gw.workers = bsc_xcalloc(mc.gw.n_workers, sizeof(struct worker));
    for (i = 0; i < mc.gw.n_workers; i++)
        if (worker_init(&mc.gw.workers[i], &mc.gw, i, cfg) != 0)
            return start_failed(&mc.gw, cfg, i + 1);
    mc.loop = uv_default_loop();
    uv_async_init(mc.loop, &mc.workers_ended, on_workers_ended);
    mc.workers_ended.data = &mc;
    mc.gw.ended = &mc.workers_ended;
    atomic_store(&mc.gw.running, mc.gw.n_workers);
    for (i = 0; i < mc.gw.n_workers; i++)
        uv_thread_create(&mc.gw.workers[i].thread, worker_main, &mc.gw.workers[i]);
    LOG_INFO("bascule %s listening on http://%s%s%s:%u with %u workers, %zu routes",
             bsc_build_version, strchr(cfg->listen_host, ':') ? "[" : "", cfg->listen_host,
             strchr(cfg->listen_host, ':') ? "]" : "", cfg->listen_port, mc.gw.n_workers,
             cfg->n_routes);
    {
        uint64_t nofile;
        uint32_t cap = srv_conn_cap(cfg->limits.max_connections, &nofile);

        LOG_INFO("connection cap %u (limits.max_connections %u, RLIMIT_NOFILE %llu)", cap,
                 cfg->limits.max_connections, (unsigned long long)nofile);
    }
    cfg_unref(cfg);
    if (bsc_sd_notify("READY=1") < 0) /* the listeners are bound: connections queue */
        LOG_WARN("could not tell the service manager that bascule is ready ($NOTIFY_SOCKET)");

    uv_signal_init(mc.loop, &mc.sig_hup);
    uv_signal_init(mc.loop, &mc.sig_term);
    uv_signal_init(mc.loop, &mc.sig_int);
    uv_timer_init(mc.loop, &mc.drain_timer);
    mc.sig_hup.data = mc.sig_term.data = mc.sig_int.data = mc.drain_timer.data = &mc;
    if (store_is_shared(mc.gw.store))
        keyring_follow_start(&mc.gw, mc.loop, &mc.keyring_follow);
    uv_signal_start(&mc.sig_hup, on_hup, SIGHUP);
    uv_signal_start(&mc.sig_term, on_term, SIGTERM);
    uv_signal_start(&mc.sig_int, on_term, SIGINT);
    history_start(&mc);
    uv_run(mc.loop, UV_RUN_DEFAULT); /* until on_workers_ended */

    for (i = 0; i < mc.gw.n_workers; i++) {
        struct worker *w = &mc.gw.workers[i];
        uv_thread_join(&w->thread);
        srv_free(w->srv);
        if (w->admin_srv)
            srv_free(w->admin_srv);
        uv_run(&w->loop, UV_RUN_DEFAULT); /* close callbacks */
        uv_loop_close(&w->loop);
    }
    uv_loop_close(mc.loop);
    gauth_stop();
    tel_shutdown(); /* it counts into the metrics: before they go */
    gateway_close(&mc.gw);
    LOG_INFO("bascule stopped");
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'}, {"check-config", required_argument, NULL, 'k'},
        {"version", no_argument, NULL, 'v'},       {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *config = NULL;
    struct rlimit core_limit;
    int c, rc;

    dumps_forbid(&core_limit); /* first: --check-config reads the keys too */
    if (argc > 1 && strcmp(argv[1], "admin") == 0) {
        /* A client of the admin API (run-time keys, the audit trail). */
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            fprintf(stderr, "bascule: libcurl initialisation failed\n");
            return 1;
        }
        rc = admin_cli_main(argc - 1, argv + 1);
        curl_global_cleanup();
        return rc;
    }
    if (argc > 1 && strcmp(argv[1], "load") == 0) {
        /* The load tester: a client of a gateway, sharing only the upstream glue. */
        signal(SIGPIPE, SIG_IGN);
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            fprintf(stderr, "bascule: libcurl initialisation failed\n");
            return 1;
        }
        rc = load_main(argc - 1, argv + 1);
        curl_global_cleanup();
        return rc;
    }
    while ((c = getopt_long(argc, argv, "c:k:vh", opts, NULL)) != -1) {
        switch (c) {
        case 'c': config = optarg; break;
        case 'k': return check_config(optarg);
        case 'v':
            printf("bascule %s (revision %s; libuv %s, %s)\n", bsc_build_version,
                   bsc_build_revision, uv_version_string(), curl_version());
            return 0;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (!config || optind != argc) {
        usage(stderr);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "bascule: libcurl initialisation failed\n");
        return 1;
    }
    rc = serve(config, &core_limit);
    curl_global_cleanup();
    return rc;
}
