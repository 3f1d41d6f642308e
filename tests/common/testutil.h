/* Helpers shared by the test programs: GPU detection, CPU references that accumulate in
 * double, an error measure and a deterministic random number generator.
 *
 * Dense matrices in the references are described by tc_ref_dense: element (i, j) is at
 * val[i + j*ld] in column order and at val[i*ld + j] in row order, as in the library.
 * Sparse matrices are gen.h's tc_csr: 0-based, int64 row offsets, int32 columns, double
 * values; columns need not be sorted. */
#ifndef TC_TESTUTIL_H
#define TC_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>
#include "tcsparse.h"
#include "tcsparse_ext.h"
#include "gen.h"

/* 1 when at least one CUDA device can be used; otherwise 0 with the reason (the CUDA error,
 * or "no device") written to why[n]. */
int tc_test_gpu_available(char *why, size_t n);

/* First statement of a GPU test: skips it (Criterion's cr_skip_test, so the including file
 * must include <criterion/criterion.h>) when no CUDA device can be used. */
#define TC_REQUIRE_GPU()                                                                       \
    do {                                                                                       \
        char tc_why_[200];                                                                     \
        if (!tc_test_gpu_available(tc_why_, sizeof tc_why_))                                   \
            cr_skip_test("no CUDA device: %s", tc_why_);                                       \
    } while (0)

/* 1 when at least `need` CUDA devices can be used (tc_test_gpu_available's set-up done);
 * otherwise 0 with the reason (the CUDA error, or how many there are) written to why[n]. */
int tc_test_gpus_available(int need, char *why, size_t n);

/* First statement of a test that needs `need` GPUs (the multi-device tests): skips it, as
 * TC_REQUIRE_GPU, when fewer can be used. */
#define TC_REQUIRE_GPUS(need)                                                                  \
    do {                                                                                       \
        char tc_why_[200];                                                                     \
        if (!tc_test_gpus_available((need), tc_why_, sizeof tc_why_))                          \
            cr_skip_test("%d CUDA devices needed: %s", (int)(need), tc_why_);                  \
    } while (0)

/* What a run of calls saw of the automatic route's measurement on the executions
 * (src/route/route.c): the calls that ran a measured sample, and the paths they ran (one bit per
 * path, CSR_ALG3 apart from cuSPARSE's default). */
typedef struct {
    int explored;
    unsigned paths;
} tc_test_measuring;

/* Notes the last route of a call: counted when it was a sample ("exploring: ..."). */
void tc_test_measuring_note(tc_test_measuring *m, const tcsparseRouteInfo_t *ri);

/* What a series of executions did (the kernel tuning's tests, src/route/tune.c): the calls whose
 * reason says they measured a kernel variant, the distinct kernels that ran (the first 4),
 * the last reason, and the calls whose output differed bitwise from the first call's. */
typedef struct {
    int tuning_calls, nkernels, bit_diffs;
    char kernels[4][64];
    char last_reason[160];
    void *first; /* the first call's output (malloc'd) */
} tc_test_call_log;

/* Empties l (freeing what it holds). */
void tc_test_call_log_reset(tc_test_call_log *l);
/* Notes one call: its route, and its output (bytes at out, host memory). */
void tc_test_call_log_note(tc_test_call_log *l, const tcsparseRouteInfo_t *ri, const void *out,
                           size_t bytes);

/* After the calls: exactly n_tuning of them measured a variant, n_kernels distinct kernels
 * ran, the last call no longer tuned, and (when bitwise) every output equalled the first. */
#define TC_ASSERT_TUNED(l, n_tuning, n_kernels, bitwise, label)                                \
    do {                                                                                       \
        cr_assert_eq((l)->tuning_calls, (n_tuning), "%s: %d calls tuning (last: %s)", (label), \
                     (l)->tuning_calls, (l)->last_reason);                                     \
        cr_assert_eq((l)->nkernels, (n_kernels), "%s: %d kernels ran (%s, %s)", (label),       \
                     (l)->nkernels, (l)->kernels[0], (l)->kernels[1]);                         \
        cr_assert(strstr((l)->last_reason, "tuning") == NULL, "%s: still tuning: %s", (label), \
                  (l)->last_reason);                                                           \
        if (bitwise)                                                                           \
            cr_assert_eq((l)->bit_diffs, 0, "%s: %d calls differ bitwise from the first",      \
                         (label), (l)->bit_diffs);                                             \
    } while (0)

/* After the calls (ri: the last one's route): at least two samples, on two paths or more,
 * and the route settled on a measured decision.  Criterion assertions, as TC_REQUIRE_GPU. */
#define TC_ASSERT_MEASURED_AND_SETTLED(m, ri, label)                                           \
    do {                                                                                       \
        cr_assert_geq((m)->explored, 2, "%s: %d calls measured a path (last: %s)", (label),    \
                      (m)->explored, (ri)->reason);                                            \
        cr_assert(__builtin_popcount((m)->paths) >= 2, "%s: one path measured", (label));      \
        cr_assert(strncmp((ri)->reason, "measured on", 11) == 0, "%s: did not settle: '%s'",   \
                  (label), (ri)->reason);                                                      \
    } while (0)

typedef struct {
    int64_t rows, cols, ld;
    tcsparseOrder_t order;
    double *val;
} tc_ref_dense;

/* Offset of element (i, j) of d in d->val. */
static inline size_t tc_ref_at(const tc_ref_dense *d, int64_t i, int64_t j)
{
    return d->order == TCSPARSE_ORDER_COL ? (size_t)(i + j * d->ld) : (size_t)(i * d->ld + j);
}

/* C = alpha·op(A)·op(B) + beta·C in double.  op(A) is A (NON_TRANSPOSE) or Aᵀ (TRANSPOSE and
 * CONJUGATE_TRANSPOSE: the values are real); likewise op(B).  Sizes must agree: C is
 * rows(op(A)) x cols(op(B)).  With beta == 0, C is not read (it may hold NaN), as in
 * cuSPARSE.  Elements of C outside its rows x cols (padding up to ld) are left alone. */
void tc_ref_spmm(tcsparseOperation_t opA, tcsparseOperation_t opB, double alpha, const tc_csr *A,
                 const tc_ref_dense *B, double beta, tc_ref_dense *C);

/* SDDMM on C's pattern: for each nonzero p = (i, j) of C,
 * out[p] = alpha·(op(A)·op(B))(i, j) + beta·C->val[p], with op(A) rows(C) x K and
 * op(B) K x cols(C).  C->val is not read when beta == 0; out may be C->val. */
void tc_ref_sddmm(tcsparseOperation_t opA, tcsparseOperation_t opB, double alpha,
                  const tc_ref_dense *A, const tc_ref_dense *B, double beta, const tc_csr *C,
                  double *out);

/* ||out - ref||₂ / ||ref||₂ over n elements; the absolute ||out||₂ when ref is all zeros;
 * +inf when any out[i] is NaN or infinite (a poisoned element that was never written). */
double tc_rel_err(const double *ref, const double *out, size_t n);

/* splitmix64: the same seed gives the same sequence on every machine. */
uint64_t tc_test_rand_u64(uint64_t *state);
/* Uniform in [-1, 1), 53 random bits. */
double tc_test_rand_uniform(uint64_t *state);

#endif
