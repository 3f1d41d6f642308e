/* The selector: base or balanced kernel by simulating the thread-block schedule (as
 * DTC-SpMM's selector does, with the device's SM count and the kernels' occupancy), and
 * tensor cores or cuSPARSE by a linear cost model over counted bytes and the simulated
 * makespan, calibrated on the H100.  See docs/selector.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "select.h"
#include "metcf_rules.h"

/* Simulated instances are thinned to about this many thread blocks (each class of windows
 * and the slots divided by one factor), but never below TC_SEL_MIN_SLOTS slots, so the tail
 * of the schedule keeps its shape. */
#define TC_SEL_MAX_JOBS 4096
#define TC_SEL_MIN_SLOTS 16
/* Costs of the simulation in block steps: a thread block's fixed work (offsets, writing its
 * 16 x slice tile of C) and the atomic additions of a chunk of a shared window. */
#define TC_SEL_TB_OVERHEAD 2.0
#define TC_SEL_SPLIT_OVERHEAD 2.0

/* ---- coefficients ------------------------------------------------------------------------
 * One set per GPU the model was fitted on, by bench/fit_model.py from measurements of that GPU
 * (CSV files in docs/results): relative least squares with non-negative coefficients,
 * predictions in microseconds.  Refit (from the build directory, after `make`; statistics
 * cached in bench/stats.csv; docs/selector.md, "Another GPU"):
 *     python3 bench/fit_model.py --build . --update
 * which rewrites its GPU's set between the BEGIN/END lines below, keeping the others (without
 * --update it prints it).  A GPU without a set of its own is predicted with the first set
 * (tc_select_fitted says so; the route then measures every candidate).
 * Features (tc_sel_features): tensor cores x = [1, makespan/1e3, makespan*slice/128/1e3,
 * B MB, C MB, A MB, atomic MB, second launch]; cuSPARSE y = [1, distinct B MB, re-read B MB,
 * C MB, A MB, longest window's columns x N / 1e6]
 * (SDDMM: B MB, A MB, C and index MB in place of B, C, A; see docs/selector.md). */
typedef struct {
    int cc;                           /* compute capability x 10 (90: sm_90) */
    double tc_spmm[3][TC_SEL_NX];     /* by TC_SEL_P_*: 3xTF32, TF32, 16-bit */
    double cu_spmm[2][TC_SEL_NY];     /* 32-bit, 16-bit */
    double cu3_spmm[2][TC_SEL_NY];    /* cuSPARSE CSR_ALG3: 32-bit, 16-bit */
    double tc_sddmm[3][TC_SEL_NX];
    double cu_sddmm[2][TC_SEL_NY];
} tc_coef_set;
/* BEGIN COEFFICIENTS (bench/fit_model.py) */
/* sm_90: H100 80GB HBM3, 132 SMs */
static const tc_coef_set tc_coef_sm90 = {
    .cc = 90,
    /* tensor cores, SpMM: 3xTF32, TF32, 16-bit */
    .tc_spmm = {
        {6.84621, 483.001, 0, 0.0944163, 0.303866, 1.08846, 0, 4.67397},
        {5.7106, 675.301, 0, 0.0507521, 0.420758, 0.823957, 0, 4.35399},
        {7.59794, 406.351, 0, 0, 0.350695, 1.72855, 2.65072, 5.40083},
    },
    /* cuSPARSE SpMM: 32-bit, 16-bit */
    .cu_spmm = {
        {18.6472, 0.0834671, 0.0629586, 0.811059, 3.57246, 1.13035},
        {21.1635, 0.0625414, 0, 1.06642, 7.6148, 0},
    },
    /* cuSPARSE CSR_ALG3: 32-bit, 16-bit */
    .cu3_spmm = {
        {9.74843, 0.104315, 0.0619474, 1.20528, 1.00691, 7.04311},
        {8.28733, 0.0877522, 0, 1.69887, 2.2219, 104.758},
    },
    /* tensor cores, SDDMM: 3xTF32, TF32, 16-bit */
    .tc_sddmm = {
        {8.87904, 102.317, 323.497, 0.144448, 0.492375, 0.214915, 0, 0},
        {8.69569, 81.3074, 191.812, 0.131348, 0.470634, 0.0879838, 0, 0},
        {8.69569, 81.3074, 191.812, 0.131348, 0.470634, 0.0879838, 0, 0},
    },
    /* cuSPARSE SDDMM: 32-bit, 16-bit */
    .cu_sddmm = {
        {7.19172, 0.192978, 0.0192732, 1.77169, 0.483406, 40.2498},
        {7.19172, 0.192978, 0.0192732, 1.77169, 0.483406, 40.2498},
    },
};
static const tc_coef_set *const tc_coef_sets[] = {&tc_coef_sm90};
/* END COEFFICIENTS */

