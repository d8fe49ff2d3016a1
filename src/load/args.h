/* SPDX-License-Identifier: MIT */
/* args.h -- the command line of `bascule load`: options, their bounds and defaults, and
 * the URL the requests go to. Pure: nothing is opened or read here (the --body file is
 * read by load.c). docs/load.md documents every option. */
#ifndef BSC_LOAD_ARGS_H
#define BSC_LOAD_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

#define LOAD_DEFAULT_REQUESTS    100
#define LOAD_DEFAULT_CONCURRENCY 10
#define LOAD_DEFAULT_TIMEOUT_S   60
#define LOAD_DEFAULT_THREADS     2
#define LOAD_MAX_THREADS         64
#define LOAD_MAX_REQUESTS        10000000u /* LOAD_MAX_SAMPLES: one latency per request */
#define LOAD_MAX_CONCURRENCY     4096
#define LOAD_MAX_DURATION_S      86400
#define LOAD_URL_MAX             2048

struct load_opts {
    char url[LOAD_URL_MAX]; /* the chat completions URL, built from --url */
    const char *model;      /* borrowed from argv, like every string here */
    const char *key;        /* NULL: no Authorization header */
    const char *body_file;  /* NULL: the default body */
    const char *json_file;  /* NULL: no JSON report */
    uint64_t requests;      /* the bound on requests started */
    bool requests_set;
    unsigned concurrency;
    unsigned threads;     /* event loops; never more than <concurrency> */
    uint64_t duration_ms; /* 0: no time bound */
    uint32_t timeout_ms;  /* per request */
    bool stream;
    bool help;
};

/* Parses `load`'s arguments (<argv>[0] is "load"). Returns BSC_OK with <o> filled, or
 * BSC_EINVAL with a one-line reason in <why> (<why_len> bytes). When only --duration bounds
 * the run, requests default to LOAD_MAX_REQUESTS instead of LOAD_DEFAULT_REQUESTS. Uses
 * getopt_long (resets optind). */
enum bsc_err load_args_parse(int argc, char **argv, struct load_opts *o, char *why, size_t why_len);

/* The chat completions URL for the base <url>: "http(s)://host[:port][/prefix]" with or
 * without a trailing "/v1" (and trailing slashes) gives ".../v1/chat/completions". False
 * when <url> is not http(s) with a host, or the result does not fit <out_len>. */
bool load_chat_url(const char *url, char *out, size_t out_len);

/* The usage text. */
extern const char load_usage[];

#endif
