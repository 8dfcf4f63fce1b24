/* moe.cu: mixture-of-experts on the device, in the order a layer runs it:
 *   moe_logits_kernel1    fp32 logits, one warp per (token, expert): bf16 x . fp32 W_r
 *   moe_route_kernel1     one block per token: sigmoid(+bias chooses) or softmax, group-limited
 *                         top-k (group score = sum of its top-2 choices with sigmoid, noaux_tc; its
 *                         max choice with softmax, DeepSeek-V2 group_limited_greedy), ties to the
 *                         lower index (experts and groups), weights renormalised
 *                         (w / (sum + 1e-20)) if asked and scaled, as glmbench.reference /
 *                         docs/API.md moe_route
 *   moe_permute_kernel1   stable counting sort of the T*k assignments by expert (one thread per
 *                         expert), offsets, and the 64-row tile schedule of the grouped GEMM
 *   moe_gather_kernel1    xs[i] = x[sorted_tok[i]]
 *   moe_grouped_kernel1   decode GEMV: one warp per (row, output), the row's expert found in offsets
 *   moe_grouped_kernel2   prefill: tensor-core 64x64 tiles (gemm_tile.cuh) over the tile schedule,
 *                         so each expert's weights stream once per 64 rows routed to it
 *   moe_swiglu_kernel1    decode: gather + gate + up + silu_mul in one launch: h[row, f] =
 *                         silu(x[tok(row)].Wg[e][f]) * (x[tok(row)].Wu[e][f]), a warp per (row, f)
 *   moe_unpermute_kernel1 y[t] = sum_j w[t, j] ys[slot_of[t*k + j]] (+ shared expert's y, + the
 *                         residual stream), fp32 sum
 * The shared expert is a dense SwiGLU through linear.cu; its output is added in the un-permute. */
#include "common.cuh"
#include "gemm_tile.cuh"

#define MOE_MAX_E 1024
#define MOE_MAX_K 32

/* Router logits: one warp per (token, expert), 8 experts per block, so the router matrix (fp32,
 * 512 KB for GLM) streams through the whole GPU instead of one block. */
__global__ void moe_logits_kernel1(const bf16 *__restrict__ x, const float *__restrict__ w_r, float *__restrict__ logits,
                                   int64_t D, int E) {
    int lane = threadIdx.x & 31;
    int e = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int64_t t = blockIdx.y;
    if (e >= E) return;
    const bf16 *xr = x + t * D;
    const float *wr = w_r + (int64_t)e * D;
    float s = 0.0f;
    for (int64_t d = lane; d < D; d += 32) s += bf2f(xr[d]) * wr[d];
    s = warp_sum(s);
    if (lane == 0) logits[t * E + e] = s;
}

__global__ void moe_route_kernel1(const float *__restrict__ logits, const float *__restrict__ bias,
                                  int32_t *__restrict__ topk_idx, float *__restrict__ topk_w, int E, int k,
                                  int scoring, int n_group, int topk_group, int group_score, int norm_topk,
                                  float scale) {
    extern __shared__ float sh[];
    float *score = sh;      /* unbiased: sigmoid or softmax probability */
    float *choice = sh + E; /* what chooses: score + bias; -inf once masked or taken */
    int t = blockIdx.x;
    for (int e = threadIdx.x; e < E; e += blockDim.x) score[e] = logits[(int64_t)t * E + e];
    __syncthreads();
    if (threadIdx.x != 0) return;
    /* One thread from here: E <= 1024 and k <= 32, a few thousand compares per token. */
    if (scoring == 0) {
        for (int e = 0; e < E; e++) {
            score[e] = 1.0f / (1.0f + expf(-score[e]));
            choice[e] = score[e] + (bias ? bias[e] : 0.0f);
        }
    } else {
        float m = -INFINITY, z = 0.0f;
        for (int e = 0; e < E; e++) m = fmaxf(m, score[e]);
        for (int e = 0; e < E; e++) z += expf(score[e] - m);
        for (int e = 0; e < E; e++) {
            score[e] = expf(score[e] - m) / z;
            choice[e] = score[e] + (bias ? bias[e] : 0.0f);
        }
    }
    if (n_group > 1 && topk_group < n_group) {
        int gs = E / n_group;
        float gscore[64];
        bool keep[64];
        for (int g = 0; g < n_group; g++) {
            float a = -INFINITY, b = -INFINITY; /* top two */
            for (int e = g * gs; e < (g + 1) * gs; e++) {
                float c = choice[e];
                if (c > a) { b = a; a = c; } else if (c > b) b = c;
            }
            gscore[g] = group_score == 0 && gs >= 2 ? a + b : a; /* 0: top-2 sum, 1: max */
            keep[g] = false;
        }
        for (int r = 0; r < topk_group; r++) {
            int best = -1;
            for (int g = 0; g < n_group; g++) /* strict > keeps the lower group on ties, as the CPU */
                if (!keep[g] && (best < 0 || gscore[g] > gscore[best])) best = g;
            keep[best] = true;
        }
        for (int g = 0; g < n_group; g++)
            if (!keep[g])
                for (int e = g * gs; e < (g + 1) * gs; e++) choice[e] = -INFINITY;
    }
    float wsum = 0.0f;
    int32_t *oi = topk_idx + (int64_t)t * k;
    float *ow = topk_w + (int64_t)t * k;
    for (int j = 0; j < k; j++) {
        int best = -1;
        for (int e = 0; e < E; e++) /* strict > keeps the lower index on ties */
            if (choice[e] != -INFINITY && (best < 0 || choice[e] > choice[best])) best = e;
        if (best < 0) /* fewer than k experts left unmasked: take the lowest unused index */
            for (int e = 0; e < E && best < 0; e++) {
                bool used = false;
                for (int q = 0; q < j; q++) used |= oi[q] == e;
                if (!used) best = e;
            }
        oi[j] = best;
        ow[j] = score[best];
        wsum += score[best];
        choice[best] = -INFINITY;
    }
    for (int j = 0; j < k; j++) {
        float w = ow[j];
        if (norm_topk) w = w / (wsum + 1e-20f);
        ow[j] = w * scale;
    }
}

