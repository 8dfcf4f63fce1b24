/* attention_mla.cu: MLA (DeepSeek-V2/V3, GLM-4.7-Flash) attention pieces on the device.
 * The cache row is [R latent | Dr rope key] bf16 (kvcache.cu layout; 512 + 64 = 576 for GLM).
 *   mla_kernel1        absorbed attention, split-K: a block owns one query token, up to 32 heads
 *                      and one block of the cache; every latent row read from memory serves all
 *                      its heads (GLM: all 20). Tiles of 32 cached rows go through shared memory;
 *                      scores lane-per-key (rows padded one word), online softmax per head, then
 *                      each thread accumulates 2 latent columns for every head in registers.
 *                      CUDA cores only: the FLOPs per byte of MLA decode (20 heads x 1088 MACs per
 *                      1152-byte row) make it compute-bound on fp32 units; a tensor-core (mma)
 *                      version is the next step (docs/CUDA.md). Decode (T = 1) and absorbed
 *                      prefill (T > 1, causal) alike.
 *   mla_kernel2        the same work on tensor cores (mma.sync m16n8k16, mma.cuh), FlashMLA's shape:
 *                      the heads are the M dimension (20 padded to 32 = two 16-row tiles), a tile of
 *                      32 cached rows is N for the scores and K for P.V. Per tile: S = Q.K^T (each
 *                      of 8 warps one 16x8 block over the 576-wide rows), online softmax per head in
 *                      shared memory (P rounded to bf16 for the second product, as FlashMLA does),
 *                      O = O * alpha + P.V with O[32 x 512] fp32 in registers (each warp 64 columns).
 *                      Rows padded 16 bytes against bank conflicts; ~80 KB shared, 2 blocks per SM on
 *                      sm_80/sm_90. The next tile is loaded into registers while this one is
 *                      computed (a two-stage software pipeline). Needs R % 64 == 0, R + Dr <= 576,
 *                      (R + Dr) % 16 == 0.
 *   mla_kernel3        kernel 2's products with its loads restructured: the cache rows of the next
 *                      two tiles in shared memory (block-table entries loaded a tile ahead, 32-bit
 *                      index arithmetic), so each tile's loads issue together; S = Q.K^T as two
 *                      independent mma chains (mla_kernel2's template with FAST = true).
 *   combine            attention_gqa.cu's gqa_combine_kernel2 (same partial layout; version 1 on request).
 *   mla_absorb_q_kernel1  q_lat[t, h, :] = q_nope[t, h, :] . W_uk[h]   (thread per latent column)
 *   mla_absorb_q_kernel2  the same for decode (T <= 8): a block per (head, 64 columns, token), warps
 *                      split the rows (the launcher's default there)
 *   mla_absorb_o_kernel1  out[t, h, v] = o_lat[t, h, :] . W_uv[h, v, :]  (warp per output)
 *   mla_split_kv_kernel1 / concat_heads_kernel1: naive MLA's assembly of full K, V and q.
 *   mla_prepare_kernel1  decode/prefill glue in one launch instead of nine: from q_b's output
 *                      q[T, H, Dn+Dr] and kv_a's output c[T, R+Dr]: q_nope (copy), q_rope (roped),
 *                      latent = RMSNorm(c[:R]) * w and k_rope = rope(c[R:]) appended to the cache.
 *                      Same arithmetic as norm.cu + rope.cu (fp32 sum of squares, fp64 angle).
 * Naive MLA = paged_gather + linear (kv_b expansion) + split_kv + gqa_attention (G = 1), composed
 * in glmbench/cuda.py. */
#include <math.h>

#include "common.cuh"
#include "mma.cuh"

#define MLA_KT 32
#define MLA_HG 32 /* heads per block */
#define MLA_MAX_SPLITS 132
#define MLA_THREADS 256

int gbc_attention_combine(float *ws, bf16 *out, int64_t rows, int S, int Dv);

extern "C" size_t gbc_mla_workspace_bytes(int64_t T, int64_t H, int64_t R, int64_t n_splits) {
    int64_t S = n_splits > 0 ? n_splits : MLA_MAX_SPLITS;
    return (size_t)(T * H * S) * (size_t)(R + 2) * sizeof(float);
}

/* About one block per SM of an H100/H200 (132 SMs; kernel 2 pipelines its own loads), at least 4
 * tiles of cache per split: more splits would add partials (20 heads x 514 floats each) to move. */
extern "C" int64_t gbc_mla_plan(int64_t T, int64_t L, int64_t H) {
    int64_t units = (T > 0 ? T : 1) * cdiv(H > 0 ? H : 1, MLA_HG);
    int64_t S = 132 / units;
    if (S > cdiv(L, 4 * MLA_KT)) S = cdiv(L, 4 * MLA_KT);
    if (S > MLA_MAX_SPLITS) S = MLA_MAX_SPLITS;
    return S < 1 ? 1 : S;
}

static size_t mla_smem_bytes(int64_t R, int64_t Dr) {
    int64_t W = (R + Dr) / 2;             /* words per row */
    return (size_t)(MLA_HG * W            /* q */
                    + MLA_KT * (W + 1)    /* tile, padded */
                    + MLA_HG * MLA_KT     /* p */
                    + 3 * MLA_HG) * 4;    /* m, l, alpha */
}

