/* SPDX-License-Identifier: MIT */
/* test_metrics.c -- the metrics registry and its Prometheus text: the family table, sums
 * across shards (also from several threads while a scraper renders), cumulative histogram
 * buckets at their bounds, label escaping and truncation, ordering, the per-shard series
 * limit at limit-1/limit/limit+1 with the drop counter, float counters, gauges, rejected
 * updates, and a render that hits its buffer bound. Every rendered text goes through a small
 * line-by-line checker of the 0.0.4 format. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/buf.h"
#include "metrics/metrics.h"

#define RENDER_MAX (64u << 20)

/* ---- a tiny parser for the exposition format ---------------------------------------------- */

struct psample {
    char *name; /* as written: the family name plus _bucket/_sum/_count for histograms */
    enum metric_id id;
    unsigned n; /* label pairs, le included */
    char *lname[METRICS_MAX_LABELS + 1];
    char *lval[METRICS_MAX_LABELS + 1]; /* unescaped */
    double value;
};

struct parsed {
    struct psample *v;
    size_t n, cap;
};

struct pstate {
    bool help[METRIC_COUNT], type[METRIC_COUNT], samples[METRIC_COUNT];
    int cur; /* the family whose TYPE line came last, -1 before any */
};

static void parsed_free(struct parsed *ps)
{
    for (size_t i = 0; i < ps->n; i++) {
        free(ps->v[i].name);
        for (unsigned j = 0; j < ps->v[i].n; j++) {
            free(ps->v[i].lname[j]);
            free(ps->v[i].lval[j]);
        }
    }
    free(ps->v);
    memset(ps, 0, sizeof(*ps));
}

static char *dupn(const char *p, size_t n)
{
    char *s = malloc(n + 1);

    assert_non_null(s);
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

/* The family called exactly <name>[0, len), or -1. */
static int family_by_name(const char *name, size_t len)
{
    for (int id = 0; id < METRIC_COUNT; id++) {
        const char *fn = metrics_family((enum metric_id)id)->name;

        if (strlen(fn) == len && memcmp(fn, name, len) == 0)
            return id;
    }
    return -1;
}

static bool name_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
           (!first && c >= '0' && c <= '9');
}

static size_t name_span(const char *p, const char *end)
{
    size_t n = 0;

    while (p + n < end && name_char(p[n], n == 0))
        n++;
    return n;
}

/* "# HELP name text" or "# TYPE name type": each once per family, before its samples. */
static void parse_comment(const char *p, const char *eol, struct pstate *st)
{
    bool help = strncmp(p, "# HELP ", 7) == 0;
    size_t n;
    int id;

    assert_true(help || strncmp(p, "# TYPE ", 7) == 0);
    p += 7;
    n = name_span(p, eol);
    id = family_by_name(p, n);
    assert_true(id >= 0);
    assert_true(p + n < eol && p[n] == ' ');
    assert_false(st->samples[id]);
    if (help) {
        assert_false(st->help[id]);
        st->help[id] = true;
        return;
    }
    assert_true(st->help[id]); /* we always write HELP first */
    assert_false(st->type[id]);
    st->type[id] = true;
    st->cur = id;
    p += n + 1;
    assert_int_equal((size_t)(eol - p), strlen(metrics_type_name(metrics_family(id)->type)));
    assert_memory_equal(p, metrics_type_name(metrics_family(id)->type), (size_t)(eol - p));
}

/* Reads a quoted label value at *<pp>, unescaping \\, \" and \n; any other escape fails. */
static char *parse_quoted(const char **pp, const char *eol)
{
    const char *p = *pp;
    char *out = malloc((size_t)(eol - p) + 1);
    size_t n = 0;

    assert_non_null(out);
    assert_true(p < eol && *p == '"');
    for (p++; p < eol && *p != '"'; p++) {
        if (*p == '\\') {
            p++;
            assert_true(p < eol && (*p == '\\' || *p == '"' || *p == 'n'));
            out[n++] = *p == 'n' ? '\n' : *p;
        } else {
            out[n++] = *p;
        }
    }
    assert_true(p < eol); /* closing quote */
    out[n] = '\0';
    *pp = p + 1;
    return out;
}

/* Which family a sample name belongs to, with the suffix rules for histograms. */
static int sample_family(const char *name, size_t n, const char **suffix)
{
    static const char *const sfx[] = {"_bucket", "_sum", "_count"};
    int id = family_by_name(name, n);

    *suffix = "";
    if (id >= 0) {
        assert_true(metrics_family(id)->type != METRIC_HISTOGRAM);
        return id;
    }
    for (size_t i = 0; i < 3; i++) {
        size_t sl = strlen(sfx[i]);

        if (n > sl && memcmp(name + n - sl, sfx[i], sl) == 0) {
            id = family_by_name(name, n - sl);
            if (id >= 0 && metrics_family(id)->type == METRIC_HISTOGRAM) {
                *suffix = sfx[i];
                return id;
            }
        }
    }
    return -1;
}

/* name{labels} value: the family's TYPE came last, label names are the declared ones in
 * order (le last on buckets), the value is a float that fills the rest of the line. */
static void parse_sample(const char *p, const char *eol, struct pstate *st, struct psample *s)
{
    size_t n = name_span(p, eol);
    const struct metrics_family *f;
    const char *suffix;
    char *end;
    int id;

    assert_true(n > 0);
    id = sample_family(p, n, &suffix);
    assert_true(id >= 0);
    assert_int_equal(id, st->cur); /* HELP/TYPE came first and samples are contiguous */
    st->samples[id] = true;
    f = metrics_family(id);
    memset(s, 0, sizeof(*s));
    s->name = dupn(p, n);
    s->id = (enum metric_id)id;
    p += n;
    if (p < eol && *p == '{') {
        p++;
        while (p < eol && *p != '}') {
            size_t ln = name_span(p, eol);

            assert_true(ln > 0 && s->n <= METRICS_MAX_LABELS);
            s->lname[s->n] = dupn(p, ln);
            p += ln;
            assert_true(p < eol && *p == '=');
            p++;
            s->lval[s->n++] = parse_quoted(&p, eol);
            if (p < eol && *p == ',')
                p++;
        }
        assert_true(p < eol);
        p++;
    }
    bool bucket = strcmp(suffix, "_bucket") == 0;
    assert_int_equal(s->n, f->n_labels + (bucket ? 1 : 0));
    for (unsigned i = 0; i < f->n_labels; i++)
        assert_string_equal(s->lname[i], f->label_names[i]);
    if (bucket)
        assert_string_equal(s->lname[f->n_labels], "le");
    assert_true(p < eol && *p == ' ');
    p++;
    assert_true(p < eol);
    s->value = strtod(p, &end);
    assert_ptr_equal(end, eol);
}

