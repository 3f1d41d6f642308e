/* The interposer's tables (shim.h), under tc_shim_lock: the tcsparse handle mirroring each
 * cuSPARSE handle; the shadow tcsparse descriptor mirroring each caller's sparse descriptor
 * (it carries the tensor-core plan); the shadows kept from destroyed descriptors, with a
 * fingerprint of their structure, for a new descriptor over the same arrays; the structures
 * executed without a plan (TCSPARSE_X_PRELOAD_CONVERT_AFTER); the shadows parked while a
 * stream capture runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

pthread_mutex_t tc_shim_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct tc_shim_handle {
    cusparseHandle_t key;
    tcsparseHandle_t h;
    struct tc_shim_handle *next;
} tc_shim_handle;
static tc_shim_handle *tc_handles;

#define TC_BUCKETS 256
static tc_shim_spmat *tc_spmats[TC_BUCKETS];
static tc_shim_spmat *tc_orphans;
static int tc_norphans;
static unsigned long long tc_clock;

static unsigned tc_bucket(const void *p)
{
    uintptr_t x = (uintptr_t)p;
    x ^= x >> 17;
    x *= 0xed5ad4bbu;
    x ^= x >> 11;
    return (unsigned)(x % TC_BUCKETS);
}

int tc_shim_has_plan(const tc_shim_spmat *e)
{
    int has = 0;
    return e->shadow != NULL &&
           tc_hook_spmat_has_plan(e->shadow, &has) == TCSPARSE_STATUS_SUCCESS && has;
}

int tc_shim_has_plan_for(const tc_shim_spmat *e, int transposed)
{
    int has = 0;
    return e->shadow != NULL &&
           tc_hook_spmat_has_plan_for(e->shadow, transposed, &has) == TCSPARSE_STATUS_SUCCESS &&
           has;
}

/* ------------------------------------------------------------------ capture parking */

/* Whether this thread's last routed call ran on a capturing stream.  Freeing a plan (or a
 * guard's memory) synchronises the device, which would invalidate the capture: while it is
 * set, entries with either are parked on tc_pending and freed by the next call outside a
 * capture.  Descriptor
 * destruction has no stream to ask, so it goes by the thread's last call (the create,
 * multiply, destroy sequence of a descriptor-per-call program inside a capture). */
static __thread int tc_capture_seen;
static tc_shim_spmat *tc_pending;

static int tc_capturing(cudaStream_t s)
{
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(s, &cap) != cudaSuccess) {
        (void)cudaGetLastError();
        return 1;
    }
    return cap != cudaStreamCaptureStatusNone;
}

static void tc_spmat_free(tc_shim_spmat *e)
{
    if (e == NULL)
        return;
    /* a plan, or the guard's memory (any fingerprinted shadow holds it), is freed with a
     * synchronisation: parked while captures may be under way */
    if (e->shadow != NULL && tc_capture_seen &&
        (tc_shim_has_plan(e) || e->guardable || e->have_fp)) {
        e->key = NULL;
        e->next = tc_pending;
        tc_pending = e;
        return;
    }
    if (e->shadow != NULL)
        tcsparseDestroySpMat(e->shadow);
    tc_choice_free_all(&e->choices);
    free(e);
}

/* Frees what was parked during captures (not capturing). */
static void tc_pending_drain(void)
{
    while (tc_pending != NULL) {
        tc_shim_spmat *e = tc_pending;
        tc_pending = e->next;
        tc_spmat_free(e);
    }
}

int tc_shim_capturing(void)
{
    return tc_capture_seen;
}

void tc_shim_capture_note(cudaStream_t stream)
{
    tc_capture_seen = tc_capturing(stream);
    if (!tc_capture_seen)
        tc_pending_drain();
}

/* ------------------------------------------------------------------ kept plans */

static tc_shim_spmat *tc_spmat_unlink(const void *key)
{
    tc_shim_spmat **pp = &tc_spmats[tc_bucket(key)];
    for (; *pp != NULL; pp = &(*pp)->next)
        if ((*pp)->key == key) {
            tc_shim_spmat *e = *pp;
            *pp = e->next;
            e->next = NULL;
            return e;
        }
    return NULL;
}

