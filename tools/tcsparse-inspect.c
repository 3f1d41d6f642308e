/* tcsparse-inspect: ME-TCF statistics of Matrix Market files or generated matrices,
 * computed with the CPU reference conversion, and the route table (no GPU needed). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gen.h"
#include "metcf.h"
#include "reorder.h"
#include "table.h"

#define NBUCKETS 16
#define NDENSITY 8 /* nonzeros per 16x8 block: 1, 2, 3-4, 5-8, ..., 65-128 */
#define NCOLDENSITY 5 /* nonzeros per condensed column (of 16 rows): 1, 2, 3-4, 5-8, 9-16 */

/* Items (16x8 blocks, or condensed columns of a window) and their nonzeros by nonzeros per
 * item.  By column: how much of the matrix lies in columns that rows of a window share (the
 * tensor cores' reuse of a B row) and how much in columns of one nonzero, which a split plan
 * would leave to CUDA cores. */
typedef struct {
    long long items[NDENSITY], nnz[NDENSITY], total_items, total_nnz;
} density_hist;

static int density_bucket(long long n)
{
    int k = 0;
    while (k < NDENSITY - 1 && (1LL << k) < n)
        k++;
    return k;
}

static void density_add(density_hist *d, long long n)
{
    const int k = density_bucket(n);
    d->items[k]++;
    d->nnz[k] += n;
    d->total_items++;
    d->total_nnz += n;
}

static void density_of(const tc_metcf *t, density_hist *blocks, density_hist *cols)
{
    memset(blocks, 0, sizeof *blocks);
    memset(cols, 0, sizeof *cols);
    for (int64_t b = 0; b < t->blocks; b++) {
        long long per_col[8] = {0};
        for (int64_t e = t->blk_off[b]; e < t->blk_off[b + 1]; e++)
            per_col[t->blk_pos[e] & 7]++;
        density_add(blocks, (long long)(t->blk_off[b + 1] - t->blk_off[b]));
        for (int c = 0; c < 8; c++)
            if (per_col[c] > 0)
                density_add(cols, per_col[c]);
    }
}

static void density_label(int k, char *buf, size_t len)
{
    if (k <= 1)
        snprintf(buf, len, "%d", k + 1);
    else
        snprintf(buf, len, "%lld-%lld", (1LL << (k - 1)) + 1, 1LL << k);
}

static void usage(FILE *f)
{
    fputs("usage: tcsparse-inspect [--csv] [--reorder] INPUT...\n"
          "       tcsparse-inspect [--csv] --routes\n"
          "  INPUT is a Matrix Market file (.mtx, optionally gzip-compressed) or a\n"
          "  generator spec:\n"
          "    rmat:SCALE:EDGE_FACTOR            R-MAT (Graph500 a=.57 b=.19 c=.19)\n"
          "    chunglu:SCALE:DEGREE              Chung-Lu power law (exponent 2.5), undirected\n"
          "    uniform:ROWS:COLS:PER_ROW         PER_ROW random columns in every row\n"
          "    banded:N:HALF_BANDWIDTH           entries with |i - j| <= HALF_BANDWIDTH\n"
          "    blocks:N:BLOCK_SIZE:NBLOCKS       dense blocks at random aligned positions\n"
          "    diag:INPUT:COPIES                 INPUT repeated along the diagonal\n"
          "  (generator specs take an optional :seed=N suffix).\n"
          "Prints, per input, the ME-TCF statistics (16-row windows, 16x8 tensor-core blocks)\n"
          "of the CPU reference conversion: windows by blocks, blocks and condensed columns\n"
          "by nonzeros, bytes.\n"
          "  --csv    one CSV line per input (after a header line)\n"
          "  --reorder  instead: mean nonzeros per 16x8 block and host time of every row\n"
          "           ordering (identity, cluster, first-col, degree, minhash, bfs) and the one\n"
          "           the plan would keep (TCSPARSE_X_REORDER_THREADS threads, default all\n"
          "           CPUs; TCSPARSE_X_REORDER_MIN_GAIN percent, default 10)\n"
          "  --routes the route table instead: every row an SpMM or SDDMM call may take, in\n"
          "           order (operation, path, kernel form, name, kernel, eligibility)\n"
          "  --help   this text\n"
          "Exit status: 0 when every input was read and converted, 1 otherwise, 2 on usage errors.\n",
          f);
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* Bucket k of tcsparseMetcfStats_t's histogram: 0, 1, 2, 3-4, 5-8, ..., last open-ended. */
static void bucket_label(int k, char *buf, size_t len)
{
    if (k <= 2)
        snprintf(buf, len, "%d", k);
    else if (k == NBUCKETS - 1)
        snprintf(buf, len, "%lld+", (1LL << (k - 2)) + 1);
    else
        snprintf(buf, len, "%lld-%lld", (1LL << (k - 2)) + 1, 1LL << (k - 1));
}

static void csv_field(const char *s)
{
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"')
            putchar('"');
        putchar(*s);
    }
    putchar('"');
}

