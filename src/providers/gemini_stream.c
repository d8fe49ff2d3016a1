/* SPDX-License-Identifier: MIT */
/* gemini_stream.c -- the answer side of the Gemini adapter: a GenerateContentResponse into
 * an OpenAI chat.completion, a stream of them (alt=sse: one whole response chunk per event,
 * no terminator, EOF after the chunk with finishReason) into chat.completion.chunk frames,
 * embedContent / batchEmbedContents answers into the embeddings list, the model list into
 * OpenAI's, and a bare JSON error object among or after the events into a stream error.
 * Streamed text is re-framed so that no delta ends inside a UTF-8 character. Pure: no I/O,
 * no clock ("created" is the request's time from prov_call: Gemini sends none).
 * Design: docs/internals/provider-gemini.md. */
#include <string.h>

#include "core/json_parse.h"
#include "providers/gemini.h"
#include "providers/provider.h"
#include "stream/utf8.h"

/* ---- small helpers ---- */

static void add(struct json_object *obj, const char *key, struct json_object *val, bool *oom)
{
    if (!val || !obj || json_object_object_add(obj, key, val)) {
        json_object_put(val);
        *oom = true;
    }
}

static void append(struct json_object *arr, struct json_object *val, bool *oom)
{
    if (!val || !arr || json_object_array_add(arr, val)) {
        json_object_put(val);
        *oom = true;
    }
}

static struct json_object *jstr(struct bsc_str s)
{
    return json_object_new_string_len(s.p ? s.p : "", (int)s.len);
}

static bool in_list(struct bsc_str s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (bsc_str_eq(s, bsc_str_cstr(list[i])))
            return true;
    return false;
}

static bool is_thought(struct json_object *part)
{
    struct json_object *t = bsc_json_get_type(part, "thought", json_type_boolean);

    return t && json_object_get_boolean(t);
}

/* ---- finish reasons and usage ---- */

static const char *const filtered[] = {
    "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
    "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION",
};

/* The model tried to call a tool and produced nothing usable. */
static const char *const broken_call[] = {
    "MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS",
};

/* Gemini finishReason -> OpenAI finish_reason (docs/providers.md §3.3). Function calls come
 * back with STOP: any call makes it tool_calls. *<unusable> tells a broken call apart;
 * unknown values (LANGUAGE, OTHER, new ones) are "stop". */
BSC_TESTABLE const char *prov__gem_finish(struct bsc_str reason, bool had_tools, bool *unusable)
{
    *unusable = in_list(reason, broken_call, BSC_ARRAY_LEN(broken_call));
    if (in_list(reason, filtered, BSC_ARRAY_LEN(filtered)))
        return "content_filter";
    if (had_tools)
        return "tool_calls";
    if (bsc_str_eq(reason, BSC_STR("MAX_TOKENS")))
        return "length";
    return "stop";
}

/* Reads usageMetadata into <u> (kept as it was when absent). */
static void read_usage(struct json_object *root, struct prov_usage *u, int64_t *reasoning)
{
    struct json_object *um = bsc_json_get_type(root, "usageMetadata", json_type_object);
    int64_t thoughts, cands;

    if (!um)
        return;
    thoughts = gem_i64(um, "thoughtsTokenCount", 0);
    cands = gem_i64(um, "candidatesTokenCount", 0);
    if (thoughts < 0)
        thoughts = 0;
    if (cands < 0)
        cands = 0;
    u->input_tokens = gem_i64(um, "promptTokenCount", -1);
    /* Counts come from the upstream: a huge one saturates instead of overflowing. */
    u->output_tokens = cands > INT64_MAX - thoughts ? INT64_MAX : cands + thoughts;
    /* promptTokenCount includes the cached content; thoughts are billed as output but are
     * not in candidatesTokenCount (docs/configuration.md "Cost"). */
    u->cached_tokens = gem_i64(um, "cachedContentTokenCount", 0);
    u->reasoning_tokens = thoughts;
    *reasoning = thoughts;
}

static struct json_object *usage_json(const struct prov_usage *u, int64_t reasoning, bool *oom)
{
    struct json_object *o = prov_usage_json(u), *d;

