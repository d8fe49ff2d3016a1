/* SPDX-License-Identifier: MIT */
/* sse_parse.h -- an incremental, byte-level Server-Sent Events parser for upstream streams.
 * It frames lines (CRLF, LF or a lone CR, split anywhere), joins data lines and hands each
 * event to a callback; it knows nothing of JSON, providers or terminal signals, and never
 * allocates past the bound given at init. Design: docs/internals/streaming.md. */
#ifndef BSC_STREAM_SSE_PARSE_H
#define BSC_STREAM_SSE_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/compat.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/str.h"

/* The callbacks. Each returns 0 to go on, or non-zero to pause: sse_parser_feed() then
 * returns at once with the number of bytes consumed so far, and the caller may feed the rest
 * later (back-pressure) or stop. The slices are borrowed and valid only during the call.
 * A callback must not call back into the parser. Only <on_event> is required. */
struct sse_callbacks {
    /* One dispatched event. <event_name> is empty when the event had no `event:` line; <data>
     * is its `data:` lines joined with "\n" (empty when it had only an `event:` line). Also
     * called from sse_parser_finish() for an event left unterminated at EOF. */
    int (*on_event)(void *ud, struct bsc_str event_name, struct bsc_str data);
    /* A `:` comment line, the colon and one following space removed: ": keep-alive" gives
     * "keep-alive", DashScope's ":HTTP_STATUS/200" gives "HTTP_STATUS/200". May be NULL. */
    int (*on_comment)(void *ud, struct bsc_str text);
    /* A non-empty line whose field name is none of data, event, id, retry -- the whole raw
     * line. Gemini can end a stream with a bare (often pretty-printed) JSON error object; a
     * caller collects those lines here. May be NULL: such lines are then ignored. */
    int (*on_unknown)(void *ud, struct bsc_str line);
};

/* Embedded by the caller; every field is private to sse_parse.c. */
struct sse_parser {
    const struct sse_callbacks *cb; /* borrowed; outlives the parser */
    void *ud;                       /* borrowed; passed back to the callbacks */
    size_t max;                     /* bound on one line and on one event's data */
    struct bsc_buf line;            /* owned: a line split across feeds */
    struct bsc_buf data;            /* owned: the pending event's joined data */
    struct bsc_buf name;            /* owned: the pending event's name */
    struct bsc_str pend;            /* the pending event's only data line, while it still sits
                                     * in the caller's buffer (zero-copy fast path) */
    bool pend_in_input;             /* <pend> is in use instead of <data> */
    bool has_data;                  /* the pending event has at least one data line */
    bool has_name;                  /* the pending event has an event line */
    bool saw_cr;                    /* the last byte fed was a CR ending a line */
    bool finished;                  /* sse_parser_finish() was called */
    uint8_t bom;                    /* BOM bytes matched at the start; 0xff once decided */
    enum bsc_err err;               /* sticky: once set, every call returns it */
};

/* Sets up <p>. <max_bytes> bounds both a line (its terminator excluded) and the joined data of
 * one event: a longer one is an error (BSC_ELIMIT). <cb> and <ud> are borrowed. Allocates
 * nothing and cannot fail; the storage grows on demand up to <max_bytes> per buffer. */
void sse_parser_init(struct sse_parser *p, size_t max_bytes, const struct sse_callbacks *cb,
                     void *ud);

/* Feeds <len> bytes of the stream (split anywhere). Return style: >= 0 is the number of bytes
 * consumed -- <len> unless a callback paused, in which case the remaining bytes have not been
 * looked at and may be fed again later; < 0 is -(enum bsc_err): BSC_ELIMIT for a line or
 * event over the bound, BSC_ENOMEM, or BSC_ESTATE after sse_parser_finish(). After an error
 * the parser refuses all input and returns the same error. Calls back synchronously. <buf> is
 * borrowed for this call only. */
ssize_t sse_parser_feed(struct sse_parser *p, const char *buf, size_t len);

/* Ends the stream (EOF). A partial last line is processed as if terminated, then an event
 * still waiting for its blank line is dispatched through on_event (the tolerant rule of
 * docs/providers.md §7.1: the caller uses its data if it parses, and still treats the stream as
 * cut). *<had_pending> (may be NULL) is set to true when the stream did not end on an event
 * boundary: a partial line or an undispatched event was left. Pause requests from callbacks
 * are ignored here (nothing could resume them). Returns BSC_OK or the sticky error;
 * afterwards sse_parser_feed() fails with BSC_ESTATE. Calls back synchronously. */
enum bsc_err sse_parser_finish(struct sse_parser *p, bool *had_pending);

/* Frees the storage. <p> may be initialized again afterwards. */
void sse_parser_cleanup(struct sse_parser *p);

/* Walks the whole SSE text <text> with the parser above and the callbacks <cb> (<ud> passed
 * back): each event ended by its blank line, each comment and unknown line; a partial event at
 * the end is not dispatched. A callback's non-zero return stops the walk. Returns BSC_OK (also
 * when a callback stopped it), or BSC_ENOMEM. Calls back synchronously; allocates only for an
 * event of several data lines or with an `event:` line. */
enum bsc_err sse_walk(struct bsc_str text, const struct sse_callbacks *cb, void *ud);

/* A callback for sse_each_event: one whole event, as on_event above. Returns 0 to go on,
 * non-zero to stop the walk. */
typedef int sse_event_fn(void *ud, struct bsc_str event_name, struct bsc_str data);

/* sse_walk with only an event callback: <fn> is called for each whole event of <text> (our
 * own adapters' frames, say: "data: {...}\n\n" ...); comments and unknown lines are skipped.
 * The slices are borrowed for the call. */
enum bsc_err sse_each_event(struct bsc_str text, sse_event_fn *fn, void *ud);

/* True when <body> starts like an SSE stream (after spaces, CRs and LFs): a data, event, id
 * or retry field, or a comment. A sniff for an answer in the other shape, not a parse. */
bool sse_looks_like_stream(struct bsc_str body);

/* True when <data> is the OpenAI-style terminator "[DONE]" (trailing spaces and tabs
 * tolerated). It is not JSON: check it before parsing. */
bool sse_is_done(struct bsc_str data);

#endif
