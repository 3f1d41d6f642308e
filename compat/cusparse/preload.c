/* libtcsparse_preload.so: run unmodified cuSPARSE programs through tcsparse's route.
 *
 * With LD_PRELOAD naming this library, a dynamically linked program's calls to
 * cusparseSpMM{,_bufferSize,_preprocess} and cusparseSDDMM{,_bufferSize,_preprocess} land
 * here.  The caller's descriptors are read with cuSPARSE's own getters and mirrored by
 * tcsparse "shadow" descriptors (cached per cuSPARSE descriptor, so the tensor-core plan built
 * for a matrix is reused); tcsparse's route decides; where it picks the tensor cores the
 * kernel runs on the caller's stream, and everywhere else the real cuSPARSE function is called
 * with the caller's own arguments, untouched.  Calls that change or free a descriptor
 * (destroy, set pointers, strided batch) are intercepted too, to keep the cache right.
 *
 * Rules kept:
 *  - the real functions are found once (dlvsym for the libcusparse.so.12 version, else
 *    dlsym(RTLD_NEXT)); nothing in here calls an intercepted name: tcsparse's own cuSPARSE
 *    fallback goes through tc_cusparse_real, pointed at the real functions before any call,
 *    and a thread-local depth counter sends any call made from inside the interposer (or
 *    from inside cuSPARSE itself) straight to the real function;
 *  - the handle's stream and pointer mode are read on every call (device-mode alpha/beta are
 *    never read on the host);
 *  - after _preprocess nothing is allocated or synchronised on the execute path; inside a
 *    stream capture a matrix without a plan goes to cuSPARSE;
 *  - one mutex guards the caches; a forked child (another pid) passes everything through;
 *  - TCSPARSE_ROUTE=cusparse: pure pass-through; TCSPARSE_LOG=1: one line per intercepted
 *    call on stderr.
 *
 * Plans of destroyed descriptors: programs such as PyTorch create a descriptor per call.  A
 * destroyed descriptor's shadow, when it has a plan, is kept (TCSPARSE_PRELOAD_KEEP of them,
 * default 8, least recently used dropped) with a fingerprint of its structure arrays taken
 * when the plan was built.  A new descriptor over the same arrays (same pointers, sizes,
 * types) takes it over to decide; before the tensor cores run on it, the arrays' fingerprint
 * now is compared (tc_verify: one synchronisation; TCSPARSE_PRELOAD_TRUST_POINTERS=1 skips
 * it).  Matrices used once: with the automatic route a structure is converted only from its
 * TCSPARSE_PRELOAD_CONVERT_AFTER-th execution (default 2); before that cuSPARSE runs it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fallback.h"
#include "internal.h"
#include "plan.h"
#include "route.h"
#include "shim.h"
#include "tcsparse_ext.h"

#define TC_SHIM_EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------ the real functions */

static struct {
    __typeof__(cusparseSpMM_bufferSize) *spmm_buffer_size;
    __typeof__(cusparseSpMM_preprocess) *spmm_preprocess;
    __typeof__(cusparseSpMM) *spmm;
    __typeof__(cusparseSDDMM_bufferSize) *sddmm_buffer_size;
    __typeof__(cusparseSDDMM_preprocess) *sddmm_preprocess;
    __typeof__(cusparseSDDMM) *sddmm;
    __typeof__(cusparseDestroySpMat) *destroy_spmat;
    __typeof__(cusparseCsrSetPointers) *csr_set_pointers;
    __typeof__(cusparseCscSetPointers) *csc_set_pointers;
    __typeof__(cusparseCooSetPointers) *coo_set_pointers;
    __typeof__(cusparseSpMatSetValues) *spmat_set_values;
    __typeof__(cusparseCsrSetStridedBatch) *csr_set_strided_batch;
    __typeof__(cusparseCooSetStridedBatch) *coo_set_strided_batch;
    __typeof__(cusparseDestroy) *destroy;
} tc_real;

static pthread_once_t tc_once = PTHREAD_ONCE_INIT;
static pid_t tc_pid;          /* the process that loaded us; a forked child differs */
static int tc_ready;          /* every real function was found */
static int tc_passthrough;    /* TCSPARSE_ROUTE=cusparse */
static int tc_log;            /* TCSPARSE_LOG */
static int tc_keep = 8;       /* TCSPARSE_PRELOAD_KEEP */
static int tc_trust;          /* TCSPARSE_PRELOAD_TRUST_POINTERS=1: adopt without a check */
static int tc_convert_after = 2; /* TCSPARSE_PRELOAD_CONVERT_AFTER */
static __thread int tc_depth; /* > 0 inside the interposer or a real call */

static void *tc_find(const char *name)
{
    void *f = dlvsym(RTLD_NEXT, name, "libcusparse.so.12");
    if (f == NULL)
        f = dlsym(RTLD_NEXT, name);
    return f;
}

