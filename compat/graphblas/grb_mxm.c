/* tcsparse_GrB_mxm: which GrB_mxm calls run on the GPU, and how their results re-enter
 * GraphBLAS with GraphBLAS's own semantics.
 *
 * Accelerated (PLUS_TIMES over FP32 or FP64, built in or built from GrB_PLUS_FP32 /
 * GrB_TIMES_FP32 with identity 0 and no terminal; A and B of exactly the semiring's type):
 *   SpMM   no mask, op(A) not full, op(B) full:       T = op(A)*op(B) on the GPU.
 *          Row i of T exists, complete, where row i of op(A) has an entry (an explicit
 *          zero counts); elsewhere it has no entry.  That is GraphBLAS's pattern.
 *   SDDMM  mask not complemented, op(A) and op(B) full: T = (op(A)*op(B)) on M's pattern.
 *          With full inputs and k >= 1 the product is full; the mask step only reads T
 *          inside M's pattern, so T there gives the same C (structural or valued mask).
 * Then C<M> = accum(C, T) is done by GrB_Matrix_apply with the identity operator and the
 * caller's mask, accumulator, replace and mask-structure settings: the step that ends
 * GrB_mxm, done by GraphBLAS itself (casts to C's type included).  When there is no mask
 * or accumulator and C has T's type, T's arrays are packed straight into C instead.
 *
 * Everything else goes to the real GrB_mxm with the caller's arguments, as does a call the
 * GPU could not finish (out of device memory, ...), and one whose final step GraphBLAS
 * rejects before changing C (so the caller gets GrB_mxm's own error).
 *
 * This file classifies the call, holds what both paths share and logs the outcome; the
 * paths themselves are in grb_spmm.c and grb_sddmm.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "grb_internal.h"

/* > 0 while this thread is inside the adapter: a GrB_mxm reached from in here (it should
 * not happen: GraphBLAS calls its internals directly) goes straight to the real one. */
static __thread int tc_grb_depth;


static int tc_builtin_type(GrB_Type t)
{
    return t == GrB_BOOL || t == GrB_INT8 || t == GrB_UINT8 || t == GrB_INT16 ||
           t == GrB_UINT16 || t == GrB_INT32 || t == GrB_UINT32 || t == GrB_INT64 ||
           t == GrB_UINT64 || t == GrB_FP32 || t == GrB_FP64 || t == GxB_FC32 || t == GxB_FC64;
}

/* PLUS_TIMES over FP32 or FP64, whichever way the semiring was made. */
static int tc_semiring_kind(GrB_Semiring sr, tc_grb_vtype *vt)
{
    GrB_Monoid mon;
    GrB_BinaryOp add, mul;
    bool term = false;
    if (GxB_Semiring_add(&mon, sr) != GrB_SUCCESS ||
        GxB_Semiring_multiply(&mul, sr) != GrB_SUCCESS ||
        GxB_Monoid_operator(&add, mon) != GrB_SUCCESS)
        return 0;
    if (add == GrB_PLUS_FP32 && mul == GrB_TIMES_FP32) {
        float id = 1.0f, t;
        if (GxB_Monoid_identity(&id, mon) != GrB_SUCCESS || id != 0.0f ||
            GxB_Monoid_terminal(&term, &t, mon) != GrB_SUCCESS || term)
            return 0;
        *vt = TC_GRB_F32;
        return 1;
    }
    if (add == GrB_PLUS_FP64 && mul == GrB_TIMES_FP64) {
        double id = 1.0, t;
        if (GxB_Monoid_identity(&id, mon) != GrB_SUCCESS || id != 0.0 ||
            GxB_Monoid_terminal(&term, &t, mon) != GrB_SUCCESS || term)
            return 0;
        *vt = TC_GRB_F64;
        return 1;
    }
    return 0;
}

static int tc_desc(GrB_Descriptor d, GrB_Desc_Field f, int *v)
{
    GrB_Desc_Value x = GxB_DEFAULT;
    if (GxB_Desc_get(d, f, &x) != GrB_SUCCESS)
        return -1;
    *v = (int)x;
    return 0;
}

