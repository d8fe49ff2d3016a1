/* SPDX-License-Identifier: MIT */
/* status_history.c -- series and events for /status.json (status_history.h). Everything is
 * derived from what the gateway already keeps: the metrics registry (counters and latency
 * histograms, read as a snapshot) and the routing state (hstate_view). Bounded: names (route
 * and target ids, counter keys) up to HIST_NAMES, a point up to HIST_ROWS rows, fixed rings
 * of points and events, all allocated once. One mutex; no I/O under it. */
#include "api/status_history.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "core/clock.h"
#include "health/hstate.h"
#include "metrics/metrics.h"
#include "router/gateway.h"
#include "store/store.h"

#define HIST_NAMES 512u   /* distinct ids and counter keys followed */
#define HIST_ROWS 128u    /* routes + targets in one point */
#define HIST_NAME_MAX 160u
#define HIST_BUCKETS (METRICS_MAX_BUCKETS + 1)

enum { ROW_ROUTE = 0, ROW_TARGET = 1 };
enum { V_RPS, V_EPS, V_P50, V_P95, V_P99, V_T50, V_T95, V_T99, V_FAILOVERS, V_FALLBACKS, V_N };

/* Cumulative counts of one route or target, from one snapshot. */
struct hist_counts {
    double requests, errors, failovers, fallbacks;
    uint64_t lat[HIST_BUCKETS], ttft[HIST_BUCKETS];
    uint64_t lat_n, ttft_n;
};

/* What is followed per name: the last counts (series), the last state seen (events). */
struct hist_name {
    char id[HIST_NAME_MAX];
    bool has_counts, in_snap;
    struct hist_counts prev, cur;
    bool seen;              /* state below observed once */
    char circuit[16];
    bool admin_off;
    uint32_t conc, rpm;
    double counter;         /* event counters: the last value */
};

struct hist_row {
    uint16_t name;
    uint8_t kind;
    float v[V_N]; /* NAN: no value (no observation in the interval) */
};

struct hist_point {
    uint64_t t_ms;
    unsigned n;
    struct hist_row rows[HIST_ROWS];
};

struct hist_event {
    uint64_t t_ms;
    char kind[24], subject[HIST_NAME_MAX], from[32], to[32], reason[128];
};

struct status_history {
    pthread_mutex_t mu;
    struct hist_name names[HIST_NAMES];
    unsigned n_names;
    uint64_t last_sample_ms;
    bool baselined; /* the first observation was made */
    bool store_known, store_up;
    struct hist_point *points; /* ring of STATUS_SERIES_POINTS */
    unsigned n_points, next_point;
    struct hist_event events[STATUS_EVENTS];
    unsigned n_events, next_event;
};

struct status_history *status_history_new(void)
{
    struct status_history *h = calloc(1, sizeof(*h));

    if (!h)
        return NULL;
    h->points = calloc(STATUS_SERIES_POINTS, sizeof(*h->points));
    if (!h->points || pthread_mutex_init(&h->mu, NULL) != 0) {
        free(h->points);
        free(h);
        return NULL;
    }
    return h;
}

void status_history_free(struct status_history *h)
{
    if (!h)
        return;
    pthread_mutex_destroy(&h->mu);
    free(h->points);
    free(h);
}

/* The index of <kind>:<id> (kind 'r' route, 't' target, 'c' counter key), or -1 when it is
 * not followed. */
static int name_find(const struct status_history *h, char kind, const char *id)
{
    char key[HIST_NAME_MAX];

    /* A longer key is cut as the stored names are, so it still finds its own. */
    if (snprintf(key, sizeof(key), "%c%s", kind, id) < 0)
        return -1;
    for (unsigned i = 0; i < h->n_names; i++)
        if (strcmp(h->names[i].id, key) == 0)
            return (int)i;
    return -1;
}

/* name_find(), the name made on first use; -1 when the table is full. */
static int name_of(struct status_history *h, char kind, const char *id)
{
    int idx = name_find(h, kind, id);

    if (idx >= 0)
        return idx;
    if (h->n_names == HIST_NAMES)
        return -1;
    memset(&h->names[h->n_names], 0, sizeof(h->names[0]));
    if (snprintf(h->names[h->n_names].id, sizeof(h->names[0].id), "%c%s", kind, id) < 0)
        return -1;
    return (int)h->n_names++;
}

