/* SPDX-License-Identifier: MIT */
/* report.c -- the counting and the report of `bascule load`: each finished request is
 * added to bounded tables and sample series; at the end percentiles (nearest rank over
 * every sample), rates and per-1,000 figures are derived and printed as text or JSON.
 * Nothing here reads a clock or a socket, so the unit tests drive it with made-up
 * results (tests/unit/test_load_report.c). Fields: docs/load.md. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "load/report.h"

void load_stats_init(struct load_stats *st)
{
    memset(st, 0, sizeof(*st));
}

static void table_cleanup(struct load_table *t)
{
    for (size_t i = 0; i < t->n; i++)
        BSC_FREE(t->rows[i].key);
    t->n = 0;
}

void load_stats_cleanup(struct load_stats *st)
{
    free(st->latency.v);
    free(st->ttft.v);
    table_cleanup(&st->targets);
    table_cleanup(&st->workflows);
    table_cleanup(&st->errors_by);
    memset(st, 0, sizeof(*st));
}

/* Counts <n> of <key> (cut to LOAD_KEY_MAX) with <status>. Returns false on ENOMEM. */
static bool table_add_n(struct load_table *t, struct bsc_str key, int status, uint64_t n)
{
    char *copy;

    if (key.len > LOAD_KEY_MAX)
        key.len = LOAD_KEY_MAX;
    for (size_t i = 0; i < t->n; i++) {
        struct load_row *r = &t->rows[i];
        if (r->status == status && strlen(r->key) == key.len &&
            memcmp(r->key, key.p, key.len) == 0) {
            r->n += n;
            return true;
        }
    }
    if (t->n == LOAD_TABLE_MAX) {
        t->other += n;
        return true;
    }
    copy = bsc_str_dup(key);
    if (!copy) {
        t->other += n;
        return false;
    }
    t->rows[t->n++] = (struct load_row){.key = copy, .status = status, .n = n};
    return true;
}

static bool table_add(struct load_table *t, struct bsc_str key, int status)
{
    return table_add_n(t, key, status, 1);
}

static bool table_merge(struct load_table *dst, const struct load_table *src)
{
    bool ok = true;

    for (size_t i = 0; i < src->n; i++)
        ok &= table_add_n(dst, bsc_str_cstr(src->rows[i].key), src->rows[i].status, src->rows[i].n);
    dst->other += src->other;
    return ok;
}

static bool samples_merge(struct load_samples *dst, const struct load_samples *src)
{
    for (size_t i = 0; i < src->n; i++)
        if (load_samples_add(dst, src->v[i]) != BSC_OK)
            return false;
    return true;
}

enum bsc_err load_samples_add(struct load_samples *s, uint64_t us)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        uint32_t *v;

        if (s->n >= LOAD_MAX_SAMPLES)
            return BSC_ELIMIT;
        if (cap > LOAD_MAX_SAMPLES)
            cap = LOAD_MAX_SAMPLES;
        v = realloc(s->v, cap * sizeof(*v));
        if (!v)
            return BSC_ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
    return BSC_OK;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return (x > y) - (x < y);
}

void load_samples_sort(struct load_samples *s)
{
    if (s->n > 1)
        qsort(s->v, s->n, sizeof(*s->v), cmp_u32);
}

uint32_t load_percentile(const uint32_t *sorted, size_t n, unsigned permille)
{
    uint64_t rank;

    if (n == 0)
        return 0;
    if (permille > 1000)
        permille = 1000;
    rank = ((uint64_t)permille * n + 999) / 1000;
    if (rank == 0)
        rank = 1;
    return sorted[rank - 1];
}

struct load_dist load_dist_of(const struct load_samples *s)
{
    struct load_dist d = {.n = s->n};
    double sum = 0;

    if (!s->n)
        return d;
    for (size_t i = 0; i < s->n; i++)
        sum += s->v[i];
    d.mean = sum / (double)s->n;
    d.p50 = load_percentile(s->v, s->n, 500);
    d.p95 = load_percentile(s->v, s->n, 950);
    d.p99 = load_percentile(s->v, s->n, 990);
    d.max = s->v[s->n - 1];
    return d;
}

double load_per_1k(double count, uint64_t per)
{
    return per ? count * 1000.0 / (double)per : 0.0;
}

bool load_result_ok(const struct load_result *r)
{
    if (r->transport || r->status < 200 || r->status > 299 || r->error_event)
        return false;
    return !r->stream || r->stream_done;
}

/* The code an error is counted under: the body's error.code, else what the transport or
 * the stream says went wrong, else "-". */
static struct bsc_str error_key(const struct load_result *r)
{
    if (r->transport)
        return bsc_str_cstr(r->transport);
    if (r->error_code.len)
        return r->error_code;
    if (r->stream && r->status >= 200 && r->status <= 299 && !r->stream_done)
        return BSC_STR("stream_incomplete");
    return BSC_STR("-");
}

