/* SPDX-License-Identifier: MIT */
/* req_harness.c -- see req_harness.h. The gateway is put together as main.c's serve()
 * does (minus signals, the prober, the admin listener and Redis), on one worker; the sim
 * runs its application on a loop of its own. Both loops are stopped through an async
 * handle, on their own thread, as the libuv contract wants. */
#include "req_harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <uv.h>

#include "api/gateway_setup.h"
#include "config/config.h"
#include "core/clock.h"
#include "core/log.h"
#include "dialect/error.h"
#include "health/hstate.h"
#include "limits/limits.h"
#include "router/access_log.h"
#include "router/gateway.h"
#include "router/internal.h"
#include "router/limit.h"
#include "router/request.h"
#include "router/shadow.h"
#include "router/worker.h"
#include "server/server.h"
#include "store/store.h"
#include "upstream/upstream.h"

#include "app.h"

/* ---- the transition recorder (the req__goto hook runs on the worker's loop) ---- */

#define RH_TRACES 128
#define RH_PATH_MAX 2048 /* 16 attempts of a retried request take about 500 */

struct rh_trace {
    char id[132];
    char path[RH_PATH_MAX];
    uint32_t visited; /* bit per state entered */
};

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct rh_trace t[RH_TRACES];
    unsigned n;
    uint32_t edges[REQ_ST_COUNT]; /* bit per <to>, for every <from>: the whole process */
} rec = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* The trace of <id>, made when <create>; NULL when absent or the table is full. Under
 * rec.mu. */
static struct rh_trace *trace_of(const char *id, bool create)
{
    for (unsigned i = 0; i < rec.n; i++)
        if (strcmp(rec.t[i].id, id) == 0)
            return &rec.t[i];
    if (!create || rec.n == RH_TRACES)
        return NULL;
    snprintf(rec.t[rec.n].id, sizeof(rec.t[rec.n].id), "%s", id);
    return &rec.t[rec.n++];
}

static void path_add(struct rh_trace *t, enum req_state s)
{
    size_t used = strlen(t->path);

    snprintf(t->path + used, sizeof(t->path) - used, "%s%s", used ? " " : "",
             req_state_name(s));
    t->visited |= 1u << s;
}

static void on_goto(const char *id, enum req_state from, enum req_state to)
{
    struct rh_trace *t;

    pthread_mutex_lock(&rec.mu);
    rec.edges[from] |= 1u << to;
    if ((t = trace_of(id, true))) {
        if (!t->path[0])
            path_add(t, from);
        path_add(t, to);
    }
    pthread_cond_broadcast(&rec.cv);
    pthread_mutex_unlock(&rec.mu);
}

static struct timespec deadline_in(int ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

void rh_wait_state(const char *id, enum req_state s)
{
    struct timespec until = deadline_in(RH_WAIT_MS);
    struct rh_trace *t;
    bool seen = false;
    char path[RH_PATH_MAX] = "";

    pthread_mutex_lock(&rec.mu);
    for (;;) {
        t = trace_of(id, false);
        if (t && (t->visited & (1u << s))) {
            seen = true;
            break;
        }
        if (pthread_cond_timedwait(&rec.cv, &rec.mu, &until) == ETIMEDOUT)
            break;
    }
    if (!seen && (t = trace_of(id, false)))
        snprintf(path, sizeof(path), "%s", t->path);
    pthread_mutex_unlock(&rec.mu);
    if (!seen)
        fail_msg("request %s never reached %s (path: %s)", id, req_state_name(s), path);
}

void rh_path(const char *id, char *out, size_t outlen)
{
    struct rh_trace *t;

    pthread_mutex_lock(&rec.mu);
    t = trace_of(id, false);
    snprintf(out, outlen, "%s", t ? t->path : "");
    pthread_mutex_unlock(&rec.mu);
}

bool rh_edge_taken(enum req_state from, enum req_state to)
{
    bool taken;

    pthread_mutex_lock(&rec.mu);
    taken = (rec.edges[from] & (1u << to)) != 0;
    pthread_mutex_unlock(&rec.mu);
    return taken;
}

/* ---- the harness ---- */

struct rh {
    /* the upstream: bascule-sim's application on its own loop */
    uv_loop_t sim_loop;
    uv_thread_t sim_thread;
    uv_async_t sim_stop;
    struct sim_app sim;
    uint16_t sim_port;
    /* the gateway and its one worker */
    struct gateway gw;
    char *yaml;           /* owned: the config text, for gw.rebuild */
    struct worker *w;
    uint16_t port;
    /* the access and attempt lines (stdout) while the harness runs: written through an
     * O_APPEND descriptor, read through a file of their own (no shared offset) */
    char log_path[64];
    int saved_stdout;
};

static uint16_t bound_port(int fd)
{
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);

    assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
    return ntohs(sin.sin_port);
}

