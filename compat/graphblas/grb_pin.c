/* Pinned operands: device copies of GraphBLAS matrices kept between calls, and how the
 * adapter knows they are still right.
 *
 * GraphBLAS offers no modification counter, and a matrix may change in place (setElement
 * on an existing entry rewrites its value where it is; a deletion followed by an insertion
 * in one row keeps every size).  So each use compares the dimensions, type and entry count
 * and then hashes the arrays on the host, structure (offsets, indices) and values apart:
 *  - structure or shape changed: the device copy and tcsparse's plan are rebuilt;
 *  - only values changed: the values are uploaded again (the plan stays; tcsparse never
 *    caches values);
 *  - nothing changed: nothing moves.
 * The hash reads 16 bytes per nonzero plus the values, spread over the host's cores
 * (~10 GB/s per core); TCSPARSE_GRB_PIN_TRUST replaces it by a comparison of the array
 * addresses, which GraphBLAS keeps while a matrix is not modified through the API.
 * Because a pin is checked against the arrays' content, a pinned matrix freed and another
 * created at the same address can never be served a stale copy (in verify mode). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "grb_internal.h"

static pthread_mutex_t tc_grb_mutex = PTHREAD_MUTEX_INITIALIZER;
static tc_grb_pin *tc_grb_pins;
tcsparse_GrB_stats_t tc_grb_stats;

void tc_grb_lock(void) { pthread_mutex_lock(&tc_grb_mutex); }
void tc_grb_unlock(void) { pthread_mutex_unlock(&tc_grb_mutex); }

/* ---------------------------------------------------------------- hash */

#define TC_H1 0x9E3779B185EBCA87ull
#define TC_H2 0xC2B2AE3D27D4EB4Full
#define TC_H3 0x165667B19E3779F9ull
#define TC_HASH_CHUNK ((size_t)1 << 20) /* fixed: the hash must not depend on thread count */

static inline uint64_t tc_rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t tc_rd64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint64_t tc_mix(uint64_t acc, uint64_t in)
{
    return tc_rotl(acc + in * TC_H2, 31) * TC_H1;
}

static uint64_t tc_hash_block(const unsigned char *p, size_t n, uint64_t seed)
{
    uint64_t a = seed + TC_H1 + TC_H2, b = seed + TC_H2, c = seed, d = seed - TC_H1;
    size_t k = 0;
    for (; k + 32 <= n; k += 32) { /* four independent lanes keep the multipliers busy */
        a = tc_mix(a, tc_rd64(p + k));
        b = tc_mix(b, tc_rd64(p + k + 8));
        c = tc_mix(c, tc_rd64(p + k + 16));
        d = tc_mix(d, tc_rd64(p + k + 24));
    }
    uint64_t h = tc_rotl(a, 1) + tc_rotl(b, 7) + tc_rotl(c, 12) + tc_rotl(d, 18);
    for (; k + 8 <= n; k += 8)
        h = tc_rotl(h ^ tc_mix(0, tc_rd64(p + k)), 27) * TC_H1 + TC_H3;
    for (; k < n; k++)
        h = tc_rotl(h ^ (p[k] * TC_H3), 11) * TC_H1;
    h ^= (uint64_t)n;
    h ^= h >> 33;
    h *= TC_H2;
    h ^= h >> 29;
    h *= TC_H3;
    h ^= h >> 32;
    return h;
}

typedef struct {
    const unsigned char *data;
    size_t n;
    uint64_t seed;
    uint64_t *chunk_hash;
} tc_hash_job;

static void tc_hash_chunks(void *arg, size_t lo, size_t hi)
{
    tc_hash_job *j = arg;
    for (size_t c = lo; c < hi; c++) {
        size_t off = c * TC_HASH_CHUNK;
        size_t len = j->n - off < TC_HASH_CHUNK ? j->n - off : TC_HASH_CHUNK;
        j->chunk_hash[c] = tc_hash_block(j->data + off, len, j->seed + c);
    }
}