    if (o && reasoning > 0) {
        d = json_object_new_object();
        add(d, "reasoning_tokens", json_object_new_int64(reasoning), oom);
        add(o, "completion_tokens_details", d, oom);
    }
    if (!o)
        *oom = true;
    return o;
}

/* Takes the completion id and model the answer names (responseId, modelVersion). */
static void name_from(struct gem_resp_ctx *ctx, struct json_object *root)
{
    struct bsc_str rid = gem_str(root, "responseId"), ver = gem_str(root, "modelVersion");

    if (rid.len && rid.len < sizeof(ctx->id) - 10)
        snprintf(ctx->id, sizeof(ctx->id), "chatcmpl-%.*s", BSC_STR_FMT(rid));
    if (ver.len && ver.len < sizeof(ctx->model))
        snprintf(ctx->model, sizeof(ctx->model), "%.*s", BSC_STR_FMT(ver));
}

/* An OpenAI tool call for a functionCall <part>: its own id when Gemini sent one, else
 * <prefix><n>; arguments as JSON text; a thought signature rides along in
 * extra_content.google.thought_signature. <index> < 0: no "index" (unary form). */
static struct json_object *tool_call(const struct gem_resp_ctx *ctx, struct json_object *part,
                                     uint32_t n, int64_t index, bool *oom)
{
    struct json_object *fc = bsc_json_get(part, "functionCall"), *args = bsc_json_get(fc, "args");
    struct json_object *o = json_object_new_object(), *fn = json_object_new_object(), *g, *x;
    struct bsc_str id = gem_str(fc, "id"), sig = gem_str(part, "thoughtSignature");
    char synth[GEM_PREFIX_MAX + 16];
    const char *text = "{}";
    size_t len = 2;

    if (index >= 0)
        add(o, "index", json_object_new_int64(index), oom);
    snprintf(synth, sizeof(synth), "%s%u", ctx->prefix, n);
    add(o, "id", id.len ? jstr(id) : json_object_new_string(synth), oom);
    add(o, "type", json_object_new_string("function"), oom);
    add(fn, "name", jstr(gem_str(fc, "name")), oom);
    if (args && json_object_is_type(args, json_type_object)) {
        text = json_object_to_json_string_length(
            args, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
        if (!text)
            *oom = true;
    }
    add(fn, "arguments", json_object_new_string_len(text ? text : "{}", text ? (int)len : 2), oom);
    add(o, "function", fn, oom);
    if (sig.len) {
        x = json_object_new_object();
        g = json_object_new_object();
        add(g, "thought_signature", jstr(sig), oom);
        add(x, "google", g, oom);
        add(o, "extra_content", x, oom);
    }
    return o;
}

static void fail_bad_answer(struct fail_info *fail, const char *msg)
{
    prov__gem_fail_set(fail, FAIL_SERVER_ERROR, 200, msg);
}

/* ---- unary answers ---- */

struct unary {
    const struct gem_resp_ctx *ctx;
    uint32_t n_ids;   /* synthetic ids handed out */
    bool unusable;    /* a candidate ended in a broken call with nothing else */
    bool oom;
};

static struct json_object *choice(struct unary *u, struct json_object *cand, size_t pos)
{
    struct json_object *parts = bsc_json_get_type(bsc_json_get(cand, "content"), "parts", json_type_array);
    struct json_object *calls = json_object_new_array(), *msg = json_object_new_object();
    struct json_object *ch = json_object_new_object();
    struct bsc_buf text;
    const char *finish;
    bool unusable;

    /* Bounded by the answer body it is copied from (the upstream body bound); <out> bounds
     * the result again. */
    bsc_buf_init(&text, SIZE_MAX / 4);
    for (size_t i = 0; parts && i < json_object_array_length(parts); i++) {
        struct json_object *p = json_object_array_get_idx(parts, i);
        struct bsc_str t = gem_str(p, "text");
        if (is_thought(p))
            continue; /* thought summaries are not the answer */
        if (t.len && utf8_sanitize(&text, t.p, t.len))
            u->oom = true;
        if (bsc_json_get_type(p, "functionCall", json_type_object) &&
            !(u->ctx->single_tool && json_object_array_length(calls) > 0))
            append(calls, tool_call(u->ctx, p, u->n_ids++, -1, &u->oom), &u->oom);
    }
    finish = prov__gem_finish(gem_str(cand, "finishReason"), json_object_array_length(calls) > 0,
                              &unusable);
    if (unusable && text.len == 0 && json_object_array_length(calls) == 0)
        u->unusable = true;
    add(msg, "role", json_object_new_string("assistant"), &u->oom);
    if (text.len || json_object_array_length(calls) == 0)
        add(msg, "content", jstr(bsc_buf_str(&text)), &u->oom);
    else
        json_object_object_add(msg, "content", NULL); /* JSON null: the answer is calls */
    json_object_object_add(msg, "refusal", NULL);
    if (json_object_array_length(calls))
        add(msg, "tool_calls", calls, &u->oom);
    else
        json_object_put(calls);
    add(ch, "index", json_object_new_int64(gem_i64(cand, "index", (int64_t)pos)), &u->oom);
    add(ch, "message", msg, &u->oom);
    json_object_object_add(ch, "logprobs", NULL);
    add(ch, "finish_reason", json_object_new_string(finish), &u->oom);
    bsc_buf_cleanup(&text);
    return ch;
}

static enum bsc_err map_chat(const struct prov_call *call, struct json_object *root,
                             struct bsc_buf *out, struct prov_usage *usage, struct fail_info *fail)
{
    struct json_object *cands = bsc_json_get_type(root, "candidates", json_type_array);
    struct json_object *res, *choices;
    struct gem_resp_ctx ctx;
    struct unary u = {.ctx = &ctx};
    int64_t reasoning = 0;
    enum bsc_err err;

    if (prov__gem_fail_from_error(root, 200, NULL, fail) ||
        prov__gem_prompt_blocked(root, 200, fail))
        return BSC_EPARSE;
    if (!cands || json_object_array_length(cands) == 0) {
        fail_bad_answer(fail, "the Gemini answer has no candidates");
        return BSC_EPARSE;
    }
    prov__gem_resp_ctx_init(&ctx, call);
    name_from(&ctx, root);
    read_usage(root, usage, &reasoning);
    choices = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(cands) && i < GEM_MAX_CANDIDATES; i++)
        append(choices, choice(&u, json_object_array_get_idx(cands, i), i), &u.oom);
    if (u.unusable && json_object_array_length(choices) == 1) {
        json_object_put(choices);
        prov__gem_fail_set(fail, FAIL_CONTRACT_FAILURE, 200,
                           "the model produced a function call it could not complete");
        return BSC_EPARSE;
    }
    res = json_object_new_object();
    add(res, "id", json_object_new_string(ctx.id), &u.oom);
    add(res, "object", json_object_new_string("chat.completion"), &u.oom);
    add(res, "created", json_object_new_int64(ctx.created), &u.oom);
    add(res, "model", json_object_new_string(ctx.model), &u.oom);
    add(res, "choices", choices, &u.oom);
    add(res, "usage", usage_json(usage, reasoning, &u.oom), &u.oom);
    err = u.oom ? BSC_ENOMEM : prov_append_json(out, res);
    json_object_put(res);
    return err;
}

