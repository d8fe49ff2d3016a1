/* SPDX-License-Identifier: MIT */
/* gemini.c -- the adapter for the Google Gemini API (generativelanguage v1beta, kind
 * gemini): the OpenAI chat.completions / embeddings request becomes a generateContent,
 * streamGenerateContent?alt=sse, embedContent or batchEmbedContents call, and Gemini's
 * google.rpc.Status error bodies are classified into the taxonomy. The answer side
 * (candidates and stream chunks into OpenAI shapes) is gemini_stream.c. No I/O, no clock.
 * Mapping tables and what is confirmed vs assumed: docs/internals/provider-gemini.md.
 *
 * Request fields, decided one by one (EINVAL = the target is skipped with a reason):
 *
 *   OpenAI field                       | Gemini / decision
 *   -----------------------------------+------------------------------------------------
 *   messages system, developer         | systemInstruction.parts (text only), in order
 *   messages user                      | role user; text, image_url data: URL -> inlineData,
 *                                      | input_audio -> inlineData audio/<format>,
 *                                      | file.file_data (data: URL or PDF) -> inlineData;
 *                                      | http(s) image URLs, file_id: EINVAL
 *   messages assistant                 | role model; text/refusal parts -> text;
 *                                      | tool_calls -> functionCall{name, args object}
 *                                      | (+ thoughtSignature, see below); bad JSON: EINVAL
 *   messages tool                      | role user, functionResponse{name of the matching
 *                                      | earlier tool call, response: the object, or
 *                                      | {"content": value}}; unknown id: EINVAL
 *   messages function (legacy)         | EINVAL
 *   consecutive same-role turns        | merged into one content (Gemini 1.0 required
 *                                      | alternation; merging is always accepted)
 *   max_completion_tokens | max_tokens | generationConfig.maxOutputTokens
 *   temperature, top_p                 | temperature, topP
 *   stop (string or array)             | stopSequences
 *   n                                  | candidateCount (1..8; more: EINVAL)
 *   presence/frequency_penalty, seed   | presencePenalty, frequencyPenalty, seed
 *   response_format json_object        | responseMimeType application/json
 *   response_format json_schema        | + responseJsonSchema (JSON Schema as is: the API
 *                                      | takes it and ignores unsupported keywords)
 *   tools (function)                   | tools[0].functionDeclarations, parameters ->
 *                                      | parametersJsonSchema (as is); custom tools: EINVAL
 *   tool_choice none/auto/required     | functionCallingConfig.mode NONE / AUTO / ANY
 *   tool_choice {function: name}       | ANY + allowedFunctionNames [name]
 *   tool_choice allowed_tools          | declarations filtered to the list; AUTO or ANY
 *   parallel_tool_calls: false         | no Gemini field: only the first call of an answer
 *                                      | is kept (gemini_stream.c)
 *   stream, stream_options             | the URL; usage always comes (usageMetadata)
 *   logprobs: true, logit_bias         | EINVAL (no translation of the answer side)
 *   modalities audio, audio            | EINVAL
 *   web_search_options                 | EINVAL (grounding answers differ in shape)
 *   functions, function_call (legacy)  | EINVAL
 *   reasoning_effort, verbosity        | dropped: thinking stays the model's default
 *   prediction, user, safety_identifier| dropped: hints and metadata, no output semantics
 *   prompt_cache_key, metadata, store, |
 *   service_tier, top_logprobs         |
 *
 * Thought signatures (docs/providers.md §3.4): a signature that came back on a tool call
 * (extra_content.google.thought_signature, the field Gemini's own OpenAI endpoint uses;
 * function.thought_signature as Portkey does is read too) is replayed on its functionCall
 * part; when the first call of a model turn has none and the model is Gemini 3 or later,
 * the documented placeholder GEM_SKIP_SIGNATURE is sent instead.
 *
 * Embeddings: input string (or one string in an array) -> embedContent; several strings
 * -> batchEmbedContents; dimensions -> outputDimensionality; token-id inputs: EINVAL;
 * encoding_format base64 is produced on the way back. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/utf8.h"
#include "providers/gemini.h"
#include "providers/provider.h"
#include "providers/retry_after.h"

/* ---- building JSON ---- */

struct bctx {
    const struct prov_call *call;
    char *why;
    size_t why_len;
    bool oom; /* an allocation failed somewhere: the request is not sent */
};

static enum bsc_err refuse(struct bctx *b, const char *fmt, ...) BSC_PRINTF(2, 3);

/* Writes the client-facing reason; returns BSC_EINVAL. */
static enum bsc_err refuse(struct bctx *b, const char *fmt, ...)
{
    va_list ap;

    if (b->why && b->why_len) {
        va_start(ap, fmt);
        vsnprintf(b->why, b->why_len, fmt, ap);
        va_end(ap);
        /* A client's value cut with %.*s (or by the buffer) can end inside a character:
         * those bytes become '?', so the reason the client reads stays UTF-8. */
        bsc_utf8_scrub(b->why);
    }
    return BSC_EINVAL;
}

/* Adds <val> (taken) as <key> of <obj>; a NULL <val> counts as an allocation failure. */
static void put(struct bctx *b, struct json_object *obj, const char *key, struct json_object *val)
{
    if (!val || !obj || json_object_object_add(obj, key, val)) {
        json_object_put(val);
        b->oom = true;
    }
}

/* Appends <val> (taken) to <arr>; NULL counts as an allocation failure. */
static void push(struct bctx *b, struct json_object *arr, struct json_object *val)
{
    if (!val || !arr || json_object_array_add(arr, val)) {
        json_object_put(val);
        b->oom = true;
    }
}

static struct json_object *jstr(struct bsc_str s)
{
    return json_object_new_string_len(s.p ? s.p : "", (int)s.len);
}

static struct json_object *text_part(struct bsc_str text)
{
    struct json_object *p = json_object_new_object();

    if (p && json_object_object_add(p, "text", jstr(text))) {
        json_object_put(p);
        return NULL;
    }
    return p;
}

static bool is_str(struct json_object *v, const char *s)
{
    return v && json_object_is_type(v, json_type_string) &&
           strcmp(json_object_get_string(v), s) == 0;
}

static bool has_ci(struct bsc_str hay, const char *needle)
{
    size_t n = strlen(needle);

    for (size_t i = 0; hay.p && n && i + n <= hay.len; i++)
        if (strncasecmp(hay.p + i, needle, n) == 0)
            return true;
    return false;
}

/* ---- content parts ---- */

