/* Can the FMA pipes add throughput beside the integer multiply pipe? The iq4_nl GEMM tile's per-token
 * step (vpsignb, vpmaddubsw, vpmaddwd, vpaddd per 32 multiply-adds: one vpmaddubsw and one vpmaddwd,
 * which on a Zen 2 share one pipe at one per cycle, bench/results/avx2_op_mix_zen2_s21_2026-12-03.md)
 * interleaved with float32 FMA blocks (2 row vectors x 3 tokens, weights as float32): NI integer steps
 * (2 tokens x 2 weight vectors each, 128 multiply-adds) and NF float steps (6 FMAs, 48 multiply-adds)
 * per loop iteration, compiled by gcc from intrinsics, cycles from a dependent vpaddd chain in the
 * same run. A mix well above the integer-only rate would let an exact float path (int8 x int8 sums
 * of a 32-value block stay below 2^24, so float32 sums are exact) carry some tokens of a tile.
 * Build and run:
 *   gcc -O2 -march=native -o /tmp/int_fma_mix bench/cpu_ops/int_fma_mix.c && /tmp/int_fma_mix
 * Results: bench/results/session24_iq4_gemv_zen2_2026-12-04.md. */
#include <immintrin.h>
#include <stdio.h>
#include <stdint.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
#define PIN(v) __asm__("" : "+x"(v))
/* per step: int part: NI x (2 tokens x 2 weight vectors) = NI*4 x 32 MACs; float part: NF x (2 row vectors x 3 tokens) FMAs = NF*6 x 8 MACs */
#define DEF(NI, NF) \
__attribute__((noinline)) double run_##NI##_##NF(long iters, const int8_t *xb, const float *wf, const float *xf, int32_t *out, float *fo) { \
    __m256i i0 = _mm256_setzero_si256(), i1 = i0, i2 = i0, i3 = i0; __m256 f0 = _mm256_setzero_ps(), f1 = f0, f2 = f0, f3 = f0, f4 = f0, f5 = f0; \
    const __m256i ones = _mm256_set1_epi16(1); \
    __m256i w0 = _mm256_loadu_si256((const __m256i *)xb), w1 = _mm256_loadu_si256((const __m256i *)(xb + 32)); \
    const __m256i a0 = _mm256_abs_epi8(w0), a1 = _mm256_abs_epi8(w1); \
    double t0 = now(); \
    for (long it = 0; it < iters; it++) { \
        const int o = (it & 255) * 8; \
        for (int r = 0; r < NI; r++) { \
            const __m256i x0 = _mm256_set1_epi32(*(const int32_t *)(xb + o + 8 * r)), x1 = _mm256_set1_epi32(*(const int32_t *)(xb + o + 8 * r + 4)); \
            i0 = _mm256_add_epi32(i0, _mm256_madd_epi16(_mm256_maddubs_epi16(a0, _mm256_sign_epi8(x0, w0)), ones)); \
            i1 = _mm256_add_epi32(i1, _mm256_madd_epi16(_mm256_maddubs_epi16(a1, _mm256_sign_epi8(x0, w1)), ones)); \
            i2 = _mm256_add_epi32(i2, _mm256_madd_epi16(_mm256_maddubs_epi16(a0, _mm256_sign_epi8(x1, w0)), ones)); \
            i3 = _mm256_add_epi32(i3, _mm256_madd_epi16(_mm256_maddubs_epi16(a1, _mm256_sign_epi8(x1, w1)), ones)); \
        } \
        for (int r = 0; r < NF; r++) { \
            const __m256 v0 = _mm256_loadu_ps(wf + 2 * o + 16 * r), v1 = _mm256_loadu_ps(wf + 2 * o + 16 * r + 8); \
            const __m256 t0_ = _mm256_broadcast_ss(xf + o + 3 * r), t1_ = _mm256_broadcast_ss(xf + o + 3 * r + 1), t2_ = _mm256_broadcast_ss(xf + o + 3 * r + 2); \
            f0 = _mm256_fmadd_ps(v0, t0_, f0); f1 = _mm256_fmadd_ps(v1, t0_, f1); \
            f2 = _mm256_fmadd_ps(v0, t1_, f2); f3 = _mm256_fmadd_ps(v1, t1_, f3); \
            f4 = _mm256_fmadd_ps(v0, t2_, f4); f5 = _mm256_fmadd_ps(v1, t2_, f5); \
        } \
    } \
    double t = now() - t0; \
    _mm256_storeu_si256((__m256i *)out, _mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3))); \
    _mm256_storeu_ps(fo, _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(f0, f1), _mm256_add_ps(f2, f3)), _mm256_add_ps(f4, f5))); \
    return t; }
DEF(1, 0) DEF(0, 1) DEF(1, 1) DEF(2, 1) DEF(3, 1) DEF(3, 2) DEF(4, 1) DEF(2, 2)
int main(void) {
    static int8_t xb[8192]; static float wf[8192], xf[8192]; static int32_t out[8]; static float fo[8];
    for (int i = 0; i < 8192; i++) { xb[i] = (int8_t)(i * 7 + 3); wf[i] = (i % 13) * 0.001f; xf[i] = (i % 7) * 0.1f; }
    __m256i z = _mm256_set1_epi32(1); double t0 = now(); long M = 400000000;
    for (long i = 0; i < M; i++) { z = _mm256_add_epi32(z, z); PIN(z); }
    double cyc = (now() - t0) / M;
    printf("cycle %.3f ns\n", cyc * 1e9);
#define RUN(NI, NF) { long it = 100000000L / (NI + NF); double b = 1e9; for (int k = 0; k < 3; k++) { double t = run_##NI##_##NF(it, xb, wf, xf, out, fo); if (t < b) b = t; } \
    double macs = (double)it * (NI * 128 + NF * 48); printf("int %d float %d: %.2f MAC/cycle (int %.2f, float %.2f) [%d %g]\n", NI, NF, macs / (b / cyc), it * NI * 128.0 / (b / cyc), it * NF * 48.0 / (b / cyc), out[0], fo[0]); }
    RUN(1, 0) RUN(0, 1) RUN(1, 1) RUN(2, 1) RUN(3, 1) RUN(4, 1) RUN(3, 2) RUN(2, 2)
}
