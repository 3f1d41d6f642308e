/* Deterministic generators of test and benchmark matrices (0-based CSR, sorted columns,
 * no duplicates, int64 offsets, int32 columns, values uniform in [-1, 1) excluding
 * |v| < 1e-3).  All take a seed; the same seed gives the same matrix. */
#ifndef TC_GEN_H
#define TC_GEN_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int64_t rows, cols, nnz;
    int64_t *row_off; /* rows+1 */
    int32_t *col;     /* nnz */
    double *val;      /* nnz */
} tc_csr;

void tc_csr_free(tc_csr *m);
/* R-MAT (Graph500 a=.57 b=.19 c=.19), 2^scale square: edge_factor*2^scale edges before
 * duplicates are removed, vertex labels scrambled as Graph500 does. */
int tc_gen_rmat(int scale, int edge_factor, uint64_t seed, tc_csr *out);
/* Chung-Lu power-law graph (gamma 2.5), 2^scale square, undirected (both directions stored),
 * at least degree * 2^scale entries after duplicates are removed, labels scrambled; degree
 * at most 2^scale / 4 (-1 otherwise). */
int tc_gen_chunglu(int scale, int degree, uint64_t seed, tc_csr *out);
/* Uniform random: each row gets per_row distinct random columns (fewer when cols < per_row). */
int tc_gen_uniform(int64_t rows, int64_t cols, int64_t per_row, uint64_t seed, tc_csr *out);
/* Banded: entries where |i - j| <= half_bandwidth. */
int tc_gen_banded(int64_t n, int64_t half_bandwidth, uint64_t seed, tc_csr *out);
/* Block diagonal: `copies` copies of m along the diagonal (the GNN mini-batch shape). */
int tc_gen_block_diag(const tc_csr *m, int copies, tc_csr *out);
/* Dense blocks of bs x bs at random block positions, nblocks of them, in an n x n matrix. */
int tc_gen_blocks(int64_t n, int64_t bs, int64_t nblocks, uint64_t seed, tc_csr *out);
/* The generator specs, for usage texts. */
#define TC_GEN_SPECS                                                                           \
    "rmat:SCALE:EF, chunglu:SCALE:DEGREE, uniform:R:C:PER_ROW, banded:N:HALF, "               \
    "blocks:N:BS:COUNT, diag:FILE:COPIES"
/* Parses a generator spec, e.g. "rmat:20:16", "chunglu:20:16", "uniform:1048576:1048576:16",
 * "banded:100000:8", "blocks:65536:16:2000", optionally followed by ":seed=N";
 * "diag:FILE:copies" (matrix market file replicated).  Returns 0, or -1 with a message in
 * err. */
int tc_gen_from_spec(const char *spec, tc_csr *out, char *err, size_t errlen);
/* Returns 0 and fills out from a Matrix Market file or a generator spec (whichever spec is).
 * Pattern files get fixed-seed random values (all-ones values hide permutation bugs). */
int tc_csr_load(const char *spec_or_path, tc_csr *out, char *err, size_t errlen);
/* tc_csr_load's checks without its work: a Matrix Market file is read whole (and freed, not
 * converted), a generator spec (and a diag: spec's inner one) parsed, not generated.
 * Returns 0, or -1 with the message tc_csr_load would give. */
int tc_csr_check(const char *spec_or_path, char *err, size_t errlen);

#endif
