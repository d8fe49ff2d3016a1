/* SPDX-License-Identifier: MIT */
/* test_classify_openai.c -- the OpenAI / openai_compatible error classifier, its profiles,
 * stream error events, and the retry-hint parsers (Retry-After, retry-after-ms, HTTP-date,
 * Go durations, "try again in" text). One table row per case. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"
#include "header_lines.h"
#include "providers/openai_errors.h"
#include "providers/provider.h"
#include "providers/retry_after.h"
#include "fail/taxonomy.h"

#define EXPECT_INT(ctx, got, want)                                                         \
    do {                                                                                   \
        long long g_ = (long long)(got), w_ = (long long)(want);                           \
        if (g_ != w_)                                                                      \
            fail_msg("%s: %s is %lld, want %lld", (ctx), #got, g_, w_);                    \
    } while (0)
#define EXPECT_KIND(ctx, got, want)                                                        \
    do {                                                                                   \
        enum fail_kind g_ = (got), w_ = (want);                                            \
        if (g_ != w_)                                                                      \
            fail_msg("%s: kind is %s, want %s", (ctx), fail_kind_name(g_), fail_kind_name(w_)); \
    } while (0)
#define EXPECT_STR(ctx, got, want)                                                         \
    do {                                                                                   \
        const char *g_ = (got), *w_ = (want);                                              \
        if (strcmp(g_, w_) != 0)                                                           \
            fail_msg("%s: %s is \"%s\", want \"%s\"", (ctx), #got, g_, w_);                \
    } while (0)
#define EXPECT_HAS(ctx, hay, needle)                                                       \
    do {                                                                                   \
        if (!strstr((hay), (needle)))                                                      \
            fail_msg("%s: \"%s\" lacks \"%s\"", (ctx), (hay), (needle));                   \
    } while (0)

/* Sun, 06 Nov 1994 08:49:00 GMT: 37 s before the RFC's example date. */
#define NOW_WALL 784111740000ull

static struct bsc_str s(const char *c)
{
    return bsc_str_cstr(c ? c : "");
}

/* ---- responses ------------------------------------------------------------------------------ */

struct resp_row {
    const char *name;
    const char *profile; /* NULL: plain OpenAI */
    int status;
    const char *body, *ctype, *ra, *ra_ms;
    enum fail_kind kind;
    int64_t retry_after_ms;
    const char *code;    /* expected out->code; NULL: not checked */
    const char *msg_has; /* expected in out->message; NULL: not checked */
};

