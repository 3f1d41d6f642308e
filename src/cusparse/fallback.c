/* The cuSPARSE path.  The cuSPARSE handle and the mirror descriptors are created lazily (a
 * tcsparse handle and descriptors must work without a GPU) and cached: cuSPARSE attaches
 * SpMM/SDDMM preprocessing data to its own descriptors, so a mirror must live as long as the
 * tcsparse descriptor.  The mirrors are caches, which is why they are updated through const
 * descriptors.  Pointer changes made through the tcsparse setters reach a mirror through
 * cuSPARSE's own setters when the mirror is next used.  One file, as the one place that calls
 * cuSPARSE: the mirrors, the buffer check and the CSR_ALG3 workspaces act on the same cuSPARSE
 * objects and the same entry points (tc_cusparse_real). */
#include <string.h>

#include "error.h"
#include "fallback.h"
#include "plan.h"

tc_cusparse_entry_points tc_cusparse_real = {
    cusparseSpMM_bufferSize,  cusparseSpMM_preprocess,  cusparseSpMM,
    cusparseSDDMM_bufferSize, cusparseSDDMM_preprocess, cusparseSDDMM,
};

tcsparseStatus_t tc_handle_cusparse(tcsparseHandle_t h, cusparseHandle_t *out)
{
    if (h->cusp != NULL) {
        /* The handle belongs to the device that was current at its first use: its cuSPARSE
         * handle, its CSR_ALG3 workspaces and the plans it finds (plan->device == h->device)
         * live there, and its calls launch on the current device.  A call made while another
         * device is current is refused rather than run against the other device's memory
         * (a fault there ends the CUDA context): a handle per device, as with cuSPARSE. */
        int dev = -1;
        if (cudaGetDevice(&dev) != cudaSuccess) {
            (void)cudaGetLastError();
            return tc_error_set(TCSPARSE_STATUS_EXECUTION_FAILED,
                                "cudaGetDevice failed: the current device is not known");
        }
        if (dev != h->device)
            return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                                "the handle belongs to CUDA device %d (current at its first use) "
                                "but device %d is current: create a handle per device",
                                h->device, dev);
        *out = h->cusp;
        return TCSPARSE_STATUS_SUCCESS;
    }
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
        (void)cudaGetLastError();
        return tc_error_set(TCSPARSE_STATUS_NOT_INITIALIZED, "no CUDA device available (%s)",
                            e != cudaSuccess ? cudaGetErrorName(e) : "0 devices");
    }
    int dev, sms, ccmaj, ccmin;
    tcsparseStatus_t st = tc_error_cuda(cudaGetDevice(&dev), "cudaGetDevice");
    if (st == TCSPARSE_STATUS_SUCCESS)
        st = tc_error_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev),
                           "cudaDeviceGetAttribute(MultiProcessorCount)");
    if (st == TCSPARSE_STATUS_SUCCESS)
        st = tc_error_cuda(cudaDeviceGetAttribute(&ccmaj, cudaDevAttrComputeCapabilityMajor, dev),
                           "cudaDeviceGetAttribute(ComputeCapabilityMajor)");
    if (st == TCSPARSE_STATUS_SUCCESS)
        st = tc_error_cuda(cudaDeviceGetAttribute(&ccmin, cudaDevAttrComputeCapabilityMinor, dev),
                           "cudaDeviceGetAttribute(ComputeCapabilityMinor)");
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;

    cusparseHandle_t c = NULL;
    st = tc_error_cusparse(cusparseCreate(&c), "cusparseCreate");
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    st = tc_error_cusparse(cusparseSetStream(c, h->stream), "cusparseSetStream");
    if (st == TCSPARSE_STATUS_SUCCESS)
        st = tc_error_cusparse(cusparseSetPointerMode(c, (cusparsePointerMode_t)h->pointer_mode),
                               "cusparseSetPointerMode");
    if (st != TCSPARSE_STATUS_SUCCESS) {
        cusparseDestroy(c);
        return st;
    }
    h->cusp = c;
    h->device = dev;
    h->sm_count = sms;
    h->cc_major = ccmaj;
    h->cc_minor = ccmin;
    *out = c;
    return TCSPARSE_STATUS_SUCCESS;
}

