/* SPDX-License-Identifier: MIT */
/* load.c -- cfg_load/cfg_load_string, and YAML text to a tree of nodes with 1-based marks,
 * built from libyaml's event API. ${VAR} is expanded here, in values (never in keys);
 * duplicate keys, unknown aliases and YAML syntax errors are reported with their place.
 * Anchors and aliases work; an alias shares the anchored node, and the size of the tree
 * with aliases expanded is bounded (CFG__MAX_NODES) so a "billion laughs" file fails fast.
 * It does not know the schema: validate.c does. See docs/internals/config.md. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "config/diag.h"
#include "config/env.h"
#include "config/internal.h"
#include "config/load.h"
#include "config/snapshot.h"
#include "config/types.h"
#include "config/validate.h"
#include "core/buf.h"
#include "core/compat.h"
#include "core/str.h"

struct anchor {
    char *name; /* owned */
    struct cfg__node *node;
};

struct builder {
    yaml_parser_t parser;
    struct cfg__sink *s;
    struct cfg__doc *doc;
    const char *input; /* borrowed, for marks of reader errors */
    size_t input_len;
    struct anchor *anchors; /* owned */
    size_t n_anchors;
    enum bsc_err err; /* BSC_OK, or why building stopped (reported already) */
};

/* ---- nodes ---------------------------------------------------------------------------- */

static struct cfg__node *node_new(struct builder *b, enum cfg__kind kind, yaml_mark_t mark)
{
    struct cfg__doc *doc = b->doc;
    struct cfg__node *n;

    if (doc->n_nodes == doc->cap_nodes) {
        size_t cap = doc->cap_nodes ? doc->cap_nodes * 2 : 64;
        struct cfg__node **nodes = realloc(doc->nodes, cap * sizeof(*nodes));

        if (!nodes)
            return NULL;
        doc->nodes = nodes;
        doc->cap_nodes = cap;
    }
    n = calloc(1, sizeof(*n));
    if (!n)
        return NULL;
    n->kind = kind;
    n->line = (unsigned)mark.line + 1;
    n->column = (unsigned)mark.column + 1;
    n->weight = 1;
    doc->nodes[doc->n_nodes++] = n;
    return n;
}

static void node_free(struct cfg__node *n)
{
    /* Scalars hold ${VAR}-expanded secrets (client keys, of which the snapshot keeps only a
     * hash): zeroed before the heap gets them back. */
    if (n->text) {
        volatile char *p = n->text;

        for (size_t i = 0; i < n->len; i++)
            p[i] = '\0';
    }
    free(n->text);
    free(n->raw);
    free(n->items);
    free(n);
}

void cfg__doc_cleanup(struct cfg__doc *doc)
{
    for (size_t i = 0; i < doc->n_nodes; i++)
        node_free(doc->nodes[i]);
    BSC_FREE(doc->nodes);
    doc->n_nodes = doc->cap_nodes = 0;
    doc->root = NULL;
}

static bool add_item(struct cfg__node *parent, struct cfg__node *key, struct cfg__node *value)
{
    if (parent->n == parent->cap) {
        size_t cap = parent->cap ? parent->cap * 2 : 4;
        struct cfg__entry *items = realloc(parent->items, cap * sizeof(*items));

        if (!items)
            return false;
        parent->items = items;
        parent->cap = cap;
    }
    parent->items[parent->n++] = (struct cfg__entry){.key = key, .value = value};
    if (key)
        parent->weight = parent->weight > SIZE_MAX - 1 ? SIZE_MAX : parent->weight + 1;
    parent->weight = parent->weight > SIZE_MAX - value->weight ? SIZE_MAX
                                                               : parent->weight + value->weight;
    return true;
}

/* ---- errors --------------------------------------------------------------------------- */

static void fail(struct builder *b, enum bsc_err err)
{
    if (!b->err)
        b->err = err;
}

/* Line and column (1-based) of byte <off> of the input, for reader errors that carry only
 * an offset. */
