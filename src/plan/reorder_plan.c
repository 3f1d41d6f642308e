/* The plan's side of row reordering (reorder.h, docs/reorder.md): the descriptor's mode, the
 * host copy of the matrix's structure the orderings run on, and the plan's conversion with a
 * row permutation (tc_reorder_convert), whose figures end up in the plan's statistics. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "config.h"
#include "internal.h"
#include "plan.h"
#include "reorder.h"
#include "reorder_internal.h"

int tc_reorder_mode(const struct tcsparseSpMatDescr *d, unsigned *only)
{
    unsigned mask = TC_ORD_ALL_CANDIDATES;
    int forced = 0; /* TCSPARSE_REORDER names one ordering: it wins over the candidate list */
    int mode = d != NULL ? d->reorder : TCSPARSE_REORDER_DEFAULT;
    const tc_config *c = tc_config_get();
    if (mode == TCSPARSE_REORDER_DEFAULT) {
        switch (c->reorder.mode) {
        case TC_CFG_REORDER_OFF: mode = TCSPARSE_REORDER_OFF; break;
        case TC_CFG_REORDER_AUTO: mode = TCSPARSE_REORDER_AUTO; break;
        case TC_CFG_REORDER_ALWAYS: mode = TCSPARSE_REORDER_ALWAYS; break;
        case TC_CFG_REORDER_ONE:
            mode = TCSPARSE_REORDER_ALWAYS;
            mask = 1u << c->reorder.ordering;
            forced = 1;
            break;
        default: mode = TCSPARSE_REORDER_LATE; break;
        }
    }
    if (c->reorder.orderings != 0 && !forced) /* TCSPARSE_X_REORDER_ORDERINGS */
        mask &= c->reorder.orderings;
    if (d != NULL && d->reorder_orderings != 0 && !forced) /* the descriptor's list wins */
        mask = (unsigned)d->reorder_orderings & TC_ORD_ALL_CANDIDATES;
    if (only)
        *only = mask;
    return mode;
}

static int64_t ld_idx(const void *p, int is64, int64_t i)
{
    return is64 ? ((const int64_t *)p)[i] : (int64_t)((const int32_t *)p)[i];
}

/* Host 0-based CSR from the device arrays of in; 0 on success, 1 when the structure is
 * invalid (left to the GPU conversion to report), -1 on a failure to allocate or copy. */