static tcsparseStatus_t tc_spmat_mirror_create(const struct tcsparseSpMatDescr *d,
                                               cusparseSpMatDescr_t *out)
{
    cusparseSpMatDescr_t m = NULL;
    cusparseIndexType_t ot = (cusparseIndexType_t)d->offsets_type;
    cusparseIndexType_t it = (cusparseIndexType_t)d->indices_type;
    cusparseIndexBase_t b = (cusparseIndexBase_t)d->base;
    cusparseStatus_t s;
    switch (d->format) {
    case TCSPARSE_FORMAT_CSR:
        s = cusparseCreateCsr(&m, d->rows, d->cols, d->nnz, d->offsets, d->indices, d->values, ot,
                              it, b, d->value_type);
        break;
    case TCSPARSE_FORMAT_CSC:
        s = cusparseCreateCsc(&m, d->rows, d->cols, d->nnz, d->offsets, d->indices, d->values, ot,
                              it, b, d->value_type);
        break;
    case TCSPARSE_FORMAT_COO:
        s = cusparseCreateCoo(&m, d->rows, d->cols, d->nnz, d->offsets, d->indices, d->values, it,
                              b, d->value_type);
        break;
    default:
        return tc_error_set(TCSPARSE_STATUS_INTERNAL_ERROR,
                            "sparse descriptor with format %d has no cuSPARSE mirror",
                            (int)d->format);
    }
    tcsparseStatus_t st = tc_error_cusparse(s, "cusparseCreateCsr/Csc/Coo (mirror)");
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (d->batch_count != 1) {
        if (d->format == TCSPARSE_FORMAT_COO)
            s = cusparseCooSetStridedBatch(m, d->batch_count, d->offsets_batch_stride);
        else
            s = cusparseCsrSetStridedBatch(m, d->batch_count, d->offsets_batch_stride,
                                           d->values_batch_stride);
        st = tc_error_cusparse(s, "cusparseCsr/CooSetStridedBatch (mirror)");
        if (st != TCSPARSE_STATUS_SUCCESS) {
            cusparseDestroySpMat(m);
            return st;
        }
    }
    *out = m;
    return TCSPARSE_STATUS_SUCCESS;
}

/* Brings the mirror's arrays in step with the descriptor.  Only a change reaches cuSPARSE
 * (a setter call may drop the preprocessing data that cuSPARSE keeps with it): a structure
 * setter of ours (struct_gen moved, even with the same arrays) or new values.  What the
 * mirror was last given is remembered in the descriptor (only this file sets it), so an
 * unchanged call asks cuSPARSE nothing. */