static void sim_closed(struct srv *srv, void *ud)
{
    struct rh *h = ud;

    srv_free(srv);
    h->sim.srv = NULL;
}

static void on_sim_stop(uv_async_t *a)
{
    struct rh *h = a->data;

    uv_close((uv_handle_t *)a, NULL);
    srv_close_all(h->sim.srv, sim_closed, h);
}

static void sim_main(void *arg)
{
    struct rh *h = arg;

    uv_run(&h->sim_loop, UV_RUN_DEFAULT);
}

static void sim_start(struct rh *h, const char *script)
{
    struct srv_limits lim = {
        .max_body_bytes = SIM_MAX_BODY_BYTES,
        .max_header_bytes = 64 * 1024,
        .header_timeout_ms = 30000,
        .idle_timeout_ms = 120000,
        .max_connections = 1024,
        .max_pending_output = SIM_MAX_PENDING,
    };
    char err[256] = "";
    int fd = -1;

    assert_int_equal(uv_loop_init(&h->sim_loop), 0);
    sim_app_init(&h->sim, &h->sim_loop, 0, true);
    if (script && sim_app_load_script(&h->sim, bsc_str_cstr(script), err, sizeof(err)))
        fail_msg("sim script: %s", err);
    assert_int_equal(srv_listen_socket("127.0.0.1", 0, &fd, err, sizeof(err)), BSC_OK);
    h->sim_port = bound_port(fd);
    assert_int_equal(srv_new(&h->sim_loop, fd, &lim, sim_app_handle, &h->sim, &h->sim.srv),
                     BSC_OK);
    srv_set_error_body(h->sim.srv, dialect_openai_srv_error);
    assert_int_equal(uv_async_init(&h->sim_loop, &h->sim_stop, on_sim_stop), 0);
    h->sim_stop.data = h;
    assert_int_equal(uv_thread_create(&h->sim_thread, sim_main, h), 0);
}

/* The YAML with every {{SIM}} (the sim's OpenAI base URL) and {{SIMROOT}} (its root, for
 * the other dialects' paths) replaced, after the lines every harness gateway has. */
static char *config_text(const struct rh *h, const char *yaml)
{
    static const char *const tokens[] = {"{{SIM}}", "{{SIMROOT}}"};
    char bases[2][64];
    size_t cap = strlen(yaml) * 2 + 256, n;
    char *out = malloc(cap), *o;
    const char *p = yaml;

    assert_non_null(out);
    snprintf(bases[0], sizeof(bases[0]), "http://127.0.0.1:%u/v1", h->sim_port);
    snprintf(bases[1], sizeof(bases[1]), "http://127.0.0.1:%u", h->sim_port);
    n = (size_t)snprintf(out, cap, "listen: \"127.0.0.1:1\"\nworkers: 1\n"
                                   "log: { level: err, format: text }\n");
    o = out + n;
    while (*p) {
        int k = strncmp(p, tokens[0], strlen(tokens[0])) == 0   ? 0
                : strncmp(p, tokens[1], strlen(tokens[1])) == 0 ? 1
                                                                : -1;

        if (k < 0) {
            *o++ = *p++;
            continue;
        }
        memcpy(o, bases[k], strlen(bases[k]));
        o += strlen(bases[k]);
        p += strlen(tokens[k]);
    }
    *o = '\0';
    return out;
}