/* Splits "data:<mime>[;...];base64,<data>" into <mime> and <data>. */
BSC_TESTABLE bool prov__gem_data_url(struct bsc_str url, struct bsc_str *mime, struct bsc_str *data)
{
    const char *comma;
    struct bsc_str meta;
    size_t semi;

    if (!bsc_str_starts(url, BSC_STR("data:")))
        return false;
    comma = memchr(url.p, ',', url.len);
    if (!comma)
        return false;
    meta = bsc_str_make(url.p + 5, (size_t)(comma - url.p) - 5);
    if (meta.len < 7 || strncasecmp(meta.p + meta.len - 7, ";base64", 7) != 0)
        return false;
    for (semi = 0; semi < meta.len && meta.p[semi] != ';'; semi++)
        ;
    *mime = bsc_str_make(meta.p, semi);
    *data = bsc_str_make(comma + 1, url.len - (size_t)(comma + 1 - url.p));
    return mime->len > 0 && data->len > 0;
}

static struct json_object *inline_part(struct bctx *b, struct bsc_str mime, struct bsc_str data)
{
    struct json_object *p = json_object_new_object(), *in = json_object_new_object();

    put(b, in, "mimeType", jstr(mime));
    put(b, in, "data", jstr(data));
    put(b, p, "inlineData", in);
    return p;
}

static enum bsc_err image_part(struct bctx *b, struct json_object *part, struct json_object *parts)
{
    struct json_object *iu = bsc_json_get(part, "image_url");
    struct bsc_str url, mime, data;

    url = json_object_is_type(iu, json_type_string)
              ? bsc_str_make(json_object_get_string(iu), (size_t)json_object_get_string_len(iu))
              : gem_str(iu, "url");
    if (!prov__gem_data_url(url, &mime, &data))
        return refuse(b, "gemini targets take images as base64 data: URLs only");
    push(b, parts, inline_part(b, mime, data));
    return BSC_OK;
}

static enum bsc_err audio_part(struct bctx *b, struct json_object *part, struct json_object *parts)
{
    struct json_object *ia = bsc_json_get(part, "input_audio");
    struct bsc_str data = gem_str(ia, "data"), fmt = gem_str(ia, "format");
    char mime[48];

    if (!data.len || !fmt.len || fmt.len > 32)
        return refuse(b, "input_audio needs data and format");
    snprintf(mime, sizeof(mime), "audio/%.*s", BSC_STR_FMT(fmt));
    push(b, parts, inline_part(b, bsc_str_cstr(mime), data));
    return BSC_OK;
}

static enum bsc_err file_part(struct bctx *b, struct json_object *part, struct json_object *parts)
{
    struct json_object *f = bsc_json_get(part, "file");
    struct bsc_str fd = gem_str(f, "file_data"), name = gem_str(f, "filename"), mime, data;

    if (prov__gem_data_url(fd, &mime, &data)) {
        push(b, parts, inline_part(b, mime, data));
        return BSC_OK;
    }
    if (fd.len && name.len > 4 && strncasecmp(name.p + name.len - 4, ".pdf", 4) == 0) {
        push(b, parts, inline_part(b, BSC_STR("application/pdf"), fd));
        return BSC_OK;
    }
    return refuse(b, "gemini targets take files as inline data (a data: URL or a PDF); "
                     "file ids cannot be sent");
}

/* One part of a user message. */
static enum bsc_err user_part(struct bctx *b, struct json_object *part, struct json_object *parts)
{
    struct bsc_str type = gem_str(part, "type");

    if (bsc_str_eq(type, BSC_STR("text"))) {
        struct bsc_str t = gem_str(part, "text");
        if (t.len) /* Gemini refuses empty text parts */
            push(b, parts, text_part(t));
        return BSC_OK;
    }
    if (bsc_str_eq(type, BSC_STR("image_url")))
        return image_part(b, part, parts);
    if (bsc_str_eq(type, BSC_STR("input_audio")))
        return audio_part(b, part, parts);
    if (bsc_str_eq(type, BSC_STR("file")))
        return file_part(b, part, parts);
    return refuse(b, "content parts of type \"%.*s\" cannot be sent to gemini targets",
                  (int)(type.len > 40 ? 40 : type.len), type.p ? type.p : "");
}

/* The text of <content>: a string, or parts of the types text (and refusal when
 * <refusal_ok>). Appends text parts to <parts>. */
static enum bsc_err text_parts(struct bctx *b, struct json_object *content, bool refusal_ok,
                               struct json_object *parts, const char *who)
{
    if (!content || json_object_is_type(content, json_type_null))
        return BSC_OK;
    if (json_object_is_type(content, json_type_string)) {
        if (json_object_get_string_len(content))
            push(b, parts,
                 text_part(bsc_str_make(json_object_get_string(content),
                                        (size_t)json_object_get_string_len(content))));
        return BSC_OK;
    }
    if (!json_object_is_type(content, json_type_array))
        return refuse(b, "%s message content must be a string or an array of parts", who);
    for (size_t i = 0; i < json_object_array_length(content); i++) {
        struct json_object *p = json_object_array_get_idx(content, i);
        struct bsc_str type = gem_str(p, "type");
        struct bsc_str t = gem_str(p, bsc_str_eq(type, BSC_STR("refusal")) ? "refusal" : "text");
        if (!bsc_str_eq(type, BSC_STR("text")) &&
            !(refusal_ok && bsc_str_eq(type, BSC_STR("refusal"))))
            return refuse(b, "%s messages may hold text parts only", who);
        if (t.len)
            push(b, parts, text_part(t));
    }
    return BSC_OK;
}

/* ---- turns ---- */

struct turns {
    struct json_object *contents;   /* the Gemini contents array (borrowed) */
    struct json_object *last_parts; /* parts of the last content (borrowed from it) */
    const char *last_role;          /* static */
};

/* Appends a turn of <role> holding <parts> (taken); an empty one is dropped, one of the
 * same role as the previous turn is merged into it. */
static void append_turn(struct bctx *b, struct turns *t, const char *role,
                        struct json_object *parts)
{
    struct json_object *c;
    size_t n = json_object_array_length(parts);

    if (n == 0) {
        json_object_put(parts);
        return;
    }
    if (t->last_role && strcmp(t->last_role, role) == 0) {
        for (size_t i = 0; i < n; i++)
            push(b, t->last_parts, json_object_get(json_object_array_get_idx(parts, i)));
        json_object_put(parts);
        return;
    }
    c = json_object_new_object();
    put(b, c, "role", json_object_new_string(role));
    put(b, c, "parts", parts);
    t->last_parts = parts;
    t->last_role = role;
    push(b, t->contents, c);
}

/* The signature a client kept for a tool call, if any (borrowed). */
static struct bsc_str kept_signature(struct json_object *tc)
{
    struct json_object *google = bsc_json_get(bsc_json_get(tc, "extra_content"), "google");
    struct bsc_str s = gem_str(google, "thought_signature");