static tcsparseStatus_t tc_spmat_mirror_sync(struct tcsparseSpMatDescr *d)
{
    cusparseStatus_t s;
    if (d->cusp_gen != d->struct_gen) {
        if (d->format == TCSPARSE_FORMAT_COO)
            s = cusparseCooSetPointers(d->cusp, d->offsets, d->indices, d->values);
        else if (d->format == TCSPARSE_FORMAT_CSC)
            s = cusparseCscSetPointers(d->cusp, d->offsets, d->indices, d->values);
        else
            s = cusparseCsrSetPointers(d->cusp, d->offsets, d->indices, d->values);
        tcsparseStatus_t st = tc_error_cusparse(s, "cusparseCsr/Csc/CooSetPointers (mirror)");
        if (st == TCSPARSE_STATUS_SUCCESS) {
            d->cusp_values = d->values;
            d->cusp_gen = d->struct_gen;
        }
        return st;
    }
    if (d->cusp_values != d->values) {
        tcsparseStatus_t st = tc_error_cusparse(cusparseSpMatSetValues(d->cusp, d->values),
                                                "cusparseSpMatSetValues (mirror)");
        if (st == TCSPARSE_STATUS_SUCCESS)
            d->cusp_values = d->values;
        return st;
    }
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tc_spmat_cusparse(const struct tcsparseSpMatDescr *d, cusparseSpMatDescr_t *out)
{
    struct tcsparseSpMatDescr *cache = (struct tcsparseSpMatDescr *)d;
    tcsparseStatus_t st;
    if (cache->cusp == NULL) {
        st = tc_spmat_mirror_create(d, &cache->cusp);
        if (st == TCSPARSE_STATUS_SUCCESS) {
            cache->cusp_values = d->values;
            cache->cusp_gen = d->struct_gen;
        }
    } else {
        st = tc_spmat_mirror_sync(cache);
    }
    if (st == TCSPARSE_STATUS_SUCCESS)
        *out = cache->cusp;
    return st;
}

tcsparseStatus_t tc_dnmat_cusparse(const struct tcsparseDnMatDescr *d, cusparseDnMatDescr_t *out)
{
    struct tcsparseDnMatDescr *cache = (struct tcsparseDnMatDescr *)d;
    tcsparseStatus_t st;
    if (cache->cusp == NULL) {
        cusparseDnMatDescr_t m = NULL;
        st = tc_error_cusparse(cusparseCreateDnMat(&m, d->rows, d->cols, d->ld, d->values,
                                                   d->value_type, (cusparseOrder_t)d->order),
                               "cusparseCreateDnMat (mirror)");
        if (st != TCSPARSE_STATUS_SUCCESS)
            return st;
        if (d->batch_count != 1) {
            st = tc_error_cusparse(cusparseDnMatSetStridedBatch(m, d->batch_count,
                                                                d->batch_stride),
                                   "cusparseDnMatSetStridedBatch (mirror)");
            if (st != TCSPARSE_STATUS_SUCCESS) {
                cusparseDestroyDnMat(m);
                return st;
            }
        }
        cache->cusp = m;
        cache->cusp_values = d->values;
    } else if (cache->cusp_values != d->values) {
        st = tc_error_cusparse(cusparseDnMatSetValues(cache->cusp, d->values),
                               "cusparseDnMatSetValues (mirror)");
        if (st != TCSPARSE_STATUS_SUCCESS)
            return st;
        cache->cusp_values = d->values;
    }
    *out = cache->cusp;
    return TCSPARSE_STATUS_SUCCESS;
}

void tc_spmat_cusparse_release(struct tcsparseSpMatDescr *d)
{
    if (d->cusp != NULL)
        cusparseDestroySpMat(d->cusp);
    d->cusp = NULL;
}

void tc_dnmat_cusparse_release(struct tcsparseDnMatDescr *d)
{
    if (d->cusp != NULL)
        cusparseDestroyDnMat(d->cusp);
    d->cusp = NULL;
}

/* ---- SpMM / SDDMM: the cuSPARSE objects of one call, then the call itself. ------------- */

/* cuSPARSE 12.6's CSR_ALG1 with row-major B and C returned wrong results on the H100
 * (tests/gpu/test_gpu_misuse.c: relative error 1.3, ALG_DEFAULT/ALG2/ALG3 correct on the
 * same descriptors): that combination runs as ALG_DEFAULT. */
static tcsparseSpMMAlg_t tc_spmm_alg(tcsparseSpMMAlg_t alg, tcsparseConstDnMatDescr_t B,
                                     tcsparseConstDnMatDescr_t C)
{
    if (alg == TCSPARSE_SPMM_CSR_ALG1 &&
        (B->order == TCSPARSE_ORDER_ROW || C->order == TCSPARSE_ORDER_ROW))
        return TCSPARSE_SPMM_ALG_DEFAULT;
    return alg;
}

/* What the last buffer check of this thread measured: the size cuSPARSE asked for, for
 * one call shape.  The key holds the handle, the mirrors and every size, type and setting
 * the answer depends on, so a reused address with other sizes or types does not match (on
 * the H100 a mirror freed by one test and reallocated at the same address for a BF16 call
 * of the same sizes once matched a key without types, and a valid buffer was refused). */
typedef struct {
    const void *h, *sp, *d1, *d2;
    int op, opA, opB, alg, ct, batch;
    int64_t r0, c0, n0, r1, c1, l1, r2, c2, l2;
    int fmt, vt, ot, it, base, t1, t2, o1, o2, b1, b2, pad_;
    int64_t sb0, sb1, db1, db2;
    size_t need;
} tc_need_key;

static _Thread_local tc_need_key tc_last_need;

/* A buffer cuSPARSE would overrun (smaller than _bufferSize said, where the allocation's
 * extent is known) or a NULL one it needs: refused before cuSPARSE runs (it writes part of C
 * before it notices a missing buffer).  `size` asks cuSPARSE on a cache miss. */
static tcsparseStatus_t tc_buffer_ok(const char *fn, const tc_need_key *k, const void *buffer,
                                     cusparseStatus_t (*size)(void *ctx, size_t *need), void *ctx)
{
    size_t room = 0, need = 0;
    if (buffer != NULL && !tc_device_room(buffer, &room))
        return TCSPARSE_STATUS_SUCCESS; /* extent unknown (or the check is off) */
    tc_need_key q = *k;
    q.need = tc_last_need.need;
    if (memcmp(&q, &tc_last_need, sizeof q) == 0) {
        need = tc_last_need.need;
    } else {
        if (size(ctx, &need) != CUSPARSE_STATUS_SUCCESS)
            return TCSPARSE_STATUS_SUCCESS; /* cuSPARSE will report it itself */
        tc_last_need = *k;
        tc_last_need.need = need;
    }
    if (buffer == NULL && need > 0)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "%s: externalBuffer is NULL but the cuSPARSE path needs %zu bytes "
                            "(_bufferSize)", fn, need);
    if (buffer != NULL && need > room)
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "%s: externalBuffer has %zu bytes to the end of its allocation, "
                            "but _bufferSize asks for %zu", fn, room, need);
    return TCSPARSE_STATUS_SUCCESS;
}

