/* SPDX-License-Identifier: MIT */
/* openai.c -- the adapter for OpenAI and every OpenAI-compatible server (kinds openai and
 * openai_compatible; the compatible servers' quirks are data: error-code profiles picked
 * by host in openai_errors.c). The fast path: the client's own bytes with "model"
 * spliced in, and stream events relayed as they are. The one rewrite it makes: a stream
 * asks upstream for usage (stream_options.include_usage) so the gateway can account for
 * tokens and cost, and the usage chunk is dropped again when the client did not ask. */
#include <stdio.h>
#include <string.h>

#include "core/json_check.h"
#include "core/json_name.h"
#include "core/json_scan.h"
#include "providers/provider.h"
#include "stream/sse_parse.h"

struct oa_stream {
    const struct prov_openai_profile *profile; /* the provider's error dialect (static) */
    bool responses;     /* a Responses API stream, relayed with its event names */
    bool include_usage; /* the client asked for the usage chunk */
    bool done;
    bool sent;          /* a frame was relayed: a failure now is partial output */
    bool completion;    /* a chunk with a non-empty `choices` was seen */
    bool finished;      /* the last chunk with choices carried a finish_reason */
    struct prov_usage usage;
    char answer_id[PROV_ANSWER_ID_MAX + 1]; /* a Responses stream's "resp_...", or "" */
};

static const char *endpoint(enum prov_op op)
{
    switch (op) {
    case PROV_OP_EMBEDDINGS: return "embeddings";
    case PROV_OP_PROBE_MODELS: return "models";
    case PROV_OP_RESPONSES: return "responses";
    default: return "chat/completions";
    }
}

/* Serialises the canonical request with "model" set to the target's (and, for streams,
 * stream_options.include_usage forced on). The request is restored afterwards. */
static enum bsc_err serialize(const struct prov_call *c, struct bsc_buf *body)
{
    struct json_object *req = c->req, *old_model = NULL, *old_opts = NULL, *opts, *own = NULL;
    enum bsc_err err;

    if (!req) /* the fast path handed only bytes: parse them for this rewrite */
        req = own = prov_parse_json(c->raw);
    if (!req)
        return BSC_EINVAL;
    if (json_object_object_get_ex(req, "model", &old_model))
        json_object_get(old_model);
    json_object_object_add(req, "model", json_object_new_string(c->target->model));
    if (c->stream && c->op != PROV_OP_RESPONSES) { /* Responses streams always carry usage */
        if (json_object_object_get_ex(req, "stream_options", &old_opts))
            json_object_get(old_opts);
        opts = old_opts && json_object_is_type(old_opts, json_type_object)
                   ? json_object_get(old_opts)
                   : json_object_new_object();
        if (opts == old_opts) { /* copy: never change the client's object in place */
            struct json_object *copy = NULL;
            json_object_deep_copy(opts, &copy, NULL);
            json_object_put(opts);
            opts = copy ? copy : json_object_new_object();
        }
        json_object_object_add(opts, "include_usage", json_object_new_boolean(1));
        json_object_object_add(req, "stream_options", opts);
    }
    err = prov_append_json(body, req);
    if (old_model)
        json_object_object_add(req, "model", old_model);
    if (c->stream && c->op != PROV_OP_RESPONSES) {
        if (old_opts)
            json_object_object_add(req, "stream_options", old_opts);
        else
            json_object_object_del(req, "stream_options");
    }
    json_object_put(own);
    return err;
}

/* The fast path: the client's bytes with the model value replaced; for a stream whose
 * client sent no stream_options, `"stream_options":{"include_usage":true},` is spliced in
 * after the opening brace. Returns BSC_EINVAL when the bytes need a real rewrite. */
static enum bsc_err splice(const struct prov_call *c, struct bsc_buf *body)
{
    size_t pre, post;
    const char *open;
    struct bsc_str opts;
    enum bsc_err err;

