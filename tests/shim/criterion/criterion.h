/* An in-process stand-in for the part of Criterion's API that the GPU tests use, so that a
 * tool attached to the test program sees the test bodies.  Criterion runs every test in a
 * worker process of its own, and on the H100 machine compute-sanitizer does not instrument
 * those workers (docs/reliability.md): a sanitizer run of a Criterion program checked no test.
 *
 * Built into tests/shim/san_* (tests/shim/local.am) from the same test sources, with this
 * directory ahead of Criterion's on the include path.  The program runs the registered tests
 * one after another in its own process (or only those named), prints one line per test and
 * exits non-zero when one failed.  Usage: PROG [--list] [SUITE/NAME | SUITE/ ...]
 *
 * Semantics kept: cr_assert* end the test at the first failure (longjmp back to the runner;
 * what the test had allocated is not freed); cr_expect* report and go on; cr_skip_test ends
 * the test as skipped; Test options (.timeout, ...) are accepted and ignored. */
#ifndef TC_SHIM_CRITERION_H
#define TC_SHIM_CRITERION_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct criterion_test_params {
    size_t size;
    void *params;
    size_t length;
};

typedef struct tc_shim_test {
    const char *suite, *name;
    void (*run)(void);
    struct tc_shim_test *next;
} tc_shim_test;

static tc_shim_test *tc_shim_head, **tc_shim_tail = &tc_shim_head;
static jmp_buf tc_shim_jmp;
static int tc_shim_failed_expect;
static const tc_shim_test *tc_shim_current;

static void tc_shim_register(tc_shim_test *t)
{
    *tc_shim_tail = t;
    tc_shim_tail = &t->next;
}

/* fmt is "" followed by the caller's message, if any (string concatenation in the macros) */
static void tc_shim_report(const char *kind, const char *file, int line, const char *what,
                           const char *fmt, ...)
{
    fprintf(stderr, "[%s] %s/%s: %s:%d: %s", kind, tc_shim_current->suite, tc_shim_current->name,
            file, line, what);
    if (fmt[0] != '\0') {
        va_list ap;
        va_start(ap, fmt);
        fputs(": ", stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
}

#define TC_SHIM_NAME(suite, name, what) tc_shim_##suite##_##name##_##what
#define TC_SHIM_REGISTER(suite, name)                                                          \
    static tc_shim_test TC_SHIM_NAME(suite, name, reg) = {#suite, #name,                       \
                                                          TC_SHIM_NAME(suite, name, run), NULL}; \
    __attribute__((constructor)) static void TC_SHIM_NAME(suite, name, ctor)(void)             \
    {                                                                                          \
        tc_shim_register(&TC_SHIM_NAME(suite, name, reg));                                     \
    }

#define Test(suite, name, ...)                                                                 \
    static void TC_SHIM_NAME(suite, name, run)(void);                                          \
    TC_SHIM_REGISTER(suite, name)                                                              \
    static void TC_SHIM_NAME(suite, name, run)(void)

#define ParameterizedTestParameters(suite, name)                                               \
    static struct criterion_test_params TC_SHIM_NAME(suite, name, params)(void)

#define cr_make_param_array(type, arr, len)                                                    \
    ((struct criterion_test_params){sizeof(type), (void *)(arr), (size_t)(len)})

#define ParameterizedTest(param, suite, name, ...)                                             \
    static void TC_SHIM_NAME(suite, name, one)(param);                                         \
    static void TC_SHIM_NAME(suite, name, run)(void)                                           \
    {                                                                                          \
        struct criterion_test_params p_ = TC_SHIM_NAME(suite, name, params)();                 \
        for (size_t i_ = 0; i_ < p_.length; i_++)                                              \
            TC_SHIM_NAME(suite, name, one)((void *)((char *)p_.params + i_ * p_.size));        \
    }                                                                                          \
    TC_SHIM_REGISTER(suite, name)                                                              \
    static void TC_SHIM_NAME(suite, name, one)(param)

#define cr_assert(cond, ...)                                                                   \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            tc_shim_report("FAIL", __FILE__, __LINE__, #cond, "" __VA_ARGS__);                 \
            longjmp(tc_shim_jmp, 1);                                                           \
        }                                                                                      \
    } while (0)
