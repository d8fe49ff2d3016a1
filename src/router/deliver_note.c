/* SPDX-License-Identifier: MIT */
/* deliver_note.c -- the client side's records of an answer's end (deliver_note.h). */
#include "router/deliver_note.h"

#include "core/clock.h"
#include "core/str.h"
#include "policy/attempt.h"
#include "router/overhead.h"
#include "router/internal.h"
#include "router/req_wake.h"

_Static_assert(sizeof(((struct downstream *)0)->overhead_ms) >= REQ_OVERHEAD_MS_TEXT_MAX,
               "x-bascule-overhead-ms's text fits");

void deliver_set_termination(struct request *r, const char *code)
{
    r->d.termination = code;
}

void deliver_client_gone(struct request *r)
{
    r->d.termination = "client_abort";
    r->d.status = r->d.status ? r->d.status : 499;
}

void deliver_whole_begin(struct request *r, int status, const char *termination)
{
    r->d.status = status;
    r->d.termination = termination;
}

void deliver_whole_sent(struct request *r, size_t bytes, bool timed)
{
    r->d.bytes_out = bytes;
    if (timed)
        r->d.ttfb_us = req__now_us_fresh(r) - r->ident.start_us;
    req_wake_release_sreq(r);
}

size_t deliver_route_headers(struct request *r, struct srv_header *h,
                             char buf[BSC_NUM_TEXT_MAX])
{
    size_t n = 0;
    char *attempts = bsc_num_text(buf, r->att.n, 10);
    h[n++] = (struct srv_header){BSC_STR("x-bascule-route"), bsc_str_cstr(r->route->id)};
    if (r->cur.target)
        h[n++] = (struct srv_header){BSC_STR("x-bascule-target"), bsc_str_cstr(r->cur.target->id)};
    h[n++] = (struct srv_header){BSC_STR("x-bascule-attempts"),
                                 bsc_str_make(attempts, (size_t)(buf + BSC_NUM_TEXT_MAX - attempts))};
    h[n++] = (struct srv_header){
        BSC_STR("x-bascule-workflow"),
        bsc_str_cstr(attempt_workflow_name(
            r->att.n ? r->att.recs[r->att.n - 1].workflow : ATTEMPT_WF_PRIMARY))};
    if (r->notes.recovery_reason &&
        (r->att.n > 1 || (r->att.n && r->att.recs[0].workflow != ATTEMPT_WF_PRIMARY)))
        h[n++] = (struct srv_header){BSC_STR("x-bascule-recovery-reason"),
                                     bsc_str_cstr(r->notes.recovery_reason)};
    if (r->trim.dropped > 0)
        h[n++] = (struct srv_header){BSC_STR("x-bascule-trimmed-messages"),
                                     bsc_str_cstr(r->trim.count_text)};
    if (r->err.limited_by)
        h[n++] = (struct srv_header){BSC_STR("x-bascule-limited-by"),
                                     bsc_str_cstr(r->err.limited_by)};
    r->d.overhead_us = req_overhead_us(r->ident.start_us, &r->att, r->lim.queued_ms,
                                     req__now_us_fresh(r)); /* the run's work counts */
    r->d.overhead_known = true;
    req_overhead_ms_text(r->d.overhead_ms, r->d.overhead_us);
    h[n++] = (struct srv_header){BSC_STR("x-bascule-overhead-ms"),
                                 bsc_str_cstr(r->d.overhead_ms)};
    return n + reqcache_header(&r->c, h + n);
}
