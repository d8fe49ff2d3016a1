/* SPDX-License-Identifier: MIT */
/* line_rules.h -- the wire rules of an upstream response head, line by line, for the libcurl
 * side (transfer.c), which sees each head line as libcurl hands it: CRLF line endings, no
 * obs-fold, Transfer-Encoding only "chunked" and once, no 101 (we never ask to upgrade), at
 * most H1_INTERIM_MAX interim heads. The builtin client checks the same rules on the raw
 * bytes (h1_wire.c). Pure. See docs/internals/upstream.md ("Out of step"). */
#ifndef BSC_UPSTREAM_LINE_RULES_H
#define BSC_UPSTREAM_LINE_RULES_H

#include <stdbool.h>
#include <stddef.h>

/* What the rules remember across the lines of one response (interim heads included). */
struct up_line_rules {
    unsigned interim;  /* 1xx status lines seen */
    unsigned te_lines; /* Transfer-Encoding lines of the current head */
};

/* Checks one head line of <len> bytes at <p>, its line ending included (a status line, a
 * header line, or the empty line that ends a head). Returns NULL when it keeps the rules,
 * else the static text of the rule it breaks. <st> starts zeroed. */
const char *up__line_check(struct up_line_rules *st, const char *p, size_t len);

#endif
