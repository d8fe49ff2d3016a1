/* SPDX-License-Identifier: MIT */
/* store.c -- the store's front door, shared by every backend: argument checks, copying
 * the caller's slices into a job, the bound on pending operations, and delivering each
 * result on the caller's loop through a uv_async_t made for that one job. Backends only
 * run jobs (store_mem.c, store_sqlite.c). See docs/internals/store.md. */
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/id.h"
#include "store/internal.h"

void store_opts_default(struct store_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->default_ttl_ms = IDEM_DEFAULT_TTL_MS;
    o->inflight_lease_ms = IDEM_DEFAULT_LEASE_MS;
    o->max_answer_bytes = 8u << 20;
    o->max_pending = 4096;
    o->mem_max_idem = 100000;
    o->mem_max_idem_bytes = 256u << 20;
    o->mem_max_ledger = 100000;
    o->purge_interval_ms = 60000;
    o->batch_max = 64;
}

static const struct store_ops *backend_of(enum cfg_store_kind kind)
{
    switch (kind) {
    case CFG_STORE_MEMORY: return &store__mem;
    case CFG_STORE_SQLITE: return &store__sqlite;
    case CFG_STORE_REDIS: return &store__redis;
    default: return NULL;
    }
}

enum bsc_err store_open_opts(const struct cfg_store *cfg, const struct store_opts *opts,
                             struct store **out, char *err, size_t errlen)
{
    const struct store_ops *ops = backend_of(cfg->kind);
    struct store_opts o = *opts;
    enum bsc_err e;

    *out = NULL;
    if (!ops) {
        snprintf(err, errlen, "store kind %d is not built into this gateway (memory, sqlite)",
                 (int)cfg->kind);
        return BSC_EINVAL;
    }
    if (!o.default_ttl_ms)
        o.default_ttl_ms = IDEM_DEFAULT_TTL_MS;
    if (!o.max_pending)
        o.max_pending = 1;
    if (!o.batch_max)
        o.batch_max = 1;
    e = ops->open(cfg, &o, out, err, errlen);
    if (e)
        return e;
    BSC_BUG_ON((*out)->ops != ops);
    return BSC_OK;
}

void store__base_init(struct store *st, const struct store_ops *ops,
                      const struct store_opts *opts)
{
    st->ops = ops;
    st->opts = *opts;
    atomic_init(&st->pending, 0);
    atomic_init(&st->up, true);
    atomic_init(&st->down_reason, NULL);
}

bool store_is_up(const struct store *st, const char **reason)
{
    bool up = !st || atomic_load(&((struct store *)st)->up);

    if (reason)
        *reason = up ? NULL : atomic_load(&((struct store *)st)->down_reason);
    return up;
}

enum bsc_err store_open(const struct cfg_store *cfg, struct store **out, char *err,
                        size_t errlen)
{
    struct store_opts o;

    store_opts_default(&o);
#ifdef BSC_UNIT_TEST
    /* Test builds only: an SQLite file that is full after this many pages, so that the
     * integration tests can drive the full-disk path through the real binary. */
    const char *max_pages = getenv("BASCULE_TEST_SQLITE_MAX_PAGES");
    if (max_pages)
        o.sqlite_max_pages = strtoull(max_pages, NULL, 10);
#endif
    return store_open_opts(cfg, &o, out, err, errlen);
}

void store_close(struct store *st)
{
    if (!st)
        return;
    /* Every job's callback runs on a worker loop; if one were still pending, that loop
     * would still be running and its async handle would outlive the store. */
    BSC_BUG_ON(atomic_load(&st->pending) != 0);
    st->ops->close(st);
}

bool store_is_shared(const struct store *st)
{
    return st && st->ops == &store__redis;
}

const char *store_kind_name(const struct store *st)
{
    return st->ops->name;
}

uint64_t store__now(const struct store *st)
{
    return st->opts.clock ? st->opts.clock(st->opts.clock_ud) : bsc_wall_ms();
}

uint64_t store__new_claim(void)
{
    uint64_t c;

    do
        c = bsc_rand64();
    while (c == 0);
    return c;
}

