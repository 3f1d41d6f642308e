#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include "config.h"
#include "error.h"
#include "fallback.h"
#include "metcf.h"
#include "plan.h"
#include "late.h"
#include "measure.h" /* tc_stream_capturing */
#include "reorder.h"

static double tc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- the plan cache ----------------------------------------------------------------------
 * All plans of all descriptors form one list, most recently used first, under tc_cache_mu
 * (taken after a descriptor's mutex, never before one: see plan.h).  TCSPARSE_CACHE_BYTES
 * bounds the sum of their device bytes; TCSPARSE_X_FAULT_PLAN_ALLOC=n makes the next n plan
 * builds fail their device allocation, to test the fallback. */
static pthread_mutex_t tc_cache_mu = PTHREAD_MUTEX_INITIALIZER;
static struct tc_plan *tc_lru_head, *tc_lru_tail;
static size_t tc_cache_bytes, tc_cache_limit = SIZE_MAX;
static int64_t tc_cache_plans, tc_cache_evictions, tc_fault_left;
static int tc_cache_configured;
/* Takes the configuration's values; the caller holds tc_cache_mu. */
static void tc_cache_configure_locked(void)
{
    const tc_config *c = tc_config_get();
    tc_cache_limit = c->cache_bytes;
    tc_fault_left = c->fault_plan_alloc;
    tc_cache_configured = 1;
}

static void tc_cache_configure_once(void)
{
    pthread_mutex_lock(&tc_cache_mu);
    if (!tc_cache_configured)
        tc_cache_configure_locked();
    pthread_mutex_unlock(&tc_cache_mu);
}

/* 1 when this build's device allocation must fail (TCSPARSE_X_FAULT_PLAN_ALLOC). */
static int tc_fault_take(void)
{
    pthread_mutex_lock(&tc_cache_mu);
    int hit = tc_fault_left > 0;
    if (hit)
        tc_fault_left--;
    pthread_mutex_unlock(&tc_cache_mu);
    return hit;
}

/* List operations; the caller holds tc_cache_mu. */
static void tc_lru_unlink(struct tc_plan *p)
{
    if (p->lru_prev)
        p->lru_prev->lru_next = p->lru_next;
    else
        tc_lru_head = p->lru_next;
    if (p->lru_next)
        p->lru_next->lru_prev = p->lru_prev;
    else
        tc_lru_tail = p->lru_prev;
    p->lru_prev = p->lru_next = NULL;
    tc_cache_bytes -= p->bytes;
    tc_cache_plans--;
}

static void tc_lru_push_front(struct tc_plan *p)
{
    p->lru_prev = NULL;
    p->lru_next = tc_lru_head;
    if (tc_lru_head)
        tc_lru_head->lru_prev = p;
    else
        tc_lru_tail = p;
    tc_lru_head = p;
    tc_cache_bytes += p->bytes;
    tc_cache_plans++;
}

/* Frees a plan that no descriptor and no list references any more.  Kernels queued earlier on
 * any stream may still read it: the device is synchronised first (its own device, when the
 * caller's current device is another). */
static void tc_plan_free(struct tc_plan *p)
{
    if (p == NULL)
        return;
    int cur = -1;
    int other = cudaGetDevice(&cur) == cudaSuccess && p->device >= 0 && cur != p->device &&
                cudaSetDevice(p->device) == cudaSuccess;
    /* Built in a context that has ended since (cudaDeviceReset): its memory and events went
     * with it, and their addresses may now be someone else's; they are forgotten. */
    const unsigned long long ctx = tc_context_id();
    if (p->context != 0 && ctx != 0 && ctx != p->context) {
        memset(&p->dev, 0, sizeof p->dev);
        memset(&p->csr, 0, sizeof p->csr);
        p->explore.nev = 0;
        p->tune.nev = 0;
    }
    (void)cudaDeviceSynchronize();
    tc_dev_metcf_free(&p->dev); /* the schedule lives in the same allocation */
    tc_csr_sched_free(&p->csr);
    for (int i = 0; i < p->explore.nev; i++) { /* route.c's samples, all complete now */
        (void)cudaEventDestroy(p->explore.ev[i][0]);
        (void)cudaEventDestroy(p->explore.ev[i][1]);
    }
    for (int i = 0; i < p->tune.nev; i++) { /* tune.c's */
        (void)cudaEventDestroy(p->tune.ev[i][0]);
        (void)cudaEventDestroy(p->tune.ev[i][1]);
    }
    if (other)
        (void)cudaSetDevice(cur);
    (void)cudaGetLastError(); /* nothing of this belongs to the caller's next call */
    free(p);
}

/* Evicts least recently used plans, skipping keep and plans whose descriptor is busy (its
 * mutex held: a call is using the plan), until the cache fits its limit.  Evicted plans are
 * chained through lru_next into *victims, to be freed after tc_cache_mu is released.  The
 * caller holds tc_cache_mu. */
static void tc_cache_evict_locked(const struct tc_plan *keep, struct tc_plan **victims)
{
    struct tc_plan *q = tc_lru_tail;
    while (q != NULL && tc_cache_bytes > tc_cache_limit) {
        struct tc_plan *prev = q->lru_prev;
        struct tcsparseSpMatDescr *o = q->owner;
        if (q != keep && pthread_mutex_trylock(&o->mu) == 0) {
            tc_lru_unlink(q);
            if (q == o->late.other) {
                o->late.other = NULL; /* a trial ends with the current plan kept */
            } else if (o->late.state == TCSPARSE_LATE_TRIAL) {
                o->plan = o->late.other; /* the trial's other plan, or NULL */
                o->late.other = NULL;
            } else {
                o->plan = NULL; /* a loser waiting in late.other is not promoted */
            }
            if (o->late.state == TCSPARSE_LATE_TRIAL)
                tc_late_trial_lost(o);
            pthread_mutex_unlock(&o->mu);
            q->owner = NULL;
            q->lru_next = *victims;
            *victims = q;
            tc_cache_evictions++;
        }
        q = prev;
    }
}

static void tc_free_victims(struct tc_plan *v)
{
    while (v != NULL) {
        struct tc_plan *next = v->lru_next;
        tc_plan_free(v);
        v = next;
    }
}

void tc_plan_cache_get_info(tc_plan_cache_info *info)
{
    tc_cache_configure_once();
    pthread_mutex_lock(&tc_cache_mu);
    info->bytes = tc_cache_bytes;
    info->limit = tc_cache_limit;
    info->plans = tc_cache_plans;
    info->evictions = tc_cache_evictions;
    pthread_mutex_unlock(&tc_cache_mu);
}

void tc_plan_cache_reconfigure(void)
{
    struct tc_plan *victims = NULL;
    pthread_mutex_lock(&tc_cache_mu);
    tc_cache_configure_locked();
    tc_cache_evict_locked(NULL, &victims);
    pthread_mutex_unlock(&tc_cache_mu);
    tc_free_victims(victims);
}

void tc_plan_release(struct tcsparseSpMatDescr *d, struct tc_plan *p)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&tc_cache_mu);
    tc_lru_unlink(p);
    pthread_mutex_unlock(&tc_cache_mu);
    if (d->plan == p)
        d->plan = NULL;
    if (d->late.other == p)
        d->late.other = NULL;
    tc_plan_free(p);
}

