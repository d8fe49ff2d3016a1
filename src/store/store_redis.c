/* SPDX-License-Identifier: MIT */
/* store_redis.c -- the Redis store backend: idempotency records, the tool ledger, blobs and
 * client spend kept in one Redis shared by several gateway processes. One hiredis connection on the
 * store's own libuv loop and thread (jobs arrive from any worker, as with SQLite); every
 * job is time-boxed by a uv timer of store.timeout_ms because hiredis has no async timeout.
 * Nothing is acknowledged unless Redis answered. See docs/internals/redis.md. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wshadow"
#include <hiredis/adapters/libuv.h>
#pragma GCC diagnostic pop

#include "core/log.h"
#include "core/sha256.h"
#include "store/internal.h"
#include "store/redis_record.h"
#include "core/redis_keys.h"

#define RD_BACKOFF_MIN_MS 100
#define RD_BACKOFF_MAX_MS 2000
#define RD_CONNECT_MS 1000 /* a connection not up by then is dropped and tried again */
#define RD_CAS_TRIES 8 /* ledger put: optimistic retries when another instance raced us */
#define RD_PING_MS 1000 /* while connected: notices a stalled Redis, and its return */
#define RD_DOWN_AFTER 3 /* timeouts in a row (no reply between) before the store is "down" */

/* The persistence settings read at connect, in the order they are asked. */
enum rd_persist { RD_PERSIST_AOF = 0, RD_PERSIST_FSYNC, RD_PERSIST_SAVE, RD_PERSIST_COUNT };

/* Idempotency record: "<i|c> <claim hex16> <ttl_ms> <fp hex64>\n" then, once complete,
 * "<status> <stream 0|1> <headers_len>\n<headers><body>". A script keeps each step atomic. */
static const char LUA_BEGIN[] =
    "if redis.call('SET',KEYS[1],ARGV[1],'NX','PX',ARGV[2]) then return false end "
    "return redis.call('GET',KEYS[1])";
/* ARGV[1]: the in_flight prefix "i <claim> "; 0 gone, 1 not ours, 2 done. */
static const char LUA_COMPLETE[] =
    "local v=redis.call('GET',KEYS[1]) if not v then return 0 end "
    "if string.sub(v,1,#ARGV[1])~=ARGV[1] then return 1 end "
    "local ttl=string.match(v,'^i %x+ (%d+) ') "
    "redis.call('SET',KEYS[1],'c'..string.sub(v,2)..ARGV[2],'PX',ttl) return 2";
static const char LUA_ABANDON[] =
    "local v=redis.call('GET',KEYS[1]) if not v then return 0 end "
    "if string.sub(v,1,#ARGV[1])~=ARGV[1] then return 1 end "
    "redis.call('DEL',KEYS[1]) return 2";
/* Ledger compare-and-set: ARGV[1] is '-' (no entry was read) or '=' .. the value read. */
static const char LUA_CAS[] =
    "local v=redis.call('GET',KEYS[1]) local cur=v and ('='..v) or '-' "
    "if cur~=ARGV[1] then return 0 end redis.call('SET',KEYS[1],ARGV[2]) return 1";
/* Spend add: ARGV[1] the amount in dollars, ARGV[2] the record's TTL in ms ('0': none). The
 * TTL is set on every add, so a record lives its period plus a day after its last change.
 * Answers the new total (a string: INCRBYFLOAT's). */
static const char LUA_SPEND_ADD[] =
    "local v=redis.call('INCRBYFLOAT',KEYS[1],ARGV[1]) "
    "if ARGV[2]~='0' then redis.call('PEXPIRE',KEYS[1],ARGV[2]) end return v";

/* A value under a generation (the shared response cache): ARGV[1] the generation expected
 * ('' any), ARGV[2] the value, ARGV[3] its TTL in ms. Stored as "<generation> <value>" only
 * while KEYS[1], the group's generation (absent: 0), is the one expected. 1 stored, 0 not. */
static const char LUA_GEN_PUT[] =
    "local g=redis.call('GET',KEYS[1]) or '0' "
    "if ARGV[1]~='' and ARGV[1]~=g then return 0 end "
    "redis.call('SET',KEYS[2],g..' '..ARGV[2],'PX',ARGV[3]) return 1";

struct rd_store {
    struct store base;
    struct redis_url url;
    char prefix[128];
    uint64_t timeout_ms;
    uv_thread_t thread;
    uv_loop_t loop;
    uv_async_t wake;
    uv_timer_t retry;
    uv_timer_t connecting; /* the connect watchdog */
    uv_timer_t ping;
    uv_mutex_t mu;
    struct store__job *head, *tail; /* guarded by mu */
    bool stopping;                  /* guarded by mu */
    redisAsyncContext *ac;          /* the store's thread only, as is what follows */
    bool connected, closing;
    unsigned ping_out; /* periods a PING has gone unanswered; 0: none out */
    unsigned timeouts; /* in a row, without a reply between */
    uint64_t backoff_ms;
    struct store__defer defer; /* spend adds not confirmed yet (spend_defer.c) */
    /* Redis's persistence settings, read at each connect ("" and false until answered). */
    char persist[RD_PERSIST_COUNT][128];
    bool persist_known[RD_PERSIST_COUNT];
};