static struct cfg *load_cfg(struct rh *h, const char *yaml)
{
    char *text = config_text(h, yaml);
    struct cfg_diags diags = {0};
    struct cfg *cfg = NULL;

    if (cfg_load_string("harness.yaml", text, strlen(text), &cfg, &diags) != BSC_OK || !cfg) {
        cfg_diags_print(&diags, stderr);
        cfg_diags_cleanup(&diags);
        free(text);
        fail_msg("the harness config does not load");
    }
    cfg_diags_cleanup(&diags);
    h->yaml = text;
    bsc_log_verbosity = cfg->log.level;
    bsc_log_json = cfg->log.json;
    return cfg;
}

/* main.c's publish, for the admin API's key and team changes: the config text again, with
 * the keyring merged, published as the new snapshot. Runs on the worker's thread. */
static enum bsc_err rebuild(struct gateway *gw)
{
    struct rh *h = (struct rh *)((char *)gw - offsetof(struct rh, gw));
    struct cfg_diags diags = {0};
    struct cfg *cfg = NULL;
    enum bsc_err err;

    err = cfg_load_string("harness.yaml", h->yaml, strlen(h->yaml), &cfg, &diags);
    cfg_diags_cleanup(&diags);
    if (err || !cfg)
        return BSC_EINVAL;
    err = gateway_merge_keyring(gw, cfg);
    if (!err)
        err = hstate_sync(gw->hs, cfg, bsc_now_ms());
    if (!err)
        err = lim_reg_sync(gw->lim, cfg);
    if (err) {
        cfg_unref(cfg);
        return err;
    }
    cfg_current_swap(cfg);
    return BSC_OK;
}

/* A shared store (Redis) connects on its own thread and refuses jobs until then: the
 * test waits for the connection (main.c retries the keyring instead), bounded by
 * RH_WAIT_MS. */
static void wait_store_up(const struct store *st)
{
    struct timespec deadline = deadline_in(RH_WAIT_MS), now;
    const char *reason = "";

    while (store_is_shared(st) && !store_is_up(st, &reason)) {
        struct timespec pause = {0, 10 * 1000 * 1000};

        clock_gettime(CLOCK_REALTIME, &now);
        if (now.tv_sec > deadline.tv_sec ||
            (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec))
            fail_msg("the store is not up after %d ms: %s", RH_WAIT_MS, reason);
        nanosleep(&pause, NULL);
    }
}

/* The gateway as main.c builds it (api/gateway_setup.h), waiting for a shared store's
 * connection before the keyring is read. */
static void gateway_build(struct rh *h, struct cfg *cfg)
{
    struct gateway *gw = &h->gw;

    gw->config_path = "harness.yaml";
    gw->rebuild = rebuild;
    cfg_current_swap(cfg_ref(cfg));
    if (gateway_open(gw, cfg) != BSC_OK)
        fail_msg("the gateway could not be built (the log says why)");
    wait_store_up(gw->store);
    if (gateway_keyring_start(gw, cfg) != BSC_OK)
        fail_msg("the keyring could not be read (the log says why)");
}

/* ---- the worker ---- */

static void worker_closed(struct srv *srv, void *ud)
{
    struct worker *w = ud;

    (void)srv;
    w->drained = true;
    shadow_worker_stop(w);
    up_multi_free(w->up);
    w->up = NULL;
    reqlim_worker_closing(w);
    uv_close((uv_handle_t *)&w->wake, NULL);
}

/* main.c's worker_on_wake, for the commands a test uses: room for queued requests, and
 * the stop (every connection closed now). */
static void worker_on_wake(uv_async_t *a)
{
    struct worker *w = a->data;
    unsigned cmd = atomic_exchange(&w->pending, 0);

    if (cmd & WORKER_CMD_CAPACITY)
        reqlim_wake(w);
    if ((cmd & WORKER_CMD_CLOSE) && !w->draining) {
        w->draining = true;
        srv_close_all(w->srv, worker_closed, w);
    }
}