/* ---- embeddings and the model list ---- */

/* Appends <values> as base64 of little-endian float32, what OpenAI's encoding_format
 * "base64" means. */
static enum bsc_err base64_floats(struct json_object *values, struct bsc_buf *out)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = json_object_array_length(values), len = n * 4;
    unsigned char *raw = malloc(len ? len : 1);
    enum bsc_err err = BSC_OK;

    if (!raw)
        return BSC_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        float f = (float)json_object_get_double(json_object_array_get_idx(values, i));
        uint32_t bits;
        memcpy(&bits, &f, 4);
        for (size_t k = 0; k < 4; k++)
            raw[i * 4 + k] = (unsigned char)(bits >> (8 * k));
    }
    for (size_t i = 0; i < len && !err; i += 3) {
        uint32_t v = (uint32_t)raw[i] << 16;
        char q[4];
        v |= i + 1 < len ? (uint32_t)raw[i + 1] << 8 : 0;
        v |= i + 2 < len ? raw[i + 2] : 0;
        q[0] = tbl[(v >> 18) & 63];
        q[1] = tbl[(v >> 12) & 63];
        q[2] = i + 1 < len ? tbl[(v >> 6) & 63] : '=';
        q[3] = i + 2 < len ? tbl[v & 63] : '=';
        err = bsc_buf_append(out, q, 4);
    }
    free(raw);
    return err;
}