/* After the line checks: each histogram series is its buckets with ascending le and
 * non-decreasing counts ending at +Inf, then _sum and _count, with _count == +Inf. */
static void check_histograms(const struct parsed *ps)
{
    for (size_t i = 0; i < ps->n;) {
        const struct psample *s = &ps->v[i];
        const struct metrics_family *f = metrics_family(s->id);
        size_t first = i;

        if (f->type != METRIC_HISTOGRAM) {
            i++;
            continue;
        }
        assert_non_null(strstr(s->name, "_bucket"));
        while (i < ps->n && strstr(ps->v[i].name, "_bucket") && ps->v[i].id == s->id) {
            if (i > first) {
                assert_true(strtod(ps->v[i].lval[f->n_labels], NULL) >
                            strtod(ps->v[i - 1].lval[f->n_labels], NULL));
                assert_true(ps->v[i].value >= ps->v[i - 1].value);
            }
            for (unsigned j = 0; j < f->n_labels; j++)
                assert_string_equal(ps->v[i].lval[j], s->lval[j]);
            i++;
        }
        assert_string_equal(ps->v[i - 1].lval[f->n_labels], "+Inf");
        assert_true(i + 2 <= ps->n);
        assert_non_null(strstr(ps->v[i].name, "_sum"));
        assert_non_null(strstr(ps->v[i + 1].name, "_count"));
        for (unsigned j = 0; j < f->n_labels; j++) {
            assert_string_equal(ps->v[i].lval[j], s->lval[j]);
            assert_string_equal(ps->v[i + 1].lval[j], s->lval[j]);
        }
        assert_true(ps->v[i + 1].value == ps->v[i - 1].value);
        i += 2;
    }
}

/* Checks <text> line by line and collects its samples into <ps> (parsed_free() it). Every
 * family must have HELP and TYPE, whether it has samples or not. */
static void parse_exposition(const char *text, struct parsed *ps)
{
    struct pstate st = {.cur = -1};
    const char *p = text;

    memset(ps, 0, sizeof(*ps));
    assert_non_null(text);
    while (*p) {
        const char *eol = strchr(p, '\n');

        assert_non_null(eol); /* the last line is terminated too */
        assert_true(eol > p); /* no empty lines */
        if (*p == '#') {
            parse_comment(p, eol, &st);
        } else {
            if (ps->n == ps->cap) {
                ps->cap = ps->cap ? ps->cap * 2 : 64;
                ps->v = realloc(ps->v, ps->cap * sizeof(*ps->v));
                assert_non_null(ps->v);
            }
            parse_sample(p, eol, &st, &ps->v[ps->n++]);
        }
        p = eol + 1;
    }
    for (int id = 0; id < METRIC_COUNT; id++)
        assert_true(st.help[id] && st.type[id]);
    check_histograms(ps);
}

/* The sample called <name> whose first <n> label values are the varargs, or NULL. */
static const struct psample *find(const struct parsed *ps, const char *name, unsigned n, ...)
{
    const char *want[METRICS_MAX_LABELS + 1];
    va_list ap;

    va_start(ap, n);
    for (unsigned i = 0; i < n; i++)
        want[i] = va_arg(ap, const char *);
    va_end(ap);
    for (size_t i = 0; i < ps->n; i++) {
        const struct psample *s = &ps->v[i];
        bool match = strcmp(s->name, name) == 0 && s->n == n;

        for (unsigned j = 0; match && j < n; j++)
            match = strcmp(s->lval[j], want[j]) == 0;
        if (match)
            return s;
    }
    return NULL;
}

static size_t count_named(const struct parsed *ps, const char *name)
{
    size_t c = 0;

    for (size_t i = 0; i < ps->n; i++)
        c += strcmp(ps->v[i].name, name) == 0;
    return c;
}

/* Renders <m>, checks the text and parses it into <ps>. Returns the text (caller frees). */
static char *render_parse(struct metrics *m, struct parsed *ps)
{
    struct bsc_buf b;
    char *text;

    bsc_buf_init(&b, RENDER_MAX);
    assert_int_equal(metrics_render(m, &b), BSC_OK);
    text = bsc_buf_take(&b, NULL);
    parse_exposition(text, ps);
    return text;
}

static double value_of(struct metrics *m, const char *name, unsigned n, const char *l1,
                       const char *l2, const char *l3)
{
    struct parsed ps;
    char *text = render_parse(m, &ps);
    const struct psample *s = n == 0   ? find(&ps, name, 0)
                              : n == 1 ? find(&ps, name, 1, l1)
                              : n == 2 ? find(&ps, name, 2, l1, l2)
                                       : find(&ps, name, 3, l1, l2, l3);
    double v;

    assert_non_null(s);
    v = s->value;
    parsed_free(&ps);
    free(text);
    return v;
}

static double dropped(struct metrics *m)
{
    return value_of(m, "bascule_metrics_dropped_total", 0, NULL, NULL, NULL);
}

/* ---- the family table ------------------------------------------------------------------- */

