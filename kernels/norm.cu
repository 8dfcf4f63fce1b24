/* norm.cu: RMSNorm over the last axis, bf16 in/out, fp32 sum of squares.
 *   rms_norm_kernel1  one block per row, scalar loads (any dim)
 *   rms_norm_kernel2  one block per row, 16-byte loads (dim % 8 == 0, aligned); second pass hits L1
 * y = x / sqrt(mean(x^2) + eps) * w, as glmbench.reference.rms_norm. */
#include "common.cuh"

__global__ void rms_norm_kernel1(const bf16 *__restrict__ x, const bf16 *__restrict__ w, bf16 *__restrict__ y,
                                 int64_t dim, float eps) {
    const bf16 *xr = x + blockIdx.x * dim;
    bf16 *yr = y + blockIdx.x * dim;
    float ss = 0.0f;
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
        float v = bf2f(xr[i]);
        ss += v * v;
    }
    float inv = rsqrtf(block_sum(ss) / (float)dim + eps);
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) yr[i] = f2bf(bf2f(xr[i]) * inv * bf2f(w[i]));
}

__global__ void rms_norm_kernel2(const bf16 *__restrict__ x, const bf16 *__restrict__ w, bf16 *__restrict__ y,
                                 int64_t dim, float eps) {
    const bf16x8 *xr = (const bf16x8 *)(x + blockIdx.x * dim);
    const bf16x8 *wr = (const bf16x8 *)w;
    bf16x8 *yr = (bf16x8 *)(y + blockIdx.x * dim);
    int64_t n8 = dim / 8;
    float ss = 0.0f, f[8];
    for (int64_t i = threadIdx.x; i < n8; i += blockDim.x) {
        unpack8(xr[i], f);
#pragma unroll
        for (int j = 0; j < 8; j++) ss += f[j] * f[j];
    }
    float inv = rsqrtf(block_sum(ss) / (float)dim + eps);
    for (int64_t i = threadIdx.x; i < n8; i += blockDim.x) {
        float g[8];
        unpack8(xr[i], f);
        unpack8(wr[i], g);
#pragma unroll
        for (int j = 0; j < 8; j++) f[j] = f[j] * inv * g[j];
        yr[i] = pack8(f);
    }
}

extern "C" int gbc_rms_norm(const void *x, const void *w, void *y, int64_t rows, int64_t dim, float eps,
                            int version) {
    if (dim <= 0) return VALUE_ERROR("rms_norm: `dim` must be > 0, got %ld", (long)dim);
    if (rows < 0 || rows > 2147483647) return VALUE_ERROR("rms_norm: `rows`=%ld out of range", (long)rows);
    if (!(eps >= 0.0f)) return VALUE_ERROR("rms_norm: `eps` must be >= 0, got %g", (double)eps);
    if (version < 0 || version > 2) return VALUE_ERROR("rms_norm: `version` must be 0, 1 or 2, got %d", version);
    GBC_INIT();
    if (rows == 0) return GBC_OK;
    bool vec_ok = dim % 8 == 0 && aligned16(x) && aligned16(w) && aligned16(y);
    if (version == 0) version = vec_ok ? 2 : 1;
    int threads = dim >= 2048 ? 256 : 128;
    switch (version) {
    case 1:
        rms_norm_kernel1<<<(unsigned)rows, threads, 0, gbc_stream>>>((const bf16 *)x, (const bf16 *)w, (bf16 *)y, dim, eps);
        LAUNCH_CHECK("rms_norm_kernel1");
        return GBC_OK;
    case 2:
        if (!vec_ok) return VALUE_ERROR("rms_norm version 2 needs dim %% 8 == 0 and 16-byte aligned buffers, got dim=%ld", (long)dim);
        rms_norm_kernel2<<<(unsigned)rows, threads, 0, gbc_stream>>>((const bf16 *)x, (const bf16 *)w, (bf16 *)y, dim, eps);
        LAUNCH_CHECK("rms_norm_kernel2");
        return GBC_OK;
    default:
        return VALUE_ERROR("rms_norm: `version` must be 0, 1 or 2, got %d", version);
    }
}
