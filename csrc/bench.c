/* bench.c: memory bandwidth (STREAM-like triad, read-only sum), float32 FMA peak, int8 dot-product peak. */
#include "bench.h"

#include <omp.h>
#include <stdlib.h>

#include "common.h"

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

/* One read-only pass over b and c (float32, n each), OpenMP over i: the sum, kept live by the
 * caller. AVX-512: four independent accumulators per array, 64 floats per step, so the loop is
 * bound by the loads (the access pattern of a decode GEMV: streams of reads, nothing written). */
static double read_pass(const float *b, const float *c, int64_t n) {
    double sum = 0.0;
#pragma omp parallel reduction(+ : sum)
    {
        const int nt = omp_get_num_threads(), id = omp_get_thread_num();
        int64_t lo = n * id / nt, hi = n * (id + 1) / nt;
        float q = 0.0f;
#if defined(__AVX512F__)
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        int64_t i = lo;
        for (; i + 64 <= hi; i += 64) {
            a0 = _mm512_add_ps(a0, _mm512_loadu_ps(b + i));
            a1 = _mm512_add_ps(a1, _mm512_loadu_ps(b + i + 16));
            a2 = _mm512_add_ps(a2, _mm512_loadu_ps(b + i + 32));
            a3 = _mm512_add_ps(a3, _mm512_loadu_ps(b + i + 48));
            a4 = _mm512_add_ps(a4, _mm512_loadu_ps(c + i));
            a5 = _mm512_add_ps(a5, _mm512_loadu_ps(c + i + 16));
            a6 = _mm512_add_ps(a6, _mm512_loadu_ps(c + i + 32));
            a7 = _mm512_add_ps(a7, _mm512_loadu_ps(c + i + 48));
        }
        q = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                                               _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7))));
        for (; i < hi; i++) q += b[i] + c[i];
#elif defined(__AVX2__) && defined(__FMA__)
        /* AVX2 CPUs: the same with ymm (the scalar loop below is not vectorised without
         * reassociation and measured ~6 GB/s even from L3 on a Zen 3: the adds, not the loads) */
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        int64_t i = lo;
        for (; i + 32 <= hi; i += 32) {
            a0 = _mm256_add_ps(a0, _mm256_loadu_ps(b + i));
            a1 = _mm256_add_ps(a1, _mm256_loadu_ps(b + i + 8));
            a2 = _mm256_add_ps(a2, _mm256_loadu_ps(b + i + 16));
            a3 = _mm256_add_ps(a3, _mm256_loadu_ps(b + i + 24));
            a4 = _mm256_add_ps(a4, _mm256_loadu_ps(c + i));
            a5 = _mm256_add_ps(a5, _mm256_loadu_ps(c + i + 8));
            a6 = _mm256_add_ps(a6, _mm256_loadu_ps(c + i + 16));
            a7 = _mm256_add_ps(a7, _mm256_loadu_ps(c + i + 24));
        }
        float t[8];
        _mm256_storeu_ps(t, _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                                          _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7))));
        for (int j = 0; j < 8; j++) q += t[j];
        for (; i < hi; i++) q += b[i] + c[i];
#else
        /* 8 partial sums keep the adds off the critical path (the loop is bound by the loads) */
        float p[8] = {0};
        int64_t i = lo;
        for (; i + 8 <= hi; i += 8)
            for (int j = 0; j < 8; j++) p[j] += b[i + j] + c[i + j];
        for (int j = 0; j < 8; j++) q += p[j];
        for (; i < hi; i++) q += b[i] + c[i];
#endif
        sum += q;
    }
    return sum;
}

/* Upper bounds: what no ceiling measurement needs, so a mistyped count is an error, not an hour's
 * loop or an allocation the machine cannot back (found by bench/fuzz). */
