/* SPDX-License-Identifier: MIT */
/* fuzz-sources: src/ledger/ledger.c src/ledger/idempotency.c src/stream/utf8.c */
/* fuzz_ledger.c -- libFuzzer target for the tool ledger's JSON and the idempotency
 * fingerprint's canonical JSON (ledger/ledger.h, ledger/idempotency.h). The whole input is
 * tried as an update body, as a stored entry and as a request body. Beyond "no crash, no
 * leak, no UB" it aborts when an invariant breaks:
 *   - ledger_update_parse: BSC_OK gives NUL-terminated UTF-8 texts within their limits and
 *     a state in range; an error is EPARSE or EINVAL with a NUL-terminated reason; an
 *     update applied to no entry and to an entry in every state obeys the transition
 *     table (version, outcome, timestamps, the entry's own fields);
 *   - ledger_entry_from_json: an entry it accepts writes (to_json) as JSON that parses
 *     back to the same entry and writes again to the same bytes;
 *   - idem_canonical_json: the output canonicalises to itself (idempotent), is valid
 *     UTF-8 without whitespace outside strings, parses (json-c), and the fingerprint of the input equals that of its
 *     canonical form. Built and run by scripts/fuzz. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "core/compat.h"
#include "core/buf.h"
#include "ledger/idempotency.h"
#include "ledger/ledger.h"
#include "stream/utf8.h"

#define NOW_MS 1700000000000ull

static void die(const char *what)
{
    fprintf(stderr, "fuzz_ledger: invariant broken: %s\n", what);
    abort();
}

static void check_cstr(const char *s, size_t cap, size_t min_len, const char *what)
{
    const char *nul = memchr(s, '\0', cap);

    if (!nul || (size_t)(nul - s) < min_len || !bsc_utf8_valid(s, (size_t)(nul - s)))
        die(what);
    for (const char *p = s; p < nul; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            die("a ledger text holds a control character");
    }
}

static bool same_entry(const struct ledger_entry *a, const struct ledger_entry *b)
{
    return strcmp(a->op_id, b->op_id) == 0 && strcmp(a->tool_name, b->tool_name) == 0 &&
           strcmp(a->external_reference, b->external_reference) == 0 && a->state == b->state &&
           a->version == b->version && a->created_ms == b->created_ms &&
           a->updated_ms == b->updated_ms;
}

/* ---- updates ---- */

static void check_apply(const struct ledger_update *u)
{
    static const struct bsc_str op = BSC_STR("op_fuzz-1");
    struct ledger_entry out, cur;
    enum ledger_outcome outcome;
    enum bsc_err err;

    err = ledger_apply(NULL, op, u, NOW_MS, &out, &outcome);
    if (err == BSC_OK) {
        if (!ledger_initial_allowed(u->state) || outcome != LEDGER_CREATED || out.version != 1 ||
            out.state != u->state || out.created_ms != NOW_MS || out.updated_ms != NOW_MS ||
            strcmp(out.tool_name, u->tool_name) != 0 ||
            strcmp(out.external_reference, u->external_reference) != 0)
            die("a new entry is not what the update asked for");
    } else if (err != BSC_ESTATE || ledger_initial_allowed(u->state)) {
        die("an allowed first state was refused");
    }

    for (unsigned s = 0; s < LEDGER_ST_COUNT; s++) {
        for (int same_tool = 0; same_tool < 2; same_tool++) {
            memset(&cur, 0, sizeof(cur));
            snprintf(cur.op_id, sizeof(cur.op_id), "%.*s", BSC_STR_FMT(op));
            snprintf(cur.tool_name, sizeof(cur.tool_name), "%s",
                     same_tool ? u->tool_name : "some_other_tool");
            snprintf(cur.external_reference, sizeof(cur.external_reference), "%s",
                     s % 2 ? "ref-42" : "");
            cur.state = (enum ledger_state)s;
            cur.version = 7;
            cur.created_ms = 1000;
            cur.updated_ms = 2000;
            err = ledger_apply(&cur, op, u, NOW_MS, &out, &outcome);
            if (err != BSC_OK) {
                if (err != BSC_ESTATE)
                    die("apply returned an undocumented error");
                if (strcmp(cur.tool_name, u->tool_name) == 0 && cur.state != u->state &&
                    ledger_transition_allowed(cur.state, u->state))
                    die("an allowed transition was refused");
                continue;
            }
            if (strcmp(cur.tool_name, u->tool_name) != 0)
                die("an update for another tool was applied");
            if (cur.state != u->state && !ledger_transition_allowed(cur.state, u->state))
                die("an illegal transition was applied");
            if (ledger_state_is_terminal(cur.state) && cur.state != u->state)
                die("a terminal state was left");
            if (out.state != u->state || out.created_ms != cur.created_ms ||
                strcmp(out.op_id, cur.op_id) != 0)
                die("apply changed what it must keep");
            if (outcome == LEDGER_UNCHANGED) {
                if (!same_entry(&out, &cur))
                    die("UNCHANGED but the entry changed");
            } else if (outcome == LEDGER_UPDATED) {
                if (out.version != cur.version + 1 || out.updated_ms != NOW_MS)
                    die("UPDATED without a new version and time");
            } else {
                die("apply on an entry said CREATED");
            }
            if (u->external_reference[0] &&
                strcmp(out.external_reference, u->external_reference) != 0)
                die("the external reference given was not stored");
            if (!u->external_reference[0] &&
                strcmp(out.external_reference, cur.external_reference) != 0)
                die("an absent external reference erased the stored one");
        }
    }
}

