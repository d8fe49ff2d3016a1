/* SPDX-License-Identifier: MIT */
/* openai_errors.c -- classifies OpenAI-style error responses and stream error events into
 * enum fail_kind (docs/providers.md §1.7, §5, §6). The body is parsed with a bounded json-c
 * tokener and never trusted: any shape, size or encoding problem degrades to "classify by
 * status". Dialects are rows in the profile tables below. Does not decide what to do about
 * a failure (fail/taxonomy.c) nor read headers off the wire (it asks the caller's header
 * accessor for the ones it knows).
 * See docs/internals/taxonomy.md. */
#include "providers/openai_errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <json-c/json.h>

#include "core/compat.h"
#include "core/json_parse.h"
#include "core/str.h"
#include "providers/retry_after.h"
#include "fail/taxonomy.h"

/* Error bodies are small; a larger one is not worth parsing (it is classified by status). */
#define ERR_BODY_MAX 65536
#define ERR_JSON_DEPTH 16

/* ---- profiles: the dialects, as data ------------------------------------------------------ */

static const struct prov_err_rule deepseek_rules[] = {
    {402, NULL, NULL, FAIL_QUOTA_EXHAUSTED}, /* "Insufficient Balance" */
    {422, NULL, NULL, FAIL_INVALID_REQUEST}, /* "Invalid Parameters" */
    /* The same wording without its 402 (an error in a 200, a stream event, a proxy). */
    {0, NULL, "insufficient balance", FAIL_QUOTA_EXHAUSTED},
};

static const struct prov_err_rule mistral_rules[] = {
    /* The service tier is full, not our account's limit: capacity, fail over. */
    {429, NULL, "capacity exceeded", FAIL_OVERLOADED},
    {0, "service_tier_capacity_exceeded", NULL, FAIL_OVERLOADED},
};

static const struct prov_err_rule groq_rules[] = {
    /* One request above the key's TPM: a rate limit that waiting does not cure. */
    {413, NULL, "tokens per min", FAIL_RATE_LIMITED},
    {413, "rate_limit_exceeded", NULL, FAIL_RATE_LIMITED},
    {0, "capacity_exceeded", NULL, FAIL_OVERLOADED}, /* 498, flex tier full */
};

static const struct prov_err_rule openrouter_rules[] = {
    {403, NULL, "moderation", FAIL_CONTENT_POLICY},
    {403, NULL, "flagged", FAIL_CONTENT_POLICY},
    {402, NULL, NULL, FAIL_QUOTA_EXHAUSTED}, /* out of credits */
};

/* vLLM (docs/providers.md §5.4): the prompt-length refusal worded without "context". Chosen by
 * name only: a vLLM server has no well-known host. */
static const struct prov_err_rule vllm_rules[] = {
    {400, NULL, "is longer than the maximum model length", FAIL_CONTEXT_OVERFLOW},
};

/* Ollama (docs/providers.md §5.3): a model that is not pulled, a host without the memory to load
 * one (capacity: another target may have it). Chosen by name only, like vLLM. */
static const struct prov_err_rule ollama_rules[] = {
    {0, NULL, "try pulling it first", FAIL_NOT_FOUND},
    {500, NULL, "requires more system memory", FAIL_OVERLOADED},
};

/* Volcengine Ark, Doubao (docs/providers.md §5.8): {"error":{"code","message","param","type"}},
 * codes matched in any status (a 200 body or a stream event carries no 429 to go by). */
static const struct prov_err_rule doubao_rules[] = {
    {0, "RateLimitExceeded.*", NULL, FAIL_RATE_LIMITED}, /* EndpointRPMExceeded, ...TPM... */
    {0, "ServerOverloaded", NULL, FAIL_OVERLOADED},      /* a 429 that is capacity, not us */
    /* "closed or temporarily unavailable": the endpoint, not the request; fail over. */
    {0, "InvalidEndpoint.ClosedEndpoint", NULL, FAIL_OVERLOADED},
    {0, "AccountOverdueError", NULL, FAIL_QUOTA_EXHAUSTED}, /* 403, the account is in arrears */
    {0, "InputTextRiskDetection", NULL, FAIL_CONTENT_POLICY},
    {0, "OutputTextRiskDetection", NULL, FAIL_CONTENT_POLICY},
    {0, "InputImageRiskDetection", NULL, FAIL_CONTENT_POLICY},
    {0, "OutputImageRiskDetection", NULL, FAIL_CONTENT_POLICY},
    {0, "AuthenticationError", NULL, FAIL_AUTH},
    {0, "InvalidEndpointOrModel.NotFound", NULL, FAIL_NOT_FOUND},
    {0, "ModelNotOpen", NULL, FAIL_NOT_FOUND}, /* the model is not activated for the account */
};

