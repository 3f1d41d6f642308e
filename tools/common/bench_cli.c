/* The bench tools' shared frame (bench_cli.h). */
#define _POSIX_C_SOURCE 200809L /* strdup, strtok */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "tcsparse_ext.h"
#include "bench_cli.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

float tc_bench_rand(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)((z >> 40) * (2.0 / 16777216.0) - 1.0);
}

double tc_bench_rel_err(const double *ref, const double *x, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i]))
            return INFINITY;
        num += (x[i] - ref[i]) * (x[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static void usage(const tc_bench_tool *t, FILE *f)
{
    fprintf(f,
            "usage: %s [options] [INPUT...]\n"
            "  INPUT        %s\n"
            "               (" TC_GEN_SPECS ");\n"
            "               default " TC_BENCH_DEFAULT_INPUT "\n"
            "%s"
            "  -r REPS      timed runs per variant, median reported (default 30)\n"
            "  -w WARM      warm-up runs (default 5)\n"
            "  --suite FILE inputs listed in FILE, one per line ('#' comments); $DATA/ in a\n"
            "               line stands for the directory in TC_DATA_DIR\n"
            "  --csv FILE   also write CSV rows to FILE\n"
            "  --no-check   skip the comparison against cuSPARSE's result\n"
            "  --builds K   time K plan builds (the first, then K-1 on fresh descriptors of\n"
            "               the same arrays), conv = their median (default 5); the CSV's\n"
            "               convert_first_ms is the first's\n"
            "%s",
            t->name, t->usage_input, t->usage_sizes, t->usage_reorder);
}

/* A whole decimal int in [lo, hi]: 0, or -1. */
static int parse_int(const char *s, long lo, long hi, int *v)
{
    char *end;
    errno = 0;
    const long x = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno != 0 || x < lo || x > hi)
        return -1;
    *v = (int)x;
    return 0;
}

/* The inputs of a run, in order: the suite file's, then the command line's. */
typedef struct {
    char **v;
    int n, cap;
} input_list;

static int input_add(input_list *l, const char *in)
{
    if (l->n == l->cap) {
        const int cap = l->cap ? 2 * l->cap : 64;
        char **v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v, l->cap = cap;
    }
    if (!(l->v[l->n] = strdup(in)))
        return -1;
    l->n++;
    return 0;
}

static void input_free(input_list *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

/* Suite lines may name the real matrices as $DATA/name.mtx.gz (also inside a diag: spec);
 * $DATA is the directory in TC_DATA_DIR. */
static const char *expand_data(const char *line, char *out, size_t n)
{
    const char *dir = getenv("TC_DATA_DIR"), *at = strstr(line, "$DATA/");
    if (at == NULL)
        return line;
    snprintf(out, n, "%.*s%s/%s", (int)(at - line), line, dir ? dir : ".", at + 6);
    return out;
}

/* The suite file's inputs, one a line, '#' comments and blank lines left out: 0, or -1 with
 * the reason on stderr. */
static int read_suite(const tc_bench_tool *t, const char *suite, input_list *l)
{
    FILE *f = fopen(suite, "r");
    if (!f) {
        fprintf(stderr, "%s: %s: %s\n", t->name, suite, strerror(errno));
        return -1;
    }
    char line[1024], expanded[2048];
    int r = 0;
    while (r == 0 && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '\0' || line[0] == '#')
            continue;
        if (input_add(l, expand_data(line, expanded, sizeof expanded))) {
            fprintf(stderr, "%s: %s: out of memory\n", t->name, suite);
            r = -1;
        }
    }
    if (r == 0 && ferror(f)) {
        fprintf(stderr, "%s: %s: read error\n", t->name, suite);
        r = -1;
    }
    fclose(f);
    return r;
}

static int is_precision(const tc_bench_tool *t, const char *s)
{
    for (const char *const *p = t->precisions; *p; p++)
        if (strcmp(*p, s) == 0)
            return 1;
    return 0;
}

/* Parses the options into o, the suite file's name into *suite and the inputs into l:
 * 0, 1 after --help (printed), or 2 after a one-line error. */
static int parse_args(const tc_bench_tool *t, int argc, char **argv, tc_bench_opts *o,
                      const char **suite, const char **csv, input_list *l)
{
    const char size_opt[3] = {'-', t->size_flag, '\0'};
    const char size_name = t->size_flag == 'n' ? 'N' : 'K';
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, size_opt) || !strcmp(a, "-p") || !strcmp(a, "-r") || !strcmp(a, "-w") ||
             !strcmp(a, "--suite") || !strcmp(a, "--csv") || !strcmp(a, "--builds")) &&
            i + 1 >= argc) {
            fprintf(stderr, "%s: %s needs a value\n", t->name, a);
            return 2;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(t, stdout);
            return 1;
        } else if (!strcmp(a, size_opt)) {
            o->nsizes = 0;
            for (char *s = strtok(argv[++i], ","); s; s = strtok(NULL, ",")) {
                if (o->nsizes == TC_BENCH_MAX_SIZES) {
                    fprintf(stderr, "%s: at most %d %c values\n", t->name, TC_BENCH_MAX_SIZES,
                            size_name);
                    return 2;
                }
                if (parse_int(s, 1, INT_MAX, &o->sizes[o->nsizes++])) {
                    fprintf(stderr, "%s: bad %c '%s'\n", t->name, size_name, s);
                    return 2;
                }
            }
            if (o->nsizes == 0) {
                fprintf(stderr, "%s: %s needs a value\n", t->name, a);
                return 2;
            }
        } else if (!strcmp(a, "-p")) {
            o->nprecs = 0;
            for (char *s = strtok(argv[++i], ","); s; s = strtok(NULL, ",")) {
                if (!is_precision(t, s)) {
                    fprintf(stderr, "%s: unknown precision '%s'\n", t->name, s);
                    return 2;
                }
                if (o->nprecs == TC_BENCH_MAX_PRECS) {
                    fprintf(stderr, "%s: at most %d precisions\n", t->name, TC_BENCH_MAX_PRECS);
                    return 2;
                }
                snprintf(o->precs[o->nprecs++], sizeof o->precs[0], "%s", s);
            }
            if (o->nprecs == 0) {
                fprintf(stderr, "%s: %s needs a value\n", t->name, a);
                return 2;
            }
        } else if (!strcmp(a, "-r") || !strcmp(a, "-w")) {
            if (parse_int(argv[++i], INT_MIN, INT_MAX, a[1] == 'r' ? &o->reps : &o->warm)) {
                fprintf(stderr, "%s: %s takes an integer, not '%s'\n", t->name, a, argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "--suite")) {
            *suite = argv[++i];
        } else if (!strcmp(a, "--csv")) {
            *csv = argv[++i];
        } else if (!strcmp(a, "--builds")) {
            if (parse_int(argv[++i], 1, 16, &o->builds)) {
                fprintf(stderr, "%s: --builds takes 1 to 16\n", t->name);
                return 2;
            }
        } else if (!strcmp(a, "--no-check")) {
            o->check = 0;
        } else if (!strcmp(a, "--reorder") || !strcmp(a, "--reorder=always")) {
            o->reorder = TCSPARSE_REORDER_ALWAYS;
        } else if (!strcmp(a, "--reorder=auto")) {
            o->reorder = TCSPARSE_REORDER_AUTO;
        } else if (a[0] == '-') {
            fprintf(stderr, "%s: unknown option %s\n", t->name, a);
            usage(t, stderr);
            return 2;
        } else if (input_add(l, a)) {
            fprintf(stderr, "%s: out of memory\n", t->name);
            return 2;
        }
    }
    if (o->reps < 1)
        o->reps = 1;
    if (o->warm < 0)
        o->warm = 0;
    return 0;
}

