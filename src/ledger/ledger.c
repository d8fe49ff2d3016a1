/* SPDX-License-Identifier: MIT */
/* ledger.c -- the ledger's transition table and the JSON of entries and updates. Pure:
 * no clock (the caller passes <now_ms>), no store, no HTTP. The table is the whole
 * policy; everything else here is validation and formatting.
 * See docs/internals/store.md. */

#include <json-c/json.h>

#include "ledger/ledger.h"
#include "core/json_check.h"
#include "core/json_name.h"
#include "core/sha256.h"
#include "core/json_parse.h"
#include "core/utf8.h"

#define JSON_DEPTH 8 /* an update or entry is flat; nesting deeper is refused */

static const char *const state_names[] = {
#define X(NAME, name, doc) [LEDGER_ST_##NAME] = #name,
    LEDGER_STATES(X)
#undef X
};
_Static_assert(BSC_ARRAY_LEN(state_names) == LEDGER_ST_COUNT, "state_names");

/* allowed[from][to], from != to. The diagonal stays false: a repeat is handled apart. */
static const bool allowed[LEDGER_ST_COUNT][LEDGER_ST_COUNT] = {
    [LEDGER_ST_PLANNED] = {[LEDGER_ST_STARTED] = true, [LEDGER_ST_FAILED] = true},
    [LEDGER_ST_STARTED] = {[LEDGER_ST_SUCCEEDED] = true,
                           [LEDGER_ST_FAILED] = true,
                           [LEDGER_ST_UNKNOWN] = true},
    [LEDGER_ST_UNKNOWN] = {[LEDGER_ST_SUCCEEDED] = true, [LEDGER_ST_FAILED] = true},
};

const char *ledger_state_name(enum ledger_state s)
{
    return (unsigned)s < LEDGER_ST_COUNT ? state_names[s] : "?";
}

bool ledger_state_parse(struct bsc_str name, enum ledger_state *out)
{
    for (unsigned i = 0; i < LEDGER_ST_COUNT; i++) {
        if (bsc_str_eq(name, bsc_str_cstr(state_names[i]))) {
            *out = (enum ledger_state)i;
            return true;
        }
    }
    return false;
}

bool ledger_transition_allowed(enum ledger_state from, enum ledger_state to)
{
    if ((unsigned)from >= LEDGER_ST_COUNT || (unsigned)to >= LEDGER_ST_COUNT)
        return false;
    return allowed[from][to];
}

bool ledger_initial_allowed(enum ledger_state s)
{
    return s == LEDGER_ST_PLANNED || s == LEDGER_ST_STARTED;
}

bool ledger_state_is_terminal(enum ledger_state s)
{
    return s == LEDGER_ST_SUCCEEDED || s == LEDGER_ST_FAILED;
}

bool ledger_state_blocks_replay(enum ledger_state s)
{
    return s == LEDGER_ST_STARTED || s == LEDGER_ST_UNKNOWN;
}