    if (!s.len)
        s = gem_str(bsc_json_get(tc, "function"), "thought_signature");
    if (!s.len)
        s = gem_str(tc, "thought_signature");
    return s;
}

/* Gemini 3 and later refuse a replayed function call without a signature; earlier models
 * do not need one. Decided by the model name: "gemini-<N>..." with N >= 3. */
BSC_TESTABLE bool prov__gem_needs_signature(const char *model)
{
    const char *m = model ? model : "";
    unsigned long major = 0;
    bool digit = false;

    if (strncmp(m, "models/", 7) == 0)
        m += 7;
    if (strncmp(m, "gemini-", 7) != 0)
        return false;
    for (m += 7; *m >= '0' && *m <= '9' && major < 1000; m++) {
        major = major * 10 + (unsigned long)(*m - '0');
        digit = true;
    }
    return digit && major >= 3;
}

/* The args object of a tool call's "arguments" (new ref), or NULL when it is not one. */
static struct json_object *call_args(struct json_object *fn)
{
    struct json_object *a = bsc_json_get(fn, "arguments"), *o;

    if (!a || json_object_is_type(a, json_type_null))
        return json_object_new_object();
    if (json_object_is_type(a, json_type_object))
        return json_object_get(a);
    if (!json_object_is_type(a, json_type_string))
        return NULL;
    if (json_object_get_string_len(a) == 0)
        return json_object_new_object();
    o = prov_parse_json(bsc_str_make(json_object_get_string(a),
                                     (size_t)json_object_get_string_len(a)));
    if (o && !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

static enum bsc_err function_call_part(struct bctx *b, struct json_object *tc, size_t k,
                                       struct json_object *parts)
{
    struct json_object *fn = bsc_json_get_type(tc, "function", json_type_object), *args, *p, *fc;
    struct bsc_str type = gem_str(tc, "type"), name = gem_str(fn, "name"), sig;

    if (type.p && !bsc_str_eq(type, BSC_STR("function")))
        return refuse(b, "assistant tool calls of type \"%.*s\" cannot be sent to gemini "
                         "targets", (int)(type.len > 40 ? 40 : type.len), type.p);
    if (!name.len)
        return refuse(b, "an assistant tool call has no function name");
    args = call_args(fn);
    if (!args)
        return refuse(b, "the arguments of tool call \"%.*s\" are not a JSON object",
                      (int)(name.len > 64 ? 64 : name.len), name.p);
    p = json_object_new_object();
    fc = json_object_new_object();
    put(b, fc, "name", jstr(name));
    put(b, fc, "args", args);
    put(b, p, "functionCall", fc);
    sig = kept_signature(tc);
    if (sig.len)
        put(b, p, "thoughtSignature", jstr(sig));
    else if (k == 0 && prov__gem_needs_signature(b->call->target->model))
        put(b, p, "thoughtSignature", json_object_new_string(GEM_SKIP_SIGNATURE));
    push(b, parts, p);
    return BSC_OK;
}

static enum bsc_err assistant_turn(struct bctx *b, struct json_object *m, struct turns *t)
{
    struct json_object *parts = json_object_new_array();
    struct json_object *calls = bsc_json_get(m, "tool_calls");
    enum bsc_err err = text_parts(b, bsc_json_get(m, "content"), true, parts, "assistant");

    if (!err && calls && !json_object_is_type(calls, json_type_null)) {
        if (!json_object_is_type(calls, json_type_array))
            err = refuse(b, "assistant tool_calls must be an array");
        for (size_t k = 0; !err && k < json_object_array_length(calls); k++)
            err = function_call_part(b, json_object_array_get_idx(calls, k), k, parts);
    }
    if (err) {
        json_object_put(parts);
        return err;
    }
    append_turn(b, t, "model", parts);
    return BSC_OK;
}

/* The function name of tool call <id>, searched in the assistant messages before <i>,
 * nearest first (ids may repeat across turns). */
static struct bsc_str tool_name_for(struct json_object *msgs, size_t i, struct bsc_str id)
{
    while (i-- > 0) {
        struct json_object *m = json_object_array_get_idx(msgs, i);
        struct json_object *calls = bsc_json_get_type(m, "tool_calls", json_type_array);
        for (size_t k = 0; calls && k < json_object_array_length(calls); k++) {
            struct json_object *tc = json_object_array_get_idx(calls, k);
            if (bsc_str_eq(gem_str(tc, "id"), id))
                return gem_str(bsc_json_get(tc, "function"), "name");
        }
    }
    return BSC_STR_NULL;
}

/* The response object of a tool result: the result when it is a JSON object, else
 * {"content": the JSON value, or the text when it is not JSON}. New ref. */
static struct json_object *tool_response(struct bctx *b, struct bsc_str text)
{
    struct json_object *v = prov_parse_json(text), *o;

    if (v && json_object_is_type(v, json_type_object))
        return v;
    /* A bare number stays the text it was: the parser used to refuse one at the end of the
     * input, and tool results sent to Gemini must not change shape with the parser. */
    if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)) {
        json_object_put(v);
        v = NULL;
    }
    o = json_object_new_object();
    put(b, o, "content", v ? v : jstr(text));
    return o;
}

static enum bsc_err tool_turn(struct bctx *b, struct json_object *msgs, size_t i,
                              struct json_object *m, struct turns *t)
{
    struct bsc_str id = gem_str(m, "tool_call_id"), name;
    struct json_object *content = bsc_json_get(m, "content"), *parts, *p, *fr;
    struct bsc_buf text;
    enum bsc_err err = BSC_OK;

    if (!id.len)
        return refuse(b, "messages[%zu]: a tool message needs a tool_call_id", i);
    name = tool_name_for(msgs, i, id);
    if (!name.len)
        return refuse(b, "messages[%zu]: tool_call_id \"%.*s\" matches no earlier assistant "
                         "tool call", i, (int)(id.len > 64 ? 64 : id.len), id.p);
    /* No bound of its own: the text is a copy of part of the request body, which the
     * server already bounded (limits.max_body_bytes). */
    bsc_buf_init(&text, SIZE_MAX / 2);
    if (json_object_is_type(content, json_type_string)) {
        err = bsc_buf_append(&text, json_object_get_string(content),
                             (size_t)json_object_get_string_len(content));
    } else if (json_object_is_type(content, json_type_array)) {
        for (size_t k = 0; !err && k < json_object_array_length(content); k++)
            err = bsc_buf_append_str(&text, gem_str(json_object_array_get_idx(content, k),
                                                    "text"));
    }
    if (err) {
        bsc_buf_cleanup(&text);
        return err;
    }
    parts = json_object_new_array();
    p = json_object_new_object();
    fr = json_object_new_object();
    put(b, fr, "name", jstr(name));
    put(b, fr, "response", tool_response(b, bsc_buf_str(&text)));
    put(b, p, "functionResponse", fr);
    push(b, parts, p);
    bsc_buf_cleanup(&text);
    append_turn(b, t, "user", parts);
    return BSC_OK;
}