/* Frees the descriptor's plans (the current one and late ordering's other one); a trial in
 * progress is lost (late.c). */
static void tc_plan_drop(struct tcsparseSpMatDescr *d)
{
    tc_plan_release(d, d->late.other);
    tc_plan_release(d, d->plan);
    if (d->late.state == TCSPARSE_LATE_TRIAL)
        d->late.state = TCSPARSE_LATE_WAITING; /* tried again on the new plan */
}

void tc_plan_invalidate(struct tcsparseSpMatDescr *d)
{
    d->plan_refused = 0;
    d->mem_refused = 0;
    tc_plan_drop(d);
    tc_late_reset(d); /* the structure or the setting changed: decided again */
    if (d->tr != NULL) {
        pthread_mutex_lock(&d->tr->mu);
        tc_plan_invalidate(d->tr);
        pthread_mutex_unlock(&d->tr->mu);
    }
}

struct tcsparseSpMatDescr *tc_plan_transposed(struct tcsparseSpMatDescr *d)
{
    struct tcsparseSpMatDescr *t = d->tr;
    if (t == NULL) {
        t = calloc(1, sizeof *t);
        if (t == NULL)
            return NULL;
        if (pthread_mutex_init(&t->mu, NULL) != 0) {
            free(t);
            return NULL;
        }
        t->magic = TC_MAGIC_SPMAT;
        t->is_const = 1;
        t->serial = d->serial | (1ull << 63); /* unique: d's serial, marked */
        t->parent = d;
        d->tr = t;
    }
    /* the arrays and settings may have changed since (the structure setters dropped the
     * view's plan through tc_plan_invalidate) */
    pthread_mutex_lock(&t->mu);
    t->format = d->format == TCSPARSE_FORMAT_CSR   ? TCSPARSE_FORMAT_CSC
                : d->format == TCSPARSE_FORMAT_CSC ? TCSPARSE_FORMAT_CSR
                                                   : TCSPARSE_FORMAT_COO;
    t->rows = d->cols;
    t->cols = d->rows;
    t->nnz = d->nnz;
    const int coo = d->format == TCSPARSE_FORMAT_COO; /* rows and columns trade arrays */
    t->offsets = coo ? d->indices : d->offsets;
    t->indices = coo ? d->offsets : d->indices;
    t->offsets_type = coo ? d->indices_type : d->offsets_type;
    t->indices_type = coo ? d->offsets_type : d->indices_type;
    t->values = d->values;
    t->base = d->base;
    t->value_type = d->value_type;
    t->batch_count = d->batch_count;
    t->struct_gen = d->struct_gen;
    if (t->reorder != d->reorder || t->reorder_orderings != d->reorder_orderings) {
        t->reorder = d->reorder;
        t->reorder_orderings = d->reorder_orderings;
        tc_plan_invalidate(t); /* another reordering setting: planned again */
    }
    pthread_mutex_unlock(&t->mu);
    return t;
}

