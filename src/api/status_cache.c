/* SPDX-License-Identifier: MIT */
/* status_cache.c -- the response cache on the status page: per route the hits, misses and
 * bypasses since the start and the hit ratio (hits over lookups), the dollars saved, and
 * what the in-memory store holds (docs/internals/cache.md). */
#include <stdlib.h>
#include <string.h>

#include "api/status_cache.h"
#include "cache/lru.h"
#include "cache/semantic.h"
#include "metrics/metrics.h"
#include "router/gateway.h"

#define STATUS_MAX_CACHE_ROUTES 256

struct cache_row {
    const char *route; /* borrowed from the snapshot's registry */
    double hit, miss, bypass;
};

static struct cache_row *row_of(struct cache_row *rows, size_t *n, const char *route)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(rows[i].route, route) == 0)
            return &rows[i];
    if (*n == STATUS_MAX_CACHE_ROUTES)
        return NULL;
    rows[*n] = (struct cache_row){.route = route};
    return &rows[(*n)++];
}

static double collect(const struct metrics_snapshot *snap, struct cache_row *rows, size_t *n)
{
    double saved = 0;

    for (size_t i = 0; i < snap->n; i++) {
        const struct metrics_sample *m = &snap->samples[i];
        struct cache_row *row;

        if (m->id == METRIC_CACHE_SAVED)
            saved += m->value;
        if (m->id != METRIC_CACHE_REQUESTS || !(row = row_of(rows, n, m->labels[0])))
            continue;
        if (strcmp(m->labels[1], "hit") == 0)
            row->hit += m->value;
        else if (strcmp(m->labels[1], "miss") == 0)
            row->miss += m->value;
        else
            row->bypass += m->value;
    }
    return saved;
}

void api__put_cache_status(struct bsc_buf *b, struct worker *w)
{
    struct cache_row *rows = calloc(STATUS_MAX_CACHE_ROUTES, sizeof(*rows)); /* owned */
    struct metrics_snapshot snap = {0};
    size_t n = 0, entries = 0;
    uint64_t bytes = 0, evicted = 0;
    double saved = 0;

    if (rows && metrics_snapshot_take(w->gw->metrics, &snap) == BSC_OK)
        saved = collect(&snap, rows, &n);
    bsc_buf_append_cstr(b, ",\"cache\":{\"routes\":[");
    for (size_t i = 0; i < n; i++) {
        const struct cache_row *r = &rows[i];
        double lookups = r->hit + r->miss;

        bsc_buf_append_cstr(b, i ? ",{\"route\":" : "{\"route\":");
        bsc_buf_append_json_str(b, bsc_str_cstr(r->route));
        bsc_buf_appendf(b, ",\"hit\":%.0f,\"miss\":%.0f,\"bypass\":%.0f", r->hit, r->miss,
                        r->bypass);
        if (lookups > 0)
            bsc_buf_appendf(b, ",\"hit_ratio\":%.4f}", r->hit / lookups);
        else
            bsc_buf_append_cstr(b, ",\"hit_ratio\":null}");
    }
    if (w->gw->cache)
        cache_mem_usage(w->gw->cache, &entries, &bytes, &evicted);
    bsc_buf_appendf(b, "],\"saved_usd\":%.6f,\"entries\":%zu,\"bytes\":%llu", saved, entries,
                    (unsigned long long)bytes);
    entries = 0, bytes = 0;
    if (w->gw->sem) /* the semantic index: its own bound (docs/internals/cache.md) */
        cache_sem_usage(w->gw->sem, &entries, &bytes, &evicted);
    bsc_buf_appendf(b, ",\"semantic_entries\":%zu,\"semantic_bytes\":%llu}", entries,
                    (unsigned long long)bytes);
    metrics_snapshot_cleanup(&snap);
    free(rows);
}
