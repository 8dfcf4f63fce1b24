/* attention_gqa.cu: causal GQA attention over the paged cache (kvcache.cu's layout), bf16 storage,
 * fp32 softmax and accumulation. The T queries are the last T of the L cached tokens: query t sits
 * at position L - T + t and sees tokens 0..L-T+t (docs/API.md gqa_attention).
 *   gqa_kernel1  flash tiles on CUDA cores: a block holds 16 consecutive queries of one q head,
 *                K/V tiles of 32 tokens go through shared memory (rows padded one word against
 *                bank conflicts); lane-per-key scores, online softmax, lane-per-dim accumulation.
 *                Any Dh, Dv <= 256 (even). Prefill, and the generic decode path.
 *   gqa_kernel2  split-K decode (flash-decoding), Dh = Dv = 128: a block owns one KV head and one
 *                block of the cache, and all G = Hq/Hkv query heads of the group use each K/V read
 *                (G padded to 1, 2, 4, 8 or 16 at compile time).
 *   gqa_kernel3  split-K decode on tensor cores (mma.sync m16n8k16, mma.cuh): the G query heads of a
 *                group are the M rows of one 16-row tile (padded), 64-token K/V tiles through shared
 *                memory (rows padded 16 bytes): S = Q.K^T, online softmax per head in shared memory
 *                (P rounded to bf16), O = O * alpha + P.V with O in registers. Dh % 16 == 0,
 *                Dv % 32 == 0, both <= 256, G <= 16. Each K/V byte is read once for all G heads
 *                and no warp shuffles per token (kernel 2 does ~5 per head per token).
 *   gqa_kernel4  prefill on tensor cores, FlashAttention-2's shape: a block = 64 consecutive queries
 *                of one q head (16 rows per warp, Q fragments in registers), 64-token K/V tiles
 *                through shared memory; S stays in registers, online softmax per row across each
 *                quad of lanes, P goes from the accumulator layout straight into A fragments
 *                (bf16), O = O * alpha + P.V in registers; causal per element. Dh, Dv % 16 == 0,
 *                both <= 128. No split-K (enough blocks at prefill sizes); no cp.async pipeline.
 *   gqa_kernel5  kernel 3's products with its loads restructured (Dh, Dv <= 128): the cache rows of
 *                the next two tiles in shared memory (block-table entries loaded a tile ahead, 32-bit
 *                index arithmetic), the next tile's K and V loaded into registers while this one is
 *                computed; about three blocks per SM (gqa_kernel3's template with FAST = true).
 *   gqa_combine_kernel1  merges the split partials: out = sum_s e^(m_s - M) acc_s / sum_s e^(m_s - M) l_s.
 *   gqa_combine_kernel2  the same, a block per (row, 128 columns), the split weights shared (the default).
 * Launcher (version 0): decode (T <= 4): kernel5 when its shape rules hold, else kernel3, else kernel2 when
 * Dh = Dv = 128 and G <= 16, else kernel1; prefill: kernel4 when its shape rules hold, else kernel1. Splits
 * (n_splits = 0): about two blocks per SM of an H100/H200 (132 SMs), at least 64 keys per split. */
#include <math.h>

#include "common.cuh"
#include "mma.cuh"

#define Q1_QB 16 /* queries per block, kernel1 */
#define Q1_KT 32 /* keys per tile, kernel1 */
#define GQA_MAX_SPLITS 128
#define GQA_TARGET_BLOCKS 264  /* two blocks per SM of a 132-SM card */
#define GQA5_TARGET_BLOCKS 396 /* kernel 5: three (registers and shared memory allow three) */

static int64_t auto_splits(int64_t n_units, int64_t L, int64_t target = GQA_TARGET_BLOCKS) {
    int64_t s = target / (n_units > 0 ? n_units : 1);
    int64_t by_len = cdiv(L, 64);
    if (s > by_len) s = by_len;
    if (s > GQA_MAX_SPLITS) s = GQA_MAX_SPLITS;
    return s < 1 ? 1 : s;
}

extern "C" size_t gbc_gqa_workspace_bytes(int64_t T, int64_t Hq, int64_t Dv, int64_t n_splits) {
    int64_t S = n_splits > 0 ? n_splits : GQA_MAX_SPLITS;
    return (size_t)(T * Hq * S) * (size_t)(Dv + 2) * sizeof(float);
}