static void test_family_table(void **state)
{
    static const struct {
        const char *name;
        enum metric_type type;
        const char *labels[METRICS_MAX_LABELS];
    } contract[] = {
        {"bascule_requests_total", METRIC_COUNTER, {"route", "outcome"}},
        {"bascule_attempts_total", METRIC_COUNTER, {"target", "kind"}},
        {"bascule_retries_total", METRIC_COUNTER, {"route"}},
        {"bascule_failovers_total", METRIC_COUNTER, {"route"}},
        {"bascule_fallbacks_total", METRIC_COUNTER, {"route"}},
        {"bascule_build_info", METRIC_GAUGE, {"version", "revision"}},
        {"bascule_breaker_state", METRIC_GAUGE, {"target", "state"}},
        {"bascule_attempt_duration_seconds", METRIC_HISTOGRAM, {"target"}},
        {"bascule_attempt_ttft_seconds", METRIC_HISTOGRAM, {"target"}},
        {"bascule_overhead_seconds", METRIC_HISTOGRAM, {"route"}},
        {"bascule_breaker_transitions_total", METRIC_COUNTER, {"target", "to"}},
        {"bascule_retry_budget_rejections_total", METRIC_COUNTER, {NULL}},
        {"bascule_retry_budget_spent_total", METRIC_COUNTER, {NULL}},
        {"bascule_request_duration_seconds", METRIC_HISTOGRAM, {"route"}},
        {"bascule_ttft_seconds", METRIC_HISTOGRAM, {"route"}},
        {"bascule_upstream_inflight", METRIC_GAUGE, {"target"}},
        {"bascule_tokens_total", METRIC_COUNTER, {"route", "direction"}},
        {"bascule_cost_usd_total", METRIC_COUNTER, {"client", "route", "target"}},
        {"bascule_key_cooldowns_total", METRIC_COUNTER, {"provider", "reason"}},
        {"bascule_outcomes_total", METRIC_COUNTER, {"route", "layer", "result"}},
        {"bascule_config_reloads_total", METRIC_COUNTER, {"result"}},
        {"bascule_connections", METRIC_GAUGE, {NULL}},
        {"bascule_metrics_dropped_total", METRIC_COUNTER, {NULL}},
        {"bascule_target_effective_concurrency", METRIC_GAUGE, {"target"}},
        {"bascule_target_effective_rpm", METRIC_GAUGE, {"target"}},
    };

    (void)state;
    for (int id = 0; id < METRIC_COUNT; id++) {
        const struct metrics_family *f = metrics_family((enum metric_id)id);
        size_t len = strlen(f->name), nb;
        const double *b = metrics_bucket_bounds((enum metric_id)id, &nb);

        assert_int_equal(name_span(f->name, f->name + len), len);
        assert_true(strncmp(f->name, "bascule_", 8) == 0);
        assert_true(f->help[0] != '\0');
        /* Counters and only counters end in _total (Prometheus naming). */
        assert_int_equal(len > 6 && strcmp(f->name + len - 6, "_total") == 0,
                         f->type == METRIC_COUNTER);
        assert_true(f->n_labels <= METRICS_MAX_LABELS);
        for (unsigned i = 0; i < METRICS_MAX_LABELS; i++) {
            const char *l = f->label_names[i];

            assert_int_equal(l != NULL, i < f->n_labels);
            if (l) {
                assert_int_equal(name_span(l, l + strlen(l)), strlen(l));
                assert_true(strcmp(l, "le") != 0 && strncmp(l, "__", 2) != 0);
            }
        }
        assert_int_equal(b != NULL, f->type == METRIC_HISTOGRAM);
        for (size_t i = 1; i < nb; i++)
            assert_true(b[i] > b[i - 1]);
        for (int j = 0; j < id; j++)
            assert_string_not_equal(f->name, metrics_family((enum metric_id)j)->name);
    }
    for (size_t c = 0; c < sizeof(contract) / sizeof(contract[0]); c++) {
        int id = family_by_name(contract[c].name, strlen(contract[c].name));
        const struct metrics_family *f;

        assert_true(id >= 0);
        f = metrics_family((enum metric_id)id);
        assert_int_equal(f->type, contract[c].type);
        for (unsigned i = 0; i < METRICS_MAX_LABELS; i++) {
            if (contract[c].labels[i])
                assert_string_equal(f->label_names[i], contract[c].labels[i]);
            else
                assert_null(f->label_names[i]);
        }
    }
    assert_null(metrics_family(METRIC_COUNT));
    assert_string_equal(metrics_type_name(METRIC_TYPE_COUNT), "untyped");
}

static void test_latency_buckets(void **state)
{
    size_t n;
    const double *b = metrics_bucket_bounds(METRIC_TTFT, &n);

    (void)state;
    assert_true(n >= 12 && n <= METRICS_MAX_BUCKETS);
    assert_true(b[0] == 0.005);
    assert_true(b[n - 1] == 120);
    assert_null(metrics_bucket_bounds(METRIC_REQUESTS, &n));
    assert_int_equal(n, 0);
}

/* ---- counters, gauges and the text ------------------------------------------------------ */

static void test_counter_sums_shards(void **state)
{
    struct metrics *m = metrics_new(3);

    (void)state;
    assert_non_null(m);
    assert_int_equal(metrics_shared_shard(m), 3);
    metrics_inc(m, 0, METRIC_REQUESTS, "chat", "ok", 1);
    metrics_inc(m, 1, METRIC_REQUESTS, "chat", "ok", 2);
    metrics_inc(m, 2, METRIC_REQUESTS, "chat", "ok", 3);
    metrics_inc(m, 3, METRIC_REQUESTS, "chat", "ok", 4);
    metrics_inc(m, 99, METRIC_REQUESTS, "chat", "ok", 5); /* past the end: the shared shard */
    metrics_inc(m, 0, METRIC_REQUESTS, "chat", "error", 1);
    metrics_inc(m, 1, METRIC_RETRY_BUDGET_SPENT, NULL, NULL, 7);
    assert_true(value_of(m, "bascule_requests_total", 2, "chat", "ok", NULL) == 15);
    assert_true(value_of(m, "bascule_requests_total", 2, "chat", "error", NULL) == 1);
    assert_true(value_of(m, "bascule_retry_budget_spent_total", 0, NULL, NULL, NULL) == 7);
    assert_true(dropped(m) == 0);
    metrics_free(m);
}

static void test_exact_text(void **state)
{
    struct metrics *m = metrics_new(2);
    struct bsc_buf b;

    (void)state;
    metrics_inc(m, 0, METRIC_REQUESTS, "chat", "ok", 2);
    metrics_inc(m, 1, METRIC_REQUESTS, "chat", "ok", 3);
    metrics_inc3(m, 1, METRIC_COST, "a", "chat", "t1", 0.1);
    bsc_buf_init(&b, RENDER_MAX);
    assert_int_equal(metrics_render(m, &b), BSC_OK);
    assert_non_null(strstr(b.p, "# HELP bascule_requests_total Client requests by route and "
                                "final outcome (ok, error, client_abort, ...).\n"
                                "# TYPE bascule_requests_total counter\n"
                                "bascule_requests_total{route=\"chat\",outcome=\"ok\"} 5\n"
                                "# HELP bascule_attempts_total "));
    assert_non_null(strstr(b.p, "\nbascule_cost_usd_total{client=\"a\",route=\"chat\",target=\"t1\"} 0.1\n"));
    assert_non_null(strstr(b.p, "\n# TYPE bascule_connections gauge\nbascule_connections 0\n"));
    assert_non_null(strstr(b.p, "\nbascule_retry_budget_rejections_total 0\n"));
    assert_int_equal(b.p[b.len - 1], '\n');
    bsc_buf_cleanup(&b);
    metrics_free(m);
}

