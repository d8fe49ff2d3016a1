/* SPDX-License-Identifier: MIT */
/* test_prov_headers.c -- the adapters' header lines (providers/common.c prov_header,
 * prov_header_cat): "Name: value\0" appended whole, or nothing at all when the buffer's
 * bound would be passed (limit - 1, limit, limit + 1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/buf.h"
#include "providers/provider.h"

static void test_lines_appended(void **state)
{
    static const char want[] = "Content-Type: application/json\0Authorization: Bearer sk-1\0"
                               "X-Request-Id: abc\0X-Empty: \0";
    struct bsc_buf h;

    (void)state;
    bsc_buf_init(&h, 4096);
    assert_int_equal(prov_header(&h, "Content-Type", "%s", "application/json"), BSC_OK);
    assert_int_equal(prov_header_cat(&h, "Authorization", "Bearer ", "sk-1"), BSC_OK);
    assert_int_equal(prov_header(&h, "X-Request-Id", "%s", "abc"), BSC_OK);
    assert_int_equal(prov_header_cat(&h, "X-Empty", "", ""), BSC_OK);
    assert_int_equal(h.len, sizeof(want) - 1);
    assert_memory_equal(h.p, want, sizeof(want) - 1);
    assert_int_equal(h.p[h.len], '\0');
    bsc_buf_cleanup(&h);
}

/* "A: bc\0" is 6 bytes: with 4 already in, a bound of 10 takes it, 9 does not (and leaves
 * the buffer as it was). */
static void test_bound(void **state)
{
    for (size_t max = 9; max <= 11; max++) {
        struct bsc_buf h;
        enum bsc_err want = max >= 10 ? BSC_OK : BSC_ELIMIT;

        (void)state;
        bsc_buf_init(&h, max);
        assert_int_equal(BSC_BUF_APPEND_LIT(&h, "abcd"), BSC_OK);
        assert_int_equal(prov_header_cat(&h, "A", "b", "c"), want);
        if (want == BSC_OK) {
            assert_int_equal(h.len, 10);
            assert_memory_equal(h.p, "abcdA: bc\0", 11);
        } else {
            assert_int_equal(h.len, 4);
            assert_string_equal(h.p, "abcd");
        }
        bsc_buf_cleanup(&h);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_appended),
        cmocka_unit_test(test_bound),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
