/* SPDX-License-Identifier: MIT */
/* test_access_line.c -- the exact bytes of router/access_log.c's access and attempt lines
 * (docs/access-log.md is the contract): every field, its order, JSON escaping, numbers at
 * their edges, nulls, the printf fallback of cost_usd. The expected lines were written by
 * the formatter before it was rewritten to build a line with one cursor, so any change to
 * the output fails here. ts_ms (the wall clock) is masked as "T". */
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

#include "config/config.h"
#include "router/access_log.h"
#include "router/req_state.h"

/* ---- capture: stdout goes to a temporary file for the time of one write ---------------- */

static char captured[65536];

static const char *capture_begin(int *saved)
{
    FILE *f = tmpfile();

    assert_non_null(f);
    fflush(stdout);
    *saved = dup(STDOUT_FILENO);
    assert_true(*saved >= 0);
    assert_true(dup2(fileno(f), STDOUT_FILENO) >= 0);
    return (const char *)f;
}

/* Reads back what was written, masks the digits of ts_ms and strips the newline. */
static const char *capture_end(int saved, const char *handle)
{
    FILE *f = (FILE *)(void *)handle;
    size_t n;
    char *ts, *w;

    assert_true(dup2(saved, STDOUT_FILENO) >= 0);
    close(saved);
    rewind(f);
    n = fread(captured, 1, sizeof(captured) - 1, f);
    fclose(f);
    captured[n] = '\0';
    assert_true(n > 0 && captured[n - 1] == '\n');
    captured[n - 1] = '\0';
    ts = strstr(captured, "\"ts_ms\":");
    assert_non_null(ts);
    ts += strlen("\"ts_ms\":");
    w = ts;
    while (*w >= '0' && *w <= '9')
        w++;
    assert_true(w > ts);
    *ts = 'T';
    memmove(ts + 1, w, strlen(w) + 1);
    return captured;
}

static const char *access_line(const struct access_entry *e)
{
    int saved;
    const char *h = capture_begin(&saved);

    access_log_write(e);
    return capture_end(saved, h);
}

static const char *attempt_line(const struct access_attempt_line *l)
{
    int saved;
    const char *h = capture_begin(&saved);

    access_log_write_attempt(l);
    return capture_end(saved, h);
}

/* assert_string_equal, with the first difference shown (cmocka cuts long strings). */
static void assert_line(const char *got, const char *want)
{
    size_t i = 0;

    while (got[i] && got[i] == want[i])
        i++;
    if (got[i] != want[i])
        print_error("lines differ at byte %zu: got \"%.60s\", want \"%.60s\"\n", i, got + i,
                    want + i);
    assert_string_equal(got, want);
}

/* ---- fixtures ---------------------------------------------------------------------------- */

/* As the config leaves them (cfg_target.id_len, id_plain): target_a copied as it is,
 * target_odd escaped; target_unset as made outside the config, measured when written. */
static struct cfg_target target_a = {.id = (char *)"gpt-4.1@openai-us", .id_len = 17,
                                     .id_plain = true};
static struct cfg_target target_odd = {.id = (char *)"we\"ird\\t\x01\n\xc3\xa9", .id_len = 12,
                                       .id_plain = false};
static struct cfg_target target_unset = {.id = (char *)"gpt-4.1@openai-us"};

static void attempts_fill(struct attempt a[3])
{
    memset(a, 0, 3 * sizeof(*a));
    a[0] = (struct attempt){.target = &target_a, .workflow = ATTEMPT_WF_PRIMARY,
                            .outcome = ATTEMPT_FAILED, .kind = "upstream_5xx", .status = 500,
                            .start_us = 1000, .end_us = 13345};
    a[1] = (struct attempt){.target = NULL, .workflow = ATTEMPT_WF_RETRY,
                            .outcome = ATTEMPT_FAILED, .kind = NULL, .status = -1,
                            .start_us = 20000, .end_us = 19999};
    a[2] = (struct attempt){.target = &target_odd, .workflow = ATTEMPT_WF_CROSS_MODEL_FALLBACK,
                            .outcome = ATTEMPT_OK, .kind = "ok", .status = 200,
                            .start_us = 0, .end_us = UINT64_MAX};
}

