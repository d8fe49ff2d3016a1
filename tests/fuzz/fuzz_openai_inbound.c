/* SPDX-License-Identifier: MIT */
/* fuzz-libs: -lsqlite3 -lhiredis -lssl -lcrypto */
/* fuzz_openai_inbound.c -- libFuzzer target for the OpenAI fast path, inbound: the reader of
 * /v1/chat/completions (api__chat_read: validation, the duplicate rule, the members the
 * gateway reads) and then the OpenAI adapter's build, which splices the target's model into
 * the client's bytes (providers/openai.c, splice; serialize when the bytes need a rewrite).
 * No fuzz-sources line: openai_chat.c also holds the HTTP handler, whose router and server
 * symbols come from the archive of every source (hence libcurl and sqlite3). Input layout:
 *   byte 0     bits 0-2 the target's model name (plain, with quotes and backslashes, non-ASCII,
 *              U+2028, long)
 *   the rest   the request body
 * Beyond "no crash, no leak, no UB" it aborts when a PROPERTY breaks:
 *   - a refusal has a code and a NUL-terminated, valid UTF-8 message;
 *   - an accepted body is one JSON object to json-c (strict, UTF-8 checked) whose "model" is a
 *     non-empty string, "messages" a non-empty array of objects, "tools" absent, null or an
 *     array; "stream" is what the reader says, and so is stream_options.include_usage;
 *   - the body the adapter builds from it (the splice) is one JSON object to json-c with no
 *     repeated top-level name, whose "model" is the target's, whose other members equal the
 *     client's one for one (json_object_equal), and which, for a stream, has
 *     stream_options.include_usage true and the client's other stream_options members. So what
 *     the gateway validated (and routed, estimated, checked against the contract) is exactly
 *     what the upstream receives. Built and run by scripts/fuzz. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "api/openai_chat.h"
#include "core/buf.h"
#include "core/compat.h"
#include "core/json_check.h"
#include "core/json_parse.h"
#include "providers/provider.h"
#include "stream/utf8.h"

#define PARSE_DEPTH 130 /* past the reader's 64 containers: json-c counts values, not containers */

static void die(const char *what)
{
    fprintf(stderr, "fuzz_openai_inbound: invariant broken: %s\n", what);
    abort();
}

static char model_plain[] = "gpt-4o-2024-08-06";
static char model_quotes[] = "we\"ird\\model/\x01";
static char model_utf8[] = "mod\xc3\xa8le-\xe2\x82\xac-\xf0\x9f\x98\x80";
static char model_sep[] = "a\xe2\x80\xa8" "b";
static char model_long[] =
    "a-rather-long-model-name-that-is-longer-than-the-client-value-by-far-"
    "0123456789012345678901234567890123456789";
static char *const models[] = {model_plain, model_quotes, model_utf8, model_sep, model_long};

static char url[] = "https://api.openai.com/v1";
static char prov_id[] = "fuzz-provider";
static char target_id[] = "fuzz@fuzz-provider";

static struct json_object *member(struct json_object *o, const char *k)
{
    struct json_object *v = NULL;

    return json_object_object_get_ex(o, k, &v) ? v : NULL;
}

