/* SPDX-License-Identifier: MIT */
/* internal.h -- what the store's backends share, inside store/ only: the job that carries
 * one operation from the caller's loop to a backend and its result back, the backend ops
 * table, and the rules every backend applies the same way. See docs/internals/store.md. */
#ifndef BSC_STORE_INTERNAL_H
#define BSC_STORE_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>

#include <uv.h>

#include "store/store.h"

enum store__op {
    STORE__IDEM_BEGIN = 0,
    STORE__IDEM_COMPLETE,
    STORE__IDEM_ABANDON,
    STORE__LEDGER_PUT,
    STORE__LEDGER_GET,
    STORE__BLOB_PUT,
    STORE__BLOB_GET,
    STORE__SPEND_ADD, /* spend.c: add to a client's spend of a period (0: a read) */
    STORE__SPEND_SET, /* spend.c: set it (reset-spend) */
    STORE__GEN_GET,   /* Redis only: a value of a group and the group's generation */
    STORE__GEN_PUT,   /* Redis only: a value stamped with the group's generation */
    STORE__GEN_BUMP,  /* Redis only: the group's generation + 1 */
    STORE__OP_COUNT
};

/* One operation. Made on the caller's loop thread, run by the backend (on any thread),
 * then handed back with store__job_done(): its callback runs on the caller's loop and
 * the job is freed there, in the close callback of <async>. */
struct store__job {
    uv_async_t async;        /* initialised on the caller's loop; data = the job */
    atomic_bool handed_back; /* release/acquire pair of the hand-back (see store.c) */
    struct store *st;        /* borrowed */
    struct store__job *next; /* the backend's queue link */
    enum store__op op;

    /* inputs: slices into the job's own allocation (<data>) */
    struct bsc_str scope, key; /* key: the idempotency key, or the ledger op id */
    struct idem_fp fp;
    uint64_t ttl_ms;           /* idem: the record's life; spend: the record's TTL (0 none) */
    uint64_t claim;            /* in: complete/abandon; out: begin MISS */
    struct idem_answer in;     /* complete: the answer to store; blob put: in.body */
    struct ledger_update upd;  /* ledger put */
    uint64_t period_ms;        /* spend: the period's start (key = the client id) */
    double usd;                /* spend: in, the amount; out, the period's total */
    uint64_t gen;              /* gen put: in, the generation expected; get, bump: out */

    /* outputs, set by the backend */
    enum bsc_err err;
    enum idem_decision decision;
    int status;                /* REPLAY: the stored answer */
    bool stream;
    char *headers, *body;      /* owned (malloc'd), freed with the job; blob get: body */
    size_t headers_len, body_len;
    bool has_entry;
    struct ledger_entry entry;
    enum ledger_outcome outcome;

    union {
        store_idem_cb *idem;
        store_done_cb *done;
        store_ledger_cb *ledger;
        store_blob_cb *blob;
        store_spend_cb *spend;
        store_gen_cb *gen;
    } cb;
    void *ud;
    char data[]; /* the input bytes the slices point into */
};

/* What every backend provides. The backend's own struct starts with a struct store. */
struct store_ops {
    const char *name;
    enum bsc_err (*open)(const struct cfg_store *cfg, const struct store_opts *opts,
                         struct store **out, char *err, size_t errlen);
    /* Runs everything accepted, then frees the store. */
    void (*close)(struct store *st);
    /* Takes <job>: runs it now or later, on any thread, then store__job_done(job).
     * BSC_OK, or an error with the job not taken. Never calls the job's callback. */
    enum bsc_err (*submit)(struct store *st, struct store__job *job);
};

struct store {
    const struct store_ops *ops;
    struct store_opts opts;
    atomic_size_t pending; /* jobs accepted whose callback has not returned yet */
    atomic_bool up;        /* false while a remote backend cannot be reached */
    _Atomic(const char *) down_reason; /* static string, NULL when up */
};

extern const struct store_ops store__mem;
extern const struct store_ops store__sqlite;
extern const struct store_ops store__redis;

/* Fills the common part of a backend's store; the backend's open calls it first. */
void store__base_init(struct store *st, const struct store_ops *ops,
                      const struct store_opts *opts);

/* Hands a finished job back to its loop; callable from any thread. The caller must not
 * touch <job> afterwards. */
void store__job_done(struct store__job *job);

