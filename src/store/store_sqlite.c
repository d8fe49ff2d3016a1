/* SPDX-License-Identifier: MIT */
/* store_sqlite.c -- the SQLite backend: one connection, owned by one writer thread that
 * runs the jobs of every worker loop in arrival order. Jobs that queued up meanwhile are
 * committed together (group commit: one fsync for up to batch_max operations), and no
 * callback is released before its COMMIT returned, so an acknowledged ledger write
 * survives kill -9 and power loss (WAL, synchronous=FULL). The loops never touch the
 * file. One gateway process per file. See docs/internals/store.md. */
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "core/log.h"
#include "store/internal.h"

#define SCHEMA_VERSION 1
#define PURGE_ROWS 1000  /* expired records one purge statement deletes at most */
#define PURGE_ROUNDS 100 /* statements one purge runs at most */
#define BUSY_TIMEOUT_MS 5000

static const char SCHEMA[] =
    "CREATE TABLE IF NOT EXISTS idem ("
    " scope BLOB NOT NULL,"
    " key BLOB NOT NULL,"
    " fingerprint BLOB NOT NULL CHECK (length(fingerprint) = 32),"
    " state TEXT NOT NULL CHECK (state IN ('in_flight', 'complete')),"
    " claim INTEGER NOT NULL,"
    " ttl_ms INTEGER NOT NULL,"
    " created_ms INTEGER NOT NULL,"
    " expires_ms INTEGER NOT NULL,"
    " status INTEGER,"
    " stream INTEGER NOT NULL DEFAULT 0,"
    " headers BLOB,"
    " body BLOB,"
    " PRIMARY KEY (scope, key)"
    ") STRICT;"
    "CREATE INDEX IF NOT EXISTS idem_expires ON idem (expires_ms);"
    "CREATE TABLE IF NOT EXISTS ledger ("
    " op_id TEXT PRIMARY KEY,"
    " tool_name TEXT NOT NULL,"
    " state TEXT NOT NULL"
    "  CHECK (state IN ('planned', 'started', 'succeeded', 'failed', 'unknown')),"
    " external_reference TEXT,"
    " version INTEGER NOT NULL,"
    " created_ms INTEGER NOT NULL,"
    " updated_ms INTEGER NOT NULL"
    ") STRICT;"
    /* Added after version 1 shipped: IF NOT EXISTS makes it appear in older files too. */
    "CREATE TABLE IF NOT EXISTS blob ("
    " key BLOB PRIMARY KEY,"
    " value BLOB NOT NULL,"
    " expires_ms INTEGER NOT NULL"
    ") STRICT;"
    "CREATE INDEX IF NOT EXISTS blob_expires ON blob (expires_ms);"
    /* Spend per client and budget period (period_ms: its UTC start; 0 for a total). */
    "CREATE TABLE IF NOT EXISTS spend ("
    " client TEXT NOT NULL,"
    " period_ms INTEGER NOT NULL,"
    " usd REAL NOT NULL,"
    " PRIMARY KEY (client, period_ms)"
    ") STRICT;";