#define cr_expect(cond, ...)                                                                   \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            tc_shim_report("FAIL", __FILE__, __LINE__, #cond, "" __VA_ARGS__);                 \
            tc_shim_failed_expect = 1;                                                         \
        }                                                                                      \
    } while (0)
#define cr_assert_eq(a, b, ...) cr_assert((a) == (b), __VA_ARGS__)
#define cr_assert_neq(a, b, ...) cr_assert((a) != (b), __VA_ARGS__)
#define cr_assert_lt(a, b, ...) cr_assert((a) < (b), __VA_ARGS__)
#define cr_assert_leq(a, b, ...) cr_assert((a) <= (b), __VA_ARGS__)
#define cr_assert_gt(a, b, ...) cr_assert((a) > (b), __VA_ARGS__)
#define cr_assert_geq(a, b, ...) cr_assert((a) >= (b), __VA_ARGS__)
#define cr_assert_null(p, ...) cr_assert((p) == NULL, __VA_ARGS__)
#define cr_assert_not_null(p, ...) cr_assert((p) != NULL, __VA_ARGS__)
#define cr_assert_float_eq(a, b, eps, ...) cr_assert(fabs((double)(a) - (double)(b)) <= (eps), __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...) cr_assert(strcmp((a), (b)) == 0, __VA_ARGS__)
#define cr_assert_str_empty(s, ...) cr_assert((s)[0] == '\0', __VA_ARGS__)
#define cr_assert_str_not_empty(s, ...) cr_assert((s)[0] != '\0', __VA_ARGS__)
#define cr_expect_eq(a, b, ...) cr_expect((a) == (b), __VA_ARGS__)

#define cr_skip_test(...)                                                                      \
    do {                                                                                       \
        tc_shim_report("SKIP", __FILE__, __LINE__, "skipped", "" __VA_ARGS__);                  \
        longjmp(tc_shim_jmp, 2);                                                               \
    } while (0)
#define cr_log_info(...) (fprintf(stderr, "[INFO] " __VA_ARGS__), fputc('\n', stderr))
#define cr_log_warn(...) (fprintf(stderr, "[WARN] " __VA_ARGS__), fputc('\n', stderr))

/* A test is selected by an argument equal to "suite/name", or to "suite/" for a whole suite. */
static int tc_shim_selected(const tc_shim_test *t, int argc, char **argv, int first)
{
    if (first >= argc)
        return 1;
    for (int i = first; i < argc; i++) {
        const size_t ls = strlen(t->suite);
        if (strncmp(argv[i], t->suite, ls) == 0 && argv[i][ls] == '/' &&
            (argv[i][ls + 1] == '\0' || strcmp(argv[i] + ls + 1, t->name) == 0))
            return 1;
    }
    return 0;
}

/* 0 passed, 1 failed, 2 skipped */
static int tc_shim_run_one(const tc_shim_test *t)
{
    tc_shim_current = t;
    tc_shim_failed_expect = 0;
    const int how = setjmp(tc_shim_jmp);
    if (how != 0)
        return how;
    t->run();
    fprintf(stderr, "[%s] %s/%s\n", tc_shim_failed_expect ? "FAIL" : "PASS", t->suite, t->name);
    return tc_shim_failed_expect ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (const tc_shim_test *t = tc_shim_head; t != NULL; t = t->next)
            printf("%s/%s\n", t->suite, t->name);
        return 0;
    }
    int run = 0, count[3] = {0, 0, 0};
    for (const tc_shim_test *t = tc_shim_head; t != NULL; t = t->next)
        if (tc_shim_selected(t, argc, argv, 1)) {
            run++;
            count[tc_shim_run_one(t)]++;
        }
    fprintf(stderr, "[====] in-process run: %d tests, %d passed, %d failed, %d skipped\n", run,
            count[0], count[1], count[2]);
    if (run == 0)
        fprintf(stderr, "[====] no test matched the arguments\n");
    return count[1] > 0 || run == 0 ? 1 : 0;
}

#endif