static const struct resp_row resp_rows[] = {
    /* 429: the code decides, never the status alone */
    {"429 insufficient_quota", NULL, 429,
     "{\"error\":{\"message\":\"You exceeded your current quota, please check your plan and "
     "billing details.\",\"type\":\"insufficient_quota\",\"param\":null,\"code\":"
     "\"insufficient_quota\"}}",
     "application/json", NULL, NULL, FAIL_QUOTA_EXHAUSTED, -1, "insufficient_quota",
     "exceeded your current quota"},
    {"429 rate_limit_exceeded + Retry-After", NULL, 429,
     "{\"error\":{\"message\":\"Rate limit reached for gpt-4.1 on tokens per min (TPM): Limit "
     "30000, Used 29000, Requested 2000.\",\"type\":\"tokens\",\"param\":null,\"code\":"
     "\"rate_limit_exceeded\"}}",
     "application/json", "20", NULL, FAIL_RATE_LIMITED, 20000, "rate_limit_exceeded", NULL},
    {"429 hint in the message only", NULL, 429,
     "{\"error\":{\"message\":\"Rate limit reached for requests. Please try again in 1.5s. Visit "
     "https://platform.openai.com/account/rate-limits\",\"type\":\"requests\",\"code\":"
     "\"rate_limit_exceeded\"}}",
     NULL, NULL, NULL, FAIL_RATE_LIMITED, 1500, NULL, NULL},
    {"429 header beats message hint", NULL, 429,
     "{\"error\":{\"message\":\"Please try again in 1.5s.\",\"code\":\"rate_limit_exceeded\"}}",
     NULL, NULL, "250", FAIL_RATE_LIMITED, 250, NULL, NULL},
    {"429 billing code", NULL, 429,
     "{\"error\":{\"message\":\"Your credit balance is too low.\",\"type\":"
     "\"invalid_request_error\","
     "\"code\":\"credit_balance_exhausted\"}}",
     NULL, NULL, NULL, FAIL_QUOTA_EXHAUSTED, -1, "credit_balance_exhausted", NULL},
    {"429 quota wording without a code", NULL, 429,
     "{\"error\":{\"message\":\"You exceeded your current quota.\",\"type\":null,\"code\":null}}",
     NULL, NULL, NULL, FAIL_QUOTA_EXHAUSTED, -1, "", NULL},
    {"429 slow_down", NULL, 429,
     "{\"error\":{\"message\":\"Please reduce your rate of requests.\",\"type\":"
     "\"rate_limit_error\",\"code\":\"slow_down\"}}",
     NULL, NULL, NULL, FAIL_RATE_LIMITED, -1, "slow_down", NULL},
    {"429 TPM request too large is not overflow", NULL, 429,
     "{\"error\":{\"message\":\"Request too large for gpt-4 on tokens per min (TPM): Limit 10000, "
     "Requested 30000. The input or output tokens must be reduced; maximum context length "
     "applies.\",\"type\":\"tokens\",\"code\":\"rate_limit_exceeded\"}}",
     NULL, NULL, NULL, FAIL_RATE_LIMITED, -1, NULL, NULL},
    {"429 with overflow-like wording stays a rate limit", NULL, 429,
     "{\"error\":{\"message\":\"Too many requests at this model's maximum context length "
     "tier\"}}",
     NULL, NULL, NULL, FAIL_RATE_LIMITED, -1, NULL, NULL},
    {"5xx with overflow-like wording stays a server error", NULL, 500,
     "{\"error\":{\"message\":\"worker crashed: prompt is too long for the tokenizer "
     "buffer\"}}",
     NULL, NULL, NULL, FAIL_SERVER_ERROR, -1, NULL, NULL},
    {"429 empty body", NULL, 429, "", NULL, NULL, NULL, FAIL_RATE_LIMITED, -1, "", ""},

    /* 400 family */
    {"400 context_length_exceeded", NULL, 400,
     "{\"error\":{\"message\":\"This model's maximum context length is 128000 tokens. However, "
     "your messages resulted in 130000 tokens.\",\"type\":\"invalid_request_error\",\"param\":"
     "\"messages\",\"code\":\"context_length_exceeded\"}}",
     "application/json", NULL, NULL, FAIL_CONTEXT_OVERFLOW, -1, "context_length_exceeded",
     "maximum context length"},
    {"400 DeepSeek overflow by wording", NULL, 400,
     "{\"error\":{\"message\":\"This model's maximum context length is 131072 tokens. However, "
     "you requested 131134 tokens (122942 in the messages, 8192 in the completion). Please "
     "reduce the length of the messages or completion.\",\"type\":\"invalid_request_error\","
     "\"param\":null,\"code\":\"invalid_request_error\"}}",
     NULL, NULL, NULL, FAIL_CONTEXT_OVERFLOW, -1, "invalid_request_error", NULL},
    {"400 prompt is too long", NULL, 400,
     "{\"error\":{\"message\":\"prompt is too long: 210000 tokens > 200000 maximum\"}}", NULL,
     NULL, NULL, FAIL_CONTEXT_OVERFLOW, -1, NULL, NULL},
    {"400 Cerebras two-part wording", NULL, 400,
     "{\"error\":{\"message\":\"Please reduce the length: current length is 9000 while limit is "
     "8192\"}}",
     NULL, NULL, NULL, FAIL_CONTEXT_OVERFLOW, -1, NULL, NULL},
    {"400 string too long is a parameter error", NULL, 400,
     "{\"error\":{\"message\":\"Invalid 'messages[0].content': string too long. Expected a string "
     "with maximum length 1048576, but got a string with length 2000000 instead (maximum context "
     "length).\",\"type\":\"invalid_request_error\",\"param\":\"messages[0].content\",\"code\":"
     "\"string_above_max_length\"}}",
     NULL, NULL, NULL, FAIL_INVALID_REQUEST, -1, "string_above_max_length", NULL},
    {"400 content_policy_violation", NULL, 400,
     "{\"error\":{\"message\":\"Your request was rejected as a result of our safety system.\","
     "\"type\":\"invalid_request_error\",\"code\":\"content_policy_violation\"}}",
     NULL, NULL, NULL, FAIL_CONTENT_POLICY, -1, "content_policy_violation", "safety system"},
    {"400 azure content_filter", NULL, 400,
     "{\"error\":{\"message\":\"The response was filtered\",\"type\":null,\"code\":"
     "\"content_filter\",\"status\":400}}",
     NULL, NULL, NULL, FAIL_CONTENT_POLICY, -1, "content_filter", NULL},
    {"400 unsupported_parameter", NULL, 400,
     "{\"error\":{\"message\":\"Unsupported parameter: 'max_tokens'\",\"type\":"
     "\"invalid_request_error\",\"param\":\"max_tokens\",\"code\":\"unsupported_parameter\"}}",
     NULL, NULL, NULL, FAIL_INVALID_REQUEST, -1, "unsupported_parameter", "max_tokens"},
    {"400 model_not_found code", NULL, 400,
     "{\"error\":{\"message\":\"Model Not Exist\",\"code\":\"model_not_found\"}}", NULL, NULL,
     NULL, FAIL_NOT_FOUND, -1, NULL, NULL},
    {"422", NULL, 422, "{\"detail\":\"Invalid Parameters\"}", NULL, NULL, NULL,
     FAIL_INVALID_REQUEST, -1, "", "Invalid Parameters"},
    {"413", NULL, 413, "", NULL, NULL, NULL, FAIL_INVALID_REQUEST, -1, NULL, NULL},

    /* our credential, permissions, missing models */
    {"401 invalid_api_key", NULL, 401,
     "{\"error\":{\"message\":\"Incorrect API key provided: sk-abc***xyz.\",\"type\":"
     "\"invalid_request_error\",\"param\":null,\"code\":\"invalid_api_key\"}}",
     NULL, NULL, NULL, FAIL_AUTH, -1, "invalid_api_key", NULL},
    {"401 organization", NULL, 401,
     "{\"error\":{\"message\":\"You must be a member of an organization to use the API.\"}}", NULL,
     NULL, NULL, FAIL_AUTH, -1, NULL, NULL},
    {"403 region", NULL, 403,
     "{\"error\":{\"message\":\"Country, region, or territory not supported\",\"type\":"
     "\"request_forbidden\",\"code\":\"unsupported_country_region_territory\"}}",
     NULL, NULL, NULL, FAIL_PERMISSION, -1, "unsupported_country_region_territory", NULL},
    {"404 model_not_found", NULL, 404,
     "{\"error\":{\"message\":\"The model `gpt-9` does not exist or you do not have access to "
     "it.\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"model_not_found\"}}",
     NULL, NULL, NULL, FAIL_NOT_FOUND, -1, "model_not_found", "gpt-9"},
    {"404 bare error string", NULL, 404, "{\"error\":\"model 'llama9' not found\"}", NULL, NULL,
     NULL, FAIL_NOT_FOUND, -1, "", "llama9"},

    /* transient */
    {"408", NULL, 408, "", NULL, NULL, NULL, FAIL_TIMEOUT, -1, NULL, NULL},
    {"409", NULL, 409, "{\"error\":{\"message\":\"conflict\"}}", NULL, NULL, NULL,
     FAIL_SERVER_ERROR, -1, NULL, NULL},
    {"500", NULL, 500,
     "{\"error\":{\"message\":\"The server had an error while processing your request.\",\"type\":"
     "\"server_error\"}}",
     NULL, NULL, NULL, FAIL_SERVER_ERROR, -1, NULL, "server had an error"},
    {"502 HTML from a CDN", NULL, 502,
     "<html><head><title>502 Bad Gateway</title></head><body>cloudflare</body></html>",
     "text/html; charset=UTF-8", NULL, NULL, FAIL_SERVER_ERROR, -1, "", "HTML"},
    {"502 HTML without a content type", NULL, 502, "  <!DOCTYPE html><html></html>", NULL, NULL,
     NULL, FAIL_SERVER_ERROR, -1, NULL, "HTML"},
    {"503 overloaded + retry-after", NULL, 503,
     "{\"error\":{\"message\":\"That model is currently overloaded with other requests.\",\"type\":"
     "\"server_error\",\"code\":\"server_is_overloaded\"}}",
     NULL, "3", NULL, FAIL_OVERLOADED, 3000, "server_is_overloaded", NULL},
    {"503 plain text from a proxy", NULL, 503,
     "upstream connect error or disconnect/reset before headers", "text/plain", NULL, NULL,
     FAIL_OVERLOADED, -1, NULL, "upstream connect error"},
    {"504", NULL, 504, "", NULL, NULL, NULL, FAIL_TIMEOUT, -1, NULL, NULL},
    {"529", NULL, 529, "", NULL, NULL, NULL, FAIL_OVERLOADED, -1, NULL, NULL},
    {"507 other 5xx", NULL, 507, "", NULL, NULL, NULL, FAIL_SERVER_ERROR, -1, NULL, NULL},
    {"301 is not an error status we know", NULL, 301, "", NULL, NULL, NULL, FAIL_UNKNOWN, -1,
     NULL, NULL},

    /* errors hidden in a 200 */
    {"200 normal completion", NULL, 200,
     "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":"
     "{\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}",
     "application/json", NULL, NULL, FAIL_NONE, -1, "", ""},
    {"200 error null", NULL, 200, "{\"error\":null,\"choices\":[]}", NULL, NULL, NULL, FAIL_NONE,
     -1, "", ""},
    {"200 empty body", NULL, 200, "", NULL, NULL, NULL, FAIL_NONE, -1, "", ""},
    {"200 with server_error", NULL, 200,
     "{\"error\":{\"message\":\"Provider disconnected unexpectedly\",\"code\":\"server_error\"}}",
     NULL, NULL, NULL, FAIL_SERVER_ERROR, -1, "server_error", "disconnected"},
    {"200 with an integer code (OpenRouter)", NULL, 200,
     "{\"error\":{\"code\":429,\"message\":\"Rate limited upstream\",\"metadata\":{}}}", NULL, "7",
     NULL, FAIL_RATE_LIMITED, 7000, "429", NULL},
    {"200 with a digit-string code (Azure)", NULL, 200,
     "{\"error\":{\"code\":\"503\",\"message\":\"busy\"}}", NULL, NULL, NULL, FAIL_OVERLOADED, -1,
     "503", NULL},
    {"200 with insufficient_quota", NULL, 200,
     "{\"error\":{\"message\":\"quota\",\"type\":\"insufficient_quota\"}}", NULL, NULL, NULL,
     FAIL_QUOTA_EXHAUSTED, -1, NULL, NULL},
    {"200 with overflow wording", NULL, 200,
     "{\"error\":{\"message\":\"maximum context length is 4096 tokens\"}}", NULL, NULL, NULL,
     FAIL_CONTEXT_OVERFLOW, -1, NULL, NULL},
    {"200 with an unknown error", NULL, 200,
     "{\"error\":{\"message\":\"something odd\",\"type\":\"mystery\"}}", NULL, NULL, NULL,
     FAIL_UNKNOWN, -1, "", "something odd"},

    /* shapes */
    {"vLLM flat old shape", NULL, 400,
     "{\"object\":\"error\",\"message\":\"This model's maximum context length is 4096 tokens. "
     "However, you requested 5000 tokens\",\"type\":\"BadRequestError\",\"param\":null,\"code\":"
     "400}",
     NULL, NULL, NULL, FAIL_CONTEXT_OVERFLOW, -1, "400", NULL},
    {"vLLM flat old shape in a 200", NULL, 200,
     "{\"object\":\"error\",\"message\":\"The model `x` does not exist.\",\"type\":"
     "\"NotFoundError\",\"code\":404}",
     NULL, NULL, NULL, FAIL_NOT_FOUND, -1, "404", NULL},
    {"vLLM new 404", NULL, 404,
     "{\"error\":{\"message\":\"The model `x` does not exist.\",\"type\":\"NotFoundError\","
     "\"param\":null,\"code\":404}}",
     NULL, NULL, NULL, FAIL_NOT_FOUND, -1, "404", NULL},
    {"array form", NULL, 429,
     "[{\"error\":{\"code\":\"insufficient_quota\",\"message\":\"quota\"}}]", NULL, NULL, NULL,
     FAIL_QUOTA_EXHAUSTED, -1, "insufficient_quota", NULL},
    {"leading blank lines (DeepSeek waits)", NULL, 400,
     "\n\n\r\n  {\"error\":{\"message\":\"This model's maximum context length is 65536 tokens\"}}",
     NULL, NULL, NULL, FAIL_CONTEXT_OVERFLOW, -1, NULL, NULL},
    {"BOM", NULL, 429, "\xef\xbb\xbf{\"error\":{\"code\":\"insufficient_quota\"}}", NULL, NULL,
     NULL,
     FAIL_QUOTA_EXHAUSTED, -1, NULL, NULL},
    {"truncated JSON", NULL, 429, "{\"error\":{\"code\":\"insufficient_quota\",\"mess", NULL,
     NULL, NULL, FAIL_RATE_LIMITED, -1, "", NULL},
    {"wrong types are ignored", NULL, 400,
     "{\"error\":{\"message\":42,\"code\":[\"context_length_exceeded\"],\"type\":{}}}", NULL,
     NULL, NULL, FAIL_INVALID_REQUEST, -1, "", ""},
    {"top-level fields without error key", NULL, 500,
     "{\"code\":\"InternalError\",\"message\":\"oops\"}", NULL, NULL, NULL, FAIL_SERVER_ERROR, -1,
     "InternalError", "oops"},

    /* profiles */
    {"deepseek 402", "deepseek", 402,
     "{\"error\":{\"message\":\"Insufficient Balance\",\"type\":\"unknown_error\"}}", NULL, NULL,
     NULL, FAIL_QUOTA_EXHAUSTED, -1, NULL, "Insufficient Balance"},
    {"deepseek 422", "deepseek", 422, "{\"error\":{\"message\":\"Invalid Parameters\"}}", NULL,
     NULL, NULL, FAIL_INVALID_REQUEST, -1, NULL, NULL},
    {"deepseek 503", "deepseek", 503, "{\"error\":{\"message\":\"Server Overloaded\"}}", NULL,
     NULL, NULL, FAIL_OVERLOADED, -1, NULL, NULL},
    {"mistral capacity", "mistral", 429,
     "{\"object\":\"error\",\"message\":\"Service tier capacity exceeded for this model.\","
     "\"type\":\"service_tier_capacity_exceeded\",\"code\":\"3505\"}",
     NULL, NULL, NULL, FAIL_OVERLOADED, -1, "3505", NULL},
    {"same body, plain openai", NULL, 429,
     "{\"object\":\"error\",\"message\":\"Service tier capacity exceeded for this model.\","
     "\"type\":\"service_tier_capacity_exceeded\",\"code\":\"3505\"}",
     NULL, NULL, NULL, FAIL_RATE_LIMITED, -1, NULL, NULL},
    {"groq 413 TPM", "groq", 413,
     "{\"error\":{\"message\":\"Request too large for model `llama` on tokens per minute (TPM): "
     "Limit 6000, Requested 9000\",\"type\":\"tokens\",\"code\":\"rate_limit_exceeded\"}}",
     NULL, NULL, NULL, FAIL_RATE_LIMITED, -1, NULL, NULL},
    {"same 413 body, plain openai", NULL, 413,
     "{\"error\":{\"message\":\"Request too large for model `llama` on tokens per minute (TPM): "
     "Limit 6000, Requested 9000\",\"type\":\"tokens\"}}",
     NULL, NULL, NULL, FAIL_INVALID_REQUEST, -1, NULL, NULL},
    {"groq 498", "groq", 498,
     "{\"error\":{\"message\":\"flex tier at capacity\",\"code\":\"capacity_exceeded\"}}", NULL,
     NULL, NULL, FAIL_OVERLOADED, -1, NULL, NULL},
    {"openrouter 403 moderation", "openrouter", 403,
     "{\"error\":{\"code\":403,\"message\":\"Input flagged by moderation\",\"metadata\":{"
     "\"reasons\":[\"violence\"]}}}",
     NULL, NULL, NULL, FAIL_CONTENT_POLICY, -1, "403", NULL},
    {"openrouter 403 otherwise", "openrouter", 403,
     "{\"error\":{\"code\":403,\"message\":\"Key not allowed\"}}", NULL, NULL, NULL,
     FAIL_PERMISSION, -1, NULL, NULL},
    {"openrouter 402", "openrouter", 402,
     "{\"error\":{\"code\":402,\"message\":\"Insufficient credits\"}}", NULL, NULL, NULL,
     FAIL_QUOTA_EXHAUSTED, -1, NULL, NULL},
    {"deepseek balance in a 200", "deepseek", 200,
     "{\"error\":{\"message\":\"Insufficient Balance\",\"type\":\"unknown_error\"}}", NULL,
     NULL, NULL, FAIL_QUOTA_EXHAUSTED, -1, NULL, NULL},
    {"mistral capacity type in a 200", "mistral", 200,
     "{\"error\":{\"message\":\"busy\",\"type\":\"service_tier_capacity_exceeded\"}}", NULL,
     NULL, NULL, FAIL_OVERLOADED, -1, NULL, NULL},
    {"vllm prompt longer than the model", "vllm", 400,
     "{\"object\":\"error\",\"message\":\"The decoder prompt (length 9000) is longer than the "
     "maximum model length of 8192.\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}",
     NULL, NULL, NULL, FAIL_CONTEXT_OVERFLOW, -1, "400", NULL},
    {"same vllm body, plain openai", NULL, 400,
     "{\"object\":\"error\",\"message\":\"The decoder prompt (length 9000) is longer than the "
     "maximum model length of 8192.\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}",
     NULL, NULL, NULL, FAIL_INVALID_REQUEST, -1, NULL, NULL},
    {"ollama model not pulled", "ollama", 404,
     "{\"error\":{\"message\":\"model \\\"llama3\\\" not found, try pulling it first\",\"type\":"
     "\"not_found_error\",\"param\":null,\"code\":null}}",
     NULL, NULL, NULL, FAIL_NOT_FOUND, -1, NULL, "try pulling"},
    {"ollama out of memory", "ollama", 500,
     "{\"error\":{\"message\":\"model requires more system memory (12.0 GiB) than is available "
     "(7.5 GiB)\",\"type\":\"api_error\",\"param\":null,\"code\":null}}",
     NULL, NULL, NULL, FAIL_OVERLOADED, -1, NULL, NULL},
    {"same ollama body, plain openai", NULL, 500,
     "{\"error\":{\"message\":\"model requires more system memory (12.0 GiB) than is available "
     "(7.5 GiB)\",\"type\":\"api_error\",\"param\":null,\"code\":null}}",
     NULL, NULL, NULL, FAIL_SERVER_ERROR, -1, NULL, NULL},

    /* Volcengine Ark (doubao) */
    {"ark 429 RPM", "doubao", 429,
     "{\"error\":{\"code\":\"RateLimitExceeded.EndpointRPMExceeded\",\"message\":\"The request "
     "has exceeded the RPM limit of the endpoint.\",\"param\":\"\",\"type\":\"TooManyRequests\"}}",
     NULL, NULL, NULL, FAIL_RATE_LIMITED, -1, "RateLimitExceeded.EndpointRPMExceeded", NULL},
    {"ark 429 TPM", "doubao", 429,
     "{\"error\":{\"code\":\"RateLimitExceeded.EndpointTPMExceeded\",\"message\":\"TPM\","
     "\"type\":\"TooManyRequests\"}}",
     NULL, NULL, NULL, FAIL_RATE_LIMITED, -1, NULL, NULL},
    {"ark TPM code in a 200", "doubao", 200,
     "{\"error\":{\"code\":\"RateLimitExceeded.EndpointTPMExceeded\",\"message\":\"x\"}}",
     NULL, NULL, NULL, FAIL_RATE_LIMITED, -1, NULL, NULL},
    {"ark 429 ServerOverloaded", "doubao", 429,
     "{\"error\":{\"code\":\"ServerOverloaded\",\"message\":\"The service is currently unable "
     "to handle additional requests due to server overload.\",\"type\":\"TooManyRequests\"}}",
     NULL, NULL, NULL, FAIL_OVERLOADED, -1, NULL, NULL},
    {"same overload body, plain openai", NULL, 429,
     "{\"error\":{\"code\":\"ServerOverloaded\",\"message\":\"overload\"}}", NULL, NULL,
     NULL, FAIL_RATE_LIMITED, -1, NULL, NULL},
    {"ark 400 closed endpoint", "doubao", 400,
     "{\"error\":{\"code\":\"InvalidEndpoint.ClosedEndpoint\",\"message\":\"The request "
     "targeted an endpoint that is currently closed or temporarily unavailable.\",\"param\":"
     "\"\",\"type\":\"BadRequest\"}}",
     NULL, NULL, NULL, FAIL_OVERLOADED, -1, NULL, NULL},
    {"same closed endpoint, plain openai", NULL, 400,
     "{\"error\":{\"code\":\"InvalidEndpoint.ClosedEndpoint\",\"message\":\"closed\"}}",
     NULL, NULL, NULL, FAIL_INVALID_REQUEST, -1, NULL, NULL},
    {"ark 403 account overdue", "doubao", 403,
     "{\"error\":{\"code\":\"AccountOverdueError\",\"message\":\"The request failed because "
     "your account has an overdue balance.\",\"type\":\"Forbidden\"}}",
     NULL, NULL, NULL, FAIL_QUOTA_EXHAUSTED, -1, NULL, NULL},
    {"ark 400 input text risk", "doubao", 400,
     "{\"error\":{\"code\":\"InputTextRiskDetection\",\"message\":\"The request could not be "
     "processed because the input text includes sensitive content.\",\"type\":\"BadRequest\"}}",
     NULL, NULL, NULL, FAIL_CONTENT_POLICY, -1, NULL, "sensitive content"},
    {"ark 400 output text risk", "doubao", 400,
     "{\"error\":{\"code\":\"OutputTextRiskDetection\",\"message\":\"m\",\"type\":"
     "\"BadRequest\"}}",
     NULL, NULL, NULL, FAIL_CONTENT_POLICY, -1, NULL, NULL},
    {"ark 400 input image risk", "doubao", 400,
     "{\"error\":{\"code\":\"InputImageRiskDetection\",\"message\":\"m\",\"type\":"
     "\"BadRequest\"}}",
     NULL, NULL, NULL, FAIL_CONTENT_POLICY, -1, NULL, NULL},
    {"ark 401", "doubao", 401,
     "{\"error\":{\"code\":\"AuthenticationError\",\"message\":\"The API key or AK/SK in the "
     "request is missing or invalid.\",\"type\":\"Unauthorized\"}}",
     NULL, NULL, NULL, FAIL_AUTH, -1, NULL, NULL},
    {"ark 404", "doubao", 404,
     "{\"error\":{\"code\":\"InvalidEndpointOrModel.NotFound\",\"message\":\"The model or "
     "endpoint ep-1 does not exist or you do not have access to it.\",\"type\":\"NotFound\"}}",
     NULL, NULL, NULL, FAIL_NOT_FOUND, -1, NULL, NULL},

    /* Baidu Qianfan (ernie): rate limits inside a 200 */
    {"qianfan RPM in a 200 (v1 shape, error key)", "ernie", 200,
     "{\"error\":{\"code\":336501,\"message\":\"Rate limit reached for RPM\"}}", NULL, NULL,
     NULL, FAIL_RATE_LIMITED, -1, "336501", NULL},
    {"qianfan v2 429 rpm", "ernie", 429,
     "{\"error\":{\"code\":\"rpm_rate_limit_exceeded\",\"message\":\"Rate limit reached for "
     "RPM\",\"type\":\"rate_limit_exceeded\"}}",
     NULL, NULL, NULL, FAIL_RATE_LIMITED, -1, NULL, NULL},
    {"qianfan v2 tpm in a 200", "ernie", 200,
     "{\"error\":{\"code\":\"tpm_rate_limit_exceeded\",\"message\":\"m\",\"type\":\"x\"}}",
     NULL, NULL, NULL, FAIL_RATE_LIMITED, -1, NULL, NULL},
    {"qianfan v2 tokens_too_long", "ernie", 400,
     "{\"error\":{\"code\":\"tokens_too_long\",\"message\":\"the max input tokens is 8000\","
     "\"type\":\"invalid_request_error\"}}",
     NULL, NULL, NULL, FAIL_CONTEXT_OVERFLOW, -1, NULL, NULL},
    {"qianfan v2 characters_too_long", "ernie", 400,
     "{\"error\":{\"code\":\"characters_too_long\",\"message\":\"the max input characters is "
     "20000\",\"type\":\"invalid_request_error\"}}",
     NULL, NULL, NULL, FAIL_CONTEXT_OVERFLOW, -1, NULL, NULL},
    {"qianfan v2 invalid_model", "ernie", 400,
     "{\"error\":{\"code\":\"invalid_model\",\"message\":\"model is empty\",\"type\":"
     "\"invalid_request_error\"}}",
     NULL, NULL, NULL, FAIL_NOT_FOUND, -1, NULL, NULL},
    {"qianfan legacy 400 qps", "ernie", 400,
     "{\"error_code\":18,\"error_msg\":\"Open api qps request limit reached\"}", NULL, NULL, NULL,
     FAIL_RATE_LIMITED, -1, "18", "qps request limit"},

    /* retry hints */
    {"Retry-After HTTP-date", NULL, 429, "", NULL, "Sun, 06 Nov 1994 08:49:37 GMT", NULL,
     FAIL_RATE_LIMITED, 37000, NULL, NULL},
    {"Retry-After HTTP-date in the past", NULL, 503, "", NULL, "Sun, 06 Nov 1994 08:00:00 GMT",
     NULL, FAIL_OVERLOADED, 0, NULL, NULL},
    {"retry-after-ms wins, fraction rounds up", NULL, 429, "", NULL, "10", "1500.5",
     FAIL_RATE_LIMITED, 1501, NULL, NULL},
    {"bogus retry-after-ms falls back", NULL, 429, "", NULL, "2", "soon", FAIL_RATE_LIMITED,
     2000, NULL, NULL},
    {"garbage in both", NULL, 429, "", NULL, "tomorrow", "-5", FAIL_RATE_LIMITED, -1, NULL, NULL},
    {"negative Retry-After", NULL, 429, "", NULL, "-5", NULL, FAIL_RATE_LIMITED, -1, NULL, NULL},
    {"exponent Retry-After", NULL, 429, "", NULL, "1e3", NULL, FAIL_RATE_LIMITED, -1, NULL,
     NULL},
    {"fractional Retry-After", NULL, 429, "", NULL, " 0.25 ", NULL, FAIL_RATE_LIMITED, 250,
     NULL, NULL},
    {"huge Retry-After is capped at 24 h", NULL, 429, "", NULL, "99999999999999999999999",
     NULL, FAIL_RATE_LIMITED, 86400000, NULL, NULL},
    /* One strict parser (core/json_parse.c): bytes after the JSON, or a spelling strict
     * JSON refuses, make the body unreadable; the status alone decides. */
    {"429 quota body with bytes after it", NULL, 429,
     "{\"error\":{\"code\":\"insufficient_quota\",\"message\":\"q\"}} <html>", NULL, NULL,
     NULL, FAIL_RATE_LIMITED, -1, "", NULL},
    {"429 quota body with a trailing comma", NULL, 429,
     "{\"error\":{\"code\":\"insufficient_quota\",\"message\":\"q\",}}", NULL, NULL, NULL,
     FAIL_RATE_LIMITED, -1, "", NULL},
};

