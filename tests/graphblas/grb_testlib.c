/* Helpers of the GraphBLAS adapter's tests (see grb_testlib.h). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "grb_testlib.h"

void tg_init(void)
{
    static int done;
    if (!done) {
        (void)GrB_init(GrB_NONBLOCKING); /* already initialised in this process: fine */
        done = 1;
    }
}

static uint64_t tg_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double tg_unit(uint64_t *s) /* [0, 1) */
{
    return (double)(tg_next(s) >> 11) / 9007199254740992.0;
}

static int tg_ok(GrB_Info info, const char *what)
{
    if (info != GrB_SUCCESS) {
        fprintf(stderr, "grb_testlib: %s failed (%d)\n", what, (int)info);
        abort();
    }
    return 1;
}

static void tg_store(GrB_Matrix A, int store, int full)
{
    int32_t control = full ? GxB_FULL : GxB_SPARSE;
    if (store == TG_HYPER)
        control = GxB_HYPERSPARSE;
    else if (store == TG_BITMAP)
        control = GxB_BITMAP;
    tg_ok(GxB_Matrix_Option_set_INT32(A, GxB_FORMAT, store == TG_BYCOL ? GxB_BY_COL : GxB_BY_ROW),
          "set format");
    tg_ok(GxB_Matrix_Option_set_INT32(A, GxB_SPARSITY_CONTROL, control), "set sparsity");
    /* settings away from the defaults, so that an adapter that resets them is caught */
    tg_ok(GxB_Matrix_Option_set_FP64(A, GxB_HYPER_SWITCH, 0.375), "set hyper switch");
    tg_ok(GxB_Matrix_Option_set_FP64(A, GxB_BITMAP_SWITCH, 0.125), "set bitmap switch");
    tg_ok(GrB_Matrix_wait(A, GrB_MATERIALIZE), "wait");
}

GrB_Matrix tg_sparse(GrB_Type type, GrB_Index rows, GrB_Index cols, double density,
                     uint64_t seed, int store)
{
    GrB_Matrix A;
    tg_ok(GrB_Matrix_new(&A, type, rows, cols), "new");
    size_t cap = (size_t)(rows * cols) + 1, cnt = 0;
    GrB_Index *I = malloc(cap * sizeof *I), *J = malloc(cap * sizeof *J);
    double *X = malloc(cap * sizeof *X);
    if (I == NULL || J == NULL || X == NULL)
        abort();
    for (GrB_Index r = 0; r < rows; r++) {
        if (r % 5 == 3)
            continue;
        for (GrB_Index c = 0; c < cols; c++)
            if (tg_unit(&seed) < density) {
                I[cnt] = r;
                J[cnt] = c;
                X[cnt] = cnt % 13 == 7 ? 0.0 : 2.0 * tg_unit(&seed) - 1.0;
                cnt++;
            }
    }
    if (store == TG_ISO) {
        GrB_Scalar s;
        tg_ok(GrB_Scalar_new(&s, type), "scalar");
        tg_ok(GrB_Scalar_setElement_FP64(s, 0.75), "scalar set");
        tg_ok(GxB_Matrix_build_Scalar(A, I, J, s, cnt), "build iso");
        GrB_Scalar_free(&s);
    } else {
        tg_ok(GrB_Matrix_build_FP64(A, I, J, X, cnt, GrB_PLUS_FP64), "build");
    }
    free(I);
    free(J);
    free(X);
    tg_store(A, store, 0);
    return A;
}

GrB_Matrix tg_full(GrB_Type type, GrB_Index rows, GrB_Index cols, uint64_t seed, int store)
{
    GrB_Matrix A;
    tg_ok(GrB_Matrix_new(&A, type, rows, cols), "new");
    if (store == TG_ISO) {
        tg_ok(GrB_Matrix_assign_FP64(A, NULL, NULL, -0.625, GrB_ALL, rows, GrB_ALL, cols, NULL),
              "assign");
    } else {
        size_t cnt = (size_t)(rows * cols);
        GrB_Index *I = malloc((cnt + 1) * sizeof *I), *J = malloc((cnt + 1) * sizeof *J);
        double *X = malloc((cnt + 1) * sizeof *X);
        if (I == NULL || J == NULL || X == NULL)
            abort();
        for (size_t e = 0; e < cnt; e++) {
            I[e] = e / cols;
            J[e] = e % cols;
            X[e] = 2.0 * tg_unit(&seed) - 1.0;
        }
        tg_ok(GrB_Matrix_build_FP64(A, I, J, X, cnt, GrB_PLUS_FP64), "build");
        free(I);
        free(J);
        free(X);
    }
    tg_store(A, store, 1);
    return A;
}

