#define _POSIX_C_SOURCE 200809L /* setenv */
/* Tensor-core SpMM on the GPU, how a call's path and kernel are chosen: the measured
 * selection (TCSPARSE_SELECT=measure), the automatic route's measurement on the executions
 * (also across a stream capture), the kernel forms the tuning knobs ask for, the wide-L1 rule
 * and the kernel tuning on the executions.  Every call is checked against the CPU reference
 * in double, as in test_gpu_spmm.c. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "config.h"
#include "kernels.h"
#include "tcsparse.h"
#include "tcsparse_ext.h"
#include "tcsparse_hook.h"
#include "gen.h"
#include "testutil.h"
#include "spmm_case.h"

/* TCSPARSE_SELECT=measure: _preprocess times the candidates into a scratch C (the caller's C
 * is untouched until the execution), the decision is kept in the plan and read back. */
Test(gpu_spmm, measured_selection)
{
    TC_REQUIRE_GPU();
    tc_csr m;
    gen_or_fail("blocks:3000:16:400", &m);
    setenv("TCSPARSE_SELECT", "measure", 1);
    tc_config_reload();
    for (int prec = 0; prec < 2; prec++) {
        spmm_case k = base_case(64);
        k.route = TCSPARSE_ROUTE_AUTO;
        k.beta = 0.5f;
        k.ab = prec ? CUDA_R_16F : CUDA_R_32F;
        k.c = k.ab;
        run_case(&m, &k, prec ? "measured f16" : "measured f32");
    }
    unsetenv("TCSPARSE_SELECT");
    tc_config_reload();
    tc_csr_free(&m);
}

/* The automatic route measures the candidate paths on the first executions of a kind of call
 * and keeps the fastest (src/route/route.c); every one of those executions must be as correct as
 * any other.  TCSPARSE_X_EXPLORE_FACTOR widens the candidates to every applicable path
 * (TC base, balanced, cuSPARSE, and CSR_ALG3 for FP32). */
Test(gpu_spmm, measured_on_calls)
{
    TC_REQUIRE_GPU();
    tc_csr m;
    gen_or_fail("uniform:1500:700:9", &m);
    setenv("TCSPARSE_X_EXPLORE_FACTOR", "1e9", 1);
    tc_config_reload();
    const struct { cudaDataType t; int tf32; float beta; const char *name; } v[] = {
        {CUDA_R_32F, 0, 0.5f, "3xtf32 beta=0.5"}, {CUDA_R_32F, 1, 0.0f, "tf32 beta=0"},
        {CUDA_R_16F, 0, 0.0f, "f16 beta=0"}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        spmm_case k = base_case(40);
        k.route = TCSPARSE_ROUTE_AUTO;
        k.preprocess = (int)(i % 2);
        k.ab = k.c = v[i].t;
        k.tf32 = v[i].tf32;
        k.beta = v[i].beta;
        k.repeat = 16; /* up to 4 paths x 3 samples, then the results of the last ones read */
        k.explore = 1;
        run_case(&m, &k, v[i].name);
    }
    setenv("TCSPARSE_SELECT", "model", 1); /* the model alone: nothing measured */
    tc_config_reload();
    spmm_case k = base_case(40);
    k.route = TCSPARSE_ROUTE_AUTO;
    k.repeat = 4;
    k.explore = -1;
    run_case(&m, &k, "model only");
    unsetenv("TCSPARSE_SELECT");
    unsetenv("TCSPARSE_X_EXPLORE_FACTOR");
    tc_config_reload();
    tc_csr_free(&m);
}

/* An FP32 product of m (32-bit indices, zero-based) and a random B of N columns, row-major,
 * on the device with its reference A * B in double, and a handle bound to a stream of its own
 * with the descriptors (the capture tests). */
typedef struct {
    int64_t M, K, N;
    double *ref; /* M x N */
    void *d_off, *d_col, *d_val, *d_B, *d_C, *buf;
    cudaStream_t cs;
    tcsparseHandle_t h;
    tcsparseSpMatDescr_t A;
    tcsparseDnMatDescr_t B, C;
} fp32_case;

static void fp32_case_make(const tc_csr *m, int64_t N, fp32_case *p)
{
    const int64_t M = m->rows, K = m->cols;
    memset(p, 0, sizeof *p);
    p->M = M, p->K = K, p->N = N;
    int32_t *off = malloc(sizeof *off * (size_t)(M + 1));
    float *val = malloc(sizeof *val * (size_t)m->nnz + 1);
    float *hB = malloc(sizeof *hB * (size_t)(K * N));
    p->ref = calloc((size_t)(M * N), sizeof *p->ref);
    for (int64_t r = 0; r <= M; r++)
        off[r] = (int32_t)m->row_off[r];
    for (int64_t e = 0; e < m->nnz; e++)
        val[e] = (float)m->val[e];
    for (int64_t i = 0; i < K * N; i++)
        hB[i] = (float)urand();
    for (int64_t r = 0; r < M; r++)
        for (int64_t e = m->row_off[r]; e < m->row_off[r + 1]; e++)
            for (int64_t j = 0; j < N; j++)
                p->ref[r * N + j] += (double)val[e] * hB[m->col[e] * N + j];
    p->d_off = to_device(off, sizeof *off * (size_t)(M + 1));
    p->d_col = to_device(m->col, sizeof *m->col * (size_t)m->nnz);
    p->d_val = to_device(val, sizeof *val * (size_t)m->nnz);
    p->d_B = to_device(hB, sizeof *hB * (size_t)(K * N));
    free(off);
    free(val);
    free(hB);
    cr_assert_eq(cudaMalloc(&p->d_C, sizeof(float) * (size_t)(M * N)), cudaSuccess);
    cr_assert_eq(cudaStreamCreateWithFlags(&p->cs, cudaStreamNonBlocking), cudaSuccess);
    cr_assert_eq(tcsparseCreate(&p->h), 0);
    cr_assert_eq(tcsparseSetStream(p->h, p->cs), 0);
    cr_assert_eq(tcsparseCreateCsr(&p->A, M, K, m->nnz, p->d_off, p->d_col, p->d_val,
                                   TCSPARSE_INDEX_32I, TCSPARSE_INDEX_32I,
                                   TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F), 0);
    cr_assert_eq(tcsparseCreateDnMat(&p->B, K, N, N, p->d_B, CUDA_R_32F, TCSPARSE_ORDER_ROW), 0);
    cr_assert_eq(tcsparseCreateDnMat(&p->C, M, N, N, p->d_C, CUDA_R_32F, TCSPARSE_ORDER_ROW), 0);
    const float alpha = 1.0f, beta = 0.5f;
    size_t bsz = 0;
    cr_assert_eq(tcsparseSpMM_bufferSize(p->h, 0, 0, &alpha, p->A, p->B, &beta, p->C,
                                         CUDA_R_32F, 0, &bsz), 0);
    cr_assert_eq(cudaMalloc(&p->buf, bsz + 1), cudaSuccess);
}

