/* SPDX-License-Identifier: MIT */
/* prom.c -- renders the registry as Prometheus text exposition format 0.0.4: HELP and TYPE
 * per family, label values escaped, histograms as cumulative buckets. It formats a snapshot
 * (metrics.c) and holds no lock itself; it does not serve HTTP. See
 * docs/internals/metrics.md. */
#include "metrics/metrics.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/compat.h"

/* Large enough for "%.17g" of any double and for a 64-bit count. */
#define NUM_MAX 32

/* Writes <v> as the shortest "%g" text (15 to 17 digits) that reads back as the same
 * double, so 0.1 renders as "0.1" and 3 as "3"; NaN and infinities as Prometheus spells
 * them. The gateway never calls setlocale(), so the decimal point is '.'. */
static void fmt_double(char out[NUM_MAX], double v)
{
    if (isnan(v)) {
        snprintf(out, NUM_MAX, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(out, NUM_MAX, "%sInf", v > 0 ? "+" : "-");
        return;
    }
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, NUM_MAX, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

static void fmt_u64(char out[NUM_MAX], uint64_t v)
{
    snprintf(out, NUM_MAX, "%" PRIu64, v);
}

/* Appends <s> escaped: backslash and newline always, the double quote when <in_label>
 * (a label value); HELP text escapes only the first two. Clean runs go in one append. */
static enum bsc_err put_escaped(struct bsc_buf *out, const char *s, bool in_label)
{
    enum bsc_err err = BSC_OK;
    const char *run = s;

    for (; !err && *s; s++) {
        const char *esc = NULL;

        if (*s == '\\')
            esc = "\\\\";
        else if (*s == '\n')
            esc = "\\n";
        else if (*s == '"' && in_label)
            esc = "\\\"";
        if (!esc)
            continue;
        err = bsc_buf_append(out, run, (size_t)(s - run));
        if (!err)
            err = bsc_buf_append(out, esc, 2);
        run = s + 1;
    }
    if (!err)
        err = bsc_buf_append(out, run, (size_t)(s - run));
    return err;
}

/* Appends one sample line: name<suffix>{labels[,le="<le>"]} <value>. <s> is NULL for the
 * zero sample of a family without labels; <le> is NULL outside histogram buckets. */
static enum bsc_err put_line(struct bsc_buf *out, const struct metrics_family *f,
                             const char *suffix, const struct metrics_sample *s, const char *le,
                             const char *value)
{
    enum bsc_err err = bsc_buf_appendf(out, "%s%s", f->name, suffix);
    bool braces = (s && f->n_labels > 0) || le;

    if (!err && braces)
        err = bsc_buf_append_char(out, '{');
    for (unsigned i = 0; s && !err && i < f->n_labels; i++) {
        err = bsc_buf_appendf(out, "%s%s=\"", i ? "," : "", f->label_names[i]);
        if (!err)
            err = put_escaped(out, s->labels[i], true);
        if (!err)
            err = bsc_buf_append_char(out, '"');
    }
    if (!err && le)
        err = bsc_buf_appendf(out, "%sle=\"%s\"", s && f->n_labels ? "," : "", le);
    if (!err && braces)
        err = bsc_buf_append_char(out, '}');
    if (!err)
        err = bsc_buf_appendf(out, " %s\n", value);
    return err;
}

/* Appends the cumulative _bucket lines, then _sum and _count, of histogram sample <s>. */
static enum bsc_err put_histogram(struct bsc_buf *out, const struct metrics_family *f,
                                  enum metric_id id, const struct metrics_sample *s,
                                  const uint64_t *buckets)
{
    size_t n;
    const double *bounds = metrics_bucket_bounds(id, &n);
    uint64_t cumulative = 0;
    char le[NUM_MAX], value[NUM_MAX];
    enum bsc_err err = BSC_OK;

    for (size_t i = 0; !err && i <= n; i++) {
        cumulative += buckets[i];
        if (i < n)
            fmt_double(le, bounds[i]);
        else
            snprintf(le, sizeof(le), "+Inf");
        fmt_u64(value, cumulative);
        err = put_line(out, f, "_bucket", s, le, value);
    }
    fmt_double(value, s ? s->value : 0);
    if (!err)
        err = put_line(out, f, "_sum", s, NULL, value);
    fmt_u64(value, s ? s->count : 0);
    if (!err)
        err = put_line(out, f, "_count", s, NULL, value);
    return err;
}

/* Appends one series of family <id>; <s> NULL means the zero series of a label-less one. */
static enum bsc_err put_sample(struct bsc_buf *out, enum metric_id id,
                               const struct metrics_sample *s)
{
    static const uint64_t zeros[METRICS_MAX_BUCKETS + 1];
    const struct metrics_family *f = metrics_family(id);
    char value[NUM_MAX];

    if (f->type == METRIC_HISTOGRAM)
        return put_histogram(out, f, id, s, s ? s->buckets : zeros);
    fmt_double(value, s ? s->value : 0);
    return put_line(out, f, "", s, NULL, value);
}

/* Appends family <id>: HELP, TYPE, then the samples starting at *<i>, which it advances
 * past them. */
static enum bsc_err put_family(struct bsc_buf *out, enum metric_id id,
                               const struct metrics_snapshot *snap, size_t *i)
{
    const struct metrics_family *f = metrics_family(id);
    enum bsc_err err = bsc_buf_appendf(out, "# HELP %s ", f->name);
    bool any = false;

    if (!err)
        err = put_escaped(out, f->help, false);
    if (!err)
        err = bsc_buf_appendf(out, "\n# TYPE %s %s\n", f->name, metrics_type_name(f->type));
    for (; !err && *i < snap->n && snap->samples[*i].id == id; (*i)++) {
        err = put_sample(out, id, &snap->samples[*i]);
        any = true;
    }
    /* A labelled family has no series until first used; an unlabelled one is a single
     * number, and 0 is its true value before any update. */
    if (!err && !any && f->n_labels == 0)
        err = put_sample(out, id, NULL);
    return err;
}

enum bsc_err metrics_render(struct metrics *m, struct bsc_buf *out)
{
    struct metrics_snapshot snap;
    size_t start = out->len, i = 0;
    enum bsc_err err = metrics_snapshot_take(m, &snap);

    for (unsigned id = 0; !err && id < METRIC_COUNT; id++)
        err = put_family(out, (enum metric_id)id, &snap, &i);
    metrics_snapshot_cleanup(&snap);
    if (err) {
        out->len = start;
        if (out->p)
            out->p[start] = '\0';
    }
    return err;
}