GrB_Matrix tg_from_csr(const tc_csr *m, GrB_Type type)
{
    GrB_Matrix A;
    const size_t nz = (size_t)m->nnz;
    GrB_Index *I = malloc((nz + 1) * sizeof *I), *J = malloc((nz + 1) * sizeof *J);
    if (I == NULL || J == NULL)
        abort();
    for (int64_t r = 0; r < m->rows; r++)
        for (int64_t e = m->row_off[r]; e < m->row_off[r + 1]; e++) {
            I[e] = (GrB_Index)r;
            J[e] = (GrB_Index)m->col[e];
        }
    tg_ok(GrB_Matrix_new(&A, type, (GrB_Index)m->rows, (GrB_Index)m->cols), "new");
    tg_ok(GrB_Matrix_build_FP64(A, I, J, m->val, nz, GrB_PLUS_FP64), "build");
    free(I);
    free(J);
    tg_ok(GrB_Matrix_wait(A, GrB_MATERIALIZE), "wait");
    return A;
}

typedef struct {
    GrB_Index i, j;
    double x;
} tg_tuple;

static int tg_cmp_tuple(const void *a, const void *b)
{
    const tg_tuple *p = a, *q = b;
    if (p->i != q->i)
        return p->i < q->i ? -1 : 1;
    return p->j < q->j ? -1 : p->j > q->j;
}

static tg_tuple *tg_tuples(GrB_Matrix A, GrB_Index *n)
{
    GrB_Index nv;
    tg_ok(GrB_Matrix_nvals(&nv, A), "nvals");
    GrB_Index *I = malloc((nv + 1) * sizeof *I), *J = malloc((nv + 1) * sizeof *J);
    double *X = malloc((nv + 1) * sizeof *X);
    tg_tuple *t = malloc((nv + 1) * sizeof *t);
    if (I == NULL || J == NULL || X == NULL || t == NULL)
        abort();
    *n = nv;
    tg_ok(GrB_Matrix_extractTuples_FP64(I, J, X, n, A), "extractTuples");
    for (GrB_Index e = 0; e < *n; e++)
        t[e] = (tg_tuple){I[e], J[e], X[e]};
    qsort(t, (size_t)*n, sizeof *t, tg_cmp_tuple);
    free(I);
    free(J);
    free(X);
    return t;
}

int tg_compare(GrB_Matrix X, GrB_Matrix Y, double tol, char *msg, size_t n)
{
    GrB_Type tx, ty;
    GrB_Index xr, xc, yr, yc, nx, ny;
    tg_ok(GxB_Matrix_type(&tx, X), "type");
    tg_ok(GxB_Matrix_type(&ty, Y), "type");
    tg_ok(GrB_Matrix_nrows(&xr, X), "nrows");
    tg_ok(GrB_Matrix_ncols(&xc, X), "ncols");
    tg_ok(GrB_Matrix_nrows(&yr, Y), "nrows");
    tg_ok(GrB_Matrix_ncols(&yc, Y), "ncols");
    if (tx != ty)
        return snprintf(msg, n, "types differ"), 1;
    if (xr != yr || xc != yc)
        return snprintf(msg, n, "sizes differ"), 1;
    tg_tuple *a = tg_tuples(X, &nx), *b = tg_tuples(Y, &ny);
    int bad = 0;
    if (nx != ny) {
        snprintf(msg, n, "%llu entries, expected %llu", (unsigned long long)nx,
                 (unsigned long long)ny);
        bad = 1;
    }
    double dd = 0, yy = 0;
    for (GrB_Index e = 0; !bad && e < nx; e++) {
        if (a[e].i != b[e].i || a[e].j != b[e].j) {
            snprintf(msg, n, "pattern differs at entry %llu: (%llu,%llu) vs (%llu,%llu)",
                     (unsigned long long)e, (unsigned long long)a[e].i,
                     (unsigned long long)a[e].j, (unsigned long long)b[e].i,
                     (unsigned long long)b[e].j);
            bad = 1;
        } else if (tol == 0.0) {
            int same = a[e].x == b[e].x || (isnan(a[e].x) && isnan(b[e].x));
            if (!same) {
                snprintf(msg, n, "value at (%llu,%llu): %.17g, expected %.17g",
                         (unsigned long long)a[e].i, (unsigned long long)a[e].j, a[e].x,
                         b[e].x);
                bad = 1;
            }
        } else {
            dd += (a[e].x - b[e].x) * (a[e].x - b[e].x);
            yy += b[e].x * b[e].x;
        }
    }
    if (!bad && tol > 0.0) {
        double err = yy > 0 ? sqrt(dd / yy) : sqrt(dd);
        if (!(err <= tol)) {
            snprintf(msg, n, "relative error %.3e > %.1e", err, tol);
            bad = 1;
        }
    }
    free(a);
    free(b);
    return bad;
}

