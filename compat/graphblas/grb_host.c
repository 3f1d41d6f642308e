/* The host backend (TCSPARSE_X_GRB_BACKEND=host): T computed on the CPU, in double, with the
 * same inputs and outputs as the GPU backend.  It exists so that everything the adapter
 * does around the multiplication (classification, zero-copy access and restoration, the
 * result's pattern, mask / accum / replace through GraphBLAS, pins) is tested on machines
 * without a GPU. */
#include "grb_internal.h"

static double tc_get(tc_grb_vtype vt, const void *x, size_t i)
{
    return vt == TC_GRB_F64 ? ((const double *)x)[i] : (double)((const float *)x)[i];
}

static void tc_put(tc_grb_vtype vt, void *x, size_t i, double v)
{
    if (vt == TC_GRB_F64)
        ((double *)x)[i] = v;
    else
        ((float *)x)[i] = (float)v;
}

static size_t tc_at(const tc_grb_dense *d, int64_t r, int64_t c)
{
    return d->row_major ? (size_t)(r * d->ld + c) : (size_t)(r + c * d->ld);
}

void tc_grb_host_spmm(tc_grb_vtype vt, const tc_grb_csr *A, const tc_grb_dense *B, void *out)
{
    for (int64_t r = 0; r < A->rows; r++)
        for (int64_t c = 0; c < B->cols; c++) {
            double s = 0.0;
            for (GrB_Index e = A->p[r]; e < A->p[r + 1]; e++)
                s += tc_get(vt, A->x, e) * tc_get(vt, B->x, tc_at(B, (int64_t)A->j[e], c));
            tc_put(vt, out, B->row_major ? (size_t)(r * B->cols + c) : (size_t)(r + c * A->rows),
                   s);
        }
}

void tc_grb_host_sddmm(tc_grb_vtype vt, const tc_grb_csr *P, const tc_grb_dense *L,
                       const tc_grb_dense *R, void *out)
{
    for (int64_t r = 0; r < P->rows; r++)
        for (GrB_Index e = P->p[r]; e < P->p[r + 1]; e++) {
            double s = 0.0;
            for (int64_t k = 0; k < L->cols; k++)
                s += tc_get(vt, L->x, tc_at(L, r, k)) * tc_get(vt, R->x, tc_at(R, k, (int64_t)P->j[e]));
            tc_put(vt, out, e, s);
        }
}
