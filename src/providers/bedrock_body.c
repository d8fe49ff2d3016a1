/* SPDX-License-Identifier: MIT */
/* bedrock_body.c -- Anthropic Messages <-> Bedrock Converse, as JSON trees. The request:
 * system blocks -> system[].text, content blocks -> Converse blocks (text, image bytes,
 * toolUse, toolResult; a cache_control mark -> a cachePoint block after it), max_tokens,
 * temperature, top_p, stop_sequences -> inferenceConfig, tools and tool_choice -> toolConfig.
 * The answer: output.message.content -> Anthropic blocks, stopReason -> stop_reason, usage
 * (cache read and write counts included). Pure. See docs/internals/provider-bedrock-vertex.md. */
#include <stdio.h>
#include <string.h>

#include "core/json_get.h"
#include "providers/bedrock.h"

static bool is_type(struct json_object *o, json_type t)
{
    return o && json_object_is_type(o, t);
}

static struct json_object *text_block(const char *s)
{
    struct json_object *b = json_object_new_object();

    json_object_object_add(b, "text", json_object_new_string(s));
    return b;
}

static struct json_object *cache_point(void)
{
    struct json_object *b = json_object_new_object(), *cp = json_object_new_object();

    json_object_object_add(cp, "type", json_object_new_string("default"));
    json_object_object_add(b, "cachePoint", cp);
    return b;
}

/* "image/png" -> "png"; NULL for a type Converse does not take. */
static const char *image_format(const char *media)
{
    static const char *const ok[] = {"png", "jpeg", "gif", "webp"};

    if (!media || strncmp(media, "image/", 6) != 0)
        return NULL;
    for (size_t i = 0; i < BSC_ARRAY_LEN(ok); i++)
        if (strcmp(media + 6, ok[i]) == 0)
            return ok[i];
    return NULL;
}

static struct json_object *image_of(struct json_object *blk, char *why, size_t why_len)
{
    struct json_object *src = bsc_json_get(blk, "source"), *img, *s;
    const char *fmt = image_format(bsc_json_get_str(src, "media_type"));
    const char *data = bsc_json_get_str(src, "data");

    if (!fmt || !data ||
        strcmp(bsc_json_get_str(src, "type") ? bsc_json_get_str(src, "type") : "", "base64") != 0) {
        snprintf(why, why_len,
                 "Bedrock Converse takes images as inline PNG, JPEG, GIF or WebP "
                 "bytes only");
        return NULL;
    }
    img = json_object_new_object();
    s = json_object_new_object();
    json_object_object_add(s, "bytes", json_object_new_string(data));
    json_object_object_add(img, "format", json_object_new_string(fmt));
    json_object_object_add(img, "source", s);
    s = json_object_new_object();
    json_object_object_add(s, "image", img);
    return s;
}

static struct json_object *tool_use_of(struct json_object *blk)
{
    struct json_object *tu = json_object_new_object(), *b = json_object_new_object();
    struct json_object *input = bsc_json_get(blk, "input");

    json_object_object_add(tu, "toolUseId",
                           json_object_new_string(bsc_json_get_str(blk, "id") ?: ""));
    json_object_object_add(tu, "name", json_object_new_string(bsc_json_get_str(blk, "name") ?: ""));
    json_object_object_add(tu, "input", input ? json_object_get(input) : json_object_new_object());
    json_object_object_add(b, "toolUse", tu);
    return b;
}

static struct json_object *block_of(struct json_object *blk, char *why, size_t why_len);

static struct json_object *tool_result_of(struct json_object *blk, char *why, size_t why_len)
{
    struct json_object *tr = json_object_new_object(), *b, *content = json_object_new_array();
    struct json_object *c = bsc_json_get(blk, "content"), *err = bsc_json_get(blk, "is_error");

    json_object_object_add(tr, "toolUseId",
                           json_object_new_string(bsc_json_get_str(blk, "tool_use_id") ?: ""));
    if (is_type(c, json_type_string)) {
        json_object_array_add(content, text_block(json_object_get_string(c)));
    } else {
        for (size_t i = 0; is_type(c, json_type_array) && i < json_object_array_length(c); i++) {
            struct json_object *x = block_of(json_object_array_get_idx(c, i), why, why_len);

            if (!x) {
                json_object_put(content);
                json_object_put(tr);
                return NULL;
            }
            json_object_array_add(content, x);
        }
    }
    if (json_object_array_length(content) == 0)
        json_object_array_add(content, text_block(""));
    json_object_object_add(tr, "content", content);
    if (err && json_object_get_boolean(err))
        json_object_object_add(tr, "status", json_object_new_string("error"));
    b = json_object_new_object();
    json_object_object_add(b, "toolResult", tr);
    return b;
}