typedef struct {
    cusparseHandle_t h;
    cusparseSpMatDescr_t sp;
    cusparseDnMatDescr_t d1, d2;
} tc_cusp_call;

static tcsparseStatus_t tc_cusp_prepare(tcsparseHandle_t h, const struct tcsparseSpMatDescr *sp,
                                        const struct tcsparseDnMatDescr *d1,
                                        const struct tcsparseDnMatDescr *d2, tc_cusp_call *c)
{
    tcsparseStatus_t st = tc_handle_cusparse(h, &c->h);
    if (st == TCSPARSE_STATUS_SUCCESS)
        st = tc_spmat_cusparse(sp, &c->sp);
    if (st == TCSPARSE_STATUS_SUCCESS)
        st = tc_dnmat_cusparse(d1, &c->d1);
    if (st == TCSPARSE_STATUS_SUCCESS)
        st = tc_dnmat_cusparse(d2, &c->d2);
    return st;
}

/* The key of one call: the handle and mirrors, the call's settings, and the sizes, types,
 * layouts and batch settings of the sparse operand s and the dense d1, d2 (SpMM: A, B, C;
 * SDDMM: C, A, B).  Zeroed first: the key is compared with memcmp, padding included. */
static void tc_need_key_make(tc_need_key *k, const tc_cusp_call *c, int op, int opA, int opB,
                             int alg, cudaDataType ct, tcsparseConstSpMatDescr_t s,
                             tcsparseConstDnMatDescr_t d1, tcsparseConstDnMatDescr_t d2)
{
    memset(k, 0, sizeof *k);
    k->h = c->h; k->sp = c->sp; k->d1 = c->d1; k->d2 = c->d2;
    k->op = op; k->opA = opA; k->opB = opB; k->alg = alg; k->ct = (int)ct;
    k->batch = s->batch_count; k->r0 = s->rows; k->c0 = s->cols; k->n0 = s->nnz;
    k->r1 = d1->rows; k->c1 = d1->cols; k->l1 = d1->ld; k->r2 = d2->rows; k->c2 = d2->cols;
    k->l2 = d2->ld;
    k->fmt = (int)s->format; k->vt = (int)s->value_type; k->ot = (int)s->offsets_type;
    k->it = (int)s->indices_type; k->base = (int)s->base;
    k->sb0 = s->offsets_batch_stride; k->sb1 = s->values_batch_stride;
    k->t1 = (int)d1->value_type; k->o1 = (int)d1->order; k->b1 = d1->batch_count;
    k->db1 = d1->batch_stride;
    k->t2 = (int)d2->value_type; k->o2 = (int)d2->order; k->b2 = d2->batch_count;
    k->db2 = d2->batch_stride;
}

/* One SpMM or SDDMM call, as its six entry points share it: the operands as cuSPARSE's call
 * takes them (SpMM: sp = A, d1 = B, d2 = C; SDDMM: sp = C, d1 = A, d2 = B) and its settings. */
typedef enum { TC_CUSP_SPMM, TC_CUSP_SDDMM } tc_cusp_op;
typedef enum { TC_CUSP_BUFFER_SIZE, TC_CUSP_PREPROCESS, TC_CUSP_COMPUTE } tc_cusp_step;
typedef struct {
    tc_cusp_op op;
    tcsparseOperation_t opA, opB;
    const void *alpha, *beta;
    const struct tcsparseSpMatDescr *sp;
    const struct tcsparseDnMatDescr *d1, *d2;
    cudaDataType ct;
    int alg; /* tcsparseSpMMAlg_t or tcsparseSDDMMAlg_t */
} tc_cusp_args;