void tc_plan_transposed_free(struct tcsparseSpMatDescr *d)
{
    struct tcsparseSpMatDescr *t = d->tr;
    if (t == NULL)
        return;
    pthread_mutex_lock(&t->mu); /* waits for an eviction holding it */
    tc_plan_invalidate(t);
    t->magic = TC_MAGIC_DEAD;
    pthread_mutex_unlock(&t->mu);
    pthread_mutex_destroy(&t->mu);
    free(t);
    d->tr = NULL;
}

void tc_spmat_lock(const struct tcsparseSpMatDescr *d)
{
    pthread_mutex_lock(&((struct tcsparseSpMatDescr *)d)->mu);
}

void tc_spmat_unlock(const struct tcsparseSpMatDescr *d)
{
    pthread_mutex_unlock(&((struct tcsparseSpMatDescr *)d)->mu);
}

/* ---- driver functions through the runtime (no -lcuda) ------------------------------------- */
/* The CUDA 12.0 form of driver function `symbol`, or NULL where it cannot be had. */
static void *tc_driver_entry(const char *symbol)
{
    void *f = NULL;
#if CUDART_VERSION >= 12050
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion(symbol, &f, 12000, cudaEnableDefault, &q) !=
            cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
        f = NULL;
#else
    (void)symbol;
#endif
    (void)cudaGetLastError();
    return f;
}

/* ---- the current CUDA context (kernels.h) ------------------------------------------------- */
typedef CUresult (*tc_ctx_current_fn)(CUcontext *);
typedef CUresult (*tc_ctx_id_fn)(CUcontext, unsigned long long *);
static pthread_once_t tc_ctx_once = PTHREAD_ONCE_INIT;
static tc_ctx_current_fn tc_ctx_current;
static tc_ctx_id_fn tc_ctx_id;

