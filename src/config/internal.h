/* SPDX-License-Identifier: MIT */
/* internal.h -- shared by the files of src/config/ only, never included from outside: the YAML node
 * tree with 1-based marks (load.c), the diagnostic sink (diag.c), ${VAR} expansion (env.c),
 * the table-driven schema engine (schema.c), the section tables (validate.c), the second
 * pass that resolves references (resolve.c) and the snapshot destructor (snapshot.c).
 * docs/internals/config.md explains how the pieces fit. */
#ifndef BSC_CONFIG_INTERNAL_H
#define BSC_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "core/buf.h"
#include "core/compat.h"
#include "core/err.h"
#include "core/str.h"

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

/* Cannot fail. */
void cfg__sink_init(struct cfg__sink *s, struct cfg_diags *out, const char *file);
/* Appends one problem at <line>:<column> (1-based; 0 = no place). Never fails: on ENOMEM it
 * sets s->oom, and an error is still counted so the load cannot succeed. */
void cfg__diag(struct cfg__sink *s, bool warning, unsigned line, unsigned column,
               const char *fmt, ...) BSC_PRINTF(5, 6);
/* Sorts this load's diagnostics by position (stable; unplaced ones first). */
void cfg__sink_finish(struct cfg__sink *s);

/* Returns the candidate closest to <word> by edit distance when it is close enough to be a
 * likely typo, else NULL. The result is one of <cands>. */
const char *cfg__closest(const char *word, const char *const *cands, size_t n);

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

/* Parses <len> bytes of YAML into <doc> (which it initializes), expanding ${VAR} in scalar
 * values. Syntax errors and expansion errors go to <s>. Returns BSC_OK when a tree was
 * built (there may still be errors in <s>), BSC_EPARSE when the input is not usable YAML,
 * BSC_ENOMEM. The caller always calls cfg__doc_cleanup(). */
enum bsc_err cfg__parse(struct cfg__sink *s, const char *yaml, size_t len, struct cfg__doc *doc);
void cfg__doc_cleanup(struct cfg__doc *doc);

/* Returns the entry of <map> whose key is <key> (the last one when repeated), or NULL. */
const struct cfg__entry *cfg__map_find(const struct cfg__node *map, const char *key);

/* ---- ${VAR} expansion (env.c) -------------------------------------------------------- */

/* Called once per problem in one scalar: an unset variable, a bad reference. */
typedef void cfg__env_err_fn(void *ctx, const char *msg);

/* Appends <in> to <out> with ${NAME} and ${NAME:-default} replaced from the environment and
 * $${ written as a literal ${. Returns BSC_OK, BSC_EINVAL after reporting each problem
 * through <on_err>, BSC_ELIMIT when <out>'s bound is passed, or BSC_ENOMEM. */
enum bsc_err cfg__env_expand(struct bsc_str in, struct bsc_buf *out, cfg__env_err_fn *on_err,
                             void *ctx);

/* True when <s> holds something cfg__env_expand would change. */
bool cfg__env_has_ref(struct bsc_str s);

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

/* cloud.c: kinds bedrock and vertex. */
bool cfg__is_cloud_kind(enum cfg_provider_kind k);
/* Resolves what <p> leaves to the load (default base_url, credentials; reports what is
 * missing) and, for every other kind, that base_url is set. */
void cfg__resolve_cloud(struct cfg__v *v, struct cfg_provider *p, const struct cfg__prov_src *src,
                        const char *where);
/* Reads the keys of [<profile>] of an AWS shared credentials file's text <s> into <aws>
 * (only those it lacks). */
void cfg__aws_ini_read(struct cfg__v *v, struct bsc_str s, const char *profile,
                       struct cfg_aws *aws);
/* True when <t> serves a Claude model (its id has "claude") through bedrock or vertex. */
bool cfg__is_cloud_claude(const struct cfg_target *t);

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

/* Decodes <map> with the table <fields> into <base>: unknown keys, types, ranges, enums and
 * missing required keys are reported; <line>:<column> places "missing" errors. A null <map>
 * keeps every default (and reports missing required keys). */
void cfg__decode_map(struct cfg__v *v, const struct cfg__node *map, const struct cfg__field *fields,
                     size_t n_fields, void *base, const char *where, unsigned line,
                     unsigned column);

/* Writes into <out> how messages refer to <key> inside <where>: "'k' in <where>" or "'k'". */
void cfg__keyref(char *out, size_t size, const char *where, const char *key);
/* Writes into <out> the name of the map at <key> inside <where>, for nested messages. */
void cfg__subwhere(char *out, size_t size, const char *where, const char *key);
/* Writes a short, safe description of <n> for messages: 'text' (as written), a map, a list. */
void cfg__describe(char *out, size_t size, const struct cfg__node *n);

/* The same, except that the value of a secret-like <key> (cfg__is_secret_name) is never
 * quoted: a scalar there is described as "a string (not shown)". */