tcsparse_GrB_path_t tg_expected_path(const tg_case *c, int accelerate)
{
    if (!accelerate || c->op == TG_MASKED_SPMM)
        return TCSPARSE_GRB_PATH_GRAPHBLAS;
    if (c->op == TG_SPMM)
        return TCSPARSE_GRB_PATH_SPMM;
    return c->comp ? TCSPARSE_GRB_PATH_GRAPHBLAS : TCSPARSE_GRB_PATH_SDDMM;
}

void tg_case_name(const tg_case *c, char *buf, size_t n)
{
    static const char *ops[] = {"spmm", "sddmm", "masked-spmm"};
    snprintf(buf, n,
             "%s %s m%llu k%llu n%llu tranA%d tranB%d mask%d comp%d replace%d accum%d "
             "c_other%d c_init%d storeA%d storeB%d storeM%d user_sr%d alias%d seed%llu",
             ops[c->op], c->fp64 ? "fp64" : "fp32", (unsigned long long)c->m,
             (unsigned long long)c->k, (unsigned long long)c->n, c->tran_a, c->tran_b, c->mask,
             c->comp, c->replace, c->accum, c->c_other, c->c_init, c->store_a, c->store_b,
             c->store_m, c->user_sr, c->alias, (unsigned long long)c->seed);
}

/* Sparsity status, format, and the per-matrix settings (sparsity control, hyper and bitmap
 * switches), which the adapter must leave as they were. */
#define TG_LAYOUT 5
static void tg_layout(GrB_Matrix A, double out[TG_LAYOUT])
{
    int32_t status, format, control;
    tg_ok(GxB_Matrix_Option_get_INT32(A, GxB_SPARSITY_STATUS, &status), "status");
    tg_ok(GxB_Matrix_Option_get_INT32(A, GxB_FORMAT, &format), "format");
    tg_ok(GxB_Matrix_Option_get_INT32(A, GxB_SPARSITY_CONTROL, &control), "control");
    tg_ok(GxB_Matrix_Option_get_FP64(A, GxB_HYPER_SWITCH, &out[3]), "hyper switch");
    tg_ok(GxB_Matrix_Option_get_FP64(A, GxB_BITMAP_SWITCH, &out[4]), "bitmap switch");
    out[0] = status;
    out[1] = format;
    out[2] = control;
}

static int tg_same_input(GrB_Matrix X, GrB_Matrix X0, const double lay[TG_LAYOUT],
                         const char *name, char *msg, size_t n)
{
    char why[200];
    double now[TG_LAYOUT];
    if (tg_compare(X, X0, 0.0, why, sizeof why) != 0)
        return snprintf(msg, n, "input %s changed: %s", name, why), 1;
    tg_layout(X, now);
    if (memcmp(now, lay, sizeof now) != 0)
        return snprintf(msg, n,
                        "input %s: sparsity %g format %g control %g hyper %g bitmap %g, was "
                        "%g %g %g %g %g", name, now[0], now[1], now[2], now[3], now[4], lay[0],
                        lay[1], lay[2], lay[3], lay[4]), 1;
    return 0;
}

