/* SPDX-License-Identifier: MIT */
/* test_sd_notify.c -- the readiness message: sent whole to a path socket and to an abstract
 * one ('@'), nothing done when $NOTIFY_SOCKET is unset or empty, an error for an address that
 * is neither absolute nor abstract or too long. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/sd_notify.h"

/* A datagram socket bound to <name> (a path, or '@' for abstract); returns its fd. */
static int bound(const char *name)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t n = strlen(name);
    socklen_t len;
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

    assert_true(fd >= 0);
    memcpy(sa.sun_path, name, n);
    if (name[0] == '@')
        sa.sun_path[0] = '\0';
    len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (name[0] == '@' ? 0 : 1));
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, len), 0);
    return fd;
}

static void expect_received(int fd, const char *want)
{
    char buf[64];
    ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

    assert_int_equal(n, (ssize_t)strlen(want));
    buf[n] = '\0';
    assert_string_equal(buf, want);
}

static void test_path_socket(void **state)
{
    char path[64];
    int fd;

    (void)state;
    snprintf(path, sizeof(path), "/tmp/bsc-notify-%ld", (long)getpid());
    unlink(path);
    fd = bound(path);
    setenv("NOTIFY_SOCKET", path, 1);
    assert_int_equal(bsc_sd_notify("READY=1"), 1);
    expect_received(fd, "READY=1");
    close(fd);
    unlink(path);
}

static void test_abstract_socket(void **state)
{
    char name[64];
    int fd;

    (void)state;
    snprintf(name, sizeof(name), "@bsc-notify-%ld", (long)getpid());
    fd = bound(name);
    setenv("NOTIFY_SOCKET", name, 1);
    assert_int_equal(bsc_sd_notify("STOPPING=1"), 1);
    expect_received(fd, "STOPPING=1");
    close(fd);
}

static void test_no_manager(void **state)
{
    (void)state;
    unsetenv("NOTIFY_SOCKET");
    assert_int_equal(bsc_sd_notify("READY=1"), 0);
    setenv("NOTIFY_SOCKET", "", 1);
    assert_int_equal(bsc_sd_notify("READY=1"), 0);
}

static void test_bad_address(void **state)
{
    char longpath[200];

    (void)state;
    setenv("NOTIFY_SOCKET", "relative/path", 1);
    assert_int_equal(bsc_sd_notify("READY=1"), -1);
    memset(longpath, 'a', sizeof(longpath) - 1);
    longpath[0] = '/';
    longpath[sizeof(longpath) - 1] = '\0';
    setenv("NOTIFY_SOCKET", longpath, 1);
    assert_int_equal(bsc_sd_notify("READY=1"), -1);
    setenv("NOTIFY_SOCKET", "/nonexistent/bsc-notify", 1);
    assert_int_equal(bsc_sd_notify("READY=1"), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path_socket),
        cmocka_unit_test(test_abstract_socket),
        cmocka_unit_test(test_no_manager),
        cmocka_unit_test(test_bad_address),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
