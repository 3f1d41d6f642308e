/* The selector on the CPU: the schedule simulation against hand-computed makespans, the
 * window profile rebuilt from statistics, and the model's decisions on fixed statistics
 * (real matrices' ME-TCF statistics from bench/stats.csv, H100 parameters); and the route's
 * reason text, formatted from the selector's numbers only when it is read or logged. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "error.h"
#include "route.h"
#include "select.h"

/* ---- greedy list schedule ------------------------------------------------------------ */

Test(select_sim, list_makespan_by_hand)
{
    /* 2 slots: 3|3 at 0, the third 3 at 3..6 on slot 0, the ones 3..4..5..6 on slot 1 */
    const double a[] = {3, 3, 3, 1, 1, 1};
    cr_assert_float_eq(tc_select_list_makespan(a, 6, 2), 6.0, 1e-12);
    /* the long job first: the short ones fill the other slot */
    const double b[] = {5, 1, 1, 1, 1, 1};
    cr_assert_float_eq(tc_select_list_makespan(b, 6, 2), 5.0, 1e-12);
    /* the long job last starts at 2: 2 + 5 */
    const double c[] = {1, 1, 1, 1, 1, 5};
    cr_assert_float_eq(tc_select_list_makespan(c, 6, 2), 7.0, 1e-12);
    /* more slots than jobs: the longest job; one slot: the sum; no job: 0 */
    cr_assert_float_eq(tc_select_list_makespan(c, 6, 100), 5.0, 1e-12);
    cr_assert_float_eq(tc_select_list_makespan(c, 6, 1), 10.0, 1e-12);
    cr_assert_float_eq(tc_select_list_makespan(c, 0, 4), 0.0, 1e-12);
    /* 3 slots, 7 jobs of 2 and one of 4: 2,2,2 | 2,2,2 | 2 and 4 -> 4 + 4 = 8 */
    const double d[] = {2, 2, 2, 2, 2, 2, 2, 4};
    cr_assert_float_eq(tc_select_list_makespan(d, 8, 3), 8.0, 1e-12);
}

/* 4 windows of 10 blocks and one of 40: the long one is dispatched third (position 0.5). */
static tc_sel_profile five_windows(void)
{
    tc_sel_profile p;
    memset(&p, 0, sizeof p);
    p.size[0] = 40;
    p.count[0] = 1;
    p.size[1] = 10;
    p.count[1] = 4;
    p.n = 2;
    return p;
}

Test(select_sim, grid_base_and_balanced_by_hand)
{
    const tc_sel_profile p = five_windows();
    double work;
    /* base, 2 slots: 10 | 10, then 40 on slot 0 (10..50), 10, 10 on slot 1 -> 50 */
    tc_sel_grid g = {2, 1, 0, 0.0, 0.0};
    cr_assert_float_eq(tc_select_grid_makespan(&p, &g, &work), 50.0, 1e-9);
    cr_assert_float_eq(work, 40.0, 1e-9);
    /* balanced, chunks of 10: eight jobs of 10 on 2 slots -> 40 */
    g.chunk_blocks = 10;
    cr_assert_float_eq(tc_select_grid_makespan(&p, &g, NULL), 40.0, 1e-9);
    /* split chunks cost one more: 10 | 10, 11 | 11, 11 | 11, 10 | 10 -> 42 */
    g.split_overhead = 1.0;
    cr_assert_float_eq(tc_select_grid_makespan(&p, &g, NULL), 42.0, 1e-9);
    /* base with 2 per thread block: 12 | 12, 42 on slot 0 -> 54 */
    tc_sel_grid b = {2, 1, 0, 2.0, 1.0};
    cr_assert_float_eq(tc_select_grid_makespan(&p, &b, NULL), 54.0, 1e-9);
    /* two slices, dispatched slice after slice: slot 0 10, 40 (50); slot 1 10,10,10,10 (50);
     * the second slice's 40 at 50..90, its 10s on the other slot -> 90 */
    tc_sel_grid s2 = {2, 2, 0, 0.0, 0.0};
    cr_assert_float_eq(tc_select_grid_makespan(&p, &s2, &work), 90.0, 1e-9);
    cr_assert_float_eq(work, 80.0, 1e-9);
    /* enough slots for every thread block: the longest */
    tc_sel_grid wide = {64, 1, 0, 0.0, 0.0};
    cr_assert_float_eq(tc_select_grid_makespan(&p, &wide, NULL), 40.0, 1e-9);
}