int tg_run_case(const tg_case *c, int accelerate, double tol, char *msg, size_t n)
{
    tg_init();
    GrB_Type T = c->fp64 ? GrB_FP64 : GrB_FP32;
    GrB_Type CT = c->c_other ? (c->fp64 ? GrB_FP32 : GrB_FP64) : T;
    const int sddmm = c->op == TG_SDDMM;
    const GrB_Index m = c->m, k = c->k, nn = c->n;
    GrB_Matrix A, B, M = NULL, C0, A0, B0, M0 = NULL, C1, C2;
    GrB_Monoid mon = NULL;
    GrB_Semiring usr = NULL;
    GrB_Descriptor d;
    int bad = 0;

    A = sddmm ? tg_full(T, c->tran_a ? k : m, c->tran_a ? m : k, c->seed + 1, c->store_a)
              : tg_sparse(T, c->tran_a ? k : m, c->tran_a ? m : k, c->density, c->seed + 1,
                          c->store_a);
    B = c->alias == TG_ALIAS_B_IS_A ? A
                                    : tg_full(T, c->tran_b ? nn : k, c->tran_b ? k : nn,
                                              c->seed + 2, c->store_b);
    if (c->mask) {
        /* structural masks of both kinds of type; a valued one FP with explicit zeros */
        GrB_Type mt = c->alias == TG_ALIAS_C_IS_M ? CT : (c->seed % 2 ? GrB_BOOL : CT);
        M = tg_sparse(mt, m, nn, 0.4, c->seed + 3, c->store_m);
        tg_ok(GrB_Matrix_dup(&M0, M), "dup");
    }
    if (c->alias == TG_ALIAS_C_IS_M)
        tg_ok(GrB_Matrix_dup(&C0, M), "dup");
    else if (c->alias == TG_ALIAS_C_IS_A)
        tg_ok(GrB_Matrix_dup(&C0, A), "dup");
    else if (c->c_init)
        C0 = tg_sparse(CT, m, nn, 0.3, c->seed + 4, TG_BYROW);
    else
        tg_ok(GrB_Matrix_new(&C0, CT, m, nn), "new");
    tg_ok(GrB_Matrix_dup(&A0, A), "dup");
    tg_ok(GrB_Matrix_dup(&B0, B), "dup");
    tg_ok(GrB_Matrix_dup(&C1, C0), "dup");
    tg_ok(GrB_Matrix_dup(&C2, C0), "dup");
    double lay_a[TG_LAYOUT], lay_b[TG_LAYOUT], lay_m[TG_LAYOUT];
    tg_layout(A, lay_a);
    tg_layout(B, lay_b);
    if (M != NULL)
        tg_layout(M, lay_m);

    tg_ok(GrB_Descriptor_new(&d), "descriptor");
    if (c->replace)
        tg_ok(GrB_Descriptor_set(d, GrB_OUTP, GrB_REPLACE), "desc");
    if (c->comp)
        tg_ok(GrB_Descriptor_set(d, GrB_MASK, GrB_COMP), "desc");
    if (c->mask == 1)
        tg_ok(GrB_Descriptor_set(d, GrB_MASK, GrB_STRUCTURE), "desc");
    if (c->tran_a)
        tg_ok(GrB_Descriptor_set(d, GrB_INP0, GrB_TRAN), "desc");
    if (c->tran_b)
        tg_ok(GrB_Descriptor_set(d, GrB_INP1, GrB_TRAN), "desc");
    GrB_Semiring sr = c->fp64 ? GrB_PLUS_TIMES_SEMIRING_FP64 : GrB_PLUS_TIMES_SEMIRING_FP32;
    if (c->user_sr) {
        if (c->fp64)
            tg_ok(GrB_Monoid_new_FP64(&mon, GrB_PLUS_FP64, 0.0), "monoid");
        else
            tg_ok(GrB_Monoid_new_FP32(&mon, GrB_PLUS_FP32, 0.0f), "monoid");
        tg_ok(GrB_Semiring_new(&usr, mon, c->fp64 ? GrB_TIMES_FP64 : GrB_TIMES_FP32), "semiring");
        sr = usr;
    }
    GrB_BinaryOp accum = !c->accum ? NULL : c->fp64 ? GrB_PLUS_FP64 : GrB_PLUS_FP32;

    GrB_Info i1, i2;
    if (c->alias == TG_ALIAS_C_IS_M) {
        i1 = GrB_mxm(C1, C1, accum, sr, A, B, d);
        tcsparse_GrB_reset_stats();
        i2 = tcsparse_GrB_mxm(C2, C2, accum, sr, A, B, d);
    } else if (c->alias == TG_ALIAS_C_IS_A) {
        i1 = GrB_mxm(C1, M, accum, sr, C1, B, d);
        tcsparse_GrB_reset_stats();
        i2 = tcsparse_GrB_mxm(C2, M, accum, sr, C2, B, d);
    } else {
        i1 = GrB_mxm(C1, M, accum, sr, A, B, d);
        tcsparse_GrB_reset_stats();
        i2 = tcsparse_GrB_mxm(C2, M, accum, sr, A, B, d);
    }
    tcsparse_GrB_stats_t st;
    tcsparse_GrB_get_stats(&st);
    const tcsparse_GrB_path_t want = tg_expected_path(c, accelerate);
    char why[300];
    if (i1 != i2) {
        snprintf(msg, n, "GrB_mxm returned %d, tcsparse_GrB_mxm %d", (int)i1, (int)i2);
        bad = 1;
    } else if (st.last_path != want) {
        snprintf(msg, n, "path %d, expected %d (%s)", (int)st.last_path, (int)want,
                 st.last_reason);
        bad = 1;
    } else if (tg_compare(C2, C1, want == TCSPARSE_GRB_PATH_GRAPHBLAS ? 0.0 : tol, why,
                          sizeof why) != 0) {
        snprintf(msg, n, "C differs from GrB_mxm's: %s", why);
        bad = 1;
    } else if (tg_same_input(A, A0, lay_a, "A", msg, n) ||
               tg_same_input(B, B0, lay_b, "B", msg, n) ||
               (M != NULL && tg_same_input(M, M0, lay_m, "M", msg, n))) {
        bad = 1;
    }
    if (B != A)
        GrB_Matrix_free(&B);
    GrB_Matrix_free(&A);
    GrB_Matrix_free(&M);
    GrB_Matrix_free(&M0);
    GrB_Matrix_free(&A0);
    GrB_Matrix_free(&B0);
    GrB_Matrix_free(&C0);
    GrB_Matrix_free(&C1);
    GrB_Matrix_free(&C2);
    GrB_Descriptor_free(&d);
    GrB_Semiring_free(&usr);
    GrB_Monoid_free(&mon);
    return bad;
}