#define GB_BENCH_MAX_N (INT64_C(1) << 31)     /* elements per array: 8 GiB of float32 */
#define GB_BENCH_MAX_REPS 1000
#define GB_BENCH_MAX_ITERS (INT64_C(1) << 32) /* FMA loop iterations per thread and rep */

int gb_bench_bandwidth(int64_t n, int reps, double *triad_gbs, double *read_gbs) {
    if (n < 1024 || reps < 1 || n > GB_BENCH_MAX_N || reps > GB_BENCH_MAX_REPS)
        return gb_error(GB_EVALUE, "bench: need 1024 <= n <= %ld and 1 <= reps <= %d, got n=%ld reps=%d",
                        (long)GB_BENCH_MAX_N, GB_BENCH_MAX_REPS, (long)n, reps);
    size_t bytes = ((size_t)n * sizeof(float) + 63) & ~(size_t)63;
    float *a = (float *)gb_ws_aligned_alloc(64, bytes), *b = (float *)gb_ws_aligned_alloc(64, bytes);
    float *c = (float *)gb_ws_aligned_alloc(64, bytes);
    if (!a || !b || !c) {
        gb_ws_free(a);
        gb_ws_free(b);
        gb_ws_free(c);
        return gb_error(GB_ENOMEM, "bench: cannot allocate 3 x %zu bytes", bytes);
    }
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        a[i] = 0.0f;
        b[i] = 1.0f;
        c[i] = 2.0f;
    }
    const int st = gb_bench_probe(a, b, c, n, reps, triad_gbs, read_gbs);
    gb_ws_free(a);
    gb_ws_free(b);
    gb_ws_free(c);
    return st;
}

int gb_bench_probe(float *a, const float *b, const float *c, int64_t n, int reps, double *triad_gbs,
                   double *read_gbs) {
    if (n < 1024 || reps < 1 || reps > GB_BENCH_MAX_REPS)
        return gb_error(GB_EVALUE, "bench: need n >= 1024 and 1 <= reps <= %d, got n=%ld reps=%d", GB_BENCH_MAX_REPS,
                        (long)n, reps);
    const float s = 3.0f;
    double best = 1e30, best_read = 1e30, sink = 0.0;
    for (int r = 0; r < reps; r++) {
        double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
        double t1 = omp_get_wtime();
        sink += read_pass(b, c, n);
        double t2 = omp_get_wtime();
        if (t1 - t0 < best) best = t1 - t0;
        if (t2 - t1 < best_read) best_read = t2 - t1;
    }
    *triad_gbs = 12.0 * (double)n / best / 1e9;
    *read_gbs = 8.0 * (double)n / best_read / 1e9;
    return sink == -1.0 ? GB_EINTERNAL : GB_OK; /* keep the sums live */
}

int gb_bench_read(const float *b, int64_t n, int reps, double *read_gbs) {
    if (n < 2048 || reps < 1 || reps > GB_BENCH_MAX_REPS)
        return gb_error(GB_EVALUE, "bench: need n >= 2048 and 1 <= reps <= %d, got n=%ld reps=%d", GB_BENCH_MAX_REPS,
                        (long)n, reps);
    const int64_t h = n / 2;
    double best = 1e30, sink = 0.0;
    for (int r = 0; r < reps; r++) {
        double t0 = omp_get_wtime();
        sink += read_pass(b, b + h, h);
        double t1 = omp_get_wtime();
        if (t1 - t0 < best) best = t1 - t0;
    }
    *read_gbs = 8.0 * (double)h / best / 1e9;
    return sink == -1.0 ? GB_EINTERNAL : GB_OK; /* keep the sums live */
}