static void times_fill(struct req_times *t)
{
    memset(t, 0, sizeof(*t));
    t->visited = (1u << REQ_ST_ADMIT) | (1u << REQ_ST_PICK) | (1u << REQ_ST_ATTEMPT) |
                 (1u << REQ_ST_DONE);
    t->spent_us[REQ_ST_ADMIT] = 0;
    t->spent_us[REQ_ST_PICK] = 999;
    t->spent_us[REQ_ST_ATTEMPT] = 12345678901ull;
    t->spent_us[REQ_ST_DONE] = 77;
}

/* ---- the access line -------------------------------------------------------------------- */

static void access_every_field(void **state)
{
    struct attempt a[3];
    struct req_times t;
    struct access_entry e = {
        .request_id = "req-\"1\"",
        .method = "GET",
        .path = "/v1/x?q=\\",
        .route = "ro\tute",
        .target = "gpt-4.1@openai-us",
        .client = "team\x1f" "a",
        .selected_by = "sel#2",
        .status = 503,
        .stream = true,
        .bytes_in = 0,
        .bytes_out = UINT64_MAX,
        .duration_us = 1,
        .ttfb_us = 1000,
        .attempts = a,
        .n_attempts = 3,
        .termination = "upstream_interrupted",
        .input_tokens = 9223372036854775807ll,
        .output_tokens = -1,
        .cached_tokens = 12,
        .cache_write_tokens = 3,
        .reasoning_tokens = 1000000,
        .cost_usd = 0.123456789,
        .cost_estimated = true,
        .states = &t,
        .detail = "disable target t1",
        .limited_by = "client_rpm",
        .cache = "miss",
        .queued_ms = 0,
        .continued_target = "b\"",
        .continued_how = "prefill",
        .continued_bytes = 18446744073709551615ull,
    };

    (void)state;
    attempts_fill(a);
    times_fill(&t);
    assert_string_equal(
        access_line(&e),
        "{\"type\":\"access\",\"ts_ms\":T,\"request_id\":\"req-\\\"1\\\"\",\"method\":\"GET\","
        "\"path\":\"/v1/x?q=\\\\\",\"route\":\"ro\\tute\",\"client\":\"team\\u001fa\","
        "\"selected_by\":\"sel#2\",\"target\":\"gpt-4.1@openai-us\",\"status\":503,"
        "\"stream\":true,\"bytes_in\":0,\"bytes_out\":18446744073709551615,"
        "\"duration_ms\":0.001,\"ttfb_ms\":1.000,\"attempts\":3,"
        "\"termination\":\"upstream_interrupted\",\"detail\":\"disable target t1\","
        "\"limited_by\":\"client_rpm\",\"cache\":\"miss\",\"queued_ms\":0,"
        "\"continued\":{\"target\":\"b\\\"\",\"how\":\"prefill\",\"bytes\":18446744073709551615},"
        "\"input_tokens\":9223372036854775807,\"output_tokens\":-1,"
        "\"cached_input_tokens\":12,\"cache_write_tokens\":3,\"reasoning_tokens\":1000000,"
        "\"cost_usd\":0.12345679,\"cost_estimated\":true,"
        "\"attempt_log\":[{\"target\":\"gpt-4.1@openai-us\",\"workflow\":\"primary\","
        "\"outcome\":\"failed\",\"status\":500,\"kind\":\"upstream_5xx\",\"ms\":12.345},"
        "{\"target\":\"-\",\"workflow\":\"retry\",\"outcome\":\"failed\",\"status\":-1,"
        "\"kind\":null,\"ms\":0.000},"
        "{\"target\":\"we\\\"ird\\\\t\\u0001\\n\xc3\xa9\",\"workflow\":\"cross_model_fallback\","
        "\"outcome\":\"ok\",\"status\":200,\"kind\":\"ok\",\"ms\":18446744073709551.615}],"
        "\"states\":{\"admit\":0.000,\"pick\":0.999,\"attempt\":12345678.901}}");
}

