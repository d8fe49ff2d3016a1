/* SPDX-License-Identifier: MIT */
/* trim.c -- conversation-window trimming (`context.overflow: trim`): the planner (pure, over
 * message descriptors), the two rebuilds (the client's OpenAI bytes with the messages span
 * spliced; the canonical tree sharing every untouched member), and the router's glue, which
 * plans once per attempt against that attempt's target, always from the client's own
 * messages. It does not count real tokens: the router's bytes/4 estimate is the measure.
 * See docs/internals/request-lifecycle.md ("Trimming"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_name.h"
#include "core/json_scan.h"
#include "config/config.h"
#include "providers/provider.h"
#include "router/req_input.h"
#include "router/trim.h"

/* ---- the planner ---- */

/* True when <bytes> of request plus <out> output tokens fit <window> by the estimate. */
static bool fits(uint64_t bytes, uint64_t out, uint64_t window)
{
    return out <= window && bytes / TRIM_BYTES_PER_TOKEN <= window - out;
}

/* The end (exclusive) of the unit starting at <i>: an assistant tool-call message takes
 * the tool results that follow it, so a call and its answers go or stay together. */
static size_t unit_end(const struct trim_msg *m, size_t n, size_t i)
{
    size_t j = i + 1;

    if (m[i].role == TRIM_ROLE_TOOL_CALLS)
        while (j < n && m[j].role == TRIM_ROLE_TOOL)
            j++;
    return j;
}

static uint64_t unit_bytes(const struct trim_msg *m, size_t i, size_t end)
{
    uint64_t b = 0;

    for (; i < end; i++)
        b += m[i].bytes;
    return b;
}

/* The first message of the protected tail. */
static size_t tail_start(size_t n, uint32_t keep_last)
{
    return n > keep_last ? n - keep_last : 0;
}

long trim_plan(const struct trim_input *in, bool *drop)
{
    const struct trim_msg *m = in->msgs;
    size_t n = in->n, cut = tail_start(n, in->keep_last), i = 0, end;
    uint64_t kept = in->fixed_bytes + unit_bytes(m, 0, n);
    long dropped = 0;
    bool fit = false;

    for (size_t k = 0; k < n; k++)
        drop[k] = false;
    if (fits(kept, in->out_tokens, in->window))
        return 0;
    while (i < n) {
        if (m[i].role == TRIM_ROLE_SYSTEM) {
            i++;
            continue;
        }
        end = unit_end(m, n, i);
        if (end > cut)
            break; /* this unit and every later one reach into the protected tail */
        if (fit && m[i].role == TRIM_ROLE_USER)
            break; /* it fits, and the kept history starts at a user turn */
        for (size_t k = i; k < end; k++)
            drop[k] = true;
        kept -= unit_bytes(m, i, end);
        dropped += (long)(end - i);
        fit = fit || fits(kept + TRIM_MARKER_BYTES, in->out_tokens, in->window);
        i = end;
    }
    return fit ? dropped : -1;
}

uint64_t trim_min_bytes(const struct trim_msg *m, size_t n, uint64_t fixed_bytes,
                        uint32_t keep_last)
{
    size_t cut = tail_start(n, keep_last), i = 0, end;
    uint64_t bytes = fixed_bytes + unit_bytes(m, 0, n), droppable = 0;

    while (i < n) {
        if (m[i].role == TRIM_ROLE_SYSTEM) {
            i++;
            continue;
        }
        end = unit_end(m, n, i);
        if (end > cut)
            break;
        droppable += unit_bytes(m, i, end);
        i = end;
    }
    return droppable ? bytes - droppable + TRIM_MARKER_BYTES : bytes;
}

size_t trim_leading_system(const struct trim_msg *m, size_t n)
{
    size_t i = 0;

    while (i < n && m[i].role == TRIM_ROLE_SYSTEM)
        i++;
    return i;
}

/* ---- reading the messages ---- */

static bool name_is(struct bsc_str v, const char *want)
{
    return bsc_json_kind_of(v) == BSC_JSON_STRING &&
           bsc_json_name_eq(bsc_json_string_raw(v), bsc_str_cstr(want)) == 1;
}

static enum trim_role role_of(struct bsc_str msg)
{
    struct bsc_str role = BSC_STR_NULL, calls;

    if (bsc_json_member(msg, BSC_STR("role"), &role) != 1)
        return TRIM_ROLE_ASSISTANT; /* not droppable as a user turn starts */
    if (name_is(role, "system") || name_is(role, "developer"))
        return TRIM_ROLE_SYSTEM;
    if (name_is(role, "user"))
        return TRIM_ROLE_USER;
    if (name_is(role, "tool") || name_is(role, "function"))
        return TRIM_ROLE_TOOL;
    if ((bsc_json_member(msg, BSC_STR("tool_calls"), &calls) == 1 &&
         bsc_json_array_nonempty(calls)) ||
        (bsc_json_member(msg, BSC_STR("function_call"), &calls) == 1 &&
         bsc_json_kind_of(calls) == BSC_JSON_OBJECT))
        return TRIM_ROLE_TOOL_CALLS;
    return TRIM_ROLE_ASSISTANT;
}