    if (!c->raw.p || !c->model_span.p)
        return BSC_EINVAL;
    if (bsc_buf_reserve(body, c->raw.len + strlen(c->target->model) + 64) != BSC_OK)
        return BSC_ELIMIT;
    if (c->stream && c->op != PROV_OP_RESPONSES &&
        bsc_json_member_span(c->raw, BSC_STR("stream_options"), &opts))
        return BSC_EINVAL;
    pre = (size_t)(c->model_span.p - c->raw.p);
    post = c->raw.len - pre - c->model_span.len;
    open = memchr(c->raw.p, '{', pre);
    if (!open)
        return BSC_EINVAL;
    err = bsc_buf_append(body, c->raw.p, (size_t)(open - c->raw.p) + 1);
    if (!err && c->stream && c->op != PROV_OP_RESPONSES)
        err = bsc_buf_append_cstr(body, "\"stream_options\":{\"include_usage\":true},");
    if (!err)
        err = bsc_buf_append(body, open + 1, pre - (size_t)(open + 1 - c->raw.p));
    if (!err)
        err = bsc_buf_append_json_str(body, bsc_str_cstr(c->target->model));
    if (!err)
        err = bsc_buf_append(body, c->model_span.p + c->model_span.len, post);
    return err;
}

static enum bsc_err oa_build(const struct prov_call *c, struct prov_http *out, char *why,
                             size_t why_len)
{
    enum bsc_err err;

    (void)why;
    (void)why_len;
    out->method = c->op == PROV_OP_PROBE_MODELS ? "GET" : "POST";
    err = bsc_buf_append_cstr(&out->url, c->provider->base_url);
    if (!err)
        err = bsc_buf_append_char(&out->url, '/');
    if (!err)
        err = bsc_buf_append_cstr(&out->url, endpoint(c->op));
    if (!err && c->op != PROV_OP_PROBE_MODELS)
        err = prov_header(&out->headers, "Content-Type", "%s", "application/json");
    if (!err && (c->op == PROV_OP_CHAT || c->op == PROV_OP_RESPONSES))
        err = prov_header(&out->headers, "Accept", "%s",
                          c->stream ? "text/event-stream" : "application/json");
    if (!err && c->key)
        err = prov_header_cat(&out->headers, "Authorization", "Bearer ", c->key);
    if (!err)
        err = prov_extra_headers(&out->headers, c->provider);
    if (err || c->op == PROV_OP_PROBE_MODELS)
        return err;
    if (c->op == PROV_OP_PROBE_COMPLETION)
        return prov_probe_chat_body(c, &out->body);
    err = splice(c, &out->body);
    if (err == BSC_EINVAL) {
        bsc_buf_reset(&out->body);
        err = serialize(c, &out->body);
    }
    return err;
}

static void oa_classify(const struct prov_err_input *in, struct fail_info *out)
{
    /* The common case, a 2xx answer with no "error" member anywhere, needs no parse. */
    if (in->status >= 200 && in->status < 300 && !bsc_str_find(in->body, BSC_STR("\"error\""))) {
        fail_info_init(out);
        out->status = in->status;
        return;
    }
    prov_openai_classify_profile(in, prov_openai_profile_of(in), out);
}

/* A count read from the upstream: the non-negative integer span <v>, or -1. */
static int64_t count_of(struct bsc_str v)
{
    unsigned long long n;

    if (!v.p || !bsc_json_u64(v, &n) || n > INT64_MAX)
        return -1;
    return (int64_t)n;
}

/* The <len> bytes at <a> and <b> are the same: eight at a time, the last eight overlapping
 * (the usage keys are 12 to 27 bytes; no call for so few). */
static inline bool same_bytes(const char *a, const char *b, size_t len)
{
    uint64_t x, y;

    if (len < 8)
        return memcmp(a, b, len) == 0;
    for (size_t i = 0; i + 8 < len; i += 8) {
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y)
            return false;
    }
    memcpy(&x, a + len - 8, 8);
    memcpy(&y, b + len - 8, 8);
    return x == y;
}