static void access_least(void **state)
{
    struct access_entry e = {
        .request_id = "r",
        .status = 200,
        .input_tokens = -1,
        .output_tokens = -1,
        .queued_ms = -1,
    };

    (void)state;
    assert_string_equal(access_line(&e),
                        "{\"type\":\"access\",\"ts_ms\":T,\"request_id\":\"r\",\"method\":\"POST\","
                        "\"path\":\"/v1/chat/completions\",\"route\":null,\"target\":null,"
                        "\"status\":200,\"stream\":false,\"bytes_in\":0,\"bytes_out\":0,"
                        "\"duration_ms\":0.000,\"ttfb_ms\":0.000,\"attempts\":0,"
                        "\"termination\":null}");
}

/* Tokens known but no parts; cost_usd at each edge of the fast path (text NULL: as
 * printf's "%.8f" writes it, which the formatter falls back to); queued without a limit. */
static void access_cost_edges(void **state)
{
    static const struct {
        double usd;
        const char *text;
    } costs[] = {
        {0, "0.00000000"},
        {0.000000005, "0.00000001"},
        {0.000000004999, "0.00000000"},
        {9999999999.999, "9999999999.99900032"},
        {12345.678901234, "12345.67890123"},
        {1e10, NULL},
        {-0.5, NULL},
        {1e300, NULL},
        {-0.0, "0.00000000"},
    };
    struct access_entry e = {
        .request_id = "q",
        .route = "r",
        .target = "t",
        .status = 429,
        .input_tokens = 0,
        .output_tokens = 7,
        .queued_ms = 250,
        .termination = "ok",
        .n_attempts = 0,
    };
    char want[1024], num[512];

    (void)state;
    for (size_t i = 0; i < sizeof(costs) / sizeof(costs[0]); i++) {
        e.cost_usd = costs[i].usd;
        snprintf(num, sizeof(num), "%.8f", costs[i].usd);
        snprintf(want, sizeof(want),
                 "{\"type\":\"access\",\"ts_ms\":T,\"request_id\":\"q\",\"method\":\"POST\","
                 "\"path\":\"/v1/chat/completions\",\"route\":\"r\",\"target\":\"t\","
                 "\"status\":429,\"stream\":false,\"bytes_in\":0,\"bytes_out\":0,"
                 "\"duration_ms\":0.000,\"ttfb_ms\":0.000,\"attempts\":0,"
                 "\"termination\":\"ok\",\"queued_ms\":250,\"input_tokens\":0,"
                 "\"output_tokens\":7,\"cost_usd\":%s}",
                 costs[i].text ? costs[i].text : num);
        assert_line(access_line(&e), want);
    }
}

static void access_long_id(void **state)
{
    char id[129], want[2048];
    struct access_entry e = {.status = 200, .input_tokens = -1, .output_tokens = -1};
    size_t n;

    (void)state;
    for (size_t i = 0; i < 128; i++)
        id[i] = (char)(i % 32 == 0 ? '"' : i % 32 == 1 ? '\x02' : 'a' + (char)(i % 26));
    id[128] = '\0';
    e.request_id = id;
    n = (size_t)snprintf(want, sizeof(want), "{\"type\":\"access\",\"ts_ms\":T,\"request_id\":\"");
    for (size_t i = 0; i < 128; i++)
        n += (size_t)snprintf(want + n, sizeof(want) - n, "%s",
                              id[i] == '"' ? "\\\"" : id[i] == '\x02' ? "\\u0002" : (char[2]){id[i], 0});
    snprintf(want + n, sizeof(want) - n, "%s",
             "\",\"method\":\"POST\",\"path\":\"/v1/chat/completions\",\"route\":null,"
             "\"target\":null,\"status\":200,\"stream\":false,\"bytes_in\":0,"
             "\"bytes_out\":0,\"duration_ms\":0.000,\"ttfb_ms\":0.000,\"attempts\":0,"
             "\"termination\":null}");
    assert_line(access_line(&e), want);
}

/* A line longer than the room made at its start: the buffer grows in the middle of it
 * (from nothing: the thread's buffer is freed first) and no byte is lost or doubled. */