#define SQ_STMTS(X)                                                                        \
    X(BEGIN, "BEGIN IMMEDIATE")                                                            \
    X(COMMIT, "COMMIT")                                                                    \
    X(ROLLBACK, "ROLLBACK")                                                                \
    X(IDEM_GET, "SELECT fingerprint, state, claim, ttl_ms, expires_ms, status, stream,"    \
                " headers, body FROM idem WHERE scope = ?1 AND key = ?2")                  \
    X(IDEM_INSERT, "INSERT OR REPLACE INTO idem (scope, key, fingerprint, state, claim,"   \
                   " ttl_ms, created_ms, expires_ms) VALUES (?1, ?2, ?3, 'in_flight', ?4," \
                   " ?5, ?6, ?7)")                                                         \
    X(IDEM_COMPLETE, "UPDATE idem SET state = 'complete', expires_ms = ?3, status = ?4,"   \
                     " stream = ?5, headers = ?6, body = ?7 WHERE scope = ?1 AND key = ?2")\
    X(IDEM_DELETE, "DELETE FROM idem WHERE scope = ?1 AND key = ?2")                       \
    X(IDEM_PURGE, "DELETE FROM idem WHERE rowid IN (SELECT rowid FROM idem"                \
                  " WHERE expires_ms <= ?1 LIMIT ?2)")                                     \
    X(LEDGER_GET, "SELECT tool_name, state, external_reference, version, created_ms,"      \
                  " updated_ms FROM ledger WHERE op_id = ?1")                              \
    X(LEDGER_PUT, "INSERT OR REPLACE INTO ledger (op_id, tool_name, state,"                \
                  " external_reference, version, created_ms, updated_ms)"                  \
                  " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")                                \
    X(BLOB_GET, "SELECT value FROM blob WHERE key = ?1 AND expires_ms > ?2")              \
    X(BLOB_PUT, "INSERT OR REPLACE INTO blob (key, value, expires_ms) VALUES (?1, ?2, ?3)") \
    X(BLOB_PURGE, "DELETE FROM blob WHERE rowid IN (SELECT rowid FROM blob"                \
                  " WHERE expires_ms <= ?1 LIMIT ?2)")                                     \
    X(SPEND_GET, "SELECT usd FROM spend WHERE client = ?1 AND period_ms = ?2")           \
    X(SPEND_ADD, "INSERT INTO spend (client, period_ms, usd) VALUES (?1, ?2, ?3)"        \
                 " ON CONFLICT (client, period_ms) DO UPDATE SET usd = usd + excluded.usd") \
    X(SPEND_SET, "INSERT OR REPLACE INTO spend (client, period_ms, usd) VALUES (?1, ?2, ?3)")

enum sq_stmt {
#define X(NAME, sql) SQ_##NAME,
    SQ_STMTS(X)
#undef X
    SQ_COUNT
};

static const char *const sq_sql[] = {
#define X(NAME, sql) [SQ_##NAME] = sql,
    SQ_STMTS(X)
#undef X
};

/* One file of the database, as this process opened it: the path and the identity the path
 * had then. A path that names another file (or none) means that what is committed will not
 * be found there after a restart. */
struct sq_file {
    char path[4096]; /* "" when not checked (an in-memory database, no WAL yet) */
    dev_t dev;
    ino_t ino;
};

struct sq_store {
    struct store base;
    sqlite3 *db;                   /* owned; only the writer thread uses it once started */
    sqlite3_stmt *stmt[SQ_COUNT];  /* owned; prepared at open */
    uv_thread_t thread;
    uv_mutex_t mu;                 /* guards the queue and <stop> */
    uv_cond_t cv;
    struct store__job *head, *tail;
    bool stop;
    uint64_t next_purge_ms;        /* writer thread only */
    struct sq_file files[2];       /* the database and its WAL, as opened */
    bool file_lost;                /* writer thread only: a path no longer names its file */
};

/* ---- statement helpers (writer thread) -------------------------------------------------- */

static sqlite3_stmt *stmt(struct sq_store *q, enum sq_stmt which)
{
    return q->stmt[which];
}

static void done_with(sqlite3_stmt *s)
{
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
}

static enum bsc_err db_error(struct sq_store *q, const char *what)
{
    LOG_ERR("store: sqlite %s: %s", what, sqlite3_errmsg(q->db));
    return BSC_EIO;
}

/* Steps <s> to its end (a statement without rows) and resets it. */
static enum bsc_err run(struct sq_store *q, enum sq_stmt which)
{
    sqlite3_stmt *s = stmt(q, which);
    int rc = sqlite3_step(s);
    enum bsc_err err = rc == SQLITE_DONE ? BSC_OK : db_error(q, sq_sql[which]);

    done_with(s); /* after db_error: the message is the step's */
    return err;
}

static void bind_bytes(sqlite3_stmt *s, int i, struct bsc_str v)
{
    /* A NULL pointer would bind SQL NULL; an empty blob is not NULL. */
    sqlite3_bind_blob(s, i, v.p ? v.p : "", (int)v.len, SQLITE_STATIC);
}

static void bind_u64(sqlite3_stmt *s, int i, uint64_t v)
{
    sqlite3_bind_int64(s, i, v > INT64_MAX ? INT64_MAX : (sqlite3_int64)v);
}

static struct bsc_str col_bytes(sqlite3_stmt *s, int i)
{
    return bsc_str_make(sqlite3_column_blob(s, i), (size_t)sqlite3_column_bytes(s, i));
}