/* Families in declaration order; series by label values, whatever the insertion order. */
static void test_order(void **state)
{
    struct metrics *m = metrics_new(2);
    struct parsed ps;
    char *text, *prev = NULL;

    (void)state;
    metrics_inc(m, 0, METRIC_REQUESTS, "zeta", "ok", 1);
    metrics_inc(m, 1, METRIC_REQUESTS, "alpha", "ok", 1);
    metrics_inc(m, 2, METRIC_REQUESTS, "alpha", "error", 1);
    metrics_inc(m, 0, METRIC_REQUESTS, "alpha", "ok", 1);
    metrics_inc(m, 1, METRIC_REQUESTS, "alph", "z", 1);
    text = render_parse(m, &ps);
    assert_int_equal(count_named(&ps, "bascule_requests_total"), 4);
    assert_string_equal(ps.v[0].lval[0], "alph");
    assert_string_equal(ps.v[1].lval[1], "error");
    assert_string_equal(ps.v[2].lval[1], "ok");
    assert_true(ps.v[2].value == 2);
    assert_string_equal(ps.v[3].lval[0], "zeta");
    for (int id = 0; id < METRIC_COUNT; id++) {
        char head[128];
        char *at;

        snprintf(head, sizeof(head), "# HELP %s ", metrics_family((enum metric_id)id)->name);
        at = strstr(text, head);
        assert_non_null(at);
        assert_true(prev == NULL || at > prev);
        prev = at;
    }
    parsed_free(&ps);
    free(text);
    metrics_free(m);
}

static void test_label_escaping(void **state)
{
    struct metrics *m = metrics_new(1);
    const char *nasty = "a\"b\\c\nd}e,f=\"g";
    struct parsed ps;
    char *text;

    (void)state;
    metrics_inc(m, 0, METRIC_REQUESTS, nasty, "ok", 1);
    text = render_parse(m, &ps);
    assert_non_null(strstr(text, "bascule_requests_total{route=\"a\\\"b\\\\c\\nd}e,"
                                 "f=\\\"g\",outcome=\"ok\"} 1\n"));
    assert_non_null(find(&ps, "bascule_requests_total", 2, nasty, "ok"));
    parsed_free(&ps);
    free(text);
    metrics_free(m);
}

/* NULL is the empty value; values past the family's label count are ignored. */
static void test_null_and_extra_labels(void **state)
{
    struct metrics *m = metrics_new(1);

    (void)state;
    metrics_inc(m, 0, METRIC_RETRIES, NULL, "ignored", 1);
    metrics_inc(m, 1, METRIC_RETRIES, "", NULL, 1);
    metrics_inc(m, 0, METRIC_RETRY_BUDGET_REJECTIONS, "ignored", "too", 1);
    metrics_inc3(m, 0, METRIC_OUTCOMES, "chat", "contract", "schema_mismatch", 1);
    metrics_inc3(m, 1, METRIC_OUTCOMES, "chat", "contract", "schema_mismatch", 1);
    metrics_inc3(m, 1, METRIC_OUTCOMES, "chat", "transport", "ok", 1);
    assert_true(value_of(m, "bascule_retries_total", 1, "", NULL, NULL) == 2);
    assert_true(value_of(m, "bascule_retry_budget_rejections_total", 0, NULL, NULL, NULL) == 1);
    assert_true(value_of(m, "bascule_outcomes_total", 3, "chat", "contract",
                         "schema_mismatch") == 2);
    assert_true(value_of(m, "bascule_outcomes_total", 3, "chat", "transport", "ok") == 1);
    metrics_free(m);
}

/* An update through label pointers seen before takes a shortcut to the series; it must
 * still count by the labels' bytes: a buffer rewritten in place (an address a reloaded
 * config reuses) reaches its own series, and so does a truncated label. */
static void test_same_pointer_new_bytes(void **state)
{
    struct metrics *m = metrics_new(1);
    char route[16] = "chat", target[300];

    (void)state;
    memset(target, 't', sizeof(target) - 1);
    target[sizeof(target) - 1] = '\0';
    for (int i = 0; i < 3; i++)
        metrics_inc(m, 0, METRIC_REQUESTS, route, "ok", 1);
    memcpy(route, "chat2", 6);
    metrics_inc(m, 0, METRIC_REQUESTS, route, "ok", 1);
    memcpy(route, "chat", 5);
    metrics_inc(m, 0, METRIC_REQUESTS, route, "ok", 1);
    assert_true(value_of(m, "bascule_requests_total", 2, "chat", "ok", NULL) == 4);
    assert_true(value_of(m, "bascule_requests_total", 2, "chat2", "ok", NULL) == 1);
    metrics_inc(m, 0, METRIC_FAILOVERS, target, NULL, 1);
    metrics_inc(m, 0, METRIC_FAILOVERS, target, NULL, 1); /* truncated: always the full path */
    target[10] = 'u';
    metrics_inc(m, 0, METRIC_FAILOVERS, target, NULL, 1);
    assert_true(dropped(m) == 0);
    metrics_free(m);
}

