/* SPDX-License-Identifier: MIT */
/* dialect_bedrock.c -- bascule-sim speaking AWS Bedrock Runtime's Converse API
 * (docs/providers.md "AWS Bedrock"): POST /model/{modelId}/converse (JSON) and
 * /model/{modelId}/converse-stream (the AWS event-stream binary framing, each event a
 * CRC-checked message with :event-type messageStart, contentBlockStart/Delta/Stop,
 * messageStop and metadata; an error mid-stream is an :message-type exception message).
 * Every request's SigV4 signature is verified against the test credential
 * (SIM_AWS_KEY_ID / SIM_AWS_SECRET, service "bedrock"): a wrong signature is the 403
 * InvalidSignatureException Bedrock sends, an unknown key 403 UnrecognizedClientException.
 * Errors carry their name in x-amzn-ErrorType and {"message"} in the body. Validation is
 * strict (unknown fields, block shapes, roles), so a translation bug shows up as the 400
 * ValidationException Bedrock would send. See docs/internals/sim.md. */
#include "dialect.h"
#include "core/json_get.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "content.h"
#include "schema_gen.h"
#include "sjson.h"

#include "core/compat.h"
#include "core/evstream.h"
#include "core/sha256.h"
#include "core/sigv4.h"

#define SIM_AWS_KEY_ID "AKIDSIMEXAMPLE"
#define SIM_AWS_SECRET "sim/Secret+Access/KeyEXAMPLE"
#define SIM_AWS_TOKEN  "sim-session-token" /* the one session token accepted */
#define BR_MAX_TOOLS   128u

/* ---- routing --------------------------------------------------------------------------- */

/* The model id of "/model/{id}/converse[-stream]" (still percent-encoded) and whether it is
 * the stream; false when <path> is not one. */
static bool split_path(struct bsc_str path, struct bsc_str *id, bool *stream)
{
    static const char conv[] = "/converse", convs[] = "/converse-stream";
    size_t tail;

    if (!bsc_str_starts(path, BSC_STR("/model/")))
        return false;
    *stream = path.len > sizeof(convs) - 1 &&
              memcmp(path.p + path.len - (sizeof(convs) - 1), convs, sizeof(convs) - 1) == 0;
    tail = *stream ? sizeof(convs) - 1 : sizeof(conv) - 1;
    if (!*stream && (path.len <= tail || memcmp(path.p + path.len - tail, conv, tail) != 0))
        return false;
    *id = bsc_str_make(path.p + 7, path.len - 7 - tail);
    return id->len > 0 && !memchr(id->p, '/', id->len);
}

static enum sim_ep br_route(struct bsc_str method, struct bsc_str path)
{
    struct bsc_str id;
    bool stream;

    return bsc_str_eq(method, BSC_STR("POST")) && split_path(path, &id, &stream) ? SIM_EP_CHAT
                                                                                 : SIM_EP_NONE;
}

/* ---- SigV4 ----------------------------------------------------------------------------- */

/* The value of "<key>=" in the Authorization parameters (up to ',' or the end). */
static struct bsc_str auth_param(struct bsc_str authz, const char *key)
{
    const char *at = bsc_str_find(authz, bsc_str_cstr(key));
    const char *end = authz.p + authz.len, *stop;

    if (!at)
        return BSC_STR_NULL;
    at += strlen(key);
    stop = memchr(at, ',', (size_t)(end - at));
    return bsc_str_trim(bsc_str_make(at, (size_t)((stop ? stop : end) - at)));
}

static bool deny(struct sim_reject *rej, const char *type, const char *msg)
{
    sim_reject_set(rej, 403, type, NULL, "%s", msg);
    return false;
}

/* Rebuilds the request's signature from the headers it says it signed; true when it is the
 * one sent. */
static bool signature_ok(const struct sim_in *in, struct bsc_str authz, struct bsc_str signed_list,
                         struct bsc_str scope_date, struct bsc_str region, struct bsc_str sig)
{
    struct sigv4_header h[SIGV4_MAX_HEADERS];
    struct sigv4_req r = {.method = in->method, .path = in->path, .query = in->query, .headers = h};
    char date[SIGV4_DATE_LEN], reg[64], name[SIGV4_MAX_HEADERS][64], want[65];
    struct bsc_str d = in->header(in->ctx, BSC_STR("x-amz-date"));
    struct sigv4_scope sc = {SIM_AWS_KEY_ID, SIM_AWS_SECRET, date, reg, "bedrock"};
    struct bsc_buf out;
    uint8_t digest[BSC_SHA256_LEN];
    bool ok;

