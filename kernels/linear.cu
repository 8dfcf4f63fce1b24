/* linear.cu: y[T, N] = x[T, K] . w[N, K]^T (+ bias), bf16 storage, fp32 accumulation.
 *   linear_kernel1  one thread per output, fp32 loop over K (a plain reference on the device)
 *   linear_kernel2  decode GEMV for T <= 8: one warp per weight row, 16-byte loads, 4 loads in
 *                   flight per lane; all T rows of x share each weight read (bandwidth-bound).
 *                   Optionally fused (gbc_linear_ex): RMSNorm of x before (each block recomputes the
 *                   row scale; the norm weight is folded into the weight row) and a residual after.
 *   linear_kernel3  tensor-core tiles (WMMA 64x64x32, gemm_tile.cuh): prefill without cuBLAS
 *   version 4       cuBLAS cublasGemmEx, bf16 in/out, CUBLAS_COMPUTE_32F (when built with cuBLAS)
 * Launcher (version 0): T <= 8 -> 2; else 4 if cuBLAS was found at build time, else 3.
 *   swiglu_gemv_kernel1  decode SwiGLU middle in one pass, T <= 8: h[t, f] = silu(x[t].wg[f]) * (x[t].wu[f]),
 *                   a warp per f reading both weight rows (the gate and up GEMVs and silu_mul fused;
 *                   g and u stay fp32, where the unfused path rounds them to bf16)
 * Also: silu_mul (SwiGLU's middle), add (residuals), copy_kernel (the copy-bandwidth ceiling). */
#include "common.cuh"
#include "gemm_tile.cuh"
#ifdef GB_HAVE_CUBLAS
#include <cublas_v2.h>
extern cublasHandle_t gbc_cublas;
#endif

__global__ void linear_kernel1(const bf16 *__restrict__ x, const bf16 *__restrict__ w, const bf16 *__restrict__ bias,
                               bf16 *__restrict__ y, int64_t T, int64_t N, int64_t K) {
    int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (idx >= T * N) return;
    int64_t t = idx / N, n = idx % N;
    const bf16 *xr = x + t * K, *wr = w + n * K;
    float s = 0.0f;
    for (int64_t k = 0; k < K; k++) s += bf2f(xr[k]) * bf2f(wr[k]);
    if (bias) s += bf2f(bias[n]);
    y[idx] = f2bf(s);
}

template <int TT, bool NORM>
__global__ void linear_kernel2(const bf16 *__restrict__ x, const bf16 *__restrict__ w, const bf16 *__restrict__ bias,
                               bf16 *__restrict__ y, int64_t N, int64_t K, const bf16 *__restrict__ norm_w, float eps,
                               const bf16 *__restrict__ residual) {
    __shared__ float inv[TT];
    if (NORM) { /* every block recomputes RMSNorm's scale of the T rows of x (a few KB, from L2) */
        for (int t = 0; t < TT; t++) {
            float ss = 0.0f;
            for (int64_t i = threadIdx.x; i < K; i += blockDim.x) {
                float v = bf2f(x[t * K + i]);
                ss += v * v;
            }
            ss = block_sum(ss);
            if (threadIdx.x == 0) inv[t] = rsqrtf(ss / (float)K + eps);
        }
        __syncthreads();
    }
    int lane = threadIdx.x & 31;
    int64_t n = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5);
    if (n >= N) return;
    const bf16x8 *wr = (const bf16x8 *)(w + n * K);
    int64_t n8 = K / 8;
    float acc[TT];
#pragma unroll
    for (int t = 0; t < TT; t++) acc[t] = 0.0f;
    const int U = 4;
    int64_t i = lane;
    for (; i + 32 * (U - 1) < n8; i += 32 * U) {
        bf16x8 wv[U];
#pragma unroll
        for (int u = 0; u < U; u++) wv[u] = wr[i + 32 * u];
#pragma unroll
        for (int u = 0; u < U; u++) {
            float wf[8];
            unpack8(wv[u], wf);
            if (NORM) { /* fold the norm weight into the weight row: (x * inv * g) . w = inv * x . (g * w) */
                float gf[8];
                unpack8(((const bf16x8 *)norm_w)[i + 32 * u], gf);
#pragma unroll
                for (int e = 0; e < 8; e++) wf[e] *= gf[e];
            }
#pragma unroll
            for (int t = 0; t < TT; t++) {
                float xf[8];
                unpack8(((const bf16x8 *)(x + t * K))[i + 32 * u], xf);
#pragma unroll
                for (int e = 0; e < 8; e++) acc[t] += wf[e] * xf[e];
            }
        }
    }
    for (; i < n8; i += 32) {
        float wf[8];
        unpack8(wr[i], wf);
        if (NORM) {
            float gf[8];
            unpack8(((const bf16x8 *)norm_w)[i], gf);
#pragma unroll
            for (int e = 0; e < 8; e++) wf[e] *= gf[e];
        }
#pragma unroll
        for (int t = 0; t < TT; t++) {
            float xf[8];
            unpack8(((const bf16x8 *)(x + t * K))[i], xf);
#pragma unroll
            for (int e = 0; e < 8; e++) acc[t] += wf[e] * xf[e];
        }
    }
