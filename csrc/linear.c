/* linear.c: GEMV/GEMM over f32/f16/bf16 weights and the SwiGLU feed-forward (see linear.h).
 *
 * Kernel versions behind gb_linear:
 *   1 blas     f32 weights: OpenBLAS sgemv/sgemm
 *   2 gemv16   16-bit (and f32, for fused SwiGLU) weights, T <= gb_linear_gemv_max_t() (GB_GEMV_MAX_T_HGEMM,
 *              8, where a SIMD hgemm kernel runs; else GB_GEMV_MAX_T, 64): tile4 (a register
 *              tile of 4 rows x up to 4 tokens), AVX-512 or portable
 *   3 hgemm    16-bit weights, T > gb_linear_gemv_max_t(): hgemm.c's packed-panel GEMM, the kernel picked by
 *              what the CPU reports (bf16: vdpbf16ps with bf16-rounded activations; f16, or bf16
 *              without avx512_bf16: float32 FMA on weights widened in the panel, AVX-512 or AVX2);
 *              where the CPU has neither, or when gb_linear_set_hgemm(GB_HG_SGEMM) asks for it, version 4
 *   4 panel    rows converted to float32 in panels, then sgemm
 */
#include "linear.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "hgemm.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#include <immintrin.h>
#define GB_HAVE_AVX512 1
#else
#define GB_HAVE_AVX512 0
#endif
/* CPUs with AVX2 + FMA + F16C but no AVX-512 (Zen 2/3, Intel client cores): 8-lane versions of the
 * decode GEMV, the small-batch tiles, the weight conversion for the prefill panels and SwiGLU's
 * activation. Measured on a Zen 3 (2026-12-02, bench/results/linear_avx2_2026-12-02.md). */
#if !GB_HAVE_AVX512 && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define GB_HAVE_AVX2L 1
#else
#define GB_HAVE_AVX2L 0
#endif

#define ALWAYS_INLINE static inline __attribute__((always_inline))

#if GB_HAVE_AVX2L
/* silu(g) * u as silu_mul_avx512 computes it, on 8 lanes */
ALWAYS_INLINE __m256 silu_mul_avx2(__m256 g, __m256 u) {
    const __m256 ag = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), g);
    const __m256 e = gb_exp256(_mm256_sub_ps(_mm256_setzero_ps(), ag));
    const __m256 den = _mm256_add_ps(_mm256_set1_ps(1.0f), e);
    const __m256 gu = _mm256_mul_ps(g, u);
    const __m256 neg = _mm256_cmp_ps(g, _mm256_setzero_ps(), _CMP_LT_OQ);
    return _mm256_div_ps(_mm256_blendv_ps(gu, _mm256_mul_ps(gu, e), neg), den);
}
#endif

/* Rows per OpenMP work item in the GEMV kernels (GB_ROW_BLOCK in linear.h): 16 rows of 2048 bf16 weights are 64 KiB, large
 * enough that the hardware prefetcher streams, small enough for even splits of 1536-row experts. */
#define GEMV_ROW_BLOCK GB_ROW_BLOCK
/* Float32 bytes per conversion panel in version 3: fits beside sgemm's own packing in the 32 MiB
 * L3, so sgemm reads the panel from cache rather than DRAM. */
#define PANEL_BYTES (24 << 20)
/* Rows up to this long get the next tile software-prefetched in gemv16 (tile4_avx512's pf): measured
 * at T = 1 (2 threads, bf16 from DRAM) 19.6 -> 33-38 GB/s at K = 512 and 768, 27 -> 33-37 at K = 2048,
 * and ~5% slower at K = 5120, where the hardware prefetcher already streams each row. */
#define PF_MAX_K 2048
/* Below this many weights a parallel region costs more than it saves. */
#define PAR_MIN_WEIGHTS (1 << 16)
/* dot2x2_avx512 prefetches each row DOT2_PF bytes ahead into L2 when rows are at least
 * DOT2_PF_MIN_K long. A/B in one process, cold bf16 GEMVs, three runs, prefetch over none:
 * 2048x5120 1.14-1.20x, 8192x5120 1.05-1.27x, 25600x5120 1.07-1.30x, 5120x25600 1.10-1.38x;
 * rows of 2048 0.97-1.06x (no gain: left without). */
#define DOT2_PF 4096
#define DOT2_PF_MIN_K 4096
/* Rows per dynamically scheduled chunk of the decode GEMV (gemv16, T = 1). */
#define GEMV1_CHUNK 128

static int use_portable = 0;
static int use_pairs = 1; /* bf16 pair kernels for T = 1 (gb_linear_set_pairs) */
static int64_t gemv_max_t = 0; /* 0: the default for the prefill kernel in use (gb_linear_gemv_max_t) */
static int hgemm_version = GB_HG_AUTO; /* prefill kernel for 16-bit weights (gb_linear_set_hgemm) */

void gb_linear_set_hgemm(int version) { hgemm_version = version >= 0 && version < GB_HG_COUNT ? version : GB_HG_AUTO; }

int gb_linear_hgemm(int fmt) {
    if (use_portable) return GB_HG_REF;
    const int v = hgemm_version;
    return v == GB_HG_AUTO || !gb_hgemm_available(v, fmt) ? gb_hgemm_pick(fmt) : v;
}

void gb_linear_set_gemv_max_t(int64_t t) { gemv_max_t = t < 1 ? 0 : t; }
int64_t gb_linear_gemv_max_t(void) {
    if (gemv_max_t) return gemv_max_t;
    const int v = gb_linear_hgemm(GB_BF16);
    return v == GB_HG_SGEMM || v == GB_HG_REF ? GB_GEMV_MAX_T : GB_GEMV_MAX_T_HGEMM;
}

void gb_linear_set_portable(int on) { use_portable = on ? 1 : 0; }
void gb_linear_set_pairs(int on) { use_pairs = on ? 1 : 0; }
int gb_linear_has_avx512(void) { return GB_HAVE_AVX512; }
const char *gb_linear_simd(void) { return GB_HAVE_AVX512 ? "avx512" : GB_HAVE_AVX2L ? "avx2" : "portable"; }

int gb_weight_elem_bytes(int fmt) {
    if (fmt == GB_F32) return 4;
    if (fmt == GB_F16 || fmt == GB_BF16) return 2;
    return 0;
}

/* element i of a weight buffer as float32 (f16 through F16C's vcvtph2ps where compiled: the same
 * value as gb_f16_to_f32, without the call) */
static inline float w_scalar(const void *w, int fmt, int64_t i) {
    if (fmt == GB_F32) return ((const float *)w)[i];
    uint16_t h = ((const uint16_t *)w)[i];
#if GB_HAVE_AVX2L
    return fmt == GB_BF16 ? gb_bf16_to_f32(h) : _cvtsh_ss(h);
#else
    return fmt == GB_BF16 ? gb_bf16_to_f32(h) : gb_f16_to_f32(h);
#endif
}

/* Address of element i of a weight buffer in format fmt. */
static inline const void *row_ptr(const void *w, int fmt, int64_t i) {
    return (const char *)w + i * (fmt == GB_F32 ? 4 : 2);
}

static inline float silu(float g) { return g / (1.0f + expf(-g)); }

