/* The selector: which tensor-core kernel (base or balanced) by simulating the
 * thread-block schedule, and tensor cores or cuSPARSE by a cost model calibrated on the H100.
 * Pure host code: every device property (SMs, resident thread blocks per SM) is passed in,
 * so that the CPU tests and the refit helper (bench/fit_model.py) run without a GPU.
 * docs/selector.md explains the model, its coefficients and how to refit them. */
#ifndef TC_SELECT_H
#define TC_SELECT_H

#include <stdint.h>
#include "tcsparse_ext.h"

/* ---- schedule simulation ----------------------------------------------------------- */

/* Makespan of a greedy list schedule: jobs are dispatched in order, each to the slot that
 * frees first (what the GPU's block scheduler does with a grid), slots >= 1 identical
 * resident thread-block slots.  cost[i] >= 0 in any time unit. */
double tc_select_list_makespan(const double *cost, int64_t n, int64_t slots);

/* Window sizes (TC blocks per window) as classes of equal windows, rebuilt from the
 * statistics' histogram: the longest window exactly, the others spread inside their bucket
 * so that the classes add up to the plan's block count. */
#define TC_SEL_MAX_CLASSES 17
typedef struct {
    double size[TC_SEL_MAX_CLASSES];
    int64_t count[TC_SEL_MAX_CLASSES];
    int n;
} tc_sel_profile;

void tc_select_profile(const tcsparseMetcfStats_t *s, tc_sel_profile *p);

/* How one kernel's grid is cut: slices thread blocks along N per work item, and (balanced
 * kernel) chunks of at most chunk_blocks blocks of one window; chunk_blocks = 0 is the base
 * kernel (one work item per window).  Costs in "block steps": tb_overhead per thread block
 * plus one per TC block, plus split_overhead for a chunk of a window shared with others
 * (its atomic additions into C). */
typedef struct {
    int64_t slots;          /* SMs x resident thread blocks per SM */
    int slices;
    int64_t chunk_blocks;
    double tb_overhead, split_overhead;
} tc_sel_grid;

/* Simulated makespan (block steps) of the grid over the profile, windows of each class
 * spread evenly over the dispatch order (labels scattered, as in real graphs), slice by
 * slice as blockIdx.y is.  Large grids are simulated on a proportionally thinned instance
 * (jobs and slots divided by the same factor, at least TC_SEL_MIN_SLOTS slots kept).
 * *work, when not NULL, receives the total cost divided by the slots (the makespan of a
 * perfect balance).  Returns a negative value when out of memory. */
double tc_select_grid_makespan(const tc_sel_profile *p, const tc_sel_grid *g, double *work);

/* ---- decisions ----------------------------------------------------------------------- */

enum { TC_SEL_OP_SPMM = 0, TC_SEL_OP_SDDMM = 1 };
/* Coefficient sets of the tensor-core model: FP32 inputs in 3xTF32, plain TF32, 16-bit. */
enum { TC_SEL_P_3XTF32 = 0, TC_SEL_P_TF32 = 1, TC_SEL_P_F16 = 2, TC_SEL_NPREC = 3 };

/* One call's configuration: everything but the matrix statistics. */
typedef struct {
    int op;                   /* TC_SEL_OP_* */
    int prec;                 /* TC_SEL_P_* */
    int64_t N;                /* SpMM: columns of B and C; SDDMM: the inner dimension K */
    int ab_bytes, c_bytes;    /* element sizes: A/B values, C */
    int sm_count;             /* SMs of the device */
    int bps_base, bps_balanced; /* resident thread blocks per SM (occupancy API); <= 0:
                               * unknown, the H100 values measured by the fit are used */
    int warps;                /* warps per thread block of the tensor-core kernel */
    int slices;               /* thread blocks along N per work item (1 for SDDMM) */
    int64_t chunk_blocks;     /* the plan's balanced chunk length */
    int alg3_ok;              /* SpMM: the cuSPARSE route may run CSR_ALG3 (CSR, ALG_DEFAULT
                               * asked, FP32): the model then also predicts that algorithm */
    int csr_ok;               /* the CUDA-core CSR kernel of op takes the call (table.c) */
    int cc;                   /* the device's compute capability x 10: the coefficient set
                               * (select.c); 0 or a GPU without a set: the first set */
} tc_sel_config;

/* Features of the cost model (all linear: prediction = coefficients . features, in us). */
#define TC_SEL_NX 8 /* tensor-core kernel */
#define TC_SEL_NY 6 /* cuSPARSE */

typedef struct {
    double mk_base, mk_balanced;     /* simulated makespans, block steps */
    double work_base, work_balanced; /* the same under perfect balance */
    double balance_ratio;            /* mk_base / mk_balanced */
    int balanced;                    /* balance_ratio > the threshold */
    double x_base[TC_SEL_NX], x_balanced[TC_SEL_NX], y_cusparse[TC_SEL_NY];
    double us_base, us_balanced;     /* predicted times of the tensor-core kernels */
    double us_cusparse_default;      /* cuSPARSE with the algorithm asked (ALG_DEFAULT) */
    double us_cusparse_alg3;         /* cuSPARSE CSR_ALG3, preprocessed; -1: not considered */
    int use_alg3;                    /* the cuSPARSE route runs CSR_ALG3 (see TC_SEL_ALG3_*) */
    double us_cusparse;              /* the cuSPARSE route's prediction (the chosen algorithm) */
    double us_tc;                    /* of the kernel the simulation chose */
    int use_tc;                      /* us_tc * the gain margin < us_cusparse */
    int sm_count, bps_base, bps_balanced; /* what the simulation used */
    int64_t chunk_blocks;
} tc_sel_result;

