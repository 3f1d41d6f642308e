/* Matrix Market reader (coordinate; real, integer, pattern; general, symmetric,
 * skew-symmetric; plain or gzip). Used by the tools and the tests. */
#ifndef TC_MMIO_H
#define TC_MMIO_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int64_t rows, cols;
    int64_t nnz;       /* entries after symmetric expansion */
    int64_t *row;      /* 0-based row of each entry, in file order (mirrors appended) */
    int64_t *col;      /* 0-based column */
    double *val;       /* value; pattern entries get 1.0 */
    int is_pattern;
    int symmetry;      /* 0 general, 1 symmetric, 2 skew-symmetric */
} tc_mm_matrix;

/* Reads a file (gzip detected by content).  On error returns -1 and writes a one-line
 * message "FILE:LINE: what" into err (errlen bytes); *out is then zeroed.
 * The size line is checked before anything is allocated: the sizes must fit int64, the
 * entries the matrix's positions, and the matrix must fit tc_mm_memory_limit() once read
 * and converted to CSR (24 bytes an entry here, 12 more and 8 a row in tc_mm_to_csr), its
 * entries counted as declared, or as many as a plain file's or buffer's remaining bytes can
 * hold when fewer (an entry line takes 4 bytes or more, 6 with a value). */
int tc_mm_read(const char *path, tc_mm_matrix *out, char *err, size_t errlen);
/* Same, from a memory buffer (name is used in messages). */
int tc_mm_read_mem(const char *buf, size_t len, const char *name, tc_mm_matrix *out, char *err,
                   size_t errlen);
/* The memory, in bytes, that a matrix may need: half the memory available now (MemAvailable,
 * else physical memory; the other half is for the tool's other copies of the matrix), or
 * less where the process's RLIMIT_AS or RLIMIT_DATA is lower; tc_mm_set_memory_limit(bytes) sets it instead
 * (for every later read, in every thread; 0 goes back to the machine's). */
uint64_t tc_mm_memory_limit(void);
void tc_mm_set_memory_limit(uint64_t bytes);
void tc_mm_free(tc_mm_matrix *m);
/* Converts to 0-based CSR sorted by (row, col), duplicates summed. Arrays malloc'ed;
 * returns 0, or -1 on allocation failure, cols > INT32_MAX or an index out of range. */
int tc_mm_to_csr(const tc_mm_matrix *m, int64_t **row_off, int32_t **col, double **val,
                 int64_t *nnz_out);

#endif
