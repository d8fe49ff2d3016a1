/* SPDX-License-Identifier: MIT */
/* ledger.h -- the tool side-effect ledger's state machine, pure: which transitions are
 * legal, how an update is applied to an entry, and the JSON of an entry and of an update.
 * It does no I/O and reads no clock; the store (store/store.h) makes each application
 * atomic and durable, the api layer (api/ledger.c) exposes it over HTTP.
 * See docs/internals/store.md. */
#ifndef BSC_LEDGER_LEDGER_H
#define BSC_LEDGER_LEDGER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/str.h"

#define LEDGER_OP_ID_MAX 128 /* bytes of an operation id */
#define LEDGER_TOOL_MAX 128  /* bytes of a tool name */
#define LEDGER_REF_MAX 512   /* bytes of an external reference */

/* Every state, once: the enum and the name table are generated from this list.
 *   (none) -> planned | started
 *   planned -> started | failed        (failed: dropped before it ran, nothing happened)
 *   started -> succeeded | failed | unknown
 *   unknown -> succeeded | failed      (reconciliation settles it)
 *   succeeded, failed: terminal
 * Putting the state an entry already has is an idempotent repeat, not a transition. */
#define LEDGER_STATES(X)                                                                   \
    X(PLANNED, planned, "the agent means to run the tool; nothing has happened yet")       \
    X(STARTED, started, "the tool is running: its side effect may have happened")          \
    X(SUCCEEDED, succeeded, "the tool ran and its effect happened (terminal)")             \
    X(FAILED, failed, "the tool's effect did not happen (terminal)")                       \
    X(UNKNOWN, unknown, "nobody knows whether the effect happened: reconcile first")

enum ledger_state {
#define X(NAME, name, doc) LEDGER_ST_##NAME,
    LEDGER_STATES(X)
#undef X
    LEDGER_ST_COUNT
};

/* How a put changed the ledger (HTTP 201 for CREATED, 200 otherwise). */
enum ledger_outcome {
    LEDGER_CREATED = 0, /* no entry before; one now */
    LEDGER_UPDATED,     /* a transition, or a repeat that added the external reference */
    LEDGER_UNCHANGED,   /* a repeat of what is stored: nothing written */
    LEDGER_OUTCOME_COUNT
};

/* One operation's record. Fixed-size fields so an entry can be copied between threads
 * and stored without pointers. All strings are NUL-terminated UTF-8. */
struct ledger_entry {
    char op_id[LEDGER_OP_ID_MAX + 1];
    char tool_name[LEDGER_TOOL_MAX + 1];
    char external_reference[LEDGER_REF_MAX + 1]; /* "" = none */
    enum ledger_state state;
    uint32_t version;    /* 1 when created, +1 on every change */
    uint64_t created_ms; /* wall clock, ms since the epoch */
    uint64_t updated_ms;
};

/* What a client asks for: move the operation to <state>. */
struct ledger_update {
    char tool_name[LEDGER_TOOL_MAX + 1];
    char external_reference[LEDGER_REF_MAX + 1]; /* "" = not given: keep what is stored */
    enum ledger_state state;
};

/* Where an update body went wrong, for a 400 answer. */
struct ledger_parse_err {
    const char *param; /* static: the offending member, or NULL for the body as a whole */
    const char *code;  /* static: "duplicate_key" or "invalid_request" for a body whose
                          member names are refused (core/json_check.h), else NULL */
    char message[400];
};

/* Static name of <s> ("planned", ...); "?" when out of range. */
const char *ledger_state_name(enum ledger_state s);
/* Parses a state name (exact, lowercase). Returns false, *<out> untouched, when unknown. */
bool ledger_state_parse(struct bsc_str name, enum ledger_state *out);
/* True when an operation may move from <from> to a different state <to>. False for
 * from == to (a repeat is not a transition) and for anything out of range. */
bool ledger_transition_allowed(enum ledger_state from, enum ledger_state to);
/* True when a new entry may start in <s> (planned or started). */
bool ledger_initial_allowed(enum ledger_state s);
/* True for succeeded and failed: no transition leaves them. */
bool ledger_state_is_terminal(enum ledger_state s);
/* True when an automatic replay of the operation's model call must be refused
 * (started, unknown: the effect may have happened); docs/design.md §6 reconcile_required. */
bool ledger_state_blocks_replay(enum ledger_state s);

/* True when <id> is 1..LEDGER_OP_ID_MAX bytes of [A-Za-z0-9._:~-]: safe in a URL path,
 * a log line and a Redis key without escaping. */
bool ledger_op_id_valid(struct bsc_str id);

/* The store key of operation <op_id> for a caller whose name space is <scope> (a client
 * scope such as "client:<digest>"; "" = the shared name space of an open gateway, where the
 * key is <op_id> itself). Scoped keys are "<scope>~<op_id>", or "<scope>~h.<sha256 of op_id>"
 * when that would pass LEDGER_OP_ID_MAX; they are valid operation ids. <out> holds at least
 * LEDGER_OP_ID_MAX + 1 bytes. Returns BSC_EINVAL when <op_id> or <scope> is not valid. */
enum bsc_err ledger_scoped_id(const char *scope, struct bsc_str op_id, char *out, size_t len);

/* Parses an update body, {"tool_name": str, "state": str, "external_reference"?: str|null}.
 * Unknown members are refused (a typo must not silently drop data), and so is a member
 * named twice, escapes decoded ("st\u0061te" is "state"), as on every JSON endpoint:
 * BSC_EINVAL with why->code "duplicate_key". Returns BSC_OK and
 * fills <out>; BSC_EPARSE when <json> is not a JSON object, BSC_EINVAL when a member is
 * missing, of the wrong type, too long, not UTF-8 text, or an unknown state; *<why> says
 * which. Never calls back. */
enum bsc_err ledger_update_parse(struct bsc_str json, struct ledger_update *out,
                                 struct ledger_parse_err *why);

/* Applies <u> to operation <op_id> whose stored entry is <cur> (NULL: none) at wall time
 * <now_ms>. Returns BSC_OK with the entry to store in *<out> and what happened in
 * *<outcome> (UNCHANGED: *<out> is a copy of *<cur>, nothing to write). Returns
 * BSC_ESTATE, *<out> untouched, when the transition is illegal, when <u> names another
 * tool than the entry's, or when a repeat carries an external reference that differs
 * from the stored one; BSC_EINVAL when <op_id> is invalid. <out> may alias <cur>. */
enum bsc_err ledger_apply(const struct ledger_entry *cur, struct bsc_str op_id,
                          const struct ledger_update *u, uint64_t now_ms,
                          struct ledger_entry *out, enum ledger_outcome *outcome);

/* Appends <e> as a JSON object: {"object":"ledger.entry","operation_id","tool_name",
 * "state","external_reference" (string or null),"version","created_at_ms",
 * "updated_at_ms"}. BSC_ELIMIT/BSC_ENOMEM from <out>. */
enum bsc_err ledger_entry_to_json(const struct ledger_entry *e, struct bsc_buf *out);
/* Parses what ledger_entry_to_json wrote (members in any order, "object" optional).
 * Returns BSC_OK, or BSC_EPARSE / BSC_EINVAL with *<out> unspecified. */
enum bsc_err ledger_entry_from_json(struct bsc_str json, struct ledger_entry *out);

#endif