static void print_csv_header(void)
{
    char lab[32];
    printf("input,rows,cols,nnz,windows,empty_windows,blocks,mean_nnz_per_block,"
           "mean_blocks_per_window,max_blocks_per_window,metcf_bytes,csr_bytes,bytes_ratio,"
           "load_ms,convert_ms");
    for (int k = 0; k < NBUCKETS; k++) {
        bucket_label(k, lab, sizeof lab);
        printf(",bpw_%s", lab);
    }
    for (int k = 0; k < NDENSITY; k++) {
        density_label(k, lab, sizeof lab);
        printf(",blocks_nnz_%s,nnz_in_blocks_%s", lab, lab);
    }
    for (int k = 0; k < NCOLDENSITY; k++) {
        density_label(k, lab, sizeof lab);
        printf(",cols_nnz_%s,nnz_in_cols_%s", lab, lab);
    }
    putchar('\n');
}

static double ratio(const tcsparseMetcfStats_t *st)
{
    return st->csr_bytes ? (double)st->metcf_bytes / (double)st->csr_bytes : 0.0;
}

static void print_csv(const char *name, const tcsparseMetcfStats_t *st, const density_hist *d,
                      const density_hist *dc, double load_ms, double conv_ms)
{
    csv_field(name);
    printf(",%lld,%lld,%lld,%lld,%lld,%lld,%.4f,%.4f,%lld,%lld,%lld,%.4f,%.3f,%.3f",
           (long long)st->rows, (long long)st->cols, (long long)st->nnz, (long long)st->windows,
           (long long)st->empty_windows, (long long)st->blocks, st->mean_nnz_per_block,
           st->mean_blocks_per_window, (long long)st->max_blocks_per_window,
           (long long)st->metcf_bytes, (long long)st->csr_bytes, ratio(st), load_ms, conv_ms);
    for (int k = 0; k < NBUCKETS; k++)
        printf(",%lld", (long long)st->blocks_per_window_hist[k]);
    for (int k = 0; k < NDENSITY; k++)
        printf(",%lld,%lld", d->items[k], d->nnz[k]);
    for (int k = 0; k < NCOLDENSITY; k++)
        printf(",%lld,%lld", dc->items[k], dc->nnz[k]);
    putchar('\n');
}