static void offset_mark(const struct builder *b, size_t off, unsigned *line, unsigned *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off && i < b->input_len; i++) {
        if (b->input[i] == '\n') {
            (*line)++;
            *col = 1;
        } else if (((unsigned char)b->input[i] & 0xC0) != 0x80) {
            (*col)++;
        }
    }
}

static void syntax_error(struct builder *b)
{
    const yaml_parser_t *p = &b->parser;
    const char *problem = p->problem ? p->problem : "unknown problem";
    unsigned line, col;

    if (p->error == YAML_MEMORY_ERROR) {
        fail(b, BSC_ENOMEM);
        return;
    }
    if (p->error == YAML_READER_ERROR) {
        offset_mark(b, p->problem_offset, &line, &col);
        if (p->problem_value >= 0)
            cfg__diag(b->s, false, line, col, "YAML error: %s (byte 0x%02x)", problem,
                      (unsigned)p->problem_value);
        else
            cfg__diag(b->s, false, line, col, "YAML error: %s", problem);
    } else if (p->context) {
        cfg__diag(b->s, false, (unsigned)p->problem_mark.line + 1,
                  (unsigned)p->problem_mark.column + 1,
                  "YAML syntax error: %s (%s at line %u, column %u)", problem, p->context,
                  (unsigned)p->context_mark.line + 1, (unsigned)p->context_mark.column + 1);
    } else {
        cfg__diag(b->s, false, (unsigned)p->problem_mark.line + 1,
                  (unsigned)p->problem_mark.column + 1, "YAML syntax error: %s", problem);
    }
    fail(b, BSC_EPARSE);
}

static bool next_event(struct builder *b, yaml_event_t *ev)
{
    if (yaml_parser_parse(&b->parser, ev))
        return true;
    syntax_error(b);
    return false;
}

/* ---- scalars -------------------------------------------------------------------------- */

static bool null_text(const char *t, size_t len)
{
    return len == 0 || (len == 1 && t[0] == '~') ||
           (len == 4 && (!memcmp(t, "null", 4) || !memcmp(t, "Null", 4) || !memcmp(t, "NULL", 4)));
}

struct env_report {
    struct builder *b;
    const struct cfg__node *n;
};

static void on_env_error(void *ctx, const char *msg)
{
    struct env_report *r = ctx;

    cfg__diag(r->b->s, false, r->n->line, r->n->column, "%s", msg);
}

/* Replaces n->text by its expansion; n->raw keeps what was written. */
static bool expand(struct builder *b, struct cfg__node *n)
{
    struct env_report r = {b, n};
    struct bsc_buf out;
    enum bsc_err err;
    size_t len;

    bsc_buf_init(&out, CFG__MAX_SCALAR);
    err = cfg__env_expand(bsc_str_make(n->text, n->len), &out, on_env_error, &r);
    if (err == BSC_ENOMEM) {
        bsc_buf_cleanup(&out);
        return false;
    }
    if (err) {
        if (err == BSC_ELIMIT)
            cfg__diag(b->s, false, n->line, n->column,
                      "value longer than %u bytes once variables are expanded",
                      (unsigned)CFG__MAX_SCALAR);
        n->bad = true;
        bsc_buf_cleanup(&out);
        return true;
    }
    n->raw = n->text;
    n->text = bsc_buf_take(&out, &len);
    n->len = len;
    if (!n->text) {
        n->text = bsc_str_dup(BSC_STR(""));
        if (!n->text)
            return false;
    }
    if (memchr(n->text, '\0', n->len)) {
        cfg__diag(b->s, false, n->line, n->column, "a variable's value holds a NUL byte");
        n->bad = true;
    }
    return true;
}

static struct cfg__node *scalar(struct builder *b, const yaml_event_t *ev, bool is_key)
{
    const char *v = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    struct cfg__node *n = node_new(b, CFG__SCALAR, ev->start_mark);

