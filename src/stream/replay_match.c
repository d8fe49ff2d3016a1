/* SPDX-License-Identifier: MIT */
/* replay_match.c -- see replay_match.h. */
#include "stream/replay_match.h"

#include <string.h>

void replay_match_init(struct replay_match *m, struct bsc_str sent)
{
    m->sent = sent;
    m->seen = 0;
    m->state = sent.len ? REPLAY_HOLDING : REPLAY_PASSING;
}

enum replay_state replay_match_feed(struct replay_match *m, struct bsc_str piece, size_t *pass_from)
{
    size_t want, n;

    *pass_from = 0;
    if (m->state != REPLAY_HOLDING)
        return m->state;
    want = m->sent.len - m->seen;
    n = piece.len < want ? piece.len : want;
    if (n && memcmp(piece.p, m->sent.p + m->seen, n) != 0) {
        m->state = REPLAY_DIVERGED;
        return m->state;
    }
    m->seen += n;
    if (m->seen == m->sent.len) {
        m->state = REPLAY_PASSING;
        *pass_from = n;
    }
    return m->state;
}