/* One Anthropic content block as a Converse block, or NULL with <why>. */
static struct json_object *block_of(struct json_object *blk, char *why, size_t why_len)
{
    const char *type = bsc_json_get_str(blk, "type");

    if (type && strcmp(type, "text") == 0)
        return text_block(bsc_json_get_str(blk, "text") ?: "");
    if (type && strcmp(type, "image") == 0)
        return image_of(blk, why, why_len);
    if (type && strcmp(type, "tool_use") == 0)
        return tool_use_of(blk);
    if (type && strcmp(type, "tool_result") == 0)
        return tool_result_of(blk, why, why_len);
    snprintf(why, why_len, "a '%.40s' content block has no Bedrock Converse form",
             type ? type : "?");
    return NULL;
}

/* Appends <blocks> (a string or an array of Anthropic blocks) to <dst> as Converse blocks. */
static bool put_blocks(struct json_object *dst, struct json_object *blocks, char *why,
                       size_t why_len)
{
    if (is_type(blocks, json_type_string)) {
        json_object_array_add(dst, text_block(json_object_get_string(blocks)));
        return true;
    }
    for (size_t i = 0; is_type(blocks, json_type_array) && i < json_object_array_length(blocks);
         i++) {
        struct json_object *b = json_object_array_get_idx(blocks, i);
        struct json_object *x = block_of(b, why, why_len);

        if (!x)
            return false;
        json_object_array_add(dst, x);
        if (bsc_json_get(b, "cache_control"))
            json_object_array_add(dst, cache_point());
    }
    return true;
}

static bool put_messages(struct json_object *anth, struct json_object *root, char *why,
                         size_t why_len)
{
    struct json_object *msgs = bsc_json_get(anth, "messages"), *out = json_object_new_array();
    struct json_object *sys = bsc_json_get(anth, "system");

    json_object_object_add(root, "messages", out);
    for (size_t i = 0; is_type(msgs, json_type_array) && i < json_object_array_length(msgs); i++) {
        struct json_object *m = json_object_array_get_idx(msgs, i), *cm = json_object_new_object();
        struct json_object *content = json_object_new_array();

        json_object_array_add(out, cm);
        json_object_object_add(cm, "role",
                               json_object_new_string(bsc_json_get_str(m, "role") ?: "user"));
        json_object_object_add(cm, "content", content);
        if (!put_blocks(content, bsc_json_get(m, "content"), why, why_len))
            return false;
    }
    if (sys) {
        struct json_object *s = json_object_new_array();

        json_object_object_add(root, "system", s);
        if (!put_blocks(s, sys, why, why_len))
            return false;
    }
    return true;
}

static void put_inference(struct json_object *anth, struct json_object *root)
{
    static const struct {
        const char *from, *to;
    } map[] = {{"max_tokens", "maxTokens"},
               {"temperature", "temperature"},
               {"top_p", "topP"},
               {"stop_sequences", "stopSequences"}};
    struct json_object *ic = json_object_new_object();

    for (size_t i = 0; i < BSC_ARRAY_LEN(map); i++) {
        struct json_object *v = bsc_json_get(anth, map[i].from);

        if (v)
            json_object_object_add(ic, map[i].to, json_object_get(v));
    }
    json_object_object_add(root, "inferenceConfig", ic);
}

static struct json_object *tool_choice_of(struct json_object *tc)
{
    const char *type = bsc_json_get_str(tc, "type");
    struct json_object *o = json_object_new_object(), *inner = json_object_new_object();

    if (type && strcmp(type, "tool") == 0) {
        json_object_object_add(inner, "name",
                               json_object_new_string(bsc_json_get_str(tc, "name") ?: ""));
        json_object_object_add(o, "tool", inner);
    } else if (type && strcmp(type, "any") == 0) {
        json_object_object_add(o, "any", inner);
    } else if (type && strcmp(type, "auto") == 0) {
        json_object_object_add(o, "auto", inner);
    } else { /* "none": Converse has no such choice; the tools stay declared */
        json_object_put(inner);
        json_object_put(o);
        return NULL;
    }
    return o;
}

static void put_tools(struct json_object *anth, struct json_object *root)
{
    struct json_object *tools = bsc_json_get(anth, "tools"), *tc, *cfg, *list;

    if (!is_type(tools, json_type_array) || json_object_array_length(tools) == 0)
        return;
    cfg = json_object_new_object();
    list = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(tools); i++) {
        struct json_object *t = json_object_array_get_idx(tools, i);
        struct json_object *spec = json_object_new_object(), *schema = json_object_new_object();
        struct json_object *wrap = json_object_new_object(), *is = bsc_json_get(t, "input_schema");

        json_object_object_add(spec, "name",
                               json_object_new_string(bsc_json_get_str(t, "name") ?: ""));
        if (bsc_json_get_str(t, "description"))
            json_object_object_add(spec, "description",
                                   json_object_new_string(bsc_json_get_str(t, "description")));
        json_object_object_add(schema, "json", is ? json_object_get(is) : json_object_new_object());
        json_object_object_add(spec, "inputSchema", schema);
        json_object_object_add(wrap, "toolSpec", spec);
        json_object_array_add(list, wrap);
    }
    json_object_object_add(cfg, "tools", list);
    tc = tool_choice_of(bsc_json_get(anth, "tool_choice"));
    if (tc)
        json_object_object_add(cfg, "toolChoice", tc);
    json_object_object_add(root, "toolConfig", cfg);
}

