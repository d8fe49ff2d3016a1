/* SPDX-License-Identifier: MIT */
/* deliver.h -- deliver.c's functions: the client side of one request (struct downstream,
 * downstream.h). Router-private. */
#ifndef BSC_ROUTER_DELIVER_H
#define BSC_ROUTER_DELIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/str.h"
#include "router/downstream.h"

struct request;
struct srv_header;

/* deliver.c, for the router's own files: it never decides anything, request.c calls it once
 * a decision is made (exchange.c converts and flushes stream bytes as they come). */
void deliver_init(struct downstream *d, const struct down_ops *ops, void *down_arg);
/* Sends the SSE head (the commit point); request.c moves to RELAY. */
void deliver_commit(struct request *r);
/* How many of the OpenAI chunk frames `data: {...}\n\n` in <conv> carry generated text (a
 * non-empty content, reasoning_content or tool-call arguments): the output estimate of a
 * stream that ends without usage, one token a frame. Pure. */
uint64_t deliver_text_frames(struct bsc_str conv);
/* Converts the adapter's OpenAI frames in r->x.conv into client bytes in r->d.out. */
enum bsc_err deliver_convert(struct request *r);
/* Writes r->d.out; true when the upstream should pause (back-pressure). */
bool deliver_flush(struct request *r);
/* Ends the response with r->d.out as <termination>, the idempotency record settled first. */
void deliver_end(struct request *r, const char *termination);
/* Ends a broken stream: what is queued (the error event) goes out, then the connection
 * closes with no terminal chunk, so no client takes the response for a complete one and
 * reuses the connection while it closes. */
void deliver_break(struct request *r, const char *termination);
/* A committed stream past limits.max_stream_bytes (with what r->d.out holds) or
 * limits.max_stream_ms (<timer>: the timer armed by deliver_stream_arm fired): true, with
 * r->d.limit_cut, r->x.stream_failed and the message set, and r->d.out dropped. */
bool deliver_stream_over(struct request *r, bool timer);
/* Arms the relay timer for <gap_ms> (the longest silence allowed), or sooner when the
 * stream's max_stream_ms ends first. Called per relayed read: it only moves the due time
 * forward, and the timer, armed once, catches up when it fires (deliver_stream_rearm). */
void deliver_stream_arm(struct request *r, uint64_t gap_ms);
/* The request's one timer is armed for something else: no longer the relay's. */
void deliver_stream_disarmed(struct request *r);
/* The committed stream is cut for <limit> (static: "shutting_down", ...), its limit_cut. */
void deliver_stream_cut(struct request *r, const char *limit);
/* Appends the continuation's seam to the output: an SSE comment naming the target that
 * continues the stream (<target_id>) and <how>. */
enum bsc_err deliver_stream_seam(struct request *r, const char *target_id, const char *how);
/* A new attempt relays into the stream: its count of text frames, the output estimate,
 * starts again. */
void deliver_restart_frame_count(struct request *r);
/* The relay timer fired: true when it was early (events came since it was armed), after
 * arming it again for what is left; false when the stream is due to be cut. */
bool deliver_stream_rearm(struct request *r);
/* Appends the error event that ends a committed stream, in the client's dialect. */
void deliver_stream_error(struct request *r, const char *message);
/* Releases a buffered stream: head, every byte held in r->d.out, end. */
void deliver_stream_complete(struct request *r);
/* Writes the complete answer in r->x.answer (non-stream). */
void deliver_answer(struct request *r);
/* Readies a complete answer (REPLY) for deliver_answer or deliver_stream_complete: maps it
 * to the client's dialect and hands its bytes to the idempotency record, so the record can
 * be stored before the answer goes out. False when it cannot be translated: the error was
 * sent (translation_failed). */
bool deliver_hold(struct request *r);
/* Writes r->err.reply. */
void deliver_error(struct request *r);
/* Drops the client dialect's stream state: a new attempt before the commit point starts
 * its translation afresh (a buffered stream may have converted part of a failed one). */
void deliver_down_reset(struct request *r);
void deliver_cleanup(struct request *r);

/* Empties the output buffer: a new attempt starts with nothing pending. */
void deliver_out_reset(struct request *r);

#endif