static enum bsc_err user_turn(struct bctx *b, struct json_object *m, struct turns *t)
{
    struct json_object *content = bsc_json_get(m, "content");
    struct json_object *parts = json_object_new_array();
    enum bsc_err err = BSC_OK;

    if (json_object_is_type(content, json_type_array)) {
        for (size_t k = 0; !err && k < json_object_array_length(content); k++)
            err = user_part(b, json_object_array_get_idx(content, k), parts);
    } else {
        err = text_parts(b, content, false, parts, "user");
    }
    if (err) {
        json_object_put(parts);
        return err;
    }
    append_turn(b, t, "user", parts);
    return BSC_OK;
}

static enum bsc_err one_message(struct bctx *b, struct json_object *msgs, size_t i,
                                struct turns *t, struct json_object *sys)
{
    struct json_object *m = json_object_array_get_idx(msgs, i);
    struct bsc_str role = gem_str(m, "role");

    if (bsc_str_eq(role, BSC_STR("system")) || bsc_str_eq(role, BSC_STR("developer")))
        return text_parts(b, bsc_json_get(m, "content"), false, sys, "system");
    if (bsc_str_eq(role, BSC_STR("user")))
        return user_turn(b, m, t);
    if (bsc_str_eq(role, BSC_STR("assistant")))
        return assistant_turn(b, m, t);
    if (bsc_str_eq(role, BSC_STR("tool")))
        return tool_turn(b, msgs, i, m, t);
    return refuse(b, "messages[%zu]: role \"%.*s\" cannot be sent to gemini targets", i,
                  (int)(role.len > 32 ? 32 : role.len), role.p ? role.p : "");
}

static enum bsc_err add_messages(struct bctx *b, struct json_object *req, struct json_object *body)
{
    struct json_object *msgs = bsc_json_get_type(req, "messages", json_type_array);
    struct json_object *contents, *sys, *si;
    struct turns t = {0};
    enum bsc_err err = BSC_OK;

    if (!msgs || json_object_array_length(msgs) == 0)
        return refuse(b, "messages must be a non-empty array");
    contents = json_object_new_array();
    sys = json_object_new_array();
    t.contents = contents;
    for (size_t i = 0; !err && i < json_object_array_length(msgs); i++)
        err = one_message(b, msgs, i, &t, sys);
    if (!err && json_object_array_length(contents) == 0)
        err = refuse(b, "the request has no user or assistant content to send");
    if (err) {
        json_object_put(contents);
        json_object_put(sys);
        return err;
    }
    if (json_object_array_length(sys)) {
        si = json_object_new_object();
        put(b, si, "parts", sys);
        put(b, body, "systemInstruction", si);
    } else {
        json_object_put(sys);
    }
    put(b, body, "contents", contents);
    return BSC_OK;
}

/* ---- tools ---- */

struct choice {
    const char *mode;          /* NULL: no toolConfig */
    struct bsc_str named;      /* tool_choice {function: name} */
    struct json_object *allow; /* allowed_tools tools array (borrowed), or NULL */
};

static enum bsc_err read_choice(struct bctx *b, struct json_object *v, struct choice *c)
{
    struct bsc_str type = gem_str(v, "type");
    struct json_object *at;

    if (!v || json_object_is_type(v, json_type_null))
        return BSC_OK;
    if (json_object_is_type(v, json_type_string)) {
        const char *s = json_object_get_string(v);
        c->mode = strcmp(s, "none") == 0   ? "NONE"
                  : strcmp(s, "auto") == 0 ? "AUTO"
                  : strcmp(s, "required") == 0 ? "ANY"
                                               : NULL;
        return c->mode ? BSC_OK : refuse(b, "tool_choice \"%.32s\" is not known", s);
    }
    if (bsc_str_eq(type, BSC_STR("function"))) {
        c->named = gem_str(bsc_json_get(v, "function"), "name");
        c->mode = "ANY";
        return c->named.len ? BSC_OK : refuse(b, "tool_choice names no function");
    }
    if (bsc_str_eq(type, BSC_STR("allowed_tools"))) {
        at = bsc_json_get(v, "allowed_tools");
        c->mode = is_str(bsc_json_get(at, "mode"), "required") ? "ANY" : "AUTO";
        c->allow = bsc_json_get_type(at, "tools", json_type_array);
        return c->allow ? BSC_OK : refuse(b, "tool_choice allowed_tools needs a tools list");
    }
    return refuse(b, "tool_choice of type \"%.*s\" cannot be sent to gemini targets",
                  (int)(type.len > 40 ? 40 : type.len), type.p ? type.p : "");
}

static bool allowed(const struct choice *c, struct bsc_str name)
{
    if (!c->allow)
        return true;
    for (size_t i = 0; i < json_object_array_length(c->allow); i++) {
        struct json_object *t = json_object_array_get_idx(c->allow, i);
        struct bsc_str n = gem_str(bsc_json_get(t, "function"), "name");
        if (bsc_str_eq(n.len ? n : gem_str(t, "name"), name))
            return true;
    }
    return false;
}

static enum bsc_err declaration(struct bctx *b, struct json_object *tool, const struct choice *c,
                                struct json_object *decls)
{
    struct bsc_str type = gem_str(tool, "type");
    struct json_object *fn = bsc_json_get_type(tool, "function", json_type_object), *d, *params;
    struct bsc_str name = gem_str(fn, "name"), desc = gem_str(fn, "description");

    if (!bsc_str_eq(type, BSC_STR("function")))
        return refuse(b, "tools of type \"%.*s\" cannot be sent to gemini targets",
                      (int)(type.len > 40 ? 40 : type.len), type.p ? type.p : "");
    if (!name.len)
        return refuse(b, "a function tool has no name");
    if (!allowed(c, name))
        return BSC_OK;
    d = json_object_new_object();
    put(b, d, "name", jstr(name));
    if (desc.len)
        put(b, d, "description", jstr(desc));
    params = bsc_json_get_type(fn, "parameters", json_type_object);
    if (params)
        put(b, d, "parametersJsonSchema", json_object_get(params));
    push(b, decls, d);
    return BSC_OK;
}