extern "C" int gbc_moe_route(const void *x, const float *w_r, const float *bias, int32_t *topk_idx, float *topk_w,
                             int64_t T, int64_t D, int64_t E, int64_t k, int scoring, int64_t n_group,
                             int64_t topk_group, int group_score, int norm_topk, float scale, float *logits_ws,
                             int version) {
    if (T < 0 || D <= 0) return VALUE_ERROR("moe_route: bad shape T=%ld D=%ld", (long)T, (long)D);
    if (E < 1 || E > MOE_MAX_E) return VALUE_ERROR("moe_route: number of experts E=%ld must be in 1..%d", (long)E, MOE_MAX_E);
    if (k < 1 || k > E || k > MOE_MAX_K) return VALUE_ERROR("moe_route: `top_k`=%ld must be in 1..min(E=%ld, %d)", (long)k, (long)E, MOE_MAX_K);
    if (scoring != 0 && scoring != 1) return VALUE_ERROR("moe_route: `scoring` must be 0 (sigmoid) or 1 (softmax), got %d", scoring);
    if (n_group < 1 || n_group > 64 || E % n_group)
        return VALUE_ERROR("moe_route: `n_group`=%ld must divide E=%ld (and be <= 64)", (long)n_group, (long)E);
    if (topk_group < 1 || topk_group > n_group)
        return VALUE_ERROR("moe_route: `topk_group`=%ld must be in 1..n_group=%ld", (long)topk_group, (long)n_group);
    if (topk_group * (E / n_group) < k)
        return VALUE_ERROR("moe_route: `topk_group`=%ld groups of %ld experts hold fewer than top_k=%ld", (long)topk_group,
                           (long)(E / n_group), (long)k);
    if (group_score != 0 && group_score != 1)
        return VALUE_ERROR("moe_route: `group_score` must be 0 (top2_sum) or 1 (max), got %d", group_score);
    /* the pairs the CPU router accepts (csrc/moe.c), whatever n_group */
    if (scoring == 0 && group_score != 0)
        return VALUE_ERROR("moe_route: `group_score`=1 (max) goes with scoring=1 (softmax, DeepSeek-V2 "
                           "group_limited_greedy); scoring=0 (sigmoid, noaux_tc) scores groups by 0 (top2_sum)");
    if (scoring == 1 && group_score != 1)
        return VALUE_ERROR("moe_route: `group_score`=0 (top2_sum) goes with scoring=0 (sigmoid, noaux_tc); "
                           "scoring=1 (softmax, DeepSeek-V2 group_limited_greedy) scores groups by 1 (max)");
    if (version != 0 && version != 1) return VALUE_ERROR("moe_route: `version` must be 0 or 1, got %d", version);
    GBC_INIT();
    if (T == 0) return GBC_OK;
    if (T > 65535) return VALUE_ERROR("moe_route: T=%ld > 65535", (long)T);
    if (!logits_ws) return VALUE_ERROR("moe_route: the logits workspace (T*E floats) is missing");
    moe_logits_kernel1<<<dim3((unsigned)cdiv(E, 8), (unsigned)T), 256, 0, gbc_stream>>>((const bf16 *)x, w_r, logits_ws, D,
                                                                                       (int)E);
    LAUNCH_CHECK("moe_logits_kernel1");
    moe_route_kernel1<<<(unsigned)T, 32, 2 * E * sizeof(float), gbc_stream>>>(
        logits_ws, bias, topk_idx, topk_w, (int)E, (int)k, scoring, (int)n_group, (int)topk_group, group_score, norm_topk,
        scale);
    LAUNCH_CHECK("moe_route_kernel1");
    return GBC_OK;
}