#define TC_NO(...)                                                                            \
    do {                                                                                      \
        snprintf(k->why, sizeof k->why, __VA_ARGS__);                                         \
        k->path = TCSPARSE_GRB_PATH_GRAPHBLAS;                                                \
        return;                                                                               \
    } while (0)

static void tc_classify(tc_grb_call *k, GrB_Matrix C, GrB_Matrix M, GrB_Semiring sr, GrB_Matrix A,
                        GrB_Matrix B, GrB_Descriptor desc)
{
    k->path = TCSPARSE_GRB_PATH_GRAPHBLAS;
    const tc_config *cfg = tc_config_get();
    if (!cfg->grb.on)
        TC_NO("TCSPARSE_GRB=off");
    if (C == NULL || A == NULL || B == NULL || sr == NULL)
        TC_NO("a NULL argument");
    if (!tc_semiring_kind(sr, &k->vt))
        TC_NO("semiring is not PLUS_TIMES over FP32 or FP64");
    int outp, mask, in0, in1;
    if (tc_desc(desc, GrB_OUTP, &outp) || tc_desc(desc, GrB_MASK, &mask) ||
        tc_desc(desc, GrB_INP0, &in0) || tc_desc(desc, GrB_INP1, &in1))
        TC_NO("descriptor not readable");
    k->replace = outp == GrB_REPLACE;
    k->mask_struct = (mask & GrB_STRUCTURE) != 0;
    k->tran_a = in0 == GrB_TRAN;
    k->tran_b = in1 == GrB_TRAN;
    k->ttype = k->vt == TC_GRB_F64 ? GrB_FP64 : GrB_FP32;
    GrB_Type ta, tb;
    if (GxB_Matrix_type(&ta, A) != GrB_SUCCESS || GxB_Matrix_type(&tb, B) != GrB_SUCCESS ||
        GxB_Matrix_type(&k->ctype, C) != GrB_SUCCESS)
        TC_NO("a matrix is not valid");
    if (ta != k->ttype || tb != k->ttype)
        TC_NO("A or B is not of the semiring's type (GraphBLAS would typecast)");
    if (!tc_builtin_type(k->ctype))
        TC_NO("C has a user-defined type");
    GrB_Index ar, ac, br, bc, cr, cc, an, bn;
    int32_t sa;
    if (GrB_Matrix_nrows(&ar, A) || GrB_Matrix_ncols(&ac, A) || GrB_Matrix_nrows(&br, B) ||
        GrB_Matrix_ncols(&bc, B) || GrB_Matrix_nrows(&cr, C) || GrB_Matrix_ncols(&cc, C) ||
        GrB_Matrix_nvals(&an, A) || GrB_Matrix_nvals(&bn, B) ||
        GxB_Matrix_Option_get_INT32(A, GxB_SPARSITY_STATUS, &sa))
        TC_NO("a matrix is not valid");
    k->m = k->tran_a ? ac : ar;
    k->k = k->tran_a ? ar : ac;
    k->n = k->tran_b ? br : bc;
    if ((k->tran_b ? bc : br) != k->k || cr != k->m || cc != k->n)
        TC_NO("dimensions do not match");
    if (k->m == 0 || k->n == 0 || k->k == 0)
        TC_NO("an empty dimension");
    /* every count the accelerated paths form must fit: the result's m*n cells of up to 8
     * bytes, and the cells of each dense operand (checked below) */
    GrB_Index cells, bcells, acells;
    if (__builtin_mul_overflow(k->m, k->n, &cells) || cells > (GrB_Index)(SIZE_MAX / 16))
        TC_NO("the result's size overflows 64-bit counts");
    const int b_cells_ok = !__builtin_mul_overflow(br, bc, &bcells);
    const int a_cells_ok = !__builtin_mul_overflow(ar, ac, &acells);
    double flops;
    if (M == NULL) {
        if (!b_cells_ok || bn != bcells)
            TC_NO("B is not full");
        if (sa == GxB_FULL)
            TC_NO("A is full (a dense product)");
        if (an == 0)
            TC_NO("A has no entries");
        k->path = TCSPARSE_GRB_PATH_SPMM;
        flops = 2.0 * (double)an * (double)k->n;
    } else {
        if (mask & GrB_COMP)
            TC_NO("complemented mask");
        if (M == A || M == B)
            TC_NO("the mask is also an input");
        GrB_Index mr, mc, mn;
        GrB_Type tm;
        if (GrB_Matrix_nrows(&mr, M) || GrB_Matrix_ncols(&mc, M) || GrB_Matrix_nvals(&mn, M) ||
            GxB_Matrix_type(&tm, M))
            TC_NO("the mask is not valid");
        if (mr != k->m || mc != k->n)
            TC_NO("mask dimensions do not match");
        if (!k->mask_struct && !tc_builtin_type(tm))
            TC_NO("valued mask of a user-defined type");
        if (!a_cells_ok || !b_cells_ok || an != acells || bn != bcells)
            TC_NO("masked product with a sparse A or B");
        if (mn == 0)
            TC_NO("the mask has no entries");
        k->path = TCSPARSE_GRB_PATH_SDDMM;
        flops = 2.0 * (double)mn * (double)k->k;
    }
    const double min_flops = cfg->grb.min_flops;
    if (flops < min_flops)
        TC_NO("%.3g flops < TCSPARSE_X_GRB_MIN_FLOPS (%.3g)", flops, min_flops);
    k->host = cfg->grb.backend == TC_CFG_GRB_HOST;
    k->fail = cfg->grb.backend == TC_CFG_GRB_FAIL;
    char why[128];
    if (!k->host && !k->fail && !tc_grb_gpu_available(why, sizeof why))
        TC_NO("%s", why);
    k->nounpack = cfg->grb.nounpack;
}

