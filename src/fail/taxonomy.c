/* SPDX-License-Identifier: MIT */
/* taxonomy.c -- names, the policy table, the generic status map and transport mapping for
 * enum fail_kind. Data first: every decision about a kind is one row below, the router does
 * not branch on kinds. Does not classify provider bodies (providers/ does that).
 * Why each row says what it says: docs/internals/taxonomy.md. */
#include "fail/taxonomy.h"

#include <string.h>

#include "core/compat.h"
#include "core/utf8.h"

static const char *const kind_names[] = {
#define X(NAME, name) [FAIL_##NAME] = #name,
    FAIL_KINDS(X)
#undef X
};
_Static_assert(BSC_ARRAY_LEN(kind_names) == FAIL_KIND_COUNT, "a kind has no name");

static const char *const transport_names[] = {
#define X(NAME, name) [FT_##NAME] = #name,
    FAIL_TRANSPORTS(X)
#undef X
};
_Static_assert(BSC_ARRAY_LEN(transport_names) == FT_COUNT, "a transport has no name");

/* Row shorthands, so the table reads as a table. */
#define REPLAY .replay_same_target = true
#define DELAY .needs_delay = true
#define NEXT_KEY .next_key = true
#define EQUIV .equivalent_failover = true
#define FALLBACK .cross_model_fallback = true
#define COOLS_KEY .cools_key = true
#define CLIENT_FAULT .client_fault = true
#define FORWARD .forward_message = true
#define RETRYABLE .client_should_retry = true
#define CLIENT(st, ty, co) .client_status = (st), .client_type = (ty), .client_code = (co)

/* An empty client_code means: the upstream's code when forward_message, else null. */
static const struct fail_policy policies[FAIL_KIND_COUNT] = {
    [FAIL_NONE] = {CLIENT(200, "", "")},
    [FAIL_CONNECT] = {REPLAY, DELAY, EQUIV, FALLBACK, .breaker = FAIL_BRK_TARGET,
                      CLIENT(502, "server_error", "upstream_unavailable"), RETRYABLE},
    /* The wait that timed out already spent time: replay once, at once, then move on. */
    [FAIL_TIMEOUT] = {REPLAY, .max_replays = 1, EQUIV, FALLBACK, .breaker = FAIL_BRK_TARGET,
                      CLIENT(504, "server_error", "upstream_timeout"), RETRYABLE},
    [FAIL_RATE_LIMITED] = {REPLAY, DELAY, NEXT_KEY, EQUIV, FALLBACK, .breaker = FAIL_BRK_KEY,
                           COOLS_KEY, CLIENT(429, "rate_limit_error", "rate_limit_exceeded"),
                           RETRYABLE},
    /* 429 insufficient_quota is what OpenAI itself sends and SDKs already handle; 402
     * would tell the client its own account is unpaid. A retry soon cannot help. */
    [FAIL_QUOTA_EXHAUSTED] = {NEXT_KEY, EQUIV, FALLBACK, .breaker = FAIL_BRK_KEY, COOLS_KEY,
                              CLIENT(429, "insufficient_quota", "insufficient_quota")},
    [FAIL_OVERLOADED] = {REPLAY, DELAY, EQUIV, FALLBACK, .breaker = FAIL_BRK_TARGET,
                         CLIENT(503, "server_error", "upstream_overloaded"), RETRYABLE},
    [FAIL_SERVER_ERROR] = {REPLAY, DELAY, EQUIV, FALLBACK, .breaker = FAIL_BRK_TARGET,
                           CLIENT(502, "server_error", "upstream_error"), RETRYABLE},
    /* The answer began, then the connection closed or the framing broke: the same
     * remedies as a server error, named apart so the logs say what happened. */
    [FAIL_UPSTREAM_RESET] = {REPLAY, DELAY, EQUIV, FALLBACK, .breaker = FAIL_BRK_TARGET,
                             CLIENT(502, "server_error", "upstream_error"), RETRYABLE},
    [FAIL_PROTOCOL_ERROR] = {REPLAY, DELAY, EQUIV, FALLBACK, .breaker = FAIL_BRK_TARGET,
                             CLIENT(502, "server_error", "upstream_error"), RETRYABLE},
    [FAIL_INVALID_REQUEST] = {CLIENT_FAULT, FORWARD,
                              CLIENT(400, "invalid_request_error", "")},
    /* Our own credential: not the client's fault, never a 401 to the client. */
    [FAIL_AUTH] = {NEXT_KEY, EQUIV, FALLBACK, COOLS_KEY,
                   CLIENT(502, "server_error", "upstream_auth_failed")},
    [FAIL_PERMISSION] = {NEXT_KEY, EQUIV, FALLBACK, COOLS_KEY,
                         CLIENT(502, "server_error", "upstream_permission_denied")},
    /* The route exists, its target does not: the gateway's config is wrong, not the ask. */
    [FAIL_NOT_FOUND] = {EQUIV, FALLBACK, .flags_misconfigured = true,
                        CLIENT(502, "server_error", "upstream_model_not_found")},
    [FAIL_CONTEXT_OVERFLOW] = {FALLBACK, .fallback_needs_larger_window = true, CLIENT_FAULT,
                               FORWARD,
                               CLIENT(400, "invalid_request_error", "context_length_exceeded")},
    [FAIL_CONTENT_POLICY] = {CLIENT_FAULT, FORWARD,
                             CLIENT(400, "invalid_request_error", "content_policy_violation")},
    [FAIL_CONTRACT_FAILURE] = {FALLBACK, CLIENT(502, "server_error", "contract_failure")},
    [FAIL_PARTIAL_OUTPUT] = {.breaker = FAIL_BRK_IF_INFRA,
                             CLIENT(502, "server_error", "upstream_stream_interrupted"),
                             RETRYABLE},
    [FAIL_SIDE_EFFECT_UNCERTAIN] = {.breaker = FAIL_BRK_IF_INFRA,
                                    CLIENT(502, "server_error", "reconcile_required")},
    [FAIL_DEADLINE_EXHAUSTED] = {CLIENT(504, "server_error", "deadline_exhausted"), RETRYABLE},
    [FAIL_CANCELLED] = {CLIENT_FAULT,
                        CLIENT(499, "invalid_request_error", "client_closed_request")},
    /* Unclassified: do not hammer the same target, but other capacity is safe to try. */
    [FAIL_UNKNOWN] = {EQUIV, FALLBACK, .breaker = FAIL_BRK_TARGET,
                      CLIENT(502, "server_error", "upstream_error"), RETRYABLE},
};

