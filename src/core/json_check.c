/* SPDX-License-Identifier: MIT */
/* json_check.c -- the request checks: the grammar is json_tok.c's; this file adds, in the
 * same pass, the top-level member rules (wanted values, duplicate names, element kinds). */
#include "core/json_check.h"

#include <stdint.h>
#include <string.h>

#include "core/json_name.h"

/* A top-level name already seen (bsc_json_check_request). */
struct seen {
    const char *p;  /* the raw name, borrowed from the document */
    uint32_t hash;  /* of the decoded name */
    uint16_t len;   /* raw length (<= BSC_JSON_MAX_NAME) */
    uint16_t dlen;  /* decoded length */
    bool escaped;
};

#define BY_LEN_MAX 64 /* wanted keys indexed by length (struct want) */

/* The top-level members the caller wants, recorded while validating. */
struct want {
    const struct bsc_str *keys;
    size_t n;
    uint64_t lens; /* bit min(length, 63) of each key: most names match no key's length */
    /* The keys by length when there are at most BY_LEN_MAX of them: by_len[b] is 1 + the
     * first key whose length bit (length_bit) is b, or 0; next[k] the same for the key after
     * keys[k] with that bit. A name without escapes is compared only with keys of its
     * length bit, in key order. */
    uint8_t by_len[64];
    uint8_t next[BY_LEN_MAX];
    struct bsc_str *vals;
    int cur;       /* the wanted key whose value is being read, or -1 */
    size_t start;  /* where that value began */
    bool repeated; /* a wanted key appeared twice */
    struct seen *seen; /* BSC_JSON_MAX_MEMBERS entries when every name is tracked, else NULL */
    unsigned n_seen;
    uint64_t filter[4]; /* a bit per 8-bit slice of the seen names' hashes */
    uint32_t objects;              /* bit k: the elements of an array keys[k] must be objects */
    struct bsc_str cur_name;       /* the raw name of keys[cur] as written */
    enum bsc_json_verdict verdict; /* why the scan stopped early */
    struct bsc_str name;           /* the name it stopped at */
    const char *doc;               /* the document, borrowed */
    bool in_array;                 /* the current top-level member's value is an array */
};

/* Inside the top-level member keys[w->cur]: true when that member is an array whose
 * elements the caller wants to be objects (<objects> has a bit for the first 32 keys only:
 * a shift by 32 or more is undefined, not 0). */
static inline bool element_must_be_object(const struct want *w)
{
    return w->cur >= 0 && w->cur < 32 && (w->objects >> w->cur & 1) && w->in_array;
}

/* Stops the scan at the top-level name <key> with <verdict>; the offset is its quote. */
static bool stop_at_name(struct want *w, struct bsc_json_error *err, struct bsc_jtok *tok,
                         enum bsc_json_verdict verdict, const char *what)
{
    w->verdict = verdict;
    w->name = tok->raw;
    err->offset = tok->off;
    err->what = what;
    return false;
}

/* The duplicate rule: false (scan stopped) when the name <tok> repeats a name or is past a
 * bound. A 256-bit filter of the hashes seen answers "new" for most names without a look at
 * the others; otherwise a pass over them compares hashes first. Names chosen to collide cost
 * at most 256 * 255 / 2 integer compares per body. */
static bool track_name(struct want *w, struct bsc_json_error *err, struct bsc_jtok *tok,
                       struct bsc_json_name_info *info)
{
    struct bsc_str key = tok->raw;
    uint32_t slot;
    bool maybe;

    if (key.len > BSC_JSON_MAX_NAME)
        return stop_at_name(w, err, tok, BSC_JSONV_REFUSED,
                            "a top-level member name longer than 256 bytes");
    if (w->n_seen == BSC_JSON_MAX_MEMBERS)
        return stop_at_name(w, err, tok, BSC_JSONV_REFUSED, "more than 256 top-level members");
    /* The tokenizer saw every backslash: a name without one is its bytes, hashed as
     * bsc_json_name_scan would without its look for one. */
    if (!tok->escaped) {
        info->hash = bsc_json_name_hash_plain(key);
        info->len = key.len;
        info->escaped = false;
    } else if (!bsc_json_name_scan(key, info)) {
        return stop_at_name(w, err, tok, BSC_JSONV_REFUSED,
                            "a top-level member name with a lone surrogate or NUL escape");
    }
    slot = (info->hash ^ (info->hash >> 16)) & 255;
    maybe = (w->filter[slot / 64] >> (slot % 64)) & 1;
    w->filter[slot / 64] |= 1ull << (slot % 64);
    for (unsigned j = 0; maybe && j < w->n_seen; j++) {
        const struct seen *o = &w->seen[j];
        struct bsc_str other = bsc_str_make(o->p, o->len);

        if (o->hash != info->hash || o->dlen != info->len)
            continue;
        if (!o->escaped && !info->escaped ? bsc_str_eq(other, key)
                                          : bsc_json_names_eq(other, key) == 1)
            return stop_at_name(w, err, tok, BSC_JSONV_DUPLICATE, "duplicate member name");
    }
    w->seen[w->n_seen++] = (struct seen){key.p, info->hash, (uint16_t)key.len,
                                         (uint16_t)info->len, info->escaped};
    return true;
}

