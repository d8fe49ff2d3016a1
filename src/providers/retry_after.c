/* SPDX-License-Identifier: MIT */
/* retry_after.c -- parsers for the provider's retry hints: retry-after-ms, Retry-After
 * (delta-seconds or IMF-fixdate), Go-style durations and "try again in Ns" message text.
 * Numbers are parsed as exact decimals in integer nanoseconds (no floating point), so
 * "1.1" seconds is 1100 ms and not 1101, and a hint is rounded up, never shortened.
 * Does not choose the delay (policy/retry.c does); see docs/internals/taxonomy.md. */
#include "providers/retry_after.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/compat.h"
#include "core/str.h"

#define NS_PER_MS 1000000ull
#define CAP_NS ((uint64_t)PROV_RETRY_AFTER_CAP_MS * NS_PER_MS)
/* Fraction digits kept exactly; any further non-zero digit rounds up by one unit of the
 * last kept digit. Six keeps numerator * unit_ns below 2^64 for units up to an hour. */
#define FRAC_DIGITS 6
/* A header value longer than this is not a number anyone meant. */
#define MAX_NUMBER_CHARS 40

/* A non-negative decimal as written: integer part (saturated) and fraction digits. */
struct decimal {
    uint64_t ip;
    bool ip_overflow;
    uint64_t frac;      /* the first FRAC_DIGITS fraction digits, right-padded with zeros */
    bool frac_rest;     /* a non-zero digit beyond FRAC_DIGITS */
};

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Parses "digits[.digits]" or ".digits" at the start of <s>. Returns the bytes consumed,
 * 0 when there is no number there. */
static size_t parse_decimal(struct bsc_str s, struct decimal *d)
{
    size_t i = 0, nint = 0, nfrac = 0;

    *d = (struct decimal){0};
    while (i < s.len && is_digit(s.p[i])) {
        unsigned dig = (unsigned)(s.p[i] - '0');

        if (d->ip > (UINT64_MAX - dig) / 10)
            d->ip_overflow = true;
        else
            d->ip = d->ip * 10 + dig;
        i++;
        nint++;
    }
    if (i < s.len && s.p[i] == '.') {
        size_t dot = i++;

        while (i < s.len && is_digit(s.p[i])) {
            unsigned dig = (unsigned)(s.p[i] - '0');

            if (nfrac < FRAC_DIGITS)
                d->frac = d->frac * 10 + dig;
            else if (dig)
                d->frac_rest = true;
            i++;
            nfrac++;
        }
        if (nfrac == 0)
            i = dot; /* "5." is "5" followed by a dot, not a fraction */
    }
    if (nint == 0 && nfrac == 0)
        return 0;
    for (size_t k = nfrac; k < FRAC_DIGITS; k++)
        d->frac *= 10;
    return i;
}

/* <d> times <unit_ns>, rounded up, saturated just above CAP_NS. */
static uint64_t decimal_to_ns(const struct decimal *d, uint64_t unit_ns)
{
    uint64_t denom = 1000000; /* 10^FRAC_DIGITS */
    uint64_t frac = d->frac + (d->frac_rest ? 1 : 0);
    uint64_t ns;

    if (d->ip_overflow || d->ip > CAP_NS / unit_ns)
        return CAP_NS + 1;
    ns = d->ip * unit_ns;
    ns += (frac * unit_ns + denom - 1) / denom;
    return ns;
}

/* Nanoseconds to milliseconds, rounded up and capped. */
static int64_t ns_to_ms(uint64_t ns)
{
    if (ns >= CAP_NS)
        return PROV_RETRY_AFTER_CAP_MS;
    return (int64_t)((ns + NS_PER_MS - 1) / NS_PER_MS);
}

/* A whole-string non-negative number of <unit_ns>, blanks around it allowed; -1 if not. */
static int64_t parse_number_ms(struct bsc_str s, uint64_t unit_ns)
{
    struct decimal d;
    size_t used;

    s = bsc_str_trim(s);
    if (s.len == 0 || s.len > MAX_NUMBER_CHARS)
        return -1;
    used = parse_decimal(s, &d);
    if (used == 0 || used != s.len)
        return -1;
    return ns_to_ms(decimal_to_ns(&d, unit_ns));
}

