/* SPDX-License-Identifier: MIT */
/* keyring.c -- run-time keys and the audit trail, held in memory and written whole to the
 * store (router/keyring.h, docs/internals/keys.md). Both blobs are queued under the lock, so
 * the store receives them in the order the changes were made. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/json_parse.h"
#include "core/str.h"
#include "router/keyring.h"
#include "store/store.h"

/* A keyring text nests a few levels; read as before (json-c's default
 * depth, lenient). */
#define KEYRING_DEPTH 32
#define FOREVER_MS (100ull * 365 * 24 * 3600 * 1000) /* blobs of the keyring do not expire */

struct keyring {
    pthread_mutex_t lock;
    struct json_object *doc;   /* {"rev": n, "keys": [...]} */
    struct json_object *audit; /* [...] oldest first */
    bool synced; /* the store's keyring was read once: writes may go on top of it */
};

static struct json_object *empty_doc(void)
{
    struct json_object *d = json_object_new_object();

    json_object_object_add(d, "rev", json_object_new_int64(0));
    json_object_object_add(d, "keys", json_object_new_array());
    return d;
}

struct keyring *keyring_new(void)
{
    struct keyring *kr = calloc(1, sizeof(*kr));

    if (!kr)
        return NULL;
    pthread_mutex_init(&kr->lock, NULL);
    kr->doc = empty_doc();
    kr->audit = json_object_new_array();
    if (!kr->doc || !kr->audit) {
        keyring_free(kr);
        return NULL;
    }
    return kr;
}

void keyring_free(struct keyring *kr)
{
    if (!kr)
        return;
    json_object_put(kr->doc);
    json_object_put(kr->audit);
    pthread_mutex_destroy(&kr->lock);
    free(kr);
}

char *keyring_text(struct keyring *kr)
{
    char *t;

    pthread_mutex_lock(&kr->lock);
    t = strdup(json_object_to_json_string_ext(kr->doc, JSON_C_TO_STRING_PLAIN));
    pthread_mutex_unlock(&kr->lock);
    return t;
}

struct json_object *keyring_lock(struct keyring *kr)
{
    pthread_mutex_lock(&kr->lock);
    return kr->doc;
}

void keyring_unlock(struct keyring *kr)
{
    pthread_mutex_unlock(&kr->lock);
}

void keyring_set_synced(struct keyring *kr)
{
    pthread_mutex_lock(&kr->lock);
    kr->synced = true;
    pthread_mutex_unlock(&kr->lock);
}

bool keyring_synced_locked(const struct keyring *kr)
{
    return kr->synced;
}

static int64_t rev_of(struct json_object *doc)
{
    struct json_object *v;

    return json_object_object_get_ex(doc, "rev", &v) ? json_object_get_int64(v) : 0;
}

/* Two puts, one answer: the later failure, if any, once both called back. */
struct commit {
    keyring_done_fn *cb;
    void *ud;
    int due;
    enum bsc_err err;
};

static void on_put(enum bsc_err err, void *ud)
{
    struct commit *c = ud;

    if (err)
        c->err = err;
    if (--c->due)
        return;
    if (c->cb)
        c->cb(c->err, c->ud);
    free(c);
}

static void put(struct store *st, uv_loop_t *loop, const char *key, struct json_object *v,
                struct commit *c)
{
    const char *text = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
    enum bsc_err err = store_blob_put(st, loop, bsc_str_cstr(key), bsc_str_cstr(text),
                                      FOREVER_MS, on_put, c);

    if (err) /* not queued: counted as answered, with its error */
        on_put(err, c);
}

static void log_audit(struct json_object *a)
{
    struct json_object *line = json_object_new_object();
    const char *t;

    json_object_object_add(line, "ts_ms", json_object_new_int64((int64_t)bsc_wall_ms()));
    json_object_object_add(line, "level", json_object_new_string("info"));
    json_object_object_add(line, "event", json_object_new_string("admin_audit"));
    json_object_object_add(line, "audit", json_object_get(a));
    t = json_object_to_json_string_ext(line, JSON_C_TO_STRING_PLAIN);
    bsc_log_line(t, strlen(t));
    json_object_put(line);
}

/* Appends <audit>; the oldest entries go while there are more than KEYRING_AUDIT_MAX or the
 * trail would be larger than the store keeps in one record (KEYRING_MAX_BYTES). */
static void audit_add_locked(struct keyring *kr, struct json_object *audit)
{
    size_t total;

    log_audit(audit);
    json_object_array_add(kr->audit, audit);
    if (json_object_array_length(kr->audit) > KEYRING_AUDIT_MAX)
        json_object_array_del_idx(kr->audit, 0,
                                  json_object_array_length(kr->audit) - KEYRING_AUDIT_MAX);
    total = strlen(json_object_to_json_string_ext(kr->audit, JSON_C_TO_STRING_PLAIN));
    while (total > KEYRING_MAX_BYTES && json_object_array_length(kr->audit) > 1) {
        struct json_object *oldest = json_object_array_get_idx(kr->audit, 0);

        total -= strlen(json_object_to_json_string_ext(oldest, JSON_C_TO_STRING_PLAIN)) + 1;
        json_object_array_del_idx(kr->audit, 0, 1);
    }
}

