/* Thread-local last-error message and the one place CUDA/cuSPARSE errors are mapped. */
#ifndef TC_ERROR_H
#define TC_ERROR_H

#include <string.h>
#include <cuda_runtime_api.h>
#include <cusparse.h>
#include "tcsparse.h"

/* Clears the calling thread's message (every public function starts with this). */
void tc_error_clear(void);
/* Records a one-line message (printf format) and returns st, so that
 * `return tc_error_set(TCSPARSE_STATUS_INVALID_VALUE, "tcsparseSpMM: matA is NULL");` works. */
tcsparseStatus_t tc_error_set(tcsparseStatus_t st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Maps a CUDA runtime error; `what` names the failed step. Success maps to SUCCESS and
 * leaves the message alone. */
tcsparseStatus_t tc_error_cuda(cudaError_t e, const char *what);
/* Maps a cuSPARSE status (numerically equal to ours) with cuSPARSE's own name in the message. */
tcsparseStatus_t tc_error_cusparse(cusparseStatus_t s, const char *what);

/* dst = a, or a_b when b is not NULL, cut to fit n bytes: the per-call route record uses
 * these instead of snprintf (each snprintf cost ~0.1 us on the routed path). */
static inline void tc_str_join(char *dst, size_t n, const char *a, const char *b)
{
    size_t la = strlen(a), lb = b != NULL ? strlen(b) + 1 : 0;
    if (n == 0)
        return;
    if (la > n - 1)
        la = n - 1;
    memcpy(dst, a, la);
    if (lb > n - 1 - la)
        lb = n - 1 - la;
    if (lb > 0) {
        dst[la] = '_';
        memcpy(dst + la + 1, b, lb - 1);
    }
    dst[la + lb] = '\0';
}

#endif