static void fp32_case_free(fp32_case *p)
{
    tcsparseDestroySpMat(p->A);
    tcsparseDestroyDnMat(p->B);
    tcsparseDestroyDnMat(p->C);
    tcsparseDestroy(p->h);
    cudaStreamDestroy(p->cs);
    cudaFree(p->buf); cudaFree(p->d_off); cudaFree(p->d_col); cudaFree(p->d_val);
    cudaFree(p->d_B); cudaFree(p->d_C);
    free(p->ref);
}

/* A uniform matrix (1500 x 700, 9 a row) as an fp32_case at N = 40, with every applicable
 * path a candidate of the automatic route's measurement (TCSPARSE_X_EXPLORE_FACTOR), and its
 * teardown. */
static void explored_case(tc_csr *m, fp32_case *q)
{
    gen_or_fail("uniform:1500:700:9", m);
    setenv("TCSPARSE_X_EXPLORE_FACTOR", "1e9", 1);
    tc_config_reload();
    fp32_case_make(m, 40, q);
}

static void explored_case_free(tc_csr *m, fp32_case *q)
{
    unsetenv("TCSPARSE_X_EXPLORE_FACTOR");
    tc_config_reload();
    fp32_case_free(q);
    tc_csr_free(m);
}

/* A measurement in progress must not disturb a stream capture: samples recorded before the
 * capture are not read inside it (an event query there invalidates a global-mode capture),
 * the captured call takes the model's path, the graph replays correctly, and the
 * measurement resumes after the capture and settles. */
