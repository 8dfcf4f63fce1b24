/* linear.h: y = x W^T (+ b) with W in HF layout [N, K], and the SwiGLU feed-forward built on it.
 *
 * Kernels (one dispatcher, gb_linear):
 *   f32 weights          OpenBLAS: sgemv for T == 1, sgemm otherwise.
 *   f16/bf16, T <= 64    gemv16: hand-written, one pass over W converting 16 weights at a time
 *                        to float32 in registers and FMA-ing them against every token's x in
 *                        4-row x 4-token register tiles (the weights are read from memory once
 *                        whatever T is, so decode is bandwidth-bound); OpenMP over blocks of
 *                        output rows; AVX-512 path plus a portable path.
 *   f16/bf16, T > 64     hgemm.c: weights packed per 64-row tile as stored, bf16 through
 *                        vdpbf16ps (activations rounded to bf16) where the CPU reports
 *                        avx512_bf16, else float32 FMA on the widened panel (f16 always);
 *                        without AVX-512 (or gb_linear_set_hgemm(GB_HG_SGEMM)): panel: convert
 *                        a panel of weight rows (up to 24 MiB of float32) to float32 scratch,
 *                        then OpenBLAS sgemm on it.
 * All accumulate in float32. Weight formats are GB_F32/GB_F16/GB_BF16 from common.h. */
#ifndef GLMBENCH_LINEAR_H
#define GLMBENCH_LINEAR_H
#include <stdint.h>

/* Token count up to which 16-bit weights use the gemv16 kernel instead of panel + sgemm.
 * Measured on Zen 4 (1 thread, CPU time, bf16, 1536x2048 / 2048x1536 / 1024x5120): the register
 * tiles run at 55-90 GFLOP/s for T = 8..64 where panel + sgemm manages 17-76 (the conversion is
 * not amortised over so few tokens: 17-33 at T = 8, 46-64 at T = 32); at T = 512 sgemm reaches
 * ~95. This is also the MoE prefill regime: 512 tokens x top-4 over 64 experts is ~32 tokens per
 * expert. */
#define GB_GEMV_MAX_T 64
/* The same limit where hgemm.c runs a SIMD kernel (gb_hgemm_pick: bf16dot or f32fma): measured on
 * Zen 5 (1 thread, CPU time, bf16, weights warm, 768x2048 / 1536x2048 / 2048x1536), hgemm over the
 * register tiles: T = 8 1.2-1.8x, T = 16 1.8-2.6x, T = 32-64 2.1-3.5x; SwiGLU 2048->10240 at
 * T = 16-64 2.2-2.8x, and GLM-4.7-Flash's 64 experts at T = 512 (~32 tokens each) 2.2x; with the
 * weights cold (3x the L3 in copies) T = 9 1.04-1.34x, T = 12 1.13-1.59x. */
#define GB_GEMV_MAX_T_HGEMM 8

/* y[T, N] = x[T, K] . w[N, K]^T + bias[N] (bias may be NULL). All contiguous. */
int gb_linear(const float *x, int64_t T, int64_t K, const void *w, int wfmt, int64_t N, const float *bias,
              float *y);

/* y[T, D] = down(silu(gate x) * up x) with w_gate, w_up [F, D] and w_down [D, F]. When gate and
 * up share a format and T is 1 (any format) or <= GB_GEMV_MAX_T (16-bit), gate, up and silu run
 * as one fused pass (one parallel region; each gate/up row pair is one register tile). Needs
 * T*F*4 bytes of scratch (tokens are chunked to bound it). */
int gb_swiglu(const float *x, int64_t T, int64_t D, const void *w_gate, int fmt_gate, const void *w_up, int fmt_up,
              const void *w_down, int fmt_down, int64_t F, float *y);

/* g[i] = gelu_tanh(g[i]) * u[i] for i < n, float32 (PyTorch's gelu approximate="tanh":
 * 0.5 g (1 + tanh(sqrt(2/pi) g (1 + 0.044715 g^2)))). ops.geglu and layer.c both use it, so the
 * Python and the one-call layer give the same bits. */