/* Reads one input and benchmarks it at every precision and size: 0, or 1 when it could not
 * be read (the message on stderr). */
static int run_input(const tc_bench_tool *t, const char *in, const tc_bench_opts *o)
{
    tc_csr m;
    char err[256];
    if (tc_csr_load(in, &m, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", t->name, err);
        return 1;
    }
    for (int p = 0; p < o->nprecs; p++)
        for (int i = 0; i < o->nsizes; i++)
            t->bench_one(in, &m, o->precs[p], o->sizes[i], o);
    tc_csr_free(&m);
    return 0;
}

static int run(const tc_bench_tool *t, int argc, char **argv, input_list *inputs)
{
    tc_bench_opts o = {.sizes = {32, 128, 256}, .nsizes = 3, .precs = {"f32", "tf32"},
                       .nprecs = 2, .reps = 30, .warm = 5, .check = 1, .builds = 5};
    const char *suite = NULL, *csv = NULL;
    input_list cmdline = {0};
    int rc = parse_args(t, argc, argv, &o, &suite, &csv, &cmdline);
    if (rc == 0 && suite && read_suite(t, suite, inputs))
        rc = 2;
    for (int i = 0; rc == 0 && i < cmdline.n; i++)
        if (input_add(inputs, cmdline.v[i])) {
            fprintf(stderr, "%s: out of memory\n", t->name);
            rc = 2;
        }
    if (rc == 0 && inputs->n == 0 && !suite && input_add(inputs, TC_BENCH_DEFAULT_INPUT)) {
        fprintf(stderr, "%s: out of memory\n", t->name);
        rc = 2;
    }
    input_free(&cmdline);
    if (rc)
        return rc == 1 ? 0 : rc;

    /* every input, before the GPU: a bad one is an error with or without a GPU */
    for (int i = 0; i < inputs->n; i++) {
        char err[256];
        if (tc_csr_check(inputs->v[i], err, sizeof err)) {
            fprintf(stderr, "%s: %s\n", t->name, err);
            rc = 1;
        }
    }
    if (rc)
        return rc;
    if (csv) {
        o.csv = fopen(csv, "w");
        if (!o.csv) {
            fprintf(stderr, "%s: %s: %s\n", t->name, csv, strerror(errno));
            return 2;
        }
        fputs(t->csv_header, o.csv);
    }

    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("%s: no CUDA device on this machine; nothing to time "
               "(tcsparse-inspect shows the ME-TCF statistics without a GPU)\n", t->name);
    } else {
        struct cudaDeviceProp prop;
        CK(cudaGetDeviceProperties(&prop, 0));
        printf("device: %s (sm_%d%d, %d SMs), median of %d runs after %d warm-up\n", prop.name,
               prop.major, prop.minor, prop.multiProcessorCount, o.reps, o.warm);
        for (int i = 0; i < inputs->n; i++)
            rc |= run_input(t, inputs->v[i], &o);
    }
    if (o.csv)
        fclose(o.csv);
    return rc;
}

int tc_bench_main(const tc_bench_tool *tool, int argc, char **argv)
{
    input_list inputs = {0};
    const int rc = run(tool, argc, argv, &inputs);
    input_free(&inputs);
    return rc;
}
