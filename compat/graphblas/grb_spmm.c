/* An SpMM call's GraphBLAS side: T = op(A) * op(B) with A's and B's arrays taken from
 * GraphBLAS (zero-copy where they are held suitably), T written into C's own arrays when C
 * is about to be overwritten whole, and T's arrays handed back to GraphBLAS as C, or as a
 * matrix that GraphBLAS applies to C.  T is full, or a bitmap with the rows of op(A) that
 * have no entry absent (GraphBLAS's pattern for the product). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "grb_internal.h"

/* The bitmap of T: row r present where op(A)'s row r has an entry. */
typedef struct {
    const GrB_Index *p;
    int8_t *ab;
    const int8_t *rowflag; /* column-major: the pattern of one column */
    GrB_Index m, n;
} tc_bitmap_job;

static void tc_bitmap_rows(void *arg, size_t lo, size_t hi)
{
    tc_bitmap_job *j = arg;
    for (size_t r = lo; r < hi; r++)
        memset(j->ab + r * j->n, j->p[r + 1] > j->p[r] ? 1 : 0, j->n);
}

static void tc_bitmap_cols(void *arg, size_t lo, size_t hi)
{
    tc_bitmap_job *j = arg;
    for (size_t c = lo; c < hi; c++)
        memcpy(j->ab + c * j->m, j->rowflag, j->m);
}

/* C's own arrays as the output of an SpMM, when GrB_mxm is about to overwrite all of C
 * (no mask, no accumulator, C of T's type, held in T's order and form, not iso, not an
 * input): they were written before, so the download does not pay a first touch of every
 * page of a fresh allocation (the larger part of bringing a result back).  C is left
 * without entries until they are packed back (tc_give_back_c). */
typedef struct {
    int taken;
    int bitmap, row_major;
    tc_grb_settings cs;       /* C's settings, which packing resets */
    GrB_Index x_size, b_size; /* bytes of the arrays taken */
} tc_c_arrays;

/* Values x (and for a bitmap its bitmap b) packed into X as a full or bitmap matrix, held
 * by row or by column; GrB_SUCCESS, or the failure with the arrays still the caller's. */
static GrB_Info tc_pack_dense(GrB_Matrix X, int bitmap, int row_major, void **x, int8_t **b,
                              GrB_Index x_size, GrB_Index b_size, bool iso, GrB_Index nvals)
{
    if (bitmap)
        return row_major ? GxB_Matrix_pack_BitmapR(X, b, x, b_size, x_size, iso, nvals, NULL)
                         : GxB_Matrix_pack_BitmapC(X, b, x, b_size, x_size, iso, nvals, NULL);
    return row_major ? GxB_Matrix_pack_FullR(X, x, x_size, iso, NULL)
                     : GxB_Matrix_pack_FullC(X, x, x_size, iso, NULL);
}

/* C's arrays (ca: their form, sizes and C's settings) packed back into C, its settings put
 * back after; GrB_SUCCESS, or the failure with the arrays still the caller's. */
static GrB_Info tc_pack_c(GrB_Matrix C, const tc_c_arrays *ca, void **out, int8_t **ab, bool iso,
                          GrB_Index nvals)
{
    GrB_Info gi = tc_pack_dense(C, ca->bitmap, ca->row_major, out, ab, ca->x_size, ca->b_size,
                                iso, nvals);
    if (gi == GrB_SUCCESS)
        (void)tc_grb_settings_set(C, &ca->cs);
    return gi;
}

static int tc_take_c(tc_grb_call *k, GrB_Matrix C, GrB_BinaryOp accum, GrB_Matrix A, GrB_Matrix B,
                     int row_major, int bitmap, size_t es, void **out, int8_t **ab,
                     tc_c_arrays *ca)
{
    memset(ca, 0, sizeof *ca);
    if (accum != NULL || k->ctype != k->ttype || C == A || C == B || tc_config_get()->grb.fresh_c)
        return 0;
    int32_t fmt = 0, status = 0;
    bool iso = true;
    const int32_t kind = bitmap ? GxB_BITMAP : GxB_FULL;
    if (GxB_Matrix_Option_get_INT32(C, GxB_FORMAT, &fmt) != GrB_SUCCESS ||
        (fmt == GxB_BY_ROW) != (row_major != 0) ||
        GxB_Matrix_Option_get_INT32(C, GxB_SPARSITY_STATUS, &status) != GrB_SUCCESS ||
        status != kind || GxB_Matrix_iso(&iso, C) != GrB_SUCCESS || iso ||
        tc_grb_settings_get(C, &ca->cs) != GrB_SUCCESS || (ca->cs.sparsity_control & kind) == 0)
        return 0;
    const GrB_Index cells = k->m * k->n;
    void *x = NULL;
    int8_t *b = NULL;
    GrB_Index nvals = 0;
    GrB_Info gi;
    if (bitmap)
        gi = row_major ? GxB_Matrix_unpack_BitmapR(C, &b, &x, &ca->b_size, &ca->x_size, &iso,
                                                   &nvals, NULL)
                       : GxB_Matrix_unpack_BitmapC(C, &b, &x, &ca->b_size, &ca->x_size, &iso,
                                                   &nvals, NULL);
    else
        gi = row_major ? GxB_Matrix_unpack_FullR(C, &x, &ca->x_size, &iso, NULL)
                       : GxB_Matrix_unpack_FullC(C, &x, &ca->x_size, &iso, NULL);
    if (gi != GrB_SUCCESS)
        return 0;
    ca->taken = 1;
    ca->bitmap = bitmap;
    ca->row_major = row_major;
    *out = x;
    *ab = b;
    if (iso || ca->x_size < cells * es || (bitmap && ca->b_size < cells)) {
        /* not what the query promised: put it back as it was */
        gi = tc_pack_c(C, ca, out, ab, iso, nvals);
        if (gi != GrB_SUCCESS) { /* C stays without entries, which GrB_mxm overwrites anyway */
            free(*out);
            free(*ab);
        }
        *out = NULL;
        *ab = NULL;
        ca->taken = 0;
        return 0;
    }
    return 1;
}

