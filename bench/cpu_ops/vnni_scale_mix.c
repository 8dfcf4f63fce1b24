/* What a per-group scale costs beside AVX-512 VNNI dot products, on this CPU: the K-quant prefill
 * tile (csrc/quant_k.c panel_tile) sums 4 vpdpbusd per 16-value group (16 rows x 4 values each, one
 * token) and then multiplies the group's int32 sums by the rows' scales. Each mix below is one such
 * group: 4 vpdpbusd into a fresh sum, then the scale applied one way, over 8 independent groups per
 * loop step (no chain waits on another); cycles from a dependent vpaddd chain timed in the same run
 * (1 cycle latency). The ways to apply the scale:
 *   mulld+add     vpmulld by the scales, vpaddd into the row's running sum (what the tile does: exact)
 *   pshufb+dpwssd the sum's bytes rearranged to the int16 pair (bits 0-7, bits 8-23) by one vpshufb,
 *                 then one vpdpwssd against the pair (scale, 256 x scale): exact for |sum| < 2^23 and
 *                 scales in [-128, 127], and it accumulates (no vpaddd)
 *   cvt+fma       vcvtdq2ps and one vfmadd231ps by a float scale (float sums: not the exact int32)
 *   cvt only      vcvtdq2ps and a vpxor (what the conversion alone costs)
 *   cvt+mul+add   vcvtdq2ps, vmulps, vaddps (the tile's float32 step per super-block: (d*dx) * isum,
 *                 added to the output, unfused as the portable arithmetic it matches)
 *   8dp+mulld+add one vpmulld per 8 vpdpbusd (scales per 32 values: q4_K, q5_K, iq4_xs)
 *   none          the 4 vpdpbusd alone, accumulating (the plain VNNI rate)
 * The scales pass through an empty asm statement before each loop: a constant gcc can see turns
 * vpmulld into shifts and adds (a multiply by 3 is x + 2x), which is not what the tile runs.
 * Build and run:
 *   gcc -O2 -march=native -o /tmp/vnni_scale_mix bench/cpu_ops/vnni_scale_mix.c && /tmp/vnni_scale_mix [ITERS]
 * (ITERS: loop steps per run, default 10000000; tests/test_cpu_ops.py runs it with a few)
 * Results: bench/results/vnni_scale_mix_zen4_s37_2026-12-05.md. */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
#define NG 8 /* independent groups per loop step */
#define DP4(a, w, x)                                                                                            \
    a = _mm512_dpbusd_epi32(a, w, x);                                                                           \
    a = _mm512_dpbusd_epi32(a, x, w);                                                                           \
    a = _mm512_dpbusd_epi32(a, w, x);                                                                           \
    a = _mm512_dpbusd_epi32(a, x, w)

static __m512i sink[NG];

/* One mix: ST the running sums' type (ZERO its zero, OUT them as integers for the sink), SC the scale
 * (declared, then hidden from the compiler), A0 a group's start, DPS its dot products, STEP the scale
 * step on its sum `a` into s[i] */
#define MIX(name, ST, ZERO, OUT, SC, A0, DPS, STEP)                                                            \
    __attribute__((noinline)) static void name(long iters) {                                                    \
        ST s[NG];                                                                                               \
        __m512i w = _mm512_set1_epi32(0x01020304), x = _mm512_set1_epi32(0x05060708);                           \
        SC;                                                                                                     \
        for (int i = 0; i < NG; i++) s[i] = ZERO;                                                               \
        for (long it = 0; it < iters; it++)                                                                     \
            for (int i = 0; i < NG; i++) {                                                                      \
                __m512i a = A0;                                                                                 \
                __asm__("" : "+v"(w), "+v"(x));                                                                 \
                DPS;                                                                                            \
                STEP;                                                                                           \
            }                                                                                                   \
        for (int i = 0; i < NG; i++) sink[i] = OUT;                                                             \
    }
#define ISC(v) __m512i sc = _mm512_set1_epi32(v); __asm__("" : "+v"(sc))
#define FSC __m512 sc = _mm512_set1_ps(3.0f); __asm__("" : "+v"(sc))
#define IZ _mm512_setzero_si512()
#define FZ _mm512_setzero_ps()

