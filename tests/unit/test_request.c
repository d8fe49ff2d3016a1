/* SPDX-License-Identifier: MIT */
/* test_request.c -- the request state machine driven in-process (tests/unit/harness/):
 * a real gateway on one worker loop, bascule-sim as the scripted upstream, a blocking client.
 * Each scenario asserts the path of states its request took; the last test checks that the
 * scenarios together took every edge of the transition mask (router/req_state.h) and prints
 * the count.
 *
 * Most scenarios are one or two chat requests in a row: they are rows of a table (a config,
 * an upstream script, the requests and what each answer must show) run by one runner. The
 * scenarios whose point is the order of events (a second request while the first holds
 * something, a client that leaves in a given state) are functions after the table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness/req_harness.h"

#define PROVIDER RH_PROVIDER
#define TWO RH_TWO

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);

    return n >= m && strcmp(s + n - m, tail) == 0;
}

/* The number after "<key>": in an access line (its per-state times, in ms). */
static double line_number(const char *line, const char *key)
{
    char want[64];
    const char *p;

    snprintf(want, sizeof(want), "\"%s\":", key);
    if (!(p = strstr(line, want)))
        fail_msg("no %s in %s", key, line);
    return strtod(p + strlen(want), NULL);
}

/* ---- the table ---- */

/* One chat request on route r and what its answer must show: the status always, any other
 * field only when set (not NULL, not 0). */
struct chat_check {
    const char *id;
    const char *extra_json; /* added to the body (",\"stream\":true"), or NULL */
    const char *headers;    /* extra request headers, or NULL */
    int status;
    const char *has[2];     /* in the body */
    const char *lacks;      /* not in the body */
    struct {
        const char *name, *value; /* value NULL: the header is absent */
    } header[2];
    const char *path;        /* the whole path of states */
    const char *path_end;    /* or only how it ends (a path of many attempts) */
    const char *termination; /* in the access line */
    unsigned attempt_lines;  /* attempt lines written */
    double min_backoff_ms;   /* the access line's time in BACKOFF, at least */
};

struct scenario {
    const char *name;
    const char *yaml;       /* the config (after rh_start's own lines) */
    char *(*make_yaml)(void); /* or a config built at run time (owned by the runner) */
    const char *sim_script; /* the upstream's script, or NULL */
    struct chat_check first; /* a request before, or id NULL */
    struct chat_check chat;
    bool same_body;         /* the answer's body is the first's, byte for byte */
};

/* A provider whose extra headers make a request head larger than the HTTP client writes
 * (H1_REQ_HEAD_MAX). */
static char *oversized_headers_yaml(void)
{
    enum { N_HEADERS = 60, VALUE = 20000 };
    size_t cap = N_HEADERS * (VALUE + 64) + 1024, n = 0;
    char *yaml = malloc(cap);

    assert_non_null(yaml);
    n += (size_t)snprintf(yaml + n, cap - n,
                          "providers:\n  sim:\n    kind: openai_compatible\n"
                          "    base_url: \"{{SIM}}\"\n    keys: [\"sk-h\"]\n"
                          "    health: { probe: none }\n    headers:\n");
    for (int i = 0; i < N_HEADERS; i++) {
        n += (size_t)snprintf(yaml + n, cap - n, "      x-pad-%d: \"", i);
        memset(yaml + n, 'p', VALUE);
        n += VALUE;
        n += (size_t)snprintf(yaml + n, cap - n, "\"\n");
    }
    snprintf(yaml + n, cap - n, "targets:\n  a: { provider: sim, model: a }\n"
                                "routes:\n  r: { primary: [a] }\n");
    return yaml;
}

#define CLIENT_KEY_HEADER "Authorization: Bearer sk-harness-client-0123456789\r\n"