    (void)authz;
    if (d.len != SIGV4_DATE_LEN - 1 || scope_date.len != 8 || memcmp(d.p, scope_date.p, 8) ||
        region.len == 0 || region.len >= sizeof(reg) || sig.len != 64)
        return false;
    bsc_str_copy(date, sizeof(date), d);
    bsc_str_copy(reg, sizeof(reg), region);
    while (signed_list.len && r.n_headers < SIGV4_MAX_HEADERS) {
        const char *semi = memchr(signed_list.p, ';', signed_list.len);
        struct bsc_str n = bsc_str_make(signed_list.p,
                                        semi ? (size_t)(semi - signed_list.p) : signed_list.len);

        if (n.len == 0 || n.len >= sizeof(name[0]))
            return false;
        bsc_str_copy(name[r.n_headers], sizeof(name[0]), n);
        h[r.n_headers].name = bsc_str_make(name[r.n_headers], n.len);
        h[r.n_headers].value = in->header(in->ctx, n);
        r.n_headers++;
        signed_list = semi ? bsc_str_make(semi + 1, signed_list.len - n.len - 1) : BSC_STR("");
    }
    bsc_sha256(in->body.p, in->body.len, digest);
    bsc_sha256_hex(digest, r.payload_hash);
    bsc_buf_init(&out, 4096);
    ok = sigv4_authorization(&r, &sc, &out, want) == BSC_OK && memcmp(want, sig.p, 64) == 0;
    bsc_buf_cleanup(&out);
    return ok;
}

/* True when <list> (';'-separated) names <h>. */
static bool lists(struct bsc_str list, const char *h)
{
    size_t n = strlen(h);

    for (const char *p = list.p, *end = list.p + list.len; p < end;) {
        const char *semi = memchr(p, ';', (size_t)(end - p));
        size_t len = (size_t)((semi ? semi : end) - p);

        if (len == n && memcmp(p, h, n) == 0)
            return true;
        p = semi ? semi + 1 : end;
    }
    return false;
}

/* True when the x-amz-date <d> is within 15 minutes of now, as AWS requires. */
static bool date_fresh(struct bsc_str d)
{
    struct tm tm = {0};
    char s[SIGV4_DATE_LEN];
    time_t t, now = time(NULL);

    if (d.len != SIGV4_DATE_LEN - 1)
        return false;
    bsc_str_copy(s, sizeof(s), d);
    if (!strptime(s, "%Y%m%dT%H%M%SZ", &tm))
        return false;
    t = timegm(&tm);
    return t > now - 900 && t < now + 900;
}