static struct json_object *embedding(struct json_object *values, size_t i, bool b64, bool *oom)
{
    struct json_object *o = json_object_new_object();
    struct bsc_buf enc;

    add(o, "object", json_object_new_string("embedding"), oom);
    add(o, "index", json_object_new_int64((int64_t)i), oom);
    if (!b64) {
        add(o, "embedding", json_object_get(values), oom); /* the numbers as Gemini wrote them */
        return o;
    }
    bsc_buf_init(&enc, SIZE_MAX / 4); /* 4/3 of 4 bytes per value of a bounded body */
    if (base64_floats(values, &enc))
        *oom = true;
    add(o, "embedding", jstr(bsc_buf_str(&enc)), oom);
    bsc_buf_cleanup(&enc);
    return o;
}

static enum bsc_err map_embeddings(const struct prov_call *call, struct json_object *root,
                                   struct bsc_buf *out, struct prov_usage *usage,
                                   struct fail_info *fail)
{
    struct json_object *one = bsc_json_get_type(root, "embedding", json_type_object);
    struct json_object *many = bsc_json_get_type(root, "embeddings", json_type_array);
    struct json_object *res, *data, *u;
    bool b64 = bsc_str_eq(gem_str(call->req, "encoding_format"), BSC_STR("base64")), oom = false;
    size_t n = one ? 1 : many ? json_object_array_length(many) : 0;
    int64_t prompt = gem_i64(bsc_json_get(root, "usageMetadata"), "promptTokenCount", -1);
    struct gem_resp_ctx ctx;
    enum bsc_err err;

    if (prov__gem_fail_from_error(root, 200, NULL, fail))
        return BSC_EPARSE;
    if (n == 0) {
        fail_bad_answer(fail, "the Gemini answer has no embeddings");
        return BSC_EPARSE;
    }
    prov__gem_resp_ctx_init(&ctx, call);
    data = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        struct json_object *e = one ? one : json_object_array_get_idx(many, i);
        struct json_object *values = bsc_json_get_type(e, "values", json_type_array);
        if (!values) {
            json_object_put(data);
            fail_bad_answer(fail, "a Gemini embedding has no values");
            return BSC_EPARSE;
        }
        append(data, embedding(values, i, b64, &oom), &oom);
    }
    *usage = PROV_USAGE_UNKNOWN;
    usage->input_tokens = prompt;
    usage->output_tokens = prompt >= 0 ? 0 : -1;
    res = json_object_new_object();
    u = json_object_new_object();
    add(u, "prompt_tokens", json_object_new_int64(prompt > 0 ? prompt : 0), &oom);
    add(u, "total_tokens", json_object_new_int64(prompt > 0 ? prompt : 0), &oom);
    add(res, "object", json_object_new_string("list"), &oom);
    add(res, "data", data, &oom);
    add(res, "model", json_object_new_string(ctx.model), &oom);
    add(res, "usage", u, &oom);
    err = oom ? BSC_ENOMEM : prov_append_json(out, res);
    json_object_put(res);
    return err;
}

static enum bsc_err map_models(struct json_object *root, struct bsc_buf *out,
                               struct fail_info *fail)
{
    struct json_object *models = bsc_json_get_type(root, "models", json_type_array), *res, *data;
    bool oom = false;
    enum bsc_err err;

    if (prov__gem_fail_from_error(root, 200, NULL, fail))
        return BSC_EPARSE;
    if (!models) {
        fail_bad_answer(fail, "the Gemini model list has no models");
        return BSC_EPARSE;
    }
    data = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(models); i++) {
        struct bsc_str name = gem_str(json_object_array_get_idx(models, i), "name");
        struct json_object *m = json_object_new_object();
        if (bsc_str_starts(name, BSC_STR("models/")))
            name = bsc_str_make(name.p + 7, name.len - 7);
        add(m, "id", jstr(name), &oom);
        add(m, "object", json_object_new_string("model"), &oom);
        add(m, "created", json_object_new_int64(0), &oom);
        add(m, "owned_by", json_object_new_string("google"), &oom);
        append(data, m, &oom);
    }
    res = json_object_new_object();
    add(res, "object", json_object_new_string("list"), &oom);
    add(res, "data", data, &oom);
    err = oom ? BSC_ENOMEM : prov_append_json(out, res);
    json_object_put(res);
    return err;
}