static unsigned length_bit(size_t len)
{
    return len < 63 ? (unsigned)len : 63;
}

/* Sets up the wanted keys of <w>: no value found yet, and the lengths they have. */
static void want_init(struct want *w)
{
    memset(w->by_len, 0, sizeof(w->by_len));
    for (size_t k = w->n; k-- > 0;) {
        unsigned b = length_bit(w->keys[k].len);

        w->vals[k] = BSC_STR_NULL;
        w->lens |= 1ull << b;
        if (w->n <= BY_LEN_MAX) {
            w->next[k] = w->by_len[b];
            w->by_len[b] = (uint8_t)(k + 1);
        }
    }
}

/* Whether the <w> (4 or 8) first and the <w> last of the <len> (w <= len <= 2w) bytes at <a>
 * and <b> are the same, as two overlapping loads from each, all inside the two strings. */
static inline bool same_ends(const char *a, const char *b, size_t len, size_t w)
{
    uint64_t a0 = 0, b0 = 0, a1 = 0, b1 = 0;

    memcpy(&a0, a, w);
    memcpy(&b0, b, w);
    memcpy(&a1, a + len - w, w);
    memcpy(&b1, b + len - w, w);
    return ((a0 ^ b0) | (a1 ^ b1)) == 0;
}

/* Whether the <len> bytes at <a> and <b> are the same: a name and a wanted key of its
 * length (most are 4 to 16 bytes long) by same_ends instead of a call to memcmp; longer
 * ones by memcmp. */
static inline bool same_bytes(const char *a, const char *b, size_t len)
{
    if (len >= 8 && len <= 16)
        return same_ends(a, b, len, 8);
    if (len >= 4 && len < 8)
        return same_ends(a, b, len, 4);
    if (len > 16)
        return memcmp(a, b, len) == 0;
    for (size_t k = 0; k < len; k++)
        if (a[k] != b[k])
            return false;
    return true;
}

/* The last wanted key the raw name <key> (no escapes) is, or -1. */
static int plain_key(const struct want *w, struct bsc_str key)
{
    int cur = -1;

    if (w->n > BY_LEN_MAX) {
        for (size_t k = 0; k < w->n; k++)
            if (bsc_str_eq(key, w->keys[k]))
                cur = (int)k;
        return cur;
    }
    for (unsigned j = w->by_len[length_bit(key.len)]; j; j = w->next[j - 1])
        if (key.len == w->keys[j - 1].len && same_bytes(key.p, w->keys[j - 1].p, key.len))
            cur = (int)(j - 1);
    return cur;
}

/* A top-level name: tracked when every name is, then matched against the wanted keys.
 * Returns false when the scan must stop. Kept out of line: inlined, its frame (the name
 * rules and the key loop) made every token of the top level pay for saving registers. */
static __attribute__((noinline)) bool want_key(struct want *w, struct bsc_json_error *err,
                                               struct bsc_jtok *tok)
{
    struct bsc_json_name_info info = {0, 0, false};
    struct bsc_str key = tok->raw;

    w->cur = -1;
    if (w->seen) {
        if (!track_name(w, err, tok, &info))
            return false;
    } else if (w->n) {
        info.escaped = tok->escaped;
    }
    /* A name without escapes is its bytes: no key of its length, no key to compare. */
    if (info.escaped) {
        for (size_t k = 0; k < w->n; k++)
            if (bsc_json_name_eq(key, w->keys[k]) == 1)
                w->cur = (int)k;
    } else if (w->lens >> length_bit(key.len) & 1) {
        w->cur = plain_key(w, key);
    }
    w->cur_name = key;
    return true;
}

static void want_value_end(struct want *w, size_t end)
{
    if (w->cur < 0)
        return;
    if (w->vals[w->cur].p)
        w->repeated = true;
    w->vals[w->cur] = bsc_str_make(w->doc + w->start, end - w->start);
    w->cur = -1;
}

static bool is_value_start(enum bsc_jtok_kind k)
{
    return k == BSC_JTOK_OBJ_OPEN || k == BSC_JTOK_ARR_OPEN || k >= BSC_JTOK_STRING;
}