static void tool_config(struct bctx *b, const struct choice *c, struct json_object *body)
{
    struct json_object *tc, *fcc, *names;

    if (!c->mode)
        return;
    tc = json_object_new_object();
    fcc = json_object_new_object();
    put(b, fcc, "mode", json_object_new_string(c->mode));
    if (c->named.len) {
        names = json_object_new_array();
        push(b, names, jstr(c->named));
        put(b, fcc, "allowedFunctionNames", names);
    }
    put(b, tc, "functionCallingConfig", fcc);
    put(b, body, "toolConfig", tc);
}

static enum bsc_err add_tools(struct bctx *b, struct json_object *req, struct json_object *body)
{
    struct json_object *tools = bsc_json_get(req, "tools"), *decls, *wrap, *list;
    struct choice c = {0};
    enum bsc_err err;

    if (!tools || json_object_is_type(tools, json_type_null))
        return BSC_OK;
    if (!json_object_is_type(tools, json_type_array))
        return refuse(b, "tools must be an array");
    if (json_object_array_length(tools) == 0)
        return BSC_OK;
    err = read_choice(b, bsc_json_get(req, "tool_choice"), &c);
    if (err)
        return err;
    decls = json_object_new_array();
    for (size_t i = 0; !err && i < json_object_array_length(tools); i++)
        err = declaration(b, json_object_array_get_idx(tools, i), &c, decls);
    if (!err && json_object_array_length(decls) == 0)
        err = refuse(b, "tool_choice allowed_tools names none of the declared tools");
    if (err) {
        json_object_put(decls);
        return err;
    }
    wrap = json_object_new_object();
    put(b, wrap, "functionDeclarations", decls);
    list = json_object_new_array();
    push(b, list, wrap);
    put(b, body, "tools", list);
    tool_config(b, &c, body);
    return BSC_OK;
}

/* ---- generationConfig ---- */

static bool is_number(struct json_object *v)
{
    return v && (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double));
}

static enum bsc_err copy_number(struct bctx *b, struct json_object *req, const char *from,
                                struct json_object *g, const char *to)
{
    struct json_object *v = bsc_json_get(req, from);

    if (!v || json_object_is_type(v, json_type_null))
        return BSC_OK;
    if (!is_number(v))
        return refuse(b, "%s must be a number", from);
    put(b, g, to,
        json_object_is_type(v, json_type_int) ? json_object_new_int64(json_object_get_int64(v))
                                              : json_object_new_double(json_object_get_double(v)));
    return BSC_OK;
}

static enum bsc_err gen_limits(struct bctx *b, struct json_object *req, struct json_object *g)
{
    struct json_object *v = bsc_json_get(req, "max_completion_tokens");
    int64_t n;

    if (!v || json_object_is_type(v, json_type_null))
        v = bsc_json_get(req, "max_tokens");
    if (v && !json_object_is_type(v, json_type_null)) {
        if (!json_object_is_type(v, json_type_int) || (n = json_object_get_int64(v)) < 1)
            return refuse(b, "max_tokens must be a positive integer");
        put(b, g, "maxOutputTokens", json_object_new_int64(n));
    }
    v = bsc_json_get(req, "n");
    if (v && !json_object_is_type(v, json_type_null)) {
        if (!json_object_is_type(v, json_type_int) || (n = json_object_get_int64(v)) < 1 ||
            n > (int64_t)GEM_MAX_CANDIDATES)
            return refuse(b, "gemini targets take n from 1 to %u", GEM_MAX_CANDIDATES);
        if (n > 1)
            put(b, g, "candidateCount", json_object_new_int64(n));
    }
    return BSC_OK;
}

static enum bsc_err gen_stop(struct bctx *b, struct json_object *req, struct json_object *g)
{
    struct json_object *v = bsc_json_get(req, "stop"), *arr;

    if (!v || json_object_is_type(v, json_type_null))
        return BSC_OK;
    arr = json_object_new_array();
    if (json_object_is_type(v, json_type_string)) {
        push(b, arr, json_object_get(v));
    } else if (json_object_is_type(v, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(v); i++) {
            struct json_object *s = json_object_array_get_idx(v, i);
            if (!json_object_is_type(s, json_type_string)) {
                json_object_put(arr);
                return refuse(b, "stop must hold strings");
            }
            push(b, arr, json_object_get(s));
        }
    } else {
        json_object_put(arr);
        return refuse(b, "stop must be a string or an array of strings");
    }
    if (json_object_array_length(arr))
        put(b, g, "stopSequences", arr);
    else
        json_object_put(arr);
    return BSC_OK;
}

static enum bsc_err gen_format(struct bctx *b, struct json_object *req, struct json_object *g)
{
    struct json_object *rf = bsc_json_get(req, "response_format"), *schema;
    struct bsc_str type = gem_str(rf, "type");

    if (!rf || json_object_is_type(rf, json_type_null) || bsc_str_eq(type, BSC_STR("text")))
        return BSC_OK;
    if (bsc_str_eq(type, BSC_STR("json_object"))) {
        put(b, g, "responseMimeType", json_object_new_string("application/json"));
        return BSC_OK;
    }
    if (!bsc_str_eq(type, BSC_STR("json_schema")))
        return refuse(b, "response_format of type \"%.*s\" cannot be sent to gemini targets",
                      (int)(type.len > 40 ? 40 : type.len), type.p ? type.p : "");
    put(b, g, "responseMimeType", json_object_new_string("application/json"));
    schema = bsc_json_get_type(bsc_json_get(rf, "json_schema"), "schema", json_type_object);
    if (schema)
        put(b, g, "responseJsonSchema", json_object_get(schema));
    return BSC_OK;
}

static enum bsc_err add_generation(struct bctx *b, struct json_object *req,
                                   struct json_object *body)
{
    static const char *const nums[][2] = {
        {"temperature", "temperature"},
        {"top_p", "topP"},
        {"presence_penalty", "presencePenalty"},
        {"frequency_penalty", "frequencyPenalty"},
        {"seed", "seed"},
    };
    struct json_object *g = json_object_new_object();
    enum bsc_err err = gen_limits(b, req, g);

    for (size_t i = 0; !err && i < BSC_ARRAY_LEN(nums); i++)
        err = copy_number(b, req, nums[i][0], g, nums[i][1]);
    if (!err)
        err = gen_stop(b, req, g);
    if (!err)
        err = gen_format(b, req, g);
    if (err || json_object_object_length(g) == 0) {
        json_object_put(g);
        return err;
    }
    put(b, body, "generationConfig", g);
    return BSC_OK;
}

/* Fields whose meaning would be lost in translation. */
static enum bsc_err check_untranslatable(struct bctx *b, struct json_object *req)
{
    struct json_object *v, *mods = bsc_json_get_type(req, "modalities", json_type_array);
    static const char *const never[] = {"audio", "web_search_options", "functions",
                                        "function_call"};

