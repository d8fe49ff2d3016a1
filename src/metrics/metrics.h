/* SPDX-License-Identifier: MIT */
/* metrics.h -- the process-wide metrics registry: one shard per worker thread plus one for
 * everybody else, counters, gauges and histograms keyed by (family, label values), summed
 * across shards when scraped and rendered as Prometheus text (metrics_render, prom.c).
 * Every family is declared once, in METRICS_FAMILIES below. The registry knows nothing of
 * HTTP: the /metrics handler calls metrics_render() and sends the buffer.
 * See docs/internals/metrics.md. */
#ifndef BSC_METRICS_METRICS_H
#define BSC_METRICS_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/compat.h"
#include "core/err.h"

/* A family has 0 to METRICS_MAX_LABELS label names. */
#define METRICS_MAX_LABELS 4
/* Distinct series one shard may hold. Past it, an update that would create a series is
 * dropped and counted in bascule_metrics_dropped_total; existing series keep updating. */
#define METRICS_MAX_SERIES 10000u
/* Label values longer than this many bytes are cut (at a UTF-8 character boundary). */
#define METRICS_LABEL_MAX 128u
/* The Content-Type of what metrics_render() produces. */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
/* Label values for "nobody" and "nothing": no label value is ever empty. The parentheses
 * keep them apart from every client and target id (ids cannot hold them). */
#define METRICS_CLIENT_OPEN "(open)" /* a request on an open gateway (no clients:) */
#define METRICS_TARGET_NONE "(none)" /* a cost charged before any target was chosen */
/* Upper bounds of a histogram's finite buckets; +Inf comes on top. */
#define METRICS_MAX_BUCKETS 16u

enum metric_type {
    METRIC_COUNTER = 0, /* only goes up; metrics_inc() / metrics_inc3() */
    METRIC_GAUGE,       /* metrics_gauge_set() / metrics_gauge_add(); summed across shards */
    METRIC_HISTOGRAM,   /* metrics_observe() */
    METRIC_TYPE_COUNT
};

/* Bucket layouts a histogram family may use (metrics.c holds the bounds). */
enum metric_buckets {
    METRIC_BUCKETS_NONE = 0, /* counters and gauges */
    METRIC_BUCKETS_LATENCY,  /* seconds, 0.005 .. 120: request duration, TTFT */
    METRIC_BUCKETS_OVERHEAD, /* seconds, 0.0001 .. 1: the gateway's own time per request */
    METRIC_BUCKETS_COUNT
};

/* Label-name lists for the table below: the count and the names come from one place. */
#define METRICS_L0()           0, { NULL, NULL, NULL, NULL }
#define METRICS_L1(a)          1, { a, NULL, NULL, NULL }
#define METRICS_L2(a, b)       2, { a, b, NULL, NULL }
#define METRICS_L3(a, b, c)    3, { a, b, c, NULL }
#define METRICS_L4(a, b, c, d) 4, { a, b, c, d }

/* Every metric family, in exposition order. One entry each:
 *   X(ID, TYPE, BUCKETS, "name", METRICS_Ln(label names...), "help")
 * The enum, the names, the help, the types and the label names are all generated from this
 * list, so they cannot drift; adding a family is adding an entry. Names and label names are
 * a contract with dashboards and alerts: do not rename. */
