/* SPDX-License-Identifier: MIT */
/* ratelimit_headers.c -- the parsers of the providers' rate-limit headers: durations, RFC
 * 3339 times, and the two header families. It decides nothing about keys: the router turns
 * rl_exhausted_ms() into a cooldown. See docs/internals/adaptive.md. */
#include "providers/ratelimit_headers.h"

#include <string.h>

/* Reads digits and an optional fraction at <s>[*<i>] into a value scaled by 1e6 (micro-
 * units). Returns false when there is no digit or the value would overflow. */
static bool read_number(struct bsc_str s, size_t *i, int64_t *micro)
{
    int64_t whole = 0, frac = 0, scale = 1000000;
    size_t start = *i;

    while (*i < s.len && s.p[*i] >= '0' && s.p[*i] <= '9') {
        if (whole > 1000000000LL)
            return false;
        whole = whole * 10 + (s.p[(*i)++] - '0');
    }
    if (*i < s.len && s.p[*i] == '.') {
        (*i)++;
        while (*i < s.len && s.p[*i] >= '0' && s.p[*i] <= '9') {
            if (scale > 1) {
                scale /= 10;
                frac += (s.p[*i] - '0') * scale;
            }
            (*i)++;
        }
    }
    if (*i == start || (*i == start + 1 && s.p[start] == '.'))
        return false;
    *micro = whole * 1000000 + frac;
    return true;
}

/* The unit at <s>[*<i>] as nanoseconds per unit, advancing past it; 0 when none. */
static int64_t read_unit(struct bsc_str s, size_t *i)
{
    static const struct {
        const char *name;
        int64_t ns;
    } units[] = {
        {"ms", 1000000},        {"us", 1000},         {"\xc2\xb5s", 1000}, {"ns", 1},
        {"h", 3600000000000LL}, {"m", 60000000000LL}, {"s", 1000000000},
    };

    for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++) {
        size_t n = strlen(units[k].name);
        if (s.len - *i >= n && memcmp(s.p + *i, units[k].name, n) == 0) {
            *i += n;
            return units[k].ns;
        }
    }
    return 0;
}

int64_t rl_parse_duration_ms(struct bsc_str s)
{
    int64_t total_us = 0, micro, ns;
    size_t i = 0;

    s = bsc_str_trim(s);
    if (!s.len)
        return -1;
    while (i < s.len) {
        if (!read_number(s, &i, &micro))
            return -1;
        ns = read_unit(s, &i);
        if (!ns) {
            if (i != s.len || total_us)
                return -1;
            ns = 1000000000; /* a bare number: seconds */
        }
        /* micro-units times ns per unit, in microseconds: micro * ns / 1e9. */
        if (micro > 0 && ns / 1000 > 0 && micro > INT64_MAX / (ns / 1000))
            return -1;
        total_us += ns >= 1000 ? micro * (ns / 1000) / 1000000 : (micro > 0 ? 1 : 0);
        if (total_us > RL_MAX_RESET_MS * 1000 * 24)
            return -1;
    }
    return (total_us + 999) / 1000;
}

/* <n> digits at <p> as a number; -1 when one is not a digit. */
static int digits(const char *p, int n)
{
    int v = 0;

    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    return v;
}

/* Days from 1970-01-01 to <y>-<m>-<d> (proleptic Gregorian; Howard Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    int64_t era, yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* The offset at <p> (<n> bytes left): "Z", "+hh:mm" or "-hh:mm" as milliseconds east of
 * UTC into *<off>; false when it is none of them or more follows. */
static bool read_offset(const char *p, size_t n, int64_t *off)
{
    int hh, mm;

    if (n == 1 && (p[0] == 'Z' || p[0] == 'z')) {
        *off = 0;
        return true;
    }
    if (n != 6 || (p[0] != '+' && p[0] != '-') || p[3] != ':')
        return false;
    hh = digits(p + 1, 2);
    mm = digits(p + 4, 2);
    if (hh < 0 || mm < 0 || hh > 23 || mm > 59)
        return false;
    *off = (p[0] == '-' ? -1 : 1) * ((int64_t)hh * 60 + mm) * 60000;
    return true;
}

