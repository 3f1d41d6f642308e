#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cuda_runtime_api.h>
#include "error.h"
#include "fallback.h"
#include "metcf.h"
#include "plan.h"

/* Longest run of blocks one thread block of the balanced kernel takes from a window: about
 * four waves of chunks over the GPU, within [16, 128] blocks and a multiple of the kernel's
 * 8-block stage (measured on the H100: 16 suits small matrices, 64 large ones, where fewer
 * chunks mean fewer atomic additions into C). */
#define TC_CHUNK_MIN 16
#define TC_CHUNK_MAX 128
#define TC_CHUNK_SLOTS_PER_SM 24

static double tc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void tc_plan_free(struct tc_plan *p)
{
    if (p == NULL)
        return;
    tc_dev_metcf_free(&p->dev);
    cudaFree(p->chunks); /* split_windows lives in the same allocation */
    free(p);
}

void tc_plan_invalidate(struct tcsparseSpMatDescr *d)
{
    tc_plan_free(d->plan);
    d->plan = NULL;
}

/* Statistics and the balanced schedule, from the host copy w32 of the window offsets. */
static tcsparseStatus_t tc_plan_host_side(struct tc_plan *p, const int32_t *w32, int sm_count)
{
    tcsparseStatus_t st = TCSPARSE_STATUS_SUCCESS;
    const int64_t W = p->dev.windows;
    int64_t *w64 = malloc(sizeof *w64 * (size_t)(W + 1));
    tc_chunk *ch = NULL;
    int32_t *split = NULL;
    if (w64 == NULL) {
        st = tc_error_set(TCSPARSE_STATUS_ALLOC_FAILED, "tensor-core plan: host allocation failed");
        goto done;
    }
    for (int64_t w = 0; w <= W; w++)
        w64[w] = w32[w];
    tc_metcf shell = {.rows = p->dev.rows, .cols = p->dev.cols, .nnz = p->dev.nnz,
                      .windows = W, .blocks = p->dev.blocks, .win_off = w64};
    tc_metcf_stats(&shell, &p->stats);

    /* Every window gets at least one chunk, so that empty windows still write beta*C. */
    int64_t want = p->dev.blocks / ((int64_t)(sm_count > 0 ? sm_count : 132) * TC_CHUNK_SLOTS_PER_SM);
    want = (want + 7) / 8 * 8;
    p->chunk_blocks = (int32_t)(want < TC_CHUNK_MIN ? TC_CHUNK_MIN : want > TC_CHUNK_MAX ? TC_CHUNK_MAX : want);
    const char *ce = getenv("TCSPARSE_CHUNK_BLOCKS"); /* tuning knob for tcsparse-bench */
    if (ce != NULL && atoi(ce) >= 1)
        p->chunk_blocks = atoi(ce);
    const int64_t CH = p->chunk_blocks;
    int64_t nch = 0, nsplit = 0;
    for (int64_t w = 0; w < W; w++) {
        int64_t nb = w32[w + 1] - w32[w];
        int64_t c = nb == 0 ? 1 : (nb + CH - 1) / CH;
        nch += c;
        nsplit += c > 1;
    }
    ch = malloc(sizeof *ch * (size_t)nch);
    split = malloc(sizeof *split * (size_t)(nsplit > 0 ? nsplit : 1));
    if (ch == NULL || split == NULL) {
        st = tc_error_set(TCSPARSE_STATUS_ALLOC_FAILED, "tensor-core plan: host allocation failed");
        goto done;
    }
    int64_t k = 0, q = 0;
    for (int64_t w = 0; w < W; w++) {
        int32_t b = w32[w], e = w32[w + 1];
        int is_split = e - b > CH;
        if (is_split)
            split[q++] = (int32_t)w;
        do {
            int32_t end = e - b > CH ? b + (int32_t)CH : e;
            ch[k++] = (tc_chunk){(int32_t)w, b, end, is_split};
            b = end;
        } while (b < e);
    }
    p->nchunks = (int32_t)nch;
    p->nsplit = (int32_t)nsplit;
    /* one allocation and one copy: the chunks, then the split windows */
    const size_t ch_bytes = sizeof *ch * (size_t)nch, sp_bytes = sizeof *split * (size_t)nsplit;
    char *host = malloc(ch_bytes + sp_bytes + 1), *dev = NULL;
    if (host == NULL) {
        st = tc_error_set(TCSPARSE_STATUS_ALLOC_FAILED, "tensor-core plan: host allocation failed");
        goto done;
    }
    memcpy(host, ch, ch_bytes);
    memcpy(host + ch_bytes, split, sp_bytes);
    st = tc_error_cuda(cudaMalloc((void **)&dev, ch_bytes + sp_bytes + 1),
                       "tensor-core plan: allocating the balanced schedule");
    if (st == TCSPARSE_STATUS_SUCCESS) /* synchronous: host is freed right after */
        st = tc_error_cuda(cudaMemcpy(dev, host, ch_bytes + sp_bytes, cudaMemcpyHostToDevice),
                           "tensor-core plan: uploading the schedule");
    free(host);
    p->chunks = (tc_chunk *)dev;
    p->split_windows = (int32_t *)(dev + ch_bytes);
done:
    free(w64);
    free(ch);
    free(split);
    return st;
}

