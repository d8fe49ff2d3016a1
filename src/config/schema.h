/* SPDX-License-Identifier: MIT */
/* schema.h -- the table-driven schema engine (schema.c): a map decoded by a table of
 * fields, a key looked up in a map, the scalar readers and the wording of its messages. */
#ifndef BSC_CONFIG_SCHEMA_H
#define BSC_CONFIG_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/internal.h"

/* Decodes <map> with the table <fields> into <base>: unknown keys, types, ranges, enums and
 * missing required keys are reported; <line>:<column> places "missing" errors. A null <map>
 * keeps every default (and reports missing required keys). */
void cfg__decode_map(struct cfg__v *v, const struct cfg__node *map, const struct cfg__field *fields,
                     size_t n_fields, void *base, const char *where, unsigned line,
                     unsigned column);

/* Returns the entry of <map> whose key is <key> (the last one when repeated), or NULL. */
const struct cfg__entry *cfg__map_find(const struct cfg__node *map, const char *key);

/* Writes into <out> how messages refer to <key> inside <where>: "'k' in <where>" or "'k'". */
void cfg__keyref(char *out, size_t size, const char *where, const char *key);
/* Writes into <out> the name of the map at <key> inside <where>, for nested messages. */
void cfg__subwhere(char *out, size_t size, const char *where, const char *key);
/* Writes a short, safe description of <n> for messages: 'text' (as written), a map, a list. */
void cfg__describe(char *out, size_t size, const struct cfg__node *n);

/* The same, except that the value of a secret-like <key> (cfg__is_secret_name) is never
 * quoted: a scalar there is described as "a string (not shown)". */
void cfg__describe_at(char *out, size_t size, const char *key, const struct cfg__node *n);

/* "expected <what>, got <n>" at <n>'s place, for the key <key> of <where>. */
void cfg__bad_type(struct cfg__v *v, const struct cfg__node *n, const char *where, const char *key,
                   const char *what);

/* Scalar readers: each returns true and sets *<out> when <n> holds a valid value. They
 * return false quietly for null and bad nodes, and after reporting a problem otherwise. */
bool cfg__get_u64(struct cfg__v *v, const struct cfg__node *n, const char *where, const char *key,
                  uint64_t lo, uint64_t hi, uint64_t *out);
bool cfg__get_str(struct cfg__v *v, const struct cfg__node *n, const char *where, const char *key,
                  const char **out);
/* Like cfg__get_str, and the value must be one of <names>: *<out> is its index. */
bool cfg__get_enum(struct cfg__v *v, const struct cfg__node *n, const char *where, const char *key,
                   const char *const *names, size_t n_names, unsigned *out);

/* Records an allocation failure; returns NULL for convenience. */
void *cfg__oom(struct cfg__v *v);

#endif
