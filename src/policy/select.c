/* SPDX-License-Identifier: MIT */
/* select.c -- task routing: matches a request's facts against the rules of a `select` route,
 * first match wins. Pure (no I/O, no clock): request.c fills the facts once, before the
 * envelope is built, and this file only compares. It also reads the two facts that need a walk
 * of the messages (their count, the last user text). The patterns were compiled at load
 * (config/route_select.c). See docs/configuration.md "select". */
#include <stdlib.h>
#include <string.h>

#include "contract/regex.h"
#include "core/json_name.h"
#include "core/json_scan.h"
#include "policy/select.h"

#define META_HEADER "x-bascule-meta-"

/* True when the raw JSON value <v> is a string that decodes to exactly <want>. */
static bool json_str_is(struct bsc_str v, const char *want)
{
    return bsc_json_kind_of(v) == BSC_JSON_STRING &&
           bsc_json_name_eq(bsc_json_string_raw(v), bsc_str_cstr(want)) == 1;
}

/* The header, when the request has it, speaks for the key: a proxy in front of the gateway can
 * set or strip it, and a client body cannot override what that proxy decided. */
static bool meta_holds(const struct cfg_sel_meta *m, const struct sel_facts *f)
{
    char name[sizeof(META_HEADER) + 128];
    size_t klen = strlen(m->key);
    struct bsc_str hv = BSC_STR_NULL, bv;

    if (f->header && klen <= 128) {
        memcpy(name, META_HEADER, sizeof(META_HEADER) - 1);
        memcpy(name + sizeof(META_HEADER) - 1, m->key, klen);
        hv = f->header(f->header_ctx, bsc_str_make(name, sizeof(META_HEADER) - 1 + klen));
    }
    if (hv.p)
        return bsc_str_eq(hv, bsc_str_cstr(m->value));
    if (!f->metadata.p || bsc_json_kind_of(f->metadata) != BSC_JSON_OBJECT)
        return false;
    return bsc_json_member(f->metadata, bsc_str_cstr(m->key), &bv) == 1 &&
           json_str_is(bv, m->value);
}

static bool flag_holds(uint32_t conds, uint32_t bit, bool want, bool have)
{
    return !(conds & bit) || want == have;
}

bool sel_rule_holds(const struct cfg_sel_rule *rule, const struct sel_facts *f, uint64_t *budget)
{
    uint32_t c = rule->conds;

    if (!flag_holds(c, CFG_SEL_TOOLS, rule->tools, f->tools) ||
        !flag_holds(c, CFG_SEL_IMAGES, rule->images, f->images) ||
        !flag_holds(c, CFG_SEL_JSON_SCHEMA, rule->json_schema, f->json_schema) ||
        !flag_holds(c, CFG_SEL_STREAM, rule->stream, f->stream))
        return false;
    if (((c & CFG_SEL_MIN_INPUT_TOKENS) && f->input_tokens < rule->min_input_tokens) ||
        ((c & CFG_SEL_MAX_INPUT_TOKENS) && f->input_tokens > rule->max_input_tokens) ||
        ((c & CFG_SEL_MIN_MESSAGES) && f->messages < rule->min_messages) ||
        ((c & CFG_SEL_MAX_MESSAGES) && f->messages > rule->max_messages))
        return false;
    for (size_t i = 0; (c & CFG_SEL_METADATA) && i < rule->n_metadata; i++)
        if (!meta_holds(&rule->metadata[i], f))
            return false;
    /* Last: the only condition whose cost grows with the prompt. */
    if ((c & CFG_SEL_LAST_USER_MATCHES) && rule->last_user)
        return js_regex_search(rule->last_user, f->last_user.p, f->last_user.len, budget) == 1;
    return true;
}

int sel_pick(const struct cfg_route *route, const struct sel_facts *f, uint64_t *budget)
{
    for (size_t i = 0; i < route->n_select; i++)
        if (sel_rule_holds(&route->select[i], f, budget))
            return (int)i;
    return -1;
}

/* ---- reading the messages ---------------------------------------------------------------- */

/* Appends the decoded string value <v> to <out> (room for it is there: a decoded string is
 * never longer than its raw form). */
static void append_text(char *out, size_t *len, struct bsc_str v)
{
    struct bsc_str raw = bsc_json_string_raw(v);

    *len += bsc_json_name_decode(raw, out + *len, raw.len + 1);
}

static char *user_text(struct bsc_str msg, size_t *len)
{
    struct bsc_str content, part, type, text;
    char *out;
    size_t j = 0;

    *len = 0;
    if (bsc_json_member(msg, BSC_STR("content"), &content) != 1)
        return calloc(1, 1);
    out = malloc(content.len + 2);
    if (!out)
        return NULL;
    out[0] = '\0';
    if (bsc_json_kind_of(content) == BSC_JSON_STRING) {
        append_text(out, len, content);
        return out;
    }
    while (bsc_json_kind_of(content) == BSC_JSON_ARRAY && bsc_json_array_next(content, &j, &part)) {
        if (bsc_json_member(part, BSC_STR("type"), &type) != 1 || !json_str_is(type, "text") ||
            bsc_json_member(part, BSC_STR("text"), &text) != 1 ||
            bsc_json_kind_of(text) != BSC_JSON_STRING)
            continue;
        if (*len)
            out[(*len)++] = '\n';
        append_text(out, len, text);
    }
    out[*len] = '\0';
    return out;
}

char *sel_read_messages(struct bsc_str messages, uint64_t *count, size_t *len)
{
    struct bsc_str msg, role, last = BSC_STR_NULL;
    size_t i = 0;

    *count = 0;
    *len = 0;
    while (messages.p && bsc_json_kind_of(messages) == BSC_JSON_ARRAY &&
           bsc_json_array_next(messages, &i, &msg)) {
        (*count)++;
        if (bsc_json_member(msg, BSC_STR("role"), &role) == 1 && json_str_is(role, "user"))
            last = msg;
    }
    if (!last.p)
        return calloc(1, 1);
    return user_text(last, len);
}
