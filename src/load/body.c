/* SPDX-License-Identifier: MIT */
/* body.c -- the body `bascule load` sends, built once before the run: the operator's JSON
 * (or a one-line default prompt, short so that a run against paid providers stays cheap)
 * with the route as "model" and the stream switch of the command line, serialized
 * compactly. Every request of the run sends the same bytes. See body.h. */
#include <stdlib.h>
#include <string.h>

#include "core/json_get.h"
#include "core/json_parse.h"
#include "load/body.h"

#define LOAD_BODY_DEPTH 64

static const char default_body[] =
    "{\"messages\":[{\"role\":\"user\",\"content\":\"Reply with the single word: ok\"}]}";

/* Sets "stream" and stream_options.include_usage for a stream, removes both otherwise (a
 * file's stream:true without --stream would make the answers SSE the report did not ask
 * for). Returns false on ENOMEM. */
static bool set_stream(struct json_object *root, bool stream)
{
    struct json_object *opts;

    if (!stream) {
        json_object_object_del(root, "stream");
        json_object_object_del(root, "stream_options");
        return true;
    }
    if (json_object_object_add(root, "stream", json_object_new_boolean(1)) != 0)
        return false;
    opts = bsc_json_get_type(root, "stream_options", json_type_object);
    if (!opts) {
        opts = json_object_new_object();
        if (!opts || json_object_object_add(root, "stream_options", opts) != 0)
            return false;
    }
    return json_object_object_add(opts, "include_usage", json_object_new_boolean(1)) == 0;
}

enum bsc_err load_body_build(struct bsc_str base, const char *model, bool stream, char **out,
                             size_t *out_len, const char **why)
{
    struct json_object *root;
    const char *text;
    size_t len;
    enum bsc_err err = BSC_ENOMEM;

    if (!base.len)
        base = BSC_STR(default_body);
    root = bsc_json_parse_whole(base, LOAD_BODY_DEPTH);
    if (!root || !json_object_is_type(root, json_type_object)) {
        *why = root ? "not a JSON object" : "not valid JSON";
        json_object_put(root);
        return BSC_EPARSE;
    }
    if (json_object_object_add(root, "model", json_object_new_string(model)) != 0 ||
        !set_stream(root, stream))
        goto done;
    text = json_object_to_json_string_length(
        root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    if (!text || !(*out = bsc_str_dup(bsc_str_make(text, len))))
        goto done;
    *out_len = len;
    err = BSC_OK;
done:
    json_object_put(root);
    return err;
}
