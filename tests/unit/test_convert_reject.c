/* CPU ME-TCF conversion: rejection of malformed input (duplicates, indices and offsets out
 * of range, bad arguments) with a one-line message and the output left zeroed, and the free
 * and statistics of an empty (zeroed or NULL) result. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include "error.h"
#include "metcf.h"

/* Expects rejection with a message; *out must come back zeroed. */
static void expect_invalid(const tc_sparse_view *v, const char *needle)
{
    tc_metcf m;
    memset(&m, 0x5a, sizeof m);
    tc_error_clear();
    tcsparseStatus_t st = tc_metcf_build_cpu(v, &m);
    const char *msg = tcsparseGetLastErrorMessage();
    cr_assert_eq(st, TCSPARSE_STATUS_INVALID_VALUE, "status %d for case '%s'", st, needle);
    cr_assert(strncmp(msg, "ME-TCF conversion: ", 19) == 0, "message '%s'", msg);
    cr_assert(strstr(msg, needle) != NULL, "message '%s' lacks '%s'", msg, needle);
    cr_assert(strchr(msg, '\n') == NULL);
    cr_assert_null(m.win_off);
    cr_assert_null(m.blk_off);
    cr_assert_null(m.blk_pos);
    cr_assert_null(m.blk_col);
    cr_assert_null(m.val_idx);
    cr_assert_eq(m.blocks, 0);
    cr_assert_eq(m.rows, 0);
}

Test(convert, rejects_duplicates)
{
    /* Row 2 (0-based) holds column 5 twice, unsorted. */
    int32_t off[5] = {0, 2, 2, 5, 6};
    int32_t col[6] = {1, 3, 5, 0, 5, 7};
    tc_sparse_view v = {TCSPARSE_FORMAT_CSR, 4, 8, 6, off, col, TCSPARSE_INDEX_32I,
                        TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO};
    expect_invalid(&v, "duplicate entry at row 2, column 5");
    int64_t off1[5] = {1, 3, 3, 6, 7};
    int64_t col1[6] = {2, 4, 6, 1, 6, 8};
    tc_sparse_view v1 = {TCSPARSE_FORMAT_CSR, 4, 8, 6, off1, col1, TCSPARSE_INDEX_64I,
                         TCSPARSE_INDEX_64I, TCSPARSE_INDEX_BASE_ONE};
    expect_invalid(&v1, "duplicate entry at row 3, column 6");
    /* COO: the same entry far apart; CSC: a row repeated in a column. */
    int32_t r[5] = {40, 3, 7, 17, 40}, c[5] = {9, 9, 0, 1, 9};
    tc_sparse_view vc = {TCSPARSE_FORMAT_COO, 50, 10, 5, r, c, TCSPARSE_INDEX_32I,
                         TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO};
    expect_invalid(&vc, "duplicate entry at row 40, column 9");
    int32_t coff[4] = {0, 1, 4, 4}, rows[4] = {2, 0, 19, 0};
    tc_sparse_view vs = {TCSPARSE_FORMAT_CSC, 20, 3, 4, coff, rows, TCSPARSE_INDEX_32I,
                         TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO};
    expect_invalid(&vs, "duplicate entry at row 0, column 1");
}

