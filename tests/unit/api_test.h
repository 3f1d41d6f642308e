/* What the CPU tests of the public API share (test_api.c, test_api_descr.c, test_api_ops.c):
 * checks of a call's status and of the message it leaves, and host arrays of one small
 * matrix.  Include after <criterion/criterion.h>. */
#ifndef TC_API_TEST_H
#define TC_API_TEST_H

#include <stdint.h>
#include "tcsparse.h"

static inline const char *msg(void) { return tcsparseGetLastErrorMessage(); }


#define EXPECT_OK(call)                                                                        \
    do {                                                                                       \
        tcsparseStatus_t st_ = (call);                                                         \
        cr_assert_eq(st_, TCSPARSE_STATUS_SUCCESS, "%s -> %s: %s", #call,                      \
                     tcsparseGetErrorName(st_), msg());                                        \
        cr_assert_str_empty(msg(), "%s succeeded but left a message", #call);                  \
    } while (0)

#define EXPECT_FAIL(call, status)                                                              \
    do {                                                                                       \
        tcsparseStatus_t st_ = (call);                                                         \
        cr_assert_eq(st_, (status), "%s -> %s, expected %s (%s)", #call,                       \
                     tcsparseGetErrorName(st_), tcsparseGetErrorName(status), msg());          \
        cr_assert_str_not_empty(msg(), "%s failed without a message", #call);                  \
    } while (0)

#define BAD TCSPARSE_STATUS_INVALID_VALUE
#define UNSUP TCSPARSE_STATUS_NOT_SUPPORTED

/* Host arrays of a 3x4 matrix: rows {0: (0,1.5) (2,-2)}, {1: empty}, {2: (1, 0.25) (3, 7)}.
 * Not every program uses every array. */
__attribute__((unused)) static int32_t off32[4] = {0, 2, 2, 4}, ind32[4] = {0, 2, 1, 3};
__attribute__((unused)) static int64_t off64[4] = {0, 2, 2, 4}, ind64[4] = {0, 2, 1, 3};
__attribute__((unused)) static int32_t rows32[4] = {0, 0, 2, 2};
__attribute__((unused)) static float vals[4] = {1.5f, -2.0f, 0.25f, 7.0f}, vals2[4];
__attribute__((unused)) static double dense[64], dense2[64];

#endif
