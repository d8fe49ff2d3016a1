/* SPDX-License-Identifier: MIT */
/* store_mem.c -- the memory backend: two chained hash tables (idempotency records, ledger
 * entries) behind one mutex, shared by every worker loop. Each operation runs at once on
 * the caller's thread (microseconds, no I/O) and its callback is deferred to the caller's
 * loop like any other backend's. Keys are hashed with SipHash-2-4 under a per-process
 * random key, so clients cannot pick keys that collide. Bounded by store_opts; expired
 * records go lazily when touched and a few buckets at a time on every begin.
 * Nothing survives the process. See docs/internals/store.md. */
#include <string.h>

#include "core/id.h"
#include "store/internal.h"

#define MIN_BUCKETS 64
#define MAX_BUCKETS (1u << 24)
#define SWEEP_BUCKETS 16 /* buckets a begin examines for expired records */
#define FULL_SWEEP_MS 1000 /* when full, a sweep of every bucket at most this often */
#define IDEM_CKEY_MAX (1 + IDEM_SCOPE_MAX + IDEM_KEY_MAX)

struct mem_node {
    struct mem_node *next;
    uint64_t hash;
    struct bsc_str key; /* points into the node itself */
};

struct mem_table {
    struct mem_node **b; /* owned: <nb> chains */
    size_t nb;           /* a power of two */
    size_t count;
    size_t cursor;       /* the next bucket the sweep examines */
};

struct mem_idem {
    struct mem_node n;
    struct idem_record rec;
    uint64_t claim, ttl_ms;
    int status;
    bool stream;
    char *headers, *body; /* owned; complete records only */
    size_t headers_len, body_len;
    char ckey[];          /* the composite key: scope length, scope, key */
};

struct mem_ledger {
    struct mem_node n;    /* key = e.op_id */
    struct ledger_entry e;
};

struct mem_blob {
    struct mem_node n;    /* key = the blob key, after the value */
    uint64_t expires_ms;
    size_t len;
    char data[];          /* the value, then the key */
};

struct mem_store {
    struct store base;
    uv_mutex_t mu;        /* guards everything below */
    uint64_t k0, k1;      /* the SipHash key */
    struct mem_table idem, ledger, blob;
    size_t blob_bytes;    /* value bytes held by blobs (bounded like answers) */
    struct store__spend_tab spend; /* spend records (spend.c) */
    size_t idem_bytes;    /* answer bytes held */
    uint64_t full_sweep_ms; /* when the last sweep of every bucket ran */
};

/* ---- SipHash-2-4 (Aumasson & Bernstein), 64-bit output ---------------------------------- */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                           \
    do {                                                                                   \
        v0 += v1, v1 = ROTL(v1, 13), v1 ^= v0, v0 = ROTL(v0, 32);                          \
        v2 += v3, v3 = ROTL(v3, 16), v3 ^= v2;                                             \
        v0 += v3, v3 = ROTL(v3, 21), v3 ^= v0;                                             \
        v2 += v1, v1 = ROTL(v1, 17), v1 ^= v2, v2 = ROTL(v2, 32);                          \
    } while (0)

