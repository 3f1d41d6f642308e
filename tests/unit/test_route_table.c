/* The route table (src/route/table.h) on the CPU: its shape (each operation's rows, cuSPARSE
 * last, names and kernel names the reasons and the GPU tests rely on) and the eligibility of
 * its rows on synthetic calls and on calls built from real descriptors. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include "internal.h"
#include "late.h"
#include "plan.h"
#include "route.h"
#include "select.h"
#include "table.h"

static const int ops[2] = {TC_SEL_OP_SPMM, TC_SEL_OP_SDDMM};

static unsigned bit(int op, int form)
{
    const tc_route_row *r = tc_route_row_of(op, form);
    cr_assert_not_null(r, "op %d has no row of form %d", op, form);
    return tc_route_bit(r);
}

static unsigned all_rows(int op)
{
    unsigned m = 0;
    for (int i = 0; i < tc_route_table_rows; i++)
        if (tc_route_table[i].op == op)
            m |= 1u << i;
    return m;
}

/* ---- the table's shape -------------------------------------------------------------------- */

Test(route_table, each_operation_ends_on_cusparse_for_every_call)
{
    for (int o = 0; o < 2; o++) {
        int last = -1, first_cusparse = -1, last_tc = -1;
        for (int i = 0; i < tc_route_table_rows; i++) {
            if (tc_route_table[i].op != ops[o])
                continue;
            last = i;
            if (tc_route_table[i].path == TCSPARSE_PATH_CUSPARSE && first_cusparse < 0)
                first_cusparse = i;
            if (tc_route_table[i].path != TCSPARSE_PATH_CUSPARSE)
                last_tc = i;
        }
        cr_assert_geq(last, 0, "op %d has no row", ops[o]);
        const tc_route_row *r = &tc_route_table[last];
        cr_expect_eq(r->path, TCSPARSE_PATH_CUSPARSE, "op %d ends on path %d", ops[o], r->path);
        cr_expect_eq(r->form, TC_SEL_CAND_CUSPARSE, "op %d ends on form %d", ops[o], r->form);
        cr_expect_null(r->eligible, "op %d: its last row refuses some calls", ops[o]);
        cr_expect_eq(tc_route_cusparse_row(ops[o]), r);
        /* the tensor-core rows first: the route's refusal text is theirs */
        cr_expect_lt(last_tc, first_cusparse, "op %d: a tensor-core row after cuSPARSE", ops[o]);
    }
}

Test(route_table, rows_are_named_with_unique_forms)
{
    for (int i = 0; i < tc_route_table_rows; i++) {
        const tc_route_row *r = &tc_route_table[i];
        cr_expect(r->op == TC_SEL_OP_SPMM || r->op == TC_SEL_OP_SDDMM, "row %d: op %d", i, r->op);
        cr_expect(r->name != NULL && r->name[0] != '\0', "row %d has no name", i);
        cr_expect(r->when != NULL && r->when[0] != '\0', "row %d: eligibility not in words", i);
        cr_expect(r->form >= 0 && r->form < TC_SEL_NCAND, "row %d: form %d", i, r->form);
        /* cuSPARSE and CUDA-core rows name their kernel; the tensor-core launcher its own */
        cr_expect_eq(r->kernel != NULL, !tc_path_on_plan(r->path), "row %d (%s)", i, r->name);
        cr_expect_str_neq(tc_route_form_name(r->form), "?", "row %d", i);
        for (int j = 0; j < i; j++)
            cr_expect(tc_route_table[j].op != r->op || tc_route_table[j].form != r->form,
                      "rows %d and %d: one form twice", j, i);
    }
    /* the names and kernel names the reasons and the GPU tests compare */
    static const struct {
        int op, form;
        tcsparsePath_t path;
        const char *name, *kernel;
    } want[] = {
        {TC_SEL_OP_SPMM, TC_SEL_CAND_BASE, TCSPARSE_PATH_TC_BASE, "TC base", NULL},
        {TC_SEL_OP_SPMM, TC_SEL_CAND_BALANCED, TCSPARSE_PATH_TC_BALANCED, "TC balanced", NULL},
        {TC_SEL_OP_SPMM, TC_SEL_CAND_CSR, TCSPARSE_PATH_CUDA_CORE, "CUDA cores", "tc_spmm_csr"},
        {TC_SEL_OP_SPMM, TC_SEL_CAND_ALG3, TCSPARSE_PATH_CUSPARSE, "cuSPARSE CSR_ALG3",
         "cusparseSpMM(CSR_ALG3)"},
        {TC_SEL_OP_SPMM, TC_SEL_CAND_CUSPARSE, TCSPARSE_PATH_CUSPARSE, "cuSPARSE", "cusparseSpMM"},
        {TC_SEL_OP_SDDMM, TC_SEL_CAND_BASE, TCSPARSE_PATH_TC_BASE, "TC base", NULL},
        {TC_SEL_OP_SDDMM, TC_SEL_CAND_BALANCED, TCSPARSE_PATH_TC_BALANCED, "TC balanced", NULL},
        {TC_SEL_OP_SDDMM, TC_SEL_CAND_CSR, TCSPARSE_PATH_CUDA_CORE, "CUDA cores", "tc_sddmm_csr"},
        {TC_SEL_OP_SDDMM, TC_SEL_CAND_CUSPARSE, TCSPARSE_PATH_CUSPARSE, "cuSPARSE", "cusparseSDDMM"},
    };
    const int n = (int)(sizeof want / sizeof want[0]);
    cr_assert_eq(tc_route_table_rows, n, "%d rows", tc_route_table_rows);
    for (int i = 0; i < n; i++) {
        const tc_route_row *r = tc_route_row_of(want[i].op, want[i].form);
        cr_assert_not_null(r, "op %d form %d", want[i].op, want[i].form);
        cr_expect_eq(r->path, want[i].path, "%s", want[i].name);
        cr_expect_str_eq(r->name, want[i].name);
        if (want[i].kernel != NULL)
            cr_expect_str_eq(r->kernel, want[i].kernel);
        cr_expect_eq(tc_route_row_on(want[i].op, want[i].path),
                     want[i].path == TCSPARSE_PATH_CUSPARSE ? tc_route_cusparse_row(want[i].op) : r,
                     "%s: by its path", want[i].name);
    }
    cr_expect_null(tc_route_row_of(TC_SEL_OP_SDDMM, TC_SEL_CAND_ALG3), "SDDMM has no CSR_ALG3");
}