Test(select_sim, thinned_instance_keeps_the_makespan)
{
    /* 100000 equal windows of 8 blocks on 1000 slots: exactly 100 waves of 8 = 800 */
    tc_sel_profile p;
    memset(&p, 0, sizeof p);
    p.size[0] = 8;
    p.count[0] = 100000;
    p.n = 1;
    tc_sel_grid g = {1000, 1, 0, 0.0, 0.0};
    double work, mk = tc_select_grid_makespan(&p, &g, &work);
    cr_assert(fabs(mk - 800.0) <= 8.0, "makespan %g", mk);
    cr_assert(fabs(work - 800.0) <= 8.0, "work %g", work);
}

/* ---- statistics ---------------------------------------------------------------------- */

typedef struct {
    int64_t rows, cols, nnz, windows, empty, blocks, maxb, metcf, csr;
    int64_t hist[16];
} stat_row;

/* From bench/stats.csv (tools/tcsparse-inspect --csv). */
static const stat_row notre_dame = {325729, 325729, 929849, 20359, 7467, 62163, 58, 6968557, 5022316,
                                    {7467, 2777, 1515, 2919, 3939, 1417, 315, 10}};
static const stat_row rmat20 = {1048576, 1048576, 16084283, 65536, 0, 2022868, 4924, 153506815, 68531440,
                                {0, 153, 1012, 4415, 12277, 18596, 13062, 9527, 4895, 508, 881, 188, 21, 0, 1, 0}};
static const stat_row uniform256 = {262144, 262144, 67108864, 16384, 0, 8334533, 511, 635653052, 269484036,
                                    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16384}};
static const stat_row ogbl_ddi = {4267, 4267, 2135822, 267, 0, 82496, 420, 13650042, 8560360,
                                  {0, 0, 0, 0, 0, 0, 0, 2, 1, 40, 224}};
static const stat_row proteins64 = {2782144, 2782144, 10373632, 173884, 0, 823764, 16, 82219208, 52623108,
                                    {0, 0, 140, 78392, 94804, 548}};

static const stat_row ca_hepth = {9877, 9877, 51946, 618, 0, 6623, 24, 500638, 247296,
                                  {0, 0, 1, 3, 153, 429, 32}};

static tcsparseMetcfStats_t stats_of(const stat_row *r)
{
    tcsparseMetcfStats_t s;
    memset(&s, 0, sizeof s);
    s.rows = r->rows, s.cols = r->cols, s.nnz = r->nnz, s.windows = r->windows;
    s.empty_windows = r->empty, s.blocks = r->blocks, s.max_blocks_per_window = r->maxb;
    s.metcf_bytes = r->metcf, s.csr_bytes = r->csr;
    memcpy(s.blocks_per_window_hist, r->hist, sizeof r->hist);
    s.mean_nnz_per_block = (double)s.nnz / (double)s.blocks;
    s.mean_blocks_per_window = (double)s.blocks / (double)s.windows;
    return s;
}

Test(select_profile, classes_add_up_to_the_statistics)
{
    const stat_row *rows[] = {&notre_dame, &rmat20, &uniform256, &ogbl_ddi, &proteins64};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        tcsparseMetcfStats_t s = stats_of(rows[i]);
        tc_sel_profile p;
        tc_select_profile(&s, &p);
        double blocks = 0.0, biggest = 0.0;
        int64_t windows = 0;
        for (int k = 0; k < p.n; k++) {
            blocks += p.size[k] * (double)p.count[k];
            windows += p.count[k];
            biggest = p.size[k] > biggest ? p.size[k] : biggest;
        }
        cr_assert_eq(windows, s.windows, "case %zu", i);
        cr_assert(fabs(blocks - (double)s.blocks) <= 1e-6 * (double)s.blocks, "case %zu: %g blocks", i, blocks);
        cr_assert_float_eq(biggest, (double)s.max_blocks_per_window, 1e-9, "case %zu", i);
    }
    tcsparseMetcfStats_t empty;
    memset(&empty, 0, sizeof empty);
    tc_sel_profile p;
    tc_select_profile(&empty, &p);
    cr_assert_eq(p.n, 0);
}