#define METRICS_FAMILIES(X)                                                                    \
    X(REQUESTS, COUNTER, NONE, "bascule_requests_total", METRICS_L2("route", "outcome"),       \
      "Client requests by route and final outcome (ok, error, client_abort, ...).")            \
    X(ATTEMPTS, COUNTER, NONE, "bascule_attempts_total", METRICS_L2("target", "kind"),         \
      "Upstream attempts by target and result: ok or the normalized failure kind.")            \
    X(RETRIES, COUNTER, NONE, "bascule_retries_total", METRICS_L1("route"),                    \
      "Attempts that replayed a request on the same target.")                                  \
    X(FAILOVERS, COUNTER, NONE, "bascule_failovers_total", METRICS_L1("route"),                \
      "Attempts moved to an equivalent target after a failure.")                               \
    X(FALLBACKS, COUNTER, NONE, "bascule_fallbacks_total", METRICS_L1("route"),                \
      "Attempts moved to an approved fallback model.")                                         \
    X(BUILD_INFO, GAUGE, NONE, "bascule_build_info", METRICS_L2("version", "revision"),        \
      "Always 1: the release and source revision this process runs.")                          \
    X(BREAKER_STATE, GAUGE, NONE, "bascule_breaker_state", METRICS_L2("target", "state"),      \
      "1 for the circuit's current state (closed, open, half_open, ramping), 0 for the others.") \
    X(BREAKER_TRANSITIONS, COUNTER, NONE, "bascule_breaker_transitions_total",                 \
      METRICS_L2("target", "to"), "Circuit state changes by target and new state.")            \
    X(RETRY_BUDGET_REJECTIONS, COUNTER, NONE, "bascule_retry_budget_rejections_total",         \
      METRICS_L0(), "Retries and failovers refused by the gateway-wide retry budget.")         \
    X(RETRY_BUDGET_SPENT, COUNTER, NONE, "bascule_retry_budget_spent_total", METRICS_L0(),     \
      "Retries and failovers granted by the gateway-wide retry budget.")                       \
    X(REQUEST_DURATION, HISTOGRAM, LATENCY, "bascule_request_duration_seconds",                \
      METRICS_L1("route"), "Client request duration, head received to last byte sent.")        \
    X(TTFT, HISTOGRAM, LATENCY, "bascule_ttft_seconds", METRICS_L1("route"),                   \
      "Time from request head to the first output token sent to the client.")                  \
    X(ATTEMPT_DURATION, HISTOGRAM, LATENCY, "bascule_attempt_duration_seconds",                \
      METRICS_L1("target"), "Upstream attempt duration per target, sent to outcome reported.")  \
    X(ATTEMPT_TTFT, HISTOGRAM, LATENCY, "bascule_attempt_ttft_seconds", METRICS_L1("target"),  \
      "Stream attempts: from the attempt's start to its first output token, per target.")      \
    X(OVERHEAD, HISTOGRAM, OVERHEAD, "bascule_overhead_seconds", METRICS_L1("route"),          \
      "Time a request spent in the gateway, not waiting on an upstream, a backoff or a queue.") \
    X(UPSTREAM_INFLIGHT, GAUGE, NONE, "bascule_upstream_inflight", METRICS_L1("target"),       \
      "Upstream transfers in progress per target.")                                            \
    X(QUEUE_DEPTH, GAUGE, NONE, "bascule_queue_depth", METRICS_L1("target"),                   \
      "Requests waiting for a target's concurrency slot.")                                     \
    X(TOKENS, COUNTER, NONE, "bascule_tokens_total", METRICS_L2("route", "direction"),         \
      "Tokens by route and direction (input, output; parts: cached_input, cache_write, "     \
      "reasoning).")                                                                           \
    X(COST, COUNTER, NONE, "bascule_cost_usd_total", METRICS_L3("client", "route", "target"), \
      "Estimated spend in US dollars, from usage and the price table.")                        \
    X(KEY_COOLDOWNS, COUNTER, NONE, "bascule_key_cooldowns_total",                             \
      METRICS_L2("provider", "reason"), "Provider API keys put into cooldown, by reason.")     \
    X(KEY_REVERIFICATIONS, COUNTER, NONE, "bascule_key_reverifications_total",                 \
      METRICS_L2("provider", "result"),                                                        \
      "Re-verifications of refused provider keys: restored, refused, inconclusive.")         \
    X(OUTCOMES, COUNTER, NONE, "bascule_outcomes_total",                                       \
      METRICS_L3("route", "layer", "result"),                                                  \
      "Request outcomes by checking layer (transport, contract, task) and result.")            \
    X(TARGET_OUTCOMES, COUNTER, NONE, "bascule_target_outcomes_total",                         \
      METRICS_L3("target", "layer", "result"),                                                 \
      "Outcomes by target, so a canary fallback's contract and task success show apart.")      \
    X(CONFIG_RELOADS, COUNTER, NONE, "bascule_config_reloads_total", METRICS_L1("result"),     \
      "Configuration reloads by result (ok, rejected).")                                         \
    X(CONNECTIONS, GAUGE, NONE, "bascule_connections", METRICS_L0(),                           \
      "Open client connections.")                                                              \
    X(STREAM_PAUSES, COUNTER, NONE, "bascule_stream_pauses_total", METRICS_L1("route"),         \
      "Upstream transfers paused because the client was not reading (back-pressure).")       \
    X(METRICS_DROPPED, COUNTER, NONE, "bascule_metrics_dropped_total", METRICS_L0(),           \
      "Metric updates not recorded: series limit reached, out of memory or invalid value.") \
    X(SHADOW_REQUESTS, COUNTER, NONE, "bascule_shadow_requests_total",                         \
      METRICS_L3("route", "target", "outcome"),                                                \
      "Shadow (mirrored) requests by route, candidate target and outcome.")                     \
    X(SHADOW_LATENCY, HISTOGRAM, LATENCY, "bascule_shadow_latency_seconds",                    \
      METRICS_L2("route", "target"), "Latency of the shadow requests that got an answer.")      \
    X(SHADOW_AGREEMENT, COUNTER, NONE, "bascule_shadow_agreement_total",                       \
      METRICS_L3("route", "target", "result"),                                                 \
      "Shadow answers against the primary's: agree, disagree, unknown.")                        \
    X(SHADOW_TOKENS, COUNTER, NONE, "bascule_shadow_tokens_total",                             \
      METRICS_L3("route", "target", "direction"), "Tokens used by shadow requests.")            \
    X(SHADOW_COST, COUNTER, NONE, "bascule_shadow_cost_usd_total",                             \
      METRICS_L2("route", "target"), "Cost of shadow requests at the candidate's price.")      \
    X(SPANS_EXPORTED, COUNTER, NONE, "bascule_spans_exported_total", METRICS_L0(),             \
      "Trace spans the OTLP collector accepted.")                                              \
    X(SPANS_DROPPED, COUNTER, NONE, "bascule_spans_dropped_total", METRICS_L0(),               \
      "Trace spans not exported: queue full or the collector failed or refused them.")         \
    X(WORKFLOW_OUTCOMES, COUNTER, NONE, "bascule_workflow_outcomes_total",                     \
      METRICS_L3("workflow", "layer", "result"),                                               \
      "Outcomes by the workflow that produced the answer (primary, retry, fallback, ...).")    \
    X(UPSTREAM_IDLE_CONNECTIONS, GAUGE, NONE, "bascule_upstream_idle_connections", METRICS_L0(), \
      "Kept-alive upstream connections waiting idle in the builtin HTTP/1.1 client's pools.") \
    X(STORE_UP, GAUGE, NONE, "bascule_store_up", METRICS_L0(),                                 \
      "1 when the state store can be reached (always for memory and sqlite), 0 when not.")  \
    X(TARGET_EFFECTIVE_CONCURRENCY, GAUGE, NONE, "bascule_target_effective_concurrency",       \
      METRICS_L1("target"), "Adaptive concurrency limit per target (0: not limited).")        \
    X(TARGET_EFFECTIVE_RPM, GAUGE, NONE, "bascule_target_effective_rpm", METRICS_L1("target"), \
      "Adaptive requests-per-minute limit per target (0: not limited).")  \
    X(ROUTE_ELIGIBLE_TARGETS, GAUGE, NONE, "bascule_route_eligible_targets",                    \
      METRICS_L1("route"),                                                                     \
      "Targets of a route that could take a request now (enabled, circuit not open).")        \
    X(CLIENT_BUDGET, GAUGE, NONE, "bascule_client_budget_usd", METRICS_L1("client"),           \
      "A client's budget for its current period, in US dollars (clients with a budget).")     \
    X(CLIENT_SPEND, GAUGE, NONE, "bascule_client_spend_usd", METRICS_L1("client"),             \
      "A client's spend in its current budget period, as this instance knows it.")            \
    X(LIMIT_DECISIONS, COUNTER, NONE, "bascule_limit_decisions_total",                         \
      METRICS_L2("limit", "outcome"),                                                          \
      "Local limit decisions by limit (client_rpm, target_concurrency, ...) and outcome.")     \
    X(STREAM_CONTINUATIONS, COUNTER, NONE, "bascule_stream_continuations_total",               \
      METRICS_L4("route", "target", "how", "result"),                                          \
      "Broken streams continued (on_stream_failure: continue) by route, the target that went " \
      "on, how (prefill, replay) and result (ok, diverged, refused, failed).")                 \
    X(CACHE_REQUESTS, COUNTER, NONE, "bascule_cache_requests_total",                           \
      METRICS_L2("route", "result"),                                                           \
      "Requests on a route with a response cache, by result: hit, miss, bypass.")              \
    X(CACHE_SAVED, COUNTER, NONE, "bascule_cache_saved_usd_total", METRICS_L0(),               \
      "Estimated US dollars not spent: the cost of each answer served from the cache.")

