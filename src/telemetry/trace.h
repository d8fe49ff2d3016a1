/* SPDX-License-Identifier: MIT */
/* trace.h -- W3C trace context (traceparent) and the ids of one request's trace: parsed and
 * formatted by pure functions, the trace continued from the client's header or started
 * fresh, the sampling decision taken from the trace id (so every hop that uses the same
 * ratio agrees), and the attempt span ids derived from the request span id and the attempt
 * number, so nothing per attempt has to be stored. docs/internals/telemetry.md. */
#ifndef BSC_TELEMETRY_TRACE_H
#define BSC_TELEMETRY_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/str.h"

#define TEL_TRACEPARENT_LEN 55 /* "00-" 32 hex "-" 16 hex "-" 2 hex */

/* One traceparent: version 00, the ids, the flags. */
struct tel_parent {
    uint8_t trace_id[16];
    uint8_t span_id[8];
    uint8_t flags; /* bit 0: sampled */
};

/* Parses a traceparent header value. False for anything but a well-formed value: version
 * 00 (exactly 55 characters) or a later version (at least 55, the rest after a '-'),
 * lower-case hex, ids not all zero, version not ff. */
bool tel_traceparent_parse(struct bsc_str v, struct tel_parent *out);
/* Writes the header value for <p> (TEL_TRACEPARENT_LEN characters and a NUL) into <out>. */
void tel_traceparent_format(const struct tel_parent *p, char out[TEL_TRACEPARENT_LEN + 1]);

/* The trace of one request. All zero: not begun. */
struct tel_trace {
    bool begun;
    bool sampled;     /* recorded and exported */
    bool has_parent;  /* the client sent a valid traceparent */
    uint8_t trace_id[16];
    uint8_t parent_id[8]; /* the client's span: the request span's parent */
    uint8_t span_id[8];   /* the request span */
};

/* Begins <t>: continues the client's <traceparent> when it is valid, else a new trace id;
 * a new request span id; sampled when the trace id falls in the <sample> fraction. */
void tel_trace_begin(struct tel_trace *t, struct bsc_str traceparent, double sample);
/* True when the trace id falls in the <sample> fraction (0..1) of all trace ids. */
bool tel_trace_sampled(const uint8_t trace_id[16], double sample);
/* The span id of attempt <n> (1-based) of <t>: never zero, never the request span's. */
void tel_trace_attempt_id(const struct tel_trace *t, unsigned n, uint8_t out[8]);
/* The traceparent to send upstream for attempt <n>: same trace, the attempt's span. */
void tel_trace_header(const struct tel_trace *t, unsigned n,
                      char out[TEL_TRACEPARENT_LEN + 1]);
/* Lower-case hex of <n> bytes into <out> (2n characters and a NUL). */
void tel_hex(const uint8_t *p, size_t n, char *out);

#endif