/* The set fitted on compute capability cc (x 10), or NULL. */
static const tc_coef_set *tc_coef_exact(int cc)
{
    for (size_t i = 0; i < sizeof tc_coef_sets / sizeof tc_coef_sets[0]; i++)
        if (tc_coef_sets[i]->cc == cc)
            return tc_coef_sets[i];
    return NULL;
}

/* The set that predicts for cc: its own, else the first (0: not known). */
static const tc_coef_set *tc_coef_for(int cc)
{
    const tc_coef_set *s = tc_coef_exact(cc);
    return s != NULL ? s : tc_coef_sets[0];
}

/* ---- schedule simulation ------------------------------------------------------------- */

static void heap_down(double *h, int64_t n, int64_t i)
{
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && h[l] < h[m])
            m = l;
        if (r < n && h[r] < h[m])
            m = r;
        if (m == i)
            return;
        double t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

double tc_select_list_makespan(const double *cost, int64_t n, int64_t slots)
{
    if (n <= 0)
        return 0.0;
    const int64_t m = slots < 1 ? 1 : slots < n ? slots : n;
    double *h = malloc(sizeof *h * (size_t)m);
    if (h == NULL)
        return -1.0;
    /* the first m jobs start at once; then each goes to the slot that frees first */
    for (int64_t i = 0; i < m; i++)
        h[i] = cost[i];
    for (int64_t i = m / 2 - 1; i >= 0; i--)
        heap_down(h, m, i);
    for (int64_t j = m; j < n; j++) {
        h[0] += cost[j];
        heap_down(h, m, 0);
    }
    double mk = 0.0;
    for (int64_t i = 0; i < m; i++)
        mk = h[i] > mk ? h[i] : mk;
    free(h);
    return mk;
}

void tc_select_profile(const tcsparseMetcfStats_t *s, tc_sel_profile *p)
{
    memset(p, 0, sizeof *p);
    const int64_t maxb = s->max_blocks_per_window;
    double lo[16], hi[16];
    int64_t n[16];
    int top = -1;
    for (int k = 0; k < 16; k++) {
        n[k] = s->blocks_per_window_hist[k] > 0 ? s->blocks_per_window_hist[k] : 0;
        if (n[k] > 0)
            top = k;
        if (k <= 2) {
            lo[k] = hi[k] = k;
        } else {
            lo[k] = (double)((1ll << (k - 2)) + 1);
            hi[k] = k == 15 ? (double)maxb : (double)(1ll << (k - 1));
        }
        if (hi[k] > (double)maxb)
            hi[k] = (double)maxb;
        if (lo[k] > hi[k])
            lo[k] = hi[k];
    }
    double rest = (double)s->blocks, lo_sum = 0.0, span = 0.0;
    if (top >= 0 && maxb > 0) { /* the longest window, exactly */
        n[top]--;
        p->size[p->n] = (double)maxb;
        p->count[p->n++] = 1;
        rest -= (double)maxb;
    }
    for (int k = 0; k < 16; k++) {
        lo_sum += (double)n[k] * lo[k];
        span += (double)n[k] * (hi[k] - lo[k]);
    }
    double f = span > 0.0 ? (rest - lo_sum) / span : 0.0;
    f = f < 0.0 ? 0.0 : f > 1.0 ? 1.0 : f;
    for (int k = 0; k < 16; k++)
        if (n[k] > 0) {
            p->size[p->n] = lo[k] + f * (hi[k] - lo[k]);
            p->count[p->n++] = n[k];
        }
}