/* Packs C's arrays back after a failure before the result reached C (their content is then
 * undefined, which GrB_mxm's overwrite or error allows); frees them if even that fails. */
static void tc_give_back_c(GrB_Matrix C, tc_grb_call *k, void **out, int8_t **ab, tc_c_arrays *ca)
{
    if (!ca->taken)
        return;
    if (ca->bitmap) /* no entries: a bitmap must match its count */
        memset(*ab, 0, (size_t)(k->m * k->n));
    (void)tc_pack_c(C, ca, out, ab, false, 0);
    ca->taken = 0;
}

/* Rows of a CSR without entries, counted on the host lanes (a million rows: about 0.5 ms
 * on one core, on the cold path's clock). */
typedef struct {
    const GrB_Index *p;
    GrB_Index empty;
    pthread_mutex_t lock;
} tc_empty_job;

static void tc_empty_part(void *arg, size_t lo, size_t hi)
{
    tc_empty_job *j = arg;
    GrB_Index e = 0;
    for (size_t r = lo; r < hi; r++)
        e += j->p[r + 1] == j->p[r];
    pthread_mutex_lock(&j->lock);
    j->empty += e;
    pthread_mutex_unlock(&j->lock);
}

static GrB_Index tc_empty_rows(const GrB_Index *p, GrB_Index m)
{
    tc_empty_job j = {p, 0, PTHREAD_MUTEX_INITIALIZER};
    tc_lanes_parallel((size_t)m, sizeof *p, tc_empty_part, &j);
    return j.empty;
}