static struct bsc_str col_text(sqlite3_stmt *s, int i)
{
    return bsc_str_make((const char *)sqlite3_column_text(s, i),
                        (size_t)sqlite3_column_bytes(s, i));
}

/* ---- idempotency jobs ------------------------------------------------------------------- */

struct sq_idem {
    struct idem_record rec;
    uint64_t claim, ttl_ms;
};

/* Reads the row of the job's key into *<r> (IDEM_GET stays on the row: the caller resets
 * it). Returns BSC_OK (found), BSC_ENOTFOUND, or BSC_EIO. */
static enum bsc_err idem_read(struct sq_store *q, struct store__job *job, struct sq_idem *r)
{
    sqlite3_stmt *s = stmt(q, SQ_IDEM_GET);
    struct bsc_str fp, state;
    int rc;

    bind_bytes(s, 1, job->scope);
    bind_bytes(s, 2, job->key);
    rc = sqlite3_step(s);
    if (rc == SQLITE_DONE)
        return BSC_ENOTFOUND;
    if (rc != SQLITE_ROW)
        return db_error(q, "select idem");
    fp = col_bytes(s, 0);
    state = col_text(s, 1);
    if (fp.len != IDEM_FP_LEN) {
        LOG_ERR("store: idempotency record with a %zu-byte fingerprint", fp.len);
        return BSC_EIO;
    }
    memcpy(r->rec.fp.b, fp.p, IDEM_FP_LEN);
    r->rec.state = bsc_str_eq(state, BSC_STR("complete")) ? IDEM_ST_COMPLETE : IDEM_ST_IN_FLIGHT;
    r->claim = (uint64_t)sqlite3_column_int64(s, 2);
    r->ttl_ms = (uint64_t)sqlite3_column_int64(s, 3);
    r->rec.expires_ms = (uint64_t)sqlite3_column_int64(s, 4);
    return BSC_OK;
}

static enum bsc_err idem_insert(struct sq_store *q, struct store__job *job, uint64_t now)
{
    sqlite3_stmt *s = stmt(q, SQ_IDEM_INSERT);

    job->claim = store__new_claim();
    bind_bytes(s, 1, job->scope);
    bind_bytes(s, 2, job->key);
    sqlite3_bind_blob(s, 3, job->fp.b, IDEM_FP_LEN, SQLITE_STATIC);
    sqlite3_bind_int64(s, 4, (sqlite3_int64)job->claim);
    bind_u64(s, 5, job->ttl_ms);
    bind_u64(s, 6, now);
    bind_u64(s, 7, idem_expiry(IDEM_ST_IN_FLIGHT, now, job->ttl_ms,
                               q->base.opts.inflight_lease_ms));
    return run(q, SQ_IDEM_INSERT);
}

static enum bsc_err run_begin(struct sq_store *q, struct store__job *job, uint64_t now)
{
    sqlite3_stmt *s = stmt(q, SQ_IDEM_GET);
    struct sq_idem r;
    enum bsc_err err = idem_read(q, job, &r);

    if (err && err != BSC_ENOTFOUND) {
        done_with(s);
        return err;
    }
    job->decision = idem_decide(err ? NULL : &r.rec, &job->fp, now);
    err = BSC_OK;
    if (job->decision == IDEM_REPLAY)
        err = store__job_set_answer(job, sqlite3_column_int(s, 5), sqlite3_column_int(s, 6),
                                    col_bytes(s, 7), col_bytes(s, 8));
    done_with(s);
    if (!err && job->decision == IDEM_MISS)
        err = idem_insert(q, job, now);
    return err;
}

/* Checks that the job's record is its claim's; leaves IDEM_GET reset. */
static enum bsc_err check_claim(struct sq_store *q, struct store__job *job, uint64_t now,
                                struct sq_idem *r)
{
    enum bsc_err err = idem_read(q, job, r);

    done_with(stmt(q, SQ_IDEM_GET));
    if (err)
        return err;
    return store__claim_check(r->rec.state, r->claim, job->claim,
                              idem_record_expired(&r->rec, now));
}

static enum bsc_err run_complete(struct sq_store *q, struct store__job *job, uint64_t now)
{
    sqlite3_stmt *s = stmt(q, SQ_IDEM_COMPLETE);
    struct sq_idem r;
    enum bsc_err err = check_claim(q, job, now, &r);