Test(select_config, h100_occupancy_and_chunks)
{
    /* 64 registers x 128 threads: 8 blocks; 72 (balanced): 7; 93 -> 96: 5; one warp: 21 */
    cr_assert_eq(tc_select_h100_bps(TC_SEL_OP_SPMM, TC_SEL_P_TF32, 4, 0), 8);
    cr_assert_eq(tc_select_h100_bps(TC_SEL_OP_SPMM, TC_SEL_P_TF32, 4, 1), 7);
    cr_assert_eq(tc_select_h100_bps(TC_SEL_OP_SPMM, TC_SEL_P_3XTF32, 4, 0), 5);
    cr_assert_eq(tc_select_h100_bps(TC_SEL_OP_SPMM, TC_SEL_P_3XTF32, 1, 0), 21);
    /* the pipelined SDDMM kernel: 6 blocks (TF32, FP16), 5 (3xTF32, by registers) */
    cr_assert_eq(tc_select_h100_bps(TC_SEL_OP_SDDMM, TC_SEL_P_TF32, 4, 0), 6);
    cr_assert_eq(tc_select_h100_bps(TC_SEL_OP_SDDMM, TC_SEL_P_3XTF32, 4, 0), 5);
    cr_assert_eq(tc_select_default_chunk_blocks(2022868, 132), 128);
    cr_assert_eq(tc_select_default_chunk_blocks(82496, 132), 32);
    cr_assert_eq(tc_select_default_chunk_blocks(1000, 132), 16);
}

/* ---- decisions ------------------------------------------------------------------------- */

static tc_sel_config spmm_cfg(int prec, int64_t N)
{
    tc_sel_config c;
    memset(&c, 0, sizeof c);
    c.op = TC_SEL_OP_SPMM;
    c.prec = prec;
    c.N = N;
    c.ab_bytes = c.c_bytes = prec == TC_SEL_P_F16 ? 2 : 4;
    c.sm_count = 132;
    const int warp_n = prec == TC_SEL_P_F16 ? 64 : 32;
    c.warps = (int)((N + warp_n - 1) / warp_n);
    c.warps = c.warps > 4 ? 4 : c.warps;
    c.slices = (int)((N + warp_n * c.warps - 1) / (warp_n * c.warps));
    return c; /* bps and chunk_blocks 0: the H100's and plan.c's */
}

static tc_sel_result decide(const stat_row *row, int prec, int64_t N)
{
    tcsparseMetcfStats_t s = stats_of(row);
    tc_sel_config c = spmm_cfg(prec, N);
    tc_sel_result r;
    cr_assert_eq(tc_select_decide(&s, &c, &r), 0);
    cr_assert(r.us_base > 0 && r.us_balanced > 0 && r.us_cusparse > 0);
    return r;
}