/* A cost header: a non-negative decimal number of US dollars, else false. */
static bool parse_cost(struct bsc_str v, double *out)
{
    char tmp[64], *end;
    double d;

    if (!v.len || v.len >= sizeof(tmp))
        return false;
    memcpy(tmp, v.p, v.len);
    tmp[v.len] = '\0';
    d = strtod(tmp, &end);
    if (end != tmp + v.len || !isfinite(d) || d < 0)
        return false;
    *out = d;
    return true;
}

static void add_headers(struct load_stats *st, const struct load_result *r)
{
    unsigned long long attempts;
    double cost;
    bool ok = true;

    if (r->target.len)
        ok &= table_add(&st->targets, r->target, 0);
    if (r->workflow.len)
        ok &= table_add(&st->workflows, r->workflow, 0);
    if (r->attempts.len && bsc_str_to_u64(r->attempts, &attempts)) {
        st->attempts_sum += attempts;
        st->attempts_n++;
        if (attempts > st->attempts_max)
            st->attempts_max = attempts;
    }
    if (parse_cost(r->cost, &cost)) {
        st->cost_usd += cost;
        st->cost_n++;
    }
    if (!ok)
        st->oom = true;
}

void load_stats_add(struct load_stats *st, const struct load_result *r)
{
    st->completed++;
    if (load_result_ok(r)) {
        st->ok++;
        if (load_samples_add(&st->latency, r->latency_us) != BSC_OK)
            st->oom = true;
    } else {
        st->errors++;
        if (!table_add(&st->errors_by, error_key(r), r->status))
            st->oom = true;
    }
    if (r->has_ttft && load_samples_add(&st->ttft, r->ttft_us) != BSC_OK)
        st->oom = true;
    if (r->has_usage) {
        st->input_tokens += r->input_tokens;
        st->output_tokens += r->output_tokens;
        st->usage_n++;
    }
    add_headers(st, r);
}

void load_stats_merge(struct load_stats *dst, const struct load_stats *src)
{
    bool ok = true;

    dst->completed += src->completed;
    dst->ok += src->ok;
    dst->errors += src->errors;
    ok &= samples_merge(&dst->latency, &src->latency);
    ok &= samples_merge(&dst->ttft, &src->ttft);
    ok &= table_merge(&dst->targets, &src->targets);
    ok &= table_merge(&dst->workflows, &src->workflows);
    ok &= table_merge(&dst->errors_by, &src->errors_by);
    dst->attempts_sum += src->attempts_sum;
    dst->attempts_n += src->attempts_n;
    if (src->attempts_max > dst->attempts_max)
        dst->attempts_max = src->attempts_max;
    dst->input_tokens += src->input_tokens;
    dst->output_tokens += src->output_tokens;
    dst->usage_n += src->usage_n;
    dst->cost_usd += src->cost_usd;
    dst->cost_n += src->cost_n;
    dst->oom |= src->oom || !ok;
}

/* ---- output ---- */

static double ms(uint32_t us)
{
    return us / 1000.0;
}

static double elapsed_s(const struct load_meta *m)
{
    return m->elapsed_us / 1e6;
}

static double rate(const struct load_stats *st, const struct load_meta *m)
{
    return m->elapsed_us ? (double)st->completed / elapsed_s(m) : 0.0;
}

static double success_rate(const struct load_stats *st)
{
    return st->completed ? (double)st->ok / (double)st->completed : 0.0;
}

static void text_dist(FILE *f, const char *label, const struct load_dist *d)
{
    if (!d->n) {
        fprintf(f, "%-16s -\n", label);
        return;
    }
    fprintf(f, "%-16s p50 %.1f  p95 %.1f  p99 %.1f  max %.1f  (%llu samples)\n", label, ms(d->p50),
            ms(d->p95), ms(d->p99), ms(d->max), (unsigned long long)d->n);
}

static void text_table(FILE *f, const char *label, const struct load_table *t)
{
    fprintf(f, "%-16s", label);
    if (!t->n && !t->other)
        fputs(" -", f);
    for (size_t i = 0; i < t->n; i++)
        fprintf(f, " %s=%llu", t->rows[i].key, (unsigned long long)t->rows[i].n);
    if (t->other)
        fprintf(f, " (other)=%llu", (unsigned long long)t->other);
    fputc('\n', f);
}

