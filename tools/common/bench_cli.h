/* The frame shared by tcsparse-bench and tcsparse-bench-sddmm: the command line (options, the
 * suite file, the inputs), the checks of every input before a GPU is looked for, the loop over
 * inputs, precisions and sizes, and the small helpers of a case (CUDA error check, random
 * values, relative error).  Each tool keeps its own case: what it times and prints.
 *
 * Order of a run: options (a bad one: a one-line error, exit 2); the suite file, read whole
 * (exit 2 when it cannot be); every input checked without being read whole or generated
 * (tc_csr_check: files exist and their Matrix Market header is valid, generator specs parse;
 * each bad one: a one-line error, then exit 1); the CSV file opened (exit 2 when it cannot
 * be) and its header written; then the GPU: without one, a line saying there is nothing to
 * time and exit 0; with one, the device line and each input read and benchmarked in turn
 * (suite inputs first; an input that fails to read: its error, the others still run, exit
 * 1). */
#ifndef TC_BENCH_CLI_H
#define TC_BENCH_CLI_H

#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime_api.h>
#include "gen.h"

#define TC_BENCH_DEFAULT_INPUT "rmat:16:16"
#define TC_BENCH_MAX_SIZES 16
#define TC_BENCH_MAX_PRECS 4

/* The options of a run. */
typedef struct {
    int sizes[TC_BENCH_MAX_SIZES]; /* N of SpMM (-n), K of SDDMM (-k) */
    int nsizes;
    char precs[TC_BENCH_MAX_PRECS][8];
    int nprecs;
    int reps, warm;
    int builds;  /* plan builds timed, median reported (--builds) */
    int check;   /* compare with cuSPARSE's result (0: --no-check) */
    int reorder; /* 0: no reordered variants; else the tcsparseReorder_t of their plan */
    FILE *csv;
} tc_bench_opts;

/* What a tool is. */
typedef struct {
    const char *name; /* in messages and the usage line */
    char size_flag;   /* 'n' (N) or 'k' (K): the option -n or -k, "bad N" or "bad K" */
    const char *const *precisions; /* the accepted values of -p, NULL-terminated */
    const char *csv_header;        /* the CSV file's first line, with its newline */
    /* Usage text, the tool's own parts: after "INPUT        " up to the generator list;
     * the size and precision options' lines; the --reorder option's lines. */
    const char *usage_input, *usage_sizes, *usage_reorder;
    /* Benchmarks one case: input (as given) read into m, one precision, one size. */
    void (*bench_one)(const char *input, const tc_csr *m, const char *prec, int size,
                      const tc_bench_opts *o);
} tc_bench_tool;

/* The tool's main: see the order of a run above. */
int tc_bench_main(const tc_bench_tool *tool, int argc, char **argv);

/* A CUDA runtime call that must succeed: otherwise the call, its place and the error on
 * stderr, exit 2. */
#define CK(call)                                                                           \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                   \
                    cudaGetErrorString(e_));                                               \
            exit(2);                                                                       \
        }                                                                                  \
    } while (0)

/* Uniform in [-1, 1), 24 random bits, from one splitmix64 sequence per process (the same
 * values in the same order on every machine). */
float tc_bench_rand(void);

/* ||x - ref||₂ / ||ref||₂ over n elements (||x||₂ when ref is all zeros); +inf when an
 * element of x is NaN or infinite. */
double tc_bench_rel_err(const double *ref, const double *x, size_t n);

#endif