void gb_geglu_act(float *g, const float *u, int64_t n);
/* g[i] = silu(g[i]) * u[i] in place (the SwiGLU activation of gb_swiglu: vectorised where AVX-512 is
 * compiled in), OpenMP over 16 Ki-float chunks; for callers whose matmuls run elsewhere (quantized weights). */
void gb_silu_act(float *g, const float *u, int64_t n);
/* the same on the calling thread alone (no OpenMP): for kernels that run it inside their own regions
 * (the routed experts of csrc/moe_k.c and csrc/qgemm.c) */
void gb_silu_mul(float *g, const float *u, int64_t n);

/* y[T, D] = down(gelu_tanh(gate x) * up x) (Gemma's MLP): three gb_linear calls around
 * gb_geglu_act, the same steps as ops.geglu. */
int gb_geglu(const float *x, int64_t T, int64_t D, const void *w_gate, int fmt_gate, const void *w_up, int fmt_up,
             const void *w_down, int fmt_down, int64_t F, float *y);

/* Building blocks for fused callers (moe.c), to run inside the caller's own parallel loop:
 * rows [r0, r1) of the gemv16 kernel, y[t * ldy + (r - r0)] = w[r, :] . x[t, :], T <= 64 tokens
 * in register tiles (any weight format, f32 included); and the fused gate/up/silu rows of
 * SwiGLU, h[t * F + f] for f in [f0, f1). Work items of GB_ROW_BLOCK rows are the usual split. */
#define GB_ROW_BLOCK 16
void gb_gemv_rows(const float *x, int64_t T, int64_t K, const void *w, int fmt, int64_t r0, int64_t r1, float *y,
                  int64_t ldy);
/* Rows [r0, r1) of one token's GEMV (decode), y[r - r0] = w[r, :] . x, read as the decode GEMV
 * reads them: the range in two halves side by side, two sequential streams (bf16: the pair kernels). */
void gb_gemv1_rows(const float *x, int64_t K, const void *w, int fmt, int64_t r0, int64_t r1, float *y);
void gb_gate_up_rows(const float *x, int64_t T, int64_t D, const void *wg, const void *wu, int fmt, int64_t F,
                     int64_t f0, int64_t f1, float *h);
/* The current token limit of gemv16: GB_GEMV_MAX_T_HGEMM where gb_linear runs a SIMD hgemm kernel
 * for bf16, else GB_GEMV_MAX_T (the sgemm path, or the portable kernels), unless a test set it. */
int64_t gb_linear_gemv_max_t(void);

/* Process-wide switches for tests and benchmarks (plain globals: set them while no op runs).
 * 1: use the portable C kernels even where AVX-512 was compiled in (tests check both paths). */
void gb_linear_set_portable(int on);
/* 0: bf16 decode (T = 1) reads weights with the widening loads instead of the pair kernels (A/B
 * benchmarks and tests; 1, the default, restores them). */
void gb_linear_set_pairs(int on);
/* Largest T that uses gemv16 for 16-bit weights (benchmarks and tests; < 1 restores the default,
 * which follows the prefill kernel: see gb_linear_gemv_max_t). */
void gb_linear_set_gemv_max_t(int64_t t);
/* The prefill kernel (T > gemv_max_t) for 16-bit weights: a GB_HG_* version of hgemm.h (GB_HG_AUTO,
 * the default: the fastest this CPU runs; a version the CPU cannot run for a format falls back to
 * auto for it). gb_linear_hgemm: the version gb_linear runs now for weights in fmt (GB_HG_REF while
 * the portable switch is on). */
void gb_linear_set_hgemm(int version);
int gb_linear_hgemm(int fmt);
/* 1 if the AVX-512 kernels were compiled in. */
int gb_linear_has_avx512(void);
/* the SIMD version the 16-bit and f32 GEMV kernels run: "avx512", "avx2" or "portable" */
const char *gb_linear_simd(void);

/* Bytes per weight element of a format (4 or 2); 0 for formats linear does not take. */
int gb_weight_elem_bytes(int fmt);

#endif
