/* SPDX-License-Identifier: MIT */
/* exchange.h -- exchange.c's functions: one attempt's upstream side (struct xchg, xchg.h).
 * Router-private. */
#ifndef BSC_ROUTER_EXCHANGE_H
#define BSC_ROUTER_EXCHANGE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/compat.h"
#include "core/err.h"
#include "fail/taxonomy.h"
#include "router/xchg.h"

struct request;
struct rl_headers;

/* Allocates nothing: sets the buffers' bounds (their kept storage stays) and the usage to
 * unknown. <x> is zeroed or was given a store (xchg_store_give). */
void xchg_init(struct xchg *x);
/* Builds the request through the adapter and starts the transfer. BSC_EINVAL: the adapter
 * cannot express the request for this target (r->x.fail is a contract failure). */
enum bsc_err xchg_start(struct request *r);
/* Clears the per-attempt upstream state. */
void xchg_reset(struct request *r);
/* After an uncommitted attempt ended: r->x.fail (FAIL_NONE = success, r->x.answer holds the
 * OpenAI-shaped answer and r->x.usage its usage). */
void xchg_classify(struct request *r);
/* What the rate-limit headers of the attempt's answer say, read by its adapter (all -1
 * when there was no answer). Any answer: a success's head counts too. */
void xchg_rate_limits(struct request *r, struct rl_headers *out);
/* Stops the transfer, if one is running (its callbacks will not run again). */
void xchg_cancel(struct xchg *x);
/* Ends the exchange: the transfer stopped, the stream state freed, the buffers parked
 * (xchg_park). The storage they keep is freed by xchg_store_free. */
void xchg_cleanup(struct request *r);
/* The buffers emptied; each keeps its storage when it is at most XCHG_KEEP_BYTES, poisoned
 * under AddressSanitizer until xchg_store_give. */
void xchg_park(struct xchg *x);
/* The parked buffers of <x> copied to <out> (the request around <x> is about to be zeroed). */
void xchg_store_take(struct xchg *x, struct xchg_store *out);
/* <in>'s buffers put back into a zeroed <x>: empty, their storage usable again. */
void xchg_store_give(struct xchg *x, const struct xchg_store *in);
/* Frees the storage the buffers of <x> keep (parked or not); <x>'s buffers are empty. */
void xchg_store_free(struct xchg *x);

/* ---- what other parts of the machine saw, recorded here (exchange.c writes r->x) ---- */

/* The machine's timer fired during the transfer: timed out (late for the first token when
 * <waiting_first_token> and that timer was armed), and the transfer stops. Nothing when no
 * transfer runs. */
void xchg_time_out(struct request *r, bool waiting_first_token);
/* The attempt's timer is envelope.first_token_timeout_ms's. */
void xchg_arm_first_token(struct request *r);
/* The attempt could not go: a local rate limit, retry after <retry_after_ms>. */
void xchg_note_rate_limited(struct request *r, int64_t retry_after_ms, const char *fmt, ...)
    BSC_PRINTF(3, 4);
/* The stream broke after the commit point and is not continued: partial output. */
void xchg_note_partial_output(struct request *r);
/* The stream broke and is continued: <kind> (status 200) with <why>. */
void xchg_note_stream_break(struct request *r, enum fail_kind kind, const char *why);
/* The target refused a continuation's trailing assistant message: a server error, and
 * caused by the request, not by the target's health. */
void xchg_note_prefill_refused(struct request *r);
/* The answer broke the route's contract: <f>, from contract.c's check, is the failure. */
void xchg_note_contract_failure(struct request *r, const struct fail_info *f);
/* The attempt may have had its side effect: uncertain. */
void xchg_note_uncertain(struct request *r);
/* The stream is cut for the reason in <fmt> (a limit, the drain): failed in-band. */
void xchg_note_stream_cut(struct request *r, const char *fmt, ...) BSC_PRINTF(2, 3);
/* The cut stands as made (not a stall) and the transfer stops. */
void xchg_stop_as_cut(struct request *r);
/* A stream's usage as far as the provider reported it, into r->x.usage. */
void xchg_take_stream_usage(struct request *r);
/* r->x.usage's unknown counts set to the estimates (output also when the answer did not
 * end, <complete> false, and fewer were reported). True when anything was estimated. */
bool xchg_estimate_usage(struct request *r, int64_t in_tokens, int64_t out_tokens, bool complete);
/* The adapter's frames of this read to the end of <out>, and gone from r->x.conv. */
enum bsc_err xchg_hand_frames(struct request *r, struct bsc_buf *out);
/* The adapter's frames of this read dropped (they were used where they are). */
void xchg_drop_frames(struct request *r);
/* The adapter's frames of this read replaced by <with> (a continuation's rewrite). */
enum bsc_err xchg_replace_frames(struct request *r, const struct bsc_buf *with);
/* The upstream's id of the delivered answer (the body's "id", or the stream's as the adapter
 * read it) into <out>; false without one. */
bool xchg_answer_id(const struct xchg *x, char *out, size_t len);

#endif