enum metric_id {
#define X(ID, TYPE, BUCKETS, NAME, LABELS, HELP) METRIC_##ID,
    METRICS_FAMILIES(X)
#undef X
    METRIC_COUNT
};

/* One family, as declared above. */
struct metrics_family {
    const char *name;
    const char *help;
    enum metric_type type;
    unsigned n_labels;
    const char *label_names[METRICS_MAX_LABELS]; /* NULL past n_labels */
    enum metric_buckets buckets;
};

/* Returns the declaration of <id>, or NULL when <id> is out of range. Static storage. */
const struct metrics_family *metrics_family(enum metric_id id);

/* Returns the finite upper bounds of <id>'s buckets (ascending) and sets *<n>; NULL and 0
 * for a family that is not a histogram. Static storage. */
const double *metrics_bucket_bounds(enum metric_id id, size_t *n);

/* "counter", "gauge", "histogram"; "untyped" when out of range. Never NULL. */
const char *metrics_type_name(enum metric_type type);

struct metrics;

/* Creates the registry with <n_shards> + 1 shards: shard i belongs to worker i, shard
 * <n_shards> is shared by every other thread (main, reload, health probes). Boot only.
 * Returns NULL when out of memory or when a mutex cannot be created. Caller owns it. */
struct metrics *metrics_new(unsigned n_shards);
/* Frees <m> and every series. No thread may be using it. NULL is fine. */
void metrics_free(struct metrics *m);
/* The shard for threads that are not workers (== the n_shards given to metrics_new()); 0
 * for a NULL <m>. */
