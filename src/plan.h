/* The per-sparse-matrix plan: ME-TCF on the GPU plus statistics and the balanced kernel's
 * schedule, built on first need and cached with the descriptor. */
#ifndef TC_PLAN_H
#define TC_PLAN_H

#include "internal.h"
#include "../kernels/kernels.h"

/* A decision measured at _preprocess time (TCSPARSE_SELECT=measure) for one kind of call. */
typedef struct {
    int64_t N;
    int ab_type, c_type, tf32;
    tcsparsePath_t path;    /* the fastest of the candidates */
    float ms_base, ms_balanced, ms_cusparse; /* negative: not a candidate */
} tc_measured;

#define TC_PLAN_MEASURED 8

struct tc_plan {
    tc_dev_metcf dev;
    tcsparseMetcfStats_t stats;
    int device;            /* CUDA device the arrays live on */
    double convert_ms;     /* host wall time of the conversion, synchronisation included */
    /* balanced kernel: chunks of at most chunk_blocks blocks of one window */
    int32_t chunk_blocks;
    tc_chunk *chunks;      /* device */
    int32_t nchunks;
    int32_t *split_windows; /* device, after the chunks in their allocation: windows covered by
                             * more than one chunk */
    int32_t nsplit;
    /* measured decisions, most recent last; the oldest is dropped when full */
    tc_measured measured[TC_PLAN_MEASURED];
    int nmeasured;
};

/* Frees the descriptor's plan, if any (destroy, set pointers, strided batch change). */
void tc_plan_invalidate(struct tcsparseSpMatDescr *d);
/* The descriptor's plan, built on the handle's stream when missing (or built for another
 * device).  Invalid structure gives INVALID_VALUE; a matrix beyond the kernels' limits gives
 * NOT_SUPPORTED; both with a message. */
tcsparseStatus_t tc_plan_get(tcsparseHandle_t h, const struct tcsparseSpMatDescr *d,
                             struct tc_plan **out);

#endif