/* Thread blocks (chunks) of one window of the given size. */
static int64_t chunks_of(double size, int64_t chunk_blocks)
{
    if (chunk_blocks <= 0 || size <= (double)chunk_blocks)
        return 1;
    return (int64_t)ceil(size / (double)chunk_blocks - 1e-9);
}

double tc_select_grid_makespan(const tc_sel_profile *p, const tc_sel_grid *g, double *work)
{
    const int64_t slots = g->slots < 1 ? 1 : g->slots;
    const int S = g->slices < 1 ? 1 : g->slices;
    int64_t windows = 0;
    for (int k = 0; k < p->n; k++)
        windows += p->count[k];
    if (work)
        *work = 0.0;
    if (windows == 0)
        return 0.0;
    double f = (double)windows * S / TC_SEL_MAX_JOBS, fmax = (double)slots / TC_SEL_MIN_SLOTS;
    f = f > fmax ? fmax : f;
    f = f < 1.0 ? 1.0 : f;
    int64_t m[TC_SEL_MAX_CLASSES], nch[TC_SEL_MAX_CLASSES], per_slice = 0, wins = 0;
    for (int k = 0; k < p->n; k++) {
        m[k] = p->count[k] > 0 ? llround((double)p->count[k] / f) : 0;
        if (p->count[k] > 0 && m[k] < 1)
            m[k] = 1;
        nch[k] = chunks_of(p->size[k], g->chunk_blocks);
        per_slice += m[k] * nch[k];
        wins += m[k];
    }
    int64_t sl = llround((double)slots / f);
    sl = sl < 1 ? 1 : sl;
    double *cost = malloc(sizeof *cost * (size_t)(per_slice * S));
    if (cost == NULL)
        return -1.0;
    /* dispatch order: window i of a class of m sits at (i + 0.5) / m of the grid */
    int64_t next[TC_SEL_MAX_CLASSES] = {0}, j = 0;
    for (int64_t w = 0; w < wins; w++) {
        int best = -1;
        double bpos = 2.0;
        for (int k = 0; k < p->n; k++) {
            if (next[k] >= m[k])
                continue;
            double pos = ((double)next[k] + 0.5) / (double)m[k];
            if (pos < bpos) {
                bpos = pos;
                best = k;
            }
        }
        next[best]++;
        const double size = p->size[best];
        const int split = nch[best] > 1;
        for (int64_t c = 0; c < nch[best]; c++) {
            double len = split ? (c + 1 < nch[best] ? (double)g->chunk_blocks
                                                    : size - (double)g->chunk_blocks * c)
                               : size;
            cost[j++] = g->tb_overhead + len + (split ? g->split_overhead : 0.0);
        }
    }
    for (int s = 1; s < S; s++)
        memcpy(cost + s * per_slice, cost, sizeof *cost * (size_t)per_slice);
    double total = 0.0;
    for (int64_t i = 0; i < per_slice * S; i++)
        total += cost[i];
    if (work)
        *work = total / (double)sl;
    double mk = tc_select_list_makespan(cost, per_slice * S, sl);
    free(cost);
    return mk;
}

/* ---- configuration helpers ------------------------------------------------------------- */

int64_t tc_select_default_chunk_blocks(int64_t blocks, int sm_count)
{
    return tc_default_chunk_blocks(blocks, sm_count); /* the conversion's rule */
}

/* Resident thread blocks per SM on the H100 (65536 registers, 64 warps, 32 blocks, 228 KB
 * shared memory per SM) from the kernels' register counts (docs/performance.md, "Kernel
 * resources"): SpMM TF32 64 (72 balanced), 3xTF32 93, 16-bit 90 registers, 5.4 KB shared;
 * SDDMM (the pipelined kernel, kernels/sddmm/sddmm_kernel_pipe.cuh) 4 warps, 6 blocks
 * (3xTF32: 5, by registers; 5 by shared memory from FP32 K > 160). */