/* Baidu Qianfan, ERNIE (docs/providers.md §5.9). Rate limits come INSIDE an HTTP 200 as
 * {"code":336501,"msg":...} or the legacy {"error_code":18,"error_msg":...}; integer codes
 * are matched as their decimal text. */
static const struct prov_err_rule ernie_rules[] = {
    {0, "336501", NULL, FAIL_RATE_LIMITED}, /* "Rate limit reached for RPM" */
    {0, "336502", NULL, FAIL_RATE_LIMITED}, /* "Rate limit reached for TPM" */
    {0, "rpm_rate_limit_exceeded", NULL, FAIL_RATE_LIMITED},
    {0, "tpm_rate_limit_exceeded", NULL, FAIL_RATE_LIMITED},
    {0, NULL, "rpm_rate_limit_exceeded", FAIL_RATE_LIMITED}, /* the v2 name as the message */
    {0, NULL, "tpm_rate_limit_exceeded", FAIL_RATE_LIMITED},
    {0, "18", NULL, FAIL_RATE_LIMITED},    /* legacy: "Open api qps request limit reached" */
    {0, "17", NULL, FAIL_QUOTA_EXHAUSTED}, /* legacy: daily limit, or paid API not enabled */
    {0, "4", NULL, FAIL_OVERLOADED},       /* legacy: the cluster is over its limit */
    {0, "2", NULL, FAIL_OVERLOADED},       /* legacy: "Service temporarily unavailable" */
    {0, "110", NULL, FAIL_AUTH},           /* legacy: access token invalid */
    {0, "111", NULL, FAIL_AUTH},           /* legacy: access token expired */
    {0, "tokens_too_long", NULL, FAIL_CONTEXT_OVERFLOW},
    {0, "characters_too_long", NULL, FAIL_CONTEXT_OVERFLOW},
    {0, "invalid_model", NULL, FAIL_NOT_FOUND}, /* we always send one: the operator's name */
    {0, NULL, "invalid_model", FAIL_NOT_FOUND},
};

#define PROFILE(nm, host, rules) {(nm), (host), (rules), BSC_ARRAY_LEN(rules)}
static const struct prov_openai_profile profiles[] = {
    {"openai", "api.openai.com", NULL, 0}, /* first: the default */
    PROFILE("deepseek", "api.deepseek.com", deepseek_rules),
    PROFILE("mistral", "api.mistral.ai", mistral_rules),
    PROFILE("groq", "api.groq.com", groq_rules),
    PROFILE("openrouter", "openrouter.ai", openrouter_rules),
    PROFILE("vllm", NULL, vllm_rules),
    PROFILE("ollama", NULL, ollama_rules),
    PROFILE("doubao", "ark.*.volces.com", doubao_rules),
    PROFILE("ernie", "qianfan.baidubce.com", ernie_rules),
};
#undef PROFILE

/* Overrides every dialect shares, tried after the profile's (docs/providers.md §6.5 step 3). */
static const struct prov_err_rule generic_rules[] = {
    {0, "insufficient_quota", NULL, FAIL_QUOTA_EXHAUSTED},
    {0, "billing_hard_limit_reached", NULL, FAIL_QUOTA_EXHAUSTED},
    {0, "billing_not_active", NULL, FAIL_QUOTA_EXHAUSTED},
    {0, "credit_balance_exhausted", NULL, FAIL_QUOTA_EXHAUSTED},
    {0, "organization_spend_limit_exceeded", NULL, FAIL_QUOTA_EXHAUSTED},
    {0, "project_spend_limit_exceeded", NULL, FAIL_QUOTA_EXHAUSTED},
    {0, "billing_error", NULL, FAIL_QUOTA_EXHAUSTED},
    {429, NULL, "exceeded your current quota", FAIL_QUOTA_EXHAUSTED},
    {0, "context_length_exceeded", NULL, FAIL_CONTEXT_OVERFLOW},
    {0, "content_policy_violation", NULL, FAIL_CONTENT_POLICY},
    {0, "content_filter", NULL, FAIL_CONTENT_POLICY},
    {0, "ResponsibleAIPolicyViolation", NULL, FAIL_CONTENT_POLICY},
    {0, "model_not_found", NULL, FAIL_NOT_FOUND},
    {0, "DeploymentNotFound", NULL, FAIL_NOT_FOUND},
    {0, "invalid_api_key", NULL, FAIL_AUTH},
};