int gb_bench_fma(int64_t iters, int reps, double *gflops, int *vector_bits) {
    if (iters < 1 || reps < 1 || iters > GB_BENCH_MAX_ITERS || reps > GB_BENCH_MAX_REPS)
        return gb_error(GB_EVALUE, "bench: need 1 <= iters <= %ld and 1 <= reps <= %d, got %ld, %d",
                        (long)GB_BENCH_MAX_ITERS, GB_BENCH_MAX_REPS, (long)iters, reps);
    double best = 1e30, flops_per_thread = 0.0, sink = 0.0;
    int nthreads = 1;
    for (int r = 0; r < reps; r++) {
        double t0 = omp_get_wtime();
#pragma omp parallel reduction(+ : sink)
        {
#pragma omp single
            nthreads = omp_get_num_threads();
#if defined(__AVX512F__)
            /* 16 independent chains: 4-cycle FMA latency x up to 2 FMA issues per cycle needs >= 8 */
            __m512 acc[16];
            const __m512 m = _mm512_set1_ps(0.999999f), k = _mm512_set1_ps(1e-7f);
            for (int j = 0; j < 16; j++) acc[j] = _mm512_set1_ps((float)(j + omp_get_thread_num()));
            for (int64_t i = 0; i < iters; i++)
                for (int j = 0; j < 16; j++) acc[j] = _mm512_fmadd_ps(acc[j], m, k);
            __m512 s = acc[0];
            for (int j = 1; j < 16; j++) s = _mm512_add_ps(s, acc[j]);
            sink += _mm512_reduce_add_ps(s);
#elif defined(__AVX2__) && defined(__FMA__)
            __m256 acc[12];
            const __m256 m = _mm256_set1_ps(0.999999f), k = _mm256_set1_ps(1e-7f);
            for (int j = 0; j < 12; j++) acc[j] = _mm256_set1_ps((float)(j + omp_get_thread_num()));
            for (int64_t i = 0; i < iters; i++)
                for (int j = 0; j < 12; j++) acc[j] = _mm256_fmadd_ps(acc[j], m, k);
            float tmp[8];
            __m256 s = acc[0];
            for (int j = 1; j < 12; j++) s = _mm256_add_ps(s, acc[j]);
            _mm256_storeu_ps(tmp, s);
            for (int j = 0; j < 8; j++) sink += tmp[j];
#else
            float acc[8];
            for (int j = 0; j < 8; j++) acc[j] = (float)(j + omp_get_thread_num());
            for (int64_t i = 0; i < iters; i++)
                for (int j = 0; j < 8; j++) acc[j] = acc[j] * 0.999999f + 1e-7f;
            for (int j = 0; j < 8; j++) sink += acc[j];
#endif
        }
        double dt = omp_get_wtime() - t0;
        if (dt < best) best = dt;
    }
#if defined(__AVX512F__)
    flops_per_thread = (double)iters * 16 * 16 * 2;
    *vector_bits = 512;
#elif defined(__AVX2__) && defined(__FMA__)
    flops_per_thread = (double)iters * 12 * 8 * 2;
    *vector_bits = 256;
#else
    flops_per_thread = (double)iters * 8 * 2;
    *vector_bits = 32;
#endif
    *gflops = flops_per_thread * nthreads / best / 1e9;
    return sink == -1.0 ? GB_EINTERNAL : GB_OK;
}