uint64_t tc_grb_hash(const void *data, size_t n, uint64_t seed)
{
    if (data == NULL || n == 0)
        return tc_mix(seed, (uint64_t)n);
    size_t chunks = (n + TC_HASH_CHUNK - 1) / TC_HASH_CHUNK;
    if (chunks == 1)
        return tc_hash_block(data, n, seed);
    uint64_t stack[64], *ch = chunks <= 64 ? stack : malloc(chunks * sizeof *ch);
    tc_hash_job job = {data, n, seed, ch};
    uint64_t h = seed ^ (uint64_t)n;
    if (ch != NULL) {
        tc_lanes_parallel(chunks, TC_HASH_CHUNK, tc_hash_chunks, &job);
        for (size_t c = 0; c < chunks; c++)
            h = tc_mix(h, ch[c]);
    } else { /* no memory for the chunk table: one thread, same value */
        for (size_t c = 0; c < chunks; c++) {
            uint64_t one;
            job.chunk_hash = &one;
            tc_hash_chunks(&job, c, c + 1);
            h = tc_mix(h, one);
        }
    }
    if (ch != stack)
        free(ch);
    return h;
}

/* ---------------------------------------------------------------- pins */

static void tc_pin_hashes(const tc_grb_operand *op, uint64_t *hs, uint64_t *hv)
{
    const size_t es = tc_grb_esize(op->vtype);
    if (op->form == TC_FORM_CSR || op->form == TC_FORM_CSC) {
        GrB_Index major = op->form == TC_FORM_CSR ? op->nrows : op->ncols;
        *hs = tc_grb_hash(op->p, (size_t)(major + 1) * sizeof(GrB_Index), 1);
        *hs = tc_mix(*hs, tc_grb_hash(op->i, (size_t)op->nvals * sizeof(GrB_Index), 2));
        *hv = tc_grb_hash(op->x, op->iso ? es : (size_t)op->nvals * es, 3);
    } else {
        *hs = 0;
        *hv = tc_grb_hash(op->x, op->iso ? es : (size_t)(op->nrows * op->ncols) * es, 3);
    }
    *hv = tc_mix(*hv, op->iso);
}

static void tc_pin_record(tc_grb_pin *pin, const tc_grb_operand *op, uint64_t hs, uint64_t hv)
{
    pin->form = op->form;
    pin->vtype = op->vtype;
    pin->nrows = op->nrows;
    pin->ncols = op->ncols;
    pin->nvals = op->nvals;
    pin->iso = op->iso;
    pin->p_addr = op->p;
    pin->i_addr = op->i;
    pin->x_addr = op->x;
    pin->h_struct = hs;
    pin->h_values = hv;
}

tc_grb_pin *tc_grb_pin_find(GrB_Matrix X, tc_grb_form form)
{
    for (tc_grb_pin *p = tc_grb_pins; p != NULL; p = p->next)
        if (p->mat == X)
            return p->form == form ? p : NULL;
    return NULL;
}

tc_grb_pin_state tc_grb_pin_check(tc_grb_pin *pin, const tc_grb_operand *op)
{
    if (pin == NULL || pin->form != op->form || pin->vtype != op->vtype)
        return TC_PIN_NONE;
    const int shape = pin->nrows == op->nrows && pin->ncols == op->ncols &&
                      pin->nvals == op->nvals;
    /* trusted: the same arrays of the user's matrix (unpacked in place; a private copy gets
     * addresses that may come back whatever it holds) */
    if ((pin->flags & TCSPARSE_GRB_PIN_TRUST) && op->in_place && shape && pin->iso == op->iso &&
        pin->p_addr == (const void *)op->p && pin->i_addr == (const void *)op->i &&
        pin->x_addr == op->x) {
        tc_grb_stats.pin_hits++;
        return TC_PIN_HIT;
    }
    uint64_t hs, hv;
    tc_pin_hashes(op, &hs, &hv);
    tc_grb_pin_state st = TC_PIN_HIT;
    if (!shape || hs != pin->h_struct)
        st = TC_PIN_STRUCTURE;
    else if (hv != pin->h_values)
        st = TC_PIN_VALUES;
    tc_pin_record(pin, op, hs, hv);
    if (st == TC_PIN_STRUCTURE)
        tc_grb_stats.pin_rebuilds++;
    else if (st == TC_PIN_VALUES)
        tc_grb_stats.pin_value_refreshes++;
    else
        tc_grb_stats.pin_hits++;
    return st;
}

void tc_grb_pin_unsync(tc_grb_pin *pin, tc_grb_pin_state st)
{
    /* the check recorded the operand's new hashes; the copy was not refreshed to match */
    if (pin != NULL && (st == TC_PIN_STRUCTURE || st == TC_PIN_VALUES))
        pin->nvals = (GrB_Index)-1; /* no operand has this many entries: a rebuild next time */
}

