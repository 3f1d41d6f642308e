/* The route table (table.h): its rows, their eligibility and the walk over them. */
#include <stdio.h>
#include "route.h"
#include "table.h"

/* ---- eligibility ------------------------------------------------------------------------- */

/* The layout a dense operand presents after its operation: a transposed row-major matrix is
 * its transpose in column-major order over the same array, and the reverse. */
static tcsparseOrder_t tc_order_after(tcsparseOperation_t op, tcsparseOrder_t o)
{
    if (op == TCSPARSE_OPERATION_NON_TRANSPOSE)
        return o;
    return o == TCSPARSE_ORDER_ROW ? TCSPARSE_ORDER_COL : TCSPARSE_ORDER_ROW;
}

/* The value types the tcsparse kernels take: A and B of one type among FP32, FP16 and BF16
 * (bf16_ok: BF16 too), C FP32 or that type, FP32 compute; 0 with the reason otherwise. */
static int tc_types_ok(const tc_route_call *c, int bf16_ok, char *why, size_t n)
{
    const cudaDataType ab = c->a_type;
    if (tc_route_ab_type(ab) >= 0 && (bf16_ok || ab != CUDA_R_16BF) && c->b_type == ab &&
        c->compute == CUDA_R_32F && (c->c_type == CUDA_R_32F || c->c_type == ab))
        return 1;
    return snprintf(why, n, "type combination %s/%s/%s compute %s", tc_dtype_name(ab),
                    tc_dtype_name(c->b_type), tc_dtype_name(c->c_type),
                    tc_dtype_name(c->compute)), 0;
}

/* The tensor-core kernels, either operation.  SpMM: A untransposed, or transposed through its
 * transposed view's plan (a_view); B untransposed; B and C row-major.  SDDMM: op(A) row-major
 * and op(B) column-major, whatever the operations (a transposed operand is the other layout
 * over the same array).  No strided batch; A and B of one type the kernels take (SpMM FP32,
 * FP16, BF16; SDDMM FP32, FP16), C FP32 or that type, FP32 compute; the sparse matrix within
 * the plan's int32 indices; an sm_80 or newer device (mma.sync and cp.async).  The checks run in
 * this order and the first that fails gives the reason. */
static int tc_eligible_tc(const tc_route_call *c, char *why, size_t n)
{
    const int sddmm = c->op == TC_SEL_OP_SDDMM;
    if (c->opA == TCSPARSE_OPERATION_CONJUGATE_TRANSPOSE ||
        c->opB == TCSPARSE_OPERATION_CONJUGATE_TRANSPOSE)
        return snprintf(why, n, "conjugate-transposed operand"), 0;
    if (!sddmm && c->opB != TCSPARSE_OPERATION_NON_TRANSPOSE)
        return snprintf(why, n, "transposed B"), 0;
    if (!sddmm && c->opA != TCSPARSE_OPERATION_NON_TRANSPOSE && !c->a_view)
        return snprintf(why, n, "transposed A without its transposed view"), 0;
    if (sddmm && (tc_order_after(c->opA, c->a_order) != TCSPARSE_ORDER_ROW ||
                  tc_order_after(c->opB, c->b_order) != TCSPARSE_ORDER_COL))
        return snprintf(why, n, "layout: the kernel takes op(A) row-major and op(B) "
                                "column-major"), 0;
    if (!sddmm && (c->b_order != TCSPARSE_ORDER_ROW || c->c_order != TCSPARSE_ORDER_ROW))
        return snprintf(why, n, "column-major B or C"), 0;
    if (c->a_batch > 1 || c->b_batch > 1 || c->c_batch > 1)
        return snprintf(why, n, "strided batch"), 0;
    if (!tc_types_ok(c, !sddmm, why, n))
        return 0;
    const int64_t prow = c->a_view ? c->sp_cols : c->sp_rows; /* the plan's rows */
    if (c->sp_nnz >= (1ll << 31) || prow >= (1ll << 31) - 16 || c->sp_rows >= (1ll << 31) ||
        c->sp_cols >= (1ll << 31))
        return snprintf(why, n, "matrix beyond the int32 tensor-core plan"), 0;
    if (c->cc_major < 8)
        return snprintf(why, n, "device is sm_%d%d; the tensor-core kernels need sm_80 or newer",
                        c->cc_major, c->cc_minor), 0;
    return 1;
}

/* What both CUDA-core kernels ask, after their own checks: no strided batch, the tensor-core
 * kernels' types of the operation (bf16_ok: BF16 too), sizes and nonzeros below TC_CSR_MAX
 * (kernels.h), an sm_80 or newer device (the build's floor: BF16 atomics). */
