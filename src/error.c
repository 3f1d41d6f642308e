#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "error.h"

static _Thread_local char tc_last_message[256];

void tc_error_clear(void) { tc_last_message[0] = '\0'; }

tcsparseStatus_t tc_error_set(tcsparseStatus_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tc_last_message, sizeof tc_last_message, fmt, ap);
    va_end(ap);
    return st;
}

const char *tcsparseGetLastErrorMessage(void) { return tc_last_message; }

tcsparseStatus_t tc_error_cuda(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return TCSPARSE_STATUS_SUCCESS;
    (void)cudaGetLastError(); /* clear the sticky-free error so later calls start clean */
    tcsparseStatus_t st;
    switch (e) {
    case cudaErrorMemoryAllocation: st = TCSPARSE_STATUS_ALLOC_FAILED; break;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInitializationError: st = TCSPARSE_STATUS_NOT_INITIALIZED; break;
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorInvalidDeviceFunction: st = TCSPARSE_STATUS_ARCH_MISMATCH; break;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevicePointer: st = TCSPARSE_STATUS_INVALID_VALUE; break;
    default: st = TCSPARSE_STATUS_EXECUTION_FAILED; break;
    }
    return tc_error_set(st, "%s: CUDA error %s (%s)", what, cudaGetErrorName(e),
                        cudaGetErrorString(e));
}

tcsparseStatus_t tc_error_cusparse(cusparseStatus_t s, const char *what)
{
    if (s == CUSPARSE_STATUS_SUCCESS)
        return TCSPARSE_STATUS_SUCCESS;
    return tc_error_set((tcsparseStatus_t)s, "%s: cuSPARSE returned %s (%s)", what,
                        cusparseGetErrorName(s), cusparseGetErrorString(s));
}

const char *tcsparseGetErrorName(tcsparseStatus_t status)
{
    switch (status) {
    case TCSPARSE_STATUS_SUCCESS: return "TCSPARSE_STATUS_SUCCESS";
    case TCSPARSE_STATUS_NOT_INITIALIZED: return "TCSPARSE_STATUS_NOT_INITIALIZED";
    case TCSPARSE_STATUS_ALLOC_FAILED: return "TCSPARSE_STATUS_ALLOC_FAILED";
    case TCSPARSE_STATUS_INVALID_VALUE: return "TCSPARSE_STATUS_INVALID_VALUE";
    case TCSPARSE_STATUS_ARCH_MISMATCH: return "TCSPARSE_STATUS_ARCH_MISMATCH";
    case TCSPARSE_STATUS_MAPPING_ERROR: return "TCSPARSE_STATUS_MAPPING_ERROR";
    case TCSPARSE_STATUS_EXECUTION_FAILED: return "TCSPARSE_STATUS_EXECUTION_FAILED";
    case TCSPARSE_STATUS_INTERNAL_ERROR: return "TCSPARSE_STATUS_INTERNAL_ERROR";
    case TCSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED:
        return "TCSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED";
    case TCSPARSE_STATUS_ZERO_PIVOT: return "TCSPARSE_STATUS_ZERO_PIVOT";
    case TCSPARSE_STATUS_NOT_SUPPORTED: return "TCSPARSE_STATUS_NOT_SUPPORTED";
    case TCSPARSE_STATUS_INSUFFICIENT_RESOURCES: return "TCSPARSE_STATUS_INSUFFICIENT_RESOURCES";
    }
    return "TCSPARSE_STATUS_UNKNOWN";
}

const char *tcsparseGetErrorString(tcsparseStatus_t status)
{
    switch (status) {
    case TCSPARSE_STATUS_SUCCESS: return "success";
    case TCSPARSE_STATUS_NOT_INITIALIZED: return "the library or the GPU was not initialized";
    case TCSPARSE_STATUS_ALLOC_FAILED: return "resource allocation failed";
    case TCSPARSE_STATUS_INVALID_VALUE: return "an invalid value was passed";
    case TCSPARSE_STATUS_ARCH_MISMATCH: return "the device architecture is not supported";
    case TCSPARSE_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
    case TCSPARSE_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case TCSPARSE_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case TCSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED: return "the matrix type is not supported";
    case TCSPARSE_STATUS_ZERO_PIVOT: return "zero pivot";
    case TCSPARSE_STATUS_NOT_SUPPORTED: return "the operation or data type combination is not supported";
    case TCSPARSE_STATUS_INSUFFICIENT_RESOURCES: return "resources for the computation were insufficient";
    }
    return "unknown status";
}