int tc_select_fitted(int cc_major, int cc_minor)
{
    return tc_coef_exact(cc_major * 10 + cc_minor) != NULL;
}

int tc_select_h100_bps(int op, int prec, int warps, int balanced)
{
    if (op == TC_SEL_OP_SDDMM)
        return prec == TC_SEL_P_3XTF32 ? 5 : 6;
    const int regs = prec == TC_SEL_P_TF32 ? (balanced ? 72 : 64) : prec == TC_SEL_P_F16 ? 90 : 93;
    const int per_warp = (regs * 32 + 255) / 256 * 256;
    int w = 65536 / per_warp;
    w = w > 64 ? 64 : w;
    warps = warps < 1 ? 1 : warps;
    int b = w / warps;
    const int by_smem = 228 * 1024 / (5530 + 1024);
    b = b > by_smem ? by_smem : b;
    return b > 32 ? 32 : b < 1 ? 1 : b;
}

/* ---- features and predictions ------------------------------------------------------------ */

static double tc_sel_dot(const double *c, const double *x, int n)
{
    double t = 0.0;
    for (int i = 0; i < n; i++)
        t += c[i] * x[i];
    return t;
}

double tc_select_predict_tc(int cc, int op, int prec, const double *x)
{
    const tc_coef_set *k = tc_coef_for(cc);
    prec = prec < 0 || prec >= TC_SEL_NPREC ? TC_SEL_P_3XTF32 : prec;
    return tc_sel_dot(op == TC_SEL_OP_SDDMM ? k->tc_sddmm[prec] : k->tc_spmm[prec], x,
                      TC_SEL_NX);
}

double tc_select_predict_cusparse(int cc, int op, int ab_bytes, const double *y)
{
    const tc_coef_set *k = tc_coef_for(cc);
    const int c = ab_bytes == 2;
    return tc_sel_dot(op == TC_SEL_OP_SDDMM ? k->cu_sddmm[c] : k->cu_spmm[c], y, TC_SEL_NY);
}

double tc_select_predict_cusparse_alg3(int cc, int ab_bytes, const double *y)
{
    return tc_sel_dot(tc_coef_for(cc)->cu3_spmm[ab_bytes == 2], y, TC_SEL_NY);
}

/* Distinct (window, column) pairs: the B rows ME-TCF fetches.  Every non-empty window's last
 * block is on average half padding (3.5 of 8 columns). */
static double distinct_cols(const tcsparseMetcfStats_t *s)
{
    const double busy = (double)(s->windows - s->empty_windows);
    double d = 8.0 * (double)s->blocks - 3.5 * busy;
    const double lo = 8.0 * (double)s->blocks - 7.0 * busy;
    const double hi = (double)s->nnz < 8.0 * (double)s->blocks ? (double)s->nnz : 8.0 * (double)s->blocks;
    d = d < lo ? lo : d;
    return d > hi ? hi : d < 0.0 ? 0.0 : d;
}

/* Chunks of windows shared by several chunks (each adds its tile into C atomically). */
static double split_chunks(const tc_sel_profile *p, int64_t chunk_blocks)
{
    double n = 0.0;
    for (int k = 0; k < p->n; k++) {
        int64_t c = chunks_of(p->size[k], chunk_blocks);
        if (c > 1)
            n += (double)c * (double)p->count[k];
    }
    return n;
}