__global__ void __launch_bounds__(MLA_THREADS) mla_kernel1(
    const bf16 *__restrict__ q_lat, const bf16 *__restrict__ q_rope, const bf16 *__restrict__ pages,
    const int32_t *__restrict__ table, int64_t page_size, bf16 *__restrict__ o_lat, float *__restrict__ ws_m,
    float *__restrict__ ws_l, float *__restrict__ ws_acc, int64_t T, int64_t L, int H, int R, int Dr, float scale, int S,
    int64_t chunk) {
    extern __shared__ __align__(16) unsigned char smraw[];
    const int W = (R + Dr) / 2, KW = W + 1;
    uint32_t *qs = (uint32_t *)smraw;     /* [HG][W] */
    uint32_t *kv = qs + MLA_HG * W;       /* [KT][KW] */
    float *ps = (float *)(kv + MLA_KT * KW); /* [HG][KT] */
    float *ms = ps + MLA_HG * MLA_KT, *ls = ms + MLA_HG, *as = ls + MLA_HG;
    const int s = blockIdx.x;
    const int64_t t = blockIdx.y, p = L - T + t;
    const int h0 = blockIdx.z * MLA_HG, nh = min(MLA_HG, H - h0);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = MLA_THREADS / 32;

    for (int i = threadIdx.x; i < nh * W; i += MLA_THREADS) {
        int hh = i / W, w = i % W;
        int64_t h = h0 + hh;
        qs[i] = w < R / 2 ? ((const uint32_t *)(q_lat + (t * H + h) * (int64_t)R))[w]
                          : ((const uint32_t *)(q_rope + (t * H + h) * (int64_t)Dr))[w - R / 2];
    }
    if (threadIdx.x < MLA_HG) {
        ms[threadIdx.x] = -INFINITY;
        ls[threadIdx.x] = 0.0f;
    }
    float acc[MLA_HG][2];
#pragma unroll
    for (int hh = 0; hh < MLA_HG; hh++) acc[hh][0] = acc[hh][1] = 0.0f;

    int64_t k_begin = (int64_t)s * chunk, k_end = min(min(L, k_begin + chunk), p + 1);
    for (int64_t kt = k_begin; kt < k_end; kt += MLA_KT) {
        __syncthreads(); /* previous tile's readers are done */
        for (int i = threadIdx.x; i < MLA_KT * W; i += MLA_THREADS) {
            int j = i / W, w = i % W;
            int64_t tok = kt + j;
            uint32_t v = 0u;
            if (tok < k_end) {
                int64_t row = (int64_t)table[tok / page_size] * page_size + tok % page_size;
                v = ((const uint32_t *)(pages + row * (int64_t)(R + Dr)))[w];
            }
            kv[j * KW + w] = v;
        }
        __syncthreads();
        /* scores: warp per head, lane per cached row */
        for (int hh = warp; hh < nh; hh += nwarps) {
            int64_t tok = kt + lane;
            float sc = -INFINITY;
            if (tok < k_end) {
                const __nv_bfloat162 *qv = (const __nv_bfloat162 *)(qs + hh * W);
                const __nv_bfloat162 *kr = (const __nv_bfloat162 *)(kv + lane * KW);
                float dot = 0.0f;
                for (int w = 0; w < W; w++) {
                    float2 a = __bfloat1622float2(qv[w]), b = __bfloat1622float2(kr[w]);
                    dot += a.x * b.x + a.y * b.y;
                }
                sc = dot * scale;
            }
            float mold = ms[hh];
            float mnew = fmaxf(mold, warp_max(sc));
            float pj = 0.0f, alpha = 1.0f;
            if (mnew != -INFINITY) {
                pj = sc == -INFINITY ? 0.0f : expf(sc - mnew);
                alpha = expf(mold - mnew);
            }
            float psum = warp_sum(pj);
            ps[hh * MLA_KT + lane] = pj;
            if (lane == 0) {
                ls[hh] = ls[hh] * alpha + psum;
                ms[hh] = mnew;
                as[hh] = alpha;
            }
        }
        __syncthreads();
        /* values: thread owns latent columns c0 = tid and c0 + 256 for every head */
        const bf16 *kvb = (const bf16 *)kv;
#pragma unroll
        for (int hh = 0; hh < MLA_HG; hh++) {
            if (hh >= nh) break;
            float al = as[hh];
            acc[hh][0] *= al;
            acc[hh][1] *= al;
        }
        int nt = (int)min((int64_t)MLA_KT, k_end - kt);
        for (int j = 0; j < nt; j++) {
            int c0 = threadIdx.x, c1 = threadIdx.x + MLA_THREADS;
            float v0 = c0 < R ? bf2f(kvb[j * 2 * KW + c0]) : 0.0f;
            float v1 = c1 < R ? bf2f(kvb[j * 2 * KW + c1]) : 0.0f;
#pragma unroll
            for (int hh = 0; hh < MLA_HG; hh++) {
                if (hh >= nh) break;
                float pj = ps[hh * MLA_KT + j];
                acc[hh][0] += pj * v0;
                acc[hh][1] += pj * v1;
            }
        }
    }
    __syncthreads();
#pragma unroll
    for (int hh = 0; hh < MLA_HG; hh++) {
        if (hh >= nh) break;
        int64_t h = h0 + hh;
        int64_t idx = (t * H + h) * S + s;
        for (int c = 0; c < 2; c++) {
            int col = threadIdx.x + c * MLA_THREADS;
            if (col >= R) continue;
            if (S == 1) o_lat[(t * H + h) * (int64_t)R + col] = f2bf(acc[hh][c] / ls[hh]);
            else ws_acc[idx * R + col] = acc[hh][c];
        }
        if (S > 1 && threadIdx.x == 0) {
            ws_m[idx] = ms[hh];
            ws_l[idx] = ls[hh];
        }
    }
}


#define M2_NT 32   /* cached rows per tile */
#define M2_ROWS 32 /* query rows (heads) per block: two m16 tiles */
#define M2_PAD 8   /* bf16 of padding per shared row (16 bytes) */