static void check_update(struct bsc_str body)
{
    struct ledger_update u;
    struct ledger_parse_err why;
    enum bsc_err err;

    memset(&u, 0x5a, sizeof(u));
    memset(&why, 0, sizeof(why));
    err = ledger_update_parse(body, &u, &why);
    if (err == BSC_OK) {
        check_cstr(u.tool_name, sizeof(u.tool_name), 1, "update tool_name is not 1..max text");
        check_cstr(u.external_reference, sizeof(u.external_reference), 0,
                   "update external_reference is not text");
        if ((unsigned)u.state >= LEDGER_ST_COUNT)
            die("update state out of range");
        check_apply(&u);
    } else if (err == BSC_EINVAL || err == BSC_EPARSE) {
        if (!memchr(why.message, '\0', sizeof(why.message)))
            die("the parse error message is not NUL-terminated");
        if (err == BSC_EINVAL && !why.message[0])
            die("EINVAL without a reason");
    } else if (err != BSC_ENOMEM) {
        die("update_parse returned an undocumented error");
    }
}

/* ---- entries ---- */

static void check_entry(struct bsc_str body)
{
    struct ledger_entry e, back;
    struct bsc_buf j1, j2;

    if (ledger_entry_from_json(body, &e) != BSC_OK)
        return;
    if (!ledger_op_id_valid(bsc_str_cstr(e.op_id)))
        die("an entry with an invalid op id was accepted");
    check_cstr(e.tool_name, sizeof(e.tool_name), 1, "entry tool_name is not 1..max text");
    check_cstr(e.external_reference, sizeof(e.external_reference), 0,
               "entry external_reference is not text");
    if ((unsigned)e.state >= LEDGER_ST_COUNT || e.version == 0)
        die("an entry with a bad state or version was accepted");
    bsc_buf_init(&j1, 1u << 16);
    bsc_buf_init(&j2, 1u << 16);
    if (ledger_entry_to_json(&e, &j1) != BSC_OK)
        die("to_json failed within its bound");
    if (ledger_entry_from_json(bsc_buf_str(&j1), &back) != BSC_OK)
        die("to_json output does not parse back");
    if (!same_entry(&e, &back))
        die("an entry does not survive to_json/from_json");
    if (ledger_entry_to_json(&back, &j2) != BSC_OK || j1.len != j2.len ||
        memcmp(j1.p, j2.p, j1.len) != 0)
        die("to_json is not stable");
    bsc_buf_cleanup(&j1);
    bsc_buf_cleanup(&j2);
}

/* ---- canonical JSON ---- */

static void check_canonical(struct bsc_str body)
{
    size_t max = body.len * 6 + 16;
    struct bsc_buf c1, c2;
    struct idem_fp f_body, f_canon;
    enum bsc_err err;

    bsc_buf_init(&c1, max);
    err = idem_canonical_json(body, &c1);
    if (err == BSC_OK) {
        struct json_tokener *tok;
        struct json_object *o;

        if (!bsc_utf8_valid(c1.p, c1.len))
            die("canonical JSON is not valid UTF-8");
        bool in_str = false;

        for (size_t i = 0; i < c1.len; i++) {
            char ch = c1.p[i];

            if (in_str && ch == '\\')
                i++; /* the escaped byte */
            else if (ch == '"')
                in_str = !in_str;
            else if (!in_str && (ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r'))
                die("canonical JSON holds whitespace outside strings");
        }
        bsc_buf_init(&c2, c1.len * 6 + 16);
        if (idem_canonical_json(bsc_buf_str(&c1), &c2) != BSC_OK)
            die("canonical JSON does not canonicalise again");
        if (c1.len != c2.len || memcmp(c1.p, c2.p, c1.len) != 0)
            die("canonicalisation is not idempotent");
        bsc_buf_cleanup(&c2);
        tok = json_tokener_new_ex(IDEM_JSON_DEPTH + 2);
        if (!tok)
            die("out of memory");
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
        o = json_tokener_parse_ex(tok, c1.p, (int)c1.len);
        if (!o && json_tokener_get_error(tok) == json_tokener_continue)
            o = json_tokener_parse_ex(tok, "", 1); /* a top-level number ends at the NUL */
        else if (o && json_tokener_get_parse_end(tok) != c1.len)
            die("canonical JSON has bytes json-c does not read");
        if (!o && json_tokener_get_error(tok) != json_tokener_success)
            die("canonical JSON does not parse with json-c");
        json_object_put(o);
        json_tokener_free(tok);
        if (idem_fingerprint(BSC_STR("POST /v1/chat/completions"), body, &f_body) ||
            idem_fingerprint(BSC_STR("POST /v1/chat/completions"), bsc_buf_str(&c1), &f_canon))
            die("fingerprint failed");
        if (memcmp(f_body.b, f_canon.b, sizeof(f_body.b)) != 0)
            die("a body and its canonical form fingerprint differently");
    } else if (err != BSC_EPARSE && err != BSC_ENOMEM && err != BSC_ELIMIT) {
        die("canonical_json returned an undocumented error");
    }
    bsc_buf_cleanup(&c1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct bsc_str body = bsc_str_make(size ? (const char *)data : "", size);

    check_update(body);
    check_entry(body);
    check_canonical(body);
    return 0;
}
