/* SPDX-License-Identifier: MIT */
/* args.c -- `bascule load`'s options: parsed strictly (a number with trailing junk, a
 * zero concurrency or an unknown option is an error, never a silent default), bounded so
 * that a run always ends, and turned into the URL every request goes to. See args.h. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/str.h"
#include "load/args.h"

const char load_usage[] =
    "usage: bascule load --url URL --model ROUTE [--requests N] [--concurrency C]\n"
    "                    [--duration S] [--stream] [--key KEY] [--body FILE] [--json FILE]\n"
    "                    [--timeout S] [--threads T]\n"
    "  --url URL          the gateway, with or without /v1 (http://127.0.0.1:8080)\n"
    "  --model ROUTE      the route (\"model\") every request names\n"
    "  --requests N       stop after N requests (default 100; 1..10000000)\n"
    "  --concurrency C    requests in flight at once (default 10; 1..4096)\n"
    "  --duration S       stop after S seconds (in-flight requests are cancelled); alone,\n"
    "                     it is the only bound\n"
    "  --stream           stream: true, stream_options.include_usage; measures TTFT\n"
    "  --key KEY          sends Authorization: Bearer KEY\n"
    "  --body FILE        a JSON request object to send (model and stream are set)\n"
    "  --json FILE        also write the report as JSON to FILE\n"
    "  --timeout S        per-request timeout (default 60)\n"
    "  --threads T        event loops sharing the C requests (default 2; 1..64)\n";

/* A positive decimal number of seconds up to <max>, in milliseconds. */
static bool parse_seconds(const char *s, double max, uint64_t *ms)
{
    char *end;
    double d = strtod(s, &end);

    if (end == s || *end || !isfinite(d) || d <= 0 || d > max)
        return false;
    *ms = (uint64_t)(d * 1000.0 + 0.5);
    return *ms > 0;
}

static bool parse_count(const char *s, unsigned long long min, unsigned long long max,
                        unsigned long long *out)
{
    unsigned long long v;

    if (!bsc_str_to_u64(bsc_str_cstr(s), &v) || v < min || v > max)
        return false;
    *out = v;
    return true;
}

enum {
    OPT_URL = 256,
    OPT_MODEL,
    OPT_REQUESTS,
    OPT_CONCURRENCY,
    OPT_DURATION,
    OPT_STREAM,
    OPT_KEY,
    OPT_BODY,
    OPT_JSON,
    OPT_TIMEOUT,
    OPT_THREADS,
    OPT_HELP
};

/* One option's value into <o>. False with <why> set when it is out of bounds. */
static bool take(int c, const char *arg, struct load_opts *o, const char **url, char *why,
                 size_t why_len)
{
    unsigned long long v;
    uint64_t ms;

    switch (c) {
    case OPT_URL:
        *url = arg;
        return true;
    case OPT_MODEL:
        o->model = arg;
        return true;
    case OPT_STREAM:
        o->stream = true;
        return true;
    case OPT_KEY:
        o->key = arg;
        return true;
    case OPT_BODY:
        o->body_file = arg;
        return true;
    case OPT_JSON:
        o->json_file = arg;
        return true;
    case OPT_HELP:
        o->help = true;
        return true;
    case OPT_REQUESTS:
        if (!parse_count(arg, 1, LOAD_MAX_REQUESTS, &v))
            break;
        o->requests = v;
        o->requests_set = true;
        return true;
    case OPT_CONCURRENCY:
        if (!parse_count(arg, 1, LOAD_MAX_CONCURRENCY, &v))
            break;
        o->concurrency = (unsigned)v;
        return true;
    case OPT_THREADS:
        if (!parse_count(arg, 1, LOAD_MAX_THREADS, &v))
            break;
        o->threads = (unsigned)v;
        return true;
    case OPT_DURATION:
        if (!parse_seconds(arg, LOAD_MAX_DURATION_S, &ms))
            break;
        o->duration_ms = ms;
        return true;
    case OPT_TIMEOUT:
        if (!parse_seconds(arg, LOAD_MAX_DURATION_S, &ms))
            break;
        o->timeout_ms = (uint32_t)ms;
        return true;
    default:
        snprintf(why, why_len, "unknown option or missing value");
        return false;
    }
    snprintf(why, why_len, "invalid value \"%s\" for --%s", arg,
             c == OPT_REQUESTS      ? "requests (1..10000000)"
             : c == OPT_CONCURRENCY ? "concurrency (1..4096)"
             : c == OPT_THREADS     ? "threads (1..64)"
             : c == OPT_DURATION    ? "duration (seconds, > 0, at most 86400)"
                                    : "timeout (seconds, > 0, at most 86400)");
    return false;
}

