/* SPDX-License-Identifier: MIT */
/* classify.c -- one adapter's verdict on a finished response, whole: the adapter's classify or
 * map_response hook, then the rules every adapter shares for what its hook left open (a
 * non-2xx it found no error in, an unreadable answer without a kind). The router calls these
 * and copies the result; it never sets a kind from a status itself. Pure: no I/O, no clock.
 * See docs/internals/taxonomy.md. */
#include "providers/provider.h"

void prov_classify(const struct prov_ops *ops, const struct prov_err_input *in,
                   struct fail_info *out)
{
    ops->classify(in, out);
    if (out->kind == FAIL_NONE && (in->status < 200 || in->status >= 300)) {
        /* Never a success: the provider-independent status map decides. */
        out->kind = fail_kind_from_status(in->status);
        out->status = in->status;
    }
}

void prov_ratelimit(const struct prov_ops *ops, const struct prov_err_input *in,
                    struct rl_headers *out)
{
    static const struct prov_err_input none = {0}; /* no headers: every field -1 */

    if (ops->ratelimit)
        ops->ratelimit(in, out);
    else
        rl_read_openai(&none, out);
}

enum bsc_err prov_map_response(const struct prov_ops *ops, const struct prov_call *call,
                               int status, struct bsc_str body, struct bsc_buf *out,
                               struct prov_usage *usage, struct fail_info *fail)
{
    enum bsc_err err = ops->map_response(call, body, out, usage, fail);

    if (err == BSC_OK)
        return BSC_OK;
    if (fail->kind == FAIL_NONE) {
        fail_info_init(fail);
        fail->kind = FAIL_SERVER_ERROR;
        fail_copy_text(fail->message, sizeof(fail->message),
                       BSC_STR("the upstream answer could not be read"));
    }
    fail->status = status;
    return err;
}
