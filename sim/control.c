/* SPDX-License-Identifier: MIT */
/* control.c -- the /_sim/ control API of bascule-sim: PUT/GET/DELETE /_sim/models/{model},
 * GET /_sim/stats, GET /_sim/requests[?model=m], GET /_sim/arrivals?model=m, POST /_sim/reset, GET /_sim/health.
 * It never answers on the socket itself (app.c does) and knows no dialect.
 * See docs/internals/sim.md. */
#include "control.h"

#include <stdarg.h>

#include "core/compat.h"

#define MODELS_PREFIX "/_sim/models/"

bool sim_control_is_path(struct bsc_str path)
{
    return bsc_str_starts(path, BSC_STR(SIM_CONTROL_PREFIX)) ||
           bsc_str_eq(path, BSC_STR("/_sim"));
}

enum bsc_err sim_url_decode(struct bsc_str in, bool plus_space, struct bsc_buf *out)
{
    enum bsc_err err = BSC_OK;

    for (size_t i = 0; i < in.len && !err; i++) {
        char c = in.p[i];
        if (c == '%') {
            int hi = i + 2 < in.len ? bsc_hex_digit(in.p[i + 1]) : -1;
            int lo = i + 2 < in.len ? bsc_hex_digit(in.p[i + 2]) : -1;
            if (hi < 0 || lo < 0)
                return BSC_EINVAL;
            c = (char)(hi * 16 + lo);
            i += 2;
        } else if (c == '+' && plus_space) {
            c = ' ';
        }
        err = bsc_buf_append_char(out, c);
    }
    return err;
}

bool sim_query_param(struct bsc_str query, const char *name, struct bsc_buf *out)
{
    struct bsc_str key = bsc_str_cstr(name);
    size_t i = 0;

    while (i < query.len) {
        const char *amp = memchr(query.p + i, '&', query.len - i);
        size_t end = amp ? (size_t)(amp - query.p) : query.len;
        struct bsc_str pair = bsc_str_make(query.p + i, end - i);
        const char *eq = memchr(pair.p, '=', pair.len);
        struct bsc_str k = bsc_str_make(pair.p, eq ? (size_t)(eq - pair.p) : pair.len);

        if (bsc_str_eq(k, key)) {
            struct bsc_str v = eq ? bsc_str_make(eq + 1, pair.len - k.len - 1) : BSC_STR("");
            return sim_url_decode(v, true, out) == BSC_OK;
        }
        i = end + 1;
    }
    return false;
}

static int fail_json(struct bsc_buf *out, int status, const char *fmt, ...) BSC_PRINTF(3, 4);

static int fail_json(struct bsc_buf *out, int status, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    bsc_buf_reset(out);
    bsc_buf_append_cstr(out, "{\"error\":{\"message\":");
    bsc_buf_append_json_str(out, bsc_str_cstr(msg));
    bsc_buf_append_cstr(out, ",\"type\":\"invalid_request_error\",\"param\":null,"
                             "\"code\":null}}");
    return status;
}

static int oom(struct bsc_buf *out)
{
    return fail_json(out, 500, "bascule-sim: out of memory");
}

static int model_ep(struct sim_models *m, struct bsc_str method, struct bsc_str enc_name,
                    struct bsc_str body, struct bsc_buf *out)
{
    struct bsc_buf name;
    char why[512];
    int status = 200;
    enum bsc_err err;

