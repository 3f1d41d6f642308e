/* window_heights: would taller row windows gather fewer rows of B?  For each input and window
 * height H = 16, 32, 64 rows: the tensor-core blocks (8 distinct columns of one window, as in
 * ME-TCF), the rows of B they gather (8 a block), that count against H = 16, and the mean
 * nonzeros of a 16 x 8 MMA tile (a block of H rows is H / 16 tiles sharing its B rows).
 * CPU only.  Build from a configured build tree:
 *   gcc -O2 -o window_heights $SRC/bench/window_heights.c -I$SRC/src -I$SRC/include \
 *       src/.libs/libtcutil.a -lz -lm
 *   ./window_heights rmat:20:16 $DATA/BlogCatalog.mtx.gz ...   (any tcsparse-inspect input) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gen.h"

/* blocks of 8 distinct columns over windows of h rows; seen[] is a per-column stamp */
static long long count_blocks(const tc_csr *m, int64_t h, int *seen)
{
    long long blocks = 0;
    int stamp = 0;
    for (int64_t r0 = 0; r0 < m->rows; r0 += h) {
        const int64_t r1 = r0 + h < m->rows ? r0 + h : m->rows;
        long long distinct = 0;
        stamp++;
        for (int64_t e = m->row_off[r0]; e < m->row_off[r1]; e++)
            if (seen[m->col[e]] != stamp) {
                seen[m->col[e]] = stamp;
                distinct++;
            }
        blocks += (distinct + 7) / 8;
    }
    return blocks;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: window_heights INPUT...\n");
        return 2;
    }
    int status = 0;
    printf("input,nnz,h,blocks,b_rows,b_rows_vs_h16,nnz_per_tile\n");
    for (int a = 1; a < argc; a++) {
        tc_csr m;
        char err[256];
        if (tc_csr_load(argv[a], &m, err, sizeof err) != 0) {
            fprintf(stderr, "window_heights: %s: %s\n", argv[a], err);
            status = 1;
            continue;
        }
        int *seen = calloc((size_t)m.cols + 1, sizeof *seen);
        if (seen == NULL) {
            fprintf(stderr, "window_heights: out of memory\n");
            return 1;
        }
        double b16 = 0;
        for (int h = 16; h <= 64; h *= 2) {
            const long long blocks = count_blocks(&m, h, seen);
            const double b_rows = 8.0 * (double)blocks;
            if (h == 16)
                b16 = b_rows;
            const double tiles = (double)blocks * h / 16;
            printf("%s,%lld,%d,%lld,%.0f,%.3f,%.2f\n", argv[a], (long long)m.nnz, h, blocks,
                   b_rows, b16 > 0 ? b_rows / b16 : 0.0, tiles > 0 ? (double)m.nnz / tiles : 0.0);
        }
        free(seen);
        tc_csr_free(&m);
    }
    return status;
}
