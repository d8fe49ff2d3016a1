/* SPDX-License-Identifier: MIT */
/* json_get.h -- reading members of json-c trees that were never trusted: every lookup checks
 * the type it walks through, so a request or an answer of the wrong shape reads as absent
 * instead of crashing. Results are borrowed from <o>. */
#ifndef BSC_CORE_JSON_GET_H
#define BSC_CORE_JSON_GET_H

#include <json-c/json.h>

/* The member <key> of <o>; NULL when it is absent or <o> is NULL or not an object (a JSON
 * null member is returned as NULL too: json-c stores it as a NULL object). */
static inline struct json_object *bsc_json_get(struct json_object *o, const char *key)
{
    struct json_object *v = NULL;

    if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v))
        return NULL;
    return v;
}

/* The member <key> of <o> when it has type <t>, else NULL. */
static inline struct json_object *bsc_json_get_type(struct json_object *o, const char *key,
                                                    enum json_type t)
{
    struct json_object *v = bsc_json_get(o, key);

    return v && json_object_is_type(v, t) ? v : NULL;
}

/* Element <i> of <o>; NULL when <o> is NULL, not an array, or too short. (json-c's own
 * json_object_array_get_idx asserts that <o> is an array: an upstream answer without the
 * array it should have must not abort the gateway.) */
static inline struct json_object *bsc_json_idx(struct json_object *o, size_t i)
{
    if (!o || !json_object_is_type(o, json_type_array) || i >= json_object_array_length(o))
        return NULL;
    return json_object_array_get_idx(o, i);
}

/* The string member <key> of <o>, or NULL when it is absent or not a string. */
static inline const char *bsc_json_get_str(struct json_object *o, const char *key)
{
    struct json_object *v = bsc_json_get_type(o, key, json_type_string);

    return v ? json_object_get_string(v) : NULL;
}

#endif
