/* SPDX-License-Identifier: MIT */
/* fuzz-sources: src/providers/[a-z]*.c src/stream/sse_parse.c src/stream/utf8.c */
/* fuzz-sources: src/fail/taxonomy.c */
/* fuzz_translate_request.c -- libFuzzer target for the request side of the translating
 * adapters: the canonical OpenAI chat (or embeddings) request, as the router holds it (the
 * client's body parsed by json-c), into Anthropic's Messages request (providers/anthropic.c)
 * and Gemini's generateContent / embedContent request (providers/gemini.c). Input layout:
 *   byte 0     bit 0 stream, bit 1 include_usage, bit 2 embeddings instead of chat, bit 3 the
 *              target has a max_output_tokens, bit 4 no API key, bit 5 a small body bound
 *   the rest   the OpenAI request body (only a JSON object in valid UTF-8 reaches the adapters:
 *              the api layer validates every body the router holds, OpenAI or Anthropic)
 * Beyond "no crash, no leak, no UB" it aborts when an invariant breaks:
 *   - BSC_OK: the body is one JSON object (json-c strict) and valid UTF-8; the URL starts with
 *     the provider's base URL; every header line is "Name: value" without CR or LF; Anthropic
 *     says "stream": true exactly for a stream and names the target's model; Gemini asks for
 *     streamGenerateContent exactly for a chat stream;
 *   - BSC_EINVAL: a non-empty, NUL-terminated, valid UTF-8 reason; other errors only on the
 *     small bound (BSC_ELIMIT) or out of memory;
 *   - the request is never changed (serialised before and after), and building twice gives
 *     the same bytes. Built and run by scripts/fuzz. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "core/buf.h"
#include "core/compat.h"
#include "core/json_parse.h"
#include "providers/provider.h"
#include "stream/utf8.h"

#define BODY_BIG (4u << 20)
#define BODY_SMALL 300u

static void die(const char *kind, const char *what)
{
    fprintf(stderr, "fuzz_translate_request: %s: invariant broken: %s\n", kind, what);
    abort();
}

static char url_anthropic[] = "https://api.anthropic.com/v1";
static char url_gemini[] = "https://generativelanguage.googleapis.com/v1beta";
static char prov_id[] = "fuzz-provider";
static char target_id[] = "fuzz@fuzz-provider";
static char model_anthropic[] = "claude-sonnet-4-5";
static char model_gemini[] = "models/gemini-2.5-flash";

static char *dump(struct json_object *o)
{
    const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                          JSON_C_TO_STRING_NOSLASHESCAPE);
    char *copy = strdup(s ? s : "");

    if (!copy)
        abort();
    return copy;
}

struct built {
    enum bsc_err err;
    struct prov_http http;
    char why[256];
};

static void build(const struct prov_ops *ops, const struct prov_call *c, size_t body_max,
                  struct built *b)
{
    memset(b->why, 0xa5, sizeof(b->why));
    b->http.method = NULL;
    bsc_buf_init(&b->http.url, 8192);
    bsc_buf_init(&b->http.headers, 64u * 1024u);
    bsc_buf_init(&b->http.body, body_max);
    b->err = ops->build(c, &b->http, b->why, sizeof(b->why));
}

static void built_free(struct built *b)
{
    bsc_buf_cleanup(&b->http.url);
    bsc_buf_cleanup(&b->http.headers);
    bsc_buf_cleanup(&b->http.body);
}

static bool same_buf(const struct bsc_buf *a, const struct bsc_buf *b)
{
    return a->len == b->len && (!a->len || memcmp(a->p, b->p, a->len) == 0);
}

static void check_headers(const char *kind, const struct bsc_buf *h)
{
    size_t i = 0;

    while (i < h->len) {
        const char *line = h->p + i, *nul = memchr(line, '\0', h->len - i);
        size_t len;

        if (!nul)
            die(kind, "a header line without its NUL");
        len = (size_t)(nul - line);
        if (!memchr(line, ':', len) || memchr(line, '\r', len) || memchr(line, '\n', len))
            die(kind, "a header line that is not Name: value");
        i += len + 1;
    }
}

static void check_ok(const char *kind, const struct prov_call *c, const struct built *b,
                     const char *base)
{
    struct bsc_str body = bsc_str_make(b->http.body.p, b->http.body.len);
    struct json_object *o = bsc_json_parse_whole(body, 512), *v = NULL;

    if (!o || !json_object_is_type(o, json_type_object))
        die(kind, "the body is not one JSON object");
    if (!bsc_utf8_valid(body.p, body.len))
        die(kind, "the body is not valid UTF-8");
    if (b->http.url.len < strlen(base) || memcmp(b->http.url.p, base, strlen(base)) != 0)
        die(kind, "the URL does not start with the base URL");
    if (!b->http.method)
        die(kind, "no method");
    check_headers(kind, &b->http.headers);
    if (c->provider->kind == CFG_PROV_ANTHROPIC) {
        bool stream = json_object_object_get_ex(o, "stream", &v) &&
                      json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
        if (stream != c->stream)
            die(kind, "\"stream\" is not the client's");
        if (!json_object_object_get_ex(o, "model", &v) ||
            strcmp(json_object_get_string(v), c->target->model) != 0)
            die(kind, "the model is not the target's");
    } else if (c->op == PROV_OP_CHAT) {
        bool asks = memmem(b->http.url.p, b->http.url.len, "streamGenerateContent", 21) != NULL;
        if (asks != c->stream)
            die(kind, "streamGenerateContent is not asked for exactly for a stream");
    }
    json_object_put(o);
}

static void run(enum cfg_provider_kind kind, uint8_t flags, struct json_object *req)
{
    const char *name = kind == CFG_PROV_ANTHROPIC ? "anthropic" : "gemini";
    const struct prov_ops *ops = prov_ops_for(kind);
    struct cfg_provider prov;
    struct cfg_target target;
    struct prov_call call;
    struct built one, two;
    size_t body_max = flags & 0x20 ? BODY_SMALL : BODY_BIG;
    char *before = dump(req), *after;

    memset(&prov, 0, sizeof(prov));
    prov.id = prov_id;
    prov.kind = kind;
    prov.base_url = kind == CFG_PROV_ANTHROPIC ? url_anthropic : url_gemini;
    memset(&target, 0, sizeof(target));
    target.id = target_id;
    target.provider = &prov;
    target.model = kind == CFG_PROV_ANTHROPIC ? model_anthropic : model_gemini;
    target.max_output_tokens = flags & 0x08 ? 8192 : 0;
    call = (struct prov_call){
        .op = flags & 0x04 ? PROV_OP_EMBEDDINGS : PROV_OP_CHAT,
        .provider = &prov,
        .target = &target,
        .key = flags & 0x10 ? NULL : "sk-fuzz",
        .req = req,
        .stream = (flags & 0x04) == 0 && (flags & 0x01) != 0,
        .include_usage = (flags & 0x02) != 0,
        .request_id = "req-fuzz-1",
        .created = 1700000000,
    };
    build(ops, &call, body_max, &one);
    build(ops, &call, body_max, &two);
    after = dump(req);
    if (strcmp(before, after) != 0)
        die(name, "building changed the request");
    if (one.err != two.err || !same_buf(&one.http.body, &two.http.body) ||
        !same_buf(&one.http.url, &two.http.url) || !same_buf(&one.http.headers, &two.http.headers))
        die(name, "building twice gives different results");
    if (one.err == BSC_OK) {
        check_ok(name, &call, &one, prov.base_url);
    } else if (one.err == BSC_EINVAL) {
        const char *nul = memchr(one.why, '\0', sizeof(one.why));
        if (!nul || nul == one.why || !bsc_utf8_valid(one.why, (size_t)(nul - one.why)))
            die(name, "a refusal without a NUL-terminated, valid UTF-8 reason");
    } else if (!(one.err == BSC_ELIMIT && body_max == BODY_SMALL) && one.err != BSC_ENOMEM) {
        die(name, "an error that is neither a refusal nor a bound");
    }
    built_free(&one);
    built_free(&two);
    free(before);
    free(after);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct json_object *req;

    if (size < 1 || size > (1u << 20) || !bsc_utf8_valid((const char *)data + 1, size - 1))
        return 0;
    req = prov_parse_json(bsc_str_make((const char *)data + 1, size - 1));
    if (!req)
        return 0;
    if (json_object_is_type(req, json_type_object)) {
        run(CFG_PROV_ANTHROPIC, data[0], req);
        run(CFG_PROV_GEMINI, data[0], req);
    }
    json_object_put(req);
    return 0;
}
