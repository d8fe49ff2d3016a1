/* SPDX-License-Identifier: MIT */
/* json_parse.h -- a whole text as one JSON value with json-c, strictly: the one way the
 * gateway (and bascule-sim) turns untrusted bytes (a client's request, an upstream answer,
 * a ledger record, a script) into a json-c tree. One value, only whitespace after it, a
 * depth limit, json-c's STRICT mode; bsc_json_parse also says where and why it failed.
 * Name and UTF-8 rules stricter than json-c's live in core/json_check.h. */
#ifndef BSC_CORE_JSON_PARSE_H
#define BSC_CORE_JSON_PARSE_H

#include <stddef.h>

#include <json-c/json.h>

#include "core/str.h"

/* Flags for bsc_json_parse. */
#define BSC_JSON_UTF8 0x1u /* json-c's own UTF-8 check too (client bodies, scripts) */
/* json-c's default (non-strict) mode, and whatever follows the value ignored: how texts the
 * gateway wrote itself (keyrings, admin answers) were always read; never for client bytes. */
#define BSC_JSON_LENIENT 0x2u

/* Why a parse failed; BSC_JSONP_OK when it did not. */
enum bsc_json_why {
    BSC_JSONP_OK = 0,
    BSC_JSONP_SYNTAX,     /* json-c refused a byte (strict mode, bad UTF-8, ...) */
    BSC_JSONP_DEPTH,      /* nested deeper than allowed */
    BSC_JSONP_INCOMPLETE, /* the text ended inside the value (or was empty) */
    BSC_JSONP_TRAILING,   /* something other than whitespace follows the value */
    BSC_JSONP_NULL,       /* the value is null, which json-c gives as no object */
    BSC_JSONP_TOO_LONG,   /* longer than json-c can take (INT_MAX) */
    BSC_JSONP_NOMEM,
    BSC_JSONP_COUNT
};

/* Where and why a parse failed. <offset> is the byte json-c stopped at (for INCOMPLETE,
 * the length of the text); <line> and <col> count from 1, a '\n' starting a new line.
 * <what> is a static description (json-c's wording for SYNTAX and DEPTH). */
struct bsc_json_where {
    enum bsc_json_why why;
    size_t offset;
    unsigned line, col;
    const char *what;
};

/* Parses <s> as one JSON value (json-c STRICT, at most <depth> levels of nesting,
 * <flags> from BSC_JSON_*) followed by nothing but whitespace. A top-level number at the
 * very end is accepted; a bare null is refused (json-c's null is no object). Returns a
 * new reference, or NULL with *<where> filled when
 * <where> is not NULL. <s> is borrowed for the call; s.p may be NULL when s.len is 0. */
struct json_object *bsc_json_parse(struct bsc_str s, int depth, unsigned flags,
                                   struct bsc_json_where *where);

/* bsc_json_parse(<s>, <depth>, 0, NULL): for callers that only need the value. */
struct json_object *bsc_json_parse_whole(struct bsc_str s, int depth);

/* Line and column (1-based) of byte <off> in <s> (clamped to its length). */
void bsc_json_line_col(struct bsc_str s, size_t off, unsigned *line, unsigned *col);

#endif