static void text_errors(FILE *f, const struct load_table *t)
{
    if (!t->n && !t->other) {
        fprintf(f, "%-16s -\n", "errors");
        return;
    }
    fprintf(f, "errors (status code: count)\n");
    for (size_t i = 0; i < t->n; i++)
        fprintf(f, "  %3d %s: %llu\n", t->rows[i].status, t->rows[i].key,
                (unsigned long long)t->rows[i].n);
    if (t->other)
        fprintf(f, "  (other): %llu\n", (unsigned long long)t->other);
}

static void sort_all(struct load_stats *st)
{
    load_samples_sort(&st->latency);
    load_samples_sort(&st->ttft);
}

void load_report_text(FILE *f, struct load_stats *st, const struct load_meta *meta)
{
    struct load_dist lat, ttft;

    sort_all(st);
    lat = load_dist_of(&st->latency);
    ttft = load_dist_of(&st->ttft);
    fprintf(f, "bascule load: %s model=%s%s concurrency=%u\n", meta->url, meta->model,
            meta->stream ? " stream" : "", meta->concurrency);
    fprintf(f, "%-16s %llu completed in %.2f s (%llu ok, %llu errors", "requests",
            (unsigned long long)st->completed, elapsed_s(meta), (unsigned long long)st->ok,
            (unsigned long long)st->errors);
    if (meta->cancelled)
        fprintf(f, ", %llu cancelled at the end", (unsigned long long)meta->cancelled);
    fprintf(f, ")%s\n", meta->interrupted ? " -- interrupted" : "");
    fprintf(f, "%-16s %.2f%%\n", "success rate", 100.0 * success_rate(st));
    fprintf(f, "%-16s %.1f\n", "requests/s", rate(st, meta));
    text_dist(f, "latency ms", &lat);
    text_dist(f, "TTFT ms", &ttft);
    text_table(f, "targets", &st->targets);
    text_table(f, "workflows", &st->workflows);
    if (st->attempts_n)
        fprintf(f, "%-16s mean %.2f  max %llu\n", "attempts/request",
                (double)st->attempts_sum / (double)st->attempts_n,
                (unsigned long long)st->attempts_max);
    else
        fprintf(f, "%-16s -\n", "attempts/request");
    text_errors(f, &st->errors_by);
    if (st->usage_n)
        fprintf(f, "%-16s input %.0f  output %.0f  (usage in %llu responses)\n", "tokens/1k req",
                load_per_1k((double)st->input_tokens, st->usage_n),
                load_per_1k((double)st->output_tokens, st->usage_n),
                (unsigned long long)st->usage_n);
    else
        fprintf(f, "%-16s -\n", "tokens/1k req");
    if (st->cost_n)
        fprintf(f, "%-16s $%.6f  (x-bascule-cost-usd in %llu responses)\n", "cost/1k req",
                load_per_1k(st->cost_usd, st->cost_n), (unsigned long long)st->cost_n);
    else
        fprintf(f, "%-16s -\n", "cost/1k req");
    if (st->oom)
        fprintf(f, "note: out of memory or past %u samples: some results were left out\n",
                LOAD_MAX_SAMPLES);
}

/* ---- JSON ---- */

static enum bsc_err json_dist(struct bsc_buf *b, const char *name, const struct load_dist *d)
{
    if (!d->n)
        return bsc_buf_appendf(b, "\"%s\":null,", name);
    return bsc_buf_appendf(b,
                           "\"%s\":{\"samples\":%llu,\"p50\":%.3f,\"p95\":%.3f,\"p99\":%.3f,"
                           "\"max\":%.3f,\"mean\":%.3f},",
                           name, (unsigned long long)d->n, ms(d->p50), ms(d->p95), ms(d->p99),
                           ms(d->max), d->mean / 1000.0);
}

static enum bsc_err json_table(struct bsc_buf *b, const char *name, const struct load_table *t)
{
    enum bsc_err err = bsc_buf_appendf(b, "\"%s\":{", name);

    for (size_t i = 0; !err && i < t->n; i++) {
        err = bsc_buf_append_json_str(b, bsc_str_cstr(t->rows[i].key));
        if (!err)
            err = bsc_buf_appendf(b, ":%llu%s", (unsigned long long)t->rows[i].n,
                                  i + 1 < t->n || t->other ? "," : "");
    }
    if (!err && t->other)
        err = bsc_buf_appendf(b, "\"(other)\":%llu", (unsigned long long)t->other);
    return err ? err : BSC_BUF_APPEND_LIT(b, "},");
}

static enum bsc_err json_errors(struct bsc_buf *b, const struct load_table *t)
{
    enum bsc_err err = BSC_BUF_APPEND_LIT(b, "\"errors\":[");