static bool br_authorize(const struct sim_in *in, struct sim_reject *rej)
{
    struct bsc_str authz = bsc_str_trim(in->header(in->ctx, BSC_STR("authorization")));
    struct bsc_str cred = auth_param(authz, "Credential="), signed_list, sig;
    struct bsc_str token = in->header(in->ctx, BSC_STR("x-amz-security-token"));
    struct bsc_str parts[5];
    size_t n = 0;

    if (!bsc_str_starts(authz, BSC_STR("AWS4-HMAC-SHA256 ")))
        return deny(rej, "MissingAuthenticationTokenException", "Missing Authentication Token");
    for (const char *p = cred.p, *end = cred.p + cred.len; p && p <= end && n < 5;) {
        const char *slash = memchr(p, '/', (size_t)(end - p));

        parts[n++] = bsc_str_make(p, (size_t)((slash ? slash : end) - p));
        p = slash ? slash + 1 : NULL;
    }
    signed_list = auth_param(authz, "SignedHeaders=");
    sig = auth_param(authz, "Signature=");
    if (n != 5 || !bsc_str_eq(parts[3], BSC_STR("bedrock")) ||
        !bsc_str_eq(parts[4], BSC_STR("aws4_request")) || !signed_list.len || !sig.len)
        return deny(rej, "IncompleteSignatureException",
                    "Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' "
                    "parameters for service bedrock.");
    if (!bsc_str_eq(parts[0], BSC_STR(SIM_AWS_KEY_ID)))
        return deny(rej, "UnrecognizedClientException",
                    "The security token included in the request is invalid.");
    if (!lists(signed_list, "host") || !lists(signed_list, "x-amz-date"))
        return deny(rej, "IncompleteSignatureException", "host and x-amz-date must be signed.");
    if (!date_fresh(in->header(in->ctx, BSC_STR("x-amz-date"))))
        return deny(rej, "InvalidSignatureException",
                    "Signature expired: the x-amz-date is more than 15 minutes from now.");
    if (token.len &&
        (!bsc_str_eq(token, BSC_STR(SIM_AWS_TOKEN)) || !lists(signed_list, "x-amz-security-token")))
        return deny(rej, "ExpiredTokenException",
                    "The security token included in the request is expired");
    if (!signature_ok(in, authz, signed_list, parts[1], parts[2], sig))
        return deny(rej, "InvalidSignatureException",
                    "The request signature we calculated does not match the signature you "
                    "provided. Check your AWS Secret Access Key and signing method. Consult the "
                    "service documentation for details.");
    return true;
}

/* ---- request validation ------------------------------------------------------------------ */

static bool bad(struct sim_reject *rej, const char *fmt, ...) BSC_PRINTF(2, 3);

static bool bad(struct sim_reject *rej, const char *fmt, ...)
{
    va_list ap;

    rej->status = 400;
    rej->type = "ValidationException";
    rej->code = NULL;
    va_start(ap, fmt);
    vsnprintf(rej->message, sizeof(rej->message), fmt, ap);
    va_end(ap);
    return false;
}

static bool is(struct json_object *o, json_type t)
{
    return o && json_object_is_type(o, t);
}

static bool only_keys(struct json_object *o, const char *const *keys, size_t n, const char *where,
                      struct sim_reject *rej)
{
    json_object_object_foreach(o, k, v)
    {
        bool known = false;

        (void)v;
        for (size_t i = 0; i < n && !known; i++)
            known = strcmp(k, keys[i]) == 0;
        if (!known)
            return bad(rej, "Malformed input request: extraneous key [%s] is not permitted in %s",
                       k, where);
    }
    return true;
}

/* One content block: exactly one member, of a known kind, well formed. */
static bool check_block(struct json_object *b, bool assistant, struct sim_reject *rej)
{
    struct json_object *v;

    if (!is(b, json_type_object) || json_object_object_length(b) != 1)
        return bad(rej, "A content block must have exactly one member.");
    if ((v = bsc_json_get(b, "text")))
        return is(v, json_type_string) || bad(rej, "text must be a string.");
    if ((v = bsc_json_get(b, "cachePoint")))
        return is(bsc_json_get(v, "type"), json_type_string) || bad(rej, "cachePoint.type.");
    if ((v = bsc_json_get(b, "image"))) {
        struct bsc_str fmt = sim_json_get_str(v, "format");

        if (assistant || !fmt.len ||
            !is(bsc_json_get(bsc_json_get(v, "source"), "bytes"), json_type_string))
            return bad(rej, "image needs format and source.bytes, in a user turn.");
        return true;
    }
    if ((v = bsc_json_get(b, "toolUse"))) {
        if (!assistant || !sim_json_get_str(v, "toolUseId").len ||
            !sim_json_get_str(v, "name").len || !is(bsc_json_get(v, "input"), json_type_object))
            return bad(rej, "toolUse needs toolUseId, name and an input object, in an "
                            "assistant turn.");
        return true;
    }
    if ((v = bsc_json_get(b, "toolResult"))) {
        if (assistant || !sim_json_get_str(v, "toolUseId").len ||
            !is(bsc_json_get(v, "content"), json_type_array))
            return bad(rej, "toolResult needs toolUseId and a content array, in a user turn.");
        return true;
    }
    return bad(rej, "Unsupported content block type.");
}