    if ((v = bsc_json_get(req, "logprobs")) && json_object_is_type(v, json_type_boolean) &&
        json_object_get_boolean(v))
        return refuse(b, "logprobs are not available from gemini targets");
    if ((v = bsc_json_get_type(req, "logit_bias", json_type_object)) && json_object_object_length(v))
        return refuse(b, "logit_bias is not available from gemini targets");
    for (size_t i = 0; i < BSC_ARRAY_LEN(never); i++)
        if ((v = bsc_json_get(req, never[i])) && !json_object_is_type(v, json_type_null))
            return refuse(b, "%s cannot be sent to gemini targets", never[i]);
    for (size_t i = 0; mods && i < json_object_array_length(mods); i++)
        if (is_str(json_object_array_get_idx(mods, i), "audio"))
            return refuse(b, "audio output is not available from gemini targets");
    return BSC_OK;
}

static enum bsc_err chat_body(struct bctx *b, struct json_object *body)
{
    struct json_object *req = b->call->req;
    enum bsc_err err;

    if (!req || !json_object_is_type(req, json_type_object))
        return refuse(b, "the request is not a JSON object");
    err = check_untranslatable(b, req);
    if (!err)
        err = add_messages(b, req, body);
    if (!err)
        err = add_tools(b, req, body);
    if (!err)
        err = add_generation(b, req, body);
    return err;
}

static void probe_body(struct bctx *b, struct json_object *body)
{
    struct json_object *c = json_object_new_object(), *parts = json_object_new_array();
    struct json_object *contents = json_object_new_array(), *g = json_object_new_object();

    push(b, parts, text_part(BSC_STR("ping")));
    put(b, c, "role", json_object_new_string("user"));
    put(b, c, "parts", parts);
    push(b, contents, c);
    put(b, body, "contents", contents);
    put(b, g, "maxOutputTokens", json_object_new_int(1));
    put(b, body, "generationConfig", g);
}

/* ---- embeddings ---- */

static void model_ref(struct bctx *b, struct json_object *o, const char *model)
{
    char ref[GEM_MODEL_MAX + 8];

    snprintf(ref, sizeof(ref), "%s%s", strchr(model, '/') ? "" : "models/", model);
    put(b, o, "model", json_object_new_string(ref));
}

/* One EmbedContentRequest for <text>. */
static struct json_object *embed_request(struct bctx *b, struct json_object *text, int64_t dims,
                                         bool with_model)
{
    struct json_object *r = json_object_new_object(), *content = json_object_new_object();
    struct json_object *parts = json_object_new_array(), *p = json_object_new_object();

    if (with_model)
        model_ref(b, r, b->call->target->model);
    put(b, p, "text", json_object_get(text));
    push(b, parts, p);
    put(b, content, "parts", parts);
    put(b, r, "content", content);
    if (dims > 0)
        put(b, r, "outputDimensionality", json_object_new_int64(dims));
    return r;
}

/* Builds the embeddings body into <out> and says which method it is for: one text goes
 * to embedContent, several to batchEmbedContents. */
static enum bsc_err embeddings(struct bctx *b, struct bsc_buf *out, bool *batch)
{
    struct json_object *req = b->call->req, *input = bsc_json_get(req, "input"), *body, *reqs;
    int64_t dims = gem_i64(req, "dimensions", 0);
    size_t n = 1;
    enum bsc_err err;

    if (json_object_is_type(input, json_type_array)) {
        n = json_object_array_length(input);
        for (size_t i = 0; i < n; i++)
            if (!json_object_is_type(json_object_array_get_idx(input, i), json_type_string))
                return refuse(b, "gemini targets embed text only: token-id inputs cannot be "
                                 "sent");
    } else if (!json_object_is_type(input, json_type_string)) {
        n = 0;
    }
    if (n == 0)
        return refuse(b, "input must be a string or a non-empty array of strings");
    *batch = n > 1;
    if (!*batch) {
        body = embed_request(b, json_object_is_type(input, json_type_array)
                                    ? json_object_array_get_idx(input, 0)
                                    : input,
                             dims, false);
    } else {
        body = json_object_new_object();
        reqs = json_object_new_array();
        for (size_t i = 0; i < n; i++)
            push(b, reqs, embed_request(b, json_object_array_get_idx(input, i), dims, true));
        put(b, body, "requests", reqs);
    }
    err = !body || b->oom ? BSC_ENOMEM : prov_append_json(out, body);
    json_object_put(body);
    return err;
}

/* ---- URL, headers, build ---- */

/* Appends "models/<model>" (or <model> when it already names a collection, such as
 * "tunedModels/x"), percent-encoding what is not unreserved. */
static enum bsc_err model_path(struct bsc_buf *url, const char *model)
{
    enum bsc_err err = strchr(model, '/') ? BSC_OK : bsc_buf_append_cstr(url, "models/");

    for (const unsigned char *p = (const unsigned char *)model; !err && *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~/", *p))
            err = bsc_buf_append_char(url, (char)*p);
        else
            err = bsc_buf_appendf(url, "%%%02X", *p);
    }
    return err;
}

static enum bsc_err build_url(const struct prov_call *c, bool batch, struct bsc_buf *url)
{
    const char *method;
    enum bsc_err err = bsc_buf_appendf(url, "%s/", c->provider->base_url);

    if (err)
        return err;
    if (c->op == PROV_OP_PROBE_MODELS)
        return bsc_buf_append_cstr(url, "models");
    err = model_path(url, c->target->model);
    if (c->op == PROV_OP_EMBEDDINGS)
        method = batch ? ":batchEmbedContents" : ":embedContent";
    else if (c->op == PROV_OP_CHAT && c->stream)
        method = ":streamGenerateContent?alt=sse";
    else
        method = ":generateContent";
    return err ? err : bsc_buf_append_cstr(url, method);
}

static enum bsc_err build_headers(const struct prov_call *c, struct bsc_buf *h)
{
    enum bsc_err err = BSC_OK;

    if (c->op != PROV_OP_PROBE_MODELS)
        err = prov_header(h, "Content-Type", "application/json");
    if (!err && c->op == PROV_OP_CHAT)
        err = prov_header(h, "Accept", "%s", c->stream ? "text/event-stream" : "application/json");
    if (!err && c->key)
        err = prov_header(h, "x-goog-api-key", "%s", c->key);
    if (!err)
        err = prov_extra_headers(h, c->provider);
    return err;
}

/* The JSON body of a chat or probe call into <out>. */
static enum bsc_err generate_body(struct bctx *b, struct bsc_buf *out)
{
    struct json_object *body = json_object_new_object();
    enum bsc_err err = BSC_OK;

