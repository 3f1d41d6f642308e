/* Replays the fuzzers' inputs without libFuzzer (built with the project's compiler by `make
 * check`): every file of fuzz/regress/HARNESS (inputs that once crashed, kept after the fix)
 * and of fuzz/corpus/HARNESS (the committed seed corpus) goes through the harness function,
 * which aborts on a broken promise; in the --enable-sanitizers build, ASan and UBSan watch
 * too.  TC_FUZZ_DIR (compile-time, overridable by the environment) is the fuzz/ directory. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"

#ifndef TC_FUZZ_DIR
#define TC_FUZZ_DIR "fuzz"
#endif

static const char *fuzz_dir(void)
{
    const char *e = getenv("TC_FUZZ_DIR");
    return e != NULL && e[0] != '\0' ? e : TC_FUZZ_DIR;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs fn on every file of DIR/kind/harness, in name order; returns how many. */
static int replay(const char *kind, const char *harness, int (*fn)(const uint8_t *, size_t))
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s/%s", fuzz_dir(), kind, harness);
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot open %s (set TC_FUZZ_DIR to the fuzz/ directory)", dir);
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            names = realloc(names, cap * sizeof *names);
            cr_assert_not_null(names);
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "rb");
        cr_assert_not_null(f, "cannot open %s", path);
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        fseek(f, 0, SEEK_SET);
        uint8_t *buf = malloc(len > 0 ? (size_t)len : 1);
        cr_assert_not_null(buf);
        cr_assert_eq(fread(buf, 1, (size_t)len, f), (size_t)len, "short read of %s", path);
        fclose(f);
        /* the exact length: an input's last byte sits at the end of its allocation */
        uint8_t *exact = malloc(len > 0 ? (size_t)len : 1);
        memcpy(exact, buf, (size_t)len);
        free(buf);
        fprintf(stderr, "replay %s\n", path); /* in the log when the harness aborts */
        fn(exact, (size_t)len);
        free(exact);
        free(names[i]);
    }
    free(names);
    return (int)n;
}

Test(fuzz_regress, mmio_kept_crashes)
{
    replay("regress", "mmio", tc_fuzz_mmio);
}

Test(fuzz_regress, mmio_corpus)
{
    cr_assert_gt(replay("corpus", "mmio", tc_fuzz_mmio), 0, "the mmio corpus is empty");
}

Test(fuzz_regress, descr_kept_crashes)
{
    cr_assert_gt(replay("regress", "descr", tc_fuzz_descr), 0);
}

Test(fuzz_regress, descr_corpus)
{
    cr_assert_gt(replay("corpus", "descr", tc_fuzz_descr), 0, "the descr corpus is empty");
}
