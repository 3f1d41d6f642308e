/* An in-process stand-in for the part of Criterion's API that the GPU tests use, so that a
 * tool attached to the test program sees the test bodies.  Criterion runs every test in a
 * worker process of its own, and on the H100 machine compute-sanitizer does not instrument
 * those workers (docs/reliability.md): a sanitizer run of a Criterion program checked no test.
 *
 * Built into tests/shim/san_* (tests/shim/local.am) from the same test sources, with this
 * directory ahead of Criterion's on the include path.  The program runs the registered tests
 * one after another in its own process (or only those named), prints one line per test (per
 * parameter of a parameterized test) and exits 1 when one failed, 77 when all were skipped.
 * The TCSPARSE_* environment is put back after each test.
 * Usage: PROG [--list] [SUITE/NAME | SUITE/ ...]
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
    int parameterized; /* its parameters report their own outcomes */
    struct tc_shim_test *next;
} tc_shim_test;

static tc_shim_test *tc_shim_head, **tc_shim_tail = &tc_shim_head;
static jmp_buf tc_shim_jmp;
static int tc_shim_failed_expect;
static const tc_shim_test *tc_shim_current;
static long tc_shim_param = -1;     /* index of the parameter being run, -1: none */
static int tc_shim_count[3];        /* passed, failed, skipped */

static void tc_shim_print_name(FILE *f)
{
    fprintf(f, "%s/%s", tc_shim_current->suite, tc_shim_current->name);
    if (tc_shim_param >= 0)
        fprintf(f, "[%ld]", tc_shim_param);
}

/* 0 passed, 1 failed, 2 skipped; the outcome is counted and printed */
static int tc_shim_outcome(int how)
{
    static const char *const tag[3] = {"PASS", "FAIL", "SKIP"};
    if (how == 0 && tc_shim_failed_expect)
        how = 1;
    tc_shim_count[how]++;
    fprintf(stderr, "[%s] ", tag[how]);
    tc_shim_print_name(stderr);
    fputc('\n', stderr);
    return how;
}

/* Runs one parameter of a parameterized test under its own jump buffer. */
__attribute__((unused)) static void tc_shim_run_param(void (*one)(void *), void *param, size_t index)
{
    jmp_buf outer;
    memcpy(outer, tc_shim_jmp, sizeof outer);
    tc_shim_param = (long)index;
    tc_shim_failed_expect = 0;
    switch (setjmp(tc_shim_jmp)) {
    case 0:
        one(param);
        tc_shim_outcome(0);
        break;
    case 1:
        tc_shim_outcome(1);
        break;
    default:
        tc_shim_outcome(2);
        break;
    }
    memcpy(tc_shim_jmp, outer, sizeof outer);
    tc_shim_param = -1;
}

static void tc_shim_register(tc_shim_test *t)
{
    *tc_shim_tail = t;
    tc_shim_tail = &t->next;
}