    if (!body)
        return BSC_ENOMEM;
    if (b->call->op == PROV_OP_PROBE_COMPLETION)
        probe_body(b, body);
    else
        err = chat_body(b, body);
    if (!err && b->oom)
        err = BSC_ENOMEM;
    if (!err)
        err = prov_append_json(out, body);
    json_object_put(body);
    return err;
}

static enum bsc_err gem_build(const struct prov_call *c, struct prov_http *out, char *why,
                              size_t why_len)
{
    struct bctx b = {c, why, why_len, false};
    bool batch = false;
    enum bsc_err err = BSC_OK;

    if (why && why_len)
        why[0] = '\0';
    if (c->op != PROV_OP_PROBE_MODELS && (!c->target || !c->target->model))
        return refuse(&b, "the target names no model");
    out->method = c->op == PROV_OP_PROBE_MODELS ? "GET" : "POST";
    if (c->op == PROV_OP_EMBEDDINGS)
        err = embeddings(&b, &out->body, &batch);
    else if (c->op != PROV_OP_PROBE_MODELS)
        err = generate_body(&b, &out->body);
    if (!err)
        err = build_url(c, batch, &out->url);
    if (!err)
        err = build_headers(c, &out->headers);
    return err;
}

/* ---- errors ---- */

struct gem_err {
    int code;                 /* error.code; 0 when absent */
    struct bsc_str status;    /* "RESOURCE_EXHAUSTED", ... */
    struct bsc_str message;
    struct bsc_str reason;    /* ErrorInfo.reason, e.g. API_KEY_INVALID */
    struct bsc_str quota_id;  /* the first QuotaFailure violation's quotaId */
    bool per_day;             /* a violated quota is per day */
    bool zero_quota;          /* a violated quota has the value 0 (no quota at all) */
    int64_t retry_ms;         /* RetryInfo.retryDelay; -1 none */
};

static bool ends_with(struct bsc_str s, const char *suffix)
{
    size_t n = strlen(suffix);

    return s.len >= n && memcmp(s.p + s.len - n, suffix, n) == 0;
}

static void quota_failure(struct json_object *d, struct gem_err *e)
{
    struct json_object *v = bsc_json_get_type(d, "violations", json_type_array);

    for (size_t i = 0; v && i < json_object_array_length(v) && i < 32; i++) {
        struct json_object *one = json_object_array_get_idx(v, i);
        struct bsc_str id = gem_str(one, "quotaId"), value = gem_str(one, "quotaValue");
        if (!e->quota_id.len)
            e->quota_id = id;
        if (has_ci(id, "PerDay") || has_ci(gem_str(one, "quotaMetric"), "per_day"))
            e->per_day = true;
        if (bsc_str_eq(value, BSC_STR("0")))
            e->zero_quota = true;
    }
}

static void read_details(struct json_object *details, struct gem_err *e)
{
    for (size_t i = 0; details && i < json_object_array_length(details) && i < 32; i++) {
        struct json_object *d = json_object_array_get_idx(details, i);
        struct bsc_str type = gem_str(d, "@type");
        if (ends_with(type, "google.rpc.ErrorInfo") && !e->reason.len)
            e->reason = gem_str(d, "reason");
        else if (ends_with(type, "google.rpc.QuotaFailure"))
            quota_failure(d, e);
        else if (ends_with(type, "google.rpc.RetryInfo") && e->retry_ms < 0)
            e->retry_ms = prov_parse_duration(gem_str(d, "retryDelay"));
    }
}

/* The error object of <root>: {"error":{...}}, or the first element of an array of them. */
static struct json_object *error_object(struct json_object *root)
{
    if (json_object_is_type(root, json_type_array) && json_object_array_length(root) > 0)
        root = json_object_array_get_idx(root, 0);
    return bsc_json_get_type(root, "error", json_type_object);
}

static const struct {
    const char *status;
    enum fail_kind kind;
} status_kinds[] = {
    {"INVALID_ARGUMENT", FAIL_INVALID_REQUEST},
    {"OUT_OF_RANGE", FAIL_INVALID_REQUEST},
    {"ALREADY_EXISTS", FAIL_INVALID_REQUEST},
    {"UNAUTHENTICATED", FAIL_AUTH},
    {"PERMISSION_DENIED", FAIL_PERMISSION},
    {"NOT_FOUND", FAIL_NOT_FOUND},
    {"RESOURCE_EXHAUSTED", FAIL_RATE_LIMITED},
    {"UNAVAILABLE", FAIL_OVERLOADED},
    {"DEADLINE_EXCEEDED", FAIL_TIMEOUT},
    {"INTERNAL", FAIL_SERVER_ERROR},
    {"UNKNOWN", FAIL_SERVER_ERROR},
    {"ABORTED", FAIL_SERVER_ERROR},
    {"CANCELLED", FAIL_SERVER_ERROR},
    {"DATA_LOSS", FAIL_SERVER_ERROR},
};

/* Messages that mean a quota that will not come back within minutes. */
static const char *const quota_needles[] = {
    "per day", "perday", "daily", "credits are depleted", "prepayment", "spending cap",
    "spend cap", "limit: 0,",
};

/* Messages that mean the prompt is larger than the model's window (docs/providers.md §6.4). */
static const char *const overflow_needles[] = {
    "input token count", "exceeds the maximum number of tokens", "maximum context length",
    "context window", "prompt is too long",
};

static bool any_needle(struct bsc_str msg, const char *const *needles, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (has_ci(msg, needles[i]))
            return true;
    return false;
}

static bool is_auth(const struct gem_err *e)
{
    return bsc_str_eq(e->reason, BSC_STR("API_KEY_INVALID")) ||
           bsc_str_eq(e->reason, BSC_STR("API_KEY_EXPIRED")) ||
           bsc_str_eq(e->status, BSC_STR("UNAUTHENTICATED")) ||
           has_ci(e->message, "api key not valid") || has_ci(e->message, "api key expired") ||
           has_ci(e->message, "unregistered callers"); /* a missing key is a 403 */
}

/* The kind of an error seen with HTTP status <eff> (the error's own code for a 200). */
static enum fail_kind kind_of(const struct gem_err *e, int eff)
{
    bool invalid = bsc_str_eq(e->status, BSC_STR("INVALID_ARGUMENT")) ||
                   (!e->status.len && eff == 400);

