/* Thread-local last-error message and the one place CUDA/cuSPARSE errors are mapped. */
#ifndef TC_ERROR_H
#define TC_ERROR_H

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

#endif