static bool check_messages(struct json_object *msgs, struct sim_reject *rej)
{
    size_t n = is(msgs, json_type_array) ? json_object_array_length(msgs) : 0;

    if (n == 0)
        return bad(rej, "The messages field is required and must not be empty.");
    for (size_t i = 0; i < n; i++) {
        struct json_object *m = json_object_array_get_idx(msgs, i), *c = bsc_json_get(m, "content");
        struct bsc_str role = sim_json_get_str(m, "role");
        bool assistant = bsc_str_eq(role, BSC_STR("assistant"));
        static const char *const keys[] = {"role", "content"};

        if (!is(m, json_type_object) || !only_keys(m, keys, 2, "Message", rej))
            return rej->status ? false : bad(rej, "A message must be an object.");
        if (!assistant && !bsc_str_eq(role, BSC_STR("user")))
            return bad(rej, "A message's role must be user or assistant.");
        if (!is(c, json_type_array) || json_object_array_length(c) == 0)
            return bad(rej, "A message's content must be a non-empty array.");
        for (size_t k = 0; k < json_object_array_length(c); k++)
            if (!check_block(json_object_array_get_idx(c, k), assistant, rej))
                return false;
    }
    return true;
}

static bool check_tools(struct json_object *tc, struct sim_reject *rej)
{
    struct json_object *tools = bsc_json_get(tc, "tools");
    size_t n = is(tools, json_type_array) ? json_object_array_length(tools) : 0;

    if (!tc)
        return true;
    if (n == 0 || n > BR_MAX_TOOLS)
        return bad(rej, "toolConfig.tools must hold 1 to %u tools.", BR_MAX_TOOLS);
    for (size_t i = 0; i < n; i++) {
        struct json_object *spec = bsc_json_get(json_object_array_get_idx(tools, i), "toolSpec");

        if (!sim_json_get_str(spec, "name").len ||
            !is(bsc_json_get(bsc_json_get(spec, "inputSchema"), "json"), json_type_object))
            return bad(rej, "toolSpec needs a name and inputSchema.json.");
    }
    return true;
}

/* The text of the last user turn (for echoed tool args) and whether it holds tool results. */
static bool last_user_text(struct json_object *m, struct bsc_buf *out)
{
    struct json_object *c = bsc_json_get(m, "content");
    bool results = false;

    for (size_t i = 0; is(c, json_type_array) && i < json_object_array_length(c); i++) {
        struct json_object *b = json_object_array_get_idx(c, i);
        struct bsc_str t = sim_json_get_str(b, "text");
        size_t room = out->max - out->len;

        results |= bsc_json_get(b, "toolResult") != NULL;
        if (t.len)
            bsc_buf_append(out, t.p, t.len < room ? t.len : room);
    }
    return results;
}

/* The tool to call, as Claude on Bedrock picks it (see the Anthropic dialect): forced by
 * toolChoice any/tool, else auto when the last turn is the user's without tool results. */
static bool pick_tool(struct json_object *o, struct json_object *last, struct sim_call *call,
                      struct sim_reject *rej)
{
    struct json_object *tc = bsc_json_get(o, "toolConfig"),
                       *choice = bsc_json_get(tc, "toolChoice");
    struct json_object *tools = bsc_json_get(tc, "tools"), *spec = NULL;
    struct bsc_str name = sim_json_get_str(bsc_json_get(choice, "tool"), "name");
    bool forced = bsc_json_get(choice, "any") || name.len, results;
    struct bsc_buf text;

    if (!tc)
        return true;
    bsc_buf_init(&text, SIM_ECHO_CHARS * 8);
    results = last_user_text(last, &text);
    if (!forced && (!bsc_str_eq(sim_json_get_str(last, "role"), BSC_STR("user")) || results)) {
        bsc_buf_cleanup(&text);
        return true;
    }
    for (size_t i = 0; i < json_object_array_length(tools) && !spec; i++) {
        struct json_object *s = bsc_json_get(json_object_array_get_idx(tools, i), "toolSpec");

        if (!name.len || bsc_str_eq(sim_json_get_str(s, "name"), name))
            spec = s;
    }
    if (!spec) {
        bsc_buf_cleanup(&text);
        return bad(rej, "toolChoice names a tool that is not in toolConfig.tools.");
    }
    call->tool_args = sim_schema_tool_args(bsc_json_get(bsc_json_get(spec, "inputSchema"), "json"),
                                           bsc_buf_str(&text));
    call->tool_name = call->tool_args ? bsc_str_dup(sim_json_get_str(spec, "name")) : NULL;
    call->include_usage = forced; /* as in the Anthropic dialect: no text preface */
    bsc_buf_cleanup(&text);
    if (!call->tool_name)
        sim_reject_set(rej, 500, "InternalServerException", NULL, "out of memory");
    return call->tool_name != NULL;
}