Test(select_decide, measured_winners_on_the_h100)
{
    /* NotreDame_www, TF32, N = 128: TC base 0.181 ms, cuSPARSE 0.541 ms */
    tc_sel_result r = decide(&notre_dame, TC_SEL_P_TF32, 128);
    cr_assert(r.use_tc && !r.balanced, "ratio %.2f tc %.1f cu %.1f", r.balance_ratio, r.us_tc, r.us_cusparse);
    /* R-MAT 20, TF32, N = 128: hubs make the base kernel 2x slower than balanced (5.9 vs 3.1
     * ms) and cuSPARSE wins (1.66 ms) */
    r = decide(&rmat20, TC_SEL_P_TF32, 128);
    cr_assert(r.balanced && r.balance_ratio > 2.0, "ratio %.2f", r.balance_ratio);
    cr_assert(!r.use_tc, "tc %.1f cu %.1f", r.us_tc, r.us_cusparse);
    /* uniform 2^18 x 256 per row: equal windows, balancing only adds atomics (base 7.9 ms,
     * balanced 11.0 ms); cuSPARSE 9.6 ms */
    r = decide(&uniform256, TC_SEL_P_TF32, 128);
    cr_assert(!r.balanced && r.balance_ratio < 1.1, "ratio %.2f", r.balance_ratio);
    /* ogbl-ddi, FP32 (3xTF32), N = 32: balanced 0.069 ms, base 0.351, cuSPARSE 0.100 */
    r = decide(&ogbl_ddi, TC_SEL_P_3XTF32, 32);
    cr_assert(r.balanced && r.use_tc, "ratio %.2f tc %.1f cu %.1f", r.balance_ratio, r.us_tc, r.us_cusparse);
    /* PROTEINS_full x 64, FP32, N = 32: short windows, TC base 0.493 ms vs cuSPARSE 0.855 */
    r = decide(&proteins64, TC_SEL_P_3XTF32, 32);
    cr_assert(r.use_tc && !r.balanced, "ratio %.2f tc %.1f cu %.1f", r.balance_ratio, r.us_tc, r.us_cusparse);
    /* predictions within 25% of the measured times where the model was fitted */
    cr_assert(fabs(r.us_base / 493.0 - 1.0) < 0.25, "PROTEINS base %.1f us", r.us_base);
}

Test(select_decide, deterministic_and_cached)
{
    tcsparseMetcfStats_t s = stats_of(&rmat20);
    tc_sel_config c = spmm_cfg(TC_SEL_P_TF32, 128);
    tc_sel_result a, b, d;
    cr_assert_eq(tc_select_decide(&s, &c, &a), 0);
    cr_assert_eq(tc_select_decide(&s, &c, &b), 0); /* from the cache */
    cr_assert(memcmp(&a, &b, sizeof a) == 0);
    c.N = 256; /* another configuration is another entry */
    c.slices = 2;
    cr_assert_eq(tc_select_decide(&s, &c, &d), 0);
    cr_assert(d.us_cusparse > a.us_cusparse);
    /* the device's own occupancy replaces the assumed one: fewer slots, longer schedule */
    c = spmm_cfg(TC_SEL_P_TF32, 128);
    c.bps_base = c.bps_balanced = 2;
    cr_assert_eq(tc_select_decide(&s, &c, &d), 0);
    cr_assert(d.mk_base > a.mk_base && d.bps_base == 2, "%g vs %g", d.mk_base, a.mk_base);
}

/* One coefficient set per GPU fitted (sm_90 so far): another compute capability is not
 * "fitted" and is predicted with the first set. */
Test(select_decide, coefficient_sets_by_architecture)
{
    cr_expect(tc_select_fitted(9, 0));
    cr_expect(!tc_select_fitted(8, 0));
    cr_expect(!tc_select_fitted(8, 9));
    cr_expect(!tc_select_fitted(0, 0));
    const double x[TC_SEL_NX] = {1, 0.5, 0.1, 2, 1, 0.5, 0, 1};
    const double y[TC_SEL_NY] = {1, 3, 1, 1, 0.5, 0.2};
    for (int op = 0; op < 2; op++) {
        cr_expect_eq(tc_select_predict_tc(80, op, TC_SEL_P_TF32, x),
                     tc_select_predict_tc(90, op, TC_SEL_P_TF32, x));
        cr_expect_eq(tc_select_predict_cusparse(0, op, 4, y),
                     tc_select_predict_cusparse(90, op, 4, y));
    }
    cr_expect_eq(tc_select_predict_cusparse_alg3(86, 4, y),
                 tc_select_predict_cusparse_alg3(90, 4, y));
    cr_expect_gt(tc_select_predict_tc(90, TC_SEL_OP_SPMM, TC_SEL_P_3XTF32, x), 0.0);
}

