/* SPDX-License-Identifier: MIT */
/* checks.c -- decodes a route's `checks:` map (max_chars, min_chars, forbidden, required,
 * max_tool_calls) into its struct chk_set, compiling the patterns at load so a bad one is a
 * config error with its place, and a request never compiles anything. The evaluator is
 * contract/checks.c; the keys are documented in docs/configuration.md. */
#include <stddef.h>
#include <stdio.h>

#include "config/checks.h"
#include "config/diag.h"
#include "config/internal.h"
#include "config/schema.h"
#include "config/types.h"
#include "contract/checks.h"

static void patterns(struct cfg__v *v, const struct cfg__entry *e, struct chk_set *s,
                     bool required, const char *where)
{
    const struct cfg__node *n = e->value;
    const char *key = required ? "required" : "forbidden";

    if (n->bad || n->is_null)
        return;
    if (n->kind != CFG__SEQ) {
        cfg__bad_type(v, n, where, key, "a list of patterns");
        return;
    }
    for (size_t i = 0; i < n->n; i++) {
        const struct cfg__node *item = n->items[i].value;
        const char *p;
        char why[200];
        enum bsc_err err;

        if (!cfg__get_str(v, item, where, key, &p))
            continue;
        err = chk_add_pattern(s, required, p, why, sizeof(why));
        if (err == BSC_ENOMEM)
            cfg__oom(v);
        else if (err)
            cfg__diag(v->s, false, item->line, item->column, "'%s' in %s: bad pattern: %s", key,
                      where, why);
    }
}

static void forbidden_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                         void *base, const char *where)
{
    (void)f;
    patterns(v, e, base, false, where);
}

static void required_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                        void *base, const char *where)
{
    (void)f;
    patterns(v, e, base, true, where);
}

static const struct cfg__field checks_fields[] = {
    {.name = "max_chars", .type = CFG__F_U32, .off = offsetof(struct chk_set, max_chars),
     .lo = 0, .hi = CHK_NO_LIMIT - 1},
    {.name = "min_chars", .type = CFG__F_U32, .off = offsetof(struct chk_set, min_chars),
     .lo = 0, .hi = CHK_NO_LIMIT - 1},
    {.name = "max_tool_calls", .type = CFG__F_U32,
     .off = offsetof(struct chk_set, max_tool_calls), .lo = 0, .hi = 100000},
    {.name = "forbidden", .type = CFG__F_FN, .fn = forbidden_fn},
    {.name = "required", .type = CFG__F_FN, .fn = required_fn},
};

void cfg__checks_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                    void *base, const char *where)
{
    struct cfg_route *r = base;
    const struct cfg__node *n = e->value;
    char w[400];

    (void)f;
    if (n->bad || n->is_null)
        return;
    if (n->kind != CFG__MAP) {
        cfg__bad_type(v, n, where, "checks", "a map");
        return;
    }
    chk_cleanup(&r->checks); /* the same key written twice: the later one holds */
    chk_init(&r->checks);
    cfg__subwhere(w, sizeof(w), where, "checks");
    cfg__decode_map(v, n, checks_fields, BSC_ARRAY_LEN(checks_fields), &r->checks, w, n->line,
                    n->column);
    if (r->checks.max_chars != CHK_NO_LIMIT && r->checks.min_chars > r->checks.max_chars)
        cfg__diag(v->s, false, n->line, n->column, "%s: min_chars (%u) is more than max_chars "
                  "(%u): no answer could pass", w, r->checks.min_chars, r->checks.max_chars);
}
