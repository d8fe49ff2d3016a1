/* SPDX-License-Identifier: MIT */
/* trace.c -- traceparent parsing and formatting (W3C Trace Context level 1, §3.2) and the
 * ids of a request's trace. A header that does not parse is ignored, as the spec asks: the
 * request starts a new trace rather than failing. */
#include <string.h>

#include "core/id.h"
#include "telemetry/trace.h"

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1; /* upper case is invalid in traceparent */
}

/* Reads <n> bytes of hex at <p>; false on a bad digit. */
static bool unhex(const char *p, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int hi = hexval(p[2 * i]), lo = hexval(p[2 * i + 1]);

        if (hi < 0 || lo < 0)
            return false;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

static bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

bool tel_traceparent_parse(struct bsc_str v, struct tel_parent *out)
{
    const char *s = v.p;
    uint8_t version;

    if (!s || v.len < TEL_TRACEPARENT_LEN || !unhex(s, &version, 1) || version == 0xff)
        return false;
    if (version == 0 && v.len != TEL_TRACEPARENT_LEN)
        return false;
    if (v.len > TEL_TRACEPARENT_LEN && s[TEL_TRACEPARENT_LEN] != '-')
        return false; /* a later version may append fields, after a dash */
    if (s[2] != '-' || s[35] != '-' || s[52] != '-')
        return false;
    if (!unhex(s + 3, out->trace_id, 16) || !unhex(s + 36, out->span_id, 8) ||
        !unhex(s + 53, &out->flags, 1))
        return false;
    return !all_zero(out->trace_id, 16) && !all_zero(out->span_id, 8);
}

void tel_hex(const uint8_t *p, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";

    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * n] = '\0';
}

void tel_traceparent_format(const struct tel_parent *p, char out[TEL_TRACEPARENT_LEN + 1])
{
    memcpy(out, "00-", 3);
    tel_hex(p->trace_id, 16, out + 3);
    out[35] = '-';
    tel_hex(p->span_id, 8, out + 36);
    out[52] = '-';
    tel_hex(&p->flags, 1, out + 53);
}

static void rand_bytes(uint8_t *p, size_t n)
{
    do {
        for (size_t i = 0; i < n; i += 8) {
            uint64_t r = bsc_rand64();

            memcpy(p + i, &r, n - i < 8 ? n - i : 8);
        }
    } while (all_zero(p, n));
}

bool tel_trace_sampled(const uint8_t trace_id[16], double sample)
{
    uint64_t x = 0;

    if (sample >= 1.0)
        return true;
    if (sample <= 0.0)
        return false;
    /* The low 8 bytes, as the W3C "random" trace id flag and OTel's ratio sampler use. */
    for (int i = 8; i < 16; i++)
        x = x << 8 | trace_id[i];
    return (double)(x >> 11) * (1.0 / 9007199254740992.0) < sample;
}

void tel_trace_begin(struct tel_trace *t, struct bsc_str traceparent, double sample)
{
    struct tel_parent p;

    memset(t, 0, sizeof(*t));
    t->begun = true;
    if (tel_traceparent_parse(traceparent, &p)) {
        t->has_parent = true;
        memcpy(t->trace_id, p.trace_id, 16);
        memcpy(t->parent_id, p.span_id, 8);
    } else {
        rand_bytes(t->trace_id, 16);
    }
    rand_bytes(t->span_id, 8);
    t->sampled = tel_trace_sampled(t->trace_id, sample);
}

/* splitmix64: a bijection, so distinct attempt numbers give distinct ids. */
static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void tel_trace_attempt_id(const struct tel_trace *t, unsigned n, uint8_t out[8])
{
    uint64_t root = 0, id;

    memcpy(&root, t->span_id, 8);
    id = mix(root + 0x9e3779b97f4a7c15ull * n);
    if (id == 0 || id == root)
        id = ~root ? ~root : 1; /* never zero, never the request span's */
    memcpy(out, &id, 8);
}

void tel_trace_header(const struct tel_trace *t, unsigned n, char out[TEL_TRACEPARENT_LEN + 1])
{
    struct tel_parent p = {.flags = t->sampled ? 1 : 0};

    memcpy(p.trace_id, t->trace_id, 16);
    tel_trace_attempt_id(t, n, p.span_id);
    tel_traceparent_format(&p, out);
}
