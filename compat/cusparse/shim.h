/* Internal header of the cuSPARSE interposer (libtcsparse_preload.so). */
#ifndef TC_SHIM_H
#define TC_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Fingerprint of the bytes of two device arrays (sizes multiples of 4; either may be NULL),
 * computed on `stream` and waited for.  0 on success, -1 on any CUDA error (cleared). */
int tc_shim_fingerprint(const void *a, size_t a_bytes, const void *b, size_t b_bytes,
                        cudaStream_t stream, uint64_t *fp);

#ifdef __cplusplus
}
#endif

#endif
