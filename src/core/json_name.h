/* SPDX-License-Identifier: MIT */
/* json_name.h -- JSON member names compared as parsers read them: with their escapes
 * decoded ("\u006dodel" is "model"), so the gateway and the upstream agree on which
 * member is which. Allocation-free: a name is decoded a byte at a time while it is
 * compared; a name without a backslash is compared as it is. Names that parsers decode
 * differently (a lone surrogate escape, an escaped NUL, which json-c cuts a name at) are
 * reported as ambiguous rather than guessed at. See docs/internals/json-names.md. */
#ifndef BSC_CORE_JSON_NAME_H
#define BSC_CORE_JSON_NAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/str.h"

/* What bsc_json_name_scan learnt of a raw name. */
struct bsc_json_name_info {
    uint32_t hash;  /* FNV-1a of the decoded bytes */
    size_t len;     /* decoded length in bytes */
    bool escaped;   /* the raw form holds a backslash */
};

/* Scans the raw contents of a JSON string <raw> (between the quotes, escapes as written).
 * Returns true with *<info> filled, false when <raw> is ambiguous: a malformed escape, a
 * lone surrogate escape or an escaped NUL. Bounded by <raw>. */
bool bsc_json_name_scan(struct bsc_str raw, struct bsc_json_name_info *info);

/* The hash bsc_json_name_scan gives a name without escapes, for a caller that knows <raw>
 * holds no backslash (a tokenizer's name with its <escaped> false): FNV-1a of its bytes,
 * without the look for a backslash. */
static inline uint32_t bsc_json_name_hash_plain(struct bsc_str raw)
{
    const unsigned char *b = (const unsigned char *)raw.p;
    uint32_t h = 2166136261u;
    size_t i = 0;

    /* Four bytes a step: the same hash with a quarter of the loop's compares. */
    for (; raw.len - i >= 4; i += 4) {
        h = (h ^ b[i]) * 16777619u;
        h = (h ^ b[i + 1]) * 16777619u;
        h = (h ^ b[i + 2]) * 16777619u;
        h = (h ^ b[i + 3]) * 16777619u;
    }
    for (; i < raw.len; i++)
        h = (h ^ b[i]) * 16777619u;
    return h;
}

/* 1 when the raw name <raw>, decoded, is the bytes <plain>; 0 when not; -1 when <raw> is
 * ambiguous (see bsc_json_name_scan). */
int bsc_json_name_eq(struct bsc_str raw, struct bsc_str plain);

/* 1 when the raw names <a> and <b> decode to the same bytes; 0 when not; -1 when either is
 * ambiguous. */
int bsc_json_names_eq(struct bsc_str a, struct bsc_str b);

/* Decodes the raw name <raw> into <buf> (<cap> bytes, NUL-terminated when <cap> > 0),
 * cutting at a UTF-8 character boundary when it does not fit. Returns the bytes written
 * (without the NUL), or 0 with an empty <buf> when <raw> is ambiguous. For messages. */
size_t bsc_json_name_decode(struct bsc_str raw, char *buf, size_t cap);

/* False only when no string in the JSON text <doc> can decode to something containing
 * <plain>: the raw bytes hold neither <plain> nor an escape that could spell part of it
 * ("image\u005furl"). A cheap gate before a decoding walk. */
bool bsc_json_may_hold(struct bsc_str doc, struct bsc_str plain);

#endif
