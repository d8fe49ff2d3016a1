/* SPDX-License-Identifier: MIT */
/* test_keyring_store.c -- the keyring and audit trail against a memory store
 * (router/keyring.c): a commit writes both blobs and bumps the revision; a document larger
 * than KEYRING_MAX_BYTES is refused with nothing done and can be put back; the audit trail
 * drops its oldest entries to stay under the bound; a newer revision is adopted, an older or
 * malformed one is not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "router/keyring.h"
#include "store/store.h"

struct done {
    int calls;
    enum bsc_err err;
};

static void on_done(enum bsc_err err, void *ud)
{
    struct done *d = ud;

    d->calls++;
    d->err = err;
}

static struct store *open_mem(void)
{
    struct cfg_store cs = {.kind = CFG_STORE_MEMORY};
    struct store *st = NULL;
    char err[128];

    assert_int_equal(store_open(&cs, &st, err, sizeof(err)), BSC_OK);
    return st;
}

static void run_until(uv_loop_t *loop, const struct done *d, int calls)
{
    for (int i = 0; i < 1000 && d->calls < calls; i++)
        uv_run(loop, UV_RUN_ONCE);
    assert_int_equal(d->calls, calls);
}

static struct json_object *big_key(size_t bytes)
{
    struct json_object *k = json_object_new_object();
    char *pad = malloc(bytes + 1);

    memset(pad, 'x', bytes);
    pad[bytes] = '\0';
    json_object_object_add(k, "id", json_object_new_string("key_big"));
    json_object_object_add(k, "metadata", json_object_new_string(pad));
    free(pad);
    return k;
}

static void test_commit_and_limit(void **state)
{
    uv_loop_t loop;
    struct store *st = open_mem();
    struct keyring *kr = keyring_new();
    struct json_object *doc, *keys, *saved;
    struct done d = {0};
    char *text;

    (void)state;
    uv_loop_init(&loop);
    doc = keyring_lock(kr);
    json_object_object_get_ex(doc, "keys", &keys);
    json_object_array_add(keys, big_key(10));
    assert_int_equal(keyring_commit_locked(kr, st, &loop,
                                           keyring_audit_entry("admin", "key.create", "key_big",
                                                               NULL, NULL),
                                           on_done, &d),
                     BSC_OK);
    keyring_unlock(kr);
    run_until(&loop, &d, 1);
    assert_int_equal(d.err, BSC_OK);
    text = keyring_text(kr);
    assert_non_null(strstr(text, "\"rev\":1"));
    free(text);

    /* Too large: refused, nothing queued, the revision unchanged, the saved copy restored. */
    doc = keyring_lock(kr);
    saved = keyring_save_locked(kr);
    json_object_object_get_ex(doc, "keys", &keys);
    json_object_array_add(keys, big_key(KEYRING_MAX_BYTES));
    assert_int_equal(keyring_commit_locked(kr, st, &loop,
                                           keyring_audit_entry("admin", "key.create", "x", NULL,
                                                               NULL),
                                           on_done, &d),
                     BSC_ELIMIT);
    keyring_restore_locked(kr, saved);
    keyring_unlock(kr);
    text = keyring_text(kr);
    assert_true(strlen(text) < 1000);
    assert_non_null(strstr(text, "\"rev\":1"));
    free(text);
    text = keyring_audit_select(kr, 0, NULL);
    assert_null(strstr(text, "\"subject\":\"x\"")); /* no audit entry for it */
    free(text);
    assert_int_equal(d.calls, 1);

    keyring_free(kr);
    store_close(st);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
}

static void test_audit_bounded(void **state)
{
    uv_loop_t loop;
    struct store *st = open_mem();
    struct keyring *kr = keyring_new();
    struct done d = {0};
    const size_t each = 1u << 20; /* 1 MiB entries: only about 7 fit */
    char *text;
    int n = 0;

    (void)state;
    uv_loop_init(&loop);
    for (int i = 0; i < 10; i++) {
        char subject[16];

        snprintf(subject, sizeof(subject), "s%d", i);
        keyring_audit(kr, st, &loop,
                      keyring_audit_entry("admin", "target.disable", subject, big_key(each), NULL),
                      on_done, &d);
    }
    run_until(&loop, &d, 10);
    assert_int_equal(d.err, BSC_OK); /* every trail written fitted in the store */
    text = keyring_audit_select(kr, 0, NULL);
    assert_true(strlen(text) <= KEYRING_MAX_BYTES);
    assert_non_null(strstr(text, "\"subject\":\"s9\"")); /* the newest kept */
    assert_null(strstr(text, "\"subject\":\"s0\""));    /* the oldest gone */
    for (const char *p = text; (p = strstr(p, "\"subject\"")); p++)
        n++;
    assert_true(n >= 5 && n <= 7);
    free(text);
    keyring_free(kr);
    store_close(st);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
}

static void test_adopt(void **state)
{
    struct keyring *kr = keyring_new();
    static const char newer[] = "{\"rev\":5,\"keys\":[{\"id\":\"key_a\"}]}";
    static const char older[] = "{\"rev\":4,\"keys\":[]}";
    char *text;

    (void)state;
    assert_true(keyring_adopt(kr, newer, strlen(newer)));
    assert_false(keyring_adopt(kr, newer, strlen(newer))); /* the same revision */
    assert_false(keyring_adopt(kr, older, strlen(older)));
    assert_false(keyring_adopt(kr, "[]", 2));
    assert_false(keyring_adopt(kr, "{\"rev\":9}", 9));
    text = keyring_text(kr);
    assert_non_null(strstr(text, "key_a"));
    free(text);
    keyring_free(kr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_and_limit),
        cmocka_unit_test(test_audit_bounded),
        cmocka_unit_test(test_adopt),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