    if (!n)
        return NULL;
    n->text = bsc_str_dup(bsc_str_make(v, len));
    n->len = len;
    if (!n->text)
        return NULL;
    if (memchr(v, '\0', len)) {
        cfg__diag(b->s, false, n->line, n->column, "a string holds a NUL byte");
        n->bad = true;
        return n;
    }
    if (!is_key && cfg__env_has_ref(bsc_str_make(n->text, n->len)) && !expand(b, n))
        return NULL;
    n->is_null = plain && !is_key && null_text(n->text, n->len);
    return n;
}

/* ---- anchors -------------------------------------------------------------------------- */

static void anchor_add(struct builder *b, const yaml_char_t *name, struct cfg__node *n)
{
    struct anchor *a;

    if (!name)
        return;
    if (b->n_anchors >= CFG__MAX_ANCHORS) {
        cfg__diag(b->s, false, n->line, n->column, "more than %u anchors",
                  (unsigned)CFG__MAX_ANCHORS);
        fail(b, BSC_EPARSE);
        return;
    }
    a = realloc(b->anchors, (b->n_anchors + 1) * sizeof(*a));
    if (!a) {
        fail(b, BSC_ENOMEM);
        return;
    }
    b->anchors = a;
    a[b->n_anchors].name = bsc_str_dup(bsc_str_cstr((const char *)name));
    a[b->n_anchors].node = n;
    if (!a[b->n_anchors].name) {
        fail(b, BSC_ENOMEM);
        return;
    }
    b->n_anchors++;
}

static struct cfg__node *alias(struct builder *b, const yaml_event_t *ev)
{
    const char *name = (const char *)ev->data.alias.anchor;
    struct cfg__node *n;

    /* The latest definition wins, as YAML says; an anchor is known only once its node is
     * complete, so an alias can never point into its own ancestor (no cycles). */
    for (size_t i = b->n_anchors; i-- > 0;)
        if (strcmp(b->anchors[i].name, name) == 0)
            return b->anchors[i].node;
    n = node_new(b, CFG__SCALAR, ev->start_mark);
    if (!n)
        return NULL;
    n->text = bsc_str_dup(BSC_STR(""));
    if (!n->text)
        return NULL;
    n->bad = true;
    cfg__diag(b->s, false, n->line, n->column, "unknown alias '*%s'", name);
    return n;
}

/* ---- maps and lists ------------------------------------------------------------------- */

static struct cfg__node *build(struct builder *b, const yaml_event_t *ev, unsigned depth,
                               bool is_key);

static int cmp_keys(const void *pa, const void *pb)
{
    const struct cfg__node *a = *(struct cfg__node *const *)pa;
    const struct cfg__node *b = *(struct cfg__node *const *)pb;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->text, b->text, n);

    if (c)
        return c;
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    if (a->line != b->line)
        return a->line < b->line ? -1 : 1;
    return a->column < b->column ? -1 : a->column > b->column;
}

/* Reports each key of <map> that repeats an earlier one, at the repeat. O(n log n). */
static void check_duplicates(struct builder *b, const struct cfg__node *map)
{
    struct cfg__node **keys;

    if (map->n < 2)
        return;
    keys = malloc(map->n * sizeof(*keys));
    if (!keys) {
        fail(b, BSC_ENOMEM);
        return;
    }
    for (size_t i = 0; i < map->n; i++)
        keys[i] = map->items[i].key;
    qsort(keys, map->n, sizeof(*keys), cmp_keys);
    for (size_t i = 1, first = 0; i < map->n; i++) {
        if (keys[i]->len != keys[first]->len ||
            memcmp(keys[i]->text, keys[first]->text, keys[i]->len) != 0) {
            first = i;
            continue;
        }
        if (keys[i] == keys[first])
            continue; /* the same node twice, through an alias key */
        cfg__diag(b->s, false, keys[i]->line, keys[i]->column,
                  "duplicate key '%.*s' (first defined at line %u, column %u)",
                  keys[i]->len > 64 ? 64 : (int)keys[i]->len, keys[i]->text, keys[first]->line,
                  keys[first]->column);
    }
    free(keys);
}

