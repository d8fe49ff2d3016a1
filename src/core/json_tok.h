/* SPDX-License-Identifier: MIT */
/* json_tok.h -- the gateway's one JSON grammar: a strict, allocation-free pull tokenizer
 * (RFC 8259: one value, nothing but whitespace around it, strings of well-formed UTF-8 with
 * no raw control characters and only the eight escapes and \uXXXX, numbers exactly as the
 * RFC writes them, true/false/null) with a depth bound. It checks the structure too (where a
 * name, a ':' or a ',' may stand), so a caller only reacts to the tokens it is handed: the
 * request checks (json_check.h), the schema compiler's parser and the idempotency
 * canonicaliser all read JSON through it. Plain string bytes are skipped 16 at a time (SSE2;
 * 8 elsewhere). What it does not decide: duplicate names, lone surrogate escapes, number
 * ranges -- those are each caller's rule (bsc_json_unescape refuses lone surrogates).
 * See docs/internals/json.md. */
#ifndef BSC_CORE_JSON_TOK_H
#define BSC_CORE_JSON_TOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/str.h"

/* The deepest nesting any caller may ask for (containers open at once). */
#define BSC_JSON_MAX_DEPTH 256

enum bsc_jtok_kind {
    BSC_JTOK_END = 0,   /* the document ended after one complete value (sticky) */
    BSC_JTOK_ERROR,     /* the document is not valid JSON: see the tokenizer's what/err_off */
    BSC_JTOK_OBJ_OPEN,  /* { */
    BSC_JTOK_OBJ_CLOSE, /* } */
    BSC_JTOK_ARR_OPEN,  /* [ */
    BSC_JTOK_ARR_CLOSE, /* ] */
    BSC_JTOK_COLON,     /* : after a member name */
    BSC_JTOK_COMMA,     /* , between members or elements */
    BSC_JTOK_NAME,      /* a member name (a string in name position) */
    BSC_JTOK_STRING,    /* a string value */
    BSC_JTOK_NUMBER,
    BSC_JTOK_TRUE,
    BSC_JTOK_FALSE,
    BSC_JTOK_NULL,
    BSC_JTOK_COUNT
};

/* One token. */
struct bsc_jtok {
    enum bsc_jtok_kind kind;
    size_t off;         /* byte offset of its first byte (for ERROR: where the token began) */
    size_t end;         /* byte offset just past it (a string's closing quote included) */
    struct bsc_str raw; /* NAME/STRING: the bytes between the quotes, escapes as written;
                         * otherwise the token's bytes. Borrowed from the document. */
    bool escaped;       /* NAME/STRING: <raw> holds a backslash (decode before comparing) */
    unsigned depth;     /* containers around it: 0 for the top-level value and its closer,
                         * 1 for the top-level container's names, values and separators */
};

/* The tokenizer. Embedded by the caller; fields are private to json_tok.c except <what> and
 * <err_off>, which say why and where it stopped once it returned BSC_JTOK_ERROR. */
struct bsc_json_tok {
    const unsigned char *p;
    size_t n;
    unsigned depth, max_depth;
    size_t i; /* not next to <n>: a paired load of the two would wait on the last store of i */
    uint8_t state;
    bool quiet; /* bsc_json_tok_quiet */
    uint64_t stack[BSC_JSON_MAX_DEPTH / 64]; /* bit set: an object, clear: an array */
    const char *what; /* static description of the error */
    size_t err_off;   /* byte offset of the first offending byte (the length at the end) */
};

/* Sets <t> up over <doc> (borrowed; doc.p may be NULL when doc.len is 0). At most
 * <max_depth> containers may be open at once (clamped to BSC_JSON_MAX_DEPTH; 0 allows
 * scalars only). Cannot fail. */
void bsc_json_tok_init(struct bsc_json_tok *t, struct bsc_str doc, unsigned max_depth);

/* Quiet mode, for readers that react to names and values only: ':' and the ',' between an
 * object's members are still checked where they stand but not handed out (the next token is
 * the one after them); the ',' between array elements still is. Errors and their offsets
 * are those of the token-by-token reading. */
void bsc_json_tok_quiet(struct bsc_json_tok *t);

/* The next token into *<tok>, returned as well. After BSC_JTOK_END or BSC_JTOK_ERROR every
 * call returns the same. Never reads past the document; never allocates. */
enum bsc_jtok_kind bsc_json_tok_next(struct bsc_json_tok *t, struct bsc_jtok *tok);

/* bsc_json_tok_next in quiet mode that does not hand out a member's name alone: the name
 * goes into *<name> (kind BSC_JTOK_NAME, fields as bsc_json_tok_next gives them) and the
 * token returned is what follows its ':' -- the member's value, or the error met after the
 * name (its ':' or its value), the name then still in *<name>. name->kind is BSC_JTOK_END
 * when no name was read (an array's element, a closer, an error in or before the name).
 * Tokens, errors and offsets are otherwise those of bsc_json_tok_next. For the request
 * checks' walk over the top-level members: one call a member. */
enum bsc_jtok_kind bsc_json_tok_member(struct bsc_json_tok *t, struct bsc_jtok *tok,
                                       struct bsc_jtok *name);

/* The rest of the innermost open container -- everything after the opener the last token
 * was, through its matching closer -- checked by the same grammar but handed to no one: the
 * closer goes into *<tok> and is returned, as bsc_json_tok_next would have returned it, or
 * the error at the first offending byte (the same error and offset token-by-token reading
 * would meet). With no container open it is bsc_json_tok_next. For callers that only need a
 * value's bounds (the request checks' members below the top level). */
enum bsc_jtok_kind bsc_json_tok_skip(struct bsc_json_tok *t, struct bsc_jtok *tok);

/* bsc_json_tok_skip for the array the last token opened (the tokenizer is right after its
 * '['; otherwise plain bsc_json_tok_skip), whose elements must each be an object: it also
 * stops where an element begins with anything but '{', looked at before the grammar looks
 * at the element (the end of the document is the grammar's error), with BSC_JTOK_ERROR,
 * <what> "an array element that must be an object", <err_off> and the token's <off> that
 * byte, and *<element> true. *<element> is false for any other return. For the request
 * checks' element rule ("messages" holds objects). */
enum bsc_jtok_kind bsc_json_tok_skip_objects(struct bsc_json_tok *t, struct bsc_jtok *tok,
                                             bool *element);

/* True when <doc> is one valid JSON value nested at most <max_depth> deep. Otherwise false,
 * with *<what> and *<off> (either may be NULL) set as bsc_json_tok_next would. */
bool bsc_json_tok_valid(struct bsc_str doc, unsigned max_depth, const char **what,
                        size_t *off);

/* Appends the decoded bytes of the raw string contents <raw> (a NAME or STRING token's
 * <raw>: checked by the tokenizer) to <out>. A surrogate escape must be a high half followed
 * by an escaped low half; otherwise BSC_EPARSE with *<bad> (may be NULL) set to the offset in
 * <raw> of the offending backslash. "\u0000" decodes to a NUL byte. Otherwise BSC_OK, or the
 * error of bsc_buf_append (BSC_ENOMEM, BSC_ELIMIT). */
enum bsc_err bsc_json_unescape(struct bsc_str raw, struct bsc_buf *out, size_t *bad);

#endif