struct rd_op;
typedef void rd_step_fn(struct rd_op *op, redisReply *reply);

/* One job in flight: freed when its timer is closed and every reply came back. */
struct rd_op {
    rd_step_fn *step; /* handles the next reply */
    struct rd_store *q;
    struct store__job *job; /* NULL once answered (timeout, error or done) */
    uv_timer_t timer;
    int refs;
    int tries;
    char key[RKEY_MAX];
    size_t key_len;
    char *seen; /* ledger put: '-' or '=' + the value read */
    size_t seen_len;
    double defer_usd; /* spend add: kept for later unless Redis confirms it */
    uint64_t defer_ttl;
};

static void rd_connect(struct rd_store *q);

/* ---- up / down ----------------------------------------------------------------------- */

static void set_up(struct rd_store *q, bool up, const char *reason)
{
    if (!up)
        atomic_store(&q->base.down_reason, reason);
    if (atomic_exchange(&q->base.up, up) == up)
        return;
    if (up) {
        atomic_store(&q->base.down_reason, NULL);
        LOG_INFO("store: redis is reachable");
    } else {
        LOG_WARN("store: redis unavailable: %s", reason);
    }
}

/* ---- spend adds not confirmed: kept, added when Redis answers again ------------------- */

static void keep_spend(struct rd_store *q, const char *key, size_t len, double usd,
                       uint64_t ttl_ms)
{
    enum bsc_err err = store__defer_add(&q->defer, key, len, usd, ttl_ms);

    if (err)
        LOG_WARN("store: $%.6f of spend on %.*s is lost: %s", usd, (int)len, key,
                 bsc_err_str(err));
}

/* An error Redis will answer again (a wrong type, a bad number) is not worth keeping; one
 * of a Redis loading its AOF, busy or out of memory is. */
static bool reply_is_transient(const redisReply *r)
{
    return !r || (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "ERR", 3) != 0 &&
                  strncmp(r->str, "WRONGTYPE", 9) != 0);
}

/* The fate of a spend add is known when its reply comes, even after its job timed out: an
 * answer means Redis added it; no answer (the connection was lost) or a passing error means
 * it may not have, so it is kept -- at worst counted twice (Redis applied it and died before
 * answering), never lost. */
static void settle_spend(struct rd_op *op, const redisReply *r)
{
    if (reply_is_transient(r))
        keep_spend(op->q, op->key, op->key_len, op->defer_usd, op->defer_ttl);
    else if (r->type == REDIS_REPLY_ERROR)
        LOG_WARN("store: redis refused a spend add on %s: %s", op->key, r->str);
    op->defer_usd = 0;
}

/* One kept sum on its way to Redis: put back if Redis does not take it. */
struct rd_flush {
    struct rd_store *q;
    struct store__defer_row row;
};

static void flush_cb(redisAsyncContext *ac, void *r, void *priv)
{
    struct rd_flush *f = priv;
    redisReply *reply = r;

    (void)ac;
    if (reply_is_transient(reply))
        keep_spend(f->q, f->row.key, f->row.len, f->row.usd, f->row.ttl_ms);
    else if (reply->type == REDIS_REPLY_ERROR)
        LOG_WARN("store: redis refused kept spend on %s: %s", f->row.key, reply->str);
    free(f->row.key);
    free(f);
}

static bool flush_one(struct rd_store *q, struct rd_flush *f)
{
    char usd[32], ttl[24];
    const char *argv[6] = {"EVAL", LUA_SPEND_ADD, "1", f->row.key, usd, ttl};
    size_t l[6] = {4, sizeof(LUA_SPEND_ADD) - 1, 1, f->row.len, 0, 0};

    l[4] = (size_t)snprintf(usd, sizeof(usd), "%.17g", f->row.usd);
    l[5] = (size_t)snprintf(ttl, sizeof(ttl), "%" PRIu64, f->row.ttl_ms);
    return redisAsyncCommandArgv(q->ac, flush_cb, f, 6, argv, l) == REDIS_OK;
}

/* Sends every kept sum (one add each). Called when a connection is made, before any job is
 * sent on it, so a total Redis answers afterwards includes them; and at each PING answer for
 * what failed since. */
static void flush_kept(struct rd_store *q)
{
    struct rd_flush *f;
    size_t n = 0;
    double sum = 0;

    while (q->connected && q->ac && q->defer.n && (f = malloc(sizeof(*f)))) {
        f->q = q;
        store__defer_pop(&q->defer, &f->row);
        n++;
        sum += f->row.usd;
        if (!flush_one(q, f)) {
            flush_cb(NULL, NULL, f); /* put back */
            break;
        }
    }
    if (n)
        LOG_INFO("store: adding $%.6f of spend kept while redis was away (%zu records)", sum,
                 n);
}

/* ---- one operation ------------------------------------------------------------------- */

static void fail_job(struct store__job *job, enum bsc_err err)
{
    job->err = err;
    job->has_entry = false;
    BSC_FREE(job->headers);
    BSC_FREE(job->body);
}