/* fmt is "" followed by the caller's message, if any (string concatenation in the macros) */
static void tc_shim_report(const char *kind, const char *file, int line, const char *what,
                           const char *fmt, ...)
{
    fprintf(stderr, "[%s] ", kind);
    tc_shim_print_name(stderr);
    fprintf(stderr, ": %s:%d: %s", file, line, what);
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
#define TC_SHIM_REGISTER(suite, name, param)                                                   \
    static tc_shim_test TC_SHIM_NAME(suite, name, reg) = {                                     \
        #suite, #name, TC_SHIM_NAME(suite, name, run), param, NULL};                           \
    __attribute__((constructor)) static void TC_SHIM_NAME(suite, name, ctor)(void)             \
    {                                                                                          \
        tc_shim_register(&TC_SHIM_NAME(suite, name, reg));                                     \
    }

#define Test(suite, name, ...)                                                                 \
    static void TC_SHIM_NAME(suite, name, run)(void);                                          \
    TC_SHIM_REGISTER(suite, name, 0)                                                           \
    static void TC_SHIM_NAME(suite, name, run)(void)

#define ParameterizedTestParameters(suite, name)                                               \
    static struct criterion_test_params TC_SHIM_NAME(suite, name, params)(void)

#define cr_make_param_array(type, arr, len)                                                    \
    ((struct criterion_test_params){sizeof(type), (void *)(arr), (size_t)(len)})

/* Each parameter runs as a test of its own ("suite/name[i]" in the report): a failure or a
 * skip ends that parameter only. */
#define ParameterizedTest(param, suite, name, ...)                                             \
    static void TC_SHIM_NAME(suite, name, one)(param);                                         \
    static void TC_SHIM_NAME(suite, name, one_v)(void *p) { TC_SHIM_NAME(suite, name, one)(p); } \
    static void TC_SHIM_NAME(suite, name, run)(void)                                           \
    {                                                                                          \
        struct criterion_test_params p_ = TC_SHIM_NAME(suite, name, params)();                 \
        for (size_t i_ = 0; i_ < p_.length; i_++)                                              \
            tc_shim_run_param(TC_SHIM_NAME(suite, name, one_v),                                \
                              (void *)((char *)p_.params + i_ * p_.size), i_);                 \
    }                                                                                          \
    TC_SHIM_REGISTER(suite, name, 1)                                                           \
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
#define cr_expect_neq(a, b, ...) cr_expect((a) != (b), __VA_ARGS__)
#define cr_expect_leq(a, b, ...) cr_expect((a) <= (b), __VA_ARGS__)

#define cr_skip_test(...)                                                                      \
    do {                                                                                       \
        tc_shim_report("NOTE", __FILE__, __LINE__, "skipped", "" __VA_ARGS__);                  \
        longjmp(tc_shim_jmp, 2);                                                               \
    } while (0)
#define cr_log_info(...) (fprintf(stderr, "[INFO] " __VA_ARGS__), fputc('\n', stderr))
#define cr_log_warn(...) (fprintf(stderr, "[WARN] " __VA_ARGS__), fputc('\n', stderr))

/* A test is selected by an argument equal to "suite/name", or to "suite/" for a whole suite. */
/* Arguments name tests to run, "suite/name" or "suite/" for a whole suite; "!suite/name"
 * leaves one out.  With no test named, every test not left out runs. */
static int tc_shim_selected(const tc_shim_test *t, int argc, char **argv, int first)
{
    int named = 0, hit = 0;
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        const int out = a[0] == '!';
        a += out;
        named += !out;
        const size_t ls = strlen(t->suite);
        if (strncmp(a, t->suite, ls) == 0 && a[ls] == '/' &&
            (a[ls + 1] == '\0' || strcmp(a + ls + 1, t->name) == 0)) {
            if (out)
                return 0;
            hit = 1;
        }
    }
    return named == 0 || hit;
}

/* The TCSPARSE_* variables a test sets stay its own: they are put back after each test (a
 * failed assertion skips the test's own unsetenv), and the library reads them again
 * (tc_config_reload, src/config.h; weak: a program without the library has none). */
extern char **environ;
/* POSIX; declared here because a test source may not ask for POSIX definitions */
int setenv(const char *name, const char *value, int overwrite);
int unsetenv(const char *name);
extern void tc_config_reload(void) __attribute__((weak));
typedef struct {
    char **saved;
    size_t n;
} tc_shim_env;

static void tc_shim_env_save(tc_shim_env *e)
{
    e->n = 0;
    e->saved = NULL;
    size_t count = 0;
    for (char **v = environ; *v != NULL; v++)
        count += strncmp(*v, "TCSPARSE_", 9) == 0;
    e->saved = (char **)calloc(count + 1, sizeof *e->saved);
    for (char **v = environ; e->saved != NULL && *v != NULL; v++) {
        if (strncmp(*v, "TCSPARSE_", 9) != 0)
            continue;
        const size_t len = strlen(*v) + 1;
        if ((e->saved[e->n] = (char *)malloc(len)) != NULL)
            memcpy(e->saved[e->n++], *v, len);
    }
}

static void tc_shim_env_restore(tc_shim_env *e)
{
    for (;;) { /* unset every TCSPARSE_ variable now set, then set the saved ones again */
        char **v = environ;
        while (*v != NULL && strncmp(*v, "TCSPARSE_", 9) != 0)
            v++;
        if (*v == NULL)
            break;
        char name[256];
        const size_t len = strcspn(*v, "=");
        snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), *v);
        unsetenv(name);
    }
    for (size_t i = 0; i < e->n; i++) {
        char *eq = strchr(e->saved[i], '=');
        if (eq != NULL) {
            *eq = '\0';
            setenv(e->saved[i], eq + 1, 1);
        }
        free(e->saved[i]);
    }
    free(e->saved);
    if (tc_config_reload != NULL)
        tc_config_reload();
}

static void tc_shim_run_one(const tc_shim_test *t)
{
    tc_shim_env env;
    tc_shim_env_save(&env);
    tc_shim_current = t;
    tc_shim_param = -1;
    tc_shim_failed_expect = 0;
    switch (setjmp(tc_shim_jmp)) {
    case 0:
        t->run(); /* a parameterized test reports each parameter itself */
        break;
    case 1:
        tc_shim_outcome(1);
        tc_shim_env_restore(&env);
        return;
    default:
        tc_shim_outcome(2);
        tc_shim_env_restore(&env);
        return;
    }
    if (!t->parameterized)
        tc_shim_outcome(0);
    tc_shim_env_restore(&env);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        for (const tc_shim_test *t = tc_shim_head; t != NULL; t = t->next)
            printf("%s/%s\n", t->suite, t->name);
        return 0;
    }
    int run = 0;
    for (const tc_shim_test *t = tc_shim_head; t != NULL; t = t->next)
        if (tc_shim_selected(t, argc, argv, 1)) {
            run++;
            tc_shim_run_one(t);
        }
    fprintf(stderr, "[====] in-process run: %d tests, %d passed, %d failed, %d skipped\n",
            tc_shim_count[0] + tc_shim_count[1] + tc_shim_count[2], tc_shim_count[0],
            tc_shim_count[1], tc_shim_count[2]);
    if (run == 0) {
        fprintf(stderr, "[====] no test matched the arguments\n");
        return 1;
    }
    if (tc_shim_count[1] > 0)
        return 1;
    return tc_shim_count[0] == 0 ? 77 : 0; /* all skipped: what automake calls a skip */
}

#endif
