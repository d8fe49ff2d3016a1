/* SPDX-License-Identifier: MIT */
/* store.h -- the gateway's state store: Idempotency-Key records and the tool side-effect
 * ledger, shared by every worker loop. One API, several backends behind a const ops
 * table: memory (one process, lost on exit), SQLite (one process, durable: WAL,
 * synchronous=FULL, an answer only after COMMIT returned) and Redis (several processes).
 *
 * Every operation is asynchronous, with libuv's contract: it is called on the thread that
 * runs <loop>; if it returns an error its callback is never called; otherwise the callback
 * is called exactly once, later, on <loop>, never from inside the call. Nothing here
 * blocks a loop: SQLite runs on the store's own thread. See docs/internals/store.md. */
#ifndef BSC_STORE_STORE_H
#define BSC_STORE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "config/config.h"
#include "core/err.h"
#include "core/str.h"
#include "ledger/idempotency.h"
#include "ledger/ledger.h"

struct store; /* opaque; one per process */

/* A wall clock in ms since the epoch; <ud> is store_opts.clock_ud. */
typedef uint64_t store_clock_fn(void *ud);

/* Tunables; store_opts_default() gives the values in the comments. */
struct store_opts {
    store_clock_fn *clock;       /* NULL: bsc_wall_ms (tests inject a fake one) */
    void *clock_ud;
    uint64_t default_ttl_ms;     /* 24 h: a record's life when begin passes ttl 0 */
    uint64_t inflight_lease_ms;  /* 10 min: an in_flight record older counts as orphaned */
    size_t max_answer_bytes;     /* 8 MiB: headers + body of one stored answer */
    size_t max_pending;          /* 4096: operations accepted and not yet called back */
    size_t mem_max_idem;         /* 100000: memory backend, idempotency records */
    size_t mem_max_idem_bytes;   /* 256 MiB: memory backend, stored answer bytes */
    size_t mem_max_ledger;       /* 100000: memory backend, ledger entries */
    uint64_t purge_interval_ms;  /* 60 s: SQLite deletes expired records this often */
    unsigned batch_max;          /* 64: SQLite operations committed together at most */
    uint64_t sqlite_max_pages;   /* 0: no limit; else PRAGMA max_page_count (tests: a full disk) */
};

/* Fills <o> with the defaults. Cannot fail. */
void store_opts_default(struct store_opts *o);

/* Opens the store <cfg> names, at boot, on the main thread: the SQLite file is created
 * or opened, its schema checked and made, in_flight records left by a previous process
 * dropped. Returns BSC_OK and *<out> (the caller owns it: store_close()); BSC_EINVAL for
 * a kind not built in or a bad URL (rediss://), BSC_EIO when the file cannot be used,
 * BSC_ENOMEM; <err> then says why in a NUL-terminated line. <cfg> is not kept. */
enum bsc_err store_open(const struct cfg_store *cfg, struct store **out, char *err,
                        size_t errlen);
/* The same with tunables <opts> (copied). */
enum bsc_err store_open_opts(const struct cfg_store *cfg, const struct store_opts *opts,
                             struct store **out, char *err, size_t errlen);
/* Finishes what was queued, closes files and frees <st>. Call after every operation's
 * callback has run (after the worker loops ended). NULL is fine. */
void store_close(struct store *st);
/* "memory", "sqlite" or "redis". */
const char *store_kind_name(const struct store *st);
/* False while a remote backend (redis) cannot be reached; *<reason> (may be NULL) is then a
 * static line saying why. Local backends are always up. Thread-safe; NULL <st> is up. */
bool store_is_up(const struct store *st, const char **reason);
/* True when other processes change the same records (redis): a figure read is the fleet's
 * and goes stale. NULL <st> is not shared. */
bool store_is_shared(const struct store *st);

/* ---- idempotency ---------------------------------------------------------------------- */

struct store_idem_result {
    enum idem_decision decision;
    uint64_t claim;                   /* MISS: pass it to complete/abandon */
    const struct idem_answer *answer; /* REPLAY: borrowed until the callback returns */
};

/* <err> is BSC_OK with <res> set, or BSC_EIO / BSC_ELIMIT (store full) with <res> NULL. */
typedef void store_idem_cb(enum bsc_err err, const struct store_idem_result *res, void *ud);
typedef void store_done_cb(enum bsc_err err, void *ud);