Test(route_table, tensor_core_rows_share_one_predicate)
{
    for (int o = 0; o < 2; o++) {
        const tc_route_row *b = tc_route_row_of(ops[o], TC_SEL_CAND_BASE);
        const tc_route_row *l = tc_route_row_of(ops[o], TC_SEL_CAND_BALANCED);
        cr_assert(b != NULL && l != NULL);
        cr_expect_not_null(b->eligible);
        cr_expect_eq(b->eligible, l->eligible, "op %d", ops[o]);
    }
}

/* ---- eligibility on synthetic calls --------------------------------------------------------- */

/* An FP32 CSR SpMM with row-major B and C, asked with ALG_DEFAULT, on an sm_90 device. */
static tc_route_call spmm_call(void)
{
    tc_route_call c = {0};
    c.op = TC_SEL_OP_SPMM;
    c.opA = c.opB = TCSPARSE_OPERATION_NON_TRANSPOSE;
    c.alg_default = 1;
    c.a_type = c.b_type = c.c_type = c.compute = CUDA_R_32F;
    c.b_order = c.c_order = TCSPARSE_ORDER_ROW;
    c.a_batch = c.b_batch = c.c_batch = 1;
    c.sp_format = TCSPARSE_FORMAT_CSR;
    c.sp_rows = c.sp_cols = 1000;
    c.sp_nnz = 10000;
    c.n = 64;
    c.cc_major = 9;
    c.dense_vec4 = 1;
    return c;
}

/* An FP32 SDDMM with row-major A and column-major B into a CSR C, on an sm_90 device. */
static tc_route_call sddmm_call(void)
{
    tc_route_call c = spmm_call();
    c.op = TC_SEL_OP_SDDMM;
    c.alg_default = 0;
    c.a_order = TCSPARSE_ORDER_ROW;
    c.b_order = TCSPARSE_ORDER_COL;
    c.c_order = 0;
    return c;
}

#define UNTOUCHED "(untouched)"

/* The walk's mask for c, with why (UNTOUCHED where no row refused). */
static unsigned walk(const tc_route_call *c, char *why, size_t n)
{
    snprintf(why, n, UNTOUCHED);
    const unsigned m = tc_route_eligible(c, why, n);
    /* each row alone agrees with the walk */
    for (int i = 0; i < tc_route_table_rows; i++)
        if (tc_route_table[i].op == c->op)
            cr_expect_eq(tc_route_row_eligible(&tc_route_table[i], c), (int)(m >> i) & 1,
                         "row %d (%s) alone", i, tc_route_table[i].name);
        else
            cr_expect_eq((m >> i) & 1, 0u, "row %d of another operation", i);
    cr_expect_eq(tc_route_tc_ok(m, c->op), (m & bit(c->op, TC_SEL_CAND_BASE)) != 0);
    return m;
}