struct json_object *prov__br_converse_request(struct json_object *anth, char *why, size_t why_len)
{
    struct json_object *root = json_object_new_object();

    if (bsc_json_get(anth, "thinking")) {
        snprintf(why, why_len, "extended thinking is not sent through Bedrock Converse");
        json_object_put(root);
        return NULL;
    }
    if (!put_messages(anth, root, why, why_len)) {
        json_object_put(root);
        return NULL;
    }
    put_inference(anth, root);
    put_tools(anth, root);
    return root;
}

/* ---- the answer ----------------------------------------------------------------------------- */

const char *prov__br_stop_reason(const char *stop)
{
    if (!stop)
        return "end_turn";
    if (strcmp(stop, "tool_use") == 0 || strcmp(stop, "max_tokens") == 0 ||
        strcmp(stop, "stop_sequence") == 0 || strcmp(stop, "end_turn") == 0)
        return stop;
    if (strcmp(stop, "guardrail_intervened") == 0 || strcmp(stop, "content_filtered") == 0)
        return "refusal";
    if (strcmp(stop, "model_context_window_exceeded") == 0)
        return "max_tokens";
    return "end_turn";
}

static void copy_count(struct json_object *from, const char *key, struct json_object *to,
                       const char *as)
{
    struct json_object *v = bsc_json_get(from, key);

    if (is_type(v, json_type_int))
        json_object_object_add(to, as, json_object_new_int64(json_object_get_int64(v)));
}

struct json_object *prov__br_anthropic_usage(struct json_object *u)
{
    struct json_object *a;

    if (!is_type(u, json_type_object))
        return NULL;
    a = json_object_new_object();
    copy_count(u, "inputTokens", a, "input_tokens");
    copy_count(u, "outputTokens", a, "output_tokens");
    copy_count(u, "cacheReadInputTokens", a, "cache_read_input_tokens");
    copy_count(u, "cacheWriteInputTokens", a, "cache_creation_input_tokens");
    return a;
}

static struct json_object *answer_block(struct json_object *b)
{
    struct json_object *o, *tu = bsc_json_get(b, "toolUse"), *text = bsc_json_get(b, "text");

    if (is_type(text, json_type_string)) {
        o = json_object_new_object();
        json_object_object_add(o, "type", json_object_new_string("text"));
        json_object_object_add(o, "text", json_object_get(text));
        return o;
    }
    if (is_type(tu, json_type_object)) {
        struct json_object *input = bsc_json_get(tu, "input");

        o = json_object_new_object();
        json_object_object_add(o, "type", json_object_new_string("tool_use"));
        json_object_object_add(o, "id",
                               json_object_new_string(bsc_json_get_str(tu, "toolUseId") ?: ""));
        json_object_object_add(o, "name",
                               json_object_new_string(bsc_json_get_str(tu, "name") ?: ""));
        json_object_object_add(o, "input",
                               input ? json_object_get(input) : json_object_new_object());
        return o;
    }
    return NULL; /* reasoningContent and newer blocks: not part of the answer's text */
}

struct json_object *prov__br_anthropic_answer(struct json_object *conv, const char *id,
                                              const char *model)
{
    struct json_object *msg = bsc_json_get(bsc_json_get(conv, "output"), "message");
    struct json_object *content = bsc_json_get(msg, "content"), *root, *blocks, *usage;

    if (!is_type(content, json_type_array))
        return NULL;
    root = json_object_new_object();
    blocks = json_object_new_array();
    json_object_object_add(root, "id", json_object_new_string(id));
    json_object_object_add(root, "type", json_object_new_string("message"));
    json_object_object_add(root, "role", json_object_new_string("assistant"));
    json_object_object_add(root, "model", json_object_new_string(model));
    for (size_t i = 0; i < json_object_array_length(content); i++) {
        struct json_object *b = answer_block(json_object_array_get_idx(content, i));

        if (b)
            json_object_array_add(blocks, b);
    }
    json_object_object_add(root, "content", blocks);
    json_object_object_add(
        root, "stop_reason",
        json_object_new_string(prov__br_stop_reason(bsc_json_get_str(conv, "stopReason"))));
    usage = prov__br_anthropic_usage(bsc_json_get(conv, "usage"));
    if (usage)
        json_object_object_add(root, "usage", usage);
    return root;
}
