/* Small host utilities of the GraphBLAS adapter: output allocation, byte comparison on the
 * host lanes, a matrix's settings, logging switch. */
#define _GNU_SOURCE /* madvise(MADV_HUGEPAGE) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "config.h"
#include "grb_internal.h"
#include "lanes.h"

int tc_grb_log_on(void)
{
    return tc_config_get()->log;
}

typedef struct {
    const char *a, *b;
    volatile int differ;
} tc_grb_cmp_job;

static void tc_grb_cmp_part(void *arg, size_t lo, size_t hi)
{
    tc_grb_cmp_job *j = arg;
    if (!j->differ && memcmp(j->a + lo, j->b + lo, hi - lo) != 0)
        j->differ = 1;
}

int tc_grb_same_bytes(const void *a, const void *b, size_t n)
{
    tc_grb_cmp_job j = {a, b, 0};
    tc_lanes_parallel(n, 1, tc_grb_cmp_part, &j);
    return !j.differ;
}

/* Page faults on a freshly allocated output are a large part of moving a result to the
 * host; taken on many threads (and on huge pages) they cost a fraction. */
static void tc_grb_touch(void *arg, size_t lo, size_t hi)
{
    volatile char *p = arg;
    for (size_t pg = lo; pg < hi; pg++)
        p[pg * 4096] = 0;
}

void *tc_grb_alloc_out(size_t bytes)
{
    char *p = malloc(bytes > 0 ? bytes : 1);
    if (p == NULL || bytes < ((size_t)8 << 20))
        return p;
    uintptr_t lo = ((uintptr_t)p + 0x1fffff) & ~(uintptr_t)0x1fffff;
    uintptr_t hi = ((uintptr_t)p + bytes) & ~(uintptr_t)0x1fffff;
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE); /* a hint; refusal is fine */
    tc_lanes_parallel(bytes / 4096, 4096, tc_grb_touch, p);
    return p;
}

GrB_Info tc_grb_settings_get(GrB_Matrix X, tc_grb_settings *s)
{
    GrB_Info info = GxB_Matrix_Option_get_INT32(X, GxB_SPARSITY_CONTROL, &s->sparsity_control);
    if (info == GrB_SUCCESS)
        info = GxB_Matrix_Option_get_FP64(X, GxB_HYPER_SWITCH, &s->hyper_switch);
    if (info == GrB_SUCCESS)
        info = GxB_Matrix_Option_get_FP64(X, GxB_BITMAP_SWITCH, &s->bitmap_switch);
    return info;
}

GrB_Info tc_grb_settings_set(GrB_Matrix X, const tc_grb_settings *s)
{
    GrB_Info info = GxB_Matrix_Option_set_INT32(X, GxB_SPARSITY_CONTROL, s->sparsity_control);
    if (info == GrB_SUCCESS)
        info = GxB_Matrix_Option_set_FP64(X, GxB_HYPER_SWITCH, s->hyper_switch);
    if (info == GrB_SUCCESS)
        info = GxB_Matrix_Option_set_FP64(X, GxB_BITMAP_SWITCH, s->bitmap_switch);
    return info;
}