/* ---- AVX-512 building blocks --------------------------------------------------------------- */
#if GB_HAVE_AVX512
/* 16 weights starting at element i of w, as float32 (fmt is a constant after inlining). */
ALWAYS_INLINE __m512 ldw(const void *w, int64_t i, int fmt) {
    if (fmt == GB_F32) return _mm512_loadu_ps((const float *)w + i);
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)w + i));
    if (fmt == GB_BF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

ALWAYS_INLINE __m512 ldw_mask(const void *w, int64_t i, __mmask16 m, int fmt) {
    if (fmt == GB_F32) return _mm512_maskz_loadu_ps(m, (const float *)w + i);
    __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)w + i);
    if (fmt == GB_BF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

/* dot(row at element offset o, x): the remainder rows a 4-row tile leaves over. */
ALWAYS_INLINE float dot1_avx512(const float *x, int64_t K, const void *w, int fmt, int64_t o) {
    const int64_t K16 = K & ~(int64_t)15;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t k = 0; k < K16; k += 16) acc = _mm512_fmadd_ps(ldw(w, o + k, fmt), _mm512_loadu_ps(x + k), acc);
    if (K16 < K) {
        __mmask16 m = (__mmask16)((1u << (K - K16)) - 1u);
        acc = _mm512_fmadd_ps(ldw_mask(w, o + K16, m, fmt), _mm512_maskz_loadu_ps(m, x + K16), acc);
    }
    return _mm512_reduce_add_ps(acc);
}

/* dot(row at element offset o, x) with two accumulators, for one token (T = 1, decode). Rows are
 * read one after another, so a thread's rows form one sequential stream: measured cold (2 threads,
 * bf16 from DRAM, shapes 2048x1536 to 2048x5120, interleaved with a pure-read kernel in the same
 * run) 0.89-0.99 of the pure read, against 0.77-0.85 for the 4-row tile with or without
 * software prefetch, whose four row streams the hardware prefetcher follows less well. */
ALWAYS_INLINE float dot1x2_avx512(const float *x, int64_t K, const void *w, int fmt, int64_t o) {
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    int64_t k = 0;
    for (; k + 32 <= K; k += 32) {
        a0 = _mm512_fmadd_ps(ldw(w, o + k, fmt), _mm512_loadu_ps(x + k), a0);
        a1 = _mm512_fmadd_ps(ldw(w, o + k + 16, fmt), _mm512_loadu_ps(x + k + 16), a1);
    }
    for (; k < K; k += 16) {
        __mmask16 m = K - k >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (K - k)) - 1u);
        a0 = _mm512_fmadd_ps(ldw_mask(w, o + k, m, fmt), _mm512_maskz_loadu_ps(m, x + k), a0);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

/* Two row dots in one pass (row o1 of w1 and row o2 of w2: far-apart rows of one matrix, or the
 * gate and up rows of SwiGLU): two independent memory streams per thread. When the memory system
 * is loaded and its latency grows, one stream per core cannot keep enough reads in flight. Measured cold, 2 threads, bf16, two-stream over
 * one-stream time in the same process (three A/B runs): 2048x1536 1.03-1.17x, 2048x5120
 * 0.97-1.29x, 8192x5120 1.00-1.08x, 25600x5120 1.01-1.08x; 5120x768 0.90-1.02x (short rows: see
 * gemv16). */
ALWAYS_INLINE void dot2x2_avx512(const float *x, int64_t K, const void *w1, int64_t o1, const void *w2, int64_t o2,
                                 int fmt, float *y1, float *y2) {
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), b0 = _mm512_setzero_ps(), b1 = _mm512_setzero_ps();
    const int64_t eb = fmt == GB_F32 ? 4 : 2;
    const char *p1 = (const char *)w1 + o1 * eb + DOT2_PF, *p2 = (const char *)w2 + o2 * eb + DOT2_PF;
    const int pf = K >= DOT2_PF_MIN_K;
    int64_t k = 0;
    for (; k + 32 <= K; k += 32) {
        if (pf) { /* a hint: past the end of the weights it is dropped, never faults */
            _mm_prefetch(p1 + k * eb, _MM_HINT_T1);
            _mm_prefetch(p2 + k * eb, _MM_HINT_T1);
        }
        const __m512 x0 = _mm512_loadu_ps(x + k), x1 = _mm512_loadu_ps(x + k + 16);
        a0 = _mm512_fmadd_ps(ldw(w1, o1 + k, fmt), x0, a0);
        b0 = _mm512_fmadd_ps(ldw(w2, o2 + k, fmt), x0, b0);
        a1 = _mm512_fmadd_ps(ldw(w1, o1 + k + 16, fmt), x1, a1);
        b1 = _mm512_fmadd_ps(ldw(w2, o2 + k + 16, fmt), x1, b1);
    }
    for (; k < K; k += 16) {
        __mmask16 m = K - k >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (K - k)) - 1u);
        const __m512 xv = _mm512_maskz_loadu_ps(m, x + k);
        a0 = _mm512_fmadd_ps(ldw_mask(w1, o1 + k, m, fmt), xv, a0);
        b0 = _mm512_fmadd_ps(ldw_mask(w2, o2 + k, m, fmt), xv, b0);
    }
    *y1 = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
    *y2 = _mm512_reduce_add_ps(_mm512_add_ps(b0, b1));
}

/* ---- bf16 pairs (T = 1) ----------------------------------------------------------------------
 * A bf16 weight is the high half of a float32. A 32-bit lane holding two bf16 weights (w[2j] in
 * its low half, w[2j+1] in its high half) gives w[2j+1] as a float32 when its low half is masked
 * off, and w[2j] when it is shifted up by 16 bits. So 32 weights cost one 64-byte load and two
 * integer ops, where ldw needs two widening loads (vpmovzxwd, a shuffle) and two shifts; x is
 * permuted once per call to match (pair_x). The products are the same float32 products as ldw's;
 * only the order of the sums changes. The decode GEMV's compute per byte roughly halves, which
 * matters when the memory runs fast: L3-warm GEMVs ran at only ~1.7-2x the DRAM read rate with
 * ldw, so the arithmetic could not fully hide behind the loads. */
#define PAIR_MAX_K 32768 /* x permuted on the stack (128 KB at most; Qwen3-32B down_proj rows are 25600): longer rows use ldw */

/* xp[32b + j] = x[32b + 2j], xp[32b + 16 + j] = x[32b + 2j + 1] for j < 16; a tail of K % 32
 * copied as it is. */
ALWAYS_INLINE void pair_x(const float *x, int64_t K, float *xp) {
    const __m512i ie = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i io = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    int64_t k = 0;
    for (; k + 32 <= K; k += 32) {
        const __m512 a = _mm512_loadu_ps(x + k), b = _mm512_loadu_ps(x + k + 16);
        _mm512_storeu_ps(xp + k, _mm512_permutex2var_ps(a, ie, b));
        _mm512_storeu_ps(xp + k + 16, _mm512_permutex2var_ps(a, io, b));
    }
    for (; k < K; k++) xp[k] = x[k];
}

/* 32 bf16 weights from element i of w: the even-indexed ones (*ev) and the odd-indexed ones (*od). */
ALWAYS_INLINE void ldpair(const void *w, int64_t i, __m512 *ev, __m512 *od) {
    __m512i v = _mm512_loadu_si512((const void *)((const uint16_t *)w + i));
    __asm__("" : "+v"(v)); /* one load into a register: gcc would otherwise fold it into both ops (two loads) */
    *ev = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
    *od = _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32((int)0xffff0000u)));
}

/* *a0 += even weights x xe, *a1 += odd weights x xo for the 32 bf16 weights at element i of w. */
ALWAYS_INLINE void pair_fma(const void *w, int64_t i, __m512 xe, __m512 xo, __m512 *a0, __m512 *a1) {
    __m512 e, d;
    ldpair(w, i, &e, &d);
    *a0 = _mm512_fmadd_ps(e, xe, *a0);
    *a1 = _mm512_fmadd_ps(d, xo, *a1);
}

