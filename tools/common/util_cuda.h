/* GPU helpers of the tools and tests (libtcutil), not of the library. */
#ifndef TC_UTIL_CUDA_H
#define TC_UTIL_CUDA_H
#include <cuda_runtime_api.h>
#ifdef __cplusplus
extern "C" {
#endif

/* One empty kernel (one thread) launched on stream s; the launch's status.  The benchmarks
 * launch it, and wait for it, just before timing a plan build: after the host's own work
 * (reading and parsing the next input) the first kernel launch cost 30-47 us of host time on
 * the H100 machine, against 6-10 us for the next ones, whatever the kernel; a memset does
 * not take that cost. */
cudaError_t tc_util_launch_nop(cudaStream_t s);

/* The current device's memory rates in GB/s (1e9 bytes a second), measured now (about 50 ms):
 * DRAM from a device-to-device copy much larger than L2 (read and write counted), L2 from
 * reads of a buffer half its size repeated 20 times.  The median of five timings each.  0 in
 * either where it could not be measured (the error is returned). */
cudaError_t tc_util_bandwidth(double *l2_gbs, double *dram_gbs);

#ifdef __cplusplus
}
#endif
#endif
