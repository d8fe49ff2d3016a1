/* SPDX-License-Identifier: MIT */
/* test_ascii.c -- bsc_ascii_ieq (core/ascii.h), the inline header-name compare, against
 * strncasecmp() in the C locale: every pair of bytes (NUL aside in the second, as the
 * header's contract says), then names of the lengths the readers compare with one byte
 * changed anywhere. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "core/ascii.h"

static void test_every_byte_pair(void **state)
{
    (void)state;
    for (unsigned a = 0; a < 256; a++)
        for (unsigned b = 1; b < 256; b++) {
            char x = (char)a, y = (char)b;

            assert_int_equal(bsc_ascii_ieq(&x, &y, 1), strncasecmp(&x, &y, 1) == 0);
        }
}

static void test_names_one_byte_changed(void **state)
{
    static const char *const names[] = {
        "host", "upgrade", "connection", "content-length", "proxy-connection",
        "transfer-encoding", "x-ratelimit-remaining-requests", "Content-Type",
    };
    (void)state;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        size_t n = strlen(names[i]);
        char w[64];

        for (size_t at = 0; at < n; at++)
            for (unsigned c = 0; c < 256; c++) {
                memcpy(w, names[i], n);
                w[at] = (char)c;
                assert_int_equal(bsc_ascii_ieq(w, names[i], n),
                                 strncasecmp(w, names[i], n) == 0);
            }
        assert_true(bsc_ascii_ieq(names[i], names[i], n));
        assert_true(bsc_ascii_ieq("", names[i], 0));
    }
}

/* A shorter NUL-terminated string ends the compare at its NUL: no byte after it is read. */
static void test_stops_at_first_difference(void **state)
{
    char url[3] = {'h', 't', '\0'};

    (void)state;
    assert_false(bsc_ascii_ieq(url, "http://", 7));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_byte_pair),
        cmocka_unit_test(test_names_one_byte_changed),
        cmocka_unit_test(test_stops_at_first_difference),
    };

    return cmocka_run_group_tests_name("ascii", tests, NULL, NULL);
}