static int tc_eligible_csr_common(const tc_route_call *c, int bf16_ok, char *why, size_t n)
{
    if (c->a_batch > 1 || c->b_batch > 1 || c->c_batch > 1)
        return snprintf(why, n, "strided batch"), 0;
    if (!tc_types_ok(c, bf16_ok, why, n))
        return 0;
    if (c->sp_nnz >= TC_CSR_MAX || c->sp_rows >= TC_CSR_MAX || c->sp_cols >= TC_CSR_MAX ||
        c->n >= TC_CSR_MAX)
        return snprintf(why, n, "sizes or nonzeros beyond 2^31 - 256"), 0;
    if (c->cc_major < 8)
        return snprintf(why, n, "device is sm_%d%d; the CUDA-core kernel needs sm_80 or newer",
                        c->cc_major, c->cc_minor), 0;
    return 1;
}

/* The CUDA-core CSR SpMM (kernels/spmm/spmm_csr.cu): CSR A read as the caller stores it (no
 * plan), both operands untransposed, B and C row-major and read 4 columns at a time
 * (dense_vec4), then tc_eligible_csr_common. */
static int tc_eligible_csr(const tc_route_call *c, char *why, size_t n)
{
    if (c->op != TC_SEL_OP_SPMM || c->sp_format != TCSPARSE_FORMAT_CSR)
        return snprintf(why, n, "the CUDA-core kernel takes CSR SpMM"), 0;
    if (c->opA != TCSPARSE_OPERATION_NON_TRANSPOSE || c->opB != TCSPARSE_OPERATION_NON_TRANSPOSE)
        return snprintf(why, n, "transposed operand"), 0;
    if (c->b_order != TCSPARSE_ORDER_ROW || c->c_order != TCSPARSE_ORDER_ROW)
        return snprintf(why, n, "column-major B or C"), 0;
    if (!c->dense_vec4)
        return snprintf(why, n, "N, ldb or ldc not a multiple of 4, or B or C not on a "
                                "4-element boundary"), 0;
    return tc_eligible_csr_common(c, 1, why, n);
}

/* The CUDA-core CSR SDDMM (kernels/sddmm/sddmm_csr.cu): CSR C written through its own arrays,
 * op(A) row-major and op(B) column-major as for the tensor-core kernel (a transposed operand
 * is the other layout over the same array), then tc_eligible_csr_common (the tensor-core
 * SDDMM's types: no BF16). */
static int tc_eligible_sddmm_csr(const tc_route_call *c, char *why, size_t n)
{
    if (c->op != TC_SEL_OP_SDDMM || c->sp_format != TCSPARSE_FORMAT_CSR)
        return snprintf(why, n, "the CUDA-core SDDMM takes a CSR C"), 0;
    if (c->opA == TCSPARSE_OPERATION_CONJUGATE_TRANSPOSE ||
        c->opB == TCSPARSE_OPERATION_CONJUGATE_TRANSPOSE)
        return snprintf(why, n, "conjugate-transposed operand"), 0;
    if (tc_order_after(c->opA, c->a_order) != TCSPARSE_ORDER_ROW ||
        tc_order_after(c->opB, c->b_order) != TCSPARSE_ORDER_COL)
        return snprintf(why, n, "layout: the kernel takes op(A) row-major and op(B) "
                                "column-major"), 0;
    return tc_eligible_csr_common(c, 0, why, n);
}

/* CSR_ALG3 in place of the ALG_DEFAULT asked for: FP32 CSR, both operands non-transposed,
 * row-major B and C (what the model was measured on), no batch, and not for the interposer
 * (which runs the real cuSPARSE with the caller's arguments). */
static int tc_eligible_alg3(const tc_route_call *c, char *why, size_t n)
{
    if (c->op == TC_SEL_OP_SPMM && c->alg_default && c->sp_format == TCSPARSE_FORMAT_CSR &&
        c->opA == TCSPARSE_OPERATION_NON_TRANSPOSE && c->opB == TCSPARSE_OPERATION_NON_TRANSPOSE &&
        c->a_type == CUDA_R_32F && c->b_type == CUDA_R_32F && c->c_type == CUDA_R_32F &&
        c->compute == CUDA_R_32F && c->b_order == TCSPARSE_ORDER_ROW &&
        c->c_order == TCSPARSE_ORDER_ROW && c->a_batch == 1 && c->b_batch == 1 &&
        c->c_batch == 1 && !c->interposed)
        return 1;
    return snprintf(why, n, "CSR_ALG3 takes FP32 CSR ALG_DEFAULT calls, untransposed, "
                            "row-major, unbatched, not through the interposer"), 0;
}

/* ---- the table ----------------------------------------------------------------------------- */

#define TC_WHEN_SPMM_TC                                                                        \
    "A not transposed or transposed (the plan of its transpose), B not transposed; B, C "       \
    "row-major; no strided batch; A, B both FP32, FP16 or BF16, C FP32 or A's type, compute "   \
    "FP32; op(A) rows < 2^31-16, columns and nonzeros < 2^31; sm_80+"
