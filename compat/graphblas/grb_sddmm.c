/* An SDDMM call's GraphBLAS side: T = (op(A) * op(B)) on M's pattern, with M's, A's and B's
 * arrays taken from GraphBLAS (zero-copy where they are held suitably).  Held by column,
 * M's arrays are the CSR of M', and T' = op(B)' * op(A)' is computed there.  T's values are
 * written into C's own values array when C already holds M's pattern, T is packed into C
 * when C may take it whole, and otherwise GraphBLAS applies T to C under the mask. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "grb_internal.h"

/* SDDMM straight into C.  With a structural mask and no accumulator, C<M,s> = T leaves in C
 * exactly T on M's pattern when C has no entry outside M's pattern: when C already holds
 * exactly M's pattern (a loop that recomputes C<M> = X*Y' every step), the values are
 * written into C's own values array and C keeps its pattern arrays ("in place"); when C has
 * no entries, or the replace flag clears the rest of C, T is packed into C ("pack"), without
 * GraphBLAS's masked apply (which costs more than everything else on large inputs). */
enum { TC_SDDMM_APPLY = 0, TC_SDDMM_PACK, TC_SDDMM_IN_PLACE };

typedef struct {
    int mode;
    int by_row;
    tc_grb_settings cs;
    GrB_Index *p, *i;
    void *x;
    GrB_Index p_size, i_size, x_size;
} tc_sddmm_c;

/* Arrays p, i, x packed into X as a sparse matrix held by row (CSR) or by column (CSC);
 * GrB_SUCCESS, or the failure with the arrays still the caller's. */
static GrB_Info tc_pack_sparse(GrB_Matrix X, int by_row, GrB_Index **p, GrB_Index **i, void **x,
                               GrB_Index p_size, GrB_Index i_size, GrB_Index x_size, bool iso)
{
    return by_row ? GxB_Matrix_pack_CSR(X, p, i, x, p_size, i_size, x_size, iso, false, NULL)
                  : GxB_Matrix_pack_CSC(X, p, i, x, p_size, i_size, x_size, iso, false, NULL);
}

static GrB_Info tc_sddmm_pack_c(GrB_Matrix C, tc_sddmm_c *sc, bool iso)
{
    GrB_Info gi = tc_pack_sparse(C, sc->by_row, &sc->p, &sc->i, &sc->x, sc->p_size, sc->i_size,
                                 sc->x_size, iso);
    if (gi == GrB_SUCCESS)
        gi = tc_grb_settings_set(C, &sc->cs);
    return gi;
}

static void tc_sddmm_plan_c(tc_grb_call *k, GrB_Matrix C, GrB_Matrix M, GrB_Matrix A, GrB_Matrix B,
                            GrB_BinaryOp accum, const tc_grb_operand *om, size_t es,
                            tc_sddmm_c *sc)
{
    memset(sc, 0, sizeof *sc);
    sc->mode = TC_SDDMM_APPLY;
    if (accum != NULL || k->ctype != k->ttype || !k->mask_struct || C == M || C == A ||
        C == B || tc_config_get()->grb.fresh_c)
        return;
    int32_t fmt = 0, status = 0;
    GrB_Index nvals = 0;
    bool iso = true;
    sc->by_row = om->form == TC_FORM_CSR;
    if (GxB_Matrix_Option_get_INT32(C, GxB_FORMAT, &fmt) != GrB_SUCCESS ||
        (fmt == GxB_BY_ROW) != (sc->by_row != 0) || GrB_Matrix_nvals(&nvals, C) != GrB_SUCCESS ||
        tc_grb_settings_get(C, &sc->cs) != GrB_SUCCESS ||
        (sc->cs.sparsity_control & GxB_SPARSE) == 0)
        return;
    if (nvals == 0 || k->replace) {
        sc->mode = TC_SDDMM_PACK;
        return;
    }
    if (nvals != om->nvals ||
        GxB_Matrix_Option_get_INT32(C, GxB_SPARSITY_STATUS, &status) != GrB_SUCCESS ||
        status != GxB_SPARSE || GxB_Matrix_iso(&iso, C) != GrB_SUCCESS || iso)
        return;
    GrB_Info gi = sc->by_row ? GxB_Matrix_unpack_CSR(C, &sc->p, &sc->i, &sc->x, &sc->p_size,
                                                     &sc->i_size, &sc->x_size, &iso, NULL, NULL)
                             : GxB_Matrix_unpack_CSC(C, &sc->p, &sc->i, &sc->x, &sc->p_size,
                                                     &sc->i_size, &sc->x_size, &iso, NULL, NULL);
    if (gi != GrB_SUCCESS)
        return;
    const GrB_Index vecs = sc->by_row ? om->nrows : om->ncols;
    const size_t psz = (size_t)(vecs + 1) * sizeof(GrB_Index);
    const size_t isz = (size_t)om->nvals * sizeof(GrB_Index);
    if (!iso && sc->p_size >= psz && sc->i_size >= isz && sc->x_size >= om->nvals * es &&
        tc_grb_same_bytes(sc->p, om->p, psz) && tc_grb_same_bytes(sc->i, om->i, isz)) {
        sc->mode = TC_SDDMM_IN_PLACE;
        return;
    }
    /* another pattern: C goes back as it was, and GraphBLAS applies the mask */
    sc->mode = TC_SDDMM_APPLY;
    gi = tc_sddmm_pack_c(C, sc, iso); /* iso arrays go back as iso */
    if (gi != GrB_SUCCESS) { /* C keeps no entries; the masked apply writes it all the same */
        free(sc->p);
        free(sc->i);
        free(sc->x);
        sc->p = sc->i = NULL;
        sc->x = NULL;
    }
}