static void tc_sel_features(const tcsparseMetcfStats_t *s, const tc_sel_config *c,
                            const tc_sel_profile *p, int64_t chunk_blocks, tc_sel_result *r)
{
    const double N = (double)c->N, ab = c->ab_bytes, cb = c->c_bytes, MB = 1e6;
    const double dcols = distinct_cols(s), nnz = (double)s->nnz;
    const double busy = (double)(s->windows - s->empty_windows);
    double slice = N;
    if (c->op == TC_SEL_OP_SPMM && c->slices > 1)
        slice = ceil(N / c->slices);
    for (int b = 0; b < 2; b++) {
        double *x = b ? r->x_balanced : r->x_base;
        const double mk = b ? r->mk_balanced : r->mk_base;
        x[0] = 1.0;
        x[1] = mk / 1e3;
        x[2] = mk * slice / 128.0 / 1e3;
        if (c->op == TC_SEL_OP_SPMM) {
            x[3] = dcols * N * ab / MB;
            x[4] = (double)s->rows * N * cb / MB;
            x[5] = ((double)s->metcf_bytes + nnz * ab) / MB;
            const double split = b ? split_chunks(p, chunk_blocks) : 0.0;
            x[6] = split * 16.0 * N * (cb == 2 ? 2.0 : 4.0) / MB;
            x[7] = split > 0.0; /* the balanced kernel's beta pass: a second launch */
        } else {
            x[3] = dcols * N * ab / MB;
            x[4] = busy * 16.0 * N * ab / MB;
            x[5] = ((double)s->metcf_bytes + 2.0 * nnz * cb) / MB;
            x[6] = x[7] = 0.0;
        }
    }
    double *y = r->y_cusparse;
    y[0] = 1.0;
    y[1] = dcols * N * ab / MB;
    y[2] = (nnz - dcols) * N * ab / MB;
    if (c->op == TC_SEL_OP_SPMM) {
        y[3] = (double)s->rows * N * cb / MB;
        y[4] = ((double)s->csr_bytes + nnz * ab) / MB;
    } else {
        y[3] = (double)s->rows * N * ab / MB;
        y[4] = ((double)s->csr_bytes + 2.0 * nnz * cb) / MB;
    }
    /* the longest window's columns times N: the serial work of cuSPARSE's longest rows */
    y[5] = (double)s->max_blocks_per_window * 8.0 * N / 1e6;
}

/* ---- the decision, cached per thread ---------------------------------------------------- */

typedef struct {
    int used;
    tcsparseMetcfStats_t s;
    tc_sel_config c;
    tc_sel_result r;
} tc_sel_cached;

#define TC_SEL_CACHE 8
static _Thread_local tc_sel_cached tc_sel_cache[TC_SEL_CACHE];
static _Thread_local int tc_sel_cache_next;

static int same_config(const tc_sel_config *a, const tc_sel_config *b)
{
    return a->op == b->op && a->prec == b->prec && a->N == b->N && a->ab_bytes == b->ab_bytes &&
           a->c_bytes == b->c_bytes && a->sm_count == b->sm_count &&
           a->bps_base == b->bps_base && a->bps_balanced == b->bps_balanced &&
           a->warps == b->warps && a->slices == b->slices && a->chunk_blocks == b->chunk_blocks &&
           a->alg3_ok == b->alg3_ok && a->cc == b->cc;
}

