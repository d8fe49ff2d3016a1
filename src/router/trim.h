/* SPDX-License-Identifier: MIT */
/* trim.h -- conversation-window trimming (a route's `context.overflow: trim`): a pure
 * planner over message descriptors (which of the oldest turns to drop so that the request
 * fits a target's window), and the rebuilds of the request without them -- the client's
 * OpenAI bytes spliced, or the canonical parse tree. The router glue runs it once per
 * attempt against that attempt's target. See docs/internals/request-lifecycle.md. */
#ifndef BSC_ROUTER_TRIM_H
#define BSC_ROUTER_TRIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "core/buf.h"
#include "core/str.h"
#include "router/trim_types.h"

#define TRIM_BYTES_PER_TOKEN 4u
/* The output budget reserved when neither the client nor the target says one. */
#define TRIM_DEFAULT_OUTPUT_TOKENS 4096u
/* The bytes the marker message may take: {"role":"system","content":"[N earlier ...]"}, */
#define TRIM_MARKER_BYTES 80u
/* Conversations longer than this are not trimmed (the route behaves as `fail`). */
#define TRIM_MAX_MESSAGES 100000u

/* What the planner needs to know of one message. */
enum trim_role {
    TRIM_ROLE_SYSTEM = 0, /* system or developer: never dropped */
    TRIM_ROLE_USER,
    TRIM_ROLE_ASSISTANT,
    TRIM_ROLE_TOOL_CALLS, /* an assistant message with tool_calls: dropped with its results */
    TRIM_ROLE_TOOL,       /* a tool result */
    TRIM_ROLE_COUNT
};

struct trim_msg {
    enum trim_role role;
    uint64_t bytes; /* its serialised size, separator included */
};

/* The inputs of one plan. */
struct trim_input {
    const struct trim_msg *msgs;
    size_t n;
    uint64_t fixed_bytes; /* the request's bytes outside the messages */
    uint32_t keep_last;   /* the last <keep_last> messages are never dropped */
    uint64_t window;      /* the target's context window, tokens */
    uint64_t out_tokens;  /* the output budget to reserve in it */
};

/* Decides which messages to drop so that the estimate -- (bytes kept + the marker) / 4 +
 * <out_tokens> -- fits <window>. Drops the oldest units first, a unit being one message or
 * an assistant tool-call message with the tool results that follow it; never a system
 * message, never a unit that reaches into the last <keep_last> messages; after the cut the
 * kept history goes on to start at a user message when one is droppable. Sets drop[i] for
 * each dropped message (<drop> has <n> entries). Returns the number dropped (0: it fits as
 * it is), or -1 when even the minimum does not fit (drop[] then undefined). Pure. */
long trim_plan(const struct trim_input *in, bool *drop);

/* The smallest size, in bytes, the request can be trimmed to (marker included when anything
 * is droppable). Pure. */
uint64_t trim_min_bytes(const struct trim_msg *msgs, size_t n, uint64_t fixed_bytes,
                        uint32_t keep_last);

/* Reads the descriptors of the messages array span <msgs> inside <body> (validated JSON).
 * *<out> is a malloc'd array the caller owns (NULL when there are no messages), *<fixed>
 * the bytes of <body> outside the messages. BSC_ENOMEM, or BSC_ELIMIT past
 * TRIM_MAX_MESSAGES. */
enum bsc_err trim_describe(struct bsc_str body, struct bsc_str msgs, struct trim_msg **out,
                           size_t *n, uint64_t *fixed);

/* The number of leading system messages: where the marker goes. */
size_t trim_leading_system(const struct trim_msg *msgs, size_t n);

/* What to cut, as trim_plan decided it. */
struct trim_cut {
    const bool *drop; /* <n> entries: drop[i] for each dropped message */
    size_t n;
    size_t lead;  /* the leading system messages: the marker goes after them */
    long dropped; /* how many; the marker says it */
};

/* Writes into <out> (emptied first) the bytes of <body> with its messages array span <msgs>
 * replaced by the kept messages and the marker. *<model> (a span inside <body>, or empty) is
 * moved to the same value inside <out>. BSC_ENOMEM, BSC_ELIMIT. */
enum bsc_err trim_splice(struct bsc_str body, struct bsc_str msgs, const struct trim_cut *cut,
                         struct bsc_buf *out, struct bsc_str *model);

/* A new request object sharing the members of <req> (refs taken) whose "messages" is a new
 * array of the kept ones plus the marker. The caller owns it (json_object_put). NULL when out
 * of memory or when <req>'s messages are not cut->n long. */
struct json_object *trim_json(struct json_object *req, const struct trim_cut *cut);

/* ---- the router's side (trim.c): one plan per attempt, against its target ---- */

struct cfg_context;
struct cfg_target;
struct req_input;

/* The request's canonical parse tree, parsed on first use (the caller's req__json); NULL
 * when out of memory. */
typedef struct json_object *trim_tree_fn(void *arg);

/* Reads the descriptors of the messages of request <in> (span <msgs> inside <body>, the
 * client's OpenAI bytes or the canonical form serialised) into <ts> when its route's
 * context <c> trims a chat. On failure the request is simply not trimmed. */
void trim_req_inspect(struct trim_state *ts, const struct req_input *in,
                      const struct cfg_context *c, struct bsc_str body, struct bsc_str msgs);

/* True when request <in>, trimmed as far as <ts> says it may be for <t>, fits <t>'s
 * window -- or when `fail` would accept <t> for it as it is (no output budget reserved). */
bool trim_req_fits(const struct trim_state *ts, const struct req_input *in,
                   const struct cfg_target *t);

/* Plans the cut for the attempt on <t> (keeping the last messages <c> says) and builds its
 * request (ts->body, ts->json; the tree from <tree>(<arg>)), from the client's messages each
 * time. BSC_OK with ts->dropped 0 when nothing is cut (it fits, or the request must reach an
 * anthropic target as the client's own bytes); BSC_ENOMEM. */
enum bsc_err trim_req_attempt(struct trim_state *ts, const struct req_input *in,
                              const struct cfg_context *c, const struct cfg_target *t,
                              trim_tree_fn *tree, void *arg);

/* Releases everything <ts> holds. */
void trim_req_cleanup(struct trim_state *ts);

#endif
