/* SPDX-License-Identifier: MIT */
/* checks.h -- deterministic output checks of a route (`checks:`): bounds on the length of the
 * answer's text, patterns that must not / must match it, a bound on its tool calls. Patterns
 * are compiled once at config load on the linear-time engine (regex.h) and searched with a
 * budget, so a check costs at most (text length x states) whatever the pattern. Pure: the
 * router decides what a failure means (a contract_failure). docs/internals/checks.md. */
#ifndef BSC_CONTRACT_CHECKS_H
#define BSC_CONTRACT_CHECKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/str.h"

#define CHK_MAX_PATTERNS 32          /* per list (forbidden, required) */
#define CHK_NO_LIMIT     UINT32_MAX  /* max_chars / max_tool_calls not set */
/* Automaton steps all pattern searches of one answer may take (tens of ms at worst). */
#define CHK_MAX_REGEX_STEPS 200000000ull

struct js_regex;

struct chk_pattern {
    char *src;           /* owned: as written, for the failure message */
    struct js_regex *re; /* owned */
};

/* A route's checks; all zero is "no checks". Immutable once loaded: shared by threads. */
struct chk_set {
    bool active;             /* the route has a checks: map */
    uint32_t max_chars;      /* characters (code points) of the text; CHK_NO_LIMIT: none */
    uint32_t min_chars;      /* 0: none */
    uint32_t max_tool_calls; /* CHK_NO_LIMIT: none */
    struct chk_pattern forbidden[CHK_MAX_PATTERNS];
    size_t n_forbidden;
    struct chk_pattern required[CHK_MAX_PATTERNS];
    size_t n_required;
};

/* An active set with no limits: what `checks: {}` means before its keys are read. */
void chk_init(struct chk_set *s);
/* Compiles <pattern> (a leading "(?i)" makes it case-insensitive) onto the forbidden or
 * required list. BSC_EINVAL with <why> for bad syntax, BSC_ELIMIT past CHK_MAX_PATTERNS or
 * the engine's limits, BSC_ENOMEM. */
enum bsc_err chk_add_pattern(struct chk_set *s, bool required, const char *pattern, char *why,
                             size_t whylen);
void chk_cleanup(struct chk_set *s);

/* Evaluates the checks on an answer: its assistant <text> and its number of tool calls. True
 * when every check passes (or <s> is not active); false with the first failed check
 * described in <why> (never quoting the answer). A search that runs out of *<budget> fails
 * its check: an answer the gateway could not check is not presented as checked. */
bool chk_eval(const struct chk_set *s, struct bsc_str text, size_t n_tool_calls,
              uint64_t *budget, char *why, size_t whylen);

#endif