static void tc_ctx_init(void)
{
    void *f = tc_driver_entry("cuCtxGetCurrent"), *g = tc_driver_entry("cuCtxGetId");
    if (f != NULL && g != NULL) {
        memcpy(&tc_ctx_current, &f, sizeof f);
        memcpy(&tc_ctx_id, &g, sizeof g);
    }
}

unsigned long long tc_context_id(void)
{
    pthread_once(&tc_ctx_once, tc_ctx_init);
    CUcontext c = NULL;
    unsigned long long id = 0;
    if (tc_ctx_current == NULL || tc_ctx_current(&c) != CUDA_SUCCESS || c == NULL ||
        tc_ctx_id(c, &id) != CUDA_SUCCESS)
        return 0;
    return id;
}

/* ---- room left in a device buffer (plan.h) ------------------------------------------------ */
typedef int (*tc_get_range_fn)(unsigned long long *base, size_t *size, unsigned long long ptr);
static pthread_once_t tc_range_once = PTHREAD_ONCE_INIT;
static tc_get_range_fn tc_get_range;

static void tc_range_init(void)
{
    if (!tc_config_get()->check_buffer)
        return;
    void *f = tc_driver_entry("cuMemGetAddressRange");
    if (f != NULL)
        memcpy(&tc_get_range, &f, sizeof f);
}

int tc_device_room(const void *p, size_t *room)
{
    pthread_once(&tc_range_once, tc_range_init);
    unsigned long long base = 0;
    size_t size = 0;
    const unsigned long long at = (unsigned long long)(uintptr_t)p;
    if (tc_get_range == NULL || p == NULL || tc_get_range(&base, &size, at) != 0 || at < base ||
        at - base > size)
        return 0;
    *room = (size_t)(base + size - at);
    return 1;
}

/* ---- quarantine of destroyed objects (plan.h) ---------------------------------------------- */
static pthread_mutex_t tc_retired_mu = PTHREAD_MUTEX_INITIALIZER;
static void *tc_retired[TC_RETIRED_KEPT];
static unsigned tc_retired_next;

void tc_retire(void *obj)
{
    pthread_mutex_lock(&tc_retired_mu);
    void *old = tc_retired[tc_retired_next];
    tc_retired[tc_retired_next] = obj;
    tc_retired_next = (tc_retired_next + 1) % TC_RETIRED_KEPT;
    pthread_mutex_unlock(&tc_retired_mu);
    free(old);
}

static size_t tc_cache_limit_now(void)
{
    pthread_mutex_lock(&tc_cache_mu);
    size_t l = tc_cache_limit;
    pthread_mutex_unlock(&tc_cache_mu);
    return l;
}

/* Enters a new plan in the cache, evicting others as needed.  Returns NOT_SUPPORTED (and
 * frees p) when it cannot fit: larger than the limit, or the rest is held by running calls. */
static tcsparseStatus_t tc_cache_insert(struct tcsparseSpMatDescr *d, struct tc_plan *p,
                                        int current)
{
    struct tc_plan *victims = NULL;
    int too_big = 0, full = 0;
    size_t limit, busy = 0;
    pthread_mutex_lock(&tc_cache_mu);
    limit = tc_cache_limit;
    if (p->bytes > limit) {
        too_big = 1;
    } else if (!current && tc_cache_bytes + p->bytes > limit) {
        /* late ordering's second plan evicts no one: it is a trial, not a need */
        busy = tc_cache_bytes;
        full = 1;
    } else {
        tc_lru_push_front(p);
        tc_cache_evict_locked(p, &victims);
        if (tc_cache_bytes > limit) {
            tc_lru_unlink(p);
            busy = tc_cache_bytes;
            full = 1;
        }
    }
    pthread_mutex_unlock(&tc_cache_mu);
    tc_free_victims(victims);
    if (!too_big && !full) {
        if (current)
            d->plan = p;
        return TCSPARSE_STATUS_SUCCESS;
    }
    const size_t bytes = p->bytes;
    tc_plan_free(p);
    if (too_big) {
        if (current)
            d->plan_refused = bytes;
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "the tensor-core plan needs %zu bytes, more than the plan cache "
                            "holds (TCSPARSE_CACHE_BYTES=%zu)", bytes, limit);
    }
    return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                        "the tensor-core plan (%zu bytes) does not fit TCSPARSE_CACHE_BYTES=%zu: "
                        "%zu bytes are plans in use by other calls", bytes, limit, busy);
}