template <int DVL>
__global__ void gqa_kernel1(const bf16 *__restrict__ q, const bf16 *__restrict__ kp, const bf16 *__restrict__ vp,
                            const int32_t *__restrict__ table, int64_t page_size, bf16 *__restrict__ out,
                            float *__restrict__ ws_m, float *__restrict__ ws_l, float *__restrict__ ws_acc, int64_t T,
                            int64_t L, int Hq, int Hkv, int Dh, int Dv, float scale, int S, int64_t chunk) {
    extern __shared__ __align__(16) unsigned char smraw[];
    const int kw = Dh / 2 + 1; /* K row in 32-bit words, padded by one */
    const int vw = Dv / 2;
    uint32_t *qs = (uint32_t *)smraw;       /* [QB][Dh/2] bf16 pairs */
    uint32_t *ks = qs + Q1_QB * (Dh / 2);   /* [KT][kw] */
    uint32_t *vs = ks + Q1_KT * kw;         /* [KT][vw] */
    const int s = blockIdx.x, h = blockIdx.y;
    const int64_t t0 = (int64_t)blockIdx.z * Q1_QB;
    const int hkv = h / (Hq / Hkv);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

    for (int i = threadIdx.x; i < Q1_QB * (Dh / 2); i += blockDim.x) {
        int64_t t = t0 + i / (Dh / 2);
        qs[i] = t < T ? ((const uint32_t *)(q + (t * Hq + h) * (int64_t)Dh))[i % (Dh / 2)] : 0u;
    }
    int64_t k_begin = (int64_t)s * chunk, k_end = min(L, k_begin + chunk);
    int64_t p_last = L - T + min(t0 + Q1_QB, T) - 1;
    k_end = min(k_end, p_last + 1);

    float m[4], l[4], acc[4][DVL];
#pragma unroll
    for (int qi = 0; qi < 4; qi++) {
        m[qi] = -INFINITY;
        l[qi] = 0.0f;
#pragma unroll
        for (int d = 0; d < DVL; d++) acc[qi][d] = 0.0f;
    }
    for (int64_t kt = k_begin; kt < k_end; kt += Q1_KT) {
        __syncthreads();
        for (int i = threadIdx.x; i < Q1_KT * (Dh / 2); i += blockDim.x) {
            int j = i / (Dh / 2), w = i % (Dh / 2);
            int64_t tok = kt + j;
            uint32_t val = 0u;
            if (tok < k_end) {
                int64_t row = (int64_t)table[tok / page_size] * page_size + tok % page_size;
                val = ((const uint32_t *)(kp + (row * Hkv + hkv) * (int64_t)Dh))[w];
            }
            ks[j * kw + w] = val;
        }
        for (int i = threadIdx.x; i < Q1_KT * vw; i += blockDim.x) {
            int j = i / vw, w = i % vw;
            int64_t tok = kt + j;
            uint32_t val = 0u;
            if (tok < k_end) {
                int64_t row = (int64_t)table[tok / page_size] * page_size + tok % page_size;
                val = ((const uint32_t *)(vp + (row * Hkv + hkv) * (int64_t)Dv))[w];
            }
            vs[j * vw + w] = val;
        }
        __syncthreads();
#pragma unroll
        for (int qi = 0; qi < 4; qi++) {
            int qrow = warp * 4 + qi;
            int64_t t = t0 + qrow;
            if (t >= T) continue; /* warp-uniform */
            int64_t p = L - T + t, tok = kt + lane;
            float sc = -INFINITY;
            if (tok < k_end && tok <= p) {
                const __nv_bfloat162 *qv = (const __nv_bfloat162 *)(qs + qrow * (Dh / 2));
                const __nv_bfloat162 *kv = (const __nv_bfloat162 *)(ks + lane * kw);
                float dot = 0.0f;
                for (int w = 0; w < Dh / 2; w++) {
                    float2 a = __bfloat1622float2(qv[w]), b = __bfloat1622float2(kv[w]);
                    dot += a.x * b.x + a.y * b.y;
                }
                sc = dot * scale;
            }
            float mnew = fmaxf(m[qi], warp_max(sc));
            if (mnew == -INFINITY) continue; /* no visible key yet (warp-uniform) */
            float pj = sc == -INFINITY ? 0.0f : expf(sc - mnew);
            float alpha = expf(m[qi] - mnew);
            l[qi] = l[qi] * alpha + warp_sum(pj);
#pragma unroll
            for (int d = 0; d < DVL; d++) acc[qi][d] *= alpha;
            const bf16 *vrow = (const bf16 *)vs;
            for (int j = 0; j < Q1_KT; j++) {
                float pb = __shfl_sync(0xffffffffu, pj, j);
                if (pb == 0.0f) continue; /* uniform: the same broadcast value in every lane */
#pragma unroll
                for (int d = 0; d < DVL; d++) {
                    int dim = lane + 32 * d;
                    if (dim < Dv) acc[qi][d] += pb * bf2f(vrow[j * Dv + dim]);
                }
            }
            m[qi] = mnew;
        }
    }
#pragma unroll
    for (int qi = 0; qi < 4; qi++) {
        int64_t t = t0 + warp * 4 + qi;
        if (t >= T) continue;
        if (S == 1) {
            float inv = 1.0f / l[qi];
#pragma unroll
            for (int d = 0; d < DVL; d++) {
                int dim = lane + 32 * d;
                if (dim < Dv) out[(t * Hq + h) * (int64_t)Dv + dim] = f2bf(acc[qi][d] * inv);
            }
        } else {
            int64_t idx = (t * Hq + h) * S + s;
            if (lane == 0) {
                ws_m[idx] = m[qi];
                ws_l[idx] = l[qi];
            }
#pragma unroll
            for (int d = 0; d < DVL; d++) {
                int dim = lane + 32 * d;
                if (dim < Dv) ws_acc[idx * Dv + dim] = acc[qi][d];
            }
        }
    }
}

/* Dh = Dv = 128: each lane holds 4 dims (8 bytes of each K and V row). */
template <int G>
__global__ void __launch_bounds__(128) gqa_kernel2(const bf16 *__restrict__ q, const bf16 *__restrict__ kp,
                                                   const bf16 *__restrict__ vp, const int32_t *__restrict__ table,
                                                   int64_t page_size, bf16 *__restrict__ out, float *__restrict__ ws_m,
                                                   float *__restrict__ ws_l, float *__restrict__ ws_acc, int64_t T,
                                                   int64_t L, int Hq, int Hkv, int Greal, float scale, int S,
                                                   int64_t chunk) {
    const int D = 128;
    __shared__ float sm_m[4][G], sm_l[4][G];
    __shared__ float sm_acc[4][G][D];
    const int s = blockIdx.x, hkv = blockIdx.y;
    const int64_t t = blockIdx.z, p = L - T + t;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float qf[G][4], m[G], l[G], acc[G][4];
#pragma unroll
    for (int g = 0; g < G; g++) {
        m[g] = -INFINITY;
        l[g] = 0.0f;
        float2 a = make_float2(0.f, 0.f), b = make_float2(0.f, 0.f);
        if (g < Greal) {
            const __nv_bfloat162 *qr = (const __nv_bfloat162 *)(q + (t * Hq + hkv * Greal + g) * (int64_t)D) + 2 * lane;
            a = __bfloat1622float2(qr[0]);
            b = __bfloat1622float2(qr[1]);
        }
        /* fold the softmax scale into q once */
        qf[g][0] = a.x * scale; qf[g][1] = a.y * scale; qf[g][2] = b.x * scale; qf[g][3] = b.y * scale;
#pragma unroll
        for (int d = 0; d < 4; d++) acc[g][d] = 0.0f;
    }
    int64_t k_begin = (int64_t)s * chunk, k_end = min(min(L, k_begin + chunk), p + 1);
    for (int64_t tok = k_begin + warp; tok < k_end; tok += 4) {
        int64_t row = (int64_t)table[tok / page_size] * page_size + tok % page_size;
        uint2 kraw = ((const uint2 *)(kp + (row * Hkv + hkv) * (int64_t)D))[lane];
        uint2 vraw = ((const uint2 *)(vp + (row * Hkv + hkv) * (int64_t)D))[lane];
        float2 k01 = __bfloat1622float2(*(__nv_bfloat162 *)&kraw.x), k23 = __bfloat1622float2(*(__nv_bfloat162 *)&kraw.y);
        float2 v01 = __bfloat1622float2(*(__nv_bfloat162 *)&vraw.x), v23 = __bfloat1622float2(*(__nv_bfloat162 *)&vraw.y);
#pragma unroll
        for (int g = 0; g < G; g++) {
            float sc = warp_sum(qf[g][0] * k01.x + qf[g][1] * k01.y + qf[g][2] * k23.x + qf[g][3] * k23.y);
            float mnew = fmaxf(m[g], sc);
            float alpha = expf(m[g] - mnew), pj = expf(sc - mnew);
            l[g] = l[g] * alpha + pj;
            acc[g][0] = acc[g][0] * alpha + pj * v01.x;
            acc[g][1] = acc[g][1] * alpha + pj * v01.y;
            acc[g][2] = acc[g][2] * alpha + pj * v23.x;
            acc[g][3] = acc[g][3] * alpha + pj * v23.y;
            m[g] = mnew;
        }
    }
#pragma unroll
    for (int g = 0; g < G; g++) {
        if (lane == 0) {
            sm_m[warp][g] = m[g];
            sm_l[warp][g] = l[g];
        }
#pragma unroll
        for (int d = 0; d < 4; d++) sm_acc[warp][g][4 * lane + d] = acc[g][d];
    }
    __syncthreads();
    const int dim = threadIdx.x; /* 128 threads, one dim each */
    for (int g = 0; g < Greal; g++) {
        float M = fmaxf(fmaxf(sm_m[0][g], sm_m[1][g]), fmaxf(sm_m[2][g], sm_m[3][g]));
        float lsum = 0.0f, a = 0.0f;
        if (M != -INFINITY)
            for (int w = 0; w < 4; w++) {
                float e = expf(sm_m[w][g] - M);
                lsum += e * sm_l[w][g];
                a += e * sm_acc[w][g][dim];
            }
        int h = hkv * Greal + g;
        if (S == 1) {
            out[(t * Hq + h) * (int64_t)D + dim] = f2bf(a / lsum);
        } else {
            int64_t idx = (t * Hq + h) * S + s;
            if (dim == 0) {
                ws_m[idx] = M;
                ws_l[idx] = lsum;
            }
            ws_acc[idx * D + dim] = a;
        }
    }
}


