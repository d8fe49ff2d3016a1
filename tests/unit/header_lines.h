/* SPDX-License-Identifier: MIT */
/* header_lines.h -- reading the header lines an adapter writes into prov_http.headers
 * ("Name: value" lines, each NUL-terminated), for the adapter tests. */
#ifndef BSC_TEST_HEADER_LINES_H
#define BSC_TEST_HEADER_LINES_H

#include <string.h>
#include <strings.h>

#include "providers/provider.h"

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

#endif