static bool too_big(struct builder *b, const struct cfg__node *n)
{
    if (n->weight <= CFG__MAX_NODES)
        return false;
    cfg__diag(b->s, false, n->line, n->column,
              "document too large: more than %u nodes once aliases are expanded",
              (unsigned)CFG__MAX_NODES);
    fail(b, BSC_EPARSE);
    return true;
}

/* Consumes events up to the end of the map or list started by <start>. */
static struct cfg__node *collection(struct builder *b, const yaml_event_t *start, unsigned depth)
{
    bool is_map = start->type == YAML_MAPPING_START_EVENT;
    yaml_event_type_t end = is_map ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT;
    struct cfg__node *n = node_new(b, is_map ? CFG__MAP : CFG__SEQ, start->start_mark);
    yaml_event_t ev;

    if (!n) {
        fail(b, BSC_ENOMEM);
        return NULL;
    }
    if (depth >= CFG__MAX_DEPTH) {
        cfg__diag(b->s, false, n->line, n->column, "nesting deeper than %u levels",
                  (unsigned)CFG__MAX_DEPTH);
        fail(b, BSC_EPARSE);
        return NULL;
    }
    for (;;) {
        struct cfg__node *key = NULL, *value;

        if (!next_event(b, &ev))
            return NULL;
        if (ev.type == end) {
            yaml_event_delete(&ev);
            break;
        }
        if (is_map) {
            key = build(b, &ev, depth + 1, true);
            yaml_event_delete(&ev);
            if (!key || !next_event(b, &ev))
                return NULL;
        }
        value = build(b, &ev, depth + 1, false);
        yaml_event_delete(&ev);
        if (!value)
            return NULL;
        if (key && key->kind != CFG__SCALAR) {
            cfg__diag(b->s, false, key->line, key->column, "map keys must be plain strings");
            continue;
        }
        if (!add_item(n, key, value)) {
            fail(b, BSC_ENOMEM);
            return NULL;
        }
        if (too_big(b, n))
            return NULL;
    }
    if (is_map)
        check_duplicates(b, n);
    return n;
}

/* Builds the node that starts with <ev> (owned by the caller), consuming the events up to
 * its end. Returns NULL when building must stop (b->err says why; reported). */
static struct cfg__node *build(struct builder *b, const yaml_event_t *ev, unsigned depth,
                               bool is_key)
{
    struct cfg__node *n = NULL;
    const yaml_char_t *anchor = NULL;

    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        n = scalar(b, ev, is_key);
        if (!n)
            fail(b, BSC_ENOMEM);
        anchor = ev->data.scalar.anchor;
        break;
    case YAML_ALIAS_EVENT:
        n = alias(b, ev);
        if (!n)
            fail(b, BSC_ENOMEM);
        return n;
    case YAML_MAPPING_START_EVENT:
        n = collection(b, ev, depth);
        anchor = ev->data.mapping_start.anchor;
        break;
    case YAML_SEQUENCE_START_EVENT:
        n = collection(b, ev, depth);
        anchor = ev->data.sequence_start.anchor;
        break;
    default:
        /* libyaml never produces another event here for a well-formed stream. */
        cfg__diag(b->s, false, (unsigned)ev->start_mark.line + 1,
                  (unsigned)ev->start_mark.column + 1, "unexpected YAML event");
        fail(b, BSC_EPARSE);
        return NULL;
    }
    if (n && anchor)
        anchor_add(b, anchor, n);
    return b->err ? NULL : n;
}

/* ---- documents ------------------------------------------------------------------------ */

/* Reads the stream: at most one document. */
static void stream(struct builder *b)
{
    yaml_event_t ev;
    bool have_doc = false;

    for (;;) {
        if (!next_event(b, &ev))
            return;
        switch (ev.type) {
        case YAML_STREAM_START_EVENT:
        case YAML_DOCUMENT_END_EVENT:
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (have_doc) {
                cfg__diag(b->s, false, (unsigned)ev.start_mark.line + 1,
                          (unsigned)ev.start_mark.column + 1,
                          "only one YAML document is allowed in a config file");
                yaml_event_delete(&ev);
                return;
            }
            have_doc = true;
            break;
        case YAML_STREAM_END_EVENT:
            yaml_event_delete(&ev);
            return;
        default:
            b->doc->root = build(b, &ev, 0, false);
            if (!b->doc->root) {
                yaml_event_delete(&ev);
                return;
            }
            break;
        }
        yaml_event_delete(&ev);
    }
}