    if (err)
        return err;
    bind_bytes(s, 1, job->scope);
    bind_bytes(s, 2, job->key);
    bind_u64(s, 3, idem_expiry(IDEM_ST_COMPLETE, now, r.ttl_ms, 0));
    sqlite3_bind_int(s, 4, job->in.status);
    sqlite3_bind_int(s, 5, job->in.stream);
    bind_bytes(s, 6, job->in.headers);
    bind_bytes(s, 7, job->in.body);
    return run(q, SQ_IDEM_COMPLETE);
}

static enum bsc_err run_abandon(struct sq_store *q, struct store__job *job, uint64_t now)
{
    sqlite3_stmt *s = stmt(q, SQ_IDEM_DELETE);
    struct sq_idem r;
    enum bsc_err err = check_claim(q, job, now, &r);

    if (err)
        return err;
    bind_bytes(s, 1, job->scope);
    bind_bytes(s, 2, job->key);
    return run(q, SQ_IDEM_DELETE);
}

/* ---- ledger jobs ------------------------------------------------------------------------ */

static void copy_cstr(char *dst, size_t cap, struct bsc_str s)
{
    size_t n = s.len < cap - 1 ? s.len : cap - 1;

    if (n)
        memcpy(dst, s.p, n);
    dst[n] = '\0';
}

/* Reads the entry of the job's op id. Returns BSC_OK, BSC_ENOTFOUND or BSC_EIO. */
static enum bsc_err ledger_read(struct sq_store *q, struct store__job *job,
                                struct ledger_entry *e)
{
    sqlite3_stmt *s = stmt(q, SQ_LEDGER_GET);
    enum bsc_err err = BSC_OK;
    int rc;

    sqlite3_bind_text(s, 1, job->key.p, (int)job->key.len, SQLITE_STATIC);
    rc = sqlite3_step(s);
    if (rc == SQLITE_DONE) {
        err = BSC_ENOTFOUND;
    } else if (rc != SQLITE_ROW) {
        err = db_error(q, "select ledger");
    } else {
        memset(e, 0, sizeof(*e));
        copy_cstr(e->op_id, sizeof(e->op_id), job->key);
        copy_cstr(e->tool_name, sizeof(e->tool_name), col_text(s, 0));
        if (!ledger_state_parse(col_text(s, 1), &e->state))
            err = BSC_EIO;
        copy_cstr(e->external_reference, sizeof(e->external_reference), col_text(s, 2));
        e->version = (uint32_t)sqlite3_column_int64(s, 3);
        e->created_ms = (uint64_t)sqlite3_column_int64(s, 4);
        e->updated_ms = (uint64_t)sqlite3_column_int64(s, 5);
    }
    done_with(s);
    return err;
}

static enum bsc_err ledger_write(struct sq_store *q, const struct ledger_entry *e)
{
    sqlite3_stmt *s = stmt(q, SQ_LEDGER_PUT);

    sqlite3_bind_text(s, 1, e->op_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, e->tool_name, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, ledger_state_name(e->state), -1, SQLITE_STATIC);
    if (e->external_reference[0])
        sqlite3_bind_text(s, 4, e->external_reference, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, 4);
    sqlite3_bind_int64(s, 5, e->version);
    bind_u64(s, 6, e->created_ms);
    bind_u64(s, 7, e->updated_ms);
    return run(q, SQ_LEDGER_PUT);
}

static enum bsc_err run_ledger(struct sq_store *q, struct store__job *job, uint64_t now)
{
    struct ledger_entry cur;
    enum bsc_err err = ledger_read(q, job, &cur);

    if (err && err != BSC_ENOTFOUND)
        return err;
    if (!store__ledger_step(job, err ? NULL : &cur, now))
        return BSC_OK; /* the job's own answer (OK, ESTATE, ENOTFOUND) is in job->err */
    return ledger_write(q, &job->entry);
}

/* ---- blobs ------------------------------------------------------------------------------ */

static enum bsc_err run_blob_put(struct sq_store *q, struct store__job *job, uint64_t now)
{
    sqlite3_stmt *s = stmt(q, SQ_BLOB_PUT);

    bind_bytes(s, 1, job->key);
    bind_bytes(s, 2, job->in.body);
    bind_u64(s, 3, now + job->ttl_ms);
    return run(q, SQ_BLOB_PUT);
}

