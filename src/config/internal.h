/* SPDX-License-Identifier: MIT */
/* internal.h -- the types shared by the files of src/config/ only, never included from outside:
 * the bounds of one load, the diagnostic sink (diag.c), the YAML node tree with 1-based marks
 * (load.c), the state of one validation and the field tables of the schema engine (schema.c).
 * Types only: each function is declared in the header of the file defining it (diag.h,
 * load.h, schema.h, ...), so that including this file depends on none of them.
 * docs/internals/config.md explains how the pieces fit. */
#ifndef BSC_CONFIG_INTERNAL_H
#define BSC_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cfg;
struct cfg_diags;

/* Bounds on what one load may cost, whatever the input (the fuzzer checks them). */
#define CFG__MAX_FILE_BYTES (16u << 20) /* cfg_load refuses larger files */
#define CFG__MAX_DIAGS      200         /* then one "too many problems" line */
#define CFG__MAX_DEPTH      64          /* nesting of maps and lists */
#define CFG__MAX_NODES      1000000     /* nodes once aliases are expanded (billion laughs) */
#define CFG__MAX_ANCHORS    1024
#define CFG__MAX_SCALAR     65536       /* bytes of one scalar after ${VAR} expansion */
#define CFG__MAX_ID         128         /* bytes of a provider, target or route id */

/* ---- diagnostics (diag.c) ------------------------------------------------------------ */

/* Collects the problems of one load into the caller's struct cfg_diags. */
struct cfg__sink {
    struct cfg_diags *out; /* borrowed */
    const char *file;      /* borrowed; copied into each diagnostic */
    size_t first;          /* index in <out> of this load's first diagnostic */
    size_t n_errors;
    size_t n_added;
    bool full; /* CFG__MAX_DIAGS reached: later problems are dropped */
    bool oom;  /* an allocation failed: the load returns BSC_ENOMEM */
};

/* ---- the YAML tree (load.c) ---------------------------------------------------------- */

enum cfg__kind { CFG__SCALAR = 0, CFG__MAP, CFG__SEQ, CFG__KIND_COUNT };

struct cfg__node;

/* A map entry (key is a scalar) or a list item (key is NULL). */
struct cfg__entry {
    struct cfg__node *key;   /* borrowed from the doc */
    struct cfg__node *value; /* borrowed from the doc; may be shared through an alias */
};

struct cfg__node {
    enum cfg__kind kind;
    unsigned line, column; /* 1-based start of the node in the file */
    /* scalars */
    char *text;   /* owned; ${VAR}-expanded (values only, not keys), NUL-terminated */
    size_t len;   /* bytes in text; text holds no NUL byte */
    char *raw;    /* owned; the text as written when expansion changed it, else NULL */
    bool is_null; /* a plain null, ~ or empty scalar */
    bool bad;     /* already reported (expansion failed, unknown alias): stay quiet */
    /* maps and lists */
    struct cfg__entry *items; /* owned array */
    size_t n, cap;
    size_t weight; /* nodes in this subtree with aliases expanded; saturates */
};

struct cfg__doc {
    struct cfg__node *root;    /* borrowed from nodes; NULL for an empty document */
    struct cfg__node **nodes;  /* owned: every node, for cleanup */
    size_t n_nodes, cap_nodes;
};

/* ---- the schema engine (schema.c) ---------------------------------------------------- */

/* Per-object notes for the second pass: nodes whose meaning depends on other sections. */
struct cfg__prov_src {
    const struct cfg__entry *breaker; /* NULL when the provider has no override */
    bool keys_bad;                    /* a key was reported: no "no keys" warning */
    bool has_base_url;                /* the key was written (valid or not) */
    const struct cfg__node *null_base_url; /* its value when it was written null */
    unsigned line, column;            /* the provider's id */
};
struct cfg__target_src {
    const struct cfg__entry *provider;
    const struct cfg__entry *breaker;
    const struct cfg__entry *model;      /* NULL when absent: checked against its kind */
    const struct cfg__entry *deployment; /* NULL when absent */
    unsigned line, column;
};
enum cfg__tier_id { CFG__PRIMARY = 0, CFG__EQUIVALENT, CFG__FALLBACK, CFG__TIER_COUNT };
struct cfg__route_src {
    const struct cfg__entry *tier[CFG__TIER_COUNT];
    const struct cfg__entry *weights;
    const struct cfg__entry *select; /* a select route: its rules, read in the second pass */
    unsigned line, column;
    const struct cfg__entry *shadow_targets;
    const struct cfg__entry *cache_target; /* cache.embeddings_target, resolved in pass 2 */
};

/* The state of one validation. */
struct cfg__v {
    struct cfg__sink *s;
    struct cfg *cfg; /* being built; owned by the caller of cfg__build */
    struct cfg__prov_src *psrc;   /* owned; parallel to cfg->providers */
    struct cfg__target_src *tsrc; /* owned; parallel to cfg->targets */
    struct cfg__route_src *rsrc;  /* owned; parallel to cfg->routes */
    void *cur;                    /* the *_src of the object being decoded */
    const struct cfg__entry *clients_src; /* `clients:`, decoded in the second pass */
    bool oom;
};

struct cfg__field;
/* Decodes one entry whose field is custom. <base> is the struct the table describes;
 * <where> names the enclosing map for messages ("route 'x'", "limits", NULL = top level). */
typedef void cfg__field_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                           void *base, const char *where);
/* Cross-field checks once a whole map is decoded. */
typedef void cfg__check_fn(struct cfg__v *v, const struct cfg__node *map, void *base,
                           const char *where);

enum cfg__ftype {
    CFG__F_U32 = 0, /* uint32_t in [lo, hi] */
    CFG__F_U64,     /* uint64_t in [lo, hi] */
    CFG__F_DBL,     /* double in [dlo, dhi] ((dlo, dhi] when lo_open) */
    CFG__F_BOOL,    /* bool */
    CFG__F_STR,     /* char *, owned; null keeps the default */
    CFG__F_ENUM,    /* an enum (unsigned int sized); names[i] is value i */
    CFG__F_BITS,    /* uint32_t; a list of names, names[i] is bit i */
    CFG__F_MAP,     /* a nested map: sub table applied to base + off */
    CFG__F_FN,      /* custom decoder */
    CFG__F_COUNT
};

struct cfg__field {
    const char *name; /* the YAML key */
    enum cfg__ftype type;
    size_t off; /* of the value inside <base> */
    uint64_t lo, hi;
    double dlo, dhi;
    bool lo_open;
    bool required;
    bool nonempty; /* CFG__F_STR: "" is an error */
    const char *const *names; /* CFG__F_ENUM, CFG__F_BITS */
    size_t n_names;
    const struct cfg__field *sub; /* CFG__F_MAP */
    size_t n_sub;
    cfg__check_fn *check; /* CFG__F_MAP: run after the sub-map */
    cfg__field_fn *fn;    /* CFG__F_FN */
};

#endif