Test(route_eligible, fp32_csr_spmm_on_sm90_takes_every_row)
{
    char why[160];
    const tc_route_call c = spmm_call();
    cr_expect_eq(walk(&c, why, sizeof why), all_rows(TC_SEL_OP_SPMM));
    cr_expect_str_eq(why, UNTOUCHED);
    cr_expect(tc_route_tc_ok(all_rows(TC_SEL_OP_SPMM), TC_SEL_OP_SPMM));
}

Test(route_eligible, fp64_goes_to_cusparse_only)
{
    char why[160];
    tc_route_call c = spmm_call();
    c.a_type = c.b_type = c.c_type = c.compute = CUDA_R_64F;
    cr_expect_eq(walk(&c, why, sizeof why), bit(TC_SEL_OP_SPMM, TC_SEL_CAND_CUSPARSE));
    cr_expect_str_eq(why, "type combination CUDA_R_64F/CUDA_R_64F/CUDA_R_64F compute CUDA_R_64F");
    c = sddmm_call();
    c.a_type = c.b_type = c.c_type = c.compute = CUDA_R_64F;
    cr_expect_eq(walk(&c, why, sizeof why), bit(TC_SEL_OP_SDDMM, TC_SEL_CAND_CUSPARSE));
    cr_expect(strncmp(why, "type combination", 16) == 0, "%s", why);
}

Test(route_eligible, column_major_b_goes_to_cusparse_only)
{
    char why[160];
    tc_route_call c = spmm_call();
    c.b_order = TCSPARSE_ORDER_COL;
    cr_expect_eq(walk(&c, why, sizeof why), bit(TC_SEL_OP_SPMM, TC_SEL_CAND_CUSPARSE));
    cr_expect_str_eq(why, "column-major B or C");
    c = spmm_call();
    c.c_order = TCSPARSE_ORDER_COL;
    cr_expect_eq(walk(&c, why, sizeof why), bit(TC_SEL_OP_SPMM, TC_SEL_CAND_CUSPARSE));
    cr_expect_str_eq(why, "column-major B or C");
}

Test(route_eligible, checks_run_in_order)
{
    char why[160];
    tc_route_call c = spmm_call();
    c.opB = TCSPARSE_OPERATION_TRANSPOSE;
    c.b_order = TCSPARSE_ORDER_COL;
    c.a_batch = 2;
    c.a_type = CUDA_R_64F;
    c.cc_major = 7;
    c.cc_minor = 5;
    cr_expect_eq(walk(&c, why, sizeof why), bit(TC_SEL_OP_SPMM, TC_SEL_CAND_CUSPARSE));
    cr_expect_str_eq(why, "transposed B");
    c.opB = TCSPARSE_OPERATION_NON_TRANSPOSE;
    walk(&c, why, sizeof why);
    cr_expect_str_eq(why, "column-major B or C");
    c.b_order = TCSPARSE_ORDER_ROW;
    walk(&c, why, sizeof why);
    cr_expect_str_eq(why, "strided batch");
    c.a_batch = 1;
    walk(&c, why, sizeof why);
    cr_expect(strncmp(why, "type combination CUDA_R_64F/", 28) == 0, "%s", why);
    c.a_type = CUDA_R_32F;
    c.sp_nnz = 1ll << 31;
    walk(&c, why, sizeof why);
    cr_expect_str_eq(why, "matrix beyond the int32 tensor-core plan");
    c.sp_nnz = 100;
    walk(&c, why, sizeof why);
    cr_expect_str_eq(why, "device is sm_75; the tensor-core kernels need sm_80 or newer");
}