static void worker_main(void *arg)
{
    struct worker *w = arg;

    uv_run(&w->loop, UV_RUN_DEFAULT);
    uv_run(&w->loop, UV_RUN_NOWAIT);
    req_pool_drain(w);
    access_log_thread_cleanup();
}

static void worker_start(struct rh *h, const struct cfg *cfg)
{
    struct worker *w;
    struct srv_limits lim = {
        .max_body_bytes = cfg->limits.max_body_bytes,
        .max_header_bytes = 64 * 1024,
        .header_timeout_ms = 30000,
        .idle_timeout_ms = 30000,
        .max_connections = 1024,
        .max_pending_output = 1u << 20,
    };
    struct up_limits ul = {.max_cached_connections = 64,
                           .builtin_http = cfg->http_client == CFG_HTTP_CLIENT_BUILTIN,
                           .builtin_https = cfg->http_client == CFG_HTTP_CLIENT_BUILTIN};
    char err[256] = "";
    int fd = -1;

    h->gw.workers = calloc(1, sizeof(struct worker));
    assert_non_null(h->gw.workers);
    w = h->w = &h->gw.workers[0];
    w->gw = &h->gw;
    assert_int_equal(uv_loop_init(&w->loop), 0);
    assert_int_equal(uv_async_init(&w->loop, &w->wake, worker_on_wake), 0);
    w->wake.data = w;
    assert_int_equal(srv_listen_socket("127.0.0.1", 0, &fd, err, sizeof(err)), BSC_OK);
    h->port = bound_port(fd);
    assert_int_equal(gateway_worker_serve(w, fd, &lim, &ul), BSC_OK);
    atomic_store(&h->gw.running, 1);
    assert_int_equal(uv_thread_create(&w->thread, worker_main, w), 0);
}

/* The access and attempt lines go to a file while the harness runs; stdio's buffer is
 * flushed on each switch so the test runner's own lines stay on the terminal. */
static void capture_stdout(struct rh *h)
{
    int fd, wfd;

    snprintf(h->log_path, sizeof(h->log_path), "/tmp/bsc_rh_XXXXXX");
    fd = mkstemp(h->log_path);
    assert_true(fd >= 0);
    wfd = open(h->log_path, O_WRONLY | O_APPEND);
    assert_true(wfd >= 0);
    close(fd);
    fflush(stdout);
    h->saved_stdout = dup(STDOUT_FILENO);
    assert_true(h->saved_stdout >= 0);
    assert_true(dup2(wfd, STDOUT_FILENO) >= 0);
    close(wfd);
}

static void restore_stdout(struct rh *h)
{
    fflush(stdout);
    dup2(h->saved_stdout, STDOUT_FILENO);
    close(h->saved_stdout);
    unlink(h->log_path);
}

static struct rh *live; /* the harness running, test thread only */

int rh_teardown(void **state)
{
    (void)state;
    if (live)
        rh_stop(live);
    return 0;
}

struct rh *rh_start(const char *yaml, const char *sim_script)
{
    struct rh *h = calloc(1, sizeof(*h));
    struct cfg *cfg;

    assert_non_null(h);
    pthread_mutex_lock(&rec.mu);
    rec.n = 0;
    memset(rec.t, 0, sizeof(rec.t));
    pthread_mutex_unlock(&rec.mu);
    req__goto_hook = on_goto;
    sim_start(h, sim_script);
    cfg = load_cfg(h, yaml);
    gateway_build(h, cfg);
    capture_stdout(h);
    worker_start(h, cfg);
    cfg_unref(cfg);
    live = h;
    return h;
}

