/* libtcsparse_preload.so: run unmodified cuSPARSE programs through tcsparse's route.
 *
 * With LD_PRELOAD naming this library, a dynamically linked program's calls to
 * cusparseSpMM{,_bufferSize,_preprocess} and cusparseSDDMM{,_bufferSize,_preprocess} land
 * here.  The caller's descriptors are read with cuSPARSE's own getters and mirrored by
 * tcsparse "shadow" descriptors (cached per cuSPARSE descriptor, so the tensor-core plan built
 * for a matrix is reused); tcsparse's route decides; where it picks the tensor cores the
 * kernel runs on the caller's stream, and everywhere else the real cuSPARSE function is called
 * with the caller's own arguments, untouched.  Calls that change or free a descriptor
 * (destroy, set pointers, strided batch) are intercepted too, to keep the cache right.
 * This file holds the intercepted functions; shim.h lists the others.  The interposer uses
 * tcsparse through tcsparse.h, tcsparse_ext.h and tcsparse_hook.h only.
 *
 * Rules kept:
 *  - the real functions are found once (dlvsym for the libcusparse.so.12 version, else
 *    dlsym(RTLD_NEXT), real.c); nothing in here calls an intercepted name: tcsparse's own
 *    cuSPARSE route is pointed at the real functions before any call (tc_hook_set_cusparse),
 *    and a thread-local depth counter sends any call made from inside the interposer (or
 *    from inside cuSPARSE itself) straight to the real function;
 *  - the handle's stream and pointer mode are read on every call (device-mode alpha/beta are
 *    never read on the host);
 *  - after _preprocess nothing is allocated or synchronised on the execute path; inside a
 *    stream capture a matrix without a plan goes to cuSPARSE;
 *  - one mutex guards the caches (shadow.c); a forked child (another pid) passes everything
 *    through;
 *  - TCSPARSE_ROUTE=cusparse: pure pass-through; TCSPARSE_LOG=1: one line per intercepted
 *    call on stderr.
 *
 * Plans of destroyed descriptors: programs such as PyTorch create a descriptor per call.  A
 * destroyed descriptor's shadow, when it has a plan, is kept (TCSPARSE_X_PRELOAD_KEEP of them,
 * default 8, least recently used dropped) with a fingerprint of its structure arrays taken
 * when the plan was built.  A new descriptor over the same arrays (same pointers, sizes,
 * types) takes it over.  Before tcsparse's own paths run on it, the arrays' fingerprint now is
 * compared: for a CSR SpMM on the device, by the execution itself (tc_shim_guard: a check
 * kernel on the caller's stream whose verdict picks the tensor-core kernel or a CUDA-core
 * SpMM of the caller's arrays; no synchronisation, docs/preload.md), otherwise on the host
 * (tc_shim_verify: one synchronisation).  TCSPARSE_X_PRELOAD_TRUST_POINTERS=1 skips both.
 * Matrices used once: with the automatic route a structure is converted only from its
 * TCSPARSE_X_PRELOAD_CONVERT_AFTER-th execution (default 2); before that cuSPARSE runs it. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "shim.h"

/* ------------------------------------------------------------------ SpMM / SDDMM */

enum { TC_PH_SIZE, TC_PH_PREPROCESS, TC_PH_EXEC };
static const char *const tc_ph_suffix[] = {"_bufferSize", "_preprocess", ""};

typedef struct {
    int sddmm;
    int phase;
    cusparseHandle_t handle;
    cusparseOperation_t opA, opB;
    const void *alpha, *beta;
    const void *sp;       /* SpMM: matA; SDDMM: matC */
    const void *dn1, *dn2; /* SpMM: matB, matC; SDDMM: matA, matB */
    cudaDataType ct;
    int alg;
    void *buffer;
    size_t *size;
    int cusparse_refused; /* _preprocess: the real cuSPARSE refused it (tcsparse must prepare) */
    /* read once by tc_dispatch for _preprocess and executions: the sparse descriptor
     * (tc_shim_read_spmat) and the kind of call (choose.c) */
    int have_sig, have_shape;
    tc_spmat_sig sig;
    const void *values;
    tc_call_shape shape;
} tc_call;

