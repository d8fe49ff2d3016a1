/* SPDX-License-Identifier: MIT */
/* env.c -- ${NAME} and ${NAME:-default} in scalar values, expanded once at load time.
 * NAME is [A-Za-z_][A-Za-z0-9_]*. As in the shell, ${NAME} is the value even when empty,
 * ${NAME:-default} is the default when NAME is unset or empty, and an unset NAME without
 * a default is an error naming it. $${ is a literal ${; any other $ is itself. The default
 * is taken literally up to the first '}': it is not expanded again. Reads the process
 * environment (getenv), so a load must not race with setenv. See docs/internals/config.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/env.h"
#include "core/buf.h"
#include "core/compat.h"
#include "core/str.h"

#define NAME_MAX_LEN 128

static bool name_start(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool name_char(char c)
{
    return name_start(c) || (c >= '0' && c <= '9');
}

bool cfg__env_has_ref(struct bsc_str s)
{
    for (size_t i = 0; i + 1 < s.len; i++)
        if (s.p[i] == '$' && (s.p[i + 1] == '{' || s.p[i + 1] == '$'))
            return true;
    return false;
}

/* Reports a problem with the reference that starts at <ref> (at most 40 bytes shown). */
static void report(cfg__env_err_fn *on_err, void *ctx, const char *what, struct bsc_str ref)
{
    char msg[256];

    snprintf(msg, sizeof(msg), "%s '%.*s%s'", what, ref.len > 40 ? 40 : (int)ref.len, ref.p,
             ref.len > 40 ? "..." : "");
    on_err(ctx, msg);
}

/* Expands the reference whose body (between "${" and "}") is <body>. Returns BSC_OK,
 * BSC_EINVAL after a report, or a bsc_buf error. */
static enum bsc_err expand_one(struct bsc_str body, struct bsc_buf *out, cfg__env_err_fn *on_err,
                               void *ctx)
{
    char name[NAME_MAX_LEN + 1];
    size_t n = 0;
    const char *val;
    bool has_default;
    struct bsc_str def = BSC_STR_NULL;

    while (n < body.len && name_char(body.p[n]))
        n++;
    has_default = n + 1 < body.len && body.p[n] == ':' && body.p[n + 1] == '-';
    if (n == 0 || !name_start(body.p[0]) || n > NAME_MAX_LEN || (n < body.len && !has_default)) {
        report(on_err, ctx, "invalid variable reference", bsc_str_make(body.p - 2, body.len + 3));
        return BSC_EINVAL;
    }
    if (has_default)
        def = bsc_str_make(body.p + n + 2, body.len - n - 2);
    memcpy(name, body.p, n);
    name[n] = '\0';
    val = getenv(name);
    /* As the shell's ${NAME:-default}: the default also replaces an empty value. */
    if (val && (*val || !has_default))
        return bsc_buf_append_cstr(out, val);
    if (has_default)
        return bsc_buf_append_str(out, def);
    {
        char msg[2 * NAME_MAX_LEN + 96];

        snprintf(msg, sizeof(msg),
                 "environment variable '%s' is not set (write ${%s:-default} to give a default)",
                 name, name);
        on_err(ctx, msg);
    }
    return BSC_EINVAL;
}

enum bsc_err cfg__env_expand(struct bsc_str in, struct bsc_buf *out, cfg__env_err_fn *on_err,
                             void *ctx)
{
    enum bsc_err result = BSC_OK, err;
    size_t i = 0;

    while (i < in.len) {
        const char *close;
        size_t start = i;

        /* Copy the run of bytes up to the next '$'. */
        while (i < in.len && in.p[i] != '$')
            i++;
        err = bsc_buf_append(out, in.p + start, i - start);
        if (err)
            return err;
        if (i >= in.len)
            break;
        if (i + 2 < in.len && in.p[i + 1] == '$' && in.p[i + 2] == '{') {
            err = bsc_buf_append(out, "${", 2);
            if (err)
                return err;
            i += 3;
            continue;
        }
        if (i + 1 >= in.len || in.p[i + 1] != '{') {
            err = bsc_buf_append_char(out, '$');
            if (err)
                return err;
            i++;
            continue;
        }
        close = memchr(in.p + i + 2, '}', in.len - i - 2);
        if (!close) {
            report(on_err, ctx, "unterminated variable reference",
                   bsc_str_make(in.p + i, in.len - i));
            return BSC_EINVAL;
        }
        err = expand_one(bsc_str_make(in.p + i + 2, (size_t)(close - (in.p + i + 2))), out,
                         on_err, ctx);
        if (err == BSC_EINVAL)
            result = BSC_EINVAL;
        else if (err)
            return err;
        i = (size_t)(close - in.p) + 1;
    }
    return result;
}