/* A destroyed descriptor's entry: kept as an orphan when its plan can be recognised later. */
static void tc_orphan(tc_shim_spmat *e)
{
    if (tc_shim.keep == 0 || !e->have_fp || !tc_shim_has_plan(e)) {
        tc_spmat_free(e);
        return;
    }
    e->key = NULL;
    e->used = ++tc_clock;
    e->next = tc_orphans;
    tc_orphans = e;
    tc_norphans++;
    while (tc_norphans > tc_shim.keep) {
        tc_shim_spmat **oldest = NULL;
        for (tc_shim_spmat **pp = &tc_orphans; *pp != NULL; pp = &(*pp)->next)
            if (oldest == NULL || (*pp)->used < (*oldest)->used)
                oldest = pp;
        tc_shim_spmat *o = *oldest;
        *oldest = o->next;
        tc_norphans--;
        tc_spmat_free(o);
    }
}

int tc_shim_spmat_forget(const void *d, int orphan)
{
    tc_shim_spmat *e = tc_spmat_unlink(d);
    if (e == NULL)
        return 0;
    if (orphan)
        tc_orphan(e);
    else
        tc_spmat_free(e);
    return 1;
}

static int tc_sig_equal(const tc_spmat_sig *a, const tc_spmat_sig *b)
{
    return a->format == b->format && a->rows == b->rows && a->cols == b->cols &&
           a->nnz == b->nnz && a->offsets == b->offsets && a->indices == b->indices &&
           a->offsets_type == b->offsets_type && a->indices_type == b->indices_type &&
           a->base == b->base && a->value_type == b->value_type;
}

/* ------------------------------------------------------------------ shadow descriptors */

int tc_shim_read_spmat(cusparseConstSpMatDescr_t d, tc_spmat_sig *s, const void **values,
                       char *why, size_t n)
{
    cusparseFormat_t fmt;
    int batch = 1;
    if (d == NULL)
        return snprintf(why, n, "null sparse descriptor"), 0;
    if (cusparseSpMatGetFormat(d, &fmt) != CUSPARSE_STATUS_SUCCESS)
        return snprintf(why, n, "cusparseSpMatGetFormat failed"), 0;
    if (cusparseSpMatGetStridedBatch(d, &batch) != CUSPARSE_STATUS_SUCCESS || batch != 1)
        return snprintf(why, n, "strided batch"), 0;
    cusparseIndexType_t ot, it;
    cusparseIndexBase_t base;
    cudaDataType vt;
    cusparseStatus_t st;
    memset(s, 0, sizeof *s);
    switch (fmt) {
    case CUSPARSE_FORMAT_CSR:
        st = cusparseConstCsrGet(d, &s->rows, &s->cols, &s->nnz, &s->offsets, &s->indices, values,
                                 &ot, &it, &base, &vt);
        break;
    case CUSPARSE_FORMAT_CSC:
        st = cusparseConstCscGet(d, &s->rows, &s->cols, &s->nnz, &s->offsets, &s->indices, values,
                                 &ot, &it, &base, &vt);
        break;
    case CUSPARSE_FORMAT_COO:
        st = cusparseConstCooGet(d, &s->rows, &s->cols, &s->nnz, &s->offsets, &s->indices, values,
                                 &it, &base, &vt);
        ot = it;
        break;
    default:
        return snprintf(why, n, "sparse format %d (tcsparse takes CSR, CSC, COO)", (int)fmt), 0;
    }
    if (st != CUSPARSE_STATUS_SUCCESS)
        return snprintf(why, n, "reading the sparse descriptor failed (%d)", (int)st), 0;
    s->format = (int)fmt;
    s->offsets_type = (int)ot;
    s->indices_type = (int)it;
    s->base = (int)base;
    s->value_type = (int)vt;
    return 1;
}