void rh_stop(struct rh *h)
{
    struct worker *w = h->w;

    live = NULL;
    atomic_fetch_or(&w->pending, WORKER_CMD_CLOSE);
    uv_async_send(&w->wake);
    uv_thread_join(&w->thread);
    srv_free(w->srv);
    uv_run(&w->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&w->loop), 0);
    uv_async_send(&h->sim_stop);
    uv_thread_join(&h->sim_thread);
    uv_run(&h->sim_loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&h->sim_loop), 0);
    sim_app_cleanup(&h->sim);
    restore_stdout(h);
    gateway_close(&h->gw);
    req__goto_hook = NULL;
    free(h->yaml);
    free(h);
}

struct worker *rh_worker(struct rh *h)
{
    return h->w;
}

uint16_t rh_port(const struct rh *h)
{
    return h->port;
}

/* ---- the client ---- */

static int connect_to(uint16_t port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
    struct timeval tv = {.tv_sec = RH_WAIT_MS / 1000};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_true(fd >= 0);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
    assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)), 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    return fd;
}

static void send_all(int fd, const char *p, size_t len)
{
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR)
            continue;
        assert_true(n > 0);
        p += n;
        len -= (size_t)n;
    }
}

static int send_to(uint16_t port, const char *method, const char *path, const char *id,
                   const char *extra_headers, const char *body)
{
    size_t blen = body ? strlen(body) : 0;
    size_t cap = blen + 1024 + (extra_headers ? strlen(extra_headers) : 0);
    char *req = malloc(cap);
    int fd = connect_to(port);
    int n;

    assert_non_null(req);
    n = snprintf(req, cap,
                 "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                 "%s%s%s%s%s"
                 "Content-Length: %zu\r\n\r\n",
                 method, path, id ? "X-Request-Id: " : "", id ? id : "", id ? "\r\n" : "",
                 body ? "Content-Type: application/json\r\n" : "",
                 extra_headers ? extra_headers : "", blen);
    assert_true(n > 0 && (size_t)n + blen < cap);
    if (body)
        memcpy(req + n, body, blen);
    send_all(fd, req, (size_t)n + blen);
    free(req);
    return fd;
}

static int send_request(struct rh *h, const char *method, const char *path, const char *id,
                        const char *extra_headers, const char *body)
{
    return send_to(h->port, method, path, id, extra_headers, body);
}

void rh_sim_get(struct rh *h, const char *path, struct rh_resp *out)
{
    rh_recv(send_to(h->sim_port, "GET", path, NULL, NULL, NULL), out);
}

int rh_send(struct rh *h, const char *path, const char *id, const char *extra_headers,
            const char *body)
{
    return send_request(h, "POST", path, id, extra_headers, body);
}