/* Context-overflow wording (docs/providers.md §6.4); a row matches when both parts occur. */
static const struct {
    const char *a, *b;
} overflow_phrases[] = {
    {"maximum context length", NULL},
    {"prompt is too long", NULL},
    {"exceeds the maximum number of tokens allowed", NULL},
    {"input token count", "exceeds"},
    {"range of input length should be", NULL},
    {"exceed context limit", NULL},
    {"maximum context limit", NULL},
    {"is longer than the model's context length", NULL},
    {"input tokens exceed the configured limit", NULL},
    {"exceeds the available context size", NULL},
    {"current length is", "while limit is"},
    {"maximum input length is", NULL},
};

/* Parameter errors and TPM limits that use overflow-like words but are not overflow. */
static const char *const overflow_exclusions[] = {
    "string too long",
    "tokens per min",
    "rate limit",
};

/* Throttling and quota in any dialect's words, for an error in a 2xx that no table names
 * (DashScope-style {"code":"Throttling.RateQuota"} from an openai_compatible server). Read
 * in code, type and message; throttling before quota ("Throttling.RateQuota" is a rate). */
static const struct {
    const char *needle; /* lower case */
    enum fail_kind kind;
} hidden_words[] = {
    {"rate limit", FAIL_RATE_LIMITED}, {"ratelimit", FAIL_RATE_LIMITED},
    {"rate_limit", FAIL_RATE_LIMITED}, {"throttl", FAIL_RATE_LIMITED},
    {"qps", FAIL_RATE_LIMITED},        {"too many requests", FAIL_RATE_LIMITED},
    {"quota", FAIL_QUOTA_EXHAUSTED},
};

/* For errors without a usable status (hidden in a 200, stream events): code/type -> kind. */
static const struct {
    const char *code;
    enum fail_kind kind;
} code_kinds[] = {
    {"rate_limit_exceeded", FAIL_RATE_LIMITED},
    {"rate_limit_error", FAIL_RATE_LIMITED},
    {"rate_limited", FAIL_RATE_LIMITED},
    {"slow_down", FAIL_RATE_LIMITED},
    {"server_is_overloaded", FAIL_OVERLOADED},
    {"overloaded_error", FAIL_OVERLOADED},
    {"overloaded", FAIL_OVERLOADED},
    {"service_unavailable", FAIL_OVERLOADED},
    {"server_error", FAIL_SERVER_ERROR},
    {"api_error", FAIL_SERVER_ERROR},
    {"internal_error", FAIL_SERVER_ERROR},
    {"internal_server_error", FAIL_SERVER_ERROR},
    {"timeout_error", FAIL_TIMEOUT},
    {"timeout", FAIL_TIMEOUT},
    {"request_timeout", FAIL_TIMEOUT},
    {"invalid_request_error", FAIL_INVALID_REQUEST},
    {"BadRequestError", FAIL_INVALID_REQUEST},
    {"authentication_error", FAIL_AUTH},
    {"permission_error", FAIL_PERMISSION},
    {"permission_denied", FAIL_PERMISSION},
    {"not_found_error", FAIL_NOT_FOUND},
    {"NotFoundError", FAIL_NOT_FOUND},
};

const struct prov_openai_profile *prov_openai_profile_find(struct bsc_str name)
{
    for (size_t i = 0; i < BSC_ARRAY_LEN(profiles); i++) {
        if (bsc_str_ieq(name, bsc_str_cstr(profiles[i].name)))
            return &profiles[i];
    }
    return NULL;
}

/* The host part of a URL: after "scheme://" and any "userinfo@", before ':', '/', '?'. */
static struct bsc_str url_host(struct bsc_str url)
{
    const char *end = url.p + url.len, *p = url.p, *h;