/* Atomically, for key <key> (idem_key_valid) in <scope> (0..IDEM_SCOPE_MAX bytes, e.g.
 * the virtual key): no live record -> a new in_flight record with <fp>, MISS and a fresh
 * claim; a record with another fingerprint -> MISMATCH; same fingerprint, in_flight ->
 * IN_FLIGHT; same, complete -> REPLAY with the stored answer. A complete record lives
 * <ttl_ms> (0: the default) from its completion; an in_flight one at most the lease.
 * Returns BSC_EINVAL for a bad key or scope, BSC_ELIMIT when too many operations are
 * pending, BSC_ENOMEM. Slices are copied before the call returns. */
enum bsc_err store_idem_begin(struct store *st, uv_loop_t *loop, struct bsc_str scope,
                              struct bsc_str key, const struct idem_fp *fp, uint64_t ttl_ms,
                              store_idem_cb *cb, void *ud);
/* Stores <answer> (copied before the call returns) as the final answer of the in_flight
 * record <claim> got, and makes it complete. Returns BSC_ELIMIT at once when the answer is
 * larger than max_answer_bytes (abandon the record then), BSC_EINVAL for a bad key or
 * status. The callback gets BSC_OK; BSC_ENOTFOUND when the record is gone (expired,
 * purged); BSC_ESTATE when it is no longer <claim>'s in_flight record; BSC_ELIMIT (memory
 * full), BSC_EIO. */
enum bsc_err store_idem_complete(struct store *st, uv_loop_t *loop, struct bsc_str scope,
                                 struct bsc_str key, uint64_t claim,
                                 const struct idem_answer *answer, store_done_cb *cb,
                                 void *ud);
/* Deletes the in_flight record <claim> got, so that a repeat runs the request again (the
 * request failed in a way that must not be replayed). Same errors as complete. */
enum bsc_err store_idem_abandon(struct store *st, uv_loop_t *loop, struct bsc_str scope,
                                struct bsc_str key, uint64_t claim, store_done_cb *cb,
                                void *ud);

/* ---- the ledger ----------------------------------------------------------------------- */

/* <err> BSC_OK: <entry> is the entry now stored and <outcome> what the put did (get:
 * LEDGER_UNCHANGED). BSC_ESTATE (put): an illegal transition; <entry> is the stored entry,
 * unchanged. BSC_ENOTFOUND (get): no entry; <entry> NULL. BSC_EIO, BSC_ELIMIT: <entry>
 * NULL. <entry> is borrowed until the callback returns. */
typedef void store_ledger_cb(enum bsc_err err, const struct ledger_entry *entry,
                             enum ledger_outcome outcome, void *ud);

/* Reads the entry of <op_id>, applies <u> (ledger_apply: the transition is checked in the
 * same transaction) and writes the result, atomically with respect to every other call.
 * With SQLite the callback runs only after the COMMIT returned: BSC_OK means durable.
 * Returns BSC_EINVAL for an invalid <op_id> or <u>, BSC_ELIMIT, BSC_ENOMEM. */
enum bsc_err store_ledger_put(struct store *st, uv_loop_t *loop, struct bsc_str op_id,
                              const struct ledger_update *u, store_ledger_cb *cb, void *ud);
/* Reads the entry of <op_id>. Returns BSC_EINVAL, BSC_ELIMIT, BSC_ENOMEM. */
enum bsc_err store_ledger_get(struct store *st, uv_loop_t *loop, struct bsc_str op_id,
                              store_ledger_cb *cb, void *ud);

/* ---- blobs: opaque values kept for a while (Responses API conversations) ------------- */

#define STORE_BLOB_KEY_MAX 255 /* bytes of a blob key */

/* <err> BSC_OK with <value> (borrowed until the callback returns); BSC_ENOTFOUND (absent
 * or expired); BSC_EIO. */
typedef void store_blob_cb(enum bsc_err err, struct bsc_str value, void *ud);

/* Stores <value> under <key> (1..STORE_BLOB_KEY_MAX bytes), replacing any, for <ttl_ms>
 * (> 0). Both are copied before the call returns. Returns BSC_EINVAL for a bad key or
 * ttl, BSC_ELIMIT when <value> is larger than max_answer_bytes or too many operations are
 * pending, BSC_ENOMEM. The callback gets BSC_OK, BSC_ELIMIT (memory full), BSC_EIO. */
enum bsc_err store_blob_put(struct store *st, uv_loop_t *loop, struct bsc_str key,
                            struct bsc_str value, uint64_t ttl_ms, store_done_cb *cb, void *ud);