static void tc_pin_unlink(GrB_Matrix X)
{
    for (tc_grb_pin **pp = &tc_grb_pins; *pp != NULL; pp = &(*pp)->next) {
        if ((*pp)->mat == X) {
            tc_grb_pin *dead = *pp;
            *pp = dead->next;
            tc_grb_gpu_pin_free(dead);
            free(dead);
            return;
        }
    }
}

GrB_Info tcsparse_GrB_pin_ext(GrB_Matrix A, unsigned flags)
{
    if (A == NULL)
        return GrB_NULL_POINTER;
    if (flags & ~(unsigned)TCSPARSE_GRB_PIN_TRUST)
        return GrB_INVALID_VALUE;
    GrB_Type type;
    GrB_Index nr, nc, nv;
    int32_t status;
    GrB_Info info = GxB_Matrix_type(&type, A);
    if (info == GrB_SUCCESS)
        info = GrB_Matrix_nrows(&nr, A);
    if (info == GrB_SUCCESS)
        info = GrB_Matrix_ncols(&nc, A);
    if (info == GrB_SUCCESS)
        info = GrB_Matrix_nvals(&nv, A);
    if (info == GrB_SUCCESS)
        info = GxB_Matrix_Option_get_INT32(A, GxB_SPARSITY_STATUS, &status);
    if (info != GrB_SUCCESS)
        return info;
    if (type != GrB_FP32 && type != GrB_FP64)
        return GrB_DOMAIN_MISMATCH;
    const tc_grb_vtype vt = type == GrB_FP64 ? TC_GRB_F64 : TC_GRB_F32;
    const int full = nv == nr * nc && (status == GxB_FULL || status == GxB_BITMAP);
    const int nounpack = tc_config_get()->grb.nounpack;

    tc_grb_lock();
    tc_grb_operand op;
    info = tc_grb_operand_acquire(&op, A, vt, full ? TC_ROLE_FULL : TC_ROLE_PATTERN, 0,
                                  nounpack);
    if (info != GrB_SUCCESS) {
        tc_grb_unlock();
        return info;
    }
    tc_pin_unlink(A);
    tc_grb_pin *pin = calloc(1, sizeof *pin);
    if (pin == NULL) {
        info = GrB_OUT_OF_MEMORY;
    } else {
        pin->mat = A;
        pin->flags = flags;
        uint64_t hs, hv;
        tc_pin_hashes(&op, &hs, &hv);
        tc_pin_record(pin, &op, hs, hv);
        char why[160];
        int host = tc_config_get()->grb.backend == TC_CFG_GRB_HOST;
        if (!host && tc_grb_gpu_available(why, sizeof why) &&
            tc_grb_gpu_pin_upload(pin, &op, why, sizeof why) != 0) {
            if (tc_grb_log_on())
                fprintf(stderr, "tcsparse-grb: tcsparse_GrB_pin: %s\n", why);
            tc_grb_gpu_pin_free(pin);
            free(pin);
            info = GrB_OUT_OF_MEMORY;
        } else {
            pin->next = tc_grb_pins;
            tc_grb_pins = pin;
        }
    }
    GrB_Info rinfo = tc_grb_operand_release(&op);
    tc_grb_unlock();
    return info != GrB_SUCCESS ? info : rinfo;
}

GrB_Info tcsparse_GrB_pin(GrB_Matrix A)
{
    return tcsparse_GrB_pin_ext(A, TCSPARSE_GRB_PIN_VERIFY);
}

GrB_Info tcsparse_GrB_unpin(GrB_Matrix A)
{
    if (A == NULL)
        return GrB_NULL_POINTER;
    tc_grb_lock();
    int found = 0;
    for (tc_grb_pin *p = tc_grb_pins; p != NULL; p = p->next)
        found |= p->mat == A;
    if (found)
        tc_pin_unlink(A);
    tc_grb_unlock();
    return found ? GrB_SUCCESS : GrB_NO_VALUE;
}

void tcsparse_GrB_release(void)
{
    tc_grb_lock();
    while (tc_grb_pins != NULL)
        tc_pin_unlink(tc_grb_pins->mat);
    tc_grb_gpu_release();
    tc_grb_unlock();
}

void tcsparse_GrB_get_stats(tcsparse_GrB_stats_t *stats)
{
    if (stats == NULL)
        return;
    tc_grb_lock();
    *stats = tc_grb_stats;
    tc_grb_unlock();
}

void tcsparse_GrB_reset_stats(void)
{
    tc_grb_lock();
    memset(&tc_grb_stats, 0, sizeof tc_grb_stats);
    tc_grb_unlock();
}