MIX(mix_none, __m512i, IZ, s[i], (void)0, s[i], DP4(a, w, x), s[i] = a)
MIX(mix_mulld, __m512i, IZ, s[i], ISC(3), IZ, DP4(a, w, x), s[i] = _mm512_add_epi32(s[i], _mm512_mullo_epi32(a, sc)))
/* the pair (s, 256 s) against the sum's (bits 0-7, bits 8-23): bytes b0, 0, b1, b2 of each dword */
MIX(mix_pshufb_dpwssd, __m512i, IZ, s[i], ISC(3 | (768 << 16)); const __m512i ctl = _mm512_set4_epi32(0x0e0d800c, 0x0a098008, 0x06058004, 0x02018000),
    IZ, DP4(a, w, x), s[i] = _mm512_dpwssd_epi32(s[i], _mm512_shuffle_epi8(a, ctl), sc))
MIX(mix_cvt_fma, __m512, FZ, _mm512_castps_si512(s[i]), FSC, IZ, DP4(a, w, x),
    s[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a), sc, s[i]))
MIX(mix_cvt, __m512i, IZ, s[i], (void)0, IZ, DP4(a, w, x), s[i] = _mm512_xor_si512(s[i], _mm512_castps_si512(_mm512_cvtepi32_ps(a))))
/* the vmulps kept apart from the add: gcc contracts mul + add into an FMA outside -std=c11 */
MIX(mix_cvt_mul_add, __m512, FZ, _mm512_castps_si512(s[i]), FSC, IZ, DP4(a, w, x),
    __m512 m = _mm512_mul_ps(_mm512_cvtepi32_ps(a), sc); __asm__("" : "+v"(m)); s[i] = _mm512_add_ps(s[i], m))
MIX(mix_8dp_mulld, __m512i, IZ, s[i], ISC(3), IZ, DP4(a, w, x); DP4(a, w, x), s[i] = _mm512_add_epi32(s[i], _mm512_mullo_epi32(a, sc)))

/* the cycle: a dependent vpaddd chain, 8 adds per step */
__attribute__((noinline)) static void chain(long iters) {
    __m512i a = _mm512_set1_epi32(1), b = _mm512_set1_epi32(2);
    for (long it = 0; it < iters; it++) {
        for (int k = 0; k < 8; k++) {
            a = _mm512_add_epi32(a, b);
            __asm__("" : "+v"(a));
        }
    }
    sink[0] = a;
}

static double best_of(void (*f)(long), long iters, int reps) {
    double b = 1e30;
    for (int r = 0; r < reps; r++) {
        const double t = now();
        f(iters);
        const double dt = now() - t;
        if (dt < b) b = dt;
    }
    return b;
}

int main(int argc, char **argv) {
    const long iters = argc > 1 ? atol(argv[1]) : 10000000;
    if (iters < 1) {
        fprintf(stderr, "ITERS must be a positive integer, got %s\n", argv[1]);
        return 2;
    }
    const int reps = 7;
    const double cyc = best_of(chain, iters, reps) / ((double)iters * 8);
    struct {
        const char *name;
        void (*f)(long);
        int dp; /* vpdpbusd per group */
    } m[] = {{"none (4 vpdpbusd)", mix_none, 4},     {"mulld+add", mix_mulld, 4}, {"pshufb+dpwssd", mix_pshufb_dpwssd, 4},
             {"cvt+fma", mix_cvt_fma, 4},            {"cvt only", mix_cvt, 4},    {"cvt+mul+add", mix_cvt_mul_add, 4},
             {"8dp+mulld+add", mix_8dp_mulld, 8}};
    printf("one core; cycle %.3f ns (%.2f GHz) from a dependent vpaddd chain; best of %d runs\n", cyc * 1e9, 1e-9 / cyc, reps);
    printf("%-20s %14s %18s %16s %22s\n", "scale applied by", "cycles/group", "vpdpbusd/cycle", "x plain rate",
           "extra, vpdpbusd slots");
    double plain = 0; /* cycles per vpdpbusd, no scale */
    for (unsigned k = 0; k < sizeof m / sizeof m[0]; k++) {
        const double c = best_of(m[k].f, iters, reps) / ((double)iters * NG) / cyc;
        if (k == 0) plain = c / m[k].dp;
        printf("%-20s %14.2f %18.2f %16.2f %22.2f\n", m[k].name, c, m[k].dp / c, plain * m[k].dp / c, c / plain - m[k].dp);
    }
    int32_t s = 0;
    for (int i = 0; i < NG; i++) s += _mm512_reduce_add_epi32(sink[i]);
    return s == 12345 ? 3 : 0; /* the sums are read, so no loop is dead code; 12345 cannot come out */
}