/* cuSPARSE's function of one step of the call on the mirrors in c; out is the size
 * (_bufferSize) or the buffer. */
static cusparseStatus_t tc_cusp_entry(const tc_cusp_call *c, const tc_cusp_args *a,
                                      tc_cusp_step step, void *out)
{
    const cusparseOperation_t opA = (cusparseOperation_t)a->opA, opB = (cusparseOperation_t)a->opB;
    if (a->op == TC_CUSP_SPMM) {
        const cusparseSpMMAlg_t alg = (cusparseSpMMAlg_t)a->alg;
        switch (step) {
        case TC_CUSP_BUFFER_SIZE:
            return tc_cusparse_real.spmm_buffer_size(c->h, opA, opB, a->alpha, c->sp, c->d1,
                                                     a->beta, c->d2, a->ct, alg, (size_t *)out);
        case TC_CUSP_PREPROCESS:
            return tc_cusparse_real.spmm_preprocess(c->h, opA, opB, a->alpha, c->sp, c->d1,
                                                    a->beta, c->d2, a->ct, alg, out);
        default:
            return tc_cusparse_real.spmm(c->h, opA, opB, a->alpha, c->sp, c->d1, a->beta, c->d2,
                                         a->ct, alg, out);
        }
    }
    const cusparseSDDMMAlg_t alg = (cusparseSDDMMAlg_t)a->alg;
    switch (step) {
    case TC_CUSP_BUFFER_SIZE:
        return tc_cusparse_real.sddmm_buffer_size(c->h, opA, opB, a->alpha, c->d1, c->d2, a->beta,
                                                  c->sp, a->ct, alg, (size_t *)out);
    case TC_CUSP_PREPROCESS:
        return tc_cusparse_real.sddmm_preprocess(c->h, opA, opB, a->alpha, c->d1, c->d2, a->beta,
                                                 c->sp, a->ct, alg, out);
    default:
        return tc_cusparse_real.sddmm(c->h, opA, opB, a->alpha, c->d1, c->d2, a->beta, c->sp,
                                      a->ct, alg, out);
    }
}

/* tc_buffer_ok's size: cuSPARSE's _bufferSize for the call on the mirrors. */
typedef struct {
    const tc_cusp_call *c;
    const tc_cusp_args *a;
} tc_cusp_size_ctx;
static cusparseStatus_t tc_cusp_size_cb(void *ctx, size_t *need)
{
    const tc_cusp_size_ctx *x = ctx;
    return tc_cusp_entry(x->c, x->a, TC_CUSP_BUFFER_SIZE, need);
}

/* The six entry points: the handle's cuSPARSE handle and the mirrors, the caller's buffer
 * checked (all but _bufferSize), then cuSPARSE's function; out is the size or the buffer. */
static tcsparseStatus_t tc_cusp_run(tcsparseHandle_t h, const tc_cusp_args *a, tc_cusp_step step,
                                    void *out)
{
    static const char *const fn[2][3] = {
        {NULL, "tcsparseSpMM_preprocess", "tcsparseSpMM"},
        {NULL, "tcsparseSDDMM_preprocess", "tcsparseSDDMM"}};
    static const char *const name[2][3] = {
        {"cusparseSpMM_bufferSize", "cusparseSpMM_preprocess", "cusparseSpMM"},
        {"cusparseSDDMM_bufferSize", "cusparseSDDMM_preprocess", "cusparseSDDMM"}};
    tc_cusp_call c;
    tcsparseStatus_t st = tc_cusp_prepare(h, a->sp, a->d1, a->d2, &c);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    if (step != TC_CUSP_BUFFER_SIZE) {
        tc_cusp_size_ctx sc = {&c, a};
        tc_need_key k;
        tc_need_key_make(&k, &c, (int)a->op, (int)a->opA, (int)a->opB, a->alg, a->ct, a->sp,
                         a->d1, a->d2);
        st = tc_buffer_ok(fn[a->op][step], &k, out, tc_cusp_size_cb, &sc);
        if (st != TCSPARSE_STATUS_SUCCESS)
            return st;
    }
    return tc_error_cusparse(tc_cusp_entry(&c, a, step, out), name[a->op][step]);
}