/* The K % 32 tail of a bf16 row against xp's tail (x as it is), 16 at a time. */
ALWAYS_INLINE __m512 pair_tail(const float *xp, int64_t k, int64_t K, const void *w, int64_t o, __m512 acc) {
    for (; k < K; k += 16) {
        __mmask16 m = K - k >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (K - k)) - 1u);
        acc = _mm512_fmadd_ps(ldw_mask(w, o + k, m, GB_BF16), _mm512_maskz_loadu_ps(m, xp + k), acc);
    }
    return acc;
}

/* dot(bf16 row at element o, x), xp = pair_x(x): one sequential stream, four accumulators. */
ALWAYS_INLINE float dotp1(const float *xp, int64_t K, const void *w, int64_t o) {
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
    int64_t k = 0;
    for (; k + 64 <= K; k += 64) {
        pair_fma(w, o + k, _mm512_loadu_ps(xp + k), _mm512_loadu_ps(xp + k + 16), &a0, &a1);
        pair_fma(w, o + k + 32, _mm512_loadu_ps(xp + k + 32), _mm512_loadu_ps(xp + k + 48), &a2, &a3);
    }
    for (; k + 32 <= K; k += 32) pair_fma(w, o + k, _mm512_loadu_ps(xp + k), _mm512_loadu_ps(xp + k + 16), &a0, &a1);
    a0 = pair_tail(xp, k, K, w, o, a0);
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

/* dotp1 for two rows side by side (two streams; the rows of dot2x2_avx512), with its prefetch. */
ALWAYS_INLINE void dotp2(const float *xp, int64_t K, const void *w1, int64_t o1, const void *w2, int64_t o2,
                         float *y1, float *y2) {
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), b0 = _mm512_setzero_ps(), b1 = _mm512_setzero_ps();
    const char *p1 = (const char *)w1 + o1 * 2 + DOT2_PF, *p2 = (const char *)w2 + o2 * 2 + DOT2_PF;
    const int pf = K >= DOT2_PF_MIN_K;
    int64_t k = 0;
    for (; k + 32 <= K; k += 32) {
        if (pf) { /* a hint: past the end of the weights it is dropped, never faults */
            _mm_prefetch(p1 + k * 2, _MM_HINT_T1);
            _mm_prefetch(p2 + k * 2, _MM_HINT_T1);
        }
        __m512 xe = _mm512_loadu_ps(xp + k), xo = _mm512_loadu_ps(xp + k + 16);
        __asm__("" : "+v"(xe), "+v"(xo)); /* loaded once for both rows */
        pair_fma(w1, o1 + k, xe, xo, &a0, &a1);
        pair_fma(w2, o2 + k, xe, xo, &b0, &b1);
    }
    a0 = pair_tail(xp, k, K, w1, o1, a0);
    b0 = pair_tail(xp, k, K, w2, o2, b0);
    *y1 = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
    *y2 = _mm512_reduce_add_ps(_mm512_add_ps(b0, b1));
}

/* dotp1 for four rows side by side (four streams: rows from four far-apart places). Where rows are
 * long (K >= QUAD_MIN_K), in-process A/B against the two-stream kernel, cold bf16 GEMVs, 2 threads:
 * 2048x5120 32.2 -> 34.8, 33.4 -> 39.5 and 27.8 -> 30.0 GB/s, 8192x5120 37.3 -> 43.5 and
 * 28.6 -> 29.8 (probes read 33-58 GB/s in those runs); rows of 2048: no difference. With the memory
 * fast, two streams per core could not keep enough reads in flight. */
#define QUAD_MIN_K 4096
ALWAYS_INLINE void dotp4(const float *xp, int64_t K, const uint16_t *w0, const uint16_t *w1, const uint16_t *w2,
                         const uint16_t *w3, float *y0, float *y1, float *y2, float *y3) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, b0 = a0, b1 = a0, c0 = a0, c1 = a0, d0 = a0, d1 = a0;
    int64_t k = 0;
    for (; k + 32 <= K; k += 32) {
        __m512 xe = _mm512_loadu_ps(xp + k), xo = _mm512_loadu_ps(xp + k + 16);
        __asm__("" : "+v"(xe), "+v"(xo)); /* loaded once for the four rows */
        pair_fma(w0, k, xe, xo, &a0, &a1);
        pair_fma(w1, k, xe, xo, &b0, &b1);
        pair_fma(w2, k, xe, xo, &c0, &c1);
        pair_fma(w3, k, xe, xo, &d0, &d1);
    }
    a0 = pair_tail(xp, k, K, w0, 0, a0);
    b0 = pair_tail(xp, k, K, w1, 0, b0);
    c0 = pair_tail(xp, k, K, w2, 0, c0);
    d0 = pair_tail(xp, k, K, w3, 0, d0);
    *y0 = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
    *y1 = _mm512_reduce_add_ps(_mm512_add_ps(b0, b1));
    *y2 = _mm512_reduce_add_ps(_mm512_add_ps(c0, c1));
    *y3 = _mm512_reduce_add_ps(_mm512_add_ps(d0, d1));
}

/* The decode GEMV's rows [r0, r1) for bf16 in four quarters read side by side. */
ALWAYS_INLINE void gemvp_quarters(const float *xp, int64_t K, const void *w, int64_t r0, int64_t r1, float *y) {
    const uint16_t *W = (const uint16_t *)w;
    const int64_t q = (r1 - r0) / 4;
    for (int64_t i = 0; i < q; i++)
        dotp4(xp, K, W + (r0 + i) * K, W + (r0 + q + i) * K, W + (r0 + 2 * q + i) * K, W + (r0 + 3 * q + i) * K, y + i,
              y + q + i, y + 2 * q + i, y + 3 * q + i);
    for (int64_t r = r0 + 4 * q; r < r1; r++) y[r - r0] = dotp1(xp, K, w, r * K);
}

/* The decode GEMV's rows [r0, r1) for bf16 (gemv1_halves_avx512 with pairs). */
ALWAYS_INLINE void gemvp_halves(const float *xp, int64_t K, const void *w, int64_t r0, int64_t r1, float *y) {
    const int64_t h = (r1 - r0) / 2;
    for (int64_t i = 0; i < h; i++) dotp2(xp, K, w, (r0 + i) * K, w, (r0 + h + i) * K, y + i, y + h + i);
    if (2 * h < r1 - r0) y[r1 - r0 - 1] = dotp1(xp, K, w, (r1 - 1) * K);
}

/* The decode GEMV's rows [r0, r1) for bf16 (y[r - r0]), xp = pair_x(x): four streams for rows of
 * QUAD_MIN_K and longer, two from 1024, one row after another below. */
ALWAYS_INLINE void gemvp_rows(const float *xp, int64_t K, const void *w, int64_t r0, int64_t r1, float *y) {
    if (K >= QUAD_MIN_K) gemvp_quarters(xp, K, w, r0, r1, y);
    else if (K >= 1024) gemvp_halves(xp, K, w, r0, r1, y);
    else
        for (int64_t r = r0; r < r1; r++) y[r - r0] = dotp1(xp, K, w, r * K);
}

/* Decode GEMV (T = 1) over rows [r0, r1): the range cut in two halves read side by side
 * (dot2x2_avx512), each half one sequential stream. */
ALWAYS_INLINE void gemv1_halves_avx512(const float *x, int64_t K, const void *w, int fmt, int64_t r0, int64_t r1,
                                       float *y) {
    const int64_t h = (r1 - r0) / 2;
    for (int64_t i = 0; i < h; i++) dot2x2_avx512(x, K, w, (r0 + i) * K, w, (r0 + h + i) * K, fmt, y + i, y + h + i);
    if (2 * h < r1 - r0) y[r1 - r0 - 1] = dot1x2_avx512(x, K, w, fmt, (r1 - 1) * K);
}