enum bsc_err prov__gem_map_response(const struct prov_call *call, struct bsc_str body,
                                    struct bsc_buf *out, struct prov_usage *usage,
                                    struct fail_info *fail)
{
    struct json_object *root = prov_parse_json(body);
    enum bsc_err err;

    *usage = PROV_USAGE_UNKNOWN;
    if (!root || !(json_object_is_type(root, json_type_object) ||
                   json_object_is_type(root, json_type_array))) {
        json_object_put(root);
        fail_bad_answer(fail, "the upstream answer is not a JSON object");
        return BSC_EPARSE;
    }
    if (call->op == PROV_OP_EMBEDDINGS)
        err = map_embeddings(call, root, out, usage, fail);
    else if (call->op == PROV_OP_PROBE_MODELS)
        err = map_models(root, out, fail);
    else
        err = map_chat(call, root, out, usage, fail);
    json_object_put(root);
    return err;
}

/* ---- streams ---- */

void prov__gem_stream_init(void *st, const struct prov_call *call)
{
    struct gem_stream *s = st;

    prov__gem_resp_ctx_init(&s->ctx, call);
    for (size_t i = 0; i < GEM_MAX_CANDIDATES; i++)
        utf8_carry_init(&s->cand[i].carry);
    s->usage = PROV_USAGE_UNKNOWN;
    s->reasoning = -1;
    bsc_buf_init(&s->pend, GEM_ERR_JSON_MAX);
}

static enum prov_stream_status out_of_room(struct fail_info *fail)
{
    fail_bad_answer(fail, "a Gemini stream chunk passed the gateway's output bound");
    return PROV_STREAM_ERROR;
}

/* A delta for candidate <c>: the first one of a candidate carries the role. New ref. */
static struct json_object *delta_new(struct gem_cand *c, bool *first)
{
    struct json_object *d = json_object_new_object();

    *first = !c->started;
    if (d && !c->started)
        json_object_object_add(d, "role", json_object_new_string("assistant"));
    c->started = true;
    return d;
}

/* Appends one chunk frame with <delta> (taken) for choice <idx>. */
static enum bsc_err emit(struct gem_stream *s, uint32_t idx, struct json_object *delta,
                         const char *finish, struct bsc_buf *out)
{
    struct json_object *chunk = prov_chunk_new(s->ctx.id, s->ctx.created, s->ctx.model);
    struct json_object *ch = json_object_new_object();
    bool oom = false;
    enum bsc_err err;

    add(ch, "index", json_object_new_int64(idx), &oom);
    add(ch, "delta", delta, &oom);
    json_object_object_add(ch, "logprobs", NULL);
    if (finish)
        add(ch, "finish_reason", json_object_new_string(finish), &oom);
    else
        json_object_object_add(ch, "finish_reason", NULL);
    append(bsc_json_get(chunk, "choices"), ch, &oom);
    err = oom ? BSC_ENOMEM : prov_emit_chunk(out, chunk);
    json_object_put(chunk);
    return err;
}

/* Emits the complete characters of <text> (plus any held from before) as a content delta. */
static enum bsc_err emit_text(struct gem_stream *s, uint32_t idx, const char *p, size_t len,
                              bool flush, struct bsc_buf *out)
{
    struct gem_cand *c = &s->cand[idx];
    struct json_object *d;
    struct bsc_buf text;
    enum bsc_err err;
    bool first;

    bsc_buf_init(&text, 3 * (len + 4) + 16); /* every byte may become U+FFFD */
    err = flush ? utf8_carry_flush(&c->carry, &text) : utf8_carry_feed(&c->carry, &text, p, len);
    if (!err && text.len) {
        d = delta_new(c, &first);
        json_object_object_add(d, "content", jstr(bsc_buf_str(&text)));
        err = emit(s, idx, d, NULL, out);
    }
    bsc_buf_cleanup(&text);
    return err;
}