static bool is_value_end(enum bsc_jtok_kind k)
{
    return k == BSC_JTOK_OBJ_CLOSE || k == BSC_JTOK_ARR_CLOSE || k >= BSC_JTOK_STRING;
}

/* The element rule broken (bsc_json_tok_skip_objects stopped at <tok>, an element of
 * keys[w->cur]'s array that is not an object); false. */
static bool element_error(struct want *w, const struct bsc_json_tok *t,
                          const struct bsc_jtok *tok, struct bsc_json_error *err)
{
    w->verdict = BSC_JSONV_ELEMENT;
    w->name = w->cur_name;
    err->offset = tok->off;
    err->what = t->what;
    return false;
}

/* One token of the top-level container's direct contents (depth 1): value bounds (names
 * come aside, from bsc_json_tok_member; only the top level's: deeper containers are
 * skipped whole). */
static inline void top_member(struct want *w, struct bsc_jtok *tok)
{
    if (is_value_start(tok->kind)) {
        w->start = tok->off;
        w->in_array = tok->kind == BSC_JTOK_ARR_OPEN;
    }
    if (is_value_end(tok->kind))
        want_value_end(w, tok->end);
}

/* The tokenizer's error as the check's; false. */
static bool grammar_error(const struct bsc_json_tok *t, struct bsc_json_error *e)
{
    e->offset = t->err_off;
    e->what = t->what;
    return false;
}

static bool check(struct bsc_str doc, unsigned max_depth, struct want *w,
                  struct bsc_json_error *err)
{
    struct bsc_json_error e = {0, NULL, BSC_STR_NULL};
    struct bsc_json_tok t;
    struct bsc_jtok tok, name;
    bool ok = true;

    bsc_json_tok_init(&t, doc, max_depth);
    w->doc = doc.p;
    for (;;) {
        /* A member a call: its name, looked at before anything after it (a duplicate name
         * is refused as such even when its ':' or value is broken), then its value. */
        enum bsc_jtok_kind k = bsc_json_tok_member(&t, &tok, &name);
        bool element = false;

        if (name.kind == BSC_JTOK_NAME && !(ok = want_key(w, &e, &name)))
            break;
        if (k == BSC_JTOK_END)
            break;
        if (k == BSC_JTOK_ERROR) {
            ok = grammar_error(&t, &e);
            break;
        }
        if (tok.depth == 1)
            top_member(w, &tok);
        if ((k != BSC_JTOK_OBJ_OPEN && k != BSC_JTOK_ARR_OPEN) || tok.depth == 0)
            continue;
        /* Nothing below the top level's members is looked at but the first byte of each
         * element of an array that must hold objects: the value's rest is read by the
         * grammar alone and handed over as its closer. */
        k = element_must_be_object(w) ? bsc_json_tok_skip_objects(&t, &tok, &element)
                                      : bsc_json_tok_skip(&t, &tok);
        if (k == BSC_JTOK_ERROR) {
            ok = element ? element_error(w, &t, &tok, &e) : grammar_error(&t, &e);
            break;
        }
        top_member(w, &tok);
    }
    if (!ok && err) {
        *err = e;
        err->name = w->name;
    }
    return ok;
}

bool bsc_json_check(struct bsc_str doc, unsigned max_depth, struct bsc_json_error *err)
{
    struct want none = {.cur = -1, .verdict = BSC_JSONV_SYNTAX};

    return check(doc, max_depth, &none, err);
}

int bsc_json_check_members(struct bsc_str doc, unsigned max_depth, const struct bsc_str *keys,
                           size_t n_keys, struct bsc_str *vals, struct bsc_json_error *err)
{
    struct want w = {.keys = keys, .n = n_keys, .vals = vals, .cur = -1,
                     .verdict = BSC_JSONV_SYNTAX};

    want_init(&w);
    if (!check(doc, max_depth, &w, err))
        return -1;
    return w.repeated ? 0 : 1;
}

enum bsc_json_verdict bsc_json_check_request(struct bsc_str doc, unsigned max_depth,
                                             const struct bsc_str *keys, size_t n_keys,
                                             uint32_t objects, struct bsc_str *vals,
                                             struct bsc_json_error *err)
{
    struct seen seen[BSC_JSON_MAX_MEMBERS]; /* 6 KiB of stack, written only as names come */
    struct want w = {.keys = keys, .n = n_keys, .vals = vals, .cur = -1, .seen = seen,
                     .objects = n_keys < 32 ? objects & ((1u << n_keys) - 1) : objects,
                     .verdict = BSC_JSONV_SYNTAX};

    want_init(&w);
    return check(doc, max_depth, &w, err) ? BSC_JSONV_OK : w.verdict;
}
