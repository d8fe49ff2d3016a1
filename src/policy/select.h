/* SPDX-License-Identifier: MIT */
/* select.h -- task routing: which route a `select` route hands a request to. The first rule
 * whose conditions all hold wins; a rule without conditions always holds. Pure: the request is
 * described by a struct sel_facts the caller fills (request.c), so every condition is tested
 * without a server. See docs/configuration.md "select", docs/internals/request-lifecycle.md. */
#ifndef BSC_POLICY_SELECT_H
#define BSC_POLICY_SELECT_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "core/str.h"

/* Automaton steps all last_user_matches searches of one request may take (a few ms). A search
 * that runs out counts as no match: a huge prompt goes to the later rules, never stalls. */
#define SEL_MAX_REGEX_STEPS 20000000u

/* Looks up a request header by name (case-insensitive); {NULL, 0} when absent. */
typedef struct bsc_str sel_header_fn(const void *ctx, struct bsc_str name);

/* What the rules read of a request; everything borrowed for the call. */
struct sel_facts {
    bool tools, images, json_schema, stream;
    uint64_t input_tokens;    /* the gateway's estimate of the prompt (bytes / 4) */
    uint64_t messages;        /* messages of the OpenAI-shaped request */
    struct bsc_str last_user; /* the last user message's text, decoded */
    struct bsc_str metadata;  /* the raw value of the client body's top-level "metadata", or
                                 empty */
    sel_header_fn *header;    /* NULL: no headers */
    const void *header_ctx;
};

/* True when every condition of <rule> holds for <f>. Metadata: the header
 * X-Bascule-Meta-<key> when the request has it, else the body's metadata member (a JSON
 * string), compared exactly. *<budget> is spent by the pattern search. Never calls back. */
bool sel_rule_holds(const struct cfg_sel_rule *rule, const struct sel_facts *f, uint64_t *budget);

/* The index of the first rule of <route> that holds for <f>, or -1 when none does. */
int sel_pick(const struct cfg_route *route, const struct sel_facts *f, uint64_t *budget);

/* Reads the messages array span <messages> (valid JSON): *<count> messages, and the text of
 * the last one whose role is "user" (a string content, or its "text" parts joined by "\n"),
 * decoded, in a new NUL-terminated string the caller frees (*<len> bytes; "" when there is no
 * user message). Returns NULL only when out of memory. */
char *sel_read_messages(struct bsc_str messages, uint64_t *count, size_t *len);

#endif
