/* Helpers the GPU tests share: host arrays in the library's element and index types, and
 * copies to the device checked with Criterion.  Include after <criterion/criterion.h>.
 *
 * A header of static functions rather than testutil.c: they assert with Criterion, and the
 * in-process builds (tests/shim/criterion/criterion.h) keep their test registry and main in
 * the one source file of each program. */
#ifndef TC_GPU_TEST_H
#define TC_GPU_TEST_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>
#include "gen.h"
#include "halfconv.h"

/* Bytes of one element of t (FP32, FP16 or BF16). */
static inline size_t esize(cudaDataType t) { return t == CUDA_R_32F ? 4 : 2; }

/* Stores v as type t at p[i], returning the value actually stored (after rounding). */
static inline double put(void *p, size_t i, cudaDataType t, double v)
{
    if (t == CUDA_R_32F) {
        ((float *)p)[i] = (float)v;
        return (float)v;
    }
    uint16_t h = t == CUDA_R_16F ? tc_f2h((float)v) : tc_f2bf((float)v);
    ((uint16_t *)p)[i] = h;
    return t == CUDA_R_16F ? tc_h2f(h) : tc_bf2f(h);
}

static inline double get(const void *p, size_t i, cudaDataType t)
{
    if (t == CUDA_R_32F)
        return ((const float *)p)[i];
    uint16_t h = ((const uint16_t *)p)[i];
    return t == CUDA_R_16F ? tc_h2f(h) : tc_bf2f(h);
}

/* Stores index v at p[i], 64-bit when is64, else 32-bit. */
static inline void put_index(void *p, size_t i, int is64, int64_t v)
{
    if (is64)
        ((int64_t *)p)[i] = v;
    else
        ((int32_t *)p)[i] = (int32_t)v;
}

/* A device copy of bytes at h (one byte allocated when bytes is 0); cudaFree frees it. */
static inline void *to_device(const void *h, size_t bytes)
{
    void *d = NULL;
    cr_assert_eq(cudaMalloc(&d, bytes ? bytes : 1), cudaSuccess);
    if (bytes)
        cr_assert_eq(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    return d;
}

/* The matrix of a generator spec (gen.h, tc_gen_from_spec); the test fails if it is bad. */
static inline void gen_or_fail(const char *spec, tc_csr *m)
{
    char err[256];
    cr_assert_eq(tc_gen_from_spec(spec, m, err, sizeof err), 0, "%s: %s", spec, err);
}

#endif