enum bsc_err trim_describe(struct bsc_str body, struct bsc_str msgs, struct trim_msg **out,
                           size_t *n, uint64_t *fixed)
{
    struct bsc_str msg;
    size_t pos = 0, count = 0;
    uint64_t sum = 0;

    *out = NULL;
    *n = 0;
    *fixed = body.len;
    if (bsc_json_kind_of(msgs) != BSC_JSON_ARRAY)
        return BSC_OK;
    while (bsc_json_array_next(msgs, &pos, &msg))
        if (++count > TRIM_MAX_MESSAGES)
            return BSC_ELIMIT;
    if (!count)
        return BSC_OK;
    *out = calloc(count, sizeof(**out));
    if (!*out)
        return BSC_ENOMEM;
    for (pos = 0; *n < count && bsc_json_array_next(msgs, &pos, &msg); (*n)++) {
        (*out)[*n] = (struct trim_msg){role_of(msg), msg.len + 1}; /* +1: the separator */
        sum += msg.len + 1;
    }
    *fixed = body.len > sum ? body.len - sum : 0;
    return BSC_OK;
}

/* ---- the rebuilds ---- */

static enum bsc_err append_marker(struct bsc_buf *out, long dropped)
{
    return bsc_buf_appendf(
        out, "{\"role\":\"system\",\"content\":\"[%ld earlier messages omitted]\"}", dropped);
}

/* Appends the kept elements of <msgs> and the marker, comma-separated, inside brackets. */
static enum bsc_err splice_messages(struct bsc_str msgs, const struct trim_cut *cut,
                                    struct bsc_buf *out)
{
    struct bsc_str msg;
    size_t pos = 0, i = 0;
    bool first = true;
    enum bsc_err err = bsc_buf_append_char(out, '[');

    for (; !err && i <= cut->n; i++) {
        if (i == cut->lead && cut->dropped > 0) {
            err = first ? BSC_OK : bsc_buf_append_char(out, ',');
            if (!err)
                err = append_marker(out, cut->dropped);
            first = false;
        }
        if (err || i == cut->n || !bsc_json_array_next(msgs, &pos, &msg))
            break;
        if (cut->drop[i])
            continue;
        if (!first)
            err = bsc_buf_append_char(out, ',');
        if (!err)
            err = bsc_buf_append(out, msg.p, msg.len);
        first = false;
    }
    return err ? err : bsc_buf_append_char(out, ']');
}

enum bsc_err trim_splice(struct bsc_str body, struct bsc_str msgs, const struct trim_cut *cut,
                         struct bsc_buf *out, struct bsc_str *model)
{
    size_t pre = (size_t)(msgs.p - body.p), post = pre + msgs.len, mid, model_off = 0;
    enum bsc_err err;

    bsc_buf_reset(out);
    if (model->p)
        model_off = (size_t)(model->p - body.p);
    err = bsc_buf_append(out, body.p, pre);
    if (!err)
        err = splice_messages(msgs, cut, out);
    mid = out->len;
    if (!err)
        err = bsc_buf_append(out, body.p + post, body.len - post);
    if (err)
        return err;
    if (model->p && model_off >= post) /* after the messages: shifted by the new length */
        model_off = model_off - post + mid;
    if (model->p)
        *model = bsc_str_make(out->p + model_off, model->len);
    return BSC_OK;
}

static struct json_object *marker_json(long dropped)
{
    struct json_object *m = json_object_new_object();
    char text[64];

    if (!m)
        return NULL;
    snprintf(text, sizeof(text), "[%ld earlier messages omitted]", dropped);
    json_object_object_add(m, "role", json_object_new_string("system"));
    json_object_object_add(m, "content", json_object_new_string(text));
    return m;
}

struct json_object *trim_json(struct json_object *req, const struct trim_cut *cut)
{
    struct json_object *msgs, *out, *arr;

    if (!json_object_object_get_ex(req, "messages", &msgs) ||
        !json_object_is_type(msgs, json_type_array) || json_object_array_length(msgs) != cut->n)
        return NULL;
    out = json_object_new_object();
    arr = json_object_new_array_ext((int)cut->n + 1);
    if (!out || !arr)
        goto fail;
    json_object_object_foreach(req, key, val) {
        if (strcmp(key, "messages") != 0 &&
            json_object_object_add(out, key, json_object_get(val)) != 0)
            goto fail;
    }
    for (size_t i = 0; i < cut->n; i++) {
        if (i == cut->lead && cut->dropped > 0 &&
            json_object_array_add(arr, marker_json(cut->dropped)) != 0)
            goto fail;
        if (!cut->drop[i] &&
            json_object_array_add(arr, json_object_get(json_object_array_get_idx(msgs, i))))
            goto fail;
    }
    if (json_object_object_add(out, "messages", arr) != 0)
        goto fail;
    return out;
fail:
    json_object_put(arr);
    json_object_put(out);
    return NULL;
}

/* ---- the router's side ---- */

