/* The configuration: every environment variable tcsparse reads (the core, the kernel
 * launchers, the interposer and the GraphBLAS adapter), parsed in config.c once per process
 * into one typed struct.  docs/configuration.md lists them.
 *
 * Eight switches are for users: TCSPARSE_ROUTE, _MATH, _LOG, _SELECT, _REORDER,
 * _CACHE_BYTES, _MEM_RESERVE and _GRB.  Every other variable is a tuning or diagnostic knob named
 * TCSPARSE_X_<name>.
 *
 * A value that cannot be read gives one line on stderr, when the environment is read, and
 * the default.  Unset and empty are the same.  Fields marked "rule" hold TC_CFG_RULE (or 0
 * where so said) when unset: the code that reads the field then applies its own rule or
 * default, which stays in one place, beside that code.
 *
 * Self-contained (no other tcsparse header) and usable from C and C++ (the CUDA launchers),
 * so that the interposer and the adapter, which link the core, can include it too. */
#ifndef TC_CONFIG_H
#define TC_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A forced switch: unset (the reader's rule), or 0 / 1. */
#define TC_CFG_RULE (-1)

/* TCSPARSE_ROUTE: unset, the handle's route (tcsparseSetRoute); otherwise it overrides it. */
typedef enum {
    TC_CFG_ROUTE_HANDLE = 0,
    TC_CFG_ROUTE_AUTO,
    TC_CFG_ROUTE_TC,
    TC_CFG_ROUTE_TC_BASE,
    TC_CFG_ROUTE_TC_BALANCED,
    TC_CFG_ROUTE_CUDA_CORE,
    TC_CFG_ROUTE_CUSPARSE
} tc_cfg_route;

/* TCSPARSE_SELECT: unset, the automatic route measures its candidates on the first
 * executions; model: the model alone; measure: at _preprocess. */
typedef enum {
    TC_CFG_SELECT_EXECUTIONS = 0,
    TC_CFG_SELECT_MODEL,
    TC_CFG_SELECT_MEASURE
} tc_cfg_select;

/* TCSPARSE_REORDER, for descriptors left at TCSPARSE_REORDER_DEFAULT. */
typedef enum {
    TC_CFG_REORDER_LATE = 0, /* late (also unset) */
    TC_CFG_REORDER_OFF,      /* 0, off */
    TC_CFG_REORDER_AUTO,     /* 1, auto, on */
    TC_CFG_REORDER_ALWAYS,   /* always */
    TC_CFG_REORDER_ONE       /* an ordering's name: always, that ordering (reorder.ordering) */
} tc_cfg_reorder;

/* TCSPARSE_X_CUSPARSE_ALG3 */
typedef enum { TC_CFG_ALG3_MODEL = 0, TC_CFG_ALG3_NEVER, TC_CFG_ALG3_ALWAYS } tc_cfg_alg3;

/* TCSPARSE_X_GRB_BACKEND */
typedef enum { TC_CFG_GRB_GPU = 0, TC_CFG_GRB_HOST, TC_CFG_GRB_FAIL } tc_cfg_grb_backend;