static void op_unref(struct rd_op *op)
{
    if (--op->refs > 0)
        return;
    free(op->seen);
    free(op);
}

static void timer_closed(uv_handle_t *h)
{
    op_unref(h->data);
}

/* Answers the job (err BSC_OK: job->err as the handler set it) and lets the op go. */
static void op_finish(struct rd_op *op, enum bsc_err err)
{
    struct store__job *job = op->job;

    if (!job)
        return;
    op->job = NULL;
    if (err)
        fail_job(job, err);
    store__job_done(job);
    uv_timer_stop(&op->timer);
    uv_close((uv_handle_t *)&op->timer, timer_closed);
}

static void op_timeout(uv_timer_t *t)
{
    struct rd_op *op = t->data;

    /* One slow reply on a loaded machine is not an outage: the job fails, the store is
     * reported down only when several in a row did. */
    if (++op->q->timeouts >= RD_DOWN_AFTER)
        set_up(op->q, false, "redis did not answer within store.timeout_ms");
    op_finish(op, BSC_EIO);
}

/* Every reply lands here: an error or a missing reply (connection lost) answers the job
 * BSC_EIO; otherwise the op's current step handles it. The reply's ref is dropped after,
 * so the op outlives its step. */
static void op_cb(redisAsyncContext *ac, void *r, void *priv)
{
    struct rd_op *op = priv;
    redisReply *reply = r;

    (void)ac;
    if (op->defer_usd != 0) /* negative: a hold given back, kept as well */
        settle_spend(op, reply);
    if (reply)
        op->q->timeouts = 0;
    if (reply && !op->job)
        set_up(op->q, true, NULL); /* a late answer: Redis is back from a stall */
    if (op->job) {
        if (!reply || reply->type == REDIS_REPLY_ERROR) {
            if (reply)
                LOG_WARN("store: redis error: %.*s", (int)reply->len, reply->str);
            op_finish(op, BSC_EIO);
        } else {
            set_up(op->q, true, NULL);
            op->step(op, reply);
        }
    }
    op_unref(op);
}

/* Sends one command for <op>, whose reply goes to <step>. On failure the job is answered. */
static void op_send(struct rd_op *op, rd_step_fn *step, int argc, const char **argv,
                    const size_t *lens)
{
    struct rd_store *q = op->q;

    op->step = step;
    if (!q->connected || !q->ac ||
        redisAsyncCommandArgv(q->ac, op_cb, op, argc, argv, lens) != REDIS_OK) {
        if (op->defer_usd != 0) /* negative: a hold given back, kept as well */
            settle_spend(op, NULL);
        op_finish(op, BSC_EIO);
        return;
    }
    op->refs++;
}

static void op_eval(struct rd_op *op, rd_step_fn *step, const char *script, int nargs,
                    const char **args, const size_t *lens)
{
    const char *argv[6] = {"EVAL", script, "1", op->key};
    size_t l[6] = {4, strlen(script), 1, op->key_len};
    int n = nargs < 2 ? nargs : 2;

    for (int i = 0; i < n; i++) {
        argv[4 + i] = args[i];
        l[4 + i] = lens[i];
    }
    op_send(op, step, 4 + n, argv, l);
}

/* ---- idempotency ------------------------------------------------------------------------ */

/* Decides on the record <v> another request left (redis_record.h). */
static enum bsc_err decode_existing(struct store__job *job, const char *v, size_t len,
                                    uint64_t now)
{
    struct idem_record rec = {.expires_ms = UINT64_MAX}; /* Redis expires it */
    struct store_redis_idem r;

    if (!store__redis_idem_read(v, len, &r))
        return BSC_EIO;
    rec.fp = r.fp;
    rec.state = r.state == 'c' ? IDEM_ST_COMPLETE : IDEM_ST_IN_FLIGHT;
    job->decision = idem_decide(&rec, &job->fp, now);
    if (job->decision != IDEM_REPLAY)
        return BSC_OK;
    return store__job_set_answer(job, r.status, r.stream, r.headers, r.body);
}

static void begin_reply(struct rd_op *op, redisReply *r)
{
    struct store__job *job = op->job;

    if (r->type == REDIS_REPLY_NIL) {
        job->decision = IDEM_MISS; /* our in_flight record is in place; job->claim is ours */
        op_finish(op, BSC_OK);
    } else if (r->type == REDIS_REPLY_STRING) {
        op_finish(op, decode_existing(job, r->str, r->len, store__now(&op->q->base)));
    } else {
        op_finish(op, BSC_EIO);
    }
}

static void run_begin(struct rd_op *op)
{
    struct store__job *job = op->job;
    const struct store_opts *o = &op->q->base.opts;
    uint64_t ttl = job->ttl_ms ? job->ttl_ms : o->default_ttl_ms;
    uint64_t px = idem_expiry(IDEM_ST_IN_FLIGHT, 0, ttl, o->inflight_lease_ms);
    char val[STORE_REDIS_HEAD_MAX], pxs[24];
    const char *args[2] = {val, pxs};
    size_t lens[2];

    job->claim = store__new_claim();
    lens[0] = store__redis_idem_head(
        &(struct store_redis_idem){.state = 'i', .claim = job->claim, .ttl_ms = ttl, .fp = job->fp},
        val);
    lens[1] = (size_t)snprintf(pxs, sizeof(pxs), "%" PRIu64, px ? px : 1);
    op_eval(op, begin_reply, LUA_BEGIN, 2, args, lens);
}