#define G3_NT 64
#define G3_PAD 8

static size_t gqa3_smem_bytes(int64_t Dh, int64_t Dv, bool fast) {
    return (size_t)(16 * (Dh + G3_PAD) * 2 + G3_NT * (Dh + G3_PAD) * 2 + G3_NT * (Dv + G3_PAD) * 2 +
                    16 * (G3_NT + 1) * 4 + 16 * (G3_NT + 8) * 2 + 3 * 16 * 4) +
           (fast ? 2 * G3_NT * sizeof(int64_t) + 8 : 0); /* kernel 5: the cache rows of the next two tiles */
}

/* FAST = false: kernel 3. FAST = true: kernel 5 (Dh, Dv <= 128): the same products, with the loads
 * of kernel 3 restructured. Kernel 3 fetches a tile element by element in a loop the compiler does
 * not unroll (runtime Dh), each element after a 64-bit division and a block-table load it depends
 * on: about 16 dependent memory round trips per 64-token tile (the first H200 run measured 13-15%
 * of the copy bandwidth). Kernel 5 keeps the cache rows of the next two tiles in shared memory
 * (block-table entries loaded one tile ahead, 32-bit index arithmetic) and loads the next tile's K
 * and V into registers (8 + 8 16-byte loads per thread, all in flight together) while this tile is
 * computed. */