/* ---- HTTP-date --------------------------------------------------------------------------- */

static bool two_digits(const char *p, unsigned *out)
{
    if (!is_digit(p[0]) || !is_digit(p[1]))
        return false;
    *out = (unsigned)(p[0] - '0') * 10 + (unsigned)(p[1] - '0');
    return true;
}

static bool is_leap(unsigned y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Days from 1970-01-01 to <y>-<m>-<d> (proleptic Gregorian, y >= 1). */
static int64_t days_since_epoch(unsigned y, unsigned m, unsigned d)
{
    static const unsigned before_month[12] = {0,   31,  59,  90,  120, 151,
                                              181, 212, 243, 273, 304, 334};
    int64_t py = (int64_t)y - 1; /* whole years before <y> */
    int64_t leaps = py / 4 - py / 100 + py / 400 - (1969 / 4 - 1969 / 100 + 1969 / 400);
    int64_t days = ((int64_t)y - 1970) * 365 + leaps;

    days += before_month[m - 1] + (m > 2 && is_leap(y) ? 1 : 0);
    return days + (int64_t)d - 1;
}

static int month_index(const char *p)
{
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

    for (int i = 0; i < 12; i++) {
        if (memcmp(p, months[i], 3) == 0)
            return i;
    }
    return -1;
}

static bool is_weekday(const char *p)
{
    static const char days[7][4] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};

    for (int i = 0; i < 7; i++) {
        if (memcmp(p, days[i], 3) == 0)
            return true;
    }
    return false;
}

bool prov_parse_http_date(struct bsc_str s, int64_t *out_ms)
{
    static const unsigned mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    unsigned day, yhi, ylo, year, hh, mm, ss;
    int mon;
    const char *p;

    s = bsc_str_trim(s);
    /* "Sun, 06 Nov 1994 08:49:37 GMT": fixed width, fixed separators. */
    if (s.len != 29)
        return false;
    p = s.p;
    if (!is_weekday(p) || p[3] != ',' || p[4] != ' ' || p[7] != ' ' || p[11] != ' ' ||
        p[16] != ' ' || p[19] != ':' || p[22] != ':' || memcmp(p + 25, " GMT", 4) != 0)
        return false;
    mon = month_index(p + 8);
    if (mon < 0 || !two_digits(p + 5, &day) || !two_digits(p + 12, &yhi) ||
        !two_digits(p + 14, &ylo) || !two_digits(p + 17, &hh) || !two_digits(p + 20, &mm) ||
        !two_digits(p + 23, &ss))
        return false;
    year = yhi * 100 + ylo;
    if (year == 0 || day == 0 || hh > 23 || mm > 59 || ss > 60)
        return false;
    if (day > mdays[mon] + (mon == 1 && is_leap(year) ? 1u : 0u))
        return false;
    *out_ms = ((days_since_epoch(year, (unsigned)mon + 1, day) * 24 + hh) * 60 + mm) * 60000 +
              (int64_t)ss * 1000;
    return true;
}

int64_t prov_parse_retry_after(struct bsc_str retry_after, struct bsc_str retry_after_ms,
                               uint64_t now_wall_ms)
{
    int64_t ms, date_ms;

    if (retry_after_ms.len) {
        ms = parse_number_ms(retry_after_ms, NS_PER_MS);
        if (ms >= 0)
            return ms;
    }
    if (retry_after.len == 0)
        return -1;
    ms = parse_number_ms(retry_after, 1000 * NS_PER_MS);
    if (ms >= 0)
        return ms;
    if (!prov_parse_http_date(retry_after, &date_ms))
        return -1;
    if (date_ms <= 0 || (uint64_t)date_ms <= now_wall_ms)
        return 0;
    ms = date_ms - (int64_t)now_wall_ms;
    return ms > PROV_RETRY_AFTER_CAP_MS ? PROV_RETRY_AFTER_CAP_MS : ms;
}

/* ---- durations in text ------------------------------------------------------------------- */

struct unit {
    const char *name;
    uint64_t ns;
};

