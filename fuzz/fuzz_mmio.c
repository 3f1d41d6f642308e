/* Fuzz harness: the Matrix Market reader (tools/common/mmio.c) on arbitrary bytes.  Checks what mmio.h
 * promises: an error comes with a "NAME:LINE: what" message and a zeroed matrix; a success has
 * every entry inside the declared size, finite values, and tc_mm_to_csr turns it into sorted,
 * duplicate-free CSR. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"
#include "mmio.h"

#define H "mmio"
/* The memory a matrix may take (tc_mm_set_memory_limit): a 40-byte file may declare 2^40
 * rows, whose CSR offsets the fuzzer would report as out of memory, not as a bug.  The
 * reader refuses a header that needs more, so every matrix it accepts goes through
 * tc_mm_to_csr: 16 MiB, about 2 million rows. */
#define TC_FUZZ_MM_MEMORY ((uint64_t)16 << 20)

static void check_csr(const tc_mm_matrix *m)
{
    int64_t *off = NULL, nnz = -1;
    int32_t *col = NULL;
    double *val = NULL;
    int r = tc_mm_to_csr(m, &off, &col, &val, &nnz);
    if (r != 0) {
        if (m->cols <= INT32_MAX)
            tc_fuzz_fail(H, "tc_mm_to_csr refused a %lld x %lld matrix with %lld entries",
                         (long long)m->rows, (long long)m->cols, (long long)m->nnz);
        if (off || col || val)
            tc_fuzz_fail(H, "tc_mm_to_csr failed but returned arrays");
        return;
    }
    if (off[0] != 0 || off[m->rows] != nnz || nnz > m->nnz || nnz < 0)
        tc_fuzz_fail(H, "CSR offsets: first %lld, last %lld, nnz %lld of %lld entries",
                     (long long)off[0], (long long)off[m->rows], (long long)nnz,
                     (long long)m->nnz);
    for (int64_t i = 0; i < m->rows; i++) {
        if (off[i + 1] < off[i])
            tc_fuzz_fail(H, "CSR offsets decrease at row %lld", (long long)i);
        for (int64_t k = off[i]; k < off[i + 1]; k++) {
            if (col[k] < 0 || col[k] >= m->cols)
                tc_fuzz_fail(H, "CSR column %d outside [0, %lld)", col[k], (long long)m->cols);
            if (k > off[i] && col[k - 1] >= col[k])
                tc_fuzz_fail(H, "CSR row %lld not strictly sorted at %lld", (long long)i,
                             (long long)k);
            if (!isfinite(val[k]) && m->nnz > 0) {
                /* a sum of finite values may overflow; only NaN from finite inputs is wrong */
                if (isnan(val[k]))
                    tc_fuzz_fail(H, "CSR value NaN at %lld", (long long)k);
            }
        }
    }
    free(off);
    free(col);
    free(val);
}

int tc_fuzz_mmio(const uint8_t *data, size_t size)
{
    tc_mm_matrix m;
    char err[256];
    memset(&m, 0x5a, sizeof m);
    strcpy(err, "unset");
    tc_mm_set_memory_limit(TC_FUZZ_MM_MEMORY);
    int r = tc_mm_read_mem((const char *)data, size, "fuzz.mtx", &m, err, sizeof err);
    if (r != 0) {
        if (r != -1)
            tc_fuzz_fail(H, "tc_mm_read_mem returned %d", r);
        if (strncmp(err, "fuzz.mtx:", 9) != 0 || strlen(err) < 12)
            tc_fuzz_fail(H, "error without a proper message: '%s'", err);
        if (m.row != NULL || m.col != NULL || m.val != NULL || m.nnz != 0)
            tc_fuzz_fail(H, "failed read left a matrix behind");
        return 0;
    }
    if (err[0] != '\0')
        tc_fuzz_fail(H, "success left a message: '%s'", err);
    if (m.rows < 0 || m.cols < 0 || m.nnz < 0 || (m.nnz > 0 && (!m.row || !m.col || !m.val)))
        tc_fuzz_fail(H, "bad matrix header: %lld x %lld, %lld entries", (long long)m.rows,
                     (long long)m.cols, (long long)m.nnz);
    if (m.symmetry < 0 || m.symmetry > 2 || (m.symmetry && m.rows != m.cols))
        tc_fuzz_fail(H, "symmetry %d on a %lld x %lld matrix", m.symmetry, (long long)m.rows,
                     (long long)m.cols);
    for (int64_t k = 0; k < m.nnz; k++) {
        if (m.row[k] < 0 || m.row[k] >= m.rows || m.col[k] < 0 || m.col[k] >= m.cols)
            tc_fuzz_fail(H, "entry %lld at (%lld, %lld) outside %lld x %lld", (long long)k,
                         (long long)m.row[k], (long long)m.col[k], (long long)m.rows,
                         (long long)m.cols);
        if (!isfinite(m.val[k]))
            tc_fuzz_fail(H, "entry %lld has a non-finite value", (long long)k);
        if (m.is_pattern && m.val[k] != 1.0)
            tc_fuzz_fail(H, "pattern entry %lld has value %g", (long long)k, m.val[k]);
        if (m.symmetry == 2 && m.row[k] == m.col[k])
            tc_fuzz_fail(H, "skew-symmetric matrix with a diagonal entry");
    }
    check_csr(&m);
    tc_mm_free(&m);
    return 0;
}

#ifdef TC_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return tc_fuzz_mmio(data, size);
}
#endif
