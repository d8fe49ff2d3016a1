/* SPDX-License-Identifier: MIT */
/* diag.c -- the diagnostics of a load: collecting (bounded by CFG__MAX_DIAGS), sorting by
 * position, printing as "file:line:column: error: message", and the "did you mean"
 * suggestion. It knows nothing of the schema. See docs/internals/config.md. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/diag.h"
#include "config/internal.h"
#include "config/types.h"
#include "core/buf.h"
#include "core/compat.h"

#define MSG_MAX 1024 /* bytes of one message; longer ones are cut */

void cfg__sink_init(struct cfg__sink *s, struct cfg_diags *out, const char *file)
{
    s->out = out;
    s->file = file;
    s->first = out->n;
    s->n_errors = 0;
    s->n_added = 0;
    s->full = false;
    s->oom = false;
}

static bool push(struct cfg__sink *s, bool warning, unsigned line, unsigned column, const char *msg)
{
    struct cfg_diags *d = s->out;
    struct cfg_diag *items;
    char *file, *text;

    items = realloc(d->items, (d->n + 1) * sizeof(*items));
    if (!items)
        return false;
    d->items = items;
    file = bsc_str_dup(bsc_str_cstr(s->file));
    text = bsc_str_dup(bsc_str_cstr(msg));
    if (!file || !text) {
        free(file);
        free(text);
        return false;
    }
    items[d->n] = (struct cfg_diag){
        .file = file, .line = line, .column = column, .warning = warning, .message = text};
    d->n++;
    s->n_added++;
    return true;
}

void cfg__diag(struct cfg__sink *s, bool warning, unsigned line, unsigned column,
               const char *fmt, ...)
{
    char msg[MSG_MAX];
    va_list ap;

    if (!warning)
        s->n_errors++;
    if (s->full)
        return;
    if (s->n_added + 1 >= CFG__MAX_DIAGS) {
        s->full = true;
        if (!push(s, false, 0, 0, "too many problems; stopping here"))
            s->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (!push(s, warning, line, column, msg))
        s->oom = true;
}

static bool before(const struct cfg_diag *a, const struct cfg_diag *b)
{
    if (a->line != b->line)
        return a->line < b->line;
    return a->column < b->column;
}

void cfg__sink_finish(struct cfg__sink *s)
{
    struct cfg_diag *items = s->out->items;
    size_t lo = s->first, hi = s->out->n;

    /* Insertion sort: stable, and n is at most CFG__MAX_DIAGS. The "too many" line, if
     * any, stays last. */
    if (s->full && hi > lo)
        hi--;
    for (size_t i = lo + 1; i < hi; i++) {
        struct cfg_diag cur = items[i];
        size_t j = i;

        while (j > lo && before(&cur, &items[j - 1])) {
            items[j] = items[j - 1];
            j--;
        }
        items[j] = cur;
    }
}

void cfg_diags_print(const struct cfg_diags *diags, void *file)
{
    FILE *f = file;

    for (size_t i = 0; i < diags->n; i++) {
        const struct cfg_diag *d = &diags->items[i];
        const char *kind = d->warning ? "warning" : "error";

        if (d->line && d->column)
            fprintf(f, "%s:%u:%u: %s: %s\n", d->file, d->line, d->column, kind, d->message);
        else if (d->line)
            fprintf(f, "%s:%u: %s: %s\n", d->file, d->line, kind, d->message);
        else
            fprintf(f, "%s: %s: %s\n", d->file, kind, d->message);
    }
}

void cfg_diags_cleanup(struct cfg_diags *diags)
{
    for (size_t i = 0; i < diags->n; i++) {
        free(diags->items[i].file);
        free(diags->items[i].message);
    }
    BSC_FREE(diags->items);
    diags->n = 0;
}

/* Edit distance counting a swap of two neighbours as one edit (optimal string alignment),
 * for words of at most 63 bytes (longer ones are never typos of ours). */
static size_t distance(const char *a, size_t la, const char *b, size_t lb)
{
    size_t rows[3][64];
    size_t *pp = rows[0], *prev = rows[1], *cur = rows[2];

    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t best = prev[j - 1] + (a[i - 1] != b[j - 1]);

            if (prev[j] + 1 < best)
                best = prev[j] + 1;
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                pp[j - 2] + 1 < best)
                best = pp[j - 2] + 1;
            cur[j] = best;
        }
        {
            size_t *t = pp;

            pp = prev;
            prev = cur;
            cur = t;
        }
    }
    return prev[lb];
}

const char *cfg__closest(const char *word, const char *const *cands, size_t n)
{
    size_t lw = strlen(word), best_d = SIZE_MAX;
    const char *best = NULL;

    if (lw == 0 || lw > 63)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        size_t lc = strlen(cands[i]), d, limit;

        if (lc > 63)
            continue;
        d = distance(word, lw, cands[i], lc);
        /* A third of the longer word, at least one and at most three edits. */
        limit = (lw > lc ? lw : lc) / 3;
        if (limit < 1)
            limit = 1;
        if (limit > 3)
            limit = 3;
        if (d <= limit && d < best_d) {
            best_d = d;
            best = cands[i];
        }
    }
    return best;
}