    for (const char *q = url.p; q + 3 <= end; q++) {
        if (memcmp(q, "://", 3) == 0) {
            p = q + 3;
            break;
        }
    }
    h = p;
    for (const char *q = p; q < end && *q != '/' && *q != '?' && *q != '#'; q++) {
        if (*q == '@')
            h = q + 1;
    }
    p = h;
    while (p < end && *p != ':' && *p != '/' && *p != '?' && *p != '#')
        p++;
    return bsc_str_make(h, (size_t)(p - h));
}

/* <host> is <domain> or a subdomain of it. */
static bool host_in_domain(struct bsc_str host, struct bsc_str domain)
{
    struct bsc_str tail;

    if (host.len < domain.len)
        return false;
    tail = bsc_str_make(host.p + host.len - domain.len, domain.len);
    if (!bsc_str_ieq(tail, domain))
        return false;
    return host.len == domain.len || host.p[host.len - domain.len - 1] == '.';
}

/* <host> matches <pattern>: a domain (the host or a subdomain of it), or "a.*.b" where '*'
 * stands for exactly one non-empty label ("ark.*.volces.com": every Ark region). */
static bool host_matches(struct bsc_str host, const char *pattern)
{
    const char *star = strchr(pattern, '*');
    struct bsc_str pre, suf;

    if (!star)
        return host_in_domain(host, bsc_str_cstr(pattern));
    pre = bsc_str_make(pattern, (size_t)(star - pattern));
    suf = bsc_str_cstr(star + 1);
    if (host.len <= pre.len + suf.len)
        return false;
    if (!bsc_str_ieq(bsc_str_make(host.p, pre.len), pre) ||
        !bsc_str_ieq(bsc_str_make(host.p + host.len - suf.len, suf.len), suf))
        return false;
    return memchr(host.p + pre.len, '.', host.len - pre.len - suf.len) == NULL;
}

int64_t prov_err_retry_after(const struct prov_err_input *in)
{
    if (!in)
        return -1;
    return prov_parse_retry_after(prov_err_header(in, "retry-after"),
                                  prov_err_header(in, "retry-after-ms"), in->now_wall_ms);
}

const struct prov_openai_profile *prov_openai_profile_of(const struct prov_err_input *in)
{
    const struct prov_openai_profile *p = in->profile.len ? prov_openai_profile_find(in->profile)
                                                          : NULL;

    return p ? p : prov_openai_profile_for_url(in->base_url);
}

const struct prov_openai_profile *prov_openai_profile_for_url(struct bsc_str base_url)
{
    struct bsc_str host = url_host(base_url);

    for (size_t i = 0; host.len && i < BSC_ARRAY_LEN(profiles); i++) {
        if (profiles[i].host && host_matches(host, profiles[i].host))
            return &profiles[i];
    }
    return &profiles[0];
}

/* ---- the error object ---------------------------------------------------------------------- */

/* What was found in a body or event. Slices borrow from the json tree. */
struct err_fields {
    bool present;          /* an `error` object or string, or a flat {"object":"error"} */
    struct bsc_str code, type, message;
    char code_num[24];     /* an integer code as text; <code> then points here */
    int status_hint;       /* an integer or all-digit code in 400..599; 0 = none */
};

static bool is_2xx(int status)
{
    return status >= 200 && status <= 299;
}

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* <needle> (lower case, non-empty) occurs in <hay>, ASCII case-insensitively. */
static bool contains_icase(struct bsc_str hay, const char *needle)
{
    size_t n = strlen(needle);

    for (size_t i = 0; i + n <= hay.len; i++) {
        size_t k = 0;

        while (k < n && lower(hay.p[i + k]) == needle[k])
            k++;
        if (k == n)
            return true;
    }
    return false;
}

static struct bsc_str json_str(struct json_object *o)
{
    if (!o || !json_object_is_type(o, json_type_string))
        return BSC_STR_NULL;
    return bsc_str_make(json_object_get_string(o), (size_t)json_object_get_string_len(o));
}

static struct json_object *json_get(struct json_object *o, const char *key)
{
    struct json_object *v = NULL;

    if (!o || !json_object_is_type(o, json_type_object))
        return NULL;
    if (!json_object_object_get_ex(o, key, &v))
        return NULL;
    return v; /* NULL for a JSON null */
}

