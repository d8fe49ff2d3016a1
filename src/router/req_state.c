/* SPDX-License-Identifier: MIT */
/* req_state.c -- the request's state names, the transition mask and the per-state times,
 * all generated from REQ_STATES (req_state.h). A transition the list does not name is a
 * bug, caught in req__goto. */
#include "router/req_state.h"

#include <stddef.h>

static const struct {
    const char *name;
    uint32_t to; /* bit per state it may go to */
} req_state_tab[REQ_ST_COUNT] = {
#define X(NAME, name, doc, next) [REQ_ST_##NAME] = {#name, next},
    REQ_STATES(X)
#undef X
};

const char *req_state_name(enum req_state s)
{
    return (unsigned)s < REQ_ST_COUNT ? req_state_tab[s].name : "?";
}

bool req_state_may_go(enum req_state from, enum req_state to)
{
    if ((unsigned)from >= REQ_ST_COUNT || (unsigned)to >= REQ_ST_COUNT)
        return false;
    return (req_state_tab[from].to & (1u << to)) != 0;
}

void req_times_start(struct req_times *t, enum req_state s, uint64_t now_us)
{
    *t = (struct req_times){.entered_us = now_us, .visited = 1u << s};
}

void req_times_move(struct req_times *t, enum req_state from, enum req_state to,
                    uint64_t now_us)
{
    if (now_us > t->entered_us) /* the clock is monotonic; a same-tick move adds nothing */
        t->spent_us[from] += now_us - t->entered_us;
    t->entered_us = now_us;
    t->visited |= 1u << to;
}