/* The answer of complete/abandon's script: 0 gone, 1 not this claim's, 2 done. */
static void claim_reply(struct rd_op *op, redisReply *r)
{
    if (r->type != REDIS_REPLY_INTEGER) {
        op_finish(op, BSC_EIO);
        return;
    }
    op->job->err = r->integer == 2 ? BSC_OK : r->integer == 1 ? BSC_ESTATE : BSC_ENOTFOUND;
    op_finish(op, BSC_OK);
}

static void run_claim(struct rd_op *op)
{
    struct store__job *job = op->job;
    char pre[32], head[STORE_REDIS_ANSWER_HEAD_MAX];
    struct bsc_buf b;
    const char *args[2] = {pre, NULL};
    size_t lens[2];

    lens[0] = (size_t)snprintf(pre, sizeof(pre), "i %016" PRIx64 " ", job->claim);
    if (job->op == STORE__IDEM_ABANDON) {
        op_eval(op, claim_reply, LUA_ABANDON, 1, args, lens);
        return;
    }
    size_t h = store__redis_idem_answer_head(job->in.status, job->in.stream,
                                             job->in.headers.len, head);
    bsc_buf_init(&b, SIZE_MAX);
    if (bsc_buf_append(&b, head, h) || bsc_buf_append_str(&b, job->in.headers) ||
        bsc_buf_append_str(&b, job->in.body)) {
        bsc_buf_cleanup(&b);
        op_finish(op, BSC_ENOMEM);
        return;
    }
    args[1] = b.p;
    lens[1] = b.len;
    op_eval(op, claim_reply, LUA_COMPLETE, 2, args, lens); /* hiredis copied the bytes */
    bsc_buf_cleanup(&b);
}

/* ---- the ledger: read, apply, compare-and-set (a racing instance makes us read again) -- */

static void run_ledger(struct rd_op *op);

static void ledger_cas_reply(struct rd_op *op, redisReply *r)
{
    if (r->type != REDIS_REPLY_INTEGER)
        op_finish(op, BSC_EIO);
    else if (r->integer == 1)
        op_finish(op, BSC_OK); /* job->err and the entry were set by the step */
    else if (++op->tries < RD_CAS_TRIES)
        run_ledger(op);
    else
        op_finish(op, BSC_EIO);
}

static enum bsc_err remember_seen(struct rd_op *op, redisReply *r)
{
    size_t n = r->type == REDIS_REPLY_STRING ? r->len : 0;

    free(op->seen);
    op->seen = malloc(n + 1);
    if (!op->seen)
        return BSC_ENOMEM;
    op->seen[0] = r->type == REDIS_REPLY_STRING ? '=' : '-';
    if (n)
        memcpy(op->seen + 1, r->str, n);
    op->seen_len = n + 1;
    return BSC_OK;
}

static void ledger_get_reply(struct rd_op *op, redisReply *r)
{
    struct store__job *job = op->job;
    struct ledger_entry cur;
    struct bsc_buf b;
    bool have = r->type == REDIS_REPLY_STRING;

    if ((!have && r->type != REDIS_REPLY_NIL) ||
        (have && ledger_entry_from_json((struct bsc_str){r->str, r->len}, &cur) != BSC_OK)) {
        op_finish(op, BSC_EIO);
        return;
    }
    if (!store__ledger_step(job, have ? &cur : NULL, store__now(&op->q->base))) {
        op_finish(op, BSC_OK);
        return;
    }
    bsc_buf_init(&b, SIZE_MAX);
    if (remember_seen(op, r) || ledger_entry_to_json(&job->entry, &b)) {
        bsc_buf_cleanup(&b);
        op_finish(op, BSC_ENOMEM);
        return;
    }
    const char *args[2] = {op->seen, b.p};
    size_t lens[2] = {op->seen_len, b.len};
    op_eval(op, ledger_cas_reply, LUA_CAS, 2, args, lens);
    bsc_buf_cleanup(&b);
}

static void run_ledger(struct rd_op *op)
{
    const char *argv[2] = {"GET", op->key};
    size_t lens[2] = {3, op->key_len};

    op_send(op, ledger_get_reply, 2, argv, lens);
}

/* ---- blobs ------------------------------------------------------------------------------ */

static void blob_put_reply(struct rd_op *op, redisReply *r)
{
    op_finish(op, r->type == REDIS_REPLY_STATUS ? BSC_OK : BSC_EIO);
}