bool ledger_op_id_valid(struct bsc_str id)
{
    if (id.len == 0 || id.len > LEDGER_OP_ID_MAX)
        return false;
    for (size_t i = 0; i < id.len; i++) {
        unsigned char c = (unsigned char)id.p[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == ':' || c == '~' || c == '-';
        if (!ok)
            return false;
    }
    return true;
}

/* ---- text checks ------------------------------------------------------------------------ */

/* True when <s> is well-formed UTF-8 without control characters (NUL included). */
static bool is_text(struct bsc_str s)
{
    const unsigned char *p = (const unsigned char *)s.p;

    for (size_t i = 0; i < s.len;) {
        size_t n;
        if (p[i] < 0x20 || p[i] == 0x7f)
            return false;
        n = bsc_utf8_seq_len(p + i, s.len - i);
        if (!n)
            return false;
        i += n;
    }
    return true;
}

/* Copies <s> into <dst> of <cap> bytes (room for the NUL included). */
static void copy_text(char *dst, size_t cap, struct bsc_str s)
{
    BSC_BUG_ON(s.len >= cap);
    if (s.len)
        memcpy(dst, s.p, s.len);
    dst[s.len] = '\0';
}

/* ---- JSON in ---------------------------------------------------------------------------- */

/* Parses <json> into an object. Returns NULL unless all of it (but trailing whitespace)
 * is one JSON object within JSON_DEPTH levels. The caller puts the result. */
static struct json_object *parse_object(struct bsc_str json)
{
    struct json_object *root = bsc_json_parse_whole(json, JSON_DEPTH);

    if (root && !json_object_is_type(root, json_type_object)) {
        json_object_put(root);
        root = NULL;
    }
    return root;
}

static struct bsc_str jstr(struct json_object *v)
{
    return bsc_str_make(json_object_get_string(v), (size_t)json_object_get_string_len(v));
}

static enum bsc_err fail(struct ledger_parse_err *why, const char *param, const char *fmt,
                         const char *arg)
{
    why->param = param;
    snprintf(why->message, sizeof(why->message), fmt, arg);
    return BSC_EINVAL;
}

/* Checks one text member: a string of 1..<max> bytes (0..<max> when <may_be_empty>). */
static enum bsc_err take_text(struct json_object *v, const char *name, size_t max,
                              bool may_be_empty, char *dst, struct ledger_parse_err *why)
{
    struct bsc_str s;

    if (!json_object_is_type(v, json_type_string))
        return fail(why, name, "'%s' must be a string", name);
    s = jstr(v);
    if ((!may_be_empty && s.len == 0) || s.len > max) {
        char msg[64];
        snprintf(msg, sizeof(msg), "%s must be %s..%zu bytes", name, may_be_empty ? "0" : "1",
                 max);
        return fail(why, name, "%s", msg);
    }
    if (!is_text(s))
        return fail(why, name, "'%s' must be UTF-8 text without control characters", name);
    copy_text(dst, max + 1, s);
    return BSC_OK;
}

static enum bsc_err take_state(struct json_object *v, enum ledger_state *out,
                               struct ledger_parse_err *why)
{
    if (!json_object_is_type(v, json_type_string) || !ledger_state_parse(jstr(v), out))
        return fail(why, "state", "%s",
                    "'state' must be one of planned, started, succeeded, failed, unknown");
    return BSC_OK;
}

static enum bsc_err update_member(const char *k, struct json_object *v, struct ledger_update *u,
                                  unsigned *seen, struct ledger_parse_err *why)
{
    if (strcmp(k, "tool_name") == 0) {
        *seen |= 1;
        return take_text(v, "tool_name", LEDGER_TOOL_MAX, false, u->tool_name, why);
    }
    if (strcmp(k, "state") == 0) {
        *seen |= 2;
        return take_state(v, &u->state, why);
    }
    if (strcmp(k, "external_reference") == 0) {
        if (json_object_is_type(v, json_type_null))
            return BSC_OK;
        return take_text(v, "external_reference", LEDGER_REF_MAX, true,
                         u->external_reference, why);
    }
    return fail(why, NULL, "unknown parameter '%.100s'", k);
}

/* The rule every JSON body of the gateway follows (core/json_check.h, as
 * /v1/chat/completions applies it): well-formed UTF-8 included, which json-c's strict mode
 * does not check, and each top-level name at most once, escapes decoded, so that
 * {"state":"planned","st\u0061te":"succeeded"} cannot mean one thing here and another to a
 * reader of the body that keeps the first. Returns BSC_OK, or BSC_EPARSE (malformed) or
 * BSC_EINVAL (a name repeated or refused) with <why> saying where, in the chat endpoint's
 * words. */
static enum bsc_err json_well_formed(struct bsc_str json, struct ledger_parse_err *why)
{
    struct bsc_json_error jerr;
    enum bsc_json_verdict v;
    char name[BSC_JSON_MAX_NAME + 1];
    unsigned line, col;

    v = bsc_json_check_request(json, JSON_DEPTH, NULL, 0, 0, NULL, &jerr);
    if (v == BSC_JSONV_OK)
        return BSC_OK;
    bsc_json_line_col(json, jerr.offset, &line, &col);
    if (v == BSC_JSONV_DUPLICATE) {
        bsc_json_name_decode(jerr.name, name, sizeof(name));
        why->code = "duplicate_key";
        snprintf(why->message, sizeof(why->message),
                 "the member '%.100s' must appear at most once in the request body; it "
                 "appears again at line %u column %u (names compared with escapes decoded)",
                 name, line, col);
        return BSC_EINVAL;
    }
    if (v == BSC_JSONV_REFUSED) {
        why->code = "invalid_request";
        snprintf(why->message, sizeof(why->message),
                 "the request body is refused: %s at line %u column %u", jerr.what, line, col);
        return BSC_EINVAL;
    }
    snprintf(why->message, sizeof(why->message),
             "We could not parse the JSON body of your request: %s at line %u column %u",
             json.len ? jerr.what : "empty body", line, col);
    return BSC_EPARSE;
}

enum bsc_err ledger_update_parse(struct bsc_str json, struct ledger_update *out,
                                 struct ledger_parse_err *why)
{
    struct json_object *root;
    enum bsc_err err = BSC_OK;
    unsigned seen = 0;

    memset(out, 0, sizeof(*out));
    why->param = NULL;
    why->code = NULL;
    err = json_well_formed(json, why);
    if (err)
        return err;
    root = parse_object(json);
    if (!root) {
        snprintf(why->message, sizeof(why->message),
                 "the body must be a JSON object {\"tool_name\", \"state\", "
                 "\"external_reference\"?}");
        return BSC_EPARSE;
    }
    json_object_object_foreach(root, k, v)
    {
        err = update_member(k, v, out, &seen, why);
        if (err)
            break;
    }
    if (!err && !(seen & 1))
        err = fail(why, "tool_name", "%s", "'tool_name' is required");
    if (!err && !(seen & 2))
        err = fail(why, "state", "%s", "'state' is required");
    json_object_put(root);
    return err;
}

static bool take_u64(struct json_object *v, uint64_t *out)
{
    int64_t n;

    if (!json_object_is_type(v, json_type_int))
        return false;
    n = json_object_get_int64(v);
    if (n < 0)
        return false;
    *out = (uint64_t)n;
    return true;
}

static enum bsc_err entry_member(const char *k, struct json_object *v, struct ledger_entry *e,
                                 unsigned *seen)
{
    struct ledger_parse_err why;
    uint64_t n;

    if (strcmp(k, "object") == 0)
        return json_object_is_type(v, json_type_string) &&
                       bsc_str_eq(jstr(v), BSC_STR("ledger.entry"))
                   ? BSC_OK
                   : BSC_EINVAL;
    if (strcmp(k, "operation_id") == 0) {
        *seen |= 1;
        if (!json_object_is_type(v, json_type_string) || !ledger_op_id_valid(jstr(v)))
            return BSC_EINVAL;
        copy_text(e->op_id, sizeof(e->op_id), jstr(v));
        return BSC_OK;
    }
    if (strcmp(k, "tool_name") == 0) {
        *seen |= 2;
        return take_text(v, "tool_name", LEDGER_TOOL_MAX, false, e->tool_name, &why);
    }
    if (strcmp(k, "state") == 0) {
        *seen |= 4;
        return take_state(v, &e->state, &why);
    }
    if (strcmp(k, "external_reference") == 0) {
        if (json_object_is_type(v, json_type_null))
            return BSC_OK;
        return take_text(v, "external_reference", LEDGER_REF_MAX, true,
                         e->external_reference, &why);
    }
    if (strcmp(k, "version") == 0) {
        *seen |= 8;
        if (!take_u64(v, &n) || n == 0 || n > UINT32_MAX)
            return BSC_EINVAL;
        e->version = (uint32_t)n;
        return BSC_OK;
    }
    if (strcmp(k, "created_at_ms") == 0) {
        *seen |= 16;
        return take_u64(v, &e->created_ms) ? BSC_OK : BSC_EINVAL;
    }
    if (strcmp(k, "updated_at_ms") == 0) {
        *seen |= 32;
        return take_u64(v, &e->updated_ms) ? BSC_OK : BSC_EINVAL;
    }
    return BSC_EINVAL;
}

enum bsc_err ledger_entry_from_json(struct bsc_str json, struct ledger_entry *out)
{
    struct json_object *root = parse_object(json);
    enum bsc_err err = BSC_OK;
    unsigned seen = 0;

    memset(out, 0, sizeof(*out));
    if (!root)
        return BSC_EPARSE;
    json_object_object_foreach(root, k, v)
    {
        err = entry_member(k, v, out, &seen);
        if (err)
            break;
    }
    json_object_put(root);
    if (!err && seen != 63)
        err = BSC_EINVAL;
    return err;
}

/* ---- the transition --------------------------------------------------------------------- */

/* A repeat of the stored state: a no-op, or it fills in a reference not stored yet. */
static enum bsc_err apply_repeat(const struct ledger_entry *cur, const struct ledger_update *u,
                                 uint64_t now_ms, struct ledger_entry *out,
                                 enum ledger_outcome *outcome)
{
    if (!u->external_reference[0] ||
        strcmp(u->external_reference, cur->external_reference) == 0) {
        if (out != cur)
            *out = *cur;
        *outcome = LEDGER_UNCHANGED;
        return BSC_OK;
    }
    if (cur->external_reference[0])
        return BSC_ESTATE; /* a repeat may not rewrite what was acknowledged */
    if (out != cur)
        *out = *cur;
    memcpy(out->external_reference, u->external_reference, sizeof(out->external_reference));
    out->version++;
    out->updated_ms = now_ms;
    *outcome = LEDGER_UPDATED;
    return BSC_OK;
}

enum bsc_err ledger_apply(const struct ledger_entry *cur, struct bsc_str op_id,
                          const struct ledger_update *u, uint64_t now_ms,
                          struct ledger_entry *out, enum ledger_outcome *outcome)
{
    if (!ledger_op_id_valid(op_id) || (unsigned)u->state >= LEDGER_ST_COUNT || !u->tool_name[0])
        return BSC_EINVAL;
    if (!cur) {
        if (!ledger_initial_allowed(u->state))
            return BSC_ESTATE;
        memset(out, 0, sizeof(*out));
        copy_text(out->op_id, sizeof(out->op_id), op_id);
        memcpy(out->tool_name, u->tool_name, sizeof(out->tool_name));
        memcpy(out->external_reference, u->external_reference, sizeof(out->external_reference));
        out->state = u->state;
        out->version = 1;
        out->created_ms = out->updated_ms = now_ms;
        *outcome = LEDGER_CREATED;
        return BSC_OK;
    }
    if (strcmp(cur->tool_name, u->tool_name) != 0)
        return BSC_ESTATE;
    if (cur->state == u->state)
        return apply_repeat(cur, u, now_ms, out, outcome);
    if (!ledger_transition_allowed(cur->state, u->state))
        return BSC_ESTATE;
    if (out != cur)
        *out = *cur;
    out->state = u->state;
    if (u->external_reference[0])
        memcpy(out->external_reference, u->external_reference,
               sizeof(out->external_reference));
    out->version++;
    out->updated_ms = now_ms;
    *outcome = LEDGER_UPDATED;
    return BSC_OK;
}

/* ---- JSON out --------------------------------------------------------------------------- */

enum bsc_err ledger_entry_to_json(const struct ledger_entry *e, struct bsc_buf *out)
{
    size_t mark = out->len;
    enum bsc_err err;

    err = bsc_buf_append_cstr(out, "{\"object\":\"ledger.entry\",\"operation_id\":");
    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(e->op_id));
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"tool_name\":");
    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(e->tool_name));
    if (!err)
        err = bsc_buf_appendf(out, ",\"state\":\"%s\",\"external_reference\":",
                              ledger_state_name(e->state));
    if (!err)
        err = e->external_reference[0]
                  ? bsc_buf_append_json_str(out, bsc_str_cstr(e->external_reference))
                  : bsc_buf_append_cstr(out, "null");
    if (!err)
        err = bsc_buf_appendf(out,
                              ",\"version\":%u,\"created_at_ms\":%llu,\"updated_at_ms\":%llu}",
                              e->version, (unsigned long long)e->created_ms,
                              (unsigned long long)e->updated_ms);
    if (err) {
        out->len = mark; /* nothing half-written */
        if (out->p)
            out->p[mark] = '\0';
    }
    return err;
}

enum bsc_err ledger_scoped_id(const char *scope, struct bsc_str op_id, char *out, size_t len)
{
    size_t sl = strlen(scope);
    uint8_t d[BSC_SHA256_LEN];
    char hex[BSC_SHA256_HEX_LEN + 1];

    if (!ledger_op_id_valid(op_id) || len <= LEDGER_OP_ID_MAX ||
        (sl && (sl > 48 || !ledger_op_id_valid(bsc_str_make(scope, sl)))))
        return BSC_EINVAL;
    if (!sl) {
        snprintf(out, len, "%.*s", (int)op_id.len, op_id.p);
        return BSC_OK;
    }
    if (sl + 1 + op_id.len <= LEDGER_OP_ID_MAX) {
        snprintf(out, len, "%s~%.*s", scope, (int)op_id.len, op_id.p);
        return BSC_OK;
    }
    bsc_sha256(op_id.p, op_id.len, d);
    bsc_sha256_hex(d, hex);
    snprintf(out, len, "%s~h.%s", scope, hex); /* 48 + 3 + 64 < LEDGER_OP_ID_MAX */
    return BSC_OK;
}