#undef REPLAY
#undef DELAY
#undef NEXT_KEY
#undef EQUIV
#undef FALLBACK
#undef COOLS_KEY
#undef CLIENT_FAULT
#undef FORWARD
#undef RETRYABLE
#undef CLIENT

const char *fail_kind_name(enum fail_kind kind)
{
    if ((unsigned)kind >= FAIL_KIND_COUNT)
        return "invalid";
    return kind_names[kind];
}

enum fail_kind fail_kind_from_name(struct bsc_str name)
{
    for (unsigned k = 0; k < FAIL_KIND_COUNT; k++) {
        if (bsc_str_eq(name, bsc_str_cstr(kind_names[k])))
            return (enum fail_kind)k;
    }
    return FAIL_KIND_COUNT;
}

const char *fail_transport_name(enum fail_transport t)
{
    if ((unsigned)t >= FT_COUNT)
        return "invalid";
    return transport_names[t];
}

const struct fail_policy *fail_policy(enum fail_kind kind)
{
    if ((unsigned)kind >= FAIL_KIND_COUNT)
        kind = FAIL_UNKNOWN;
    return &policies[kind];
}

void fail_info_init(struct fail_info *info)
{
    memset(info, 0, sizeof(*info));
    info->kind = FAIL_NONE;
    info->retry_after_ms = -1;
    info->transport = FT_OK;
}

enum fail_kind fail_kind_from_status(int status)
{
    switch (status) {
    case 400:
    case 413:
    case 422:
        return FAIL_INVALID_REQUEST;
    case 401:
        return FAIL_AUTH;
    case 402:
        return FAIL_QUOTA_EXHAUSTED;
    case 403:
        return FAIL_PERMISSION;
    case 404:
        return FAIL_NOT_FOUND;
    case 408:
    case 504:
        return FAIL_TIMEOUT;
    case 409:
        return FAIL_SERVER_ERROR; /* a conflict or lock timeout upstream: transient */
    case 429:
        return FAIL_RATE_LIMITED;
    case 498: /* Groq flex tier capacity */
    case 503:
    case 529: /* Anthropic overloaded */
        return FAIL_OVERLOADED;
    default:
        break;
    }
    if (status >= 200 && status <= 299)
        return FAIL_NONE;
    if (status >= 500 && status <= 599)
        return FAIL_SERVER_ERROR;
    if (status >= 400 && status <= 499)
        return FAIL_INVALID_REQUEST;
    return FAIL_UNKNOWN; /* 1xx, 3xx (redirects are off), nonsense */
}

