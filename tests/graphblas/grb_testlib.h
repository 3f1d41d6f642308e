/* Shared by the GraphBLAS adapter's tests: matrices in every storage GraphBLAS has, exact
 * and tolerant comparison of GraphBLAS matrices, and one "case" (a GrB_mxm call with given
 * descriptor settings) run through GrB_mxm and tcsparse_GrB_mxm side by side. */
#ifndef TC_GRB_TESTLIB_H
#define TC_GRB_TESTLIB_H

#include <stddef.h>
#include <stdint.h>
#include <GraphBLAS.h>
#include "tcsparse_grb.h"
#include "gen.h"

/* GrB_init once per process (Criterion may run several tests in one worker). */
void tg_init(void);

/* Storage of a generated matrix. */
enum { TG_BYROW = 0, TG_BYCOL = 1, TG_HYPER = 2, TG_BITMAP = 3, TG_ISO = 4 };

/* rows x cols, about density of the entries present; every fifth row (from row 3) empty;
 * a few explicit zeros; values uniform in [-1, 1).  type FP32, FP64 or BOOL.  store: one
 * of the TG_* above (TG_ISO: every value 0.75). */
GrB_Matrix tg_sparse(GrB_Type type, GrB_Index rows, GrB_Index cols, double density,
                     uint64_t seed, int store);
/* Every entry present.  store: TG_BYROW (FullR), TG_BYCOL (FullC), TG_BITMAP, TG_ISO. */
GrB_Matrix tg_full(GrB_Type type, GrB_Index rows, GrB_Index cols, uint64_t seed, int store);
/* A GrB_Matrix (FP32 or FP64, by row) holding a generated / loaded tc_csr. */
GrB_Matrix tg_from_csr(const tc_csr *m, GrB_Type type);

/* 0 when X and Y have the same type, size and pattern and their values agree: exactly with
 * tol == 0, else with ||X - Y||_F <= tol ||Y||_F.  Otherwise 1 and a message. */
int tg_compare(GrB_Matrix X, GrB_Matrix Y, double tol, char *msg, size_t n);

enum { TG_SPMM = 0, TG_SDDMM = 1, TG_MASKED_SPMM = 2 };
enum { TG_ALIAS_NONE = 0, TG_ALIAS_B_IS_A = 1, TG_ALIAS_C_IS_M = 2, TG_ALIAS_C_IS_A = 3 };

typedef struct {
    int op;          /* TG_SPMM, TG_SDDMM, TG_MASKED_SPMM (a mask with sparse A: declined) */
    int fp64;        /* the FP64 semiring, FP64 operands */
    int tran_a, tran_b;
    int mask;        /* 0 none, 1 structural, 2 valued */
    int comp;        /* complemented mask */
    int replace;
    int accum;       /* C += A*B with GrB_PLUS of the semiring's type */
    int c_other;     /* C of another type than the semiring's (FP64 / FP32) */
    int c_init;      /* C starts with entries */
    int store_a, store_b, store_m;
    int user_sr;     /* semiring built by GrB_Semiring_new from PLUS monoid and TIMES */
    int alias;       /* TG_ALIAS_* */
    GrB_Index m, k, n;
    double density;
    uint64_t seed;
} tg_case;

/* Fills out[0..max) with the descriptor combinations the tests cover: every combination
 * of transposes, replace, accumulator, C's type and initial content, for SpMM; the same
 * times structural / valued and plain / complemented masks for SDDMM; masked SpMM (a case
 * the adapter declines); aliasing (C<M> = A*A', C<C> = ..., C = C*B); storage formats,
 * FP64 and user-built semirings rotating through them.  Sizes are odd: m x k times k x n
 * with m, k, n from dims (or 37, 23, 19 when dims is NULL).  Returns the count. */
int tg_all_cases(tg_case *out, int max, const GrB_Index dims[3]);

/* What the adapter should do with c when it can compute (accelerate = 1) or not. */
tcsparse_GrB_path_t tg_expected_path(const tg_case *c, int accelerate);
/* One-line description of c for messages. */
void tg_case_name(const tg_case *c, char *buf, size_t n);
/* Runs c through GrB_mxm and tcsparse_GrB_mxm on copies of the same inputs and checks: the
 * same GrB_Info; the path taken is tg_expected_path(c, accelerate); the outputs agree
 * (exactly when passed through, within tol when accelerated); the inputs are unchanged
 * (content, sparsity status and format).  Returns 0, or 1 with a message. */
int tg_run_case(const tg_case *c, int accelerate, double tol, char *msg, size_t n);

/* setenv / unsetenv, then the configuration read again: the adapter's (its library's
 * copy of the core, tcsparse_GrB_reload_config) and this program's own. */
void tg_setenv(const char *name, const char *value);
void tg_unsetenv(const char *name);

#endif