unsigned metrics_shared_shard(const struct metrics *m);

/* Updates. Common rules:
 *  - <shard> is the calling worker's index, or metrics_shared_shard() from other threads. A
 *    shard may be used from several threads (each update takes its mutex), but a worker
 *    should use its own so that updates never contend. An index past the shared shard is
 *    treated as the shared shard.
 *  - Label values are borrowed for the call and copied on first use of a series. NULL means
 *    the empty value. Values past the family's label count are ignored.
 *  - Never fails loudly: an update that cannot be recorded (series limit, out of memory, a
 *    non-finite value, a negative counter increment, the wrong call for the family's type)
 *    is dropped and counted in bascule_metrics_dropped_total.
 *  - <m> may be NULL: the update is a no-op (handy for unit tests of other modules).
 *  - Thread-safe, never blocks on I/O, never calls back. */

/* Adds <v> (>= 0) to counter <id>; on a gauge it behaves as metrics_gauge_add(). */
void metrics_inc(struct metrics *m, unsigned shard, enum metric_id id, const char *l1,
                 const char *l2, double v);
/* metrics_inc() for a family with three labels (bascule_outcomes_total). */
void metrics_inc3(struct metrics *m, unsigned shard, enum metric_id id, const char *l1,
                  const char *l2, const char *l3, double v);
/* metrics_inc() for a family with four labels (bascule_stream_continuations_total). */
void metrics_inc4(struct metrics *m, unsigned shard, enum metric_id id, const char *l1,
                  const char *l2, const char *l3, const char *l4, double v);
/* Sets this shard's contribution to gauge <id>. The exported value is the sum over shards,
 * so a process-wide quantity (bascule_breaker_state) must always be set on the same shard,
 * normally metrics_shared_shard(). */
void metrics_gauge_set(struct metrics *m, unsigned shard, enum metric_id id, const char *l1,
                       const char *l2, double v);
/* Adds <v> (may be negative) to this shard's contribution to gauge <id>. */
void metrics_gauge_add(struct metrics *m, unsigned shard, enum metric_id id, const char *l1,
                       const char *l2, double v);
/* Records one observation <value> in histogram <id>. A bucket counts values <= its bound. */
void metrics_observe(struct metrics *m, unsigned shard, enum metric_id id, const char *l1,
                     const char *l2, double value);

/* Scoped updates: the same as metrics_inc() (a counter's increment, a gauge's addition:
 * three labels) and metrics_observe(), for a caller that vouches for its label values.
 * Each must be a string literal (static storage) or live in an immutable object named by
 * <scope>: a nonzero value that never names other storage in this process (a config
 * snapshot's serial, struct cfg) and whose object the caller keeps alive for the call. A
 * series found before through the same label pointers under the same scope is then the
 * same series, so a repeated update is confirmed on the pointers alone, without reading the
 * labels' bytes (a pointer alone is not enough: after a reload another string may live at
 * a freed one's address, but never under the same scope). Scope 0 is the unscoped update. */
void metrics_inc_scoped(struct metrics *m, unsigned shard, uint64_t scope, enum metric_id id,
                        const char *l1, const char *l2, const char *l3, double v);
void metrics_observe_scoped(struct metrics *m, unsigned shard, uint64_t scope,
                            enum metric_id id, const char *l1, double value);