static size_t mla2_smem_bytes(int64_t R, int64_t Dr, bool fast) {
    int64_t LD = R + Dr + M2_PAD;
    return (size_t)(2 * M2_ROWS * LD * 2              /* q, tile */
                    + M2_ROWS * (M2_NT + 1) * 4       /* scores */
                    + M2_ROWS * (M2_NT + 8) * 2       /* p */
                    + 3 * M2_ROWS * 4)                /* m, l, alpha */
           + (fast ? 2 * M2_NT * sizeof(int64_t) + 8 : 0); /* kernel 3: cache rows of the next two tiles */
}

#define M2_PRE 9 /* 16-byte chunks per thread per tile: 32 rows x 576 / 8 / 256 threads */

/* FAST = false: kernel 2. FAST = true: kernel 3, the same products with kernel 2's loads
 * restructured: kernel 2 finds each 16-byte piece's cache row by a 64-bit division (a subroutine
 * call) and a block-table load that the piece's load waits for, nine times per thread per tile,
 * one after another (the first H200 run: ~11 us per 32-row tile, 5-10% of the copy bandwidth).
 * Kernel 3 keeps the cache rows of the next two tiles in shared memory (block-table entries
 * loaded a tile ahead, 32-bit index arithmetic), so the next tile's nine loads per thread issue
 * together; and S = Q.K^T runs as two independent mma chains (even and odd k-steps). The second
 * H200 run measured it only 5-16% faster than kernel 2: the loads were not most of the ~11 us. */
template <bool FAST>
__global__ void __launch_bounds__(256, 1) mla_kernel2(
    const bf16 *__restrict__ q_lat, const bf16 *__restrict__ q_rope, const bf16 *__restrict__ pages,
    const int32_t *__restrict__ table, int64_t page_size, bf16 *__restrict__ o_lat, float *__restrict__ ws_m,
    float *__restrict__ ws_l, float *__restrict__ ws_acc, int64_t T, int64_t L, int H, int R, int Dr, float scale, int S,
    int64_t chunk) {
    extern __shared__ __align__(16) unsigned char smraw[];
    const int W = R + Dr, LD = W + M2_PAD;
    bf16 *qs = (bf16 *)smraw;                                /* [32][LD] */
    bf16 *ks = qs + M2_ROWS * LD;                            /* [NT][LD] */
    float *ss = (float *)(ks + M2_NT * LD);                  /* [32][NT + 1] */
    bf16 *ps = (bf16 *)(ss + M2_ROWS * (M2_NT + 1));         /* [32][NT + 8] */
    float *m_s = (float *)(ps + M2_ROWS * (M2_NT + 8));
    float *l_s = m_s + M2_ROWS, *a_s = l_s + M2_ROWS;
    int64_t *rows_s = (int64_t *)(((uintptr_t)(a_s + M2_ROWS) + 7) & ~(uintptr_t)7); /* FAST: [2][NT] */
    const uint16_t *qh = (const uint16_t *)qs, *kh = (const uint16_t *)ks, *ph = (const uint16_t *)ps;
    const int s = blockIdx.x;
    const int64_t t = blockIdx.y, p = L - T + t;
    const int h0 = blockIdx.z * M2_ROWS, nh = min(M2_ROWS, H - h0);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, c = lane & 3;

    for (int i = tid; i < M2_ROWS * (W / 2); i += 256) {
        int r = i / (W / 2), w = i % (W / 2);
        uint32_t v = 0u;
        if (r < nh) {
            int64_t h = h0 + r;
            v = w < R / 2 ? ((const uint32_t *)(q_lat + (t * H + h) * (int64_t)R))[w]
                          : ((const uint32_t *)(q_rope + (t * H + h) * (int64_t)Dr))[w - R / 2];
        }
        ((uint32_t *)(qs + r * LD))[w] = v;
    }
    if (tid < M2_ROWS) {
        m_s[tid] = -INFINITY;
        l_s[tid] = 0.0f;
    }
    const int ncol = R / 8;      /* O columns per warp */
    const int ntile = ncol / 8;  /* their n8 tiles, <= 8 */
    float o[2][8][4];
#pragma unroll
    for (int mt = 0; mt < 2; mt++)
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) o[mt][j][e] = 0.0f;

    int64_t k_begin = (int64_t)s * chunk, k_end = min(min(L, k_begin + chunk), p + 1);
    /* Software pipeline: the next tile's rows are loaded into registers while this tile is
     * computed, so each block keeps its share of memory busy (one block per SM at the chosen
     * number of splits). */
    uint4 pre[M2_PRE];
    const int chunks = W / 8;
    auto load_tile = [&](int64_t kt) {
#pragma unroll
        for (int u = 0; u < M2_PRE; u++) {
            int i = tid + u * 256;
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if (i < M2_NT * chunks) {
                int64_t tok = kt + i / chunks;
                if (tok < k_end) {
                    int64_t row = (int64_t)table[tok / page_size] * page_size + tok % page_size;
                    v = ((const uint4 *)(pages + row * (int64_t)W))[i % chunks];
                }
            }
            pre[u] = v;
        }
    };
    /* FAST: 32-bit token arithmetic (the launcher checks L < 2^31) */
    const int ps32 = (int)page_size, kend32 = (int)k_end;
    auto load_fast = [&](int kt, const int64_t *rows) {
#pragma unroll
        for (int u = 0; u < M2_PRE; u++) {
            int i = tid + u * 256, j = i / chunks;
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if (i < M2_NT * chunks && kt + j < kend32) v = ((const uint4 *)(pages + rows[j] * (int64_t)W))[i - j * chunks];
            pre[u] = v;
        }
    };
    int pg_next = 0, off_next = 0; /* FAST, threads < NT: the block-table entry of a row two tiles on */
    if (FAST) {
        if (tid < M2_NT) {
            int t0 = (int)k_begin + tid, t1 = t0 + M2_NT;
            rows_s[tid] = t0 < kend32 ? (int64_t)table[t0 / ps32] * ps32 + t0 % ps32 : 0;
            rows_s[M2_NT + tid] = t1 < kend32 ? (int64_t)table[t1 / ps32] * ps32 + t1 % ps32 : 0;
        }
        __syncthreads();
        if (k_begin < k_end) load_fast((int)k_begin, rows_s);
    } else if (k_begin < k_end) {
        load_tile(k_begin);
    }
    int it = 0;
    for (int64_t kt = k_begin; kt < k_end; kt += M2_NT, it++) {
        __syncthreads(); /* the previous tile's readers are done */
#pragma unroll
        for (int u = 0; u < M2_PRE; u++) {
            int i = tid + u * 256;
            if (i < M2_NT * chunks) *(uint4 *)(ks + (i / chunks) * LD + (i % chunks) * 8) = pre[u];
        }
        __syncthreads();
        if (FAST) {
            if (kt + M2_NT < k_end) load_fast((int)kt + M2_NT, rows_s + ((it + 1) & 1) * M2_NT);
            if (tid < M2_NT) {
                int tk = (int)kt + 2 * M2_NT + tid;
                if (tk < kend32) {
                    pg_next = table[tk / ps32]; /* used at the end of this iteration */
                    off_next = tk % ps32;
                }
            }
        } else if (kt + M2_NT < k_end) {
            load_tile(kt + M2_NT); /* in flight during the products below */
        }
        { /* S = Q . K^T: warp -> m-tile (warp & 1), n-tile of 8 rows (warp >> 1) */
            const int mt = warp & 1, nt = warp >> 1;
            const uint16_t *qa = qh + (mt * 16) * LD, *kb = kh + (nt * 8) * LD;
            float acc[4] = {0.f, 0.f, 0.f, 0.f}, acc2[4] = {0.f, 0.f, 0.f, 0.f};
            for (int k0 = 0; k0 < W; k0 += FAST ? 32 : 16) {
                uint32_t a[4], b[2];
                a[0] = *(const uint32_t *)(qa + g * LD + k0 + 2 * c);
                a[1] = *(const uint32_t *)(qa + (g + 8) * LD + k0 + 2 * c);
                a[2] = *(const uint32_t *)(qa + g * LD + k0 + 8 + 2 * c);
                a[3] = *(const uint32_t *)(qa + (g + 8) * LD + k0 + 8 + 2 * c);
                b[0] = *(const uint32_t *)(kb + g * LD + k0 + 2 * c);
                b[1] = *(const uint32_t *)(kb + g * LD + k0 + 8 + 2 * c);
                mma_16816(acc, a, b);
                if (FAST && k0 + 16 < W) { /* the odd k-step: a second, independent chain */
                    const int k1 = k0 + 16;
                    a[0] = *(const uint32_t *)(qa + g * LD + k1 + 2 * c);
                    a[1] = *(const uint32_t *)(qa + (g + 8) * LD + k1 + 2 * c);
                    a[2] = *(const uint32_t *)(qa + g * LD + k1 + 8 + 2 * c);
                    a[3] = *(const uint32_t *)(qa + (g + 8) * LD + k1 + 8 + 2 * c);
                    b[0] = *(const uint32_t *)(kb + g * LD + k1 + 2 * c);
                    b[1] = *(const uint32_t *)(kb + g * LD + k1 + 8 + 2 * c);
                    mma_16816(acc2, a, b);
                }
            }
            if (FAST) {
#pragma unroll
                for (int e = 0; e < 4; e++) acc[e] += acc2[e];
            }
            int r0 = mt * 16 + g, col = nt * 8 + 2 * c;
            ss[r0 * (M2_NT + 1) + col] = acc[0] * scale;
            ss[r0 * (M2_NT + 1) + col + 1] = acc[1] * scale;
            ss[(r0 + 8) * (M2_NT + 1) + col] = acc[2] * scale;
            ss[(r0 + 8) * (M2_NT + 1) + col + 1] = acc[3] * scale;
        }
        __syncthreads();
        { /* online softmax: 8 consecutive lanes per head row, 4 cached rows each */
            const int r = tid >> 3, part = tid & 7;
            float sv[4], mx = -INFINITY;
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int j = part * 4 + e;
                sv[e] = kt + j < k_end ? ss[r * (M2_NT + 1) + j] : -INFINITY;
                mx = fmaxf(mx, sv[e]);
            }
#pragma unroll
            for (int o2 = 1; o2 < 8; o2 <<= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o2));
            float mold = m_s[r], mnew = fmaxf(mold, mx), psum = 0.0f;