static int host_csr(const tc_convert_input *in, cudaStream_t s, int64_t **row_off_out,
                    int32_t **col_out)
{
    const int64_t M = in->rows, K = in->cols, nnz = in->nnz;
    const int csr = in->format == TCSPARSE_FORMAT_CSR, csc = in->format == TCSPARSE_FORMAT_CSC;
    const int64_t noff = csr ? M + 1 : csc ? K + 1 : nnz;
    const size_t ob = in->offsets_64 ? 8 : 4, ib = in->indices_64 ? 8 : 4;
    void *off = malloc(ob * (size_t)(noff > 0 ? noff : 1));
    void *idx = malloc(ib * (size_t)(nnz > 0 ? nnz : 1));
    int64_t *ro = calloc((size_t)M + 1, sizeof *ro);
    int32_t *col = malloc(sizeof *col * (size_t)(nnz > 0 ? nnz : 1));
    int rc = -1;
    if (off == NULL || idx == NULL || ro == NULL || col == NULL)
        goto done;
    if (cudaMemcpyAsync(off, in->offsets, ob * (size_t)noff, cudaMemcpyDefault, s) != cudaSuccess ||
        cudaMemcpyAsync(idx, in->indices, ib * (size_t)nnz, cudaMemcpyDefault, s) != cudaSuccess ||
        cudaStreamSynchronize(s) != cudaSuccess) {
        (void)cudaGetLastError();
        goto done;
    }
    rc = 1;
    const int64_t base = in->base;
    if (csr) {
        if (ld_idx(off, in->offsets_64, 0) - base != 0 || ld_idx(off, in->offsets_64, M) - base != nnz)
            goto done;
        for (int64_t r = 0; r < M; r++) {
            const int64_t b = ld_idx(off, in->offsets_64, r) - base;
            const int64_t e = ld_idx(off, in->offsets_64, r + 1) - base;
            if (e < b || e > nnz)
                goto done;
            ro[r + 1] = e;
            for (int64_t k = b; k < e; k++) {
                const int64_t c = ld_idx(idx, in->indices_64, k) - base;
                if (c < 0 || c >= K)
                    goto done;
                col[k] = (int32_t)c;
            }
        }
    } else {
        /* (row, column) of every entry, counting-sorted by row */
        for (int64_t e = 0; e < nnz; e++) {
            const int64_t r = csc ? ld_idx(idx, in->indices_64, e) - base
                                  : ld_idx(off, in->offsets_64, e) - base;
            if (r < 0 || r >= M)
                goto done;
            ro[r + 1]++;
        }
        for (int64_t r = 0; r < M; r++)
            ro[r + 1] += ro[r];
        int64_t *cur = malloc(sizeof *cur * (size_t)(M > 0 ? M : 1));
        if (cur == NULL) {
            rc = -1;
            goto done;
        }
        memcpy(cur, ro, sizeof *cur * (size_t)M);
        if (csc) {
            if (ld_idx(off, in->offsets_64, 0) - base != 0 || ld_idx(off, in->offsets_64, K) - base != nnz) {
                free(cur);
                goto done;
            }
            for (int64_t c = 0; c < K; c++) {
                const int64_t b = ld_idx(off, in->offsets_64, c) - base;
                const int64_t e = ld_idx(off, in->offsets_64, c + 1) - base;
                if (e < b || e > nnz || b < 0) {
                    free(cur);
                    goto done;
                }
                for (int64_t k = b; k < e; k++)
                    col[cur[ld_idx(idx, in->indices_64, k) - base]++] = (int32_t)c;
            }
        } else {
            for (int64_t e = 0; e < nnz; e++) {
                const int64_t c = ld_idx(idx, in->indices_64, e) - base;
                if (c < 0 || c >= K) {
                    free(cur);
                    goto done;
                }
                col[cur[ld_idx(off, in->offsets_64, e) - base]++] = (int32_t)c;
            }
        }
        free(cur);
    }
    rc = 0;
done:
    free(off);
    free(idx);
    if (rc != 0) {
        free(ro);
        free(col);
        ro = NULL;
        col = NULL;
    }
    *row_off_out = ro;
    *col_out = col;
    return rc;
}

/* TCSPARSE_X_REORDER_MIN_GAIN: percent fewer blocks a reordering must give (default 10). */
double tc_reorder_min_gain(void)
{
    const double g = tc_config_get()->reorder.min_gain;
    return g >= 0.0 ? g : 0.10;
}

int tc_reorder_late_applies(const tc_convert_input *in)
{
    return in->nnz > 0 && in->rows > 1 && in->rows < (1ll << 31) - 16 &&
           in->cols < (1ll << 31) && in->nnz < (1ll << 31) && tc_convert_can_order(in);
}

