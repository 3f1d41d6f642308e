/* Stand-ins for the CUDA kernels' launchers (kernels/, built by nvcc), so that fuzz/run-fuzz
 * can build the descriptor harness from the C sources with clang alone.  The harness never
 * reaches them: plans need a GPU, and a descriptor without a plan frees nothing on the
 * device.  They fail loudly if that changes. */
#include <stdio.h>
#include <stdlib.h>
#include "kernels.h"

tcsparseStatus_t tc_convert_gpu(const tc_convert_input *in, tc_dev_metcf *out,
                                tc_convert_extra *x, cudaStream_t stream, char *err,
                                size_t errlen)
{
    (void)in, (void)out, (void)x, (void)stream, (void)err, (void)errlen;
    fprintf(stderr, "fuzz stub: tc_convert_gpu called\n");
    abort();
}

void tc_dev_metcf_free(tc_dev_metcf *m)
{
    (void)m;
    fprintf(stderr, "fuzz stub: tc_dev_metcf_free called\n");
    abort();
}

int tc_convert_can_order(const tc_convert_input *in)
{
    (void)in;
    fprintf(stderr, "fuzz stub: tc_convert_can_order called\n");
    abort();
}

tc_plan_layout tc_plan_layout_of(int64_t rows, int64_t cols, int64_t nnz, int chunk_blocks,
                                 int win_rows)
{
    (void)rows, (void)cols, (void)nnz, (void)chunk_blocks, (void)win_rows;
    fprintf(stderr, "fuzz stub: tc_plan_layout_of called\n");
    abort();
}

int tc_fingerprint_arrays(const void *a, size_t a_bytes, const void *b, size_t b_bytes,
                          cudaStream_t stream, unsigned long long *dword,
                          unsigned long long *hword, uint64_t *fp, uint64_t *fp_a)
{
    (void)a, (void)a_bytes, (void)b, (void)b_bytes, (void)stream, (void)dword, (void)hword;
    (void)fp, (void)fp_a;
    fprintf(stderr, "fuzz stub: tc_fingerprint_arrays called\n");
    abort();
}

void tc_spmm_plan_ready(void)
{
    fprintf(stderr, "fuzz stub: tc_spmm_plan_ready called\n");
    abort();
}

void tc_sddmm_plan_ready(void)
{
    fprintf(stderr, "fuzz stub: tc_sddmm_plan_ready called\n");
    abort();
}

/* The route's helpers and sampler that late ordering (src/route/late.c, reached from descriptor
 * destroy through tc_plan_invalidate) calls on its GPU paths only: a descriptor without a
 * plan never gets there. */
#include "measure.h"

void tc_reason_format(const tc_reason_args *ra, char *out, size_t n)
{
    (void)ra, (void)out, (void)n;
    fprintf(stderr, "fuzz stub: tc_reason_format called\n");
    abort();
}

int tc_select_model_only(void)
{
    fprintf(stderr, "fuzz stub: tc_select_model_only called\n");
    abort();
}

int tc_stream_capturing(cudaStream_t s)
{
    (void)s;
    fprintf(stderr, "fuzz stub: tc_stream_capturing called\n");
    abort();
}

const tc_measured *tc_measured_lookup(const struct tc_plan *p, const tc_call_kind *k)
{
    (void)p, (void)k;
    fprintf(stderr, "fuzz stub: tc_measured_lookup called\n");
    abort();
}

tcsparseRoute_t tc_route_effective(tcsparseHandle_t h)
{
    (void)h;
    fprintf(stderr, "fuzz stub: tc_route_effective called\n");
    abort();
}

void tc_explore_abandon(tc_explore *x)
{
    (void)x;
    fprintf(stderr, "fuzz stub: tc_explore_abandon called\n");
    abort();
}

int tc_explore_pending(const tc_explore *x)
{
    (void)x;
    fprintf(stderr, "fuzz stub: tc_explore_pending called\n");
    abort();
}

int tc_explore_free_pair(tc_explore *x)
{
    (void)x;
    fprintf(stderr, "fuzz stub: tc_explore_free_pair called\n");
    abort();
}

void tc_explore_harvest(tc_explore *x)
{
    (void)x;
    fprintf(stderr, "fuzz stub: tc_explore_harvest called\n");
    abort();
}

size_t tc_csr_sched_bytes(int64_t M, int64_t nnz, size_t *scratch)
{
    (void)M, (void)nnz, (void)scratch;
    fprintf(stderr, "fuzz stub: tc_csr_sched_bytes called\n");
    abort();
}

tcsparseStatus_t tc_csr_sched_build(const tc_csr_arrays *csr, int64_t M, cudaStream_t s,
                                    tc_csr_sched *out, char *err, size_t errlen)
{
    (void)csr, (void)M, (void)s, (void)out, (void)err, (void)errlen;
    fprintf(stderr, "fuzz stub: tc_csr_sched_build called\n");
    abort();
}

void tc_csr_sched_free(tc_csr_sched *out)
{
    (void)out;
    fprintf(stderr, "fuzz stub: tc_csr_sched_free called\n");
    abort();
}