int tc_select_decide(const tcsparseMetcfStats_t *s, const tc_sel_config *c, tc_sel_result *r)
{
    for (int i = 0; i < TC_SEL_CACHE; i++) {
        const tc_sel_cached *e = &tc_sel_cache[i];
        if (e->used && same_config(&e->c, c) && memcmp(&e->s, s, sizeof *s) == 0) {
            *r = e->r;
            return 0;
        }
    }
    memset(r, 0, sizeof *r);
    tc_sel_profile p;
    tc_select_profile(s, &p);
    const int sm = c->sm_count > 0 ? c->sm_count : 132;
    const int bb = c->bps_base > 0 ? c->bps_base : tc_select_h100_bps(c->op, c->prec, c->warps, 0);
    const int bl = c->bps_balanced > 0 ? c->bps_balanced
                                       : tc_select_h100_bps(c->op, c->prec, c->warps, 1);
    const int64_t ch = c->chunk_blocks > 0 ? c->chunk_blocks
                                           : tc_select_default_chunk_blocks(s->blocks, sm);
    const tc_sel_grid gb = {(int64_t)sm * bb, c->slices, 0, TC_SEL_TB_OVERHEAD, TC_SEL_SPLIT_OVERHEAD};
    const tc_sel_grid gl = {(int64_t)sm * bl, c->slices, ch, TC_SEL_TB_OVERHEAD, TC_SEL_SPLIT_OVERHEAD};
    r->mk_base = tc_select_grid_makespan(&p, &gb, &r->work_base);
    r->mk_balanced = tc_select_grid_makespan(&p, &gl, &r->work_balanced);
    if (r->mk_base < 0.0 || r->mk_balanced < 0.0) {
        memset(r, 0, sizeof *r);
        return -1;
    }
    r->sm_count = sm;
    r->bps_base = bb;
    r->bps_balanced = bl;
    r->chunk_blocks = ch;
    r->balance_ratio = r->mk_balanced > 0.0 ? r->mk_base / r->mk_balanced : 1.0;
    r->balanced = r->balance_ratio > TC_SEL_BALANCE_THRESHOLD;
    tc_sel_features(s, c, &p, ch, r);
    r->us_base = tc_select_predict_tc(c->cc, c->op, c->prec, r->x_base);
    r->us_balanced = tc_select_predict_tc(c->cc, c->op, c->prec, r->x_balanced);
    r->us_cusparse_default = tc_select_predict_cusparse(c->cc, c->op, c->ab_bytes, r->y_cusparse);
    r->us_cusparse = r->us_cusparse_default;
    r->us_cusparse_alg3 = -1.0;
    if (c->op == TC_SEL_OP_SPMM && c->alg3_ok && c->ab_bytes == 4 &&
        r->us_cusparse_default < TC_SEL_ALG3_MAX_US) {
        r->us_cusparse_alg3 = tc_select_predict_cusparse_alg3(c->cc, c->ab_bytes, r->y_cusparse);
        r->use_alg3 = r->us_cusparse_alg3 * TC_SEL_ALG3_MARGIN < r->us_cusparse_default;
        if (r->use_alg3)
            r->us_cusparse = r->us_cusparse_alg3;
    }
    r->us_tc = r->balanced ? r->us_balanced : r->us_base;
    const double margin = c->op == TC_SEL_OP_SDDMM ? TC_SEL_GAIN_MARGIN_SDDMM : TC_SEL_GAIN_MARGIN;
    r->use_tc = r->us_tc * margin < r->us_cusparse;
    tc_sel_cached *e = &tc_sel_cache[tc_sel_cache_next];
    tc_sel_cache_next = (tc_sel_cache_next + 1) % TC_SEL_CACHE;
    e->used = 1;
    e->s = *s;
    e->c = *c;
    e->r = *r;
    return 0;
}

/* ---- candidates of the measured-on-calls selection ----------------------------------------- */

int tc_select_explore_candidates(const tc_sel_config *c, const tc_sel_result *r, double factor,
                                 int cand[TC_SEL_NCAND], double pred[TC_SEL_NCAND])
{
    pred[TC_SEL_CAND_BASE] = r->us_base;
    pred[TC_SEL_CAND_BALANCED] = r->us_balanced;
    pred[TC_SEL_CAND_CUSPARSE] = r->us_cusparse_default;
    pred[TC_SEL_CAND_ALG3] = -1.0;
    pred[TC_SEL_CAND_CSR] = -1.0; /* no model: a candidate wherever it takes the call */
    if (c->op == TC_SEL_OP_SPMM && c->alg3_ok && c->ab_bytes == 4)
        pred[TC_SEL_CAND_ALG3] = r->us_cusparse_alg3 >= 0.0
                                     ? r->us_cusparse_alg3
                                     : tc_select_predict_cusparse_alg3(c->cc, c->ab_bytes, r->y_cusparse);
    const int first = r->use_tc ? (r->balanced ? TC_SEL_CAND_BALANCED : TC_SEL_CAND_BASE)
                                : (r->use_alg3 ? TC_SEL_CAND_ALG3 : TC_SEL_CAND_CUSPARSE);
    double best = -1.0;
    for (int k = 0; k < TC_SEL_NCAND; k++)
        if (pred[k] >= 0.0 && (best < 0.0 || pred[k] < best))
            best = pred[k];
    int n = 0;
    cand[n++] = first;
    for (int k = 0; k < TC_SEL_NCAND; k++)
        if (k != first && pred[k] >= 0.0 && pred[k] <= factor * best)
            cand[n++] = k;
    if (c->csr_ok)
        cand[n++] = TC_SEL_CAND_CSR;
    return n;
}

