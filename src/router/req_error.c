/* SPDX-License-Identifier: MIT */
/* req_error.c -- the error a request will answer with (r->err.reply), built from what the request
 * knows: an error of the client's own (req__set_error), a typed failure of the router's
 * (docs/design.md §9), the provider's own error normalized, and the retry signals every one
 * of them carries. The helpers that stop a request (admission, the decision's caller,
 * delivery, the store guards) call these; none of them changes the request's state -- the
 * machine (request.c) moves to REPLY_ERROR when the helper's outcome says so. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "router/deliver_note.h"
#include "router/internal.h"
#include "router/reply.h"
#include "router/req_error.h"

void req__set_error(struct request *r, int status, const char *type, const char *code,
                      const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(r->err.text.msg, sizeof(r->err.text.msg), fmt, ap);
    va_end(ap);
    snprintf(r->err.text.code, sizeof(r->err.text.code), "%s", code ? code : "");
    r->err.reply = (struct reply_error){.status = status,
                                  .type = type,
                                  .code = code ? r->err.text.code : NULL,
                                  .message = r->err.text.msg,
                                  .retry_after_ms = -1};
}

void req__set_retry(struct request *r, enum outlook outlook, int64_t wait_ms)
{
    struct reply_cause c = {
        .outlook = outlook,
        .kind = r->att.n ? r->x.fail.kind : FAIL_NONE,
        .wait_ms = wait_ms,
        .attempted = r->att.n > 0,
    };

    reply_set_retry(&r->err.reply, &c);
}

/* A stop decided by the router: the typed failure of docs/design.md §9. */
void req__set_typed_failure(struct request *r, const char *reason, enum outlook outlook,
                            int64_t wait_ms, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(r->err.text.msg, sizeof(r->err.text.msg), fmt, ap);
    va_end(ap);
    snprintf(r->err.text.code, sizeof(r->err.text.code), "%s", reason);
    r->err.reply = (struct reply_error){
        .status = r->att.n && r->notes.all_rate_limited ? 429 : 503,
        .type = r->att.n && r->notes.all_rate_limited ? "rate_limit_error" : "server_error",
        .code = r->err.text.code,
        .message = r->err.text.msg,
        .reason = reason,
    };
    req__set_retry(r, outlook, wait_ms);
    deliver_set_termination(r, reason);
}

/* The provider's own error, normalized: a client fault, or a kind with no recovery left. */
void req__set_provider_error(struct request *r)
{
    const struct fail_policy *pol = fail_policy(r->x.fail.kind);
    const char *code = pol->client_code && pol->client_code[0] ? pol->client_code
                       : r->x.fail.code[0]                         ? r->x.fail.code
                                                                 : NULL;

    if (pol->forward_message && r->x.fail.message[0])
        req__set_error(r, pol->client_status, pol->client_type, code, "%s", r->x.fail.message);
    else
        req__set_error(r, pol->client_status, pol->client_type, code,
                  "upstream %s failed: %s%s%s", r->cur.target ? r->cur.target->id : "-",
                  fail_kind_name(r->x.fail.kind), r->x.fail.message[0] ? ": " : "",
                  pol->forward_message ? r->x.fail.message : "");
    /* Only a client fault or an uncertain side effect stops here: nothing a retry of the
     * same request would change (the row's client_should_retry is false for them all). */
    req__set_retry(r, OUTLOOK_NEVER, -1);
    deliver_set_termination(r, fail_kind_name(r->x.fail.kind));
}


void req__set_error_status(struct request *r, int status, const char *type)
{
    r->err.reply.status = status;
    if (type)
        r->err.reply.type = type;
}

void req__set_error_param(struct request *r, const char *param)
{
    r->err.reply.param = param;
}

void req__set_error_code(struct request *r, const char *code)
{
    r->err.reply.code = code;
}

void req__set_error_reason(struct request *r, const char *reason)
{
    r->err.reply.reason = reason;
}

void req__set_error_limited_by(struct request *r, const char *limit)
{
    r->err.limited_by = limit;
}