tcsparseStatus_t tc_plan_get(tcsparseHandle_t h, const struct tcsparseSpMatDescr *d,
                             struct tc_plan **out)
{
    struct tcsparseSpMatDescr *md = (struct tcsparseSpMatDescr *)d; /* the plan is a cache */
    cusparseHandle_t cusp;
    tcsparseStatus_t st = tc_handle_cusparse(h, &cusp);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (md->plan != NULL && md->plan->device == h->device) {
        *out = md->plan;
        return TCSPARSE_STATUS_SUCCESS;
    }
    /* Building synchronises the stream, which would invalidate a capture into a CUDA graph:
     * inside one, the caller routes to cuSPARSE until _preprocess (or an uncaptured call)
     * has built the plan. */
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(h->stream, &cap) != cudaSuccess ||
        cap != cudaStreamCaptureStatusNone) {
        (void)cudaGetLastError();
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "the stream is capturing and the tensor-core plan is not built yet "
                            "(call _preprocess before the capture)");
    }
    tc_plan_invalidate(md);
    struct tc_plan *p = calloc(1, sizeof *p);
    if (p == NULL)
        return tc_error_set(TCSPARSE_STATUS_ALLOC_FAILED, "tensor-core plan: out of host memory");
    tc_convert_input in = {
        .format = d->format, .rows = d->rows, .cols = d->cols, .nnz = d->nnz,
        .offsets = d->offsets, .indices = d->indices,
        .offsets_64 = d->offsets_type == TCSPARSE_INDEX_64I,
        .indices_64 = d->indices_type == TCSPARSE_INDEX_64I, .base = (int)d->base};
    char msg[200];
    double t0 = tc_now_ms();
    /* beyond int32 rows the conversion refuses before it would write the offsets */
    int32_t *w32 = d->rows < (1ll << 31) - 16 ? malloc(sizeof *w32 * (size_t)((d->rows + 15) / 16 + 1))
                                              : NULL;
    if (w32 == NULL && d->rows < (1ll << 31) - 16) {
        free(p);
        return tc_error_set(TCSPARSE_STATUS_ALLOC_FAILED, "tensor-core plan: out of host memory");
    }
    st = tc_convert_gpu(&in, &p->dev, w32, h->stream, msg, sizeof msg);
    if (st != TCSPARSE_STATUS_SUCCESS) {
        free(w32);
        free(p);
        return tc_error_set(st, "%s", msg);
    }
    st = tc_plan_host_side(p, w32, h->sm_count);
    free(w32);
    if (st != TCSPARSE_STATUS_SUCCESS) {
        tc_plan_free(p);
        return st;
    }
    p->convert_ms = tc_now_ms() - t0;
    p->device = h->device;
    md->plan = p;
    *out = p;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tcsparseSpMatGetMetcfStats(tcsparseHandle_t handle,
                                            tcsparseConstSpMatDescr_t spMatDescr,
                                            tcsparseMetcfStats_t *stats)
{
    tc_error_clear();
    if (!tc_handle_ok(handle))
        return tc_error_set(TCSPARSE_STATUS_NOT_INITIALIZED,
                            "tcsparseSpMatGetMetcfStats: handle is NULL or destroyed");
    if (!tc_spmat_ok(spMatDescr))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tcsparseSpMatGetMetcfStats: spMatDescr is NULL or destroyed");
    if (stats == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "tcsparseSpMatGetMetcfStats: stats is NULL");
    if (spMatDescr->batch_count > 1)
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "tcsparseSpMatGetMetcfStats: strided batches have no tensor-core plan");
    struct tc_plan *p;
    tcsparseStatus_t st = tc_plan_get(handle, spMatDescr, &p);
    if (st == TCSPARSE_STATUS_SUCCESS)
        *stats = p->stats;
    return st;
}