Test(select_decide, sddmm_uses_its_own_model)
{
    tcsparseMetcfStats_t s = stats_of(&proteins64);
    tc_sel_config c;
    memset(&c, 0, sizeof c);
    c.op = TC_SEL_OP_SDDMM;
    c.prec = TC_SEL_P_TF32;
    c.N = 128;
    c.ab_bytes = c.c_bytes = 4;
    c.sm_count = 132;
    c.warps = 4;
    c.slices = 1;
    tc_sel_result r;
    cr_assert_eq(tc_select_decide(&s, &c, &r), 0);
    /* PROTEINS_full x 64, TF32, K = 128: TC 2.25 ms, cusparseSDDMM 4.56 ms */
    cr_assert(r.use_tc && !r.balanced, "tc %.1f cu %.1f ratio %.2f", r.us_tc, r.us_cusparse, r.balance_ratio);
}

Test(select_note, predictions_reach_only_their_handle)
{
    int h1 = 0, h2 = 0;
    double tc, cu;
    tc_select_note(&h1, 12.5, 20.0);
    tc_select_take(&h2, &tc, &cu);
    cr_assert(tc < 0 && cu < 0);
    tc_select_note(&h1, 12.5, 20.0);
    tc_select_take(&h1, &tc, &cu);
    cr_assert_float_eq(tc, 12.5, 1e-12);
    cr_assert_float_eq(cu, 20.0, 1e-12);
    tc_select_take(&h1, &tc, &cu); /* taken once */
    cr_assert(tc < 0 && cu < 0);
}

/* ---- the route's reason text: made from the selector's numbers when it is read ---------- */

static tc_reason_args sample_reason(int kind)
{
    tc_reason_args ra = {kind, 1, 0, 1, 8, 7, 132, 12.5, 20.31, 1.04, 1.10, 0, 0.0,
                         {0, 0, 0, 0}, 0};
    return ra;
}

Test(route_reason, spmm_and_sddmm_texts)
{
    char buf[200];
    tc_reason_args ra = sample_reason(1);
    tc_reason_format(&ra, buf, sizeof buf);
    cr_expect_str_eq(buf, "auto; model: TC base 12.5 us, cuSPARSE 20.3 us; schedule base/balanced "
                          "1.04 (<= 1.10), 8/7 blocks/SM x 132 SMs");
    ra = sample_reason(2);
    ra.balanced = 1;
    ra.autoroute = 0;
    ra.occ_known = 0;
    ra.ratio = 1.5;
    tc_reason_format(&ra, buf, sizeof buf);
    cr_expect_str_eq(buf, "forced; model: TC chunked 12.5 us, cuSPARSE 20.3 us; schedule "
                          "base/chunked 1.50 (> 1.10), 8 blocks/SM (assumed) x 132 SMs");
    /* the cuSPARSE route's CSR_ALG3 is named */
    ra = sample_reason(1);
    ra.alg3 = 1;
    tc_reason_format(&ra, buf, sizeof buf);
    cr_expect_str_eq(buf, "auto; model: TC base 12.5 us, cuSPARSE CSR_ALG3 20.3 us; schedule "
                          "base/balanced 1.04 (<= 1.10), 8/7 blocks/SM x 132 SMs");
    /* a short buffer gets a truncated, terminated text */
    char small[16];
    tc_reason_format(&ra, small, sizeof small);
    cr_expect_eq(strlen(small), sizeof small - 1);
}