#pragma unroll
    for (int t = 0; t < TT; t++) {
        float s = warp_sum(acc[t]);
        if (NORM) s *= inv[t];
        if (lane == 0)
            y[t * N + n] = f2bf(s + (bias ? bf2f(bias[n]) : 0.0f) + (residual ? bf2f(residual[t * N + n]) : 0.0f));
    }
}

__global__ void linear_kernel3(const bf16 *__restrict__ x, const bf16 *__restrict__ w, const bf16 *__restrict__ bias,
                               bf16 *__restrict__ y, int64_t T, int64_t N, int64_t K) {
    __shared__ GemmTileSmem sm;
    int64_t m0 = blockIdx.y * (int64_t)GT_BM, n0 = blockIdx.x * (int64_t)GT_BN;
    int m_valid = (int)min((int64_t)GT_BM, T - m0), n_valid = (int)min((int64_t)GT_BN, N - n0);
    gemm_tile_64x64(x + m0 * K, K, m_valid, w + n0 * K, K, n_valid, K, sm);
    for (int c = threadIdx.x; c < GT_BM * GT_BN; c += blockDim.x) {
        int r = c / GT_BN, col = c % GT_BN;
        if (r < m_valid && col < n_valid) {
            float v = sm.c[r][col] + (bias ? bf2f(bias[n0 + col]) : 0.0f);
            y[(m0 + r) * N + n0 + col] = f2bf(v);
        }
    }
}

__global__ void add_bias_kernel(bf16 *y, const bf16 *__restrict__ bias, int64_t T, int64_t N) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < T * N; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = f2bf(bf2f(y[i]) + bf2f(bias[i % N]));
}

static unsigned grid_for(int64_t n, int threads) {
    int64_t b = cdiv(n, threads);
    return (unsigned)(b < 65536 ? (b > 0 ? b : 1) : 65536);
}

extern "C" int gbc_linear(const void *x, const void *w, const void *bias, void *y, int64_t T, int64_t N, int64_t K,
                          int version) {
    return gbc_linear_ex(x, w, bias, y, T, N, K, nullptr, 0.0f, nullptr, version);
}

