/* tcsparse-bench-grb: tcsparse_GrB_mxm against SuiteSparse:GraphBLAS's own GrB_mxm (on all
 * the host's cores unless -t says otherwise), for SpMM (C = A*B, B full K x N) and SDDMM
 * (C<A> = X*Y', X and Y full, N columns), on Matrix Market files or generator specs.
 *
 * Each call is timed on the host clock around the whole GrB_mxm / tcsparse_GrB_mxm (result
 * materialised in GraphBLAS), warm-up first, median of -r runs, in these modes:
 *   graphblas   the real GrB_mxm;
 *   cold        tcsparse_GrB_mxm with nothing on the device: A's CSR and B go up, the
 *               result comes down, every call (transfers included);
 *   pinned      A and B pinned (tcsparse_GrB_pin): they stay on the device with A's
 *               tensor-core plan; every call still reads them out of GraphBLAS and hashes
 *               them on the host to prove they did not change; the result still comes down
 *               (GraphBLAS matrices live on the host);
 *   trusted     pinned with TCSPARSE_GRB_PIN_TRUST: no hashing (transfers excluded as far as
 *               a GraphBLAS result allows);
 *   gpu         the tcsparse call alone (from the pinned runs' breakdown): the floor.
 * Every result is checked against GraphBLAS's (same pattern, relative Frobenius error). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <GraphBLAS.h>
#include "tcsparse_grb.h"
#include "gen.h"

enum { M_GRB, M_COLD, M_PIN, M_TRUST, M_COUNT };
static const char *mode_name[M_COUNT] = {"graphblas", "cold", "pinned", "trusted"};

typedef struct {
    int ns[16], nn;
    int reps;
    int threads;
    int spmm, sddmm;
    FILE *csv;
    char ab_name[64];      /* --ab NAME=V1,V2,...: cold calls under each value, interleaved */
    char ab_val[8][32];
    int ab_n;
} opts_t;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static uint64_t rng = 0x243f6a8885a308d3ull;
static float rnd(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)((double)(z >> 40) * (2.0 / 16777216.0) - 1.0);
}

#define CHK(call)                                                                              \
    do {                                                                                       \
        GrB_Info i_ = (call);                                                                  \
        if (i_ != GrB_SUCCESS) {                                                               \
            fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #call, (int)i_);    \
            exit(2);                                                                           \
        }                                                                                      \
    } while (0)