enum bsc_err load_args_parse(int argc, char **argv, struct load_opts *o, char *why, size_t why_len)
{
    static const struct option opts[] = {{"url", required_argument, NULL, OPT_URL},
                                         {"model", required_argument, NULL, OPT_MODEL},
                                         {"requests", required_argument, NULL, OPT_REQUESTS},
                                         {"concurrency", required_argument, NULL, OPT_CONCURRENCY},
                                         {"duration", required_argument, NULL, OPT_DURATION},
                                         {"stream", no_argument, NULL, OPT_STREAM},
                                         {"key", required_argument, NULL, OPT_KEY},
                                         {"body", required_argument, NULL, OPT_BODY},
                                         {"json", required_argument, NULL, OPT_JSON},
                                         {"timeout", required_argument, NULL, OPT_TIMEOUT},
                                         {"threads", required_argument, NULL, OPT_THREADS},
                                         {"help", no_argument, NULL, OPT_HELP},
                                         {NULL, 0, NULL, 0}};
    const char *url = NULL;
    int c;

    memset(o, 0, sizeof(*o));
    o->concurrency = LOAD_DEFAULT_CONCURRENCY;
    o->threads = LOAD_DEFAULT_THREADS;
    o->timeout_ms = LOAD_DEFAULT_TIMEOUT_S * 1000u;
    optind = 0; /* 0: a full reinitialisation in glibc, for a second parse in one process */
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
        if (c == '?') {
            snprintf(why, why_len, "unknown option or missing value: %s",
                     optind > 0 && optind <= argc ? argv[optind - 1] : "?");
            return BSC_EINVAL;
        }
        if (!take(c, optarg, o, &url, why, why_len))
            return BSC_EINVAL;
    }
    if (o->help)
        return BSC_OK;
    if (optind != argc) {
        snprintf(why, why_len, "unexpected argument: %s", argv[optind]);
        return BSC_EINVAL;
    }
    if (!url || !o->model || !*o->model) {
        snprintf(why, why_len, "--url and --model are required");
        return BSC_EINVAL;
    }
    if (!load_chat_url(url, o->url, sizeof(o->url))) {
        snprintf(why, why_len, "--url must be http://HOST[:PORT][/PATH] or https://...: %s", url);
        return BSC_EINVAL;
    }
    if (o->threads > o->concurrency)
        o->threads = o->concurrency;
    if (!o->requests_set)
        o->requests = o->duration_ms ? LOAD_MAX_REQUESTS : LOAD_DEFAULT_REQUESTS;
    return BSC_OK;
}

bool load_chat_url(const char *url, char *out, size_t out_len)
{
    size_t len = strlen(url), scheme;
    int n;

    if (strncmp(url, "http://", 7) == 0)
        scheme = 7;
    else if (strncmp(url, "https://", 8) == 0)
        scheme = 8;
    else
        return false;
    if (strpbrk(url, "?# \t\r\n"))
        return false;
    while (len > scheme && url[len - 1] == '/')
        len--;
    if (len >= scheme + 3 && memcmp(url + len - 3, "/v1", 3) == 0)
        len -= 3;
    while (len > scheme && url[len - 1] == '/')
        len--;
    if (len == scheme || url[scheme] == '/')
        return false; /* no host */
    n = snprintf(out, out_len, "%.*s/v1/chat/completions", (int)len, url);
    return n > 0 && (size_t)n < out_len;
}