extern "C" int gbc_linear_ex(const void *x, const void *w, const void *bias, void *y, int64_t T, int64_t N, int64_t K,
                             const void *norm_w, float eps, const void *residual, int version) {
    if (T < 0 || N <= 0 || K <= 0)
        return VALUE_ERROR("linear: bad shape T=%ld N=%ld K=%ld", (long)T, (long)N, (long)K);
    if (version < 0 || version > 4) return VALUE_ERROR("linear: `version` must be 0..4, got %d", version);
    if (version == 4 && !gbc_have_cublas())
        return VALUE_ERROR("linear version 4 (cuBLAS) is not available: glmbench._cuda was built without cuBLAS "
                           "headers (see docs/CUDA.md)");
    bool gemv_ok = T <= 8 && K % 8 == 0 && aligned16(x) && aligned16(w) && (!norm_w || aligned16(norm_w));
    if ((norm_w || residual) && !(gemv_ok && (version == 0 || version == 2)))
        return VALUE_ERROR("linear: a fused norm or residual needs the GEMV (version 2: T <= 8, K %% 8 == 0, aligned), "
                           "got T=%ld K=%ld version=%d", (long)T, (long)K, version);
    if (norm_w && !(eps >= 0.0f)) return VALUE_ERROR("linear: `eps` must be >= 0, got %g", (double)eps);
    GBC_INIT();
    if (T == 0) return GBC_OK;
    if (version == 0) version = gemv_ok ? 2 : (gbc_have_cublas() ? 4 : 3);
    const bf16 *xb = (const bf16 *)x, *wb = (const bf16 *)w, *bb = (const bf16 *)bias;
    const bf16 *nb = (const bf16 *)norm_w, *rb = (const bf16 *)residual;
    bf16 *yb = (bf16 *)y;
    switch (version) {
    case 1:
        linear_kernel1<<<(unsigned)cdiv(T * N, 256), 256, 0, gbc_stream>>>(xb, wb, bb, yb, T, N, K);
        LAUNCH_CHECK("linear_kernel1");
        return GBC_OK;
    case 2: {
        if (!gemv_ok)
            return VALUE_ERROR("linear version 2 (GEMV) needs T <= 8, K %% 8 == 0 and aligned buffers, got T=%ld K=%ld",
                               (long)T, (long)K);
        const int warps = 8;
        unsigned blocks = (unsigned)cdiv(N, warps);
        switch (T) {
#define GB_GEMV_CASE(TT)                                                                                          \
    case TT:                                                                                                      \
        if (nb) linear_kernel2<TT, true><<<blocks, 32 * warps, 0, gbc_stream>>>(xb, wb, bb, yb, N, K, nb, eps, rb); \
        else linear_kernel2<TT, false><<<blocks, 32 * warps, 0, gbc_stream>>>(xb, wb, bb, yb, N, K, nb, eps, rb);   \
        break;
            GB_GEMV_CASE(1) GB_GEMV_CASE(2) GB_GEMV_CASE(3) GB_GEMV_CASE(4)
            GB_GEMV_CASE(5) GB_GEMV_CASE(6) GB_GEMV_CASE(7) GB_GEMV_CASE(8)
#undef GB_GEMV_CASE
        }
        LAUNCH_CHECK("linear_kernel2");
        return GBC_OK;
    }
    case 3: {
        dim3 grid((unsigned)cdiv(N, GT_BN), (unsigned)cdiv(T, GT_BM));
        if (grid.y > 65535) return VALUE_ERROR("linear version 3: T=%ld too large (at most %d)", (long)T, 65535 * GT_BM);
        linear_kernel3<<<grid, 128, 0, gbc_stream>>>(xb, wb, bb, yb, T, N, K);
        LAUNCH_CHECK("linear_kernel3");
        return GBC_OK;
    }
    case 4: {
#ifdef GB_HAVE_CUBLAS
        /* Column-major view: y^T[N, T] = (w[N, K] row-major = w^T col-major, so OP_T) . x^T[K, T] */
        float one = 1.0f, zero = 0.0f;
        CUBLAS_CHECK(cublasGemmEx(gbc_cublas, CUBLAS_OP_T, CUBLAS_OP_N, (int)N, (int)T, (int)K, &one, wb, CUDA_R_16BF,
                                  (int)K, xb, CUDA_R_16BF, (int)K, &zero, yb, CUDA_R_16BF, (int)N,
                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        if (bb) {
            add_bias_kernel<<<grid_for(T * N, 256), 256, 0, gbc_stream>>>(yb, bb, T, N);
            LAUNCH_CHECK("add_bias_kernel");
        }
        return GBC_OK;
#else
        return VALUE_ERROR("linear version 4 (cuBLAS) is not available: glmbench._cuda was built without cuBLAS "
                           "headers (see docs/CUDA.md)");
#endif
    }
    default:
        return VALUE_ERROR("linear: `version` must be 0..4, got %d", version);
    }
}

__global__ void silu_mul_kernel(const bf16 *__restrict__ g, const bf16 *__restrict__ u, bf16 *__restrict__ h,
                                int64_t T, int64_t F, int64_t ld) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < T * F; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t t = i / F, f = i % F;
        float a = bf2f(g[t * ld + f]), b = bf2f(u[t * ld + f]);
        h[i] = f2bf(a / (1.0f + expf(-a)) * b);
    }
}

extern "C" int gbc_silu_mul(const void *g, const void *u, void *h, int64_t T, int64_t F, int64_t ld_in, int version) {
    if (T < 0 || F <= 0 || ld_in < F) return VALUE_ERROR("silu_mul: bad shape T=%ld F=%ld ld=%ld", (long)T, (long)F, (long)ld_in);
    if (version != 0 && version != 1) return VALUE_ERROR("silu_mul: `version` must be 0 or 1, got %d", version);
    GBC_INIT();
    if (T == 0) return GBC_OK;
    silu_mul_kernel<<<grid_for(T * F, 256), 256, 0, gbc_stream>>>((const bf16 *)g, (const bf16 *)u, (bf16 *)h, T, F, ld_in);
    LAUNCH_CHECK("silu_mul_kernel");
    return GBC_OK;
}

__global__ void add_kernel(const bf16 *__restrict__ a, const bf16 *__restrict__ b, bf16 *__restrict__ y, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = f2bf(bf2f(a[i]) + bf2f(b[i]));
}