static bool check_inference(struct json_object *ic, struct sim_call *call, struct sim_reject *rej)
{
    static const char *const keys[] = {"maxTokens", "temperature", "topP", "stopSequences"};
    struct json_object *mt = bsc_json_get(ic, "maxTokens");

    if (!ic)
        return true;
    if (!is(ic, json_type_object) ||
        !only_keys(ic, keys, BSC_ARRAY_LEN(keys), "inferenceConfig", rej))
        return rej->status ? false : bad(rej, "inferenceConfig must be an object.");
    if (mt && (!is(mt, json_type_int) || json_object_get_int64(mt) < 1))
        return bad(rej, "inferenceConfig.maxTokens must be an integer >= 1.");
    call->max_tokens = mt ? (uint32_t)json_object_get_int64(mt) : 0;
    return true;
}

/* %XX sequences of <s> decoded into an owned string. */
static char *url_decode(struct bsc_str s)
{
    char *out = malloc(s.len + 1);
    size_t n = 0;

    for (size_t i = 0; out && i < s.len; i++) {
        int hi = s.p[i] == '%' && i + 2 < s.len ? bsc_hex_digit((unsigned char)s.p[i + 1]) : -1;
        int lo = hi >= 0 ? bsc_hex_digit((unsigned char)s.p[i + 2]) : -1;

        if (hi >= 0 && lo >= 0) {
            out[n++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            out[n++] = s.p[i];
        }
    }
    if (out)
        out[n] = '\0';
    return out;
}

static size_t prompt_bytes(struct json_object *msgs)
{
    struct bsc_buf all;
    size_t n;

    bsc_buf_init(&all, 1 << 20);
    for (size_t i = 0; i < json_object_array_length(msgs); i++)
        last_user_text(json_object_array_get_idx(msgs, i), &all);
    n = all.len;
    bsc_buf_cleanup(&all);
    return n;
}

static bool br_parse(enum sim_ep ep, const struct sim_in *in, struct sim_call *call,
                     struct sim_reject *rej)
{
    static const char *const keys[] = {"messages",
                                       "system",
                                       "inferenceConfig",
                                       "toolConfig",
                                       "additionalModelRequestFields",
                                       "guardrailConfig",
                                       "promptVariables",
                                       "requestMetadata",
                                       "additionalModelResponseFieldPaths",
                                       "performanceConfig"};
    struct json_object *o, *msgs;
    struct bsc_str id;
    bool ok;

    call->ep = ep;
    if (!split_path(in->path, &id, &call->stream))
        return bad(rej, "Unknown operation.");
    call->model = url_decode(id);
    if (!call->model) {
        sim_reject_set(rej, 500, "InternalServerException", NULL, "out of memory");
        return false;
    }
    o = sim_json_parse(in->body, NULL, 0);
    if (!is(o, json_type_object)) {
        json_object_put(o);
        return bad(rej, "Malformed input request, please reformat your input and try again.");
    }
    msgs = bsc_json_get(o, "messages");
    ok = only_keys(o, keys, BSC_ARRAY_LEN(keys), "ConverseRequest", rej) &&
         check_messages(msgs, rej) &&
         check_inference(bsc_json_get(o, "inferenceConfig"), call, rej) &&
         check_tools(bsc_json_get(o, "toolConfig"), rej) &&
         pick_tool(o, json_object_array_get_idx(msgs, json_object_array_length(msgs) - 1), call,
                   rej);
    if (ok)
        call->prompt_tokens = sim_content_prompt_tokens(prompt_bytes(msgs),
                                                        json_object_array_length(msgs));
    json_object_put(o);
    return ok;
}

/* ---- answers ----------------------------------------------------------------------------- */

static bool has_preface(const struct sim_call *call)
{
    return call->tool_name && !call->include_usage;
}

static size_t arg_pieces(const struct sim_call *call)
{
    return sim_utf8_piece_count(bsc_str_cstr(call->tool_args), SIM_ARG_PIECE_BYTES);
}

static uint32_t output_tokens(const struct sim_call *call)
{
    return call->tool_name ? (uint32_t)arg_pieces(call) + (has_preface(call) ? 1u : 0u)
                           : call->n_tokens;
}

static const char *stop_reason(const struct sim_call *call)
{
    if (call->tool_name)
        return "tool_use";
    return call->finish_length ? "max_tokens" : "end_turn";
}

static enum bsc_err usage_json(const struct sim_call *call, struct bsc_buf *out)
{
    uint32_t out_t = output_tokens(call);

    if (call->usage.len)
        return bsc_buf_append_str(out, call->usage);
    return bsc_buf_appendf(out,
                           "{\"inputTokens\":%u,\"outputTokens\":%u,\"totalTokens\":%u,"
                           "\"cacheReadInputTokens\":0,\"cacheWriteInputTokens\":0}",
                           call->prompt_tokens, out_t, call->prompt_tokens + out_t);
}

static enum bsc_err preface(const struct sim_call *call, struct bsc_buf *out)
{
    return bsc_buf_appendf(out, "Let me call %s.", call->tool_name);
}

static enum bsc_err tool_use_json(const struct sim_call *call, bool with_input, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_appendf(
        out, "{\"toolUseId\":\"tooluse_sim_%llu\",\"name\":", (unsigned long long)call->seq);

    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(call->tool_name));
    if (!err && with_input) {
        err = bsc_buf_append_cstr(out, ",\"input\":");
        if (!err)
            err = sim_content_args_value(bsc_str_cstr(call->tool_args), call->tool_args_raw, out);
    }
    return err ? err : bsc_buf_append_char(out, '}');
}