    if (is_auth(e))
        return FAIL_AUTH;
    if (bsc_str_eq(e->status, BSC_STR("RESOURCE_EXHAUSTED")) || (!e->status.len && eff == 429))
        return e->per_day || e->zero_quota ||
                       any_needle(e->message, quota_needles, BSC_ARRAY_LEN(quota_needles))
                   ? FAIL_QUOTA_EXHAUSTED
                   : FAIL_RATE_LIMITED;
    if (bsc_str_eq(e->status, BSC_STR("FAILED_PRECONDITION")))
        return has_ci(e->message, "location") || has_ci(e->message, "country") ||
                       has_ci(e->message, "region")
                   ? FAIL_PERMISSION
                   : FAIL_QUOTA_EXHAUSTED; /* billing not enabled, free tier unavailable */
    if (invalid && any_needle(e->message, overflow_needles, BSC_ARRAY_LEN(overflow_needles)))
        return FAIL_CONTEXT_OVERFLOW;
    for (size_t i = 0; i < BSC_ARRAY_LEN(status_kinds); i++)
        if (bsc_str_eq(e->status, bsc_str_cstr(status_kinds[i].status)))
            return status_kinds[i].kind;
    return fail_kind_from_status(eff);
}

void prov__gem_fail_set(struct fail_info *out, enum fail_kind kind, int status, const char *msg)
{
    fail_info_init(out);
    out->kind = kind;
    out->status = status;
    fail_copy_text(out->message, sizeof(out->message), bsc_str_cstr(msg));
}

bool prov__gem_fail_from_error(struct json_object *root, int http_status,
                               const struct prov_err_input *in, struct fail_info *out)
{
    struct json_object *err = error_object(root);
    struct gem_err e = {.retry_ms = -1};
    int eff = http_status;
    char num[16];

    if (!err)
        return false;
    e.code = (int)gem_i64(err, "code", 0);
    e.status = gem_str(err, "status");
    e.message = gem_str(err, "message");
    read_details(bsc_json_get_type(err, "details", json_type_array), &e);
    if (eff >= 200 && eff < 300) /* an error hidden in a 200: its own code speaks */
        eff = e.code >= 400 && e.code <= 599 ? e.code : 500;
    fail_info_init(out);
    out->kind = kind_of(&e, eff);
    out->status = http_status;
    fail_copy_text(out->type, sizeof(out->type), e.status);
    snprintf(num, sizeof(num), "%d", e.code);
    fail_copy_text(out->code, sizeof(out->code),
                   e.reason.len ? e.reason : e.quota_id.len ? e.quota_id : bsc_str_cstr(num));
    fail_copy_text(out->message, sizeof(out->message), e.message);
    out->retry_after_ms = prov_err_retry_after(in);
    if (out->retry_after_ms < 0)
        out->retry_after_ms = e.retry_ms;
    if (out->retry_after_ms < 0)
        out->retry_after_ms = prov_parse_retry_hint_text(e.message);
    return true;
}

bool prov__gem_prompt_blocked(struct json_object *root, int status, struct fail_info *out)
{
    struct json_object *cands = bsc_json_get_type(root, "candidates", json_type_array);
    struct json_object *fb = bsc_json_get(root, "promptFeedback");
    struct bsc_str reason = gem_str(fb, "blockReason"), detail = gem_str(fb, "blockReasonMessage");
    char msg[FAIL_TEXT_MESSAGE];

    if (!reason.len || (cands && json_object_array_length(cands) > 0))
        return false;
    snprintf(msg, sizeof(msg), "the provider blocked the prompt (%.*s)%s%.*s",
             (int)(reason.len > 48 ? 48 : reason.len), reason.p, detail.len ? ": " : "",
             (int)(detail.len > 160 ? 160 : detail.len), detail.p ? detail.p : "");
    prov__gem_fail_set(out, FAIL_CONTENT_POLICY, status, msg);
    fail_copy_text(out->code, sizeof(out->code), reason);
    return true;
}

static void gem_classify(const struct prov_err_input *in, struct fail_info *out)
{
    struct json_object *root = prov_parse_json(in->body);
    bool ok2xx = in->status >= 200 && in->status < 300;

    fail_info_init(out);
    out->status = in->status;
    if (root && prov__gem_fail_from_error(root, in->status, in, out)) {
        json_object_put(root);
        return;
    }
    if (ok2xx) {
        if (!root || !prov__gem_prompt_blocked(root, in->status, out))
            out->kind = FAIL_NONE;
        json_object_put(root);
        return;
    }
    json_object_put(root);
    out->kind = fail_kind_from_status(in->status);
    out->retry_after_ms = prov_err_retry_after(in);
    fail_copy_text(out->message, sizeof(out->message),
                   in->body.len ? bsc_str_make(in->body.p, in->body.len > 200 ? 200 : in->body.len)
                                : BSC_STR("the upstream error had no body"));
}

/* ---- shared with gemini_stream.c ---- */

static uint32_t fnv1a(const char *s)
{
    uint32_t h = 2166136261u;

    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

void prov__gem_resp_ctx_init(struct gem_resp_ctx *ctx, const struct prov_call *call)
{
    const char *rid = call->request_id && *call->request_id ? call->request_id : NULL;
    const char *model = call->target && call->target->model ? call->target->model : "";
    struct json_object *ptc = bsc_json_get(call->req, "parallel_tool_calls");

    memset(ctx, 0, sizeof(*ctx));
    ctx->created = call->created;
    snprintf(ctx->id, sizeof(ctx->id), "chatcmpl-%s", rid ? rid : "gemini");
    if (strncmp(model, "models/", 7) == 0)
        model += 7;
    snprintf(ctx->model, sizeof(ctx->model), "%s", model);
    /* Ids unique across the turns of a conversation, and stable for one request. */
    if (rid)
        snprintf(ctx->prefix, sizeof(ctx->prefix), "call_%08x_", fnv1a(rid));
    else
        snprintf(ctx->prefix, sizeof(ctx->prefix), "call_");
    ctx->single_tool = ptc && json_object_is_type(ptc, json_type_boolean) &&
                       !json_object_get_boolean(ptc);
    ctx->include_usage = call->include_usage;
}

const struct prov_ops prov_gemini = {
    .name = "gemini",
    /* check_untranslatable() and gen_limits() refuse these (top_logprobs alone is dropped). */
    .unhonoured = PROV_P(LOGPROBS) | PROV_P(LOGIT_BIAS) | PROV_P(AUDIO) | PROV_P(MODALITIES) |
                  PROV_P(FUNCTIONS) | PROV_P(FUNCTION_CALL) | PROV_P(WEB_SEARCH_OPTIONS),
    .max_choices = GEM_MAX_CANDIDATES,
    .build = gem_build,
    .classify = gem_classify,
    .map_response = prov__gem_map_response,
    .stream_size = sizeof(struct gem_stream),
    .stream_init = prov__gem_stream_init,
    .stream_event = prov__gem_stream_event,
    .stream_line = prov__gem_stream_line,
    .stream_end = prov__gem_stream_end,
    .stream_usage = prov__gem_stream_usage,
    .stream_cleanup = prov__gem_stream_cleanup,
};