/* ---- the int8 dot-product ceiling the quantized GEMMs are judged against ----------------------
 * Register-resident chains on every thread, best of `reps` runs of `iters` iterations, in GOP/s (a
 * multiply-add counted as 2 ops):
 *   kind 2, AVX-512 VNNI: 16 vpdpbusd chains (64 multiply-adds per instruction);
 *   kind 1, AVX2 only: 12 chains of the sequence the AVX2 kernels (qgemm_avx2, kquant_avx2) and
 *           ggml's AVX2 dots run per 32 byte pairs: vpmaddubsw (u8 x s8 -> 16 int16 pair sums) +
 *           vpmaddwd by ones (-> 8 int32) + vpaddd.
 * Named accumulators, not an array (gcc kept an array's chains partly on the stack, a store and
 * register copies per iteration, which understated the VNNI ceiling ~1.8x), and an empty asm per
 * iteration that keeps the chains in registers. 12 AVX2 chains of ~9 cycles' latency (two
 * multiplies and an add) cover the 12 cycles their 24 multiplies take on two multiply pipes. */
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#define I8_KIND 2
#define I8_PER_ITER (16.0 * 64.0)
#define I8_ACCS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
typedef __m512i i8vec;
#define I8_INIT(j) i8vec c##j = _mm512_set1_epi32(j + th);
#define I8_STEP(j) c##j = _mm512_dpbusd_epi32(c##j, a, b);
#define I8_KEEP(j) __asm__ volatile("" : "+v"(c##j));
#define I8_SUM(j) s = _mm512_add_epi32(s, c##j);
#define I8_CONSTS const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-1); __m512i s = _mm512_setzero_si512();
#define I8_REDUCE(part) part += _mm512_reduce_add_epi32(s);
#elif defined(__AVX2__)
#define I8_KIND 1
#define I8_PER_ITER (12.0 * 32.0)
#define I8_ACCS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
typedef __m256i i8vec;
#define I8_INIT(j) i8vec c##j = _mm256_set1_epi32(j + th);
/* the chain's own bytes as the unsigned operand: a product of loop-invariant operands would be
 * hoisted (or shared by the 12 chains), leaving only the adds in the loop */
#define I8_STEP(j) c##j = _mm256_add_epi32(c##j, _mm256_madd_epi16(_mm256_maddubs_epi16(c##j, b), one));
#define I8_KEEP(j) __asm__ volatile("" : "+x"(c##j));
#define I8_SUM(j) s = _mm256_add_epi32(s, c##j);
#define I8_CONSTS                                                                                        \
    const __m256i b = _mm256_set1_epi8(-1), one = _mm256_set1_epi16(1);                                \
    __m256i s = _mm256_setzero_si256();
#define I8_REDUCE(part)                                                                                  \
    {                                                                                                    \
        int32_t t_[8];                                                                                   \
        _mm256_storeu_si256((__m256i *)t_, s);                                                           \
        for (int j_ = 0; j_ < 8; j_++) part += t_[j_];                                                   \
    }
#else
#define I8_KIND 0
#endif

/* The VNNI ceiling of a kernel that also multiplies by a per-group scale (gb_bench_int8_scaled): per
 * iteration the 16 vpdpbusd chains plus `scales` (0..8) vpmulld + vpaddd into 8 other accumulators,
 * the op mix of the K-quant prefill tile (csrc/quant_k.c panel_tile: one vpmulld per 16 rows x token
 * and scale group, 4 vpdpbusd per 16-value group: q6_K 4 per 16, q4_K/q5_K/iq4_xs's 32-value groups 2;
 * q2_K/q3_K's vpdpwssd of two groups' scales 2). GOP/s counts the vpdpbusd multiply-adds only, the
 * useful work: the most such a tile can reach on this CPU where the multiplies share the
 * dot-product pipes (on Zen 4, 16 vpdpbusd + 4 vpmulld take 20 vpdpbusd slots). */
#if I8_KIND == 2
#define SC_CONSTS const __m512i sc = _mm512_set1_epi32(3 + th);
#define SC_ACCS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define SC_INIT(j) __m512i e##j = _mm512_set1_epi32(j);
#define SC_STEP(j) if (j < scales) e##j = _mm512_add_epi32(e##j, _mm512_mullo_epi32(c##j, sc));
#define SC_KEEP(j) if (j < scales) __asm__ volatile("" : "+v"(e##j));
#define SC_SUM(j) s = _mm512_add_epi32(s, e##j);
#else
#define SC_CONSTS
#define SC_ACCS(X)
#endif

#if I8_KIND
/* GOP/s on every thread, best of `reps` runs of `iters` iterations; `scales` a constant at each call
 * (always inlined: its branches fold away, the plain loop stays the plain loop) */