#pragma unroll
            for (int e = 0; e < 4; e++) {
                bf16 pb = f2bf(sv[e] == -INFINITY ? 0.0f : expf(sv[e] - mnew));
                ps[r * (M2_NT + 8) + part * 4 + e] = pb;
                psum += bf2f(pb); /* the sum of what P.V will use */
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
        { /* O = O * alpha + P . V, V = the first R columns of the tile; warp -> columns [warp*ncol, +ncol) */
            float al[2][2];
#pragma unroll
            for (int mt = 0; mt < 2; mt++) {
                al[mt][0] = a_s[mt * 16 + g];
                al[mt][1] = a_s[mt * 16 + g + 8];
            }
#pragma unroll
            for (int mt = 0; mt < 2; mt++)
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    o[mt][j][0] *= al[mt][0];
                    o[mt][j][1] *= al[mt][0];
                    o[mt][j][2] *= al[mt][1];
                    o[mt][j][3] *= al[mt][1];
                }
#pragma unroll
            for (int k0 = 0; k0 < M2_NT; k0 += 16) {
                uint32_t a[2][4];
#pragma unroll
                for (int mt = 0; mt < 2; mt++) {
                    const uint16_t *pa = ph + (mt * 16) * (M2_NT + 8);
                    a[mt][0] = *(const uint32_t *)(pa + g * (M2_NT + 8) + k0 + 2 * c);
                    a[mt][1] = *(const uint32_t *)(pa + (g + 8) * (M2_NT + 8) + k0 + 2 * c);
                    a[mt][2] = *(const uint32_t *)(pa + g * (M2_NT + 8) + k0 + 8 + 2 * c);
                    a[mt][3] = *(const uint32_t *)(pa + (g + 8) * (M2_NT + 8) + k0 + 8 + 2 * c);
                }
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    if (j >= ntile) break;
                    int n = warp * ncol + j * 8 + g;
                    uint32_t b[2];
                    b[0] = pack2(kh + (k0 + 2 * c) * LD + n, kh + (k0 + 2 * c + 1) * LD + n);
                    b[1] = pack2(kh + (k0 + 2 * c + 8) * LD + n, kh + (k0 + 2 * c + 9) * LD + n);
                    mma_16816(o[0][j], a[0], b);
                    mma_16816(o[1][j], a[1], b);
                }
            }
        }
        /* rows of tile it + 2, read after the next iteration's barriers (this buffer's last
         * readers were the loads of iteration it - 1) */
        if (FAST && tid < M2_NT) rows_s[(it & 1) * M2_NT + tid] = (int64_t)pg_next * ps32 + off_next;
    }
    __syncthreads();
