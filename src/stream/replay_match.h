/* SPDX-License-Identifier: MIT */
/* replay_match.h -- replay and match (docs/internals/streaming.md §6): a stream broken after
 * the commit point is continued from a fresh answer to the same request only when that answer
 * begins with exactly the text the client already has. The matcher is fed the new answer's
 * text piece by piece, split anywhere (inside a multi-byte character too), holds it while it
 * still agrees with what was sent, and says where the new text starts once it covers it.
 * Pure: byte comparison only, no allocation, no globals. */
#ifndef BSC_STREAM_REPLAY_MATCH_H
#define BSC_STREAM_REPLAY_MATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "core/str.h"

enum replay_state {
    REPLAY_HOLDING = 0, /* agrees so far, but does not cover what was sent yet */
    REPLAY_PASSING,     /* covered exactly: everything from here on is new */
    REPLAY_DIVERGED,    /* said something else: none of it may reach the client */
};

struct replay_match {
    struct bsc_str sent; /* borrowed: the text the client already has */
    size_t seen;         /* bytes of the new answer matched so far */
    enum replay_state state;
};

/* Starts matching against <sent> (borrowed; must outlive the matcher). An empty <sent> is
 * covered at once. */
void replay_match_init(struct replay_match *m, struct bsc_str sent);

/* Feeds the next piece of the new answer's text. Returns the state after it; when it is
 * REPLAY_PASSING, *<pass_from> is the offset in <piece> where the new text begins (0 once
 * passing already; <piece>.len when the piece only completed the cover). DIVERGED is final. */
enum replay_state replay_match_feed(struct replay_match *m, struct bsc_str piece,
                                    size_t *pass_from);

#endif