/* Parses at most ERR_BODY_MAX bytes of <s> as one JSON value; NULL when it is not JSON,
 * too big, too deep, or memory ran out. The caller puts the result. */
static struct json_object *parse_bounded(struct bsc_str s)
{
    if (s.len >= 3 && memcmp(s.p, "\xef\xbb\xbf", 3) == 0)
        s = bsc_str_make(s.p + 3, s.len - 3);
    /* DeepSeek sends blank lines while a request waits; skip all leading whitespace. */
    while (s.len && (s.p[0] == ' ' || s.p[0] == '\t' || s.p[0] == '\r' || s.p[0] == '\n'))
        s = bsc_str_make(s.p + 1, s.len - 1);
    if (s.len == 0 || s.len > ERR_BODY_MAX || (s.p[0] != '{' && s.p[0] != '['))
        return NULL;
    return bsc_json_parse_whole(s, ERR_JSON_DEPTH);
}

static int status_from_digits(struct bsc_str s)
{
    unsigned long long v;

    if (s.len == 0 || s.len > 3 || !bsc_str_to_u64(s, &v))
        return 0;
    return v >= 400 && v <= 599 ? (int)v : 0;
}

/* Reads code, type and message from the error object <e>. */
static void read_fields(struct json_object *e, struct err_fields *f)
{
    struct json_object *code = json_get(e, "code");

    if (!code)
        code = json_get(e, "error_code"); /* Baidu's legacy {"error_code","error_msg"} */
    f->type = json_str(json_get(e, "type"));
    f->message = json_str(json_get(e, "message"));
    if (f->message.len == 0)
        f->message = json_str(json_get(e, "detail")); /* FastAPI-based servers */
    if (f->message.len == 0)
        f->message = json_str(json_get(e, "msg")); /* Qianfan's {"code":336501,"msg"} */
    if (f->message.len == 0)
        f->message = json_str(json_get(e, "error_msg"));
    if (code && json_object_is_type(code, json_type_int)) {
        int64_t v = json_object_get_int64(code);

        snprintf(f->code_num, sizeof(f->code_num), "%lld", (long long)v);
        f->code = bsc_str_cstr(f->code_num);
        f->status_hint = v >= 400 && v <= 599 ? (int)v : 0;
    } else {
        f->code = json_str(code);
        f->status_hint = status_from_digits(f->code);
    }
}

/* Finds the error in <root>. With <top_level_ok> (an error status), a body without an
 * `error` key still lends its top-level message/code/type (DashScope-like shapes). */
static void find_error(struct json_object *root, bool top_level_ok, struct err_fields *f)
{
    struct json_object *err;

    memset(f, 0, sizeof(*f));
    if (root && json_object_is_type(root, json_type_array) &&
        json_object_array_length(root) > 0)
        root = json_object_array_get_idx(root, 0); /* Google-style [{"error":...}] */
    if (!root || !json_object_is_type(root, json_type_object))
        return;
    err = json_get(root, "error");
    if (err && json_object_is_type(err, json_type_object)) {
        f->present = true;
        read_fields(err, f);
    } else if (err && json_object_is_type(err, json_type_string)) {
        f->present = true;
        f->message = json_str(err);
    } else if (bsc_str_eq(json_str(json_get(root, "object")), BSC_STR("error"))) {
        f->present = true; /* vLLM's old flat shape */
        read_fields(root, f);
    } else if (top_level_ok) {
        read_fields(root, f);
    }
}

/* ---- the decision ---------------------------------------------------------------------------- */

static bool rule_matches(const struct prov_err_rule *r, int status, const struct err_fields *f)
{
    if (r->status && r->status != status)
        return false;
    if (r->code) {
        struct bsc_str c = bsc_str_cstr(r->code);

        if (c.len && c.p[c.len - 1] == '*') { /* a prefix: "RateLimitExceeded.*" */
            c.len--;
            if (!(f->code.len >= c.len && bsc_str_ieq(bsc_str_make(f->code.p, c.len), c)) &&
                !(f->type.len >= c.len && bsc_str_ieq(bsc_str_make(f->type.p, c.len), c)))
                return false;
        } else if (!bsc_str_ieq(f->code, c) && !bsc_str_ieq(f->type, c)) {
            return false;
        }
    }
    return !r->needle || contains_icase(f->message, r->needle);
}