static enum bsc_err br_body(const struct sim_call *call, struct bsc_buf *out)
{
    struct bsc_buf text;
    enum bsc_err err;

    bsc_buf_init(&text, out->max);
    err = call->tool_name ? (has_preface(call) ? preface(call, &text) : BSC_OK)
                          : sim_content_answer(call->content, call->n_tokens, &text);
    if (!err)
        err = bsc_buf_append_cstr(out, "{\"output\":{\"message\":{\"role\":\"assistant\","
                                       "\"content\":[");
    if (!err && text.len) {
        err = bsc_buf_append_cstr(out, "{\"text\":");
        if (!err)
            err = bsc_buf_append_json_str(out, bsc_buf_str(&text));
        if (!err)
            err = bsc_buf_append_cstr(out, call->tool_name ? "}," : "}");
    }
    if (!err && call->tool_name) {
        err = bsc_buf_append_cstr(out, "{\"toolUse\":");
        if (!err)
            err = tool_use_json(call, true, out);
        if (!err)
            err = bsc_buf_append_char(out, '}');
    }
    if (!err)
        err = bsc_buf_appendf(out, "]}},\"stopReason\":\"%s\",\"usage\":", stop_reason(call));
    if (!err)
        err = usage_json(call, out);
    if (!err)
        err = bsc_buf_append_cstr(out, ",\"metrics\":{\"latencyMs\":1}}");
    bsc_buf_cleanup(&text);
    return err;
}

/* ---- the stream -------------------------------------------------------------------------- */

/* One event-stream message: the event named <type> with the JSON payload <payload>. */
static enum bsc_err frame(struct bsc_buf *out, const char *type, struct bsc_str payload)
{
    const struct evs_header h[] = {{":event-type", bsc_str_cstr(type)},
                                   {":content-type", BSC_STR("application/json")},
                                   {":message-type", BSC_STR("event")}};

    return evs_encode(out, h, BSC_ARRAY_LEN(h), payload);
}

/* The events: messageStart; [preface: delta, stop]; [tool: contentBlockStart]; deltas;
 * contentBlockStop; messageStop. metadata (usage) is the end event. */
static size_t deltas(const struct sim_call *call)
{
    return call->tool_name ? arg_pieces(call) : call->n_tokens;
}