int tc_grb_run_spmm(tc_grb_call *k, GrB_Matrix C, GrB_BinaryOp accum, GrB_Matrix A, GrB_Matrix B,
                    GrB_Info *info)
{
    tc_grb_operand oa, ob;
    memset(&oa, 0, sizeof oa);
    memset(&ob, 0, sizeof ob);
    const size_t es = tc_grb_esize(k->vt);
    const GrB_Index m = k->m, n = k->n, cells = m * n;
    void *out = NULL;
    int8_t *ab = NULL;
    GrB_Matrix T = NULL;
    int pass = 1, synced = 0;
    GrB_Info gi;
    tc_grb_pin *pa = NULL, *pb = NULL;
    tc_grb_pin_state sta = TC_PIN_NONE, stb = TC_PIN_NONE;
    tc_c_arrays ca;
    memset(&ca, 0, sizeof ca);
    double t0 = tc_lanes_now_ms();

    if ((gi = tc_grb_operand_acquire(&oa, A, k->vt, TC_ROLE_SPARSE, k->tran_a, k->nounpack)) ||
        (gi = tc_grb_operand_acquire(&ob, B, k->vt, TC_ROLE_FULL, k->tran_b, k->nounpack))) {
        snprintf(k->why, sizeof k->why, "reading the operands failed (%d)", (int)gi);
        goto done;
    }
    tc_grb_csr csr = tc_grb_operand_csr(&oa);
    csr.x = tc_grb_operand_values(&oa);
    tc_grb_dense dense = tc_grb_operand_dense(&ob, k->tran_b);
    const GrB_Index empty = tc_empty_rows(csr.p, m);
    if (!tc_take_c(k, C, accum, A, B, dense.row_major, empty > 0, es, &out, &ab, &ca))
        out = tc_grb_alloc_out((size_t)cells * es);
    if (csr.x == NULL || dense.x == NULL || out == NULL) {
        snprintf(k->why, sizeof k->why, "out of host memory");
        goto done;
    }
    pa = tc_grb_pin_find(A, oa.form);
    pb = tc_grb_pin_find(B, ob.form);
    sta = tc_grb_pin_check(pa, &oa);
    stb = tc_grb_pin_check(pb, &ob);
    k->ms_acquire = tc_lanes_now_ms() - t0;
    if (k->fail) {
        snprintf(k->why, sizeof k->why, "TCSPARSE_X_GRB_BACKEND=fail");
        goto done;
    } else if (k->host) { /* the GPU's stand-in in tests: its pins count as refreshed */
        double h0 = tc_lanes_now_ms();
        tc_grb_host_spmm(k->vt, &csr, &dense, out);
        k->times.compute = tc_lanes_now_ms() - h0;
        snprintf(k->times.kernel, sizeof k->times.kernel, "host reference");
    } else if (tc_grb_gpu_spmm(k->vt, &csr, sta ? pa : NULL, sta, &dense, stb ? pb : NULL, stb,
                               out, &k->times, k->why, sizeof k->why) != 0) {
        goto done;
    }
    synced = 1;
    double f0 = tc_lanes_now_ms();
    if (empty > 0) {
        if (ab == NULL)
            ab = tc_grb_alloc_out((size_t)cells);
        if (ab == NULL) {
            snprintf(k->why, sizeof k->why, "out of host memory");
            goto done;
        }
        tc_bitmap_job job = {csr.p, ab, NULL, m, n};
        if (dense.row_major) {
            tc_lanes_parallel((size_t)m, (size_t)n, tc_bitmap_rows, &job);
        } else {
            int8_t *flag = malloc((size_t)m);
            if (flag == NULL) {
                snprintf(k->why, sizeof k->why, "out of host memory");
                goto done;
            }
            for (GrB_Index r = 0; r < m; r++)
                flag[r] = csr.p[r + 1] > csr.p[r];
            job.rowflag = flag;
            tc_lanes_parallel((size_t)n, (size_t)m, tc_bitmap_cols, &job);
            free(flag);
        }
    }
    /* the operands go back before C is touched: C may be A or B */
    const GrB_Info restored = tc_grb_restore(k, &oa, &ob, NULL);
    if (restored != GrB_SUCCESS) {
        *info = restored;
        snprintf(k->why, sizeof k->why, "restoring an input failed (%d)", (int)*info);
        pass = 0;
        goto done;
    }
    /* Fast: T's arrays packed straight into C.  Only where that leaves C as GrB_mxm would:
     * C held in T's order and allowed T's sparsity; packing resets C's settings to the
     * defaults, so they are put back.  Otherwise GrB_Matrix_apply writes C in its own way. */
    int32_t c_fmt = GxB_BY_ROW;
    tc_grb_settings cs = ca.cs;
    const int32_t t_kind = empty == 0 ? GxB_FULL : GxB_BITMAP;
    const int c_known = ca.taken || (GxB_Matrix_Option_get_INT32(C, GxB_FORMAT, &c_fmt) == GrB_SUCCESS &&
                                     tc_grb_settings_get(C, &cs) == GrB_SUCCESS);
    const int fast = ca.taken || (accum == NULL && k->ctype == k->ttype && c_known &&
                                  (c_fmt == GxB_BY_ROW) == (dense.row_major != 0) &&
                                  (cs.sparsity_control & t_kind) != 0);
    GrB_Matrix target = C;
    if (!fast) {
        if ((gi = GrB_Matrix_new(&T, k->ttype, m, n)) != GrB_SUCCESS) {
            *info = gi;
            pass = 0;
            goto done;
        }
        target = T;
    }
    /* T comes back in B's order (see tc_grb_gpu_spmm) */
    const GrB_Index x_size = ca.taken ? ca.x_size : cells * es;
    const GrB_Index b_size = ca.taken ? ca.b_size : cells;
    gi = tc_pack_dense(target, empty > 0, dense.row_major, &out, &ab, x_size, b_size, false,
                       (m - empty) * n);
    if (gi != GrB_SUCCESS) {
        /* without mask and accum, C's old content does not matter to GrB_mxm */
        snprintf(k->why, sizeof k->why, "packing the result failed (%d)", (int)gi);
        if (fast && (C == A || C == B)) {
            *info = gi;
            pass = 0;
        }
        goto done;
    }
    if (fast) {
        k->finish_how = ca.taken ? "written into C's arrays" : "packed into C";
        ca.taken = 0; /* C holds its arrays again */
        /* packing gave C a new header with the default settings: GrB_mxm keeps the user's */
        *info = tc_grb_settings_set(C, &cs);
        pass = 0;
    } else {
        k->finish_how = "applied by GraphBLAS";
        pass = tc_grb_finish(k, C, NULL, accum, T, info);
    }
    k->ms_finish = tc_lanes_now_ms() - f0;
done:
    if (!synced) {
        tc_grb_pin_unsync(pa, sta);
        tc_grb_pin_unsync(pb, stb);
    }
    tc_grb_release_all(k, &pass, info, &oa, &ob, NULL);
    tc_give_back_c(C, k, &out, &ab, &ca);
    free(out);
    free(ab);
    GrB_Matrix_free(&T);
    return pass;
}
