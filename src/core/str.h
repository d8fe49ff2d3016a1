/* SPDX-License-Identifier: MIT */
/* str.h -- string slices passed by value (not NUL-terminated unless named _cstr),
 * after h2o's h2o_iovec_t and HAProxy's ist. */
#ifndef BSC_CORE_STR_H
#define BSC_CORE_STR_H

#include "core/compat.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

struct bsc_str {
    const char *p;
    size_t len;
};

#define BSC_STR(lit) ((struct bsc_str){(lit), sizeof(lit) - 1})
#define BSC_STR_NULL ((struct bsc_str){NULL, 0})
/* For printf: printf("%.*s", BSC_STR_FMT(s)). */
#define BSC_STR_FMT(s) (int)(s).len, (s).p

/* The value of the hex digit <c> (either case), or -1. */
static inline int bsc_hex_digit(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static inline struct bsc_str bsc_str_make(const char *p, size_t len)
{
    return (struct bsc_str){p, len};
}

static inline struct bsc_str bsc_str_cstr(const char *s)
{
    return (struct bsc_str){s, s ? strlen(s) : 0};
}

/* A presented secret <given> against <want> (a NUL-terminated key), in time that does not
 * depend on where they differ; an empty or NULL <want> matches nothing. */
bool bsc_str_secret_eq(struct bsc_str given, const char *want);

static inline bool bsc_str_eq(struct bsc_str a, struct bsc_str b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

/* ASCII case-insensitive equality, for header names. */
static inline bool bsc_str_ieq(struct bsc_str a, struct bsc_str b)
{
    return a.len == b.len && (a.len == 0 || strncasecmp(a.p, b.p, a.len) == 0);
}

static inline bool bsc_str_starts(struct bsc_str s, struct bsc_str prefix)
{
    return s.len >= prefix.len && memcmp(s.p, prefix.p, prefix.len) == 0;
}

/* Copies <s> into <dst> (<cap> bytes), cut to cap - 1 bytes and NUL-terminated, like
 * snprintf(dst, cap, "%.*s", ...) at a fraction of its cost on a per-request path.
 * Returns the bytes copied. */
static inline size_t bsc_str_copy(char *dst, size_t cap, struct bsc_str s)
{
    size_t n = s.len < cap ? s.len : cap - 1;

    if (!cap)
        return 0;
    if (n)
        memcpy(dst, s.p, n);
    dst[n] = '\0';
    return n;
}

#define BSC_NUM_TEXT_MAX 24 /* the digits of a uint64_t in base 8 or more */

/* Writes <v> in <base> (8 to 16) at the end of <tmp>, not terminated; returns where its
 * digits start (they end at tmp + BSC_NUM_TEXT_MAX). What snprintf("%llu") gives, without
 * its cost on a per-request path. */
char *bsc_num_text(char tmp[BSC_NUM_TEXT_MAX], unsigned long long v, unsigned base);

/* Strips ASCII spaces and tabs from both ends. */
struct bsc_str bsc_str_trim(struct bsc_str s);

/* Parses a decimal unsigned integer that fills all of <s>. Returns false on empty
 * input, a non-digit, or overflow of UINT64_MAX; *<out> is untouched then. */
bool bsc_str_to_u64(struct bsc_str s, unsigned long long *out);

/* Returns a malloc'd NUL-terminated copy of <s> (caller owns), or NULL on ENOMEM. */
char *bsc_str_dup(struct bsc_str s);

/* Where <needle> first occurs in <hay>, or NULL (also for an empty needle, unlike memmem):
 * sixteen candidate positions at a time where SSE2 is there, filtered on the needle's two
 * rarest bytes in chat text, since glibc's memmem walks a short needle through a chat body
 * at a few instructions a byte. */
const char *bsc_str_find(struct bsc_str hay, struct bsc_str needle);

#endif