Test(route_reason, formatted_when_read_and_replaced_by_the_next_decision)
{
    unsetenv("TCSPARSE_LOG");
    tc_config_reload();
    tcsparseHandle_t h;
    cr_assert_eq(tcsparseCreate(&h), TCSPARSE_STATUS_SUCCESS);
    tc_decision d;
    memset(&d, 0, sizeof d);
    d.path = TCSPARSE_PATH_TC_BASE;
    snprintf(d.kernel, sizeof d.kernel, "tc_spmm_tf32_j4_base");
    d.ra = sample_reason(1);
    tc_route_record(h, &d);
    tcsparseRouteInfo_t info;
    cr_assert_eq(tcsparseGetLastRoute(h, &info), TCSPARSE_STATUS_SUCCESS);
    char want[200];
    tc_reason_format(&d.ra, want, sizeof want);
    cr_expect_str_eq(info.reason, want);
    cr_expect_str_eq(info.kernel, "tc_spmm_tf32_j4_base");
    cr_expect_eq(info.path, TCSPARSE_PATH_TC_BASE);
    /* read twice: the same text */
    cr_assert_eq(tcsparseGetLastRoute(h, &info), TCSPARSE_STATUS_SUCCESS);
    cr_expect_str_eq(info.reason, want);
    /* a later model decision's numbers replace the earlier pending ones */
    d.ra = sample_reason(1);
    d.ra.us_tc = 30.0;
    tc_route_record(h, &d);
    cr_assert_eq(tcsparseGetLastRoute(h, &info), TCSPARSE_STATUS_SUCCESS);
    cr_expect(strstr(info.reason, "TC base 30.0 us") != NULL, "%s", info.reason);
    /* and a later decision with a final text replaces a pending one */
    d.ra = sample_reason(1);
    tc_route_record(h, &d);
    memset(&d, 0, sizeof d);
    d.path = TCSPARSE_PATH_CUSPARSE;
    snprintf(d.kernel, sizeof d.kernel, "cusparseSpMM");
    snprintf(d.reason, sizeof d.reason, "route forced to cuSPARSE");
    tc_route_record(h, &d);
    cr_assert_eq(tcsparseGetLastRoute(h, &info), TCSPARSE_STATUS_SUCCESS);
    cr_expect_str_eq(info.reason, "route forced to cuSPARSE");
    cr_expect_eq(info.path, TCSPARSE_PATH_CUSPARSE);
    tcsparseDestroy(h);
}

Test(route_reason, logged_decisions_are_formatted_at_once, .init = cr_redirect_stderr)
{
    setenv("TCSPARSE_LOG", "1", 1);
    tc_config_reload();
    tcsparseHandle_t h;
    cr_assert_eq(tcsparseCreate(&h), TCSPARSE_STATUS_SUCCESS);
    tc_decision d;
    memset(&d, 0, sizeof d);
    d.path = TCSPARSE_PATH_CUSPARSE;
    snprintf(d.kernel, sizeof d.kernel, "cusparseSpMM");
    d.ra = sample_reason(1);
    tc_route_record(h, &d);
    unsetenv("TCSPARSE_LOG");
    tc_config_reload();
    fflush(stderr);
    cr_expect_stderr_eq_str("tcsparse: cusparse -> cusparseSpMM (auto; model: TC base 12.5 us, "
                            "cuSPARSE 20.3 us; schedule base/balanced 1.04 (<= 1.10), 8/7 "
                            "blocks/SM x 132 SMs)\n");
    tcsparseRouteInfo_t info;
    cr_assert_eq(tcsparseGetLastRoute(h, &info), TCSPARSE_STATUS_SUCCESS);
    cr_expect(strstr(info.reason, "model: TC base 12.5 us") != NULL, "%s", info.reason);
    tcsparseDestroy(h);
}

/* tc_str_join: the route record's copy (a, or a_b), cut to the buffer like snprintf. */
Test(route_reason, str_join_copies_and_cuts)
{
    char k[12];
    memset(k, 'x', sizeof k);
    tc_str_join(k, sizeof k, "cusparse", NULL);
    cr_assert_str_eq(k, "cusparse");
    tc_str_join(k, sizeof k, "tc_f32", "base");
    cr_assert_str_eq(k, "tc_f32_base");
    tc_str_join(k, sizeof k, "tc_f32", "balanced"); /* 15 characters: cut to 11 */
    cr_assert_str_eq(k, "tc_f32_bala");
    tc_str_join(k, sizeof k, "a_name_longer_than_twelve", "base");
    cr_assert_str_eq(k, "a_name_long");
    tc_str_join(k, 1, "abc", "d");
    cr_assert_str_eq(k, "");
    char e[8] = "keep";
    tc_str_join(e, 0, "abc", NULL); /* nothing written */
    cr_assert_str_eq(e, "keep");
    tc_str_join(k, sizeof k, "", "b");
    cr_assert_str_eq(k, "_b");
}