static tcsparseStatus_t tc_make_shadow(const tc_spmat_sig *s, const void *values,
                                       tcsparseSpMatDescr_t *out)
{
    void *off = (void *)s->offsets, *idx = (void *)s->indices, *val = (void *)values;
    switch (s->format) {
    case CUSPARSE_FORMAT_CSR:
        return tcsparseCreateCsr(out, s->rows, s->cols, s->nnz, off, idx, val,
                                 (tcsparseIndexType_t)s->offsets_type,
                                 (tcsparseIndexType_t)s->indices_type,
                                 (tcsparseIndexBase_t)s->base, (cudaDataType)s->value_type);
    case CUSPARSE_FORMAT_CSC:
        return tcsparseCreateCsc(out, s->rows, s->cols, s->nnz, off, idx, val,
                                 (tcsparseIndexType_t)s->offsets_type,
                                 (tcsparseIndexType_t)s->indices_type,
                                 (tcsparseIndexBase_t)s->base, (cudaDataType)s->value_type);
    default:
        return tcsparseCreateCoo(out, s->rows, s->cols, s->nnz, off, idx, val,
                                 (tcsparseIndexType_t)s->indices_type,
                                 (tcsparseIndexBase_t)s->base, (cudaDataType)s->value_type);
    }
}

/* Drops the shadow's plan by announcing its arrays as rewritten in place (the same pointers
 * set again, as tcsparse's setters take a structure change). */
static void tc_drop_plan(const tc_shim_spmat *e, void *values)
{
    void *off = (void *)e->sig.offsets, *idx = (void *)e->sig.indices;
    switch (e->sig.format) {
    case CUSPARSE_FORMAT_CSR: (void)tcsparseCsrSetPointers(e->shadow, off, idx, values); break;
    case CUSPARSE_FORMAT_CSC: (void)tcsparseCscSetPointers(e->shadow, off, idx, values); break;
    default: (void)tcsparseCooSetPointers(e->shadow, off, idx, values); break;
    }
}

/* A stale shadow replaced by a fresh one without a plan (or, failing that, its plan dropped). */
static void tc_shadow_renew(tc_shim_spmat *e)
{
    tcsparseSpMatDescr_t fresh = NULL;
    const void *values = NULL;
    (void)tcsparseConstSpMatGetValues(e->shadow, &values);
    if (tc_make_shadow(&e->sig, values, &fresh) == TCSPARSE_STATUS_SUCCESS) {
        tcsparseDestroySpMat(e->shadow);
        e->shadow = fresh;
    } else {
        tc_drop_plan(e, (void *)values);
        (void)tc_hook_spmat_guard(e->shadow, 0, 0);
    }
    e->unverified = 0;
    e->have_fp = 0;
    e->guardable = 0;
    e->guarded = 0;
    e->renewals++;
    tc_choice_free_all(&e->choices); /* timed on another structure */
}

tc_shim_spmat *tc_shim_spmat_get(cusparseConstSpMatDescr_t d, const tc_spmat_sig *read,
                                 const void *values, char *why, size_t n)
{
    const tc_spmat_sig sig = *read;
    tc_shim_spmat *e = tc_spmat_unlink(d);
    if (e != NULL && !tc_sig_equal(&e->sig, &sig)) {
        tc_spmat_free(e); /* pointers or sizes changed: the old plan is stale */
        e = NULL;
    }
    if (e == NULL && tc_norphans > 0) {
        /* a kept plan over the same arrays: used to decide at once, and checked against what
         * the arrays hold now before the tensor cores run on it (tc_shim_verify) */
        for (tc_shim_spmat **pp = &tc_orphans; *pp != NULL; pp = &(*pp)->next) {
            if (!tc_sig_equal(&(*pp)->sig, &sig))
                continue;
            e = *pp;
            *pp = e->next;
            e->next = NULL;
            tc_norphans--;
            e->unverified = !tc_shim.trust;
            e->guarded = 0;
            int tripped = 0;
            if (e->guardable && !tc_capture_seen &&
                tc_hook_spmat_guard_tripped(e->shadow, &tripped) == TCSPARSE_STATUS_SUCCESS &&
                tripped) {
                /* a guarded execution found another structure in these arrays: the plan is
                 * stale (inside a capture it stays, and the guard keeps catching it) */
                tc_shadow_renew(e);
                tc_shim_logf("kept plan dropped: a check on the device found another "
                             "structure in the arrays");
            }
            break;
        }
    }
    if (e == NULL) {
        e = calloc(1, sizeof *e);
        if (e == NULL)
            return snprintf(why, n, "out of host memory"), NULL;
        e->sig = sig;
        if (tc_make_shadow(&sig, values, &e->shadow) != TCSPARSE_STATUS_SUCCESS) {
            snprintf(why, n, "tcsparse refused the matrix: %s", tcsparseGetLastErrorMessage());
            free(e);
            return NULL;
        }
    }
    e->key = d;
    if (tcsparseSpMatSetValues(e->shadow, (void *)values) != TCSPARSE_STATUS_SUCCESS) {
        snprintf(why, n, "tcsparse refused the values: %s", tcsparseGetLastErrorMessage());
        tc_spmat_free(e);
        return NULL;
    }
    unsigned b = tc_bucket(d);
    e->next = tc_spmats[b];
    tc_spmats[b] = e;
    return e;
}