template <bool FAST>
__global__ void __launch_bounds__(128) gqa_kernel3(const bf16 *__restrict__ q, const bf16 *__restrict__ kp,
                                                   const bf16 *__restrict__ vp, const int32_t *__restrict__ table,
                                                   int64_t page_size, bf16 *__restrict__ out, float *__restrict__ ws_m,
                                                   float *__restrict__ ws_l, float *__restrict__ ws_acc, int64_t T,
                                                   int64_t L, int Hq, int Hkv, int G, int Dh, int Dv, float scale,
                                                   int S, int64_t chunk) {
    extern __shared__ __align__(16) unsigned char smraw[];
    const int LK = Dh + G3_PAD, LV = Dv + G3_PAD;
    bf16 *qs = (bf16 *)smraw;                        /* [16][LK] */
    bf16 *ks = qs + 16 * LK;                         /* [NT][LK] */
    bf16 *vs = ks + G3_NT * LK;                      /* [NT][LV] */
    float *ss = (float *)(vs + G3_NT * LV);          /* [16][NT + 1] */
    bf16 *ps = (bf16 *)(ss + 16 * (G3_NT + 1));      /* [16][NT + 8] */
    float *m_s = (float *)(ps + 16 * (G3_NT + 8));
    float *l_s = m_s + 16, *a_s = l_s + 16;
    int64_t *rows_s = (int64_t *)(((uintptr_t)(a_s + 16) + 7) & ~(uintptr_t)7); /* FAST: [2][NT] */
    const uint16_t *qh = (const uint16_t *)qs, *kh = (const uint16_t *)ks, *vh = (const uint16_t *)vs;
    const uint16_t *ph = (const uint16_t *)ps;
    const int s = blockIdx.x, hkv = blockIdx.y;
    const int64_t t = blockIdx.z, p = L - T + t;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, c = lane & 3;

    for (int i = tid; i < 16 * (Dh / 2); i += 128) {
        int r = i / (Dh / 2), w = i % (Dh / 2);
        uint32_t v = 0u;
        if (r < G) v = ((const uint32_t *)(q + (t * Hq + (int64_t)hkv * G + r) * (int64_t)Dh))[w];
        ((uint32_t *)(qs + r * LK))[w] = v;
    }
    if (tid < 16) {
        m_s[tid] = -INFINITY;
        l_s[tid] = 0.0f;
    }
    const int ncol = Dv / 4, ntile = ncol / 8; /* per warp: <= 64 columns, <= 8 tiles */
    float o[8][4];
#pragma unroll
    for (int j = 0; j < 8; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) o[j][e] = 0.0f;

    int64_t k_begin = (int64_t)s * chunk, k_end = min(min(L, k_begin + chunk), p + 1);
    /* FAST: 32-bit token arithmetic (the launcher checks L < 2^31) */
    const int ps32 = (int)page_size, dh8 = Dh / 8, dv8 = Dv / 8, kend32 = (int)k_end;
    uint4 pk[8], pv[8];
    auto load_fast = [&](int kt, const int64_t *rows) {
#pragma unroll
        for (int u = 0; u < 8; u++) {
            int i = tid + u * 128, j = i / dh8;
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if (i < G3_NT * dh8 && kt + j < kend32) v = ((const uint4 *)(kp + (rows[j] * Hkv + hkv) * (int64_t)Dh))[i - j * dh8];
            pk[u] = v;
        }
#pragma unroll
        for (int u = 0; u < 8; u++) {
            int i = tid + u * 128, j = i / dv8;
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if (i < G3_NT * dv8 && kt + j < kend32) v = ((const uint4 *)(vp + (rows[j] * Hkv + hkv) * (int64_t)Dv))[i - j * dv8];
            pv[u] = v;
        }
    };
    int pg_next = 0, off_next = 0; /* FAST, threads < NT: the block-table entry of a token two tiles on */
    if (FAST) {
        if (tid < G3_NT) {
            int t0 = (int)k_begin + tid, t1 = t0 + G3_NT;
            rows_s[tid] = t0 < kend32 ? (int64_t)table[t0 / ps32] * ps32 + t0 % ps32 : 0;
            rows_s[G3_NT + tid] = t1 < kend32 ? (int64_t)table[t1 / ps32] * ps32 + t1 % ps32 : 0;
        }
        __syncthreads();
        if (k_begin < k_end) load_fast((int)k_begin, rows_s);
    }
    int it = 0;
    for (int64_t kt = k_begin; kt < k_end; kt += G3_NT, it++) {
        __syncthreads();
        if (FAST) {
#pragma unroll
            for (int u = 0; u < 8; u++) {
                int i = tid + u * 128, j = i / dh8;
                if (i < G3_NT * dh8) *(uint4 *)(ks + j * LK + (i - j * dh8) * 8) = pk[u];
            }
#pragma unroll
            for (int u = 0; u < 8; u++) {
                int i = tid + u * 128, j = i / dv8;
                if (i < G3_NT * dv8) *(uint4 *)(vs + j * LV + (i - j * dv8) * 8) = pv[u];
            }
            __syncthreads();
            if (kt + G3_NT < k_end) load_fast((int)kt + G3_NT, rows_s + ((it + 1) & 1) * G3_NT);
            if (tid < G3_NT) {
                int tk = (int)kt + 2 * G3_NT + tid;
                if (tk < kend32) {
                    pg_next = table[tk / ps32]; /* used at the end of this iteration */
                    off_next = tk % ps32;
                }
            }
        }
        for (int i = tid; !FAST && i < G3_NT * (Dh / 8); i += 128) {
            int j = i / (Dh / 8), q8 = i % (Dh / 8);
            int64_t tok = kt + j;
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if (tok < k_end) {
                int64_t row = (int64_t)table[tok / page_size] * page_size + tok % page_size;
                v = ((const uint4 *)(kp + (row * Hkv + hkv) * (int64_t)Dh))[q8];
            }
            *(uint4 *)(ks + j * LK + q8 * 8) = v;
        }
        for (int i = tid; !FAST && i < G3_NT * (Dv / 8); i += 128) {
            int j = i / (Dv / 8), q8 = i % (Dv / 8);
            int64_t tok = kt + j;
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if (tok < k_end) {
                int64_t row = (int64_t)table[tok / page_size] * page_size + tok % page_size;
                v = ((const uint4 *)(vp + (row * Hkv + hkv) * (int64_t)Dv))[q8];
            }
            *(uint4 *)(vs + j * LV + q8 * 8) = v;
        }
        if (!FAST) __syncthreads();
        /* S = Q . K^T: 8 n-tiles of 8 tokens, warp -> tiles 2w and 2w + 1 */
#pragma unroll
        for (int u = 0; u < 2; u++) {
            const int nt = 2 * warp + u;
            const uint16_t *kb = kh + (nt * 8) * LK;
            float acc[4] = {0.f, 0.f, 0.f, 0.f};
            for (int k0 = 0; k0 < Dh; k0 += 16) {
                uint32_t a[4], b[2];
                a[0] = *(const uint32_t *)(qh + g * LK + k0 + 2 * c);
                a[1] = *(const uint32_t *)(qh + (g + 8) * LK + k0 + 2 * c);
                a[2] = *(const uint32_t *)(qh + g * LK + k0 + 8 + 2 * c);
                a[3] = *(const uint32_t *)(qh + (g + 8) * LK + k0 + 8 + 2 * c);
                b[0] = *(const uint32_t *)(kb + g * LK + k0 + 2 * c);
                b[1] = *(const uint32_t *)(kb + g * LK + k0 + 8 + 2 * c);
                mma_16816(acc, a, b);
            }
            int col = nt * 8 + 2 * c;
            ss[g * (G3_NT + 1) + col] = acc[0] * scale;
            ss[g * (G3_NT + 1) + col + 1] = acc[1] * scale;
            ss[(g + 8) * (G3_NT + 1) + col] = acc[2] * scale;
            ss[(g + 8) * (G3_NT + 1) + col + 1] = acc[3] * scale;
        }
        __syncthreads();
        { /* online softmax: 8 consecutive lanes per head row, 8 tokens each */
            const int r = tid >> 3, part = tid & 7;
            float sv[8], mx = -INFINITY;
#pragma unroll
            for (int e = 0; e < 8; e++) {
                int j = part * 8 + e;
                sv[e] = kt + j < k_end ? ss[r * (G3_NT + 1) + j] : -INFINITY;
                mx = fmaxf(mx, sv[e]);
            }
#pragma unroll
            for (int o2 = 1; o2 < 8; o2 <<= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o2));
            float mold = m_s[r], mnew = fmaxf(mold, mx), psum = 0.0f;
#pragma unroll
            for (int e = 0; e < 8; e++) {
                bf16 pb = f2bf(sv[e] == -INFINITY ? 0.0f : expf(sv[e] - mnew));
                ps[r * (G3_NT + 8) + part * 8 + e] = pb;
                psum += bf2f(pb);
            }
#pragma unroll
            for (int o2 = 1; o2 < 8; o2 <<= 1) psum += __shfl_xor_sync(0xffffffffu, psum, o2);
            __syncwarp();
            if (part == 0) {
                float alpha = mold == -INFINITY ? 0.0f : expf(mold - mnew);
                l_s[r] = l_s[r] * alpha + psum;
                m_s[r] = mnew;
                a_s[r] = alpha;
            }
        }
        __syncthreads();
        { /* O = O * alpha + P . V; warp -> columns [warp * ncol, +ncol) */
            float al0 = a_s[g], al1 = a_s[g + 8];
#pragma unroll
            for (int j = 0; j < 8; j++) {
                o[j][0] *= al0;
                o[j][1] *= al0;
                o[j][2] *= al1;
                o[j][3] *= al1;
            }
#pragma unroll
            for (int k0 = 0; k0 < G3_NT; k0 += 16) {
                uint32_t a[4];
                a[0] = *(const uint32_t *)(ph + g * (G3_NT + 8) + k0 + 2 * c);
                a[1] = *(const uint32_t *)(ph + (g + 8) * (G3_NT + 8) + k0 + 2 * c);
                a[2] = *(const uint32_t *)(ph + g * (G3_NT + 8) + k0 + 8 + 2 * c);
                a[3] = *(const uint32_t *)(ph + (g + 8) * (G3_NT + 8) + k0 + 8 + 2 * c);
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    if (j >= ntile) break;
                    int n = warp * ncol + j * 8 + g;
                    uint32_t b[2];
                    b[0] = pack2(vh + (k0 + 2 * c) * LV + n, vh + (k0 + 2 * c + 1) * LV + n);
                    b[1] = pack2(vh + (k0 + 2 * c + 8) * LV + n, vh + (k0 + 2 * c + 9) * LV + n);
                    mma_16816(o[j], a, b);
                }
            }
        }
        /* rows of tile it + 2, read after the next iteration's barriers (this buffer's last
         * readers were the loads of iteration it - 1) */
        if (FAST && tid < G3_NT) rows_s[(it & 1) * G3_NT + tid] = (int64_t)pg_next * ps32 + off_next;
    }
    __syncthreads();