int64_t rl_parse_rfc3339_ms(struct bsc_str s)
{
    int y, mo, d, h, mi, se, ms = 0;
    size_t i = 19;
    int64_t off, at;

    s = bsc_str_trim(s);
    if (s.len < 20 || s.p[4] != '-' || s.p[7] != '-' || (s.p[10] != 'T' && s.p[10] != 't') ||
        s.p[13] != ':' || s.p[16] != ':')
        return -1;
    y = digits(s.p, 4), mo = digits(s.p + 5, 2), d = digits(s.p + 8, 2);
    h = digits(s.p + 11, 2), mi = digits(s.p + 14, 2), se = digits(s.p + 17, 2);
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 ||
        se < 0 || se > 60)
        return -1;
    if (s.p[i] == '.') {
        int scale = 100, n = 0;
        for (i++; i < s.len && s.p[i] >= '0' && s.p[i] <= '9'; i++, n++) {
            ms += (s.p[i] - '0') * scale;
            scale /= 10;
        }
        if (!n)
            return -1;
    }
    if (!read_offset(s.p + i, s.len - i, &off))
        return -1;
    at = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60000 + (int64_t)se * 1000 + ms - off;
    return at >= 0 ? at : -1; /* before 1970 by its offset: no reset we could wait for */
}

/* A header's value <v> as a count; -1 when absent or not a number. */
static int64_t header_count(struct bsc_str v)
{
    unsigned long long n;

    if (!bsc_str_to_u64(bsc_str_trim(v), &n) || n > (unsigned long long)INT64_MAX)
        return -1;
    return (int64_t)n;
}

static void rl_clear(struct rl_headers *out)
{
    out->remaining_requests = out->remaining_tokens = -1;
    out->reset_requests_ms = out->reset_tokens_ms = -1;
}

void rl_read_openai(const struct prov_err_input *in, struct rl_headers *out)
{
    static const char *const names[] = {
        "x-ratelimit-remaining-requests", "x-ratelimit-remaining-tokens",
        "x-ratelimit-reset-requests", "x-ratelimit-reset-tokens",
    };
    struct bsc_str v[BSC_ARRAY_LEN(names)];

    rl_clear(out);
    if (!in->header)
        return;
    prov_err_headers(in, names, BSC_ARRAY_LEN(names), v);
    /* an absent header reads as -1 (rl_clear's), which its parser would say too: most
     * answers carry none of the four */
    if (v[0].p)
        out->remaining_requests = header_count(v[0]);
    if (v[1].p)
        out->remaining_tokens = header_count(v[1]);
    if (v[2].p)
        out->reset_requests_ms = rl_parse_duration_ms(v[2]);
    if (v[3].p)
        out->reset_tokens_ms = rl_parse_duration_ms(v[3]);
}

/* The wait until the RFC 3339 time <v>: 0 when past, -1 when none. */
static int64_t header_reset(const struct prov_err_input *in, struct bsc_str v)
{
    int64_t at = rl_parse_rfc3339_ms(v);

    if (at < 0)
        return -1;
    return (uint64_t)at > in->now_wall_ms ? at - (int64_t)in->now_wall_ms : 0;
}

void rl_read_anthropic(const struct prov_err_input *in, struct rl_headers *out)
{
    static const char *const names[] = {
        "anthropic-ratelimit-requests-remaining", "anthropic-ratelimit-tokens-remaining",
        "anthropic-ratelimit-requests-reset", "anthropic-ratelimit-tokens-reset",
    };
    struct bsc_str v[BSC_ARRAY_LEN(names)];

    rl_clear(out);
    if (!in->header)
        return;
    prov_err_headers(in, names, BSC_ARRAY_LEN(names), v);
    out->remaining_requests = header_count(v[0]);
    out->remaining_tokens = header_count(v[1]);
    out->reset_requests_ms = header_reset(in, v[2]);
    out->reset_tokens_ms = header_reset(in, v[3]);
}

/* The rest one window asks for: its reset when nothing is left, else 0. */
static int64_t window_rest(int64_t remaining, int64_t reset_ms)
{
    if (remaining != 0)
        return 0;
    return reset_ms >= 0 ? reset_ms : 1000;
}

int64_t rl_exhausted_ms(const struct rl_headers *h)
{
    int64_t a = window_rest(h->remaining_requests, h->reset_requests_ms);
    int64_t b = window_rest(h->remaining_tokens, h->reset_tokens_ms);
    int64_t rest = a > b ? a : b;

    return rest > RL_MAX_RESET_MS ? RL_MAX_RESET_MS : rest;
}