/* Checks that the arrays still hold the structure the plan was built from; a stale shadow is
 * replaced by a fresh one without a plan. */
int tc_shim_verify(tc_shim_spmat *e, cudaStream_t stream)
{
    if (!e->unverified)
        return 1;
    uint64_t fp;
    if (tc_capturing(stream))
        return 0; /* cannot check inside a capture, nor drop (a free would sync): the caller
                     sends the call to cuSPARSE and the plan stays unverified */
    if (tc_hook_spmat_fingerprint(e->shadow, stream, &fp) == TCSPARSE_STATUS_SUCCESS &&
        fp == e->fp) {
        e->unverified = 0;
        e->guarded = 0;
        (void)tc_hook_spmat_guard(e->shadow, 0, 0); /* checked: the descriptor's own now */
        tc_shim_logf("kept plan adopted by a new descriptor (fingerprint matches)");
        return 1;
    }
    tc_shadow_renew(e);
    tc_shim_logf("kept plan dropped: the arrays hold another structure now");
    return 0;
}

void tc_shim_note_plan(tc_shim_spmat *e, cudaStream_t stream)
{
    if (e->have_fp || tc_shim.keep == 0 || !tc_shim_has_plan(e) || tc_capturing(stream))
        return;
    if (tc_shim.trust) {
        e->have_fp = 1; /* adopted on pointers and sizes alone */
        return;
    }
    if (tc_hook_spmat_fingerprint(e->shadow, stream, &e->fp) != TCSPARSE_STATUS_SUCCESS)
        return;
    e->have_fp = 1;
    /* the guard's memory now, disarmed: arming it later allocates nothing (captures) */
    e->guardable = tc_hook_spmat_guard(e->shadow, 1, e->fp) == TCSPARSE_STATUS_SUCCESS &&
                   tc_hook_spmat_guard(e->shadow, 0, e->fp) == TCSPARSE_STATUS_SUCCESS;
    /* not guardable (CSC, COO): adoptions are checked by tc_shim_verify */
}

int tc_shim_guard(tc_shim_spmat *e)
{
    if (!e->guardable || tc_hook_spmat_guard(e->shadow, 1, e->fp) != TCSPARSE_STATUS_SUCCESS)
        return 0;
    if (!e->guarded)
        tc_shim_logf("kept plan adopted by a new descriptor (checked on the device)");
    e->guarded = 1;
    return 1;
}

/* ------------------------------------------------------------------ structures seen */

/* Structures seen without a plan (TCSPARSE_X_PRELOAD_CONVERT_AFTER): a program that builds a
 * new matrix for one product (PyTorch's transposes in a backward pass) would pay a conversion
 * worth many products for one use.  With the automatic route, a structure is converted only
 * from its N-th execution on (default 2); _preprocess always converts. */
#define TC_SEEN 64
static struct {
    tc_spmat_sig sig;
    int count;
    unsigned long long used;
} tc_seen[TC_SEEN];

/* The slot holding the structure, or -1. */
static int tc_seen_find(const tc_spmat_sig *sig)
{
    for (int i = 0; i < TC_SEEN; i++)
        if (tc_seen[i].count > 0 && tc_sig_equal(&tc_seen[i].sig, sig))
            return i;
    return -1;
}

int tc_shim_seen_peek(const tc_shim_spmat *e)
{
    const int i = tc_seen_find(&e->sig);
    return i < 0 ? 0 : tc_seen[i].count;
}

