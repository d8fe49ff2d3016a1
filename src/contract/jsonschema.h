/* SPDX-License-Identifier: MIT */
/* jsonschema.h -- the structured-output contract: a JSON Schema (2020-12 semantics) for the
 * subset providers accept in response_format json_schema and tool parameters, compiled once and
 * checked against many answers. Anything outside the subset is refused at compile time with the
 * keyword and its JSON pointer, never silently ignored. It does no I/O, reads no clock, keeps no
 * global state; a compiled schema is immutable and may be shared by threads.
 * See docs/internals/jsonschema.md for the supported keywords, limits and dialect notes. */
#ifndef BSC_CONTRACT_JSONSCHEMA_H
#define BSC_CONTRACT_JSONSCHEMA_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "core/compat.h"
#include "core/err.h"
#include "core/str.h"

/* Bounds. A schema past one of the JS_MAX_SCHEMA_* / pattern bounds is refused by js_compile()
 * with BSC_ELIMIT; an instance past a validation bound fails with keyword "limit". */
#define JS_MAX_SCHEMA_NODES    4096     /* subschemas compiled from one document */
#define JS_MAX_SCHEMA_DEPTH    32       /* subschemas nested inside one another */
#define JS_MAX_REF_CHAIN       16       /* $ref/allOf/anyOf/oneOf/not hops on one value */
#define JS_MAX_PATTERN_LEN     4096     /* bytes of one "pattern" or patternProperties key */
#define JS_MAX_PATTERN_STATES  10000    /* automaton states of one compiled pattern */
#define JS_MAX_PATTERN_TOTAL   100000   /* automaton states of all patterns of a schema */
#define JS_MAX_PATTERN_REPEAT  1000     /* largest bound in a {n,m} quantifier */
#define JS_MAX_INSTANCE_DEPTH  64       /* arrays/objects nested in a validated value */
#define JS_MAX_EVAL_DEPTH      512      /* nested subschema applications while validating */
#define JS_MAX_STEPS           1000000  /* subschema applications + values compared, per call */
#define JS_MAX_REGEX_STEPS     5000000  /* pattern automaton steps, per call */
#define JS_MAX_NUMBER_LEN      256      /* bytes of one number in js_validate_text() input */

struct js_schema; /* opaque, immutable once compiled */

/* Where and why an instance failed. All three are NUL-terminated and always set on failure
 * (empty strings on success). <pointer> is the RFC 6901 pointer of the failing value ("" is the
 * whole document, "/items/2/name" a nested member; '~' and '/' in names are escaped as ~0 and
 * ~1); a pointer that does not fit is cut at a character boundary and ends in "...".
 * <keyword> is the schema keyword that failed ("type", "required", "additionalProperties",
 * ...; "false" for a root schema of false), "json" when the value is not strict JSON, or
 * "limit" when a bound above was hit or memory ran out. */
struct js_error {
    char pointer[256];
    char keyword[32];
    char message[256];
};

/* Compiles <schema> (borrowed; a JSON object or a boolean, e.g. from json-c) into *<out>, which
 * the caller owns and frees with js_free(). The compiled schema holds its own references to the
 * enum/const values it needs and copies everything else, so <schema> may be freed afterwards.
 * Returns BSC_OK; BSC_EINVAL for a malformed schema, an unsupported keyword, a $ref that does not
 * resolve inside the document or a $ref cycle that never descends into the instance; BSC_ELIMIT
 * past a JS_MAX_SCHEMA_* / pattern bound; BSC_ENOMEM. On error *<out> is NULL and <err> (when
 * <errlen> > 0) holds "<schema pointer>: <reason>", e.g.
 * "/properties/a: unsupported keyword \"if\"". Never calls back. */
enum bsc_err js_compile(struct json_object *schema, struct js_schema **out, char *err,
                        size_t errlen);

/* Validates <instance> (borrowed; NULL is JSON null, as in json-c) against <s>. Returns true when
 * it is valid. Otherwise returns false and fills <err> (which may be NULL) with the first
 * failure in the documented evaluation order. Besides schema failures, a value nested deeper
 * than JS_MAX_INSTANCE_DEPTH, a non-finite double or a string that is not UTF-8 fails
 * (keyword "json"), and so does exhausting JS_MAX_STEPS / JS_MAX_REGEX_STEPS / JS_MAX_EVAL_DEPTH
 * or memory (keyword "limit"). Reentrant: <s> is only read. */
bool js_validate(const struct js_schema *s, struct json_object *instance, struct js_error *err);

/* As js_validate() on the JSON document <json_text> (borrowed, need not be NUL-terminated),
 * parsed strictly: RFC 8259 grammar only (no NaN, comments, trailing commas or garbage),
 * well-formed UTF-8, no lone surrogate escapes, no duplicate member names, no U+0000 in member
 * names, numbers that fit a double, nesting up to JS_MAX_INSTANCE_DEPTH. A parse failure is
 * reported at pointer "" with keyword "json" and the byte offset in the message. */
bool js_validate_text(const struct js_schema *s, struct bsc_str json_text, struct js_error *err);

/* Frees <s> and everything it owns. NULL is fine. */
void js_free(struct js_schema *s);

#endif