static tcsparseStatus_t tc_plan_build(tcsparseHandle_t h, struct tcsparseSpMatDescr *md,
                                      int late_ordering, struct tc_plan **out);

tcsparseStatus_t tc_plan_get(tcsparseHandle_t h, const struct tcsparseSpMatDescr *d,
                             struct tc_plan **out)
{
    struct tcsparseSpMatDescr *md = (struct tcsparseSpMatDescr *)d; /* the plan is a cache */
    /* Creation accepts NULL arrays (set later, as with cuSPARSE); the conversion would read
     * through them on the device, and a fault there ends the CUDA context for the process. */
    if (d->nnz > 0 && (d->offsets == NULL || d->indices == NULL))
        return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE,
                            "tensor-core plan: the sparse matrix has %lld nonzeros but its %s "
                            "array is NULL", (long long)d->nnz,
                            d->offsets == NULL ? "offsets (or row index)" : "index");
    cusparseHandle_t cusp;
    tcsparseStatus_t st = tc_handle_cusparse(h, &cusp);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    tc_cache_configure_once();
    /* late ordering's sample on the plan that is not current (late.c) */
    struct tc_plan *cur = md->late.pick_other && md->late.other != NULL ? md->late.other : md->plan;
    if (cur != NULL && cur->device == h->device) {
        pthread_mutex_lock(&tc_cache_mu);
        if (tc_lru_head != cur) { /* now the most recently used */
            tc_lru_unlink(cur);
            tc_lru_push_front(cur);
        }
        pthread_mutex_unlock(&tc_cache_mu);
        *out = cur;
        return TCSPARSE_STATUS_SUCCESS;
    }
    if (md->plan_refused != 0 && md->plan_refused > tc_cache_limit_now())
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "the tensor-core plan needs %zu bytes, more than the plan cache "
                            "holds (TCSPARSE_CACHE_BYTES=%zu)", md->plan_refused,
                            tc_cache_limit_now());
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
    tc_plan_drop(md);
    md->plan_refused = 0;
    /* late ordering decided for an ordered plan: a rebuild (eviction, another device) builds
     * it directly; also while round 1 waits to start or (tc_plan_drop made it WAITING)
     * was under way, when round 0's outcome is what stands */
    const int late_state = md->late.round == 1 && md->late.state == TCSPARSE_LATE_WAITING
                               ? md->late.prev_state
                               : md->late.state;
    const int ordered = late_state == TCSPARSE_LATE_KEPT_ORDERED &&
                                tc_reorder_mode(md, NULL) == TCSPARSE_REORDER_LATE
                            ? md->late.kept_ordering
                            : 0;
    struct tc_plan *p;
    st = tc_plan_build(h, md, ordered, &p);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    st = tc_cache_insert(md, p, 1);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    md->late.plan_calls = 0; /* late ordering builds nothing more in a call that built a plan */
    *out = p;
    return TCSPARSE_STATUS_SUCCESS;
}

tcsparseStatus_t tc_plan_build_late(tcsparseHandle_t h, struct tcsparseSpMatDescr *d,
                                    int ordering, struct tc_plan **out)
{
    return tc_plan_build(h, d, ordering, out); /* *out is written on success only */
}

tcsparseStatus_t tc_plan_cache_add(struct tcsparseSpMatDescr *d, struct tc_plan *p)
{
    return tc_cache_insert(d, p, 0);
}

void tc_plan_discard(struct tc_plan *p)
{
    tc_plan_free(p);
}

/* An armed guard (tc_hook_spmat_guard, on md or, for a transposed view, on the descriptor it
 * views) vouches for the structure of its fingerprint: a plan built now (the first of a
 * transposed view, one rebuilt after an eviction, late ordering's second plan) must be of
 * that structure, or a later check that passes would vouch for a plan of another.  Checked
 * where the build synchronises anyway; a mismatch raises the trip word and is remembered
 * (against the fingerprint and the structure's generation), so that later calls do not
 * check and synchronise again.  NOT_SUPPORTED (with a message) refuses the build. */
