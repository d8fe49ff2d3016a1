/* SPDX-License-Identifier: MIT */
/* checks.c -- the output checks of a route (checks.h): compiled at load, evaluated on each
 * answer in a fixed order (tool calls, length, forbidden, required) so the first failure
 * reported is deterministic. Messages name the check and the pattern as configured, never
 * a piece of the answer: they reach logs and the client's error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/checks.h"
#include "contract/regex.h"

void chk_init(struct chk_set *s)
{
    memset(s, 0, sizeof(*s));
    s->active = true;
    s->max_chars = CHK_NO_LIMIT;
    s->max_tool_calls = CHK_NO_LIMIT;
}

enum bsc_err chk_add_pattern(struct chk_set *s, bool required, const char *pattern, char *why,
                             size_t whylen)
{
    struct chk_pattern *list = required ? s->required : s->forbidden;
    size_t *n = required ? &s->n_required : &s->n_forbidden;
    const char *p = pattern;
    unsigned flags = 0;
    enum bsc_err err;

    if (*n == CHK_MAX_PATTERNS) {
        snprintf(why, whylen, "more than %d patterns", CHK_MAX_PATTERNS);
        return BSC_ELIMIT;
    }
    /* (?i) is the one inline flag, as in route selection: ECMA-262 has none. */
    if (strncmp(p, "(?i)", 4) == 0) {
        p += 4;
        flags |= JS_REGEX_ICASE;
    }
    list[*n].src = strdup(pattern);
    if (!list[*n].src)
        return BSC_ENOMEM;
    err = js_regex_compile(p, strlen(p), flags, &list[*n].re, why, whylen);
    if (err) {
        free(list[*n].src);
        list[*n].src = NULL;
        return err;
    }
    (*n)++;
    return BSC_OK;
}

static void patterns_free(struct chk_pattern *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(list[i].src);
        js_regex_free(list[i].re);
    }
}

void chk_cleanup(struct chk_set *s)
{
    patterns_free(s->forbidden, s->n_forbidden);
    patterns_free(s->required, s->n_required);
    memset(s, 0, sizeof(*s));
}

/* Code points of <t>: every byte that does not continue a sequence. Ill-formed bytes count
 * one each, which is what a client decoding with replacement would see. */
static size_t count_chars(struct bsc_str t)
{
    size_t n = 0;

    for (size_t i = 0; i < t.len; i++)
        n += ((unsigned char)t.p[i] & 0xc0) != 0x80;
    return n;
}

/* 1: matches, 0: does not, -1: the budget ran out (or memory did). */
static int search(const struct chk_pattern *pat, struct bsc_str t, uint64_t *budget)
{
    int m = js_regex_search(pat->re, t.p ? t.p : "", t.len, budget);

    return m < 0 ? -1 : m;
}

static bool check_lengths(const struct chk_set *s, struct bsc_str text, size_t calls, char *why,
                          size_t whylen)
{
    size_t chars;

    if (s->max_tool_calls != CHK_NO_LIMIT && calls > s->max_tool_calls) {
        snprintf(why, whylen, "check max_tool_calls failed: %zu tool calls, at most %u allowed",
                 calls, s->max_tool_calls);
        return false;
    }
    if (s->max_chars == CHK_NO_LIMIT && s->min_chars == 0)
        return true;
    chars = count_chars(text);
    if (s->max_chars != CHK_NO_LIMIT && chars > s->max_chars) {
        snprintf(why, whylen, "check max_chars failed: %zu characters, at most %u allowed",
                 chars, s->max_chars);
        return false;
    }
    if (chars < s->min_chars) {
        snprintf(why, whylen, "check min_chars failed: %zu characters, at least %u required",
                 chars, s->min_chars);
        return false;
    }
    return true;
}

static bool check_patterns(const struct chk_set *s, struct bsc_str text, uint64_t *budget,
                           char *why, size_t whylen)
{
    for (size_t i = 0; i < s->n_forbidden; i++) {
        int m = search(&s->forbidden[i], text, budget);

        if (m != 0) {
            snprintf(why, whylen, "check forbidden failed: %s '%.120s'",
                     m < 0 ? "could not finish searching for" : "the answer matches",
                     s->forbidden[i].src);
            return false;
        }
    }
    for (size_t i = 0; i < s->n_required; i++) {
        int m = search(&s->required[i], text, budget);

        if (m != 1) {
            snprintf(why, whylen, "check required failed: %s '%.120s'",
                     m < 0 ? "could not finish searching for" : "the answer does not match",
                     s->required[i].src);
            return false;
        }
    }
    return true;
}

bool chk_eval(const struct chk_set *s, struct bsc_str text, size_t n_tool_calls,
              uint64_t *budget, char *why, size_t whylen)
{
    if (!s || !s->active)
        return true;
    return check_lengths(s, text, n_tool_calls, why, whylen) &&
           check_patterns(s, text, budget, why, whylen);
}