tcsparseStatus_t tc_fallback_spmm_buffer_size(tcsparseHandle_t h, tcsparseOperation_t opA,
                                              tcsparseOperation_t opB, const void *alpha,
                                              tcsparseConstSpMatDescr_t A,
                                              tcsparseConstDnMatDescr_t B, const void *beta,
                                              tcsparseDnMatDescr_t C, cudaDataType ct,
                                              tcsparseSpMMAlg_t alg, size_t *size)
{
    const tc_cusp_args a = {TC_CUSP_SPMM, opA, opB, alpha, beta, A, B, C, ct,
                            (int)tc_spmm_alg(alg, B, C)};
    return tc_cusp_run(h, &a, TC_CUSP_BUFFER_SIZE, size);
}

tcsparseStatus_t tc_fallback_spmm_preprocess(tcsparseHandle_t h, tcsparseOperation_t opA,
                                             tcsparseOperation_t opB, const void *alpha,
                                             tcsparseConstSpMatDescr_t A,
                                             tcsparseConstDnMatDescr_t B, const void *beta,
                                             tcsparseDnMatDescr_t C, cudaDataType ct,
                                             tcsparseSpMMAlg_t alg, void *buffer)
{
    const tc_cusp_args a = {TC_CUSP_SPMM, opA, opB, alpha, beta, A, B, C, ct,
                            (int)tc_spmm_alg(alg, B, C)};
    return tc_cusp_run(h, &a, TC_CUSP_PREPROCESS, buffer);
}

tcsparseStatus_t tc_fallback_spmm(tcsparseHandle_t h, tcsparseOperation_t opA,
                                  tcsparseOperation_t opB, const void *alpha,
                                  tcsparseConstSpMatDescr_t A, tcsparseConstDnMatDescr_t B,
                                  const void *beta, tcsparseDnMatDescr_t C, cudaDataType ct,
                                  tcsparseSpMMAlg_t alg, void *buffer)
{
    const tc_cusp_args a = {TC_CUSP_SPMM, opA, opB, alpha, beta, A, B, C, ct,
                            (int)tc_spmm_alg(alg, B, C)};
    return tc_cusp_run(h, &a, TC_CUSP_COMPUTE, buffer);
}

tcsparseStatus_t tc_fallback_sddmm_buffer_size(tcsparseHandle_t h, tcsparseOperation_t opA,
                                               tcsparseOperation_t opB, const void *alpha,
                                               tcsparseConstDnMatDescr_t A,
                                               tcsparseConstDnMatDescr_t B, const void *beta,
                                               tcsparseSpMatDescr_t C, cudaDataType ct,
                                               tcsparseSDDMMAlg_t alg, size_t *size)
{
    const tc_cusp_args a = {TC_CUSP_SDDMM, opA, opB, alpha, beta, C, A, B, ct, (int)alg};
    return tc_cusp_run(h, &a, TC_CUSP_BUFFER_SIZE, size);
}

tcsparseStatus_t tc_fallback_sddmm_preprocess(tcsparseHandle_t h, tcsparseOperation_t opA,
                                              tcsparseOperation_t opB, const void *alpha,
                                              tcsparseConstDnMatDescr_t A,
                                              tcsparseConstDnMatDescr_t B, const void *beta,
                                              tcsparseSpMatDescr_t C, cudaDataType ct,
                                              tcsparseSDDMMAlg_t alg, void *buffer)
{
    const tc_cusp_args a = {TC_CUSP_SDDMM, opA, opB, alpha, beta, C, A, B, ct, (int)alg};
    return tc_cusp_run(h, &a, TC_CUSP_PREPROCESS, buffer);
}

tcsparseStatus_t tc_fallback_sddmm(tcsparseHandle_t h, tcsparseOperation_t opA,
                                   tcsparseOperation_t opB, const void *alpha,
                                   tcsparseConstDnMatDescr_t A, tcsparseConstDnMatDescr_t B,
                                   const void *beta, tcsparseSpMatDescr_t C, cudaDataType ct,
                                   tcsparseSDDMMAlg_t alg, void *buffer)
{
    const tc_cusp_args a = {TC_CUSP_SDDMM, opA, opB, alpha, beta, C, A, B, ct, (int)alg};
    return tc_cusp_run(h, &a, TC_CUSP_COMPUTE, buffer);
}