static GrB_Matrix sparse_from(const tc_csr *m)
{
    GrB_Matrix A;
    GrB_Index *p = malloc(sizeof *p * (size_t)(m->rows + 1));
    GrB_Index *j = malloc(sizeof *j * (size_t)(m->nnz > 0 ? m->nnz : 1));
    float *x = malloc(sizeof *x * (size_t)(m->nnz > 0 ? m->nnz : 1));
    if (p == NULL || j == NULL || x == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    for (int64_t r = 0; r <= m->rows; r++)
        p[r] = (GrB_Index)m->row_off[r];
    for (int64_t e = 0; e < m->nnz; e++) {
        j[e] = (GrB_Index)m->col[e];
        x[e] = (float)m->val[e];
    }
    CHK(GrB_Matrix_new(&A, GrB_FP32, (GrB_Index)m->rows, (GrB_Index)m->cols));
    CHK(GxB_Matrix_pack_CSR(A, &p, &j, (void **)&x, sizeof *p * (size_t)(m->rows + 1),
                            sizeof *j * (size_t)(m->nnz > 0 ? m->nnz : 1),
                            sizeof *x * (size_t)(m->nnz > 0 ? m->nnz : 1), false, false, NULL));
    return A;
}

static GrB_Matrix full_random(GrB_Index rows, GrB_Index cols)
{
    GrB_Matrix F;
    size_t n = (size_t)(rows * cols);
    float *x = malloc(sizeof *x * (n > 0 ? n : 1));
    if (x == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    for (size_t i = 0; i < n; i++)
        x[i] = rnd();
    CHK(GrB_Matrix_new(&F, GrB_FP32, rows, cols));
    CHK(GxB_Matrix_pack_FullR(F, (void **)&x, sizeof *x * (n > 0 ? n : 1), false, NULL));
    return F;
}

/* ||C - R|| / ||R|| (Frobenius), or -1 when the patterns differ. */
static double rel_err(GrB_Matrix C, GrB_Matrix R)
{
    GrB_Index nc, nr, nu;
    GrB_Matrix D, U;
    CHK(GrB_Matrix_nvals(&nc, C));
    CHK(GrB_Matrix_nvals(&nr, R));
    GrB_Index rows, cols;
    CHK(GrB_Matrix_nrows(&rows, R));
    CHK(GrB_Matrix_ncols(&cols, R));
    CHK(GrB_Matrix_new(&U, GrB_BOOL, rows, cols));
    CHK(GrB_Matrix_eWiseMult_BinaryOp(U, NULL, NULL, GrB_ONEB_BOOL, C, R, NULL));
    CHK(GrB_Matrix_nvals(&nu, U));
    GrB_Matrix_free(&U);
    if (nc != nr || nu != nr)
        return -1.0;
    CHK(GrB_Matrix_new(&D, GrB_FP64, rows, cols));
    CHK(GrB_Matrix_eWiseAdd_BinaryOp(D, NULL, NULL, GrB_MINUS_FP64, C, R, NULL));
    double dd = 0, rr = 0;
    CHK(GrB_Matrix_eWiseMult_BinaryOp(D, NULL, NULL, GrB_TIMES_FP64, D, D, NULL));
    CHK(GrB_Matrix_reduce_FP64(&dd, NULL, GrB_PLUS_MONOID_FP64, D, NULL));
    CHK(GrB_Matrix_eWiseMult_BinaryOp(D, NULL, NULL, GrB_TIMES_FP64, R, R, NULL));
    CHK(GrB_Matrix_reduce_FP64(&rr, NULL, GrB_PLUS_MONOID_FP64, D, NULL));
    GrB_Matrix_free(&D);
    return rr > 0 ? sqrt(dd / rr) : sqrt(dd);
}

typedef struct {
    GrB_Matrix C, M, A, B;
    GrB_Descriptor desc;
} call_t;

static GrB_Info run(const call_t *c, int tc)
{
    GrB_Info info = tc ? tcsparse_GrB_mxm(c->C, c->M, NULL, GrB_PLUS_TIMES_SEMIRING_FP32, c->A,
                                          c->B, c->desc)
                       : GrB_mxm(c->C, c->M, NULL, GrB_PLUS_TIMES_SEMIRING_FP32, c->A, c->B,
                                 c->desc);
    if (info == GrB_SUCCESS)
        info = GrB_Matrix_wait(c->C, GrB_MATERIALIZE);
    return info;
}

typedef struct {
    double ms[M_COUNT], gpu_ms, err[M_COUNT];
    tcsparse_GrB_stats_t cold_stats, pin_stats;
} result_t;

/* Times one call in every mode; the pinned modes pin the call's mask and inputs (and
 * unpin them after). */
static void time_modes(const opts_t *o, call_t *c, GrB_Matrix ref, result_t *r)
{
    GrB_Matrix pins[3] = {c->M, c->A, c->B};
    double *t = malloc(sizeof *t * (size_t)o->reps), *g = malloc(sizeof *g * (size_t)o->reps);
    for (int mode = 0; mode < M_COUNT; mode++) {
        if (mode == M_PIN || mode == M_TRUST) {
            unsigned fl = mode == M_TRUST ? TCSPARSE_GRB_PIN_TRUST : TCSPARSE_GRB_PIN_VERIFY;
            for (int k = 0; k < 3; k++)
                if (pins[k] != NULL)
                    CHK(tcsparse_GrB_pin_ext(pins[k], fl));
        }
        CHK(run(c, mode != M_GRB)); /* warm-up (first call: plan, device buffers) */
        for (int i = 0; i < o->reps; i++) {
            double t0 = now_ms();
            CHK(run(c, mode != M_GRB));
            t[i] = now_ms() - t0;
            tcsparse_GrB_stats_t s;
            tcsparse_GrB_get_stats(&s);
            g[i] = s.ms_compute;
        }
        r->ms[mode] = median(t, o->reps);
        if (mode == M_COLD)
            tcsparse_GrB_get_stats(&r->cold_stats);
        if (mode == M_PIN) {
            tcsparse_GrB_get_stats(&r->pin_stats);
            r->gpu_ms = median(g, o->reps);
        }
        r->err[mode] = mode == M_GRB ? 0.0 : rel_err(c->C, ref);
        if (mode == M_PIN || mode == M_TRUST) {
            for (int k = 0; k < 3; k++)
                if (pins[k] != NULL)
                    tcsparse_GrB_unpin(pins[k]);
        }
    }
    free(t);
    free(g);
}

/* --ab: rounds of one GraphBLAS call and one cold call under each value of the environment
 * variable (the adapter reads it again after each change: tcsparse_GrB_reload_config), so
 * that the host's drift touches every alternative alike; median and minimum of each. */
static void time_ab(const opts_t *o, call_t *c, const char *input, const char *op, int N)
{
    const int k = o->ab_n + 1; /* alternative 0: GraphBLAS */
    double *t = malloc(sizeof *t * (size_t)(o->reps * k)), *one = malloc(sizeof *one * (size_t)o->reps);
    const char *old = getenv(o->ab_name);
    char *keep = old != NULL ? strdup(old) : NULL;
    for (int a = 0; a < k; a++) { /* warm-up */
        if (a > 0) {
            setenv(o->ab_name, o->ab_val[a - 1], 1);
            tcsparse_GrB_reload_config();
        }
        CHK(run(c, a > 0));
    }
    for (int i = 0; i < o->reps; i++)
        for (int a = 0; a < k; a++) {
            if (a > 0) {
                setenv(o->ab_name, o->ab_val[a - 1], 1);
                tcsparse_GrB_reload_config();
            }
            double t0 = now_ms();
            CHK(run(c, a > 0));
            t[a * o->reps + i] = now_ms() - t0;
        }
    if (keep != NULL) {
        setenv(o->ab_name, keep, 1);
        free(keep);
    } else {
        unsetenv(o->ab_name);
    }
    tcsparse_GrB_reload_config();
    printf("  a/b %-22.22s %-5s N=%-4d", input, op, N);
    double gb = 0;
    for (int a = 0; a < k; a++) {
        double lo = t[a * o->reps];
        for (int i = 0; i < o->reps; i++) {
            one[i] = t[a * o->reps + i];
            lo = one[i] < lo ? one[i] : lo;
        }
        const double med = median(one, o->reps);
        if (a == 0) {
            gb = med;
            printf(" graphblas %.2f (min %.2f) |", med, lo);
        } else {
            printf(" %s=%s %.2f (min %.2f) %.2fx |", o->ab_name, o->ab_val[a - 1], med, lo,
                   gb / med);
        }
    }
    printf("\n");
    fflush(stdout);
    free(t);
    free(one);
}

/* the last --ab call's result against GraphBLAS's */
static void check_ab(call_t *c, GrB_Matrix ref)
{
    const double e = rel_err(c->C, ref);
    if (e < 0 || e > 1e-4) {
        fprintf(stderr, "a/b: the last call's result differs from GraphBLAS's (%.3e)\n", e);
        exit(1);
    }
}

static void report(const opts_t *o, const char *input, const tc_csr *m, const char *op, int N,
                   const result_t *r)
{
    double worst = 0;
    for (int k = M_COLD; k < M_COUNT; k++)
        worst = r->err[k] < 0 || worst < 0 ? -1 : (r->err[k] > worst ? r->err[k] : worst);
    const tcsparse_GrB_stats_t *s = &r->cold_stats;
    printf("%-28.28s %10lld %-5s %4d %10.3f %10.3f %10.3f %10.3f %9.3f %7.2fx %7.2fx %7.2fx "
           "%9.2e  %s | cold: read %.2f up %.2f gpu %.2f down %.2f finish %.2f\n",
           input, (long long)m->nnz, op, N, r->ms[M_GRB], r->ms[M_COLD], r->ms[M_PIN],
           r->ms[M_TRUST], r->gpu_ms, r->ms[M_GRB] / r->ms[M_COLD], r->ms[M_GRB] / r->ms[M_PIN],
           r->ms[M_GRB] / r->ms[M_TRUST], worst,
           s->last_path == TCSPARSE_GRB_PATH_GRAPHBLAS ? s->last_reason : s->last_kernel,
           s->ms_acquire, s->ms_upload, s->ms_compute, s->ms_download, s->ms_finish);
    if (o->csv != NULL)
        fprintf(o->csv, "%s,%lld,%lld,%lld,%s,%d,%.4f,%.4f,%.4f,%.4f,%.4f,%.3f,%.3f,%.3f,%.3e,"
                "\"%s\",%.4f,%.4f,%.4f,%.4f,%.4f\n",
                input, (long long)m->rows, (long long)m->cols, (long long)m->nnz, op, N,
                r->ms[M_GRB], r->ms[M_COLD], r->ms[M_PIN], r->ms[M_TRUST], r->gpu_ms,
                r->ms[M_GRB] / r->ms[M_COLD], r->ms[M_GRB] / r->ms[M_PIN],
                r->ms[M_GRB] / r->ms[M_TRUST], worst,
                s->last_path == TCSPARSE_GRB_PATH_GRAPHBLAS ? s->last_reason : s->last_kernel,
                s->ms_acquire, s->ms_upload, s->ms_compute, s->ms_download, s->ms_finish);
    if (o->csv != NULL)
        fflush(o->csv); /* a run cut off keeps its rows */
    fflush(stdout);
}

/* One call (its result checked against ref): the modes and their report, or --ab's rounds. */
static void measure(const opts_t *o, call_t *c, GrB_Matrix ref, const char *input,
                    const tc_csr *m, const char *op, int N)
{
    if (o->ab_n > 0) {
        time_ab(o, c, input, op, N);
        check_ab(c, ref);
        return;
    }
    result_t r;
    memset(&r, 0, sizeof r);
    time_modes(o, c, ref, &r);
    report(o, input, m, op, N, &r);
}

static void bench_input(const opts_t *o, const char *input)
{
    tc_csr m;
    char err[256];
    if (tc_csr_load(input, &m, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", input, err);
        exit(2);
    }
    GrB_Matrix A = sparse_from(&m);
    for (int q = 0; q < o->nn; q++) {
        const int N = o->ns[q];
        if (o->spmm) { /* C = A*B */
            GrB_Matrix B = full_random((GrB_Index)m.cols, (GrB_Index)N), C, ref;
            CHK(GrB_Matrix_new(&C, GrB_FP32, (GrB_Index)m.rows, (GrB_Index)N));
            CHK(GrB_Matrix_new(&ref, GrB_FP32, (GrB_Index)m.rows, (GrB_Index)N));
            call_t c = {ref, NULL, A, B, NULL};
            CHK(run(&c, 0));
            c.C = C;
            measure(o, &c, ref, input, &m, "spmm", N);
            GrB_Matrix_free(&B);
            GrB_Matrix_free(&C);
            GrB_Matrix_free(&ref);
        }
        if (o->sddmm) { /* C<A, struct> = X*Y' */
            GrB_Matrix X = full_random((GrB_Index)m.rows, (GrB_Index)N);
            GrB_Matrix Y = full_random((GrB_Index)m.cols, (GrB_Index)N), C, ref;
            CHK(GrB_Matrix_new(&C, GrB_FP32, (GrB_Index)m.rows, (GrB_Index)m.cols));
            CHK(GrB_Matrix_new(&ref, GrB_FP32, (GrB_Index)m.rows, (GrB_Index)m.cols));
            call_t c = {ref, A, X, Y, GrB_DESC_ST1};
            CHK(run(&c, 0));
            c.C = C;
            measure(o, &c, ref, input, &m, "sddmm", N);
            GrB_Matrix_free(&X);
            GrB_Matrix_free(&Y);
            GrB_Matrix_free(&C);
            GrB_Matrix_free(&ref);
        }
    }
    GrB_Matrix_free(&A);
    tc_csr_free(&m);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: tcsparse-bench-grb [-n 16,64,256] [-r REPS] [-t THREADS] [--op spmm|sddmm|both]\n"
            "                          [--csv FILE] [--ab NAME=V1,V2,...] INPUT...\n"
            "--ab: instead of the modes, rounds of a GraphBLAS call and a cold call under each\n"
            "value of environment variable NAME (read again by the adapter at each change:\n"
            "TCSPARSE_X_GRB_WAVE, TCSPARSE_X_GRB_FLOW), interleaved; median and minimum of each.\n"
            "INPUT: a Matrix Market file (.mtx, .mtx.gz) or a generator spec\n"
            "(" TC_GEN_SPECS ").\n");
    exit(2);
}

int main(int argc, char **argv)
{
    opts_t o;
    memset(&o, 0, sizeof o);
    o.ns[0] = 16, o.ns[1] = 64, o.ns[2] = 256, o.nn = 3;
    o.reps = 10;
    o.spmm = o.sddmm = 1;
    int first = argc;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
            o.nn = 0;
            for (char *s = strtok(argv[++i], ","); s != NULL && o.nn < 16; s = strtok(NULL, ","))
                if (atoi(s) > 0)
                    o.ns[o.nn++] = atoi(s);
        } else if (strcmp(argv[i], "-r") == 0 && i + 1 < argc) {
            o.reps = atoi(argv[++i]);
        } else if (strcmp(argv[i], "-t") == 0 && i + 1 < argc) {
            o.threads = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--op") == 0 && i + 1 < argc) {
            const char *v = argv[++i];
            o.spmm = strcmp(v, "sddmm") != 0;
            o.sddmm = strcmp(v, "spmm") != 0;
        } else if (strcmp(argv[i], "--ab") == 0 && i + 1 < argc) {
            const char *v = argv[++i], *eq = strchr(v, '=');
            if (eq == NULL || eq == v || (size_t)(eq - v) >= sizeof o.ab_name) {
                fprintf(stderr, "--ab wants NAME=V1,V2,...\n");
                return 2;
            }
            memcpy(o.ab_name, v, (size_t)(eq - v));
            o.ab_name[eq - v] = '\0';
            char vals[256];
            snprintf(vals, sizeof vals, "%s", eq + 1);
            o.ab_n = 0;
            for (char *t = strtok(vals, ","); t != NULL && o.ab_n < 8; t = strtok(NULL, ","))
                snprintf(o.ab_val[o.ab_n++], sizeof o.ab_val[0], "%s", t);
            if (o.ab_n == 0) {
                fprintf(stderr, "--ab wants NAME=V1,V2,...\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
            o.csv = fopen(argv[++i], "w");
            if (o.csv == NULL) {
                perror(argv[i]);
                return 2;
            }
        } else if (argv[i][0] == '-') {
            usage();
        } else {
            first = i;
            break;
        }
    }
    if (first >= argc || o.reps < 1 || o.nn < 1)
        usage();
    CHK(GrB_init(GrB_NONBLOCKING));
    if (o.threads > 0)
        CHK(GxB_Global_Option_set(GxB_NTHREADS, o.threads));
    int32_t nthreads = 0;
    CHK(GxB_Global_Option_get_INT32(GxB_NTHREADS, &nthreads));
    printf("tcsparse-bench-grb: GraphBLAS %d.%d.%d on %d threads; median of %d runs; ms per call "
           "(result materialised in GraphBLAS)\n",
           GxB_IMPLEMENTATION_MAJOR, GxB_IMPLEMENTATION_MINOR, GxB_IMPLEMENTATION_SUB,
           (int)nthreads, o.reps);
    printf("%-28s %10s %-5s %4s %10s %10s %10s %10s %9s %8s %8s %8s %9s  %s\n", "input", "nnz", "op",
           "N", mode_name[M_GRB], mode_name[M_COLD], mode_name[M_PIN], mode_name[M_TRUST], "gpu",
           "x cold", "x pin", "x trust", "rel.err", "kernel / reason");
    if (o.csv != NULL)
        fprintf(o.csv, "input,rows,cols,nnz,op,N,graphblas_ms,cold_ms,pinned_ms,trusted_ms,gpu_ms,"
                "speedup_cold,speedup_pinned,speedup_trusted,rel_err,kernel,cold_read_ms,"
                "cold_upload_ms,cold_gpu_ms,cold_download_ms,cold_finish_ms\n");
    for (int i = first; i < argc; i++)
        bench_input(&o, argv[i]);
    tcsparse_GrB_release();
    if (o.csv != NULL)
        fclose(o.csv);
    GrB_finalize();
    return 0;
}