/* The tcsparse function of the call, on shadow descriptors. */
static tcsparseStatus_t tc_call_tcsparse(tcsparseHandle_t h, const tc_call *c, tc_shim_spmat *e,
                                         tcsparseDnMatDescr_t d1, tcsparseDnMatDescr_t d2)
{
    const tcsparseOperation_t opA = (tcsparseOperation_t)c->opA, opB = (tcsparseOperation_t)c->opB;
    if (!c->sddmm) {
        tcsparseSpMMAlg_t alg = (tcsparseSpMMAlg_t)c->alg;
        if (c->phase == TC_PH_SIZE)
            return tcsparseSpMM_bufferSize(h, opA, opB, c->alpha, e->shadow, d1, c->beta, d2,
                                           c->ct, alg, c->size);
        if (c->phase == TC_PH_PREPROCESS)
            return tcsparseSpMM_preprocess(h, opA, opB, c->alpha, e->shadow, d1, c->beta, d2,
                                           c->ct, alg, c->buffer);
        return tcsparseSpMM(h, opA, opB, c->alpha, e->shadow, d1, c->beta, d2, c->ct, alg,
                            c->buffer);
    }
    tcsparseSDDMMAlg_t alg = (tcsparseSDDMMAlg_t)c->alg;
    if (c->phase == TC_PH_SIZE)
        return tcsparseSDDMM_bufferSize(h, opA, opB, c->alpha, d1, d2, c->beta, e->shadow, c->ct,
                                        alg, c->size);
    if (c->phase == TC_PH_PREPROCESS)
        return tcsparseSDDMM_preprocess(h, opA, opB, c->alpha, d1, d2, c->beta, e->shadow, c->ct,
                                        alg, c->buffer);
    return tcsparseSDDMM(h, opA, opB, c->alpha, d1, d2, c->beta, e->shadow, c->ct, alg,
                         c->buffer);
}

/* Set by tc_try when a tensor-core execution failed after it may have launched work. */
static __thread int tc_exec_failed;

static cusparseStatus_t tc_real_call(const tc_call *c);

/* The kind of the call (choose.c): 0 when a dense descriptor cannot be read or the current
 * device is not known. */
