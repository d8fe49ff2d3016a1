/* SPDX-License-Identifier: MIT */
/* test_gateway_setup.c -- api/gateway_setup.c, the gateway's shared state built from a
 * config as main.c and the request harness build it: every part made and sized by
 * `workers`, the keyring read from the store and merged, a store that cannot open
 * reported with the parts already made still freed by gateway_close (ASan's leak check
 * sees the rest). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "api/gateway_setup.h"
#include "config/config.h"
#include "store/store.h"

#define BASE                                                                               \
    "providers:\n"                                                                         \
    "  p: {kind: openai, base_url: \"https://api.openai.com/v1\", keys: [k]}\n"            \
    "targets:\n"                                                                           \
    "  t: {provider: p, model: m, max_concurrency: 4}\n"                                   \
    "routes:\n"                                                                            \
    "  r: {primary: [t]}\n"

static struct cfg *load(const char *yaml)
{
    struct cfg_diags diags = {0};
    struct cfg *cfg = NULL;

    if (cfg_load_string("gateway.yaml", yaml, strlen(yaml), &cfg, &diags) != BSC_OK || !cfg) {
        cfg_diags_print(&diags, stderr);
        fail_msg("the test config does not load");
    }
    cfg_diags_cleanup(&diags);
    return cfg;
}

/* Every part made, n_workers from `workers`, the keyring read from the memory store. */
static void every_part_made(void **state)
{
    struct cfg *cfg = load("workers: 3\n" BASE);
    struct gateway gw = {0};

    (void)state;
    assert_int_equal(gateway_open(&gw, cfg), BSC_OK);
    assert_int_equal(gw.n_workers, 3);
    assert_true(gw.started_ms > 0);
    assert_true(gw.hs && gw.lim && gw.metrics && gw.conns && gw.verdicts && gw.spend &&
                gw.keyring && gw.history && gw.cache && gw.sem && gw.store);
    assert_string_equal(store_kind_name(gw.store), "memory");
    assert_int_equal(gateway_keyring_start(&gw, cfg), BSC_OK);
    assert_int_equal(gateway_merge_keyring(&gw, cfg), BSC_OK);
    gateway_close(&gw);
    cfg_unref(cfg);
}

/* The keyring read from an SQLite store (a new file: the schema made, no keys). */
static void keyring_from_sqlite(void **state)
{
    char dir[] = "/tmp/bsc_gws_XXXXXX", path[64], yaml[1024];
    struct gateway gw = {0};
    struct cfg *cfg;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/state.db", dir);
    snprintf(yaml, sizeof(yaml), "workers: 1\nstore: { kind: sqlite, path: \"%s\" }\n" BASE,
             path);
    cfg = load(yaml);
    assert_int_equal(gateway_open(&gw, cfg), BSC_OK);
    assert_int_equal(gw.n_workers, 1);
    assert_string_equal(store_kind_name(gw.store), "sqlite");
    assert_int_equal(gateway_keyring_start(&gw, cfg), BSC_OK);
    gateway_close(&gw);
    cfg_unref(cfg);
    unlink(path);
    rmdir(dir);
}

/* A store that cannot open fails the build; what was made before is freed by
 * gateway_close (a leak would fail under ASan). */
static void store_that_cannot_open(void **state)
{
    struct cfg *cfg = load("workers: 2\nstore: { kind: sqlite, path: "
                           "\"/nonexistent-bascule-dir/sub/state.db\" }\n" BASE);
    struct gateway gw = {0};

    (void)state;
    assert_int_not_equal(gateway_open(&gw, cfg), BSC_OK);
    assert_null(gw.store);
    assert_non_null(gw.hs);
    assert_non_null(gw.keyring);
    gateway_close(&gw);
    cfg_unref(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_part_made),
        cmocka_unit_test(keyring_from_sqlite),
        cmocka_unit_test(store_that_cannot_open),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