/* y[t*ldy + j] = dot(row p_j, x[t]) for 4 rows and TT <= 4 tokens (a constant after inlining):
 * a 4 x TT register tile, so each converted weight vector feeds TT FMAs and each x vector 4. */
/* The 4 sums of a0..a3 as one vector [sum a0, sum a1, sum a2, sum a3]. */
ALWAYS_INLINE __m128 reduce4_avx512(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
    const __m256 b0 = _mm256_add_ps(_mm512_castps512_ps256(a0), _mm512_extractf32x8_ps(a0, 1));
    const __m256 b1 = _mm256_add_ps(_mm512_castps512_ps256(a1), _mm512_extractf32x8_ps(a1, 1));
    const __m256 b2 = _mm256_add_ps(_mm512_castps512_ps256(a2), _mm512_extractf32x8_ps(a2, 1));
    const __m256 b3 = _mm256_add_ps(_mm512_castps512_ps256(a3), _mm512_extractf32x8_ps(a3, 1));
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(b0, b1), _mm256_hadd_ps(b2, b3));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

/* pf, when not NULL, is the start of the next tile's 4 rows (4 K weights, contiguous after p3 when
 * the rows are): it is prefetched linearly while this tile computes, so short rows (K = 512, 768:
 * a tile is one 4 KiB page, where the hardware prefetcher starts cold) do not wait on DRAM at
 * every tile. */
ALWAYS_INLINE void tile4_avx512(const float *x, int64_t TT, int64_t K, int fmt, const void *p0, const void *p1,
                                const void *p2, const void *p3, float *y, int64_t ldy, const char *pf, int PF) {
    const int64_t K16 = K & ~(int64_t)15;
    const int64_t eb = fmt == GB_F32 ? 4 : 2; /* bytes per weight: 4 rows x 16 weights = eb lines */
    __m512 a0[4], a1[4], a2[4], a3[4];
    for (int64_t t = 0; t < TT; t++)
        a0[t] = a1[t] = a2[t] = a3[t] = _mm512_setzero_ps();
    for (int64_t k = 0; k < K16; k += 16) {
        if (PF) /* a constant after inlining: no test in the loop without prefetch */
            for (int64_t l = 0; l < eb; l++) _mm_prefetch(pf + 4 * eb * k + 64 * l, _MM_HINT_T0);
        __m512 w0 = ldw(p0, k, fmt), w1 = ldw(p1, k, fmt), w2 = ldw(p2, k, fmt), w3 = ldw(p3, k, fmt);
        for (int64_t t = 0; t < TT; t++) {
            __m512 xv = _mm512_loadu_ps(x + t * K + k);
            a0[t] = _mm512_fmadd_ps(w0, xv, a0[t]);
            a1[t] = _mm512_fmadd_ps(w1, xv, a1[t]);
            a2[t] = _mm512_fmadd_ps(w2, xv, a2[t]);
            a3[t] = _mm512_fmadd_ps(w3, xv, a3[t]);
        }
    }
    if (K16 < K) {
        __mmask16 m = (__mmask16)((1u << (K - K16)) - 1u);
        __m512 w0 = ldw_mask(p0, K16, m, fmt), w1 = ldw_mask(p1, K16, m, fmt);
        __m512 w2 = ldw_mask(p2, K16, m, fmt), w3 = ldw_mask(p3, K16, m, fmt);
        for (int64_t t = 0; t < TT; t++) {
            __m512 xv = _mm512_maskz_loadu_ps(m, x + t * K + K16);
            a0[t] = _mm512_fmadd_ps(w0, xv, a0[t]);
            a1[t] = _mm512_fmadd_ps(w1, xv, a1[t]);
            a2[t] = _mm512_fmadd_ps(w2, xv, a2[t]);
            a3[t] = _mm512_fmadd_ps(w3, xv, a3[t]);
        }
    }
    for (int64_t t = 0; t < TT; t++) _mm_storeu_ps(y + t * ldy, reduce4_avx512(a0[t], a1[t], a2[t], a3[t]));
}

static void convert_row_avx512(const void *w, int fmt, int64_t o, int64_t K, float *dst) {
    int64_t k = 0;
    if (fmt == GB_BF16) {
        for (; k + 16 <= K; k += 16) _mm512_storeu_ps(dst + k, ldw(w, o + k, GB_BF16));
        if (k < K) {
            __mmask16 m = (__mmask16)((1u << (K - k)) - 1u);
            _mm512_mask_storeu_ps(dst + k, m, ldw_mask(w, o + k, m, GB_BF16));
        }
    } else {
        for (; k + 16 <= K; k += 16) _mm512_storeu_ps(dst + k, ldw(w, o + k, GB_F16));
        if (k < K) {
            __mmask16 m = (__mmask16)((1u << (K - k)) - 1u);
            _mm512_mask_storeu_ps(dst + k, m, ldw_mask(w, o + k, m, GB_F16));
        }
    }
}
#endif

#if GB_HAVE_AVX512
/* silu(g) * u = g * u / (1 + exp(-g)), with exp taken of -|g| so it cannot overflow:
 * for g >= 0 the factor is 1 / (1 + e), for g < 0 it is e / (1 + e), e = exp(-|g|). */
ALWAYS_INLINE __m512 silu_mul_avx512(__m512 g, __m512 u) {
    const __m512 e = gb_exp512(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_abs_ps(g)));
    const __m512 den = _mm512_add_ps(_mm512_set1_ps(1.0f), e);
    const __mmask16 neg = _mm512_cmp_ps_mask(g, _mm512_setzero_ps(), _CMP_LT_OQ);
    const __m512 num = _mm512_mask_mul_ps(_mm512_mul_ps(g, u), neg, _mm512_mul_ps(g, u), e);
    return _mm512_div_ps(num, den);
}
#endif

/* g[i] = silu(g[i]) * u[i] for i < n */
static void silu_mul(float *g, const float *u, int64_t n) {
    int64_t i = 0;
#if GB_HAVE_AVX512
    if (!use_portable) {
        for (; i + 16 <= n; i += 16)
            _mm512_storeu_ps(g + i, silu_mul_avx512(_mm512_loadu_ps(g + i), _mm512_loadu_ps(u + i)));
        if (i < n) {
            const __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
            _mm512_mask_storeu_ps(g + i, m, silu_mul_avx512(_mm512_maskz_loadu_ps(m, g + i), _mm512_maskz_loadu_ps(m, u + i)));
        }
        return;
    }
#endif
#if GB_HAVE_AVX2L
    if (!use_portable)
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(g + i, silu_mul_avx2(_mm256_loadu_ps(g + i), _mm256_loadu_ps(u + i)));
#endif
    for (; i < n; i++) g[i] = silu(g[i]) * u[i];
}

#if GB_HAVE_AVX2L
/* 8 weights starting at element i of w, as float32 (fmt is a constant after inlining) */
ALWAYS_INLINE __m256 ldw8(const void *w, int64_t i, int fmt) {
    if (fmt == GB_F32) return _mm256_loadu_ps((const float *)w + i);
    const __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + i));
    if (fmt == GB_BF16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    return _mm256_cvtph_ps(h);
}

ALWAYS_INLINE float hsum8(__m256 v) {
    __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    a = _mm_add_ps(a, _mm_movehl_ps(a, a));
    a = _mm_add_ss(a, _mm_movehdup_ps(a));
    return _mm_cvtss_f32(a);
}

