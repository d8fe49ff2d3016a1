/* SPDX-License-Identifier: MIT */
/* internal.h -- what the files of src/contract/ share: the compiled schema node, JSON values
 * (numbers, equality, hashing, the strict text parser), the pattern engine and the formats.
 * Never included from outside src/contract/ (tests and fuzz targets excepted).
 * See docs/internals/jsonschema.md. */
#ifndef BSC_CONTRACT_INTERNAL_H
#define BSC_CONTRACT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "core/compat.h"
#include "core/err.h"
#include "core/str.h"
#include "core/utf8.h"
#include "contract/jsonschema.h"
#include "contract/regex.h"

/* ---- JSON values (jsonschema_value.c) -------------------------------------------------------- */

/* A JSON number kept exactly as json-c holds it: integers as int64 or (past INT64_MAX) uint64,
 * everything else as a double. */
struct js__num {
    enum { JS__NUM_I64 = 0, JS__NUM_U64, JS__NUM_DBL } kind;
    union {
        int64_t i;
        uint64_t u;
        double d;
    } v;
};

/* The JSON types as JSON Schema names them; "integer" is a number with no fraction. */
enum js__type {
    JS__T_NULL = 0,
    JS__T_BOOLEAN,
    JS__T_OBJECT,
    JS__T_ARRAY,
    JS__T_NUMBER,
    JS__T_STRING,
    JS__T_INTEGER,
    JS__T_COUNT
};

#define JS__TYPE_BIT(t) (1u << (t))

/* The schema name of <t> ("null", ..., "integer"). */
const char *js__type_name(enum js__type t);
/* The type of <o> (NULL is null); a number with an integral value is JS__T_INTEGER. */
enum js__type js__type_of(struct json_object *o);

/* Reads the number <o> into *<n>. False when <o> is not a number. */
bool js__num_get(struct json_object *o, struct js__num *n);
/* True when <n> is finite. */
bool js__num_is_finite(const struct js__num *n);
/* True when <n> has no fractional part (1.0 is an integer, as in JSON Schema 2020-12). */
bool js__num_is_integer(const struct js__num *n);
/* Compares the exact values of <a> and <b> (both finite): -1, 0 or 1. */
int js__num_cmp(const struct js__num *a, const struct js__num *b);
/* True when <x> is a multiple of <m> (> 0): exact for integers, within a relative 1e-9 for
 * other doubles; a quotient that overflows is not a multiple. */
bool js__num_is_multiple(const struct js__num *x, const struct js__num *m);
/* Formats <n> for messages into <buf>. */
void js__num_fmt(const struct js__num *n, char *buf, size_t len);

/* JSON equality (numbers by value, objects independent of member order). Each value visited
 * costs one unit of *<budget>; when it runs out the result is false and *<budget> is 0. */
bool js__json_equal(struct json_object *a, struct json_object *b, uint64_t *budget);
/* A hash consistent with js__json_equal(): equal values hash equal. Same budget rule. */
uint64_t js__json_hash(struct json_object *o, uint64_t *budget);

/* Checks that <o> is JSON a client could have received: nesting within <max_depth>, finite
 * numbers, UTF-8 strings and member names. On failure writes the pointer of the offending value
 * to <ptr> (size <ptrlen>) and a reason to <why> (size <whylen>) and returns false. */
bool js__json_check(struct json_object *o, unsigned max_depth, char *ptr, size_t ptrlen,
                    char *why, size_t whylen);

/* True when <p>/<len> is well-formed UTF-8. */
/* Counts the code points of <p>/<len>: bytes that do not continue a sequence. */
size_t js__utf8_count(const char *p, size_t len);

/* Parses <text> strictly (see js_validate_text()) into *<out> (caller owns; NULL stands for a
 * JSON null document, so check the return value). Returns BSC_OK; BSC_EPARSE with a reason
 * naming the byte offset in <why>; BSC_ENOMEM. */
enum bsc_err js__parse(struct bsc_str text, unsigned max_depth, struct json_object **out,
                       char *why, size_t whylen);

/* Appends RFC 6901 pointer segment <name> (escaped) to <buf> of size <cap> whose used length is
 * *<len>. Returns false, leaving <buf> unchanged, when it does not fit. */
bool js__ptr_push(char *buf, size_t cap, size_t *len, const char *name, size_t namelen);