/* The cuSPARSE route's algorithm: CSR_ALG3 where it applies (alg3_ok), the inputs are 32-bit
 * and the default algorithm is predicted fast (latency-bound); never for 16-bit inputs or
 * large matrices, where the model cannot tell when CSR_ALG3 collapses (R-MAT: 3.0 vs 1.7 ms
 * at N = 128). */
Test(select_decide, cusparse_alg3_where_it_is_safe)
{
    /* ca-HepTh, FP32, N = 32 on the H100: ALG_DEFAULT 24.6 us, CSR_ALG3 13.3 us, TC base
     * 20.8 us: CSR_ALG3 is predicted faster than both */
    tcsparseMetcfStats_t s = stats_of(&ca_hepth);
    tc_sel_config c = spmm_cfg(TC_SEL_P_3XTF32, 32);
    tc_sel_result r;
    cr_assert_eq(tc_select_decide(&s, &c, &r), 0);
    cr_assert(!r.use_alg3 && r.us_cusparse_alg3 < 0.0, "not asked for: not considered");
    cr_assert_float_eq(r.us_cusparse, r.us_cusparse_default, 1e-12);
    c.alg3_ok = 1;
    cr_assert_eq(tc_select_decide(&s, &c, &r), 0);
    cr_assert(r.us_cusparse_default < TC_SEL_ALG3_MAX_US, "default %.1f us", r.us_cusparse_default);
    cr_assert(r.use_alg3 && r.us_cusparse_alg3 * TC_SEL_ALG3_MARGIN < r.us_cusparse_default,
              "alg3 %.1f default %.1f", r.us_cusparse_alg3, r.us_cusparse_default);
    cr_assert_float_eq(r.us_cusparse, r.us_cusparse_alg3, 1e-12);
    cr_assert(!r.use_tc, "tc %.1f vs cuSPARSE CSR_ALG3 %.1f", r.us_tc, r.us_cusparse);
    /* 16-bit inputs: CSR_ALG3 measured up to 4x slower than the default; never chosen */
    c = spmm_cfg(TC_SEL_P_F16, 128);
    c.alg3_ok = 1;
    cr_assert_eq(tc_select_decide(&s, &c, &r), 0);
    cr_assert(!r.use_alg3 && r.us_cusparse_alg3 < 0.0);
    /* R-MAT 20: far above the limit, not considered */
    s = stats_of(&rmat20);
    c = spmm_cfg(TC_SEL_P_TF32, 128);
    c.alg3_ok = 1;
    cr_assert_eq(tc_select_decide(&s, &c, &r), 0);
    cr_assert(!r.use_alg3 && r.us_cusparse_alg3 < 0.0 && r.us_cusparse_default > TC_SEL_ALG3_MAX_US);
}

/* ---- candidates measured on the executions ------------------------------------------------ */

static tc_sel_result preds(double base, double bal, double cu, double alg3, int use_tc,
                           int balanced, int use_alg3)
{
    tc_sel_result r;
    memset(&r, 0, sizeof r);
    r.us_base = base;
    r.us_balanced = bal;
    r.us_cusparse_default = cu;
    r.us_cusparse_alg3 = alg3;
    r.use_tc = use_tc;
    r.balanced = balanced;
    r.use_alg3 = use_alg3;
    return r;
}

