/* SPDX-License-Identifier: MIT */
/* deliver_note.c -- the client side's records of an answer's end (deliver_note.h). */
#include "router/deliver_note.h"

#include "core/clock.h"
#include "router/internal.h"
#include "router/req_wake.h"

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
        r->d.ttfb_us = bsc_now_us() - r->ident.start_us;
    req_wake_release_sreq(r);
}