static void access_grows_mid_line(void **state)
{
    static char detail[3001], want[8192];
    struct access_entry e = {.request_id = "g", .status = 200, .input_tokens = -1,
                             .output_tokens = -1};
    size_t n;

    (void)state;
    for (size_t i = 0; i < 3000; i++)
        detail[i] = i % 100 == 99 ? '\n' : (char)('a' + (char)(i % 26));
    detail[3000] = '\0';
    e.detail = detail;
    e.route = detail + 2000;
    n = (size_t)snprintf(want, sizeof(want), "%s",
                         "{\"type\":\"access\",\"ts_ms\":T,\"request_id\":\"g\",\"method\":\"POST\","
                         "\"path\":\"/v1/chat/completions\",\"route\":\"");
    for (size_t i = 2000; i < 3000; i++)
        n += (size_t)snprintf(want + n, sizeof(want) - n, "%s",
                              detail[i] == '\n' ? "\\n" : (char[2]){detail[i], 0});
    n += (size_t)snprintf(want + n, sizeof(want) - n, "%s",
                          "\",\"target\":null,\"status\":200,\"stream\":false,\"bytes_in\":0,"
                          "\"bytes_out\":0,\"duration_ms\":0.000,\"ttfb_ms\":0.000,"
                          "\"attempts\":0,\"termination\":null,\"detail\":\"");
    for (size_t i = 0; i < 3000; i++)
        n += (size_t)snprintf(want + n, sizeof(want) - n, "%s",
                              detail[i] == '\n' ? "\\n" : (char[2]){detail[i], 0});
    snprintf(want + n, sizeof(want) - n, "%s", "\"}");
    access_log_thread_cleanup();
    assert_line(access_line(&e), want);
}

/* Every state but DONE visited: each key is req_state_name()'s, in the states' order. */
static void access_every_state(void **state)
{
    struct req_times t;
    struct access_entry e = {.request_id = "s", .status = 200, .input_tokens = -1,
                             .output_tokens = -1, .states = &t};
    char want[2048];
    size_t n;

    (void)state;
    memset(&t, 0, sizeof(t));
    for (unsigned s = 0; s < REQ_ST_COUNT; s++) {
        t.visited |= 1u << s;
        t.spent_us[s] = 1000u * s + s;
    }
    n = (size_t)snprintf(want, sizeof(want), "%s",
                         "{\"type\":\"access\",\"ts_ms\":T,\"request_id\":\"s\",\"method\":\"POST\","
                         "\"path\":\"/v1/chat/completions\",\"route\":null,\"target\":null,"
                         "\"status\":200,\"stream\":false,\"bytes_in\":0,\"bytes_out\":0,"
                         "\"duration_ms\":0.000,\"ttfb_ms\":0.000,\"attempts\":0,"
                         "\"termination\":null,\"states\":{");
    for (unsigned s = 0; s < REQ_ST_COUNT; s++)
        if (s != REQ_ST_DONE)
            n += (size_t)snprintf(want + n, sizeof(want) - n, "%s\"%s\":%u.%03u", s ? "," : "",
                                  req_state_name((enum req_state)s), s, s);
    snprintf(want + n, sizeof(want) - n, "%s", "}}");
    assert_line(access_line(&e), want);
}

/* ---- the attempt line ------------------------------------------------------------------- */

