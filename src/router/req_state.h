/* SPDX-License-Identifier: MIT */
/* req_state.h -- the request's states (one X-macro list), which state may go to which (the
 * transition mask, generated from the same list) and the time spent in each state, for the
 * access log. Pure: request.c's req__goto checks the mask and keeps the times; the unit
 * test walks every pair. Router-private. */
#ifndef BSC_ROUTER_REQ_STATE_H
#define BSC_ROUTER_REQ_STATE_H

#include <stdbool.h>
#include <stdint.h>

/* X(NAME, name, what happens, the states it may go to). DONE is reachable from every
 * state but itself: a client that goes away ends the request wherever it is. */
#define REQ_STATES(X)                                                                     \
    X(ADMIT, admit, "may it start (or, after a failure, be replayed): the admission checks", \
      REQ_TO(PICK) | REQ_TO(REPLY_ERROR) | REQ_TO(DONE))                                   \
    X(PICK, pick, "choose the next target, or decide to stop, after each failure",        \
      REQ_TO(BACKOFF) | REQ_TO(ATTEMPT) | REQ_TO(REPLY_ERROR) | REQ_TO(DONE))              \
    X(BACKOFF, backoff, "wait (backoff or Retry-After) before the next attempt",          \
      REQ_TO(ATTEMPT) | REQ_TO(REPLY_ERROR) | REQ_TO(DONE))                                \
    X(ATTEMPT, attempt, "upstream transfer running until its answer or first event",      \
      REQ_TO(ADMIT) | REQ_TO(RELAY) | REQ_TO(REPLY) | REQ_TO(REPLY_ERROR) | REQ_TO(DONE))  \
    X(RELAY, relay, "committed: streaming to the client; back to ADMIT only to continue", \
      REQ_TO(ADMIT) | REQ_TO(DONE))                                                        \
    X(REPLY, reply, "a complete upstream answer is written to the client", REQ_TO(DONE))  \
    X(REPLY_ERROR, reply_error, "write the normalized error or the typed failure",        \
      REQ_TO(DONE))                                                                        \
    X(DONE, done, "log, account, release", 0)

#define REQ_TO(s) (1u << REQ_ST_##s)

enum req_state {
#define X(NAME, name, doc, to) REQ_ST_##NAME,
    REQ_STATES(X)
#undef X
        REQ_ST_COUNT
};

_Static_assert(REQ_ST_COUNT <= 32, "the transition mask is a uint32_t per state");

/* "pick", "attempt", ... as in the access log. */
const char *req_state_name(enum req_state s);
/* Whether the mask allows <from> -> <to>. */
bool req_state_may_go(enum req_state from, enum req_state to);

/* Where a request's time went: the state it is in since <entered_us>, and the time spent in
 * each state it has left (a state visited twice adds up). */
struct req_times {
    uint64_t entered_us;
    uint32_t visited; /* bit per state entered */
    uint64_t spent_us[REQ_ST_COUNT];
};

/* The request starts in <s> at <now_us>. */
void req_times_start(struct req_times *t, enum req_state s, uint64_t now_us);
/* It leaves <from> for <to> at <now_us>. */
void req_times_move(struct req_times *t, enum req_state from, enum req_state to,
                    uint64_t now_us);

#endif
