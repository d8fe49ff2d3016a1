/* SPDX-License-Identifier: MIT */
/* sse_write.h -- appends Server-Sent Events for clients to a bounded buffer: data events
 * (payloads with line breaks become several data lines), named events, comments and the
 * OpenAI [DONE] terminator. It does not flush or pace anything; the relay does. See
 * docs/internals/streaming.md and docs/providers.md §7.4. */
#ifndef BSC_STREAM_SSE_WRITE_H
#define BSC_STREAM_SSE_WRITE_H

#include "core/compat.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/str.h"

/* Appends one event: `event: <name>\n` when <name> is not empty, then one `data: ` line per
 * line of <data> (LF, CRLF and a lone CR each break a line, so a client's parser rebuilds
 * <data> with "\n" for every break), then the blank line. Empty <data> gives `data: \n`.
 * Returns BSC_OK; BSC_EINVAL if <name> holds a CR or LF; BSC_ELIMIT or BSC_ENOMEM from <out>.
 * On error <out> is unchanged. Never calls back. */
enum bsc_err sse_write_event(struct bsc_buf *out, struct bsc_str name, struct bsc_str data);

/* The OpenAI-style event: sse_write_event() without a name. Compact JSON (which escapes
 * every newline) gives exactly `data: <json>\n\n`. */
enum bsc_err sse_write_data(struct bsc_buf *out, struct bsc_str data);

/* Appends a comment: one `: ` line per line of <text>, then a blank line (which SDK decoders
 * and our parser skip; it makes the comment a unit a proxy forwards at once). Errors and
 * atomicity as sse_write_event(). */
enum bsc_err sse_write_comment(struct bsc_buf *out, struct bsc_str text);

/* Appends `: keep-alive\n\n`, sent during long upstream waits. */
enum bsc_err sse_write_keepalive(struct bsc_buf *out);

/* Appends the terminator `data: [DONE]\n\n`. */
enum bsc_err sse_write_done(struct bsc_buf *out);

#endif