static tcsparseStatus_t tc_guard_vouches(tcsparseHandle_t h, struct tcsparseSpMatDescr *md)
{
    const struct tcsparseSpMatDescr *gd = md->parent != NULL ? md->parent : md;
    struct tc_guard *g = tc_guard_armed(gd);
    if (g == NULL)
        return TCSPARSE_STATUS_SUCCESS;
    if (g->device != h->device) /* its words are another device's (see route_spmm.c) */
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "the guarded descriptor's check words are on device %d, not %d: no "
                            "plan is built", g->device, h->device);
    if (md->guard_refused && md->guard_refused_fp == g->fp &&
        md->guard_refused_gen == gd->struct_gen)
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "the guarded descriptor's arrays held another structure than its "
                            "fingerprint: no plan is built");
    uint64_t fp = 0, fp_off = 0;
    if (tc_fingerprint_arrays(g->off, g->off_bytes, g->idx, g->idx_bytes, h->stream,
                              g->dev->fp, g->host_fp, &fp, &fp_off) != 0)
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "the guarded structure could not be checked before a plan build");
    if (fp != g->fp) {
        *g->tripped = 1;
        md->guard_refused = 1;
        md->guard_refused_fp = g->fp;
        md->guard_refused_gen = gd->struct_gen;
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "the guarded descriptor's arrays hold another structure than its "
                            "fingerprint: no plan is built");
    }
    return TCSPARSE_STATUS_SUCCESS;
}

size_t tc_mem_reserve(const tc_config *c, size_t total)
{
    if (c->mem_reserve_share < 0.0)
        return c->mem_reserve_bytes;
    return (size_t)(c->mem_reserve_share * (double)total);
}

int tc_plan_room(size_t free_b, size_t need, size_t reserve)
{
    return free_b >= need && free_b - need >= reserve;
}

/* The device's free memory when a build starts, and what TCSPARSE_MEM_RESERVE keeps of it;
 * known = 0 where the driver cannot tell (the plan's allocations themselves decide then). */
typedef struct {
    size_t free_b, total, reserve;
    int known;
} tc_mem_room;

static tc_mem_room tc_mem_room_now(void)
{
    tc_mem_room r = {0, 0, 0, 0};
    if (cudaMemGetInfo(&r.free_b, &r.total) != cudaSuccess) {
        (void)cudaGetLastError();
        return r;
    }
    r.reserve = tc_mem_reserve(tc_config_get(), r.total);
    r.known = 1;
    return r;
}

/* SUCCESS where a plan of `bytes` (at_least: a lower bound of its size) leaves the reserve
 * free, NOT_SUPPORTED with a message where it does not. */
static tcsparseStatus_t tc_mem_room_check(const tc_mem_room *r, size_t bytes, int at_least)
{
    if (!r->known || tc_plan_room(r->free_b, bytes, r->reserve))
        return TCSPARSE_STATUS_SUCCESS;
    const double mib = 1024.0 * 1024.0;
    const double left = r->free_b >= bytes ? (double)(r->free_b - bytes) : 0.0;
    /* short: the route's reason (160 bytes) holds it after "no plan: " */
    return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                        "TCSPARSE_MEM_RESERVE: a plan of %s%.1f MiB would leave %.1f of %.1f MiB "
                        "of device memory free, under the %.1f MiB kept",
                        at_least ? "at least " : "", (double)bytes / mib, left / mib,
                        (double)r->total / mib, (double)r->reserve / mib);
}

/* Builds a plan of d (late_ordering: late ordering's plan in that ordering, TC_ORD_*; 0: the
 * descriptor's own setting) outside the cache. */
