/* SPDX-License-Identifier: MIT */
/* sjson.h -- the few json-c helpers bascule-sim shares between its parsers: strict,
 * UTF-8-validating parsing of a whole buffer, and typed field getters that say what was
 * wrong. Pure. */
#ifndef BSC_SIM_SJSON_H
#define BSC_SIM_SJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/str.h"

#define SIM_JSON_MAX_DEPTH 64

/* Parses all of <text> as one JSON value (strict, UTF-8 validated, nothing after it but
 * whitespace). Returns a new reference the caller puts, or NULL with a reason in
 * <errbuf> (which may be NULL). */
struct json_object *sim_json_parse(struct bsc_str text, char *errbuf, size_t errlen);

/* Reads the integer field <key> of <obj> into *<out> when present. Returns BSC_OK (also
 * when absent: *<out> untouched, *<present> false), or BSC_EINVAL with a reason in
 * <errbuf> when it is not an integer in [<min>, <max>]. <present> may be NULL. */
enum bsc_err sim_json_get_u32(struct json_object *obj, const char *key, uint32_t min,
                              uint32_t max, uint32_t *out, bool *present, char *errbuf,
                              size_t errlen);

/* The string value of field <key>, or {NULL,0} when absent or not a string. Borrowed
 * from <obj>. */
struct bsc_str sim_json_get_str(struct json_object *obj, const char *key);

/* Appends <obj> serialized compactly (no slash escaping) to <out>. */
enum bsc_err sim_json_append(struct bsc_buf *out, struct json_object *obj);

#endif