#pragma unroll
    for (int half = 0; half < 2; half++) {
        int r = g + 8 * half;
        if (r >= G) continue;
        int64_t h = (int64_t)hkv * G + r, idx = (t * Hq + h) * S + s;
        float inv = S == 1 ? 1.0f / l_s[r] : 1.0f;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            if (j >= ntile) break;
            int col = warp * ncol + j * 8 + 2 * c;
            float v0 = o[j][2 * half], v1 = o[j][2 * half + 1];
            if (S == 1) {
                *(__nv_bfloat162 *)(out + (t * Hq + h) * (int64_t)Dv + col) = __floats2bfloat162_rn(v0 * inv, v1 * inv);
            } else {
                ws_acc[idx * Dv + col] = v0;
                ws_acc[idx * Dv + col + 1] = v1;
            }
        }
    }
    if (S > 1 && tid < G) {
        int64_t idx = (t * Hq + (int64_t)hkv * G + tid) * S + s;
        ws_m[idx] = m_s[tid];
        ws_l[idx] = l_s[tid];
    }
}


#define G4_Q 64  /* queries per block */
#define G4_NT 64 /* keys per tile */

__device__ __forceinline__ uint32_t pack_bf2(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *(uint32_t *)&v;
}

__global__ void __launch_bounds__(128) gqa_kernel4(const bf16 *__restrict__ q, const bf16 *__restrict__ kp,
                                                   const bf16 *__restrict__ vp, const int32_t *__restrict__ table,
                                                   int64_t page_size, bf16 *__restrict__ out, int64_t T, int64_t L,
                                                   int Hq, int Hkv, int Dh, int Dv, float scale) {
    __shared__ __align__(16) bf16 ks[G4_NT * (128 + G3_PAD)];
    __shared__ __align__(16) bf16 vs[G4_NT * (128 + G3_PAD)];
    const int LK = Dh + G3_PAD, LV = Dv + G3_PAD;
    const uint16_t *kh = (const uint16_t *)ks, *vh = (const uint16_t *)vs;
    const int h = blockIdx.y, hkv = h / (Hq / Hkv);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, c = lane & 3;
    const int64_t q0 = (int64_t)blockIdx.x * G4_Q + warp * 16;    /* this warp's first query */
    const int64_t r0 = q0 + g, r1 = q0 + g + 8;                   /* the two rows this thread holds */
    const int64_t p0 = r0 < T ? L - T + r0 : -1, p1 = r1 < T ? L - T + r1 : -1; /* their positions */
    const int nk = Dh / 16, nv = Dv / 8;
    uint32_t qa[8][4];
#pragma unroll
    for (int kk = 0; kk < 8; kk++) {
        if (kk >= nk) break;
        const int k0 = kk * 16;
        const bf16 *qr0 = q + (r0 * Hq + h) * (int64_t)Dh, *qr1 = q + (r1 * Hq + h) * (int64_t)Dh;
        qa[kk][0] = r0 < T ? *(const uint32_t *)(qr0 + k0 + 2 * c) : 0u;
        qa[kk][1] = r1 < T ? *(const uint32_t *)(qr1 + k0 + 2 * c) : 0u;
        qa[kk][2] = r0 < T ? *(const uint32_t *)(qr0 + k0 + 8 + 2 * c) : 0u;
        qa[kk][3] = r1 < T ? *(const uint32_t *)(qr1 + k0 + 8 + 2 * c) : 0u;
    }
    float o[16][4];
#pragma unroll
    for (int j = 0; j < 16; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) o[j][e] = 0.0f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;
    /* keys up to the block's last visible position */
    const int64_t k_end = min(L, L - T + min((int64_t)(blockIdx.x + 1) * G4_Q, T));
    for (int64_t kt = 0; kt < k_end; kt += G4_NT) {
        __syncthreads();
        for (int i = tid; i < G4_NT * (Dh / 8); i += 128) {
            int j = i / (Dh / 8), q8 = i % (Dh / 8);
            int64_t tok = kt + j;
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if (tok < k_end) {
                int64_t row = (int64_t)table[tok / page_size] * page_size + tok % page_size;
                v = ((const uint4 *)(kp + (row * Hkv + hkv) * (int64_t)Dh))[q8];
            }
            *(uint4 *)(ks + j * LK + q8 * 8) = v;
        }
        for (int i = tid; i < G4_NT * (Dv / 8); i += 128) {
            int j = i / (Dv / 8), q8 = i % (Dv / 8);
            int64_t tok = kt + j;
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if (tok < k_end) {
                int64_t row = (int64_t)table[tok / page_size] * page_size + tok % page_size;
                v = ((const uint4 *)(vp + (row * Hkv + hkv) * (int64_t)Dv))[q8];
            }
            *(uint4 *)(vs + j * LV + q8 * 8) = v;
        }
        __syncthreads();
        float sc[8][4];
#pragma unroll
        for (int nt = 0; nt < 8; nt++) {
            sc[nt][0] = sc[nt][1] = sc[nt][2] = sc[nt][3] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < 8; kk++) {
                if (kk >= nk) break;
                uint32_t b[2];
                b[0] = *(const uint32_t *)(kh + (nt * 8 + g) * LK + kk * 16 + 2 * c);
                b[1] = *(const uint32_t *)(kh + (nt * 8 + g) * LK + kk * 16 + 8 + 2 * c);
                mma_16816(sc[nt], qa[kk], b);
            }
        }
        float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < 8; nt++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                int64_t tok = kt + nt * 8 + 2 * c + e;
                sc[nt][e] = (tok < k_end && tok <= p0) ? sc[nt][e] * scale : -INFINITY;
                sc[nt][2 + e] = (tok < k_end && tok <= p1) ? sc[nt][2 + e] * scale : -INFINITY;
                mx0 = fmaxf(mx0, sc[nt][e]);
                mx1 = fmaxf(mx1, sc[nt][2 + e]);
            }
        /* the four lanes of a quad hold one row's 64 scores between them */
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
        float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
        float al0 = mn0 == -INFINITY ? 1.0f : (m0 == -INFINITY ? 0.0f : expf(m0 - mn0));
        float al1 = mn1 == -INFINITY ? 1.0f : (m1 == -INFINITY ? 0.0f : expf(m1 - mn1));
        uint32_t pa[4][4];
        float s0 = 0.0f, s1 = 0.0f;
