/* SPDX-License-Identifier: MIT */
/* test_keyring_sync.c -- router/keyring_sync.c: the keyring is read back from the store it
 * was written to (what a restart or another instance does): a key made through the admin
 * API on one gateway is in the keyring a second gateway loads from the same SQLite file. */
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
#include <sys/stat.h>

#include "router/keyring.h"

#define AUTH "Authorization: Bearer adm-harness-0123456789abcdef\r\n"

static void key_read_back_from_the_store(void **state)
{
    char dir[] = "/tmp/bsc_krs_XXXXXX", yaml[1024], path[128];
    struct rh *h;
    struct rh_resp res;
    char id[64];
    const char *p;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/store.db", dir);
    snprintf(yaml, sizeof(yaml),
             RH_TWO "routes:\n  r: { primary: [a] }\n"
                    "admin: { key: \"adm-harness-0123456789abcdef\" }\n"
                    "store: { kind: sqlite, path: \"%s\" }\n",
             path);
    h = rh_start(yaml, NULL);
    rh_call(h, "POST", "/admin/keys", AUTH, "{\"client\":\"app1\",\"routes\":[\"r\"]}", &res);
    assert_int_equal(res.status, 201);
    assert_non_null(p = strstr(res.body, "\"id\":\""));
    snprintf(id, sizeof(id), "%.*s", (int)strcspn(p + 6, "\""), p + 6);
    rh_resp_free(&res);
    rh_stop(h);

    /* a second gateway on the same file loads the keyring at start (keyring_load_blocking) */
    h = rh_start(yaml, NULL);
    rh_get(h, "/admin/keys", AUTH, &res);
    assert_int_equal(res.status, 200);
    assert_true(rh_resp_has(&res, id));
    rh_resp_free(&res);
    rh_stop(h);
    unlink(path);
    {
        char wal[160];

        snprintf(wal, sizeof(wal), "%s-wal", path);
        unlink(wal);
        snprintf(wal, sizeof(wal), "%s-shm", path);
        unlink(wal);
    }
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        RH_TEST(key_read_back_from_the_store),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