static struct commit *commit_new(keyring_done_fn *cb, void *ud, int due)
{
    struct commit *c = calloc(1, sizeof(*c));

    if (c)
        *c = (struct commit){.cb = cb, .ud = ud, .due = due};
    return c;
}

struct json_object *keyring_save_locked(struct keyring *kr)
{
    struct json_object *copy = NULL;

    return json_object_deep_copy(kr->doc, &copy, NULL) == 0 ? copy : NULL;
}

void keyring_restore_locked(struct keyring *kr, struct json_object *saved)
{
    json_object_put(kr->doc);
    kr->doc = saved;
}

enum bsc_err keyring_commit_locked(struct keyring *kr, struct store *st, uv_loop_t *loop,
                                   struct json_object *audit, keyring_done_fn *cb, void *ud)
{
    struct commit *c;

    if (strlen(json_object_to_json_string_ext(kr->doc, JSON_C_TO_STRING_PLAIN)) >
        KEYRING_MAX_BYTES) {
        json_object_put(audit);
        return BSC_ELIMIT;
    }
    c = commit_new(cb, ud, 2);
    if (!c) {
        json_object_put(audit);
        return BSC_ENOMEM;
    }
    json_object_object_add(kr->doc, "rev", json_object_new_int64(rev_of(kr->doc) + 1));
    audit_add_locked(kr, audit);
    put(st, loop, KEYRING_BLOB, kr->doc, c);
    put(st, loop, KEYRING_AUDIT_BLOB, kr->audit, c);
    return BSC_OK;
}

void keyring_audit(struct keyring *kr, struct store *st, uv_loop_t *loop,
                   struct json_object *audit, keyring_done_fn *cb, void *ud)
{
    struct commit *c = commit_new(cb, ud, 1);

    pthread_mutex_lock(&kr->lock);
    audit_add_locked(kr, audit);
    if (c)
        put(st, loop, KEYRING_AUDIT_BLOB, kr->audit, c);
    pthread_mutex_unlock(&kr->lock);
    if (!c && cb)
        cb(BSC_ENOMEM, ud);
}

struct json_object *keyring_audit_entry(const char *admin, const char *action,
                                        const char *subject, struct json_object *before,
                                        struct json_object *after)
{
    struct json_object *a = json_object_new_object();

    json_object_object_add(a, "time_ms", json_object_new_int64((int64_t)bsc_wall_ms()));
    json_object_object_add(a, "admin", json_object_new_string(admin ? admin : ""));
    json_object_object_add(a, "action", json_object_new_string(action));
    json_object_object_add(a, "subject", json_object_new_string(subject ? subject : ""));
    json_object_object_add(a, "before", before);
    json_object_object_add(a, "after", after);
    return a;
}

static bool audit_matches(struct json_object *a, uint64_t since_ms, const char *subject)
{
    struct json_object *t, *s;

    if (!json_object_object_get_ex(a, "time_ms", &t) ||
        (uint64_t)json_object_get_int64(t) < since_ms)
        return false;
    return !subject ||
           (json_object_object_get_ex(a, "subject", &s) &&
            strcmp(json_object_get_string(s), subject) == 0);
}

char *keyring_audit_select(struct keyring *kr, uint64_t since_ms, const char *subject)
{
    struct json_object *out = json_object_new_array();
    char *text;

    pthread_mutex_lock(&kr->lock);
    for (size_t i = 0; i < json_object_array_length(kr->audit); i++) {
        struct json_object *a = json_object_array_get_idx(kr->audit, i);

        if (audit_matches(a, since_ms, subject))
            json_object_array_add(out, json_object_get(a));
    }
    text = strdup(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN));
    pthread_mutex_unlock(&kr->lock);
    json_object_put(out);
    return text;
}

static struct json_object *parse(const char *text, size_t len)
{
    return bsc_json_parse(bsc_str_make(text, len), KEYRING_DEPTH, BSC_JSON_LENIENT, NULL);
}

bool keyring_adopt(struct keyring *kr, const char *text, size_t len)
{
    struct json_object *d = parse(text, len), *keys;
    bool newer;

    if (!d || !json_object_object_get_ex(d, "keys", &keys) ||
        !json_object_is_type(keys, json_type_array)) {
        json_object_put(d);
        return false;
    }
    pthread_mutex_lock(&kr->lock);
    newer = rev_of(d) > rev_of(kr->doc);
    if (newer) {
        json_object_put(kr->doc);
        kr->doc = d;
    }
    pthread_mutex_unlock(&kr->lock);
    if (!newer)
        json_object_put(d);
    return newer;
}

void keyring_adopt_audit(struct keyring *kr, const char *text, size_t len)
{
    struct json_object *a = parse(text, len);

    if (!a || !json_object_is_type(a, json_type_array)) {
        json_object_put(a);
        return;
    }
    pthread_mutex_lock(&kr->lock);
    json_object_put(kr->audit);
    kr->audit = a;
    pthread_mutex_unlock(&kr->lock);
}