#pragma unroll
    for (int mt = 0; mt < 2; mt++)
#pragma unroll
        for (int half = 0; half < 2; half++) {
            int r = mt * 16 + g + 8 * half;
            if (r >= nh) continue;
            int64_t h = h0 + r, idx = (t * H + h) * S + s;
            float inv = S == 1 ? 1.0f / l_s[r] : 1.0f;
#pragma unroll
            for (int j = 0; j < 8; j++) {
                if (j >= ntile) break;
                int col = warp * ncol + j * 8 + 2 * c;
                float v0 = o[mt][j][2 * half], v1 = o[mt][j][2 * half + 1];
                if (S == 1) {
                    *(__nv_bfloat162 *)(o_lat + (t * H + h) * (int64_t)R + col) = __floats2bfloat162_rn(v0 * inv, v1 * inv);
                } else {
                    ws_acc[idx * R + col] = v0;
                    ws_acc[idx * R + col + 1] = v1;
                }
            }
        }
    if (S > 1 && tid < nh) {
        int64_t idx = (t * H + h0 + tid) * S + s;
        ws_m[idx] = m_s[tid];
        ws_l[idx] = l_s[tid];
    }
}

extern "C" int gbc_mla_absorbed_attention(const void *q_lat, const void *q_rope, const void *pages, const int32_t *table,
                                          int64_t page_size, void *o_lat, int64_t T, int64_t L, int64_t H, int64_t R,
                                          int64_t Dr, float scale, int64_t n_splits, void *ws, size_t ws_bytes,
                                          int version) {
    if (T < 0 || L < T) return VALUE_ERROR("mla_attention: need 0 <= T <= L, got T=%ld L=%ld", (long)T, (long)L);
    if (H <= 0) return VALUE_ERROR("mla_attention: `n_heads` must be > 0, got %ld", (long)H);
    if (R <= 0 || R % 2 || R > 2 * MLA_THREADS || Dr < 0 || Dr % 2)
        return VALUE_ERROR("mla_attention: need an even kv_lora_rank <= %d and an even rope dim, got R=%ld Dr=%ld",
                           2 * MLA_THREADS, (long)R, (long)Dr);
    if (page_size <= 0) return VALUE_ERROR("mla_attention: `page_size` must be > 0, got %ld", (long)page_size);
    if (n_splits < 0 || n_splits > MLA_MAX_SPLITS)
        return VALUE_ERROR("mla_attention: `n_splits`=%ld must be in 0..%d", (long)n_splits, MLA_MAX_SPLITS);
    if (version < 0 || version > 3) return VALUE_ERROR("mla_attention: `version` must be 0..3, got %d", version);
    bool k2_ok = R % 64 == 0 && (R + Dr) % 16 == 0 && M2_NT * (R + Dr) / 8 <= M2_PRE * 256 && aligned16(pages) &&
                 aligned16(q_lat) && aligned16(q_rope) && aligned16(o_lat);
    if (version == 0) version = k2_ok ? (L <= 2147483647 - 2 * M2_NT ? 3 : 2) : 1;
    if (version == 3 && !(k2_ok && L <= 2147483647 - 2 * M2_NT))
        return VALUE_ERROR("mla_attention version 3 needs kv_lora_rank %% 64 == 0, (R + Dr) %% 16 == 0, R + Dr <= 576 "
                           "and aligned buffers, got R=%ld Dr=%ld", (long)R, (long)Dr);
    if (version == 2 && !k2_ok)
        return VALUE_ERROR("mla_attention version 2 needs kv_lora_rank %% 64 == 0, (R + Dr) %% 16 == 0, R + Dr <= 576 "
                           "and aligned buffers, got R=%ld Dr=%ld", (long)R, (long)Dr);
    GBC_INIT();
    if (T == 0) return GBC_OK;
    size_t smem = version >= 2 ? mla2_smem_bytes(R, Dr, version == 3) : mla_smem_bytes(R, Dr);
    static size_t smem_set[4] = {0, 0, 0, 0};
    if (smem > 48 * 1024 && smem > smem_set[version]) {
        if (version == 3)
            CUDA_CHECK(cudaFuncSetAttribute(mla_kernel2<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        else if (version == 2)
            CUDA_CHECK(cudaFuncSetAttribute(mla_kernel2<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        else
            CUDA_CHECK(cudaFuncSetAttribute(mla_kernel1, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        smem_set[version] = smem;
    }
    int64_t hgroups = cdiv(H, MLA_HG);
    int64_t S = n_splits ? n_splits : gbc_mla_plan(T, L, H);
    if (S > 1 && gbc_mla_workspace_bytes(T, H, R, S) > ws_bytes)
        return VALUE_ERROR("mla_attention: workspace of %zu bytes is too small, %zu needed", ws_bytes,
                           gbc_mla_workspace_bytes(T, H, R, S));
    if (T > 65535) return VALUE_ERROR("mla_attention: T=%ld > 65535", (long)T);
    int64_t rows = T * H, chunk = cdiv(L, S);
    float *wsf = (float *)ws;
    dim3 grid((unsigned)S, (unsigned)T, (unsigned)hgroups);
    if (version >= 2) {
        (version == 3 ? mla_kernel2<true> : mla_kernel2<false>)<<<grid, 256, smem, gbc_stream>>>(
            (const bf16 *)q_lat, (const bf16 *)q_rope, (const bf16 *)pages, table, page_size, (bf16 *)o_lat, wsf,
            wsf ? wsf + rows * S : nullptr, wsf ? wsf + 2 * rows * S : nullptr, T, L, (int)H, (int)R, (int)Dr, scale,
            (int)S, chunk);
        LAUNCH_CHECK("mla_kernel2");
        if (S > 1) return gbc_attention_combine(wsf, (bf16 *)o_lat, rows, (int)S, (int)R);
        return GBC_OK;
    }
    mla_kernel1<<<grid, MLA_THREADS, smem, gbc_stream>>>(
        (const bf16 *)q_lat, (const bf16 *)q_rope, (const bf16 *)pages, table, page_size, (bf16 *)o_lat, wsf,
        wsf ? wsf + rows * S : nullptr, wsf ? wsf + 2 * rows * S : nullptr, T, L, (int)H, (int)R, (int)Dr, scale, (int)S,
        chunk);
    LAUNCH_CHECK("mla_kernel1");
    if (S > 1) return gbc_attention_combine(wsf, (bf16 *)o_lat, rows, (int)S, (int)R);
    return GBC_OK;
}

__global__ void mla_absorb_q_kernel1(const bf16 *__restrict__ q_nope, const bf16 *__restrict__ kv_b, bf16 *__restrict__ q_lat,
                                     int H, int Dn, int Dv, int R) {
    extern __shared__ float qn[]; /* [Dn] */
    int h = blockIdx.x;
    int64_t t = blockIdx.y;
    const bf16 *qr = q_nope + (t * H + h) * (int64_t)Dn;
    for (int n = threadIdx.x; n < Dn; n += blockDim.x) qn[n] = bf2f(qr[n]);
    __syncthreads();
    const bf16 *wk = kv_b + (int64_t)h * (Dn + Dv) * R;
    for (int r = threadIdx.x; r < R; r += blockDim.x) {
        float s = 0.0f;
        for (int n = 0; n < Dn; n++) s += qn[n] * bf2f(wk[(int64_t)n * R + r]);
        q_lat[(t * H + h) * (int64_t)R + r] = f2bf(s);
    }
}

__global__ void mla_absorb_o_kernel1(const bf16 *__restrict__ o_lat, const bf16 *__restrict__ kv_b, bf16 *__restrict__ out,
                                     int H, int Dn, int Dv, int R) {
    int lane = threadIdx.x & 31;
    int v = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int h = blockIdx.y;
    int64_t t = blockIdx.z;
    if (v >= Dv) return;
    const bf16 *orow = o_lat + (t * H + h) * (int64_t)R;
    const bf16 *wrow = kv_b + ((int64_t)h * (Dn + Dv) + Dn + v) * R;
    float s = 0.0f;
    for (int r = lane; r < R; r += 32) s += bf2f(orow[r]) * bf2f(wrow[r]);
    s = warp_sum(s);
    if (lane == 0) out[(t * H + h) * (int64_t)Dv + v] = f2bf(s);
}

static int check_mla_dims(const char *what, int64_t T, int64_t H, int64_t Dn, int64_t Dv, int64_t R) {
    if (T < 0 || T > 65535 || H <= 0 || H > 65535 || Dn <= 0 || Dv <= 0 || R <= 0)
        return VALUE_ERROR("%s: bad sizes T=%ld H=%ld Dn=%ld Dv=%ld R=%ld", what, (long)T, (long)H, (long)Dn, (long)Dv, (long)R);
    return GBC_OK;
}

/* Version 2 (decode, T <= 8): a block per (head, 64 latent columns, token), 160 blocks for GLM's 20
 * heads at T = 1 instead of version 1's 20; each of its 8 warps sums an eighth of the Dn rows, a
 * lane two adjacent columns (4-byte loads: 128 contiguous bytes per warp and row), and the 8
 * partial sums meet in shared memory. Version 1 took 53 us per layer of a GLM decode step on the
 * H200 (one block per head, a thread per column over all Dn rows). */
__global__ void __launch_bounds__(256) mla_absorb_q_kernel2(const bf16 *__restrict__ q_nope, const bf16 *__restrict__ kv_b,
                                                            bf16 *__restrict__ q_lat, int H, int Dn, int Dv, int R) {
    __shared__ float part[8][64];
    const int h = blockIdx.x, c0 = blockIdx.y * 64, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int64_t t = blockIdx.z;
    const bf16 *qr = q_nope + (t * H + h) * (int64_t)Dn;
    const bf16 *wk = kv_b + (int64_t)h * (Dn + Dv) * R + c0 + 2 * lane;
    const int per = (Dn + 7) / 8, n0 = warp * per, n1 = min(Dn, n0 + per);
    float a0 = 0.0f, a1 = 0.0f;
#pragma unroll 4
    for (int n = n0; n < n1; n++) {
        float qv = bf2f(qr[n]);
        __nv_bfloat162 wv = *(const __nv_bfloat162 *)(wk + (int64_t)n * R);
        a0 += qv * __low2float(wv);
        a1 += qv * __high2float(wv);
    }
    part[warp][2 * lane] = a0;
    part[warp][2 * lane + 1] = a1;
    __syncthreads();
    if (threadIdx.x < 64) {
        float s = 0.0f;
#pragma unroll
        for (int w = 0; w < 8; w++) s += part[w][threadIdx.x];
        q_lat[(t * H + h) * (int64_t)R + c0 + threadIdx.x] = f2bf(s);
    }
}

extern "C" int gbc_mla_absorb_q(const void *q_nope, const void *kv_b, void *q_lat, int64_t T, int64_t H, int64_t Dn,
                                int64_t Dv, int64_t R, int version) {
    int st = check_mla_dims("mla_absorb_q", T, H, Dn, Dv, R);
    if (st) return st;
    if (Dn > 4096) return VALUE_ERROR("mla_absorb_q: Dn=%ld > 4096", (long)Dn);
    if (version < 0 || version > 2) return VALUE_ERROR("mla_absorb_q: `version` must be 0..2, got %d", version);
    bool k2_ok = R % 64 == 0; /* T, H <= 65535: check_mla_dims */
    if (version == 0) version = T <= 8 && k2_ok ? 2 : 1;
    if (version == 2 && !k2_ok)
        return VALUE_ERROR("mla_absorb_q version 2 needs kv_lora_rank %% 64 == 0, got R=%ld", (long)R);
    GBC_INIT();
    if (T == 0) return GBC_OK;
    if (version == 2) {
        mla_absorb_q_kernel2<<<dim3((unsigned)H, (unsigned)(R / 64), (unsigned)T), 256, 0, gbc_stream>>>(
            (const bf16 *)q_nope, (const bf16 *)kv_b, (bf16 *)q_lat, (int)H, (int)Dn, (int)Dv, (int)R);
        LAUNCH_CHECK("mla_absorb_q_kernel2");
        return GBC_OK;
    }
    mla_absorb_q_kernel1<<<dim3((unsigned)H, (unsigned)T), 256, Dn * sizeof(float), gbc_stream>>>(
        (const bf16 *)q_nope, (const bf16 *)kv_b, (bf16 *)q_lat, (int)H, (int)Dn, (int)Dv, (int)R);
    LAUNCH_CHECK("mla_absorb_q_kernel1");
    return GBC_OK;
}

extern "C" int gbc_mla_absorb_o(const void *o_lat, const void *kv_b, void *out, int64_t T, int64_t H, int64_t Dn,
                                int64_t Dv, int64_t R) {
    int st = check_mla_dims("mla_absorb_o", T, H, Dn, Dv, R);
    if (st) return st;
    GBC_INIT();
    if (T == 0) return GBC_OK;
    mla_absorb_o_kernel1<<<dim3((unsigned)cdiv(Dv, 8), (unsigned)H, (unsigned)T), 256, 0, gbc_stream>>>(
        (const bf16 *)o_lat, (const bf16 *)kv_b, (bf16 *)out, (int)H, (int)Dn, (int)Dv, (int)R);
    LAUNCH_CHECK("mla_absorb_o_kernel1");
    return GBC_OK;
}

__global__ void mla_split_kv_kernel1(const bf16 *__restrict__ kvx, const bf16 *__restrict__ rope, bf16 *__restrict__ k,
                                     bf16 *__restrict__ v, int64_t L, int H, int Dn, int Dr, int Dv) {
    int64_t per = (int64_t)H * (Dn + Dr + Dv);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < L * per; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t l = i / per, r = i % per;
        int h = (int)(r / (Dn + Dr + Dv)), c = (int)(r % (Dn + Dr + Dv));
        const bf16 *src = kvx + (l * H + h) * (int64_t)(Dn + Dv);
        if (c < Dn) k[(l * H + h) * (int64_t)(Dn + Dr) + c] = src[c];
        else if (c < Dn + Dr) k[(l * H + h) * (int64_t)(Dn + Dr) + c] = rope[l * Dr + (c - Dn)];
        else v[(l * H + h) * (int64_t)Dv + (c - Dn - Dr)] = src[Dn + (c - Dn - Dr)];
    }
}

extern "C" int gbc_mla_split_kv(const void *kv, const void *rope, void *k, void *v, int64_t L, int64_t H, int64_t Dn,
                                int64_t Dr, int64_t Dv) {
    if (L < 0 || H <= 0 || Dn <= 0 || Dr < 0 || Dv <= 0)
        return VALUE_ERROR("mla_split_kv: bad sizes L=%ld H=%ld Dn=%ld Dr=%ld Dv=%ld", (long)L, (long)H, (long)Dn, (long)Dr, (long)Dv);
    GBC_INIT();
    if (L == 0) return GBC_OK;
    int64_t n = L * H * (Dn + Dr + Dv), b = cdiv(n, 256);
    mla_split_kv_kernel1<<<(unsigned)(b < 65536 ? b : 65536), 256, 0, gbc_stream>>>(
        (const bf16 *)kv, (const bf16 *)rope, (bf16 *)k, (bf16 *)v, L, (int)H, (int)Dn, (int)Dr, (int)Dv);
    LAUNCH_CHECK("mla_split_kv_kernel1");
    return GBC_OK;
}

__global__ void concat_heads_kernel1(const bf16 *__restrict__ a, const bf16 *__restrict__ b, bf16 *__restrict__ y,
                                     int64_t rows, int Da, int Db) {
    int64_t per = Da + Db;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows * per; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i / per;
        int c = (int)(i % per);
        y[i] = c < Da ? a[r * Da + c] : b[r * Db + (c - Da)];
    }
}

extern "C" int gbc_concat_heads(const void *a, const void *b, void *y, int64_t rows, int64_t Da, int64_t Db) {
    if (rows < 0 || Da <= 0 || Db < 0) return VALUE_ERROR("concat_heads: bad sizes rows=%ld Da=%ld Db=%ld", (long)rows, (long)Da, (long)Db);
    GBC_INIT();
    if (rows == 0) return GBC_OK;
    int64_t n = rows * (Da + Db), bl = cdiv(n, 256);
    concat_heads_kernel1<<<(unsigned)(bl < 65536 ? bl : 65536), 256, 0, gbc_stream>>>((const bf16 *)a, (const bf16 *)b,
                                                                                      (bf16 *)y, rows, (int)Da, (int)Db);
    LAUNCH_CHECK("concat_heads_kernel1");
    return GBC_OK;
}

__device__ __forceinline__ void rope_pair_idx(int i, int rot_dim, int layout, int *a, int *b) {
    *a = layout == 0 ? 2 * i : i;
    *b = layout == 0 ? 2 * i + 1 : i + rot_dim / 2;
}

__device__ __forceinline__ void rope_apply(float x0, float x1, int64_t pos, int i, int rot_dim, double log2_theta,
                                           float *y0, float *y1) {
    double freq = exp2(-2.0 * (double)i / (double)rot_dim * log2_theta), sn, cs;
    sincos((double)pos * freq, &sn, &cs);
    *y0 = (float)((double)x0 * cs - (double)x1 * sn);
    *y1 = (float)((double)x1 * cs + (double)x0 * sn);
}

__global__ void mla_prepare_kernel1(const bf16 *__restrict__ q, const bf16 *__restrict__ c, const bf16 *__restrict__ w,
                                    float eps, const int64_t *__restrict__ pos, double log2_theta, int layout,
                                    bf16 *__restrict__ pages, const int32_t *__restrict__ table, int64_t page_size,
                                    int64_t start, bf16 *__restrict__ q_nope, bf16 *__restrict__ q_rope, int H, int Dn,
                                    int Dr, int R) {
    const int64_t t = blockIdx.y;
    const int tid = threadIdx.x;
    if ((int)blockIdx.x < H) { /* one block per head: q_nope copy and q_rope */
        const int h = blockIdx.x;
        const bf16 *qr = q + (t * H + h) * (int64_t)(Dn + Dr);
        for (int i = tid; i < Dn; i += blockDim.x) q_nope[(t * H + h) * (int64_t)Dn + i] = qr[i];
        bf16 *out = q_rope + (t * H + h) * (int64_t)Dr;
        for (int i = tid; i < Dr / 2; i += blockDim.x) {
            int a, b;
            float y0, y1;
            rope_pair_idx(i, Dr, layout, &a, &b);
            rope_apply(bf2f(qr[Dn + a]), bf2f(qr[Dn + b]), pos[t], i, Dr, log2_theta, &y0, &y1);
            out[a] = f2bf(y0);
            out[b] = f2bf(y1);
        }
        return;
    }
    /* the cache row of token start + t: RMSNorm'd latent, then the roped key */
    const bf16 *cr = c + t * (int64_t)(R + Dr);
    int64_t tok = start + t;
    bf16 *row = pages + ((int64_t)table[tok / page_size] * page_size + tok % page_size) * (int64_t)(R + Dr);
    float ss = 0.0f;
    for (int i = tid; i < R; i += blockDim.x) {
        float v = bf2f(cr[i]);
        ss += v * v;
    }
    float inv = rsqrtf(block_sum(ss) / (float)R + eps);
    for (int i = tid; i < R; i += blockDim.x) row[i] = f2bf(bf2f(cr[i]) * inv * bf2f(w[i]));
    for (int i = tid; i < Dr / 2; i += blockDim.x) {
        int a, b;
        float y0, y1;
        rope_pair_idx(i, Dr, layout, &a, &b);
        rope_apply(bf2f(cr[R + a]), bf2f(cr[R + b]), pos[t], i, Dr, log2_theta, &y0, &y1);
        row[R + a] = f2bf(y0);
        row[R + b] = f2bf(y1);
    }
}

extern "C" int gbc_mla_prepare(const void *q, const void *c, const void *kv_norm_w, float eps, const int64_t *pos,
                               double theta, int layout, void *pages, const int32_t *table, int64_t page_size,
                               int64_t start, void *q_nope, void *q_rope, int64_t T, int64_t H, int64_t Dn, int64_t Dr,
                               int64_t R) {
    if (T < 0 || T > 65535 || H <= 0 || H > 65534 || Dn <= 0 || Dr <= 0 || Dr % 2 || R <= 0)
        return VALUE_ERROR("mla_prepare: bad sizes T=%ld H=%ld Dn=%ld Dr=%ld R=%ld", (long)T, (long)H, (long)Dn, (long)Dr,
                           (long)R);
    if (!(theta > 1.0)) return VALUE_ERROR("mla_prepare: `theta` must be > 1, got %g", theta);
    if (layout != 0 && layout != 1) return VALUE_ERROR("mla_prepare: `layout` must be 0 or 1, got %d", layout);
    if (page_size <= 0 || start < 0) return VALUE_ERROR("mla_prepare: bad page_size=%ld start=%ld", (long)page_size, (long)start);
    GBC_INIT();
    if (T == 0) return GBC_OK;
    mla_prepare_kernel1<<<dim3((unsigned)(H + 1), (unsigned)T), 128, 0, gbc_stream>>>(
        (const bf16 *)q, (const bf16 *)c, (const bf16 *)kv_norm_w, eps, pos, log2(theta), layout, (bf16 *)pages, table,
        page_size, start, (bf16 *)q_nope, (bf16 *)q_rope, (int)H, (int)Dn, (int)Dr, (int)R);
    LAUNCH_CHECK("mla_prepare_kernel1");
    return GBC_OK;
}