static void blob_get_reply(struct rd_op *op, redisReply *r)
{
    struct store__job *job = op->job;

    if (r->type == REDIS_REPLY_NIL) {
        job->err = BSC_ENOTFOUND;
        op_finish(op, BSC_OK);
        return;
    }
    if (r->type != REDIS_REPLY_STRING || !(job->body = malloc(r->len + 1))) {
        op_finish(op, BSC_EIO);
        return;
    }
    memcpy(job->body, r->str, r->len);
    job->body[r->len] = '\0';
    job->body_len = r->len;
    op_finish(op, BSC_OK);
}

static void run_blob(struct rd_op *op)
{
    struct store__job *job = op->job;
    char px[24];
    const char *argv[5] = {"SET", op->key, job->in.body.p ? job->in.body.p : "", "PX", px};
    size_t lens[5] = {3, op->key_len, job->in.body.len, 2, 0};

    if (job->op == STORE__BLOB_GET) {
        argv[0] = "GET";
        op_send(op, blob_get_reply, 2, argv, lens);
        return;
    }
    lens[4] = (size_t)snprintf(px, sizeof(px), "%" PRIu64, job->ttl_ms);
    op_send(op, blob_put_reply, 5, argv, lens);
}

/* ---- generations: MGET of the group's counter and the value, INCR, a script to put ---- */

/* A generation as Redis keeps it: decimal digits only (bsc_str_to_u64). */
static bool gen_parse(const char *p, size_t len, uint64_t *out)
{
    unsigned long long v;

    if (!bsc_str_to_u64(bsc_str_make(p, len), &v))
        return false;
    *out = v;
    return true;
}

static void gen_get_reply(struct rd_op *op, redisReply *r)
{
    struct store__job *job = op->job;
    redisReply *g, *v;
    const char *sp;
    uint64_t stamp;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
        op_finish(op, BSC_EIO);
        return;
    }
    g = r->element[0];
    v = r->element[1];
    job->gen = 0;
    if ((g->type != REDIS_REPLY_NIL &&
         (g->type != REDIS_REPLY_STRING || !gen_parse(g->str, g->len, &job->gen))) ||
        (v->type != REDIS_REPLY_NIL && v->type != REDIS_REPLY_STRING)) {
        op_finish(op, BSC_EIO);
        return;
    }
    sp = v->type == REDIS_REPLY_STRING ? memchr(v->str, ' ', v->len) : NULL;
    if (v->type == REDIS_REPLY_STRING && (!sp || !gen_parse(v->str, (size_t)(sp - v->str), &stamp))) {
        op_finish(op, BSC_EIO); /* not a value we wrote */
        return;
    }
    if (!sp || stamp != job->gen) { /* absent, or written before the last bump */
        job->err = BSC_ENOTFOUND;
        op_finish(op, BSC_OK);
        return;
    }
    job->body_len = v->len - (size_t)(sp + 1 - v->str);
    if (!(job->body = malloc(job->body_len + 1))) {
        op_finish(op, BSC_EIO);
        return;
    }
    memcpy(job->body, sp + 1, job->body_len);
    job->body[job->body_len] = '\0';
    op_finish(op, BSC_OK);
}

static void gen_put_reply(struct rd_op *op, redisReply *r)
{
    if (r->type != REDIS_REPLY_INTEGER) {
        op_finish(op, BSC_EIO);
        return;
    }
    op->job->err = r->integer == 1 ? BSC_OK : BSC_ESTATE;
    op_finish(op, BSC_OK);
}

static void gen_bump_reply(struct rd_op *op, redisReply *r)
{
    if (r->type != REDIS_REPLY_INTEGER || r->integer < 1) {
        op_finish(op, BSC_EIO);
        return;
    }
    op->job->gen = (uint64_t)r->integer;
    op_finish(op, BSC_OK);
}

/* op->key is the group's generation; the value's key is made here. */
static void run_gen(struct rd_op *op)
{
    struct store__job *job = op->job;
    char entry[RKEY_MAX], expect[24], px[24];
    size_t elen = 0;
    const char *argv[8] = {"EVAL", LUA_GEN_PUT, "2", op->key, entry, expect,
                           job->in.body.p ? job->in.body.p : "", px};
    size_t l[8] = {4, sizeof(LUA_GEN_PUT) - 1, 1, op->key_len, 0, 0, job->in.body.len, 0};

    if (job->op == STORE__GEN_BUMP) {
        argv[0] = "INCR";
        argv[1] = op->key;
        l[0] = 4;
        l[1] = op->key_len;
        op_send(op, gen_bump_reply, 2, argv, l);
        return;
    }
    elen = rkey_cache(entry, sizeof(entry), op->q->prefix, job->scope, job->key);
    if (!elen) {
        op_finish(op, BSC_EINVAL);
        return;
    }
    if (job->op == STORE__GEN_GET) {
        const char *mget[3] = {"MGET", op->key, entry};
        size_t ml[3] = {4, op->key_len, elen};

        op_send(op, gen_get_reply, 3, mget, ml);
        return;
    }
    l[4] = elen;
    l[5] = job->gen == STORE_GEN_ANY
               ? 0
               : (size_t)snprintf(expect, sizeof(expect), "%" PRIu64, job->gen);
    l[7] = (size_t)snprintf(px, sizeof(px), "%" PRIu64, job->ttl_ms);
    op_send(op, gen_put_reply, 8, argv, l);
}