static void tc_init(void)
{
    tc_pid = getpid();
#define TC_FIND(field, name) \
    (tc_real.field = (__typeof__(tc_real.field))tc_find(name)) != NULL
    /* each name on its own: a function missing from an older cuSPARSE must not leave the
     * others unresolved (they are still forwarded); routing needs all of them */
    int found = 1;
    found &= TC_FIND(spmm_buffer_size, "cusparseSpMM_bufferSize");
    found &= TC_FIND(spmm_preprocess, "cusparseSpMM_preprocess");
    found &= TC_FIND(spmm, "cusparseSpMM");
    found &= TC_FIND(sddmm_buffer_size, "cusparseSDDMM_bufferSize");
    found &= TC_FIND(sddmm_preprocess, "cusparseSDDMM_preprocess");
    found &= TC_FIND(sddmm, "cusparseSDDMM");
    found &= TC_FIND(destroy_spmat, "cusparseDestroySpMat");
    found &= TC_FIND(csr_set_pointers, "cusparseCsrSetPointers");
    found &= TC_FIND(csc_set_pointers, "cusparseCscSetPointers");
    found &= TC_FIND(coo_set_pointers, "cusparseCooSetPointers");
    found &= TC_FIND(spmat_set_values, "cusparseSpMatSetValues");
    found &= TC_FIND(csr_set_strided_batch, "cusparseCsrSetStridedBatch");
    found &= TC_FIND(coo_set_strided_batch, "cusparseCooSetStridedBatch");
    found &= TC_FIND(destroy, "cusparseDestroy");
    tc_ready = found;
#undef TC_FIND
    if (tc_ready) {
        /* tcsparse's own fallback must reach the real cuSPARSE, never this file */
        tc_cusparse_real.spmm_buffer_size = tc_real.spmm_buffer_size;
        tc_cusparse_real.spmm_preprocess = tc_real.spmm_preprocess;
        tc_cusparse_real.spmm = tc_real.spmm;
        tc_cusparse_real.sddmm_buffer_size = tc_real.sddmm_buffer_size;
        tc_cusparse_real.sddmm_preprocess = tc_real.sddmm_preprocess;
        tc_cusparse_real.sddmm = tc_real.sddmm;
    }
    const char *e = getenv("TCSPARSE_ROUTE");
    tc_passthrough = e != NULL && strcmp(e, "cusparse") == 0;
    e = getenv("TCSPARSE_LOG");
    tc_log = e != NULL && e[0] != '\0' && strcmp(e, "0") != 0;
    e = getenv("TCSPARSE_PRELOAD_KEEP");
    if (e != NULL && e[0] != '\0') {
        char *end;
        long v = strtol(e, &end, 10);
        if (*end == '\0' && v >= 0 && v <= 1024)
            tc_keep = (int)v;
    }
    e = getenv("TCSPARSE_PRELOAD_CONVERT_AFTER");
    if (e != NULL && e[0] != '\0') {
        char *end;
        long v = strtol(e, &end, 10);
        if (*end == '\0' && v >= 1 && v <= 1000000)
            tc_convert_after = (int)v;
    }
    e = getenv("TCSPARSE_PRELOAD_TRUST_POINTERS");
    tc_trust = e != NULL && strcmp(e, "1") == 0;
    if (!tc_ready)
        fprintf(stderr, "tcsparse-preload: some real cuSPARSE functions were not found: the "
                        "others are forwarded, no call is routed, and a missing one fails "
                        "with CUSPARSE_STATUS_NOT_INITIALIZED\n");
    else if (tc_log)
        fprintf(stderr, "tcsparse-preload: loaded (%s)\n",
                tc_passthrough ? "TCSPARSE_ROUTE=cusparse: pass-through" : "routing");
}

__attribute__((constructor)) static void tc_preload_ctor(void)
{
    pthread_once(&tc_once, tc_init);
}

/* Whether this call may be routed: the real functions exist, it is not a nested call, not a
 * forked child, not pass-through. */
static int tc_route_on(void)
{
    pthread_once(&tc_once, tc_init);
    return tc_ready && tc_depth == 0 && !tc_passthrough && getpid() == tc_pid;
}

/* Whether this call may touch the shim's tables: not a nested call, and not a forked child
 * (which only forwards: the tables and tc_lock are the parent's copies, and the lock may
 * have been held by another thread at the fork). */
static int tc_top(void)
{
    pthread_once(&tc_once, tc_init);
    return tc_depth == 0 && getpid() == tc_pid;
}

static void tc_logf(const char *fmt, ...)
{
    if (!tc_log)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "tcsparse-preload: %s\n", line);
}

/* Calls through to the real function with the depth raised; NOT_INITIALIZED if it is
 * missing. */
#define TC_REAL(field, ...)                                                      \
    (tc_real.field == NULL ? CUSPARSE_STATUS_NOT_INITIALIZED                     \
                           : (tc_depth++, tc_real_status = tc_real.field(__VA_ARGS__), \
                              tc_depth--, tc_real_status))
static __thread cusparseStatus_t tc_real_status;

/* ------------------------------------------------------------------ caches */

static pthread_mutex_t tc_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct tc_shim_handle {
    cusparseHandle_t key;
    tcsparseHandle_t h;
    struct tc_shim_handle *next;
} tc_shim_handle;
static tc_shim_handle *tc_handles;

