/* SPDX-License-Identifier: MIT */
/* test_line_rules.c -- the response head's wire rules as the libcurl side checks them, one
 * line at a time (upstream/line_rules.c): CRLF endings, no obs-fold, Transfer-Encoding only
 * "chunked" and once per head, no 101, at most H1_INTERIM_MAX interim heads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "upstream/h1_wire.h"
#include "upstream/line_rules.h"

static const char *check(struct up_line_rules *st, const char *line)
{
    return up__line_check(st, line, strlen(line));
}

static void test_good_head(void **state)
{
    struct up_line_rules st = {0};

    (void)state;
    assert_null(check(&st, "HTTP/1.1 200 OK\r\n"));
    assert_null(check(&st, "Content-Type: application/json\r\n"));
    assert_null(check(&st, "transfer-encoding:  Chunked \r\n"));
    assert_null(check(&st, "X-Empty:\r\n"));
    assert_null(check(&st, "\r\n"));
}

static void test_broken_lines(void **state)
{
    struct up_line_rules st = {0};

    (void)state;
    assert_non_null(strstr(check(&st, "HTTP/1.1 200 OK\n"), "bare LF"));
    assert_non_null(strstr(check(&st, "X-A: 1\n"), "bare LF"));
    assert_non_null(strstr(check(&st, "\n"), "bare LF"));
    assert_non_null(strstr(check(&st, "X-A: 1\rX-B: 2\r\n"), "CR not followed"));
    assert_non_null(strstr(check(&st, " folded\r\n"), "folding"));
    assert_non_null(strstr(check(&st, "\tfolded\r\n"), "folding"));
}

static void test_transfer_encoding(void **state)
{
    struct up_line_rules st = {0};

    (void)state;
    assert_non_null(check(&st, "Transfer-Encoding: gzip, chunked\r\n"));
    st = (struct up_line_rules){0};
    assert_non_null(check(&st, "Transfer-Encoding: identity\r\n"));
    st = (struct up_line_rules){0};
    assert_null(check(&st, "Transfer-Encoding: chunked\r\n"));
    assert_non_null(check(&st, "Transfer-Encoding: chunked\r\n")); /* twice */
    /* A new head starts the count again. */
    assert_null(check(&st, "HTTP/1.1 200 OK\r\n"));
    assert_null(check(&st, "Transfer-Encoding: chunked\r\n"));
}

static void test_status_lines(void **state)
{
    struct up_line_rules st = {0};

    (void)state;
    assert_non_null(strstr(check(&st, "HTTP/1.1 101 Switching Protocols\r\n"), "101"));
    st = (struct up_line_rules){0};
    for (int i = 0; i < H1_INTERIM_MAX; i++) {
        assert_null(check(&st, "HTTP/1.1 100 Continue\r\n"));
        assert_null(check(&st, "\r\n"));
    }
    assert_non_null(strstr(check(&st, "HTTP/1.1 103 Early Hints\r\n"), "interim"));
    st = (struct up_line_rules){0};
    assert_null(check(&st, "HTTP/1.1 204 No Content\r\n"));
    assert_null(check(&st, "HTTP/1.0 200\r\n"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_head),
        cmocka_unit_test(test_broken_lines),
        cmocka_unit_test(test_transfer_encoding),
        cmocka_unit_test(test_status_lines),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
