/* SPDX-License-Identifier: MIT */
/* fuzz-sources: src/telemetry/trace.c */
/* fuzz_traceparent.c -- libFuzzer target for the W3C traceparent parser
 * (telemetry/trace.h), the one header value of a client that shapes what the gateway sends
 * upstream. Beyond "no crash, no leak, no UB" it aborts when:
 *   - tel_traceparent_parse() disagrees with a reference written here from the W3C rules
 *     (version 2 lower-case hex, not ff; version 00 exactly 55 characters, a later one at
 *     least 55 with a '-' after them; '-' at 2, 35, 52; lower-case hex ids, neither all
 *     zero; flags 2 hex);
 *   - what it read is not what the value says (formatting it back gives the value, with
 *     version 00, up to the 55th character);
 *   - a trace begun from the value does not continue it (same trace id, the client's span
 *     as parent, a new span), or one begun from a refused value claims a parent;
 *   - the header sent upstream for an attempt is not itself a valid traceparent of the same
 *     trace, with a span neither zero nor the request's.
 * Built and run by scripts/fuzz; seeds in tests/fuzz/corpus/traceparent/. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telemetry/trace.h"

static void die(const char *what)
{
    fprintf(stderr, "fuzz_traceparent: invariant broken: %s\n", what);
    abort();
}

static bool lhex(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
            return false;
    return true;
}

static bool zeros(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != '0')
            return false;
    return true;
}

/* The W3C rules, spelled out independently of the parser. */
static bool reference_valid(const char *s, size_t len)
{
    if (len < 55 || !lhex(s, 2) || (s[0] == 'f' && s[1] == 'f'))
        return false;
    if (s[0] == '0' && s[1] == '0' && len != 55)
        return false;
    if (len > 55 && s[55] != '-')
        return false;
    return s[2] == '-' && s[35] == '-' && s[52] == '-' && lhex(s + 3, 32) &&
           lhex(s + 36, 16) && lhex(s + 53, 2) && !zeros(s + 3, 32) && !zeros(s + 36, 16);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct bsc_str v = {(const char *)data, size};
    struct tel_parent p;
    struct tel_trace t;
    char out[TEL_TRACEPARENT_LEN + 1], hdr[TEL_TRACEPARENT_LEN + 1];
    bool ok = tel_traceparent_parse(v, &p);

    if (ok != reference_valid(v.p, size))
        die(ok ? "parsed a value the rules refuse" : "refused a valid value");
    tel_trace_begin(&t, v, 0.5);
    if (t.has_parent != ok)
        die("has_parent disagrees with the parse");
    if (ok) {
        tel_traceparent_format(&p, out);
        if (memcmp(out, "00", 2) != 0 || memcmp(out + 2, v.p + 2, 53) != 0)
            die("formatting what was read does not give the value back");
        if (memcmp(t.trace_id, p.trace_id, 16) != 0 || memcmp(t.parent_id, p.span_id, 8) != 0)
            die("the trace does not continue the client's");
    }
    for (unsigned n = 1; n <= 3; n++) {
        struct tel_parent up;
        uint8_t zero[8] = {0};

        tel_trace_header(&t, n, hdr);
        if (strlen(hdr) != TEL_TRACEPARENT_LEN ||
            !tel_traceparent_parse((struct bsc_str){hdr, TEL_TRACEPARENT_LEN}, &up))
            die("the upstream header is not a valid traceparent");
        if (memcmp(up.trace_id, t.trace_id, 16) != 0)
            die("the upstream header changes the trace");
        if (memcmp(up.span_id, zero, 8) == 0 || memcmp(up.span_id, t.span_id, 8) == 0)
            die("the attempt span is zero or the request's");
    }
    return 0;
}
