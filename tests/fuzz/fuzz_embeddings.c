/* SPDX-License-Identifier: MIT */
/* fuzz-libs: -lsqlite3 -lhiredis -lssl -lcrypto */
/* fuzz_embeddings.c -- libFuzzer target for the /v1/embeddings reader (api__embeddings_read:
 * the duplicate rule over the raw bytes, then json-c for the input's shape) and the OpenAI
 * adapter's splice of the target's model into those bytes. No fuzz-sources line: embeddings.c
 * also holds the HTTP handler (router and server symbols from the archive of every source).
 * Input layout: byte 0 bit 0 a target model name that needs escaping; the rest the body.
 * Beyond "no crash, no leak, no UB" it aborts when an invariant breaks:
 *   - a refusal has a code and a NUL-terminated, valid UTF-8 message, and leaves nothing;
 *   - an accepted body has distinct top-level names once decoded (bsc_json_check_request says
 *     OK), its "model" span is a string json-c reads as the route name the reader returned,
 *     and "input" is a non-empty string or a non-empty array of strings, integers or arrays;
 *   - the spliced body is one JSON object whose "model" is the target's and whose other
 *     members equal the client's. Built and run by scripts/fuzz. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "api/embeddings.h"
#include "api/openai_chat.h"
#include "core/buf.h"
#include "core/compat.h"
#include "core/json_check.h"
#include "core/json_parse.h"
#include "providers/provider.h"
#include "stream/utf8.h"

static void die(const char *what)
{
    fprintf(stderr, "fuzz_embeddings: invariant broken: %s\n", what);
    abort();
}

static char model_plain[] = "text-embedding-3-small";
static char model_odd[] = "emb\"\\/\xc3\xa8\xe2\x80\xa9";
static char url[] = "https://api.openai.com/v1";
static char prov_id[] = "fuzz-provider";
static char target_id[] = "fuzz@fuzz-provider";

static void check_input(struct json_object *in)
{
    if (json_object_is_type(in, json_type_string)) {
        if (!json_object_get_string_len(in))
            die("an empty input string was accepted");
        return;
    }
    if (!json_object_is_type(in, json_type_array) || !json_object_array_length(in))
        die("an input that is neither a string nor a non-empty array was accepted");
    for (size_t i = 0; i < json_object_array_length(in); i++) {
        struct json_object *v = json_object_array_get_idx(in, i);
        if (!json_object_is_type(v, json_type_string) && !json_object_is_type(v, json_type_int) &&
            !json_object_is_type(v, json_type_array))
            die("an input element of another type was accepted");
    }
}

/* The splice for <model>: one object, the target's model, every other member the client's. */
static void check_splice(const struct api_embeddings *e, struct bsc_str body, char *model)
{
    const struct prov_ops *ops = prov_ops_for(CFG_PROV_OPENAI);
    struct cfg_provider prov = {.id = prov_id, .kind = CFG_PROV_OPENAI, .base_url = url};
    struct cfg_target target = {.id = target_id, .provider = &prov, .model = model};
    struct prov_call call = {
        .op = PROV_OP_EMBEDDINGS,
        .provider = &prov,
        .target = &target,
        .req = e->json,
        .raw = body,
        .model_span = e->model,
        .request_id = "req-fuzz-1",
    };
    struct prov_http http;
    struct json_object *up, *v = NULL;
    char why[128];
    size_t n = 0;

    bsc_buf_init(&http.url, 8192);
    bsc_buf_init(&http.headers, 64u * 1024u);
    bsc_buf_init(&http.body, body.len * 2 + 65536);
    if (ops->build(&call, &http, why, sizeof(why)) != BSC_OK)
        die("the adapter refuses an accepted body");
    up = bsc_json_parse_whole(bsc_str_make(http.body.p, http.body.len), 130);
    if (!up || !json_object_is_type(up, json_type_object))
        die("the spliced body is not one JSON object");
    if (!json_object_object_get_ex(up, "model", &v) || strcmp(json_object_get_string(v), model))
        die("the spliced model is not the target's");
    json_object_object_foreach(e->json, k, cv)
    {
        if (!strcmp(k, "model"))
            continue;
        n++;
        if (!json_object_object_get_ex(up, k, &v) || !json_object_equal(cv, v))
            die("a spliced member differs from the client's");
    }
    if ((size_t)json_object_object_length(up) != n + 1)
        die("the spliced body has members the client never sent");
    json_object_put(up);
    bsc_buf_cleanup(&http.url);
    bsc_buf_cleanup(&http.headers);
    bsc_buf_cleanup(&http.body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct bsc_json_error jerr = {0, NULL, BSC_STR_NULL};
    struct api_refusal why;
    struct api_embeddings e;
    struct json_object *span_model, *input = NULL;
    struct bsc_str body, none;
    char *copy;

    if (size < 1 || size > (1u << 20))
        return 0;
    copy = malloc(size - 1 ? size - 1 : 1);
    if (!copy)
        return 0;
    memcpy(copy, data + 1, size - 1);
    body = bsc_str_make(copy, size - 1);
    memset(&why, 0xa5, sizeof(why));
    if (api__embeddings_read(body, &e, &why) != BSC_OK) {
        const char *nul = memchr(why.message, '\0', sizeof(why.message));

        if (!why.code || !why.code[0] || !nul || nul == why.message || e.json)
            die("a refusal without a code or a message, or with something left");
        if (!bsc_utf8_valid(why.message, (size_t)(nul - why.message)))
            die("a refusal message is not valid UTF-8");
        free(copy);
        return 0;
    }
    if (bsc_json_check_request(body, 64, NULL, 0, 0, &none, &jerr) != BSC_JSONV_OK)
        die("an accepted body breaks the duplicate rule");
    span_model = bsc_json_parse_whole(e.model, 4);
    if (!json_object_is_type(span_model, json_type_string) ||
        strcmp(json_object_get_string(span_model), e.name) != 0)
        die("the model span is not the route name the reader returned");
    json_object_put(span_model);
    if (!json_object_object_get_ex(e.json, "input", &input))
        die("an accepted body has no input");
    check_input(input);
    check_splice(&e, body, data[0] & 1 ? model_odd : model_plain);
    json_object_put(e.json);
    free(copy);
    return 0;
}