/* The index in <keys> (<n>) of the raw member name <name>, -1 for none, -2 for a name parsers
 * read differently (bsc_json_members refuses the object for it). A name without escapes is
 * its bytes: a length compare rejects most keys. Inlined: a call each member cost more than
 * the compares. */
static inline __attribute__((always_inline)) int usage_key(struct bsc_str name, bool escaped,
                                                           const struct bsc_str *keys, size_t n)
{
    int found = -1;

    if (!escaped) {
        for (size_t k = 0; k < n; k++)
            if (name.len == keys[k].len && same_bytes(name.p, keys[k].p, name.len))
                return (int)k;
        return -1;
    }
    for (size_t k = 0; k < n; k++) {
        int eq = bsc_json_name_eq(name, keys[k]);

        if (eq < 0)
            return -2;
        if (eq)
            found = (int)k;
    }
    return found;
}

/* A value span that is a string or a container, or a scalar holding none of the bytes a
 * container's skip looks at ('"', '{', '['): every valid number and literal. */
static bool value_plain(struct bsc_str v)
{
    if (v.p[0] == '"' || v.p[0] == '{' || v.p[0] == '[')
        return true;
    for (size_t i = 1; i < v.len; i++)
        if (v.p[i] == '"' || v.p[i] == '{' || v.p[i] == '[')
            return false;
    return true;
}

/* bsc_json_members for the usage objects (keys of distinct lengths, a handful of members):
 * one walk, each name looked up by length. 1, or -1 when a wanted key is repeated, a name
 * is ambiguous or <obj> is not an object. With <end>, also *<end>, the index just past the
 * object's '}' -- and -1 as well when a member's value is a scalar holding '"', '{' or '['
 * (json_scan.c's skip of the whole object counts those, where the walk steps over them, so
 * the two could end apart; they never do otherwise). */
static int usage_members(struct bsc_str obj, const struct bsc_str *keys, size_t n,
                         struct bsc_str *vals, size_t *end)
{
    struct bsc_json_iter it = {0, false, false};
    struct bsc_str name, value;
    bool escaped;
    int r, k;

    for (size_t j = 0; j < n; j++)
        vals[j] = BSC_STR_NULL;
    while ((r = bsc_json_object_next(obj, &it, &name, &escaped, &value)) == 1) {
        k = usage_key(name, escaped, keys, n);
        if (k == -2 || (k >= 0 && vals[k].p))
            return -1;
        if (k >= 0)
            vals[k] = value;
        if (end && !value_plain(value))
            return -1;
    }
    if (r < 0)
        return -1;
    if (end)
        *end = it.pos;
    return 1;
}

/* The counts <keys> (<n> of them, at most 2) of the object span <obj> into <out>, each -1
 * when absent, not a count, repeated, or <obj> not an object. One pass over <obj>; when it
 * refuses (a key repeated), each key is asked alone, so that one repeated key does not
 * hide the other. */
static void span_counts(struct bsc_str obj, const struct bsc_str *keys, size_t n, int64_t *out)
{
    struct bsc_str v[2] = {BSC_STR_NULL, BSC_STR_NULL};

    if (obj.p && bsc_json_kind_of(obj) == BSC_JSON_OBJECT &&
        usage_members(obj, keys, n, v, NULL) < 0)
        for (size_t k = 0; k < n; k++)
            if (bsc_json_member(obj, keys[k], &v[k]) != 1)
                v[k] = BSC_STR_NULL;
    for (size_t k = 0; k < n; k++)
        out[k] = count_of(v[k]);
}

/* The details object (keys <keys>, <n> of them) whose value starts at it->pos in the usage
 * object <usage>: its counts into <out> as span_counts reads them, the walk moved past it
 * and the ',' after it. Read where it stands, in the usage's walk; when that walk might not
 * be the old reading's (the object refused, or a scalar the skip would count), the value is
 * skipped and read apart. 1, or -1 when the usage object is malformed there. */