static size_t br_event_count(const struct sim_call *call)
{
    return 1 + (has_preface(call) ? 2 : 0) + (call->tool_name ? 1 : 0) + deltas(call) + 2;
}

static enum bsc_err delta_payload(struct bsc_buf *p, size_t index, bool tool, struct bsc_str piece)
{
    enum bsc_err err = bsc_buf_appendf(p, "{\"contentBlockIndex\":%zu,\"delta\":{%s", index,
                                       tool ? "\"toolUse\":{\"input\":" : "\"text\":");

    if (!err)
        err = bsc_buf_append_json_str(p, piece);
    return err ? err : bsc_buf_append_cstr(p, tool ? "}}}" : "}}");
}

static enum bsc_err br_event(const struct sim_call *call, size_t i, struct bsc_buf *out)
{
    size_t main = has_preface(call) ? 1 : 0, k = i;
    bool tool = call->tool_name != NULL;
    struct bsc_buf p;
    enum bsc_err err = BSC_OK;
    const char *type;

    if (i >= br_event_count(call))
        return BSC_EINVAL;
    bsc_buf_init(&p, 1 << 20);
    if (k == 0) {
        type = "messageStart";
        err = bsc_buf_append_cstr(&p, "{\"role\":\"assistant\"}");
    } else if (has_preface(call) && k <= 2) {
        struct bsc_buf t;

        bsc_buf_init(&t, 4096);
        type = k == 1 ? "contentBlockDelta" : "contentBlockStop";
        err = k == 1 ? preface(call, &t) : BSC_OK;
        if (!err)
            err = k == 1 ? delta_payload(&p, 0, false, bsc_buf_str(&t))
                         : bsc_buf_append_cstr(&p, "{\"contentBlockIndex\":0}");
        bsc_buf_cleanup(&t);
    } else {
        k -= 1 + (has_preface(call) ? 2 : 0);
        if (tool && k == 0) {
            type = "contentBlockStart";
            err = bsc_buf_appendf(&p, "{\"contentBlockIndex\":%zu,\"start\":{\"toolUse\":", main);
            if (!err)
                err = tool_use_json(call, false, &p);
            if (!err)
                err = bsc_buf_append_cstr(&p, "}}");
        } else {
            k -= tool ? 1 : 0;
            if (k < deltas(call)) {
                type = "contentBlockDelta";
                err = delta_payload(
                    &p, main, tool,
                    tool ? sim_utf8_piece_at(bsc_str_cstr(call->tool_args), SIM_ARG_PIECE_BYTES, k)
                         : sim_content_chunk(call->content, (uint32_t)k));
            } else if (k == deltas(call)) {
                type = "contentBlockStop";
                err = bsc_buf_appendf(&p, "{\"contentBlockIndex\":%zu}", main);
            } else {
                type = "messageStop";
                err = bsc_buf_appendf(&p, "{\"stopReason\":\"%s\"}", stop_reason(call));
            }
        }
    }
    if (!err)
        err = frame(out, type, bsc_buf_str(&p));
    bsc_buf_cleanup(&p);
    return err;
}

static enum bsc_err br_end_event(const struct sim_call *call, struct bsc_buf *out)
{
    struct bsc_buf p;
    enum bsc_err err;

    bsc_buf_init(&p, 1 << 16);
    err = bsc_buf_append_cstr(&p, "{\"usage\":");
    if (!err)
        err = usage_json(call, &p);
    if (!err)
        err = bsc_buf_append_cstr(&p, ",\"metrics\":{\"latencyMs\":1}}");
    if (!err)
        err = frame(out, "metadata", bsc_buf_str(&p));
    bsc_buf_cleanup(&p);
    return err;
}

/* ---- errors ------------------------------------------------------------------------------ */

