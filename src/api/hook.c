/* The hook interface (include/tcsparse_hook.h): what the cuSPARSE interposer asks of the core
 * beyond the public API.  The handle modes are read by the route through tc_hook_on
 * (internal.h). */
#include <stdlib.h>
#include "config.h"
#include "error.h"
#include "fallback.h"
#include "internal.h"
#include "kernels.h"
#include "plan.h"
#include "route.h"

tcsparseStatus_t tc_hook_set_mode(tcsparseHandle_t handle, unsigned mode)
{
    tc_error_clear();
    if (!tc_handle_ok(handle))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tc_hook_set_mode: handle is NULL or not a live tcsparse handle");
    if ((mode & ~(unsigned)TC_HOOK_MODES) != 0)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tc_hook_set_mode: mode 0x%x has bits other than TC_HOOK_*", mode);
    handle->hook.mode = mode;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tc_hook_deferred(tcsparseHandle_t handle, int *deferred)
{
    tc_error_clear();
    if (!tc_handle_ok(handle))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tc_hook_deferred: handle is NULL or not a live tcsparse handle");
    if (deferred == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "tc_hook_deferred: deferred is NULL");
    *deferred = handle->hook.deferred;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tc_hook_learning(tcsparseHandle_t handle, int *learning)
{
    tc_error_clear();
    if (!tc_handle_ok(handle))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tc_hook_learning: handle is NULL or not a live tcsparse handle");
    if (learning == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "tc_hook_learning: learning is NULL");
    *learning = handle->hook.learning;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tc_hook_route(tcsparseHandle_t handle, tcsparseRoute_t *route)
{
    tc_error_clear();
    if (!tc_handle_ok(handle))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tc_hook_route: handle is NULL or not a live tcsparse handle");
    if (route == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "tc_hook_route: route is NULL");
    *route = tc_route_effective(handle);
    return TCSPARSE_STATUS_SUCCESS;
}

/* Whether d's own plan (transposed = 0) or its transposed view's (1) exists; the caller holds
 * d's lock, the view's is taken after it. */
static int tc_plan_exists(const struct tcsparseSpMatDescr *d, int transposed)
{
    if (!transposed)
        return d->plan != NULL;
    const struct tcsparseSpMatDescr *t = d->tr;
    if (t == NULL)
        return 0;
    tc_spmat_lock(t);
    const int has = t->plan != NULL;
    tc_spmat_unlock(t);
    return has;
}

tcsparseStatus_t tc_hook_spmat_has_plan(tcsparseConstSpMatDescr_t spMatDescr, int *has_plan)
{
    tc_error_clear();
    if (!tc_spmat_ok(spMatDescr))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tc_hook_spmat_has_plan: spMatDescr is NULL or not a live sparse "
                            "descriptor");
    if (has_plan == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tc_hook_spmat_has_plan: has_plan is NULL");
    tc_spmat_lock(spMatDescr); /* plan is read under the descriptor's lock (plan.h) */
    *has_plan = tc_plan_exists(spMatDescr, 0) || tc_plan_exists(spMatDescr, 1);
    tc_spmat_unlock(spMatDescr);
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tc_hook_spmat_has_plan_for(tcsparseConstSpMatDescr_t spMatDescr, int transposed,
                                            int *has_plan)
{
    tc_error_clear();
    if (!tc_spmat_ok(spMatDescr))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tc_hook_spmat_has_plan_for: spMatDescr is NULL or not a live sparse "
                            "descriptor");
    if (has_plan == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tc_hook_spmat_has_plan_for: has_plan is NULL");
    if (transposed != 0 && transposed != 1)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tc_hook_spmat_has_plan_for: transposed is %d, not 0 or 1",
                            transposed);
    tc_spmat_lock(spMatDescr);
    *has_plan = tc_plan_exists(spMatDescr, transposed);
    tc_spmat_unlock(spMatDescr);
    return TCSPARSE_STATUS_SUCCESS;
}

/* The two structure arrays a fingerprint covers, and their bytes. */
static void tc_struct_arrays(const struct tcsparseSpMatDescr *d, const void **off,
                             size_t *off_bytes, const void **idx, size_t *idx_bytes)
{
    /* CSR: rows + 1 offsets; CSC: cols + 1; COO: nnz row indices (offsets_type is the
     * indices' type there) */
    const int64_t noff = d->format == TCSPARSE_FORMAT_CSR   ? d->rows + 1
                         : d->format == TCSPARSE_FORMAT_CSC ? d->cols + 1
                                                            : d->nnz;
    *off = d->offsets;
    *idx = d->indices;
    *off_bytes = (size_t)noff * tc_index_size(d->offsets_type);
    *idx_bytes = (size_t)d->nnz * tc_index_size(d->indices_type);
}

/* The guard's device words and pinned host words, on the current device. */
static tcsparseStatus_t tc_guard_alloc(struct tcsparseSpMatDescr *d, const char *fn)
{
    struct tc_guard *g = calloc(1, sizeof *g);
    if (g == NULL)
        return tc_error_set(TCSPARSE_STATUS_ALLOC_FAILED, "%s: out of host memory", fn);
    void *h = NULL;
    if (cudaGetDevice(&g->device) != cudaSuccess ||
        cudaMalloc((void **)&g->dev, sizeof(tc_guard_dev)) != cudaSuccess ||
        cudaMemset(g->dev, 0, sizeof(tc_guard_dev)) != cudaSuccess ||
        cudaHostAlloc(&h, 3 * sizeof(unsigned long long),
                      cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess ||
        cudaEventCreateWithFlags(&g->done, cudaEventDisableTiming) != cudaSuccess) {
        (void)cudaGetLastError();
        if (g->dev != NULL)
            cudaFree(g->dev);
        if (h != NULL)
            cudaFreeHost(h);
        free(g);
        return tc_error_set(TCSPARSE_STATUS_ALLOC_FAILED,
                            "%s: the guard's device memory could not be had", fn);
    }
    g->tripped = h;
    *g->tripped = 0;
    g->host_fp = (unsigned long long *)h + 1;
    g->context = tc_context_id();
    d->guard = g;
    return TCSPARSE_STATUS_SUCCESS;
}

/* Drops d->guard where its memory belonged to a CUDA context that has ended (a device reset
 * freed it, and its addresses may be another allocation's now): the next use allocates it
 * again. */
static void tc_guard_drop_stale(struct tcsparseSpMatDescr *d)
{
    if (d->guard == NULL || d->guard->context == 0)
        return;
    const unsigned long long ctx = tc_context_id();
    if (ctx != 0 && ctx != d->guard->context)
        tc_guard_free(d); /* forgets, frees nothing of the old context */
}

/* d->guard usable from the current device: one of an ended context dropped first, one on
 * another device refused (NOT_SUPPORTED), none allocated here (ALLOC_FAILED where its memory
 * cannot be had).  fn names the caller in the messages; the caller holds d's lock. */
static tcsparseStatus_t tc_guard_here(struct tcsparseSpMatDescr *d, const char *fn)
{
    tc_guard_drop_stale(d);
    int cur = -1;
    if (cudaGetDevice(&cur) != cudaSuccess)
        (void)cudaGetLastError(); /* no device: the allocation below fails and says so */
    if (d->guard != NULL && d->guard->device != cur)
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "%s: the descriptor's guard words are on device %d, not %d", fn,
                            d->guard->device, cur);
    return d->guard != NULL ? TCSPARSE_STATUS_SUCCESS : tc_guard_alloc(d, fn);
}

tcsparseStatus_t tc_hook_spmat_fingerprint(tcsparseConstSpMatDescr_t spMatDescr,
                                           cudaStream_t stream, uint64_t *fingerprint)
{
    tc_error_clear();
    if (!tc_spmat_ok(spMatDescr))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tc_hook_spmat_fingerprint: spMatDescr is NULL or not a live sparse "
                            "descriptor");
    if (fingerprint == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tc_hook_spmat_fingerprint: fingerprint is NULL");
    struct tcsparseSpMatDescr *d = (struct tcsparseSpMatDescr *)spMatDescr;
    const void *off, *idx;
    size_t off_bytes, idx_bytes;
    tc_spmat_lock(d); /* held throughout: the words are the descriptor's */
    tcsparseStatus_t st = tc_guard_here(d, "tc_hook_spmat_fingerprint");
    if (st != TCSPARSE_STATUS_SUCCESS && st != TCSPARSE_STATUS_NOT_SUPPORTED) {
        st = tc_error_set(TCSPARSE_STATUS_EXECUTION_FAILED,
                          "tc_hook_spmat_fingerprint: a CUDA call failed (its device memory "
                          "could not be had)");
    } else if (st == TCSPARSE_STATUS_SUCCESS) {
        struct tc_guard *g = d->guard;
        uint64_t fp_off;
        tc_struct_arrays(d, &off, &off_bytes, &idx, &idx_bytes);
        g->have_last = 0;
        if (tc_fingerprint_arrays(off, off_bytes, idx, idx_bytes, stream, g->dev->fp,
                                  g->host_fp, fingerprint, &fp_off) != 0) {
            st = tc_error_set(TCSPARSE_STATUS_EXECUTION_FAILED,
                              "tc_hook_spmat_fingerprint: a CUDA call failed");
        } else { /* the pair, for a guard armed with this fingerprint on these arrays */
            g->last_fp = *fingerprint;
            g->last_fp_off = fp_off;
            g->last_off = off;
            g->last_off_bytes = off_bytes;
            g->have_last = 1;
        }
    }
    tc_spmat_unlock(d);
    return st;
}

tcsparseStatus_t tc_hook_spmat_guard(tcsparseConstSpMatDescr_t spMatDescr, int on,
                                     uint64_t fingerprint)
{
    tc_error_clear();
    if (!tc_spmat_ok(spMatDescr))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tc_hook_spmat_guard: spMatDescr is NULL or not a live sparse "
                            "descriptor");
    struct tcsparseSpMatDescr *d = (struct tcsparseSpMatDescr *)spMatDescr;
    tcsparseStatus_t st = TCSPARSE_STATUS_SUCCESS;
    tc_spmat_lock(d);
    if (!on) {
        if (d->guard != NULL) {
            d->guard->armed = 0;
            *d->guard->tripped = 0; /* forgotten with the arming it reported on */
        }
    } else if (d->format != TCSPARSE_FORMAT_CSR || d->batch_count != 1) {
        st = tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                          "tc_hook_spmat_guard: the guard takes one CSR matrix (not CSC, COO or "
                          "a strided batch)");
    } else {
        st = tc_guard_here(d, "tc_hook_spmat_guard");
        if (st == TCSPARSE_STATUS_SUCCESS) {
            struct tc_guard *g = d->guard;
            tc_struct_arrays(d, &g->off, &g->off_bytes, &g->idx, &g->idx_bytes);
            g->fp = fingerprint;
            /* the offsets' part of the same computation: the structure fingerprint names */
            g->fp_off_ok = g->have_last && g->last_fp == fingerprint && g->last_off == g->off &&
                           g->last_off_bytes == g->off_bytes;
            g->fp_off = g->fp_off_ok ? g->last_fp_off : 0;
            g->gen = d->struct_gen;
            g->armed = 1;
        }
    }
    tc_spmat_unlock(d);
    return st;
}

tcsparseStatus_t tc_hook_spmat_guard_tripped(tcsparseConstSpMatDescr_t spMatDescr, int *tripped)
{
    tc_error_clear();
    if (!tc_spmat_ok(spMatDescr))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tc_hook_spmat_guard_tripped: spMatDescr is NULL or not a live "
                            "sparse descriptor");
    if (tripped == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tc_hook_spmat_guard_tripped: tripped is NULL");
    tc_spmat_lock(spMatDescr);
    *tripped = spMatDescr->guard != NULL && *spMatDescr->guard->tripped != 0;
    tc_spmat_unlock(spMatDescr);
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tc_hook_set_cusparse(const tc_cusparse_entry_points *real)
{
    tc_error_clear();
    if (real == NULL || real->spmm_buffer_size == NULL || real->spmm_preprocess == NULL ||
        real->spmm == NULL || real->sddmm_buffer_size == NULL || real->sddmm_preprocess == NULL ||
        real->sddmm == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tc_hook_set_cusparse: the entry points or one of them is NULL");
    tc_cusparse_real = *real;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tc_hook_get_settings(tc_hook_settings *settings)
{
    if (settings == NULL)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "tc_hook_get_settings: settings is NULL");
    const tc_config *c = tc_config_get();
    settings->passthrough = c->route == TC_CFG_ROUTE_CUSPARSE;
    settings->log = c->log;
    settings->keep = c->preload.keep;
    settings->convert_after = c->preload.convert_after;
    settings->trust_pointers = c->preload.trust_pointers;
    settings->measure = c->preload.measure;
    return TCSPARSE_STATUS_SUCCESS;
}
