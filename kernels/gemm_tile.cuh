/* gemm_tile.cuh: the tensor-core (WMMA bf16 -> fp32) tile shared by linear.cu (dense) and
 * moe.cu (grouped by expert). One block of 4 warps computes a 64 x 64 tile of
 * C[m, n] = sum_k A[m, k] * B[n, k] (both row-major, K contiguous: HF `weight[out, in]`), rows of A
 * and of C beyond `m_valid` and columns beyond N are masked (zero-filled loads, no stores). */
#pragma once
#include <mma.h>

#include "common.cuh"

#define GT_BM 64
#define GT_BN 64
#define GT_BK 32
#define GT_LD (GT_BK + 8) /* +8 bf16 = 16 bytes of padding against bank conflicts */

/* WMMA loads and stores need 32-byte aligned tile pointers: every fragment below starts at a
 * multiple of 16 rows (1280 bytes) and 16 columns (32 bytes) from this base. */
struct __align__(128) GemmTileSmem {
    bf16 a[GT_BM][GT_LD];
    bf16 b[GT_BN][GT_LD];
    float c[GT_BM][GT_BN + 4];
};

/* a: first row of this tile's A (stride lda); b: row n0 of B (stride ldb = K).
 * Writes c = A.B^T (fp32) into smem.c; the caller stores it. */
__device__ __forceinline__ void gemm_tile_64x64(const bf16 *__restrict__ a, int64_t lda, int m_valid,
                                                const bf16 *__restrict__ b, int64_t ldb, int n_valid, int64_t K,
                                                GemmTileSmem &sm) {
    using namespace nvcuda;
    int warp = threadIdx.x >> 5;
    int wm = (warp >> 1) * 32, wn = (warp & 1) * 32;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.0f);
    bool vec = (K % 8 == 0) && (lda % 8 == 0) && aligned16(a) && aligned16(b);
    for (int64_t k0 = 0; k0 < K; k0 += GT_BK) {
        /* 64 rows x 32 cols = 256 chunks of 8 per operand; 128 threads do 2 each */
        for (int c = threadIdx.x; c < GT_BM * GT_BK / 8; c += blockDim.x) {
            int r = c / (GT_BK / 8), kc = (c % (GT_BK / 8)) * 8;
            int64_t kk = k0 + kc;
            if (vec && kk + 8 <= K) {
                bf16x8 za = {}, zb = {};
                if (r < m_valid) za = *(const bf16x8 *)(a + r * lda + kk);
                if (r < n_valid) zb = *(const bf16x8 *)(b + r * ldb + kk);
                *(bf16x8 *)&sm.a[r][kc] = za;
                *(bf16x8 *)&sm.b[r][kc] = zb;
            } else {
                for (int e = 0; e < 8; e++) {
                    bool in_k = kk + e < K;
                    sm.a[r][kc + e] = (r < m_valid && in_k) ? a[r * lda + kk + e] : f2bf(0.0f);
                    sm.b[r][kc + e] = (r < n_valid && in_k) ? b[r * ldb + kk + e] : f2bf(0.0f);
                }
            }
        }
        __syncthreads();
#pragma unroll
        for (int ks = 0; ks < GT_BK; ks += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> fa[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> fb[2];
#pragma unroll
            for (int i = 0; i < 2; i++) wmma::load_matrix_sync(fa[i], &sm.a[wm + 16 * i][ks], GT_LD);
#pragma unroll
            for (int j = 0; j < 2; j++) wmma::load_matrix_sync(fb[j], &sm.b[wn + 16 * j][ks], GT_LD);
#pragma unroll
            for (int i = 0; i < 2; i++)
#pragma unroll
                for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++)
            wmma::store_matrix_sync(&sm.c[wm + 16 * i][wn + 16 * j], acc[i][j], GT_BN + 4, wmma::mem_row_major);
    __syncthreads();
}