void cfg__describe_at(char *out, size_t size, const char *key, const struct cfg__node *n);

/* Why <model> cannot be a Gemini model id (it goes into the URL path), or NULL when it can
 * (resolve.c). */
const char *cfg__gemini_model_problem(const char *model);

/* ---- bursts (bursts.c) ------------------------------------------------------------------ */

/* A map's rates and their bursts (0: unset), as decoded. */
struct cfg__bursts {
    uint32_t rpm, rpm_burst, tpm, tpm_burst;
};
/* A burst without its rate, or above it, is an error at the burst's place. */
void cfg__burst_check(struct cfg__v *v, const struct cfg__node *map, const char *where,
                      const struct cfg__bursts *b);

/* ---- secrets (secrets.c) --------------------------------------------------------------- */

/* True when the YAML key or header name <name> holds a secret ("keys", "key", "api_key",
 * "x-goog-api-key", "authorization", "token", ...); NULL is not. */
bool cfg__is_secret_name(const char *name);
/* Builds cfg->secrets from the decoded <cfg>: BSC_OK, BSC_ENOMEM or BSC_ELIMIT. */
enum bsc_err cfg__secrets_build(struct cfg *cfg);

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

/* ---- validate.c / resolve.c / snapshot.c --------------------------------------------- */

/* Builds a snapshot from <doc>. Returns BSC_OK with *<out> set (one ref) when no error was
 * reported, BSC_EINVAL when some were (nothing is returned), BSC_ENOMEM. */
enum bsc_err cfg__build(struct cfg__sink *s, const struct cfg__doc *doc, struct cfg **out);

/* The second pass: breaker overrides, references between sections, warnings. */
void cfg__resolve(struct cfg__v *v);

/* Breaker table (validate.c), reused for overrides by resolve.c. */
extern const struct cfg__field cfg__breaker_fields[];
extern const size_t cfg__n_breaker_fields;
/* Cross-field checks of a breaker map (an empty key list). */
void cfg__breaker_check(struct cfg__v *v, const struct cfg__node *map, void *base,
                        const char *where);

/* Capability names, bit i = names[i] (validate.c). */
extern const char *const cfg__cap_names[];
extern const size_t cfg__n_cap_names;

/* ---- route selection (route_select.c) ------------------------------------------------- */

/* Pass 1 of a route whose map has `select`: only `select` may be there; a key of an ordinary
 * route (<route_fields>) is refused as such, any other as unknown. Records the rules' entry in
 * v->cur (a struct cfg__route_src) for cfg__select_resolve. */
void cfg__select_route(struct cfg__v *v, const struct cfg__node *map,
                       const struct cfg__field *route_fields, size_t n_route_fields,
                       const char *where);
/* Pass 2, for every select route: decodes its rules (conditions, patterns compiled) and
 * resolves the routes they name, refusing unknown routes, select routes (no chains) and
 * unreachable rules. */
void cfg__select_resolve(struct cfg__v *v);
/* Frees the rules of <r>. */
void cfg__select_cleanup(struct cfg_route *r);

/* ---- clients (clients.c) --------------------------------------------------------------- */

/* Pass 1: notes the `clients` entry (a CFG__F_FN decoder). */
void cfg__clients_note(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                       void *base, const char *where);
/* Pass 2, once routes exist: decodes every client, refuses unknown routes and shared keys. */
void cfg__clients_build(struct cfg__v *v);
/* Zeroes and frees every client's plaintext key (once the redaction set holds it). */
void cfg__clients_wipe(struct cfg *cfg);
void cfg__clients_free(struct cfg *cfg);
/* admin.keys (admin_keys.c). */
void cfg__admin_keys_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                        void *base, const char *where);
void cfg__admin_keys_free(struct cfg *cfg);
/* An admin.keys key that is also a client's key: an error naming both ids (never the key). */
void cfg__admin_keys_check_clients(struct cfg__v *v);
/* A route's `checks:` map (checks.c). */
void cfg__checks_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                    void *base, const char *where);

/* The `telemetry:` map (telemetry.c); its defaults, and what it owns freed. */
#define CFG__N_TELEMETRY_FIELDS 4
extern const struct cfg__field cfg__telemetry_fields[CFG__N_TELEMETRY_FIELDS];
bool cfg__telemetry_defaults(struct cfg_telemetry *t);
void cfg__telemetry_cleanup(struct cfg_telemetry *t);

/* Frees <cfg> and everything it owns, whatever its refcount; NULL is fine. */
void cfg__free(struct cfg *cfg);
/* Frees what one provider, target or route owns (not the struct itself). */
void cfg__provider_cleanup(struct cfg_provider *p);
void cfg__target_cleanup(struct cfg_target *t);
void cfg__route_cleanup(struct cfg_route *r);

#endif