/* Go's units plus the words messages use. */
static const struct unit units[] = {
    {"ns", 1},
    {"us", 1000},
    {"\xc2\xb5s", 1000}, /* µs */
    {"ms", NS_PER_MS},
    {"millisecond", NS_PER_MS},
    {"milliseconds", NS_PER_MS},
    {"s", 1000 * NS_PER_MS},
    {"sec", 1000 * NS_PER_MS},
    {"secs", 1000 * NS_PER_MS},
    {"second", 1000 * NS_PER_MS},
    {"seconds", 1000 * NS_PER_MS},
    {"m", 60000 * NS_PER_MS},
    {"min", 60000 * NS_PER_MS},
    {"mins", 60000 * NS_PER_MS},
    {"minute", 60000 * NS_PER_MS},
    {"minutes", 60000 * NS_PER_MS},
    {"h", 3600000 * NS_PER_MS},
    {"hr", 3600000 * NS_PER_MS},
    {"hour", 3600000 * NS_PER_MS},
    {"hours", 3600000 * NS_PER_MS},
};

/* The unit whose name is exactly <w> (case-insensitive); NULL when none. */
static const struct unit *find_unit(struct bsc_str w, bool words)
{
    for (size_t i = 0; i < BSC_ARRAY_LEN(units); i++) {
        struct bsc_str n = bsc_str_cstr(units[i].name);

        if (!words && n.len > 2 && n.p[0] != '\xc2')
            continue; /* Go durations use only the short units */
        if (bsc_str_ieq(w, n))
            return &units[i];
    }
    return NULL;
}

static bool is_unit_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '\xc2' || c == '\xb5';
}

/* Parses "<number>[ ]<unit>" components back to back ("1m30s", "5 seconds") at the start
 * of <s>; <words> allows long unit names and one blank before the unit. Returns the bytes
 * consumed (0 when not even one component parsed) and the total in *<ns>. */
static size_t parse_components(struct bsc_str s, bool words, uint64_t *ns)
{
    size_t i = 0, done = 0;

    *ns = 0;
    while (i < s.len && (is_digit(s.p[i]) || s.p[i] == '.')) {
        struct decimal d;
        size_t used = parse_decimal(bsc_str_make(s.p + i, s.len - i), &d), u0;
        const struct unit *u;

        if (used == 0)
            break;
        i += used;
        if (words && i < s.len && s.p[i] == ' ')
            i++;
        u0 = i;
        while (i < s.len && is_unit_char(s.p[i]))
            i++;
        u = find_unit(bsc_str_make(s.p + u0, i - u0), words);
        if (!u)
            break;
        *ns += decimal_to_ns(&d, u->ns);
        if (*ns > CAP_NS)
            *ns = CAP_NS + 1;
        done = i;
    }
    return done;
}

int64_t prov_parse_duration(struct bsc_str s)
{
    uint64_t ns;

    s = bsc_str_trim(s);
    if (s.len == 0 || s.len > MAX_NUMBER_CHARS)
        return -1;
    if (s.len == 1 && s.p[0] == '0')
        return 0; /* Go writes a zero duration as "0" */
    if (parse_components(s, false, &ns) != s.len)
        return -1;
    return ns_to_ms(ns);
}

/* Where <needle> (lower case) first occurs in <hay>, ASCII case-insensitively, at or after
 * <from>; hay.len when absent. */
static size_t find_icase(struct bsc_str hay, size_t from, const char *needle)
{
    size_t n = strlen(needle);

    for (size_t i = from; i + n <= hay.len; i++) {
        size_t k = 0;

        while (k < n && lower(hay.p[i + k]) == needle[k])
            k++;
        if (k == n)
            return i;
    }
    return hay.len;
}

int64_t prov_parse_retry_hint_text(struct bsc_str message)
{
    static const char *const needles[] = {"try again in ", "retry in ", "retry after "};

    for (size_t k = 0; k < BSC_ARRAY_LEN(needles); k++) {
        size_t at = 0, nlen = strlen(needles[k]);

        while ((at = find_icase(message, at, needles[k])) < message.len) {
            struct bsc_str rest = bsc_str_make(message.p + at + nlen, message.len - at - nlen);
            uint64_t ns;

            if (parse_components(rest, true, &ns) > 0)
                return ns_to_ms(ns);
            at++;
        }
    }
    return -1;
}
