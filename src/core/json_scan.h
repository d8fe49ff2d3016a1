/* SPDX-License-Identifier: MIT */
/* json_scan.h -- byte-level helpers for JSON that was already validated: find the raw
 * span of a member's value, iterate an array, read scalars -- so the fast path can read
 * the few fields it needs and rewrite "model" by splicing bytes, without a parse tree.
 * Run them only on documents bsc_json_check (or a parser) accepted. */
#ifndef BSC_CORE_JSON_SCAN_H
#define BSC_CORE_JSON_SCAN_H

#include <stdbool.h>

#include "core/str.h"

/* Finds the value of member <key> of the top-level object in <doc> and sets *<value> to
 * its raw bytes (quotes included for strings). Returns false when <doc> is not an
 * object, has no such member, or has it more than once (parsers disagree on which
 * duplicate wins, so the gateway refuses to guess). Names are compared decoded
 * ("\u0074ype" is "type", json_name.h); a name parsers decode differently (a lone
 * surrogate or NUL escape) counts as a repetition when <key> is asked for. Bounded by
 * <doc>; never reads past it. */
bool bsc_json_member_span(struct bsc_str doc, struct bsc_str key, struct bsc_str *value);

/* Like bsc_json_member_span, telling the cases apart: 1 found once, 0 absent, -1 repeated
 * or <doc> not an object. */
int bsc_json_member(struct bsc_str doc, struct bsc_str key, struct bsc_str *value);

/* One pass over the top-level members of <doc>: vals[k] is the value span of keys[k], or
 * {NULL, 0} when absent. Names compared decoded, as above. Returns 1, or -1 when a wanted
 * key is repeated, a name is ambiguous, or <doc> is not an object. */
int bsc_json_members(struct bsc_str doc, const struct bsc_str *keys, size_t n_keys,
                     struct bsc_str *vals);

/* Like bsc_json_member, but *<entry> is the member whole, from its name's opening quote to
 * the end of its value (`"model" : "x"`): what to splice out or over to drop or replace the
 * member and keep every other byte. 1 found once, 0 absent, -1 repeated or not an object. */
int bsc_json_member_entry(struct bsc_str doc, struct bsc_str key, struct bsc_str *entry);

/* Iterates the members of the object span <obj> with the reading of bsc_json_members (the
 * same skips, the same refusals), for readers that want a few members of a small object in
 * one pass. Start with *<it> zeroed. bsc_json_object_name returns 1 with *<name> (the raw
 * name between its quotes) and *<escaped> (it holds a backslash) and it->pos at the first
 * byte of the member's value, 0 after the last member (it->pos then just past the '}'), -1
 * when <obj> is not an object or is cut or malformed where the scan looks. Then either
 * bsc_json_object_value skips the value (*<value> its span) and the ',' after it, or the
 * caller reads the value itself and bsc_json_object_after(<end>, the index just past it)
 * passes the ','; each returns 1, or -1 as above. bsc_json_object_next is the two. */
struct bsc_json_iter {
    size_t pos;
    bool open; /* the '{' was read */
    bool done; /* the '}' was read */
};
int bsc_json_object_name(struct bsc_str obj, struct bsc_json_iter *it, struct bsc_str *name,
                         bool *escaped);
int bsc_json_object_value(struct bsc_str obj, struct bsc_json_iter *it, struct bsc_str *value);
int bsc_json_object_after(struct bsc_str obj, struct bsc_json_iter *it, size_t end);
int bsc_json_object_next(struct bsc_str obj, struct bsc_json_iter *it, struct bsc_str *name,
                         bool *escaped, struct bsc_str *value);

/* Iterates the elements of the array span <arr>: start with *<pos> = 0; each call sets
 * *<elem> and returns true, false after the last. <arr> must be valid JSON. */
bool bsc_json_array_next(struct bsc_str arr, size_t *pos, struct bsc_str *elem);
/* True when <arr> is an array with at least one element. Reads only up to the first
 * element's first byte: no element is scanned (a first message can be a long prompt). */
bool bsc_json_array_nonempty(struct bsc_str arr);

/* The JSON type of a value span, by its first byte. */
enum bsc_json_kind {
    BSC_JSON_INVALID = 0,
    BSC_JSON_NULL,
    BSC_JSON_BOOL,
    BSC_JSON_NUMBER,
    BSC_JSON_STRING,
    BSC_JSON_ARRAY,
    BSC_JSON_OBJECT
};
enum bsc_json_kind bsc_json_kind_of(struct bsc_str v);

/* True when the span is the literal true. */
bool bsc_json_is_true(struct bsc_str v);
/* The raw contents of a string span without its quotes (escapes not decoded). */
struct bsc_str bsc_json_string_raw(struct bsc_str v);
/* A non-negative integer span; false for anything else (fractions, exponents, signs). */
bool bsc_json_u64(struct bsc_str v, unsigned long long *out);

#endif
