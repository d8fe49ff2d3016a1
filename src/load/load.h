/* SPDX-License-Identifier: MIT */
/* load.h -- `bascule load`: a bounded load test against a bascule gateway (or any
 * OpenAI-compatible chat completions endpoint) on one libuv loop with the gateway's own
 * libcurl multi glue (src/upstream/). The report: report.h; usage and fields: docs/load.md. */
#ifndef BSC_LOAD_LOAD_H
#define BSC_LOAD_LOAD_H

/* Runs `bascule load ...`: <argv>[0] is "load". Needs curl_global_init() done and SIGPIPE
 * ignored. Returns the exit status: 0 the run ended and its report was written (whatever
 * the success rate), 1 the run could not start or the JSON file could not be written, 2
 * invalid arguments or an unusable --body file (with the reason and the usage on stderr). */
int load_main(int argc, char **argv);

#endif
