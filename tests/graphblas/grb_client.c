/* An ordinary SuiteSparse:GraphBLAS program, linked with -lgraphblas only (no tcsparse):
 * C = A*B (A sparse with empty rows, B full) and C<M> = X*Y' (structural mask), each
 * checked against a reference computed here in double.  test-grb-preload.sh runs it with
 * and without libtcsparse_grb_preload.so.  Prints "grb_client: ok" and exits 0 when every
 * result is right, 1 otherwise. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <GraphBLAS.h>

#define CHECK(call)                                                                            \
    do {                                                                                       \
        GrB_Info i_ = (call);                                                                  \
        if (i_ != GrB_SUCCESS) {                                                               \
            fprintf(stderr, "grb_client: %s failed (%d)\n", #call, (int)i_);                   \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

enum { M_ = 300, K_ = 200, N_ = 32 };

static uint64_t state = 42;
static double urand(void)
{
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static float a[M_][K_], b[K_][N_], x[M_][N_], y[K_][N_];
static int a_has[M_][K_], m_has[M_][K_];

static GrB_Matrix dense(int rows, int cols, float *v)
{
    GrB_Matrix D;
    CHECK(GrB_Matrix_new(&D, GrB_FP32, (GrB_Index)rows, (GrB_Index)cols));
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            CHECK(GrB_Matrix_setElement_FP32(D, v[i * cols + j], (GrB_Index)i, (GrB_Index)j));
    CHECK(GrB_Matrix_wait(D, GrB_MATERIALIZE));
    return D;
}

int main(void)
{
    CHECK(GrB_init(GrB_NONBLOCKING));
    GrB_Matrix A, B, X, Y, M, C, S;
    CHECK(GrB_Matrix_new(&A, GrB_FP32, M_, K_));
    CHECK(GrB_Matrix_new(&M, GrB_BOOL, M_, K_));
    for (int i = 0; i < M_; i++)
        for (int k = 0; k < K_; k++) {
            if (i % 7 != 2 && urand() < -0.8) { /* rows 2, 9, ... stay empty */
                a[i][k] = (float)urand();
                a_has[i][k] = 1;
                CHECK(GrB_Matrix_setElement_FP32(A, a[i][k], (GrB_Index)i, (GrB_Index)k));
            }
            if (urand() < -0.9) {
                m_has[i][k] = 1;
                CHECK(GrB_Matrix_setElement_BOOL(M, true, (GrB_Index)i, (GrB_Index)k));
            }
        }
    for (int k = 0; k < K_; k++)
        for (int j = 0; j < N_; j++) {
            b[k][j] = (float)urand();
            y[k][j] = (float)urand();
        }
    for (int i = 0; i < M_; i++)
        for (int j = 0; j < N_; j++)
            x[i][j] = (float)urand();
    B = dense(K_, N_, &b[0][0]);
    X = dense(M_, N_, &x[0][0]);
    Y = dense(K_, N_, &y[0][0]);
    CHECK(GrB_Matrix_new(&C, GrB_FP32, M_, N_));
    CHECK(GrB_Matrix_new(&S, GrB_FP32, M_, K_));

    int bad = 0;
    /* SpMM: rows of A without entries give rows of C without entries */
    CHECK(GrB_mxm(C, NULL, NULL, GrB_PLUS_TIMES_SEMIRING_FP32, A, B, NULL));
    double dd = 0, rr = 0;
    GrB_Index expect = 0, nv;
    for (int i = 0; i < M_; i++) {
        int any = 0;
        for (int k = 0; k < K_; k++)
            any |= a_has[i][k];
        for (int j = 0; j < N_; j++) {
            float got;
            GrB_Info info = GrB_Matrix_extractElement_FP32(&got, C, (GrB_Index)i, (GrB_Index)j);
            if (!any) {
                bad |= info != GrB_NO_VALUE;
                continue;
            }
            expect++;
            double s = 0;
            for (int k = 0; k < K_; k++)
                if (a_has[i][k])
                    s += (double)a[i][k] * b[k][j];
            bad |= info != GrB_SUCCESS;
            dd += (got - s) * (got - s);
            rr += s * s;
        }
    }
    CHECK(GrB_Matrix_nvals(&nv, C));
    bad |= nv != expect;
    if (bad || sqrt(dd / rr) > 1e-5) {
        fprintf(stderr, "grb_client: C = A*B wrong (pattern %s, error %.3e)\n",
                bad ? "wrong" : "right", sqrt(dd / rr));
        bad = 1;
    }

    /* SDDMM: S<M> = X*Y' */
    CHECK(GrB_mxm(S, M, NULL, GrB_PLUS_TIMES_SEMIRING_FP32, X, Y, GrB_DESC_ST1));
    dd = rr = 0;
    expect = 0;
    for (int i = 0; i < M_; i++)
        for (int k = 0; k < K_; k++) {
            float got;
            GrB_Info info = GrB_Matrix_extractElement_FP32(&got, S, (GrB_Index)i, (GrB_Index)k);
            if (!m_has[i][k]) {
                bad |= info != GrB_NO_VALUE;
                continue;
            }
            expect++;
            double s = 0;
            for (int j = 0; j < N_; j++)
                s += (double)x[i][j] * y[k][j];
            bad |= info != GrB_SUCCESS;
            dd += (got - s) * (got - s);
            rr += s * s;
        }
    CHECK(GrB_Matrix_nvals(&nv, S));
    bad |= nv != expect;
    if (bad || sqrt(dd / rr) > 1e-5) {
        fprintf(stderr, "grb_client: S<M> = X*Y' wrong (error %.3e)\n", sqrt(dd / rr));
        bad = 1;
    }

    GrB_Matrix_free(&A);
    GrB_Matrix_free(&B);
    GrB_Matrix_free(&X);
    GrB_Matrix_free(&Y);
    GrB_Matrix_free(&M);
    GrB_Matrix_free(&C);
    GrB_Matrix_free(&S);
    GrB_finalize();
    if (!bad)
        printf("grb_client: ok\n");
    return bad;
}
