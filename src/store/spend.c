/* SPDX-License-Identifier: MIT */
/* spend.c -- the store's spend records: what a client spent in one budget period, keyed by
 * client id and period start, with an atomic add (0 reads; negative gives back a budget
 * hold, router/spend.c) and a set (an operator's reset).
 * The front door checks and copies the inputs like every other operation (store.c); the
 * memory backend keeps the records here, the SQLite one in its `spend` table. Budgets and
 * the in-process cache in front of these records are router/spend.c's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"

struct store__spend_row {
    char client[CFG_SPEND_ID_MAX + 1];
    uint64_t period_ms;
    double usd;
};

static enum bsc_err spend_op(struct store *st, uv_loop_t *loop, enum store__op op,
                             struct bsc_str client, uint64_t period_ms, uint64_t ttl_ms,
                             double usd, store_spend_cb *cb, void *ud)
{
    struct store__job *job;
    size_t at = 0;

    if (!st || !cb || !client.p || client.len < 1 || client.len > CFG_SPEND_ID_MAX ||
        memchr(client.p, '\0', client.len) || !isfinite(usd) ||
        (usd < 0 && op != STORE__SPEND_ADD))
        return BSC_EINVAL;
    job = store__job_new(st, op, client.len);
    if (!job)
        return BSC_ENOMEM;
    job->key = store__put_bytes(job, &at, client);
    job->period_ms = period_ms;
    job->ttl_ms = ttl_ms;
    job->usd = usd;
    job->cb.spend = cb;
    job->ud = ud;
    return store__submit(st, loop, job);
}

enum bsc_err store_spend_add(struct store *st, uv_loop_t *loop, struct bsc_str client,
                             uint64_t period_ms, uint64_t ttl_ms, double usd,
                             store_spend_cb *cb, void *ud)
{
    return spend_op(st, loop, STORE__SPEND_ADD, client, period_ms, ttl_ms, usd, cb, ud);
}

enum bsc_err store_spend_set(struct store *st, uv_loop_t *loop, struct bsc_str client,
                             uint64_t period_ms, uint64_t ttl_ms, double usd,
                             store_spend_cb *cb, void *ud)
{
    return spend_op(st, loop, STORE__SPEND_SET, client, period_ms, ttl_ms, usd, cb, ud);
}

/* ---- the memory backend's records --------------------------------------------------------- */

static struct store__spend_row *row_find(struct store__spend_tab *t, struct store__job *job)
{
    for (size_t i = 0; i < t->n; i++) {
        struct store__spend_row *w = &t->rows[i];

        if (w->period_ms == job->period_ms && strlen(w->client) == job->key.len &&
            memcmp(w->client, job->key.p, job->key.len) == 0)
            return w;
    }
    return NULL;
}

/* A new row for the job's key, at 0. NULL when out of memory. */
static struct store__spend_row *row_add(struct store__spend_tab *t, struct store__job *job)
{
    struct store__spend_row *w;

    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        struct store__spend_row *rows = realloc(t->rows, cap * sizeof(*rows));

        if (!rows)
            return NULL;
        t->rows = rows;
        t->cap = cap;
    }
    w = &t->rows[t->n++];
    memcpy(w->client, job->key.p, job->key.len);
    w->client[job->key.len] = '\0';
    w->period_ms = job->period_ms;
    w->usd = 0;
    return w;
}

void store__spend_mem_run(struct store__spend_tab *t, struct store__job *job)
{
    struct store__spend_row *w = row_find(t, job);

    if (!w && job->op == STORE__SPEND_ADD && job->usd == 0) {
        job->usd = 0; /* a read of nothing: no row made */
        job->err = BSC_OK;
        return;
    }
    if (!w)
        w = row_add(t, job);
    if (!w) {
        job->err = BSC_ELIMIT;
        return;
    }
    w->usd = job->op == STORE__SPEND_SET ? job->usd : w->usd + job->usd;
    job->usd = w->usd;
    job->err = BSC_OK;
}

void store__spend_tab_free(struct store__spend_tab *t)
{
    BSC_FREE(t->rows);
    t->n = t->cap = 0;
}