/* dot(row at element offset o, x), four accumulators (32 weights per step); the K % 8 tail scalar */
ALWAYS_INLINE float dot1_avx2(const float *x, int64_t K, const void *w, int fmt, int64_t o) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t k = 0;
    for (; k + 32 <= K; k += 32) {
        a0 = _mm256_fmadd_ps(ldw8(w, o + k, fmt), _mm256_loadu_ps(x + k), a0);
        a1 = _mm256_fmadd_ps(ldw8(w, o + k + 8, fmt), _mm256_loadu_ps(x + k + 8), a1);
        a2 = _mm256_fmadd_ps(ldw8(w, o + k + 16, fmt), _mm256_loadu_ps(x + k + 16), a2);
        a3 = _mm256_fmadd_ps(ldw8(w, o + k + 24, fmt), _mm256_loadu_ps(x + k + 24), a3);
    }
    for (; k + 8 <= K; k += 8) a0 = _mm256_fmadd_ps(ldw8(w, o + k, fmt), _mm256_loadu_ps(x + k), a0);
    float r = hsum8(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; k < K; k++) r += w_scalar(w, fmt, o + k) * x[k];
    return r;
}

/* y[t * ldy + {0, 1}] = rows o0, o1 . x_t for TT <= 4 tokens: 8 accumulators, each weight vector
 * loaded once for the TT tokens */
ALWAYS_INLINE void tile2_avx2(const float *x, const int TT, int64_t K, const void *w, const int fmt, int64_t o0,
                              int64_t o1, float *y, int64_t ldy) {
    __m256 a[2][4];
    for (int t = 0; t < 4; t++) a[0][t] = a[1][t] = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
        const __m256 w0 = ldw8(w, o0 + k, fmt), w1 = ldw8(w, o1 + k, fmt);
        for (int t = 0; t < TT; t++) {
            const __m256 xv = _mm256_loadu_ps(x + t * K + k);
            a[0][t] = _mm256_fmadd_ps(w0, xv, a[0][t]);
            a[1][t] = _mm256_fmadd_ps(w1, xv, a[1][t]);
        }
    }
    for (int t = 0; t < TT; t++) {
        float r0 = hsum8(a[0][t]), r1 = hsum8(a[1][t]);
        for (int64_t j = k; j < K; j++) {
            r0 += w_scalar(w, fmt, o0 + j) * x[t * K + j];
            r1 += w_scalar(w, fmt, o1 + j) * x[t * K + j];
        }
        y[t * ldy] = r0;
        y[t * ldy + 1] = r1;
    }
}

ALWAYS_INLINE void gemv_rows_avx2_fmt(const float *x, int64_t T, int64_t K, const void *w, const int fmt, int64_t r0,
                                      int64_t r1, float *y, int64_t ldy) {
    int64_t r = r0;
    if (T == 1) { /* decode: one sequential stream per thread */
        for (; r < r1; r++) y[r - r0] = dot1_avx2(x, K, w, fmt, r * K);
        return;
    }
    for (; r + 2 <= r1; r += 2)
        for (int64_t t0 = 0; t0 < T; t0 += 4) {
            const float *xt = x + t0 * K;
            float *yt = y + t0 * ldy + (r - r0);
            switch (T - t0 < 4 ? T - t0 : 4) { /* a constant token count per case: registers */
            case 1: tile2_avx2(xt, 1, K, w, fmt, r * K, (r + 1) * K, yt, ldy); break;
            case 2: tile2_avx2(xt, 2, K, w, fmt, r * K, (r + 1) * K, yt, ldy); break;
            case 3: tile2_avx2(xt, 3, K, w, fmt, r * K, (r + 1) * K, yt, ldy); break;
            default: tile2_avx2(xt, 4, K, w, fmt, r * K, (r + 1) * K, yt, ldy); break;
            }
        }
    for (; r < r1; r++)
        for (int64_t t = 0; t < T; t++) y[t * ldy + (r - r0)] = dot1_avx2(x + t * K, K, w, fmt, r * K);
}

static void gemv_rows_avx2(const float *x, int64_t T, int64_t K, const void *w, int fmt, int64_t r0, int64_t r1,
                           float *y, int64_t ldy) {
    if (fmt == GB_BF16) gemv_rows_avx2_fmt(x, T, K, w, GB_BF16, r0, r1, y, ldy);
    else if (fmt == GB_F16) gemv_rows_avx2_fmt(x, T, K, w, GB_F16, r0, r1, y, ldy);
    else gemv_rows_avx2_fmt(x, T, K, w, GB_F32, r0, r1, y, ldy);
}

static void convert_row_avx2(const void *w, int fmt, int64_t o, int64_t K, float *dst) {
    int64_t k = 0;
    if (fmt == GB_BF16)
        for (; k + 8 <= K; k += 8) _mm256_storeu_ps(dst + k, ldw8(w, o + k, GB_BF16));
    else if (fmt == GB_F16)
        for (; k + 8 <= K; k += 8) _mm256_storeu_ps(dst + k, ldw8(w, o + k, GB_F16));
    else
        for (; k + 8 <= K; k += 8) _mm256_storeu_ps(dst + k, ldw8(w, o + k, GB_F32));
    for (; k < K; k++) dst[k] = w_scalar(w, fmt, o + k);
}

#endif

/* ---- portable building blocks ------------------------------------------------------------ */
static float dot_portable(const float *x, int64_t K, const void *w, int fmt, int64_t o) {
    /* four partial sums: the same pairing the compiler would need to vectorise */
    float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
    int64_t k = 0;
    for (; k + 4 <= K; k += 4) {
        s0 += w_scalar(w, fmt, o + k) * x[k];
        s1 += w_scalar(w, fmt, o + k + 1) * x[k + 1];
        s2 += w_scalar(w, fmt, o + k + 2) * x[k + 2];
        s3 += w_scalar(w, fmt, o + k + 3) * x[k + 3];
    }
    for (; k < K; k++) s0 += w_scalar(w, fmt, o + k) * x[k];
    return (s0 + s1) + (s2 + s3);
}

static void convert_row(const void *w, int fmt, int64_t o, int64_t K, float *dst) {
#if GB_HAVE_AVX512
    if (!use_portable) {
        convert_row_avx512(w, fmt, o, K, dst);
        return;
    }
#endif
#if GB_HAVE_AVX2L
    if (!use_portable) {
        convert_row_avx2(w, fmt, o, K, dst);
        return;
    }
#endif
    for (int64_t k = 0; k < K; k++) dst[k] = w_scalar(w, fmt, o + k);
}