static enum bsc_err run_blob_get(struct sq_store *q, struct store__job *job, uint64_t now)
{
    sqlite3_stmt *s = stmt(q, SQ_BLOB_GET);
    enum bsc_err err = BSC_OK;
    struct bsc_str v;
    int rc;

    bind_bytes(s, 1, job->key);
    bind_u64(s, 2, now);
    rc = sqlite3_step(s);
    if (rc == SQLITE_DONE) {
        err = BSC_ENOTFOUND;
    } else if (rc != SQLITE_ROW) {
        err = db_error(q, "select blob");
    } else {
        v = col_bytes(s, 0);
        job->body = malloc(v.len + 1);
        if (!job->body) {
            err = BSC_ENOMEM;
        } else {
            if (v.len)
                memcpy(job->body, v.p, v.len);
            job->body[v.len] = '\0';
            job->body_len = v.len;
        }
    }
    done_with(s);
    /* Not found is the job's answer, not a failure of the transaction. */
    job->err = err;
    return err == BSC_ENOTFOUND ? BSC_OK : err;
}

/* ---- spend ------------------------------------------------------------------------------ */

/* The add (or set) and the read of the total run in the job's transaction: atomic with
 * respect to every other job. An add of 0 only reads. */
/* The client column is TEXT in a STRICT table: bound as text, never as a blob. */
static void bind_client(sqlite3_stmt *s, struct bsc_str id)
{
    sqlite3_bind_text(s, 1, id.p, (int)id.len, SQLITE_STATIC);
}

static enum bsc_err run_spend(struct sq_store *q, struct store__job *job)
{
    sqlite3_stmt *s;
    enum bsc_err err = BSC_OK;
    int rc;

    if (job->op == STORE__SPEND_SET || job->usd != 0) { /* negative: a hold given back */
        enum sq_stmt which = job->op == STORE__SPEND_SET ? SQ_SPEND_SET : SQ_SPEND_ADD;

        s = stmt(q, which);
        bind_client(s, job->key);
        bind_u64(s, 2, job->period_ms);
        sqlite3_bind_double(s, 3, job->usd);
        if ((err = run(q, which)) != BSC_OK)
            return err;
    }
    s = stmt(q, SQ_SPEND_GET);
    bind_client(s, job->key);
    bind_u64(s, 2, job->period_ms);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        job->usd = sqlite3_column_double(s, 0);
    else if (rc == SQLITE_DONE)
        job->usd = 0;
    else
        err = db_error(q, "select spend");
    done_with(s);
    return err;
}

/* ---- the writer thread ------------------------------------------------------------------ */

/* Clears what a failed job would have answered, so the caller sees only <err>. */
static void fail_job(struct store__job *job, enum bsc_err err)
{
    job->err = err;
    job->has_entry = false;
    BSC_FREE(job->headers);
    BSC_FREE(job->body);
}

/* Runs one job inside the open transaction. A database error fails the job; the return
 * says whether the transaction itself is still alive. */
static bool run_job(struct sq_store *q, struct store__job *job)
{
    uint64_t now = store__now(&q->base);
    enum bsc_err err;

    job->err = BSC_OK;
    switch (job->op) {
    case STORE__IDEM_BEGIN: err = run_begin(q, job, now); break;
    case STORE__IDEM_COMPLETE: err = run_complete(q, job, now); break;
    case STORE__IDEM_ABANDON: err = run_abandon(q, job, now); break;
    case STORE__LEDGER_PUT:
    case STORE__LEDGER_GET: err = run_ledger(q, job, now); break;
    case STORE__BLOB_PUT: err = run_blob_put(q, job, now); break;
    case STORE__BLOB_GET: err = run_blob_get(q, job, now); break;
    case STORE__SPEND_ADD:
    case STORE__SPEND_SET: err = run_spend(q, job); break;
    default: BSC_BUG_ON(1);
    }
    if (err)
        fail_job(job, err);
    /* Some errors (I/O, full disk) make SQLite roll the whole transaction back. */
    return !sqlite3_get_autocommit(q->db);
}

/* True when <f>'s path still names the file that was opened (or <f> is not checked). */
static bool file_in_place(const struct sq_file *f)
{
    struct stat sb;

    return !f->path[0] ||
           (stat(f->path, &sb) == 0 && sb.st_dev == f->dev && sb.st_ino == f->ino);
}