extern "C" int gbc_add(const void *a, const void *b, void *y, int64_t n) {
    if (n < 0) return VALUE_ERROR("add: `n` must be >= 0, got %ld", (long)n);
    GBC_INIT();
    if (n == 0) return GBC_OK;
    add_kernel<<<grid_for(n, 256), 256, 0, gbc_stream>>>((const bf16 *)a, (const bf16 *)b, (bf16 *)y, n);
    LAUNCH_CHECK("add_kernel");
    return GBC_OK;
}

/* 16-byte loads and stores, 4 in flight per thread: the copy ceiling our kernels are held to. */
__global__ void copy_kernel(uint4 *__restrict__ dst, const uint4 *__restrict__ src, int64_t n16) {
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n16; i += 4 * stride) {
        uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        dst[i] = a;
        dst[i + stride] = b;
        dst[i + 2 * stride] = c;
        dst[i + 3 * stride] = d;
    }
    for (; i < n16; i += stride) dst[i] = src[i];
}

extern "C" int gbc_copy_bench(void *dst, const void *src, size_t n) {
    if (n % 16 || !aligned16(dst) || !aligned16(src))
        return VALUE_ERROR("copy_bench: `n`=%zu must be a multiple of 16 and buffers 16-byte aligned", n);
    GBC_INIT();
    int dev = 0, sms = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    copy_kernel<<<(unsigned)(sms * 8), 256, 0, gbc_stream>>>((uint4 *)dst, (const uint4 *)src, (int64_t)(n / 16));
    LAUNCH_CHECK("copy_kernel");
    return GBC_OK;
}

template <int TT>
__global__ void swiglu_gemv_kernel1(const bf16 *__restrict__ x, const bf16 *__restrict__ wg, const bf16 *__restrict__ wu,
                                    bf16 *__restrict__ h, int64_t F, int64_t K) {
    int lane = threadIdx.x & 31;
    int64_t f = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5);
    if (f >= F) return;
    const bf16x8 *gr = (const bf16x8 *)(wg + f * K), *ur = (const bf16x8 *)(wu + f * K);
    float ag[TT], au[TT];
#pragma unroll
    for (int t = 0; t < TT; t++) ag[t] = au[t] = 0.0f;
    for (int64_t i = lane; i < K / 8; i += 32) {
        float gf[8], uf[8];
        bf16x8 gv = gr[i], uv = ur[i];
        unpack8(gv, gf);
        unpack8(uv, uf);
#pragma unroll
        for (int t = 0; t < TT; t++) {
            float xf[8];
            unpack8(((const bf16x8 *)(x + t * K))[i], xf);
#pragma unroll
            for (int e = 0; e < 8; e++) {
                ag[t] += gf[e] * xf[e];
                au[t] += uf[e] * xf[e];
            }
        }
    }
#pragma unroll
    for (int t = 0; t < TT; t++) {
        float g = warp_sum(ag[t]), u = warp_sum(au[t]);
        if (lane == 0) h[t * F + f] = f2bf(g / (1.0f + expf(-g)) * u);
    }
}

extern "C" int gbc_swiglu_gemv(const void *x, const void *wg, const void *wu, void *h, int64_t T, int64_t F, int64_t K) {
    if (T < 0 || T > 8 || F <= 0 || K <= 0 || K % 8)
        return VALUE_ERROR("swiglu_gemv: needs T <= 8 and K %% 8 == 0, got T=%ld F=%ld K=%ld", (long)T, (long)F, (long)K);
    if (!aligned16(x) || !aligned16(wg) || !aligned16(wu)) return VALUE_ERROR("swiglu_gemv: buffers must be 16-byte aligned");
    GBC_INIT();
    if (T == 0) return GBC_OK;
    unsigned blocks = (unsigned)cdiv(F, 8);
    const bf16 *xb = (const bf16 *)x, *gb = (const bf16 *)wg, *ub = (const bf16 *)wu;
    bf16 *hb = (bf16 *)h;
    switch (T) {
#define GB_SW(TT) \
    case TT: swiglu_gemv_kernel1<TT><<<blocks, 256, 0, gbc_stream>>>(xb, gb, ub, hb, F, K); break;
        GB_SW(1) GB_SW(2) GB_SW(3) GB_SW(4) GB_SW(5) GB_SW(6) GB_SW(7) GB_SW(8)
#undef GB_SW
    }
    LAUNCH_CHECK("swiglu_gemv_kernel1");
    return GBC_OK;
}
