/* SPDX-License-Identifier: MIT */
/* span.c -- span attributes and the OTLP/HTTP JSON encoding of a batch. Written by hand:
 * the shape is fixed and small, and the exporter thread should not build a json-c tree
 * per span. Strings are escaped as JSON requires; numbers that are not finite become 0. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "telemetry/span.h"
#include "telemetry/trace.h"

static struct tel_attr *add(struct tel_span *s, const char *key, enum tel_attr_type type)
{
    struct tel_attr *a;

    if (s->n_attrs == TEL_MAX_ATTRS)
        return NULL;
    a = &s->attrs[s->n_attrs++];
    a->key = key;
    a->type = type;
    return a;
}

void tel_span_str(struct tel_span *s, const char *key, const char *value)
{
    struct tel_attr *a = value ? add(s, key, TEL_ATTR_STR) : NULL;

    if (a)
        snprintf(a->v.s, sizeof(a->v.s), "%s", value);
}

void tel_span_int(struct tel_span *s, const char *key, int64_t value)
{
    struct tel_attr *a = add(s, key, TEL_ATTR_INT);

    if (a)
        a->v.i = value;
}

void tel_span_dbl(struct tel_span *s, const char *key, double value)
{
    struct tel_attr *a = add(s, key, TEL_ATTR_DBL);

    if (a)
        a->v.d = isfinite(value) ? value : 0;
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void put_str(struct bsc_buf *b, const char *s)
{
    bsc_buf_append_char(b, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[8];

        if (c == '"' || c == '\\') {
            bsc_buf_append_char(b, '\\');
            bsc_buf_append_char(b, (char)c);
        } else if (c < 0x20) {
            snprintf(esc, sizeof(esc), "\\u%04x", c);
            bsc_buf_append_cstr(b, esc);
        } else {
            bsc_buf_append_char(b, (char)c);
        }
    }
    bsc_buf_append_char(b, '"');
}

static void put_attr(struct bsc_buf *b, const struct tel_attr *a)
{
    char num[64];

    bsc_buf_append_cstr(b, "{\"key\":");
    put_str(b, a->key);
    bsc_buf_append_cstr(b, ",\"value\":{");
    switch (a->type) {
    case TEL_ATTR_STR:
        bsc_buf_append_cstr(b, "\"stringValue\":");
        put_str(b, a->v.s);
        break;
    case TEL_ATTR_INT: /* int64 is a string in the proto3 JSON mapping */
        snprintf(num, sizeof(num), "\"intValue\":\"%" PRId64 "\"", a->v.i);
        bsc_buf_append_cstr(b, num);
        break;
    case TEL_ATTR_DBL:
        snprintf(num, sizeof(num), "\"doubleValue\":%.17g", a->v.d);
        bsc_buf_append_cstr(b, num);
        break;
    }
    bsc_buf_append_cstr(b, "}}");
}

static void put_span(struct bsc_buf *b, const struct tel_span *s)
{
    char hex[33], num[192];

    tel_hex(s->trace_id, 16, hex);
    bsc_buf_append_cstr(b, "{\"traceId\":\"");
    bsc_buf_append_cstr(b, hex);
    tel_hex(s->span_id, 8, hex);
    bsc_buf_append_cstr(b, "\",\"spanId\":\"");
    bsc_buf_append_cstr(b, hex);
    bsc_buf_append_cstr(b, "\",");
    if (s->has_parent) {
        tel_hex(s->parent_id, 8, hex);
        bsc_buf_append_cstr(b, "\"parentSpanId\":\"");
        bsc_buf_append_cstr(b, hex);
        bsc_buf_append_cstr(b, "\",");
    }
    bsc_buf_append_cstr(b, "\"name\":");
    put_str(b, s->name);
    snprintf(num, sizeof(num),
             ",\"kind\":%d,\"startTimeUnixNano\":\"%" PRIu64 "\",\"endTimeUnixNano\":\"%" PRIu64
             "\",\"attributes\":[",
             (int)s->kind, s->start_ns, s->end_ns);
    bsc_buf_append_cstr(b, num);
    for (size_t i = 0; i < s->n_attrs; i++) {
        if (i)
            bsc_buf_append_char(b, ',');
        put_attr(b, &s->attrs[i]);
    }
    bsc_buf_append_cstr(b, s->error ? "],\"status\":{\"code\":2}}" : "],\"status\":{}}");
}

enum bsc_err tel_otlp_encode(const struct tel_span *spans, size_t n, const char *service,
                             struct bsc_buf *out)
{
    bsc_buf_append_cstr(out, "{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":"
                             "\"service.name\",\"value\":{\"stringValue\":");
    put_str(out, service && *service ? service : "bascule");
    bsc_buf_append_cstr(out, "}}]},\"scopeSpans\":[{\"scope\":{\"name\":\"bascule\"},"
                             "\"spans\":[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            bsc_buf_append_char(out, ',');
        put_span(out, &spans[i]);
    }
    return bsc_buf_append_cstr(out, "]}]}]}");
}