enum bsc_err store__claim_check(enum idem_state state, uint64_t rec_claim, uint64_t claim,
                                bool expired)
{
    if (state == IDEM_ST_IN_FLIGHT && rec_claim == claim)
        return BSC_OK;
    return expired ? BSC_ENOTFOUND : BSC_ESTATE;
}

enum bsc_err store__job_set_answer(struct store__job *job, int status, bool stream,
                                   struct bsc_str headers, struct bsc_str body)
{
    job->status = status;
    job->stream = stream;
    job->headers = malloc(headers.len + 1);
    job->body = malloc(body.len + 1);
    if (!job->headers || !job->body) {
        BSC_FREE(job->headers);
        BSC_FREE(job->body);
        return BSC_ENOMEM;
    }
    if (headers.len)
        memcpy(job->headers, headers.p, headers.len);
    if (body.len)
        memcpy(job->body, body.p, body.len);
    job->headers[headers.len] = job->body[body.len] = '\0';
    job->headers_len = headers.len;
    job->body_len = body.len;
    return BSC_OK;
}

bool store__ledger_step(struct store__job *job, const struct ledger_entry *cur, uint64_t now_ms)
{
    if (job->op == STORE__LEDGER_GET) {
        job->err = cur ? BSC_OK : BSC_ENOTFOUND;
        job->has_entry = cur != NULL;
        if (cur)
            job->entry = *cur;
        job->outcome = LEDGER_UNCHANGED;
        return false;
    }
    job->err = ledger_apply(cur, job->key, &job->upd, now_ms, &job->entry, &job->outcome);
    if (job->err == BSC_ESTATE) {
        job->has_entry = cur != NULL;
        if (cur)
            job->entry = *cur;
        return false;
    }
    job->has_entry = job->err == BSC_OK;
    return job->err == BSC_OK && job->outcome != LEDGER_UNCHANGED;
}

/* ---- delivery on the caller's loop ------------------------------------------------------ */

static void job_free(uv_handle_t *h)
{
    struct store__job *job = h->data;

    free(job->headers);
    free(job->body);
    free(job);
}

static void deliver(struct store__job *job)
{
    struct idem_answer ans;
    struct store_idem_result res = {job->decision, job->claim, NULL};

    switch (job->op) {
    case STORE__IDEM_BEGIN:
        if (job->err) {
            job->cb.idem(job->err, NULL, job->ud);
            break;
        }
        if (job->decision == IDEM_REPLAY) {
            ans = (struct idem_answer){job->status, job->stream,
                                       bsc_str_make(job->headers, job->headers_len),
                                       bsc_str_make(job->body, job->body_len)};
            res.answer = &ans;
        }
        if (job->decision != IDEM_MISS)
            res.claim = 0;
        job->cb.idem(BSC_OK, &res, job->ud);
        break;
    case STORE__IDEM_COMPLETE:
    case STORE__IDEM_ABANDON: job->cb.done(job->err, job->ud); break;
    case STORE__LEDGER_PUT:
    case STORE__LEDGER_GET:
        job->cb.ledger(job->err, job->has_entry ? &job->entry : NULL, job->outcome, job->ud);
        break;
    case STORE__BLOB_PUT: job->cb.done(job->err, job->ud); break;
    case STORE__BLOB_GET:
        job->cb.blob(job->err, job->err ? BSC_STR_NULL : bsc_str_make(job->body, job->body_len),
                     job->ud);
        break;
    case STORE__SPEND_ADD:
    case STORE__SPEND_SET: job->cb.spend(job->err, job->err ? 0 : job->usd, job->ud); break;
    case STORE__GEN_GET:
    case STORE__GEN_BUMP:
        job->cb.gen(job->err, job->err == BSC_EIO ? 0 : job->gen,
                    job->err ? BSC_STR_NULL : bsc_str_make(job->body, job->body_len), job->ud);
        break;
    case STORE__GEN_PUT: job->cb.done(job->err, job->ud); break;
    default: BSC_BUG_ON(1);
    }
}