tcsparseStatus_t tc_reorder_convert(const struct tcsparseSpMatDescr *d,
                                    const tc_convert_input *in, tc_dev_metcf *out,
                                    tc_convert_extra *x, cudaStream_t stream, int late_ordering,
                                    tc_reorder_info *info, char *err, size_t errlen)
{
    unsigned mask = 0;
    memset(info, 0, sizeof *info);
    info->mode = tc_reorder_mode(d, &mask);
    if (late_ordering != 0) {
        /* late ordering's plan (late.c): first-col on the GPU or bfs on the host, kept
         * whatever it gains (the caller's order's plan already counted its blocks) */
        if (!tc_reorder_late_applies(in) ||
            (late_ordering != TC_ORD_FIRST_COL && late_ordering != TC_ORD_BFS)) {
            snprintf(err, errlen, "late ordering: the matrix cannot be ordered %s",
                     late_ordering == TC_ORD_FIRST_COL ? "on the GPU" : "that way");
            return TCSPARSE_STATUS_NOT_SUPPORTED;
        }
        info->mode = TCSPARSE_REORDER_LATE;
        mask = 1u << late_ordering;
    } else if (info->mode == TCSPARSE_REORDER_LATE) {
        return tc_convert_gpu(in, out, x, stream, err, errlen); /* the caller's order first */
    }
    if (info->mode == TCSPARSE_REORDER_OFF || in->nnz == 0 || in->rows <= 1 ||
        in->rows >= (1ll << 31) - 16 || in->cols >= (1ll << 31) || in->nnz >= (1ll << 31))
        return tc_convert_gpu(in, out, x, stream, err, errlen);

    /* first-col alone, CSR: ordered on the GPU inside the conversion (the same permutation as
     * the host's, docs/reorder.md).  AUTO: counted against the caller's order and kept or
     * not; ALWAYS: kept, the caller's order not counted */
    const int always = info->mode == TCSPARSE_REORDER_ALWAYS || late_ordering != 0;
    if (mask == (1u << TC_ORD_FIRST_COL) && tc_convert_can_order(in)) {
        tc_convert_input gin = *in;
        gin.gpu_order = TC_GPU_ORDER_FIRST_COL;
        gin.gpu_order_min_gain = always ? -1.0 : tc_reorder_min_gain();
        tcsparseStatus_t st = tc_convert_gpu(&gin, out, x, stream, err, errlen);
        /* info->ms stays 0: no host time apart from the conversion's */
        if (st == TCSPARSE_STATUS_SUCCESS) {
            info->blocks_before = x->blocks_unordered; /* 0: not counted */
            info->blocks_after = out->blocks;
            info->ordering = x->gpu_ordered ? TC_ORD_FIRST_COL : TC_ORD_IDENTITY;
        }
        return st;
    }
    const double t0 = tc_reorder_now_ms();
    int64_t *ro = NULL;
    int32_t *col = NULL, *order = NULL, *row_new = NULL, *d_row_new = NULL;
    tc_convert_input rin = *in;
    if (host_csr(in, stream, &ro, &col) == 0) {
        tc_rcsr a = {in->rows, in->cols, in->nnz, ro, col};
        tc_reorder_opts o = {.candidates = mask,
                             .min_gain = always ? -1.0 : tc_reorder_min_gain(),
                             .nthreads = tc_reorder_threads()};
        tc_reorder_result res;
        order = malloc(sizeof *order * (size_t)in->rows);
        row_new = malloc(sizeof *row_new * (size_t)in->rows);
        if (order != NULL && row_new != NULL && tc_reorder_choose(&a, &o, order, &res) == 0) {
            info->blocks_before = res.blocks[TC_ORD_IDENTITY];
            info->blocks_after = res.blocks[res.kept];
            info->ordering = res.kept;
            if (res.kept != TC_ORD_IDENTITY) {
                for (int64_t i = 0; i < in->rows; i++)
                    row_new[order[i]] = (int32_t)i;
                if (cudaMalloc((void **)&d_row_new, sizeof *d_row_new * (size_t)in->rows) == cudaSuccess &&
                    cudaMemcpy(d_row_new, row_new, sizeof *row_new * (size_t)in->rows,
                               cudaMemcpyHostToDevice) == cudaSuccess) {
                    rin.row_new = d_row_new;
                } else { /* no room for the permutation: the plan is built unreordered */
                    (void)cudaGetLastError();
                    info->ordering = TC_ORD_IDENTITY;
                    info->blocks_after = info->blocks_before;
                }
            }
        }
    }
    free(ro);
    free(col);
    free(order);
    free(row_new);
    info->ms = tc_reorder_now_ms() - t0;
    tcsparseStatus_t st = tc_convert_gpu(&rin, out, x, stream, err, errlen);
    cudaFree(d_row_new); /* the conversion synchronised its stream before returning */
    return st;
}

void tc_reorder_plan_done(struct tc_plan *p, const tc_reorder_info *info)
{
    tcsparseMetcfStats_t *s = &p->stats;
    s->reorder_mode = info->mode;
    s->reorder_ordering = info->ordering;
    s->reorder_ms = info->ms;
    if (info->blocks_before > 0)
        s->reorder_nnz_per_block_before = (double)p->dev.nnz / (double)info->blocks_before;
    if (info->blocks_after > 0)
        s->reorder_nnz_per_block_after = (double)p->dev.nnz / (double)info->blocks_after;
}