Test(convert, rejects_bad_indices_and_offsets)
{
    int32_t off[4] = {0, 2, 3, 5};
    int32_t col[5] = {0, 6, 1, 2, 3};
    tc_sparse_view v = {TCSPARSE_FORMAT_CSR, 3, 6, 5, off, col, TCSPARSE_INDEX_32I,
                        TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO};
    expect_invalid(&v, "CSR column index 6 at position 1");
    col[1] = -1;
    expect_invalid(&v, "CSR column index -1");
    col[1] = 5;
    v.base = TCSPARSE_INDEX_BASE_ONE; /* offsets now start below the base */
    expect_invalid(&v, "offsets[0] = 0");
    v.base = TCSPARSE_INDEX_BASE_ZERO;
    off[2] = 1;
    expect_invalid(&v, "offsets decrease at 2");
    off[2] = 3;
    off[3] = 4;
    expect_invalid(&v, "expected nnz + base = 5");
    off[3] = 5;
    v.nnz = 6;
    expect_invalid(&v, "expected nnz + base = 6");
    v.nnz = 5;
    /* COO rows and CSC rows out of range. */
    int64_t r[3] = {0, 4, 2}, c[3] = {1, 1, 1};
    tc_sparse_view vc = {TCSPARSE_FORMAT_COO, 4, 2, 3, r, c, TCSPARSE_INDEX_64I,
                         TCSPARSE_INDEX_64I, TCSPARSE_INDEX_BASE_ZERO};
    expect_invalid(&vc, "COO row index 4 at position 1");
    r[1] = 1;
    c[2] = 2;
    expect_invalid(&vc, "COO column index 2 at position 2");
    vc.base = TCSPARSE_INDEX_BASE_ONE;
    c[2] = 1;
    expect_invalid(&vc, "COO row index 0 at position 0");
    vc.base = TCSPARSE_INDEX_BASE_ZERO;
    vc.indices_type = TCSPARSE_INDEX_32I;
    expect_invalid(&vc, "one index type");
    int32_t coff[3] = {0, 2, 3}, rows[3] = {0, 9, 1};
    tc_sparse_view vs = {TCSPARSE_FORMAT_CSC, 9, 2, 3, coff, rows, TCSPARSE_INDEX_32I,
                         TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO};
    expect_invalid(&vs, "CSC row index 9 at position 1");
}

Test(convert, rejects_bad_arguments)
{
    int32_t off[3] = {0, 1, 2}, col[2] = {0, 1};
    tc_sparse_view v = {TCSPARSE_FORMAT_CSR, 2, 2, 2, off, col, TCSPARSE_INDEX_32I,
                        TCSPARSE_INDEX_32I, TCSPARSE_INDEX_BASE_ZERO};
    tc_sparse_view w = v;
    w.indices = NULL;
    expect_invalid(&w, "indices are NULL");
    w = v;
    w.offsets = NULL;
    expect_invalid(&w, "offsets are NULL");
    w = v;
    w.nnz = 0;
    w.offsets = NULL; /* still invalid: 2 rows need offsets */
    expect_invalid(&w, "offsets are NULL");
    w = v;
    w.format = TCSPARSE_FORMAT_COO;
    w.offsets = NULL;
    expect_invalid(&w, "COO row indices are NULL");
    w = v;
    w.rows = -1;
    expect_invalid(&w, "negative size");
    w = v;
    w.cols = -3;
    expect_invalid(&w, "negative size");
    w = v;
    w.nnz = -1;
    expect_invalid(&w, "negative size");
    w = v;
    w.cols = (int64_t)1 << 31;
    expect_invalid(&w, "below 2^31");
    w = v;
    w.rows = (int64_t)1 << 33;
    expect_invalid(&w, "below 2^31");
    w = v;
    w.cols = 0;
    expect_invalid(&w, "nnz = 2 but the matrix is 2 x 0");
    w = v;
    w.base = (tcsparseIndexBase_t)2;
    expect_invalid(&w, "index base 2");
    w = v;
    w.indices_type = TCSPARSE_INDEX_16U;
    expect_invalid(&w, "only 32I and 64I");
    w = v;
    w.format = TCSPARSE_FORMAT_BSR;
    expect_invalid(&w, "not CSR, CSC or COO");
    expect_invalid(NULL, "view is NULL");
    tc_error_clear();
    cr_assert_eq(tc_metcf_build_cpu(&v, NULL), TCSPARSE_STATUS_INVALID_VALUE);
    cr_assert_str_neq(tcsparseGetLastErrorMessage(), "");
}

Test(convert, free_is_idempotent)
{
    tc_metcf m;
    memset(&m, 0, sizeof m);
    tc_metcf_free(&m);
    tc_metcf_free(NULL);
    tcsparseMetcfStats_t st;
    tc_metcf_stats(&m, &st);
    cr_assert_eq(st.windows, 0);
    cr_assert_eq(st.metcf_bytes, 4 + 4);
    cr_assert_eq(st.csr_bytes, 4);
}