/* Whether the database and its WAL are still where a restart will look for them: a file
 * deleted or replaced while open takes every later commit with it. Checked before and
 * after each batch, on this thread (two stat() calls beside an fsync); the store stays
 * failed while a path names another file or none, and resumes by itself once the files
 * are back in place (moved back). It never adopts a new file: see docs/internals/store.md. */
static bool files_in_place(struct sq_store *q)
{
    const struct sq_file *off = !file_in_place(&q->files[0])   ? &q->files[0]
                                : !file_in_place(&q->files[1]) ? &q->files[1]
                                                               : NULL;
    bool ok = !off;

    if (!ok && !q->file_lost)
        LOG_ERR("store: %s is no longer the file this gateway opened (deleted or replaced): "
                "every store operation fails (503 store_unavailable) until the file is put "
                "back or the gateway restarts", off->path);
    else if (ok && q->file_lost)
        LOG_INFO("store: %s is back in place: store operations resume", q->files[0].path);
    q->file_lost = !ok;
    return ok;
}

/* Runs <batch> (a list) in one transaction, then releases every callback. */
static void run_batch(struct sq_store *q, struct store__job *batch)
{
    struct store__job *job, *next;
    bool alive = files_in_place(q) && run(q, SQ_BEGIN) == BSC_OK;

    for (job = batch; alive && job; job = job->next)
        alive = run_job(q, job);
    if (alive && run(q, SQ_COMMIT) != BSC_OK) {
        alive = false;
        if (!sqlite3_get_autocommit(q->db))
            run(q, SQ_ROLLBACK);
    }
    /* Committed, but into a file a restart will not read: not acknowledged either (the
     * answer is the 503 of an I/O error; a retried ledger put is a harmless repeat). */
    if (alive && !files_in_place(q))
        alive = false;
    for (job = batch; job; job = next) {
        next = job->next;
        if (!alive)
            fail_job(job, BSC_EIO); /* nothing of this batch was committed */
        store__job_done(job);       /* the job belongs to its loop from here */
    }
}

/* Deletes expired idempotency records, a bounded number of rows per statement. */
static void purge(struct sq_store *q, uint64_t now)
{
    sqlite3_stmt *s = stmt(q, SQ_IDEM_PURGE);
    int deleted = PURGE_ROWS;

    for (int round = 0; round < PURGE_ROUNDS && deleted == PURGE_ROWS; round++) {
        bind_u64(s, 1, now);
        sqlite3_bind_int(s, 2, PURGE_ROWS);
        if (run(q, SQ_IDEM_PURGE) != BSC_OK)
            break;
        deleted = sqlite3_changes(q->db);
    }
    s = stmt(q, SQ_BLOB_PURGE);
    deleted = PURGE_ROWS;
    for (int round = 0; round < PURGE_ROUNDS && deleted == PURGE_ROWS; round++) {
        bind_u64(s, 1, now);
        sqlite3_bind_int(s, 2, PURGE_ROWS);
        if (run(q, SQ_BLOB_PURGE) != BSC_OK)
            break;
        deleted = sqlite3_changes(q->db);
    }
}

/* Waits for work or the purge time; returns the jobs taken (at most batch_max), and
 * sets *<last> once the store is closing and the queue is empty. */
static struct store__job *take_batch(struct sq_store *q, bool *last)
{
    struct store__job *batch, *end;
    uint64_t wait_ns = q->base.opts.purge_interval_ms * 1000000ull;
    unsigned n = 1;

    uv_mutex_lock(&q->mu);
    if (!q->head && !q->stop)
        uv_cond_timedwait(&q->cv, &q->mu, wait_ns ? wait_ns : 1000000000ull);
    batch = end = q->head;
    while (end && end->next && n < q->base.opts.batch_max)
        end = end->next, n++;
    if (end) {
        q->head = end->next;
        if (!q->head)
            q->tail = NULL;
        end->next = NULL;
    }
    *last = q->stop && !q->head;
    uv_mutex_unlock(&q->mu);
    return batch;
}

static void writer_main(void *arg)
{
    struct sq_store *q = arg;
    bool last = false;

    while (!last) {
        uint64_t now = store__now(&q->base);
        struct store__job *batch;
        if (q->base.opts.purge_interval_ms && now >= q->next_purge_ms && !q->file_lost) {
            purge(q, now);
            q->next_purge_ms = now + q->base.opts.purge_interval_ms;
        }
        batch = take_batch(q, &last);
        if (batch)
            run_batch(q, batch);
    }
}