static tcsparseStatus_t tc_plan_build(tcsparseHandle_t h, struct tcsparseSpMatDescr *md,
                                      int late_ordering, struct tc_plan **out)
{
    const struct tcsparseSpMatDescr *d = md;
    /* Room for the plan, first (it costs one driver query; the guard's check below
     * synchronises): the allocation of a plan in the caller's row order (a plan with rows
     * ordered on the GPU takes more), or the size of the last plan of this structure refused
     * for memory.  The check after the build compares the plan's own bytes with the same free
     * memory (the conversion's scratch, held by its pool until later, does not count), so a
     * refused plan is built again only once the device has room for it. */
    const tc_mem_room room = tc_mem_room_now();
    const size_t least =
        tc_plan_layout_of(d->rows, d->cols, d->nnz, tc_config_get()->convert.chunk_blocks, 0)
            .bytes;
    const int known_size = md->mem_refused > least;
    tcsparseStatus_t st =
        tc_mem_room_check(&room, known_size ? md->mem_refused : least, !known_size);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    st = tc_guard_vouches(h, md);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    struct tc_plan *p = calloc(1, sizeof *p);
    if (p == NULL)
        return tc_error_set(TCSPARSE_STATUS_ALLOC_FAILED, "tensor-core plan: out of host memory");
    p->device = h->device;
    p->context = tc_context_id();
    p->owner = md;
    tc_convert_input in = {
        .format = d->format, .rows = d->rows, .cols = d->cols, .nnz = d->nnz,
        .offsets = d->offsets, .indices = d->indices,
        .offsets_64 = d->offsets_type == TCSPARSE_INDEX_64I,
        .indices_64 = d->indices_type == TCSPARSE_INDEX_64I, .base = (int)d->base};
    char msg[200];
    double t0 = tc_now_ms();
    /* the conversion's pool keeps TCSPARSE_X_CONVERT_KEEP bytes (convert_launch.cu) */
    const tc_config *cfg = tc_config_get();
    tc_convert_extra x = {.sm_count = h->sm_count, .keep_scratch = cfg->convert.keep};
    if (cfg->convert.chunk_blocks >= 1) /* tuning knob for tcsparse-bench */
        x.force_chunk = cfg->convert.chunk_blocks;
    if (cfg->convert.sort) /* the sorted path for every input */
        x.method = 1;
    if (tc_fault_take()) {
        free(p);
        return tc_error_set(TCSPARSE_STATUS_ALLOC_FAILED,
                            "tensor-core plan: allocating the plan: out of device memory "
                            "(injected by TCSPARSE_X_FAULT_PLAN_ALLOC)");
    }
    tc_reorder_info rinfo; /* reorder.c: exactly tc_convert_gpu unless reordering is on */
    st = tc_reorder_convert(d, &in, &p->dev, &x, h->stream, late_ordering, &rinfo, msg,
                            sizeof msg);
    if (st != TCSPARSE_STATUS_SUCCESS) {
        free(p);
        (void)cudaGetLastError(); /* a failed allocation must not reach the fallback's calls */
        return tc_error_set(st, "%s", msg);
    }
    p->bytes = x.dev_bytes;
    tc_spmm_plan_ready(); /* outside any stream capture: a plan build synchronises */
    tc_sddmm_plan_ready();
    tc_metcf_counts c = {.rows = p->dev.rows, .cols = p->dev.cols, .nnz = p->dev.nnz,
                         .windows = p->dev.windows, .blocks = p->dev.blocks,
                         .empty_windows = x.empty_windows,
                         .max_blocks_per_window = x.max_blocks_per_window};
    memcpy(c.hist, x.hist, sizeof c.hist);
    tc_metcf_stats_from_counts(&c, &p->stats);
    p->chunk_blocks = x.chunk_blocks;
    p->chunks = x.chunks;
    p->nchunks = x.nchunks;
    p->split_windows = x.split_windows;
    p->nsplit = x.nsplit;
    tc_reorder_plan_done(p, &rinfo);
    p->convert_ms = tc_now_ms() - t0;
    st = tc_mem_room_check(&room, p->bytes, 0);
    if (st != TCSPARSE_STATUS_SUCCESS) {
        md->mem_refused = p->bytes;
        tc_plan_free(p);
        return st;
    }
    md->mem_refused = 0;
    *out = p;
    return TCSPARSE_STATUS_SUCCESS;
}