extern "C" int64_t gbc_moe_max_tiles(int64_t rows, int64_t E) { return cdiv(rows, GT_BM) + E; }

__global__ void moe_permute_kernel1(const int32_t *__restrict__ topk_idx, int64_t n_assign, int E, int64_t *counts,
                                    int32_t *offsets, int32_t *sorted_tok, int32_t *slot_of, int32_t *tiles,
                                    int32_t *n_tiles, int k) {
    extern __shared__ int32_t off[]; /* E + 1 */
    int e = threadIdx.x;
    int32_t c = 0;
    if (e < E)
        for (int64_t a = 0; a < n_assign; a++) c += topk_idx[a] == e;
    if (e < E) off[e + 1] = c;
    __syncthreads();
    if (e == 0) {
        off[0] = 0;
        for (int i = 0; i < E; i++) off[i + 1] += off[i];
        int32_t nt = 0;
        for (int i = 0; i < E; i++)
            for (int32_t r = off[i]; r < off[i + 1]; r += GT_BM) {
                tiles[2 * nt] = i;
                tiles[2 * nt + 1] = r;
                nt++;
            }
        *n_tiles = nt;
    }
    __syncthreads();
    if (e < E) {
        counts[e] = c;
        offsets[e] = off[e];
        if (e == E - 1) offsets[E] = off[E];
        int32_t s = off[e];
        for (int64_t a = 0; a < n_assign; a++)
            if (topk_idx[a] == e) {
                sorted_tok[s] = (int32_t)(a / k);
                slot_of[a] = s;
                s++;
            }
    }
}

extern "C" int gbc_moe_permute(const int32_t *topk_idx, int64_t T, int64_t k, int64_t E, int64_t *counts, int32_t *offsets,
                               int32_t *sorted_tok, int32_t *slot_of, int32_t *tiles, int32_t *n_tiles) {
    if (T < 0 || k < 1 || E < 1 || E > MOE_MAX_E) return VALUE_ERROR("moe_permute: bad sizes T=%ld k=%ld E=%ld", (long)T, (long)k, (long)E);
    if (T * k > 2147483647) return VALUE_ERROR("moe_permute: T*k=%ld exceeds int32", (long)(T * k));
    GBC_INIT();
    int threads = (int)cdiv(E, 32) * 32;
    moe_permute_kernel1<<<1, threads, (E + 1) * sizeof(int32_t), gbc_stream>>>(topk_idx, T * k, (int)E, counts, offsets,
                                                                               sorted_tok, slot_of, tiles, n_tiles, (int)k);
    LAUNCH_CHECK("moe_permute_kernel1");
    return GBC_OK;
}

__global__ void moe_gather_kernel1(const bf16 *__restrict__ x, const int32_t *__restrict__ sorted_tok, bf16 *__restrict__ xs,
                                   int64_t D) {
    const bf16 *src = x + (int64_t)sorted_tok[blockIdx.x] * D;
    bf16 *dst = xs + (int64_t)blockIdx.x * D;
    for (int64_t d = threadIdx.x; d < D; d += blockDim.x) dst[d] = src[d];
}

extern "C" int gbc_moe_gather(const void *x, const int32_t *sorted_tok, void *xs, int64_t rows, int64_t D) {
    if (rows < 0 || D <= 0) return VALUE_ERROR("moe_gather: bad shape rows=%ld D=%ld", (long)rows, (long)D);
    GBC_INIT();
    if (rows == 0) return GBC_OK;
    moe_gather_kernel1<<<(unsigned)rows, 256, 0, gbc_stream>>>((const bf16 *)x, sorted_tok, (bf16 *)xs, D);
    LAUNCH_CHECK("moe_gather_kernel1");
    return GBC_OK;
}

__device__ __forceinline__ int expert_of_row(const int32_t *offsets, int E, int32_t row) {
    int lo = 0, hi = E - 1; /* last e with offsets[e] <= row */
    while (lo < hi) {
        int mid = (lo + hi + 1) >> 1;
        if (offsets[mid] <= row) lo = mid; else hi = mid - 1;
    }
    return lo;
}