#define TC_WHEN_SDDMM_TC                                                                       \
    "op(A) row-major, op(B) column-major (either may be a transposed operand in the other "    \
    "layout); no strided batch; A, B both FP32 or FP16, C FP32 or A's type, compute FP32; C "  \
    "rows < 2^31-16, columns and nonzeros < 2^31; sm_80+"
#define TC_WHEN_SPMM_CSR                                                                       \
    "CSR A, A and B not transposed; B, C row-major with N, ldb, ldc multiples of 4 on "        \
    "4-element boundaries; no strided batch; A, B both FP32, FP16 or BF16, C FP32 or A's "     \
    "type, compute FP32; sizes and nonzeros < 2^31 - 256; sm_80+"
#define TC_WHEN_SDDMM_CSR                                                                      \
    "CSR C; op(A) row-major, op(B) column-major (either may be a transposed operand in the "   \
    "other layout); no strided batch; A, B both FP32 or FP16, C FP32 or A's type, compute "    \
    "FP32; sizes and nonzeros < 2^31 - 256; sm_80+"
#define TC_WHEN_ALG3                                                                           \
    "ALG_DEFAULT asked; CSR A; A, B not transposed; A, B, C, compute FP32; B, C row-major; "   \
    "no strided batch; not through the interposer"

const tc_route_row tc_route_table[] = {
    /* op             eligible          when              path                       form                  name                 kernel */
    {TC_SEL_OP_SPMM,  tc_eligible_tc,   TC_WHEN_SPMM_TC,  TCSPARSE_PATH_TC_BASE,     TC_SEL_CAND_BASE,     "TC base",           NULL},
    {TC_SEL_OP_SPMM,  tc_eligible_tc,   TC_WHEN_SPMM_TC,  TCSPARSE_PATH_TC_BALANCED, TC_SEL_CAND_BALANCED, "TC balanced",       NULL},
    {TC_SEL_OP_SPMM,  tc_eligible_csr,  TC_WHEN_SPMM_CSR, TCSPARSE_PATH_CUDA_CORE,   TC_SEL_CAND_CSR,      "CUDA cores",        "tc_spmm_csr"},
    {TC_SEL_OP_SPMM,  tc_eligible_alg3, TC_WHEN_ALG3,     TCSPARSE_PATH_CUSPARSE,    TC_SEL_CAND_ALG3,     "cuSPARSE CSR_ALG3", "cusparseSpMM(CSR_ALG3)"},
    {TC_SEL_OP_SPMM,  NULL,             "every call",     TCSPARSE_PATH_CUSPARSE,    TC_SEL_CAND_CUSPARSE, "cuSPARSE",          "cusparseSpMM"},
    {TC_SEL_OP_SDDMM, tc_eligible_tc,   TC_WHEN_SDDMM_TC, TCSPARSE_PATH_TC_BASE,     TC_SEL_CAND_BASE,     "TC base",           NULL},
    {TC_SEL_OP_SDDMM, tc_eligible_tc,   TC_WHEN_SDDMM_TC, TCSPARSE_PATH_TC_BALANCED, TC_SEL_CAND_BALANCED, "TC balanced",       NULL},
    {TC_SEL_OP_SDDMM, tc_eligible_sddmm_csr, TC_WHEN_SDDMM_CSR, TCSPARSE_PATH_CUDA_CORE, TC_SEL_CAND_CSR, "CUDA cores",   "tc_sddmm_csr"},
    {TC_SEL_OP_SDDMM, NULL,             "every call",     TCSPARSE_PATH_CUSPARSE,    TC_SEL_CAND_CUSPARSE, "cuSPARSE",          "cusparseSDDMM"},
};
const int tc_route_table_rows = (int)(sizeof tc_route_table / sizeof tc_route_table[0]);
_Static_assert(sizeof tc_route_table / sizeof tc_route_table[0] <= 32,
               "the masks of tc_route_eligible hold one bit per row");

/* ---- the call ------------------------------------------------------------------------------ */

