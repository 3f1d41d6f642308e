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
 * rejects before changing C (so the caller gets GrB_mxm's own error). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "grb_internal.h"

/* > 0 while this thread is inside the adapter: a GrB_mxm reached from in here (it should
 * not happen: GraphBLAS calls its internals directly) goes straight to the real one. */
static __thread int tc_grb_depth;

#define TC_GRB_MIN_FLOPS_DEFAULT 2097152.0

typedef struct {
    tcsparse_GrB_path_t path;
    tc_grb_vtype vt;
    int tran_a, tran_b, replace, mask_struct;
    GrB_Index m, k, n;
    GrB_Type ctype, ttype;
    int host;      /* TCSPARSE_GRB_BACKEND=host */
    int fail;      /* TCSPARSE_GRB_BACKEND=fail: every computation fails (tests the way back) */
    int nounpack;  /* TCSPARSE_GRB_NOUNPACK */
    char why[160];
    tc_grb_times times;
    double ms_acquire, ms_finish;
    const char *finish_how; /* how T reached C (last_reason of an accelerated call) */
    double ms_restore;      /* of ms_finish: giving the inputs back to GraphBLAS (log line) */
} tc_call;

static int tc_env_on(const char *name)
{
    const char *e = getenv(name);
    return e != NULL && e[0] != '\0' && strcmp(e, "0") != 0 && strcmp(e, "off") != 0;
}

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

static void tc_classify(tc_call *k, GrB_Matrix C, GrB_Matrix M, GrB_Semiring sr, GrB_Matrix A,
                        GrB_Matrix B, GrB_Descriptor desc)
{
    k->path = TCSPARSE_GRB_PATH_GRAPHBLAS;
    const char *e = getenv("TCSPARSE_GRB");
    if (e != NULL && (strcmp(e, "off") == 0 || strcmp(e, "0") == 0))
        TC_NO("TCSPARSE_GRB=%s", e);
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
    double min_flops = TC_GRB_MIN_FLOPS_DEFAULT;
    if ((e = getenv("TCSPARSE_GRB_MIN_FLOPS")) != NULL && e[0] != '\0')
        min_flops = strtod(e, NULL);
    if (flops < min_flops)
        TC_NO("%.3g flops < TCSPARSE_GRB_MIN_FLOPS (%.3g)", flops, min_flops);
    e = getenv("TCSPARSE_GRB_BACKEND");
    k->host = e != NULL && strcmp(e, "host") == 0;
    k->fail = e != NULL && strcmp(e, "fail") == 0;
    char why[128];
    if (!k->host && !k->fail && !tc_grb_gpu_available(why, sizeof why))
        TC_NO("%s", why);
    k->nounpack = tc_env_on("TCSPARSE_GRB_NOUNPACK");
}

/* The GraphBLAS descriptor for the final C<M> = accum(C, T): the caller's output and mask
 * settings, no transposition (complemented masks never get here). */
static GrB_Descriptor tc_apply_desc(const tc_call *k)
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

/* C<M> = accum(C, T), or T moved into C.  Returns 1 when the call must go to GraphBLAS
 * (C unchanged), 0 otherwise with the result in *info. */
static int tc_finish(tc_call *k, GrB_Matrix C, GrB_Matrix M, GrB_BinaryOp accum, GrB_Matrix T,
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

/* Gives back every operand still held (error paths).  A matrix that could not be restored
 * must not reach GraphBLAS as it is (without its arrays): the call then fails with the
 * restore's error instead of passing through. */
static void tc_release_all(tc_call *k, int *pass, GrB_Info *info, tc_grb_operand *o1,
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

/* C's arrays (ca: their form, sizes and C's settings) packed back into C, its settings put
 * back after; GrB_SUCCESS, or the failure with the arrays still the caller's. */
static GrB_Info tc_pack_c(GrB_Matrix C, const tc_c_arrays *ca, void **out, int8_t **ab, bool iso,
                          GrB_Index nvals)
{
    GrB_Info gi;
    if (ca->bitmap)
        gi = ca->row_major ? GxB_Matrix_pack_BitmapR(C, ab, out, ca->b_size, ca->x_size, iso,
                                                     nvals, NULL)
                           : GxB_Matrix_pack_BitmapC(C, ab, out, ca->b_size, ca->x_size, iso,
                                                     nvals, NULL);
    else
        gi = ca->row_major ? GxB_Matrix_pack_FullR(C, out, ca->x_size, iso, NULL)
                           : GxB_Matrix_pack_FullC(C, out, ca->x_size, iso, NULL);
    if (gi == GrB_SUCCESS)
        (void)tc_grb_settings_set(C, &ca->cs);
    return gi;
}

static int tc_take_c(tc_call *k, GrB_Matrix C, GrB_BinaryOp accum, GrB_Matrix A, GrB_Matrix B,
                     int row_major, int bitmap, size_t es, void **out, int8_t **ab,
                     tc_c_arrays *ca)
{
    memset(ca, 0, sizeof *ca);
    if (accum != NULL || k->ctype != k->ttype || C == A || C == B || tc_env_on("TCSPARSE_GRB_FRESH_C"))
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
static void tc_give_back_c(GrB_Matrix C, tc_call *k, void **out, int8_t **ab, tc_c_arrays *ca)
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

static int tc_run_spmm(tc_call *k, GrB_Matrix C, GrB_BinaryOp accum, GrB_Matrix A, GrB_Matrix B,
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
        snprintf(k->why, sizeof k->why, "TCSPARSE_GRB_BACKEND=fail");
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
    const double r0 = tc_lanes_now_ms();
    GrB_Info ra = tc_grb_operand_release(&oa), rb = tc_grb_operand_release(&ob);
    k->ms_restore = tc_lanes_now_ms() - r0;
    if (ra != GrB_SUCCESS || rb != GrB_SUCCESS) {
        *info = ra != GrB_SUCCESS ? ra : rb;
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
    if (empty == 0 && dense.row_major)
        gi = GxB_Matrix_pack_FullR(target, &out, x_size, false, NULL);
    else if (empty == 0)
        gi = GxB_Matrix_pack_FullC(target, &out, x_size, false, NULL);
    else if (dense.row_major)
        gi = GxB_Matrix_pack_BitmapR(target, &ab, &out, b_size, x_size, false,
                                     (m - empty) * n, NULL);
    else
        gi = GxB_Matrix_pack_BitmapC(target, &ab, &out, b_size, x_size, false,
                                     (m - empty) * n, NULL);
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
        pass = tc_finish(k, C, NULL, accum, T, info);
    }
    k->ms_finish = tc_lanes_now_ms() - f0;
done:
    if (!synced) {
        tc_grb_pin_unsync(pa, sta);
        tc_grb_pin_unsync(pb, stb);
    }
    tc_release_all(k, &pass, info, &oa, &ob, NULL);
    tc_give_back_c(C, k, &out, &ab, &ca);
    free(out);
    free(ab);
    GrB_Matrix_free(&T);
    return pass;
}

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

static GrB_Info tc_sddmm_pack_c(GrB_Matrix C, tc_sddmm_c *sc, bool iso)
{
    GrB_Info gi = sc->by_row ? GxB_Matrix_pack_CSR(C, &sc->p, &sc->i, &sc->x, sc->p_size,
                                                   sc->i_size, sc->x_size, iso, false, NULL)
                             : GxB_Matrix_pack_CSC(C, &sc->p, &sc->i, &sc->x, sc->p_size,
                                                   sc->i_size, sc->x_size, iso, false, NULL);
    if (gi == GrB_SUCCESS)
        gi = tc_grb_settings_set(C, &sc->cs);
    return gi;
}

static void tc_sddmm_plan_c(tc_call *k, GrB_Matrix C, GrB_Matrix M, GrB_Matrix A, GrB_Matrix B,
                            GrB_BinaryOp accum, const tc_grb_operand *om, size_t es,
                            tc_sddmm_c *sc)
{
    memset(sc, 0, sizeof *sc);
    sc->mode = TC_SDDMM_APPLY;
    if (accum != NULL || k->ctype != k->ttype || !k->mask_struct || C == M || C == A ||
        C == B || tc_env_on("TCSPARSE_GRB_FRESH_C"))
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

static int tc_run_sddmm(tc_call *k, GrB_Matrix C, GrB_Matrix M, GrB_BinaryOp accum, GrB_Matrix A,
                        GrB_Matrix B, GrB_Info *info)
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
        snprintf(k->why, sizeof k->why, "TCSPARSE_GRB_BACKEND=fail");
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
        const double r0 = tc_lanes_now_ms();
        GrB_Info rm = tc_grb_operand_release(&om), ra = tc_grb_operand_release(&oa);
        GrB_Info rb = tc_grb_operand_release(&ob);
        k->ms_restore = tc_lanes_now_ms() - r0;
        gi = tc_sddmm_pack_c(C, &sc, false);
        sc.mode = TC_SDDMM_APPLY; /* C holds its arrays again (or, failed, they are freed) */
        k->finish_how = "written into C's arrays";
        *info = rm != GrB_SUCCESS ? rm : ra != GrB_SUCCESS ? ra : rb != GrB_SUCCESS ? rb : gi;
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
    const double r0 = tc_lanes_now_ms();
    GrB_Info rm = tc_grb_operand_release(&om), ra = tc_grb_operand_release(&oa);
    GrB_Info rb = tc_grb_operand_release(&ob);
    k->ms_restore = tc_lanes_now_ms() - r0;
    if (rm != GrB_SUCCESS || ra != GrB_SUCCESS || rb != GrB_SUCCESS) {
        *info = rm != GrB_SUCCESS ? rm : ra != GrB_SUCCESS ? ra : rb;
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
    if (swap)
        gi = GxB_Matrix_pack_CSC(T, &tp, &ti, &out, psz, isz, (GrB_Index)P.nnz * es, false,
                                 false, NULL);
    else
        gi = GxB_Matrix_pack_CSR(T, &tp, &ti, &out, psz, isz, (GrB_Index)P.nnz * es, false,
                                 false, NULL);
    if (gi != GrB_SUCCESS) {
        snprintf(k->why, sizeof k->why, "packing the result failed (%d)", (int)gi);
        goto done;
    }
    pass = tc_finish(k, C, M, accum, T, info);
    k->ms_finish = tc_lanes_now_ms() - f0;
done:
    if (!synced) {
        tc_grb_pin_unsync(pm, stm);
        tc_grb_pin_unsync(pa, sta);
        tc_grb_pin_unsync(pb, stb);
    }
    tc_release_all(k, &pass, info, &om, &oa, &ob);
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

static const char *tc_path_name(const tc_call *k)
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
    tc_call k;
    memset(&k, 0, sizeof k);
    tc_classify(&k, C, M, semiring, A, B, desc);
    GrB_Info info = GrB_SUCCESS;
    int pass = 1;
    if (k.path == TCSPARSE_GRB_PATH_SPMM)
        pass = tc_run_spmm(&k, C, accum, A, B, &info);
    else if (k.path == TCSPARSE_GRB_PATH_SDDMM)
        pass = tc_run_sddmm(&k, C, M, accum, A, B, &info);
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