static void event_add(struct status_history *h, uint64_t t_ms, const char *kind,
                      const char *subject, const char *from, const char *to, const char *reason)
{
    struct hist_event *e = &h->events[h->next_event];

    e->t_ms = t_ms;
    snprintf(e->kind, sizeof(e->kind), "%s", kind);
    snprintf(e->subject, sizeof(e->subject), "%s", subject);
    snprintf(e->from, sizeof(e->from), "%s", from ? from : "");
    snprintf(e->to, sizeof(e->to), "%s", to ? to : "");
    snprintf(e->reason, sizeof(e->reason), "%s", reason ? reason : "");
    h->next_event = (h->next_event + 1) % STATUS_EVENTS;
    if (h->n_events < STATUS_EVENTS)
        h->n_events++;
}

void status_history_note(struct status_history *h, uint64_t wall_ms, const char *kind,
                         const char *subject, const char *from, const char *to,
                         const char *reason)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->mu);
    event_add(h, wall_ms, kind, subject, from, to, reason);
    pthread_mutex_unlock(&h->mu);
}

/* ---- events from the routing state ---------------------------------------------------- */

static const char *circuit_name(const struct target_view *v)
{
    if (v->state == BRK_OPEN)
        return "open";
    if (v->state == BRK_HALF_OPEN)
        return "half_open";
    return v->ramping ? "ramping" : "closed";
}

static void observe_target(struct status_history *h, struct gateway *gw,
                           const struct cfg_target *t, uint64_t now, uint64_t wall_ms)
{
    struct target_view v;
    int idx = name_of(h, 't', t->id);
    struct hist_name *n;
    const char *c;
    char a[24], b[24];

    if (idx < 0)
        return;
    n = &h->names[idx];
    hstate_view(gw->hs, t, now, &v);
    c = circuit_name(&v);
    if (n->seen && strcmp(n->circuit, c) != 0)
        event_add(h, wall_ms, "circuit", t->id, n->circuit, c, v.last_error);
    if (n->seen && n->admin_off != v.admin_disabled)
        event_add(h, wall_ms, "admin", t->id, n->admin_off ? "disabled" : "enabled",
                  v.admin_disabled ? "disabled" : "enabled", "run-time switch (/admin/targets)");
    if (n->seen && (n->conc != v.eff.concurrency || n->rpm != v.eff.rpm)) {
        snprintf(a, sizeof(a), "%u/%u", n->conc, n->rpm);
        snprintf(b, sizeof(b), "%u/%u", v.eff.concurrency, v.eff.rpm);
        event_add(h, wall_ms, "adaptive_limit", t->id, a, b,
                  "effective concurrency/rpm (0: not limiting)");
    }
    n->seen = true;
    snprintf(n->circuit, sizeof(n->circuit), "%s", c);
    n->admin_off = v.admin_disabled;
    n->conc = v.eff.concurrency;
    n->rpm = v.eff.rpm;
}

static void observe_store(struct status_history *h, struct gateway *gw, uint64_t wall_ms)
{
    const char *why = NULL;
    bool up = store_is_up(gw->store, &why);

    if (h->store_known && up != h->store_up)
        event_add(h, wall_ms, "store", "store", h->store_up ? "up" : "down", up ? "up" : "down",
                  why);
    h->store_known = true;
    h->store_up = up;
}

/* ---- events from counters -------------------------------------------------------------- */

/* A counter that grew since the last observation is an event: key cooldowns (provider,
 * reason), key re-verifications (provider, result), reloads (result). */