static void attempt_every_field(void **state)
{
    struct attempt a[3];
    struct access_attempt_line l = {
        .request_id = "id-9",
        .route = "chat",
        .number = 4294967295u,
        .circuit = "half_open",
        .time_left_ms = 59999,
        .next = "cross_model_fallback",
        .why = "model \"x\" down",
        .next_delay_ms = 4294967295u,
        .delay_why = "retry_after",
        .limited_by = "target_concurrency",
        .queued_ms = 0,
    };

    (void)state;
    attempts_fill(a);
    a[0].delay_ms = 125;
    snprintf(a[0].ranking, sizeof(a[0].ranking), "%s", "a:0.9>b:\"0.1\"");
    a[0].continued_how = "replay";
    a[0].continued_bytes = 42;
    l.a = &a[0];
    assert_string_equal(
        attempt_line(&l),
        "{\"type\":\"attempt\",\"ts_ms\":T,\"request_id\":\"id-9\",\"route\":\"chat\","
        "\"attempt\":4294967295,\"target\":\"gpt-4.1@openai-us\",\"workflow\":\"primary\","
        "\"outcome\":\"failed\",\"kind\":\"upstream_5xx\",\"status\":500,\"ms\":12.345,"
        "\"delay_before_ms\":125,\"circuit\":\"half_open\",\"time_left_ms\":59999,"
        "\"next\":\"cross_model_fallback\",\"why\":\"model \\\"x\\\" down\","
        "\"next_delay_ms\":4294967295,\"delay_why\":\"retry_after\","
        "\"ranking\":\"a:0.9>b:\\\"0.1\\\"\","
        "\"continued\":{\"target\":\"gpt-4.1@openai-us\",\"how\":\"replay\",\"bytes\":42},"
        "\"limited_by\":\"target_concurrency\",\"queued_ms\":0}");
}

static void attempt_least(void **state)
{
    struct attempt a[3];
    struct access_attempt_line l = {
        .request_id = "x",
        .route = NULL,
        .number = 1,
        .circuit = NULL,
        .next = "stop",
        .why = NULL,
        .queued_ms = -1,
    };

    (void)state;
    attempts_fill(a);
    a[1].continued_how = "prefill";
    l.a = &a[1];
    assert_string_equal(
        attempt_line(&l),
        "{\"type\":\"attempt\",\"ts_ms\":T,\"request_id\":\"x\",\"route\":null,\"attempt\":1,"
        "\"target\":null,\"workflow\":\"retry\",\"outcome\":\"failed\",\"kind\":null,"
        "\"status\":-1,\"ms\":0.000,\"delay_before_ms\":0,\"circuit\":null,"
        "\"time_left_ms\":0,\"next\":\"stop\",\"why\":null,\"next_delay_ms\":0,"
        "\"delay_why\":null,\"continued\":{\"target\":null,\"how\":\"prefill\",\"bytes\":0}}");
}

/* A target's id on the attempt line: copied as it is when the config found it plain,
 * escaped when not (an id may hold '"' and '\\'), measured when the config did not set it;
 * the same bytes each way. */
static const char *attempt_target(struct cfg_target *t)
{
    static char text[256];
    struct attempt a = {.target = t, .workflow = ATTEMPT_WF_PRIMARY, .outcome = ATTEMPT_OK,
                        .status = 200};
    struct access_attempt_line l = {.request_id = "x", .route = "r", .number = 1, .a = &a,
                                    .next = "deliver", .queued_ms = -1};
    const char *line = attempt_line(&l), *from = strstr(line, ",\"target\":"),
               *to = strstr(line, ",\"workflow\":");

    assert_non_null(from);
    assert_non_null(to);
    snprintf(text, sizeof(text), "%.*s", (int)(to - from), from);
    return text;
}

static void attempt_target_ids(void **state)
{
    static struct cfg_target quote = {.id = (char *)"a\"b\\c", .id_len = 5};
    static struct cfg_target tight = {.id = (char *)"abcdefgh", .id_len = 8, .id_plain = true};

    (void)state;
    assert_string_equal(attempt_target(&target_a), ",\"target\":\"gpt-4.1@openai-us\"");
    assert_string_equal(attempt_target(&target_unset), ",\"target\":\"gpt-4.1@openai-us\"");
    assert_string_equal(attempt_target(&quote), ",\"target\":\"a\\\"b\\\\c\"");
    assert_string_equal(attempt_target(&tight), ",\"target\":\"abcdefgh\"");
    assert_string_equal(attempt_target(NULL), ",\"target\":null");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(access_every_field),  cmocka_unit_test(access_least),
        cmocka_unit_test(access_cost_edges),   cmocka_unit_test(access_long_id),
        cmocka_unit_test(access_grows_mid_line),
        cmocka_unit_test(access_every_state),
        cmocka_unit_test(attempt_every_field), cmocka_unit_test(attempt_least),
        cmocka_unit_test(attempt_target_ids),
    };

    access_log_thread_cleanup();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