/* ---- version 2: gemv16 over rows [r0, r1) ------------------------------------------------ */
#if GB_HAVE_AVX512
ALWAYS_INLINE void gemv_rows_avx512_fmt(const float *x, int64_t T, int64_t K, const void *w, int fmt, int64_t r0,
                                        int64_t r1, float *y, int64_t ldy) {
    int64_t r = r0;
    if (T == 1 && fmt == GB_BF16 && use_pairs && K <= PAIR_MAX_K) { /* decode, bf16: pairs */
        float xp[K];
        pair_x(x, K, xp);
        for (; r < r1; r++) y[r - r0] = dotp1(xp, K, w, r * K);
        return;
    }
    if (T == 1) { /* decode: one sequential stream (dot1x2_avx512) */
        for (; r < r1; r++) y[r - r0] = dot1x2_avx512(x, K, w, fmt, r * K);
        return;
    }
    for (; r + 4 <= r1; r += 4) {
        const void *p0 = row_ptr(w, fmt, r * K), *p1 = row_ptr(w, fmt, (r + 1) * K);
        const void *p2 = row_ptr(w, fmt, (r + 2) * K), *p3 = row_ptr(w, fmt, (r + 3) * K);
        /* tokens in groups of 4; the 4 rows (<= 40 KiB) stay in L1/L2 between groups */
        for (int64_t t0 = 0; t0 < T; t0 += 4) {
            const float *xt = x + t0 * K;
            float *yt = y + t0 * ldy + (r - r0);
            /* the next 4 rows, prefetched during the first token group (a hint: past the end of w
             * it is dropped, never faults) */
            const char *pf = t0 == 0 && K <= PF_MAX_K ? (const char *)row_ptr(w, fmt, (r + 4) * K) : NULL;
#define GB_TILES(PF) \
    switch (T - t0 < 4 ? T - t0 : 4) { /* constant token count per case: registers */ \
    case 1: tile4_avx512(xt, 1, K, fmt, p0, p1, p2, p3, yt, ldy, pf, PF); break; \
    case 2: tile4_avx512(xt, 2, K, fmt, p0, p1, p2, p3, yt, ldy, pf, PF); break; \
    case 3: tile4_avx512(xt, 3, K, fmt, p0, p1, p2, p3, yt, ldy, pf, PF); break; \
    default: tile4_avx512(xt, 4, K, fmt, p0, p1, p2, p3, yt, ldy, pf, PF); break; \
    }
            if (pf) GB_TILES(1) else GB_TILES(0)
#undef GB_TILES
        }
    }
    for (; r < r1; r++)
        for (int64_t t = 0; t < T; t++) y[t * ldy + (r - r0)] = dot1_avx512(x + t * K, K, w, fmt, r * K);
}

static void gemv_rows_avx512(const float *x, int64_t T, int64_t K, const void *w, int fmt, int64_t r0, int64_t r1,
                             float *y, int64_t ldy) {
    if (fmt == GB_BF16) gemv_rows_avx512_fmt(x, T, K, w, GB_BF16, r0, r1, y, ldy);
    else if (fmt == GB_F16) gemv_rows_avx512_fmt(x, T, K, w, GB_F16, r0, r1, y, ldy);
    else gemv_rows_avx512_fmt(x, T, K, w, GB_F32, r0, r1, y, ldy);
}
#endif

void gb_gemv_rows(const float *x, int64_t T, int64_t K, const void *w, int fmt, int64_t r0, int64_t r1, float *y,
                  int64_t ldy) {
#if GB_HAVE_AVX512
    if (!use_portable) {
        gemv_rows_avx512(x, T, K, w, fmt, r0, r1, y, ldy);
        return;
    }
#endif
#if GB_HAVE_AVX2L
    if (!use_portable) {
        gemv_rows_avx2(x, T, K, w, fmt, r0, r1, y, ldy);
        return;
    }
#endif
    for (int64_t r = r0; r < r1; r++)
        for (int64_t t = 0; t < T; t++) y[t * ldy + (r - r0)] = dot_portable(x + t * K, K, w, fmt, r * K);
}

void gb_gemv1_rows(const float *x, int64_t K, const void *w, int fmt, int64_t r0, int64_t r1, float *y) {
#if GB_HAVE_AVX512
    if (!use_portable && fmt == GB_BF16 && use_pairs && K <= PAIR_MAX_K) {
        float xp[K];
        pair_x(x, K, xp);
        gemvp_rows(xp, K, w, r0, r1, y);
        return;
    }
    if (!use_portable && K >= 1024) {
        if (fmt == GB_BF16) gemv1_halves_avx512(x, K, w, GB_BF16, r0, r1, y);
        else if (fmt == GB_F16) gemv1_halves_avx512(x, K, w, GB_F16, r0, r1, y);
        else gemv1_halves_avx512(x, K, w, GB_F32, r0, r1, y);
        return;
    }
#endif
    gb_gemv_rows(x, 1, K, w, fmt, r0, r1, y, 1);
}

/* One row's dot product (element offset o), with whichever kernel is active. */
static float dot_row(const float *x, int64_t K, const void *w, int fmt, int64_t o) {
    float r;
#if GB_HAVE_AVX512
    if (!use_portable) {
        if (fmt == GB_BF16) return dot1_avx512(x, K, w, GB_BF16, o);
        if (fmt == GB_F16) return dot1_avx512(x, K, w, GB_F16, o);
        return dot1_avx512(x, K, w, GB_F32, o);
    }
#endif
#if GB_HAVE_AVX2L
    if (!use_portable) {
        if (fmt == GB_BF16) return dot1_avx2(x, K, w, GB_BF16, o);
        if (fmt == GB_F16) return dot1_avx2(x, K, w, GB_F16, o);
        return dot1_avx2(x, K, w, GB_F32, o);
    }
#endif
    r = dot_portable(x, K, w, fmt, o);
    return r;
}

static void gemv16(const float *x, int64_t T, int64_t K, const void *w, int fmt, int64_t N, float *y) {
    const int64_t nb = (N + GEMV_ROW_BLOCK - 1) / GEMV_ROW_BLOCK;
#if GB_HAVE_AVX512
    /* decode: chunks of GEMV1_CHUNK rows handed out dynamically (a thread slowed by a neighbour on
     * its core takes fewer), each chunk read as two halves side by side (dot2x2_avx512); rows
     * shorter than 1024 one chunk row after another (5120x768: 0.90-1.02 of the one-stream speed
     * with halves, against 1.0-1.17 at K >= 1536). Dynamic chunks of 128 over static halves of each
     * thread's share, cold, in one run with a pure-read kernel (mean of 12 calls): 8192x5120 0.92 ->
     * 0.98, 2048x1536 0.99 -> 1.11, 25600x5120 1.01 -> 1.07 of the read. */
    if (T == 1 && !use_portable && fmt == GB_BF16 && use_pairs && K <= PAIR_MAX_K) { /* bf16 pairs */
        const int64_t nc = (N + GEMV1_CHUNK - 1) / GEMV1_CHUNK;
        float xp[K]; /* shared by the threads */
        pair_x(x, K, xp);
#pragma omp parallel for schedule(dynamic, 1) if (N * K >= PAR_MIN_WEIGHTS)
        for (int64_t c = 0; c < nc; c++) {
            const int64_t r0 = c * GEMV1_CHUNK, r1 = r0 + GEMV1_CHUNK < N ? r0 + GEMV1_CHUNK : N;
            gemvp_rows(xp, K, w, r0, r1, y + r0);
        }
        return;
    }
    if (T == 1 && !use_portable) {
        const int64_t nc = (N + GEMV1_CHUNK - 1) / GEMV1_CHUNK;
#define GB_GEMV1(FMT) \
    _Pragma("omp parallel for schedule(dynamic, 1) if (N * K >= PAR_MIN_WEIGHTS)") \
    for (int64_t c = 0; c < nc; c++) { \
        const int64_t r0 = c * GEMV1_CHUNK, r1 = r0 + GEMV1_CHUNK < N ? r0 + GEMV1_CHUNK : N; \
        if (K >= 1024) gemv1_halves_avx512(x, K, w, FMT, r0, r1, y + r0); \
        else for (int64_t r = r0; r < r1; r++) y[r] = dot1x2_avx512(x, K, w, FMT, r * K); \
    }
        if (fmt == GB_BF16) {
            GB_GEMV1(GB_BF16)
        } else if (fmt == GB_F16) {
            GB_GEMV1(GB_F16)
        } else {
            GB_GEMV1(GB_F32)
        }
#undef GB_GEMV1
        return;
    }
#endif
#pragma omp parallel for schedule(static) if (N * K >= PAR_MIN_WEIGHTS)
    for (int64_t b = 0; b < nb; b++) {
        int64_t r0 = b * GEMV_ROW_BLOCK, r1 = r0 + GEMV_ROW_BLOCK < N ? r0 + GEMV_ROW_BLOCK : N;
        gb_gemv_rows(x, T, K, w, fmt, r0, r1, y + r0, N);
    }
}