/* Reads the live value of <key>. Returns BSC_EINVAL, BSC_ELIMIT, BSC_ENOMEM. */
enum bsc_err store_blob_get(struct store *st, uv_loop_t *loop, struct bsc_str key,
                            store_blob_cb *cb, void *ud);

/* ---- generations: values a counter voids at once (the shared response cache) ---------- */

/* Redis only (cache.store: redis needs store.kind: redis): the other backends refuse these
 * calls with BSC_EINVAL. A <group> (a route) has a generation, a counter kept without a TTL
 * (absent: 0); each value of the group is stored with the generation it was written under,
 * and is read back only while that is still the group's generation. store_gen_bump makes
 * every value of the group unreachable in one step; they end with their TTL. */
#define STORE_GEN_ANY UINT64_MAX /* store_gen_put: stamp whatever generation is current */

/* <err> BSC_OK with <value> (borrowed until the callback returns) and the generation <gen>;
 * BSC_ENOTFOUND (no value, expired, or written under another generation) with <gen> the
 * current one; BSC_EIO (<gen> 0). */
typedef void store_gen_cb(enum bsc_err err, uint64_t gen, struct bsc_str value, void *ud);

/* Reads <key> of <group> (each 1..STORE_BLOB_KEY_MAX bytes) and the group's generation in
 * one step. Returns BSC_EINVAL (bad argument, or not Redis), BSC_ELIMIT, BSC_ENOMEM. */
enum bsc_err store_gen_get(struct store *st, uv_loop_t *loop, struct bsc_str group,
                           struct bsc_str key, store_gen_cb *cb, void *ud);
/* Stores <value> under <key> of <group> for <ttl_ms> (> 0), stamped with the group's
 * generation, in one step -- only when that is <expect> (the one a lookup read), or any
 * with STORE_GEN_ANY: an answer made before a bump is not stored after it. The callback
 * gets BSC_OK, BSC_ESTATE (the generation moved: not stored), BSC_EIO. Same returns as
 * store_blob_put, and BSC_EINVAL when not Redis. */
enum bsc_err store_gen_put(struct store *st, uv_loop_t *loop, struct bsc_str group,
                           struct bsc_str key, struct bsc_str value, uint64_t ttl_ms,
                           uint64_t expect, store_done_cb *cb, void *ud);
/* Adds one to <group>'s generation; the callback gets the new one (<value> empty), or
 * BSC_EIO. Returns BSC_EINVAL (bad argument, or not Redis), BSC_ELIMIT, BSC_ENOMEM. */
enum bsc_err store_gen_bump(struct store *st, uv_loop_t *loop, struct bsc_str group,
                            store_gen_cb *cb, void *ud);

/* ---- spend: what each client spent in a budget period (clients.<id>.budget) ---------- */

/* <err> BSC_OK with <usd>, the period's total after the operation; BSC_EIO, BSC_ELIMIT. */
typedef void store_spend_cb(enum bsc_err err, double usd, void *ud);

/* Adds <usd> (finite; 0 reads; negative gives back a budget hold an earlier add took) to
 * the spend record <client> (1..CFG_SPEND_ID_MAX bytes: a client, "team:<id>", or either
 * with a route budget's suffix) in the period that starts at <period_ms> (ms since the epoch, UTC; 0 for a total), in one atomic step; a record that
 * does not exist counts as 0. Operations run in the order they were called, so a read sees
 * every add called before it. A record may be dropped <ttl_ms>
 * after its last change (0: kept; only Redis drops them). With a shared store (Redis) the
 * total is the fleet's, every process's adds; an add Redis could not confirm (the callback
 * got BSC_EIO) is kept in the process and added when Redis answers again. Returns
 * BSC_EINVAL, BSC_ELIMIT, BSC_ENOMEM. */
enum bsc_err store_spend_add(struct store *st, uv_loop_t *loop, struct bsc_str client,
                             uint64_t period_ms, uint64_t ttl_ms, double usd,
                             store_spend_cb *cb, void *ud);
/* Sets that spend to <usd> (>= 0): an operator's reset. Same errors. */
enum bsc_err store_spend_set(struct store *st, uv_loop_t *loop, struct bsc_str client,
                             uint64_t period_ms, uint64_t ttl_ms, double usd,
                             store_spend_cb *cb, void *ud);

#endif