static void on_async(uv_async_t *h)
{
    struct store__job *job = h->data;
    struct store *st;

    /* Pairs with the release in store__job_done(): everything the backend wrote into the
     * job happens-before this read, in terms the sanitizers see too (libuv's own wakeup
     * goes through atomics inside the uninstrumented library). */
    BSC_BUG_ON(!atomic_load_explicit(&job->handed_back, memory_order_acquire));
    st = job->st;
    deliver(job);
    atomic_fetch_sub(&st->pending, 1);
    uv_close((uv_handle_t *)h, job_free);
}

void store__job_done(struct store__job *job)
{
    /* After the send the loop owns the job: it may already be freed when this returns. */
    atomic_store_explicit(&job->handed_back, true, memory_order_release);
    uv_async_send(&job->async);
}

/* ---- making and submitting jobs --------------------------------------------------------- */

/* A job with <extra> bytes of room for its input slices. */
static struct store__job *job_new(struct store *st, enum store__op op, size_t extra)
{
    struct store__job *job;

    if (extra > SIZE_MAX - sizeof(*job))
        return NULL;
    job = calloc(1, sizeof(*job) + extra);
    if (!job)
        return NULL;
    job->st = st;
    job->op = op;
    atomic_init(&job->handed_back, false);
    return job;
}

/* Copies <s> into the job's data at *<at> and returns the copy. */
static struct bsc_str put_bytes(struct store__job *job, size_t *at, struct bsc_str s)
{
    char *dst = job->data + *at;

    if (s.len)
        memcpy(dst, s.p, s.len);
    *at += s.len;
    return bsc_str_make(dst, s.len);
}

static enum bsc_err submit(struct store *st, uv_loop_t *loop, struct store__job *job)
{
    enum bsc_err err;

    if (atomic_fetch_add(&st->pending, 1) >= st->opts.max_pending) {
        atomic_fetch_sub(&st->pending, 1);
        free(job);
        return BSC_ELIMIT;
    }
    if (uv_async_init(loop, &job->async, on_async) != 0) {
        atomic_fetch_sub(&st->pending, 1);
        free(job);
        return BSC_EIO;
    }
    job->async.data = job;
    err = st->ops->submit(st, job);
    if (err) {
        /* The callback is never called; the job is freed once its handle has closed. */
        atomic_fetch_sub(&st->pending, 1);
        uv_close((uv_handle_t *)&job->async, job_free);
    }
    return err;
}

struct store__job *store__job_new(struct store *st, enum store__op op, size_t extra)
{
    return job_new(st, op, extra);
}

struct bsc_str store__put_bytes(struct store__job *job, size_t *at, struct bsc_str s)
{
    return put_bytes(job, at, s);
}

enum bsc_err store__submit(struct store *st, uv_loop_t *loop, struct store__job *job)
{
    return submit(st, loop, job);
}

static bool scope_key_valid(struct bsc_str scope, struct bsc_str key)
{
    return scope.len <= IDEM_SCOPE_MAX && (scope.len == 0 || scope.p) && idem_key_valid(key);
}

static struct store__job *idem_job(struct store *st, enum store__op op, struct bsc_str scope,
                                   struct bsc_str key, size_t extra)
{
    struct store__job *job = job_new(st, op, scope.len + key.len + extra);
    size_t at = 0;

    if (!job)
        return NULL;
    job->scope = put_bytes(job, &at, scope);
    job->key = put_bytes(job, &at, key);
    return job;
}

enum bsc_err store_idem_begin(struct store *st, uv_loop_t *loop, struct bsc_str scope,
                              struct bsc_str key, const struct idem_fp *fp, uint64_t ttl_ms,
                              store_idem_cb *cb, void *ud)
{
    struct store__job *job;

    if (!scope_key_valid(scope, key) || !fp || !cb)
        return BSC_EINVAL;
    job = idem_job(st, STORE__IDEM_BEGIN, scope, key, 0);
    if (!job)
        return BSC_ENOMEM;
    job->fp = *fp;
    job->ttl_ms = ttl_ms ? ttl_ms : st->opts.default_ttl_ms;
    job->cb.idem = cb;
    job->ud = ud;
    return submit(st, loop, job);
}