static enum bsc_err emit_tool(struct gem_stream *s, uint32_t idx, struct json_object *part,
                              struct bsc_buf *out)
{
    struct gem_cand *c = &s->cand[idx];
    struct json_object *d, *calls = json_object_new_array();
    bool first, oom = false;

    append(calls, tool_call(&s->ctx, part, s->n_ids++, c->n_tools++, &oom), &oom);
    d = delta_new(c, &first);
    if (first)
        json_object_object_add(d, "content", NULL);
    add(d, "tool_calls", calls, &oom);
    if (oom) {
        json_object_put(d);
        return BSC_ENOMEM;
    }
    return emit(s, idx, d, NULL, out);
}

static enum prov_stream_status finish(struct gem_stream *s, uint32_t idx, struct bsc_str reason,
                                      struct bsc_buf *out, struct fail_info *fail)
{
    struct gem_cand *c = &s->cand[idx];
    const char *fr;
    bool unusable, first;
    char msg[128];

    if (emit_text(s, idx, NULL, 0, true, out))
        return out_of_room(fail);
    fr = prov__gem_finish(reason, c->n_tools > 0, &unusable);
    if (unusable && !c->started) {
        snprintf(msg, sizeof(msg), "the model produced a function call it could not complete "
                                   "(%.*s)", (int)(reason.len > 40 ? 40 : reason.len), reason.p);
        prov__gem_fail_set(fail, FAIL_CONTRACT_FAILURE, 200, msg);
        return PROV_STREAM_ERROR;
    }
    c->finished = true;
    if (emit(s, idx, delta_new(c, &first), fr, out))
        return out_of_room(fail);
    return PROV_STREAM_MORE;
}

static enum prov_stream_status candidate(struct gem_stream *s, struct json_object *cand,
                                         size_t pos, struct bsc_buf *out, struct fail_info *fail)
{
    struct json_object *parts = bsc_json_get_type(bsc_json_get(cand, "content"), "parts", json_type_array);
    int64_t idx = gem_i64(cand, "index", (int64_t)pos);
    struct bsc_str reason = gem_str(cand, "finishReason");
    struct gem_cand *c;
    enum bsc_err err = BSC_OK;

    if (idx < 0 || idx >= (int64_t)GEM_MAX_CANDIDATES) {
        fail_bad_answer(fail, "a Gemini stream chunk names a candidate out of range");
        return PROV_STREAM_ERROR;
    }
    c = &s->cand[idx];
    if (c->finished)
        return PROV_STREAM_MORE; /* nothing may follow a candidate's finish */
    c->present = true;
    for (size_t i = 0; !err && parts && i < json_object_array_length(parts); i++) {
        struct json_object *p = json_object_array_get_idx(parts, i);
        struct bsc_str t = gem_str(p, "text");
        if (is_thought(p))
            continue;
        if (t.len)
            err = emit_text(s, (uint32_t)idx, t.p, t.len, false, out);
        if (!err && bsc_json_get_type(p, "functionCall", json_type_object) &&
            !(s->ctx.single_tool && c->n_tools > 0))
            err = emit_tool(s, (uint32_t)idx, p, out);
    }
    if (err)
        return out_of_room(fail);
    return reason.len ? finish(s, (uint32_t)idx, reason, out, fail) : PROV_STREAM_MORE;
}

enum prov_stream_status prov__gem_stream_event(void *st, struct bsc_str event, struct bsc_str data,
                                               struct bsc_buf *out, struct fail_info *fail)
{
    struct gem_stream *s = st;
    struct json_object *root, *cands;
    enum prov_stream_status status = PROV_STREAM_MORE;

    (void)event;
    if (s->done)
        return PROV_STREAM_DONE;
    if (bsc_str_trim(data).len == 0)
        return PROV_STREAM_MORE;
    root = prov_parse_json(data);
    if (!root || !json_object_is_type(root, json_type_object)) {
        json_object_put(root);
        fail_bad_answer(fail, "a Gemini stream event is not a JSON object");
        return PROV_STREAM_ERROR;
    }
    if (prov__gem_fail_from_error(root, 200, NULL, fail) ||
        prov__gem_prompt_blocked(root, 200, fail)) {
        json_object_put(root);
        return PROV_STREAM_ERROR;
    }
    read_usage(root, &s->usage, &s->reasoning);
    if (!s->named)
        name_from(&s->ctx, root);
    s->named = true;
    cands = bsc_json_get_type(root, "candidates", json_type_array);
    for (size_t i = 0; cands && i < json_object_array_length(cands); i++) {
        status = candidate(s, json_object_array_get_idx(cands, i), i, out, fail);
        if (status != PROV_STREAM_MORE)
            break;
    }
    json_object_put(root);
    return status;
}