static enum bsc_err sq_submit(struct store *st, struct store__job *job)
{
    struct sq_store *q = (struct sq_store *)st;

    job->next = NULL;
    uv_mutex_lock(&q->mu);
    if (q->tail)
        q->tail->next = job;
    else
        q->head = job;
    q->tail = job;
    uv_cond_signal(&q->cv);
    uv_mutex_unlock(&q->mu);
    return BSC_OK;
}

/* ---- open and close (main thread) ------------------------------------------------------- */

static void sq_free(struct sq_store *q)
{
    for (int i = 0; i < SQ_COUNT; i++)
        sqlite3_finalize(q->stmt[i]);
    sqlite3_close_v2(q->db);
    free(q);
}

static void sq_close(struct store *st)
{
    struct sq_store *q = (struct sq_store *)st;

    uv_mutex_lock(&q->mu);
    q->stop = true;
    uv_cond_signal(&q->cv);
    uv_mutex_unlock(&q->mu);
    uv_thread_join(&q->thread);
    uv_cond_destroy(&q->cv);
    uv_mutex_destroy(&q->mu);
    sq_free(q);
}

static enum bsc_err exec(struct sq_store *q, const char *sql, const char *path, char *err,
                         size_t errlen)
{
    char *msg = NULL;

    if (sqlite3_exec(q->db, sql, NULL, NULL, &msg) == SQLITE_OK)
        return BSC_OK;
    snprintf(err, errlen, "sqlite store %s: %s", path, msg ? msg : sqlite3_errmsg(q->db));
    sqlite3_free(msg);
    return BSC_EIO;
}

/* Reads one integer or text pragma into <out> (text) / *<num>. */
static enum bsc_err pragma(struct sq_store *q, const char *sql, char *out, size_t outlen,
                           long long *num)
{
    sqlite3_stmt *s;
    int rc = sqlite3_prepare_v2(q->db, sql, -1, &s, NULL);

    if (rc != SQLITE_OK)
        return BSC_EIO;
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        const unsigned char *text = sqlite3_column_text(s, 0);
        if (out)
            snprintf(out, outlen, "%s", text ? (const char *)text : "");
        if (num)
            *num = sqlite3_column_int64(s, 0);
    }
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? BSC_OK : BSC_EIO;
}

/* WAL, synchronous=FULL, the schema at SCHEMA_VERSION, the statements prepared. */
static enum bsc_err setup(struct sq_store *q, const char *path, char *err, size_t errlen)
{
    char mode[32] = "", set_version[64];
    long long version = 0;

    sqlite3_busy_timeout(q->db, BUSY_TIMEOUT_MS);
    sqlite3_extended_result_codes(q->db, 1);
    if (pragma(q, "PRAGMA journal_mode=WAL", mode, sizeof(mode), NULL) ||
        (strcmp(mode, "wal") != 0 && strcmp(path, ":memory:") != 0)) {
        snprintf(err, errlen, "sqlite store %s: cannot use WAL mode (journal_mode=%s): %s",
                 path, mode, sqlite3_errmsg(q->db));
        return BSC_EIO;
    }
    if (exec(q, "PRAGMA synchronous=FULL; PRAGMA foreign_keys=OFF; PRAGMA trusted_schema=OFF",
             path, err, errlen))
        return BSC_EIO;
    if (pragma(q, "PRAGMA user_version", NULL, 0, &version)) {
        snprintf(err, errlen, "sqlite store %s: %s", path, sqlite3_errmsg(q->db));
        return BSC_EIO;
    }
    if (version > SCHEMA_VERSION) {
        snprintf(err, errlen, "sqlite store %s: schema version %lld is newer than this "
                 "gateway's (%d)", path, version, SCHEMA_VERSION);
        return BSC_EINVAL;
    }
    snprintf(set_version, sizeof(set_version), "PRAGMA user_version=%d", SCHEMA_VERSION);
    if (exec(q, "BEGIN IMMEDIATE", path, err, errlen) ||
        exec(q, SCHEMA, path, err, errlen) ||
        exec(q, set_version, path, err, errlen) ||
        /* This process is the file's only user: in_flight records are orphans of the
         * previous one, and would answer 409 to every retry until their lease ended. */
        exec(q, "DELETE FROM idem WHERE state = 'in_flight'", path, err, errlen) ||
        exec(q, "COMMIT", path, err, errlen))
        return BSC_EIO;
    if (q->base.opts.sqlite_max_pages) {
        snprintf(set_version, sizeof(set_version), "PRAGMA max_page_count=%llu",
                 (unsigned long long)q->base.opts.sqlite_max_pages);
        if (exec(q, set_version, path, err, errlen))
            return BSC_EIO;
    }
    for (int i = 0; i < SQ_COUNT; i++) {
        if (sqlite3_prepare_v3(q->db, sq_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &q->stmt[i],
                               NULL) != SQLITE_OK) {
            snprintf(err, errlen, "sqlite store %s: preparing \"%s\": %s", path, sq_sql[i],
                     sqlite3_errmsg(q->db));
            return BSC_EIO;
        }
    }
    return BSC_OK;
}

