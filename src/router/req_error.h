/* SPDX-License-Identifier: MIT */
/* req_error.h -- req_error.c's functions: the error the request will answer with (r->err,
 * struct req_err). Router-private. */
#ifndef BSC_ROUTER_REQ_ERROR_H
#define BSC_ROUTER_REQ_ERROR_H

#include <stdint.h>

#include "core/compat.h"
#include "policy/outlook.h"

struct request;

void req__set_error(struct request *r, int status, const char *type, const char *code,
                    const char *fmt, ...) BSC_PRINTF(5, 6);
void req__set_typed_failure(struct request *r, const char *reason, enum outlook outlook,
                            int64_t wait_ms, const char *fmt, ...) BSC_PRINTF(5, 6);
/* Sets the retry signals of r->err (reply_set_retry) for <outlook> and <wait_ms>, with the
 * last failure's kind and whether anything went upstream. */
void req__set_retry(struct request *r, enum outlook outlook, int64_t wait_ms);
void req__set_provider_error(struct request *r);
/* Adjusting the error built by one of the above (each argument static or borrowed for the
 * request's life): its status, and its type unless <type> is NULL; the parameter it names;
 * its code; its reason (the typed failure's name); the limit that refused it
 * (x-bascule-limited-by). */
void req__set_error_status(struct request *r, int status, const char *type);
void req__set_error_param(struct request *r, const char *param);
void req__set_error_code(struct request *r, const char *code);
void req__set_error_reason(struct request *r, const char *reason);
void req__set_error_limited_by(struct request *r, const char *limit);

#endif