__global__ void moe_grouped_kernel1(const bf16 *__restrict__ xs, const bf16 *__restrict__ w, bf16 *__restrict__ ys,
                                    const int32_t *__restrict__ offsets, int E, int64_t N, int64_t K) {
    int lane = threadIdx.x & 31;
    int32_t row = blockIdx.y;
    int64_t n = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5);
    if (n >= N) return;
    int e = expert_of_row(offsets, E, row);
    const bf16x8 *wr = (const bf16x8 *)(w + ((int64_t)e * N + n) * K);
    const bf16x8 *xr = (const bf16x8 *)(xs + (int64_t)row * K);
    float acc = 0.0f;
    for (int64_t i = lane; i < K / 8; i += 32) {
        float wf[8], xf[8];
        unpack8(wr[i], wf);
        unpack8(xr[i], xf);
#pragma unroll
        for (int j = 0; j < 8; j++) acc += wf[j] * xf[j];
    }
    acc = warp_sum(acc);
    if (lane == 0) ys[(int64_t)row * N + n] = f2bf(acc);
}

__global__ void moe_grouped_kernel2(const bf16 *__restrict__ xs, const bf16 *__restrict__ w, bf16 *__restrict__ ys,
                                    const int32_t *__restrict__ offsets, const int32_t *__restrict__ tiles,
                                    const int32_t *__restrict__ n_tiles, int64_t N, int64_t K) {
    __shared__ GemmTileSmem sm;
    if ((int)blockIdx.y >= *n_tiles) return;
    int e = tiles[2 * blockIdx.y];
    int32_t m0 = tiles[2 * blockIdx.y + 1];
    int m_valid = min(GT_BM, offsets[e + 1] - m0);
    int64_t n0 = blockIdx.x * (int64_t)GT_BN;
    int n_valid = (int)min((int64_t)GT_BN, N - n0);
    gemm_tile_64x64(xs + (int64_t)m0 * K, K, m_valid, w + ((int64_t)e * N + n0) * K, K, n_valid, K, sm);
    for (int c = threadIdx.x; c < GT_BM * GT_BN; c += blockDim.x) {
        int r = c / GT_BN, col = c % GT_BN;
        if (r < m_valid && col < n_valid) ys[(int64_t)(m0 + r) * N + n0 + col] = f2bf(sm.c[r][col]);
    }
}

extern "C" int gbc_moe_grouped_linear(const void *xs, const void *w, void *ys, const int32_t *offsets, const int32_t *tiles,
                                      const int32_t *n_tiles, int64_t rows, int64_t E, int64_t N, int64_t K, int version) {
    if (rows < 0 || E < 1 || N <= 0 || K <= 0)
        return VALUE_ERROR("moe_grouped_linear: bad shape rows=%ld E=%ld N=%ld K=%ld", (long)rows, (long)E, (long)N, (long)K);
    if (version < 0 || version > 2) return VALUE_ERROR("moe_grouped_linear: `version` must be 0, 1 or 2, got %d", version);
    GBC_INIT();
    if (rows == 0) return GBC_OK;
    bool gemv_ok = K % 8 == 0 && aligned16(xs) && aligned16(w);
    if (version == 0) version = (rows <= 32 && gemv_ok) ? 1 : 2;
    if (version == 1) {
        if (!gemv_ok) return VALUE_ERROR("moe_grouped_linear version 1 needs K %% 8 == 0 and aligned buffers, got K=%ld", (long)K);
        if (rows > 65535) return VALUE_ERROR("moe_grouped_linear version 1: rows=%ld > 65535", (long)rows);
        dim3 grid((unsigned)cdiv(N, 8), (unsigned)rows);
        moe_grouped_kernel1<<<grid, 256, 0, gbc_stream>>>((const bf16 *)xs, (const bf16 *)w, (bf16 *)ys, offsets, (int)E, N, K);
        LAUNCH_CHECK("moe_grouped_kernel1");
        return GBC_OK;
    }
    if (version == 2) {
        int64_t max_tiles = gbc_moe_max_tiles(rows, E);
        if (max_tiles > 65535) return VALUE_ERROR("moe_grouped_linear version 2: %ld tiles > 65535", (long)max_tiles);
        dim3 grid((unsigned)cdiv(N, GT_BN), (unsigned)max_tiles);
        moe_grouped_kernel2<<<grid, 128, 0, gbc_stream>>>((const bf16 *)xs, (const bf16 *)w, (bf16 *)ys, offsets, tiles,
                                                          n_tiles, N, K);
        LAUNCH_CHECK("moe_grouped_kernel2");
        return GBC_OK;
    }
    return VALUE_ERROR("moe_grouped_linear: `version` must be 0, 1 or 2, got %d", version);
}

