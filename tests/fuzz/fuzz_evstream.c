/* SPDX-License-Identifier: MIT */
/* fuzz-sources: */
/* fuzz_evstream.c -- libFuzzer target for the AWS event-stream decoder (core/evstream.c), the
 * framing of Bedrock's ConverseStream. The input is an upstream byte stream. Beyond "no crash,
 * no leak, no UB" it checks, and aborts when one breaks:
 *   - one feed, a split at three positions taken from the input, and byte-by-byte feeds give
 *     the same transcript (every message's kept headers and payload, the verdict, pending);
 *   - every message delivered re-encodes (evs_encode, its kept headers) and decodes back to
 *     the same fields, and the re-encoding's CRCs are what the decoder accepts;
 *   - nothing is held past the decoder's bound. Built and run by scripts/fuzz. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/evstream.h"

#define MAX_MSG 4096

static void die(const char *what)
{
    fprintf(stderr, "fuzz_evstream: invariant broken: %s\n", what);
    abort();
}

struct rec {
    struct bsc_buf log;
    bool roundtrip; /* re-encode each message and check it decodes the same */
};

static void put(struct bsc_buf *b, struct bsc_str s)
{
    uint32_t n = (uint32_t)s.len;

    if (bsc_buf_append(b, &n, sizeof(n)) || bsc_buf_append(b, s.p, s.len))
        die("transcript overflow");
}

static void put_msg(struct bsc_buf *b, const struct evs_msg *m)
{
    put(b, m->message_type);
    put(b, m->event_type);
    put(b, m->exception_type);
    put(b, m->error_code);
    put(b, m->error_message);
    put(b, m->content_type);
    put(b, m->payload);
}

static int same_cb(void *ud, const struct evs_msg *m)
{
    put_msg(ud, m);
    return 0;
}

static void roundtrip(const struct evs_msg *m, const struct bsc_buf *want)
{
    struct evs_header h[6];
    size_t n = 0;
    struct bsc_buf enc, got;
    struct evs_decoder d;

    if (m->message_type.len)
        h[n++] = (struct evs_header){":message-type", m->message_type};
    if (m->event_type.len)
        h[n++] = (struct evs_header){":event-type", m->event_type};
    if (m->exception_type.len)
        h[n++] = (struct evs_header){":exception-type", m->exception_type};
    if (m->error_code.len)
        h[n++] = (struct evs_header){":error-code", m->error_code};
    if (m->error_message.len)
        h[n++] = (struct evs_header){":error-message", m->error_message};
    if (m->content_type.len)
        h[n++] = (struct evs_header){":content-type", m->content_type};
    bsc_buf_init(&enc, 2 * MAX_MSG);
    bsc_buf_init(&got, 4 * MAX_MSG);
    if (evs_encode(&enc, h, n, m->payload))
        die("a decoded message does not encode");
    evs_decoder_init(&d, 2 * MAX_MSG, same_cb, &got);
    if (evs_feed(&d, enc.p, enc.len) != 0 || evs_pending(&d))
        die("a re-encoded message does not decode");
    if (got.len != want->len || memcmp(got.p, want->p, got.len))
        die("a re-encoded message decodes differently");
    evs_decoder_cleanup(&d);
    bsc_buf_cleanup(&enc);
    bsc_buf_cleanup(&got);
}

static int on_msg(void *ud, const struct evs_msg *m)
{
    struct rec *r = ud;
    struct bsc_buf one;

    put_msg(&r->log, m);
    if (r->roundtrip) {
        bsc_buf_init(&one, 4 * MAX_MSG);
        put_msg(&one, m);
        roundtrip(m, &one);
        bsc_buf_cleanup(&one);
    }
    return 0;
}

/* Feeds <data> in the pieces ending at <cuts> (ascending, <n> of them) and the rest. */
static void run(const uint8_t *data, size_t size, const size_t *cuts, size_t n, bool rt,
                struct bsc_buf *out)
{
    struct rec r = {.roundtrip = rt};
    struct evs_decoder d;
    size_t at = 0;
    int rc = 0;
    char tail[2];

    bsc_buf_init(&r.log, 1u << 24);
    evs_decoder_init(&d, MAX_MSG, on_msg, &r);
    for (size_t i = 0; i <= n && rc == 0; i++) {
        size_t end = i < n ? cuts[i] : size;

        rc = evs_feed(&d, data + at, end - at);
        at = end;
        if (d.held.len > MAX_MSG)
            die("held past the bound");
    }
    tail[0] = (char)rc;
    tail[1] = (char)(rc == 0 && evs_pending(&d));
    if (bsc_buf_append(&r.log, tail, 2))
        die("transcript overflow");
    *out = r.log;
    evs_decoder_cleanup(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct bsc_buf whole, split, bytes;
    size_t cuts[3], *each;

    run(data, size, NULL, 0, true, &whole);
    for (size_t i = 0; i < 3; i++)
        cuts[i] = size ? (size_t)data[i % size] * (i + 1) % (size + 1) : 0;
    if (cuts[0] > cuts[1]) {
        size_t t = cuts[0];
        cuts[0] = cuts[1];
        cuts[1] = t;
    }
    if (cuts[1] > cuts[2]) {
        size_t t = cuts[1];
        cuts[1] = cuts[2];
        cuts[2] = t;
    }
    if (cuts[0] > cuts[1]) {
        size_t t = cuts[0];
        cuts[0] = cuts[1];
        cuts[1] = t;
    }
    run(data, size, cuts, 3, false, &split);
    each = malloc((size ? size : 1) * sizeof(*each));
    if (!each)
        return 0;
    for (size_t i = 0; i < size; i++)
        each[i] = i;
    run(data, size, each, size, false, &bytes);
    free(each);
    if (whole.len != split.len || memcmp(whole.p, split.p, whole.len))
        die("a split feed changes the transcript");
    if (whole.len != bytes.len || memcmp(whole.p, bytes.p, whole.len))
        die("byte-by-byte feeds change the transcript");
    bsc_buf_cleanup(&whole);
    bsc_buf_cleanup(&split);
    bsc_buf_cleanup(&bytes);
    return 0;
}
