/* Row reordering for the tensor-core plan: the names of the orderings, the host threads and
 * the parallel loop they run on, the block count that judges the orderings, and the choice
 * among them (reorder.h, docs/reorder.md).  The orderings themselves are in reorder_order.c,
 * the plan's conversion with a permutation and the descriptor's mode in reorder_plan.c.
 *
 * Where it runs: on the host, with pthreads.  Every ordering here is a few O(nnz) passes
 * (per-row features, MinHash signatures, block counts: parallel over rows or windows) and a
 * handful of O(rows) sorts and union-find sweeps (sequential, cheap next to the passes).  On
 * the host the same code serves the plan, tcsparse-inspect and the unit tests, runs without
 * a GPU, and is deterministic whatever the thread count; copying the index arrays down costs
 * about 5 ms per 16M nonzeros, small next to the passes themselves. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "config.h"
#include "reorder.h"
#include "reorder_internal.h"

double tc_reorder_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static const char *const ord_names[TC_ORD_COUNT] = {"identity", "cluster", "first-col", "degree",
                                                    "minhash",  "bfs"};

const char *tc_ordering_name(int ordering)
{
    return ordering >= 0 && ordering < TC_ORD_COUNT ? ord_names[ordering] : "?";
}

int tc_ordering_parse(const char *name)
{
    for (int k = 0; k < TC_ORD_COUNT; k++)
        if (name != NULL && strcmp(name, ord_names[k]) == 0)
            return k;
    return -1;
}

int tc_reorder_threads(void)
{
    const int t = tc_config_get()->reorder.threads;
    long n = t > 0 ? t : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

/* ---- a parallel loop (tc_reorder_par_for, reorder_internal.h) ------------------------- */

typedef struct {
    tc_reorder_range_fn fn;
    void *ctx;
    int64_t n, piece;
    atomic_llong next;
} par_state;

typedef struct {
    par_state *s;
    int tid;
} par_arg;

static void *par_worker(void *p)
{
    par_arg *a = p;
    par_state *s = a->s;
    for (;;) {
        int64_t b = atomic_fetch_add(&s->next, s->piece);
        if (b >= s->n)
            break;
        int64_t e = b + s->piece < s->n ? b + s->piece : s->n;
        s->fn(s->ctx, b, e, a->tid);
    }
    return NULL;
}

void tc_reorder_par_for(int64_t n, int nthreads, int64_t min_piece, tc_reorder_range_fn fn,
                        void *ctx)
{
    if (n <= 0)
        return;
    if (nthreads > 64)
        nthreads = 64;
    if (nthreads <= 1 || n <= min_piece) {
        fn(ctx, 0, n, 0);
        return;
    }
    par_state s = {.fn = fn, .ctx = ctx, .n = n};
    s.piece = n / ((int64_t)nthreads * 16);
    if (s.piece < min_piece)
        s.piece = min_piece;
    atomic_init(&s.next, 0);
    pthread_t th[64];
    par_arg args[64];
    int started[64] = {0};
    for (int t = 0; t < nthreads; t++)
        args[t] = (par_arg){&s, t};
    for (int t = 1; t < nthreads; t++)
        started[t] = pthread_create(&th[t], NULL, par_worker, &args[t]) == 0;
    par_worker(&args[0]);
    for (int t = 1; t < nthreads; t++)
        if (started[t])
            pthread_join(th[t], NULL);
}

/* ---- block count -------------------------------------------------------------------------- */

typedef struct {
    const tc_rcsr *a;
    const int32_t *order;
    int32_t **mark;     /* per thread: cols entries, the last window that saw the column */
    int64_t *blocks;    /* per thread */
} count_ctx;

static void count_range(void *p, int64_t wb, int64_t we, int tid)
{
    count_ctx *c = p;
    const tc_rcsr *a = c->a;
    int32_t *mark = c->mark[tid];
    int64_t blocks = 0;
    for (int64_t w = wb; w < we; w++) {
        int64_t distinct = 0;
        for (int64_t pos = w * WIN; pos < (w + 1) * WIN && pos < a->rows; pos++) {
            const int64_t r = c->order ? c->order[pos] : pos;
            for (int64_t e = a->row_off[r]; e < a->row_off[r + 1]; e++) {
                const int32_t col = a->col[e];
                if (mark[col] != (int32_t)w) {
                    mark[col] = (int32_t)w;
                    distinct++;
                }
            }
        }
        blocks += (distinct + 7) / 8;
    }
    c->blocks[tid] += blocks;
}

