/* SPDX-License-Identifier: MIT */
/* arrivals.c -- a growing array of arrival times per model (GET /_sim/arrivals).
 * See docs/internals/sim.md. */
#include "arrivals.h"

#include "core/compat.h"

void sim_arrivals_add(struct sim_arrivals *a, uint64_t now_ms)
{
    if (a->count == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 1024;
        uint64_t *ms;

        if (cap > SIM_ARRIVALS_MAX)
            cap = SIM_ARRIVALS_MAX;
        ms = cap > a->cap ? realloc(a->ms, cap * sizeof(*ms)) : NULL;
        if (!ms) {
            a->dropped++;
            return;
        }
        a->ms = ms;
        a->cap = cap;
    }
    a->ms[a->count++] = now_ms;
}

void sim_arrivals_cleanup(struct sim_arrivals *a)
{
    BSC_FREE(a->ms);
    a->count = 0;
    a->cap = 0;
    a->dropped = 0;
}

enum bsc_err sim_arrivals_json(const struct sim_arrivals *a, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_append_cstr(out, "\"arrivals_ms\":[");

    for (size_t i = 0; i < a->count && !err; i++) {
        if (i)
            err = bsc_buf_append_char(out, ',');
        if (!err)
            err = bsc_buf_append_u64(out, a->ms[i]);
    }
    if (!err)
        err = bsc_buf_appendf(out, "],\"dropped\":%llu", (unsigned long long)a->dropped);
    return err;
}