/* ---- cuSPARSE CSR_ALG3 with workspaces of the handle's own -------------------------------
 * The selector may run an FP32 CSR SpMM asked with ALG_DEFAULT as CSR_ALG3 (src/route/select.h,
 * TC_SEL_ALG3_*): on small matrices it is 1.3x faster on the H100, but only with its
 * preprocessing, which lives in the workspace.  The caller's buffer cannot hold it: with
 * ALG_DEFAULT a caller may reuse that buffer for anything between calls.  So the handle keeps
 * a few preprocessed workspaces of its own, keyed by the sparse descriptor (serial number
 * and structure generation) and the call's shape; preprocessing depends on the sparsity
 * pattern, not on the values (cuSPARSE's documentation of cusparseSpMM_preprocess), so values
 * rewritten in place or set anew keep the workspace, and any structure setter replaces it. */

static void tc_alg3_key_make(tc_alg3_key *k, tcsparseHandle_t h, const struct tcsparseSpMatDescr *A,
                             const struct tcsparseDnMatDescr *B, const struct tcsparseDnMatDescr *C,
                             cudaDataType ct)
{
    memset(k, 0, sizeof *k); /* compared with memcmp, padding included */
    k->serial = A->serial;
    k->gen = A->struct_gen;
    k->ar = A->rows; k->ac = A->cols; k->annz = A->nnz;
    k->br = B->rows; k->bc = B->cols; k->bld = B->ld;
    k->cr = C->rows; k->cc = C->cols; k->cld = C->ld;
    k->ot = (int)A->offsets_type; k->it = (int)A->indices_type; k->base = (int)A->base;
    k->avt = (int)A->value_type; k->bvt = (int)B->value_type; k->bord = (int)B->order;
    k->cvt = (int)C->value_type; k->cord = (int)C->order; k->ct = (int)ct;
    k->device = h->device;
    k->align = ((uintptr_t)A->values % 16 != 0) | ((uintptr_t)B->values % 16 != 0) << 1 |
               ((uintptr_t)C->values % 16 != 0) << 2;
}

void tc_alg3_release_all(tcsparseHandle_t h)
{
    int freed = 0;
    for (int i = 0; i < TC_ALG3_ENTRIES; i++) {
        if (h->alg3[i].buf != NULL) {
            cudaFree(h->alg3[i].buf); /* synchronises: no queued call still reads it */
            freed = 1;
        }
        memset(&h->alg3[i], 0, sizeof h->alg3[i]);
    }
    if (freed)
        (void)cudaGetLastError();
}

void tc_alg3_stream_change(tcsparseHandle_t h, cudaStream_t old_stream)
{
    int live = 0;
    for (int i = 0; i < TC_ALG3_ENTRIES; i++)
        live |= h->alg3[i].key.serial != 0;
    if (!live)
        return;
    /* A workspace's last call may still run on the old stream.  Wait for it; where that is
     * not allowed (the old stream is capturing) or fails, retire the workspaces: their keys
     * go, their memory is freed when the entry is next reused or at destroy. */
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(old_stream, &cap) == cudaSuccess && cap == cudaStreamCaptureStatusNone &&
        cudaStreamSynchronize(old_stream) == cudaSuccess)
        return;
    (void)cudaGetLastError();
    for (int i = 0; i < TC_ALG3_ENTRIES; i++)
        memset(&h->alg3[i].key, 0, sizeof h->alg3[i].key);
}

/* The entry for k: found, or a new one preprocessed now.  NULL with NOT_SUPPORTED where
 * CSR_ALG3 cannot run: cuSPARSE refuses it (remembered for the key), no memory, or a stream
 * capture in progress.  Inside a capture no workspace is used at all: the graph would keep
 * its address, and the workspace may be replaced or freed before the graph is replayed.
 * The caller then runs ALG_DEFAULT. */