static void test_classify_responses(void **state)
{
    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(resp_rows); i++) {
        const struct resp_row *r = &resp_rows[i];
        const struct prov_openai_profile *prof = NULL;
        struct test_headers h = test_retry_headers(r->ra, r->ra_ms);
        struct prov_err_input in = {
            .status = r->status,
            .body = s(r->body),
            .content_type = s(r->ctype),
            .header = test_header,
            .header_ctx = &h,
            .now_wall_ms = NOW_WALL,
        };
        struct fail_info out;

        if (r->profile) {
            prof = prov_openai_profile_find(s(r->profile));
            assert_non_null(prof);
        }
        memset(&out, 0x6b, sizeof(out));
        prov_openai_classify_profile(&in, prof, &out);
        EXPECT_KIND(r->name, out.kind, r->kind);
        EXPECT_INT(r->name, out.status, r->status);
        EXPECT_INT(r->name, out.retry_after_ms, r->retry_after_ms);
        EXPECT_INT(r->name, out.transport, FT_OK);
        if (r->code)
            EXPECT_STR(r->name, out.code, r->code);
        if (r->msg_has)
            EXPECT_HAS(r->name, out.message, r->msg_has);
        if (r->msg_has && !r->msg_has[0])
            EXPECT_STR(r->name, out.message, "");
    }
}