Test(select_explore, candidates_model_choice_first_within_factor)
{
    int cand[TC_SEL_NCAND];
    double pred[TC_SEL_NCAND];
    tc_sel_config c = spmm_cfg(TC_SEL_P_TF32, 128);
    /* base 10 us chosen; balanced 30 > 2.5 x 10 left out; cuSPARSE 12 in; no CSR_ALG3 asked */
    tc_sel_result r = preds(10, 30, 12, -1, 1, 0, 0);
    cr_assert_eq(tc_select_explore_candidates(&c, &r, 2.5, cand, pred), 2);
    cr_assert(cand[0] == TC_SEL_CAND_BASE && cand[1] == TC_SEL_CAND_CUSPARSE);
    cr_assert(pred[TC_SEL_CAND_ALG3] < 0.0 && pred[TC_SEL_CAND_BALANCED] == 30.0);
    /* CSR_ALG3 allowed and predicted 11 us; the model chose cuSPARSE ALG_DEFAULT: it goes first */
    c.alg3_ok = 1;
    r = preds(10, 30, 12, 11, 0, 0, 0);
    cr_assert_eq(tc_select_explore_candidates(&c, &r, 2.5, cand, pred), 3);
    cr_assert(cand[0] == TC_SEL_CAND_CUSPARSE && cand[1] == TC_SEL_CAND_BASE &&
              cand[2] == TC_SEL_CAND_ALG3);
    /* the balanced kernel chosen; a factor that admits everything: all four */
    r = preds(10, 9, 40, 50, 1, 1, 0);
    cr_assert_eq(tc_select_explore_candidates(&c, &r, 1e9, cand, pred), 4);
    cr_assert(cand[0] == TC_SEL_CAND_BALANCED && cand[1] == TC_SEL_CAND_BASE &&
              cand[2] == TC_SEL_CAND_CUSPARSE && cand[3] == TC_SEL_CAND_ALG3);
    /* one clear winner: only the model's choice, nothing to measure */
    r = preds(100, 100, 10, 200, 0, 0, 0);
    cr_assert_eq(tc_select_explore_candidates(&c, &r, 2.5, cand, pred), 1);
    cr_assert_eq(cand[0], TC_SEL_CAND_CUSPARSE);
    /* CSR_ALG3 above the model's safe limit (not predicted by the decision) is still a
     * candidate when asked for: it is measured, not trusted; 16-bit inputs never */
    tcsparseMetcfStats_t s = stats_of(&rmat20);
    c = spmm_cfg(TC_SEL_P_TF32, 128);
    c.alg3_ok = 1;
    cr_assert_eq(tc_select_decide(&s, &c, &r), 0);
    cr_assert(r.us_cusparse_alg3 < 0.0);
    (void)tc_select_explore_candidates(&c, &r, 1e9, cand, pred);
    cr_assert_gt(pred[TC_SEL_CAND_ALG3], 0.0);
    c = spmm_cfg(TC_SEL_P_F16, 128);
    c.alg3_ok = 1;
    cr_assert_eq(tc_select_decide(&s, &c, &r), 0);
    cr_assert_eq(tc_select_explore_candidates(&c, &r, 1e9, cand, pred), 3);
    cr_assert(pred[TC_SEL_CAND_ALG3] < 0.0);
}

/* The CUDA-core kernel has no model: wherever its row takes the call (csr_ok) it is a
 * candidate, after the predicted ones, for SpMM and SDDMM alike; elsewhere it is none. */
Test(select_explore, cuda_core_kernel_last_where_it_takes_the_call)
{
    int cand[TC_SEL_NCAND];
    double pred[TC_SEL_NCAND];
    for (int op = TC_SEL_OP_SPMM; op <= TC_SEL_OP_SDDMM; op++) {
        tc_sel_config c = spmm_cfg(TC_SEL_P_3XTF32, 128);
        c.op = op;
        /* one clear winner: cuSPARSE alone, then the CUDA cores */
        tc_sel_result r = preds(100, 100, 10, -1, 0, 0, 0);
        c.csr_ok = 0;
        cr_assert_eq(tc_select_explore_candidates(&c, &r, 2.5, cand, pred), 1, "op %d", op);
        c.csr_ok = 1;
        cr_assert_eq(tc_select_explore_candidates(&c, &r, 2.5, cand, pred), 2, "op %d", op);
        cr_assert(cand[0] == TC_SEL_CAND_CUSPARSE && cand[1] == TC_SEL_CAND_CSR, "op %d", op);
        cr_assert(pred[TC_SEL_CAND_CSR] < 0.0, "op %d: the CUDA cores have no prediction", op);
        /* every predicted path admitted: the CUDA cores still last */
        r = preds(10, 12, 11, -1, 1, 0, 0);
        cr_assert_eq(tc_select_explore_candidates(&c, &r, 1e9, cand, pred), 4, "op %d", op);
        cr_assert(cand[0] == TC_SEL_CAND_BASE && cand[3] == TC_SEL_CAND_CSR, "op %d", op);
    }
}
