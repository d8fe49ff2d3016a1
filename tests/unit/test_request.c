/* SPDX-License-Identifier: MIT */
/* test_request.c -- the request state machine driven in-process (tests/unit/harness/):
 * a real gateway on one worker loop, bascule-sim as the scripted upstream, a blocking client.
 * Each scenario asserts the path of states its request took; the last test checks that the
 * scenarios together took every edge of the transition mask (router/req_state.h) and prints
 * the count. */
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

/* ADMIT -> PICK -> ATTEMPT -> REPLY -> DONE: a plain answer. */
static void plain_answer(void **state)
{
    struct rh *h = rh_start(PROVIDER "targets:\n  a: { provider: sim, model: a }\n"
                                     "routes:\n  r: { primary: [a] }\n",
                            NULL);
    struct rh_resp res;
    char line[4096];

    (void)state;
    rh_chat(h, "plain-1", "r", "", NULL, &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, "\"choices\""));
    rh_assert_header(&res, "x-bascule-attempts", "1");
    rh_assert_path("plain-1", "admit pick attempt reply done");
    rh_access_line(h, "plain-1", line, sizeof(line));
    assert_non_null(strstr(line, "\"termination\":\"ok\""));
    rh_resp_free(&res);
    rh_stop(h);
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

/* ATTEMPT -> RELAY -> DONE: a stream relayed whole. */
static void stream_relayed(void **state)
{
    struct rh *h = rh_start(TWO "routes:\n  r: { primary: [a] }\n", NULL);
    struct rh_resp res;

    (void)state;
    rh_chat(h, "stream-1", "r", ",\"stream\":true", NULL, &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, "data: [DONE]"));
    rh_assert_path("stream-1", "admit pick attempt relay done");
    rh_assert_line_has(h, "stream-1", "\"termination\":\"ok\"");
    rh_resp_free(&res);
    rh_stop(h);
}

/* A 429 with retry-after-ms, then success: two attempts, the second after the wait
 * (ATTEMPT -> ADMIT -> PICK -> BACKOFF -> ATTEMPT). */
static void retry_after_honoured(void **state)
{
    struct rh *h = rh_start(
        TWO "routes:\n  r: { primary: [a] }\n",
        "{\"models\":{\"a\":{\"script\":[{\"action\":\"status\",\"status\":429,"
        "\"headers\":{\"retry-after-ms\":400}}]}}}");
    struct rh_resp res;
    char line[8192];

    (void)state;
    rh_chat(h, "ra-1", "r", "", NULL, &res);
    assert_int_equal(res.status, 200);
    rh_assert_header(&res, "x-bascule-attempts", "2");
    rh_assert_path("ra-1", "admit pick attempt admit pick backoff attempt reply done");
    rh_access_line(h, "ra-1", line, sizeof(line));
    /* The timer cannot fire before its time; the key's cooldown grace is 10 ms. */
    if (line_number(line, "backoff") < 380)
        fail_msg("the retry did not wait for retry-after-ms: %s", line);
    assert_int_equal(rh_attempt_lines(h, "ra-1"), 2);
    rh_resp_free(&res);
    rh_stop(h);
}

/* A non-stream answer cut halfway, before anything reached the client: the request fails
 * over to the equivalent target. */
static void cut_before_commit_fails_over(void **state)
{
    struct rh *h = rh_start(TWO "routes:\n  r: { primary: [a], equivalent: [b],"
                                " envelope: { max_same_target_attempts: 1 } }\n",
                            "{\"models\":{\"a\":{\"script\":[{\"action\":\"cut\"}]}}}");
    struct rh_resp res;

    (void)state;
    rh_chat(h, "cut-1", "r", "", NULL, &res);
    assert_int_equal(res.status, 200);
    rh_assert_header(&res, "x-bascule-attempts", "2");
    rh_assert_header(&res, "x-bascule-target", "b");
    rh_assert_path("cut-1", "admit pick attempt admit pick attempt reply done");
    rh_resp_free(&res);
    rh_stop(h);
}

/* A 400 is the request's fault: never retried (PICK -> REPLY_ERROR), the provider's error
 * normalized to the client. */