/* ---- 2xx answers without their answer (prov_openai_classify_malformed) -------------------- */

static const struct {
    const char *name, *profile, *body;
    enum fail_kind kind;
    const char *code, *msg_has;
} malformed_rows[] = {
    {"qianfan RPM", "ernie", "{\"code\":336501,\"msg\":\"Rate limit reached for RPM\"}",
     FAIL_RATE_LIMITED, "336501", "RPM"},
    {"qianfan TPM", "ernie", "{\"code\":336502,\"msg\":\"Rate limit reached for TPM\"}",
     FAIL_RATE_LIMITED, "336502", NULL},
    {"qianfan RPM without the profile: wording", NULL,
     "{\"code\":336501,\"msg\":\"Rate limit reached for RPM\"}", FAIL_RATE_LIMITED, NULL, NULL},
    {"qianfan newer string code", "ernie",
     "{\"code\":\"rpm_rate_limit_exceeded\",\"message\":\"Rate limit reached for RPM\"}",
     FAIL_RATE_LIMITED, NULL, NULL},
    {"qianfan tpm string code", "ernie", "{\"code\":\"tpm_rate_limit_exceeded\",\"message\":\"x\"}",
     FAIL_RATE_LIMITED, NULL, NULL},
    {"legacy qps", "ernie",
     "{\"error_code\":18,\"error_msg\":\"Open api qps request limit reached\"}",
     FAIL_RATE_LIMITED, "18", "qps"},
    {"legacy daily", "ernie",
     "{\"error_code\":17,\"error_msg\":\"Open api daily request limit reached\"}",
     FAIL_QUOTA_EXHAUSTED, "17", NULL},
    {"legacy RPM code", "ernie",
     "{\"error_code\":336501,\"error_msg\":\"Rate limit reached for RPM\"}",
     FAIL_RATE_LIMITED, NULL, NULL},
    {"legacy TPM code", "ernie", "{\"error_code\":336502,\"error_msg\":\"x\"}", FAIL_RATE_LIMITED,
     NULL, NULL},
    {"legacy token invalid", "ernie",
     "{\"error_code\":110,\"error_msg\":\"Access token invalid or no longer valid\"}", FAIL_AUTH,
     NULL, NULL},
    {"dashscope-style throttle, plain openai", NULL,
     "{\"code\":\"Throttling.RateQuota\",\"message\":\"Requests rate limit exceeded, please try "
     "again later.\",\"request_id\":\"r1\"}",
     FAIL_RATE_LIMITED, "Throttling.RateQuota", "rate limit"},
    {"quota wording", NULL, "{\"code\":\"X\",\"message\":\"Free quota used up\"}",
     FAIL_QUOTA_EXHAUSTED, NULL, NULL},
    {"ark overload code in a 200", "doubao",
     "{\"error\":{\"code\":\"ServerOverloaded\",\"message\":\"busy\"}}", FAIL_OVERLOADED, NULL,
     NULL},
    {"ark risk code in a 200", "doubao",
     "{\"error\":{\"code\":\"OutputTextRiskDetection\",\"message\":\"m\"}}",
     FAIL_CONTENT_POLICY, NULL, NULL},
    {"an object without choices", NULL, "{\"id\":\"x\",\"object\":\"chat.completion\"}",
     FAIL_UNKNOWN, NULL, "without a completion"},
    {"empty object", NULL, "{}", FAIL_UNKNOWN, NULL, NULL},
    {"not JSON", NULL, "upstream says hi", FAIL_UNKNOWN, NULL, "upstream says hi"},
    {"an unknown code", NULL, "{\"code\":\"Weird\",\"message\":\"odd\"}", FAIL_UNKNOWN, NULL,
     "odd"},
    {"integer status code", NULL, "{\"code\":503,\"message\":\"later\"}", FAIL_OVERLOADED, NULL,
     NULL},
};

static void test_classify_malformed(void **state)
{
    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(malformed_rows); i++) {
        struct prov_err_input in = {.status = 200, .body = s(malformed_rows[i].body)};
        const struct prov_openai_profile *prof =
            malformed_rows[i].profile ? prov_openai_profile_find(s(malformed_rows[i].profile))
                                      : NULL;
        struct fail_info out;

        memset(&out, 0x5a, sizeof(out));
        prov_openai_classify_malformed(&in, prof, &out);
        EXPECT_KIND(malformed_rows[i].name, out.kind, malformed_rows[i].kind);
        EXPECT_INT(malformed_rows[i].name, out.status, 200);
        if (malformed_rows[i].code)
            EXPECT_STR(malformed_rows[i].name, out.code, malformed_rows[i].code);
        if (malformed_rows[i].msg_has)
            EXPECT_HAS(malformed_rows[i].name, out.message, malformed_rows[i].msg_has);
    }
}