static enum fail_kind match_rules(const struct prov_err_rule *rules, size_t n, int status,
                                  const struct err_fields *f)
{
    for (size_t i = 0; i < n; i++) {
        if (rule_matches(&rules[i], status, f))
            return rules[i].kind;
    }
    return FAIL_KIND_COUNT;
}

/* docs/providers.md §6.4: wording, never on a 429 or a 5xx, with LiteLLM's exclusions. */
static bool overflow_by_message(int status, const struct err_fields *f)
{
    if (status == 429 || status >= 500 || f->message.len == 0)
        return false;
    if (bsc_str_ieq(f->code, BSC_STR("string_above_max_length")))
        return false;
    for (size_t i = 0; i < BSC_ARRAY_LEN(overflow_exclusions); i++) {
        if (contains_icase(f->message, overflow_exclusions[i]))
            return false;
    }
    for (size_t i = 0; i < BSC_ARRAY_LEN(overflow_phrases); i++) {
        if (contains_icase(f->message, overflow_phrases[i].a) &&
            (!overflow_phrases[i].b || contains_icase(f->message, overflow_phrases[i].b)))
            return true;
    }
    return false;
}

static enum fail_kind kind_from_code(const struct err_fields *f)
{
    for (size_t i = 0; i < BSC_ARRAY_LEN(code_kinds); i++) {
        if (bsc_str_ieq(f->code, bsc_str_cstr(code_kinds[i].code)))
            return code_kinds[i].kind;
    }
    for (size_t i = 0; i < BSC_ARRAY_LEN(code_kinds); i++) {
        if (bsc_str_ieq(f->type, bsc_str_cstr(code_kinds[i].code)))
            return code_kinds[i].kind;
    }
    return FAIL_KIND_COUNT;
}

/* docs/providers.md §6.5 step 6: throttling or quota words in code, type or message. */
static enum fail_kind kind_from_words(const struct err_fields *f)
{
    for (size_t i = 0; i < BSC_ARRAY_LEN(hidden_words); i++) {
        if (contains_icase(f->code, hidden_words[i].needle) ||
            contains_icase(f->type, hidden_words[i].needle) ||
            contains_icase(f->message, hidden_words[i].needle))
            return hidden_words[i].kind;
    }
    return FAIL_KIND_COUNT;
}

static enum fail_kind decide(int status, const struct err_fields *f,
                             const struct prov_openai_profile *profile)
{
    int eff = status;
    enum fail_kind kind;

    /* In a 200 (or with no status) the error's own integer code is the real status. */
    if ((is_2xx(status) || status < 100) && f->status_hint)
        eff = f->status_hint;
    kind = match_rules(profile->rules, profile->n_rules, eff, f);
    if (kind != FAIL_KIND_COUNT)
        return kind;
    kind = match_rules(generic_rules, BSC_ARRAY_LEN(generic_rules), eff, f);
    if (kind != FAIL_KIND_COUNT)
        return kind;
    if (overflow_by_message(eff, f))
        return FAIL_CONTEXT_OVERFLOW;
    if (eff >= 100 && !is_2xx(eff))
        return fail_kind_from_status(eff);
    kind = kind_from_code(f);
    if (kind == FAIL_KIND_COUNT)
        kind = kind_from_words(f);
    return kind != FAIL_KIND_COUNT ? kind : FAIL_UNKNOWN;
}

static void copy_fields(const struct err_fields *f, struct fail_info *out)
{
    fail_copy_text(out->code, sizeof(out->code), f->code);
    fail_copy_text(out->type, sizeof(out->type), f->type);
    fail_copy_text(out->message, sizeof(out->message), f->message);
}

/* A message for logs when the body was not a JSON error: a note for HTML pages (CDN
 * error pages are long and useless), the text itself otherwise (Envoy, nginx, ...). */
static void describe_raw_body(const struct prov_err_input *in, struct fail_info *out)
{
    struct bsc_str body = bsc_str_trim(in->body);

    if (contains_icase(in->content_type, "html") || (body.len && body.p[0] == '<')) {
        fail_copy_text(out->message, sizeof(out->message),
                       BSC_STR("upstream returned an HTML error page"));
        return;
    }
    fail_copy_text(out->message, sizeof(out->message), body);
}

void prov_openai_classify_profile(const struct prov_err_input *in,
                                  const struct prov_openai_profile *profile,
                                  struct fail_info *out)
{
    bool hidden = is_2xx(in->status);
    struct json_object *root;
    struct err_fields f;

