/* The least memory traffic of an SpMM (roofline.h). */
#include <stdlib.h>
#include "roofline.h"

int tc_roofline_count(const tc_csr *m, tc_roofline_counts *out)
{
    out->window_cols = out->distinct_cols = 0;
    if (m->cols <= 0)
        return 0;
    /* stamp[c]: the last window (+1) that touched column c; ever[c]: any row did */
    int64_t *stamp = calloc((size_t)m->cols, sizeof *stamp);
    unsigned char *ever = calloc((size_t)m->cols, 1);
    if (stamp == NULL || ever == NULL) {
        free(stamp);
        free(ever);
        return -1;
    }
    for (int64_t r0 = 0; r0 < m->rows; r0 += TC_ROOFLINE_WINDOW) {
        const int64_t w = r0 / TC_ROOFLINE_WINDOW + 1;
        const int64_t r1 = r0 + TC_ROOFLINE_WINDOW < m->rows ? r0 + TC_ROOFLINE_WINDOW : m->rows;
        for (int64_t e = m->row_off[r0]; e < m->row_off[r1]; e++) {
            const int32_t c = m->col[e];
            if (stamp[c] != w) {
                stamp[c] = w;
                out->window_cols++;
            }
            if (!ever[c]) {
                ever[c] = 1;
                out->distinct_cols++;
            }
        }
    }
    free(stamp);
    free(ever);
    return 0;
}

tc_roofline_bytes tc_roofline_bytes_of(const tc_roofline_counts *k, int64_t rows, int64_t nnz,
                                       int64_t N, int es_ab, int es_c, int c_read)
{
    const double a = (double)nnz * (es_ab + 4) + (double)(rows + 1) * 4;
    const double c = (double)rows * (double)N * es_c * (c_read ? 2 : 1);
    const double row = (double)N * es_ab; /* one row of B */
    tc_roofline_bytes b = {(double)k->window_cols * row + a + c,
                           (double)k->distinct_cols * row + a + c};
    return b;
}

double tc_roofline_ms(const tc_roofline_bytes *b, double l2_gbs, double dram_gbs)
{
    if (l2_gbs <= 0 || dram_gbs <= 0)
        return 0;
    const double l2 = b->l2_bytes / (l2_gbs * 1e6), dram = b->dram_bytes / (dram_gbs * 1e6);
    return l2 > dram ? l2 : dram;
}