static bool is_true(struct json_object *v)
{
    return json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

/* The accepted body, as json-c reads it, agrees with what the reader said of it. */
static void check_accepted(struct json_object *orig, const struct api_chat *c)
{
    struct json_object *model = member(orig, "model"), *msgs = member(orig, "messages");
    struct json_object *tools = member(orig, "tools"), *opts = member(orig, "stream_options");

    if (!json_object_is_type(orig, json_type_object))
        die("an accepted body is not a JSON object");
    if (!json_object_is_type(model, json_type_string) || !json_object_get_string_len(model))
        die("an accepted body has no model string");
    if (!json_object_is_type(msgs, json_type_array) || !json_object_array_length(msgs))
        die("an accepted body has no messages");
    for (size_t i = 0; i < json_object_array_length(msgs); i++)
        if (!json_object_is_type(json_object_array_get_idx(msgs, i), json_type_object))
            die("an accepted body has a message that is not an object");
    if (tools && !json_object_is_type(tools, json_type_array))
        die("an accepted body has tools that are not an array");
    if (c->stream != is_true(member(orig, "stream")))
        die("the reader's stream flag is not json-c's");
    if (c->include_usage !=
        (json_object_is_type(opts, json_type_object) && is_true(member(opts, "include_usage"))))
        die("the reader's include_usage is not json-c's");
}

/* Every member of <a> but <skip1> and <skip2> is in <b> with an equal value, and <b> has no
 * other member but those. */
static void same_members(struct json_object *a, struct json_object *b, const char *skip1,
                         const char *skip2, const char *what)
{
    size_t n_a = 0, n_b = 0;

    json_object_object_foreach(a, ka, va)
    {
        struct json_object *vb = NULL;

        if (!strcmp(ka, skip1) || (skip2 && !strcmp(ka, skip2)))
            continue;
        n_a++;
        if (!json_object_object_get_ex(b, ka, &vb) || !json_object_equal(va, vb))
            die(what);
    }
    json_object_object_foreach(b, kb, vb2)
    {
        (void)vb2;
        if (!strcmp(kb, skip1) || (skip2 && !strcmp(kb, skip2)))
            continue;
        n_b++;
    }
    if (n_a != n_b)
        die(what);
}

/* The body the adapter built for <target_model> from the accepted client body. */
static void check_spliced(struct bsc_str sent, struct json_object *orig, const struct api_chat *c,
                          const char *target_model)
{
    struct json_object *up = bsc_json_parse_whole(sent, PARSE_DEPTH), *model, *opts, *copts;
    struct bsc_json_error jerr = {0, NULL, BSC_STR_NULL};
    struct bsc_str none;

    if (!up || !json_object_is_type(up, json_type_object))
        die("the spliced body is not one JSON object");
    /* (REFUSED is possible: a stream's stream_options can be the 257th member.) */
    switch (bsc_json_check_request(sent, PARSE_DEPTH, NULL, 0, 0, &none, &jerr)) {
    case BSC_JSONV_OK:
    case BSC_JSONV_REFUSED: break;
    default: die("the spliced body repeats a top-level name or is not JSON");
    }
    model = member(up, "model");
    if (!json_object_is_type(model, json_type_string) ||
        strcmp(json_object_get_string(model), target_model) != 0 ||
        (size_t)json_object_get_string_len(model) != strlen(target_model))
        die("the spliced body's model is not the target's");
    if (!c->stream) {
        same_members(orig, up, "model", NULL, "a spliced member differs from the client's");
    } else {
        same_members(orig, up, "model", "stream_options",
                     "a spliced member differs from the client's");
        opts = member(up, "stream_options");
        copts = member(orig, "stream_options");
        if (!json_object_is_type(opts, json_type_object) || !is_true(member(opts, "include_usage")))
            die("a spliced stream does not ask for usage");
        if (json_object_is_type(copts, json_type_object))
            same_members(copts, opts, "include_usage", NULL,
                         "the spliced stream_options lost a member of the client's");
        else if (json_object_object_length(opts) != 1)
            die("the spliced stream_options has members the client never sent");
    }
    json_object_put(up);
}

static void build_and_check(const struct api_chat *c, struct bsc_str body, struct json_object *orig,
                            char *target_model)
{
    struct cfg_provider prov;
    struct cfg_target target;
    struct prov_call call;
    struct prov_http http;
    const struct prov_ops *ops = prov_ops_for(CFG_PROV_OPENAI);
    char why[256] = "";
    enum bsc_err err;

    memset(&prov, 0, sizeof(prov));
    prov.id = prov_id;
    prov.kind = CFG_PROV_OPENAI;
    prov.base_url = url;
    memset(&target, 0, sizeof(target));
    target.id = target_id;
    target.provider = &prov;
    target.model = target_model;
    call = (struct prov_call){
        .op = PROV_OP_CHAT,
        .provider = &prov,
        .target = &target,
        .key = "sk-fuzz",
        .raw = body,
        .model_span = c->model,
        .stream = c->stream,
        .include_usage = c->include_usage,
        .request_id = "req-fuzz-1",
        .created = 1700000000,
    };
    bsc_buf_init(&http.url, 8192);
    bsc_buf_init(&http.headers, 64u * 1024u);
    bsc_buf_init(&http.body, body.len * 2 + 65536);
    err = ops->build(&call, &http, why, sizeof(why));
    if (err != BSC_OK)
        die("the adapter refuses to build an accepted body");
    check_spliced(bsc_str_make(http.body.p, http.body.len), orig, c, target_model);
    bsc_buf_cleanup(&http.url);
    bsc_buf_cleanup(&http.headers);
    bsc_buf_cleanup(&http.body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct api_refusal why;
    struct api_chat c;
    struct json_object *orig;
    struct bsc_str body;
    char *copy;

    if (size < 1 || size > (1u << 20))
        return 0;
    /* An exactly sized copy, so ASan sees any read past the body. */
    copy = malloc(size - 1 ? size - 1 : 1);
    if (!copy)
        return 0;
    memcpy(copy, data + 1, size - 1);
    body = bsc_str_make(copy, size - 1);
    memset(&why, 0xa5, sizeof(why));
    if (api__chat_read(body, &c, &why) != BSC_OK) {
        const char *nul = memchr(why.message, '\0', sizeof(why.message));

        if (!why.code || !why.code[0] || !nul || nul == why.message)
            die("a refusal without a code or a message");
        if (!bsc_utf8_valid(why.message, (size_t)(nul - why.message)))
            die("a refusal message is not valid UTF-8");
        free(copy);
        return 0;
    }
    orig = bsc_json_parse_whole(body, PARSE_DEPTH);
    if (!orig)
        die("json-c refuses a body the reader accepted");
    check_accepted(orig, &c);
    build_and_check(&c, body, orig, models[(data[0] & 7) % BSC_ARRAY_LEN(models)]);
    json_object_put(orig);
    free(copy);
    return 0;
}