    bsc_buf_init(&name, SIM_MODEL_NAME_MAX * 3);
    if (sim_url_decode(enc_name, false, &name) || name.len == 0) {
        bsc_buf_cleanup(&name);
        return fail_json(out, 400, "bad model name in the path");
    }
    if (bsc_str_eq(method, BSC_STR("PUT")) || bsc_str_eq(method, BSC_STR("POST"))) {
        err = sim_models_set_spec(m, bsc_buf_str(&name), body, why, sizeof(why));
        if (err == BSC_ENOMEM)
            status = oom(out);
        else if (err)
            status = fail_json(out, 400, "model %s: %s", name.p, why);
        else if (sim_models_model_json(m, bsc_buf_str(&name), out))
            status = oom(out);
    } else if (bsc_str_eq(method, BSC_STR("GET"))) {
        err = sim_models_model_json(m, bsc_buf_str(&name), out);
        if (err == BSC_ENOTFOUND)
            status = fail_json(out, 404, "model %s is unknown to the sim", name.p);
        else if (err)
            status = oom(out);
    } else if (bsc_str_eq(method, BSC_STR("DELETE"))) {
        if (!sim_models_del_spec(m, bsc_buf_str(&name)))
            status = fail_json(out, 404, "model %s has no spec", name.p);
        else if (bsc_buf_append_cstr(out, "{\"deleted\":true}"))
            status = oom(out);
    } else {
        status = fail_json(out, 405, "use PUT, GET or DELETE on /_sim/models/{model}");
    }
    bsc_buf_cleanup(&name);
    return status;
}

static int requests_ep(struct sim_models *m, struct bsc_str query, struct bsc_buf *out)
{
    struct bsc_buf name;
    int status = 200;

    bsc_buf_init(&name, SIM_MODEL_NAME_MAX * 3);
    /* No (or an unreadable) model parameter: the log of every model together. */
    if (!sim_query_param(query, "model", &name))
        bsc_buf_reset(&name);
    if (sim_models_requests_json(m, bsc_buf_str(&name), out))
        status = oom(out);
    bsc_buf_cleanup(&name);
    return status;
}

static int arrivals_ep(struct sim_models *m, struct bsc_str query, struct bsc_buf *out)
{
    struct bsc_buf name;
    int status = 200;
    enum bsc_err err;

    bsc_buf_init(&name, SIM_MODEL_NAME_MAX * 3);
    if (!sim_query_param(query, "model", &name) || name.len == 0) {
        bsc_buf_cleanup(&name);
        return fail_json(out, 400, "GET /_sim/arrivals needs ?model=m");
    }
    err = sim_models_arrivals_json(m, bsc_buf_str(&name), out);
    if (err == BSC_ENOTFOUND)
        status = fail_json(out, 404, "model %s is unknown to the sim", name.p);
    else if (err)
        status = oom(out);
    bsc_buf_cleanup(&name);
    return status;
}

int sim_control_dispatch(struct sim_models *m, struct bsc_str method, struct bsc_str path,
                         struct bsc_str query, struct bsc_str body, struct bsc_buf *out)
{
    bool get = bsc_str_eq(method, BSC_STR("GET"));
    bool post = bsc_str_eq(method, BSC_STR("POST"));

    if (bsc_str_starts(path, BSC_STR(MODELS_PREFIX)))
        return model_ep(m, method, bsc_str_make(path.p + strlen(MODELS_PREFIX),
                                                path.len - strlen(MODELS_PREFIX)),
                        body, out);
    if (bsc_str_eq(path, BSC_STR("/_sim/stats"))) {
        if (!get)
            return fail_json(out, 405, "use GET on /_sim/stats");
        return sim_models_stats_json(m, out) ? oom(out) : 200;
    }
    if (bsc_str_eq(path, BSC_STR("/_sim/requests"))) {
        if (!get)
            return fail_json(out, 405, "use GET on /_sim/requests");
        return requests_ep(m, query, out);
    }
    if (bsc_str_eq(path, BSC_STR("/_sim/arrivals"))) {
        if (!get)
            return fail_json(out, 405, "use GET on /_sim/arrivals");
        return arrivals_ep(m, query, out);
    }
    if (bsc_str_eq(path, BSC_STR("/_sim/reset"))) {
        if (!post)
            return fail_json(out, 405, "use POST on /_sim/reset");
        sim_models_reset(m);
        return bsc_buf_append_cstr(out, "{\"reset\":true}") ? oom(out) : 200;
    }
    if (bsc_str_eq(path, BSC_STR("/_sim/health")))
        return bsc_buf_append_cstr(out, "{\"ok\":true}") ? oom(out) : 200;
    return fail_json(out, 404, "no control endpoint %.*s", BSC_STR_FMT(path));
}