static tcsparseStatus_t tc_alg3_entry_get(tcsparseHandle_t h, const tc_cusp_call *c,
                                          const tc_alg3_key *k, tcsparseOperation_t opB,
                                          const void *alpha, const void *beta,
                                          tc_alg3_entry **out)
{
    *out = NULL;
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(h->stream, &cap) != cudaSuccess || cap != cudaStreamCaptureStatusNone) {
        (void)cudaGetLastError();
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "the stream is capturing (a CSR_ALG3 workspace must outlive the graph)");
    }
    tc_alg3_entry *victim = NULL;
    for (int i = 0; i < TC_ALG3_ENTRIES; i++) {
        tc_alg3_entry *e = &h->alg3[i];
        if (e->key.serial != 0 && memcmp(&e->key, k, sizeof *k) == 0) {
            e->used = ++h->alg3_clock;
            if (e->failed)
                return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                                    "cuSPARSE refused CSR_ALG3 for this call shape");
            *out = e;
            return TCSPARSE_STATUS_SUCCESS;
        }
        if (victim == NULL || e->key.serial == 0 || (victim->key.serial != 0 && e->used < victim->used))
            victim = e;
    }
    if (victim->buf != NULL)
        cudaFree(victim->buf);
    memset(victim, 0, sizeof *victim);
    size_t need = 0;
    cusparseStatus_t s = tc_cusparse_real.spmm_buffer_size(
        c->h, CUSPARSE_OPERATION_NON_TRANSPOSE, (cusparseOperation_t)opB, alpha, c->sp, c->d1,
        beta, c->d2, (cudaDataType)k->ct, CUSPARSE_SPMM_CSR_ALG3, &need);
    if (s != CUSPARSE_STATUS_SUCCESS) {
        victim->key = *k; /* a refusal: remembered, not asked again */
        victim->used = ++h->alg3_clock;
        victim->failed = 1;
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED, "cusparseSpMM_bufferSize(CSR_ALG3): %s",
                            cusparseGetErrorName(s));
    }
    const size_t bytes = need < 256 ? 256 : need;
    void *buf = NULL;
    if (cudaMalloc(&buf, bytes) != cudaSuccess) { /* transient: the entry stays free */
        (void)cudaGetLastError();
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "no device memory for a CSR_ALG3 workspace of %zu bytes", bytes);
    }
    s = tc_cusparse_real.spmm_preprocess(c->h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                         (cusparseOperation_t)opB, alpha, c->sp, c->d1, beta,
                                         c->d2, (cudaDataType)k->ct, CUSPARSE_SPMM_CSR_ALG3, buf);
    /* Later calls may come on another stream: the workspace must be complete before any of
     * them reads it.  Once per workspace. */
    cudaError_t e = s == CUSPARSE_STATUS_SUCCESS ? cudaStreamSynchronize(h->stream) : cudaSuccess;
    if (s != CUSPARSE_STATUS_SUCCESS || e != cudaSuccess) {
        cudaFree(buf);
        (void)cudaGetLastError();
        if (s == CUSPARSE_STATUS_NOT_SUPPORTED || s == CUSPARSE_STATUS_INVALID_VALUE) {
            victim->key = *k;
            victim->used = ++h->alg3_clock;
            victim->failed = 1;
        }
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED, "%s (CSR_ALG3 preprocessing)",
                            s != CUSPARSE_STATUS_SUCCESS ? cusparseGetErrorName(s)
                                                         : cudaGetErrorName(e));
    }
    victim->key = *k;
    victim->used = ++h->alg3_clock;
    victim->buf = buf;
    victim->bytes = bytes;
    *out = victim;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tc_fallback_spmm_alg3(tcsparseHandle_t h, tcsparseOperation_t opB,
                                       const void *alpha, tcsparseConstSpMatDescr_t A,
                                       tcsparseConstDnMatDescr_t B, const void *beta,
                                       tcsparseDnMatDescr_t C, cudaDataType ct, int run)
{
    tc_cusp_call c;
    tcsparseStatus_t st = tc_cusp_prepare(h, A, B, C, &c);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    tc_alg3_key k;
    tc_alg3_key_make(&k, h, A, B, C, ct);
    tc_alg3_entry *e;
    st = tc_alg3_entry_get(h, &c, &k, opB, alpha, beta, &e);
    if (st != TCSPARSE_STATUS_SUCCESS || !run)
        return st;
    cusparseStatus_t s = tc_cusparse_real.spmm(c.h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                               (cusparseOperation_t)opB, alpha, c.sp, c.d1, beta,
                                               c.d2, ct, CUSPARSE_SPMM_CSR_ALG3, e->buf);
    if (s == CUSPARSE_STATUS_SUCCESS)
        return TCSPARSE_STATUS_SUCCESS;
    /* Not NOT_SUPPORTED: C may be partly written, ALG_DEFAULT must not run over it.  The key
     * runs ALG_DEFAULT from now on. */
    e->failed = 1;
    return tc_error_set(TCSPARSE_STATUS_EXECUTION_FAILED, "cusparseSpMM(CSR_ALG3) failed: %s",
                        cusparseGetErrorName(s));
}