/* The adapter hooks: a 2xx without `choices` (chat) or `data` (embeddings) fails, with the
 * profile picked from the provider; well-formed answers pass. */
static void test_map_response_shape(void **state)
{
    (void)state;
    struct cfg_provider prov = {.base_url = "https://qianfan.baidubce.com/v2"};
    struct cfg_target tgt = {.model = "ernie-4.0"};
    struct prov_call call = {.op = PROV_OP_CHAT, .provider = &prov, .target = &tgt};
    const struct prov_ops *ops = prov_ops_for(CFG_PROV_OPENAI_COMPATIBLE);
    struct prov_usage u;
    struct fail_info f;
    struct bsc_buf out;

    bsc_buf_init(&out, 1 << 16);
    assert_int_equal(ops->map_response(&call, BSC_STR("{\"code\":336501,\"msg\":\"Rate limit "
                                                      "reached for RPM\"}"),
                                       &out, &u, &f),
                     BSC_EPARSE);
    assert_int_equal(f.kind, FAIL_RATE_LIMITED);
    assert_int_equal(ops->map_response(&call, BSC_STR("{\"error_code\":17,\"error_msg\":\"Open "
                                                      "api daily request limit reached\"}"),
                                       &out, &u, &f),
                     BSC_EPARSE);
    assert_int_equal(f.kind, FAIL_QUOTA_EXHAUSTED);
    fail_info_init(&f);
    assert_int_equal(ops->map_response(&call, BSC_STR("{\"id\":\"a\",\"choices\":[{\"index\":0,"
                                                      "\"message\":{\"role\":\"assistant\","
                                                      "\"content\":\"hi\"}}],\"usage\":{"
                                                      "\"prompt_tokens\":3,"
                                                      "\"completion_tokens\":1}}"),
                                       &out, &u, &f),
                     BSC_OK);
    assert_int_equal(f.kind, FAIL_NONE);
    assert_int_equal(u.input_tokens, 3);
    /* "choices" that is not an array, or only inside another member, is no answer */
    assert_int_equal(ops->map_response(&call, BSC_STR("{\"x\":{\"choices\":[]},\"choices\":null}"),
                                       &out, &u, &f),
                     BSC_EPARSE);
    assert_int_equal(f.kind, FAIL_UNKNOWN);
    call.op = PROV_OP_EMBEDDINGS;
    assert_int_equal(ops->map_response(&call, BSC_STR("{\"object\":\"list\",\"data\":[]}"), &out,
                                       &u, &f),
                     BSC_OK);
    assert_int_equal(ops->map_response(&call, BSC_STR("{\"code\":\"Throttling\",\"message\":"
                                                      "\"Requests throttling triggered.\"}"),
                                       &out, &u, &f),
                     BSC_EPARSE);
    assert_int_equal(f.kind, FAIL_RATE_LIMITED);
    bsc_buf_cleanup(&out);
}

/* The usage chunk is told by "usage":{ or "usage": { anywhere in the text (a "usage": that
 * is not an object, even inside a string, does not count), and is held back when the
 * client did not ask for it; a chunk with a raw line break is relayed on one line. */
static void test_stream_usage_and_one_line(void **state)
{
    (void)state;
    struct cfg_provider prov = {.base_url = "http://127.0.0.1:9/v1"};
    struct cfg_target tgt = {.model = "m"};
    struct prov_call call = {.op = PROV_OP_CHAT, .provider = &prov, .target = &tgt,
                             .stream = true, .include_usage = false};
    const struct prov_ops *ops = prov_ops_for(CFG_PROV_OPENAI_COMPATIBLE);
    unsigned char st[512] __attribute__((aligned(16)));
    struct prov_usage u;
    struct fail_info f;
    struct bsc_buf out;
    size_t len;

    bsc_buf_init(&out, 1 << 16);
    memset(st, 0, sizeof(st));
    ops->stream_init(st, &call);
    assert_int_equal(ops->stream_event(st, BSC_STR_NULL,
                                       BSC_STR("{\"id\":\"c\",\r\n\"choices\":[{\"index\":0,"
                                               "\"delta\":{\"content\":\"a\"}}]}"),
                                       &out, &f),
                     PROV_STREAM_MORE);
    assert_string_equal(out.p, "data: {\"id\":\"c\",  \"choices\":[{\"index\":0,"
                               "\"delta\":{\"content\":\"a\"}}]}\n\n");
    len = out.len;
    assert_int_equal(ops->stream_event(st, BSC_STR_NULL,
                                       BSC_STR("{\"id\":\"c\",\"note\":\"\\\"usage\\\":1\","
                                               "\"choices\":[],\"usage\": "
                                               "{\"prompt_tokens\":3,\"completion_tokens\":4}}"),
                                       &out, &f),
                     PROV_STREAM_MORE);
    assert_int_equal(out.len, len); /* not asked for: held back */
    ops->stream_usage(st, &u);
    assert_int_equal(u.input_tokens, 3);
    assert_int_equal(u.output_tokens, 4);
    /* "usage": followed by anything but an object is an ordinary chunk, relayed. */
    assert_int_equal(ops->stream_event(st, BSC_STR_NULL,
                                       BSC_STR("{\"id\":\"c\",\"usage\":[],\"choices\":[]}"),
                                       &out, &f),
                     PROV_STREAM_MORE);
    assert_true(out.len > len);
    ops->stream_cleanup(st);
    bsc_buf_cleanup(&out);
}

/* A stream that ends ([DONE]) without a single chunk carrying a choice relays nothing and
 * fails (unknown: another target may answer); events without choices are held until one
 * does; a Qianfan code event is an error of its kind. */
static void test_stream_without_completion(void **state)
{
    (void)state;
    struct cfg_provider prov = {.base_url = "http://127.0.0.1:9/v1"};
    struct cfg_target tgt = {.model = "m"};
    struct prov_call call = {.op = PROV_OP_CHAT, .provider = &prov, .target = &tgt,
                             .stream = true, .include_usage = true};
    const struct prov_ops *ops = prov_ops_for(CFG_PROV_OPENAI_COMPATIBLE);
    unsigned char st[512] __attribute__((aligned(16)));
    struct fail_info f;
    struct bsc_buf out;

    assert_true(ops->stream_size <= sizeof(st));
    bsc_buf_init(&out, 1 << 16);
    memset(st, 0, sizeof(st));
    ops->stream_init(st, &call);
    assert_int_equal(ops->stream_event(st, BSC_STR_NULL,
                                       BSC_STR("{\"id\":\"c\",\"choices\":[],\"usage\":{"
                                               "\"prompt_tokens\":1,\"completion_tokens\":0}}"),
                                       &out, &f),
                     PROV_STREAM_MORE);
    assert_int_equal(ops->stream_event(st, BSC_STR_NULL, BSC_STR("{\"id\":\"c\",\"choices\":[]}"),
                                       &out, &f),
                     PROV_STREAM_MORE);
    assert_int_equal(out.len, 0); /* nothing relayed */
    assert_int_equal(ops->stream_event(st, BSC_STR_NULL, BSC_STR("[DONE]"), &out, &f),
                     PROV_STREAM_ERROR);
    assert_int_equal(f.kind, FAIL_UNKNOWN);
    assert_int_equal(out.len, 0);
    ops->stream_cleanup(st);

    memset(st, 0, sizeof(st));
    ops->stream_init(st, &call);
    assert_int_equal(ops->stream_event(st, BSC_STR_NULL,
                                       BSC_STR("{\"code\":336502,\"msg\":\"Rate limit reached for "
                                               "TPM\"}"),
                                       &out, &f),
                     PROV_STREAM_ERROR);
    assert_int_equal(f.kind, FAIL_RATE_LIMITED);
    ops->stream_cleanup(st);

    memset(st, 0, sizeof(st));
    ops->stream_init(st, &call);
    assert_int_equal(ops->stream_event(st, BSC_STR_NULL,
                                       BSC_STR("{\"id\":\"c\",\"choices\":[{\"index\":0,"
                                               "\"delta\":{\"content\":\"hi\"}}]}"),
                                       &out, &f),
                     PROV_STREAM_MORE);
    assert_true(out.len > 0);
    assert_int_equal(ops->stream_event(st, BSC_STR_NULL, BSC_STR("[DONE]"), &out, &f),
                     PROV_STREAM_DONE);
    ops->stream_cleanup(st);
    bsc_buf_cleanup(&out);
}

static void test_classify_default_is_openai(void **state)
{
    (void)state;
    /* The same DeepSeek-style 402 through prov_openai_classify: quota by the generic map. */
    struct prov_err_input in = {.status = 402, .body = BSC_STR("{}")};
    struct fail_info out;

    prov_openai_classify(&in, &out);
    assert_int_equal(out.kind, FAIL_QUOTA_EXHAUSTED);
    in.status = 429;
    in.body = BSC_STR("{\"error\":{\"code\":\"insufficient_quota\"}}");
    prov_openai_classify(&in, &out);
    assert_int_equal(out.kind, FAIL_QUOTA_EXHAUSTED);
    in.body = BSC_STR("{\"error\":{\"code\":\"rate_limit_exceeded\"}}");
    prov_openai_classify(&in, &out);
    assert_int_equal(out.kind, FAIL_RATE_LIMITED);
}