Test(route_eligible, older_device_keeps_csr_alg3)
{
    char why[160];
    tc_route_call c = spmm_call();
    c.cc_major = 8; /* Ampere and Ada take the tensor cores */
    c.cc_minor = 6;
    cr_expect_eq(walk(&c, why, sizeof why), all_rows(TC_SEL_OP_SPMM));
    c.cc_minor = 0;
    cr_expect_eq(walk(&c, why, sizeof why), all_rows(TC_SEL_OP_SPMM));
    c.cc_major = 7; /* Turing: no TF32 mma.sync, no cp.async */
    c.cc_minor = 5;
    cr_expect_eq(walk(&c, why, sizeof why),
                 bit(TC_SEL_OP_SPMM, TC_SEL_CAND_ALG3) | bit(TC_SEL_OP_SPMM, TC_SEL_CAND_CUSPARSE));
    cr_expect_str_eq(why, "device is sm_75; the tensor-core kernels need sm_80 or newer");
    /* not known yet (no cuSPARSE handle): refused as sm_00 */
    c.cc_major = c.cc_minor = 0;
    cr_expect(!tc_route_tc_ok(walk(&c, why, sizeof why), c.op));
    cr_expect_str_eq(why, "device is sm_00; the tensor-core kernels need sm_80 or newer");
}

Test(route_eligible, csr_alg3_only_for_fp32_csr_default_unbatched_direct_calls)
{
    char why[160];
    const unsigned tc_and_cusparse = bit(TC_SEL_OP_SPMM, TC_SEL_CAND_BASE) |
                                     bit(TC_SEL_OP_SPMM, TC_SEL_CAND_BALANCED) |
                                     bit(TC_SEL_OP_SPMM, TC_SEL_CAND_CUSPARSE) |
                                     bit(TC_SEL_OP_SPMM, TC_SEL_CAND_CSR);
    tc_route_call c = spmm_call();
    c.a_type = c.b_type = CUDA_R_16F; /* FP16 A and B, FP32 C: tensor cores yes */
    cr_expect_eq(walk(&c, why, sizeof why), tc_and_cusparse);
    cr_expect(strncmp(why, "CSR_ALG3", 8) == 0, "%s", why);
    c = spmm_call();
    c.a_type = c.b_type = c.c_type = CUDA_R_16BF;
    cr_expect_eq(walk(&c, why, sizeof why), tc_and_cusparse);
    c = spmm_call();
    c.alg_default = 0; /* another algorithm asked */
    cr_expect_eq(walk(&c, why, sizeof why), tc_and_cusparse);
    c = spmm_call();
    c.interposed = 1;
    cr_expect_eq(walk(&c, why, sizeof why), tc_and_cusparse);
    c = spmm_call();
    c.sp_format = TCSPARSE_FORMAT_COO; /* the CUDA-core kernel reads CSR only */
    cr_expect_eq(walk(&c, why, sizeof why),
                 tc_and_cusparse & ~bit(TC_SEL_OP_SPMM, TC_SEL_CAND_CSR));
    c = spmm_call();
    c.b_batch = 0; /* CSR_ALG3 wants a batch count of exactly 1 */
    cr_expect_eq(walk(&c, why, sizeof why), tc_and_cusparse);
    c = spmm_call();
    c.c_batch = 3;
    cr_expect_eq(walk(&c, why, sizeof why), bit(TC_SEL_OP_SPMM, TC_SEL_CAND_CUSPARSE));
    cr_expect_str_eq(why, "strided batch");
}

Test(route_eligible, cuda_core_row_takes_untransposed_csr_with_vec4_operands)
{
    char why[160];
    const unsigned csr = bit(TC_SEL_OP_SPMM, TC_SEL_CAND_CSR);
    tc_route_call c = spmm_call();
    cr_expect_neq(walk(&c, why, sizeof why) & csr, 0u);
    cr_expect_str_eq(why, UNTOUCHED);
    c.dense_vec4 = 0; /* N, ldb, ldc or an address off 4 elements: only that row refuses */
    cr_expect_eq(walk(&c, why, sizeof why), all_rows(TC_SEL_OP_SPMM) & ~csr);
    cr_expect(strncmp(why, "N, ldb or ldc not a multiple of 4", 33) == 0, "%s", why);
    c = spmm_call();
    c.opA = TCSPARSE_OPERATION_TRANSPOSE; /* the tensor cores take it through A's view */
    c.a_view = 1;
    c.alg_default = 0;
    cr_expect_eq(walk(&c, why, sizeof why) & csr, 0u);
    cr_expect_str_eq(why, "transposed operand");
    c = spmm_call();
    c.sp_format = TCSPARSE_FORMAT_CSC;
    cr_expect_eq(walk(&c, why, sizeof why) & csr, 0u);
    c = spmm_call();
    c.sp_nnz = (1ll << 31) - 1;
    cr_expect_eq(walk(&c, why, sizeof why) & csr, 0u);
    c = spmm_call();
    c.cc_major = 7;
    c.cc_minor = 5;
    cr_expect_eq(walk(&c, why, sizeof why) & csr, 0u);
    cr_expect(!tc_route_row_eligible(tc_route_row_of(TC_SEL_OP_SPMM, TC_SEL_CAND_CSR), &c));
}

