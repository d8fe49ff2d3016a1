/* SPDX-License-Identifier: MIT */
/* telemetry.c -- decodes the `telemetry:` map: where spans go (otlp_endpoint, an http(s)
 * base URL; the exporter appends /v1/traces), the service name, the sampled fraction and
 * the headers sent with each export. The spans themselves are src/telemetry/. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/diag.h"
#include "config/internal.h"
#include "config/schema.h"
#include "config/telemetry.h"
#include "config/types.h"

#define MAX_TEL_HEADERS 32

static void endpoint_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                        void *base, const char *where)
{
    struct cfg_telemetry *t = base;
    const char *s;
    char *copy;

    if (!cfg__get_str(v, e->value, where, f->name, &s))
        return;
    if (*s && strncmp(s, "http://", 7) != 0 && strncmp(s, "https://", 8) != 0) {
        cfg__diag(v->s, false, e->value->line, e->value->column,
                  "'otlp_endpoint' in %s: expected an http:// or https:// URL (spans are "
                  "POSTed to <url>/v1/traces), or \"\" for none", where ? where : "telemetry");
        return;
    }
    if (!(copy = strdup(s))) {
        cfg__oom(v);
        return;
    }
    free(t->otlp_endpoint);
    t->otlp_endpoint = copy;
}

static void free_headers(struct cfg_telemetry *t)
{
    for (size_t i = 0; i < t->n_headers; i++) {
        free(t->headers[i].name);
        free(t->headers[i].value);
    }
    free(t->headers);
    t->headers = NULL;
    t->n_headers = 0;
}

static bool header_ok(struct cfg__v *v, const struct cfg__entry *h, const char *where)
{
    const struct cfg__node *k = h->key, *val = h->value;

    if (!k->len || strpbrk(k->text, " \t\r\n:") || !strcasecmp(k->text, "content-type") ||
        !strcasecmp(k->text, "content-length") || !strcasecmp(k->text, "host")) {
        cfg__diag(v->s, false, k->line, k->column, "header '%.64s' in %s: not a header the "
                  "exporter may send", k->text, where);
        return false;
    }
    if (val->bad || val->kind != CFG__SCALAR || val->is_null || strpbrk(val->text, "\r\n")) {
        if (!val->bad)
            cfg__bad_type(v, val, where, k->text, "a string without CR or LF");
        return false;
    }
    return true;
}

static void headers_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                       void *base, const char *where)
{
    struct cfg_telemetry *t = base;
    const struct cfg__node *n = e->value;

    if (n->bad || n->is_null)
        return;
    if (n->kind != CFG__MAP || n->n > MAX_TEL_HEADERS) {
        cfg__bad_type(v, n, where, f->name, "a map of at most 32 header names to values");
        return;
    }
    free_headers(t);
    if (!(t->headers = calloc(n->n ? n->n : 1, sizeof(*t->headers)))) {
        cfg__oom(v);
        return;
    }
    for (size_t i = 0; i < n->n; i++) {
        struct cfg_header *h = &t->headers[t->n_headers];

        if (!header_ok(v, &n->items[i], "telemetry headers"))
            continue;
        h->name = strdup(n->items[i].key->text);
        h->value = strdup(n->items[i].value->text);
        t->n_headers++; /* counted even half-built, so cleanup frees what was taken */
        if (!h->name || !h->value) {
            cfg__oom(v);
            return;
        }
    }
}

const struct cfg__field cfg__telemetry_fields[CFG__N_TELEMETRY_FIELDS] = {
    {.name = "otlp_endpoint", .type = CFG__F_FN, .fn = endpoint_fn},
    {.name = "service_name", .type = CFG__F_STR, .off = offsetof(struct cfg_telemetry,
                                                                  service_name), .nonempty = true},
    {.name = "sample", .type = CFG__F_DBL, .off = offsetof(struct cfg_telemetry, sample),
     .dlo = 0.0, .dhi = 1.0},
    {.name = "headers", .type = CFG__F_FN, .fn = headers_fn},
};

bool cfg__telemetry_defaults(struct cfg_telemetry *t)
{
    t->otlp_endpoint = strdup("");
    t->service_name = strdup("bascule");
    t->sample = 1.0;
    return t->otlp_endpoint && t->service_name;
}

void cfg__telemetry_cleanup(struct cfg_telemetry *t)
{
    free(t->otlp_endpoint);
    free(t->service_name);
    free_headers(t);
    memset(t, 0, sizeof(*t));
}