typedef struct {
    /* ---- the switches for users ---- */
    tc_cfg_route route;   /* TCSPARSE_ROUTE */
    int math_tf32;        /* TCSPARSE_MATH=tf32: new handles in plain TF32 */
    int log;              /* TCSPARSE_LOG set, and not 0: a line per decision on stderr */
    tc_cfg_select select; /* TCSPARSE_SELECT */
    size_t cache_bytes;   /* TCSPARSE_CACHE_BYTES; SIZE_MAX: unlimited */
    /* TCSPARSE_MEM_RESERVE: the device memory a plan build leaves free, a share of the
     * device's memory (mem_reserve_share in [0, 1]) or, where the share is negative, a byte
     * count (mem_reserve_bytes) */
    double mem_reserve_share;
    size_t mem_reserve_bytes;
    struct {
        tc_cfg_reorder mode; /* TCSPARSE_REORDER */
        int ordering;        /* mode ONE: the ordering (TC_ORD_*, reorder.h) */
        unsigned orderings;  /* TCSPARSE_X_REORDER_ORDERINGS: mask of 1 << TC_ORD_*; 0: unset */
        int threads;         /* TCSPARSE_X_REORDER_THREADS; 0: the online CPUs (rule) */
        double min_gain;     /* TCSPARSE_X_REORDER_MIN_GAIN as a fraction; < 0: rule */
        int late_bfs;        /* TCSPARSE_X_REORDER_LATE_BFS: 0, 1, TC_CFG_RULE */
    } reorder;

    /* ---- knobs (TCSPARSE_X_) ---- */
    tc_cfg_alg3 cusparse_alg3; /* TCSPARSE_X_CUSPARSE_ALG3 */
    double explore_factor;     /* TCSPARSE_X_EXPLORE_FACTOR (>= 1); 0: rule */
    int tune;                  /* TCSPARSE_X_TUNE (default 1) */
    int check_buffer;          /* TCSPARSE_X_CHECK_BUFFER (default 1) */
    long long fault_plan_alloc; /* TCSPARSE_X_FAULT_PLAN_ALLOC: plan builds to fail (>= 0) */
    struct {
        size_t keep;      /* TCSPARSE_X_CONVERT_KEEP (default 64 MiB) */
        int sort;         /* TCSPARSE_X_CONVERT_SORT (default 0) */
        int side;         /* TCSPARSE_X_CONVERT_SIDE (default 1) */
        int stage;        /* TCSPARSE_X_CONVERT_STAGE (default 1) */
        int chunk_blocks; /* TCSPARSE_X_CHUNK_BLOCKS (>= 1); 0: rule */
    } convert;
    struct {
        int j;           /* TCSPARSE_X_SPMM_J: 4 or 8; 0: rule */
        int pipe;        /* TCSPARSE_X_SPMM_PIPE: 0, 1, TC_CFG_RULE */
        int pipe_stages; /* TCSPARSE_X_SPMM_PIPE_STAGES: 3, 4, 6 or 8; 0: rule */
        int wide_l1;     /* TCSPARSE_X_SPMM_WIDE_L1: 0, 1, TC_CFG_RULE */
    } spmm;
    struct {
        int pipe;        /* TCSPARSE_X_SDDMM_PIPE: 0, 1, TC_CFG_RULE */
        int pipe_stages; /* TCSPARSE_X_SDDMM_PIPE_STAGES: 2, 3 or 4; 0: rule */
        int wide_l1;     /* TCSPARSE_X_SDDMM_WIDE_L1: 0, 1, TC_CFG_RULE */
        int ksplit;      /* TCSPARSE_X_SDDMM_KSPLIT: 1, 2 or 4; 0: rule */
    } sddmm;

    /* ---- the interposer (compat/cusparse) ---- */
    struct {
        int keep;           /* TCSPARSE_X_PRELOAD_KEEP: 0..1024 (default 8) */
        int convert_after;  /* TCSPARSE_X_PRELOAD_CONVERT_AFTER: 1..1000000 (default 2) */
        int trust_pointers; /* TCSPARSE_X_PRELOAD_TRUST_POINTERS (default 0) */
        int measure;        /* TCSPARSE_X_PRELOAD_MEASURE: cuSPARSE timed against tcsparse per
                             * kind of call (default 1) */
    } preload;

    /* ---- the GraphBLAS adapter (compat/graphblas) ---- */
    struct {
        int on;                     /* TCSPARSE_GRB: off or 0 turns the adapter off */
        double min_flops;           /* TCSPARSE_X_GRB_MIN_FLOPS (default 2097152) */
        tc_cfg_grb_backend backend; /* TCSPARSE_X_GRB_BACKEND: host, fail (tests) */
        int nounpack;               /* TCSPARSE_X_GRB_NOUNPACK (default 0) */
        int fresh_c;                /* TCSPARSE_X_GRB_FRESH_C (default 0) */
        int staging;                /* TCSPARSE_X_GRB_STAGING (default 1) */
        int stage_kb;               /* TCSPARSE_X_GRB_STAGE_KB: 64..16384, a multiple of 64
                                     * (default 2048) */
        int pipe;                   /* TCSPARSE_X_GRB_PIPE: 0, 1, TC_CFG_RULE */
        int wave;                   /* TCSPARSE_X_GRB_WAVE: 0 or 2..32; TC_CFG_RULE */
        int join;                   /* TCSPARSE_X_GRB_JOIN (default 1) */
        int flow;                   /* TCSPARSE_X_GRB_FLOW (default 1) */
        int omp;                    /* TCSPARSE_X_GRB_OMP (default 1) */
        int threads;                /* TCSPARSE_X_GRB_THREADS (>= 1); 0: the online CPUs */
    } grb;
} tc_config;

/* The configuration, read from the environment at the first call (thread-safe); later calls
 * are one atomic load: no getenv, no lock.  The pointer stays valid for the process. */
const tc_config *tc_config_get(void);

/* Reads the environment again, for tests and benchmarks that change a variable in the middle
 * of a process: later tc_config_get calls return the new values; a pointer taken before
 * keeps the previous ones (each reload's values are kept for the process, a few hundred
 * bytes).  Code that copied a value at its own set-up (the plan cache's limit: see
 * tc_plan_cache_reconfigure) keeps it. */
void tc_config_reload(void);

/* Parses a byte count with an optional K, M or G suffix (powers of 1024, an optional trailing
 * "B" or "iB", case-insensitive); returns -1 when s is not one. */
int64_t tc_parse_bytes(const char *s);

#ifdef __cplusplus
}
#endif

#endif
