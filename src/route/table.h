/* The route table: every way an SpMM or SDDMM call can run, one row each, in the order the
 * route considers them.  Each row names its operation, its eligibility (a predicate over the
 * call), its path (tcsparseGetLastRoute's), its kernel form and its name; cuSPARSE, which
 * takes every call, is the last row of each operation.
 *
 * The table says which rows MAY take a call; route.c says which one does: a forced route
 * (TCSPARSE_ROUTE, tcsparseSetRoute) picks rows by their path, the automatic route lets the
 * selector (select.c) choose among the eligible rows and the measurement on the executions
 * (measure.c) correct it.  tcsparse-inspect --routes prints the table.
 *
 * Pure host code (no CUDA call), so that the CPU tests and the inspector read it without a
 * GPU. */
#ifndef TC_TABLE_H
#define TC_TABLE_H

#include <stddef.h>
#include "internal.h"
#include "select.h"

/* What eligibility looks at: one call's operations, types, layouts, shapes and device, copied
 * from its descriptors by tc_route_call_spmm / tc_route_call_sddmm.  A, B and C are the
 * operands as the operation names them (SpMM: A sparse, B and C dense; SDDMM: A and B dense,
 * C sparse). */
typedef struct {
    int op;                               /* TC_SEL_OP_SPMM or TC_SEL_OP_SDDMM */
    tcsparseOperation_t opA, opB;
    int alg_default;                      /* SpMM: the caller asked for ALG_DEFAULT */
    cudaDataType a_type, b_type, c_type;  /* values */
    cudaDataType compute;
    tcsparseOrder_t a_order, b_order, c_order; /* the dense operands' (a sparse one's: 0) */
    int a_batch, b_batch, c_batch;        /* batch counts (1: no strided batch) */
    tcsparseFormat_t sp_format;           /* the sparse operand (SpMM: A, SDDMM: C) */
    int64_t sp_rows, sp_cols, sp_nnz;
    int64_t n;                            /* SpMM: columns of C (N); SDDMM: columns of A (K) */
    int cc_major, cc_minor;               /* the device's compute capability (0: not known
                                           * before the handle's cuSPARSE handle exists) */
    int interposed;                       /* the interposer's handle (defer_cusparse): its
                                           * cuSPARSE calls run the real cuSPARSE as asked */
    int a_view;                           /* SpMM, opA = TRANSPOSE: the plan is that of the
                                           * transposed view (route_spmm.c) */
    int dense_vec4;                       /* SpMM: B and C as the CUDA-core CSR kernel reads
                                           * them (tc_spmm_csr_fits, kernels.h) */
} tc_route_call;

void tc_route_call_spmm(tc_route_call *c, tcsparseHandle_t h, tcsparseOperation_t opA,
                        tcsparseOperation_t opB, tcsparseConstSpMatDescr_t A,
                        tcsparseConstDnMatDescr_t B, tcsparseConstDnMatDescr_t C,
                        cudaDataType ct, tcsparseSpMMAlg_t alg);
void tc_route_call_sddmm(tc_route_call *c, tcsparseHandle_t h, tcsparseOperation_t opA,
                         tcsparseOperation_t opB, tcsparseConstDnMatDescr_t A,
                         tcsparseConstDnMatDescr_t B, tcsparseConstSpMatDescr_t C,
                         cudaDataType ct);

/* Whether a row can take call c: 1, or 0 with the reason in why (a one-line text). */
typedef int (*tc_route_eligible_fn)(const tc_route_call *c, char *why, size_t n);

/* A row.  form is the row's index among the selector's candidates (TC_SEL_CAND_*, select.h),
 * unique within an operation: the model's predictions and the measured times are kept by it. */
typedef struct {
    int op;                         /* TC_SEL_OP_* */
    tc_route_eligible_fn eligible;  /* NULL: every call */
    const char *when;               /* the eligibility in words */
    tcsparsePath_t path;
    int form;                       /* TC_SEL_CAND_* */
    const char *name;               /* in the reasons ("exploring: TC base, sample 1 of 3") */
    const char *kernel;             /* the recorded kernel name; NULL: the tensor-core
                                     * launcher names the variant it runs */
} tc_route_row;

extern const tc_route_row tc_route_table[];
extern const int tc_route_table_rows;

/* op's row of form `form` (TC_SEL_CAND_*), or NULL where op has none (SDDMM: CSR_ALG3). */
const tc_route_row *tc_route_row_of(int op, int form);
/* op's last row: cuSPARSE as the caller asked, which takes every call. */
const tc_route_row *tc_route_cusparse_row(int op);
/* op's row on path `path`: the tensor-core row of that path, or for TCSPARSE_PATH_CUSPARSE
 * (and any path op has no row for) its last row, cuSPARSE as asked. */
const tc_route_row *tc_route_row_on(int op, tcsparsePath_t path);
/* The kernel form in words: "base", "balanced" (tensor cores), "as asked", "CSR_ALG3"
 * (cuSPARSE's algorithm). */
const char *tc_route_form_name(int form);
/* The bit of row r in the masks below. */
static inline unsigned tc_route_bit(const tc_route_row *r)
{
    return 1u << (r - tc_route_table);
}
/* Whether row r takes call c. */
int tc_route_row_eligible(const tc_route_row *r, const tc_route_call *c);
/* The walk: the rows of c->op that take c, as a mask of tc_route_bit.  Rows that share a
 * predicate share its answer (it is asked once); why receives the first refusal in table
 * order, untouched where no row refuses. */
unsigned tc_route_eligible(const tc_route_call *c, char *why, size_t n);
/* Whether mask holds op's tensor-core rows.  They share one predicate (a call eligible for
 * one tensor-core kernel is eligible for the other: one plan serves both), so it holds all or
 * none of them. */
int tc_route_tc_ok(unsigned mask, int op);

#endif
