/* SPDX-License-Identifier: MIT */
/* sd_notify.h -- the service manager's readiness protocol (systemd's Type=notify), without
 * libsystemd: one datagram to the socket named by $NOTIFY_SOCKET. See docs/operations.md. */
#ifndef BSC_CORE_SD_NOTIFY_H
#define BSC_CORE_SD_NOTIFY_H

/* Sends <state> (e.g. "READY=1", "STOPPING=1") to $NOTIFY_SOCKET. Returns 1 when sent, 0 when
 * no manager asked for it (the variable is unset or empty), -1 on an error (a bad address or
 * a failed send: the service runs on, the manager's start timeout will tell). */
int bsc_sd_notify(const char *state);

#endif