static const struct scenario scenarios[] = {
    {
        /* ADMIT -> PICK -> ATTEMPT -> REPLY -> DONE: a plain answer. */
        .name = "plain_answer",
        .yaml = PROVIDER "targets:\n  a: { provider: sim, model: a }\n"
                         "routes:\n  r: { primary: [a] }\n",
        .chat = {.id = "plain-1", .status = 200, .has = {"\"choices\""},
                 .header = {{"x-bascule-attempts", "1"}},
                 .path = "admit pick attempt reply done", .termination = "ok"},
    },
    {
        /* ATTEMPT -> RELAY -> DONE: a stream relayed whole. */
        .name = "stream_relayed",
        .yaml = TWO "routes:\n  r: { primary: [a] }\n",
        .chat = {.id = "stream-1", .extra_json = ",\"stream\":true", .status = 200,
                 .has = {"data: [DONE]"}, .path = "admit pick attempt relay done",
                 .termination = "ok"},
    },
    {
        /* A 429 with retry-after-ms, then success: two attempts, the second after the wait
         * (ATTEMPT -> ADMIT -> PICK -> BACKOFF -> ATTEMPT). The timer cannot fire before
         * its time; the key's cooldown grace is 10 ms. */
        .name = "retry_after_honoured",
        .yaml = TWO "routes:\n  r: { primary: [a] }\n",
        .sim_script = "{\"models\":{\"a\":{\"script\":[{\"action\":\"status\",\"status\":429,"
                      "\"headers\":{\"retry-after-ms\":400}}]}}}",
        .chat = {.id = "ra-1", .status = 200, .header = {{"x-bascule-attempts", "2"}},
                 .path = "admit pick attempt admit pick backoff attempt reply done",
                 .min_backoff_ms = 380, .attempt_lines = 2},
    },
    {
        /* A non-stream answer cut halfway, before anything reached the client: the request
         * fails over to the equivalent target. */
        .name = "cut_before_commit_fails_over",
        .yaml = TWO "routes:\n  r: { primary: [a], equivalent: [b],"
                    " envelope: { max_same_target_attempts: 1 } }\n",
        .sim_script = "{\"models\":{\"a\":{\"script\":[{\"action\":\"cut\"}]}}}",
        .chat = {.id = "cut-1", .status = 200,
                 .header = {{"x-bascule-attempts", "2"}, {"x-bascule-target", "b"}},
                 .path = "admit pick attempt admit pick attempt reply done"},
    },
    {
        /* A 400 is the request's fault: never retried (PICK -> REPLY_ERROR), the provider's
         * error normalized to the client. */
        .name = "client_error_not_retried",
        .yaml = TWO "routes:\n  r: { primary: [a], equivalent: [b] }\n",
        .sim_script = "{\"models\":{\"a\":{\"script\":[{\"action\":\"status\","
                      "\"status\":400,\"message\":\"bad field\"}]}}}",
        .chat = {.id = "e400-1", .status = 400, .has = {"bad field"},
                 .path = "admit pick attempt admit pick reply_error done", .attempt_lines = 1},
    },
    {
        /* Idempotency (guard.c): a repeat with the same key and body is answered from the
         * record in ADMIT (ADMIT -> DONE), byte for byte, without an attempt. */
        .name = "idempotent_replay",
        .yaml = TWO "routes:\n  r: { primary: [a] }\n",
        .first = {.id = "idem-1", .headers = "Idempotency-Key: k-1\r\n", .status = 200,
                  .header = {{"x-bascule-idempotent-replay", NULL}}},
        .chat = {.id = "idem-2", .headers = "Idempotency-Key: k-1\r\n", .status = 200,
                 .header = {{"x-bascule-idempotent-replay", "true"}}, .path = "admit done",
                 .termination = "idempotent_replay"},
        .same_body = true,
    },
    {
        /* on_stream_failure: continue with nowhere to go on: the committed stream broke
         * (RELAY -> ADMIT), PICK finds no target left and ends it with the interruption
         * (PICK -> DONE). */
        .name = "continuation_with_nowhere_to_go",
        .yaml = TWO "routes:\n  r:\n    primary: [a]\n"
                    "    envelope: { on_stream_failure: continue, max_same_target_attempts: 1 }\n",
        .sim_script = "{\"models\":{\"a\":{\"script\":[{\"action\":\"cut\",\"after_events\":3}]}}}",
        .chat = {.id = "cont-0", .extra_json = ",\"stream\":true", .status = 200,
                 .lacks = "data: [DONE]", .has = {"\"error\""},
                 .path = "admit pick attempt relay admit pick done"},
    },
    {
        /* on_stream_failure: continue: the stream cut on a goes on from b, the client reads
         * one answer that ends with [DONE]; the continuation waits the route's backoff, as
         * any retry of the same target. */
        .name = "continuation_goes_on",
        .yaml = TWO "routes:\n  r:\n    primary: [a]\n    equivalent: [b]\n"
                    "    envelope: { on_stream_failure: continue }\n",
        .sim_script = "{\"models\":{\"a\":{\"script\":[{\"action\":\"cut\",\"after_events\":3}]}}}",
        .chat = {.id = "cont-1", .extra_json = ",\"stream\":true", .status = 200,
                 .has = {"data: [DONE]"},
                 .path = "admit pick attempt relay admit pick backoff attempt relay done"},
    },
    {
        /* admit.c + limit.c: the client's rpm is spent: 429 in ADMIT, before any target is
         * chosen. */
        .name = "client_rpm_refused_in_admit",
        .yaml = TWO "routes:\n  r: { primary: [a] }\n"
                    "clients:\n  c: { key: \"sk-harness-client-0123456789\", routes: [\"*\"],"
                    " rpm: 1, rpm_burst: 1 }\n",
        .first = {.id = "rpm-1", .headers = CLIENT_KEY_HEADER, .status = 200},
        .chat = {.id = "rpm-2", .headers = CLIENT_KEY_HEADER, .status = 429,
                 .header = {{"x-bascule-limited-by", "client_rpm"}},
                 .path = "admit reply_error done"},
    },
    {
        /* A route that allows more attempts than a request holds (ATTEMPT_MAX, 16): after
         * the sixteenth, the wait before the next ends in 503 (BACKOFF -> REPLY_ERROR). */
        .name = "attempts_hard_bound",
        .yaml = PROVIDER "targets:\n  a: { provider: sim, model: a, adaptive: false }\n"
                         "routes:\n  r:\n    primary: [a]\n"
                         "    envelope: { deadline_ms: 60000, max_attempts: 100,"
                         " max_same_target_attempts: 100 }\n",
        .sim_script = "{\"models\":{\"a\":{\"script\":[{\"action\":\"status\",\"status\":429,"
                      "\"times\":40,\"headers\":{\"retry-after-ms\":1}}]}}}",
        .chat = {.id = "max-1", .status = 503, .has = {"too many attempts"},
                 .path_end = "attempt admit pick backoff reply_error done"},
    },
    {
        /* An attempt that cannot start (a request head larger than the HTTP client writes)
         * ends in 503 at once (ATTEMPT -> REPLY_ERROR), nothing sent. */
        .name = "attempt_cannot_start",
        .make_yaml = oversized_headers_yaml,
        .chat = {.id = "big-1", .status = 503, .has = {"could not start an attempt"},
                 .path = "admit pick attempt reply_error done"},
    },
};

