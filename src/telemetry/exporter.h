/* SPDX-License-Identifier: MIT */
/* exporter.h -- the background path of finished spans: a bounded queue (mutex + condvar)
 * that a loop only ever copies into, drained by one exporter thread that POSTs batches as
 * OTLP/HTTP JSON with libcurl. A full queue drops the new spans, and a failed export drops
 * its batch: both are counted (bascule_spans_dropped_total), never retried, never waited
 * for. One exporter per process, started on the first span. docs/internals/telemetry.md. */
#ifndef BSC_TELEMETRY_EXPORTER_H
#define BSC_TELEMETRY_EXPORTER_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "telemetry/span.h"

#define TEL_QUEUE_MAX  2048 /* spans waiting for the exporter (about 5 MB) */
#define TEL_BATCH_MAX  256  /* spans per POST */
#define TEL_TIMEOUT_MS 5000 /* one export, connection included */

struct metrics;

/* Queues <n> spans for export to <tc>'s endpoint (whose settings the exporter copies: a
 * reload takes effect on the next batch). Starts the exporter on first use, counting into
 * <m>. Never blocks on I/O: takes a mutex for the time of a copy. */
void tel_export(const struct cfg_telemetry *tc, struct metrics *m, const struct tel_span *spans,
                size_t n);
/* Stops the exporter: one more batch is exported (bounded by TEL_TIMEOUT_MS), the rest
 * dropped, then the thread is joined. Before the metrics registry is freed. No-op when never started. */
void tel_shutdown(void);

#endif