enum bsc_err cfg__parse(struct cfg__sink *s, const char *yaml, size_t len, struct cfg__doc *doc)
{
    struct builder b = {.s = s, .doc = doc, .input = yaml, .input_len = len};

    memset(doc, 0, sizeof(*doc));
    if (!yaml_parser_initialize(&b.parser))
        return BSC_ENOMEM;
    yaml_parser_set_input_string(&b.parser, (const unsigned char *)(yaml ? yaml : ""), len);
    yaml_parser_set_encoding(&b.parser, YAML_UTF8_ENCODING);
    stream(&b);
    yaml_parser_delete(&b.parser);
    for (size_t i = 0; i < b.n_anchors; i++)
        free(b.anchors[i].name);
    free(b.anchors);
    if (b.err) {
        doc->root = NULL;
        return b.err;
    }
    return s->oom ? BSC_ENOMEM : BSC_OK;
}

/* ---- the public entry points ---------------------------------------------------------- */

enum bsc_err cfg_load_string(const char *name, const char *yaml, size_t len, struct cfg **out,
                             struct cfg_diags *diags)
{
    struct cfg__sink s;
    struct cfg__doc doc;
    enum bsc_err err;

    *out = NULL;
    cfg__sink_init(&s, diags, name ? name : "<string>");
    err = cfg__parse(&s, yaml, len, &doc);
    if (!err)
        err = cfg__build(&s, &doc, out);
    else if (err == BSC_EPARSE)
        err = BSC_EINVAL;
    cfg__doc_cleanup(&doc);
    if (!err && (s.n_errors || s.oom)) {
        /* cfg__build does not return a snapshot with errors; this is belt and braces. */
        cfg_unref(*out);
        *out = NULL;
        err = s.oom ? BSC_ENOMEM : BSC_EINVAL;
    }
    if (err == BSC_OK && s.oom)
        err = BSC_ENOMEM;
    cfg__sink_finish(&s);
    return err;
}

/* Reads all of <path> into a malloc'd buffer (caller frees), bounded by CFG__MAX_FILE_BYTES. */
static enum bsc_err read_file(struct cfg__sink *s, const char *path, char **data, size_t *len)
{
    FILE *f = fopen(path, "rb");
    struct bsc_buf buf;
    char chunk[16384];
    size_t n;
    enum bsc_err err = BSC_OK;

    if (!f) {
        cfg__diag(s, false, 0, 0, "cannot open: %s", strerror(errno));
        return BSC_EIO;
    }
    bsc_buf_init(&buf, CFG__MAX_FILE_BYTES);
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        err = bsc_buf_append(&buf, chunk, n);
        if (err)
            break;
    }
    if (!err && ferror(f)) {
        cfg__diag(s, false, 0, 0, "cannot read: %s", strerror(errno));
        err = BSC_EIO;
    } else if (err == BSC_ELIMIT) {
        cfg__diag(s, false, 0, 0, "file larger than %u bytes", (unsigned)CFG__MAX_FILE_BYTES);
        err = BSC_EIO;
    }
    fclose(f);
    if (err) {
        bsc_buf_cleanup(&buf);
        return err;
    }
    *data = bsc_buf_take(&buf, len);
    return BSC_OK;
}

enum bsc_err cfg_load(const char *path, struct cfg **out, struct cfg_diags *diags)
{
    struct cfg__sink s;
    char *data = NULL;
    size_t len = 0;
    enum bsc_err err;

    *out = NULL;
    cfg__sink_init(&s, diags, path);
    err = read_file(&s, path, &data, &len);
    if (err) {
        cfg__sink_finish(&s);
        return err;
    }
    err = cfg_load_string(path, data, len, out, diags);
    free(data);
    return err;
}
