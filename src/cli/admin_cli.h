/* SPDX-License-Identifier: MIT */
/* admin_cli.h -- `bascule admin`: a command-line client of the admin API (run-time keys
 * and the audit trail). Usage: docs/api.md "bascule admin". */
#ifndef BSC_CLI_ADMIN_CLI_H
#define BSC_CLI_ADMIN_CLI_H

/* Runs `bascule admin ...`: <argv>[0] is "admin". Needs curl_global_init() done. Returns 0
 * when the gateway answered 2xx, 1 when it answered otherwise or could not be reached, 2 for
 * invalid arguments (the usage on stderr). */
int admin_cli_main(int argc, char **argv);

#endif
