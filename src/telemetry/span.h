/* SPDX-License-Identifier: MIT */
/* span.h -- a finished span as the exporter queues it (fixed size, no pointers into a
 * request, so it outlives the request without copying anything else) and its encoding as
 * OTLP/HTTP JSON (opentelemetry-proto's JSON mapping: resourceSpans/scopeSpans/spans, hex
 * ids, unix-nano times as strings, typed attribute values). Spans never carry prompts or
 * outputs: only ids, names, numbers and the gateway's own labels. */
#ifndef BSC_TELEMETRY_SPAN_H
#define BSC_TELEMETRY_SPAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

#define TEL_MAX_ATTRS 16
#define TEL_STR_MAX   130 /* an id of 128 bytes and a NUL, and one to spare */

enum tel_attr_type { TEL_ATTR_STR = 0, TEL_ATTR_INT, TEL_ATTR_DBL };

struct tel_attr {
    const char *key; /* static */
    enum tel_attr_type type;
    union {
        char s[TEL_STR_MAX];
        int64_t i;
        double d;
    } v;
};

/* OTLP SpanKind values. */
enum tel_span_kind { TEL_KIND_SERVER = 2, TEL_KIND_CLIENT = 3 };

struct tel_span {
    uint8_t trace_id[16];
    uint8_t span_id[8];
    uint8_t parent_id[8];
    bool has_parent;
    const char *name; /* static */
    enum tel_span_kind kind;
    uint64_t start_ns, end_ns; /* unix time */
    bool error;                /* status ERROR, else UNSET */
    struct tel_attr attrs[TEL_MAX_ATTRS];
    size_t n_attrs;
};

/* Attribute setters: a full span drops the attribute; a long string is cut. */
void tel_span_str(struct tel_span *s, const char *key, const char *value);
void tel_span_int(struct tel_span *s, const char *key, int64_t value);
void tel_span_dbl(struct tel_span *s, const char *key, double value);

/* Appends to <out> one ExportTraceServiceRequest holding <n> spans under a resource whose
 * service.name is <service>. BSC_ELIMIT when <out> is full, BSC_ENOMEM. */
enum bsc_err tel_otlp_encode(const struct tel_span *spans, size_t n, const char *service,
                             struct bsc_buf *out);

#endif
