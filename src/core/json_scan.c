/* SPDX-License-Identifier: MIT */
/* json_scan.c -- a skip-scanner over JSON text: strings, numbers, literals, nested
 * containers. It trusts nothing (it is bounded and never reads past the end) but it
 * does not validate: callers run it on documents json-c accepted. */
#include "core/json_scan.h"

static size_t skip_ws(const char *p, size_t i, size_t n)
{
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
        i++;
    return i;
}

/* Returns the index just past the string starting at p[i] == '"', or n when unterminated. */
static size_t skip_string(const char *p, size_t i, size_t n)
{
    for (i++; i < n; i++) {
        if (p[i] == '\\')
            i++;
        else if (p[i] == '"')
            return i + 1;
    }
    return n;
}

/* Returns the index just past the value starting at p[i]. */
static size_t skip_value(const char *p, size_t i, size_t n)
{
    size_t depth = 0;

    if (i >= n)
        return n;
    if (p[i] == '"')
        return skip_string(p, i, n);
    if (p[i] != '{' && p[i] != '[') {
        while (i < n && p[i] != ',' && p[i] != '}' && p[i] != ']' && p[i] != ' ' &&
               p[i] != '\n' && p[i] != '\r' && p[i] != '\t')
            i++;
        return i;
    }
    while (i < n) {
        char c = p[i];
        if (c == '"') {
            i = skip_string(p, i, n);
            continue;
        }
        if (c == '{' || c == '[')
            depth++;
        else if (c == '}' || c == ']') {
            if (--depth == 0)
                return i + 1;
        }
        i++;
    }
    return n;
}

bool bsc_json_member_span(struct bsc_str doc, struct bsc_str key, struct bsc_str *value)
{
    const char *p = doc.p;
    size_t n = doc.len, i = skip_ws(p, 0, n);
    bool found = false;

    if (i >= n || p[i] != '{')
        return false;
    i++;
    if (skip_ws(p, i, n) < n && p[skip_ws(p, i, n)] == '}')
        return false;
    for (;;) {
        size_t kstart, kend, vstart, vend;

        i = skip_ws(p, i, n);
        if (i >= n || p[i] != '"')
            return false;
        kstart = i + 1;
        kend = skip_string(p, i, n);
        if (kend >= n)
            return false;
        i = skip_ws(p, kend, n);
        if (i >= n || p[i] != ':')
            return false;
        vstart = skip_ws(p, i + 1, n);
        vend = skip_value(p, vstart, n);
        if (vend > n || vend == vstart)
            return false;
        if (kend - 1 - kstart == key.len && memcmp(p + kstart, key.p, key.len) == 0) {
            if (found)
                return false; /* repeated: parsers disagree on which one wins */
            *value = bsc_str_make(p + vstart, vend - vstart);
            found = true;
        }
        i = skip_ws(p, vend, n);
        if (i < n && p[i] == '}')
            return found;
        if (i >= n || p[i] != ',')
            return false;
        i++;
    }
}