__global__ void moe_unpermute_kernel1(const bf16 *__restrict__ ys, const int32_t *__restrict__ slot_of,
                                      const float *__restrict__ topk_w, const bf16 *__restrict__ shared,
                                      const bf16 *__restrict__ residual, bf16 *__restrict__ y, int k, int64_t D) {
    int64_t t = blockIdx.x;
    for (int64_t d = threadIdx.x; d < D; d += blockDim.x) {
        float s = (shared ? bf2f(shared[t * D + d]) : 0.0f) + (residual ? bf2f(residual[t * D + d]) : 0.0f);
        for (int j = 0; j < k; j++) s += topk_w[t * k + j] * bf2f(ys[(int64_t)slot_of[t * k + j] * D + d]);
        y[t * D + d] = f2bf(s);
    }
}

extern "C" int gbc_moe_unpermute(const void *ys, const int32_t *slot_of, const float *topk_w, const void *shared,
                                 const void *residual, void *y, int64_t T, int64_t k, int64_t D) {
    if (T < 0 || k < 1 || D <= 0) return VALUE_ERROR("moe_unpermute: bad shape T=%ld k=%ld D=%ld", (long)T, (long)k, (long)D);
    GBC_INIT();
    if (T == 0) return GBC_OK;
    moe_unpermute_kernel1<<<(unsigned)T, 256, 0, gbc_stream>>>((const bf16 *)ys, slot_of, topk_w, (const bf16 *)shared,
                                                               (const bf16 *)residual, (bf16 *)y, (int)k, D);
    LAUNCH_CHECK("moe_unpermute_kernel1");
    return GBC_OK;
}

__global__ void moe_swiglu_kernel1(const bf16 *__restrict__ x, const int32_t *__restrict__ sorted_tok,
                                   const bf16 *__restrict__ wg, const bf16 *__restrict__ wu, bf16 *__restrict__ h,
                                   const int32_t *__restrict__ offsets, int E, int64_t F, int64_t D) {
    int lane = threadIdx.x & 31;
    int32_t row = blockIdx.y;
    int64_t f = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5);
    if (f >= F) return;
    int e = expert_of_row(offsets, E, row);
    const bf16x8 *gr = (const bf16x8 *)(wg + ((int64_t)e * F + f) * D);
    const bf16x8 *ur = (const bf16x8 *)(wu + ((int64_t)e * F + f) * D);
    const bf16x8 *xr = (const bf16x8 *)(x + (int64_t)sorted_tok[row] * D);
    float ag = 0.0f, au = 0.0f;
    for (int64_t i = lane; i < D / 8; i += 32) {
        float gf[8], uf[8], xf[8];
        unpack8(gr[i], gf);
        unpack8(ur[i], uf);
        unpack8(xr[i], xf);
#pragma unroll
        for (int j = 0; j < 8; j++) {
            ag += gf[j] * xf[j];
            au += uf[j] * xf[j];
        }
    }
    ag = warp_sum(ag);
    au = warp_sum(au);
    if (lane == 0) h[(int64_t)row * F + f] = f2bf(ag / (1.0f + expf(-ag)) * au);
}

extern "C" int gbc_moe_swiglu(const void *x, const int32_t *sorted_tok, const void *wg, const void *wu, void *h,
                              const int32_t *offsets, int64_t rows, int64_t E, int64_t F, int64_t D) {
    if (rows < 0 || rows > 65535 || E < 1 || F <= 0 || D <= 0 || D % 8)
        return VALUE_ERROR("moe_swiglu: needs rows <= 65535 and D %% 8 == 0, got rows=%ld F=%ld D=%ld", (long)rows, (long)F,
                           (long)D);
    if (!aligned16(x) || !aligned16(wg) || !aligned16(wu)) return VALUE_ERROR("moe_swiglu: buffers must be 16-byte aligned");
    GBC_INIT();
    if (rows == 0) return GBC_OK;
    moe_swiglu_kernel1<<<dim3((unsigned)cdiv(F, 8), (unsigned)rows), 256, 0, gbc_stream>>>(
        (const bf16 *)x, sorted_tok, (const bf16 *)wg, (const bf16 *)wu, (bf16 *)h, offsets, (int)E, F, D);
    LAUNCH_CHECK("moe_swiglu_kernel1");
    return GBC_OK;
}
