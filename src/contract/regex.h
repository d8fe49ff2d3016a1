/* SPDX-License-Identifier: MIT */
/* regex.h -- the linear-time regular expressions of the schema validator (jsonschema_regex.c),
 * for other users than JSON Schema: an ECMA-262 subset compiled to a Thompson automaton and
 * searched as a state-set simulation, so a search costs at most (subject length x states)
 * whatever the pattern. Route selection (config/route_select.c, policy/select.c) compiles
 * its last_user_matches patterns with it. Dialect and limits: docs/internals/jsonschema.md §5. */
#ifndef BSC_CONTRACT_REGEX_H
#define BSC_CONTRACT_REGEX_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

struct js_regex; /* opaque, immutable once compiled: may be shared by threads */

/* Flags of js_regex_compile. */
enum js_regex_flag {
    JS_REGEX_ICASE = 1u << 0 /* letters match either case (ASCII, Latin-1, Greek, Cyrillic) */
};

/* Compiles the pattern <p>/<len> (UTF-8) with <flags> (enum js_regex_flag bits). Returns
 * BSC_OK with *<out> owned by the caller; BSC_EINVAL with a reason in <why> for bad syntax or
 * an unsupported construct; BSC_ELIMIT past JS_MAX_PATTERN_* (jsonschema.h); BSC_ENOMEM. */
enum bsc_err js_regex_compile(const char *p, size_t len, unsigned flags, struct js_regex **out,
                              char *why, size_t whylen);
/* Searches <s>/<len> for a match anywhere (unanchored, as ECMA-262 RegExp.test). Returns 1 on a
 * match, 0 on none, -BSC_ELIMIT when *<budget> ran out, -BSC_ENOMEM. Each automaton state
 * visited costs one unit of *<budget>. Reentrant; never calls back. */
int js_regex_search(const struct js_regex *re, const char *s, size_t len, uint64_t *budget);
/* NULL is fine. */
void js_regex_free(struct js_regex *re);
/* The number of automaton states of <re> (its memory is about 12 bytes each). */
size_t js_regex_states(const struct js_regex *re);

#endif