static void test_long_texts_are_truncated(void **state)
{
    (void)state;
    char body[4096], msg[2000];
    struct prov_err_input in = {.status = 400};
    struct fail_info out;
    int n;

    /* A message of 'é' (2 bytes each): the cut must fall between characters. */
    for (size_t i = 0; i + 2 < sizeof(msg); i += 2)
        memcpy(msg + i, "\xc3\xa9", 2);
    msg[sizeof(msg) - 2] = '\0';
    n = snprintf(body, sizeof(body),
                 "{\"error\":{\"message\":\"%s\",\"code\":\"%0100d\",\"type\":\"%0100d\"}}", msg, 7,
                 8);
    assert_true(n > 0 && (size_t)n < sizeof(body));
    in.body = bsc_str_make(body, (size_t)n);
    prov_openai_classify(&in, &out);
    assert_int_equal(out.kind, FAIL_INVALID_REQUEST);
    assert_int_equal(strlen(out.message), FAIL_TEXT_MESSAGE - 2); /* 254: 127 whole chars */
    assert_int_equal(strlen(out.code), FAIL_TEXT_CODE - 1);
    assert_int_equal(strlen(out.type), FAIL_TEXT_TYPE - 1);
    assert_memory_equal(out.message + strlen(out.message) - 2, "\xc3\xa9", 2);
}

static void test_deep_and_huge_bodies(void **state)
{
    (void)state;
    static char body[70000];
    struct prov_err_input in = {.status = 429};
    struct fail_info out;
    size_t n = 0;

    /* Nesting far past the tokener's depth: unparsable, so the status decides. */
    n += (size_t)snprintf(body, sizeof(body), "{\"error\":{\"code\":\"insufficient_quota\",\"x\":");
    for (int i = 0; i < 100; i++)
        body[n++] = '[';
    for (int i = 0; i < 100; i++)
        body[n++] = ']';
    memcpy(body + n, "}}", 2);
    n += 2;
    in.body = bsc_str_make(body, n);
    prov_openai_classify(&in, &out);
    assert_int_equal(out.kind, FAIL_RATE_LIMITED);

    /* Over 64 KiB: not parsed at all. */
    n = (size_t)snprintf(body, sizeof(body),
                         "{\"error\":{\"code\":\"insufficient_quota\",\"m\":\"");
    memset(body + n, 'a', sizeof(body) - n - 4);
    n = sizeof(body) - 4;
    memcpy(body + n, "\"}}", 3);
    n += 3;
    in.body = bsc_str_make(body, n);
    prov_openai_classify(&in, &out);
    assert_int_equal(out.kind, FAIL_RATE_LIMITED);
}

/* Random bytes and mutated real bodies: never a crash, always a kind in range and clean,
 * NUL-terminated texts. Deterministic (a fixed LCG seed), bounded to 3000 cases. */
static void test_garbage_never_crashes(void **state)
{
    (void)state;
    static const char seed_body[] =
        "{\"error\":{\"message\":\"This model's maximum context length is 8 tokens\",\"type\":"
        "\"invalid_request_error\",\"code\":\"context_length_exceeded\"}}";
    static const int statuses[] = {200, 400, 401, 404, 429, 500, 503, 0};
    uint64_t x = 0x9e3779b97f4a7c15ull;
    char body[sizeof(seed_body)];

    for (int round = 0; round < 3000; round++) {
        struct test_headers h = {{"Retry-After"}, {BSC_STR_NULL}};
        struct prov_err_input in = {.status = statuses[round % BSC_ARRAY_LEN(statuses)],
                                    .header = test_header,
                                    .header_ctx = &h,
                                    .now_wall_ms = NOW_WALL};
        struct fail_info out;
        size_t len = sizeof(seed_body) - 1;

        memcpy(body, seed_body, sizeof(body));
        for (int k = 0; k < 1 + round % 8; k++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            body[(x >> 33) % len] = (char)(x >> 17);
        }
        if (round % 3 == 0)
            len = (size_t)((x >> 40) % len);
        in.body = bsc_str_make(body, len);
        h.value[0] = bsc_str_make(body + 10, len > 40 ? 29 : 0);
        prov_openai_classify(&in, &out);
        assert_true(out.kind >= FAIL_NONE && out.kind < FAIL_KIND_COUNT);
        assert_true(out.retry_after_ms >= -1 && out.retry_after_ms <= PROV_RETRY_AFTER_CAP_MS);
        assert_true(memchr(out.message, '\0', sizeof(out.message)) != NULL);
        assert_true(memchr(out.code, '\0', sizeof(out.code)) != NULL);
        for (const char *p = out.message; *p; p++)
            assert_true((unsigned char)*p >= 0x20 && *p != 0x7f);
        (void)prov_openai_classify_event(bsc_str_make(body, len), &out);
        assert_true(out.kind >= FAIL_NONE && out.kind < FAIL_KIND_COUNT);
    }
}

/* ---- stream events --------------------------------------------------------------------------- */

static const struct {
    const char *name, *data;
    bool is_error;
    enum fail_kind kind;
    int64_t retry_after_ms;
    const char *msg_has;
} event_rows[] = {
    {"normal chunk",
     "{\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{"
     "\"content\":\"Hel\"},\"finish_reason\":null}]}",
     false, FAIL_NONE, -1, NULL},
    {"stop chunk",
     "{\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}", false,
     FAIL_NONE, -1, NULL},
    {"usage chunk", "{\"id\":\"c1\",\"choices\":[],\"usage\":{\"total_tokens\":3}}", false,
     FAIL_NONE, -1, NULL},
    {"[DONE]", "[DONE]", false, FAIL_NONE, -1, NULL},
    {"not JSON", "hello there", false, FAIL_NONE, -1, NULL},
    {"empty", "", false, FAIL_NONE, -1, NULL},
    {"error null", "{\"error\":null,\"choices\":[]}", false, FAIL_NONE, -1, NULL},
    {"openai error frame",
     "{\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\","
     "\"code\":null}}",
     true, FAIL_SERVER_ERROR, -1, "server had an error"},
    {"rate limit with a hint",
     "{\"error\":{\"message\":\"Rate limit reached. Please try again in 2s.\",\"code\":"
     "\"rate_limit_exceeded\"}}",
     true, FAIL_RATE_LIMITED, 2000, NULL},
    {"openrouter terminal chunk",
     "{\"id\":\"cmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":"
     "\"openai/gpt-4o\",\"provider\":\"openai\",\"error\":{\"code\":\"server_error\",\"message\":"
     "\"Provider disconnected unexpectedly\"},\"choices\":[{\"index\":0,\"delta\":{\"content\":"
     "\"\"},\"finish_reason\":\"error\"}]}",
     true, FAIL_SERVER_ERROR, -1, "Provider disconnected"},
    {"finish_reason error alone",
     "{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"error\"}]}", true,
     FAIL_SERVER_ERROR, -1, "finish_reason"},
    {"unknown error with finish_reason error",
     "{\"error\":{\"message\":\"?\",\"code\":\"weird\"},\"choices\":[{\"finish_reason\":"
     "\"error\"}]}",
     true, FAIL_SERVER_ERROR, -1, NULL},
    {"unknown error alone", "{\"error\":{\"message\":\"odd\",\"type\":\"mystery\"}}", true,
     FAIL_UNKNOWN, -1, "odd"},
    {"vLLM integer code 400",
     "{\"error\":{\"message\":\"bad\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}}",
     true, FAIL_INVALID_REQUEST, -1, NULL},
    {"integer code 503", "{\"error\":{\"message\":\"busy\",\"code\":503}}", true,
     FAIL_OVERLOADED, -1, NULL},
    {"overloaded_error type", "{\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}",
     true, FAIL_OVERLOADED, -1, NULL},
    {"error string", "{\"error\":\"stream broke\"}", true, FAIL_UNKNOWN, -1, "stream broke"},
    {"flat vLLM", "{\"object\":\"error\",\"message\":\"m\",\"type\":\"x\",\"code\":500}", true,
     FAIL_SERVER_ERROR, -1, NULL},
    {"overflow in stream", "{\"error\":{\"message\":\"prompt is too long\"}}", true,
     FAIL_CONTEXT_OVERFLOW, -1, NULL},
    {"qianfan code event", "{\"code\":336501,\"msg\":\"Rate limit reached for RPM\"}", true,
     FAIL_RATE_LIMITED, -1, "RPM"},
    {"legacy error_code event", "{\"error_code\":18,\"error_msg\":\"Open api qps request limit "
     "reached\"}", true, FAIL_RATE_LIMITED, -1, NULL},
    {"dashscope native event", "{\"code\":\"Throttling.RateQuota\",\"message\":\"Requests rate "
     "limit exceeded\"}", true, FAIL_RATE_LIMITED, -1, NULL},
    {"a code beside choices is no error",
     "{\"code\":0,\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}", false,
     FAIL_NONE, -1, NULL},
};

static void test_classify_events(void **state)
{
    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(event_rows); i++) {
        struct fail_info out;
        bool got;

        memset(&out, 0x33, sizeof(out));
        got = prov_openai_classify_event(s(event_rows[i].data), &out);
        EXPECT_INT(event_rows[i].name, got, event_rows[i].is_error);
        EXPECT_KIND(event_rows[i].name, out.kind, event_rows[i].kind);
        EXPECT_INT(event_rows[i].name, out.retry_after_ms, event_rows[i].retry_after_ms);
        EXPECT_INT(event_rows[i].name, out.status, got ? 200 : 0);
        if (event_rows[i].msg_has)
            EXPECT_HAS(event_rows[i].name, out.message, event_rows[i].msg_has);
    }
}