int64_t tc_reorder_count_blocks(const tc_rcsr *a, const int32_t *order, int nthreads)
{
    const int64_t W = (a->rows + WIN - 1) / WIN;
    if (a->nnz == 0 || W == 0)
        return 0;
    if (nthreads < 1)
        nthreads = 1;
    if (nthreads > 64)
        nthreads = 64;
    /* a thread needs work for its marker array to pay off */
    while (nthreads > 1 && a->nnz / nthreads < 65536)
        nthreads--;
    int32_t *marks[64] = {0};
    int64_t blocks[64] = {0};
    int64_t total = -1;
    for (int t = 0; t < nthreads; t++) {
        marks[t] = malloc(sizeof(int32_t) * (size_t)(a->cols > 0 ? a->cols : 1));
        if (marks[t] == NULL)
            goto done;
        memset(marks[t], 0xff, sizeof(int32_t) * (size_t)a->cols);
    }
    count_ctx c = {a, order, marks, blocks};
    tc_reorder_par_for(W, nthreads, 256, count_range, &c);
    total = 0;
    for (int t = 0; t < nthreads; t++)
        total += blocks[t];
done:
    for (int t = 0; t < nthreads; t++)
        free(marks[t]);
    return total;
}

static int cmp_i32(const void *x, const void *y)
{
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

/* The block count only sees which columns a window shares, so it may run on the columns
 * renumbered densely: for a matrix much wider than its nonzeros (hypersparse), the count's
 * per-thread marker arrays then take O(nnz) memory instead of O(cols) (a 10^9-column matrix
 * needed 4 GB per thread).  Returns the renumbered columns (caller frees) and sets *ncols, or
 * NULL when the matrix is narrow enough to count as it is, or on allocation failure. */
int32_t *tc_reorder_dense_columns(const tc_rcsr *a, int64_t *ncols)
{
    if (a->cols <= 2 * a->nnz + 65536)
        return NULL;
    int32_t *u = malloc(sizeof *u * (size_t)a->nnz);
    int32_t *c = malloc(sizeof *c * (size_t)a->nnz);
    if (u == NULL || c == NULL) {
        free(u);
        free(c);
        return NULL;
    }
    if (a->nnz > 0)
        memcpy(u, a->col, sizeof *u * (size_t)a->nnz);
    qsort(u, (size_t)a->nnz, sizeof *u, cmp_i32);
    int64_t d = 0;
    for (int64_t e = 0; e < a->nnz; e++)
        if (d == 0 || u[d - 1] != u[e])
            u[d++] = u[e];
    for (int64_t e = 0; e < a->nnz; e++) { /* rank of the column among the distinct ones */
        int64_t lo = 0, hi = d - 1;
        while (lo < hi) {
            const int64_t mid = (lo + hi) / 2;
            if (u[mid] < a->col[e])
                lo = mid + 1;
            else
                hi = mid;
        }
        c[e] = (int32_t)lo;
    }
    free(u);
    *ncols = d;
    return c;
}

int tc_reorder_choose(const tc_rcsr *a, const tc_reorder_opts *o, int32_t *order,
                      tc_reorder_result *res)
{
    const double t0 = tc_reorder_now_ms();
    const int64_t M = a->rows;
    const int nt = o->nthreads > 0 ? o->nthreads : 1;
    memset(res, 0, sizeof *res);
    for (int k = 0; k < TC_ORD_COUNT; k++)
        res->blocks[k] = -1;
    for (int64_t i = 0; i < M; i++)
        order[i] = (int32_t)i;
    int32_t *cand = malloc(sizeof *cand * (size_t)(M > 0 ? M : 1));
    if (cand == NULL)
        return -1;
    int rc = 0;
    double t = tc_reorder_now_ms();
    int64_t dcols = 0;
    int32_t *dcol = tc_reorder_dense_columns(a, &dcols);
    const tc_rcsr dense = {a->rows, dcols, a->nnz, a->row_off, dcol};
    const tc_rcsr *ca = dcol != NULL ? &dense : a; /* what the counts run on */
    res->blocks[TC_ORD_IDENTITY] = tc_reorder_count_blocks(ca, NULL, nt);
    res->ms[TC_ORD_IDENTITY] = tc_reorder_now_ms() - t;
    if (res->blocks[TC_ORD_IDENTITY] < 0)
        rc = -1;
    int best = -1;
    for (int k = 1; k < TC_ORD_COUNT && rc == 0; k++) {
        if (!(o->candidates & (1u << k)) || M == 0)
            continue;
        t = tc_reorder_now_ms();
        if (tc_reorder_compute(a, k, cand, nt) != 0 ||
            (res->blocks[k] = tc_reorder_count_blocks(ca, cand, nt)) < 0) {
            res->blocks[k] = -1; /* this candidate failed (memory): the others still count */
            continue;
        }
        res->ms[k] = tc_reorder_now_ms() - t;
        if (best < 0 || res->blocks[k] < res->blocks[best]) {
            best = k;
            memcpy(order, cand, sizeof *cand * (size_t)M);
        }
    }
    free(cand);
    free(dcol);
    const int64_t b0 = res->blocks[TC_ORD_IDENTITY];
    int keep = rc == 0 && best > 0 &&
               (o->min_gain < 0 || (double)res->blocks[best] <= (1.0 - o->min_gain) * (double)b0);
    res->kept = keep ? best : TC_ORD_IDENTITY;
    if (!keep)
        for (int64_t i = 0; i < M; i++)
            order[i] = (int32_t)i;
    res->total_ms = tc_reorder_now_ms() - t0;
    return rc;
}