static void observe_counter(struct status_history *h, const struct metrics_sample *s,
                            uint64_t wall_ms)
{
    const char *kind = s->id == METRIC_KEY_COOLDOWNS        ? "key_cooldown"
                       : s->id == METRIC_KEY_REVERIFICATIONS ? "key_reverify"
                                                             : "reload";
    char key[HIST_NAME_MAX], reason[64];
    int idx;
    double grew;

    snprintf(key, sizeof(key), "%s|%s|%s", kind, s->labels[0], s->labels[1] ? s->labels[1] : "");
    /* A counter still at 0 (a series /metrics seeds) has nothing to tell and takes no name:
     * it is followed from its first increment, against a baseline of 0. */
    idx = s->value > 0 ? name_of(h, 'c', key) : name_find(h, 'c', key);
    if (idx < 0)
        return;
    grew = s->value - h->names[idx].counter;
    if (h->baselined && grew >= 1) {
        snprintf(reason, sizeof(reason), "%.0f time%s", grew, grew >= 2 ? "s" : "");
        if (s->id == METRIC_CONFIG_RELOADS)
            event_add(h, wall_ms, kind, "config", NULL, s->labels[0], reason);
        else
            event_add(h, wall_ms, kind, s->labels[0], NULL, s->labels[1], reason);
    }
    h->names[idx].counter = s->value;
}

/* ---- series ---------------------------------------------------------------------------- */

static void add_buckets(uint64_t *dst, uint64_t *n, const struct metrics_sample *s)
{
    size_t nb;

    metrics_bucket_bounds(s->id, &nb);
    for (size_t i = 0; i <= nb && i < HIST_BUCKETS; i++)
        dst[i] += s->buckets[i];
    *n += s->count;
}

static bool bad_outcome(const char *outcome)
{
    return strcmp(outcome, "ok") != 0 && strcmp(outcome, "client_error") != 0 &&
           strcmp(outcome, "client_abort") != 0;
}

/* Adds sample <s> to the current counts of its route or target. */
static void count_sample(struct status_history *h, const struct metrics_sample *s)
{
    bool route = s->id == METRIC_REQUESTS || s->id == METRIC_FAILOVERS ||
                 s->id == METRIC_FALLBACKS || s->id == METRIC_REQUEST_DURATION ||
                 s->id == METRIC_TTFT;
    int idx = name_of(h, route ? 'r' : 't', s->labels[0]);
    struct hist_counts *c;

    if (idx < 0)
        return;
    if (!h->names[idx].in_snap) {
        memset(&h->names[idx].cur, 0, sizeof(h->names[idx].cur));
        h->names[idx].in_snap = true;
    }
    c = &h->names[idx].cur;
    switch (s->id) {
    case METRIC_REQUESTS:
        c->requests += s->value;
        c->errors += bad_outcome(s->labels[1]) ? s->value : 0;
        break;
    case METRIC_ATTEMPTS:
        c->requests += s->value;
        c->errors += strcmp(s->labels[1], "ok") != 0 ? s->value : 0;
        break;
    case METRIC_FAILOVERS: c->failovers += s->value; break;
    case METRIC_FALLBACKS: c->fallbacks += s->value; break;
    case METRIC_REQUEST_DURATION:
    case METRIC_ATTEMPT_DURATION: add_buckets(c->lat, &c->lat_n, s); break;
    case METRIC_TTFT:
    case METRIC_ATTEMPT_TTFT: add_buckets(c->ttft, &c->ttft_n, s); break;
    default: break;
    }
}

/* The <q> quantile in milliseconds of the observations that bucket counts <now> - <before>
 * hold, interpolated within its bucket as Prometheus' histogram_quantile; NAN when none. */
static float quantile_ms(const uint64_t *now, const uint64_t *before, double q)
{
    size_t nb;
    const double *bounds = metrics_bucket_bounds(METRIC_REQUEST_DURATION, &nb);
    uint64_t d[HIST_BUCKETS], total = 0;
    double rank, seen = 0, lo = 0;

    for (size_t i = 0; i <= nb; i++)
        total += d[i] = now[i] >= before[i] ? now[i] - before[i] : 0;
    if (!total)
        return NAN;
    rank = q * (double)total;
    for (size_t i = 0; i < nb; i++) {
        if (d[i] && seen + (double)d[i] >= rank)
            return (float)(1e3 * (lo + (bounds[i] - lo) * (rank - seen) / (double)d[i]));
        seen += (double)d[i];
        lo = bounds[i];
    }
    return (float)(1e3 * lo);
}

