/* SPDX-License-Identifier: MIT */
/* main.c -- bascule-sim: a simulated LLM provider that misbehaves on a script, the test
 * double of the integration tests and the provider side of the demo.
 *   bascule-sim --listen 127.0.0.1:PORT [--script FILE.json] [--token-delay-ms N] [--quiet]
 * With port 0 the kernel picks a free port. The first stdout line is always
 * "bascule-sim listening on HOST:PORT". SIGTERM/SIGINT close every connection and exit 0.
 * One loop, one thread. See docs/internals/sim.md. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uv.h>

#include "app.h"
#include "dialect/error.h"
#include "script.h"

#include "core/compat.h"
#include "core/log.h"
#include "core/str.h"
#include "server/server.h"

#define SCRIPT_FILE_MAX (16u * 1024u * 1024u)

struct opts {
    char host[64];
    uint16_t port;
    const char *script;
    uint32_t token_delay_ms;
    bool quiet;
};

/* Everything main() owns, so the signal callback reaches it without a global. */
struct sim_main {
    uv_loop_t loop;
    struct sim_app app;
    uv_signal_t sigterm;
    uv_signal_t sigint;
    bool stopping;
};

static void usage(FILE *f)
{
    fprintf(f, "usage: bascule-sim [--listen HOST:PORT] [--script FILE.json] "
               "[--token-delay-ms N] [--quiet]\n"
               "  --listen HOST:PORT   address to serve (default 127.0.0.1:0: a free port)\n"
               "  --script FILE.json   {\"models\": {\"name\": spec}} loaded at start\n"
               "  --token-delay-ms N   default pause between stream chunks (default 0)\n"
               "  --quiet              no per-request log lines on stderr\n");
}

/* "127.0.0.1:8080", "[::1]:0", "localhost:0" (taken as 127.0.0.1). */
static bool parse_listen(const char *s, struct opts *o)
{
    const char *colon = strrchr(s, ':');
    unsigned long long port;
    size_t hlen;

    if (!colon || !bsc_str_to_u64(bsc_str_cstr(colon + 1), &port) || port > 65535)
        return false;
    hlen = (size_t)(colon - s);
    if (hlen >= 2 && s[0] == '[' && s[hlen - 1] == ']') {
        s++;
        hlen -= 2;
    }
    if (hlen == 0 || hlen >= sizeof(o->host))
        return false;
    memcpy(o->host, s, hlen);
    o->host[hlen] = '\0';
    if (strcmp(o->host, "localhost") == 0)
        snprintf(o->host, sizeof(o->host), "127.0.0.1");
    o->port = (uint16_t)port;
    return true;
}

/* Returns the value of option <name> at argv[*i] ("--name v" or "--name=v"), or NULL. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);

    if (strncmp(argv[*i], name, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] == '\0' && *i + 1 < argc)
        return argv[++*i];
    return NULL;
}

static bool parse_args(int argc, char **argv, struct opts *o)
{
    snprintf(o->host, sizeof(o->host), "127.0.0.1");
    for (int i = 1; i < argc; i++) {
        const char *v;
        unsigned long long n;

        if (strcmp(argv[i], "--quiet") == 0) {
            o->quiet = true;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if ((v = opt_value(argc, argv, &i, "--listen"))) {
            if (!parse_listen(v, o)) {
                fprintf(stderr, "bascule-sim: bad --listen %s (want HOST:PORT)\n", v);
                return false;
            }
        } else if ((v = opt_value(argc, argv, &i, "--script"))) {
            o->script = v;
        } else if ((v = opt_value(argc, argv, &i, "--token-delay-ms"))) {
            if (!bsc_str_to_u64(bsc_str_cstr(v), &n) || n > SIM_DELAY_MAX_MS) {
                fprintf(stderr, "bascule-sim: bad --token-delay-ms %s\n", v);
                return false;
            }
            o->token_delay_ms = (uint32_t)n;
        } else {
            fprintf(stderr, "bascule-sim: unknown argument %s\n", argv[i]);
            return false;
        }
    }
    return true;
}

static bool load_script(struct sim_app *app, const char *file)
{
    FILE *f = fopen(file, "rb");
    char *text = malloc(SCRIPT_FILE_MAX + 1), why[600];
    size_t n = 0;
    bool ok = false;

    if (!f || !text) {
        fprintf(stderr, "bascule-sim: cannot read %s: %s\n", file, strerror(errno));
        goto out;
    }
    n = fread(text, 1, SCRIPT_FILE_MAX + 1, f);
    if (ferror(f) || n > SCRIPT_FILE_MAX) {
        fprintf(stderr, "bascule-sim: cannot read %s (error, or over %u bytes)\n", file,
                SCRIPT_FILE_MAX);
        goto out;
    }
    if (sim_app_load_script(app, bsc_str_make(text, n), why, sizeof(why))) {
        fprintf(stderr, "bascule-sim: %s: %s\n", file, why);
        goto out;
    }
    ok = true;
out:
    if (f)
        fclose(f);
    free(text);
    return ok;
}

static uint16_t bound_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return 0;
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static void on_server_closed(struct srv *srv, void *ud)
{
    struct sim_main *m = ud;

    srv_free(srv);
    m->app.srv = NULL;
}

static void on_signal(uv_signal_t *h, int signum)
{
    struct sim_main *m = h->data;

    if (m->stopping)
        return;
    m->stopping = true;
    if (!m->app.quiet)
        LOG_INFO("bascule-sim: signal %d, closing", signum);
    uv_close((uv_handle_t *)&m->sigterm, NULL);
    uv_close((uv_handle_t *)&m->sigint, NULL);
    /* Every open request gets its abort callback: their exchanges close their timers. */
    srv_close_all(m->app.srv, on_server_closed, m);
}