/* Lines that are not SSE (Gemini's bare, often pretty-printed JSON error object) are
 * collected from a line starting with '{' or '[' until they parse; other stray lines are
 * ignored as unknown SSE fields. */
enum prov_stream_status prov__gem_stream_line(void *st, struct bsc_str line, struct bsc_buf *out,
                                              struct fail_info *fail)
{
    struct gem_stream *s = st;
    struct bsc_str t = bsc_str_trim(line);
    struct bsc_json_where w;
    struct json_object *o;

    (void)out;
    if (s->done)
        return PROV_STREAM_DONE;
    if (s->pend.len == 0 && (t.len == 0 || (t.p[0] != '{' && t.p[0] != '[')))
        return PROV_STREAM_MORE;
    if (bsc_buf_append_str(&s->pend, line) || bsc_buf_append_char(&s->pend, '\n')) {
        fail_bad_answer(fail, "a JSON object in the Gemini stream passed its bound");
        return PROV_STREAM_ERROR;
    }
    o = bsc_json_parse(bsc_buf_str(&s->pend), 64, 0, &w);
    if (!o && w.why == BSC_JSONP_INCOMPLETE)
        return PROV_STREAM_MORE;
    bsc_buf_reset(&s->pend);
    if (!o && w.why == BSC_JSONP_NOMEM) {
        fail_bad_answer(fail, "out of memory reading the Gemini stream");
        return PROV_STREAM_ERROR;
    }
    if (!o) {
        fail_bad_answer(fail, "the Gemini stream carried text that is neither an event nor JSON");
        return PROV_STREAM_ERROR;
    }
    if (prov__gem_fail_from_error(o, 200, NULL, fail)) {
        json_object_put(o);
        return PROV_STREAM_ERROR;
    }
    json_object_put(o);
    return PROV_STREAM_MORE;
}

static bool all_finished(const struct gem_stream *s)
{
    bool any = false;

    for (size_t i = 0; i < GEM_MAX_CANDIDATES; i++) {
        if (s->cand[i].present && !s->cand[i].finished)
            return false;
        any = any || s->cand[i].finished;
    }
    return any;
}

enum prov_stream_status prov__gem_stream_end(void *st, struct bsc_buf *out, struct fail_info *fail)
{
    struct gem_stream *s = st;
    struct json_object *chunk;
    bool oom = false;
    size_t mark = out->len;
    enum bsc_err err = BSC_OK;

    if (s->done)
        return PROV_STREAM_DONE;
    if (s->pend.len || !all_finished(s)) {
        prov__gem_fail_set(fail, FAIL_PARTIAL_OUTPUT, 200,
                           s->pend.len ? "the Gemini stream ended inside a JSON object"
                                       : "the Gemini stream ended without a finishReason");
        return PROV_STREAM_ERROR;
    }
    if (s->ctx.include_usage) {
        chunk = prov_chunk_new(s->ctx.id, s->ctx.created, s->ctx.model);
        add(chunk, "usage", usage_json(&s->usage, s->reasoning, &oom), &oom);
        err = oom ? BSC_ENOMEM : prov_emit_chunk(out, chunk);
        json_object_put(chunk);
    }
    if (!err)
        err = bsc_buf_append_cstr(out, "data: [DONE]\n\n");
    if (err) {
        out->len = mark;
        return out_of_room(fail);
    }
    s->done = true;
    return PROV_STREAM_DONE;
}

void prov__gem_stream_usage(void *st, struct prov_usage *usage)
{
    *usage = ((struct gem_stream *)st)->usage;
}

void prov__gem_stream_cleanup(void *st)
{
    bsc_buf_cleanup(&((struct gem_stream *)st)->pend);
}