/* The GraphBLAS descriptor for the final C<M> = accum(C, T): the caller's output and mask
 * settings, no transposition (complemented masks never get here). */
static GrB_Descriptor tc_apply_desc(const tc_grb_call *k)
{
    if (k->replace)
        return k->mask_struct ? GrB_DESC_RS : GrB_DESC_R;
    return k->mask_struct ? GrB_DESC_S : NULL;
}

/* GrB_Matrix_apply checks its arguments before it touches C: an API error (bad domain,
 * ...) leaves C as it was, and the call is handed to the real GrB_mxm for its own error. */
static int tc_api_error(GrB_Info info)
{
    return info < GrB_SUCCESS && info >= GrB_OUTPUT_NOT_EMPTY;
}

int tc_grb_finish(tc_grb_call *k, GrB_Matrix C, GrB_Matrix M, GrB_BinaryOp accum, GrB_Matrix T,
                  GrB_Info *info)
{
    GrB_UnaryOp id = k->vt == TC_GRB_F64 ? GrB_IDENTITY_FP64 : GrB_IDENTITY_FP32;
    GrB_Info gi = GrB_Matrix_apply(C, M, accum, id, T, tc_apply_desc(k));
    if (tc_api_error(gi)) {
        snprintf(k->why, sizeof k->why, "GrB_Matrix_apply refused the result (%d)", (int)gi);
        return 1;
    }
    *info = gi;
    return 0;
}

void tc_grb_release_all(tc_grb_call *k, int *pass, GrB_Info *info, tc_grb_operand *o1,
                        tc_grb_operand *o2, tc_grb_operand *o3)
{
    tc_grb_operand *ops[3] = {o1, o2, o3};
    for (int i = 0; i < 3; i++) {
        if (ops[i] == NULL)
            continue;
        GrB_Info r = tc_grb_operand_release(ops[i]);
        if (r != GrB_SUCCESS && *pass) {
            *info = r;
            *pass = 0;
            snprintf(k->why, sizeof k->why, "restoring an input failed (%d)", (int)r);
        }
    }
}

