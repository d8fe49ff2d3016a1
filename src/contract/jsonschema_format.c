/* SPDX-License-Identifier: MIT */
/* jsonschema_format.c -- the "format" values the contract asserts: date-time, date and time
 * (RFC 3339 section 5.6), uuid (RFC 4122 textual form), ipv4 (dotted quad, no leading zeros)
 * and ipv6 (RFC 4291 textual form, via inet_pton). These have one unambiguous grammar, so a
 * provider that claims structured outputs can be held to them. Every other format (email,
 * hostname, uri, duration, ...) stays an annotation, as JSON Schema 2020-12 makes all formats by
 * default. See docs/internals/jsonschema.md. */
#include <arpa/inet.h>
#include <stdbool.h>
#include <string.h>

#include "core/compat.h"
#include "contract/internal.h"

static const char *const names[JS__FMT_COUNT] = {
    [JS__FMT_NONE] = "", [JS__FMT_DATE_TIME] = "date-time", [JS__FMT_DATE] = "date",
    [JS__FMT_TIME] = "time", [JS__FMT_UUID] = "uuid",       [JS__FMT_IPV4] = "ipv4",
    [JS__FMT_IPV6] = "ipv6",
};

enum js__format js__format_lookup(const char *name)
{
    for (int f = JS__FMT_NONE + 1; f < JS__FMT_COUNT; f++)
        if (strcmp(name, names[f]) == 0)
            return (enum js__format)f;
    return JS__FMT_NONE;
}

const char *js__format_name(enum js__format f)
{
    return f < JS__FMT_COUNT ? names[f] : "";
}

/* Reads exactly <n> decimal digits at *<p> (bounded by <end>) into *<v>. */
static bool num(const char **p, const char *end, int n, int *v)
{
    *v = 0;
    if (end - *p < n)
        return false;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];

        if (c < '0' || c > '9')
            return false;
        *v = *v * 10 + (c - '0');
    }
    *p += n;
    return true;
}

static bool lit(const char **p, const char *end, char c)
{
    if (*p >= end || **p != c)
        return false;
    (*p)++;
    return true;
}

static bool is_leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* full-date = YYYY-MM-DD with a day that exists in that month. */
static bool full_date(const char **p, const char *end)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y, m, d;

    if (!num(p, end, 4, &y) || !lit(p, end, '-') || !num(p, end, 2, &m) || !lit(p, end, '-') ||
        !num(p, end, 2, &d))
        return false;
    if (m < 1 || m > 12 || d < 1)
        return false;
    return d <= days[m - 1] + (m == 2 && is_leap(y));
}

/* full-time = HH:MM:SS[.frac](Z|+HH:MM|-HH:MM); second 60 is a leap second. */
static bool full_time(const char **p, const char *end)
{
    int h, m, s, oh, om;

    if (!num(p, end, 2, &h) || !lit(p, end, ':') || !num(p, end, 2, &m) || !lit(p, end, ':') ||
        !num(p, end, 2, &s))
        return false;
    if (h > 23 || m > 59 || s > 60)
        return false;
    if (*p < end && **p == '.') {
        const char *start = ++*p;

        while (*p < end && **p >= '0' && **p <= '9')
            (*p)++;
        if (*p == start)
            return false;
    }
    if (*p < end && (**p == 'Z' || **p == 'z')) {
        (*p)++;
        return true;
    }
    if (*p >= end || (**p != '+' && **p != '-'))
        return false;
    (*p)++;
    return num(p, end, 2, &oh) && lit(p, end, ':') && num(p, end, 2, &om) && oh <= 23 &&
           om <= 59;
}

static bool date_time(const char *s, const char *end)
{
    if (!full_date(&s, end))
        return false;
    if (s >= end || (*s != 'T' && *s != 't'))
        return false;
    s++;
    return full_time(&s, end) && s == end;
}

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* 8-4-4-4-12 hex digits. */
static bool uuid(const char *s, size_t len)
{
    if (len != 36)
        return false;
    for (size_t i = 0; i < len; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;

        if (dash ? s[i] != '-' : !is_hex(s[i]))
            return false;
    }
    return true;
}

/* Four decimal octets 0..255 without leading zeros (which some parsers read as octal). */
static bool ipv4(const char *s, size_t len)
{
    const char *p = s, *end = s + len;

    for (int part = 0; part < 4; part++) {
        const char *start;
        int v = 0;

        if (part && !lit(&p, end, '.'))
            return false;
        start = p;
        while (p < end && *p >= '0' && *p <= '9' && p - start < 3)
            v = v * 10 + (*p++ - '0');
        if (p == start || v > 255 || (p - start > 1 && *start == '0'))
            return false;
    }
    return p == end;
}

static bool ipv6(const char *s, size_t len)
{
    char buf[64];
    unsigned char addr[16];

    /* inet_pton needs a C string; 45 bytes is the longest textual IPv6 address. */
    if (len == 0 || len >= sizeof(buf) || memchr(s, '\0', len))
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    return inet_pton(AF_INET6, buf, addr) == 1;
}

bool js__format_check(enum js__format f, const char *s, size_t len)
{
    const char *p = s, *end = s + len;

    switch (f) {
    case JS__FMT_DATE_TIME: return date_time(s, end);
    case JS__FMT_DATE: return full_date(&p, end) && p == end;
    case JS__FMT_TIME: return full_time(&p, end) && p == end;
    case JS__FMT_UUID: return uuid(s, len);
    case JS__FMT_IPV4: return ipv4(s, len);
    case JS__FMT_IPV6: return ipv6(s, len);
    default: return true;
    }
}
