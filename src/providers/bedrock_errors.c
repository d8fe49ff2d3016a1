/* SPDX-License-Identifier: MIT */
/* bedrock_errors.c -- Bedrock's exceptions in the taxonomy: the HTTP error's name (the
 * x-amzn-ErrorType header, else the body's "__type"/"code"), the in-stream :exception-type
 * of ConverseStream, and the message wording that tells a context overflow from another
 * ValidationException. A name not in the table falls to the status map. Pure.
 * See docs/providers.md "AWS Bedrock" and docs/internals/provider-bedrock-vertex.md. */
#include <string.h>
#include <strings.h>

#include "core/json_get.h"
#include "providers/bedrock.h"

#define BR_ERR_BODY_MAX 65536

static const struct {
    const char *name; /* without the "Exception" suffix, compared case-insensitively */
    enum fail_kind kind;
} br_exceptions[] = {
    {"Throttling", FAIL_RATE_LIMITED},
    {"TooManyRequests", FAIL_RATE_LIMITED},
    {"ServiceQuotaExceeded", FAIL_QUOTA_EXHAUSTED},
    {"ServiceUnavailable", FAIL_OVERLOADED},
    {"ModelNotReady", FAIL_OVERLOADED},
    {"ModelTimeout", FAIL_TIMEOUT},
    {"ModelStreamError", FAIL_SERVER_ERROR},
    {"ModelError", FAIL_SERVER_ERROR},
    {"InternalServer", FAIL_SERVER_ERROR},
    {"InternalFailure", FAIL_SERVER_ERROR},
    {"Validation", FAIL_INVALID_REQUEST},
    {"SerializationException", FAIL_INVALID_REQUEST},
    {"ResourceNotFound", FAIL_NOT_FOUND},
    {"AccessDenied", FAIL_PERMISSION},
    /* The signature or the credentials were refused: ours, not the client's. */
    {"UnrecognizedClient", FAIL_AUTH},
    {"InvalidSignature", FAIL_AUTH},
    {"IncompleteSignature", FAIL_AUTH},
    {"MissingAuthenticationToken", FAIL_AUTH},
    {"ExpiredToken", FAIL_AUTH},
    {"InvalidClientTokenId", FAIL_AUTH},
};

static const char *const overflow_phrases[] = {"too long", "too many input tokens",
                                               "exceeds the context", "context window",
                                               "maximum context length"};

static bool has_icase(struct bsc_str hay, const char *needle)
{
    size_t n = strlen(needle);

    for (size_t i = 0; n && i + n <= hay.len; i++)
        if (strncasecmp(hay.p + i, needle, n) == 0)
            return true;
    return false;
}

/* "ThrottlingException:http://internal.amazon.com/..." -> "Throttling" */
static struct bsc_str bare_name(struct bsc_str name)
{
    const char *colon = memchr(name.p, ':', name.len);

    if (colon)
        name.len = (size_t)(colon - name.p);
    if (name.len > 9 && strncasecmp(name.p + name.len - 9, "Exception", 9) == 0)
        name.len -= 9;
    return name;
}

enum fail_kind prov__br_exception_kind(struct bsc_str name, int status, struct bsc_str message)
{
    struct bsc_str bare = bare_name(name);

    (void)status;
    for (size_t i = 0; bare.len && i < BSC_ARRAY_LEN(br_exceptions); i++) {
        struct bsc_str n = bare_name(bsc_str_cstr(br_exceptions[i].name));

        if (n.len != bare.len || strncasecmp(n.p, bare.p, n.len) != 0)
            continue;
        if (br_exceptions[i].kind == FAIL_INVALID_REQUEST)
            for (size_t k = 0; k < BSC_ARRAY_LEN(overflow_phrases); k++)
                if (has_icase(message, overflow_phrases[k]))
                    return FAIL_CONTEXT_OVERFLOW;
        return br_exceptions[i].kind;
    }
    return FAIL_UNKNOWN;
}

/* The message of a Bedrock error body: "message", else "Message". */
static const char *body_message(struct json_object *root)
{
    const char *m = bsc_json_get_str(root, "message");

    return m ? m : bsc_json_get_str(root, "Message");
}

void prov__br_classify(const struct prov_err_input *in, struct fail_info *out)
{
    struct bsc_str name = prov_err_header(in, "x-amzn-ErrorType");
    struct json_object *root = NULL;
    const char *msg = NULL;
    enum fail_kind k;

    fail_info_init(out);
    if (in->status >= 200 && in->status < 300)
        return; /* Converse reports errors by status, never inside a 200 body */
    if (in->body.len <= BR_ERR_BODY_MAX)
        root = prov_parse_json(in->body);
    msg = body_message(root);
    if (!name.len) {
        const char *t = bsc_json_get_str(root, "__type");

        name = bsc_str_cstr(t ? t : bsc_json_get_str(root, "code") ?: "");
        if (name.len && memchr(name.p, '#', name.len)) { /* "com.amazon...#ThrottlingException" */
            const char *h = memchr(name.p, '#', name.len);

            name = bsc_str_make(h + 1, name.len - (size_t)(h + 1 - name.p));
        }
    }
    k = prov__br_exception_kind(name, in->status, bsc_str_cstr(msg ? msg : ""));
    out->kind = k != FAIL_UNKNOWN ? k : fail_kind_from_status(in->status);
    out->status = in->status;
    fail_copy_text(out->type, sizeof(out->type), bare_name(name));
    if (msg)
        fail_copy_text(out->message, sizeof(out->message), bsc_str_cstr(msg));
    json_object_put(root);
}