enum bsc_err store_idem_complete(struct store *st, uv_loop_t *loop, struct bsc_str scope,
                                 struct bsc_str key, uint64_t claim,
                                 const struct idem_answer *answer, store_done_cb *cb,
                                 void *ud)
{
    struct store__job *job;
    size_t at;

    if (!scope_key_valid(scope, key) || !answer || !cb || answer->status < 100 ||
        answer->status > 599 || (answer->headers.len && !answer->headers.p) ||
        (answer->body.len && !answer->body.p))
        return BSC_EINVAL;
    if (answer->headers.len > st->opts.max_answer_bytes ||
        answer->body.len > st->opts.max_answer_bytes - answer->headers.len)
        return BSC_ELIMIT;
    job = idem_job(st, STORE__IDEM_COMPLETE, scope, key, answer->headers.len + answer->body.len);
    if (!job)
        return BSC_ENOMEM;
    at = scope.len + key.len;
    job->claim = claim;
    job->in.status = answer->status;
    job->in.stream = answer->stream;
    job->in.headers = put_bytes(job, &at, answer->headers);
    job->in.body = put_bytes(job, &at, answer->body);
    job->cb.done = cb;
    job->ud = ud;
    return submit(st, loop, job);
}

enum bsc_err store_idem_abandon(struct store *st, uv_loop_t *loop, struct bsc_str scope,
                                struct bsc_str key, uint64_t claim, store_done_cb *cb,
                                void *ud)
{
    struct store__job *job;

    if (!scope_key_valid(scope, key) || !cb)
        return BSC_EINVAL;
    job = idem_job(st, STORE__IDEM_ABANDON, scope, key, 0);
    if (!job)
        return BSC_ENOMEM;
    job->claim = claim;
    job->cb.done = cb;
    job->ud = ud;
    return submit(st, loop, job);
}

static bool update_valid(const struct ledger_update *u)
{
    return (unsigned)u->state < LEDGER_ST_COUNT && u->tool_name[0] &&
           memchr(u->tool_name, '\0', sizeof(u->tool_name)) &&
           memchr(u->external_reference, '\0', sizeof(u->external_reference));
}

static struct store__job *ledger_job(struct store *st, enum store__op op, struct bsc_str op_id,
                                     store_ledger_cb *cb, void *ud)
{
    struct store__job *job = job_new(st, op, op_id.len);
    size_t at = 0;

    if (!job)
        return NULL;
    job->key = put_bytes(job, &at, op_id);
    job->cb.ledger = cb;
    job->ud = ud;
    return job;
}

enum bsc_err store_ledger_put(struct store *st, uv_loop_t *loop, struct bsc_str op_id,
                              const struct ledger_update *u, store_ledger_cb *cb, void *ud)
{
    struct store__job *job;

    if (!ledger_op_id_valid(op_id) || !u || !update_valid(u) || !cb)
        return BSC_EINVAL;
    job = ledger_job(st, STORE__LEDGER_PUT, op_id, cb, ud);
    if (!job)
        return BSC_ENOMEM;
    job->upd = *u;
    return submit(st, loop, job);
}

enum bsc_err store_ledger_get(struct store *st, uv_loop_t *loop, struct bsc_str op_id,
                              store_ledger_cb *cb, void *ud)
{
    struct store__job *job;

    if (!ledger_op_id_valid(op_id) || !cb)
        return BSC_EINVAL;
    job = ledger_job(st, STORE__LEDGER_GET, op_id, cb, ud);
    if (!job)
        return BSC_ENOMEM;
    return submit(st, loop, job);
}

/* ---- blobs ------------------------------------------------------------------------------ */

static bool blob_key_valid(struct bsc_str key)
{
    return key.p && key.len >= 1 && key.len <= STORE_BLOB_KEY_MAX;
}

enum bsc_err store_blob_put(struct store *st, uv_loop_t *loop, struct bsc_str key,
                            struct bsc_str value, uint64_t ttl_ms, store_done_cb *cb, void *ud)
{
    struct store__job *job;
    size_t at = 0;