static const char *transport_message(enum fail_transport t, bool request_sent)
{
    switch (t) {
    case FT_CONNECT:
        return "could not connect to the upstream";
    case FT_DNS:
        return "could not resolve the upstream host";
    case FT_TIMEOUT:
        return request_sent ? "the upstream did not answer in time"
                            : "the upstream did not accept the request in time";
    case FT_RESET:
        return request_sent ? "the upstream connection closed before a complete response"
                            : "the upstream connection closed while sending the request";
    case FT_TLS:
        return "TLS handshake with the upstream failed";
    case FT_PROTOCOL:
        return "the upstream sent malformed HTTP";
    case FT_CANCELLED:
        return "the request was cancelled";
    default:
        return "";
    }
}

void fail_from_transport(enum fail_transport t, bool request_sent, struct fail_info *out)
{
    enum fail_kind kind;

    fail_info_init(out);
    switch (t) {
    case FT_CONNECT:
    case FT_DNS:
    case FT_TLS:
    case FT_RESET:
        kind = FAIL_CONNECT;
        break;
    case FT_TIMEOUT:
        kind = FAIL_TIMEOUT;
        break;
    case FT_PROTOCOL:
        kind = FAIL_PROTOCOL_ERROR;
        break;
    case FT_CANCELLED:
        kind = FAIL_CANCELLED;
        break;
    case FT_OK:
        kind = FAIL_NONE;
        break;
    default:
        kind = FAIL_UNKNOWN;
        t = FT_COUNT;
        break;
    }
    out->kind = kind;
    out->transport = t == FT_COUNT ? FT_PROTOCOL : t;
    out->request_sent = request_sent;
    fail_copy_text(out->message, sizeof(out->message),
                   bsc_str_cstr(transport_message(t, request_sent)));
}

void fail_after_head(struct fail_info *f, int status)
{
    if (status <= 0)
        return;
    f->status = status;
    if (f->kind == FAIL_CONNECT && f->transport == FT_RESET)
        f->kind = FAIL_UPSTREAM_RESET;
}

void fail_from_transfer(struct fail_info *f, enum fail_transport t, int status)
{
    char msg[FAIL_TEXT_MESSAGE];

    memcpy(msg, f->message, sizeof(msg));
    fail_from_transport(t, status != 0 || t == FT_RESET, f);
    memcpy(f->message, msg, sizeof(msg));
    fail_after_head(f, status); /* a reset mid-answer is not a connect failure */
}

void fail_before_commit(struct fail_info *f)
{
    if (f->kind == FAIL_NONE || f->kind == FAIL_PARTIAL_OUTPUT)
        f->kind = FAIL_SERVER_ERROR;
}

void fail_other_shape(struct fail_info *f, int status)
{
    fail_info_init(f);
    f->kind = FAIL_UNKNOWN;
    f->status = status;
    f->request_caused = true;
}

bool fail_counts_against_target(const struct fail_info *f)
{
    if (f->request_caused)
        return false;
    switch (fail_policy(f->kind)->breaker) {
    case FAIL_BRK_TARGET:
        return true;
    case FAIL_BRK_IF_INFRA:
        return f->transport != FT_OK || f->status >= 500 || f->status == 200;
    default:
        return false;
    }
}

size_t fail_copy_text(char *dst, size_t cap, struct bsc_str src)
{
    const unsigned char *p = (const unsigned char *)src.p;
    size_t in = 0, out = 0;

    if (cap == 0)
        return 0;
    while (src.p && in < src.len) {
        size_t n = bsc_utf8_seq_len(p + in, src.len - in);

        if (n == 0 || (n == 1 && (p[in] < 0x20 || p[in] == 0x7f))) {
            if (out + 1 >= cap)
                break;
            dst[out++] = n == 0 ? '?' : ' ';
            in++;
            continue;
        }
        if (out + n >= cap)
            break;
        memcpy(dst + out, p + in, n);
        out += n;
        in += n;
    }
    dst[out] = '\0';
    return out;
}