/* Sends <c>'s request and checks every field of <c> it sets; the answer goes to <res>. */
static void chat_and_check(struct rh *h, const struct chat_check *c, struct rh_resp *res)
{
    char path[2048], v[512], line[8192];

    rh_chat(h, c->id, "r", c->extra_json ? c->extra_json : "", c->headers, res);
    assert_int_equal(res->status, c->status);
    for (size_t i = 0; i < 2 && c->has[i]; i++)
        if (!rh_resp_has(res, c->has[i]))
            fail_msg("%s: no %s in the body: %.400s", c->id, c->has[i], res->body);
    if (c->lacks && rh_resp_has(res, c->lacks))
        fail_msg("%s: %s in the body: %.400s", c->id, c->lacks, res->body);
    for (size_t i = 0; i < 2 && c->header[i].name; i++) {
        if (c->header[i].value)
            rh_assert_header(res, c->header[i].name, c->header[i].value);
        else if (rh_resp_header(res, c->header[i].name, v, sizeof(v)))
            fail_msg("%s: unexpected %s: %s", c->id, c->header[i].name, v);
    }
    if (c->path)
        rh_assert_path(c->id, c->path);
    rh_path(c->id, path, sizeof(path));
    if (c->path_end && !ends_with(path, c->path_end))
        fail_msg("%s took %s", c->id, path);
    if (c->termination || c->min_backoff_ms > 0)
        rh_access_line(h, c->id, line, sizeof(line));
    if (c->termination) {
        char want[128];

        snprintf(want, sizeof(want), "\"termination\":\"%s\"", c->termination);
        if (!strstr(line, want))
            fail_msg("the access line of %s lacks %s: %s", c->id, want, line);
    }
    if (c->min_backoff_ms > 0 && line_number(line, "backoff") < c->min_backoff_ms)
        fail_msg("the retry did not wait for retry-after-ms: %s", line);
    if (c->attempt_lines)
        assert_int_equal(rh_attempt_lines(h, c->id), c->attempt_lines);
}

