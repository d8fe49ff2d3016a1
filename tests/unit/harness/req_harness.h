/* SPDX-License-Identifier: MIT */
/* req_harness.h -- an in-process request harness for unit tests: a gateway built from a
 * YAML string (as main.c builds one), one worker whose libuv loop runs on its own thread
 * with the real server and api_handle, and bascule-sim's application (sim/app.h) on a
 * second loop as the scripted upstream (status, headers, Retry-After, cuts, stalls, hangs:
 * docs/internals/sim.md §4). The test thread is the client: blocking sockets on
 * 127.0.0.1 with a receive bound, so a hang fails the test instead of holding it.
 *
 * Every state transition of every request is recorded (the req__goto hook, a unit-build
 * seam in router/request.c): a test waits for a request to reach a state (an event, not a
 * sleep) and reads the path it took; the edges of the transition mask taken by any test of
 * the process are kept for a coverage check. The access and attempt lines the worker writes
 * to stdout are captured in a file while the harness runs (rh_access_line). */
#ifndef BSC_TESTS_REQ_HARNESS_H
#define BSC_TESTS_REQ_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "router/req_state.h"

struct rh; /* one gateway, one worker, one sim */

/* Config pieces: one provider on the sim, and targets a and b calling sim models a and b. */
#define RH_PROVIDER                                                                       \
    "providers:\n"                                                                        \
    "  sim: { kind: openai_compatible, base_url: \"{{SIM}}\", keys: [\"sk-h\"],"          \
    " health: { probe: none } }\n"
#define RH_TWO                                                                            \
    RH_PROVIDER "targets:\n  a: { provider: sim, model: a }\n  b: { provider: sim, model: b }\n"
/* A chat body for route <route> (a literal). */
#define RH_CHAT(route) "{\"model\":\"" route "\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"


/* Bound on every wait of the harness: far above any scripted delay, so only a real hang
 * reaches it. */
#define RH_WAIT_MS 20000

/* Starts the sim with <sim_script> (the JSON of `--script`, NULL for none) and a gateway
 * whose config is "listen, workers: 1, log" followed by <yaml>, in which every "{{SIM}}"
 * becomes the sim's base URL (http://127.0.0.1:PORT/v1) and every "{{SIMROOT}}" its root
 * (http://127.0.0.1:PORT: the Anthropic dialect is under /anthropic/v1). Fails the test on
 * any error. */
struct rh *rh_start(const char *yaml, const char *sim_script);
/* Closes every connection, stops both loops, frees everything. */
void rh_stop(struct rh *h);
/* A cmocka teardown: stops the harness a failed test left running (a failure jumps past
 * its rh_stop), so the next test starts clean. */
int rh_teardown(void **state);
/* A test with that teardown. */
#define RH_TEST(f) cmocka_unit_test_teardown(f, rh_teardown)

/* A response as read from the socket until the server closed it (Connection: close). */
struct rh_resp {
    int status;     /* 0: no status line came */
    char *raw;      /* owned: head and body as received (the body still chunked) */
    size_t len;
    const char *body; /* into <raw>, after the head */
};
void rh_resp_free(struct rh_resp *r);
/* The value of response header <name> (case-insensitive) copied into <out>; false when
 * absent. */
bool rh_resp_header(const struct rh_resp *r, const char *name, char *out, size_t outlen);
/* Whether the body contains <s>. */
bool rh_resp_has(const struct rh_resp *r, const char *s);

/* Sends "POST <path>" with request id <id>, <extra_headers> ("Name: v\r\n" lines, or NULL)
 * and <body>, and returns the connected socket (Connection: close). */
int rh_send(struct rh *h, const char *path, const char *id, const char *extra_headers,
            const char *body);
/* Reads the response from <fd> until the server closes it, then closes <fd>. */
void rh_recv(int fd, struct rh_resp *out);
/* rh_send then rh_recv, then waits for the request to reach DONE. */
void rh_post(struct rh *h, const char *path, const char *id, const char *extra_headers,
             const char *body, struct rh_resp *out);
/* A chat completion on <route> ("hi"); <extra_json> is added to the body's object
 * (",\"stream\":true", or ""). */
void rh_chat(struct rh *h, const char *id, const char *route, const char *extra_json,
             const char *extra_headers, struct rh_resp *out);
/* A GET on <path> (admin and status surfaces), with <extra_headers> or NULL. */
void rh_get(struct rh *h, const char *path, const char *extra_headers, struct rh_resp *out);
/* Any <method> on <path>, with a JSON <body> or NULL; no request id, no wait for a state
 * (surfaces that do not run the request machine). */
void rh_call(struct rh *h, const char *method, const char *path, const char *extra_headers,
             const char *body, struct rh_resp *out);

/* A GET on the sim's control API (/_sim/requests: what the upstream saw). */
void rh_sim_get(struct rh *h, const char *path, struct rh_resp *out);

/* Waits until request <id> has entered <s>; fails the test after RH_WAIT_MS. */
void rh_wait_state(const char *id, enum req_state s);
/* The states request <id> went through, space-separated ("admit pick attempt reply
 * done"), into <out>; "" when it was never seen. */
void rh_path(const char *id, char *out, size_t outlen);
/* Edges of the transition mask taken by any request since the process started. */
bool rh_edge_taken(enum req_state from, enum req_state to);

/* Assertions: the path of <id> is <want>; header <name> of <r> is <want>; the access line
 * of <id> contains <want>. */
void rh_assert_path(const char *id, const char *want);
void rh_assert_header(const struct rh_resp *r, const char *name, const char *want);
void rh_assert_line_has(struct rh *h, const char *id, const char *want);

/* The access line of request <id> (waits for it), copied into <out>. */
void rh_access_line(struct rh *h, const char *id, char *out, size_t outlen);
/* The first captured log line containing <want>, into <out>; false when none yet. */
bool rh_find_line(struct rh *h, const char *want, char *out, size_t outlen);
/* The number of attempt lines of request <id> written so far. */
unsigned rh_attempt_lines(struct rh *h, const char *id);

/* The gateway's worker (for tests that call router or api functions on its state). Only
 * touch what it owns from the test thread while no request runs. */
struct worker *rh_worker(struct rh *h);
uint16_t rh_port(const struct rh *h);

#endif
