/* SPDX-License-Identifier: MIT */
/* redis_server.c -- a private redis-server for unit tests (redis_server.h). */
#include "redis_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void pause_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* A port the kernel just gave out and took back: free now, perhaps not in a moment (the
 * caller retries on a collision). */
static uint16_t free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
        getsockname(fd, (struct sockaddr *)&a, &len))
        fail_msg("free port: %s", strerror(errno));
    close(fd);
    return ntohs(a.sin_port);
}

static int connect_port(uint16_t port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
        return fd;
    if (fd >= 0)
        close(fd);
    return -1;
}

/* Reads until <buf> holds a whole RESP reply or <deadline>; returns the bytes read, or -1. */
static ssize_t read_reply(int fd, char *buf, size_t cap, int64_t deadline);

/* One raw request/reply on a new connection; -1 when the server cannot be reached or did
 * not answer by <deadline>. */
static ssize_t exchange(uint16_t port, const char *req, size_t len, char *buf, size_t cap,
                        int64_t deadline)
{
    int fd = connect_port(port);
    ssize_t n;

    if (fd < 0)
        return -1;
    if (write(fd, req, len) != (ssize_t)len) {
        close(fd);
        return -1;
    }
    n = read_reply(fd, buf, cap, deadline);
    close(fd);
    return n;
}

/* Whether <p> (n bytes) ends a complete reply: simple lines, a bulk string, or an array of
 * them (the only replies the tests ask for). */
static bool reply_complete(const char *p, size_t n)
{
    const char *end = p + n;
    long elems = 1;

    if (n && p[0] == '*') {
        const char *nl = memchr(p, '\n', n);

        if (!nl)
            return false;
        elems = strtol(p + 1, NULL, 10);
        p = nl + 1;
        if (elems < 0)
            return true;
    }
    for (long i = 0; i < elems; i++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        long blen;

        if (!nl)
            return false;
        if (*p != '$') {
            p = nl + 1;
            continue;
        }
        blen = strtol(p + 1, NULL, 10);
        p = nl + 1;
        if (blen < 0)
            continue;
        if (end - p < blen + 2)
            return false;
        p += blen + 2;
    }
    return true;
}

static ssize_t read_reply(int fd, char *buf, size_t cap, int64_t deadline)
{
    size_t n = 0;

    while (!reply_complete(buf, n)) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int64_t left = deadline - now_ms();
        ssize_t got;

        if (left <= 0 || n + 1 >= cap || poll(&pfd, 1, (int)left) <= 0)
            return -1;
        got = read(fd, buf + n, cap - n - 1);
        if (got <= 0)
            return -1;
        n += (size_t)got;
        buf[n] = '\0';
    }
    return (ssize_t)n;
}

static bool answers_ping(uint16_t port, int64_t deadline)
{
    char buf[64] = "";

    return exchange(port, "PING\r\n", 6, buf, sizeof(buf), deadline) > 0 &&
           strncmp(buf, "+PONG", 5) == 0;
}

static pid_t spawn(const struct rs *s)
{
    char port[8], logfile[96];
    pid_t pid;

    snprintf(port, sizeof(port), "%u", (unsigned)s->port);
    snprintf(logfile, sizeof(logfile), "%s/redis.log", s->dir);
    pid = fork();
    if (pid == 0) {
        execlp("redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1",
               "--save", "", "--appendonly", "no", "--dir", s->dir, "--loglevel", "warning",
               "--logfile", logfile, (char *)NULL);
        fprintf(stderr, "redis-server: %s (the unit tests need it on PATH)\n", strerror(errno));
        _exit(127);
    }
    if (pid < 0)
        fail_msg("fork: %s", strerror(errno));
    return pid;
}

/* Whether the server answering on <s>'s port is <s>'s child: a port taken by another
 * process between free_port and the child's bind would otherwise answer the PING while the
 * child is still starting (and then fails to bind), and the test would talk to a stranger. */
static bool answers_as_child(const struct rs *s, int64_t deadline)
{
    char buf[8192] = "", want[32];

    if (exchange(s->port, "INFO server\r\n", 13, buf, sizeof(buf), deadline) <= 0)
        return false;
    snprintf(want, sizeof(want), "process_id:%d\r", (int)s->pid);
    return strstr(buf, want) != NULL;
}

/* Waits for PING or the child's end; true when it answers. */
static bool wait_ready(struct rs *s, int *status)
{
    int64_t deadline = now_ms() + RS_WAIT_MS;

    while (now_ms() < deadline) {
        if (waitpid(s->pid, status, WNOHANG) == s->pid) {
            s->pid = 0;
            return false;
        }
        if (answers_ping(s->port, deadline) && answers_as_child(s, deadline))
            return true;
        pause_ms(20);
    }
    return false;
}