    for (size_t i = 0; !err && i < t->n; i++) {
        err = bsc_buf_appendf(b, "%s{\"status\":%d,\"code\":", i ? "," : "", t->rows[i].status);
        if (!err)
            err = bsc_buf_append_json_str(b, bsc_str_cstr(t->rows[i].key));
        if (!err)
            err = bsc_buf_appendf(b, ",\"count\":%llu}", (unsigned long long)t->rows[i].n);
    }
    if (!err && t->other)
        err = bsc_buf_appendf(b, "%s{\"status\":null,\"code\":\"(other)\",\"count\":%llu}",
                              t->n ? "," : "", (unsigned long long)t->other);
    return err ? err : BSC_BUF_APPEND_LIT(b, "],");
}

static enum bsc_err json_head(struct bsc_buf *b, const struct load_stats *st,
                              const struct load_meta *m)
{
    enum bsc_err err = BSC_BUF_APPEND_LIT(b, "{\"url\":");

    if (!err)
        err = bsc_buf_append_json_str(b, bsc_str_cstr(m->url));
    if (!err)
        err = BSC_BUF_APPEND_LIT(b, ",\"model\":");
    if (!err)
        err = bsc_buf_append_json_str(b, bsc_str_cstr(m->model));
    if (!err)
        err = bsc_buf_appendf(b, ",\"stream\":%s,\"concurrency\":%u,", m->stream ? "true" : "false",
                              m->concurrency);
    if (!err)
        err = m->planned
                  ? bsc_buf_appendf(b, "\"planned_requests\":%llu,", (unsigned long long)m->planned)
                  : BSC_BUF_APPEND_LIT(b, "\"planned_requests\":null,");
    if (!err)
        err = m->duration_ms ? bsc_buf_appendf(b, "\"duration_s\":%.3f,", m->duration_ms / 1000.0)
                             : BSC_BUF_APPEND_LIT(b, "\"duration_s\":null,");
    if (!err)
        err = bsc_buf_appendf(
            b,
            "\"elapsed_s\":%.3f,\"interrupted\":%s,\"sent\":%llu,\"completed\":%llu,\"ok\":%llu,"
            "\"errors_total\":%llu,\"cancelled\":%llu,\"success_rate\":%.6f,"
            "\"requests_per_s\":%.3f,",
            elapsed_s(m), m->interrupted ? "true" : "false", (unsigned long long)m->sent,
            (unsigned long long)st->completed, (unsigned long long)st->ok,
            (unsigned long long)st->errors, (unsigned long long)m->cancelled, success_rate(st),
            rate(st, m));
    return err;
}

static enum bsc_err json_tail(struct bsc_buf *b, const struct load_stats *st)
{
    enum bsc_err err;

    if (st->attempts_n)
        err = bsc_buf_appendf(b, "\"attempts\":{\"responses\":%llu,\"mean\":%.4f,\"max\":%llu},",
                              (unsigned long long)st->attempts_n,
                              (double)st->attempts_sum / (double)st->attempts_n,
                              (unsigned long long)st->attempts_max);
    else
        err = BSC_BUF_APPEND_LIT(b, "\"attempts\":null,");
    if (!err)
        err = bsc_buf_appendf(b,
                              "\"tokens\":{\"responses\":%llu,\"input\":%llu,\"output\":%llu,"
                              "\"input_per_1k\":%.3f,\"output_per_1k\":%.3f},",
                              (unsigned long long)st->usage_n, (unsigned long long)st->input_tokens,
                              (unsigned long long)st->output_tokens,
                              load_per_1k((double)st->input_tokens, st->usage_n),
                              load_per_1k((double)st->output_tokens, st->usage_n));
    if (!err && st->cost_n)
        err = bsc_buf_appendf(b, "\"cost\":{\"responses\":%llu,\"usd\":%.9f,\"usd_per_1k\":%.9f},",
                              (unsigned long long)st->cost_n, st->cost_usd,
                              load_per_1k(st->cost_usd, st->cost_n));
    else if (!err)
        err = BSC_BUF_APPEND_LIT(b, "\"cost\":null,");
    if (!err)
        err = bsc_buf_appendf(b, "\"incomplete\":%s}\n", st->oom ? "true" : "false");
    return err;
}

enum bsc_err load_report_json(struct bsc_buf *out, struct load_stats *st,
                              const struct load_meta *meta)
{
    struct load_dist lat, ttft;
    enum bsc_err err;

    sort_all(st);
    lat = load_dist_of(&st->latency);
    ttft = load_dist_of(&st->ttft);
    err = json_head(out, st, meta);
    if (!err)
        err = json_dist(out, "latency_ms", &lat);
    if (!err)
        err = json_dist(out, "ttft_ms", &ttft);
    if (!err)
        err = json_table(out, "targets", &st->targets);
    if (!err)
        err = json_table(out, "workflows", &st->workflows);
    if (!err)
        err = json_errors(out, &st->errors_by);
    if (!err)
        err = json_tail(out, st);
    return err;
}