static double pct(long long part, long long whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static void print_density(const char *what, const density_hist *d, int n)
{
    char lab[32];
    printf("    %11s  %12s  %7s  %8s  %8s\n", what, "count", "count", "nnz", "nnz >=");
    long long above = d->total_nnz;
    for (int k = 0; k < n; k++) {
        if (d->items[k] == 0)
            continue;
        density_label(k, lab, sizeof lab);
        printf("    %11s  %12lld  %6.2f%%  %7.2f%%  %7.2f%%\n", lab, d->items[k],
               pct(d->items[k], d->total_items), pct(d->nnz[k], d->total_nnz),
               pct(above, d->total_nnz));
        above -= d->nnz[k];
    }
}

static void print_text(const char *name, const tcsparseMetcfStats_t *st, const density_hist *d,
                       const density_hist *dc, double load_ms, double conv_ms)
{
    char lab[32];
    int last = 0;
    printf("%s\n", name);
    printf("  rows %lld  cols %lld  nnz %lld\n", (long long)st->rows, (long long)st->cols,
           (long long)st->nnz);
    printf("  windows %lld (empty %lld)  TC blocks %lld  mean nnz/block %.3f\n",
           (long long)st->windows, (long long)st->empty_windows, (long long)st->blocks,
           st->mean_nnz_per_block);
    printf("  blocks per window: mean %.3f  max %lld\n", st->mean_blocks_per_window,
           (long long)st->max_blocks_per_window);
    for (int k = 0; k < NBUCKETS; k++)
        if (st->blocks_per_window_hist[k])
            last = k;
    printf("  windows by blocks per window:\n");
    for (int k = 0; k <= last; k++) {
        bucket_label(k, lab, sizeof lab);
        double pct = st->windows ? 100.0 * (double)st->blocks_per_window_hist[k] /
                                       (double)st->windows
                                 : 0.0;
        printf("    %11s  %12lld  %6.2f%%\n", lab, (long long)st->blocks_per_window_hist[k], pct);
    }
    printf("  blocks by nonzeros (of 128 places; nnz >=: the share of nonzeros in items this "
           "dense or denser):\n");
    print_density("nnz/block", d, NDENSITY);
    printf("  condensed columns by nonzeros (of a window's 16 rows; 1: a B row no other row "
           "of the window uses):\n");
    print_density("nnz/column", dc, NCOLDENSITY);
    printf("  ME-TCF bytes %lld  CSR bytes %lld  ratio %.3f\n", (long long)st->metcf_bytes,
           (long long)st->csr_bytes, ratio(st));
    printf("  load %.3f ms  conversion %.3f ms\n", load_ms, conv_ms);
}

static void print_reorder_header(void)
{
    printf("input,rows,cols,nnz,threads,ordering,blocks,nnz_per_block,ms,kept,choose_ms\n");
}

/* nnz/block and time of every ordering, and the choice tc_reorder_choose makes (CPU only). */
static int inspect_reorder(const char *input, int csv)
{
    tc_csr m;
    char err[512];
    if (tc_csr_load(input, &m, err, sizeof err)) {
        fprintf(stderr, "tcsparse-inspect: %s\n", err);
        return 1;
    }
    tc_rcsr a = {m.rows, m.cols, m.nnz, m.row_off, m.col};
    tc_reorder_opts o = {TC_ORD_ALL_CANDIDATES, tc_reorder_min_gain(), tc_reorder_threads()};
    tc_reorder_result res;
    int32_t *order = malloc(sizeof *order * (size_t)(m.rows + 1));
    int rc = order == NULL || tc_reorder_choose(&a, &o, order, &res) != 0;
    free(order);
    if (rc) {
        fprintf(stderr, "tcsparse-inspect: %s: reordering: out of memory\n", input);
        tc_csr_free(&m);
        return 1;
    }
    if (!csv)
        printf("%s\n  rows %lld  cols %lld  nnz %lld  threads %d\n", input, (long long)m.rows,
               (long long)m.cols, (long long)m.nnz, o.nthreads);
    for (int k = 0; k < TC_ORD_COUNT; k++) {
        const double npb = res.blocks[k] > 0 ? (double)m.nnz / (double)res.blocks[k] : 0.0;
        if (csv) {
            csv_field(input);
            printf(",%lld,%lld,%lld,%d,%s,%lld,%.4f,%.3f,%d,%.3f\n", (long long)m.rows,
                   (long long)m.cols, (long long)m.nnz, o.nthreads, tc_ordering_name(k),
                   (long long)res.blocks[k], npb, res.ms[k], k == res.kept, res.total_ms);
        } else {
            printf("  %-10s blocks %12lld  nnz/block %7.3f  %9.1f ms%s\n", tc_ordering_name(k),
                   (long long)res.blocks[k], npb, res.ms[k], k == res.kept ? "  <- kept" : "");
        }
    }
    if (!csv)
        printf("  choice %.1f ms (orderings and block counts; the plan adds the copy from the "
               "GPU)\n", res.total_ms);
    fflush(stdout);
    tc_csr_free(&m);
    return 0;
}

static int inspect(const char *input, int csv)
{
    tc_csr m;
    tc_metcf t;
    tcsparseMetcfStats_t st;
    char err[512];
    double t0 = now_ms();
    if (tc_csr_load(input, &m, err, sizeof err)) {
        fprintf(stderr, "tcsparse-inspect: %s\n", err);
        return 1;
    }
    double t1 = now_ms();
    tc_sparse_view v = {TCSPARSE_FORMAT_CSR, m.rows, m.cols, m.nnz, m.row_off, m.col,
                        TCSPARSE_INDEX_64I, TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO};
    tcsparseStatus_t s = tc_metcf_build_cpu(&v, &t);
    double t2 = now_ms();
    tc_csr_free(&m);
    if (s != TCSPARSE_STATUS_SUCCESS) {
        fprintf(stderr, "tcsparse-inspect: %s: ME-TCF conversion failed: %s (%s)\n", input,
                tcsparseGetLastErrorMessage(), tcsparseGetErrorName(s));
        return 1;
    }
    memset(&st, 0, sizeof st);
    tc_metcf_stats(&t, &st);
    density_hist d, dc;
    density_of(&t, &d, &dc);
    tc_metcf_free(&t);
    if (csv)
        print_csv(input, &st, &d, &dc, t1 - t0, t2 - t1);
    else
        print_text(input, &st, &d, &dc, t1 - t0, t2 - t1);
    fflush(stdout);
    return 0;
}

static const char *op_name(int op)
{
    return op == TC_SEL_OP_SDDMM ? "SDDMM" : "SpMM";
}

static const char *path_name(tcsparsePath_t p)
{
    switch (p) {
    case TCSPARSE_PATH_TC_BASE: return "TC_BASE";
    case TCSPARSE_PATH_TC_BALANCED: return "TC_BALANCED";
    case TCSPARSE_PATH_CUSPARSE: return "CUSPARSE";
    case TCSPARSE_PATH_CUDA_CORE: return "CUDA_CORE";
    default: return "NONE";
    }
}

/* The route table (src/route/table.c), one row per line, and how the route chooses. */
static void print_routes(int csv)
{
    if (csv)
        printf("operation,row,path,form,name,kernel,eligible\n");
    for (int i = 0; i < tc_route_table_rows; i++) {
        const tc_route_row *r = &tc_route_table[i];
        const char *kernel = r->kernel != NULL ? r->kernel : "the launcher's variant";
        if (csv) {
            printf("%s,%d,%s,%s,", op_name(r->op), i, path_name(r->path),
                   tc_route_form_name(r->form));
            csv_field(r->name);
            putchar(',');
            csv_field(kernel);
            putchar(',');
            csv_field(r->when);
            putchar('\n');
            continue;
        }
        if (i == 0 || tc_route_table[i - 1].op != r->op)
            printf("%s%s\n", i == 0 ? "" : "\n", op_name(r->op));
        printf("  %d  %-18s path %-12s form %-9s kernel %s\n     eligible: %s\n", i, r->name,
               path_name(r->path), tc_route_form_name(r->form), kernel, r->when);
    }
    if (!csv)
        printf("\nA forced route (TCSPARSE_ROUTE=tc-base, tc-balanced, cuda-core or cusparse, or the\n"
               "handle's) takes the row of its path, cuSPARSE where that row refuses the call; tc\n"
               "takes the tensor-core row the model prefers.  The automatic route lets the model\n"
               "choose among the eligible rows and the first executions of a kind of call measure\n"
               "its candidates, the CUDA-core row among them wherever it is eligible.  A call the\n"
               "tensor-core rows refuse takes the cuSPARSE rows; TCSPARSE_X_CUSPARSE_ALG3=0 never\n"
               "takes CSR_ALG3, =1 takes it wherever it is eligible.\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int csv = 0, reorder = 0, routes = 0, first = 0, ninputs = 0, failed = 0, options = 1;
    for (int i = 1; i < argc; i++) {
        if (options && strcmp(argv[i], "--") == 0) {
            options = 0;
        } else if (options && (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)) {
            usage(stdout);
            return 0;
        } else if (options && strcmp(argv[i], "--csv") == 0) {
            csv = 1;
        } else if (options && strcmp(argv[i], "--reorder") == 0) {
            reorder = 1;
        } else if (options && strcmp(argv[i], "--routes") == 0) {
            routes = 1;
        } else if (options && argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "tcsparse-inspect: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else {
            ninputs++;
        }
    }
    if (routes && (reorder || ninputs > 0)) {
        fprintf(stderr, "tcsparse-inspect: --routes takes no input and no --reorder\n");
        usage(stderr);
        return 2;
    }
    if (routes) {
        print_routes(csv);
        return 0;
    }
    if (ninputs == 0) {
        usage(stderr);
        return 2;
    }
    if (csv && reorder)
        print_reorder_header();
    else if (csv)
        print_csv_header();
    options = 1;
    for (int i = 1; i < argc; i++) {
        if (options && strcmp(argv[i], "--") == 0) {
            options = 0;
            continue;
        }
        if (options && argv[i][0] == '-' && argv[i][1] != '\0')
            continue;
        if (!csv && first++)
            putchar('\n');
        failed |= reorder ? inspect_reorder(argv[i], csv) : inspect(argv[i], csv);
    }
    return failed;
}