Test(gpu_spmm, measuring_then_capture)
{
    TC_REQUIRE_GPU();
    tc_csr m;
    fp32_case q;
    explored_case(&m, &q);
    const int64_t M = q.M, N = q.N;
    tcsparseHandle_t h = q.h;
    tcsparseSpMatDescr_t A = q.A;
    tcsparseDnMatDescr_t B = q.B, C = q.C;
    cudaStream_t cs = q.cs;
    void *buf = q.buf, *d_C = q.d_C;
    const double *ref = q.ref;
    float *hC = malloc(sizeof *hC * (size_t)(M * N));
    cr_assert_eq(tcsparseSetMathMode(h, TCSPARSE_MATH_TF32), 0);
    const float alpha = 1.0f, beta = 0.0f;
    tcsparseRouteInfo_t ri;
    for (int i = 0; i < 2; i++) { /* the measurement starts; its samples complete, unread */
        cr_assert_eq(tcsparseSpMM(h, 0, 0, &alpha, A, B, &beta, C, CUDA_R_32F, 0, buf), 0, "%s",
                     tcsparseGetLastErrorMessage());
        tcsparseGetLastRoute(h, &ri);
        cr_assert(strncmp(ri.reason, "exploring", 9) == 0, "call %d: %s", i, ri.reason);
    }
    cr_assert_eq(cudaStreamSynchronize(cs), cudaSuccess);
    cr_assert_eq(cudaMemset(d_C, 0xff, sizeof *hC * (size_t)(M * N)), cudaSuccess); /* NaN */
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec;
    cr_assert_eq(cudaStreamBeginCapture(cs, cudaStreamCaptureModeGlobal), cudaSuccess);
    tcsparseStatus_t st = tcsparseSpMM(h, 0, 0, &alpha, A, B, &beta, C, CUDA_R_32F, 0, buf);
    cr_assert_eq(cudaStreamEndCapture(cs, &graph), cudaSuccess, "the capture was invalidated");
    cr_assert_eq(st, TCSPARSE_STATUS_SUCCESS, "captured call: %s", tcsparseGetLastErrorMessage());
    cr_assert_not_null(graph);
    cr_assert_eq(cudaGetLastError(), cudaSuccess, "an error left behind by the captured call");
    tcsparseGetLastRoute(h, &ri);
    cr_assert(strncmp(ri.reason, "exploring", 9) != 0 || strstr(ri.reason, "sample ") == NULL,
              "a sample was taken inside the capture: %s", ri.reason);
    cr_assert_eq(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    cr_assert_eq(cudaGraphLaunch(exec, cs), cudaSuccess);
    cr_assert_eq(cudaStreamSynchronize(cs), cudaSuccess);
    cr_assert_eq(cudaMemcpy(hC, d_C, sizeof *hC * (size_t)(M * N), cudaMemcpyDeviceToHost), cudaSuccess);
    double num = 0, den = 0;
    for (int64_t i = 0; i < M * N; i++) {
        cr_assert(isfinite(hC[i]), "C[%lld] not written by the graph", (long long)i);
        num += (hC[i] - ref[i]) * (hC[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    cr_assert(sqrt(num / den) <= 5e-3, "graph: relative error %.3e (%s)", sqrt(num / den), ri.kernel);
    /* after the capture the measurement goes on and settles */
    int calls = 0;
    do {
        cr_assert_eq(tcsparseSpMM(h, 0, 0, &alpha, A, B, &beta, C, CUDA_R_32F, 0, buf), 0);
        cr_assert_eq(cudaStreamSynchronize(cs), cudaSuccess);
        tcsparseGetLastRoute(h, &ri);
    } while (strncmp(ri.reason, "measured on", 11) != 0 && ++calls < 20);
    cr_assert(strncmp(ri.reason, "measured on", 11) == 0, "did not settle: %s", ri.reason);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    free(hC);
    explored_case_free(&m, &q);
}

/* The interposer weighs tcsparse's times by how far the route has come on a kind of call
 * (tc_hook_learning, compat/cusparse/choose.c): the flag is 2 exactly on the calls whose
 * reason shows the route trying its candidates (a candidate's sample, samples in flight), 1
 * on those that tune the chosen kernel or run late ordering's trial, 0 once it has settled
 * and after a preprocess; and it is refused with a message where its arguments are bad. */
Test(gpu_spmm, learning_flag_follows_the_measurement)
{
    TC_REQUIRE_GPU();
    tc_csr m;
    fp32_case q;
    explored_case(&m, &q);
    int learning = -1;
    cr_assert_eq(tc_hook_learning(NULL, &learning), TCSPARSE_STATUS_INVALID_VALUE);
    cr_assert_eq(tc_hook_learning(q.h, NULL), TCSPARSE_STATUS_INVALID_VALUE);
    cr_assert_not_null(strstr(tcsparseGetLastErrorMessage(), "learning is NULL"), "%s",
                       tcsparseGetLastErrorMessage());
    cr_assert_eq(learning, -1, "a refused call wrote its output");
    cr_assert_eq(tc_hook_learning(q.h, &learning), 0);
    cr_assert_eq(learning, 0, "a new handle");
    const float alpha = 1.0f, beta = 0.0f;
    tcsparseRouteInfo_t ri;
    int learned = 0, settled = 0, calls = 0;
    for (; calls < 200 && settled < 3; calls++) {
        cr_assert_eq(tcsparseSpMM(q.h, 0, 0, &alpha, q.A, q.B, &beta, q.C, CUDA_R_32F, 0, q.buf),
                     0, "%s", tcsparseGetLastErrorMessage());
        cr_assert_eq(cudaStreamSynchronize(q.cs), cudaSuccess); /* samples readable next call */
        tcsparseGetLastRoute(q.h, &ri);
        cr_assert_eq(tc_hook_learning(q.h, &learning), 0);
        const int shows = strncmp(ri.reason, "exploring", 9) == 0 ? 2
                          : strstr(ri.reason, "tuning:") != NULL ||
                                  strstr(ri.reason, "ordering: trial") != NULL
                              ? 1
                              : 0;
        cr_assert_eq(learning, shows, "call %d: learning %d, reason: %s", calls, learning,
                     ri.reason);
        learned += learning != 0;
        settled = learning ? 0 : settled + 1;
        if (calls == 0) { /* the first call measures; a preprocess after it reads 0 */
            cr_assert_eq(learning, 2, "the first call: %s", ri.reason);
            cr_assert_eq(tcsparseSpMM_preprocess(q.h, 0, 0, &alpha, q.A, q.B, &beta, q.C,
                                                 CUDA_R_32F, 0, q.buf), 0, "%s",
                         tcsparseGetLastErrorMessage());
            cr_assert_eq(tc_hook_learning(q.h, &learning), 0);
            cr_assert_eq(learning, 0, "after a preprocess");
        }
    }
    cr_assert_gt(learned, 0, "no call was part of a measurement");
    cr_assert_eq(settled, 3, "still measuring after %d calls: %s", calls, ri.reason);
    explored_case_free(&m, &q);
}

/* The kernel forms the launcher only takes when a tuning knob asks (docs/configuration.md):
 * the thread-block kernel (TCSPARSE_X_SPMM_PIPE=0, alone and with FP32
 * J = 8), the pipelined ring at 4, 6 and 8 slots (TCSPARSE_X_SPMM_PIPE_STAGES) and FP32 J = 8
 * (TCSPARSE_X_SPMM_J=8).  The test sets the knobs and reads the configuration again
 * (tc_config_reload); the kernel's name proves the form ran. */
typedef struct {
    const char *var[2], *val[2];
    const char *expect;  /* in the kernel's name (NULL: see reject) */
    const char *reject;  /* never in it */
    int fp32_only;       /* the expectation holds for FP32 kernels only (2: plain TF32 only) */
} knob_set;

static const knob_set knob_sets[] = {
    {{"TCSPARSE_X_SPMM_PIPE", NULL}, {"0", NULL}, NULL, "_pipe", 0},
    {{"TCSPARSE_X_SPMM_PIPE", "TCSPARSE_X_SPMM_J"}, {"0", "8"}, "_j8", "_pipe", 1},
    {{"TCSPARSE_X_SPMM_PIPE_STAGES", NULL}, {"4", NULL}, "_pipe", "_pipe6", 0},
    {{"TCSPARSE_X_SPMM_PIPE_STAGES", NULL}, {"6", NULL}, "_pipe6", NULL, 0},
    {{"TCSPARSE_X_SPMM_PIPE_STAGES", NULL}, {"8", NULL}, "_pipe8", NULL, 0},
    {{"TCSPARSE_X_SPMM_J", NULL}, {"8", NULL}, "_j8_pipe", NULL, 1},
    {{"TCSPARSE_X_SPMM_WIDE_L1", NULL}, {"1", NULL}, "_j4_pipe_l1", NULL, 2},
    {{"TCSPARSE_X_SPMM_WIDE_L1", NULL}, {"0", NULL}, "_pipe", "_l1", 0},
};

/* a parameter is copied into the test's process: an index, not pointers */
typedef struct {
    int set;
} knob_case;

ParameterizedTestParameters(gpu_spmm, kernel_knobs)
{
    static knob_case knobs[sizeof knob_sets / sizeof knob_sets[0]];
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
        knobs[i].set = (int)i;
    return cr_make_param_array(knob_case, knobs, sizeof knobs / sizeof knobs[0]);
}

ParameterizedTest(knob_case *kp, gpu_spmm, kernel_knobs)
{
    TC_REQUIRE_GPU();
    const knob_set *kc = &knob_sets[kp->set];
    /* only this set's knobs: the in-process build runs every parameter in one process */
    for (size_t i = 0; i < sizeof knob_sets / sizeof knob_sets[0]; i++)
        for (int v = 0; v < 2; v++)
            if (knob_sets[i].var[v] != NULL)
                unsetenv(knob_sets[i].var[v]);
    for (int v = 0; v < 2; v++)
        if (kc->var[v] != NULL)
            setenv(kc->var[v], kc->val[v], 1);
    tc_config_reload();
    const prec_t precs[] = {all_precs[0], all_precs[1], all_precs[2], all_precs[5]};
    const char *specs[2] = {"rmat:9:8", "uniform:1001:777:5"};
    const int ns[2] = {7, 100};
    for (int f = 0; f < 2; f++) {
        tc_csr m;
        gen_or_fail(specs[f], &m);
        for (int i = 0; i < 2; i++)
            for (size_t p = 0; p < sizeof precs / sizeof precs[0]; p++)
                for (int bal = 0; bal < 2; bal++) {
                    spmm_case k = prec_case(ns[i], &precs[p], bal, i + (int)p);
                    char label[200];
                    snprintf(label, sizeof label, "%s=%s%s%s%s%s: %s N=%d %s %s", kc->var[0],
                             kc->val[0], kc->var[1] ? " " : "", kc->var[1] ? kc->var[1] : "",
                             kc->var[1] ? "=" : "", kc->var[1] ? kc->val[1] : "", specs[f],
                             ns[i], precs[p].n, bal ? "balanced" : "base");
                    run_case(&m, &k, label);
                    if ((kc->fp32_only && precs[p].ab != CUDA_R_32F) ||
                        (kc->fp32_only == 2 && !precs[p].tf32))
                        continue;
                    const int ok = (kc->expect == NULL || strstr(last_kernel, kc->expect) != NULL) &&
                                   (kc->reject == NULL || strstr(last_kernel, kc->reject) == NULL);
                    cr_assert(ok, "%s: ran %s", label, last_kernel);
                }
        tc_csr_free(&m);
    }
}

/* The wide-L1 instance (spmm_launch.cu, wide_l1) by its default rule: plain TF32 on a plan of
 * fewer than 10 nonzeros a block with at least two warps a thread block (N > 32); not for
 * dense blocks, one-warp thread blocks or 3xTF32.  Every call is checked against the CPU
 * reference as well, base and balanced (the balanced kernel with beta != 0 through its
 * scaling pass). */
Test(gpu_spmm, wide_l1_rule)
{
    TC_REQUIRE_GPU();
    if (getenv("TCSPARSE_X_SPMM_WIDE_L1") != NULL || getenv("TCSPARSE_X_SPMM_J") != NULL ||
        getenv("TCSPARSE_X_SPMM_PIPE") != NULL || getenv("TCSPARSE_X_SPMM_PIPE_STAGES") != NULL)
        cr_skip_test("a kernel knob is set in the environment");
    static const struct {
        const char *spec;
        int N, prec, wide; /* prec: index in all_precs */
    } cases[] = {
        {"uniform:3001:2999:9", 100, 1, 1}, /* 8 nonzeros a block: sparse */
        {"uniform:3001:2999:9", 64, 1, 1},
        {"uniform:3001:2999:9", 32, 1, 0},  /* one warp a thread block */
        {"uniform:3001:2999:9", 100, 0, 0}, /* 3xTF32 */
        {"banded:3001:6", 100, 1, 0},       /* dense blocks */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tc_csr m;
        gen_or_fail(cases[c].spec, &m);
        for (int bal = 0; bal < 2; bal++) {
            spmm_case k = prec_case(cases[c].N, &all_precs[cases[c].prec], bal, bal);
            k.beta = bal ? 0.75f : 0.0f;
            char label[160];
            snprintf(label, sizeof label, "%s N=%d %s %s", cases[c].spec, cases[c].N,
                     all_precs[cases[c].prec].n, bal ? "balanced" : "base");
            run_case(&m, &k, label);
            const int wide = strstr(last_kernel, "_pipe_l1") != NULL;
            cr_assert_eq(wide, cases[c].wide, "%s: ran %s", label, last_kernel);
        }
        tc_csr_free(&m);
    }
}

/* Kernel tuning on the executions (src/route/tune.c): on a plan where the launcher offers several
 * FP32 kernel variants (N > 32), the first executions of a kind of call on a forced path run
 * each variant three times (plain TF32: J = 4 with and without the wide L1, J = 8; 3xTF32:
 * J = 4 and 8) and later calls run one of them.  Every call is checked against the CPU
 * reference (run_case), and on the base kernel, which adds in a fixed order, every call's
 * output equals the first's bit for bit: the variants differ in tiling and caching only.
 * Nothing is measured at N <= 32, for 16-bit inputs, or with TCSPARSE_X_TUNE=0. */
Test(gpu_spmm, tune_kernels)
{
    TC_REQUIRE_GPU();
    static const char *const knobs[] = {"TCSPARSE_X_SPMM_WIDE_L1", "TCSPARSE_X_SPMM_J",
                                         "TCSPARSE_X_SPMM_PIPE", "TCSPARSE_X_SPMM_PIPE_STAGES",
                                         "TCSPARSE_X_TUNE", "TCSPARSE_SELECT"};
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
        if (getenv(knobs[i]) != NULL)
            cr_skip_test("%s is set in the environment", knobs[i]);
    static const struct {
        int N, prec, bal; /* prec: index in all_precs */
        int tuning, kernels; /* tuning calls and distinct kernels expected */
        int off;             /* with TCSPARSE_X_TUNE=0 */
    } cases[] = {
        {100, 1, 0, 9, 3, 0}, /* TF32, base */
        {100, 1, 1, 9, 3, 0}, /* TF32, balanced (beta != 0: the scaling pass) */
        {64, 1, 0, 9, 3, 0},
        {100, 0, 0, 6, 2, 0}, /* 3xTF32: J = 4 and 8 */
        {100, 0, 1, 6, 2, 0},
        {32, 1, 0, 0, 1, 0},  /* one warp a thread block: the launcher's choice only */
        {100, 2, 0, 0, 1, 0}, /* FP16 */
        {100, 1, 0, 0, 1, 1}, /* TCSPARSE_X_TUNE=0 */
    };
    tc_csr m;
    gen_or_fail("uniform:3001:2999:9", &m);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (cases[c].off)
            setenv("TCSPARSE_X_TUNE", "0", 1);
        tc_config_reload();
        spmm_case k = prec_case(cases[c].N, &all_precs[cases[c].prec], cases[c].bal, (int)c);
        k.beta = cases[c].bal ? 0.75f : 0.0f;
        k.repeat = 13;
        char label[160];
        snprintf(label, sizeof label, "N=%d %s %s%s", cases[c].N, all_precs[cases[c].prec].n,
                 cases[c].bal ? "balanced" : "base", cases[c].off ? " TCSPARSE_X_TUNE=0" : "");
        run_case(&m, &k, label);
        unsetenv("TCSPARSE_X_TUNE");
        tc_config_reload();
        /* the balanced kernel's atomic additions make its last bits run-dependent */
        TC_ASSERT_TUNED(&call_log, cases[c].tuning, cases[c].kernels, !cases[c].bal, label);
    }
    tc_csr_free(&m);
}

/* A forced route tunes its kernels even while the automatic route's own measurement of the
 * same kind of call is unfinished on that plan (a handle switched from the automatic route
 * to a forced one): only the automatic route's calls advance that measurement, so waiting
 * for it would leave the kind untuned for ever. */
Test(gpu_spmm, tune_after_route_switch)
{
    TC_REQUIRE_GPU();
    static const char *const knobs[] = {"TCSPARSE_X_SPMM_WIDE_L1", "TCSPARSE_X_SPMM_J",
                                         "TCSPARSE_X_SPMM_PIPE", "TCSPARSE_X_SPMM_PIPE_STAGES",
                                         "TCSPARSE_X_TUNE", "TCSPARSE_SELECT",
                                         "TCSPARSE_ROUTE"};
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
        if (getenv(knobs[i]) != NULL)
            cr_skip_test("%s is set in the environment", knobs[i]);
    setenv("TCSPARSE_X_EXPLORE_FACTOR", "1000", 1); /* every path a candidate: the route measures */
    tc_config_reload();
    tc_csr m;
    gen_or_fail("uniform:3001:2999:9", &m);
    const int64_t M = m.rows, K = m.cols, N = 100;
    int32_t *off = malloc(sizeof *off * (size_t)(M + 1));
    float *val = malloc(sizeof *val * (size_t)m.nnz), *hb = malloc(sizeof *hb * (size_t)(K * N));
    for (int64_t r = 0; r <= M; r++)
        off[r] = (int32_t)m.row_off[r];
    for (int64_t e = 0; e < m.nnz; e++)
        val[e] = (float)m.val[e];
    for (int64_t i = 0; i < K * N; i++)
        hb[i] = (float)urand();
    void *d_off = to_device(off, sizeof *off * (size_t)(M + 1));
    void *d_col = to_device(m.col, sizeof *m.col * (size_t)m.nnz);
    void *d_val = to_device(val, sizeof *val * (size_t)m.nnz);
    void *d_B = to_device(hb, sizeof *hb * (size_t)(K * N)), *d_C = NULL;
    cr_assert_eq(cudaMalloc(&d_C, sizeof(float) * (size_t)(M * N)), cudaSuccess);
    tcsparseHandle_t h;
    tcsparseSpMatDescr_t A;
    tcsparseDnMatDescr_t B, C;
    cr_assert_eq(tcsparseCreate(&h), TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(tcsparseCreateCsr(&A, M, K, m.nnz, d_off, d_col, d_val, TCSPARSE_INDEX_32I,
                                   TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F), 0);
    cr_assert_eq(tcsparseCreateDnMat(&B, K, N, N, d_B, CUDA_R_32F, TCSPARSE_ORDER_ROW), 0);
    cr_assert_eq(tcsparseCreateDnMat(&C, M, N, N, d_C, CUDA_R_32F, TCSPARSE_ORDER_ROW), 0);
    tcsparseSetMathMode(h, TCSPARSE_MATH_TF32);
    const float alpha = 1.0f, beta = 0.0f;
    size_t bsz = 0;
    void *buf = NULL;
    cr_assert_eq(tcsparseSpMM_bufferSize(h, 0, 0, &alpha, A, B, &beta, C, CUDA_R_32F,
                                         TCSPARSE_SPMM_ALG_DEFAULT, &bsz), 0);
    cr_assert_eq(cudaMalloc(&buf, bsz + 16), cudaSuccess);
    tcsparseRouteInfo_t ri;
    cr_assert_eq(tcsparseSpMM(h, 0, 0, &alpha, A, B, &beta, C, CUDA_R_32F, TCSPARSE_SPMM_ALG_DEFAULT, buf), 0,
                 "%s", tcsparseGetLastErrorMessage());
    cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
    tcsparseGetLastRoute(h, &ri);
    cr_assert(strncmp(ri.reason, "exploring", 9) == 0, "the route did not measure: %s", ri.reason);
    tcsparseSetRoute(h, TCSPARSE_ROUTE_TC_BASE);
    int tuning = 0;
    for (int i = 0; i < 12; i++) {
        cr_assert_eq(tcsparseSpMM(h, 0, 0, &alpha, A, B, &beta, C, CUDA_R_32F, TCSPARSE_SPMM_ALG_DEFAULT, buf), 0,
                     "%s", tcsparseGetLastErrorMessage());
        cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
        tcsparseGetLastRoute(h, &ri);
        cr_assert_eq(ri.path, TCSPARSE_PATH_TC_BASE, "took %s (%s)", ri.kernel, ri.reason);
        tuning += strstr(ri.reason, "; tuning:") != NULL;
    }
    cr_assert_eq(tuning, 9, "%d forced calls tuning (last: %s)", tuning, ri.reason);
    tcsparseDestroySpMat(A); tcsparseDestroyDnMat(B); tcsparseDestroyDnMat(C); tcsparseDestroy(h);
    cudaFree(d_off); cudaFree(d_col); cudaFree(d_val); cudaFree(d_B); cudaFree(d_C); cudaFree(buf);
    free(off); free(val); free(hb);
    tc_csr_free(&m);
    unsetenv("TCSPARSE_X_EXPLORE_FACTOR");
    tc_config_reload();
}

/* A matrix whose rows cross the CUDA-core kernel's pieces of 256 nonzeros every way: empty
 * rows first, between and last, rows of 1,000 and 700 nonzeros (several pieces each), a row
 * that ends exactly on a piece boundary, and short rows. */
static void long_rows_matrix(tc_csr *m)
{
    static const int lens[] = {0, 1000, 0, 0, 3, 700, 1, 2, 0, 42, 300, 256, 5, 0, 0, 1, 9, 0};
    const int64_t rows = 60, cols = 1500;
    m->rows = rows;
    m->cols = cols;
    m->row_off = calloc((size_t)rows + 1, sizeof *m->row_off);
    int64_t nnz = 0;
    for (int64_t r = 0; r < rows; r++) {
        nnz += r < (int64_t)(sizeof lens / sizeof lens[0]) ? lens[r] : (r % 7 == 0 ? 0 : r % 5 + 1);
        m->row_off[r + 1] = nnz;
    }
    m->nnz = nnz;
    m->col = malloc(sizeof *m->col * (size_t)nnz + 1);
    m->val = malloc(sizeof *m->val * (size_t)nnz + 1);
    for (int64_t r = 0; r < rows; r++) {
        const int64_t len = m->row_off[r + 1] - m->row_off[r];
        const int64_t step = cols / (len + 1); /* distinct, ascending */
        for (int64_t i = 0; i < len; i++) {
            m->col[m->row_off[r] + i] = (int32_t)(i * step + r % (step > 0 ? step : 1));
            m->val[m->row_off[r] + i] = urand();
        }
    }
}

/* TCSPARSE_ROUTE_CUDA_CORE: the CUDA-core CSR kernel on every type pair, N from 4 to 260 (one
 * lane group of 2 to 32 lanes, one or two vectors a lane, several column tiles), 32- and 64-bit
 * indices, zero- and one-based, beta 0 over a C of NaN and beta != 0, host and device scalars,
 * padded ldb / ldc, NaN in the rows of B no nonzero uses; on a power-law matrix, a uniform one,
 * one with rows across pieces and an empty one.  Each call must run on the CUDA cores. */
Test(gpu_spmm, cuda_core_kernel)
{
    TC_REQUIRE_GPU();
    tc_csr ms[4];
    const char *names[4] = {"rmat:10:8", "uniform:700:500:6", "long rows", "empty"};
    gen_or_fail("rmat:10:8", &ms[0]);
    gen_or_fail("uniform:700:500:6", &ms[1]);
    long_rows_matrix(&ms[2]);
    ms[3] = (tc_csr){.rows = 37, .cols = 20, .nnz = 0};
    ms[3].row_off = calloc(38, sizeof *ms[3].row_off);
    ms[3].col = malloc(4);
    ms[3].val = malloc(8);
    static const int ns[] = {4, 8, 12, 16, 20, 32, 36, 64, 100, 128, 132, 256, 260};
    static const prec_t precs[] = {
        {CUDA_R_32F, CUDA_R_32F, 0, "f32"},    {CUDA_R_16F, CUDA_R_16F, 0, "f16"},
        {CUDA_R_16F, CUDA_R_32F, 0, "f16->f32"}, {CUDA_R_16BF, CUDA_R_16BF, 0, "bf16"},
        {CUDA_R_16BF, CUDA_R_32F, 0, "bf16->f32"}};
    int i = 0;
    for (int mi = 0; mi < 4; mi++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (size_t p = 0; p < sizeof precs / sizeof precs[0]; p++, i++) {
                if (mi != 2 && (ni + p) % 3 != 0)
                    continue; /* every N and type on the long rows, a third elsewhere */
                spmm_case k = base_case(ns[ni]);
                k.ab = precs[p].ab;
                k.c = precs[p].c;
                k.route = TCSPARSE_ROUTE_CUDA_CORE;
                k.idx64 = i % 2;
                k.base = (i / 2) % 2;
                k.beta = i % 3 == 0 ? 0.0f : -0.75f;
                k.alpha = i % 4 == 0 ? -1.5f : 1.0f;
                k.device_ptrs = i % 5 == 0;
                k.ldb_pad = 4 * (i % 2);
                k.ldc_pad = 8 * ((i / 3) % 2);
                k.preprocess = i % 2;
                k.nan_unused_b = 1;
                k.repeat = 2;
                char label[160];
                snprintf(label, sizeof label, "cuda-core %s N=%d %s", names[mi], ns[ni],
                         precs[p].n);
                run_case(&ms[mi], &k, label);
                cr_assert_eq(last_path, TCSPARSE_PATH_CUDA_CORE, "%s: took %s", label,
                             last_kernel);
            }
    for (int mi = 0; mi < 4; mi++)
        tc_csr_free(&ms[mi]);
}

/* Builds the CUDA-core schedule of host offsets (32- or 64-bit, base) and reads it back. */
typedef struct {
    tcsparseStatus_t st;
    tc_csr_sched s;
    int32_t *row, *start, *len, *split;
} sched_copy;
static sched_copy sched_of(const int64_t *off, int64_t M, int64_t nnz, int is64, int base)
{
    sched_copy c = {0};
    const size_t es = is64 ? 8 : 4;
    char *h = malloc(es * (size_t)(M + 1));
    for (int64_t r = 0; r <= M; r++) {
        if (is64)
            ((int64_t *)h)[r] = off[r] + base;
        else
            ((int32_t *)h)[r] = (int32_t)(off[r] + base);
    }
    void *d = NULL;
    cr_assert_eq(cudaMalloc(&d, es * (size_t)(M + 1)), cudaSuccess);
    cr_assert_eq(cudaMemcpy(d, h, es * (size_t)(M + 1), cudaMemcpyHostToDevice), cudaSuccess);
    free(h);
    tc_csr_arrays csr = {.nnz = nnz, .offsets = d, .indices = NULL, .offsets_64 = is64,
                         .indices_64 = is64, .base = base};
    char msg[200];
    c.st = tc_csr_sched_build(&csr, M, 0, &c.s, msg, sizeof msg);
    cudaFree(d);
    if (c.st != TCSPARSE_STATUS_SUCCESS)
        return c;
    const int32_t nu = c.s.nunits, ns = c.s.nsplit_rows;
    c.row = malloc(4 * (size_t)nu + 4);
    c.start = malloc(4 * (size_t)nu + 4);
    c.len = malloc(4 * (size_t)nu + 4);
    c.split = malloc(4 * (size_t)ns + 4);
    cr_assert_eq(cudaMemcpy(c.row, c.s.row, 4 * (size_t)nu, cudaMemcpyDeviceToHost), cudaSuccess);
    cr_assert_eq(cudaMemcpy(c.start, c.s.start, 4 * (size_t)nu, cudaMemcpyDeviceToHost),
                 cudaSuccess);
    cr_assert_eq(cudaMemcpy(c.len, c.s.len, 4 * (size_t)nu, cudaMemcpyDeviceToHost), cudaSuccess);
    cr_assert_eq(cudaMemcpy(c.split, c.s.split_rows, 4 * (size_t)ns, cudaMemcpyDeviceToHost),
                 cudaSuccess);
    return c;
}
static void sched_copy_free(sched_copy *c)
{
    tc_csr_sched_free(&c->s);
    free(c->row); free(c->start); free(c->len); free(c->split);
}

/* The CUDA-core schedule (tc_csr_sched_build): every nonzero in exactly one unit of at most
 * TC_CSR_PIECE, every row present (empty ones as empty units), the split rows' pieces first,
 * then whole rows by length descending and, within a length, in row order; offsets out of
 * [0, nnz] clamped; decreasing offsets refused; no rows, no nonzeros. */
Test(gpu_spmm, cuda_core_schedule)
{
    TC_REQUIRE_GPU();
    tc_csr m;
    long_rows_matrix(&m);
    for (int v = 0; v < 4; v++) {
        const int is64 = v & 1, base = v >> 1;
        sched_copy c = sched_of(m.row_off, m.rows, m.nnz, is64, base);
        cr_assert_eq(c.st, TCSPARSE_STATUS_SUCCESS);
        int64_t long_rows = 0, pieces = 0;
        for (int64_t r = 0; r < m.rows; r++) {
            const int64_t len = m.row_off[r + 1] - m.row_off[r];
            long_rows += len > TC_CSR_PIECE;
            pieces += len > TC_CSR_PIECE ? (len + TC_CSR_PIECE - 1) / TC_CSR_PIECE : 0;
        }
        cr_assert_eq(c.s.nsplit_rows, long_rows);
        cr_assert_eq(c.s.nsplit_units, pieces);
        cr_assert_eq(c.s.nunits, pieces + m.rows - long_rows);
        cr_assert_leq(c.s.bytes, 16 + 12 * (size_t)(m.rows + m.nnz / TC_CSR_PIECE + 1) +
                                     4 * (size_t)(m.nnz / (TC_CSR_PIECE + 1) + 1));
        char *seen = calloc((size_t)m.nnz + 1, 1);
        int *units_of_row = calloc((size_t)m.rows, sizeof(int));
        for (int32_t u = 0; u < c.s.nunits; u++) {
            const int32_t r = c.row[u];
            cr_assert(r >= 0 && r < m.rows, "unit %d: row %d", u, r);
            const int64_t len = m.row_off[r + 1] - m.row_off[r];
            cr_assert(c.len[u] >= 0 && c.len[u] <= TC_CSR_PIECE, "unit %d: %d nonzeros", u,
                      c.len[u]);
            cr_assert(c.start[u] >= m.row_off[r] && c.start[u] + c.len[u] <= m.row_off[r + 1],
                      "unit %d outside row %d", u, r);
            cr_assert_eq(u < c.s.nsplit_units, len > TC_CSR_PIECE, "unit %d (row %d, %lld)", u,
                         r, (long long)len);
            if (u > c.s.nsplit_units) { /* whole rows: longest first, then in row order */
                const int32_t p = c.row[u - 1];
                const int64_t plen = m.row_off[p + 1] - m.row_off[p];
                cr_assert(plen > len || (plen == len && p < r), "unit %d: row %d after %d", u,
                          r, p);
            }
            units_of_row[r]++;
            for (int32_t k = c.start[u]; k < c.start[u] + c.len[u]; k++) {
                cr_assert_eq(seen[k], 0, "nonzero %d twice", k);
                seen[k] = 1;
            }
        }
        for (int64_t k = 0; k < m.nnz; k++)
            cr_assert_eq(seen[k], 1, "nonzero %lld in no unit", (long long)k);
        for (int64_t r = 0; r < m.rows; r++)
            cr_assert(units_of_row[r] >= 1, "row %lld in no unit", (long long)r);
        for (int32_t i = 0; i < c.s.nsplit_rows; i++)
            cr_assert_gt(m.row_off[c.split[i] + 1] - m.row_off[c.split[i]], TC_CSR_PIECE);
        free(seen);
        free(units_of_row);
        sched_copy_free(&c);
    }
    /* offsets past nnz and below 0 are clamped: units stay inside the arrays */
    const int64_t wild[] = {-5, 0, 900, 400000, 400000};
    sched_copy c = sched_of(wild, 4, 1000, 1, 0);
    cr_assert_eq(c.st, TCSPARSE_STATUS_SUCCESS);
    for (int32_t u = 0; u < c.s.nunits; u++)
        cr_assert(c.start[u] >= 0 && c.start[u] + c.len[u] <= 1000, "unit %d: %d + %d", u,
                  c.start[u], c.len[u]);
    sched_copy_free(&c);
    /* decreasing offsets would let the units outgrow the schedule: refused */
    const int64_t down[] = {0, 900, 100, 1000, 0, 1000};
    c = sched_of(down, 5, 1000, 0, 0);
    cr_assert_eq(c.st, TCSPARSE_STATUS_INVALID_VALUE);
    cr_assert_null(c.s.mem);
    /* no rows; rows without nonzeros */
    const int64_t none[] = {0};
    c = sched_of(none, 0, 0, 0, 0);
    cr_assert_eq(c.st, TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(c.s.nunits, 0);
    sched_copy_free(&c);
    /* no nonzeros and no offsets array (accepted, as by cuSPARSE): every row empty */
    tc_csr_arrays none_csr = {.nnz = 0};
    char msg[200];
    cr_assert_eq(tc_csr_sched_build(&none_csr, 5, 0, &c.s, msg, sizeof msg),
                 TCSPARSE_STATUS_SUCCESS, "%s", msg);
    cr_assert_eq(c.s.nunits, 5);
    cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
    tc_csr_sched_free(&c.s);
    const int64_t empty[] = {0, 0, 0, 0};
    c = sched_of(empty, 3, 0, 0, 1);
    cr_assert_eq(c.st, TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(c.s.nunits, 3);
    cr_assert_eq(c.s.nsplit_rows, 0);
    sched_copy_free(&c);
    tc_csr_free(&m);
}

/* One SpMM of q (alpha 1, beta) captured into a graph in global mode and replayed over C =
 * hC0 (NaN where beta is 0): the capture must survive and the result be right; returns the
 * path the captured call took. */
static tcsparsePath_t captured_cuda_core(fp32_case *q, float beta, const float *hC0)
{
    const float alpha = 1.0f;
    const int64_t M = q->M, N = q->N;
    cr_assert_eq(cudaMemcpy(q->d_C, hC0, sizeof(float) * (size_t)(M * N), cudaMemcpyHostToDevice),
                 cudaSuccess);
    if (beta == 0.0f)
        cr_assert_eq(cudaMemset(q->d_C, 0xff, sizeof(float) * (size_t)(M * N)), cudaSuccess);
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec;
    cr_assert_eq(cudaStreamBeginCapture(q->cs, cudaStreamCaptureModeGlobal), cudaSuccess);
    const tcsparseStatus_t st =
        tcsparseSpMM(q->h, 0, 0, &alpha, q->A, q->B, &beta, q->C, CUDA_R_32F, 0, q->buf);
    cr_assert_eq(cudaStreamEndCapture(q->cs, &graph), cudaSuccess, "the capture was invalidated");
    cr_assert_eq(st, TCSPARSE_STATUS_SUCCESS, "captured call: %s", tcsparseGetLastErrorMessage());
    cr_assert_eq(cudaGetLastError(), cudaSuccess, "an error left behind by the captured call");
    tcsparseRouteInfo_t ri;
    cr_assert_eq(tcsparseGetLastRoute(q->h, &ri), TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    cr_assert_eq(cudaGraphLaunch(exec, q->cs), cudaSuccess);
    cr_assert_eq(cudaStreamSynchronize(q->cs), cudaSuccess);
    float *hC = malloc(sizeof *hC * (size_t)(M * N));
    cr_assert_eq(cudaMemcpy(hC, q->d_C, sizeof *hC * (size_t)(M * N), cudaMemcpyDeviceToHost),
                 cudaSuccess);
    double num = 0, den = 0;
    for (int64_t i = 0; i < M * N; i++) {
        const double want = q->ref[i] + (double)beta * hC0[i];
        cr_assert(isfinite(hC[i]), "C[%lld] not written by the graph (%s)", (long long)i,
                  ri.kernel);
        num += (hC[i] - want) * (hC[i] - want);
        den += want * want;
    }
    cr_assert(sqrt(num / den) <= 1e-5, "graph: relative error %.3e (%s)", sqrt(num / den),
              ri.kernel);
    free(hC);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    return ri.path;
}

/* TCSPARSE_ROUTE_CUDA_CORE inside a stream capture: before anything is built the captured call
 * runs cuSPARSE (a build would synchronise), right and with the capture intact; after
 * _preprocess (which builds the plan and the CUDA-core schedule) a captured call runs the
 * CUDA-core kernel, the split rows' beta pass included. */
Test(gpu_spmm, cuda_core_captured)
{
    TC_REQUIRE_GPU();
    tc_csr m;
    long_rows_matrix(&m);
    fp32_case q;
    fp32_case_make(&m, 40, &q);
    float *hC0 = malloc(sizeof *hC0 * (size_t)(q.M * q.N));
    for (int64_t i = 0; i < q.M * q.N; i++)
        hC0[i] = (float)urand();
    cr_assert_eq(tcsparseSetRoute(q.h, TCSPARSE_ROUTE_CUDA_CORE), 0);
    tcsparsePath_t path = captured_cuda_core(&q, 0.0f, hC0);
    cr_assert_eq(path, TCSPARSE_PATH_CUSPARSE, "a schedule was built inside the capture");
    const float alpha = 1.0f, beta = 0.5f;
    cr_assert_eq(tcsparseSpMM_preprocess(q.h, 0, 0, &alpha, q.A, q.B, &beta, q.C, CUDA_R_32F, 0,
                                         q.buf),
                 0, "%s", tcsparseGetLastErrorMessage());
    for (int i = 0; i < 2; i++) {
        path = captured_cuda_core(&q, i ? 0.5f : 0.0f, hC0);
        cr_assert_eq(path, TCSPARSE_PATH_CUDA_CORE, "after _preprocess, beta %d", i);
    }
    free(hC0);
    fp32_case_free(&q);
    tc_csr_free(&m);
}

/* Calls the CUDA-core kernel does not take (N not a multiple of 4, ldb off its boundary, a
 * transposed A, CSC) run on cuSPARSE under TCSPARSE_ROUTE_CUDA_CORE, correct, with the reason;
 * and under the automatic route the kernel is one of the candidates measured on the
 * executions, whatever is kept. */
Test(gpu_spmm, cuda_core_refusals_and_measurement)
{
    TC_REQUIRE_GPU();
    tc_csr m;
    gen_or_fail("rmat:11:8", &m);
    spmm_case k = base_case(30);
    k.route = TCSPARSE_ROUTE_CUDA_CORE;
    run_case(&m, &k, "cuda-core N=30");
    cr_assert_eq(last_path, TCSPARSE_PATH_CUSPARSE, "N=30 took %s", last_kernel);
    k = base_case(64);
    k.route = TCSPARSE_ROUTE_CUDA_CORE;
    k.ldb_pad = 1;
    run_case(&m, &k, "cuda-core ldb=65");
    cr_assert_eq(last_path, TCSPARSE_PATH_CUSPARSE, "ldb=65 took %s", last_kernel);
    k = base_case(64);
    k.route = TCSPARSE_ROUTE_CUDA_CORE;
    k.opA = TCSPARSE_OPERATION_TRANSPOSE;
    run_case(&m, &k, "cuda-core transposed");
    cr_assert_eq(last_path, TCSPARSE_PATH_CUSPARSE, "transposed took %s", last_kernel);
    k = base_case(64);
    k.route = TCSPARSE_ROUTE_CUDA_CORE;
    k.fmt = TCSPARSE_FORMAT_CSC;
    run_case(&m, &k, "cuda-core CSC");
    cr_assert_eq(last_path, TCSPARSE_PATH_CUSPARSE, "CSC took %s", last_kernel);
    /* automatic: the kernel is sampled among the candidates (every candidate kept within
     * reach by a wide explore factor), and every execution is correct */
    setenv("TCSPARSE_X_EXPLORE_FACTOR", "1000", 1);
    tc_config_reload();
    k = base_case(128);
    k.route = TCSPARSE_ROUTE_AUTO;
    k.preprocess = 0;
    k.repeat = 24;
    k.explore = 1;
    run_case(&m, &k, "auto with the CUDA-core candidate");
    cr_assert(cuda_core_calls >= 3, "the CUDA-core kernel ran %d of %d calls", cuda_core_calls,
              k.repeat);
    unsetenv("TCSPARSE_X_EXPLORE_FACTOR");
    tc_config_reload();
    tc_csr_free(&m);
}