/* What a shadow sparse descriptor was made from. */
typedef struct {
    int format;
    int64_t rows, cols, nnz;
    const void *offsets, *indices;
    int offsets_type, indices_type, base, value_type;
} tc_spmat_sig;

typedef struct tc_shim_spmat {
    const void *key; /* the caller's descriptor; NULL for a kept orphan */
    tc_spmat_sig sig;
    tcsparseSpMatDescr_t shadow;
    int have_fp;
    uint64_t fp;
    int unverified; /* adopted from a kept plan; checked before a tensor-core launch */
    unsigned long long used; /* orphans: last use, for least-recently-used */
    struct tc_shim_spmat *next;
} tc_shim_spmat;

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

/* Whether this thread's last routed call ran on a capturing stream.  Freeing a plan
 * synchronises the device, which would invalidate the capture: while it is set, entries with
 * a plan are parked on tc_pending (lock held) and freed by the next call outside a capture.
 * Descriptor destruction has no stream to ask, so it goes by the thread's last call (the
 * create, multiply, destroy sequence of a descriptor-per-call program inside a capture). */
static __thread int tc_capture_seen;
static tc_shim_spmat *tc_pending;

static void tc_spmat_free(tc_shim_spmat *e)
{
    if (e == NULL)
        return;
    if (e->shadow != NULL &&
        (tc_capture_seen && ((const struct tcsparseSpMatDescr *)e->shadow)->plan != NULL)) {
        e->key = NULL;
        e->next = tc_pending;
        tc_pending = e;
        return;
    }
    if (e->shadow != NULL)
        tcsparseDestroySpMat(e->shadow);
    free(e);
}

/* Frees what was parked during captures (lock held, not capturing). */
static void tc_pending_drain(void)
{
    while (tc_pending != NULL) {
        tc_shim_spmat *e = tc_pending;
        tc_pending = e->next;
        tc_spmat_free(e);
    }
}

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

static int tc_has_plan(const tc_shim_spmat *e)
{
    return e->shadow != NULL && ((const struct tcsparseSpMatDescr *)e->shadow)->plan != NULL;
}

