/* SPDX-License-Identifier: MIT */
/* schema_gen.h -- what bascule-sim says when a request carries a JSON Schema for the
 * answer (a response_format schema, a tool's parameters): a small, plausible value valid
 * against it, as a model in structured-output mode would produce. Deterministic: the same
 * schema always gives the same bytes. Best effort where JSON Schema lets a generator down
 * (patterns, overlapping oneOf branches, not): see docs/internals/sim.md for the rules.
 * Pure: no I/O, no clock, no globals. */
#ifndef BSC_SIM_SCHEMA_GEN_H
#define BSC_SIM_SCHEMA_GEN_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/str.h"

#define SIM_SCHEMA_MAX_DEPTH  24u   /* nested objects/arrays; at the bound: {} and [] */
#define SIM_SCHEMA_SOFT_DEPTH 6u    /* from this depth on: required members and minItems only,
                                       so recursive schemas end */
#define SIM_SCHEMA_MAX_NODES  4096u /* values in one generated instance (else BSC_ELIMIT) */
#define SIM_SCHEMA_MAX_HOPS   64u   /* $ref/allOf/anyOf/oneOf expansions for one value */
#define SIM_SCHEMA_MAX_TEXT   (64u * 1024u) /* bytes of one generated string */

/* Generates into *<out> a value valid against <schema> (borrowed: a JSON Schema object or
 * boolean; "#..." references resolve inside it). *<out> is a new reference the caller puts;
 * NULL stands for JSON null (json-c's convention). What is generated:
 *  - const, else the first enum value;
 *  - $ref (inside the document) and allOf merged into one schema; anyOf/oneOf: the first
 *    branch that is not just null (else the first), merged with its siblings;
 *  - a type array: its first non-null type; no type: inferred from the keywords;
 *  - objects: the required members, or if none the first declared property, then more
 *    declared (or "keyN") members up to minProperties;
 *  - arrays: minItems items, but one (or every prefixItems entry) when minItems allows it
 *    and maxItems is not 0; items differ from each other (uniqueItems);
 *  - strings: a format's sample, a string generated from "pattern" and checked with the
 *    gateway's validator (else the first example, the default, or plain text), plain text
 *    from the property name ("city" -> "Oslo") within minLength/maxLength;
 *  - integers/numbers: 1 (or the next item's value) moved inside the bounds and onto
 *    multipleOf; booleans true; null.
 * Returns BSC_OK, BSC_ELIMIT past SIM_SCHEMA_MAX_NODES or _TEXT, BSC_ENOMEM. On error
 * *<out> is NULL. A schema nothing satisfies (false, contradictions) still gets a value.
 * Never calls back. */
enum bsc_err sim_schema_gen(struct json_object *schema, struct json_object **out);

/* As sim_schema_gen(), appended to <out> as compact JSON text ("null" for null). On error
 * <out> may hold part of the text. */
enum bsc_err sim_schema_gen_text(struct json_object *schema, struct bsc_buf *out);

/* The generated instance of <schema> as compact JSON text the caller frees, or NULL on
 * error (memory, a bound). */
char *sim_schema_gen_dup(struct json_object *schema);

/* Tool-call arguments for a tool whose parameters schema is <params> (borrowed; NULL when
 * the tool declares none): the generated instance when it is an object with members; when
 * it is {} (or not an object: arguments are an object), the echo arguments of <user_text>
 * (sim_content_tool_args) if the gateway's validator finds them valid against <params>
 * (a schema such as {"type":"object"} says nothing they must hold), else {}. Without
 * <params>, or when generation fails, the echo. Returns JSON text the caller frees, or NULL
 * when memory ran out. */
char *sim_schema_tool_args(struct json_object *params, struct bsc_str user_text);

/* Appends to <out> a string the ECMA-262 pattern <pattern> matches (best effort): the
 * first alternative of each alternation, one representative per class, each quantifier's
 * minimum plus <stretch> (capped by its maximum). Returns BSC_OK, BSC_EINVAL for what it
 * cannot generate (lookaround, backreferences, property escapes, U+0000, an empty class, a
 * malformed pattern), BSC_ELIMIT past SIM_SCHEMA_MAX_TEXT bytes, BSC_ENOMEM; on error
 * <out> may hold part of a string. Callers check the result against the pattern. */
enum bsc_err sim_schema_pattern_sample(struct bsc_str pattern, unsigned stretch,
                                       struct bsc_buf *out);

#endif