static int details_at(struct bsc_str usage, struct bsc_json_iter *it, const struct bsc_str *keys,
                      size_t n, int64_t *out)
{
    struct bsc_str rest = bsc_str_make(usage.p + it->pos, usage.len - it->pos), span;
    struct bsc_str v[2] = {BSC_STR_NULL, BSC_STR_NULL};
    size_t end;

    if (rest.len && rest.p[0] == '{' && usage_members(rest, keys, n, v, &end) == 1) {
        for (size_t k = 0; k < n; k++)
            out[k] = count_of(v[k]);
        return bsc_json_object_after(usage, it, it->pos + end);
    }
    if (bsc_json_object_value(usage, it, &span) < 0)
        return -1;
    span_counts(span, keys, n, out);
    return 1;
}

/* <a> + <b> for counts >= 0 from the upstream, saturated instead of overflowing. */
static int64_t add_count(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* The keys of a usage object: the counts read at KEY_IN, KEY_OUT (and DeepSeek's cache hits
 * and misses, Chat Completions only), the details objects at KEY_IN_DETAILS and
 * KEY_OUT_DETAILS. */
enum { KEY_IN, KEY_OUT, KEY_IN_DETAILS, KEY_OUT_DETAILS, KEY_HIT, KEY_MISS };

/* What one walk of the usage object found: the spans of its counts, each details object's
 * counts (-1 when absent or not read). */
struct usage_walk {
    struct bsc_str v[6];
    bool seen[6];
    int64_t in_details[2]; /* cached_tokens, cache_creation_input_tokens */
    int64_t out_details;   /* reasoning_tokens */
};

/* Walks the usage object <usage> once, its details objects read where they stand: 1, or -1
 * when bsc_json_members would refuse it (not an object, cut or malformed, a wanted key
 * repeated, an ambiguous name). */
static int usage_walk(struct bsc_str usage, bool responses, struct usage_walk *w)
{
    static const struct bsc_str keys[] = {
        BSC_STR("prompt_tokens"),          BSC_STR("completion_tokens"),
        BSC_STR("prompt_tokens_details"),  BSC_STR("completion_tokens_details"),
        BSC_STR("prompt_cache_hit_tokens"), BSC_STR("prompt_cache_miss_tokens")};
    static const struct bsc_str rkeys[] = {BSC_STR("input_tokens"), BSC_STR("output_tokens"),
                                           BSC_STR("input_tokens_details"),
                                           BSC_STR("output_tokens_details")};
    static const struct bsc_str details[] = {BSC_STR("cached_tokens"),
                                             BSC_STR("cache_creation_input_tokens"),
                                             BSC_STR("reasoning_tokens")};
    struct bsc_json_iter it = {0, false, false};
    struct bsc_str name, other;
    bool escaped;
    int r, k;

    while ((r = bsc_json_object_name(usage, &it, &name, &escaped)) == 1) {
        k = usage_key(name, escaped, responses ? rkeys : keys, responses ? 4 : 6);
        if (k == -2 || (k >= 0 && w->seen[k]))
            return -1;
        if (k >= 0)
            w->seen[k] = true;
        if (k == KEY_IN_DETAILS)
            r = details_at(usage, &it, details, 2, w->in_details);
        else if (k == KEY_OUT_DETAILS)
            r = details_at(usage, &it, &details[2], 1, &w->out_details);
        else
            r = bsc_json_object_value(usage, &it, k >= 0 ? &w->v[k] : &other);
        if (r < 0)
            return -1;
    }
    return r;
}

void prov__openai_usage_read(struct bsc_str usage, bool responses,
                             struct prov_usage *u)
{
    struct usage_walk w = {.v = {BSC_STR_NULL, BSC_STR_NULL, BSC_STR_NULL, BSC_STR_NULL,
                                 BSC_STR_NULL, BSC_STR_NULL},
                           .in_details = {-1, -1},
                           .out_details = -1};
    int64_t hit, miss;

    *u = PROV_USAGE_UNKNOWN;
    if (bsc_json_kind_of(usage) != BSC_JSON_OBJECT || usage_walk(usage, responses, &w) < 0)
        return;
    u->input_tokens = count_of(w.v[KEY_IN]);
    u->output_tokens = count_of(w.v[KEY_OUT]);
    /* DashScope's explicit context cache reports its writes beside the reads. */
    u->cached_tokens = w.in_details[0];
    u->cache_write_tokens = w.in_details[1];
    u->reasoning_tokens = w.out_details;
    /* DeepSeek: prompt_tokens = prompt_cache_hit_tokens + prompt_cache_miss_tokens. */
    hit = count_of(w.v[KEY_HIT]);
    miss = count_of(w.v[KEY_MISS]);
    if (u->cached_tokens < 0 && hit >= 0)
        u->cached_tokens = hit;
    if (u->input_tokens < 0 && hit >= 0 && miss >= 0)
        u->input_tokens = add_count(hit, miss);
}

/* The member a well-formed answer to <op> cannot lack, or NULL when nothing is required. */
static const char *answer_member(enum prov_op op)
{
    switch (op) {
    case PROV_OP_CHAT: return "choices";
    case PROV_OP_EMBEDDINGS: return "data";
    case PROV_OP_RESPONSES: return "output";
    default: return NULL;
    }
}

/* The provider's error dialect, for a call (the adapter has no prov_err_input here). */
static const struct prov_openai_profile *call_profile(const struct prov_call *c)
{
    struct prov_err_input who = {.base_url = {"", 0}};

    if (c->provider) {
        who.base_url = bsc_str_cstr(c->provider->base_url);
        who.profile = bsc_str_cstr(cfg_profile_name(c->provider->profile));
    }
    return prov_openai_profile_of(&who);
}

static enum bsc_err oa_map_response(const struct prov_call *c, struct bsc_str body,
                                    struct bsc_buf *out, struct prov_usage *usage,
                                    struct fail_info *fail)
{
    struct bsc_str keys[2] = {BSC_STR("usage"), BSC_STR_NULL}, v[2] = {BSC_STR_NULL, BSC_STR_NULL};
    const char *need = answer_member(c->op);
    size_t n = 1;

    (void)out; /* unchanged: the fast path uses the body as it is */
    if (need)
        keys[n++] = bsc_str_cstr(need);
    /* One pass validates the answer and finds "usage" and the answer's own member (a
     * repeated one: the last wins): no parse tree for a well-formed answer. */
    if (bsc_json_check_members(body, 128, keys, n, v, NULL) < 0 ||
        bsc_json_kind_of(bsc_str_trim(body)) != BSC_JSON_OBJECT) {
        fail_info_init(fail);
        fail->kind = FAIL_SERVER_ERROR;
        fail->status = 200;
        fail_copy_text(fail->message, sizeof(fail->message),
                       BSC_STR("the upstream answer is not a JSON object"));
        return BSC_EPARSE;
    }
    /* A 2xx without its answer is an error in some dialect (Qianfan's rate limits, a
     * DashScope-style throttle from a compatible server), never a success. */
    if (need && bsc_json_kind_of(v[1]) != BSC_JSON_ARRAY) {
        struct prov_err_input in = {.status = 200, .body = body};

        prov_openai_classify_malformed(&in, call_profile(c), fail);
        return BSC_EPARSE;
    }
    prov__openai_usage_read(v[0], c->op == PROV_OP_RESPONSES, usage);
    return BSC_OK;
}

static void oa_stream_init(void *st, const struct prov_call *call)
{
    struct oa_stream *s = st;

    s->profile = call_profile(call);
    s->include_usage = call->include_usage;
    s->responses = call->op == PROV_OP_RESPONSES;
    s->usage = PROV_USAGE_UNKNOWN;
}

/* Makes the <len> bytes at <p> one line: line breaks become spaces. A chunk seldom has
 * one, so two memchr runs look first rather than a test per byte. */
static void one_line(char *p, size_t len)
{
    if (!memchr(p, '\n', len) && !memchr(p, '\r', len))
        return;
    for (char *c = p; c < p + len; c++)
        if (*c == '\n' || *c == '\r')
            *c = ' ';
}

/* Appends "event: <name>\ndata: <data>\n\n" (data made one line, as below), or nothing. */
static enum bsc_err relay_named(struct bsc_buf *out, struct bsc_str name, struct bsc_str data)
{
    size_t mark = out->len;
    enum bsc_err err = bsc_buf_append_cstr(out, "event: ");

    if (!err)
        err = bsc_buf_append_str(out, name);
    if (!err)
        err = bsc_buf_append_cstr(out, "\ndata: ");
    if (!err)
        err = bsc_buf_append_str(out, data);
    if (!err) {
        one_line(out->p + out->len - data.len, data.len);
        err = bsc_buf_append(out, "\n\n", 2);
    }
    if (err) {
        out->len = mark;
        if (out->p)
            out->p[mark] = '\0';
    }
    return err;
}

/* The id of the Response object <resp> into s->answer_id (the gateway records whose it
 * is: docs/internals/responses.md §7); "" when it has none or a longer one. */
static void keep_answer_id(struct oa_stream *s, struct bsc_str resp)
{
    struct bsc_str id, raw;

    s->answer_id[0] = '\0';
    if (bsc_json_member(resp, BSC_STR("id"), &id) != 1 ||
        bsc_json_kind_of(id) != BSC_JSON_STRING)
        return;
    raw = bsc_json_string_raw(id);
    if (raw.len && raw.len <= PROV_ANSWER_ID_MAX && !memchr(raw.p, '\\', raw.len)) {
        memcpy(s->answer_id, raw.p, raw.len);
        s->answer_id[raw.len] = '\0';
    }
}

/* A Responses API event, passed through with its name. The stream ends at
 * response.completed / response.incomplete (no [DONE] in this API; usage is read there);
 * `error` and response.failed are failures: before the commit point they fail over like any
 * error, after it the router ends the stream with its own error event. */
static enum prov_stream_status responses_event(struct oa_stream *s, struct bsc_str event,
                                               struct bsc_str data, struct bsc_buf *out,
                                               struct fail_info *fail)
{
    static const struct bsc_str keys[] = {BSC_STR("type"), BSC_STR("response"),
                                          BSC_STR("message"), BSC_STR("error")};
    struct bsc_str v[4], type, usage;
    bool end;

    if (bsc_json_check_members(data, 128, keys, 4, v, NULL) < 0 ||
        bsc_json_kind_of(bsc_str_trim(data)) != BSC_JSON_OBJECT) {
        fail_info_init(fail);
        fail->kind = s->sent ? FAIL_PARTIAL_OUTPUT : FAIL_SERVER_ERROR;
        fail->status = 200;
        fail_copy_text(fail->message, sizeof(fail->message),
                       BSC_STR("an upstream stream event is not a JSON object"));
        return PROV_STREAM_ERROR;
    }
    type = bsc_json_string_raw(v[0]);
    if (!type.len)
        type = event;
    if (bsc_json_kind_of(v[3]) == BSC_JSON_OBJECT) /* an error frame of the chat shape */
        return prov_openai_classify_event_profile(data, s->profile, fail) ? PROV_STREAM_ERROR
                                                                           : PROV_STREAM_MORE;
    if (bsc_str_eq(type, BSC_STR("error")) || bsc_str_eq(type, BSC_STR("response.failed"))) {
        fail_info_init(fail);
        fail->kind = s->sent ? FAIL_PARTIAL_OUTPUT : FAIL_SERVER_ERROR;
        fail->status = 200;
        fail_copy_text(fail->message, sizeof(fail->message),
                       v[2].p ? bsc_json_string_raw(v[2])
                              : BSC_STR("the upstream response failed"));
        return PROV_STREAM_ERROR;
    }
    end = bsc_str_eq(type, BSC_STR("response.completed")) ||
          bsc_str_eq(type, BSC_STR("response.incomplete"));
    if (end && v[1].p && bsc_json_member(v[1], BSC_STR("usage"), &usage) == 1)
        prov__openai_usage_read(usage, true, &s->usage);
    if (end && v[1].p)
        keep_answer_id(s, v[1]);
    if (relay_named(out, type, data)) {
        fail_info_init(fail);
        fail->kind = FAIL_SERVER_ERROR;
        fail_copy_text(fail->message, sizeof(fail->message),
                       BSC_STR("an upstream event passed the gateway's output bound"));
        return PROV_STREAM_ERROR;
    }
    s->sent = true;
    if (!end)
        return PROV_STREAM_MORE;
    s->done = true;
    return PROV_STREAM_DONE;
}

/* Whether <data> holds "usage":{ or "usage": { -- one walk over the text for both. */
static bool has_usage_object(struct bsc_str data)
{
    const char *p;

    while ((p = bsc_str_find(data, BSC_STR("\"usage\":")))) {
        size_t off = (size_t)(p - data.p) + sizeof("\"usage\":") - 1;

        data = bsc_str_make(data.p + off, data.len - off);
        if (bsc_str_starts(data, BSC_STR("{")) || bsc_str_starts(data, BSC_STR(" {")))
            return true;
    }
    return false;
}

/* The usage chunk: `"choices":[]` and a non-null "usage". */
static bool is_usage_chunk(struct bsc_str data, struct oa_stream *s)
{
    struct json_object *root;
    struct bsc_str span;
    struct prov_usage u;

    if (!has_usage_object(data))
        return false;
    root = prov_parse_json(data); /* the span reader needs a valid document */
    if (!root)
        return false;
    json_object_put(root);
    if (bsc_json_member(data, BSC_STR("usage"), &span) != 1)
        return false;
    prov__openai_usage_read(span, false, &u);
    if (u.input_tokens < 0 && u.output_tokens < 0)
        return false;
    s->usage = u;
    return true;
}

/* A chunk whose choices are empty (the usage chunk): it says nothing of the last choice. */
static bool is_usage_only(struct bsc_str data)
{
    return bsc_str_find(data, BSC_STR("\"choices\":[]")) != NULL;
}

/* Appends the chunk <data> as one "data:" frame, or nothing (an error) when it does not fit. */
static enum prov_stream_status relay_chunk(struct oa_stream *s, struct bsc_str data,
                                           struct bsc_buf *out, struct fail_info *fail)
{
    size_t mark = out->len;
    enum bsc_err err = bsc_buf_append(out, "data: ", 6);

    if (!err)
        err = bsc_buf_append_str(out, data);
    if (!err) {
        /* Data lines joined with "\n": in valid JSON a line break is only whitespace
         * between tokens, and a raw one would end the client's data line early. */
        one_line(out->p + out->len - data.len, data.len);
        err = bsc_buf_append(out, "\n\n", 2);
    }
    if (!err) {
        s->sent = true;
        return PROV_STREAM_MORE;
    }
    out->len = mark; /* no half frame */
    if (out->p)
        out->p[mark] = '\0';
    fail_info_init(fail);
    fail->kind = FAIL_SERVER_ERROR;
    fail_copy_text(fail->message, sizeof(fail->message),
                   BSC_STR("an upstream event passed the gateway's output bound"));
    return PROV_STREAM_ERROR;
}

static enum prov_stream_status oa_stream_event(void *st, struct bsc_str event, struct bsc_str data,
                                               struct bsc_buf *out, struct fail_info *fail)
{
    struct oa_stream *s = st;

    if (s->done)
        return PROV_STREAM_DONE;
    if (s->responses)
        return responses_event(s, event, data, out, fail);
    if (sse_is_done(data)) {
        if (!s->completion) { /* nothing a client could read: an upstream failure */
            fail_info_init(fail);
            fail->kind = s->sent ? FAIL_PARTIAL_OUTPUT : FAIL_UNKNOWN;
            fail->status = 200;
            fail_copy_text(fail->message, sizeof(fail->message),
                           BSC_STR("the upstream stream ended without a completion chunk"));
            return PROV_STREAM_ERROR;
        }
        s->done = true;
        return bsc_buf_append_cstr(out, "data: [DONE]\n\n") ? PROV_STREAM_ERROR : PROV_STREAM_DONE;
    }
    /* "error, "error_code" and a bare "code" (Qianfan's {"code":336501,"msg"}). */
    if ((bsc_str_find(data, BSC_STR("\"error")) || bsc_str_find(data, BSC_STR("\"code\""))) &&
        prov_openai_classify_event_profile(data, s->profile, fail))
        return PROV_STREAM_ERROR;
    /* Relayed as it is, so it must be what a client can read: one JSON object. Anything
     * else would reach the client as a frame its SDK cannot parse, past the commit point. */
    if (!bsc_json_check(data, 128, NULL) ||
        bsc_json_kind_of(bsc_str_trim(data)) != BSC_JSON_OBJECT) {
        fail_info_init(fail);
        fail->kind = s->sent ? FAIL_PARTIAL_OUTPUT : FAIL_SERVER_ERROR;
        fail->status = 200;
        fail_copy_text(fail->message, sizeof(fail->message),
                       BSC_STR("an upstream stream event is not a JSON object"));
        return PROV_STREAM_ERROR;
    }
    if (is_usage_chunk(data, s) && (!s->include_usage || !s->completion))
        return PROV_STREAM_MORE; /* asked for by the gateway, or usage of nothing yet */
    if (!s->completion) {
        struct bsc_str choices;

        /* Until a chunk carries a choice nothing is relayed: a stream that then ends
         * without one is still the router's to fail over, not a client's empty answer. */
        if (!bsc_json_member_span(data, BSC_STR("choices"), &choices) ||
            !bsc_json_array_nonempty(choices))
            return PROV_STREAM_MORE;
        s->completion = true;
    }
    if (!is_usage_only(data))
        s->finished = bsc_str_find(data, BSC_STR("\"finish_reason\":\"")) ||
                      bsc_str_find(data, BSC_STR("\"finish_reason\": \""));
    return relay_chunk(s, data, out, fail);
}

static enum prov_stream_status oa_stream_end(void *st, struct bsc_buf *out, struct fail_info *fail)
{
    struct oa_stream *s = st;

    if (s->done)
        return PROV_STREAM_DONE;
    /* Complete by its own signals: the last choice finished, and the body ended (the
     * router calls this only at a clean end). The client still gets its [DONE]. */
    if (!s->responses && s->finished) {
        s->done = true;
        return bsc_buf_append_cstr(out, "data: [DONE]\n\n") ? PROV_STREAM_ERROR
                                                               : PROV_STREAM_DONE;
    }
    fail_info_init(fail);
    fail->kind = FAIL_PARTIAL_OUTPUT;
    fail_copy_text(fail->message, sizeof(fail->message),
                   BSC_STR("the upstream stream was interrupted before its end"));
    return PROV_STREAM_ERROR;
}

static void oa_stream_usage(void *st, struct prov_usage *usage)
{
    *usage = ((struct oa_stream *)st)->usage;
}

static void oa_stream_answer_id(void *st, char *out, size_t len)
{
    snprintf(out, len, "%s", ((struct oa_stream *)st)->answer_id);
}

static void oa_stream_cleanup(void *st)
{
    (void)st;
}

const struct prov_ops prov_openai = {
    .name = "openai",
    .takes_raw = true,
    .build = oa_build,
    .classify = oa_classify,
    .ratelimit = rl_read_openai,
    .map_response = oa_map_response,
    .stream_size = sizeof(struct oa_stream),
    .stream_init = oa_stream_init,
    .stream_event = oa_stream_event,
    .stream_line = NULL,
    .stream_end = oa_stream_end,
    .stream_usage = oa_stream_usage,
    .stream_answer_id = oa_stream_answer_id,
    .stream_cleanup = oa_stream_cleanup,
};