tc_csr_arrays tc_csr_arrays_of(const struct tcsparseSpMatDescr *A, int transposed)
{
    tc_csr_arrays csr = {0};
    csr.nnz = A->nnz;
    csr.offsets = A->offsets;
    csr.indices = A->indices;
    csr.offsets_64 = A->offsets_type == TCSPARSE_INDEX_64I;
    csr.indices_64 = A->indices_type == TCSPARSE_INDEX_64I;
    csr.base = A->base == TCSPARSE_INDEX_BASE_ONE;
    csr.transposed = transposed;
    return csr;
}

tcsparseStatus_t tc_plan_csr_sched(tcsparseHandle_t h, const struct tcsparseSpMatDescr *d,
                                   struct tc_plan *p, const tc_csr_sched **out)
{
    struct tcsparseSpMatDescr *md = (struct tcsparseSpMatDescr *)d; /* the plan is a cache */
    if (p->csr.mem != NULL) {
        *out = &p->csr;
        return TCSPARSE_STATUS_SUCCESS;
    }
    if (d->format != TCSPARSE_FORMAT_CSR || d->parent != NULL)
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "the CUDA-core schedule is built for untransposed CSR matrices");
    /* the build synchronises (and evicting a plan synchronises the device): never inside a
     * capture, where the call runs on cuSPARSE until _preprocess or an uncaptured call has
     * built it */
    if (tc_stream_capturing(h->stream))
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "the CUDA-core schedule is not built inside a stream capture");
    size_t scratch = 0;
    const size_t bytes = tc_csr_sched_bytes(d->rows, d->nnz, &scratch);
    if (bytes == 0)
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "the CUDA-core schedule takes fewer than 2^31 rows and nonzeros");
    const tc_mem_room room = tc_mem_room_now();
    tcsparseStatus_t st = tc_mem_room_check(&room, bytes + scratch, 0);
    if (st == TCSPARSE_STATUS_SUCCESS)
        st = tc_guard_vouches(h, md);
    if (st != TCSPARSE_STATUS_SUCCESS)
        return st;
    /* the cache's limit: the schedule joins its plan's bytes (other plans may be evicted) */
    tc_cache_configure_once();
    struct tc_plan *victims = NULL;
    pthread_mutex_lock(&tc_cache_mu);
    const size_t limit = tc_cache_limit;
    int fits = p->bytes + bytes <= limit;
    if (fits) {
        tc_cache_bytes += bytes; /* held while building: other threads see it taken */
        p->bytes += bytes;
        tc_cache_evict_locked(p, &victims);
        if (tc_cache_bytes > limit) {
            tc_cache_bytes -= bytes;
            p->bytes -= bytes;
            fits = 0;
        }
    }
    pthread_mutex_unlock(&tc_cache_mu);
    tc_free_victims(victims);
    if (!fits)
        return tc_error_set(TCSPARSE_STATUS_NOT_SUPPORTED,
                            "the CUDA-core schedule (%zu bytes) does not fit "
                            "TCSPARSE_CACHE_BYTES=%zu beside the plans in use", bytes, limit);
    const tc_csr_arrays csr = tc_csr_arrays_of(d, 0);
    char msg[200];
    st = tc_csr_sched_build(&csr, d->rows, h->stream, &p->csr, msg, sizeof msg);
    if (st != TCSPARSE_STATUS_SUCCESS) {
        pthread_mutex_lock(&tc_cache_mu);
        tc_cache_bytes -= bytes;
        p->bytes -= bytes;
        pthread_mutex_unlock(&tc_cache_mu);
        return tc_error_set(st, "%s", msg);
    }
    *out = &p->csr;
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
    tc_spmat_lock(spMatDescr);
    tcsparseStatus_t st = tc_plan_get(handle, spMatDescr, &p);
    if (st == TCSPARSE_STATUS_SUCCESS) {
        *stats = p->stats;
        tc_late_stats(spMatDescr, stats);
    }
    tc_spmat_unlock(spMatDescr);
    return st;
}
