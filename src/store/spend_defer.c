/* SPDX-License-Identifier: MIT */
/* spend_defer.c -- spend adds a remote store could not confirm (Redis away, a connection lost
 * before the answer), kept as one sum per record key until the backend can add them again, so
 * that spend accrued while Redis is gone is added when it returns, not lost. Bounded: one row
 * per client and period, at most STORE__DEFER_MAX rows. Pure: no I/O, no lock (the backend's
 * thread only); unit-tested in tests/unit/test_spend_defer.c. */
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"

static struct store__defer_row *row_find(struct store__defer *d, const char *key, size_t len)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->rows[i].len == len && memcmp(d->rows[i].key, key, len) == 0)
            return &d->rows[i];
    return NULL;
}

/* A new row at 0 for <key>; NULL when out of memory. */
static struct store__defer_row *row_new(struct store__defer *d, const char *key, size_t len)
{
    struct store__defer_row *w;
    char *k;

    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 16;
        struct store__defer_row *rows = realloc(d->rows, cap * sizeof(*rows));

        if (!rows)
            return NULL;
        d->rows = rows;
        d->cap = cap;
    }
    k = malloc(len + 1);
    if (!k)
        return NULL;
    memcpy(k, key, len);
    k[len] = '\0';
    w = &d->rows[d->n++];
    *w = (struct store__defer_row){.key = k, .len = len};
    return w;
}

enum bsc_err store__defer_add(struct store__defer *d, const char *key, size_t len, double usd,
                              uint64_t ttl_ms)
{
    struct store__defer_row *w = row_find(d, key, len);

    if (!w && d->n >= STORE__DEFER_MAX)
        return BSC_ELIMIT;
    if (!w)
        w = row_new(d, key, len);
    if (!w)
        return BSC_ENOMEM;
    w->usd += usd;
    w->ttl_ms = ttl_ms;
    return BSC_OK;
}

void store__defer_drop(struct store__defer *d, const char *key, size_t len)
{
    struct store__defer_row *w = row_find(d, key, len);

    if (!w)
        return;
    free(w->key);
    *w = d->rows[--d->n]; /* order does not matter: each row is added on its own */
}

bool store__defer_pop(struct store__defer *d, struct store__defer_row *out)
{
    if (d->n == 0)
        return false;
    *out = d->rows[--d->n];
    return true;
}

void store__defer_free(struct store__defer *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->rows[i].key);
    BSC_FREE(d->rows);
    d->n = d->cap = 0;
}