static void br_default_error(const struct sim_call *call, int status, const char **type,
                             const char **code, char *msgbuf, size_t msglen)
{
    (void)call;
    *code = NULL;
    switch (status) {
    case 400:
        *type = "ValidationException";
        snprintf(msgbuf, msglen, "Malformed input request (simulated).");
        break;
    case 403:
        *type = "AccessDeniedException";
        snprintf(msgbuf, msglen, "You don't have access to the model with the specified model ID.");
        break;
    case 404:
        *type = "ResourceNotFoundException";
        snprintf(msgbuf, msglen, "The provided model identifier is invalid.");
        break;
    case 408:
        *type = "ModelTimeoutException";
        snprintf(msgbuf, msglen, "Model has timed out in processing the request.");
        break;
    case 424:
        *type = "ModelErrorException";
        snprintf(msgbuf, msglen, "The model returned an error (simulated).");
        break;
    case 429:
        *type = "ThrottlingException";
        snprintf(msgbuf, msglen, "Too many requests, please wait before trying again.");
        break;
    case 503:
        *type = "ServiceUnavailableException";
        snprintf(msgbuf, msglen, "Service is temporarily unavailable (simulated).");
        break;
    default:
        *type = status >= 500 ? "InternalServerException" : "ValidationException";
        snprintf(msgbuf, msglen, "bascule-sim: simulated error %d", status);
        break;
    }
}

/* {"message": ...}: the name goes in x-amzn-ErrorType (sim_dialect.error_type_header). */
static enum bsc_err br_error_body(int status, const char *type, const char *code,
                                  const char *message, struct bsc_buf *out)
{
    enum bsc_err err = bsc_buf_append_cstr(out, "{\"message\":");

    (void)status, (void)type, (void)code;
    if (!err)
        err = bsc_buf_append_json_str(out, bsc_str_cstr(message));
    return err ? err : bsc_buf_append_char(out, '}');
}

/* An exception message in the stream; the wire name's first letter is lower case
 * ("throttlingException"), as ConverseStream sends it. */
static enum bsc_err br_error_event(int status, const char *type, const char *code,
                                   const char *message, struct bsc_buf *out)
{
    char name[96];
    struct bsc_buf p;
    enum bsc_err err;
    struct evs_header h[3];

    (void)status, (void)code;
    snprintf(name, sizeof(name), "%s", type && type[0] ? type : "internalServerException");
    if (name[0] >= 'A' && name[0] <= 'Z')
        name[0] = (char)(name[0] + 32);
    h[0] = (struct evs_header){":exception-type", bsc_str_cstr(name)};
    h[1] = (struct evs_header){":content-type", BSC_STR("application/json")};
    h[2] = (struct evs_header){":message-type", BSC_STR("exception")};
    bsc_buf_init(&p, 4096);
    err = br_error_body(status, type, code, message, &p);
    if (!err)
        err = evs_encode(out, h, 3, bsc_buf_str(&p));
    bsc_buf_cleanup(&p);
    return err;
}

static enum bsc_err br_malformed_body(const struct sim_call *call, struct bsc_buf *out)
{
    (void)call;
    return bsc_buf_append_cstr(out, "{\"output\":{\"message\":");
}

/* A frame whose message CRC is wrong: the decoder must refuse it. */
static enum bsc_err br_malformed_event(const struct sim_call *call, struct bsc_buf *out)
{
    size_t start = out->len;
    enum bsc_err err = frame(out, "contentBlockDelta",
                             BSC_STR("{\"contentBlockIndex\":0,\"delta\":{\"text\":\"x\"}}"));

    (void)call;
    if (!err)
        out->p[out->len - 1] ^= 0x5a;
    (void)start;
    return err;
}

static enum bsc_err br_models(const struct sim_call *call, const char *const *names, size_t n,
                              struct bsc_buf *out)
{
    (void)call, (void)names, (void)n;
    return bsc_buf_append_cstr(out, "{\"modelSummaries\":[]}");
}

const struct sim_dialect sim_dialect_bedrock = {
    .name = "bedrock",
    .route = br_route,
    .authorize = br_authorize,
    .parse = br_parse,
    .body = br_body,
    .event_count = br_event_count,
    .event = br_event,
    .end_event = br_end_event,
    .stream_content_type = "application/vnd.amazon.eventstream",
    .error_type_header = "x-amzn-ErrorType",
    .default_error = br_default_error,
    .error_body = br_error_body,
    .error_event = br_error_event,
    .malformed_body = br_malformed_body,
    .malformed_event = br_malformed_event,
    .models = br_models,
};