static void client_error_not_retried(void **state)
{
    struct rh *h = rh_start(TWO "routes:\n  r: { primary: [a], equivalent: [b] }\n",
                            "{\"models\":{\"a\":{\"script\":[{\"action\":\"status\","
                            "\"status\":400,\"message\":\"bad field\"}]}}}");
    struct rh_resp res;

    (void)state;
    rh_chat(h, "e400-1", "r", "", NULL, &res);
    assert_int_equal(res.status, 400);
    assert_true(rh_resp_has(&res, "bad field"));
    rh_assert_path("e400-1", "admit pick attempt admit pick reply_error done");
    assert_int_equal(rh_attempt_lines(h, "e400-1"), 1);
    rh_resp_free(&res);
    rh_stop(h);
}

/* Idempotency (guard.c): a repeat with the same key and body is answered from the record
 * in ADMIT (ADMIT -> DONE), byte for byte, without an attempt. */
static void idempotent_replay(void **state)
{
    struct rh *h = rh_start(TWO "routes:\n  r: { primary: [a] }\n", NULL);
    struct rh_resp one, two;
    char v[16];

    (void)state;
    rh_chat(h, "idem-1", "r", "", "Idempotency-Key: k-1\r\n", &one);
    rh_chat(h, "idem-2", "r", "", "Idempotency-Key: k-1\r\n", &two);
    assert_int_equal(one.status, 200);
    assert_int_equal(two.status, 200);
    assert_false(rh_resp_header(&one, "x-bascule-idempotent-replay", v, sizeof(v)));
    rh_assert_header(&two, "x-bascule-idempotent-replay", "true");
    assert_string_equal(one.body, two.body);
    rh_assert_path("idem-2", "admit done");
    rh_assert_line_has(h, "idem-2", "\"termination\":\"idempotent_replay\"");
    rh_resp_free(&one);
    rh_resp_free(&two);
    rh_stop(h);
}

/* A repeat while the first still runs is refused in ADMIT (ADMIT -> REPLY_ERROR, 409); the
 * first's client then leaves during its attempt (ATTEMPT -> DONE). */
