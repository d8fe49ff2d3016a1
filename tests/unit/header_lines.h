/* SPDX-License-Identifier: MIT */
/* header_lines.h -- reading the header lines an adapter writes into prov_http.headers
 * ("Name: value" lines, each NUL-terminated), and handing response headers to an adapter's
 * classify (prov_err_input.header), for the adapter tests. */
#ifndef BSC_TEST_HEADER_LINES_H
#define BSC_TEST_HEADER_LINES_H

#include <string.h>
#include <strings.h>

#include "providers/provider.h"
#include "upstream/upstream.h"

/* The header <name>'s value among the NUL-separated lines, or NULL. */
static inline const char *header_value(const struct prov_http *h, const char *name)
{
    size_t nl = strlen(name);

    for (size_t off = 0; off < h->headers.len;) {
        const char *l = h->headers.p + off;

        if (strncasecmp(l, name, nl) == 0 && l[nl] == ':')
            return l + nl + 2;
        off += strlen(l) + 1;
    }
    return NULL;
}

/* Response headers for prov_err_input.header: name/value pairs, each value handed over
 * exactly as written (no trimming); a NULL name ends the list. */
struct test_headers {
    const char *name[4];
    struct bsc_str value[4];
};

/* The accessor over a struct test_headers (<ctx>): first match, case-insensitive. */
static inline struct bsc_str test_header(const void *ctx, const char *name)
{
    const struct test_headers *h = ctx;

    for (size_t i = 0; i < 4 && h->name[i]; i++)
        if (strcasecmp(h->name[i], name) == 0)
            return h->value[i];
    return BSC_STR_NULL;
}

/* Headers Retry-After <ra> and retry-after-ms <ra_ms> (each left out when NULL). */
static inline struct test_headers test_retry_headers(const char *ra, const char *ra_ms)
{
    struct test_headers h = {{NULL}, {BSC_STR_NULL}};
    size_t n = 0;

    if (ra) {
        h.name[n] = "Retry-After";
        h.value[n++] = bsc_str_cstr(ra);
    }
    if (ra_ms) {
        h.name[n] = "retry-after-ms";
        h.value[n++] = bsc_str_cstr(ra_ms);
    }
    return h;
}

/* The accessor over raw response head lines (<ctx>: "Name: value\r\n..." NUL-terminated),
 * looked up as the router looks them up in the head it keeps (up_head_find). */
static inline struct bsc_str test_head_header(const void *ctx, const char *name)
{
    return up_head_find(bsc_str_cstr(ctx), bsc_str_cstr(name));
}

/* The same for several names in one pass (prov_err_input.headers), as the router does; at
 * most 8 names. */
static inline void test_head_headers(const void *ctx, const char *const *names, size_t n,
                                     struct bsc_str *values)
{
    struct bsc_str want[8];

    if (n > 8)
        n = 8;
    for (size_t i = 0; i < n; i++)
        want[i] = bsc_str_cstr(names[i]);
    up_head_find_each(bsc_str_cstr(ctx), want, n, values);
}

#endif
