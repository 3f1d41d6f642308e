/* Taking a GraphBLAS matrix's arrays for the GPU, and giving them back.
 *
 * Zero-copy: when the matrix is already held in the form needed (sparse by row for the
 * CSR of A, by column for the CSR of A', full for a dense operand), GxB_Matrix_unpack_*
 * moves its arrays out in O(1) and GxB_Matrix_pack_* moves the same arrays back in O(1);
 * the matrix is then what it was (GraphBLAS may have finished pending work and sorted
 * jumbled rows on the way out, which changes nothing it can observe).  Otherwise a private
 * GrB_Matrix_dup is unpacked in the form needed (GraphBLAS converts it) and freed after. */
#include <stdlib.h>
#include <string.h>
#include "grb_internal.h"

static GrB_Info tc_unpack(GrB_Matrix X, tc_grb_operand *op)
{
    switch (op->form) {
    case TC_FORM_CSR:
        return GxB_Matrix_unpack_CSR(X, &op->p, &op->i, &op->x, &op->p_size, &op->i_size,
                                     &op->x_size, &op->iso, NULL, NULL);
    case TC_FORM_CSC:
        return GxB_Matrix_unpack_CSC(X, &op->p, &op->i, &op->x, &op->p_size, &op->i_size,
                                     &op->x_size, &op->iso, NULL, NULL);
    case TC_FORM_FULLR:
        return GxB_Matrix_unpack_FullR(X, &op->x, &op->x_size, &op->iso, NULL);
    case TC_FORM_FULLC:
        return GxB_Matrix_unpack_FullC(X, &op->x, &op->x_size, &op->iso, NULL);
    }
    return GrB_INVALID_VALUE;
}

/* Unpacking with jumbled = NULL returned sorted rows: they go back as not jumbled. */
static GrB_Info tc_pack(GrB_Matrix X, tc_grb_operand *op)
{
    switch (op->form) {
    case TC_FORM_CSR:
        return GxB_Matrix_pack_CSR(X, &op->p, &op->i, &op->x, op->p_size, op->i_size,
                                   op->x_size, op->iso, false, NULL);
    case TC_FORM_CSC:
        return GxB_Matrix_pack_CSC(X, &op->p, &op->i, &op->x, op->p_size, op->i_size,
                                   op->x_size, op->iso, false, NULL);
    case TC_FORM_FULLR:
        return GxB_Matrix_pack_FullR(X, &op->x, op->x_size, op->iso, NULL);
    case TC_FORM_FULLC:
        return GxB_Matrix_pack_FullC(X, &op->x, op->x_size, op->iso, NULL);
    }
    return GrB_INVALID_VALUE;
}