/* ---- version 3: panel conversion + sgemm ------------------------------------------------- */
static int panel_gemm(const float *x, int64_t T, int64_t K, const void *w, int fmt, int64_t N, float *y) {
    int64_t nb = PANEL_BYTES / (K * (int64_t)sizeof(float));
    nb = nb < 16 ? 16 : nb & ~(int64_t)15;
    if (nb > N) nb = N;
    size_t bytes = ((size_t)(nb * K) * sizeof(float) + 63) & ~(size_t)63;
    float *buf = (float *)gb_ws_aligned_alloc(64, bytes);
    if (!buf) return gb_error(GB_ENOMEM, "linear: cannot allocate a %zu-byte weight panel", bytes);
    for (int64_t r0 = 0; r0 < N; r0 += nb) {
        int64_t n = N - r0 < nb ? N - r0 : nb;
        /* Converted on the calling thread on purpose: an OpenMP region between two OpenBLAS calls
         * leaves libgomp's workers spinning while OpenBLAS's own threads want the same cores
         * (measured here, 2 threads, 512 x 10240 x 2048 bf16: 40 GFLOP/s with a parallel
         * conversion, 176 serial, against 180 for the float32 sgemm alone). Serial conversion
         * costs ~0.25 ns per weight against 2T FLOPs of sgemm per weight: a few % at T = 512,
         * ~15% at T = 128 (below T = 65 the register tiles run instead). */
        for (int64_t r = 0; r < n; r++) convert_row(w, fmt, (r0 + r) * K, K, buf + r * K);
        scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)T, (blasint)n, (blasint)K, 1.0f, x,
                    (blasint)K, buf, (blasint)K, 0.0f, y + r0, (blasint)N);
    }
    gb_ws_free(buf);
    return GB_OK;
}

/* ---- dispatcher ----------------------------------------------------------------------------- */
int gb_linear(const float *x, int64_t T, int64_t K, const void *w, int wfmt, int64_t N, const float *bias,
              float *y) {
    if (!gb_weight_elem_bytes(wfmt)) return gb_error(GB_ETYPE, "linear: unsupported weight format %d", wfmt);
    if (T < 0 || K <= 0 || N <= 0)
        return gb_error(GB_EVALUE, "linear: sizes must be positive, got T=%ld K=%ld N=%ld", (long)T, (long)K, (long)N);
    if (K > INT32_MAX || N > INT32_MAX || T > INT32_MAX)
        return gb_error(GB_EVALUE, "linear: sizes must fit in int32 for BLAS, got T=%ld K=%ld N=%ld", (long)T, (long)K,
                        (long)N);
    if (T == 0) return GB_OK;
    int st = GB_OK;
    if (wfmt == GB_F32) {
        if (T == 1)
            scipy_cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)N, (blasint)K, 1.0f, (const float *)w, (blasint)K, x, 1,
                        0.0f, y, 1);
        else
            scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)T, (blasint)N, (blasint)K, 1.0f, x,
                        (blasint)K, (const float *)w, (blasint)K, 0.0f, y, (blasint)N);
    } else if (T <= gb_linear_gemv_max_t()) {
        gemv16(x, T, K, w, wfmt, N, y);
    } else {
        const int v = gb_linear_hgemm(wfmt);
        st = v == GB_HG_SGEMM ? panel_gemm(x, T, K, w, wfmt, N, y) : gb_hgemm(x, T, K, w, wfmt, N, y, v);
    }
    if (st == GB_OK && bias)
        for (int64_t t = 0; t < T; t++)
            for (int64_t n = 0; n < N; n++) y[t * N + n] += bias[n];
    return st;
}

/* ---- SwiGLU ---------------------------------------------------------------------------------- */

/* h[t, f] = silu(gate_f . x_t) * (up_f . x_t) for T <= gemv_max_t tokens: gate and up rows are
 * read in the same pass (rows f, f+1 of both form one 4-row register tile), silu is applied in
 * registers' wake, and there is one parallel region instead of two plus a serial silu loop. */
void gb_gate_up_rows(const float *x, int64_t T, int64_t D, const void *wg, const void *wu, int fmt, int64_t F,
                     int64_t f0, int64_t f1, float *h) {
    int64_t f = f0;
#if GB_HAVE_AVX512
    if (!use_portable && T == 1 && fmt == GB_BF16 && use_pairs && D <= PAIR_MAX_K) { /* decode, bf16: pairs */
        float xp[D];
        pair_x(x, D, xp);
        if (D >= QUAD_MIN_K) { /* gate and up rows f and f + q: four streams */
            const uint16_t *G = (const uint16_t *)wg, *U = (const uint16_t *)wu;
            const int64_t q = (f1 - f0) / 2;
            for (int64_t i = 0; i < q; i++) {
                float g0, u0, g1, u1;
                dotp4(xp, D, G + (f0 + i) * D, U + (f0 + i) * D, G + (f0 + q + i) * D, U + (f0 + q + i) * D, &g0, &u0,
                      &g1, &u1);
                h[f0 + i] = silu(g0) * u0;
                h[f0 + q + i] = silu(g1) * u1;
            }
            f = f0 + 2 * q;
        }
        for (; f < f1; f++) {
            float g, u;
            dotp2(xp, D, wg, f * D, wu, f * D, &g, &u);
            h[f] = silu(g) * u;
        }
        return;
    }
    if (!use_portable && T == 1) { /* decode: gate row f and up row f side by side, two sequential streams */
#define GB_GU1(FMT) \
    do { \
        for (; f < f1; f++) { \
            float g, u; \
            dot2x2_avx512(x, D, wg, f * D, wu, f * D, FMT, &g, &u); \
            h[f] = silu(g) * u; \
        } \
    } while (0)
        if (fmt == GB_BF16) GB_GU1(GB_BF16);
        else if (fmt == GB_F16) GB_GU1(GB_F16);
        else GB_GU1(GB_F32);
#undef GB_GU1
        return;
    }
    if (!use_portable) {
        float o[4 * 4];
        for (; f + 2 <= f1; f += 2) {
            const void *g0 = row_ptr(wg, fmt, f * D), *u0 = row_ptr(wu, fmt, f * D);
            const void *g1 = row_ptr(wg, fmt, (f + 1) * D), *u1 = row_ptr(wu, fmt, (f + 1) * D);
            for (int64_t t0 = 0; t0 < T; t0 += 4) {
                const int64_t tt = T - t0 < 4 ? T - t0 : 4;
                const float *xt = x + t0 * D;
#define GB_TILE(TT, FMT) tile4_avx512(xt, TT, D, FMT, g0, u0, g1, u1, o, 4, NULL, 0)
#define GB_TILE_FMT(TT) \
    do { \
        if (fmt == GB_BF16) GB_TILE(TT, GB_BF16); \
        else if (fmt == GB_F16) GB_TILE(TT, GB_F16); \
        else GB_TILE(TT, GB_F32); \
    } while (0)
                switch (tt) { /* constant token count per case: registers */
                case 1: GB_TILE_FMT(1); break;
                case 2: GB_TILE_FMT(2); break;
                case 3: GB_TILE_FMT(3); break;
                default: GB_TILE_FMT(4); break;
                }
#undef GB_TILE_FMT
#undef GB_TILE
                for (int64_t t = 0; t < tt; t++) {
                    h[(t0 + t) * F + f] = silu(o[t * 4 + 0]) * o[t * 4 + 1];
                    h[(t0 + t) * F + f + 1] = silu(o[t * 4 + 2]) * o[t * 4 + 3];
                }
            }
        }
    }
#endif
    for (; f < f1; f++)
        for (int64_t t = 0; t < T; t++)
            h[t * F + f] = silu(dot_row(x + t * D, D, wg, fmt, f * D)) * dot_row(x + t * D, D, wu, fmt, f * D);
}