static void test_label_truncation(void **state)
{
    struct metrics *m = metrics_new(1);
    struct metrics_snapshot snap;
    char utf8[METRICS_LABEL_MAX + 2], long_a[300], long_b[300];

    (void)state;
    /* 127 ASCII bytes, then a 2-byte character across the cut: the cut moves before it. */
    memset(utf8, 'x', METRICS_LABEL_MAX - 1);
    utf8[METRICS_LABEL_MAX - 1] = (char)0xC3;
    utf8[METRICS_LABEL_MAX] = (char)0xA9;
    utf8[METRICS_LABEL_MAX + 1] = '\0';
    memset(long_a, 'a', sizeof(long_a) - 1);
    long_a[sizeof(long_a) - 1] = '\0';
    memcpy(long_b, long_a, sizeof(long_b));
    long_b[sizeof(long_b) - 2] = 'b'; /* differs only past the cut */
    metrics_inc(m, 0, METRIC_RETRIES, utf8, NULL, 1);
    metrics_inc(m, 0, METRIC_FAILOVERS, long_a, NULL, 1);
    metrics_inc(m, 1, METRIC_FAILOVERS, long_b, NULL, 1);
    assert_int_equal(metrics_snapshot_take(m, &snap), BSC_OK);
    assert_int_equal(snap.n, 3); /* retries, failovers (merged), dropped */
    assert_int_equal(snap.samples[0].id, METRIC_RETRIES);
    assert_int_equal(strlen(snap.samples[0].labels[0]), METRICS_LABEL_MAX - 1);
    assert_int_equal(snap.samples[1].id, METRIC_FAILOVERS);
    assert_int_equal(strlen(snap.samples[1].labels[0]), METRICS_LABEL_MAX);
    assert_true(snap.samples[1].value == 2);
    metrics_snapshot_cleanup(&snap);
    metrics_free(m);
}

static void test_float_counter(void **state)
{
    struct metrics *m = metrics_new(4);
    double v;

    (void)state;
    for (unsigned i = 0; i < 10; i++)
        metrics_inc3(m, i % 5, METRIC_COST, "a", "chat", "t1", 0.1);
    metrics_inc3(m, 0, METRIC_COST, "a", "tiny", "t1", 1.5e-7);
    v = value_of(m, "bascule_cost_usd_total", 3, "a", "chat", "t1");
    assert_true(fabs(v - 1.0) < 1e-12);
    assert_true(value_of(m, "bascule_cost_usd_total", 3, "a", "tiny", "t1") == 1.5e-7);
    metrics_free(m);
}

static void test_gauges(void **state)
{
    struct metrics *m = metrics_new(2);

    (void)state;
    /* Each shard holds its own contribution; the exported value is their sum. */
    metrics_gauge_add(m, 0, METRIC_UPSTREAM_INFLIGHT, "t1", NULL, 3);
    metrics_gauge_add(m, 1, METRIC_UPSTREAM_INFLIGHT, "t1", NULL, 2);
    metrics_gauge_add(m, 0, METRIC_UPSTREAM_INFLIGHT, "t1", NULL, -1);
    metrics_inc(m, 1, METRIC_UPSTREAM_INFLIGHT, "t1", NULL, -1); /* inc on a gauge adds */
    assert_true(value_of(m, "bascule_upstream_inflight", 1, "t1", NULL, NULL) == 3);
    metrics_gauge_set(m, 0, METRIC_UPSTREAM_INFLIGHT, "t1", NULL, 10);
    assert_true(value_of(m, "bascule_upstream_inflight", 1, "t1", NULL, NULL) == 11);
    /* A process-wide gauge set on the shared shard only: set replaces, never adds up. */
    metrics_gauge_set(m, metrics_shared_shard(m), METRIC_TARGET_EFFECTIVE_RPM, "t1", NULL, 1);
    metrics_gauge_set(m, metrics_shared_shard(m), METRIC_TARGET_EFFECTIVE_RPM, "t1", NULL, 2);
    assert_true(value_of(m, "bascule_target_effective_rpm", 1, "t1", NULL, NULL) == 2);
    metrics_gauge_add(m, 1, METRIC_CONNECTIONS, NULL, NULL, 4);
    metrics_gauge_add(m, 2, METRIC_CONNECTIONS, NULL, NULL, -6);
    assert_true(value_of(m, "bascule_connections", 0, NULL, NULL, NULL) == -2);
    assert_true(dropped(m) == 0);
    metrics_free(m);
}

/* Updates that do not fit the family, or carry a value no series should hold, are dropped
 * and counted, and create no series. */
static void test_invalid_updates_dropped(void **state)
{
    struct metrics *m = metrics_new(1);
    struct parsed ps;
    char *text;

    (void)state;
    metrics_observe(m, 0, METRIC_REQUESTS, "chat", "ok", 1);
    metrics_gauge_set(m, 0, METRIC_REQUESTS, "chat", "ok", 1);
    metrics_gauge_add(m, 0, METRIC_TTFT, "chat", NULL, 1);
    metrics_inc(m, 0, METRIC_TTFT, "chat", NULL, 1);
    metrics_inc(m, 0, METRIC_REQUESTS, "chat", "ok", -1);
    metrics_inc(m, 0, METRIC_REQUESTS, "chat", "ok", NAN);
    metrics_observe(m, 1, METRIC_TTFT, "chat", NULL, INFINITY);
    metrics_gauge_set(m, 1, METRIC_CONNECTIONS, NULL, NULL, NAN);
    metrics_inc(m, 1, METRIC_COUNT, NULL, NULL, 1);
    metrics_inc(m, 1, (enum metric_id)-1, NULL, NULL, 1);
    text = render_parse(m, &ps);
    assert_true(find(&ps, "bascule_metrics_dropped_total", 0)->value == 10);
    assert_int_equal(count_named(&ps, "bascule_requests_total"), 0);
    assert_int_equal(count_named(&ps, "bascule_ttft_seconds_count"), 0);
    assert_true(find(&ps, "bascule_connections", 0)->value == 0);
    parsed_free(&ps);
    free(text);
    /* A NULL registry is a no-op, so modules can be tested without one. */
    metrics_inc(NULL, 0, METRIC_REQUESTS, "chat", "ok", 1);
    metrics_observe(NULL, 0, METRIC_TTFT, "chat", NULL, 1);
    metrics_free(m);
    metrics_free(NULL);
}

/* ---- histograms ------------------------------------------------------------------------- */

static double bucket(const struct parsed *ps, const char *route, const char *le)
{
    const struct psample *s = find(ps, "bascule_request_duration_seconds_bucket", 2, route, le);

    assert_non_null(s);
    return s->value;
}

