/* SPDX-License-Identifier: MIT */
/* prov_fixture.h -- the fixture the OpenAI-shaped adapter tests share: one provider, one
 * target, a prov_call over a parsed request, and the prov_http the adapter fills in.
 * Included by one test file each (static functions). */
#ifndef BSC_TEST_PROV_FIXTURE_H
#define BSC_TEST_PROV_FIXTURE_H

#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "providers/provider.h"
#include "header_lines.h"

#define BIG (1024 * 1024)

struct fx {
    struct cfg_provider provider;
    struct cfg_target target;
    struct prov_call call;
    struct prov_http http;
    struct json_object *req;
};

/* The names the fixture points to; they must outlive it. */
struct fx_names {
    enum cfg_provider_kind kind;
    char *base_url, *model, *provider_id, *target_id;
    const char *key;
};

static void fx_setup(struct fx *f, const struct fx_names *n, const char *req_json, bool stream)
{
    memset(f, 0, sizeof(*f));
    f->provider.id = n->provider_id;
    f->provider.kind = n->kind;
    f->provider.base_url = n->base_url;
    f->target.id = n->target_id;
    f->target.provider = &f->provider;
    f->target.model = n->model;
    f->req = req_json ? json_tokener_parse(req_json) : NULL;
    f->call = (struct prov_call){.op = PROV_OP_CHAT, .provider = &f->provider,
                                 .target = &f->target, .key = n->key, .req = f->req,
                                 .stream = stream, .request_id = "req-1"};
    bsc_buf_init(&f->http.url, 8192);
    bsc_buf_init(&f->http.headers, 65536);
    bsc_buf_init(&f->http.body, BIG);
}

static void fx_cleanup(struct fx *f)
{
    json_object_put(f->req);
    bsc_buf_cleanup(&f->http.url);
    bsc_buf_cleanup(&f->http.headers);
    bsc_buf_cleanup(&f->http.body);
}

#endif
