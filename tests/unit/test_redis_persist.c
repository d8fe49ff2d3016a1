/* SPDX-License-Identifier: MIT */
/* test_redis_persist.c -- what the start-up log says a ledger acknowledgement is worth for each
 * Redis persistence setting (redis_persist.c): durable only with appendonly yes and appendfsync
 * always; appendfsync is not quoted when appendonly is off (issue 24: it claimed everysec while
 * nothing was written to disk); nothing durable is said plainly; an unreadable setting is
 * unknown, never durable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "store/internal.h"

static enum store__durability verdict(const char *aof, const char *fsync, const char *save,
                                      char *msg, size_t len)
{
    struct store__redis_persist p = {aof, fsync, save};

    return store__redis_durability(&p, msg, len);
}

static void test_durable_only_with_aof_always(void **state)
{
    char msg[400];

    (void)state;
    assert_int_equal(verdict("yes", "always", "", msg, sizeof(msg)), STORE__DURABLE);
    assert_non_null(strstr(msg, "on disk before it is acknowledged"));
    assert_int_equal(verdict("yes", "always", "3600 1", msg, sizeof(msg)), STORE__DURABLE);
}

static void test_aof_lossy(void **state)
{
    char msg[400];

    (void)state;
    assert_int_equal(verdict("yes", "everysec", "", msg, sizeof(msg)), STORE__LOSSY);
    assert_non_null(strstr(msg, "appendfsync 'everysec', not 'always'"));
    assert_non_null(strstr(msg, "last second"));
    assert_int_equal(verdict("yes", "no", "", msg, sizeof(msg)), STORE__LOSSY);
    assert_non_null(strstr(msg, "appendfsync 'no'"));
}

static void test_no_aof(void **state)
{
    char msg[400];

    (void)state;
    /* appendfsync is Redis's default everysec even with the AOF off: it must not be quoted. */
    assert_int_equal(verdict("no", "everysec", "", msg, sizeof(msg)), STORE__NOTHING);
    assert_non_null(strstr(msg, "NOTHING is durable"));
    assert_null(strstr(msg, "everysec"));
    assert_int_equal(verdict("no", "everysec", "3600 1 300 100", msg, sizeof(msg)),
                     STORE__LOSSY);
    assert_non_null(strstr(msg, "only RDB snapshots (save '3600 1 300 100')"));
    assert_null(strstr(msg, "everysec"));
}

static void test_unknown(void **state)
{
    char msg[400];

    (void)state;
    assert_int_equal(verdict(NULL, "always", "", msg, sizeof(msg)), STORE__UNKNOWN);
    assert_int_equal(verdict("yes", NULL, "", msg, sizeof(msg)), STORE__UNKNOWN);
    assert_int_equal(verdict("yes", "always", NULL, msg, sizeof(msg)), STORE__UNKNOWN);
    assert_non_null(strstr(msg, "unknown"));
    /* A short buffer is cut, never overrun. */
    assert_int_equal(verdict("no", "no", "", msg, 8), STORE__NOTHING);
    assert_int_equal(strlen(msg), 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durable_only_with_aof_always),
        cmocka_unit_test(test_aof_lossy),
        cmocka_unit_test(test_no_aof),
        cmocka_unit_test(test_unknown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