static void row_of(struct hist_row *r, const struct hist_counts *now,
                   const struct hist_counts *before, double secs)
{
    r->v[V_RPS] = (float)((now->requests - before->requests) / secs);
    r->v[V_EPS] = (float)((now->errors - before->errors) / secs);
    r->v[V_P50] = quantile_ms(now->lat, before->lat, 0.50);
    r->v[V_P95] = quantile_ms(now->lat, before->lat, 0.95);
    r->v[V_P99] = quantile_ms(now->lat, before->lat, 0.99);
    r->v[V_T50] = quantile_ms(now->ttft, before->ttft, 0.50);
    r->v[V_T95] = quantile_ms(now->ttft, before->ttft, 0.95);
    r->v[V_T99] = quantile_ms(now->ttft, before->ttft, 0.99);
    r->v[V_FAILOVERS] = (float)(now->failovers - before->failovers);
    r->v[V_FALLBACKS] = (float)(now->fallbacks - before->fallbacks);
}

/* Appends a point: every route and target of <cfg> with counts at both samples. */
static void sample_point(struct status_history *h, const struct cfg *cfg, uint64_t wall_ms)
{
    struct hist_point *p = &h->points[h->next_point];
    double secs = h->last_sample_ms && wall_ms > h->last_sample_ms
                      ? (double)(wall_ms - h->last_sample_ms) / 1e3
                      : STATUS_SERIES_INTERVAL_MS / 1e3;

    p->t_ms = wall_ms;
    p->n = 0;
    for (unsigned k = 0; k < 2; k++) {
        size_t n = k == ROW_ROUTE ? cfg->n_routes : cfg->n_targets;
        for (size_t i = 0; i < n && p->n < HIST_ROWS; i++) {
            const char *id = k == ROW_ROUTE ? cfg->routes[i].id : cfg->targets[i].id;
            int idx = name_of(h, k == ROW_ROUTE ? 'r' : 't', id);
            struct hist_name *nm;

            if (idx < 0)
                continue;
            nm = &h->names[idx];
            if (!nm->in_snap)
                memset(&nm->cur, 0, sizeof(nm->cur)); /* no series yet: zero */
            if (nm->has_counts) {
                struct hist_row *r = &p->rows[p->n++];
                r->name = (uint16_t)idx;
                r->kind = (uint8_t)k;
                row_of(r, &nm->cur, &nm->prev, secs);
            }
            nm->prev = nm->cur;
            nm->has_counts = true;
        }
    }
    h->last_sample_ms = wall_ms;
    h->next_point = (h->next_point + 1) % STATUS_SERIES_POINTS;
    if (h->n_points < STATUS_SERIES_POINTS)
        h->n_points++;
}

void status_history_observe(struct status_history *h, struct gateway *gw, const struct cfg *cfg,
                            uint64_t wall_ms, bool sample)
{
    struct metrics_snapshot snap = {0};
    uint64_t now = bsc_now_ms();
    bool have_snap;

    if (!h || !cfg)
        return;
    have_snap = metrics_snapshot_take(gw->metrics, &snap) == BSC_OK;
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; i < cfg->n_targets; i++)
        observe_target(h, gw, &cfg->targets[i], now, wall_ms);
    observe_store(h, gw, wall_ms);
    for (unsigned i = 0; i < h->n_names; i++)
        h->names[i].in_snap = false;
    for (size_t i = 0; have_snap && i < snap.n; i++) {
        const struct metrics_sample *s = &snap.samples[i];

        if (s->id == METRIC_KEY_COOLDOWNS || s->id == METRIC_KEY_REVERIFICATIONS ||
            s->id == METRIC_CONFIG_RELOADS)
            observe_counter(h, s, wall_ms);
        else if (sample && (s->id == METRIC_REQUESTS || s->id == METRIC_ATTEMPTS ||
                            s->id == METRIC_FAILOVERS || s->id == METRIC_FALLBACKS ||
                            s->id == METRIC_REQUEST_DURATION || s->id == METRIC_TTFT ||
                            s->id == METRIC_ATTEMPT_DURATION || s->id == METRIC_ATTEMPT_TTFT))
            count_sample(h, s);
    }
    if (sample && have_snap)
        sample_point(h, cfg, wall_ms);
    h->baselined = true;
    pthread_mutex_unlock(&h->mu);
    metrics_snapshot_cleanup(&snap);
}

