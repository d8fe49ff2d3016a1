/* SPDX-License-Identifier: MIT */
/* report.h -- what `bascule load` counts and prints: one finished request at a time goes
 * into struct load_stats (pure: no clock, no I/O), and the report is computed from it at
 * the end, as text for people and as JSON for scripts. Percentiles are nearest-rank over
 * every sample. The driver that produces the results is load.c; docs/load.md lists the
 * report's fields. */
#ifndef BSC_LOAD_REPORT_H
#define BSC_LOAD_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/str.h"

/* Distinct keys a table keeps (targets, workflows, error kinds); the rest count as other. */
#define LOAD_TABLE_MAX 64
/* A key longer than this is cut (header values come from the network). */
#define LOAD_KEY_MAX 128
/* Samples kept per series: a run records at most this many latencies (LOAD_MAX_REQUESTS). */
#define LOAD_MAX_SAMPLES 10000000u

struct load_row {
    char *key;  /* owned, NUL-terminated */
    int status; /* errors: the HTTP status (0: none arrived); other tables: 0 */
    uint64_t n;
};

/* A bounded count by key, in the order keys were first seen. */
struct load_table {
    struct load_row rows[LOAD_TABLE_MAX];
    size_t n;
    uint64_t other; /* counts whose key did not fit */
};

/* Durations in microseconds, in arrival order until load_samples_sort(). */
struct load_samples {
    uint32_t *v; /* owned */
    size_t n, cap;
};

/* One finished request, as the driver saw it. Slices are borrowed for the call. */
struct load_result {
    int status;                /* HTTP status of the final head; 0 when none arrived */
    const char *transport;     /* NULL when the transfer completed, else why not ("reset") */
    uint64_t latency_us;       /* request start to the last byte */
    bool has_ttft;             /* a stream whose first data: event arrived */
    uint64_t ttft_us;          /* request start to that event */
    bool stream;               /* the request asked for a stream */
    bool stream_done;          /* stream: data: [DONE] arrived */
    struct bsc_str error_code; /* error.code of an error body or stream error event; empty: none */
    bool error_event;          /* stream: an error event after a 2xx head */
    bool has_usage;
    uint64_t input_tokens, output_tokens;
    struct bsc_str target, workflow, attempts, cost; /* response header values; empty: absent */
};

struct load_stats {
    uint64_t completed, ok, errors;
    struct load_samples latency, ttft;
    struct load_table targets, workflows, errors_by; /* errors_by: key is the code */
    uint64_t attempts_sum, attempts_n, attempts_max;
    uint64_t input_tokens, output_tokens, usage_n;
    double cost_usd;
    uint64_t cost_n;
    bool oom; /* a sample or key could not be stored: the report says so */
};

/* Facts about the run itself, set by the driver. Strings borrowed. */
struct load_meta {
    const char *url; /* the full chat completions URL */
    const char *model;
    bool stream;
    unsigned concurrency;
    uint64_t planned;     /* --requests; 0 when only --duration bounds the run */
    uint64_t duration_ms; /* --duration; 0 when not given */
    uint64_t elapsed_us;  /* first request start to the end of the run */
    uint64_t sent;        /* requests started */
    uint64_t cancelled;   /* in flight when the duration ended or SIGINT came: not counted */
    bool interrupted;     /* SIGINT ended the run */
};

/* Latency percentiles etc. of one series, in microseconds. */
struct load_dist {
    uint64_t n;
    uint32_t p50, p95, p99, max;
    double mean;
};

void load_stats_init(struct load_stats *st);
void load_stats_cleanup(struct load_stats *st);

/* Whether <r> counts as a success: a 2xx head, a completed transfer and, for a stream,
 * [DONE] without an error event. */
bool load_result_ok(const struct load_result *r);

/* Adds <r> to <st>. Never fails: what cannot be stored sets st->oom and is left out. */
void load_stats_add(struct load_stats *st, const struct load_result *r);

/* Adds everything <src> counted to <dst> (one load_stats per thread, merged at the end).
 * Never fails: what cannot be stored sets dst->oom. <src> is unchanged. */
void load_stats_merge(struct load_stats *dst, const struct load_stats *src);

/* Appends <us> (saturated at UINT32_MAX). BSC_ELIMIT past LOAD_MAX_SAMPLES, BSC_ENOMEM. */
enum bsc_err load_samples_add(struct load_samples *s, uint64_t us);
void load_samples_sort(struct load_samples *s);

/* The nearest-rank percentile <permille>/10 of <n> ascending values: the value at rank
 * ceil(permille * n / 1000), counted from 1 (so p100 is the maximum and p0 the minimum).
 * 0 when <n> is 0. Integer arithmetic: 0.95 * 100 is not 95 in binary floating point. */
uint32_t load_percentile(const uint32_t *sorted, size_t n, unsigned permille);

/* The distribution of <s>, which must be sorted. */
struct load_dist load_dist_of(const struct load_samples *s);

/* <count> per 1,000 <per> (0 when <per> is 0). */
double load_per_1k(double count, uint64_t per);

/* The human report on <f>. Sorts the samples first. */
void load_report_text(FILE *f, struct load_stats *st, const struct load_meta *meta);
/* The same report as one JSON object (docs/load.md), appended to <out>. Sorts the samples.
 * BSC_ENOMEM or BSC_ELIMIT leave <out> partial. */
enum bsc_err load_report_json(struct bsc_buf *out, struct load_stats *st,
                              const struct load_meta *meta);

#endif
