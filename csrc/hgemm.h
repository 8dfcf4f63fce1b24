/* hgemm.h: prefill GEMM on 16-bit weights as stored (bf16, f16), y[T, N] = x[T, K] . W[N, K]^T,
 * with the CPU's own dot products where it has them, the kernel picked at run time from what the
 * CPU reports (cpuid through __builtin_cpu_supports), whatever -march the core was built with.
 *
 * Versions (gb_hgemm's `version`):
 *   GB_HG_REF      portable C, any CPU: bf16 weights with the activations rounded to bf16 (the
 *                  arithmetic of GB_HG_BF16DOT), f16 weights with float32 activations (that of
 *                  GB_HG_F32FMA); float32 sums.
 *   GB_HG_F32FMA   AVX-512F (+F16C): each 64-row tile's weights widened exactly to float32 into
 *                  packed panels (16 rows per zmm, k-major), a 4 x 16-row by 6-token register tile
 *                  of float32 FMAs; activations float32 as given. bf16 and f16. Where AVX-512
 *                  is not reported, the AVX2 + FMA + F16C version (hgemm_avx2): 8 rows per ymm,
 *                  a 2 x 8-row by 6-token register tile, K blocks of 256 columns.
 *   GB_HG_BF16DOT  AVX512_BF16, bf16 weights only: activations rounded to bf16 once per call
 *                  (round to nearest even, as ggml's CPU backend does for a bf16 weight's
 *                  vec_dot_type), weights packed as (k, k+1) pairs per 32-bit lane, `vdpbf16ps`
 *                  (two bf16 products, exact in float32, added into a float32 accumulator; the
 *                  instruction treats bf16 denormals as zero) in the same 4 x 16-row by 6-token tile.
 *   GB_HG_SGEMM    (gb_linear only) the previous path: panels widened to float32, then OpenBLAS sgemm.
 *   GB_HG_AUTO     the fastest this CPU runs: BF16DOT for bf16 where avx512_bf16 is reported,
 *                  F32FMA where avx512f (and f16c) is, or avx2 + fma + f16c, else SGEMM (OpenBLAS's
 *                  own kernels for the CPU it finds); gb_hgemm_pick says which.
 *
 * Blocking: OpenMP over work items of one 64-row tile x a chunk of tokens (dynamic schedule); an
 * item packs its tile's weights once (all of K), then for each K block (256 bf16 pairs = 32 KiB of
 * packed bf16, or 128 float32 columns = 32 KiB: L1) runs every 6-token tile of its chunk, the
 * outputs accumulated in y across K blocks. The AVX2 version packs each K block (256 float32
 * columns, 64 KiB for the tile: L2) right before its first use instead of all of K at once. */
#ifndef GLMBENCH_HGEMM_H
#define GLMBENCH_HGEMM_H
#include <stdint.h>

enum { GB_HG_AUTO = 0, GB_HG_REF = 1, GB_HG_F32FMA = 2, GB_HG_BF16DOT = 3, GB_HG_SGEMM = 4, GB_HG_COUNT = 5 };

/* 1 if `version` can run for weights in fmt (GB_F16/GB_BF16) on this CPU (GB_HG_SGEMM: always). */
int gb_hgemm_available(int version, int fmt);
/* "auto", "ref", "f32fma", "bf16dot", "sgemm"; "?" out of range. */
const char *gb_hgemm_name(int version);
/* The version GB_HG_AUTO resolves to for weights in fmt on this CPU. */
int gb_hgemm_pick(int fmt);
/* What the CPU reports: bit 0 avx512f (+bw, vl, dq), bit 1 avx512_bf16, bit 2 f16c, bit 3 fma, bit 4 avx2. */
int gb_hgemm_cpu_features(void);

/* y[T, N] = x[T, K] . w[N, K]^T, all contiguous, w bf16 bits or f16 (fmt GB_BF16 / GB_F16);
 * version GB_HG_REF, GB_HG_F32FMA, GB_HG_BF16DOT or GB_HG_AUTO (which never resolves to SGEMM
 * here: it falls back to GB_HG_REF). Inputs are not written. */
int gb_hgemm(const float *x, int64_t T, int64_t K, const void *w, int fmt, int64_t N, float *y, int version);

/* The bf16 dot-product ceiling: every OpenMP thread runs `iters` iterations of 16 independent
 * `vdpbf16ps` chains on registers; best of `reps`; *gflops counts 64 FLOPs per instruction
 * (16 lanes x 2 products x multiply + add). GB_EVALUE where the CPU lacks avx512_bf16. */
int gb_bench_bf16dot(int64_t iters, int reps, double *gflops);

#endif