GrB_Info tc_grb_restore(tc_grb_call *k, tc_grb_operand *o1, tc_grb_operand *o2,
                        tc_grb_operand *o3)
{
    tc_grb_operand *ops[3] = {o1, o2, o3};
    GrB_Info first = GrB_SUCCESS;
    const double r0 = tc_lanes_now_ms();
    for (int i = 0; i < 3; i++) {
        if (ops[i] == NULL)
            continue;
        const GrB_Info r = tc_grb_operand_release(ops[i]);
        if (first == GrB_SUCCESS)
            first = r;
    }
    k->ms_restore = tc_lanes_now_ms() - r0;
    return first;
}

static const char *tc_path_name(const tc_grb_call *k)
{
    switch (k->path) {
    case TCSPARSE_GRB_PATH_SPMM: return k->host ? "SpMM on the host (test backend)" : "SpMM on the GPU";
    case TCSPARSE_GRB_PATH_SDDMM: return k->host ? "SDDMM on the host (test backend)" : "SDDMM on the GPU";
    default: return "GraphBLAS";
    }
}

GrB_Info tc_grb_mxm(tc_grb_mxm_fn real_mxm, const char *who, GrB_Matrix C, const GrB_Matrix M,
                    const GrB_BinaryOp accum, const GrB_Semiring semiring, const GrB_Matrix A,
                    const GrB_Matrix B, const GrB_Descriptor desc)
{
    if (tc_grb_depth > 0)
        return real_mxm(C, M, accum, semiring, A, B, desc);
    tc_grb_depth++;
    tc_grb_lock();
    tc_grb_call k;
    memset(&k, 0, sizeof k);
    tc_classify(&k, C, M, semiring, A, B, desc);
    GrB_Info info = GrB_SUCCESS;
    int pass = 1;
    if (k.path == TCSPARSE_GRB_PATH_SPMM)
        pass = tc_grb_run_spmm(&k, C, accum, A, B, &info);
    else if (k.path == TCSPARSE_GRB_PATH_SDDMM)
        pass = tc_grb_run_sddmm(&k, C, M, accum, A, B, &info);
    if (pass)
        k.path = TCSPARSE_GRB_PATH_GRAPHBLAS;
    else if (info == GrB_SUCCESS)
        snprintf(k.why, sizeof k.why, "%s; result %s", k.times.kernel,
                 k.finish_how != NULL ? k.finish_how : "?");

    tcsparse_GrB_stats_t *s = &tc_grb_stats;
    s->calls++;
    s->passthrough += k.path == TCSPARSE_GRB_PATH_GRAPHBLAS;
    s->spmm += k.path == TCSPARSE_GRB_PATH_SPMM;
    s->sddmm += k.path == TCSPARSE_GRB_PATH_SDDMM;
    s->last_path = k.path;
    snprintf(s->last_reason, sizeof s->last_reason, "%s", k.why);
    snprintf(s->last_kernel, sizeof s->last_kernel, "%s", pass ? "" : k.times.kernel);
    if (!pass) {
        s->ms_acquire = k.ms_acquire;
        s->ms_upload = k.times.upload;
        s->ms_compute = k.times.compute;
        s->ms_download = k.times.download;
        s->ms_finish = k.ms_finish;
    }
    if (tc_grb_log_on()) {
        if (pass)
            fprintf(stderr, "tcsparse-grb: %s -> GraphBLAS (%s)\n", who, k.why);
        else
            fprintf(stderr, "tcsparse-grb: %s -> %s (%s; %.3f ms read, %.3f up, %.3f compute, "
                    "%.3f down, %.3f finish of which %.3f restoring the inputs)\n", who,
                    tc_path_name(&k), k.why, k.ms_acquire, k.times.upload, k.times.compute,
                    k.times.download, k.ms_finish, k.ms_restore);
    }
    tc_grb_unlock();
    if (pass)
        info = real_mxm(C, M, accum, semiring, A, B, desc);
    tc_grb_depth--;
    return info;
}

void tcsparse_GrB_reload_config(void)
{
    tc_config_reload();
}