GrB_Info tc_grb_operand_acquire(tc_grb_operand *op, GrB_Matrix X, tc_grb_vtype vt,
                                tc_grb_role role, int transposed, int nounpack)
{
    memset(op, 0, sizeof *op);
    op->mat = X;
    op->vtype = vt;
    int32_t fmt = GxB_BY_ROW, status = 0;
    GrB_Info info = GrB_Matrix_nrows(&op->nrows, X);
    if (info == GrB_SUCCESS)
        info = GrB_Matrix_ncols(&op->ncols, X);
    if (info == GrB_SUCCESS)
        info = GrB_Matrix_nvals(&op->nvals, X); /* finishes pending work */
    if (info == GrB_SUCCESS)
        info = GxB_Matrix_Option_get_INT32(X, GxB_FORMAT, &fmt);
    if (info == GrB_SUCCESS)
        info = GxB_Matrix_Option_get_INT32(X, GxB_SPARSITY_STATUS, &status);
    if (info != GrB_SUCCESS)
        return info;
    const int by_row = fmt == GxB_BY_ROW;
    int native;
    switch (role) {
    case TC_ROLE_SPARSE:
        op->form = transposed ? TC_FORM_CSC : TC_FORM_CSR;
        native = status == GxB_SPARSE && (op->form == TC_FORM_CSR) == (by_row != 0);
        break;
    case TC_ROLE_PATTERN:
        op->form = by_row ? TC_FORM_CSR : TC_FORM_CSC;
        native = status == GxB_SPARSE;
        break;
    default:
        op->form = by_row ? TC_FORM_FULLR : TC_FORM_FULLC;
        native = status == GxB_FULL;
        if (op->nvals != op->nrows * op->ncols)
            return GrB_INVALID_VALUE;
        break;
    }
    if (native && !nounpack) {
        /* packing builds a new header with default settings: these go back afterwards */
        info = tc_grb_settings_get(X, &op->settings);
        if (info != GrB_SUCCESS)
            return info;
        info = tc_unpack(X, op);
        if (info == GrB_SUCCESS) {
            op->in_place = 1;
            op->held = 1;
            return GrB_SUCCESS;
        }
        /* a failed unpack leaves X as it was: take a copy instead */
        op->p = op->i = NULL;
        op->x = NULL;
        op->iso = false;
    }
    GrB_Matrix D = NULL;
    info = GrB_Matrix_dup(&D, X);
    if (info == GrB_SUCCESS)
        info = tc_unpack(D, op);
    GrB_Matrix_free(&D);
    if (info != GrB_SUCCESS) {
        free(op->p);
        free(op->i);
        free(op->x);
        op->p = op->i = NULL;
        op->x = NULL;
        return info;
    }
    op->in_place = 0;
    op->held = 1;
    return GrB_SUCCESS;
}

GrB_Info tc_grb_operand_release(tc_grb_operand *op)
{
    GrB_Info info = GrB_SUCCESS;
    if (op->held) {
        if (op->in_place) {
            info = tc_pack(op->mat, op);
            if (info != GrB_SUCCESS) {
                /* the arrays stay held (a later release tries again); the caller fails the
                 * call rather than hand GraphBLAS a matrix without them */
                free(op->x_full);
                op->x_full = NULL;
                return info;
            }
            info = tc_grb_settings_set(op->mat, &op->settings);
        } else {
            free(op->p);
            free(op->i);
            free(op->x);
        }
        op->p = op->i = NULL;
        op->x = NULL;
        op->held = 0;
    }
    free(op->x_full);
    op->x_full = NULL;
    return info;
}

const void *tc_grb_operand_values(tc_grb_operand *op)
{
    if (!op->iso)
        return op->x;
    if (op->x_full != NULL)
        return op->x_full;
    const size_t es = tc_grb_esize(op->vtype);
    const GrB_Index count = op->form == TC_FORM_CSR || op->form == TC_FORM_CSC
                                ? op->nvals : op->nrows * op->ncols;
    op->x_full = malloc(es * (size_t)(count > 0 ? count : 1));
    if (op->x_full == NULL)
        return NULL;
    char *dst = op->x_full;
    for (GrB_Index e = 0; e < count; e++)
        memcpy(dst + e * es, op->x, es);
    return op->x_full;
}

tc_grb_dense tc_grb_operand_dense(tc_grb_operand *op, int transposed)
{
    tc_grb_dense d;
    d.rows = (int64_t)op->nrows;
    d.cols = (int64_t)op->ncols;
    d.row_major = op->form == TC_FORM_FULLR;
    d.ld = d.row_major ? d.cols : d.rows;
    d.x = tc_grb_operand_values(op);
    return transposed ? tc_grb_dense_t(d) : d;
}

tc_grb_csr tc_grb_operand_csr(tc_grb_operand *op)
{
    tc_grb_csr c;
    const int csr = op->form == TC_FORM_CSR;
    c.rows = (int64_t)(csr ? op->nrows : op->ncols);
    c.cols = (int64_t)(csr ? op->ncols : op->nrows);
    c.nnz = (int64_t)op->nvals;
    c.p = op->p;
    c.j = op->i;
    c.x = op->x; /* tc_grb_operand_values when the values are needed */
    return c;
}