#pragma unroll
        for (int nt = 0; nt < 8; nt++) {
            float pv[4];
#pragma unroll
            for (int e = 0; e < 2; e++) {
                pv[e] = sc[nt][e] == -INFINITY ? 0.0f : bf2f(f2bf(expf(sc[nt][e] - mn0)));
                pv[2 + e] = sc[nt][2 + e] == -INFINITY ? 0.0f : bf2f(f2bf(expf(sc[nt][2 + e] - mn1)));
            }
            s0 += pv[0] + pv[1];
            s1 += pv[2] + pv[3];
            /* accumulator layout -> A layout: n-tiles 2kk and 2kk+1 are k-step kk's two halves */
            pa[nt >> 1][(nt & 1) * 2 + 0] = pack_bf2(pv[0], pv[1]);
            pa[nt >> 1][(nt & 1) * 2 + 1] = pack_bf2(pv[2], pv[3]);
        }
        s0 += __shfl_xor_sync(0xffffffffu, s0, 1);
        s0 += __shfl_xor_sync(0xffffffffu, s0, 2);
        s1 += __shfl_xor_sync(0xffffffffu, s1, 1);
        s1 += __shfl_xor_sync(0xffffffffu, s1, 2);
        l0 = l0 * al0 + s0;
        l1 = l1 * al1 + s1;
        m0 = mn0;
        m1 = mn1;
#pragma unroll
        for (int j = 0; j < 16; j++) {
            o[j][0] *= al0;
            o[j][1] *= al0;
            o[j][2] *= al1;
            o[j][3] *= al1;
        }
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
#pragma unroll
            for (int j = 0; j < 16; j++) {
                if (j >= nv) break;
                int n = j * 8 + g;
                uint32_t b[2];
                b[0] = pack2(vh + (kk * 16 + 2 * c) * LV + n, vh + (kk * 16 + 2 * c + 1) * LV + n);
                b[1] = pack2(vh + (kk * 16 + 2 * c + 8) * LV + n, vh + (kk * 16 + 2 * c + 9) * LV + n);
                mma_16816(o[j], pa[kk], b);
            }
        }
    }
#pragma unroll
    for (int j = 0; j < 16; j++) {
        if (j >= nv) break;
        int col = j * 8 + 2 * c;
        if (r0 < T)
            *(__nv_bfloat162 *)(out + (r0 * Hq + h) * (int64_t)Dv + col) = __floats2bfloat162_rn(o[j][0] / l0, o[j][1] / l0);
        if (r1 < T)
            *(__nv_bfloat162 *)(out + (r1 * Hq + h) * (int64_t)Dv + col) = __floats2bfloat162_rn(o[j][2] / l1, o[j][3] / l1);
    }
}

__global__ void gqa_combine_kernel1(const float *__restrict__ ws_m, const float *__restrict__ ws_l,
                                    const float *__restrict__ ws_acc, bf16 *__restrict__ out, int S, int Dv) {
    int64_t r = blockIdx.x; /* (t * H + h) */
    const float *mr = ws_m + r * S, *lr = ws_l + r * S;
    float M = -INFINITY;
    for (int s = 0; s < S; s++) M = fmaxf(M, mr[s]);
    float den = 0.0f;
    for (int s = 0; s < S; s++) den += mr[s] == -INFINITY ? 0.0f : expf(mr[s] - M) * lr[s];
    for (int d = threadIdx.x; d < Dv; d += blockDim.x) {
        float num = 0.0f;
        for (int s = 0; s < S; s++)
            if (mr[s] != -INFINITY) num += expf(mr[s] - M) * ws_acc[(r * S + s) * Dv + d];
        out[r * Dv + d] = f2bf(num / den);
    }
}

#define CB2_COLS 128
#define CB2_MAX_S 256

/* Version 2: a block per (row, 128 columns); the split weights e^(m_s - M) once per block in
 * shared memory (block reductions for M and the denominator), then each column's sum over the
 * splits with four independent accumulators. Version 1 (one block per row, an expf per term,
 * one dependent chain per column) took 32 us for GLM's 20 heads x 32 splits on the H200. An
 * empty split (m = -inf) contributes nothing, whatever its partial holds, as in version 1. */
__global__ void __launch_bounds__(128) gqa_combine_kernel2(const float *__restrict__ ws_m, const float *__restrict__ ws_l,
                                                           const float *__restrict__ ws_acc, bf16 *__restrict__ out, int S,
                                                           int Dv) {
    __shared__ float e_s[CB2_MAX_S];
    const int64_t r = blockIdx.x;
    const float *mr = ws_m + r * S, *lr = ws_l + r * S;
    float m = -INFINITY;
    for (int s = threadIdx.x; s < S; s += blockDim.x) m = fmaxf(m, mr[s]);
    const float M = block_max(m);
    float dpart = 0.0f;
    for (int s = threadIdx.x; s < S; s += blockDim.x) {
        float e = mr[s] == -INFINITY ? 0.0f : expf(mr[s] - M);
        e_s[s] = e;
        dpart += e * lr[s];
    }
    const float den = block_sum(dpart); /* its barriers also publish e_s */
    const int d = blockIdx.y * CB2_COLS + threadIdx.x;
    if (d >= Dv) return;
    const float *a = ws_acc + r * S * (int64_t)Dv + d;
    float n0 = 0.0f, n1 = 0.0f, n2 = 0.0f, n3 = 0.0f;
    int s = 0;
    for (; s + 3 < S; s += 4) {
        float a0 = a[(int64_t)s * Dv], a1 = a[(int64_t)(s + 1) * Dv], a2 = a[(int64_t)(s + 2) * Dv],
              a3 = a[(int64_t)(s + 3) * Dv];
        n0 += e_s[s] == 0.0f ? 0.0f : e_s[s] * a0;
        n1 += e_s[s + 1] == 0.0f ? 0.0f : e_s[s + 1] * a1;
        n2 += e_s[s + 2] == 0.0f ? 0.0f : e_s[s + 2] * a2;
        n3 += e_s[s + 3] == 0.0f ? 0.0f : e_s[s + 3] * a3;
    }
    for (; s < S; s++) n0 += e_s[s] == 0.0f ? 0.0f : e_s[s] * a[(int64_t)s * Dv];
    out[r * Dv + d] = f2bf(((n0 + n1) + (n2 + n3)) / den);
}