/* Makes the series of <id> with these labels exist (at 0, or with no observation) without
 * changing it: a family shows the series the config knows before their first event. Any
 * type. */
void metrics_touch(struct metrics *m, unsigned shard, enum metric_id id, const char *l1,
                   const char *l2, const char *l3);
/* metrics_touch() for a family with four labels (bascule_stream_continuations_total). */
void metrics_touch4(struct metrics *m, unsigned shard, enum metric_id id, const char *l1,
                    const char *l2, const char *l3, const char *l4);
/* metrics_touch4() that creates the series only while shard <shard> holds fewer than
 * <max_series> series; an existing series is found whatever the count. A series left out
 * this way is not a drop (bascule_metrics_dropped_total counts only out of memory and the
 * registry's own bound): it lets a caller fill a shard only so far, keeping the rest of its
 * METRICS_MAX_SERIES for updates. */
void metrics_touch_within(struct metrics *m, unsigned shard, size_t max_series,
                          enum metric_id id, const char *l1, const char *l2, const char *l3,
                          const char *l4);

/* Appends the process_* families of the Prometheus client conventions for the calling
 * process (CPU seconds, resident and virtual memory, open and maximum fds, start time),
 * read from /proc/self; <start_time_s> is the process start, in seconds since the epoch.
 * A value that cannot be read is left out. Implemented in process.c. */
enum bsc_err metrics_render_process(struct bsc_buf *out, double start_time_s);

/* What /proc/<pid>/stat says of CPU and memory. */
struct metrics_proc_stat {
    uint64_t utime_ticks, stime_ticks; /* user and system CPU, in clock ticks */
    uint64_t vsize_bytes;
    uint64_t rss_pages;
};

/* Parses the text of /proc/<pid>/stat (the command name may hold spaces and parentheses:
 * fields are counted from the last ')'). Returns false when it does not parse. Pure. */
bool metrics_proc_stat_parse(const char *text, struct metrics_proc_stat *out);

/* A series summed over all shards. */
struct metrics_sample {
    enum metric_id id;
    /* Borrowed from the registry (valid until metrics_free()); "" for an empty value, NULL
     * past the family's label count. */
    const char *labels[METRICS_MAX_LABELS];
    double value;             /* counter or gauge; for a histogram the sum of observations */
    uint64_t count;           /* histogram: number of observations */
    const uint64_t *buckets;  /* histogram: per-bucket (not cumulative) counts, finite bounds
                               * then +Inf; points into the snapshot. NULL otherwise. */
    /* Internal to metrics.c: the sort tie-break and where the counters sit while the
     * snapshot is built. */
    unsigned shard;
    size_t bucket_off;
};

struct metrics_snapshot {
    struct metrics_sample *samples; /* owned; sorted by family, then label values */
    size_t n;
    uint64_t *bucket_store;         /* owned; what samples[].buckets point into */
};

/* Copies every series of <m> into <snap>, summed across shards, families in declaration
 * order and series sorted bytewise by label values. bascule_metrics_dropped_total is always
 * present. Each shard is locked once, for the time of a copy. Returns BSC_OK, or
 * BSC_ENOMEM with <snap> empty. Release with metrics_snapshot_cleanup(). */
enum bsc_err metrics_snapshot_take(struct metrics *m, struct metrics_snapshot *snap);
/* Frees what <snap> owns; <snap> is empty afterwards. */
void metrics_snapshot_cleanup(struct metrics_snapshot *snap);

/* Appends the Prometheus text exposition (format 0.0.4) of <m> to <out>: HELP and TYPE for
 * every family in declaration order, then its series; histograms as cumulative _bucket
 * lines with le="+Inf", _sum and _count. A family without labels always has a sample (0
 * before any update). Returns BSC_OK; BSC_ENOMEM, or BSC_ELIMIT when <out>'s maximum is
 * reached, with <out> unchanged. Thread-safe; never calls back. Implemented in prom.c. */
enum bsc_err metrics_render(struct metrics *m, struct bsc_buf *out);

#ifdef BSC_UNIT_TEST
/* Unit tests only: the set of a shard's front cache that the updates of <id> through label
 * pointers <l> use (0 .. 127). */
unsigned metrics__front_set(enum metric_id id, const char *const l[METRICS_MAX_LABELS]);
/* Unit tests only: how many updates of shard <shard> the front cache did not serve (each
 * hashed its labels' bytes and searched the table). */
uint64_t metrics__lookups(struct metrics *m, unsigned shard);
#endif

#endif