/* ---- spend: INCRBYFLOAT in dollars, as the other backends keep them ----------------- */

/* A total Redis answered: a number string, or nil for a record not there (0). */
static void spend_reply(struct rd_op *op, redisReply *r)
{
    char *end;
    double usd = 0;

    if (r->type == REDIS_REPLY_STRING) {
        usd = strtod(r->str, &end);
        if (end == r->str || !isfinite(usd)) {
            op_finish(op, BSC_EIO);
            return;
        }
    } else if (r->type != REDIS_REPLY_NIL && r->type != REDIS_REPLY_STATUS) {
        op_finish(op, BSC_EIO);
        return;
    }
    if (r->type != REDIS_REPLY_STATUS) /* SET: the job keeps the amount it set */
        op->job->usd = usd;
    op_finish(op, BSC_OK);
}

/* A read is a GET (no record is made for it); an add the script; a reset a SET, which also
 * forgets what this process kept for the record: the operator's 0 is the new start. */
static void run_spend(struct rd_op *op)
{
    struct store__job *job = op->job;
    char usd[32], ttl[24];
    const char *argv[5] = {"SET", op->key, usd, "PX", ttl};
    size_t l[5] = {3, op->key_len, 0, 2, 0};

    l[2] = (size_t)snprintf(usd, sizeof(usd), "%.17g", job->usd);
    l[4] = (size_t)snprintf(ttl, sizeof(ttl), "%" PRIu64, job->ttl_ms);
    if (job->op == STORE__SPEND_SET) {
        store__defer_drop(&op->q->defer, op->key, op->key_len);
        op_send(op, spend_reply, job->ttl_ms ? 5 : 3, argv, l);
    } else if (job->usd == 0) {
        argv[0] = "GET";
        op_send(op, spend_reply, 2, argv, l);
    } else {
        const char *args[2] = {usd, ttl};
        size_t al[2] = {l[2], l[4]};

        op->defer_usd = job->usd;
        op->defer_ttl = job->ttl_ms;
        op_eval(op, spend_reply, LUA_SPEND_ADD, 2, args, al);
    }
}

/* ---- dispatch ----------------------------------------------------------------------- */

static size_t job_key(struct rd_store *q, struct store__job *job, char *out)
{
    switch (job->op) {
    case STORE__IDEM_BEGIN:
    case STORE__IDEM_COMPLETE:
    case STORE__IDEM_ABANDON: return rkey_idem(out, RKEY_MAX, q->prefix, job->scope, job->key);
    case STORE__LEDGER_PUT:
    case STORE__LEDGER_GET: return rkey_entity(out, RKEY_MAX, q->prefix, "ledger", job->key);
    case STORE__SPEND_ADD:
    case STORE__SPEND_SET: return rkey_spend(out, RKEY_MAX, q->prefix, job->key, job->period_ms);
    case STORE__GEN_GET:
    case STORE__GEN_PUT:
    case STORE__GEN_BUMP: return rkey_cache(out, RKEY_MAX, q->prefix, job->scope, BSC_STR_NULL);
    default: return rkey_entity(out, RKEY_MAX, q->prefix, "blob", job->key);
    }
}

/* An add while not connected: kept for the connection to come. */
static void keep_job_spend(struct rd_store *q, struct store__job *job)
{
    char key[RKEY_MAX];
    size_t len = job_key(q, job, key);

    if (len)
        keep_spend(q, key, len, job->usd, job->ttl_ms);
}

static void run_job(struct rd_store *q, struct store__job *job)
{
    struct rd_op *op;

    job->err = BSC_OK;
    if (!q->connected) {
        if (job->op == STORE__SPEND_ADD && job->usd != 0) /* a hold given back too */
            keep_job_spend(q, job);
        fail_job(job, BSC_EIO); /* never wait for a connection: the caller answers 503 */
        store__job_done(job);
        return;
    }
    op = calloc(1, sizeof(*op));
    if (!op) {
        fail_job(job, BSC_ENOMEM);
        store__job_done(job);
        return;
    }
    op->q = q;
    op->job = job;
    op->refs = 1; /* the timer */
    op->key_len = job_key(q, job, op->key);
    uv_timer_init(&q->loop, &op->timer);
    op->timer.data = op;
    uv_timer_start(&op->timer, op_timeout, q->timeout_ms, 0);
    if (!op->key_len)
        op_finish(op, BSC_EINVAL);
    else if (job->op == STORE__IDEM_BEGIN)
        run_begin(op);
    else if (job->op == STORE__IDEM_COMPLETE || job->op == STORE__IDEM_ABANDON)
        run_claim(op);
    else if (job->op == STORE__LEDGER_PUT || job->op == STORE__LEDGER_GET)
        run_ledger(op);
    else if (job->op == STORE__SPEND_ADD || job->op == STORE__SPEND_SET)
        run_spend(op);
    else if (job->op == STORE__GEN_GET || job->op == STORE__GEN_PUT ||
             job->op == STORE__GEN_BUMP)
        run_gen(op);
    else
        run_blob(op);
}

/* ---- the connection: connect, reconnect with backoff, the durability check ------------ */