Test(route_eligible, type_combinations)
{
    char why[160];
    tc_route_call c = spmm_call();
    c.a_type = c.b_type = CUDA_R_16F;
    c.c_type = CUDA_R_16F; /* C of A's type */
    cr_expect(tc_route_tc_ok(walk(&c, why, sizeof why), c.op));
    c.c_type = CUDA_R_16BF; /* C of neither */
    cr_expect(!tc_route_tc_ok(walk(&c, why, sizeof why), c.op));
    cr_expect_str_eq(why, "type combination CUDA_R_16F/CUDA_R_16F/CUDA_R_16BF compute CUDA_R_32F");
    c = spmm_call();
    c.b_type = CUDA_R_16F; /* A and B differ */
    cr_expect(!tc_route_tc_ok(walk(&c, why, sizeof why), c.op));
    c = spmm_call();
    c.compute = CUDA_R_16F;
    cr_expect(!tc_route_tc_ok(walk(&c, why, sizeof why), c.op));
    /* BF16: SpMM's kernels take it, SDDMM's do not */
    c = sddmm_call();
    c.a_type = c.b_type = CUDA_R_16BF;
    cr_expect_eq(walk(&c, why, sizeof why), bit(TC_SEL_OP_SDDMM, TC_SEL_CAND_CUSPARSE));
    cr_expect_str_eq(why, "type combination CUDA_R_16BF/CUDA_R_16BF/CUDA_R_32F compute CUDA_R_32F");
    c.a_type = c.b_type = CUDA_R_16F;
    cr_expect_eq(walk(&c, why, sizeof why), all_rows(TC_SEL_OP_SDDMM));
}

Test(route_eligible, int32_limits)
{
    char why[160];
    tc_route_call c = spmm_call();
    c.sp_rows = (1ll << 31) - 17;
    cr_expect(tc_route_tc_ok(walk(&c, why, sizeof why), c.op));
    c.sp_rows = (1ll << 31) - 16;
    cr_expect(!tc_route_tc_ok(walk(&c, why, sizeof why), c.op));
    c = sddmm_call();
    c.sp_cols = 1ll << 31;
    cr_expect(!tc_route_tc_ok(walk(&c, why, sizeof why), c.op));
    cr_expect_str_eq(why, "matrix beyond the int32 tensor-core plan");
    /* the CUDA-core kernels' 32-bit counters stop 256 short of 2^31 (TC_CSR_MAX) */
    c = spmm_call();
    c.sp_nnz = (1ll << 31) - 257;
    cr_expect_eq(walk(&c, why, sizeof why) & bit(TC_SEL_OP_SPMM, TC_SEL_CAND_CSR), 0u);
    cr_expect(tc_route_tc_ok(walk(&c, why, sizeof why), c.op));
    c = sddmm_call();
    c.sp_nnz = (1ll << 31) - 258;
    cr_expect_eq(walk(&c, why, sizeof why), all_rows(TC_SEL_OP_SDDMM));
    c.sp_nnz = (1ll << 31) - 257;
    cr_expect_eq(walk(&c, why, sizeof why),
                 all_rows(TC_SEL_OP_SDDMM) & ~bit(TC_SEL_OP_SDDMM, TC_SEL_CAND_CSR));
    cr_expect_str_eq(why, "sizes or nonzeros beyond 2^31 - 256");
}

Test(route_eligible, spmm_transposed_a)
{
    char why[160];
    tc_route_call c = spmm_call();
    c.opA = TCSPARSE_OPERATION_TRANSPOSE;
    cr_expect_eq(walk(&c, why, sizeof why), bit(TC_SEL_OP_SPMM, TC_SEL_CAND_CUSPARSE));
    cr_expect_str_eq(why, "transposed A without its transposed view");
    c.a_view = 1; /* the transposed view's plan: the tensor cores, not CSR_ALG3 */
    cr_expect_eq(walk(&c, why, sizeof why), bit(TC_SEL_OP_SPMM, TC_SEL_CAND_BASE) |
                                                bit(TC_SEL_OP_SPMM, TC_SEL_CAND_BALANCED) |
                                                bit(TC_SEL_OP_SPMM, TC_SEL_CAND_CUSPARSE));
    /* the plan's rows are A's columns */
    c.sp_cols = (1ll << 31) - 16;
    cr_expect(!tc_route_tc_ok(walk(&c, why, sizeof why), c.op));
    cr_expect_str_eq(why, "matrix beyond the int32 tensor-core plan");
}

