/* The fuzz harnesses as plain functions, so that one body serves libFuzzer (fuzz/run-fuzz
 * builds each with clang -fsanitize=fuzzer and -DTC_LIBFUZZER, which adds the
 * LLVMFuzzerTestOneInput entry point) and the regression test fuzz/replay.c (gcc, `make
 * check`), which replays the committed inputs without libFuzzer.
 *
 * A harness returns normally for any input the library handles correctly (accepted or refused
 * with a status and a message) and calls tc_fuzz_fail, which aborts, when it finds the library
 * broke a promise: a crash or sanitizer report stops it earlier. */
#ifndef TC_FUZZ_H
#define TC_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* Matrix Market reader: tc_mm_read_mem (plain or gzip bytes), then tc_mm_to_csr. */
int tc_fuzz_mmio(const uint8_t *data, size_t size);
/* Descriptors: tcsparseCreateCsr/Csc/Coo (and Const) from arrays decoded from the bytes, the
 * getters and setters, the CPU ME-TCF reference conversion checked against the input, its
 * statistics, destroy and a use after destroy; dense descriptors too. */
int tc_fuzz_descr(const uint8_t *data, size_t size);

/* Prints "tcsparse fuzz: <harness>: <what>" and aborts. */
void tc_fuzz_fail(const char *harness, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

#endif