static void idempotency_in_use_then_client_leaves(void **state)
{
    struct rh *h = rh_start(TWO "routes:\n  r: { primary: [a] }\n",
                            "{\"models\":{\"a\":{\"script\":[{\"action\":\"hang\"}]}}}");
    const char *body = "{\"model\":\"r\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
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
    const char *body = "{\"model\":\"r\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
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

/* on_stream_failure: continue with nowhere to go on: the committed stream broke (RELAY ->
 * ADMIT), PICK finds no target left and ends it with the interruption (PICK -> DONE). */
static void continuation_with_nowhere_to_go(void **state)
{
    struct rh *h = rh_start(
        TWO "routes:\n  r:\n    primary: [a]\n"
            "    envelope: { on_stream_failure: continue, max_same_target_attempts: 1 }\n",
        "{\"models\":{\"a\":{\"script\":[{\"action\":\"cut\",\"after_events\":3}]}}}");
    struct rh_resp res;

    (void)state;
    rh_chat(h, "cont-0", "r", ",\"stream\":true", NULL, &res);
    assert_int_equal(res.status, 200);
    assert_false(rh_resp_has(&res, "data: [DONE]"));
    assert_true(rh_resp_has(&res, "\"error\""));
    rh_assert_path("cont-0", "admit pick attempt relay admit pick done");
    rh_resp_free(&res);
    rh_stop(h);
}

/* on_stream_failure: continue: the stream cut on a goes on from b, the client reads one
 * answer that ends with [DONE]. */
static void continuation_goes_on(void **state)
{
    struct rh *h = rh_start(
        TWO "routes:\n  r:\n    primary: [a]\n    equivalent: [b]\n"
            "    envelope: { on_stream_failure: continue }\n",
        "{\"models\":{\"a\":{\"script\":[{\"action\":\"cut\",\"after_events\":3}]}}}");
    struct rh_resp res;

    (void)state;
    rh_chat(h, "cont-1", "r", ",\"stream\":true", NULL, &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, "data: [DONE]"));
    /* the continuation waits the route's backoff, as any retry of the same target */
    rh_assert_path("cont-1", "admit pick attempt relay admit pick backoff attempt relay done");
    rh_resp_free(&res);
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
    const char *body = "{\"model\":\"r\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
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
    const char *body = "{\"model\":\"r\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
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
    const char *body = "{\"model\":\"r\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
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

/* admit.c + limit.c: the client's rpm is spent: 429 in ADMIT, before any target is chosen. */
static void client_rpm_refused_in_admit(void **state)
{
    struct rh *h = rh_start(
        TWO "routes:\n  r: { primary: [a] }\n"
            "clients:\n  c: { key: \"sk-harness-client-0123456789\", routes: [\"*\"], rpm: 1,"
            " rpm_burst: 1 }\n",
        NULL);
    struct rh_resp one, two;

    (void)state;
    rh_chat(h, "rpm-1", "r", "", "Authorization: Bearer sk-harness-client-0123456789\r\n", &one);
    rh_chat(h, "rpm-2", "r", "", "Authorization: Bearer sk-harness-client-0123456789\r\n", &two);
    assert_int_equal(one.status, 200);
    assert_int_equal(two.status, 429);
    rh_assert_header(&two, "x-bascule-limited-by", "client_rpm");
    rh_assert_path("rpm-2", "admit reply_error done");
    rh_resp_free(&one);
    rh_resp_free(&two);
    rh_stop(h);
}

/* A route that allows more attempts than a request holds (ATTEMPT_MAX, 16): after the
 * sixteenth, the wait before the next ends in 503 (BACKOFF -> REPLY_ERROR). */
static void attempts_hard_bound(void **state)
{
    struct rh *h = rh_start(
        PROVIDER "targets:\n  a: { provider: sim, model: a, adaptive: false }\n"
                 "routes:\n  r:\n    primary: [a]\n"
                 "    envelope: { deadline_ms: 60000, max_attempts: 100,"
                 " max_same_target_attempts: 100 }\n",
        "{\"models\":{\"a\":{\"script\":[{\"action\":\"status\",\"status\":429,\"times\":40,"
        "\"headers\":{\"retry-after-ms\":1}}]}}}");
    struct rh_resp res;
    char path[2048];

    (void)state;
    rh_chat(h, "max-1", "r", "", NULL, &res);
    rh_path("max-1", path, sizeof(path));
    assert_int_equal(res.status, 503);
    assert_true(rh_resp_has(&res, "too many attempts"));
    if (!ends_with(path, "attempt admit pick backoff reply_error done"))
        fail_msg("max-1 took %s", path);
    rh_resp_free(&res);
    rh_stop(h);
}

/* An attempt that cannot start (here: a provider whose extra headers make a request head
 * larger than the HTTP client writes, H1_REQ_HEAD_MAX) ends in 503 at once
 * (ATTEMPT -> REPLY_ERROR), nothing sent. */
static void attempt_cannot_start(void **state)
{
    enum { N_HEADERS = 60, VALUE = 20000 };
    size_t cap = N_HEADERS * (VALUE + 64) + 1024, n = 0;
    char *yaml = malloc(cap);
    struct rh *h;
    struct rh_resp res;

    (void)state;
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
    h = rh_start(yaml, NULL);
    free(yaml);
    rh_chat(h, "big-1", "r", "", NULL, &res);
    assert_int_equal(res.status, 503);
    assert_true(rh_resp_has(&res, "could not start an attempt"));
    rh_assert_path("big-1", "admit pick attempt reply_error done");
    rh_resp_free(&res);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(plain_answer),
        RH_TEST(stream_relayed),
        RH_TEST(retry_after_honoured),
        RH_TEST(cut_before_commit_fails_over),
        RH_TEST(client_error_not_retried),
        RH_TEST(idempotent_replay),
        RH_TEST(idempotency_in_use_then_client_leaves),
        RH_TEST(client_leaves_in_backoff),
        RH_TEST(continuation_with_nowhere_to_go),
        RH_TEST(continuation_goes_on),
        RH_TEST(target_full_refused),
        RH_TEST(target_full_queued_then_served),
        RH_TEST(client_leaves_while_queued),
        RH_TEST(client_rpm_refused_in_admit),
        RH_TEST(attempts_hard_bound),
        RH_TEST(attempt_cannot_start),
        RH_TEST(every_edge_taken),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