static void test_event_profile(void **state)
{
    (void)state;
    struct fail_info out;
    const struct prov_openai_profile *m = prov_openai_profile_find(BSC_STR("mistral"));
    struct bsc_str ev =
        BSC_STR("{\"error\":{\"message\":\"Service tier capacity exceeded\",\"code\":429}}");

    assert_true(prov_openai_classify_event(ev, &out));
    assert_int_equal(out.kind, FAIL_RATE_LIMITED);
    assert_true(prov_openai_classify_event_profile(ev, m, &out));
    assert_int_equal(out.kind, FAIL_OVERLOADED);
}

/* ---- profiles -------------------------------------------------------------------------------- */

static void test_profile_lookup(void **state)
{
    (void)state;
    static const struct {
        const char *url, *profile;
    } rows[] = {
        {"https://api.deepseek.com", "deepseek"},
        {"https://api.deepseek.com/v1", "deepseek"},
        {"http://user:pw@API.GROQ.COM:443/openai/v1", "groq"},
        {"https://api.mistral.ai/v1", "mistral"},
        {"https://openrouter.ai/api/v1", "openrouter"},
        {"https://eu.openrouter.ai/api/v1", "openrouter"},
        {"https://evil-openrouter.ai/api/v1", "openai"},
        {"https://openrouter.ai.example.com/v1", "openai"},
        {"https://api.openai.com/v1", "openai"},
        {"https://ark.cn-beijing.volces.com/api/v3", "doubao"},
        {"https://ark.ap-southeast.bytepluses.com/api/v3", "openai"},
        {"https://ark.cn-shanghai.volces.com/api/v3", "doubao"},
        {"https://ark.volces.com/api/v3", "openai"},
        {"https://ark.a.b.volces.com/api/v3", "openai"},
        {"https://evil.cn-beijing.volces.com/api/v3", "openai"},
        {"https://qianfan.baidubce.com/v2", "ernie"},
        {"https://QIANFAN.BAIDUBCE.COM/v2", "ernie"},
        {"https://notqianfan.baidubce.com/v2", "openai"},
        {"http://127.0.0.1:8000/v1", "openai"},
        {"localhost:11434/v1", "openai"},
        {"", "openai"},
    };

    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        const struct prov_openai_profile *p = prov_openai_profile_for_url(s(rows[i].url));

        assert_non_null(p);
        EXPECT_STR(rows[i].url, p->name, rows[i].profile);
    }
    assert_ptr_equal(prov_openai_profile_find(BSC_STR("DeepSeek")),
                     prov_openai_profile_for_url(BSC_STR("https://api.deepseek.com")));
    assert_null(prov_openai_profile_find(BSC_STR("nope")));
    assert_string_equal(prov_openai_profile_find(BSC_STR("vLLM"))->name, "vllm");
    assert_string_equal(prov_openai_profile_find(BSC_STR("ollama"))->name, "ollama");
    assert_null(prov_openai_profile_find(BSC_STR("")));
}

/* Every `profile:` name the config accepts is a profile the classifier has, and naming one
 * wins over the host (a vLLM server has no host to be recognised by). */
static void test_profile_by_config_name(void **state)
{
    (void)state;
    for (int p = CFG_PROFILE_AUTO + 1; p < CFG_PROFILE_COUNT; p++) {
        const char *name = cfg_profile_name((enum cfg_profile)p);

        assert_non_null(name);
        assert_non_null(prov_openai_profile_find(bsc_str_cstr(name)));
        EXPECT_STR(name, prov_openai_profile_find(bsc_str_cstr(name))->name, name);
    }
    assert_null(cfg_profile_name(CFG_PROFILE_AUTO));
    {
        struct prov_err_input in = {.base_url = BSC_STR("http://10.1.2.3:8000/v1"),
                                    .profile = BSC_STR("vllm")};
        struct fail_info out;

        assert_string_equal(prov_openai_profile_of(&in)->name, "vllm");
        in.status = 400;
        in.body = BSC_STR("{\"error\":{\"message\":\"This model's prompt is longer than "
                          "the maximum model length\",\"type\":\"BadRequestError\"}}");
        in.content_type = BSC_STR("application/json");
        prov_ops_for(CFG_PROV_OPENAI_COMPATIBLE)->classify(&in, &out);
        assert_int_equal(out.kind, FAIL_CONTEXT_OVERFLOW);
        in.profile = BSC_STR_NULL; /* by host: plain OpenAI reads it as the client's error */
        assert_string_equal(prov_openai_profile_of(&in)->name, "openai");
        prov_ops_for(CFG_PROV_OPENAI_COMPATIBLE)->classify(&in, &out);
        assert_int_equal(out.kind, FAIL_INVALID_REQUEST);
        in.base_url = BSC_STR("https://api.deepseek.com/v1");
        assert_string_equal(prov_openai_profile_of(&in)->name, "deepseek");
    }
}

/* ---- hint parsers ---------------------------------------------------------------------------- */

/* The classifier reads Retry-After and retry-after-ms itself, through the caller's header
 * accessor over the response head (names case-insensitive, values trimmed): the ms header
 * wins, Retry-After is seconds or an HTTP-date, and without either the message's "try again
 * in" is the hint. No accessor: no headers. */
static void test_classify_reads_headers(void **state)
{
    static const struct {
        const char *head;
        int64_t retry_ms;
    } rows[] = {
        {"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 2\r\n\r\n", 2000},
        {"HTTP/1.1 429 Too Many Requests\r\nretry-after:  3 \r\n\r\n", 3000},
        {"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 2\r\nRETRY-AFTER-MS: 1500\r\n\r\n",
         1500},
        {"HTTP/1.1 429 Too Many Requests\r\nretry-after-ms: 20\r\n\r\n", 20},
        {"HTTP/1.1 429 Too Many Requests\r\nretry-after-ms: soon\r\nRetry-After: 4\r\n\r\n",
         4000},
        {"HTTP/1.1 429 Too Many Requests\r\nRetry-After: Tue, 14 Nov 2023 22:13:30 GMT\r\n",
         10000},
        {"HTTP/1.1 429 Too Many Requests\r\nX-Retry-After: 9\r\n\r\n", 1200},
        {NULL, 1200},
    };

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        struct prov_err_input in = {
            .status = 429,
            .body = BSC_STR("{\"error\":{\"message\":\"Rate limit reached. Please try again in "
                            "1.2s.\",\"type\":\"requests\",\"code\":\"rate_limit_exceeded\"}}"),
            .content_type = BSC_STR("application/json"),
            .header = rows[i].head ? test_head_header : NULL,
            .header_ctx = rows[i].head,
            .now_wall_ms = 1700000000000ull,
        };
        struct fail_info out;
        char ctx[32];

        snprintf(ctx, sizeof(ctx), "row %zu", i);
        prov_ops_for(CFG_PROV_OPENAI)->classify(&in, &out);
        EXPECT_INT(ctx, out.kind, FAIL_RATE_LIMITED);
        EXPECT_INT(ctx, out.retry_after_ms, rows[i].retry_ms);
    }
}

/* The OpenAI adapter says it takes the client's own bytes: with no parsed request it
 * splices the target's model into them, so the router need not parse them. The adapters
 * that translate say they need the parsed request. */
static void test_takes_raw(void **state)
{
    static const char raw[] = "{\"model\":\"m\",\"messages\":[]}";
    char base_url[] = "https://api.openai.com/v1", model[] = "gpt-x";
    struct cfg_provider p = {.kind = CFG_PROV_OPENAI, .base_url = base_url};
    struct cfg_target t = {.provider = &p, .model = model};
    struct prov_call call = {.op = PROV_OP_CHAT, .provider = &p, .target = &t,
                             .raw = BSC_STR(raw), .model_span = bsc_str_make(raw + 9, 3)};
    struct prov_http h = {0};
    char why[64];

    (void)state;
    assert_true(prov_ops_for(CFG_PROV_OPENAI)->takes_raw);
    assert_true(prov_ops_for(CFG_PROV_OPENAI_COMPATIBLE)->takes_raw);
    assert_false(prov_ops_for(CFG_PROV_AZURE)->takes_raw);
    assert_false(prov_ops_for(CFG_PROV_ANTHROPIC)->takes_raw);
    assert_false(prov_ops_for(CFG_PROV_GEMINI)->takes_raw);
    assert_false(prov_ops_for(CFG_PROV_DASHSCOPE)->takes_raw);
    bsc_buf_init(&h.url, 8192);
    bsc_buf_init(&h.headers, 65536);
    bsc_buf_init(&h.body, 65536);
    assert_int_equal(prov_ops_for(CFG_PROV_OPENAI)->build(&call, &h, why, sizeof(why)), BSC_OK);
    assert_string_equal(h.body.p, "{\"model\":\"gpt-x\",\"messages\":[]}");
    bsc_buf_cleanup(&h.url);
    bsc_buf_cleanup(&h.headers);
    bsc_buf_cleanup(&h.body);
}

/* ---- the whole verdict (providers/classify.c) ---- */

static void hook_says_nothing(const struct prov_err_input *in, struct fail_info *out)
{
    (void)in;
    fail_info_init(out);
}

static enum bsc_err hook_cannot_read(const struct prov_call *call, struct bsc_str body,
                                     struct bsc_buf *out, struct prov_usage *usage,
                                     struct fail_info *fail)
{
    (void)call, (void)body, (void)out, (void)usage;
    fail_info_init(fail);
    return BSC_EPARSE;
}

static enum bsc_err hook_hidden_429(const struct prov_call *call, struct bsc_str body,
                                    struct bsc_buf *out, struct prov_usage *usage,
                                    struct fail_info *fail)
{
    (void)call, (void)body, (void)out, (void)usage;
    fail_info_init(fail);
    fail->kind = FAIL_RATE_LIMITED;
    fail->retry_after_ms = 700;
    return BSC_EPARSE;
}