static inline __attribute__((always_inline)) double int8_run(int64_t iters, int reps, const int scales) {
    double best = 1e30;
    int nthreads = 1;
    volatile int32_t sink = 0;
    for (int r = 0; r < reps; r++) {
        const double t0 = omp_get_wtime();
        int32_t part = 0;
#pragma omp parallel reduction(+ : part)
        {
#pragma omp single
            nthreads = omp_get_num_threads();
            const int th = omp_get_thread_num();
            I8_CONSTS
            SC_CONSTS
            I8_ACCS(I8_INIT)
            SC_ACCS(SC_INIT)
            for (int64_t i = 0; i < iters; i++) {
                I8_ACCS(I8_STEP)
                SC_ACCS(SC_STEP)
                I8_ACCS(I8_KEEP)
                SC_ACCS(SC_KEEP)
            }
            I8_ACCS(I8_SUM)
            SC_ACCS(SC_SUM)
            I8_REDUCE(part)
        }
        const double dt = omp_get_wtime() - t0;
        sink += part;
        if (dt < best) best = dt;
    }
    (void)scales;
    return (double)nthreads * (double)iters * I8_PER_ITER * 2.0 / best * 1e-9;
}
#endif

static int int8_args(int64_t iters, int reps) {
    if (iters < 1 || reps < 1 || iters > GB_BENCH_MAX_ITERS || reps > GB_BENCH_MAX_REPS)
        return gb_error(GB_EVALUE, "bench: need 1 <= iters <= %ld and 1 <= reps <= %d, got %ld, %d",
                        (long)GB_BENCH_MAX_ITERS, GB_BENCH_MAX_REPS, (long)iters, reps);
    return GB_OK;
}

int gb_bench_int8(int64_t iters, int reps, double *gops, int *kind) {
    *gops = 0.0;
    *kind = 0;
    const int st = int8_args(iters, reps);
    if (st != GB_OK) return st;
#if I8_KIND
    *gops = int8_run(iters, reps, 0);
    *kind = I8_KIND;
    return GB_OK;
#else
    return gb_error(GB_EVALUE, "bench_int8: neither AVX-512 VNNI nor AVX2 is compiled in on this build");
#endif
}

int gb_bench_int8_scaled(int64_t iters, int reps, int scales, double *gops) {
    *gops = 0.0;
    const int st = int8_args(iters, reps);
    if (st != GB_OK) return st;
    if (scales < 0 || scales > 8)
        return gb_error(GB_EVALUE, "bench_int8: scales must be 0..8 multiplies per 16 dot products, got %d", scales);
#if I8_KIND == 2
    switch (scales) {
    case 0: *gops = int8_run(iters, reps, 0); break;
    case 1: *gops = int8_run(iters, reps, 1); break;
    case 2: *gops = int8_run(iters, reps, 2); break;
    case 3: *gops = int8_run(iters, reps, 3); break;
    case 4: *gops = int8_run(iters, reps, 4); break;
    case 5: *gops = int8_run(iters, reps, 5); break;
    case 6: *gops = int8_run(iters, reps, 6); break;
    case 7: *gops = int8_run(iters, reps, 7); break;
    default: *gops = int8_run(iters, reps, 8); break;
    }
    return GB_OK;
#else
    return gb_error(GB_EVALUE, "bench_int8: a scaled ceiling (scales > 0) needs AVX-512 VNNI, not compiled in on this build");
#endif
}

/* gb_bench_int8 where it runs vpdpbusd; GB_EVALUE elsewhere (the bench_vnni binding) */
int gb_bench_vnni(int64_t iters, int reps, double *gops) {
    int kind = 0;
    const int st = gb_bench_int8(iters, reps, gops, &kind);
    if (st != GB_OK) return st;
    if (kind != 2) {
        *gops = 0.0;
        return gb_error(GB_EVALUE, "bench_vnni: AVX-512 VNNI is not compiled in on this build");
    }
    return GB_OK;
}