static bool start(struct sim_main *m, const struct opts *o)
{
    struct srv_limits limits = {
        .max_body_bytes = SIM_MAX_BODY_BYTES,
        .max_header_bytes = 64 * 1024,
        .header_timeout_ms = 30000,
        .idle_timeout_ms = 120000,
        .max_connections = 65536, /* the streaming benchmark holds thousands */
        .max_pending_output = SIM_MAX_PENDING,
    };
    char errbuf[256];
    int fd = -1;

    if (srv_listen_first(o->host, o->port, &fd, errbuf, sizeof(errbuf))) { /* one socket */
        fprintf(stderr, "bascule-sim: cannot listen on %s:%u: %s\n", o->host, o->port, errbuf);
        return false;
    }
    if (srv_new(&m->loop, fd, &limits, sim_app_handle, &m->app, &m->app.srv)) {
        fprintf(stderr, "bascule-sim: cannot start the server\n");
        return false;
    }
    srv_set_error_body(m->app.srv, dialect_openai_srv_error);
    printf(strchr(o->host, ':') ? "bascule-sim listening on [%s]:%u\n"
                                : "bascule-sim listening on %s:%u\n",
           o->host, bound_port(fd));
    fflush(stdout);
    return true;
}

int main(int argc, char **argv)
{
    struct opts o = {0};
    struct sim_main *m;
    int rc = 0;

    if (!parse_args(argc, argv, &o)) {
        usage(stderr);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    m = calloc(1, sizeof(*m));
    if (!m || uv_loop_init(&m->loop) != 0) {
        fprintf(stderr, "bascule-sim: cannot start a loop\n");
        free(m);
        return 1;
    }
    sim_app_init(&m->app, &m->loop, o.token_delay_ms, o.quiet);
    bsc_log_verbosity = o.quiet ? BSC_LOG_WARN : BSC_LOG_INFO;
    if (o.script && !load_script(&m->app, o.script)) {
        rc = 2;
    } else if (!start(m, &o)) {
        rc = 1;
    } else {
        uv_signal_init(&m->loop, &m->sigterm);
        uv_signal_init(&m->loop, &m->sigint);
        m->sigterm.data = m->sigint.data = m;
        uv_signal_start(&m->sigterm, on_signal, SIGTERM);
        uv_signal_start(&m->sigint, on_signal, SIGINT);
        uv_run(&m->loop, UV_RUN_DEFAULT);
    }
    uv_run(&m->loop, UV_RUN_NOWAIT); /* close callbacks still queued */
    if (uv_loop_close(&m->loop) != 0 && rc == 0)
        LOG_WARN("bascule-sim: handles still open at exit");
    if (m->app.live == 0)
        sim_app_cleanup(&m->app);
    free(m);
    return rc;
}