/* The runner: a harness on the scenario's config and script, its requests, their checks. */
static void run_scenario(void **state)
{
    const struct scenario *sc = *state;
    char *yaml = sc->make_yaml ? sc->make_yaml() : NULL;
    struct rh *h = rh_start(yaml ? yaml : sc->yaml, sc->sim_script);
    struct rh_resp first = {0}, res;

    free(yaml);
    if (sc->first.id)
        chat_and_check(h, &sc->first, &first);
    chat_and_check(h, &sc->chat, &res);
    if (sc->same_body)
        assert_string_equal(first.body, res.body);
    rh_resp_free(&first);
    rh_resp_free(&res);
    rh_stop(h);
}

/* ---- scenarios that choreograph two requests or a client that leaves ---- */

/* A repeat while the first still runs is refused in ADMIT (ADMIT -> REPLY_ERROR, 409); the
 * first's client then leaves during its attempt (ATTEMPT -> DONE). */
static void idempotency_in_use_then_client_leaves(void **state)
{
    struct rh *h = rh_start(TWO "routes:\n  r: { primary: [a] }\n",
                            "{\"models\":{\"a\":{\"script\":[{\"action\":\"hang\"}]}}}");
    const char *body = RH_CHAT("r");
    struct rh_resp two;
    int fd;

    (void)state;
    fd = rh_send(h, "/v1/chat/completions", "inuse-1", "Idempotency-Key: k-2\r\n", body);
    rh_wait_state("inuse-1", REQ_ST_ATTEMPT);
    rh_post(h, "/v1/chat/completions", "inuse-2", "Idempotency-Key: k-2\r\n", body, &two);
    assert_int_equal(two.status, 409);
    assert_true(rh_resp_has(&two, "idempotency_key_in_use"));
    rh_assert_path("inuse-2", "admit reply_error done");
    close(fd);
    rh_wait_state("inuse-1", REQ_ST_DONE);
    rh_assert_path("inuse-1", "admit pick attempt done");
    rh_assert_line_has(h, "inuse-1", "\"termination\":\"client_abort\"");
    rh_resp_free(&two);
    rh_stop(h);
}

/* The client leaves while the request waits out a Retry-After (BACKOFF -> DONE). */
static void client_leaves_in_backoff(void **state)
{
    struct rh *h = rh_start(
        TWO "routes:\n  r: { primary: [a],"
            " envelope: { deadline_ms: 120000, max_added_latency_ms: 0 } }\n",
        "{\"models\":{\"a\":{\"script\":[{\"action\":\"status\",\"status\":429,"
        "\"headers\":{\"retry-after-ms\":20000}}]}}}");
    const char *body = RH_CHAT("r");
    int fd;

    (void)state;
    fd = rh_send(h, "/v1/chat/completions", "bo-1", NULL, body);
    rh_wait_state("bo-1", REQ_ST_BACKOFF);
    close(fd);
    rh_wait_state("bo-1", REQ_ST_DONE);
    rh_assert_path("bo-1", "admit pick attempt admit pick backoff done");
    rh_assert_line_has(h, "bo-1", "\"termination\":\"client_abort\"");
    rh_stop(h);
}

#define ONE_SLOT(queue)                                                                   \
    PROVIDER "targets:\n  a: { provider: sim, model: a, max_concurrency: 1, queue_ms: " queue \
             ", adaptive: false }\n"                                                      \
             "routes:\n  r: { primary: [a] }\n"

/* limit.c: the target has no room and no queue: 429 rate_limited, said by which limit,
 * nothing sent upstream (PICK -> REPLY_ERROR). */
static void target_full_refused(void **state)
{
    struct rh *h = rh_start(ONE_SLOT("0"),
                            "{\"models\":{\"a\":{\"script\":[{\"action\":\"hang\"}]}}}");
    const char *body = RH_CHAT("r");
    struct rh_resp two;
    int fd;

    (void)state;
    fd = rh_send(h, "/v1/chat/completions", "full-1", NULL, body);
    rh_wait_state("full-1", REQ_ST_ATTEMPT);
    rh_post(h, "/v1/chat/completions", "full-2", NULL, body, &two);
    assert_int_equal(two.status, 429);
    rh_assert_header(&two, "x-bascule-limited-by", "target_concurrency");
    rh_assert_path("full-2", "admit pick reply_error done");
    assert_int_equal(rh_attempt_lines(h, "full-2"), 0);
    close(fd);
    rh_wait_state("full-1", REQ_ST_DONE);
    rh_resp_free(&two);
    rh_stop(h);
}

