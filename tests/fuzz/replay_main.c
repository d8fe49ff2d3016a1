/* SPDX-License-Identifier: MIT */
/* replay_main.c -- the main() that turns a libFuzzer target into a plain replay driver: each
 * argument is a file (or a directory of files) run once through LLVMFuzzerTestOneInput, no
 * fuzzing. `make test-fuzz-replay` links every tests/fuzz/fuzz_*.c with it under the test
 * build's sanitizers (gcc ASan/UBSan, no libFuzzer needed), so the committed corpora and
 * regression inputs are checked on every test run. A broken invariant aborts; a sanitizer
 * report exits non-zero. Inputs are copied to exactly sized buffers, as libFuzzer does. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

/* Runs the file <path>; returns 0, or -1 when it cannot be read. */
static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *data;
    long len;

    if (!f || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        if (f)
            fclose(f);
        fprintf(stderr, "replay: cannot read %s\n", path);
        return -1;
    }
    data = malloc(len ? (size_t)len : 1);
    if (!data || fread(data, 1, (size_t)len, f) != (size_t)len) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        fclose(f);
        free(data);
        return -1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(data, (size_t)len);
    free(data);
    return 0;
}

/* Runs every regular file directly inside the directory <path>; returns the count or -1. */
static long run_dir(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    long n = 0;
    char file[4096];

    if (!d) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    while ((e = readdir(d))) {
        struct stat st;

        if (e->d_name[0] == '.')
            continue;
        snprintf(file, sizeof(file), "%s/%s", path, e->d_name);
        if (stat(file, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (run_file(file) < 0) {
            closedir(d);
            return -1;
        }
        n++;
    }
    closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    long total = 0;

    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        struct stat st;
        long n;

        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: no such input %s\n", argv[i]);
            return 2;
        }
        n = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]) == 0 ? 1 : -1;
        if (n < 0)
            return 2;
        total += n;
    }
    printf("replay: %s: %ld inputs\n", argc > 0 ? argv[0] : "?", total);
    return 0;
}
