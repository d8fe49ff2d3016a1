/* SPDX-License-Identifier: MIT */
/* keyring.h -- the gateway's run-time administration state: the client keys made through
 * the admin API (one JSON document, config/keyring.c merges it into each snapshot) and the
 * audit trail of admin writes (a JSON array, newest last). Both live in memory behind one
 * lock and are written whole to the store as blobs, so SQLite keeps them across a restart
 * and Redis shares them with the fleet (each instance polls the keyring's revision). See
 * docs/internals/keys.md. */
#ifndef BSC_ROUTER_KEYRING_H
#define BSC_ROUTER_KEYRING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>
#include <uv.h>

#include "core/err.h"

struct store;
struct keyring;

#define KEYRING_BLOB "admin:keyring"
#define KEYRING_AUDIT_BLOB "admin:audit"
#define KEYRING_MAX_KEYS 5000
#define KEYRING_AUDIT_MAX 2000 /* entries kept; the oldest go first */

struct keyring *keyring_new(void);
void keyring_free(struct keyring *kr);

/* A copy of the keyring document's text (caller frees), for a snapshot build. */
char *keyring_text(struct keyring *kr);

/* Takes the lock and returns the document to read or change in place (an object with
 * "rev" and "keys"); keyring_unlock() gives it back. */
struct json_object *keyring_lock(struct keyring *kr);
void keyring_unlock(struct keyring *kr);

typedef void keyring_done_fn(enum bsc_err err, void *ud);

#define KEYRING_MAX_BYTES (7u << 20) /* the document as stored: under the store's 8 MiB */

/* With the lock held: a deep copy of the document, to put back with keyring_restore_locked
 * when a change cannot be committed. NULL when out of memory. */
struct json_object *keyring_save_locked(struct keyring *kr);
/* With the lock held: <saved> (taken) becomes the document again. */
void keyring_restore_locked(struct keyring *kr, struct json_object *saved);

/* With the lock held: BSC_ELIMIT, and nothing done, when the document would be larger than
 * KEYRING_MAX_BYTES; else bumps the revision of the changed document, appends <audit> (taken)
 * to the trail and logs it as one JSON line, and queues both blobs to <st> in this order;
 * <cb> runs on <loop> once both are stored (BSC_OK) or one failed. */
enum bsc_err keyring_commit_locked(struct keyring *kr, struct store *st, uv_loop_t *loop,
                                   struct json_object *audit, keyring_done_fn *cb, void *ud);
/* An audit entry for a write that is not a key's (targets, spend): taken, logged, stored
 * (the lock is taken here). <cb> may be NULL. */
void keyring_audit(struct keyring *kr, struct store *st, uv_loop_t *loop,
                   struct json_object *audit, keyring_done_fn *cb, void *ud);
/* A new audit entry {time_ms, admin, action, subject, before, after} (before and after
 * taken; NULL is JSON null). */
struct json_object *keyring_audit_entry(const char *admin, const char *action,
                                        const char *subject, struct json_object *before,
                                        struct json_object *after);
/* The entries with time_ms >= <since_ms> and, when <subject> is not NULL, that subject, as
 * a JSON array text (caller frees). */
char *keyring_audit_select(struct keyring *kr, uint64_t since_ms, const char *subject);

/* The store's keyring has been read (or found absent): until then a write would replace
 * the fleet's keys with this process's empty set, so the admin API refuses writes. */
void keyring_set_synced(struct keyring *kr);
bool keyring_synced_locked(const struct keyring *kr);

/* Replaces the keyring by <text> (read from the store) when its revision is newer than the
 * one held: true then (the snapshot must be rebuilt). */
bool keyring_adopt(struct keyring *kr, const char *text, size_t len);
/* Replaces the audit trail by <text> (read from the store at start). */
void keyring_adopt_audit(struct keyring *kr, const char *text, size_t len);

#endif