void rs_start(struct rs *s)
{
    int status = 0;

    memset(s, 0, sizeof(*s));
    snprintf(s->dir, sizeof(s->dir), "/tmp/bsc-unit-redis-XXXXXX");
    if (!mkdtemp(s->dir))
        fail_msg("mkdtemp: %s", strerror(errno));
    for (int tries = 0; tries < 5; tries++) {
        s->port = free_port();
        s->pid = spawn(s);
        if (wait_ready(s, &status))
            return;
        if (s->pid) { /* alive but silent for RS_WAIT_MS */
            rs_stop(s);
            fail_msg("redis-server on port %u did not answer PING within %d ms",
                     (unsigned)s->port, RS_WAIT_MS);
        }
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
            rs_stop(s);
            fail_msg("redis-server is not on PATH: the tests of the Redis cache need it");
        }
        /* it ended at once: most likely the port was taken meanwhile; another one */
    }
    rs_stop(s);
    fail_msg("redis-server did not start (5 ports tried)");
}

void rs_stop(struct rs *s)
{
    if (s->pid > 0) {
        int64_t deadline = now_ms() + RS_WAIT_MS;
        int status;

        rs_resume(s);
        kill(s->pid, SIGTERM);
        while (waitpid(s->pid, &status, WNOHANG) == 0) {
            if (now_ms() >= deadline) {
                kill(s->pid, SIGKILL);
                waitpid(s->pid, &status, 0);
                break;
            }
            pause_ms(10);
        }
        s->pid = 0;
    }
    if (s->dir[0]) {
        char path[128];

        snprintf(path, sizeof(path), "%s/dump.rdb", s->dir);
        unlink(path);
        snprintf(path, sizeof(path), "%s/redis.log", s->dir);
        unlink(path);
        rmdir(s->dir);
        s->dir[0] = '\0';
    }
}

/* The signal is delivered when the kernel next schedules the server: wait (as its parent)
 * until it reports the stop, so no command sent after rs_pause is answered. */
void rs_pause(struct rs *s)
{
    int status = 0;

    if (s->pid <= 0 || s->paused)
        return;
    if (kill(s->pid, SIGSTOP))
        fail_msg("SIGSTOP redis-server %d: %s", (int)s->pid, strerror(errno));
    if (waitpid(s->pid, &status, WUNTRACED) != s->pid || !WIFSTOPPED(status))
        fail_msg("redis-server %d did not stop (status %#x)", (int)s->pid, status);
    s->paused = true;
}

void rs_resume(struct rs *s)
{
    if (s->pid > 0 && s->paused && kill(s->pid, SIGCONT) == 0)
        s->paused = false;
}

void rs_url(const struct rs *s, char *out, size_t outlen)
{
    snprintf(out, outlen, "redis://127.0.0.1:%u", (unsigned)s->port);
}

/* The reply in the short form of rs_cmd. */
static void shorten(const char *raw, char *out, size_t outlen)
{
    size_t o = 0;
    const char *p = raw;

    if (*p == '*') {
        const char *nl = strchr(p, '\n');

        o = (size_t)snprintf(out, outlen, "%.*s", (int)(nl - p - 1), p);
        p = nl + 1;
    }
    while (*p && o + 1 < outlen) {
        const char *nl = strchr(p, '\n');
        long blen = *p == '$' ? strtol(p + 1, NULL, 10) : -1;

        if (o)
            out[o++] = '\n';
        if (*p != '$' || blen < 0) {
            o += (size_t)snprintf(out + o, outlen - o, "%.*s", (int)(nl - p - 1), p);
            p = nl + 1;
            continue;
        }
        o += (size_t)snprintf(out + o, outlen - o, "$%.*s", (int)blen, nl + 1);
        p = nl + 1 + blen + 2;
    }
    if (o >= outlen)
        o = outlen - 1;
    out[o] = '\0';
}

void rs_cmd(const struct rs *s, char *out, size_t outlen, int argc, const char *const *argv)
{
    char req[4096], buf[65536];
    size_t n = (size_t)snprintf(req, sizeof(req), "*%d\r\n", argc);

    for (int i = 0; i < argc && n < sizeof(req); i++)
        n += (size_t)snprintf(req + n, sizeof(req) - n, "$%zu\r\n%s\r\n", strlen(argv[i]),
                              argv[i]);
    if (n >= sizeof(req))
        fail_msg("redis command too long");
    if (exchange(s->port, req, n, buf, sizeof(buf), now_ms() + RS_WAIT_MS) < 0)
        fail_msg("redis on port %u: no reply to %s", (unsigned)s->port, argv[0]);
    shorten(buf, out, outlen);
}

void rs_gateway_yaml(const struct rs *s, char *out, size_t outlen)
{
    snprintf(out, outlen,
             "store: { kind: redis, url: \"redis://127.0.0.1:%u\", timeout_ms: 2000 }\n"
             "cache: { store: redis }\n",
             (unsigned)s->port);
}

void rs_wait_keys(const struct rs *s, const char *pattern, long n, char *out, size_t outlen)
{
    const char *argv[] = {"KEYS", pattern};
    int64_t deadline = now_ms() + RS_WAIT_MS;

    for (;;) {
        rs_cmd(s, out, outlen, 2, argv);
        if (out[0] == '*' && strtol(out + 1, NULL, 10) >= n)
            return;
        if (now_ms() >= deadline)
            fail_msg("redis: %ld key(s) %s not there after %d ms: %s", n, pattern, RS_WAIT_MS,
                     out);
        pause_ms(10);
    }
}