static void retry_fire(uv_timer_t *t)
{
    rd_connect(t->data);
}

static void schedule_reconnect(struct rd_store *q)
{
    if (q->closing)
        return;
    uv_timer_start(&q->retry, retry_fire, q->backoff_ms, 0);
    q->backoff_ms = q->backoff_ms * 2 > RD_BACKOFF_MAX_MS ? RD_BACKOFF_MAX_MS : q->backoff_ms * 2;
}

/* One CONFIG GET answer: {name, value}. The last one asked (save) says what a ledger
 * acknowledgement is worth, in the start-up log (redis_persist.c). */
static void persist_reply(redisAsyncContext *ac, void *r, void *priv)
{
    struct rd_store *q = ac->data;
    redisReply *reply = r;
    unsigned which = (unsigned)(uintptr_t)priv;
    struct store__redis_persist p;
    char msg[400];

    if (!reply || !q || which >= RD_PERSIST_COUNT)
        return; /* !reply: the connection went before the answers came */
    q->persist_known[which] = reply && reply->type == REDIS_REPLY_ARRAY &&
                              reply->elements == 2 &&
                              reply->element[1]->type == REDIS_REPLY_STRING;
    snprintf(q->persist[which], sizeof(q->persist[which]), "%s",
             q->persist_known[which] ? reply->element[1]->str : "");
    if (which != RD_PERSIST_SAVE)
        return;
    p.appendonly = q->persist_known[RD_PERSIST_AOF] ? q->persist[RD_PERSIST_AOF] : NULL;
    p.appendfsync = q->persist_known[RD_PERSIST_FSYNC] ? q->persist[RD_PERSIST_FSYNC] : NULL;
    p.save = q->persist_known[RD_PERSIST_SAVE] ? q->persist[RD_PERSIST_SAVE] : NULL;
    if (store__redis_durability(&p, msg, sizeof(msg)) == STORE__DURABLE)
        LOG_INFO("store: %s", msg);
    else
        LOG_WARN("store: %s (see docs/internals/redis.md)", msg);
}

static void ping_reply(redisAsyncContext *ac, void *r, void *priv)
{
    struct rd_store *q = priv;

    (void)ac;
    q->ping_out = 0;
    if (r && !q->closing) {
        q->timeouts = 0;
        set_up(q, true, NULL);
        flush_kept(q);
    }
}

/* Without traffic a stalled Redis would go unnoticed: a PING still unanswered a period
 * later marks the store down; its answer marks it up. Two periods and the connection is
 * dropped and made again: libuv reports a socket error (a reset) by stopping the poll, which
 * hiredis's adapter ignores, so a dead connection can otherwise look alive forever. */
static void ping_fire(uv_timer_t *t)
{
    struct rd_store *q = t->data;

    if (!q->connected || !q->ac)
        return;
    if (q->ping_out && ++q->ping_out > 2) {
        redisAsyncFree(q->ac); /* on_disconnect: down, reconnect with backoff */
        return;
    }
    if (q->ping_out) {
        set_up(q, false, "redis did not answer a PING within a second");
        return;
    }
    if (redisAsyncCommand(q->ac, ping_reply, q, "PING") == REDIS_OK)
        q->ping_out = 1;
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    struct rd_store *q = ac->data;

    if (status != REDIS_OK) {
        q->ac = NULL; /* hiredis frees it */
        set_up(q, false, "cannot connect to redis");
        schedule_reconnect(q);
        return;
    }
    uv_timer_stop(&q->connecting);
    q->connected = true;
    q->backoff_ms = RD_BACKOFF_MIN_MS;
    flush_kept(q);
    /* Up once Redis answers, not when the kernel accepted the connection (it does that
     * for a stopped Redis too). */
    ping_fire(&q->ping);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    struct rd_store *q = ac->data;

    (void)status;
    q->ac = NULL;
    q->connected = false;
    if (q->closing)
        return; /* our own redisAsyncFree at shutdown */
    set_up(q, false, "lost the connection to redis");
    schedule_reconnect(q);
}

/* Commands queued before the connection completes go first, in order. */
static void send_setup(struct rd_store *q)
{
    char db[16];

    if (q->url.password[0])
        redisAsyncCommand(q->ac, NULL, NULL, "AUTH %s", q->url.password);
    if (q->url.db) {
        snprintf(db, sizeof(db), "%d", q->url.db);
        redisAsyncCommand(q->ac, NULL, NULL, "SELECT %s", db);
    }
    /* Three commands, not one CONFIG GET of three names: Redis before 7 takes only one. */
    redisAsyncCommand(q->ac, persist_reply, (void *)(uintptr_t)RD_PERSIST_AOF,
                      "CONFIG GET appendonly");
    redisAsyncCommand(q->ac, persist_reply, (void *)(uintptr_t)RD_PERSIST_FSYNC,
                      "CONFIG GET appendfsync");
    redisAsyncCommand(q->ac, persist_reply, (void *)(uintptr_t)RD_PERSIST_SAVE,
                      "CONFIG GET save");
}