/* ---- JSON ------------------------------------------------------------------------------ */

static void put_num(struct bsc_buf *b, const char *name, float v, bool first)
{
    if (isnan(v))
        bsc_buf_appendf(b, "%s\"%s\":null", first ? "" : ",", name);
    else
        bsc_buf_appendf(b, "%s\"%s\":%.3f", first ? "" : ",", name, (double)v);
}

static void put_rows(struct bsc_buf *b, const struct status_history *h,
                     const struct hist_point *p, unsigned kind)
{
    static const char *const names[V_N] = {"rps",         "errors_ps",   "p50_ms",
                                           "p95_ms",      "p99_ms",      "ttft_p50_ms",
                                           "ttft_p95_ms", "ttft_p99_ms", "failovers",
                                           "fallbacks"};
    bool first = true;

    bsc_buf_append_char(b, '{');
    for (unsigned i = 0; i < p->n; i++) {
        const struct hist_row *r = &p->rows[i];

        if (r->kind != kind)
            continue;
        if (!first)
            bsc_buf_append_char(b, ',');
        first = false;
        bsc_buf_append_json_str(b, bsc_str_cstr(h->names[r->name].id + 1));
        bsc_buf_append_cstr(b, ":{");
        for (unsigned v = 0; v < V_N; v++)
            put_num(b, names[v], r->v[v], v == 0);
        bsc_buf_append_char(b, '}');
    }
    bsc_buf_append_char(b, '}');
}

static void put_str_field(struct bsc_buf *b, const char *name, const char *v)
{
    bsc_buf_appendf(b, ",\"%s\":", name);
    if (*v)
        bsc_buf_append_json_str(b, bsc_str_cstr(v));
    else
        bsc_buf_append_cstr(b, "null");
}

void status_history_put_json(struct status_history *h, struct bsc_buf *b)
{
    if (!h) {
        bsc_buf_append_cstr(b, ",\"series\":null,\"events\":[]");
        return;
    }
    pthread_mutex_lock(&h->mu);
    bsc_buf_appendf(b, ",\"series\":{\"interval_s\":%u,\"points\":[",
                    STATUS_SERIES_INTERVAL_MS / 1000);
    for (unsigned i = 0; i < h->n_points; i++) {
        unsigned at = (h->next_point + STATUS_SERIES_POINTS - h->n_points + i) % STATUS_SERIES_POINTS;
        const struct hist_point *p = &h->points[at];

        bsc_buf_appendf(b, "%s{\"t\":%llu,\"routes\":", i ? "," : "", (unsigned long long)p->t_ms);
        put_rows(b, h, p, ROW_ROUTE);
        bsc_buf_append_cstr(b, ",\"targets\":");
        put_rows(b, h, p, ROW_TARGET);
        bsc_buf_append_char(b, '}');
    }
    bsc_buf_append_cstr(b, "]},\"events\":[");
    for (unsigned i = 0; i < h->n_events; i++) {
        unsigned at = (h->next_event + STATUS_EVENTS - h->n_events + i) % STATUS_EVENTS;
        const struct hist_event *e = &h->events[at];

        bsc_buf_appendf(b, "%s{\"t\":%llu,\"kind\":\"%s\",\"subject\":", i ? "," : "",
                        (unsigned long long)e->t_ms, e->kind);
        bsc_buf_append_json_str(b, bsc_str_cstr(e->subject));
        put_str_field(b, "from", e->from);
        put_str_field(b, "to", e->to);
        put_str_field(b, "reason", e->reason);
        bsc_buf_append_char(b, '}');
    }
    bsc_buf_append_char(b, ']');
    pthread_mutex_unlock(&h->mu);
}