/* Balanced when the base kernel's simulated makespan exceeds the balanced kernel's by more
 * than this factor.  DTC-SpMM uses 1.2 on its GPU; on the H100 data (docs/selector.md) 1.1 is
 * the best of the sweep for SpMM (53 of 54 within 1.05x of the faster kernel) and SDDMM. */
#define TC_SEL_BALANCE_THRESHOLD 1.1
/* Tensor cores only when predicted faster than cuSPARSE by this factor.  SpMM: 1.1 while
 * the routed path carried 2-4.5 us of host work per call; with that gone, the sweep over the
 * 993 measured H100 cases (bench/fit_model.py --margin) puts 1.0 first (85.6% of cases
 * within 1.05 of the best path, 94.3% within 1.15; 1.1: 84.5% / 92.8%).  SDDMM: best without
 * a margin. */
#define TC_SEL_GAIN_MARGIN 1.0
#define TC_SEL_GAIN_MARGIN_SDDMM 1.0
/* The cuSPARSE route of an FP32 CSR SpMM asked with ALG_DEFAULT runs CSR_ALG3 (with its own
 * preprocessed workspace, src/cusparse/fallback.c) when the model predicts ALG_DEFAULT under
 * TC_SEL_ALG3_MAX_US and CSR_ALG3 faster by TC_SEL_ALG3_MARGIN.  On the 1254 H100 cases of
 * docs/results, CSR_ALG3 is 1.3x faster than ALG_DEFAULT (geomean) on small matrices but up
 * to 2.3x slower on large FP32 ones (R-MAT, block-diagonal graphs) and 4.4x on 16-bit
 * inputs, which the linear model (19% error) does not separate: the limit keeps the choice
 * where it is safe
 * (bench/fit_model.py --alg3-max-us, --alg3-margin; docs/selector.md). */
#define TC_SEL_ALG3_MARGIN 1.0
#define TC_SEL_ALG3_MAX_US 60.0

/* The decision for the statistics s under configuration c.  Deterministic; results are
 * cached per thread (keyed by the whole statistics and configuration), so a repeated call
 * costs a comparison.  Returns 0, or -1 when out of memory (r then says cuSPARSE). */
int tc_select_decide(const tcsparseMetcfStats_t *s, const tc_sel_config *c, tc_sel_result *r);

/* ---- measured on the calls themselves ------------------------------------------------------
 * With the automatic route (and TCSPARSE_SELECT not "model"), the first executions of a kind of
 * SpMM or SDDMM call (N or K, types, math mode) on a plan run each candidate path
 * TC_SEL_EXPLORE_SAMPLES times between CUDA events, the model's choice first; the plan then
 * keeps the fastest (route.c).  Candidates are the paths the model predicts within
 * TC_SEL_EXPLORE_FACTOR of its fastest: the model's relative error reaches 1.7x on the H100
 * data (docs/selector.md). */
enum { TC_SEL_CAND_BASE = 0, TC_SEL_CAND_BALANCED = 1, TC_SEL_CAND_CUSPARSE = 2,
       TC_SEL_CAND_ALG3 = 3, TC_SEL_CAND_CSR = 4, TC_SEL_NCAND = 5 };
#define TC_SEL_EXPLORE_FACTOR 2.5
#define TC_SEL_EXPLORE_SAMPLES 3
/* The candidates for r (a decision for c), the model's own choice first; CSR_ALG3 is one
 * where c->alg3_ok, whatever its predicted time against TC_SEL_ALG3_MAX_US (measured, it
 * needs no safe limit), and the CUDA-core CSR kernel where c->csr_ok (the model has no
 * coefficients for it: always measured).  pred[TC_SEL_CAND_*] receives every path's
 * prediction (negative: not applicable or not modelled).  factor: TC_SEL_EXPLORE_FACTOR
 * unless a test widens it.  Returns the number of candidates written to cand (at most
 * TC_SEL_NCAND). */
int tc_select_explore_candidates(const tc_sel_config *c, const tc_sel_result *r, double factor,
                                 int cand[TC_SEL_NCAND], double pred[TC_SEL_NCAND]);

/* Prediction of each path from features with the coefficient set of compute capability cc
 * (x 10; tc_sel_config.cc), exposed for the tests and the refit helper. */
double tc_select_predict_tc(int cc, int op, int prec, const double *x);
double tc_select_predict_cusparse(int cc, int op, int ab_bytes, const double *y);
/* cuSPARSE CSR_ALG3 (SpMM, preprocessed), from the same features. */
double tc_select_predict_cusparse_alg3(int cc, int ab_bytes, const double *y);

/* Whether the cost model has a coefficient set fitted on this compute capability (select.c;
 * sm_90: the H100, whose SMs the H200 shares).  Elsewhere the automatic route measures every
 * candidate on the first executions of each kind of call instead of trusting the model's
 * ranking (docs/selector.md, "Another GPU"). */
int tc_select_fitted(int cc_major, int cc_minor);

/* H100 occupancy assumed where the device's is unknown (no GPU: tests, refit). */
int tc_select_h100_bps(int op, int prec, int warps, int balanced);

/* The plan's balanced chunk length on a device of sm_count SMs (plan.c's rule, mirrored for
 * the offline refit; the router passes the plan's own value). */
int64_t tc_select_default_chunk_blocks(int64_t blocks, int sm_count);

/* ---- readable decisions ---------------------------------------------------------------- */

/* The router notes the predictions of the decision it is taking (negative: none) and
 * tc_route_record picks them up for tcsparseGetLastRoute; per thread, for one handle. */
void tc_select_note(const void *handle, double tc_us, double cusparse_us);
void tc_select_take(const void *handle, double *tc_us, double *cusparse_us);

#endif