static uint64_t siphash(uint64_t k0, uint64_t k1, const unsigned char *p, size_t n)
{
    uint64_t v0 = k0 ^ 0x736f6d6570736575ull, v1 = k1 ^ 0x646f72616e646f6dull;
    uint64_t v2 = k0 ^ 0x6c7967656e657261ull, v3 = k1 ^ 0x7465646279746573ull;
    uint64_t m, b = (uint64_t)n << 56;
    size_t i, full = n & ~(size_t)7;

    for (i = 0; i < full; i += 8) {
        m = 0;
        for (int j = 7; j >= 0; j--)
            m = m << 8 | p[i + (size_t)j];
        v3 ^= m;
        SIPROUND;
        SIPROUND;
        v0 ^= m;
    }
    for (size_t j = 0; j < (n & 7); j++)
        b |= (uint64_t)p[full + j] << (8 * j);
    v3 ^= b;
    SIPROUND;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

static uint64_t hash_of(const struct mem_store *ms, struct bsc_str key)
{
    return siphash(ms->k0, ms->k1, (const unsigned char *)key.p, key.len);
}

/* ---- the table -------------------------------------------------------------------------- */

static bool table_init(struct mem_table *t)
{
    t->b = calloc(MIN_BUCKETS, sizeof(*t->b));
    t->nb = MIN_BUCKETS;
    t->count = t->cursor = 0;
    return t->b != NULL;
}

/* The link that points at the node with <key>, or at the NULL ending its chain. */
static struct mem_node **table_find(struct mem_table *t, uint64_t hash, struct bsc_str key)
{
    struct mem_node **link = &t->b[hash & (t->nb - 1)];

    for (; *link; link = &(*link)->next)
        if ((*link)->hash == hash && bsc_str_eq((*link)->key, key))
            break;
    return link;
}

/* Doubles the bucket array when the load passes 1. A failed allocation only leaves the
 * chains longer: it is not an error. */
static void table_maybe_grow(struct mem_table *t)
{
    struct mem_node **nb;
    size_t n = t->nb * 2;

    if (t->count < t->nb || t->nb >= MAX_BUCKETS)
        return;
    nb = calloc(n, sizeof(*nb));
    if (!nb)
        return;
    for (size_t i = 0; i < t->nb; i++) {
        struct mem_node *x = t->b[i], *next;
        for (; x; x = next) {
            next = x->next;
            x->next = nb[x->hash & (n - 1)];
            nb[x->hash & (n - 1)] = x;
        }
    }
    free(t->b);
    t->b = nb;
    t->nb = n;
    t->cursor = 0;
}

static void table_insert(struct mem_table *t, struct mem_node *x)
{
    struct mem_node **head = &t->b[x->hash & (t->nb - 1)];

    x->next = *head;
    *head = x;
    t->count++;
    table_maybe_grow(t);
}

static struct mem_node *table_unlink(struct mem_table *t, struct mem_node **link)
{
    struct mem_node *x = *link;

    *link = x->next;
    t->count--;
    return x;
}

/* ---- idempotency records ---------------------------------------------------------------- */

static struct bsc_str composite_key(char buf[IDEM_CKEY_MAX], struct bsc_str scope,
                                    struct bsc_str key)
{
    buf[0] = (char)(unsigned char)scope.len;
    if (scope.len)
        memcpy(buf + 1, scope.p, scope.len);
    memcpy(buf + 1 + scope.len, key.p, key.len);
    return bsc_str_make(buf, 1 + scope.len + key.len);
}

static void idem_free(struct mem_store *ms, struct mem_idem *r)
{
    ms->idem_bytes -= r->headers_len + r->body_len;
    free(r->headers);
    free(r->body);
    free(r);
}

static void idem_remove(struct mem_store *ms, struct mem_node **link)
{
    idem_free(ms, (struct mem_idem *)table_unlink(&ms->idem, link));
}

/* Drops expired records from the next <n> buckets. */
static void sweep(struct mem_store *ms, uint64_t now, size_t n)
{
    struct mem_table *t = &ms->idem;

    for (size_t i = 0; i < n; i++) {
        struct mem_node **link = &t->b[t->cursor];
        while (*link) {
            if (idem_record_expired(&((struct mem_idem *)*link)->rec, now))
                idem_remove(ms, link);
            else
                link = &(*link)->next;
        }
        t->cursor = (t->cursor + 1) & (t->nb - 1);
    }
}

/* At a limit, expired records may still hold room. Sweeping every bucket costs
 * O(records) under the lock, so it runs at most once per FULL_SWEEP_MS, not on every
 * refusal. */
static void make_room(struct mem_store *ms, uint64_t now)
{
    if (now - ms->full_sweep_ms < FULL_SWEEP_MS)
        return;
    ms->full_sweep_ms = now;
    sweep(ms, now, ms->idem.nb);
}

static enum bsc_err idem_insert(struct mem_store *ms, uint64_t hash, struct bsc_str ck,
                                struct store__job *job, uint64_t now)
{
    struct mem_idem *r;

    if (ms->idem.count >= ms->base.opts.mem_max_idem)
        make_room(ms, now);
    if (ms->idem.count >= ms->base.opts.mem_max_idem)
        return BSC_ELIMIT;
    r = calloc(1, sizeof(*r) + ck.len);
    if (!r)
        return BSC_ENOMEM;
    memcpy(r->ckey, ck.p, ck.len);
    r->n.hash = hash;
    r->n.key = bsc_str_make(r->ckey, ck.len);
    r->rec.fp = job->fp;
    r->rec.state = IDEM_ST_IN_FLIGHT;
    r->rec.expires_ms = idem_expiry(IDEM_ST_IN_FLIGHT, now, job->ttl_ms,
                                    ms->base.opts.inflight_lease_ms);
    r->claim = job->claim = store__new_claim();
    r->ttl_ms = job->ttl_ms;
    table_insert(&ms->idem, &r->n);
    return BSC_OK;
}

static void run_begin(struct mem_store *ms, struct store__job *job, uint64_t now)
{
    char buf[IDEM_CKEY_MAX];
    struct bsc_str ck = composite_key(buf, job->scope, job->key);
    uint64_t hash = hash_of(ms, ck);
    struct mem_node **link;
    struct mem_idem *r;

    sweep(ms, now, SWEEP_BUCKETS);
    link = table_find(&ms->idem, hash, ck);
    r = (struct mem_idem *)*link;
    if (r && idem_record_expired(&r->rec, now)) {
        idem_remove(ms, link);
        r = NULL;
    }
    job->decision = idem_decide(r ? &r->rec : NULL, &job->fp, now);
    if (job->decision == IDEM_MISS)
        job->err = idem_insert(ms, hash, ck, job, now);
    else if (job->decision == IDEM_REPLAY)
        job->err = store__job_set_answer(job, r->status, r->stream,
                                         bsc_str_make(r->headers, r->headers_len),
                                         bsc_str_make(r->body, r->body_len));
}

/* Finds the caller's record for complete/abandon; sets job->err and returns the link. */
static struct mem_node **find_claimed(struct mem_store *ms, struct store__job *job, uint64_t now)
{
    char buf[IDEM_CKEY_MAX];
    struct bsc_str ck = composite_key(buf, job->scope, job->key);
    struct mem_node **link = table_find(&ms->idem, hash_of(ms, ck), ck);
    struct mem_idem *r = (struct mem_idem *)*link;

    if (!r) {
        job->err = BSC_ENOTFOUND;
        return NULL;
    }
    job->err = store__claim_check(r->rec.state, r->claim, job->claim,
                                  idem_record_expired(&r->rec, now));
    return job->err ? NULL : link;
}

static enum bsc_err copy_out(char **dst, size_t *dlen, struct bsc_str s)
{
    *dst = malloc(s.len + 1);
    if (!*dst)
        return BSC_ENOMEM;
    if (s.len)
        memcpy(*dst, s.p, s.len);
    (*dst)[s.len] = '\0';
    *dlen = s.len;
    return BSC_OK;
}

static void run_complete(struct mem_store *ms, struct store__job *job, uint64_t now)
{
    struct mem_node **link = find_claimed(ms, job, now);
    struct mem_idem *r;
    size_t add = job->in.headers.len + job->in.body.len;

    if (!link)
        return;
    r = (struct mem_idem *)*link;
    /* Its owner is alive: renew the lease, which also keeps <r> out of make_room's way
     * when it was past it (complete accepts that, see store__claim_check). */
    r->rec.expires_ms = idem_expiry(IDEM_ST_IN_FLIGHT, now, r->ttl_ms,
                                    ms->base.opts.inflight_lease_ms);
    if (ms->idem_bytes + add > ms->base.opts.mem_max_idem_bytes) {
        make_room(ms, now);
        if (ms->idem_bytes + add > ms->base.opts.mem_max_idem_bytes) {
            job->err = BSC_ELIMIT;
            return;
        }
    }
    job->err = copy_out(&r->headers, &r->headers_len, job->in.headers);
    if (!job->err)
        job->err = copy_out(&r->body, &r->body_len, job->in.body);
    if (job->err) {
        BSC_FREE(r->headers);
        r->headers_len = 0;
        return;
    }
    ms->idem_bytes += add;
    r->status = job->in.status;
    r->stream = job->in.stream;
    r->rec.state = IDEM_ST_COMPLETE;
    r->rec.expires_ms = idem_expiry(IDEM_ST_COMPLETE, now, r->ttl_ms, 0);
}

static void run_abandon(struct mem_store *ms, struct store__job *job, uint64_t now)
{
    struct mem_node **link = find_claimed(ms, job, now);

    if (link)
        idem_remove(ms, link);
}

/* ---- ledger entries --------------------------------------------------------------------- */

static void run_ledger(struct mem_store *ms, struct store__job *job, uint64_t now)
{
    uint64_t hash = hash_of(ms, job->key);
    struct mem_node **link = table_find(&ms->ledger, hash, job->key);
    struct mem_ledger *x = (struct mem_ledger *)*link;

    if (!store__ledger_step(job, x ? &x->e : NULL, now))
        return;
    if (x) {
        x->e = job->entry;
        return;
    }
    if (ms->ledger.count >= ms->base.opts.mem_max_ledger)
        job->err = BSC_ELIMIT;
    else if (!(x = calloc(1, sizeof(*x))))
        job->err = BSC_ENOMEM;
    if (job->err) {
        job->has_entry = false;
        return;
    }
    x->e = job->entry;
    x->n.hash = hash;
    x->n.key = bsc_str_cstr(x->e.op_id);
    table_insert(&ms->ledger, &x->n);
}

/* ---- blobs ------------------------------------------------------------------------------ */

static void blob_remove(struct mem_store *ms, struct mem_node **link)
{
    struct mem_blob *x = (struct mem_blob *)table_unlink(&ms->blob, link);

    ms->blob_bytes -= x->len;
    free(x);
}

/* Drops expired blobs from the next <n> buckets. */
static void blob_sweep(struct mem_store *ms, uint64_t now, size_t n)
{
    struct mem_table *t = &ms->blob;

    for (size_t i = 0; i < n; i++) {
        struct mem_node **link = &t->b[t->cursor];
        while (*link) {
            if (((struct mem_blob *)*link)->expires_ms <= now)
                blob_remove(ms, link);
            else
                link = &(*link)->next;
        }
        t->cursor = (t->cursor + 1) & (t->nb - 1);
    }
}

static void run_blob_put(struct mem_store *ms, struct store__job *job, uint64_t now)
{
    uint64_t hash = hash_of(ms, job->key);
    struct mem_node **link;
    struct bsc_str v = job->in.body;
    struct mem_blob *x;

    blob_sweep(ms, now, SWEEP_BUCKETS);
    link = table_find(&ms->blob, hash, job->key);
    if (*link)
        blob_remove(ms, link);
    if (ms->blob.count >= ms->base.opts.mem_max_idem ||
        ms->blob_bytes + v.len > ms->base.opts.mem_max_idem_bytes) {
        blob_sweep(ms, now, ms->blob.nb);
        if (ms->blob.count >= ms->base.opts.mem_max_idem ||
            ms->blob_bytes + v.len > ms->base.opts.mem_max_idem_bytes) {
            job->err = BSC_ELIMIT;
            return;
        }
    }
    x = calloc(1, sizeof(*x) + v.len + job->key.len);
    if (!x) {
        job->err = BSC_ENOMEM;
        return;
    }
    if (v.len)
        memcpy(x->data, v.p, v.len);
    memcpy(x->data + v.len, job->key.p, job->key.len);
    x->len = v.len;
    x->expires_ms = now + job->ttl_ms;
    x->n.hash = hash;
    x->n.key = bsc_str_make(x->data + v.len, job->key.len);
    ms->blob_bytes += v.len;
    table_insert(&ms->blob, &x->n);
    job->err = BSC_OK;
}

static void run_blob_get(struct mem_store *ms, struct store__job *job, uint64_t now)
{
    struct mem_node **link = table_find(&ms->blob, hash_of(ms, job->key), job->key);
    struct mem_blob *x = (struct mem_blob *)*link;

    if (!x || x->expires_ms <= now) {
        job->err = BSC_ENOTFOUND;
        return;
    }
    job->body = malloc(x->len + 1);
    if (!job->body) {
        job->err = BSC_ENOMEM;
        return;
    }
    memcpy(job->body, x->data, x->len);
    job->body[x->len] = '\0';
    job->body_len = x->len;
    job->err = BSC_OK;
}

/* ---- the ops ---------------------------------------------------------------------------- */

static enum bsc_err mem_submit(struct store *st, struct store__job *job)
{
    struct mem_store *ms = (struct mem_store *)st;
    uint64_t now = store__now(st);

    uv_mutex_lock(&ms->mu);
    switch (job->op) {
    case STORE__IDEM_BEGIN: run_begin(ms, job, now); break;
    case STORE__IDEM_COMPLETE: run_complete(ms, job, now); break;
    case STORE__IDEM_ABANDON: run_abandon(ms, job, now); break;
    case STORE__LEDGER_PUT:
    case STORE__LEDGER_GET: run_ledger(ms, job, now); break;
    case STORE__BLOB_PUT: run_blob_put(ms, job, now); break;
    case STORE__BLOB_GET: run_blob_get(ms, job, now); break;
    case STORE__SPEND_ADD:
    case STORE__SPEND_SET: store__spend_mem_run(&ms->spend, job); break;
    default: BSC_BUG_ON(1);
    }
    uv_mutex_unlock(&ms->mu);
    store__job_done(job);
    return BSC_OK;
}

static void table_free(struct mem_store *ms, struct mem_table *t, bool idem)
{
    for (size_t i = 0; t->b && i < t->nb; i++) {
        struct mem_node *x = t->b[i], *next;
        for (; x; x = next) {
            next = x->next;
            if (idem)
                idem_free(ms, (struct mem_idem *)x);
            else
                free(x);
        }
    }
    BSC_FREE(t->b);
}

static void mem_close(struct store *st)
{
    struct mem_store *ms = (struct mem_store *)st;

    table_free(ms, &ms->idem, true);
    table_free(ms, &ms->ledger, false);
    table_free(ms, &ms->blob, false);
    store__spend_tab_free(&ms->spend);
    uv_mutex_destroy(&ms->mu);
    free(ms);
}

static enum bsc_err mem_open(const struct cfg_store *cfg, const struct store_opts *opts,
                             struct store **out, char *err, size_t errlen)
{
    struct mem_store *ms = calloc(1, sizeof(*ms));

    (void)cfg;
    if (!ms || !table_init(&ms->idem) || !table_init(&ms->ledger) || !table_init(&ms->blob)) {
        if (ms) {
            free(ms->idem.b);
            free(ms->ledger.b);
            free(ms->blob.b);
        }
        free(ms);
        snprintf(err, errlen, "out of memory opening the memory store");
        return BSC_ENOMEM;
    }
    if (uv_mutex_init(&ms->mu) != 0) {
        free(ms->idem.b);
        free(ms->ledger.b);
        free(ms->blob.b);
        free(ms);
        snprintf(err, errlen, "cannot create the memory store's mutex");
        return BSC_EIO;
    }
    store__base_init(&ms->base, &store__mem, opts);
    ms->k0 = bsc_rand64();
    ms->k1 = bsc_rand64();
    *out = &ms->base;
    return BSC_OK;
}

const struct store_ops store__mem = {
    .name = "memory",
    .open = mem_open,
    .close = mem_close,
    .submit = mem_submit,
};
