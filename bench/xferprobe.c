/* Staged host<->device copies as the GraphBLAS adapter does them (compat/graphblas/grb_gpu.c),
 * on a 268 MB array, the host's last-level cache flushed (700 MB touched) before each copy:
 * buffer size and ring depth, 8 or 16 lanes, software prefetch, streaming stores on the way
 * down, and an upload and a download at once on 8 lanes each.  Best of 3.  A developer probe,
 * not built by make:
 *   gcc -O2 -mavx2 -o xferprobe bench/xferprobe.c -I/usr/local/cuda/include \
 *       -L/usr/local/cuda/lib64 -lcudart -lpthread && ./xferprobe
 * Figures from the H100 machine: docs/performance.md, "GraphBLAS adapter". */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <pthread.h>
#include <time.h>
#include <immintrin.h>
#include <cuda_runtime_api.h>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); exit(1);} } while (0)
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
#define NB 8
typedef struct { void *buf[NB]; cudaEvent_t ev[NB]; cudaStream_t s; } lane_t;
static lane_t L[16];
typedef struct { int up, lanes, nbuf, nt, narrow; size_t buf; char *h; char *d; size_t n; /* host bytes */ int lane0; } job_t;
typedef struct { job_t *j; int l; } arg_t;
static void ntcopy(void *dst, const void *src, size_t n) {
  char *d = dst; const char *s = src; size_t i = 0;
  size_t head = (32 - ((uintptr_t)d & 31)) & 31; if (head > n) head = n;
  memcpy(d, s, head); i = head;
  for (; i + 64 <= n; i += 64) {
    __m256i a = _mm256_loadu_si256((const __m256i *)(s + i)), b = _mm256_loadu_si256((const __m256i *)(s + i + 32));
    _mm256_stream_si256((__m256i *)(d + i), a); _mm256_stream_si256((__m256i *)(d + i + 32), b);
  }
  memcpy(d + i, s + i, n - i);
  _mm_sfence();
}
static void pfcopy(void *dst, const void *src, size_t n) {
  char *d = dst; const char *s = src; size_t i = 0;
  for (; i + 256 <= n; i += 256) {
    _mm_prefetch(s + i + 2048, _MM_HINT_NTA); _mm_prefetch(s + i + 2048 + 64, _MM_HINT_NTA);
    _mm_prefetch(s + i + 2048 + 128, _MM_HINT_NTA); _mm_prefetch(s + i + 2048 + 192, _MM_HINT_NTA);
    memcpy(d + i, s + i, 256);
  }
  memcpy(d + i, s + i, n - i);
}
static int g_pf;
static void narrow(int32_t *d, const int64_t *s, size_t n) { for (size_t i = 0; i < n; i++) d[i] = (int32_t)s[i]; }
static void *run(void *p) {
  arg_t *a = p; job_t *j = a->j; lane_t *x = &L[j->lane0 + a->l];
  size_t per = j->n / j->lanes, lo = a->l * per, hi = a->l == j->lanes - 1 ? j->n : lo + per;
  const size_t hes = j->narrow ? 8 : 1, des = j->narrow ? 4 : 1;
  lo = lo / 8 * 8; hi = a->l == j->lanes - 1 ? j->n : hi / 8 * 8;
  size_t chunk = j->buf / 8 * 8 * hes / (j->narrow ? 8 : 1); if (j->narrow) chunk = j->buf / 8 * 8; /* host bytes a piece */
  CK(cudaSetDevice(0));
  if (j->up) {
    size_t c = 0;
    for (size_t at = lo; at < hi; at += chunk, c++) {
      int b = c % j->nbuf; size_t len = hi - at < chunk ? hi - at : chunk;
      CK(cudaEventSynchronize(x->ev[b]));
      if (j->narrow) narrow(x->buf[b], (const int64_t *)(j->h + at), len / 8); else if (g_pf) pfcopy(x->buf[b], j->h + at, len); else memcpy(x->buf[b], j->h + at, len);
      CK(cudaMemcpyAsync(j->d + at / hes * des, x->buf[b], len / hes * des, cudaMemcpyHostToDevice, x->s));
      CK(cudaEventRecord(x->ev[b], x->s));
    }
  } else {
    size_t np = (hi - lo + chunk - 1) / chunk, is = 0, dr = 0;
    while (dr < np) {
      while (is < np && is - dr < (size_t)j->nbuf) {
        size_t at = lo + is * chunk, len = hi - at < chunk ? hi - at : chunk; int b = is % j->nbuf;
        CK(cudaMemcpyAsync(x->buf[b], j->d + at, len, cudaMemcpyDeviceToHost, x->s)); CK(cudaEventRecord(x->ev[b], x->s)); is++;
      }
      size_t at = lo + dr * chunk, len = hi - at < chunk ? hi - at : chunk; int b = dr % j->nbuf;
      CK(cudaEventSynchronize(x->ev[b]));
      if (j->nt) ntcopy(j->h + at, x->buf[b], len); else memcpy(j->h + at, x->buf[b], len);
      dr++;
    }
  }
  CK(cudaStreamSynchronize(x->s));
  return NULL;
}
static void go(job_t *js, int nj) {
  pthread_t th[32]; arg_t a[32]; int k = 0;
  for (int q = 0; q < nj; q++) for (int l = 0; l < js[q].lanes; l++) { a[k] = (arg_t){&js[q], l}; pthread_create(&th[k], NULL, run, &a[k]); k++; }
  for (int i = 0; i < k; i++) pthread_join(th[i], NULL);
}
static void setup(size_t buf) {
  for (int l = 0; l < 16; l++) {
    for (int b = 0; b < NB; b++) { if (L[l].buf[b]) cudaFreeHost(L[l].buf[b]); CK(cudaHostAlloc(&L[l].buf[b], buf, 0)); memset(L[l].buf[b], 0, buf); if (!L[l].ev[b]) CK(cudaEventCreateWithFlags(&L[l].ev[b], cudaEventDisableTiming)); }
    if (!L[l].s) CK(cudaStreamCreateWithFlags(&L[l].s, cudaStreamNonBlocking));
  }
}
static char *FL; static size_t FLN = (size_t)700 << 20;
static void *fl_run(void *p) { size_t k = (size_t)p; size_t per = FLN / 16; for (size_t i = k * per; i < (k + 1) * per; i += 64) FL[i]++; return NULL; }
static void flush(void) { pthread_t t[16]; for (size_t k = 0; k < 16; k++) pthread_create(&t[k], NULL, fl_run, (void *)k); for (int k = 0; k < 16; k++) pthread_join(t[k], NULL); }
int main(void) {
  const size_t NBB = (size_t)268 << 20, NC = (size_t)268 << 20;
  char *B = malloc(NBB), *C = malloc(NC); FL = malloc(FLN); memset(FL, 0, FLN);
  for (size_t i = 0; i < NBB; i += 4) *(float *)(B + i) = (float)i;
  memset(C, 1, NC);
  char *dB, *dC; CK(cudaMalloc((void **)&dB, NBB)); CK(cudaMalloc((void **)&dC, NC));
  size_t bufs[] = {256 << 10, 512 << 10, 2 << 20};
  int nbufs[] = {2, 4};
  double t;
  for (int bi = 0; bi < 3; bi++) {
    setup(bufs[bi]);
    for (int ni = 0; ni < 2; ni++) {
      int nb = nbufs[ni];
      double best[6] = {1e9, 1e9, 1e9, 1e9, 1e9, 1e9};
      for (int r = 0; r < 3; r++) {
        for (int lanes = 8; lanes <= 16; lanes += 8) {
          g_pf = 0; flush(); job_t u = {1, lanes, nb, 0, 0, bufs[bi], B, dB, NBB, 0}; t = now(); go(&u, 1); t = now() - t; if (t < best[lanes / 8 - 1]) best[lanes / 8 - 1] = t;
          g_pf = 1; flush(); t = now(); go(&u, 1); t = now() - t; if (t < best[lanes / 8 + 1]) best[lanes / 8 + 1] = t;
        }
        g_pf = 0; flush(); job_t dn = {0, 16, nb, 1, 0, bufs[bi], C, dC, NC, 0}; t = now(); go(&dn, 1); t = now() - t; if (t < best[4]) best[4] = t;
        flush(); job_t both[2] = {{1, 8, nb, 0, 0, bufs[bi], B, dB, NBB, 0}, {0, 8, nb, 1, 0, bufs[bi], C, dC, NC, 8}}; t = now(); go(both, 2); t = now() - t; if (t < best[5]) best[5] = t;
      }
      printf("COLD buf %4zu KB nbuf %d: up B 8 lanes %.2f ms (%.1f GB/s), 16 lanes %.2f (%.1f) | prefetchnta 8 lanes %.2f, 16 lanes %.2f | down NT 16 lanes %.2f (%.1f) | up 8 + down 8 %.2f\n",
             bufs[bi] >> 10, nb, best[0], NBB / best[0] / 1e6, best[1], NBB / best[1] / 1e6, best[2], best[3], best[4], NC / best[4] / 1e6, best[5]);
      fflush(stdout);
    }
  }
  { flush(); double t0 = now(); memcpy(C, B, NC); printf("1-thread memcpy cold %.1f GB/s\n", NC / (now() - t0) / 1e6); }
  return 0;
}
