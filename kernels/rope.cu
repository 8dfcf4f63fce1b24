/* rope.cu: rotary embedding of x[T, H, Dh] over dims [rot_offset, rot_offset + rot_dim), the rest
 * copied. Layout 0 "interleaved": pairs (x0,x1),(x2,x3)... (GLM-4.7-Flash / DeepSeek rope dims);
 * layout 1 "half": pairs (x_i, x_{i+rot_dim/2}) (Llama/Qwen3 rotate_half). Frequency of pair i is
 * theta^(-2i/rot_dim), as glmbench.reference.rope.
 *   rope_kernel1  one thread per output pair; the angle pos * freq in fp64 (positions reach 2e5,
 *                 where an fp32 angle would be off by ~1e-2 rad), sin/cos in fp64, data fp32. */
#include "common.cuh"

__global__ void rope_kernel1(const bf16 *__restrict__ x, const int64_t *__restrict__ pos, bf16 *__restrict__ y,
                             int64_t T, int64_t H, int64_t Dh, double log2_theta, int64_t rot_dim,
                             int64_t rot_offset, int layout) {
    int64_t half = rot_dim / 2;
    int64_t n_pass = Dh - rot_dim; /* elements copied unchanged */
    int64_t per_head = half + n_pass;
    int64_t total = T * H * per_head;
    for (int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        int64_t th = idx / per_head, r = idx % per_head;
        int64_t t = th / H;
        const bf16 *xr = x + th * Dh;
        bf16 *yr = y + th * Dh;
        if (r >= half) { /* a pass-through element */
            int64_t j = r - half;
            int64_t d = j < rot_offset ? j : j + rot_dim;
            yr[d] = xr[d];
            continue;
        }
        int64_t i = r;
        double freq = exp2(-2.0 * (double)i / (double)rot_dim * log2_theta);
        double s, c;
        sincos((double)pos[t] * freq, &s, &c);
        int64_t a = rot_offset + (layout == 0 ? 2 * i : i);
        int64_t b = rot_offset + (layout == 0 ? 2 * i + 1 : i + half);
        float x0 = bf2f(xr[a]), x1 = bf2f(xr[b]);
        yr[a] = f2bf((float)((double)x0 * c - (double)x1 * s));
        yr[b] = f2bf((float)((double)x1 * c + (double)x0 * s));
    }
}

extern "C" int gbc_rope(const void *x, const int64_t *pos, void *y, int64_t T, int64_t H, int64_t Dh, double theta,
                        int64_t rot_dim, int64_t rot_offset, int layout, int version) {
    if (T < 0 || H <= 0 || Dh <= 0) return VALUE_ERROR("rope: bad shape T=%ld H=%ld Dh=%ld", (long)T, (long)H, (long)Dh);
    if (rot_dim <= 0 || rot_dim % 2) return VALUE_ERROR("rope: `rot_dim` must be even and > 0, got %ld", (long)rot_dim);
    if (rot_offset < 0 || rot_offset + rot_dim > Dh)
        return VALUE_ERROR("rope: `rot_offset`=%ld + `rot_dim`=%ld exceeds head dim %ld", (long)rot_offset,
                           (long)rot_dim, (long)Dh);
    if (!(theta > 1.0)) return VALUE_ERROR("rope: `theta` must be > 1, got %g", theta);
    if (layout != 0 && layout != 1) return VALUE_ERROR("rope: `layout` must be 0 (interleaved) or 1 (half), got %d", layout);
    if (version != 0 && version != 1) return VALUE_ERROR("rope: `version` must be 0 or 1, got %d", version);
    GBC_INIT();
    int64_t total = T * H * (rot_dim / 2 + Dh - rot_dim);
    if (total == 0) return GBC_OK;
    int64_t blocks = cdiv(total, 256);
    if (blocks > 65536) blocks = 65536;
    rope_kernel1<<<(unsigned)blocks, 256, 0, gbc_stream>>>((const bf16 *)x, pos, (bf16 *)y, T, H, Dh, log2(theta),
                                                           rot_dim, rot_offset, layout);
    LAUNCH_CHECK("rope_kernel1");
    return GBC_OK;
}