void tc_route_call_spmm(tc_route_call *c, tcsparseHandle_t h, tcsparseOperation_t opA,
                        tcsparseOperation_t opB, tcsparseConstSpMatDescr_t A,
                        tcsparseConstDnMatDescr_t B, tcsparseConstDnMatDescr_t C,
                        cudaDataType ct, tcsparseSpMMAlg_t alg)
{
    *c = (tc_route_call){.op = TC_SEL_OP_SPMM,
                         .opA = opA,
                         .opB = opB,
                         .alg_default = alg == TCSPARSE_SPMM_ALG_DEFAULT,
                         .a_type = A->value_type,
                         .b_type = B->value_type,
                         .c_type = C->value_type,
                         .compute = ct,
                         .b_order = B->order,
                         .c_order = C->order,
                         .a_batch = A->batch_count,
                         .b_batch = B->batch_count,
                         .c_batch = C->batch_count,
                         .sp_format = A->format,
                         .sp_rows = A->rows,
                         .sp_cols = A->cols,
                         .sp_nnz = A->nnz,
                         .n = C->cols,
                         .cc_major = h->cc_major,
                         .cc_minor = h->cc_minor,
                         .interposed = tc_hook_on(h, TC_HOOK_DEFER_CUSPARSE),
                         .dense_vec4 = tc_spmm_csr_fits(B->values, B->ld, C->values, C->ld,
                                                        C->cols, tc_route_ab_type(B->value_type),
                                                        tc_route_ab_type(C->value_type))};
}

void tc_route_call_sddmm(tc_route_call *c, tcsparseHandle_t h, tcsparseOperation_t opA,
                         tcsparseOperation_t opB, tcsparseConstDnMatDescr_t A,
                         tcsparseConstDnMatDescr_t B, tcsparseConstSpMatDescr_t C,
                         cudaDataType ct)
{
    *c = (tc_route_call){.op = TC_SEL_OP_SDDMM,
                         .opA = opA,
                         .opB = opB,
                         .a_type = A->value_type,
                         .b_type = B->value_type,
                         .c_type = C->value_type,
                         .compute = ct,
                         .a_order = A->order,
                         .b_order = B->order,
                         .a_batch = A->batch_count,
                         .b_batch = B->batch_count,
                         .c_batch = C->batch_count,
                         .sp_format = C->format,
                         .sp_rows = C->rows,
                         .sp_cols = C->cols,
                         .sp_nnz = C->nnz,
                         .n = opA == TCSPARSE_OPERATION_NON_TRANSPOSE ? A->cols : A->rows,
                         .cc_major = h->cc_major,
                         .cc_minor = h->cc_minor,
                         .interposed = tc_hook_on(h, TC_HOOK_DEFER_CUSPARSE)};
}

/* ---- looking rows up ------------------------------------------------------------------------ */

const tc_route_row *tc_route_row_of(int op, int form)
{
    for (int i = 0; i < tc_route_table_rows; i++)
        if (tc_route_table[i].op == op && tc_route_table[i].form == form)
            return &tc_route_table[i];
    return NULL;
}

const tc_route_row *tc_route_cusparse_row(int op)
{
    const tc_route_row *last = NULL;
    for (int i = 0; i < tc_route_table_rows; i++)
        if (tc_route_table[i].op == op)
            last = &tc_route_table[i];
    return last;
}

const tc_route_row *tc_route_row_on(int op, tcsparsePath_t path)
{
    if (path == TCSPARSE_PATH_CUSPARSE)
        return tc_route_cusparse_row(op);
    for (int i = 0; i < tc_route_table_rows; i++)
        if (tc_route_table[i].op == op && tc_route_table[i].path == path)
            return &tc_route_table[i];
    return tc_route_cusparse_row(op);
}

const char *tc_route_form_name(int form)
{
    switch (form) {
    case TC_SEL_CAND_BASE: return "base";
    case TC_SEL_CAND_BALANCED: return "balanced";
    case TC_SEL_CAND_CUSPARSE: return "as asked";
    case TC_SEL_CAND_ALG3: return "CSR_ALG3";
    case TC_SEL_CAND_CSR: return "CSR";
    default: return "?";
    }
}

int tc_route_row_eligible(const tc_route_row *r, const tc_route_call *c)
{
    return r->eligible == NULL || r->eligible(c, NULL, 0);
}

unsigned tc_route_eligible(const tc_route_call *c, char *why, size_t n)
{
    unsigned mask = 0;
    int refused = 0;
    for (int i = 0; i < tc_route_table_rows; i++) {
        const tc_route_row *r = &tc_route_table[i];
        if (r->op != c->op)
            continue;
        int ok = -1;
        for (int j = 0; j < i && ok < 0; j++) /* a predicate already asked */
            if (tc_route_table[j].op == c->op && tc_route_table[j].eligible == r->eligible)
                ok = (int)(mask >> j) & 1;
        if (ok < 0 && r->eligible == NULL)
            ok = 1;
        if (ok < 0) {
            ok = r->eligible(c, refused ? NULL : why, refused ? 0 : n);
            refused |= !ok;
        }
        if (ok)
            mask |= 1u << i;
    }
    return mask;
}

int tc_route_tc_ok(unsigned mask, int op)
{
    const tc_route_row *r = tc_route_row_of(op, TC_SEL_CAND_BASE);
    return r != NULL && (mask & tc_route_bit(r)) != 0;
}