/* h[t, f] = silu(gate_f . x_t) * (up_f . x_t) for T <= gemv_max_t tokens: gate and up rows are
 * read in the same pass (rows f, f+1 of both form one 4-row register tile), silu is applied as
 * the tile is stored, and there is one parallel region instead of two plus a serial silu loop. */
static void gate_up_fused(const float *x, int64_t T, int64_t D, const void *wg, const void *wu, int fmt, int64_t F,
                          float *h) {
    const int64_t nb = (F + GEMV_ROW_BLOCK - 1) / GEMV_ROW_BLOCK;
    if (T == 1) { /* decode: chunks of GEMV1_CHUNK rows, as the decode GEMV (long streams) */
        const int64_t nc = (F + GEMV1_CHUNK - 1) / GEMV1_CHUNK;
#pragma omp parallel for schedule(dynamic, 1) if (2 * F * D >= PAR_MIN_WEIGHTS)
        for (int64_t c = 0; c < nc; c++) {
            const int64_t f0 = c * GEMV1_CHUNK, f1 = f0 + GEMV1_CHUNK < F ? f0 + GEMV1_CHUNK : F;
            gb_gate_up_rows(x, 1, D, wg, wu, fmt, F, f0, f1, h);
        }
        return;
    }
    /* dynamic 64-row chunks, as the decode GEMV (gemv16): a slowed thread takes fewer */
#pragma omp parallel for schedule(dynamic, 4) if (2 * F * D >= PAR_MIN_WEIGHTS)
    for (int64_t b = 0; b < nb; b++) {
        int64_t f0 = b * GEMV_ROW_BLOCK, f1 = f0 + GEMV_ROW_BLOCK < F ? f0 + GEMV_ROW_BLOCK : F;
        gb_gate_up_rows(x, T, D, wg, wu, fmt, F, f0, f1, h);
    }
}

int gb_swiglu(const float *x, int64_t T, int64_t D, const void *w_gate, int fmt_gate, const void *w_up, int fmt_up,
              const void *w_down, int fmt_down, int64_t F, float *y) {
    if (!gb_weight_elem_bytes(fmt_gate) || !gb_weight_elem_bytes(fmt_up) || !gb_weight_elem_bytes(fmt_down))
        return gb_error(GB_ETYPE, "swiglu: unsupported weight format (%d, %d, %d)", fmt_gate, fmt_up, fmt_down);
    if (T < 0 || D <= 0 || F <= 0)
        return gb_error(GB_EVALUE, "swiglu: sizes must be positive, got T=%ld D=%ld F=%ld", (long)T, (long)D, (long)F);
    if (T == 0) return GB_OK;
    int st = GB_OK;
    /* f32 gate/up go to OpenBLAS from 2 tokens on; 16-bit ones use the fused tiles up to
     * gemv_max_t tokens (the same range in which gb_linear would pick gemv16 for them) */
    if (fmt_gate == fmt_up && (T == 1 || (fmt_gate != GB_F32 && T <= gb_linear_gemv_max_t()))) {
        float *h = (float *)gb_ws_malloc((size_t)(T * F) * sizeof(float));
        if (!h) return gb_error(GB_ENOMEM, "swiglu: out of memory");
        gate_up_fused(x, T, D, w_gate, w_up, fmt_gate, F, h);
        st = gb_linear(h, T, F, w_down, fmt_down, D, NULL, y);
        gb_ws_free(h);
        return st;
    }
    /* Token chunks bound the two [chunk, F] scratch buffers (2 x 512 x 25600 x 4 B = 105 MB for
     * Qwen3-32B). Each chunk converts all three weights again (panel_gemm), so chunks of 512
     * rather than 256 tokens halve that work: measured at T = 512 (2 threads, bf16), GLM layer 0
     * 408 -> 368 ms and Qwen3-32B 3.01 -> 2.54 s. */
    const int64_t TC = T < 512 ? T : 512;
    float *g = (float *)gb_ws_malloc((size_t)(TC * F) * sizeof(float));
    float *u = (float *)gb_ws_malloc((size_t)(TC * F) * sizeof(float));
    if (!g || !u) {
        gb_ws_free(g);
        gb_ws_free(u);
        return gb_error(GB_ENOMEM, "swiglu: out of memory for %ld x %ld scratch", (long)TC, (long)F);
    }
    for (int64_t t0 = 0; t0 < T && st == GB_OK; t0 += TC) {
        int64_t tc = T - t0 < TC ? T - t0 : TC;
        st = gb_linear(x + t0 * D, tc, D, w_gate, fmt_gate, F, NULL, g);
        if (st == GB_OK) st = gb_linear(x + t0 * D, tc, D, w_up, fmt_up, F, NULL, u);
        if (st != GB_OK) break;
        /* serial for the reason given in panel_gemm (it sits between OpenBLAS calls), and
         * vectorised: the scalar expf loop took ~40 ms of 410 for GLM layer 0 at T = 512 */
        silu_mul(g, u, tc * F);
        st = gb_linear(g, tc, F, w_down, fmt_down, D, NULL, y + t0 * D);
    }
    gb_ws_free(g);
    gb_ws_free(u);
    return st;
}

void gb_silu_mul(float *g, const float *u, int64_t n) { silu_mul(g, u, n); }

void gb_silu_act(float *g, const float *u, int64_t n) {
    /* chunks of 16 Ki floats (whole vectors): the same per-element steps whatever the thread count */
    const int64_t CH = 1 << 14;
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t c = 0; c < (n + CH - 1) / CH; c++) silu_mul(g + c * CH, u + c * CH, n - c * CH < CH ? n - c * CH : CH);
}

void gb_geglu_act(float *g, const float *u, int64_t n) {
    const float c = 0.7978845608028654f; /* sqrt(2 / pi) */
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; i++) {
        const float x = g[i];
        float t = x * x;
        t = t * 0.044715f;
        t = t + 1.0f;
        t = t * x;
        t = t * c;
        t = tanhf(t) + 1.0f;
        g[i] = (x * 0.5f) * t * u[i];
    }
}

int gb_geglu(const float *x, int64_t T, int64_t D, const void *w_gate, int fmt_gate, const void *w_up, int fmt_up,
             const void *w_down, int fmt_down, int64_t F, float *y) {
    if (T <= 0) return T == 0 ? GB_OK : gb_error(GB_EVALUE, "geglu: T=%ld must be >= 0", (long)T);
    float *g = (float *)gb_ws_malloc((size_t)(T * F) * sizeof(float));
    float *u = (float *)gb_ws_malloc((size_t)(T * F) * sizeof(float));
    int st = GB_OK;
    if (!g || !u) {
        st = gb_error(GB_ENOMEM, "geglu: out of memory for %ld x %ld activations", (long)T, (long)F);
        goto done;
    }
    if ((st = gb_linear(x, T, D, w_gate, fmt_gate, F, NULL, g))) goto done;
    if ((st = gb_linear(x, T, D, w_up, fmt_up, F, NULL, u))) goto done;
    gb_geglu_act(g, u, T * F);
    st = gb_linear(g, T, F, w_down, fmt_down, D, NULL, y);
done:
    gb_ws_free(g);
    gb_ws_free(u);
    return st;
}
