/* SPDX-License-Identifier: MIT */
/* evstream.h -- the AWS event-stream binary framing (application/vnd.amazon.eventstream):
 * an incremental decoder that checks both CRC-32s of every message, and an encoder (the
 * simulator's and the tests'). A message is a 12-byte prelude (total length, headers length,
 * prelude CRC, all big-endian), typed headers, the payload and a message CRC over everything
 * before it. No I/O. See docs/internals/provider-bedrock-vertex.md. */
#ifndef BSC_CORE_EVSTREAM_H
#define BSC_CORE_EVSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/str.h"

/* The smallest message: a prelude and a message CRC, nothing else. */
#define EVS_MIN_MESSAGE 16
/* The largest message AWS sends (16 MiB); a decoder may be set lower. */
#define EVS_MAX_MESSAGE (16u * 1024 * 1024)

/* One decoded message; every string borrows the decoder's buffer until the callback returns.
 * Only the string-typed headers the gateway reads are kept; others are checked and skipped. */
struct evs_msg {
    struct bsc_str message_type;   /* ":message-type": "event", "exception" or "error" */
    struct bsc_str event_type;     /* ":event-type" */
    struct bsc_str exception_type; /* ":exception-type" */
    struct bsc_str error_code;     /* ":error-code" (message-type "error") */
    struct bsc_str error_message;  /* ":error-message" */
    struct bsc_str content_type;   /* ":content-type" */
    struct bsc_str payload;
};

/* Called once per complete, checked message; a non-zero return stops the decoder (later
 * bytes are ignored and evs_feed returns what the callback returned). */
typedef int evs_msg_fn(void *ud, const struct evs_msg *m);

struct evs_decoder {
    struct bsc_buf held; /* owned: the bytes of an incomplete message */
    size_t max_message;  /* a larger declared length is an error */
    evs_msg_fn *cb;
    void *ud;
    int stopped;  /* 0, the callback's stop value, or -1 after an error (sticky) */
    char why[96]; /* what was wrong, after an error */
};

/* Cannot fail; allocates nothing. <max_message> is capped at EVS_MAX_MESSAGE. */
void evs_decoder_init(struct evs_decoder *d, size_t max_message, evs_msg_fn *cb, void *ud);
void evs_decoder_cleanup(struct evs_decoder *d);

/* Feeds <len> bytes. Returns 0 to go on (messages complete in them were delivered), the
 * callback's non-zero value once it stopped, or -1 on a framing error (a CRC mismatch, a
 * length out of range, a header that runs past its section; <why> says which). Sticky. */
int evs_feed(struct evs_decoder *d, const void *p, size_t len);

/* True when bytes of an unfinished message are held (a stream cut inside a frame). */
bool evs_pending(const struct evs_decoder *d);

/* CRC-32 (IEEE 802.3, as zlib's crc32) of <len> bytes continuing <crc> (0 to start). */
uint32_t evs_crc32(uint32_t crc, const void *p, size_t len);

/* A string header of a message to encode. */
struct evs_header {
    const char *name;
    struct bsc_str value;
};

/* Appends one message with string headers <h> (<n> of them) and <payload> to <out>. */
enum bsc_err evs_encode(struct bsc_buf *out, const struct evs_header *h, size_t n,
                        struct bsc_str payload);

#endif