static void test_histogram(void **state)
{
    struct metrics *m = metrics_new(2);
    static const double obs[] = {0.005, 0.0051, 1, 120, 121, 0, 0.3, -1};
    struct parsed ps;
    double sum = 0;
    char *text;

    (void)state;
    for (size_t i = 0; i < sizeof(obs) / sizeof(obs[0]); i++) {
        metrics_observe(m, (unsigned)i % 3, METRIC_REQUEST_DURATION, "chat", NULL, obs[i]);
        sum += obs[i];
    }
    metrics_observe(m, 0, METRIC_REQUEST_DURATION, "embed", NULL, 0.07);
    text = render_parse(m, &ps);
    /* A bucket counts values <= its bound, and the counts are cumulative. */
    assert_true(bucket(&ps, "chat", "0.005") == 3); /* 0.005, 0, -1 */
    assert_true(bucket(&ps, "chat", "0.01") == 4);  /* + 0.0051 */
    assert_true(bucket(&ps, "chat", "0.25") == 4);
    assert_true(bucket(&ps, "chat", "0.5") == 5); /* + 0.3 */
    assert_true(bucket(&ps, "chat", "1") == 6);   /* + 1 */
    assert_true(bucket(&ps, "chat", "60") == 6);
    assert_true(bucket(&ps, "chat", "120") == 7); /* + 120 */
    assert_true(bucket(&ps, "chat", "+Inf") == 8); /* + 121 */
    assert_true(find(&ps, "bascule_request_duration_seconds_count", 1, "chat")->value == 8);
    assert_true(fabs(find(&ps, "bascule_request_duration_seconds_sum", 1, "chat")->value - sum) <
                1e-9);
    assert_true(bucket(&ps, "embed", "0.05") == 0);
    assert_true(bucket(&ps, "embed", "0.1") == 1);
    assert_int_equal(count_named(&ps, "bascule_request_duration_seconds_bucket"), 2 * 15);
    /* TTFT was never observed and has a label: HELP and TYPE only. */
    assert_int_equal(count_named(&ps, "bascule_ttft_seconds_count"), 0);
    assert_non_null(strstr(text, "# TYPE bascule_ttft_seconds histogram\n"));
    assert_non_null(strstr(text, "bascule_request_duration_seconds_bucket{route=\"chat\","
                                 "le=\"0.025\"} 4\n"));
    parsed_free(&ps);
    free(text);
    metrics_free(m);
}

static void test_snapshot(void **state)
{
    struct metrics *m = metrics_new(0); /* no workers: only the shared shard */
    struct metrics_snapshot snap;
    size_t nb;

    (void)state;
    assert_int_equal(metrics_shared_shard(m), 0);
    metrics_observe(m, 0, METRIC_TTFT, "chat", NULL, 0.2);
    metrics_observe(m, 5, METRIC_TTFT, "chat", NULL, 500);
    metrics_inc(m, 0, METRIC_TOKENS, "chat", "output", 42);
    assert_int_equal(metrics_snapshot_take(m, &snap), BSC_OK);
    metrics_bucket_bounds(METRIC_TTFT, &nb);
    assert_int_equal(snap.n, 3);
    assert_int_equal(snap.samples[0].id, METRIC_TTFT);
    assert_int_equal(snap.samples[0].count, 2);
    assert_int_equal(snap.samples[0].buckets[nb], 1); /* +Inf, not cumulative here */
    assert_int_equal(snap.samples[0].buckets[5], 1);  /* le 0.25 */
    assert_int_equal(snap.samples[1].id, METRIC_TOKENS);
    assert_string_equal(snap.samples[1].labels[1], "output");
    assert_null(snap.samples[1].labels[2]);
    assert_null(snap.samples[1].buckets);
    assert_int_equal(snap.samples[2].id, METRIC_METRICS_DROPPED);
    metrics_snapshot_cleanup(&snap);
    assert_null(snap.samples);
    assert_int_equal(snap.n, 0);
    metrics_free(m);
}

/* ---- bounds ----------------------------------------------------------------------------- */

static void test_series_bound(void **state)
{
    struct metrics *m = metrics_new(2);
    struct parsed ps;
    char target[32], *text;

    (void)state;
    for (unsigned i = 0; i < METRICS_MAX_SERIES - 1; i++) {
        snprintf(target, sizeof(target), "t%05u", i);
        metrics_inc(m, 0, METRIC_ATTEMPTS, target, "ok", 1);
    }
    assert_true(dropped(m) == 0); /* limit - 1 */
    metrics_inc(m, 0, METRIC_ATTEMPTS, "last", "ok", 1);
    assert_true(dropped(m) == 0); /* limit */
    metrics_inc(m, 0, METRIC_ATTEMPTS, "over", "ok", 1);
    metrics_observe(m, 0, METRIC_TTFT, "over", NULL, 1);
    assert_true(dropped(m) == 2); /* limit + 1, for any family */
    /* Existing series keep counting; other shards have their own room. */
    metrics_inc(m, 0, METRIC_ATTEMPTS, "t00000", "ok", 1);
    metrics_inc(m, 1, METRIC_ATTEMPTS, "over", "ok", 1);
    text = render_parse(m, &ps);
    assert_true(find(&ps, "bascule_metrics_dropped_total", 0)->value == 2);
    assert_int_equal(count_named(&ps, "bascule_attempts_total"), METRICS_MAX_SERIES + 1);
    assert_true(find(&ps, "bascule_attempts_total", 2, "t00000", "ok")->value == 2);
    assert_true(find(&ps, "bascule_attempts_total", 2, "over", "ok")->value == 1);
    assert_null(find(&ps, "bascule_ttft_seconds_count", 1, "over"));
    parsed_free(&ps);
    free(text);
    metrics_free(m);
}

static void test_render_limit(void **state)
{
    struct metrics *m = metrics_new(1);
    struct bsc_buf b;

    (void)state;
    metrics_inc(m, 0, METRIC_REQUESTS, "chat", "ok", 1);
    bsc_buf_init(&b, 200);
    assert_int_equal(bsc_buf_append_cstr(&b, "keep"), BSC_OK);
    assert_int_equal(metrics_render(m, &b), BSC_ELIMIT);
    assert_int_equal(b.len, 4);
    assert_string_equal(b.p, "keep");
    bsc_buf_cleanup(&b);
    metrics_free(m);
}

/* ---- threads ---------------------------------------------------------------------------- */

#define WORKERS      4
#define SHARED_USERS 2
#define ITERATIONS   20000
#define MAX_SCRAPES  200

