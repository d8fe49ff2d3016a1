/* SPDX-License-Identifier: MIT */
/* redis_server.h -- a private redis-server for unit tests: started on a free port of
 * 127.0.0.1 with no persistence and its own temporary directory, ready once it answers
 * PING, stopped by its PID. A machine without redis-server fails the test (CI installs
 * it): a test that needs Redis never skips. A raw RESP client reads what the gateway
 * wrote (rs_cmd). */
#ifndef BSC_TESTS_REDIS_SERVER_H
#define BSC_TESTS_REDIS_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct rs {
    pid_t pid;      /* 0 once stopped */
    uint16_t port;
    bool paused;    /* SIGSTOP sent, no SIGCONT yet */
    char dir[64];   /* its --dir, removed by rs_stop */
};

/* Bound on the wait for PING and on the wait for the process to end. */
#define RS_WAIT_MS 10000

/* Starts redis-server; fails the test (cmocka) when it cannot, or when it does not answer
 * PING within RS_WAIT_MS. */
void rs_start(struct rs *s);
/* SIGCONT if paused, SIGTERM, then SIGKILL after RS_WAIT_MS; waits for it; removes its
 * directory. Harmless on a stopped server. */
void rs_stop(struct rs *s);
/* SIGSTOP (returns once the server reported the stop) / SIGCONT: a server that accepts
 * connections but never answers. */
void rs_pause(struct rs *s);
void rs_resume(struct rs *s);
/* "redis://127.0.0.1:PORT" into <out>. */
void rs_url(const struct rs *s, char *out, size_t outlen);

/* Sends one command (<argc> arguments) in RESP on a fresh connection and returns the
 * reply's first line, and for a bulk string its bytes, in <out> (NUL-terminated):
 * "+PONG", ":3", "$<bytes>" (the bytes follow the '$'), "$-1" for nil, "*N" then one
 * line per element ("*2\n$a\n$b") for an array of bulk strings. Fails the test on a
 * connection error or after RS_WAIT_MS. */
void rs_cmd(const struct rs *s, char *out, size_t outlen, int argc, const char *const *argv);

/* The config lines of a gateway on this server: "store: {kind: redis, url, timeout_ms:
 * 2000}" and "cache: {store: redis}", into <out>. */
void rs_gateway_yaml(const struct rs *s, char *out, size_t outlen);
/* Waits until KEYS <pattern> lists at least <n> keys (the gateway writes its cache after
 * the answer went out); returns the reply of the last KEYS (rs_cmd's form) in <out>. Fails
 * the test after RS_WAIT_MS. */
void rs_wait_keys(const struct rs *s, const char *pattern, long n, char *out, size_t outlen);

#endif