    if (!profile)
        profile = &profiles[0];
    fail_info_init(out);
    out->status = in->status;
    root = parse_bounded(in->body);
    find_error(root, !hidden, &f);
    if (hidden && !f.present) {
        json_object_put(root);
        return; /* a normal 2xx */
    }
    out->kind = decide(in->status, &f, profile);
    copy_fields(&f, out);
    if (!root && !hidden)
        describe_raw_body(in, out);
    out->retry_after_ms = prov_err_retry_after(in);
    if (out->retry_after_ms < 0)
        out->retry_after_ms = prov_parse_retry_hint_text(f.message);
    json_object_put(root);
}

void prov_openai_classify_malformed(const struct prov_err_input *in,
                                    const struct prov_openai_profile *profile,
                                    struct fail_info *out)
{
    struct json_object *root;
    struct err_fields f;

    if (!profile)
        profile = &profiles[0];
    fail_info_init(out);
    out->status = in->status;
    root = parse_bounded(in->body);
    find_error(root, true, &f); /* top-level code/msg too: there is no answer to confuse */
    out->kind = decide(in->status, &f, profile);
    if (out->kind == FAIL_NONE)
        out->kind = FAIL_UNKNOWN; /* never a success */
    copy_fields(&f, out);
    if (!out->message[0] && root)
        fail_copy_text(out->message, sizeof(out->message),
                       BSC_STR("the upstream answered 2xx without a completion"));
    else if (!root)
        describe_raw_body(in, out);
    out->retry_after_ms = prov_err_retry_after(in);
    if (out->retry_after_ms < 0)
        out->retry_after_ms = prov_parse_retry_hint_text(f.message);
    json_object_put(root);
}

void prov_openai_classify(const struct prov_err_input *in, struct fail_info *out)
{
    prov_openai_classify_profile(in, NULL, out);
}

/* A choice with finish_reason "error" (OpenRouter's terminal chunk). */
static bool has_error_finish(struct json_object *root)
{
    struct json_object *choices = json_get(root, "choices");
    size_t n;

    if (!choices || !json_object_is_type(choices, json_type_array))
        return false;
    n = json_object_array_length(choices);
    for (size_t i = 0; i < n; i++) {
        struct json_object *fr = json_get(json_object_array_get_idx(choices, i), "finish_reason");

        if (bsc_str_eq(json_str(fr), BSC_STR("error")))
            return true;
    }
    return false;
}

bool prov_openai_classify_event_profile(struct bsc_str data,
                                        const struct prov_openai_profile *profile,
                                        struct fail_info *out)
{
    struct json_object *root;
    struct err_fields f;
    bool finish_error;

    if (!profile)
        profile = &profiles[0];
    fail_info_init(out);
    root = parse_bounded(data); /* "[DONE]" and other non-objects come back NULL */
    if (!root || !json_object_is_type(root, json_type_object)) {
        json_object_put(root);
        return false;
    }
    find_error(root, false, &f);
    /* A payload that is no chunk at all but a top-level code (Qianfan's {"code":336501,
     * "msg"}, Baidu's {"error_code"}, DashScope's native {"code","message"}) is an error. */
    if (!f.present && !json_get(root, "choices") &&
        (json_get(root, "code") || json_get(root, "error_code"))) {
        find_error(root, true, &f);
        f.present = true;
    }
    finish_error = has_error_finish(root);
    if (!f.present && !finish_error) {
        json_object_put(root);
        return false;
    }
    out->status = 200;
    out->kind = f.present ? decide(200, &f, profile) : FAIL_SERVER_ERROR;
    if (out->kind == FAIL_UNKNOWN && finish_error)
        out->kind = FAIL_SERVER_ERROR; /* the upstream itself ended the stream in error */
    copy_fields(&f, out);
    if (!f.present)
        fail_copy_text(out->message, sizeof(out->message),
                       BSC_STR("the upstream ended the stream with finish_reason \"error\""));
    out->retry_after_ms = prov_parse_retry_hint_text(f.message);
    json_object_put(root);
    return true;
}

bool prov_openai_classify_event(struct bsc_str data, struct fail_info *out)
{
    return prov_openai_classify_event_profile(data, NULL, out);
}