struct thread_arg {
    struct metrics *m;
    pthread_barrier_t *start; /* so the threads really overlap */
    unsigned shard;
};

static void *worker_main(void *p)
{
    const struct thread_arg *a = p;

    pthread_barrier_wait(a->start);
    for (unsigned i = 0; i < ITERATIONS; i++) {
        metrics_inc(a->m, a->shard, METRIC_REQUESTS, "chat", i % 2 ? "ok" : "error", 1);
        metrics_observe(a->m, a->shard, METRIC_REQUEST_DURATION, "chat", NULL,
                        i % 4 ? 0.02 : 200);
        metrics_gauge_add(a->m, a->shard, METRIC_UPSTREAM_INFLIGHT, "t1", NULL, 1);
        metrics_inc3(a->m, a->shard, METRIC_COST, "a", "chat", "t1", 0.25);
        metrics_gauge_add(a->m, a->shard, METRIC_UPSTREAM_INFLIGHT, "t1", NULL, -1);
    }
    return NULL;
}

/* The scraper only renders; the texts are checked on the main thread afterwards, because
 * cmocka's assertions must not fire from another thread. */
struct scraper_arg {
    struct metrics *m;
    atomic_bool *stop;
    char *texts[MAX_SCRAPES]; /* owned */
    unsigned scrapes;
    bool failed;
};

static void *scraper_main(void *p)
{
    struct scraper_arg *a = p;

    /* At least once, however fast the workers are. */
    do {
        struct bsc_buf b;

        bsc_buf_init(&b, RENDER_MAX);
        if (metrics_render(a->m, &b) != BSC_OK) {
            a->failed = true;
            bsc_buf_cleanup(&b);
            break;
        }
        a->texts[a->scrapes++] = bsc_buf_take(&b, NULL);
    } while (!atomic_load(a->stop) && a->scrapes < MAX_SCRAPES);
    return NULL;
}

/* Every mid-run scrape is well formed, and counters never go down from one to the next. */
static void check_scrapes(struct scraper_arg *sa, double total)
{
    double prev_ok = 0, prev_count = 0;

    assert_false(sa->failed);
    assert_true(sa->scrapes >= 1);
    for (unsigned i = 0; i < sa->scrapes; i++) {
        struct parsed ps;
        const struct psample *ok, *count;

        parse_exposition(sa->texts[i], &ps);
        ok = find(&ps, "bascule_requests_total", 2, "chat", "ok");
        count = find(&ps, "bascule_request_duration_seconds_count", 1, "chat");
        if (ok) {
            assert_true(ok->value >= prev_ok && ok->value <= total / 2);
            prev_ok = ok->value;
        }
        if (count) {
            assert_true(count->value >= prev_count && count->value <= total);
            prev_count = count->value;
        }
        parsed_free(&ps);
        BSC_FREE(sa->texts[i]);
    }
}

