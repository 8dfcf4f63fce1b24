/* common.cuh: what every kernels/*.cu shares: the error macros, bf16 helpers, the stream.
 *
 * CUDA_CHECK / CUBLAS_CHECK / LAUNCH_CHECK *return* GBC_ECUDA from the enclosing function with a
 * message naming the call, the CUDA error and the source line; they never exit(). They are for
 * use inside `int` functions of the gbc_* interface (kernels/gbcuda.h). */
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "gbcuda.h"

typedef __nv_bfloat16 bf16;

/* Record a message (printf-style) and return `status`. */
extern "C" int gbc_set_error(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int gbc_cuda_fail(cudaError_t e, const char *what, const char *file, int line);
int gbc_cublas_fail(int status, const char *what, const char *file, int line);

/* The one stream all kernels run on (created by gbc_init). */
extern cudaStream_t gbc_stream;

#define CUDA_CHECK(call)                                                   \
    do {                                                                   \
        cudaError_t e_ = (call);                                           \
        if (e_ != cudaSuccess) return gbc_cuda_fail(e_, #call, __FILE__, __LINE__); \
    } while (0)

/* After a <<<...>>> launch: a bad configuration shows up here, a fault inside the kernel at the
 * next synchronising call. */
#define LAUNCH_CHECK(name)                                                 \
    do {                                                                   \
        cudaError_t e_ = cudaGetLastError();                               \
        if (e_ != cudaSuccess) return gbc_cuda_fail(e_, "launch of " name, __FILE__, __LINE__); \
    } while (0)

#define CUBLAS_CHECK(call)                                                 \
    do {                                                                   \
        int s_ = (int)(call);                                              \
        if (s_ != 0) return gbc_cublas_fail(s_, #call, __FILE__, __LINE__); \
    } while (0)

#define GBC_INIT() \
    do {                                   \
        int st_ = gbc_init();              \
        if (st_ != GBC_OK) return st_;     \
    } while (0)

#define VALUE_ERROR(...) gbc_set_error(GBC_EVALUE, __VA_ARGS__)

static inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

__device__ __forceinline__ float bf2f(bf16 v) { return __bfloat162float(v); }
__device__ __forceinline__ bf16 f2bf(float v) { return __float2bfloat16_rn(v); }

/* 8 bf16 in one 16-byte load/store. */
struct __align__(16) bf16x8 { __nv_bfloat162 h[4]; };

__device__ __forceinline__ void unpack8(const bf16x8 &v, float *f) {
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float2 t = __bfloat1622float2(v.h[i]);
        f[2 * i] = t.x;
        f[2 * i + 1] = t.y;
    }
}

__device__ __forceinline__ bf16x8 pack8(const float *f) {
    bf16x8 v;
#pragma unroll
    for (int i = 0; i < 4; i++) v.h[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Sum over a block of blockDim.x threads (a multiple of 32, <= 1024); every thread gets it. */
__device__ __forceinline__ float block_sum(float v) {
    __shared__ float part[32];
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) part[wid] = v;
    __syncthreads();
    float s = lane < nw ? part[lane] : 0.0f;
    return warp_sum(s);
}

/* Max over a block of blockDim.x threads (a multiple of 32, <= 1024); every thread gets it. */
__device__ __forceinline__ float block_max(float v) {
    __shared__ float part[32];
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) part[wid] = v;
    __syncthreads();
    float s = lane < nw ? part[lane] : -INFINITY;
    return warp_max(s);
}

__host__ __device__ static inline bool aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }
