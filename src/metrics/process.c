/* SPDX-License-Identifier: MIT */
/* process.c -- the process_* families every Prometheus client library exports, so the
 * usual dashboards and alerts (CPU, memory, fd exhaustion, restarts) work on bascule too.
 * Read at scrape time from /proc/self (the systemd unit's ProcSubset=pid keeps it), not
 * kept in the registry. See docs/internals/metrics.md. */
#include "metrics/metrics.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/buf.h"

/* Fields of /proc/<pid>/stat, counted from 1 (proc(5)): utime 14, stime 15, vsize 23,
 * rss 24. After the ')' that ends the command name comes field 3. */
#define STAT_UTIME 14
#define STAT_STIME 15
#define STAT_VSIZE 23
#define STAT_RSS 24

bool metrics_proc_stat_parse(const char *text, struct metrics_proc_stat *out)
{
    const char *p = strrchr(text, ')');
    unsigned field = 2;

    if (!p)
        return false;
    memset(out, 0, sizeof(*out));
    p++;
    while (field < STAT_RSS) {
        char *end;
        unsigned long long v;

        while (*p == ' ')
            p++;
        if (!*p)
            return false;
        field++;
        v = strtoull(p, &end, 10);
        if (field == STAT_UTIME || field == STAT_STIME || field == STAT_VSIZE ||
            field == STAT_RSS) {
            if (end == p)
                return false;
            if (field == STAT_UTIME)
                out->utime_ticks = v;
            else if (field == STAT_STIME)
                out->stime_ticks = v;
            else if (field == STAT_VSIZE)
                out->vsize_bytes = v;
            else
                out->rss_pages = v;
        }
        p += strcspn(p, " "); /* field 3 is a letter, others may be negative */
    }
    return true;
}

static bool read_stat(struct metrics_proc_stat *st)
{
    char text[1024];
    size_t n;
    FILE *f = fopen("/proc/self/stat", "re");

    if (!f)
        return false;
    n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    return metrics_proc_stat_parse(text, st);
}

/* One entry of getdents64 (the kernel's layout; glibc has no declaration for it). */
struct proc_dirent {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[];
};

/* Open descriptors: the entries of /proc/self/fd, less the one reading it. -1 when unknown.
 * Raw system calls, not opendir/closedir: libuv closes its sockets with a raw close(2) that
 * ThreadSanitizer does not see, so a libc close here of a number a worker's socket held a
 * moment ago is reported as a race with that socket's last read (the kernel hands out fd
 * numbers; there is no shared memory between the two). No fd of ours is ever visible to the
 * sanitizer this way, and nothing is allocated. */
static long open_fds(void)
{
    _Alignas(8) char buf[4096];
    long n = 0, len;
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/fd",
                          O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd < 0)
        return -1;
    while ((len = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
        for (long off = 0; off < len;) {
            const struct proc_dirent *e = (const struct proc_dirent *)(void *)(buf + off);

            if (e->reclen == 0)
                break;
            if (e->name[0] != '.')
                n++;
            off += e->reclen;
        }
    }
    syscall(SYS_close, fd);
    return len < 0 ? -1 : n - 1;
}

static enum bsc_err put(struct bsc_buf *out, const char *name, const char *type,
                        const char *help, double v)
{
    return bsc_buf_appendf(out, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type,
                           name, v);
}

enum bsc_err metrics_render_process(struct bsc_buf *out, double start_time_s)
{
    struct metrics_proc_stat st;
    struct rlimit nofile;
    long ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE), fds = open_fds();
    enum bsc_err err = BSC_OK;

    if (read_stat(&st) && ticks > 0 && page > 0) {
        err = put(out, "process_cpu_seconds_total", "counter",
                  "Total user and system CPU time spent in seconds.",
                  (double)(st.utime_ticks + st.stime_ticks) / (double)ticks);
        if (!err)
            err = put(out, "process_resident_memory_bytes", "gauge",
                      "Resident memory size in bytes.", (double)st.rss_pages * (double)page);
        if (!err)
            err = put(out, "process_virtual_memory_bytes", "gauge",
                      "Virtual memory size in bytes.", (double)st.vsize_bytes);
    }
    if (!err && fds >= 0)
        err = put(out, "process_open_fds", "gauge", "Number of open file descriptors.",
                  (double)fds);
    if (!err && getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY)
        err = put(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.",
                  (double)nofile.rlim_cur);
    if (!err)
        err = put(out, "process_start_time_seconds", "gauge",
                  "Start time of the process since unix epoch in seconds.", start_time_s);
    return err;
}