static void test_threads(void **state)
{
    struct metrics *m = metrics_new(WORKERS);
    pthread_t th[WORKERS + SHARED_USERS], scraper;
    struct thread_arg args[WORKERS + SHARED_USERS];
    pthread_barrier_t start;
    atomic_bool stop = false;
    struct scraper_arg sa = {.m = m, .stop = &stop};
    const double total = (double)(WORKERS + SHARED_USERS) * ITERATIONS;
    struct parsed ps;
    char *text;

    (void)state;
    assert_int_equal(pthread_barrier_init(&start, NULL, WORKERS + SHARED_USERS), 0);
    assert_int_equal(pthread_create(&scraper, NULL, scraper_main, &sa), 0);
    for (unsigned i = 0; i < WORKERS + SHARED_USERS; i++) {
        /* The last SHARED_USERS threads share one shard, as non-worker threads do. */
        args[i] = (struct thread_arg){m, &start, i < WORKERS ? i : metrics_shared_shard(m)};
        assert_int_equal(pthread_create(&th[i], NULL, worker_main, &args[i]), 0);
    }
    for (unsigned i = 0; i < WORKERS + SHARED_USERS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    atomic_store(&stop, true);
    assert_int_equal(pthread_join(scraper, NULL), 0);
    pthread_barrier_destroy(&start);
    check_scrapes(&sa, total);

    text = render_parse(m, &ps);
    assert_true(find(&ps, "bascule_requests_total", 2, "chat", "ok")->value == total / 2);
    assert_true(find(&ps, "bascule_requests_total", 2, "chat", "error")->value == total / 2);
    assert_true(find(&ps, "bascule_request_duration_seconds_count", 1, "chat")->value == total);
    assert_true(find(&ps, "bascule_request_duration_seconds_bucket", 2, "chat", "120")->value ==
                total * 3 / 4);
    assert_true(find(&ps, "bascule_upstream_inflight", 1, "t1")->value == 0);
    assert_true(find(&ps, "bascule_cost_usd_total", 3, "a", "chat", "t1")->value == total * 0.25);
    assert_true(find(&ps, "bascule_metrics_dropped_total", 0)->value == 0);
    parsed_free(&ps);
    free(text);
    metrics_free(m);
}

/* ---- series present before their first event, and process_* ---------------------------- */

/* A touched series exists at zero (a histogram with no observation) and a touch never
 * changes a value; touches are not drops. */
static void test_touch(void **state)
{
    struct metrics *m = metrics_new(2);
    struct parsed ps;
    char *text;

    (void)state;
    metrics_touch(m, 2, METRIC_REQUESTS, "chat", "ok", NULL);
    metrics_touch(m, 2, METRIC_OVERHEAD, "chat", NULL, NULL);
    metrics_touch(m, 2, METRIC_COST, METRICS_CLIENT_OPEN, "chat", "t1");
    metrics_touch4(m, 2, METRIC_STREAM_CONTINUATIONS, "chat", "t1", "replay", "ok");
    metrics_touch4(m, 2, METRIC_STREAM_CONTINUATIONS, "chat", "t1", "replay", "ok");
    text = render_parse(m, &ps);
    assert_int_equal(count_named(&ps, "bascule_stream_continuations_total"), 1);
    assert_true(find(&ps, "bascule_stream_continuations_total", 4, "chat", "t1", "replay",
                     "ok")->value == 0);
    assert_true(find(&ps, "bascule_requests_total", 2, "chat", "ok")->value == 0);
    assert_int_equal(count_named(&ps, "bascule_overhead_seconds_count"), 1);
    assert_true(find(&ps, "bascule_overhead_seconds_count", 1, "chat")->value == 0);
    assert_int_equal(count_named(&ps, "bascule_cost_usd_total"), 1);
    parsed_free(&ps);
    free(text);
    metrics_inc(m, 0, METRIC_REQUESTS, "chat", "ok", 3);
    metrics_touch(m, 2, METRIC_REQUESTS, "chat", "ok", NULL);
    metrics_observe(m, 1, METRIC_OVERHEAD, "chat", NULL, 0.0003);
    metrics_touch(m, 2, METRIC_OVERHEAD, "chat", NULL, NULL);
    assert_true(value_of(m, "bascule_requests_total", 2, "chat", "ok", NULL) == 3);
    assert_true(value_of(m, "bascule_overhead_seconds_count", 1, "chat", NULL, NULL) == 1);
    assert_true(dropped(m) == 0);
    metrics_free(m);
}

/* metrics_touch_within: a series is created only below the caller's bound, an existing one
 * is found past it, and what it leaves out is no drop; other updates keep the registry's
 * own bound. */
static void test_touch_within(void **state)
{
    struct metrics *m = metrics_new(1);
    struct parsed ps;
    char *text;

    (void)state;
    metrics_touch_within(m, 1, 2, METRIC_REQUESTS, "a", "ok", NULL, NULL);
    metrics_touch_within(m, 1, 2, METRIC_REQUESTS, "b", "ok", NULL, NULL);
    metrics_touch_within(m, 1, 2, METRIC_REQUESTS, "c", "ok", NULL, NULL); /* the 3rd: left out */
    metrics_touch_within(m, 1, 2, METRIC_REQUESTS, "a", "ok", NULL, NULL); /* found, not made */
    metrics_touch_within(m, 1, 3, METRIC_STREAM_CONTINUATIONS, "a", "t", "replay", "ok");
    metrics_inc(m, 1, METRIC_REQUESTS, "d", "ok", 1); /* past 2: a plain update still makes it */
    text = render_parse(m, &ps);
    assert_int_equal(count_named(&ps, "bascule_requests_total"), 3);
    assert_null(find(&ps, "bascule_requests_total", 2, "c", "ok"));
    assert_non_null(find(&ps, "bascule_stream_continuations_total", 4, "a", "t", "replay", "ok"));
    assert_true(find(&ps, "bascule_requests_total", 2, "d", "ok")->value == 1);
    assert_true(dropped(m) == 0);
    parsed_free(&ps);
    free(text);
    metrics_free(m);
}

/* /proc/<pid>/stat: fields counted from the last ')' (a command name with spaces and
 * parentheses), a short or garbled line refused. */
static void test_proc_stat(void **state)
{
    static const char line[] =
        "4242 (bas cule) (x)) S 1 4242 4242 0 -1 4194560 1234 0 0 0 150 25 0 0 20 0 3 0 "
        "987654 123456789 2048 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 17 1 0 0\n";
    struct metrics_proc_stat st;

    (void)state;
    assert_true(metrics_proc_stat_parse(line, &st));
    assert_int_equal(st.utime_ticks, 150);
    assert_int_equal(st.stime_ticks, 25);
    assert_int_equal(st.vsize_bytes, 123456789);
    assert_int_equal(st.rss_pages, 2048);
    assert_false(metrics_proc_stat_parse("4242 (bascule) S 1 2 3", &st));
    assert_false(metrics_proc_stat_parse("no parenthesis here", &st));
}

/* This process's own families, each with HELP, TYPE and a value that makes sense. */
static void test_process_families(void **state)
{
    struct bsc_buf b;
    const char *p;

    (void)state;
    bsc_buf_init(&b, 1u << 20);
    assert_int_equal(metrics_render_process(&b, 1700000000.5), BSC_OK);
    assert_non_null(strstr(b.p, "# TYPE process_cpu_seconds_total counter\n"));
    assert_non_null(p = strstr(b.p, "\nprocess_resident_memory_bytes "));
    assert_true(strtod(p + 31, NULL) > 0);
    assert_non_null(strstr(b.p, "\nprocess_virtual_memory_bytes "));
    assert_non_null(p = strstr(b.p, "\nprocess_open_fds "));
    assert_true(strtod(p + 18, NULL) >= 3);
    assert_non_null(strstr(b.p, "\nprocess_max_fds "));
    assert_non_null(strstr(b.p, "\nprocess_start_time_seconds 1700000000.5\n"));
    bsc_buf_cleanup(&b);
    /* The count follows the process's descriptors exactly: one more open, one more counted. */
    {
        double before, after;
        int fd;

        bsc_buf_init(&b, 1u << 20);
        assert_int_equal(metrics_render_process(&b, 0), BSC_OK);
        assert_non_null(p = strstr(b.p, "\nprocess_open_fds "));
        before = strtod(p + 18, NULL);
        bsc_buf_cleanup(&b);
        assert_true((fd = dup(2)) >= 0);
        bsc_buf_init(&b, 1u << 20);
        assert_int_equal(metrics_render_process(&b, 0), BSC_OK);
        assert_non_null(p = strstr(b.p, "\nprocess_open_fds "));
        after = strtod(p + 18, NULL);
        bsc_buf_cleanup(&b);
        close(fd);
        assert_true(after == before + 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_family_table),
        cmocka_unit_test(test_latency_buckets),
        cmocka_unit_test(test_counter_sums_shards),
        cmocka_unit_test(test_exact_text),
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_label_escaping),
        cmocka_unit_test(test_null_and_extra_labels),
        cmocka_unit_test(test_same_pointer_new_bytes),
        cmocka_unit_test(test_label_truncation),
        cmocka_unit_test(test_float_counter),
        cmocka_unit_test(test_gauges),
        cmocka_unit_test(test_invalid_updates_dropped),
        cmocka_unit_test(test_histogram),
        cmocka_unit_test(test_snapshot),
        cmocka_unit_test(test_series_bound),
        cmocka_unit_test(test_render_limit),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_touch),
        cmocka_unit_test(test_touch_within),
        cmocka_unit_test(test_proc_stat),
        cmocka_unit_test(test_process_families),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
