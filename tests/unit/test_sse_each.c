/* SPDX-License-Identifier: MIT */
/* test_sse_each.c -- sse_each_event (stream/sse_parse.c): a whole SSE text walked event by
 * event, as the router reads its adapters' frames (contract checks, shadow copies): whole
 * events only, names and multi-line data as the parser gives them, comments skipped, a
 * partial last event dropped, a callback that stops the walk, empty and NULL texts; sse_walk
 * with comment and unknown-line callbacks as the stream continuation reads its frames. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "stream/sse_parse.h"

struct seen {
    char log[512];
    size_t len;
    int calls, stop_after;
};

static int record(void *ud, struct bsc_str name, struct bsc_str data)
{
    struct seen *s = ud;
    int n = snprintf(s->log + s->len, sizeof(s->log) - s->len, "<%.*s|%.*s>", (int)name.len,
                     name.p ? name.p : "", (int)data.len, data.p ? data.p : "");

    if (n > 0)
        s->len += (size_t)n;
    return ++s->calls == s->stop_after;
}

static const char *walk(const char *text, int stop_after, struct seen *s)
{
    memset(s, 0, sizeof(*s));
    s->stop_after = stop_after;
    assert_int_equal(sse_each_event(bsc_str_make(text, text ? strlen(text) : 0), record, s),
                     BSC_OK);
    return s->log;
}

static void test_frames_of_an_adapter(void **state)
{
    struct seen s;

    (void)state;
    assert_string_equal(walk("data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n", 0, &s),
                        "<|{\"a\":1}><|{\"b\":2}><|[DONE]>");
    assert_int_equal(s.calls, 3);
}

static void test_names_comments_and_lines(void **state)
{
    struct seen s;

    (void)state;
    assert_string_equal(walk("event: ping\ndata: {}\n\n: keep-alive\n\ndata: a\ndata: b\n\n", 0,
                             &s),
                        "<ping|{}><|a\nb>");
    /* CRLF and a missing space after the colon frame the same way. */
    assert_string_equal(walk("data:{\"x\":1}\r\n\r\n", 0, &s), "<|{\"x\":1}>");
}

static void test_partial_event_is_dropped(void **state)
{
    struct seen s;

    (void)state;
    assert_string_equal(walk("data: {\"a\":1}\n\ndata: {\"b\"", 0, &s), "<|{\"a\":1}>");
    assert_string_equal(walk("data: {\"a\":1}\n", 0, &s), "");
    assert_int_equal(s.calls, 0);
}

static void test_callback_stops_the_walk(void **state)
{
    struct seen s;

    (void)state;
    assert_string_equal(walk("data: 1\n\ndata: 2\n\ndata: 3\n\n", 2, &s), "<|1><|2>");
}

static int record_line(void *ud, struct bsc_str line)
{
    struct seen *s = ud;
    int n = snprintf(s->log + s->len, sizeof(s->log) - s->len, "(%.*s)", (int)line.len,
                     line.p ? line.p : "");

    if (n > 0)
        s->len += (size_t)n;
    return ++s->calls == s->stop_after;
}

static void test_walk_reports_comments_and_unknown_lines(void **state)
{
    static const struct sse_callbacks cb = {record, record_line, record_line};
    static const char text[] = ": hi\n\nevent: a\ndata: 1\n\nfoo: bar\ndata: 2\n\ndata: 3";
    struct seen s;

    (void)state;
    memset(&s, 0, sizeof(s));
    assert_int_equal(sse_walk(bsc_str_make(text, sizeof(text) - 1), &cb, &s), BSC_OK);
    assert_string_equal(s.log, "(hi)<a|1>(foo: bar)<|2>");
    /* A comment callback stops the walk as an event callback does. */
    memset(&s, 0, sizeof(s));
    s.stop_after = 1;
    assert_int_equal(sse_walk(bsc_str_make(text, sizeof(text) - 1), &cb, &s), BSC_OK);
    assert_string_equal(s.log, "(hi)");
}

static void test_looks_like_stream(void **state)
{
    static const char *const yes[] = {"data: {}", "\r\n event: x", ": ping", "id: 1", "retry:5"};
    static const char *const no[] = {"", "  ", "{\"data:\":1}", "dat", "\tdata: x", "<html>"};

    (void)state;
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
        assert_true(sse_looks_like_stream(bsc_str_make(yes[i], strlen(yes[i]))));
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        assert_false(sse_looks_like_stream(bsc_str_make(no[i], strlen(no[i]))));
}

static void test_empty_texts(void **state)
{
    struct seen s;

    (void)state;
    assert_string_equal(walk("", 0, &s), "");
    assert_string_equal(walk(NULL, 0, &s), "");
    assert_string_equal(walk("\n\n\n", 0, &s), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frames_of_an_adapter),
        cmocka_unit_test(test_names_comments_and_lines),
        cmocka_unit_test(test_partial_event_is_dropped),
        cmocka_unit_test(test_callback_stops_the_walk),
        cmocka_unit_test(test_walk_reports_comments_and_unknown_lines),
        cmocka_unit_test(test_looks_like_stream),
        cmocka_unit_test(test_empty_texts),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
