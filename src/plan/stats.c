/* Statistics of a built ME-TCF and its reconstruction to CSR (the test oracle's inverse). */
#include <string.h>
#include "metcf.h"
#include "metcf_rules.h"

void tc_metcf_stats_from_counts(const tc_metcf_counts *c, tcsparseMetcfStats_t *st)
{
    memset(st, 0, sizeof *st);
    st->rows = c->rows;
    st->cols = c->cols;
    st->nnz = c->nnz;
    st->windows = c->windows;
    st->blocks = c->blocks;
    st->empty_windows = c->empty_windows;
    st->max_blocks_per_window = c->max_blocks_per_window;
    for (int k = 0; k < 16; k++)
        st->blocks_per_window_hist[k] = c->hist[k];
    st->mean_nnz_per_block = c->blocks > 0 ? (double)c->nnz / (double)c->blocks : 0.0;
    st->mean_blocks_per_window =
        c->windows > 0 ? (double)c->blocks / (double)c->windows : 0.0;
    /* The device layout: int32 everywhere except blk_off and the value index, which widen
     * once nonzero positions no longer fit in int32. */
    const int64_t wide = c->nnz >= ((int64_t)1 << 31) ? 8 : 4;
    st->metcf_bytes = 4 * (c->windows + 1) + wide * (c->blocks + 1) + c->nnz +
                      4 * TC_BLK_COLS * c->blocks + wide * c->nnz;
    st->csr_bytes = 4 * (c->rows + 1) + 4 * c->nnz;
}

void tc_metcf_stats(const tc_metcf *m, tcsparseMetcfStats_t *st)
{
    if (st == NULL)
        return;
    memset(st, 0, sizeof *st);
    if (m == NULL)
        return;
    tc_metcf_counts c = {.rows = m->rows, .cols = m->cols, .nnz = m->nnz,
                         .windows = m->windows, .blocks = m->blocks};
    for (int64_t w = 0; w < m->windows; w++) {
        int64_t b = m->win_off[w + 1] - m->win_off[w];
        if (b == 0)
            c.empty_windows++;
        if (b > c.max_blocks_per_window)
            c.max_blocks_per_window = b;
        c.hist[tc_hist_bucket(b)]++;
    }
    tc_metcf_stats_from_counts(&c, st);
}

void tc_metcf_to_csr(const tc_metcf *m, int64_t *row_off, int64_t *col, int64_t *val_idx)
{
    if (m == NULL || row_off == NULL)
        return;
    /* Count per row into row_off[r+1], prefix, scatter with row_off[r] as the cursor (which
     * moves it to row r+1's start), then shift back.  Blocks of a window come in ascending
     * column order and each block in (row, column) order, so the scatter leaves every row's
     * columns ascending. */
    memset(row_off, 0, (size_t)(m->rows + 1) * sizeof *row_off);
    for (int64_t w = 0; w < m->windows; w++)
        for (int64_t b = m->win_off[w]; b < m->win_off[w + 1]; b++)
            for (int64_t k = m->blk_off[b]; k < m->blk_off[b + 1]; k++)
                row_off[w * TC_WIN_ROWS + (m->blk_pos[k] >> 3) + 1]++;
    for (int64_t r = 0; r < m->rows; r++)
        row_off[r + 1] += row_off[r];
    for (int64_t w = 0; w < m->windows; w++)
        for (int64_t b = m->win_off[w]; b < m->win_off[w + 1]; b++)
            for (int64_t k = m->blk_off[b]; k < m->blk_off[b + 1]; k++) {
                int64_t r = w * TC_WIN_ROWS + (m->blk_pos[k] >> 3);
                int64_t s = row_off[r]++;
                col[s] = m->blk_col[b * TC_BLK_COLS + (m->blk_pos[k] & 7)];
                val_idx[s] = m->val_idx[k];
            }
    for (int64_t r = m->rows; r > 0; r--)
        row_off[r] = row_off[r - 1];
    row_off[0] = 0;
}