/* hiredis's libuv adapter drops a poll error, so a refused connection never calls back:
 * give each connection attempt a deadline of our own. */
static void connect_expired(uv_timer_t *t)
{
    struct rd_store *q = t->data;

    if (q->connected || !q->ac)
        return;
    redisAsyncFree(q->ac); /* not connected: no callback runs */
    q->ac = NULL;
    set_up(q, false, "cannot connect to redis");
    schedule_reconnect(q);
}

static void rd_connect(struct rd_store *q)
{
    redisAsyncContext *ac = q->url.path[0] ? redisAsyncConnectUnix(q->url.path)
                                           : redisAsyncConnect(q->url.host, q->url.port);

    if (!ac || ac->err) {
        set_up(q, false, "cannot connect to redis");
        if (ac)
            redisAsyncFree(ac);
        schedule_reconnect(q);
        return;
    }
    ac->data = q;
    q->ac = ac;
    redisLibuvAttach(ac, &q->loop);
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    send_setup(q);
    uv_timer_start(&q->connecting, connect_expired, RD_CONNECT_MS, 0);
}

/* ---- the store's thread ------------------------------------------------------------- */

static void close_all(struct rd_store *q)
{
    q->closing = true;
    if (q->ac)
        redisAsyncFree(q->ac); /* outstanding replies come back NULL: their ops end */
    q->ac = NULL;
    q->connected = false;
    uv_close((uv_handle_t *)&q->retry, NULL);
    uv_close((uv_handle_t *)&q->connecting, NULL);
    uv_close((uv_handle_t *)&q->ping, NULL);
    uv_close((uv_handle_t *)&q->wake, NULL);
}

static void on_wake(uv_async_t *a)
{
    struct rd_store *q = a->data;
    struct store__job *job, *next;
    bool stop;

    uv_mutex_lock(&q->mu);
    job = q->head;
    q->head = q->tail = NULL;
    stop = q->stopping;
    uv_mutex_unlock(&q->mu);
    for (; job; job = next) {
        next = job->next;
        run_job(q, job);
    }
    if (stop && !q->closing)
        close_all(q);
}

static void rd_main(void *arg)
{
    struct rd_store *q = arg;

    rd_connect(q);
    uv_run(&q->loop, UV_RUN_DEFAULT);
}

static enum bsc_err rd_submit(struct store *st, struct store__job *job)
{
    struct rd_store *q = (struct rd_store *)st;

    job->next = NULL;
    uv_mutex_lock(&q->mu);
    if (q->tail)
        q->tail->next = job;
    else
        q->head = job;
    q->tail = job;
    uv_mutex_unlock(&q->mu);
    uv_async_send(&q->wake);
    return BSC_OK;
}

static void rd_close(struct store *st)
{
    struct rd_store *q = (struct rd_store *)st;

    uv_mutex_lock(&q->mu);
    q->stopping = true;
    uv_mutex_unlock(&q->mu);
    uv_async_send(&q->wake);
    uv_thread_join(&q->thread);
    if (q->defer.n)
        LOG_WARN("store: %zu records of spend kept while redis was away were never added",
                 q->defer.n);
    store__defer_free(&q->defer);
    uv_loop_close(&q->loop);
    uv_mutex_destroy(&q->mu);
    free(q);
}

static enum bsc_err rd_open(const struct cfg_store *cfg, const struct store_opts *opts,
                            struct store **out, char *err, size_t errlen)
{
    struct rd_store *q = calloc(1, sizeof(*q));

    if (!q)
        return BSC_ENOMEM;
    store__base_init(&q->base, &store__redis, opts);
    if (redis_url_parse(cfg->url, &q->url, err, errlen) != BSC_OK) {
        free(q);
        return BSC_EINVAL;
    }
    snprintf(q->prefix, sizeof(q->prefix), "%s", cfg->prefix ? cfg->prefix : RKEY_DEFAULT_PREFIX);
    q->timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : 50;
    q->backoff_ms = RD_BACKOFF_MIN_MS;
    /* Down until the first connection: a job before it is refused, not queued. */
    atomic_store(&q->base.up, false);
    atomic_store(&q->base.down_reason, "connecting to redis");
    if (uv_loop_init(&q->loop) || uv_mutex_init(&q->mu)) {
        free(q);
        return BSC_EIO;
    }
    uv_async_init(&q->loop, &q->wake, on_wake);
    q->wake.data = q;
    uv_timer_init(&q->loop, &q->retry);
    q->retry.data = q;
    uv_timer_init(&q->loop, &q->connecting);
    q->connecting.data = q;
    uv_timer_init(&q->loop, &q->ping);
    q->ping.data = q;
    uv_timer_start(&q->ping, ping_fire, RD_PING_MS, RD_PING_MS);
    if (uv_thread_create(&q->thread, rd_main, q)) {
        snprintf(err, errlen, "redis store: cannot start its thread");
        return BSC_EIO; /* leaks the loop: the process exits on this error */
    }
    *out = &q->base;
    return BSC_OK;
}

const struct store_ops store__redis = {
    .name = "redis",
    .open = rd_open,
    .close = rd_close,
    .submit = rd_submit,
};