/* What an adapter's hook leaves open is closed the same way for every adapter: a non-2xx
 * with no error found is the status map's, an unreadable answer without a kind is a
 * server error; the hook's own kind stands, with the answer's status. */
static void test_verdict_closes_hooks(void **state)
{
    struct prov_ops ops = {.name = "fake", .classify = hook_says_nothing,
                           .map_response = hook_cannot_read};
    struct prov_err_input in = {.status = 503};
    struct prov_call call = {.op = PROV_OP_CHAT};
    struct prov_usage u;
    struct fail_info f;

    (void)state;
    prov_classify(&ops, &in, &f);
    EXPECT_INT("503", f.kind, FAIL_OVERLOADED);
    EXPECT_INT("503 status", f.status, 503);
    in.status = 404;
    prov_classify(&ops, &in, &f);
    EXPECT_INT("404", f.kind, FAIL_NOT_FOUND);
    in.status = 200;
    prov_classify(&ops, &in, &f);
    EXPECT_INT("200", f.kind, FAIL_NONE);
    assert_int_equal(prov_map_response(&ops, &call, 200, BSC_STR("{}"), NULL, &u, &f),
                     BSC_EPARSE);
    EXPECT_INT("unreadable", f.kind, FAIL_SERVER_ERROR);
    EXPECT_INT("unreadable status", f.status, 200);
    assert_string_equal(f.message, "the upstream answer could not be read");
    ops.map_response = hook_hidden_429;
    assert_int_equal(prov_map_response(&ops, &call, 201, BSC_STR("{}"), NULL, &u, &f),
                     BSC_EPARSE);
    EXPECT_INT("hidden", f.kind, FAIL_RATE_LIMITED);
    EXPECT_INT("hidden status", f.status, 201);
    EXPECT_INT("hidden hint", f.retry_after_ms, 700);
}

static void test_retry_after_parser(void **state)
{
    (void)state;
    static const struct {
        const char *ra, *ra_ms;
        uint64_t now;
        int64_t want;
    } rows[] = {
        {NULL, NULL, NOW_WALL, -1},
        {"0", NULL, NOW_WALL, 0},
        {"1", NULL, NOW_WALL, 1000},
        {"1.1", NULL, NOW_WALL, 1100}, /* exact decimal: not 1101 */
        {"0.0001", NULL, NOW_WALL, 1}, /* rounds up */
        {"120", NULL, NOW_WALL, 120000},
        {"86400", NULL, NOW_WALL, 86400000},
        {"86401", NULL, NOW_WALL, 86400000},
        {"5.", NULL, NOW_WALL, -1},
        {".5", NULL, NOW_WALL, 500},
        {"+5", NULL, NOW_WALL, -1},
        {"5s", NULL, NOW_WALL, -1},
        {"0x10", NULL, NOW_WALL, -1},
        {"inf", NULL, NOW_WALL, -1},
        {"nan", NULL, NOW_WALL, -1},
        {"", "", NOW_WALL, -1},
        {"   ", NULL, NOW_WALL, -1},
        {NULL, "1500", NOW_WALL, 1500},
        {NULL, "0.1", NOW_WALL, 1},
        {NULL, "20.000", NOW_WALL, 20},
        {NULL, "1e3", NOW_WALL, -1},
        {NULL, "99999999999", NOW_WALL, 86400000},
        {"3", "bogus", NOW_WALL, 3000},
        {"Sun, 06 Nov 1994 08:49:37 GMT", NULL, NOW_WALL, 37000},
        {"Sun, 06 Nov 1994 08:49:37 GMT", NULL, 784111777000ull, 0},
        {"Sun, 06 Nov 1994 08:49:37 GMT", NULL, 784111777001ull, 0},
        {"Sun, 06 Nov 1994 08:49:37 GMT", NULL, 0, 86400000}, /* far future: capped */
        {"Sunday, 06-Nov-94 08:49:37 GMT", NULL, NOW_WALL, -1}, /* RFC 850: not accepted */
        {"Sun Nov  6 08:49:37 1994", NULL, NOW_WALL, -1},       /* asctime: not accepted */
        {"Sun, 06 Nov 1994 08:49:37 UTC", NULL, NOW_WALL, -1},
        {"Sun, 06 nov 1994 08:49:37 GMT", NULL, NOW_WALL, -1},
        {"Sun, 06 Nov 1994 24:00:00 GMT", NULL, NOW_WALL, -1},
        {"Sun, 31 Nov 1994 08:49:37 GMT", NULL, NOW_WALL, -1},
    };

    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        char ctx[96];

        snprintf(ctx, sizeof(ctx), "ra=%s ra_ms=%s", rows[i].ra ? rows[i].ra : "(none)",
                 rows[i].ra_ms ? rows[i].ra_ms : "(none)");
        EXPECT_INT(ctx, prov_parse_retry_after(s(rows[i].ra), s(rows[i].ra_ms), rows[i].now),
                   rows[i].want);
    }
}

static void test_http_date(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        bool ok;
        int64_t ms;
    } rows[] = {
        {"Thu, 01 Jan 1970 00:00:00 GMT", true, 0},
        {"Sun, 06 Nov 1994 08:49:37 GMT", true, 784111777000},
        {"  Sun, 06 Nov 1994 08:49:37 GMT\t", true, 784111777000},
        {"Tue, 29 Feb 2000 12:00:00 GMT", true, 951825600000},
        {"Mon, 01 Mar 2100 00:00:00 GMT", true, 4107542400000},
        {"Tue, 31 Dec 2024 23:59:60 GMT", true, 1735689600000}, /* leap second */
        {"Wed, 31 Dec 1969 23:59:59 GMT", true, -1000},
        {"Fri, 31 Dec 9999 23:59:59 GMT", true, 253402300799000},
        {"Thu, 29 Feb 2001 00:00:00 GMT", false, 0},
        {"Mon, 29 Feb 2100 00:00:00 GMT", false, 0}, /* 2100 is not a leap year */
        {"Xyz, 06 Nov 1994 08:49:37 GMT", false, 0},
        {"Sun, 6 Nov 1994 08:49:37 GMT", false, 0},
        {"Sun, 00 Nov 1994 08:49:37 GMT", false, 0},
        {"Sun, 06 Nov 0000 08:49:37 GMT", false, 0},
        {"Sun, 06 Nov 1994 08:60:37 GMT", false, 0},
        {"Sun, 06 Nov 1994 08:49:61 GMT", false, 0},
        {"Sun, 06 Nov 1994 08:49:37 GMT+1", false, 0},
        {"", false, 0},
    };

    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        int64_t ms = 12345;
        bool ok = prov_parse_http_date(s(rows[i].in), &ms);

        EXPECT_INT(rows[i].in, ok, rows[i].ok);
        EXPECT_INT(rows[i].in, ms, rows[i].ok ? rows[i].ms : 12345);
    }
}

static void test_duration(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        int64_t ms;
    } rows[] = {
        {"20ms", 20},      {"1s", 1000},        {"6m0s", 360000}, {"1h2m3.5s", 3723500},
        {"1.1s", 1100},    {"0.0001s", 1},      {"1500us", 2},    {"999ns", 1},
        {"0", 0},          {" 2s ", 2000},      {"25h", 86400000}, {"5", -1},
        {"1x", -1},        {"", -1},            {"-1s", -1},      {"1 s", -1},
        {"1sec", -1},      {"s", -1},           {"1m 2s", -1},    {"2\xc2\xb5s", 1},
        {"0.5ns", 1},
    };

    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++)
        EXPECT_INT(rows[i].in, prov_parse_duration(s(rows[i].in)), rows[i].ms);
}

static void test_hint_text(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        int64_t ms;
    } rows[] = {
        {"Rate limit reached. Please try again in 20s. Visit the page.", 20000},
        {"Please try again in 6ms.", 6},
        {"Please try again in 1.2s", 1200},
        {"Please try again in 6m0s.", 360000},
        {"Please retry after 5 seconds.", 5000},
        {"Requests are throttled. Please RETRY AFTER 2 SECONDS", 2000},
        {"Please retry in 36.4s", 36400},
        {"try again in 1 minute", 60000},
        {"retry after a while, or try again in 3s", 3000},
        {"retry after 5", -1},
        {"Please try again later.", -1},
        {"", -1},
        {"try again in ", -1},
        {"try again in 99999999999999 hours", 86400000},
    };

    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++)
        EXPECT_INT(rows[i].in, prov_parse_retry_hint_text(s(rows[i].in)), rows[i].ms);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classify_responses),
        cmocka_unit_test(test_classify_default_is_openai),
        cmocka_unit_test(test_classify_malformed),
        cmocka_unit_test(test_map_response_shape),
        cmocka_unit_test(test_stream_without_completion),
        cmocka_unit_test(test_long_texts_are_truncated),
        cmocka_unit_test(test_deep_and_huge_bodies),
        cmocka_unit_test(test_garbage_never_crashes),
        cmocka_unit_test(test_classify_events),
        cmocka_unit_test(test_event_profile),
        cmocka_unit_test(test_profile_lookup),
        cmocka_unit_test(test_classify_reads_headers),
        cmocka_unit_test(test_takes_raw),
        cmocka_unit_test(test_verdict_closes_hooks),
        cmocka_unit_test(test_retry_after_parser),
        cmocka_unit_test(test_profile_by_config_name),
        cmocka_unit_test(test_http_date),
        cmocka_unit_test(test_duration),
        cmocka_unit_test(test_hint_text),
        cmocka_unit_test(test_stream_usage_and_one_line),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
