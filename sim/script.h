/* SPDX-License-Identifier: MIT */
/* script.h -- the fault engine of bascule-sim: a model's spec ({"tokens", "token_delay_ms",
 * "script": [step, ...], "repeat"}) parsed from JSON, validated strictly (unknown fields
 * and actions are errors, so a typo in a test fails loudly), and the step sequencing
 * that decides what the next call to that model gets. Pure: no I/O, no clock.
 * See docs/internals/sim.md for the step catalogue. */
#ifndef BSC_SIM_SCRIPT_H
#define BSC_SIM_SCRIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/str.h"

#define SIM_SCRIPT_MAX_STEPS   256u
#define SIM_STEP_MAX_HEADERS   16u
#define SIM_STEP_MAX_TIMES     1000000u
#define SIM_DELAY_MAX_MS       600000u /* ten minutes: any longer is a hang */
#define SIM_SPEC_MAX_BYTES     (256u * 1024u)
#define SIM_TRICKLE_DEFAULT_MS 100u
#define SIM_TOOL_ARGS_MAX      (16u * 1024u) /* bytes of a scripted "tool_arguments" */

struct sim_call; /* dialect.h */

/* The list of actions: the enum and the name table come from it and cannot drift. */
#define SIM_ACTIONS(X)                                                                     \
    X(OK, "ok", "a normal answer")                                                         \
    X(STATUS, "status", "an HTTP error status with optional headers and body")            \
    X(DELAY, "delay", "wait delay_ms before the head, then a normal answer")               \
    X(RESET, "reset", "TCP reset before any response byte")                               \
    X(HANG, "hang", "never answer; only the client going away ends it")                    \
    X(CUT, "cut", "200, then the stream stops after after_events events (body: halfway)") \
    X(ERROR_200, "error_200", "HTTP 200 carrying an error object (in-band for streams)")   \
    X(MALFORMED, "malformed", "200 with invalid JSON, or a malformed SSE data line")       \
    X(TRICKLE, "trickle", "a normal answer paced at interval_ms per chunk")                \
    X(STALL, "stall", "after_events events, stall_ms of silence, then the rest")          \
    X(NO_DONE, "no_done", "the whole stream, then a clean end without the terminator")

enum sim_action {
#define X(NAME, name, doc) SIM_ACT_##NAME,
    SIM_ACTIONS(X)
#undef X
        SIM_ACT_COUNT
};

struct sim_step_header {
    char *name;  /* owned, NUL-terminated, lower-cased */
    char *value; /* owned, NUL-terminated */
};

struct sim_step {
    enum sim_action action;
    uint32_t times;        /* consecutive calls this step covers, >= 1 */
    uint32_t delay_ms;     /* wait before the response head (every action but hang) */
    int status;            /* SIM_ACT_STATUS: 100..599; 0 otherwise */
    struct sim_step_header headers[SIM_STEP_MAX_HEADERS];
    size_t n_headers;
    char *body;          /* owned; the body to send verbatim (JSON text, or the string's
                          * bytes when "body" was a JSON string); NULL: dialect default */
    char *error_type;    /* owned or NULL: overrides the default error body's type */
    char *error_code;    /* owned or NULL: overrides its code */
    char *message;       /* owned or NULL: overrides its message */
    char *finish_reason; /* owned or NULL: the answer's finish reason, in the dialect's words
                          * (ok/delay/trickle/cut), e.g. "content_filter" */
    char *content;        /* owned or NULL: the assistant's text instead of the generated
                           * sentence (ok/delay/trickle/cut; valid UTF-8, no NUL) */
    char *tool_arguments; /* owned or NULL: a tool call's arguments, verbatim (any text, not
                           * necessarily JSON; ok/delay/trickle/cut) */
    char *usage;          /* owned or NULL: the answer's usage object, as JSON text sent
                           * verbatim in the dialect's place for it (ok/delay/trickle/cut) */
    char *usage_start;    /* owned or NULL: Anthropic streams: message_start's usage */
    uint32_t after_events; /* cut/error_200/malformed: events before the fault */
    bool has_after_events; /* false: the action's own default applies */
    uint32_t interval_ms;  /* trickle: ms between chunks */
    uint32_t stall_ms;     /* stall: the silence after <after_events> events */
    bool has_stream;       /* "stream" was given (ok/delay/trickle/cut): answer in that */
    bool stream;           /* shape whatever the request asked (a wrong-shape answer) */
};