/* ---- predictions for tcsparseGetLastRoute ------------------------------------------------ */

static _Thread_local const void *tc_sel_note_handle;
static _Thread_local double tc_sel_note_tc = -1.0, tc_sel_note_cu = -1.0;

void tc_select_note(const void *handle, double tc_us, double cusparse_us)
{
    tc_sel_note_handle = handle;
    tc_sel_note_tc = tc_us;
    tc_sel_note_cu = cusparse_us;
}

void tc_select_take(const void *handle, double *tc_us, double *cusparse_us)
{
    const int mine = handle != NULL && handle == tc_sel_note_handle;
    *tc_us = mine ? tc_sel_note_tc : -1.0;
    *cusparse_us = mine ? tc_sel_note_cu : -1.0;
    tc_sel_note_handle = NULL;
}

/* ---- refit helper ------------------------------------------------------------------------
 * Built as bench/tcsparse-select-features (src/route/local.am); bench/fit_model.py feeds it one
 * configuration and statistics per line:
 *   op prec N ab_bytes c_bytes sm bps_base bps_balanced warps slices chunk_blocks
 *   rows cols nnz windows empty_windows blocks max_blocks metcf_bytes csr_bytes hist[16]
 * (bps, chunk_blocks 0: the H100 / plan defaults) and reads back the simulation, the
 * features and the compiled-in model's predictions. */
#ifdef TC_SELECT_MAIN
/* tcsparse-select-features [CC]: the features and the predictions of the coefficient set of
 * compute capability CC (x 10, default 90) for each configuration line on stdin. */
int main(int argc, char **argv)
{
    const int cc = argc > 1 ? atoi(argv[1]) : 90;
    char line[4096];
    while (fgets(line, sizeof line, stdin)) {
        tc_sel_config c;
        tcsparseMetcfStats_t s;
        long long v[36];
        int n = 0;
        char *q = line, *end;
        memset(&c, 0, sizeof c);
        memset(&s, 0, sizeof s);
        while (n < 36) {
            long long x = strtoll(q, &end, 10);
            if (end == q)
                break;
            v[n++] = x;
            q = end;
        }
        if (n != 36) {
            fprintf(stderr, "tcsparse-select-features: expected 36 integers per line\n");
            return 2;
        }
        c.op = (int)v[0], c.prec = (int)v[1], c.N = v[2], c.ab_bytes = (int)v[3];
        c.c_bytes = (int)v[4], c.sm_count = (int)v[5], c.bps_base = (int)v[6];
        c.bps_balanced = (int)v[7], c.warps = (int)v[8], c.slices = (int)v[9];
        c.chunk_blocks = v[10];
        c.cc = cc;
        s.rows = v[11], s.cols = v[12], s.nnz = v[13], s.windows = v[14];
        s.empty_windows = v[15], s.blocks = v[16], s.max_blocks_per_window = v[17];
        s.metcf_bytes = v[18], s.csr_bytes = v[19];
        for (int k = 0; k < 16; k++)
            s.blocks_per_window_hist[k] = v[20 + k];
        s.mean_nnz_per_block = s.blocks ? (double)s.nnz / (double)s.blocks : 0.0;
        s.mean_blocks_per_window = s.windows ? (double)s.blocks / (double)s.windows : 0.0;
        tc_sel_result r;
        if (tc_select_decide(&s, &c, &r) != 0)
            return 1;
        printf("%.6g %.6g %.6g %.6g %.6g %d", r.mk_base, r.mk_balanced, r.work_base,
               r.work_balanced, r.balance_ratio, r.balanced);
        for (int i = 0; i < TC_SEL_NX; i++)
            printf(" %.9g", r.x_base[i]);
        for (int i = 0; i < TC_SEL_NX; i++)
            printf(" %.9g", r.x_balanced[i]);
        for (int i = 0; i < TC_SEL_NY; i++)
            printf(" %.9g", r.y_cusparse[i]);
        printf(" %.6g %.6g %.6g %d\n", r.us_base, r.us_balanced, r.us_cusparse, r.use_tc);
    }
    return 0;
}
#endif