static tc_grb_vtype tc_mask_vtype(GrB_Matrix M)
{
    GrB_Type t;
    if (GxB_Matrix_type(&t, M) != GrB_SUCCESS)
        return TC_GRB_OTHER;
    return t == GrB_FP32 ? TC_GRB_F32 : t == GrB_FP64 ? TC_GRB_F64 : TC_GRB_OTHER;
}

int tc_grb_run_sddmm(tc_grb_call *k, GrB_Matrix C, GrB_Matrix M, GrB_BinaryOp accum,
                     GrB_Matrix A, GrB_Matrix B, GrB_Info *info)
{
    tc_grb_operand om, oa, ob;
    memset(&om, 0, sizeof om);
    memset(&oa, 0, sizeof oa);
    memset(&ob, 0, sizeof ob);
    tc_grb_operand *obp = B == A ? &oa : &ob; /* C<M> = A*A' reads A once */
    const size_t es = tc_grb_esize(k->vt);
    void *out = NULL;
    GrB_Index *tp = NULL, *ti = NULL;
    GrB_Matrix T = NULL;
    int pass = 1, synced = 0;
    GrB_Info gi;
    tc_grb_pin *pm = NULL, *pa = NULL, *pb = NULL;
    tc_grb_pin_state stm = TC_PIN_NONE, sta = TC_PIN_NONE, stb = TC_PIN_NONE;
    tc_sddmm_c sc;
    memset(&sc, 0, sizeof sc);
    double t0 = tc_lanes_now_ms();

    const tc_grb_vtype mvt = tc_mask_vtype(M);
    if ((gi = tc_grb_operand_acquire(&om, M, mvt, TC_ROLE_PATTERN, 0, k->nounpack)) ||
        (gi = tc_grb_operand_acquire(&oa, A, k->vt, TC_ROLE_FULL, k->tran_a, k->nounpack)) ||
        (B != A &&
         (gi = tc_grb_operand_acquire(&ob, B, k->vt, TC_ROLE_FULL, k->tran_b, k->nounpack)))) {
        snprintf(k->why, sizeof k->why, "reading the operands failed (%d)", (int)gi);
        goto done;
    }
    /* Held by column, M's arrays are the CSR of M': compute T' = op(B)' * op(A)' there. */
    const int swap = om.form == TC_FORM_CSC;
    tc_grb_csr P = tc_grb_operand_csr(&om);
    tc_grb_dense L = tc_grb_operand_dense(&oa, k->tran_a);
    tc_grb_dense R = tc_grb_operand_dense(obp, k->tran_b);
    pm = mvt == k->vt ? tc_grb_pin_find(M, om.form) : NULL;
    pa = tc_grb_pin_find(A, oa.form);
    pb = B == A ? pa : tc_grb_pin_find(B, ob.form);
    stm = tc_grb_pin_check(pm, &om);
    sta = tc_grb_pin_check(pa, &oa);
    stb = B == A ? sta : tc_grb_pin_check(pb, &ob);
    if (stm != TC_PIN_NONE)
        P.x = tc_grb_operand_values(&om); /* a pinned mask's copy holds its values too */
    if (swap) {
        tc_grb_dense l2 = tc_grb_dense_t(R), r2 = tc_grb_dense_t(L);
        L = l2;
        R = r2;
        tc_grb_pin *pt = pa;
        pa = pb;
        pb = pt;
        tc_grb_pin_state st = sta;
        sta = stb;
        stb = st;
    }
    tc_sddmm_plan_c(k, C, M, A, B, accum, &om, es, &sc);
    out = sc.mode == TC_SDDMM_IN_PLACE ? sc.x : tc_grb_alloc_out((size_t)P.nnz * es);
    if (L.x == NULL || R.x == NULL || out == NULL || (stm != TC_PIN_NONE && P.x == NULL)) {
        snprintf(k->why, sizeof k->why, "out of host memory");
        goto done;
    }
    k->ms_acquire = tc_lanes_now_ms() - t0;
    if (k->fail) {
        snprintf(k->why, sizeof k->why, "TCSPARSE_X_GRB_BACKEND=fail");
        goto done;
    } else if (k->host) { /* the GPU's stand-in in tests: its pins count as refreshed */
        double h0 = tc_lanes_now_ms();
        tc_grb_host_sddmm(k->vt, &P, &L, &R, out);
        k->times.compute = tc_lanes_now_ms() - h0;
        snprintf(k->times.kernel, sizeof k->times.kernel, "host reference");
    } else if (tc_grb_gpu_sddmm(k->vt, &P, stm ? pm : NULL, stm, &L, sta ? pa : NULL, sta, &R,
                                stb ? pb : NULL, stb, out, &k->times, k->why,
                                sizeof k->why) != 0) {
        goto done;
    }
    synced = 1;
    double f0 = tc_lanes_now_ms();
    if (sc.mode == TC_SDDMM_IN_PLACE) {
        out = NULL; /* it is C's values array */
        const GrB_Info restored = tc_grb_restore(k, &om, &oa, &ob);
        gi = tc_sddmm_pack_c(C, &sc, false);
        sc.mode = TC_SDDMM_APPLY; /* C holds its arrays again (or, failed, they are freed) */
        k->finish_how = "written into C's arrays";
        *info = restored != GrB_SUCCESS ? restored : gi;
        if (*info != GrB_SUCCESS)
            snprintf(k->why, sizeof k->why, "restoring the matrices failed (%d)", (int)*info);
        pass = 0;
        k->ms_finish = tc_lanes_now_ms() - f0;
        goto done;
    }
    /* T takes M's pattern: M's own arrays when they are a private copy, else a copy */
    const size_t psz = (size_t)(P.rows + 1) * sizeof(GrB_Index);
    const size_t isz = (size_t)P.nnz * sizeof(GrB_Index);
    if (om.in_place) {
        tp = malloc(psz);
        ti = malloc(isz);
        if (tp == NULL || ti == NULL) {
            snprintf(k->why, sizeof k->why, "out of host memory");
            goto done;
        }
        memcpy(tp, om.p, psz);
        memcpy(ti, om.i, isz);
    } else {
        tp = om.p;
        ti = om.i;
        om.p = om.i = NULL;
    }
    const GrB_Info restored = tc_grb_restore(k, &om, &oa, &ob);
    if (restored != GrB_SUCCESS) {
        *info = restored;
        snprintf(k->why, sizeof k->why, "restoring an input failed (%d)", (int)*info);
        pass = 0;
        goto done;
    }
    if (sc.mode == TC_SDDMM_PACK) { /* T's arrays become C's */
        sc.p = tp;
        sc.i = ti;
        sc.x = out;
        sc.p_size = psz;
        sc.i_size = isz;
        sc.x_size = (GrB_Index)P.nnz * es;
        tp = ti = NULL;
        out = NULL;
        gi = tc_sddmm_pack_c(C, &sc, false);
        sc.mode = TC_SDDMM_APPLY;
        if (gi != GrB_SUCCESS) { /* still ours: freed below; C has lost nothing it needs */
            tp = sc.p;
            ti = sc.i;
            out = sc.x;
            snprintf(k->why, sizeof k->why, "packing the result failed (%d)", (int)gi);
            goto done;
        }
        *info = GrB_SUCCESS;
        pass = 0;
        k->finish_how = "packed into C";
        k->ms_finish = tc_lanes_now_ms() - f0;
        goto done;
    }
    k->finish_how = "applied by GraphBLAS";
    if ((gi = GrB_Matrix_new(&T, k->ttype, k->m, k->n)) != GrB_SUCCESS) {
        *info = gi;
        pass = 0;
        goto done;
    }
    gi = tc_pack_sparse(T, !swap, &tp, &ti, &out, psz, isz, (GrB_Index)P.nnz * es, false);
    if (gi != GrB_SUCCESS) {
        snprintf(k->why, sizeof k->why, "packing the result failed (%d)", (int)gi);
        goto done;
    }
    pass = tc_grb_finish(k, C, M, accum, T, info);
    k->ms_finish = tc_lanes_now_ms() - f0;
done:
    if (!synced) {
        tc_grb_pin_unsync(pm, stm);
        tc_grb_pin_unsync(pa, sta);
        tc_grb_pin_unsync(pb, stb);
    }
    tc_grb_release_all(k, &pass, info, &om, &oa, &ob);
    if (sc.mode == TC_SDDMM_IN_PLACE) { /* failed before the result reached C: arrays back */
        out = NULL;
        if (tc_sddmm_pack_c(C, &sc, false) != GrB_SUCCESS) {
            free(sc.p);
            free(sc.i);
            free(sc.x);
        }
    }
    free(out);
    free(tp);
    free(ti);
    GrB_Matrix_free(&T);
    return pass;
}
