/* SPDX-License-Identifier: MIT */
/* fuzz-sources: src/stream/replay_match.c */
/* fuzz_replay_match.c -- libFuzzer target for the replay matcher of a continued stream. The
 * input is <k><sent><replay>: its first byte chooses how many of the rest are what was sent,
 * and the replay is fed in pieces whose lengths come from its own bytes. Checks, aborting when
 * one breaks:
 *   - what passes is exactly the replay past <sent> when the replay begins with <sent>, and
 *     nothing at all otherwise (never a byte of a replay that differs or falls short);
 *   - the final state says which: PASSING, DIVERGED (it differs), HOLDING (it agrees but is
 *     shorter), whatever the pieces;
 *   - DIVERGED is final.
 * Built and run by scripts/fuzz. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/str.h"
#include "stream/replay_match.h"

static void die(const char *what)
{
    fprintf(stderr, "fuzz_replay_match: invariant broken: %s\n", what);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    size_t k, off = 0, passed = 0;
    struct bsc_str sent, replay;
    struct replay_match m;
    enum replay_state st = REPLAY_HOLDING, want;
    char *out;

    if (size < 1)
        return 0;
    k = data[0] % size; /* 0 .. size-1 bytes of what was sent */
    sent = bsc_str_make(p + 1, k);
    replay = bsc_str_make(p + 1 + k, size - 1 - k);
    out = malloc(replay.len + 1);
    if (!out)
        return 0;
    replay_match_init(&m, sent);
    while (off < replay.len) {
        size_t n = 1 + (size_t)(unsigned char)replay.p[off] % 7, from;
        bool was_diverged = m.state == REPLAY_DIVERGED;

        if (n > replay.len - off)
            n = replay.len - off;
        st = replay_match_feed(&m, bsc_str_make(replay.p + off, n), &from);
        if (was_diverged && st != REPLAY_DIVERGED)
            die("a diverged replay recovered");
        if (st == REPLAY_PASSING) {
            if (from > n)
                die("pass point past the piece");
            memcpy(out + passed, replay.p + off + from, n - from);
            passed += n - from;
        }
        off += n;
    }
    if (!replay.len)
        st = m.state;
    if (replay.len >= sent.len && memcmp(replay.p, sent.p, sent.len) == 0)
        want = REPLAY_PASSING;
    else if (memcmp(replay.p, sent.p, replay.len < sent.len ? replay.len : sent.len) == 0)
        want = REPLAY_HOLDING;
    else
        want = REPLAY_DIVERGED;
    if (st != want)
        die("the final state does not say how the replay compares");
    if (want == REPLAY_PASSING &&
        (passed != replay.len - sent.len || memcmp(out, replay.p + sent.len, passed) != 0))
        die("what passed is not exactly the replay past what was sent");
    if (want != REPLAY_PASSING && passed)
        die("bytes of a replay that differs or falls short passed");
    free(out);
    return 0;
}