Test(route_eligible, sddmm_layouts)
{
    char why[160];
    tc_route_call c = sddmm_call();
    cr_expect_eq(walk(&c, why, sizeof why), all_rows(TC_SEL_OP_SDDMM));
    cr_expect_str_eq(why, UNTOUCHED);
    c.b_order = TCSPARSE_ORDER_ROW;
    cr_expect_eq(walk(&c, why, sizeof why), bit(TC_SEL_OP_SDDMM, TC_SEL_CAND_CUSPARSE));
    cr_expect_str_eq(why, "layout: the kernel takes op(A) row-major and op(B) column-major");
    c = sddmm_call();
    c.a_order = TCSPARSE_ORDER_COL;
    cr_expect_eq(walk(&c, why, sizeof why), bit(TC_SEL_OP_SDDMM, TC_SEL_CAND_CUSPARSE));
    /* a transposed operand in the other layout is the kernel's layout over the same array */
    c.opA = TCSPARSE_OPERATION_TRANSPOSE;
    cr_expect_eq(walk(&c, why, sizeof why), all_rows(TC_SEL_OP_SDDMM));
    c.b_order = TCSPARSE_ORDER_ROW;
    c.opB = TCSPARSE_OPERATION_TRANSPOSE;
    cr_expect_eq(walk(&c, why, sizeof why), all_rows(TC_SEL_OP_SDDMM));
    c.opB = TCSPARSE_OPERATION_CONJUGATE_TRANSPOSE;
    cr_expect_eq(walk(&c, why, sizeof why), bit(TC_SEL_OP_SDDMM, TC_SEL_CAND_CUSPARSE));
    cr_expect_str_eq(why, "conjugate-transposed operand");
    /* SpMM's layout does not apply: C's order is the sparse C's */
    c = sddmm_call();
    c.c_order = TCSPARSE_ORDER_COL;
    cr_expect_eq(walk(&c, why, sizeof why), all_rows(TC_SEL_OP_SDDMM));
    /* the CUDA-core kernel writes through C's CSR arrays: a COO C keeps the other rows */
    c = sddmm_call();
    c.sp_format = TCSPARSE_FORMAT_COO;
    cr_expect_eq(walk(&c, why, sizeof why),
                 all_rows(TC_SEL_OP_SDDMM) & ~bit(TC_SEL_OP_SDDMM, TC_SEL_CAND_CSR));
    cr_expect_str_eq(why, "the CUDA-core SDDMM takes a CSR C");
}

/* ---- calls built from descriptors ------------------------------------------------------------- */

static int32_t off[4] = {0, 2, 2, 4}, ind[4] = {0, 2, 1, 3};
static float vals[4] = {1.5f, -2.0f, 0.25f, 7.0f};
static float dense_a[64], dense_b[64], dense_c[64];