int tg_all_cases(tg_case *out, int max, const GrB_Index dims[3])
{
    static const int sparse_store[] = {TG_BYROW, TG_BYCOL, TG_HYPER, TG_BITMAP, TG_ISO};
    static const int full_store[] = {TG_BYROW, TG_BYCOL, TG_BITMAP, TG_ISO};
    const GrB_Index m = dims ? dims[0] : 37, k = dims ? dims[1] : 23, n = dims ? dims[2] : 19;
    int cnt = 0;
    for (int op = 0; op < 3; op++) {
        const int nbits = op == TG_SPMM ? 7 : op == TG_SDDMM ? 9 : 5;
        for (int bits = 0; bits < (1 << nbits) && cnt < max; bits++) {
            tg_case c;
            memset(&c, 0, sizeof c);
            const int idx = cnt;
            c.op = op;
            c.m = m;
            c.k = k;
            c.n = n;
            c.density = 0.3;
            c.seed = 1000u + 17u * (uint64_t)idx;
            c.tran_a = bits & 1;
            c.tran_b = (bits >> 1) & 1;
            c.replace = (bits >> 2) & 1;
            c.accum = (bits >> 3) & 1;
            c.c_init = (bits >> 4) & 1;
            if (op == TG_SPMM) {
                c.c_other = (bits >> 5) & 1;
                c.fp64 = (bits >> 6) & 1;
                c.store_a = sparse_store[idx % 5];
                c.store_b = full_store[(idx / 5) % 4];
                if (idx % 9 == 4 && !c.tran_a) { /* C = C*B, C being A */
                    c.alias = TG_ALIAS_C_IS_A;
                    c.n = c.k;
                }
            } else if (op == TG_SDDMM) {
                c.mask = 1 + ((bits >> 5) & 1);
                c.comp = (bits >> 6) & 1;
                c.c_other = (bits >> 7) & 1;
                c.fp64 = (bits >> 8) & 1;
                c.store_m = sparse_store[idx % 5];
                c.store_a = full_store[(idx / 5) % 4];
                c.store_b = full_store[(idx / 3) % 4];
                if (idx % 7 == 0) { /* C<M> = A*A' */
                    c.alias = TG_ALIAS_B_IS_A;
                    c.tran_b = !c.tran_a;
                    c.n = c.m;
                } else if (idx % 11 == 5) { /* C<C> = A*B' */
                    c.alias = TG_ALIAS_C_IS_M;
                }
            } else {
                c.mask = 1 + ((bits >> 4) & 1);
                c.c_init = 1;
                c.store_a = sparse_store[idx % 5];
                c.store_b = full_store[idx % 4];
            }
            c.user_sr = idx % 3 == 0;
            out[cnt++] = c;
        }
    }
    return cnt;
}

void tg_setenv(const char *name, const char *value)
{
    setenv(name, value, 1);
    tcsparse_GrB_reload_config();
    tc_config_reload();
}

void tg_unsetenv(const char *name)
{
    unsetenv(name);
    tcsparse_GrB_reload_config();
    tc_config_reload();
}