/* ---- patterns (jsonschema_regex.c) ----------------------------------------------------------- */

/* The schema compiles its patterns with contract/regex.h, without flags: JSON Schema has none. */

/* ---- formats (jsonschema_format.c) ----------------------------------------------------------- */

enum js__format {
    JS__FMT_NONE = 0, /* not asserted: an annotation */
    JS__FMT_DATE_TIME,
    JS__FMT_DATE,
    JS__FMT_TIME,
    JS__FMT_UUID,
    JS__FMT_IPV4,
    JS__FMT_IPV6,
    JS__FMT_COUNT
};

/* The asserted format called <name>, or JS__FMT_NONE for any other (annotation only). */
enum js__format js__format_lookup(const char *name);
const char *js__format_name(enum js__format f);
/* True when <s>/<len> is in format <f> (always true for JS__FMT_NONE). */
bool js__format_check(enum js__format f, const char *s, size_t len);

/* ---- the compiled schema (jsonschema_compile.c builds it, jsonschema.c runs it) -------------- */

enum {
    JS__HAS_TYPE = 1u << 0,
    JS__HAS_CONST = 1u << 1,
    JS__HAS_ENUM = 1u << 2,
    JS__HAS_MINIMUM = 1u << 3,
    JS__HAS_MAXIMUM = 1u << 4,
    JS__HAS_EXMIN = 1u << 5,
    JS__HAS_EXMAX = 1u << 6,
    JS__HAS_MULTIPLE = 1u << 7,
    JS__HAS_MIN_LEN = 1u << 8,
    JS__HAS_MAX_LEN = 1u << 9,
    JS__HAS_MIN_ITEMS = 1u << 10,
    JS__HAS_MAX_ITEMS = 1u << 11,
    JS__HAS_MIN_PROPS = 1u << 12,
    JS__HAS_MAX_PROPS = 1u << 13,
    JS__HAS_UNIQUE = 1u << 14
};

struct js__node;

struct js__prop {
    char *name; /* owned, NUL-terminated (json-c names cannot hold U+0000) */
    size_t len;
    struct js__node *schema; /* owned by the js_schema */
};

struct js__pprop {
    struct js_regex *re; /* owned */
    char *source;      /* owned, for messages */
    struct js__node *schema;
};

struct js__list {
    struct js__node **v; /* owned array; the nodes are owned by the js_schema */
    size_t n;
};

/* One compiled subschema. Pointers to other nodes are borrowed: every node is owned by the
 * js_schema's node table, so shared and recursive ($ref) subschemas are plain pointers. */
struct js__node {
    char *path;      /* owned: the schema pointer, for messages */
    bool is_bool;    /* a true/false schema: only <bool_value> matters */
    bool bool_value;
    uint32_t has;    /* JS__HAS_* */
    uint32_t types;  /* JS__TYPE_BIT() mask, when JS__HAS_TYPE */
    struct js__node *ref; /* $ref target, or NULL */

    struct json_object *const_val;   /* one reference held; NULL is JSON null */
    struct json_object **enum_vals;  /* owned array, one reference held on each */
    size_t n_enum;

    struct js__list all_of, any_of, one_of;
    struct js__node *not_schema;

    struct js__num minimum, maximum, ex_min, ex_max, multiple_of;

    uint64_t min_len, max_len; /* code points */
    struct js_regex *pattern;    /* owned, or NULL */
    char *pattern_src;         /* owned, for messages */
    enum js__format format;

    uint64_t min_items, max_items;
    struct js__list prefix_items;
    struct js__node *items;

    uint64_t min_props, max_props;
    struct js__prop *props; /* owned array, sorted by (len, bytes) for bsearch */
    size_t n_props;
    struct js__prop *required; /* owned array; .schema unused */
    size_t n_required;
    struct js__pprop *pprops; /* owned array */
    size_t n_pprops;
    struct js__node *additional;

    /* Compile-time only: the longest $ref/allOf/anyOf/oneOf/not chain from here. */
    uint8_t visit; /* 0 unseen, 1 on the current path, 2 done */
    uint32_t chain;
};

struct js_schema {
    struct js__node **nodes; /* owned, each node owned */
    size_t n_nodes;
    size_t cap_nodes;
    struct js__node *root;
};

/* Frees one node's own storage (not the nodes it points to). */
void js__node_free(struct js__node *n);

#endif