/* A destroyed descriptor's entry: kept as an orphan when its plan can be recognised later. */
static void tc_orphan(tc_shim_spmat *e)
{
    if (tc_keep == 0 || !e->have_fp || !tc_has_plan(e)) {
        tc_spmat_free(e);
        return;
    }
    e->key = NULL;
    e->used = ++tc_clock;
    e->next = tc_orphans;
    tc_orphans = e;
    tc_norphans++;
    while (tc_norphans > tc_keep) {
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

static int tc_sig_equal(const tc_spmat_sig *a, const tc_spmat_sig *b)
{
    return a->format == b->format && a->rows == b->rows && a->cols == b->cols &&
           a->nnz == b->nnz && a->offsets == b->offsets && a->indices == b->indices &&
           a->offsets_type == b->offsets_type && a->indices_type == b->indices_type &&
           a->base == b->base && a->value_type == b->value_type;
}

static size_t tc_index_bytes(int t)
{
    return t == CUSPARSE_INDEX_64I ? 8 : t == CUSPARSE_INDEX_32I ? 4 : 2;
}

/* Byte sizes of the two structure arrays of a signature. */
static void tc_sig_bytes(const tc_spmat_sig *s, size_t *off_bytes, size_t *idx_bytes)
{
    int64_t noff = s->format == CUSPARSE_FORMAT_CSR   ? s->rows + 1
                   : s->format == CUSPARSE_FORMAT_CSC ? s->cols + 1
                                                      : s->nnz;
    *off_bytes = (size_t)noff * tc_index_bytes(s->offsets_type);
    *idx_bytes = (size_t)s->nnz * tc_index_bytes(s->indices_type);
}

static int tc_capturing(cudaStream_t s)
{
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(s, &cap) != cudaSuccess) {
        (void)cudaGetLastError();
        return 1;
    }
    return cap != cudaStreamCaptureStatusNone;
}

static int tc_fingerprint(const tc_spmat_sig *s, cudaStream_t stream, uint64_t *fp)
{
    size_t ob, ib;
    tc_sig_bytes(s, &ob, &ib);
    return tc_shim_fingerprint(s->offsets, ob, s->indices, ib, stream, fp);
}

/* Reads a cuSPARSE sparse descriptor.  0 and a reason when tcsparse cannot mirror it. */
static int tc_read_spmat(cusparseConstSpMatDescr_t d, tc_spmat_sig *s, const void **values,
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

/* The shadow of a caller's sparse descriptor, made or refreshed (lock held).  NULL with a
 * reason when tcsparse cannot mirror it. */
static tc_shim_spmat *tc_spmat_get(cusparseConstSpMatDescr_t d, char *why, size_t n)
{
    tc_spmat_sig sig;
    const void *values = NULL;
    if (!tc_read_spmat(d, &sig, &values, why, n))
        return NULL;
    tc_shim_spmat *e = tc_spmat_unlink(d);
    if (e != NULL && !tc_sig_equal(&e->sig, &sig)) {
        tc_spmat_free(e); /* pointers or sizes changed: the old plan is stale */
        e = NULL;
    }
    if (e == NULL && tc_norphans > 0) {
        /* a kept plan over the same arrays: used to decide at once, and checked against what
         * the arrays hold now before the tensor cores run on it (tc_verify) */
        for (tc_shim_spmat **pp = &tc_orphans; *pp != NULL; pp = &(*pp)->next) {
            if (!tc_sig_equal(&(*pp)->sig, &sig))
                continue;
            e = *pp;
            *pp = e->next;
            e->next = NULL;
            tc_norphans--;
            e->unverified = !tc_trust;
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

/* An adopted plan is about to drive the tensor cores: check that the arrays still hold the
 * structure it was built from.  1: go ahead; 0: it was stale (or cannot be checked now) and
 * the shadow has been replaced by a fresh one without a plan. */
static int tc_verify(tc_shim_spmat *e, cudaStream_t stream)
{
    if (!e->unverified)
        return 1;
    uint64_t fp;
    if (tc_capturing(stream))
        return 0; /* cannot check inside a capture, nor drop (a free would sync): the caller
                     sends the call to cuSPARSE and the plan stays unverified */
    if (tc_fingerprint(&e->sig, stream, &fp) == 0 && fp == e->fp) {
        e->unverified = 0;
        tc_logf("kept plan adopted by a new descriptor (fingerprint matches)");
        return 1;
    }
    tcsparseSpMatDescr_t fresh = NULL;
    const void *values = ((const struct tcsparseSpMatDescr *)e->shadow)->values;
    if (tc_make_shadow(&e->sig, values, &fresh) == TCSPARSE_STATUS_SUCCESS) {
        tcsparseDestroySpMat(e->shadow);
        e->shadow = fresh;
    } else {
        tc_plan_invalidate((struct tcsparseSpMatDescr *)e->shadow);
    }
    e->unverified = 0;
    e->have_fp = 0;
    tc_logf("kept plan dropped: the arrays hold another structure now");
    return 0;
}

/* Structures seen without a plan (TCSPARSE_PRELOAD_CONVERT_AFTER): a program that builds a
 * new matrix for one product (PyTorch's transposes in a backward pass) would pay a conversion
 * worth many products for one use.  With the automatic route, a structure is converted only
 * from its N-th execution on (default 2); _preprocess always converts. */
#define TC_SEEN 64
static struct {
    tc_spmat_sig sig;
    int count;
    unsigned long long used;
} tc_seen[TC_SEEN];

/* Counts one more execution of a structure without a plan; returns the count. */
static int tc_seen_count(const tc_spmat_sig *sig)
{
    int slot = 0;
    for (int i = 0; i < TC_SEEN; i++) {
        if (tc_seen[i].count > 0 && tc_sig_equal(&tc_seen[i].sig, sig)) {
            tc_seen[i].used = ++tc_clock;
            return ++tc_seen[i].count;
        }
        if (tc_seen[i].used < tc_seen[slot].used)
            slot = i;
    }
    tc_seen[slot].sig = *sig;
    tc_seen[slot].count = 1;
    tc_seen[slot].used = ++tc_clock;
    return 1;
}

/* After a call that may have built the plan: fingerprint it once, outside any capture. */
static void tc_spmat_note_plan(tc_shim_spmat *e, cudaStream_t stream)
{
    if (e->have_fp || tc_keep == 0 || !tc_has_plan(e) || tc_capturing(stream))
        return;
    if (tc_trust) {
        e->have_fp = 1; /* adopted on pointers and sizes alone */
        return;
    }
    if (tc_fingerprint(&e->sig, stream, &e->fp) == 0)
        e->have_fp = 1;
}

/* The tcsparse handle mirroring a cuSPARSE handle, with its stream and pointer mode. */
static tcsparseHandle_t tc_handle_get(cusparseHandle_t handle, cudaStream_t *stream, char *why,
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
        e->h->defer_cusparse = 1;
        e->h->quiet = 1;
        e->key = handle;
        e->next = tc_handles;
        tc_handles = e;
    }
    if (tcsparseSetStream(e->h, *stream) != TCSPARSE_STATUS_SUCCESS ||
        tcsparseSetPointerMode(e->h, (tcsparsePointerMode_t)mode) != TCSPARSE_STATUS_SUCCESS)
        return snprintf(why, n, "%s", tcsparseGetLastErrorMessage()), NULL;
    return e->h;
}

static tcsparseStatus_t tc_dn_shadow(cusparseConstDnMatDescr_t d, int is_const,
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

/* ------------------------------------------------------------------ SpMM / SDDMM */

enum { TC_PH_SIZE, TC_PH_PREPROCESS, TC_PH_EXEC };
static const char *const tc_ph_suffix[] = {"_bufferSize", "_preprocess", ""};

typedef struct {
    int sddmm;
    int phase;
    cusparseHandle_t handle;
    cusparseOperation_t opA, opB;
    const void *alpha, *beta;
    const void *sp;       /* SpMM: matA; SDDMM: matC */
    const void *dn1, *dn2; /* SpMM: matB, matC; SDDMM: matA, matB */
    cudaDataType ct;
    int alg;
    void *buffer;
    size_t *size;
} tc_call;

/* The tcsparse function of the call, on shadow descriptors. */
static tcsparseStatus_t tc_call_tcsparse(tcsparseHandle_t h, const tc_call *c, tc_shim_spmat *e,
                                         tcsparseDnMatDescr_t d1, tcsparseDnMatDescr_t d2)
{
    const tcsparseOperation_t opA = (tcsparseOperation_t)c->opA, opB = (tcsparseOperation_t)c->opB;
    h->deferred = 1;
    if (!c->sddmm) {
        tcsparseSpMMAlg_t alg = (tcsparseSpMMAlg_t)c->alg;
        if (c->phase == TC_PH_SIZE)
            return tcsparseSpMM_bufferSize(h, opA, opB, c->alpha, e->shadow, d1, c->beta, d2,
                                           c->ct, alg, c->size);
        if (c->phase == TC_PH_PREPROCESS)
            return tcsparseSpMM_preprocess(h, opA, opB, c->alpha, e->shadow, d1, c->beta, d2,
                                           c->ct, alg, c->buffer);
        return tcsparseSpMM(h, opA, opB, c->alpha, e->shadow, d1, c->beta, d2, c->ct, alg,
                            c->buffer);
    }
    tcsparseSDDMMAlg_t alg = (tcsparseSDDMMAlg_t)c->alg;
    if (c->phase == TC_PH_SIZE)
        return tcsparseSDDMM_bufferSize(h, opA, opB, c->alpha, d1, d2, c->beta, e->shadow, c->ct,
                                        alg, c->size);
    if (c->phase == TC_PH_PREPROCESS)
        return tcsparseSDDMM_preprocess(h, opA, opB, c->alpha, d1, d2, c->beta, e->shadow, c->ct,
                                        alg, c->buffer);
    return tcsparseSDDMM(h, opA, opB, c->alpha, d1, d2, c->beta, e->shadow, c->ct, alg,
                         c->buffer);
}

/* Runs the call through tcsparse on shadow descriptors.  Returns 1 when tcsparse did the whole
 * work (TC path executed, or a size computed); 0 when the real cuSPARSE must be called, with
 * `route` and `why` describing the decision. */
/* Set by tc_try when a tensor-core execution failed after it may have launched work. */
static __thread int tc_exec_failed;

static int tc_try(const tc_call *c, char *route, size_t rn, char *why, size_t wn)
{
    int done = 0;
    snprintf(route, rn, "cusparse");
    pthread_mutex_lock(&tc_lock);
    tc_depth++;
    cudaStream_t stream = 0;
    tcsparseDnMatDescr_t d1 = NULL, d2 = NULL;
    tcsparseRouteInfo_t info;
    tcsparseStatus_t st;
    tcsparseHandle_t h = tc_handle_get(c->handle, &stream, why, wn);
    if (h != NULL) {
        tc_capture_seen = tc_capturing(stream);
        if (!tc_capture_seen)
            tc_pending_drain();
    }
    tc_shim_spmat *e = h != NULL ? tc_spmat_get(c->sp, why, wn) : NULL;
    if (e == NULL)
        goto out;
    /* SpMM: B is read-only, C written; SDDMM: both dense operands are read-only */
    if (tc_dn_shadow(c->dn1, 1, &d1, why, wn) != TCSPARSE_STATUS_SUCCESS ||
        tc_dn_shadow(c->dn2, c->sddmm, &d2, why, wn) != TCSPARSE_STATUS_SUCCESS)
        goto out;
    const int route_auto = tc_route_effective(h) == TCSPARSE_ROUTE_AUTO;
    if (c->phase == TC_PH_PREPROCESS && e->unverified &&
        !tc_verify(e, stream) && e->unverified) {
        /* _preprocess may decide and measure: never on a plan not checked yet */
        snprintf(why, wn, "kept plan not checkable during a stream capture");
        goto out;
    }
    if (c->phase == TC_PH_EXEC && e->unverified) {
        /* Where would the kept plan send the call?  Only the tensor cores need it checked. */
        h->decide_only = 1;
        st = tc_call_tcsparse(h, c, e, d1, d2);
        h->decide_only = 0;
        if (st != TCSPARSE_STATUS_SUCCESS) {
            snprintf(why, wn, "tcsparse: %s", tcsparseGetLastErrorMessage());
            goto out;
        }
        if (tcsparseGetLastRoute(h, &info) == TCSPARSE_STATUS_SUCCESS &&
            info.path == TCSPARSE_PATH_CUSPARSE) {
            snprintf(why, wn, "%s", info.reason);
            goto out;
        }
        if (!tc_verify(e, stream) && e->unverified) {
            snprintf(why, wn, "kept plan not checkable during a stream capture");
            goto out;
        }
    }
    if (c->phase == TC_PH_EXEC && route_auto && !tc_has_plan(e)) {
        int n = tc_seen_count(&e->sig);
        if (n < tc_convert_after) {
            snprintf(why, wn, "use %d of this structure: a conversion would not pay off yet "
                     "(converted from use %d on)", n, tc_convert_after);
            goto out;
        }
    }
    st = tc_call_tcsparse(h, c, e, d1, d2);
    if (st != TCSPARSE_STATUS_SUCCESS) {
        snprintf(why, wn, "tcsparse: %s", tcsparseGetLastErrorMessage());
        /* a launch that failed may have run part of the work (the balanced kernel scales C
         * by beta first): cuSPARSE must not run on top of it */
        tc_exec_failed = c->phase == TC_PH_EXEC && st == TCSPARSE_STATUS_EXECUTION_FAILED;
        goto out;
    }
    if (c->phase == TC_PH_SIZE) {
        snprintf(why, wn, "size %zu", *c->size);
        done = 1;
        goto out;
    }
    if (tcsparseGetLastRoute(h, &info) == TCSPARSE_STATUS_SUCCESS) {
        if (info.path != TCSPARSE_PATH_CUSPARSE)
            snprintf(route, rn, "%s", info.kernel);
        snprintf(why, wn, "%s", info.reason);
    }
    if (c->phase == TC_PH_EXEC)
        done = !h->deferred;
    tc_spmat_note_plan(e, stream);
out:
    if (d1 != NULL)
        tcsparseDestroyDnMat(d1);
    if (d2 != NULL)
        tcsparseDestroyDnMat(d2);
    tc_depth--;
    pthread_mutex_unlock(&tc_lock);
    return done;
}

static cusparseStatus_t tc_real_call(const tc_call *c)
{
    if (!c->sddmm) {
        cusparseConstSpMatDescr_t A = c->sp;
        cusparseConstDnMatDescr_t B = c->dn1;
        cusparseDnMatDescr_t C = (cusparseDnMatDescr_t)c->dn2;
        cusparseSpMMAlg_t alg = (cusparseSpMMAlg_t)c->alg;
        switch (c->phase) {
        case TC_PH_SIZE:
            return TC_REAL(spmm_buffer_size, c->handle, c->opA, c->opB, c->alpha, A, B, c->beta,
                           C, c->ct, alg, c->size);
        case TC_PH_PREPROCESS:
            return TC_REAL(spmm_preprocess, c->handle, c->opA, c->opB, c->alpha, A, B, c->beta,
                           C, c->ct, alg, c->buffer);
        default:
            return TC_REAL(spmm, c->handle, c->opA, c->opB, c->alpha, A, B, c->beta, C, c->ct,
                           alg, c->buffer);
        }
    }
    cusparseConstDnMatDescr_t A = c->dn1, B = c->dn2;
    cusparseSpMatDescr_t C = (cusparseSpMatDescr_t)c->sp;
    cusparseSDDMMAlg_t alg = (cusparseSDDMMAlg_t)c->alg;
    switch (c->phase) {
    case TC_PH_SIZE:
        return TC_REAL(sddmm_buffer_size, c->handle, c->opA, c->opB, c->alpha, A, B, c->beta, C,
                       c->ct, alg, c->size);
    case TC_PH_PREPROCESS:
        return TC_REAL(sddmm_preprocess, c->handle, c->opA, c->opB, c->alpha, A, B, c->beta, C,
                       c->ct, alg, c->buffer);
    default:
        return TC_REAL(sddmm, c->handle, c->opA, c->opB, c->alpha, A, B, c->beta, C, c->ct, alg,
                       c->buffer);
    }
}

static cusparseStatus_t tc_dispatch(const tc_call *c)
{
    const char *fn = c->sddmm ? "cusparseSDDMM" : "cusparseSpMM";
    const char *sfx = tc_ph_suffix[c->phase];
    if (!tc_route_on()) {
        cusparseStatus_t st = tc_real_call(c);
        if (tc_depth == 0 && tc_ready)
            tc_logf("%s%s -> cusparse (pass-through)", fn, sfx);
        return st;
    }
    char route[64], why[200] = "";
    cusparseStatus_t st;
    if (c->phase == TC_PH_SIZE) {
        /* What either path needs: the tensor-core path needs no workspace, so cuSPARSE's
         * size, or tcsparse's answer (0) where cuSPARSE refuses a case the kernels take. */
        st = tc_real_call(c);
        if (st == CUSPARSE_STATUS_SUCCESS) {
            tc_logf("%s%s -> cusparse size %zu", fn, sfx, *c->size);
            return st;
        }
        if (tc_try(c, route, sizeof route, why, sizeof why)) {
            tc_logf("%s%s -> tcsparse (%s)", fn, sfx, why);
            return CUSPARSE_STATUS_SUCCESS;
        }
        tc_logf("%s%s -> cusparse status %d", fn, sfx, (int)st);
        return st;
    }
    if (c->phase == TC_PH_PREPROCESS) {
        /* tcsparse builds the plan (and measures, with TCSPARSE_SELECT=measure); cuSPARSE
         * preprocesses too, so that either path can execute afterwards. */
        (void)tc_try(c, route, sizeof route, why, sizeof why);
        st = tc_real_call(c);
        /* cuSPARSE refuses what the tensor cores will run: that refusal is forgiven, and so
         * is its complaint about a NULL buffer where our _bufferSize said 0 for such a case;
         * a short buffer or a resource failure still reaches the caller */
        if (strcmp(route, "cusparse") != 0 &&
            (st == CUSPARSE_STATUS_NOT_SUPPORTED ||
             (st == CUSPARSE_STATUS_INVALID_VALUE && c->buffer == NULL)))
            st = CUSPARSE_STATUS_SUCCESS;
        tc_logf("%s%s -> %s (%s)", fn, sfx, route, why);
        return st;
    }
    tc_exec_failed = 0;
    if (tc_try(c, route, sizeof route, why, sizeof why)) {
        tc_logf("%s -> %s (%s)", fn, route, why);
        return CUSPARSE_STATUS_SUCCESS;
    }
    if (tc_exec_failed) {
        tc_logf("%s -> failed (%s)", fn, why);
        return CUSPARSE_STATUS_EXECUTION_FAILED;
    }
    st = tc_real_call(c);
    tc_logf("%s -> cusparse (%s)", fn, why);
    return st;
}

TC_SHIM_EXPORT cusparseStatus_t cusparseSpMM_bufferSize(
    cusparseHandle_t handle, cusparseOperation_t opA, cusparseOperation_t opB, const void *alpha,
    cusparseConstSpMatDescr_t matA, cusparseConstDnMatDescr_t matB, const void *beta,
    cusparseDnMatDescr_t matC, cudaDataType computeType, cusparseSpMMAlg_t alg, size_t *bufferSize)
{
    tc_call c = {0, TC_PH_SIZE, handle, opA, opB, alpha, beta, matA, matB, matC, computeType,
                 (int)alg, NULL, bufferSize};
    return tc_dispatch(&c);
}

TC_SHIM_EXPORT cusparseStatus_t cusparseSpMM_preprocess(
    cusparseHandle_t handle, cusparseOperation_t opA, cusparseOperation_t opB, const void *alpha,
    cusparseConstSpMatDescr_t matA, cusparseConstDnMatDescr_t matB, const void *beta,
    cusparseDnMatDescr_t matC, cudaDataType computeType, cusparseSpMMAlg_t alg,
    void *externalBuffer)
{
    tc_call c = {0, TC_PH_PREPROCESS, handle, opA, opB, alpha, beta, matA, matB, matC,
                 computeType, (int)alg, externalBuffer, NULL};
    return tc_dispatch(&c);
}

TC_SHIM_EXPORT cusparseStatus_t cusparseSpMM(cusparseHandle_t handle, cusparseOperation_t opA,
                                             cusparseOperation_t opB, const void *alpha,
                                             cusparseConstSpMatDescr_t matA,
                                             cusparseConstDnMatDescr_t matB, const void *beta,
                                             cusparseDnMatDescr_t matC, cudaDataType computeType,
                                             cusparseSpMMAlg_t alg, void *externalBuffer)
{
    tc_call c = {0, TC_PH_EXEC, handle, opA, opB, alpha, beta, matA, matB, matC, computeType,
                 (int)alg, externalBuffer, NULL};
    return tc_dispatch(&c);
}

TC_SHIM_EXPORT cusparseStatus_t cusparseSDDMM_bufferSize(
    cusparseHandle_t handle, cusparseOperation_t opA, cusparseOperation_t opB, const void *alpha,
    cusparseConstDnMatDescr_t matA, cusparseConstDnMatDescr_t matB, const void *beta,
    cusparseSpMatDescr_t matC, cudaDataType computeType, cusparseSDDMMAlg_t alg, size_t *bufferSize)
{
    tc_call c = {1, TC_PH_SIZE, handle, opA, opB, alpha, beta, matC, matA, matB, computeType,
                 (int)alg, NULL, bufferSize};
    return tc_dispatch(&c);
}

TC_SHIM_EXPORT cusparseStatus_t cusparseSDDMM_preprocess(
    cusparseHandle_t handle, cusparseOperation_t opA, cusparseOperation_t opB, const void *alpha,
    cusparseConstDnMatDescr_t matA, cusparseConstDnMatDescr_t matB, const void *beta,
    cusparseSpMatDescr_t matC, cudaDataType computeType, cusparseSDDMMAlg_t alg,
    void *externalBuffer)
{
    tc_call c = {1, TC_PH_PREPROCESS, handle, opA, opB, alpha, beta, matC, matA, matB,
                 computeType, (int)alg, externalBuffer, NULL};
    return tc_dispatch(&c);
}

TC_SHIM_EXPORT cusparseStatus_t cusparseSDDMM(cusparseHandle_t handle, cusparseOperation_t opA,
                                              cusparseOperation_t opB, const void *alpha,
                                              cusparseConstDnMatDescr_t matA,
                                              cusparseConstDnMatDescr_t matB, const void *beta,
                                              cusparseSpMatDescr_t matC, cudaDataType computeType,
                                              cusparseSDDMMAlg_t alg, void *externalBuffer)
{
    tc_call c = {1, TC_PH_EXEC, handle, opA, opB, alpha, beta, matC, matA, matB, computeType,
                 (int)alg, externalBuffer, NULL};
    return tc_dispatch(&c);
}

/* ------------------------------------------------------------------ descriptor changes */

/* Forgets the shadow of a descriptor whose structure may change (set pointers, strided
 * batch): its plan could be stale.  `orphan`: the descriptor is being destroyed, so a plan that
 * can be recognised later is kept. */
static int tc_forget(const void *d, int orphan)
{
    if (!tc_top() || d == NULL)
        return 0;
    pthread_mutex_lock(&tc_lock);
    tc_depth++;
    tc_shim_spmat *e = tc_spmat_unlink(d);
    int known = e != NULL;
    if (e != NULL) {
        if (orphan)
            tc_orphan(e);
        else
            tc_spmat_free(e);
    }
    tc_depth--;
    pthread_mutex_unlock(&tc_lock);
    return known;
}

TC_SHIM_EXPORT cusparseStatus_t cusparseDestroySpMat(cusparseConstSpMatDescr_t spMatDescr)
{
    int known = tc_forget(spMatDescr, 1);
    cusparseStatus_t st = TC_REAL(destroy_spmat, spMatDescr);
    if (known)
        tc_logf("cusparseDestroySpMat: shadow released");
    return st;
}

TC_SHIM_EXPORT cusparseStatus_t cusparseCsrSetPointers(cusparseSpMatDescr_t spMatDescr,
                                                       void *csrRowOffsets, void *csrColInd,
                                                       void *csrValues)
{
    int known = tc_forget(spMatDescr, 0);
    cusparseStatus_t st =
        TC_REAL(csr_set_pointers, spMatDescr, csrRowOffsets, csrColInd, csrValues);
    if (known)
        tc_logf("cusparseCsrSetPointers: plan invalidated");
    return st;
}

TC_SHIM_EXPORT cusparseStatus_t cusparseCscSetPointers(cusparseSpMatDescr_t spMatDescr,
                                                       void *cscColOffsets, void *cscRowInd,
                                                       void *cscValues)
{
    int known = tc_forget(spMatDescr, 0);
    cusparseStatus_t st =
        TC_REAL(csc_set_pointers, spMatDescr, cscColOffsets, cscRowInd, cscValues);
    if (known)
        tc_logf("cusparseCscSetPointers: plan invalidated");
    return st;
}

TC_SHIM_EXPORT cusparseStatus_t cusparseCooSetPointers(cusparseSpMatDescr_t spMatDescr,
                                                       void *cooRows, void *cooColumns,
                                                       void *cooValues)
{
    int known = tc_forget(spMatDescr, 0);
    cusparseStatus_t st = TC_REAL(coo_set_pointers, spMatDescr, cooRows, cooColumns, cooValues);
    if (known)
        tc_logf("cusparseCooSetPointers: plan invalidated");
    return st;
}

/* New values, same structure: the plan stays (values are read through the descriptor on every
 * call); nothing to do but pass it on. */
TC_SHIM_EXPORT cusparseStatus_t cusparseSpMatSetValues(cusparseSpMatDescr_t spMatDescr,
                                                       void *values)
{
    return TC_REAL(spmat_set_values, spMatDescr, values);
}

TC_SHIM_EXPORT cusparseStatus_t cusparseCsrSetStridedBatch(cusparseSpMatDescr_t spMatDescr,
                                                           int batchCount,
                                                           int64_t offsetsBatchStride,
                                                           int64_t columnsValuesBatchStride)
{
    int known = tc_forget(spMatDescr, 0);
    cusparseStatus_t st = TC_REAL(csr_set_strided_batch, spMatDescr, batchCount,
                                  offsetsBatchStride, columnsValuesBatchStride);
    if (known)
        tc_logf("cusparseCsrSetStridedBatch: plan invalidated");
    return st;
}

TC_SHIM_EXPORT cusparseStatus_t cusparseCooSetStridedBatch(cusparseSpMatDescr_t spMatDescr,
                                                           int batchCount, int64_t batchStride)
{
    int known = tc_forget(spMatDescr, 0);
    cusparseStatus_t st = TC_REAL(coo_set_strided_batch, spMatDescr, batchCount, batchStride);
    if (known)
        tc_logf("cusparseCooSetStridedBatch: plan invalidated");
    return st;
}

TC_SHIM_EXPORT cusparseStatus_t cusparseDestroy(cusparseHandle_t handle)
{
    if (tc_top() && handle != NULL) {
        pthread_mutex_lock(&tc_lock);
        tc_depth++;
        for (tc_shim_handle **pp = &tc_handles; *pp != NULL; pp = &(*pp)->next)
            if ((*pp)->key == handle) {
                tc_shim_handle *e = *pp;
                *pp = e->next;
                tcsparseDestroy(e->h);
                free(e);
                break;
            }
        tc_depth--;
        pthread_mutex_unlock(&tc_lock);
    }
    return TC_REAL(destroy, handle);
}
