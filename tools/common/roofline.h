/* The least memory traffic of an SpMM C = A B (tcsparse-bench's roofline column): what a
 * kernel that walks A in 16-row windows (ME-TCF, DTC-SpMM) must move at least, and the time
 * that takes at a GPU's measured L2 and DRAM rates.
 *
 * B rows: each window gathers the B rows of the distinct columns its rows touch, so
 * sum over windows of those columns x N elements pass through L2 at least once; DRAM needs
 * each B row touched by any row once.  A: values, column indices and row offsets once.  C:
 * written once (and read once where beta != 0).  The bound is the larger of the two times:
 * no kernel of this shape can be faster, whatever its tiles. */
#ifndef TC_ROOFLINE_H
#define TC_ROOFLINE_H
#include <stdint.h>
#include "gen.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TC_ROOFLINE_WINDOW 16

typedef struct {
    int64_t window_cols;   /* sum over 16-row windows of the distinct columns they touch */
    int64_t distinct_cols; /* columns touched by any row */
} tc_roofline_counts;

/* Counts of m; 0, or -1 when out of memory. */
int tc_roofline_count(const tc_csr *m, tc_roofline_counts *out);

typedef struct {
    double l2_bytes, dram_bytes;
} tc_roofline_bytes;

/* Bytes for N columns of B and C: es_ab bytes an element of A and B, es_c of C, 4-byte
 * column indices and row offsets; c_read: beta != 0 (C is read too). */
tc_roofline_bytes tc_roofline_bytes_of(const tc_roofline_counts *k, int64_t rows, int64_t nnz,
                                       int64_t N, int es_ab, int es_c, int c_read);

/* The bound in ms at the rates in GB/s (1e9 bytes a second): the larger of the L2 and DRAM
 * times; 0 where a rate is not known (<= 0). */
double tc_roofline_ms(const tc_roofline_bytes *b, double l2_gbs, double dram_gbs);

#ifdef __cplusplus
}
#endif
#endif