Test(route_call, spmm_from_descriptors)
{
    tcsparseHandle_t h;
    tcsparseSpMatDescr_t A;
    tcsparseDnMatDescr_t B, C, Bcol;
    cr_assert_eq(tcsparseCreate(&h), TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(tcsparseCreateCsr(&A, 3, 4, 4, off, ind, vals, TCSPARSE_INDEX_32I,
                                   TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
                 TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(tcsparseCreateDnMat(&B, 4, 8, 8, dense_b, CUDA_R_32F, TCSPARSE_ORDER_ROW),
                 TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(tcsparseCreateDnMat(&C, 3, 8, 8, dense_c, CUDA_R_32F, TCSPARSE_ORDER_ROW),
                 TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(tcsparseCreateDnMat(&Bcol, 4, 8, 4, dense_b, CUDA_R_32F, TCSPARSE_ORDER_COL),
                 TCSPARSE_STATUS_SUCCESS);
    h->cc_major = 9;
    tc_route_call c;
    char why[160];
    tc_route_call_spmm(&c, h, TCSPARSE_OPERATION_NON_TRANSPOSE, TCSPARSE_OPERATION_NON_TRANSPOSE,
                       A, B, C, CUDA_R_32F, TCSPARSE_SPMM_ALG_DEFAULT);
    cr_expect_eq(c.op, TC_SEL_OP_SPMM);
    cr_expect_eq(c.n, 8);
    cr_expect_eq(c.sp_rows, 3);
    cr_expect_eq(c.sp_cols, 4);
    cr_expect_eq(c.sp_nnz, 4);
    cr_expect_eq(c.sp_format, TCSPARSE_FORMAT_CSR);
    cr_expect_eq(c.cc_major, 9);
    cr_expect_eq(walk(&c, why, sizeof why), all_rows(TC_SEL_OP_SPMM));
    /* another algorithm asked: no CSR_ALG3 */
    tc_route_call_spmm(&c, h, TCSPARSE_OPERATION_NON_TRANSPOSE, TCSPARSE_OPERATION_NON_TRANSPOSE,
                       A, B, C, CUDA_R_32F, TCSPARSE_SPMM_CSR_ALG2);
    cr_expect_eq(walk(&c, why, sizeof why) & bit(TC_SEL_OP_SPMM, TC_SEL_CAND_ALG3), 0u);
    /* column-major B: cuSPARSE only */
    tc_route_call_spmm(&c, h, TCSPARSE_OPERATION_NON_TRANSPOSE, TCSPARSE_OPERATION_NON_TRANSPOSE,
                       A, Bcol, C, CUDA_R_32F, TCSPARSE_SPMM_ALG_DEFAULT);
    cr_expect_eq(walk(&c, why, sizeof why), bit(TC_SEL_OP_SPMM, TC_SEL_CAND_CUSPARSE));
    cr_expect_str_eq(why, "column-major B or C");
    /* a strided batch on C */
    cr_assert_eq(tcsparseDnMatSetStridedBatch(C, 2, 24), TCSPARSE_STATUS_SUCCESS);
    tc_route_call_spmm(&c, h, TCSPARSE_OPERATION_NON_TRANSPOSE, TCSPARSE_OPERATION_NON_TRANSPOSE,
                       A, B, C, CUDA_R_32F, TCSPARSE_SPMM_ALG_DEFAULT);
    cr_expect_eq(walk(&c, why, sizeof why), bit(TC_SEL_OP_SPMM, TC_SEL_CAND_CUSPARSE));
    cr_expect_str_eq(why, "strided batch");
    tcsparseDestroyDnMat(Bcol);
    tcsparseDestroyDnMat(C);
    tcsparseDestroyDnMat(B);
    tcsparseDestroySpMat(A);
    tcsparseDestroy(h);
}

Test(route_call, sddmm_from_descriptors)
{
    tcsparseHandle_t h;
    tcsparseDnMatDescr_t A, B;
    tcsparseSpMatDescr_t C;
    cr_assert_eq(tcsparseCreate(&h), TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(tcsparseCreateDnMat(&A, 3, 16, 16, dense_a, CUDA_R_16F, TCSPARSE_ORDER_ROW),
                 TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(tcsparseCreateDnMat(&B, 16, 4, 16, dense_b, CUDA_R_16F, TCSPARSE_ORDER_COL),
                 TCSPARSE_STATUS_SUCCESS);
    cr_assert_eq(tcsparseCreateCsr(&C, 3, 4, 4, off, ind, vals, TCSPARSE_INDEX_32I,
                                   TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
                 TCSPARSE_STATUS_SUCCESS);
    h->cc_major = 9;
    h->hook.mode = TC_HOOK_DEFER_CUSPARSE; /* the interposer's handle: the tensor-core rows still apply */
    tc_route_call c;
    char why[160];
    tc_route_call_sddmm(&c, h, TCSPARSE_OPERATION_NON_TRANSPOSE, TCSPARSE_OPERATION_NON_TRANSPOSE,
                        A, B, C, CUDA_R_32F);
    cr_expect_eq(c.op, TC_SEL_OP_SDDMM);
    cr_expect_eq(c.n, 16, "K");
    cr_expect_eq(c.sp_rows, 3);
    cr_expect_eq(c.sp_nnz, 4);
    cr_expect_eq(c.a_type, CUDA_R_16F);
    cr_expect_eq(c.c_type, CUDA_R_32F);
    cr_expect_eq(c.interposed, 1);
    cr_expect_eq(walk(&c, why, sizeof why), all_rows(TC_SEL_OP_SDDMM));
    /* transposed A, row-major: op(A) is column-major; K is op(A)'s columns */
    tc_route_call_sddmm(&c, h, TCSPARSE_OPERATION_TRANSPOSE, TCSPARSE_OPERATION_NON_TRANSPOSE,
                        A, B, C, CUDA_R_32F);
    cr_expect_eq(c.n, 3, "K of op(A)");
    cr_expect_eq(walk(&c, why, sizeof why), bit(TC_SEL_OP_SDDMM, TC_SEL_CAND_CUSPARSE));
    cr_expect_str_eq(why, "layout: the kernel takes op(A) row-major and op(B) column-major");
    tcsparseDestroySpMat(C);
    tcsparseDestroyDnMat(B);
    tcsparseDestroyDnMat(A);
    tcsparseDestroy(h);
}

/* Late ordering takes a call on the tensor cores, and one on the CUDA cores only where a
 * tensor-core path was measured within TC_LATE_CC_REACH of them on the same plan for that
 * kind of call; the ordered plan must then save the blocks by which that path lost. */
Test(route_late, cuda_core_calls_take_part_where_tensor_cores_came_close)
{
    static struct tc_plan p; /* zeroed: no measured decision */
    const tc_call_kind k = {.op = TC_SEL_OP_SPMM, .n = 128, .ab_type = TC_T_F32,
                            .c_type = TC_T_F32};
    tc_call_kind other = k;
    other.n = 64;
    tc_decision tc = {.path = TCSPARSE_PATH_TC_BALANCED}, cc = {.path = TCSPARSE_PATH_CUDA_CORE},
                cu = {.path = TCSPARSE_PATH_CUSPARSE};
    const double floor = 1.0 - TC_LATE_MIN_GAIN; /* TCSPARSE_X_REORDER_MIN_GAIN unset */
    double reach = -1.0;
    cr_assert(tc_late_path_in(&p, &k, &tc, &reach));
    cr_assert_float_eq(reach, floor, 1e-12);
    cr_assert(tc_late_path_in(NULL, &k, &tc, NULL), "a tensor-core call needs no measurement");
    cr_assert_not(tc_late_path_in(&p, &k, &cu, &reach));
    cr_assert_not(tc_late_path_in(&p, &k, &cc, &reach), "no measurement of the kind");
    cr_assert_float_eq(reach, floor, 1e-12);

    struct tc_measured m = {.kind = k, .path = TCSPARSE_PATH_CUDA_CORE, .calls = 13};
    for (int c = 0; c < TC_NCAND; c++)
        m.ms[c] = -1.0f;
    m.ms[TC_SEL_CAND_CSR] = 0.130f;
    m.ms[TC_SEL_CAND_BASE] = 0.250f;
    m.ms[TC_SEL_CAND_BALANCED] = 0.140f;
    p.measured[0] = m;
    p.nmeasured = 1;
    cr_assert(tc_late_path_in(&p, &k, &cc, &reach));
    cr_assert_float_eq(reach, 0.130 / 0.140, 1e-6, "the faster tensor-core path sets it");
    cr_assert(tc_late_path_in(&p, &k, &cc, NULL));
    cr_assert_not(tc_late_path_in(&p, &other, &cc, &reach), "another kind's measurement");
    cr_assert_not(tc_late_path_in(NULL, &k, &cc, &reach));

    /* beyond the reach; at its edge; a tensor-core path not measured */
    p.measured[0].ms[TC_SEL_CAND_BALANCED] = (float)(TC_LATE_CC_REACH * 0.130) * 1.01f;
    cr_assert_not(tc_late_path_in(&p, &k, &cc, &reach));
    p.measured[0].ms[TC_SEL_CAND_BALANCED] = -1.0f;
    p.measured[0].ms[TC_SEL_CAND_BASE] = (float)(TC_LATE_CC_REACH * 0.130) * 0.99f;
    cr_assert(tc_late_path_in(&p, &k, &cc, &reach));
    cr_assert_lt(reach, 0.82);
    /* tensor cores measured faster than the CUDA cores (the pick is then theirs, but a
     * decision that ran the CUDA cores anyway): the usual minimum gain */
    p.measured[0].ms[TC_SEL_CAND_BASE] = 0.100f;
    cr_assert(tc_late_path_in(&p, &k, &cc, &reach));
    cr_assert_float_eq(reach, floor, 1e-12);
    /* the kind's measured pick is not the CUDA cores, or they were not measured */
    p.measured[0].path = TCSPARSE_PATH_TC_BASE;
    cr_assert_not(tc_late_path_in(&p, &k, &cc, &reach));
    p.measured[0].path = TCSPARSE_PATH_CUDA_CORE;
    p.measured[0].ms[TC_SEL_CAND_CSR] = -1.0f;
    cr_assert_not(tc_late_path_in(&p, &k, &cc, &reach));
}