int tc_shim_seen_count(const tc_shim_spmat *e)
{
    int i = tc_seen_find(&e->sig);
    if (i >= 0) {
        tc_seen[i].used = ++tc_clock;
        return ++tc_seen[i].count;
    }
    i = 0; /* the least recently used slot takes it */
    for (int j = 1; j < TC_SEEN; j++)
        if (tc_seen[j].used < tc_seen[i].used)
            i = j;
    tc_seen[i].sig = e->sig;
    tc_seen[i].count = 1;
    tc_seen[i].used = ++tc_clock;
    return 1;
}

/* ------------------------------------------------------------------ handles, dense shadows */

tcsparseHandle_t tc_shim_handle_get(cusparseHandle_t handle, cudaStream_t *stream, char *why,
                                    size_t n)
{
    cusparsePointerMode_t mode;
    if (handle == NULL)
        return snprintf(why, n, "null handle"), NULL;
    if (cusparseGetStream(handle, stream) != CUSPARSE_STATUS_SUCCESS ||
        cusparseGetPointerMode(handle, &mode) != CUSPARSE_STATUS_SUCCESS)
        return snprintf(why, n, "the handle could not be read"), NULL;
    tc_shim_handle *e = tc_handles;
    while (e != NULL && e->key != handle)
        e = e->next;
    if (e == NULL) {
        e = calloc(1, sizeof *e);
        if (e == NULL)
            return snprintf(why, n, "out of host memory"), NULL;
        if (tcsparseCreate(&e->h) != TCSPARSE_STATUS_SUCCESS) {
            snprintf(why, n, "tcsparseCreate: %s", tcsparseGetLastErrorMessage());
            free(e);
            return NULL;
        }
        (void)tc_hook_set_mode(e->h, TC_SHIM_MODE); /* a live handle, known bits */
        e->key = handle;
        e->next = tc_handles;
        tc_handles = e;
    }
    if (tcsparseSetStream(e->h, *stream) != TCSPARSE_STATUS_SUCCESS ||
        tcsparseSetPointerMode(e->h, (tcsparsePointerMode_t)mode) != TCSPARSE_STATUS_SUCCESS)
        return snprintf(why, n, "%s", tcsparseGetLastErrorMessage()), NULL;
    return e->h;
}

void tc_shim_handle_drop(cusparseHandle_t handle)
{
    for (tc_shim_handle **pp = &tc_handles; *pp != NULL; pp = &(*pp)->next)
        if ((*pp)->key == handle) {
            tc_shim_handle *e = *pp;
            *pp = e->next;
            tcsparseDestroy(e->h);
            free(e);
            return;
        }
}

tcsparseStatus_t tc_shim_dn_shadow(cusparseConstDnMatDescr_t d, int is_const,
                                   tcsparseDnMatDescr_t *out, char *why, size_t n)
{
    int64_t rows, cols, ld, stride;
    const void *values;
    cudaDataType t;
    cusparseOrder_t order;
    int batch = 1;
    *out = NULL;
    if (d == NULL) {
        snprintf(why, n, "null dense descriptor");
        return TCSPARSE_STATUS_INVALID_VALUE;
    }
    if (cusparseConstDnMatGet(d, &rows, &cols, &ld, &values, &t, &order) != CUSPARSE_STATUS_SUCCESS ||
        cusparseDnMatGetStridedBatch(d, &batch, &stride) != CUSPARSE_STATUS_SUCCESS) {
        snprintf(why, n, "reading a dense descriptor failed");
        return TCSPARSE_STATUS_INVALID_VALUE;
    }
    if (batch != 1) {
        snprintf(why, n, "strided batch");
        return TCSPARSE_STATUS_NOT_SUPPORTED;
    }
    tcsparseStatus_t st =
        is_const ? tcsparseCreateConstDnMat((tcsparseConstDnMatDescr_t *)out, rows, cols, ld,
                                            values, t, (tcsparseOrder_t)order)
                 : tcsparseCreateDnMat(out, rows, cols, ld, (void *)values, t,
                                       (tcsparseOrder_t)order);
    if (st != TCSPARSE_STATUS_SUCCESS)
        snprintf(why, n, "tcsparse refused a dense matrix: %s", tcsparseGetLastErrorMessage());
    return st;
}
