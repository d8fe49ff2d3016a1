/* SPDX-License-Identifier: MIT */
/* test_upstream_url.c -- the parsed-URL cache of an upstream multi (multi.c): one entry
 * per URL text, held by the transfers that use it; a full cache replaces only entries no
 * transfer holds, and says "none" (NULL: curl parses the text itself) when all are held. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "upstream/internal.h"

static uv_loop_t loop;
static struct up_multi *m;

static int setup(void **state)
{
    (void)state;
    uv_loop_init(&loop);
    return up_multi_new(&loop, NULL, &m) == BSC_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    up_multi_free(m);
    uv_run(&loop, UV_RUN_DEFAULT);
    return uv_loop_close(&loop) == 0 ? 0 : -1;
}

static void url_n(char *buf, size_t len, unsigned i)
{
    snprintf(buf, len, "http://127.0.0.1:%u/v1/chat/completions", 20000 + i);
}

static void test_same_text_same_entry(void **state)
{
    struct up_url *a, *b;
    char *text = NULL;

    (void)state;
    a = up__url(m, "http://127.0.0.1:9/v1/chat/completions");
    b = up__url(m, "http://127.0.0.1:9/v1/chat/completions");
    assert_non_null(a);
    assert_ptr_equal(a, b);
    assert_int_equal(a->refs, 2);
    assert_int_equal(curl_url_get(a->handle, CURLUPART_PORT, &text, 0), CURLUE_OK);
    assert_string_equal(text, "9");
    curl_free(text);
    up__url_release(a);
    up__url_release(b);
    assert_int_equal(a->refs, 0);
    assert_null(up__url(m, "not a url"));
}

static void test_full_cache_replaces_only_free_entries(void **state)
{
    struct up_url *held[UP_URL_CACHE];
    struct up_url *u;
    char buf[96];

    (void)state;
    for (unsigned i = 0; i < UP_URL_CACHE; i++) {
        url_n(buf, sizeof(buf), i);
        held[i] = up__url(m, buf);
        assert_non_null(held[i]);
    }
    url_n(buf, sizeof(buf), UP_URL_CACHE);
    assert_null(up__url(m, buf)); /* every entry held: none replaced */
    up__url_release(held[5]);
    u = up__url(m, buf);
    assert_ptr_equal(u, held[5]); /* the only free entry */
    assert_string_equal(u->text, buf);
    url_n(buf, sizeof(buf), 0);
    assert_ptr_equal(up__url(m, buf), held[0]); /* still cached */
    assert_int_equal(held[0]->refs, 2);
    up__url_release(held[0]);
    up__url_release(u);
    for (unsigned i = 0; i < UP_URL_CACHE; i++)
        if (i != 5)
            up__url_release(held[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_same_text_same_entry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_cache_replaces_only_free_entries, setup,
                                        teardown),
    };

    curl_global_init(CURL_GLOBAL_DEFAULT);
    return cmocka_run_group_tests_name("upstream_url", tests, NULL, NULL);
}