void rh_recv(int fd, struct rh_resp *out)
{
    size_t cap = 16384;
    char *end;

    *out = (struct rh_resp){.raw = malloc(cap)};
    assert_non_null(out->raw);
    for (;;) {
        ssize_t n;

        if (cap - out->len < 4096) {
            cap *= 2;
            out->raw = realloc(out->raw, cap);
            assert_non_null(out->raw);
        }
        n = recv(fd, out->raw + out->len, cap - out->len - 1, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            fail_msg("no end of response within %d ms", RH_WAIT_MS);
        if (n <= 0)
            break; /* closed (or reset: a stream cut on purpose) */
        out->len += (size_t)n;
    }
    close(fd);
    out->raw[out->len] = '\0';
    if (sscanf(out->raw, "HTTP/1.1 %d", &out->status) != 1)
        out->status = 0;
    end = strstr(out->raw, "\r\n\r\n");
    out->body = end ? end + 4 : out->raw + out->len;
}

void rh_resp_free(struct rh_resp *r)
{
    free(r->raw);
    *r = (struct rh_resp){0};
}

bool rh_resp_header(const struct rh_resp *r, const char *name, char *out, size_t outlen)
{
    size_t nlen = strlen(name);

    for (const char *p = strstr(r->raw, "\r\n"); p && p + 2 < r->body; p = strstr(p + 2, "\r\n")) {
        const char *line = p + 2, *eol = strstr(line, "\r\n");

        if (eol && strncasecmp(line, name, nlen) == 0 && line[nlen] == ':') {
            const char *v = line + nlen + 1;

            while (*v == ' ')
                v++;
            snprintf(out, outlen, "%.*s", (int)(eol - v), v);
            return true;
        }
    }
    return false;
}

bool rh_resp_has(const struct rh_resp *r, const char *s)
{
    return strstr(r->body, s) != NULL;
}

void rh_post(struct rh *h, const char *path, const char *id, const char *extra_headers,
             const char *body, struct rh_resp *out)
{
    rh_recv(rh_send(h, path, id, extra_headers, body), out);
    rh_wait_state(id, REQ_ST_DONE);
}

void rh_chat(struct rh *h, const char *id, const char *route, const char *extra_json,
             const char *extra_headers, struct rh_resp *out)
{
    char body[1024];

    snprintf(body, sizeof(body),
             "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]%s}",
             route, extra_json ? extra_json : "");
    rh_post(h, "/v1/chat/completions", id, extra_headers, body, out);
}

void rh_get(struct rh *h, const char *path, const char *extra_headers, struct rh_resp *out)
{
    rh_recv(send_request(h, "GET", path, NULL, extra_headers, NULL), out);
}

void rh_call(struct rh *h, const char *method, const char *path, const char *extra_headers,
             const char *body, struct rh_resp *out)
{
    rh_recv(send_request(h, method, path, NULL, extra_headers, body), out);
}

/* ---- the access log ---- */

/* The first line of the captured log containing both <a> and <b>, into <out>. */
static bool find_line(struct rh *h, const char *a, const char *b, char *out, size_t outlen,
                      unsigned *count)
{
    char line[16384];
    bool found = false;
    FILE *f = fopen(h->log_path, "r");

    assert_non_null(f);
    while (fgets(line, sizeof(line), f))
        if (strstr(line, a) && strstr(line, b)) {
            if (!found && out)
                snprintf(out, outlen, "%s", line);
            found = true;
            if (count)
                (*count)++;
        }
    fclose(f);
    return found;
}

void rh_access_line(struct rh *h, const char *id, char *out, size_t outlen)
{
    char want[200];

    snprintf(want, sizeof(want), "\"request_id\":\"%s\"", id);
    rh_wait_state(id, REQ_ST_DONE);
    /* The line is written right after the move to DONE, on the worker's loop: a short
     * poll for that write, bounded like every wait here. */
    for (int i = 0; i < RH_WAIT_MS / 5; i++) {
        if (find_line(h, want, "\"type\":\"access\"", out, outlen, NULL))
            return;
        usleep(5000);
    }
    fail_msg("no access line for %s", id);
}

bool rh_find_line(struct rh *h, const char *want, char *out, size_t outlen)
{
    return find_line(h, want, "", out, outlen, NULL);
}

unsigned rh_attempt_lines(struct rh *h, const char *id)
{
    char want[200];
    unsigned n = 0;

    snprintf(want, sizeof(want), "\"request_id\":\"%s\"", id);
    find_line(h, want, "\"type\":\"attempt\"", NULL, 0, &n);
    return n;
}

/* ---- assertions ---- */

void rh_assert_path(const char *id, const char *want)
{
    char got[RH_PATH_MAX];

    rh_path(id, got, sizeof(got));
    if (strcmp(got, want) != 0)
        fail_msg("%s took \"%s\", expected \"%s\"", id, got, want);
}

void rh_assert_header(const struct rh_resp *r, const char *name, const char *want)
{
    char v[512];

    if (!rh_resp_header(r, name, v, sizeof(v)))
        fail_msg("no %s header in %.400s", name, r->raw);
    if (strcmp(v, want) != 0)
        fail_msg("%s: \"%s\", expected \"%s\"", name, v, want);
}

void rh_assert_line_has(struct rh *h, const char *id, const char *want)
{
    char line[16384];

    rh_access_line(h, id, line, sizeof(line));
    if (!strstr(line, want))
        fail_msg("the access line of %s lacks %s: %s", id, want, line);
}