static int tc_call_shape_of(const tc_call *c, tc_call_shape *k)
{
    memset(k, 0, sizeof *k); /* compared as bytes */
    k->sddmm = c->sddmm;
    k->opA = (int)c->opA;
    k->opB = (int)c->opB;
    k->ct = (int)c->ct;
    k->alg = c->alg;
    if (cudaGetDevice(&k->device) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    for (int i = 0; i < 2; i++) {
        const void *v;
        cudaDataType t;
        cusparseOrder_t o;
        if (cusparseConstDnMatGet(i ? c->dn2 : c->dn1, &k->rows[i], &k->cols[i], &k->ld[i], &v,
                                  &t, &o) != CUSPARSE_STATUS_SUCCESS)
            return 0;
        k->type[i] = (int)t;
        k->order[i] = (int)o;
    }
    return 1;
}

/* Runs the call through tcsparse on shadow descriptors.  Returns 1 when tcsparse did the whole
 * work (TC path executed, or a size computed); 2 when it called the real cuSPARSE itself, to
 * time it (choose.c; its status in *real_st); 0 when the real cuSPARSE must be called, with
 * `route` and `why` describing the decision. */
static int tc_try(const tc_call *c, char *route, size_t rn, char *why, size_t wn,
                  cusparseStatus_t *real_st)
{
    int done = 0;
    tc_choice *ch = NULL; /* the kind of call being measured, and this call's sample */
    int slot = -1;
    snprintf(route, rn, "cusparse");
    pthread_mutex_lock(&tc_shim_lock);
    tc_shim_depth++;
    cudaStream_t stream = 0;
    tcsparseDnMatDescr_t d1 = NULL, d2 = NULL;
    tcsparseRouteInfo_t info;
    tcsparseStatus_t st;
    tcsparseHandle_t h = tc_shim_handle_get(c->handle, &stream, why, wn);
    if (h != NULL)
        tc_shim_capture_note(stream);
    tc_spmat_sig sig = c->sig;
    const void *values = c->values;
    tc_shim_spmat *e = NULL;
    if (h != NULL && (c->have_sig || tc_shim_read_spmat(c->sp, &sig, &values, why, wn)))
        e = tc_shim_spmat_get(c->sp, &sig, values, why, wn);
    if (e == NULL)
        goto out;
    tcsparseRoute_t route_now;
    const int route_auto = tc_hook_route(h, &route_now) == TCSPARSE_STATUS_SUCCESS &&
                           route_now == TCSPARSE_ROUTE_AUTO;
    /* the plan this call would run on: A's, or for opA = TRANSPOSE its transpose's (asked
     * where it is needed: a renewed shadow has none) */
    const int tr_call = !c->sddmm && c->opA == CUSPARSE_OPERATION_TRANSPOSE;
    if (c->phase == TC_PH_EXEC && route_auto && tc_shim.measure && c->have_shape &&
        tc_shim_has_plan_for(e, tr_call)) {
        /* the automatic route on a structure with a plan: the kind's measured choice */
        const int capturing = tc_shim_capturing();
        tc_choice *k = tc_choice_find(&e->choices, &c->shape, !capturing);
        /* inside a capture no event may be queried (it would invalidate the capture) */
        const int state = k == NULL ? TC_CHOICE_ROUTE : tc_choice_poll(k, !capturing);
        if (state == TC_CHOICE_CUSPARSE) {
            tc_choice_describe(k, why, wn);
            tc_verdict_set_cusparse(&e->sig, &c->shape, why);
            goto out;
        }
        if (state == TC_CHOICE_MEASURING && !capturing) {
            ch = k;
            if (tc_choice_next(ch) == TC_PATH_CUSPARSE) {
                slot = tc_choice_start(ch, TC_PATH_CUSPARSE, stream);
                *real_st = tc_real_call(c);
                const int ok = *real_st == CUSPARSE_STATUS_SUCCESS;
                tc_choice_stop(ch, slot, stream, ok, 0);
                slot = -1;
                if (ok) {
                    tc_choice_describe(ch, why, wn);
                    done = 2;
                    goto out;
                }
                /* cuSPARSE refuses what tcsparse takes: nothing to measure, tcsparse runs it */
                tc_choice_settle(ch);
                ch = NULL;
            } else {
                slot = tc_choice_start(ch, TC_PATH_TCSPARSE, stream);
            }
        }
    }
    /* SpMM: B is read-only, C written; SDDMM: both dense operands are read-only */
    if (tc_shim_dn_shadow(c->dn1, 1, &d1, why, wn) != TCSPARSE_STATUS_SUCCESS ||
        tc_shim_dn_shadow(c->dn2, c->sddmm, &d2, why, wn) != TCSPARSE_STATUS_SUCCESS)
        goto out;
    if (c->phase == TC_PH_PREPROCESS && route_auto && !c->cusparse_refused) {
        /* PyTorch calls _preprocess before every product, on a new descriptor each time: a
         * structure with a plan needs nothing more from it (and an adopted plan no check), and
         * one without is converted only from its convert_after-th use, as on execution */
        if (tc_shim_has_plan_for(e, tr_call)) {
            snprintf(why, wn, "the plan exists");
            goto out;
        }
        const int n = tc_shim_seen_peek(e) + 1; /* the execution to come counts the use */
        if (n < tc_shim.convert_after) {
            snprintf(why, wn, "use %d of this structure: a conversion would not pay off yet "
                     "(converted from use %d on)", n, tc_shim.convert_after);
            goto out;
        }
    }
    if (c->phase == TC_PH_PREPROCESS && e->unverified &&
        !tc_shim_verify(e, stream) && e->unverified) {
        /* _preprocess may decide and measure: never on a plan not checked yet */
        snprintf(why, wn, "kept plan not checkable during a stream capture");
        goto out;
    }
    /* an SpMM on an adopted plan: checked on the device by the execution itself */
    const int guarded = c->phase == TC_PH_EXEC && !c->sddmm && e->unverified && tc_shim_guard(e);
    if (c->phase == TC_PH_EXEC && e->unverified && !guarded) {
        /* Where would the kept plan send the call?  Only tcsparse's own paths need it checked. */
        (void)tc_hook_set_mode(h, TC_SHIM_MODE | TC_HOOK_DECIDE_ONLY);
        st = tc_call_tcsparse(h, c, e, d1, d2);
        if (st != TCSPARSE_STATUS_SUCCESS) /* read before the next tcsparse call clears it */
            snprintf(why, wn, "tcsparse: %s", tcsparseGetLastErrorMessage());
        (void)tc_hook_set_mode(h, TC_SHIM_MODE);
        if (st != TCSPARSE_STATUS_SUCCESS)
            goto out;
        if (tcsparseGetLastRoute(h, &info) == TCSPARSE_STATUS_SUCCESS &&
            info.path == TCSPARSE_PATH_CUSPARSE) {
            snprintf(why, wn, "%s", info.reason);
            goto out;
        }
        const unsigned renewals = e->renewals;
        const int checked = tc_shim_verify(e, stream);
        if (e->renewals != renewals) { /* the shadow was renewed: its measurements are gone */
            ch = NULL;
            slot = -1;
        }
        if (!checked && e->unverified) {
            snprintf(why, wn, "kept plan not checkable during a stream capture");
            goto out;
        }
    }
    if (c->phase == TC_PH_EXEC && route_auto && !tc_shim_has_plan_for(e, tr_call)) {
        int n = tc_shim_seen_count(e);
        if (n < tc_shim.convert_after) {
            snprintf(why, wn, "use %d of this structure: a conversion would not pay off yet "
                     "(converted from use %d on)", n, tc_shim.convert_after);
            goto out;
        }
    }
    st = tc_call_tcsparse(h, c, e, d1, d2);
    if (st != TCSPARSE_STATUS_SUCCESS) {
        snprintf(why, wn, "tcsparse: %s", tcsparseGetLastErrorMessage());
        /* a launch that failed may have run part of the work (the balanced kernel scales C
         * by beta first): cuSPARSE must not run on top of it */
        tc_exec_failed = c->phase == TC_PH_EXEC && st == TCSPARSE_STATUS_EXECUTION_FAILED;
        goto out;
    }
    if (c->phase == TC_PH_SIZE) {
        snprintf(why, wn, "size %zu", *c->size);
        done = 1;
        goto out;
    }
    if (tcsparseGetLastRoute(h, &info) == TCSPARSE_STATUS_SUCCESS) {
        if (info.path != TCSPARSE_PATH_CUSPARSE)
            snprintf(route, rn, "%s", info.kernel);
        snprintf(why, wn, "%s", info.reason);
    }
    if (c->phase == TC_PH_EXEC) {
        int deferred = 1;
        (void)tc_hook_deferred(h, &deferred);
        done = !deferred;
        if (deferred && c->have_shape)
            tc_verdict_set_cusparse(&e->sig, &c->shape, why); /* the route's own decision */
        if (ch != NULL) {
            int learning = 0;
            (void)tc_hook_learning(h, &learning);
            /* only timed calls count towards the bound on learning calls: with the host far
             * ahead of the GPU most calls find every slot in flight */
            tc_choice_stop(ch, slot, stream, done, slot >= 0 ? tc_choice_phase(ch, learning) : 0);
            slot = -1;
            if (!done)
                tc_choice_settle(ch); /* the route sent it to cuSPARSE itself */
        }
    }
    tc_shim_note_plan(e, stream);
    if (ch != NULL && done) {
        char m[120];
        tc_choice_describe(ch, m, sizeof m);
        const size_t used = strlen(why);
        snprintf(why + used, wn - used, "; %s", m);
    }
out:
    if (ch != NULL && slot >= 0)
        tc_choice_stop(ch, slot, stream, 0, 0);
    if (d1 != NULL)
        tcsparseDestroyDnMat(d1);
    if (d2 != NULL)
        tcsparseDestroyDnMat(d2);
    tc_shim_depth--;
    pthread_mutex_unlock(&tc_shim_lock);
    return done;
}

static cusparseStatus_t tc_real_call(const tc_call *c)
{
    if (!c->sddmm) {
        cusparseConstSpMatDescr_t A = c->sp;
        cusparseConstDnMatDescr_t B = c->dn1;
        cusparseDnMatDescr_t C = (cusparseDnMatDescr_t)c->dn2;
        cusparseSpMMAlg_t alg = (cusparseSpMMAlg_t)c->alg;
        switch (c->phase) {
        case TC_PH_SIZE:
            return TC_REAL(spmm_buffer_size, c->handle, c->opA, c->opB, c->alpha, A, B, c->beta,
                           C, c->ct, alg, c->size);
        case TC_PH_PREPROCESS:
            return TC_REAL(spmm_preprocess, c->handle, c->opA, c->opB, c->alpha, A, B, c->beta,
                           C, c->ct, alg, c->buffer);
        default:
            return TC_REAL(spmm, c->handle, c->opA, c->opB, c->alpha, A, B, c->beta, C, c->ct,
                           alg, c->buffer);
        }
    }
    cusparseConstDnMatDescr_t A = c->dn1, B = c->dn2;
    cusparseSpMatDescr_t C = (cusparseSpMatDescr_t)c->sp;
    cusparseSDDMMAlg_t alg = (cusparseSDDMMAlg_t)c->alg;
    switch (c->phase) {
    case TC_PH_SIZE:
        return TC_REAL(sddmm_buffer_size, c->handle, c->opA, c->opB, c->alpha, A, B, c->beta, C,
                       c->ct, alg, c->size);
    case TC_PH_PREPROCESS:
        return TC_REAL(sddmm_preprocess, c->handle, c->opA, c->opB, c->alpha, A, B, c->beta, C,
                       c->ct, alg, c->buffer);
    default:
        return TC_REAL(sddmm, c->handle, c->opA, c->opB, c->alpha, A, B, c->beta, C, c->ct, alg,
                       c->buffer);
    }
}

/* Whether the call's kind was settled on cuSPARSE (choose.c): one table lookup on what
 * tc_dispatch read from the descriptors with cuSPARSE's getters, so that such calls cost
 * little more than cuSPARSE's own. */
static int tc_settled(const tc_call *c, char *why, size_t wn)
{
    pthread_mutex_lock(&tc_shim_lock);
    const int hit = tc_verdict_cusparse(&c->sig, &c->shape, why, wn);
    pthread_mutex_unlock(&tc_shim_lock);
    return hit;
}

static char tc_op_letter(cusparseOperation_t op)
{
    return op == CUSPARSE_OPERATION_NON_TRANSPOSE ? 'N'
           : op == CUSPARSE_OPERATION_TRANSPOSE   ? 'T'
                                                  : 'C';
}

static cusparseStatus_t tc_dispatch(tc_call *c)
{
    const char *fn = c->sddmm ? "cusparseSDDMM" : "cusparseSpMM";
    const char *sfx = tc_ph_suffix[c->phase];
    char fnb[64]; /* the log names a transposed operand (rare: formatted only then) */
    if (tc_shim.log && (c->opA != CUSPARSE_OPERATION_NON_TRANSPOSE ||
                        c->opB != CUSPARSE_OPERATION_NON_TRANSPOSE)) {
        snprintf(fnb, sizeof fnb, "%s%s(opA %c, opB %c)", fn, sfx, tc_op_letter(c->opA),
                 tc_op_letter(c->opB));
        fn = fnb;
        sfx = "";
    }
    if (!tc_shim_route_on()) {
        cusparseStatus_t st = tc_real_call(c);
        if (tc_shim_depth == 0 && tc_shim.ready)
            tc_shim_logf("%s%s -> cusparse (pass-through)", fn, sfx);
        return st;
    }
    char route[64], why[200] = "";
    cusparseStatus_t st;
    if (c->phase != TC_PH_SIZE) {
        c->have_sig = tc_shim_read_spmat(c->sp, &c->sig, &c->values, why, sizeof why);
        c->have_shape = tc_call_shape_of(c, &c->shape);
        if (c->have_sig && c->have_shape && tc_settled(c, why, sizeof why)) {
            /* a kind settled on cuSPARSE: no shadow, no route (its _preprocess is cuSPARSE's) */
            st = tc_real_call(c);
            tc_shim_logf("%s%s -> cusparse (settled: %s)", fn, sfx, why);
            return st;
        }
        why[0] = '\0';
    }
    if (c->phase == TC_PH_SIZE) {
        /* What either path needs: the tensor-core path needs no workspace, so cuSPARSE's
         * size, or tcsparse's answer (0) where cuSPARSE refuses a case the kernels take. */
        st = tc_real_call(c);
        if (st == CUSPARSE_STATUS_SUCCESS) {
            tc_shim_logf("%s%s -> cusparse size %zu", fn, sfx, *c->size);
            return st;
        }
        if (tc_try(c, route, sizeof route, why, sizeof why, &st)) {
            tc_shim_logf("%s%s -> tcsparse (%s)", fn, sfx, why);
            return CUSPARSE_STATUS_SUCCESS;
        }
        tc_shim_logf("%s%s -> cusparse status %d", fn, sfx, (int)st);
        return st;
    }
    if (c->phase == TC_PH_PREPROCESS) {
        /* tcsparse builds the plan (and measures, with TCSPARSE_SELECT=measure); cuSPARSE
         * preprocesses too, so that either path can execute afterwards. */
        st = tc_real_call(c);
        /* cuSPARSE refuses what the tensor cores will run: that refusal is forgiven, and so
         * is its complaint about a NULL buffer where our _bufferSize said 0 for such a case;
         * a short buffer or a resource failure still reaches the caller */
        const int refused = st == CUSPARSE_STATUS_NOT_SUPPORTED ||
                            (st == CUSPARSE_STATUS_INVALID_VALUE && c->buffer == NULL);
        tc_call t = *c;
        t.cusparse_refused = refused; /* then tcsparse prepares whatever its rules say */
        cusparseStatus_t unused;
        (void)tc_try(&t, route, sizeof route, why, sizeof why, &unused);
        if (strcmp(route, "cusparse") != 0 && refused)
            st = CUSPARSE_STATUS_SUCCESS;
        tc_shim_logf("%s%s -> %s (%s)", fn, sfx, route, why);
        return st;
    }
    tc_exec_failed = 0;
    const int r = tc_try(c, route, sizeof route, why, sizeof why, &st);
    if (r == 1) {
        tc_shim_logf("%s -> %s (%s)", fn, route, why);
        return CUSPARSE_STATUS_SUCCESS;
    }
    if (r == 2) {
        tc_shim_logf("%s -> cusparse (%s)", fn, why);
        return st;
    }
    if (tc_exec_failed) {
        tc_shim_logf("%s -> failed (%s)", fn, why);
        return CUSPARSE_STATUS_EXECUTION_FAILED;
    }
    st = tc_real_call(c);
    tc_shim_logf("%s -> cusparse (%s)", fn, why);
    return st;
}

TC_SHIM_EXPORT cusparseStatus_t cusparseSpMM_bufferSize(
    cusparseHandle_t handle, cusparseOperation_t opA, cusparseOperation_t opB, const void *alpha,
    cusparseConstSpMatDescr_t matA, cusparseConstDnMatDescr_t matB, const void *beta,
    cusparseDnMatDescr_t matC, cudaDataType computeType, cusparseSpMMAlg_t alg, size_t *bufferSize)
{
    tc_call c = {.phase = TC_PH_SIZE, .handle = handle,
                 .opA = opA, .opB = opB, .alpha = alpha, .beta = beta,
                 .sp = matA, .dn1 = matB, .dn2 = matC, .ct = computeType, .alg = (int)alg,
                 .size = bufferSize};
    return tc_dispatch(&c);
}

TC_SHIM_EXPORT cusparseStatus_t cusparseSpMM_preprocess(
    cusparseHandle_t handle, cusparseOperation_t opA, cusparseOperation_t opB, const void *alpha,
    cusparseConstSpMatDescr_t matA, cusparseConstDnMatDescr_t matB, const void *beta,
    cusparseDnMatDescr_t matC, cudaDataType computeType, cusparseSpMMAlg_t alg,
    void *externalBuffer)
{
    tc_call c = {.phase = TC_PH_PREPROCESS, .handle = handle,
                 .opA = opA, .opB = opB, .alpha = alpha, .beta = beta,
                 .sp = matA, .dn1 = matB, .dn2 = matC, .ct = computeType, .alg = (int)alg,
                 .buffer = externalBuffer};
    return tc_dispatch(&c);
}

TC_SHIM_EXPORT cusparseStatus_t cusparseSpMM(cusparseHandle_t handle, cusparseOperation_t opA,
                                             cusparseOperation_t opB, const void *alpha,
                                             cusparseConstSpMatDescr_t matA,
                                             cusparseConstDnMatDescr_t matB, const void *beta,
                                             cusparseDnMatDescr_t matC, cudaDataType computeType,
                                             cusparseSpMMAlg_t alg, void *externalBuffer)
{
    tc_call c = {.phase = TC_PH_EXEC, .handle = handle,
                 .opA = opA, .opB = opB, .alpha = alpha, .beta = beta,
                 .sp = matA, .dn1 = matB, .dn2 = matC, .ct = computeType, .alg = (int)alg,
                 .buffer = externalBuffer};
    return tc_dispatch(&c);
}

TC_SHIM_EXPORT cusparseStatus_t cusparseSDDMM_bufferSize(
    cusparseHandle_t handle, cusparseOperation_t opA, cusparseOperation_t opB, const void *alpha,
    cusparseConstDnMatDescr_t matA, cusparseConstDnMatDescr_t matB, const void *beta,
    cusparseSpMatDescr_t matC, cudaDataType computeType, cusparseSDDMMAlg_t alg, size_t *bufferSize)
{
    tc_call c = {.sddmm = 1, .phase = TC_PH_SIZE, .handle = handle,
                 .opA = opA, .opB = opB, .alpha = alpha, .beta = beta,
                 .sp = matC, .dn1 = matA, .dn2 = matB, .ct = computeType, .alg = (int)alg,
                 .size = bufferSize};
    return tc_dispatch(&c);
}

TC_SHIM_EXPORT cusparseStatus_t cusparseSDDMM_preprocess(
    cusparseHandle_t handle, cusparseOperation_t opA, cusparseOperation_t opB, const void *alpha,
    cusparseConstDnMatDescr_t matA, cusparseConstDnMatDescr_t matB, const void *beta,
    cusparseSpMatDescr_t matC, cudaDataType computeType, cusparseSDDMMAlg_t alg,
    void *externalBuffer)
{
    tc_call c = {.sddmm = 1, .phase = TC_PH_PREPROCESS, .handle = handle,
                 .opA = opA, .opB = opB, .alpha = alpha, .beta = beta,
                 .sp = matC, .dn1 = matA, .dn2 = matB, .ct = computeType, .alg = (int)alg,
                 .buffer = externalBuffer};
    return tc_dispatch(&c);
}

TC_SHIM_EXPORT cusparseStatus_t cusparseSDDMM(cusparseHandle_t handle, cusparseOperation_t opA,
                                              cusparseOperation_t opB, const void *alpha,
                                              cusparseConstDnMatDescr_t matA,
                                              cusparseConstDnMatDescr_t matB, const void *beta,
                                              cusparseSpMatDescr_t matC, cudaDataType computeType,
                                              cusparseSDDMMAlg_t alg, void *externalBuffer)
{
    tc_call c = {.sddmm = 1, .phase = TC_PH_EXEC, .handle = handle,
                 .opA = opA, .opB = opB, .alpha = alpha, .beta = beta,
                 .sp = matC, .dn1 = matA, .dn2 = matB, .ct = computeType, .alg = (int)alg,
                 .buffer = externalBuffer};
    return tc_dispatch(&c);
}

/* ------------------------------------------------------------------ descriptor changes */

/* Forgets the shadow of a descriptor whose structure may change (set pointers, strided
 * batch): its plan could be stale.  `orphan`: the descriptor is being destroyed, so a plan that
 * can be recognised later is kept. */
static int tc_forget(const void *d, int orphan)
{
    if (!tc_shim_top() || d == NULL)
        return 0;
    pthread_mutex_lock(&tc_shim_lock);
    tc_shim_depth++;
    int known = tc_shim_spmat_forget(d, orphan);
    tc_shim_depth--;
    pthread_mutex_unlock(&tc_shim_lock);
    return known;
}

TC_SHIM_EXPORT cusparseStatus_t cusparseDestroySpMat(cusparseConstSpMatDescr_t spMatDescr)
{
    int known = tc_forget(spMatDescr, 1);
    cusparseStatus_t st = TC_REAL(destroy_spmat, spMatDescr);
    if (known)
        tc_shim_logf("cusparseDestroySpMat: shadow released");
    return st;
}

TC_SHIM_EXPORT cusparseStatus_t cusparseCsrSetPointers(cusparseSpMatDescr_t spMatDescr,
                                                       void *csrRowOffsets, void *csrColInd,
                                                       void *csrValues)
{
    int known = tc_forget(spMatDescr, 0);
    cusparseStatus_t st =
        TC_REAL(csr_set_pointers, spMatDescr, csrRowOffsets, csrColInd, csrValues);
    if (known)
        tc_shim_logf("cusparseCsrSetPointers: plan invalidated");
    return st;
}

TC_SHIM_EXPORT cusparseStatus_t cusparseCscSetPointers(cusparseSpMatDescr_t spMatDescr,
                                                       void *cscColOffsets, void *cscRowInd,
                                                       void *cscValues)
{
    int known = tc_forget(spMatDescr, 0);
    cusparseStatus_t st =
        TC_REAL(csc_set_pointers, spMatDescr, cscColOffsets, cscRowInd, cscValues);
    if (known)
        tc_shim_logf("cusparseCscSetPointers: plan invalidated");
    return st;
}

TC_SHIM_EXPORT cusparseStatus_t cusparseCooSetPointers(cusparseSpMatDescr_t spMatDescr,
                                                       void *cooRows, void *cooColumns,
                                                       void *cooValues)
{
    int known = tc_forget(spMatDescr, 0);
    cusparseStatus_t st = TC_REAL(coo_set_pointers, spMatDescr, cooRows, cooColumns, cooValues);
    if (known)
        tc_shim_logf("cusparseCooSetPointers: plan invalidated");
    return st;
}

/* New values, same structure: the plan stays (values are read through the descriptor on every
 * call); nothing to do but pass it on. */
TC_SHIM_EXPORT cusparseStatus_t cusparseSpMatSetValues(cusparseSpMatDescr_t spMatDescr,
                                                       void *values)
{
    return TC_REAL(spmat_set_values, spMatDescr, values);
}

TC_SHIM_EXPORT cusparseStatus_t cusparseCsrSetStridedBatch(cusparseSpMatDescr_t spMatDescr,
                                                           int batchCount,
                                                           int64_t offsetsBatchStride,
                                                           int64_t columnsValuesBatchStride)
{
    int known = tc_forget(spMatDescr, 0);
    cusparseStatus_t st = TC_REAL(csr_set_strided_batch, spMatDescr, batchCount,
                                  offsetsBatchStride, columnsValuesBatchStride);
    if (known)
        tc_shim_logf("cusparseCsrSetStridedBatch: plan invalidated");
    return st;
}

TC_SHIM_EXPORT cusparseStatus_t cusparseCooSetStridedBatch(cusparseSpMatDescr_t spMatDescr,
                                                           int batchCount, int64_t batchStride)
{
    int known = tc_forget(spMatDescr, 0);
    cusparseStatus_t st = TC_REAL(coo_set_strided_batch, spMatDescr, batchCount, batchStride);
    if (known)
        tc_shim_logf("cusparseCooSetStridedBatch: plan invalidated");
    return st;
}

TC_SHIM_EXPORT cusparseStatus_t cusparseDestroy(cusparseHandle_t handle)
{
    if (tc_shim_top() && handle != NULL) {
        pthread_mutex_lock(&tc_shim_lock);
        tc_shim_depth++;
        tc_shim_handle_drop(handle);
        tc_shim_depth--;
        pthread_mutex_unlock(&tc_shim_lock);
    }
    return TC_REAL(destroy, handle);
}