/* The combine both attention families run after a split-K kernel. Version 0 = 2 (S <= 256). */
int gbc_attention_combine_v(float *ws, bf16 *out, int64_t rows, int S, int Dv, int version) {
    float *ws_m = ws, *ws_l = ws + rows * S, *ws_acc = ws + 2 * rows * S;
    if (version == 0) version = S <= CB2_MAX_S ? 2 : 1;
    if (version == 2) {
        gqa_combine_kernel2<<<dim3((unsigned)rows, (unsigned)cdiv(Dv, CB2_COLS)), 128, 0, gbc_stream>>>(
            ws_m, ws_l, ws_acc, out, S, Dv);
        LAUNCH_CHECK("gqa_combine_kernel2");
        return GBC_OK;
    }
    gqa_combine_kernel1<<<(unsigned)rows, 128, 0, gbc_stream>>>(ws_m, ws_l, ws_acc, out, S, Dv);
    LAUNCH_CHECK("gqa_combine_kernel1");
    return GBC_OK;
}

int gbc_attention_combine(float *ws, bf16 *out, int64_t rows, int S, int Dv) {
    return gbc_attention_combine_v(ws, out, rows, S, Dv, 0);
}

/* The combine alone (timing and validation of its versions): ws holds the partials as the
 * split-K kernels write them, [m: rows x S][l: rows x S][acc: rows x S x Dv]. */
extern "C" int gbc_attention_combine_ex(void *ws, void *out, int64_t rows, int64_t S, int64_t Dv, int version) {
    if (rows <= 0 || S <= 0 || Dv <= 0 || rows > 2147483647)
        return VALUE_ERROR("attention_combine: need rows, S, Dv > 0, got %ld, %ld, %ld", (long)rows, (long)S, (long)Dv);
    if (version < 0 || version > 2) return VALUE_ERROR("attention_combine: `version` must be 0..2, got %d", version);
    if (version == 2 && S > CB2_MAX_S)
        return VALUE_ERROR("attention_combine version 2 takes S <= %d splits, got %ld", CB2_MAX_S, (long)S);
    GBC_INIT();
    return gbc_attention_combine_v((float *)ws, (bf16 *)out, rows, (int)S, (int)Dv, version);
}

extern "C" int gbc_gqa_plan(int64_t T, int64_t L, int64_t Hq, int64_t Hkv, int64_t Dh, int64_t Dv, int version,
                            int *version_out, int64_t *splits_out) {
    if (Hkv <= 0 || Hq % Hkv) return VALUE_ERROR("gqa_plan: `q_heads`=%ld is not a multiple of `kv_heads`=%ld", (long)Hq, (long)Hkv);
    bool k2_ok = T <= 4 && Dh == 128 && Dv == 128 && Hq / Hkv <= 16;
    bool k3_ok = T <= 4 && Dh % 16 == 0 && Dv % 32 == 0 && Dh <= 256 && Dv <= 256 && Hq / Hkv <= 16;
    bool k5_ok = k3_ok && Dh <= 128 && Dv <= 128 && L <= 2147483647 - 2 * G3_NT;
    bool k4_ok = T > 4 && Dh % 16 == 0 && Dv % 16 == 0 && Dh <= 128 && Dv <= 128;
    int v = version ? version : (k5_ok ? 5 : k3_ok ? 3 : k2_ok ? 2 : k4_ok ? 4 : 1);
    *version_out = v;
    *splits_out = v == 4 ? 1 : auto_splits(v >= 2 ? Hkv * T : Hq * cdiv(T, Q1_QB), L,
                                           v == 5 ? GQA5_TARGET_BLOCKS : GQA_TARGET_BLOCKS);
    return GBC_OK;
}

