/* ME-TCF (memory-efficient tensor-core format), host side: the CPU reference conversion,
 * statistics and reconstruction.  See DESIGN.md for the layout. */
#ifndef TC_METCF_H
#define TC_METCF_H

#include <stdint.h>
#include "tcsparse.h"
#include "tcsparse_ext.h"

#define TC_WIN_ROWS 16 /* rows per window */
#define TC_BLK_COLS 8  /* condensed columns per TC block */

/* A sparse matrix's index arrays as given by a caller, in host memory.  Formats follow
 * cuSPARSE: CSR (offsets = row offsets [rows+1], indices = column indices [nnz]),
 * CSC (offsets = column offsets [cols+1], indices = row indices [nnz]),
 * COO (offsets = row indices [nnz], indices = column indices [nnz]). */
typedef struct {
    tcsparseFormat_t format;
    int64_t rows, cols, nnz;
    const void *offsets;
    const void *indices;
    tcsparseIndexType_t offsets_type; /* 32I or 64I */
    tcsparseIndexType_t indices_type; /* 32I or 64I */
    tcsparseIndexBase_t base;
} tc_sparse_view;

/* ME-TCF on the host.  All arrays malloc'ed; free with tc_metcf_free. */
typedef struct {
    int64_t rows, cols, nnz;
    int64_t windows; /* ceil(rows/16) */
    int64_t blocks;
    int64_t *win_off;  /* windows+1: first block of each window */
    int64_t *blk_off;  /* blocks+1: first nonzero (block order) of each block */
    uint8_t *blk_pos;  /* nnz: row_in_window*8 + col_in_block */
    int32_t *blk_col;  /* blocks*8: original column per condensed column, -1 = padding */
    int64_t *val_idx;  /* nnz: position of the nonzero in the caller's values array */
} tc_metcf;

/* Builds ME-TCF from the view.  Within a window, distinct columns ascending; within a block,
 * nonzeros ordered by (row, col).  Column indices may be unsorted within a row.
 * Duplicates, out-of-range indices, bad offsets (not starting at base, decreasing, last !=
 * nnz+base) and columns >= 2^31 are rejected with TCSPARSE_STATUS_INVALID_VALUE and a
 * message (tcsparseGetLastErrorMessage); *out is then zeroed.  rows = 0 or nnz = 0 is valid. */
tcsparseStatus_t tc_metcf_build_cpu(const tc_sparse_view *v, tc_metcf *out);
void tc_metcf_free(tc_metcf *m);
/* Statistics of a built ME-TCF (see tcsparseMetcfStats_t). */
void tc_metcf_stats(const tc_metcf *m, tcsparseMetcfStats_t *st);
/* The same from the per-window counts (what the GPU conversion computes): empty windows,
 * the largest window, the histogram of blocks per window (bucket 0: 0 blocks, 1: 1, 2: 2,
 * 3: 3-4, 4: 5-8, ..., 15: more). */
typedef struct {
    int64_t rows, cols, nnz, windows, blocks;
    int64_t empty_windows, max_blocks_per_window, hist[16];
} tc_metcf_counts;
void tc_metcf_stats_from_counts(const tc_metcf_counts *c, tcsparseMetcfStats_t *st);
/* Reconstructs a 0-based CSR with sorted columns from ME-TCF: row_off[rows+1], col[nnz] and
 * val_idx[nnz] (the caller's value position of each entry), all caller-allocated. */
void tc_metcf_to_csr(const tc_metcf *m, int64_t *row_off, int64_t *col, int64_t *val_idx);

#endif