/* limit.c: with queue_ms the second request waits in PICK for the room the first gives
 * back, and is woken by its release (WORKER_CMD_CAPACITY). */
static void target_full_queued_then_served(void **state)
{
    struct rh *h = rh_start(ONE_SLOT("15000"),
                            "{\"models\":{\"a\":{\"script\":[{\"action\":\"delay\","
                            "\"delay_ms\":300}]}}}");
    const char *body = RH_CHAT("r");
    struct rh_resp one, two;
    int fd1, fd2;

    (void)state;
    fd1 = rh_send(h, "/v1/chat/completions", "q-1", NULL, body);
    rh_wait_state("q-1", REQ_ST_ATTEMPT);
    fd2 = rh_send(h, "/v1/chat/completions", "q-2", NULL, body);
    rh_wait_state("q-2", REQ_ST_PICK);
    rh_recv(fd1, &one);
    rh_recv(fd2, &two);
    assert_int_equal(one.status, 200);
    assert_int_equal(two.status, 200);
    rh_wait_state("q-2", REQ_ST_DONE);
    rh_assert_path("q-2", "admit pick attempt reply done");
    rh_resp_free(&one);
    rh_resp_free(&two);
    rh_stop(h);
}

/* The client of a request queued for room leaves (PICK -> DONE). */
static void client_leaves_while_queued(void **state)
{
    struct rh *h = rh_start(ONE_SLOT("60000"),
                            "{\"models\":{\"a\":{\"script\":[{\"action\":\"hang\"}]}}}");
    const char *body = RH_CHAT("r");
    int fd1, fd2;

    (void)state;
    fd1 = rh_send(h, "/v1/chat/completions", "ql-1", NULL, body);
    rh_wait_state("ql-1", REQ_ST_ATTEMPT);
    fd2 = rh_send(h, "/v1/chat/completions", "ql-2", NULL, body);
    rh_wait_state("ql-2", REQ_ST_PICK);
    close(fd2);
    rh_wait_state("ql-2", REQ_ST_DONE);
    rh_assert_path("ql-2", "admit pick done");
    close(fd1);
    rh_wait_state("ql-1", REQ_ST_DONE);
    rh_stop(h);
}

/* Every edge of the transition mask was taken by some scenario above. */
static void every_edge_taken(void **state)
{
    unsigned total = 0, taken = 0;

    (void)state;
    for (int from = 0; from < REQ_ST_COUNT; from++)
        for (int to = 0; to < REQ_ST_COUNT; to++) {
            if (!req_state_may_go(from, to))
                continue;
            total++;
            if (rh_edge_taken(from, to))
                taken++;
            else
                printf("edge not taken: %s -> %s\n", req_state_name(from), req_state_name(to));
        }
    printf("transition-mask edges covered: %u/%u\n", taken, total);
    assert_int_equal(taken, total);
}

#define N_TABLE (sizeof(scenarios) / sizeof(scenarios[0]))

int main(void)
{
    static const struct CMUnitTest choreographed[] = {
        RH_TEST(idempotency_in_use_then_client_leaves),
        RH_TEST(client_leaves_in_backoff),
        RH_TEST(target_full_refused),
        RH_TEST(target_full_queued_then_served),
        RH_TEST(client_leaves_while_queued),
        RH_TEST(every_edge_taken), /* last: after every scenario */
    };
    struct CMUnitTest tests[N_TABLE + sizeof(choreographed) / sizeof(choreographed[0])];
    size_t n = 0;

    for (size_t i = 0; i < N_TABLE; i++)
        tests[n++] = (struct CMUnitTest){.name = scenarios[i].name,
                                         .test_func = run_scenario,
                                         .teardown_func = rh_teardown,
                                         .initial_state = (void *)&scenarios[i]};
    for (size_t i = 0; i < sizeof(choreographed) / sizeof(choreographed[0]); i++)
        tests[n++] = choreographed[i];
    return cmocka_run_group_tests(tests, NULL, NULL);
}
