/* SPDX-License-Identifier: MIT */
/* head_find.c -- a header's value among the raw lines of a kept response head
 * (up_head_find, up_head_find_each in upstream.h): the first line whose first colon ends
 * the name, case aside. The head comes from an untrusted upstream as the client kept it;
 * nothing here trusts its shape beyond its length. docs/internals/upstream.md. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/ascii.h"
#include "core/str.h"
#include "upstream/upstream.h"

/* A line is <name>'s when its first colon ends <name>'s bytes (case aside): as <name> holds
 * no ':' and no line break, that is the line's byte at <name>'s length being ':' and the
 * bytes before it matching. So a line is looked at where that byte is, not searched for its
 * colon: one memchr per line to the next, the name compared only on lines with a colon
 * there. */
static inline bool line_is(const char *p, const char *end, struct bsc_str name)
{
    return (size_t)(end - p) > name.len && p[name.len] == ':' &&
           bsc_ascii_ieq(p, name.p, name.len);
}

static inline bool is_ws(char c)
{
    return c == ' ' || c == '\t';
}

/* The value that starts at <v> and ends with its line, without the CR, trimmed of SP and HT
 * as bsc_str_trim() trims (here inline: it runs for each header found). */
static struct bsc_str line_value(const char *v, const char *end)
{
    const char *eol = memchr(v, '\n', (size_t)(end - v));
    const char *to = eol ? eol : end;

    if (to > v && to[-1] == '\r')
        to--;
    while (v < to && is_ws(*v))
        v++;
    while (to > v && is_ws(to[-1]))
        to--;
    return bsc_str_make(v, (size_t)(to - v));
}

/* The start of the line after the one at <p>, NULL after the last. */
static inline const char *next_line(const char *p, const char *end)
{
    p = memchr(p, '\n', (size_t)(end - p));
    return p ? p + 1 : NULL;
}

struct bsc_str up_head_find(struct bsc_str head, struct bsc_str name)
{
    const char *p = head.p, *end = p ? p + head.len : NULL;

    for (; p && p < end; p = next_line(p, end))
        if (line_is(p, end, name))
            return line_value(p + name.len + 1, end);
    return BSC_STR_NULL;
}

/* The bit of a name's first byte (case aside) in a 64-bit filter: a line whose first byte's
 * bit no wanted name has is none of theirs, looked at once instead of once per name. */
static inline uint64_t first_bit(char c)
{
    return (uint64_t)1 << (bsc_ascii_lower((unsigned char)c) & 63);
}

/* The filter of <names>: every bit when one is empty (it has no first byte to look for). */
static uint64_t first_bits(const struct bsc_str *names, size_t n)
{
    uint64_t bits = 0;

    for (size_t i = 0; i < n; i++)
        bits |= names[i].len ? first_bit(names[i].p[0]) : ~(uint64_t)0;
    return bits;
}

void up_head_find_each(struct bsc_str head, const struct bsc_str *names, size_t n,
                       struct bsc_str *values)
{
    const char *p = head.p, *end = p ? p + head.len : NULL;
    uint64_t firsts = first_bits(names, n);
    size_t left = n;

    for (size_t i = 0; i < n; i++)
        values[i] = BSC_STR_NULL;
    for (; left && p && p < end; p = next_line(p, end)) {
        if (!(firsts & first_bit(p[0])))
            continue;
        for (size_t i = 0; i < n; i++)
            if (!values[i].p && line_is(p, end, names[i])) { /* a value found points into <head> */
                values[i] = line_value(p + names[i].len + 1, end);
                left--;
            }
    }
}