struct sim_spec {
    uint32_t tokens;        /* completion tokens (1..SIM_TOKENS_MAX) */
    int32_t token_delay_ms; /* ms between stream chunks; -1 when the spec does not say */
    bool repeat;            /* restart the script when it is exhausted */
    uint32_t max_concurrent; /* above this many calls in flight a call gets a 429 (with
                              * x-ratelimit headers) instead of its step; 0: no limit */
    struct sim_step *steps; /* owned array of <n_steps> */
    size_t n_steps;
    char *content;          /* owned or NULL: "content" for steps that do not say */
    char *tool_arguments;   /* owned or NULL: "tool_arguments" for steps that do not say */
    bool prefill_refuse;    /* "prefill": "refuse": a request ending with an assistant
                             * message gets a 400 instead of its step */
};

/* Where a model is in its script: the step and how many of its <times> were used. */
struct sim_cursor {
    size_t step;
    uint32_t used;
};

/* Parses <json> into <spec> (which the caller then owns: sim_spec_cleanup). Missing
 * fields take defaults (tokens 12, token_delay_ms -1, no steps, repeat false). On error
 * returns BSC_EPARSE (not JSON) or BSC_EINVAL (a bad field), writes a one-line reason
 * into <errbuf> and leaves <spec> empty. */
enum bsc_err sim_spec_parse(struct bsc_str json, struct sim_spec *spec, char *errbuf,
                            size_t errlen);

/* Frees what <spec> owns; <spec> is empty afterwards. */
void sim_spec_cleanup(struct sim_spec *spec);

/* Returns the step that applies to the next call and advances <cur>, or NULL when the
 * script is exhausted (the call behaves as "ok"). With <spec>->repeat the script starts
 * over instead of being exhausted (an empty script is always exhausted). The step is
 * borrowed from <spec>. */
const struct sim_step *sim_script_next(const struct sim_spec *spec, struct sim_cursor *cur);

/* Deep-copies <src> into <dst> (which the caller owns: sim_step_cleanup). BSC_ENOMEM
 * leaves <dst> empty. */
enum bsc_err sim_step_copy(struct sim_step *dst, const struct sim_step *src);
void sim_step_cleanup(struct sim_step *step);

/* The step a call above a model's max_concurrent gets: 429 rate_limit_exceeded with
 * x-ratelimit-limit|remaining|reset-requests (requests remain: the limit is concurrency)
 * and retry-after-ms: 50. BSC_ENOMEM leaves it empty. */
enum bsc_err sim_step_init_overload(struct sim_step *step, uint32_t max_concurrent);

/* The step an unscripted call gets: action ok, times 1, nothing else. */
void sim_step_init_ok(struct sim_step *step);

/* Fills the "content" and "tool_arguments" <step> does not set with copies of <spec>'s
 * (the model-level defaults). BSC_ENOMEM leaves <step> as it was. */
enum bsc_err sim_step_inherit(struct sim_step *step, const struct sim_spec *spec);

/* Applies what <step> scripts about a chat answer to <call> (parsed and settled):
 *  - a tool call with <step>->tool_arguments gets them as its arguments, verbatim (moved
 *    out of <step>; <call>->tool_args_raw says whether they are not JSON text);
 *  - else a tool call with <step>->content becomes a text answer;
 *  - a text answer with <step>->content says exactly that text (borrowed from <step>,
 *    which must outlive <call>'s rendering): <call>->n_tokens becomes its piece count
 *    (sim_content_pieces), never cut by max_tokens.
 * Anything else is left alone (embeddings, steps that script neither). */
void sim_step_apply(struct sim_step *step, struct sim_call *call);

/* "ok", "status", ...; "?" for a value out of range. */
const char *sim_action_name(enum sim_action action);

#endif