/* store.c's job helpers, for the operations defined in other files (spend.c): a zeroed job
 * with <extra> bytes for its inputs; copies <s> into them at *<at>; submits it (frees the
 * job on error: the callback is never called then). */
struct store__job *store__job_new(struct store *st, enum store__op op, size_t extra);
struct bsc_str store__put_bytes(struct store__job *job, size_t *at, struct bsc_str s);
enum bsc_err store__submit(struct store *st, uv_loop_t *loop, struct store__job *job);

/* The memory backend's spend records (spend.c), guarded by the backend's mutex. */
struct store__spend_row;
struct store__spend_tab {
    struct store__spend_row *rows; /* owned */
    size_t n, cap;
};
/* Runs a STORE__SPEND_* job against <t>. */
void store__spend_mem_run(struct store__spend_tab *t, struct store__job *job);
void store__spend_tab_free(struct store__spend_tab *t);

/* Spend adds a remote backend could not confirm, kept to be added when it can again
 * (spend_defer.c): one sum per record key, at most STORE__DEFER_MAX keys. The backend's
 * thread only. */
#define STORE__DEFER_MAX 4096
struct store__defer_row {
    char *key; /* owned */
    size_t len;
    double usd;
    uint64_t ttl_ms;
};
struct store__defer {
    struct store__defer_row *rows; /* owned */
    size_t n, cap;
};
/* Adds <usd> to the sum of <key> (the row made at 0 when absent; <ttl_ms> the latest).
 * BSC_OK, BSC_ELIMIT when STORE__DEFER_MAX keys are kept already, BSC_ENOMEM. */
enum bsc_err store__defer_add(struct store__defer *d, const char *key, size_t len, double usd,
                              uint64_t ttl_ms);
/* Forgets the sum of <key> (an operator reset the record). */
void store__defer_drop(struct store__defer *d, const char *key, size_t len);
/* Takes one row out into *<out> (the caller owns out->key); false when none is left. */
bool store__defer_pop(struct store__defer *d, struct store__defer_row *out);
void store__defer_free(struct store__defer *d);

/* The store's wall clock. */
uint64_t store__now(const struct store *st);
/* A fresh non-zero claim token. */
uint64_t store__new_claim(void);

/* What complete/abandon make of the record they found (<expired>: its time is up):
 * BSC_OK when it is the caller's in_flight record <claim> (even past its lease: nobody
 * took the key over), else BSC_ENOTFOUND when it expired, else BSC_ESTATE. A backend
 * that finds no record at all answers BSC_ENOTFOUND itself. */
enum bsc_err store__claim_check(enum idem_state state, uint64_t rec_claim, uint64_t claim,
                                bool expired);

/* Copies the answer of a replay into <job>'s outputs. BSC_OK or BSC_ENOMEM. */
enum bsc_err store__job_set_answer(struct store__job *job, int status, bool stream,
                                   struct bsc_str headers, struct bsc_str body);

/* Runs a ledger put or get in <job> against the entry found (<cur>, NULL when none) at
 * <now_ms>: sets the job's outputs and returns true when <job->entry> must be written. */
bool store__ledger_step(struct store__job *job, const struct ledger_entry *cur,
                        uint64_t now_ms);

/* ---- Redis's persistence, read at connect (redis_persist.c) ---- */

/* What CONFIG GET said of Redis's persistence. A value Redis refused to give (CONFIG renamed
 * away, an ACL) stays NULL. Strings are borrowed for the call. */
struct store__redis_persist {
    const char *appendonly;  /* "yes" | "no" */
    const char *appendfsync; /* "always" | "everysec" | "no" */
    const char *save;        /* RDB snapshot rules, "" = none */
};

/* How far an acknowledged write survives a Redis crash. */
enum store__durability {
    STORE__DURABLE = 0, /* every write fsynced to the AOF before Redis replies */
    STORE__LOSSY,       /* writes reach disk later: the last ones can be lost */
    STORE__NOTHING,     /* no AOF, no snapshots: everything is lost when Redis stops */
    STORE__UNKNOWN,     /* the configuration could not be read */
    STORE__DURABILITY_COUNT
};

/* Says in <msg> (<len> bytes) what of an acknowledged ledger write survives a Redis crash or
 * kill under <p>, in words for the start-up log, and returns the verdict. Pure. */
enum store__durability store__redis_durability(const struct store__redis_persist *p, char *msg,
                                               size_t len);

#endif
