/* SPDX-License-Identifier: MIT */
/* sd_notify.c -- $NOTIFY_SOCKET is a path, or an abstract socket name written with a leading
 * '@' (the kernel's leading NUL). The message is sent whole in one datagram; nothing is read
 * back. Any thread may call it: it keeps no state. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/sd_notify.h"

/* Fills <sa> from <path>. Returns the address length, or 0 when <path> does not fit. */
static socklen_t notify_addr(const char *path, struct sockaddr_un *sa)
{
    size_t n = strlen(path);

    if (n < 2 || n >= sizeof(sa->sun_path) || (path[0] != '/' && path[0] != '@'))
        return 0;
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    memcpy(sa->sun_path, path, n);
    if (path[0] == '@')
        sa->sun_path[0] = '\0'; /* abstract: the length, not a NUL, ends the name */
    else
        n++; /* the path's NUL */
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
}

int bsc_sd_notify(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sa;
    socklen_t len;
    ssize_t sent;
    int fd;

    if (!path || !*path)
        return 0;
    if (!(len = notify_addr(path, &sa)))
        return -1;
    if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
        return -1;
    sent = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, len);
    close(fd);
    return sent == (ssize_t)strlen(state) ? 1 : -1;
}