/* Records what <path> names now, as <f>. False when it names nothing or is too long. */
static bool file_note(struct sq_file *f, const char *path)
{
    struct stat sb;

    if (strlen(path) >= sizeof(f->path) || stat(path, &sb) != 0)
        return false;
    snprintf(f->path, sizeof(f->path), "%s", path);
    f->dev = sb.st_dev;
    f->ino = sb.st_ino;
    return true;
}

/* Notes the identity of the database file and of its WAL (setup's first transaction made
 * it; it lives as long as the connection). sqlite3_db_filename() gives the absolute path,
 * "" for an in-memory database, which has nothing to check. */
static enum bsc_err note_files(struct sq_store *q, const char *path, char *err, size_t errlen)
{
    const char *db = sqlite3_db_filename(q->db, "main");
    char wal[sizeof(q->files[1].path)];

    if (!db || !db[0])
        return BSC_OK;
    snprintf(wal, sizeof(wal), "%s-wal", db);
    if (!file_note(&q->files[0], db) || !file_note(&q->files[1], wal)) {
        snprintf(err, errlen, "sqlite store %s: cannot stat the database or its WAL file",
                 path);
        return BSC_EIO;
    }
    return BSC_OK;
}

static enum bsc_err sq_open(const struct cfg_store *cfg, const struct store_opts *opts,
                            struct store **out, char *err, size_t errlen)
{
    struct sq_store *q;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    enum bsc_err e;

    if (!cfg->path || !cfg->path[0]) {
        snprintf(err, errlen, "sqlite store: store.path is required");
        return BSC_EINVAL;
    }
    q = calloc(1, sizeof(*q));
    if (!q) {
        snprintf(err, errlen, "out of memory opening the sqlite store");
        return BSC_ENOMEM;
    }
    store__base_init(&q->base, &store__sqlite, opts);
    /* NOMUTEX: the connection is used by one thread at a time (this one, then the
     * writer), so SQLite's own locking would only cost. */
    if (sqlite3_open_v2(cfg->path, &q->db, flags, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "sqlite store %s: %s", cfg->path,
                 q->db ? sqlite3_errmsg(q->db) : "out of memory");
        sq_free(q);
        return BSC_EIO;
    }
    e = setup(q, cfg->path, err, errlen);
    if (!e)
        e = note_files(q, cfg->path, err, errlen);
    if (e) {
        sq_free(q);
        return e;
    }
    q->next_purge_ms = 0; /* purge expired records at once */
    if (uv_mutex_init(&q->mu) != 0) {
        snprintf(err, errlen, "sqlite store: cannot create a mutex");
        sq_free(q);
        return BSC_EIO;
    }
    if (uv_cond_init(&q->cv) != 0) {
        snprintf(err, errlen, "sqlite store: cannot create a condition variable");
        uv_mutex_destroy(&q->mu);
        sq_free(q);
        return BSC_EIO;
    }
    if (uv_thread_create(&q->thread, writer_main, q) != 0) {
        snprintf(err, errlen, "sqlite store: cannot start the writer thread");
        uv_cond_destroy(&q->cv);
        uv_mutex_destroy(&q->mu);
        sq_free(q);
        return BSC_EIO;
    }
    *out = &q->base;
    return BSC_OK;
}

const struct store_ops store__sqlite = {
    .name = "sqlite",
    .open = sq_open,
    .close = sq_close,
    .submit = sq_submit,
};