extern "C" int gbc_gqa_attention(const void *q, const void *k_pages, const void *v_pages, const int32_t *table,
                                 int64_t page_size, void *out, int64_t T, int64_t L, int64_t Hq, int64_t Hkv, int64_t Dh,
                                 int64_t Dv, float scale, int64_t n_splits, void *ws, size_t ws_bytes, int version) {
    if (T < 0 || L < T) return VALUE_ERROR("gqa_attention: need 0 <= T <= L, got T=%ld L=%ld", (long)T, (long)L);
    if (Hq <= 0 || Hkv <= 0 || Hq % Hkv)
        return VALUE_ERROR("gqa_attention: `q_heads`=%ld is not a multiple of `kv_heads`=%ld", (long)Hq, (long)Hkv);
    if (Dh <= 0 || Dv <= 0 || Dh % 2 || Dv % 2 || Dh > 256 || Dv > 256)
        return VALUE_ERROR("gqa_attention: head dims must be even and <= 256, got Dh=%ld Dv=%ld", (long)Dh, (long)Dv);
    if (page_size <= 0) return VALUE_ERROR("gqa_attention: `page_size` must be > 0, got %ld", (long)page_size);
    if (n_splits < 0 || n_splits > GQA_MAX_SPLITS)
        return VALUE_ERROR("gqa_attention: `n_splits`=%ld must be in 0..%d", (long)n_splits, GQA_MAX_SPLITS);
    if (version < 0 || version > 5) return VALUE_ERROR("gqa_attention: `version` must be 0..5, got %d", version);
    GBC_INIT();
    if (T == 0) return GBC_OK;
    int64_t G = Hq / Hkv;
    bool al = aligned16(q) && aligned16(k_pages) && aligned16(v_pages) && aligned16(out);
    bool k2_ok = T <= 4 && Dh == 128 && Dv == 128 && G <= 16 && al;
    bool k3_ok = T <= 4 && Dh % 16 == 0 && Dv % 32 == 0 && G <= 16 && al;
    bool k5_ok = k3_ok && Dh <= 128 && Dv <= 128 && L <= 2147483647 - 2 * G3_NT;
    bool k4_ok = Dh % 16 == 0 && Dv % 16 == 0 && Dh <= 128 && Dv <= 128 && al;
    if (version == 0) version = k5_ok ? 5 : k3_ok ? 3 : k2_ok ? 2 : (T > 4 && k4_ok) ? 4 : 1;
    if (version == 4 && !k4_ok)
        return VALUE_ERROR("gqa_attention version 4 needs Dh, Dv %% 16 == 0 and <= 128, got Dh=%ld Dv=%ld", (long)Dh, (long)Dv);
    if (version == 4) {
        if (cdiv(T, G4_Q) > 2147483647 || Hq > 65535) return VALUE_ERROR("gqa_attention: T=%ld too large", (long)T);
        gqa_kernel4<<<dim3((unsigned)cdiv(T, G4_Q), (unsigned)Hq), 128, 0, gbc_stream>>>(
            (const bf16 *)q, (const bf16 *)k_pages, (const bf16 *)v_pages, table, page_size, (bf16 *)out, T, L, (int)Hq,
            (int)Hkv, (int)Dh, (int)Dv, scale);
        LAUNCH_CHECK("gqa_kernel4");
        return GBC_OK;
    }
    if (version == 2 && !k2_ok)
        return VALUE_ERROR("gqa_attention version 2 needs T <= 4, Dh = Dv = 128 and G <= 16, got T=%ld Dh=%ld Dv=%ld G=%ld",
                           (long)T, (long)Dh, (long)Dv, (long)G);
    if (version == 3 && !k3_ok)
        return VALUE_ERROR("gqa_attention version 3 needs T <= 4, Dh %% 16 == 0, Dv %% 32 == 0 and G <= 16, got T=%ld "
                           "Dh=%ld Dv=%ld G=%ld", (long)T, (long)Dh, (long)Dv, (long)G);
    if (version == 5 && !k5_ok)
        return VALUE_ERROR("gqa_attention version 5 needs T <= 4, Dh %% 16 == 0, Dv %% 32 == 0, Dh, Dv <= 128 and "
                           "G <= 16, got T=%ld Dh=%ld Dv=%ld G=%ld", (long)T, (long)Dh, (long)Dv, (long)G);
    int64_t units = version >= 2 ? Hkv * T : Hq * cdiv(T, Q1_QB);
    int64_t S = n_splits ? n_splits : auto_splits(units, L, version == 5 ? GQA5_TARGET_BLOCKS : GQA_TARGET_BLOCKS);
    if (S > 1 && gbc_gqa_workspace_bytes(T, Hq, Dv, S) > ws_bytes)
        return VALUE_ERROR("gqa_attention: workspace of %zu bytes is too small, %zu needed", ws_bytes,
                           gbc_gqa_workspace_bytes(T, Hq, Dv, S));
    if (cdiv(T, Q1_QB) > 65535) return VALUE_ERROR("gqa_attention: T=%ld too large", (long)T);
    int64_t chunk = cdiv(L, S);
    int64_t rows = T * Hq;
    float *wsf = (float *)ws;
    float *ws_m = wsf, *ws_l = wsf ? wsf + rows * S : nullptr, *ws_acc = wsf ? wsf + 2 * rows * S : nullptr;
    const bf16 *qb = (const bf16 *)q, *kb = (const bf16 *)k_pages, *vb = (const bf16 *)v_pages;
    bf16 *ob = (bf16 *)out;
    if (version == 1) {
        dim3 grid((unsigned)S, (unsigned)Hq, (unsigned)cdiv(T, Q1_QB));
        size_t smem = (size_t)(Q1_QB * (Dh / 2) + Q1_KT * (Dh / 2 + 1) + Q1_KT * (Dv / 2)) * 4;
        if (Dv <= 128)
            gqa_kernel1<4><<<grid, 128, smem, gbc_stream>>>(qb, kb, vb, table, page_size, ob, ws_m, ws_l, ws_acc, T, L,
                                                           (int)Hq, (int)Hkv, (int)Dh, (int)Dv, scale, (int)S, chunk);
        else
            gqa_kernel1<8><<<grid, 128, smem, gbc_stream>>>(qb, kb, vb, table, page_size, ob, ws_m, ws_l, ws_acc, T, L,
                                                           (int)Hq, (int)Hkv, (int)Dh, (int)Dv, scale, (int)S, chunk);
        LAUNCH_CHECK("gqa_kernel1");
    } else if (version == 3 || version == 5) {
        dim3 grid((unsigned)S, (unsigned)Hkv, (unsigned)T);
        bool fast = version == 5;
        size_t smem = gqa3_smem_bytes(Dh, Dv, fast);
        static size_t smem_set[2] = {0, 0};
        if (smem > 48 * 1024 && smem > smem_set[fast]) {
            CUDA_CHECK(cudaFuncSetAttribute(fast ? gqa_kernel3<true> : gqa_kernel3<false>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
            smem_set[fast] = smem;
        }
        if (fast)
            gqa_kernel3<true><<<grid, 128, smem, gbc_stream>>>(qb, kb, vb, table, page_size, ob, ws_m, ws_l, ws_acc, T, L,
                                                               (int)Hq, (int)Hkv, (int)G, (int)Dh, (int)Dv, scale, (int)S,
                                                               chunk);
        else
            gqa_kernel3<false><<<grid, 128, smem, gbc_stream>>>(qb, kb, vb, table, page_size, ob, ws_m, ws_l, ws_acc, T,
                                                                L, (int)Hq, (int)Hkv, (int)G, (int)Dh, (int)Dv, scale,
                                                                (int)S, chunk);
        if (fast) LAUNCH_CHECK("gqa_kernel5");
        else LAUNCH_CHECK("gqa_kernel3");
    } else {
        dim3 grid((unsigned)S, (unsigned)Hkv, (unsigned)T);
#define GB_K2(GG)                                                                                                \
    gqa_kernel2<GG><<<grid, 128, 0, gbc_stream>>>(qb, kb, vb, table, page_size, ob, ws_m, ws_l, ws_acc, T, L, \
                                                  (int)Hq, (int)Hkv, (int)G, scale, (int)S, chunk)
        if (G == 1) GB_K2(1);
        else if (G == 2) GB_K2(2);
        else if (G <= 4) GB_K2(4);
        else if (G <= 8) GB_K2(8);
        else GB_K2(16);
#undef GB_K2
        LAUNCH_CHECK("gqa_kernel2");
    }
    if (S > 1) return gbc_attention_combine(wsf, ob, rows, (int)S, (int)Dv);
    return GBC_OK;
}