    if (!blob_key_valid(key) || !ttl_ms || !cb || (value.len && !value.p))
        return BSC_EINVAL;
    if (value.len > st->opts.max_answer_bytes)
        return BSC_ELIMIT;
    job = job_new(st, STORE__BLOB_PUT, key.len + value.len);
    if (!job)
        return BSC_ENOMEM;
    job->key = put_bytes(job, &at, key);
    job->in.body = put_bytes(job, &at, value);
    job->ttl_ms = ttl_ms;
    job->cb.done = cb;
    job->ud = ud;
    return submit(st, loop, job);
}

enum bsc_err store_blob_get(struct store *st, uv_loop_t *loop, struct bsc_str key,
                            store_blob_cb *cb, void *ud)
{
    struct store__job *job;
    size_t at = 0;

    if (!blob_key_valid(key) || !cb)
        return BSC_EINVAL;
    job = job_new(st, STORE__BLOB_GET, key.len);
    if (!job)
        return BSC_ENOMEM;
    job->key = put_bytes(job, &at, key);
    job->cb.blob = cb;
    job->ud = ud;
    return submit(st, loop, job);
}

/* ---- generations (Redis only) ------------------------------------------------------------ */

/* A gen job: <group> in job->scope, <key> (may be empty: bump) in job->key, <value> in
 * job->in.body. NULL when the arguments are wrong for this store (*err says which). */
static struct store__job *gen_job(struct store *st, enum store__op op, struct bsc_str group,
                                  struct bsc_str key, struct bsc_str value, enum bsc_err *err)
{
    struct store__job *job;
    size_t at = 0;

    *err = BSC_EINVAL;
    if (!store_is_shared(st) || !blob_key_valid(group) ||
        (op != STORE__GEN_BUMP && !blob_key_valid(key)) || (value.len && !value.p))
        return NULL;
    *err = BSC_ELIMIT;
    if (value.len > st->opts.max_answer_bytes)
        return NULL;
    *err = BSC_ENOMEM;
    job = job_new(st, op, group.len + key.len + value.len);
    if (!job)
        return NULL;
    job->scope = put_bytes(job, &at, group);
    job->key = put_bytes(job, &at, key);
    job->in.body = put_bytes(job, &at, value);
    *err = BSC_OK;
    return job;
}

enum bsc_err store_gen_get(struct store *st, uv_loop_t *loop, struct bsc_str group,
                           struct bsc_str key, store_gen_cb *cb, void *ud)
{
    enum bsc_err err;
    struct store__job *job = cb ? gen_job(st, STORE__GEN_GET, group, key, BSC_STR_NULL, &err)
                                : NULL;

    if (!job)
        return cb ? err : BSC_EINVAL;
    job->cb.gen = cb;
    job->ud = ud;
    return submit(st, loop, job);
}

enum bsc_err store_gen_put(struct store *st, uv_loop_t *loop, struct bsc_str group,
                           struct bsc_str key, struct bsc_str value, uint64_t ttl_ms,
                           uint64_t expect, store_done_cb *cb, void *ud)
{
    enum bsc_err err;
    struct store__job *job = cb && ttl_ms ? gen_job(st, STORE__GEN_PUT, group, key, value, &err)
                                          : NULL;

    if (!job)
        return cb && ttl_ms ? err : BSC_EINVAL;
    job->ttl_ms = ttl_ms;
    job->gen = expect;
    job->cb.done = cb;
    job->ud = ud;
    return submit(st, loop, job);
}

enum bsc_err store_gen_bump(struct store *st, uv_loop_t *loop, struct bsc_str group,
                            store_gen_cb *cb, void *ud)
{
    enum bsc_err err;
    struct store__job *job = cb ? gen_job(st, STORE__GEN_BUMP, group, BSC_STR_NULL,
                                          BSC_STR_NULL, &err)
                                : NULL;

    if (!job)
        return cb ? err : BSC_EINVAL;
    job->cb.gen = cb;
    job->ud = ud;
    return submit(st, loop, job);
}