void trim_req_inspect(struct trim_state *ts, const struct req_input *in,
                      const struct cfg_context *c, struct bsc_str body, struct bsc_str msgs)
{
    if (c->overflow != CFG_OVERFLOW_TRIM || in->op != PROV_OP_CHAT || !msgs.p ||
        in->native.count_tokens)
        return;
    if (trim_describe(body, msgs, &ts->msgs, &ts->n, &ts->fixed_bytes) != BSC_OK || !ts->n ||
        !(ts->drop = calloc(ts->n, sizeof(*ts->drop)))) {
        trim_req_cleanup(ts); /* not trimmed: the route behaves as `fail` for it */
        return;
    }
    ts->min_bytes = trim_min_bytes(ts->msgs, ts->n, ts->fixed_bytes, c->keep_last);
    ts->all_bytes = trim_min_bytes(ts->msgs, ts->n, ts->fixed_bytes, (uint32_t)ts->n);
    if (in->body.p && body.p == in->body.p)
        ts->msgs_span = msgs;
    bsc_buf_init(&ts->body, in->body.len + 4096);
}

/* The output budget to reserve: the client's max tokens, else the target's, else a default. */
static uint64_t out_tokens(const struct req_input *in, const struct cfg_target *t)
{
    if (in->est_out_tokens)
        return in->est_out_tokens;
    return t->max_output_tokens ? t->max_output_tokens : TRIM_DEFAULT_OUTPUT_TOKENS;
}

/* True when an attempt on <t> would forward the client's own Anthropic bytes and may not
 * go through the translation instead: a field only the pass-through keeps (thinking, top_k,
 * ...) forbids it. Such a request is not trimmed for <t>. */
static bool pass_through_only(const struct req_input *in, const struct cfg_target *t)
{
    return in->native.body.p && in->native.required[0] &&
           prov_target_dialect(t) == in->native.kind;
}

bool trim_req_fits(const struct trim_state *ts, const struct req_input *in,
                   const struct cfg_target *t)
{
    uint64_t bytes = pass_through_only(in, t) ? ts->all_bytes : ts->min_bytes;

    /* Never refuses what `fail` would send: the upstream may still take it whole. */
    if (!t->context_window || in->est_tokens <= t->context_window)
        return true;
    return fits(bytes, out_tokens(in, t), t->context_window);
}

/* Drops the previous attempt's cut. */
static void reset_attempt(struct trim_state *ts)
{
    ts->dropped = 0;
    bsc_buf_reset(&ts->body);
    ts->model_span = BSC_STR_NULL;
    json_object_put(ts->json);
    ts->json = NULL;
}

/* The request on the neutral path, and the client's bytes on the fast path, without the cut
 * messages. */
static enum bsc_err build_cut(struct trim_state *ts, const struct req_input *in,
                              struct json_object *req, const struct trim_cut *cut)
{
    enum bsc_err err;

    if (!req || !(ts->json = trim_json(req, cut)))
        return BSC_ENOMEM;
    if (!ts->msgs_span.p || !in->body.p)
        return BSC_OK;
    ts->model_span = in->model_span;
    err = trim_splice(in->body, ts->msgs_span, cut, &ts->body, &ts->model_span);
    return err == BSC_ELIMIT ? BSC_ENOMEM : err;
}

enum bsc_err trim_req_attempt(struct trim_state *ts, const struct req_input *rin,
                              const struct cfg_context *c, const struct cfg_target *t,
                              trim_tree_fn *tree, void *arg)
{
    struct trim_input in = {
        .msgs = ts->msgs,
        .n = ts->n,
        .fixed_bytes = ts->fixed_bytes,
        .keep_last = c->keep_last,
        .window = t->context_window,
    };
    struct trim_cut cut = {ts->drop, ts->n, 0, 0};

    reset_attempt(ts);
    if (!ts->msgs || !t->context_window)
        return BSC_OK;
    in.out_tokens = out_tokens(rin, t);
    cut.dropped = trim_plan(&in, ts->drop);
    if (cut.dropped <= 0)
        return BSC_OK; /* fits as it is; or cannot fit, and the upstream will say so */
    /* The Anthropic pass-through forwards the client's bytes: a cut goes through the
     * translation instead, unless a field only the pass-through keeps forbids it; then the
     * request is sent whole (eligibility let it through only if the estimate fits). */
    if (pass_through_only(rin, t))
        return BSC_OK;
    cut.lead = trim_leading_system(ts->msgs, ts->n);
    if (build_cut(ts, rin, tree(arg), &cut) != BSC_OK) {
        reset_attempt(ts);
        return BSC_ENOMEM;
    }
    ts->dropped = cut.dropped;
    snprintf(ts->count_text, sizeof(ts->count_text), "%ld", cut.dropped);
    return BSC_OK;
}

void trim_req_cleanup(struct trim_state *ts)
{
    reset_attempt(ts);
    bsc_buf_cleanup(&ts->body);
    free(ts->msgs);
    free(ts->drop);
    *ts = (struct trim_state){0};
}
