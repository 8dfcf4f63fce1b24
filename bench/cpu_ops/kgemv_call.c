/* One packed decode GEMV call (T = 1: gb_klinear_packed for the K formats and iq4_xs, gb_iqlinear_packed
 * for iq4_nl and mxfp4) timed from C, with no Python in the loop: `ncopy` repacked copies of a random
 * [N, K] matrix are called in turn, so with enough copies (200 MB / matrix size) every call reads its
 * weights from DRAM, as a layer of a whole model does; with one copy that fits the L2 (e.g. 512 x 2048
 * at 1 thread) it measures the kernel's compute rate (take the difference of two N to drop the fixed
 * cost of a call). Prints the best and the mean time per call and GB/s of the packed bytes.
 * Build (from the repository root) and run:
 *   gcc -O3 -march=native -std=c11 -fopenmp -fno-strict-aliasing -Icsrc bench/cpu_ops/kgemv_call.c \
 *     csrc/{quant_k,common,quant,quant_iq,qgemm,linear,hgemm,moe_k,moe}.c -I$OB/include -L$OB/lib \
 *     -lscipy_openblas -Wl,-rpath,$OB/lib -lm -o /tmp/kgemv_call      # OB: the scipy_openblas32 package dir
 *   OMP_NUM_THREADS=2 /tmp/kgemv_call N K ITERS NCOPY [PFKB [FORMAT]]
 * FORMAT: q4_K (default), q5_K, q6_K, iq4_xs, iq4_nl, mxfp4, q4_0, q8_0 (gb_qgemm's packed rows), bf16
 * (gb_linear's rows as stored). Results: bench/results/
 * session23_gemv_call_cost_zen2_2026-12-04.md (q4_K), session24_iq4_gemv_zen2_2026-12-04.md,
 * session25_q4_0_q8_0_gemv_zen2_2026-12-04.md (q4_0, q8_0, bf16, every format's cache-resident rate). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <omp.h>
#include "common.h"
#include "quant.h"
#include "quant_iq.h"
#include "quant_k.h"
#include "qgemm.h"
#include "linear.h"
static int cmp_d(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char **argv) {
    int64_t N = atoll(argv[1]), K = atoll(argv[2]);
    int iters = atoi(argv[3]), ncopy = atoi(argv[4]);
    /* optional: before each call, prefetch the first PFKB KB at the six places the next copy's
     * streams start (2 threads x 3 streams: k/6 of the matrix, the guided schedule's first grabs),
     * as a layer could for its next matrix; the prefetches are inside the timed interval */
    int pfkb = argc > 5 ? atoi(argv[5]) : 0;
    const char *f = argc > 6 ? argv[6] : "q4_K";
    /* the format's block: bytes, values, the offsets of its f16 scales (set to 2^-10 so the sums stay
     * finite; the other bytes random) */
    int fmt, iq = 0, nd = 2, doff[2] = {0, 2};
    int64_t bb, qk = 256;
    if (!strcmp(f, "q4_K")) { fmt = GB_Q4_K; bb = 144; }
    else if (!strcmp(f, "q5_K")) { fmt = GB_Q5_K; bb = 176; }
    else if (!strcmp(f, "q6_K")) { fmt = GB_Q6_K; bb = 210; nd = 1; doff[0] = 208; }
    else if (!strcmp(f, "iq4_xs")) { fmt = GB_IQ4_XS; bb = 136; nd = 1; }
    else if (!strcmp(f, "iq4_nl")) { fmt = GB_IQ4_NL; bb = 18; qk = 32; nd = 1; iq = 1; }
    else if (!strcmp(f, "mxfp4")) { fmt = GB_MXFP4; bb = 17; qk = 32; nd = 0; iq = 1; }
    else if (!strcmp(f, "q4_0")) { fmt = GB_Q4_0; bb = 18; qk = 32; nd = 1; iq = 2; }
    else if (!strcmp(f, "q8_0")) { fmt = GB_Q8_0; bb = 34; qk = 32; nd = 1; iq = 2; }
    else if (!strcmp(f, "bf16")) { fmt = GB_BF16; bb = 2; qk = 1; nd = 0; iq = 3; } /* gb_linear's float rows */
    else { fprintf(stderr, "unknown format %s\n", f); return 2; }
    if (N <= 0 || K <= 0 || K % qk || iters <= 0 || ncopy <= 0) { fprintf(stderr, "bad N, K, ITERS or NCOPY\n"); return 2; }
    int64_t rb = K / qk * bb, pb = iq == 3 ? N * K * 2 : iq == 2 ? gb_qpacked_bytes(fmt, N, K) : iq ? gb_iqp_bytes(fmt, N, K) : gb_kp_bytes(fmt, N, K);
    uint8_t *w = malloc(N * rb);
    srand(1);
    for (int64_t i = 0; i < N * rb; i++) w[i] = rand();
    for (int64_t r = 0; r < N * K / qk; r++) {
        uint16_t h = 0x1400;
        for (int j = 0; j < nd; j++) memcpy(w + r * bb + doff[j], &h, 2);
        if (fmt == GB_MXFP4) w[r * bb] = 120; /* E8M0 2^-8 */
    }
    uint8_t **p = malloc(ncopy * sizeof(void *));
    for (int c = 0; c < ncopy; c++) {
        /* 2 MB aligned and, with GB_HUGE=1 in the environment, madvised for transparent huge pages
         * (NumPy does so for its large arrays, so glmbench's weights are on huge pages) */
        const size_t sz = (size_t)(pb + (2 << 20) - 1) / (2 << 20) * (2 << 20);
        p[c] = aligned_alloc(2 << 20, sz);
        if (getenv("GB_HUGE") && atoi(getenv("GB_HUGE"))) madvise(p[c], sz, MADV_HUGEPAGE);
        if (iq == 3) { /* bf16 of small values: the high halves of floats in [-1, 1) / 64 */
            for (int64_t i = 0; i < N * K; i++) {
                float v = ((float)(rand() % 2048) - 1024.0f) / 65536.0f;
                uint32_t u;
                memcpy(&u, &v, 4);
                ((uint16_t *)p[c])[i] = (uint16_t)(u >> 16);
            }
        } else if (iq == 2) gb_qrepack(fmt, w, p[c], N, K);
        else if (iq) gb_iqrepack(fmt, w, p[c], N, K);
        else gb_krepack(fmt, w, p[c], N, K);
    }
    float *x = malloc(K * 4), *y = malloc(N * 4);
    for (int64_t i = 0; i < K; i++) x[i] = (float)(i % 7) - 3.0f;
    double best = 1e9, tot = 0, *dts = malloc((size_t)iters * ncopy * sizeof(double));
    int ndt = 0;
    for (int it = 0; it < iters; it++) {
        for (int c = 0; c < ncopy; c++) {
            double t0 = now();
            if (pfkb > 0) {
                const uint8_t *nx = p[(c + 1) % ncopy];
                for (int k = 0; k < 6; k++) {
                    const uint8_t *b = nx + (pb * k / 6) / 64 * 64;
                    for (int64_t o = 0; o < (int64_t)pfkb * 1024 && (b - nx) + o < pb; o += 64) __builtin_prefetch(b + o, 0, 1);
                }
            }
            const int rc = iq == 3 ? gb_linear(x, 1, K, p[c], GB_BF16, N, NULL, y)
                         : iq == 2 ? gb_qgemm(fmt, x, p[c], NULL, y, 1, N, K, GB_QG_AUTO)
                         : iq ? gb_iqlinear_packed(fmt, x, p[c], NULL, y, 1, N, K, 0) : gb_klinear_packed(fmt, x, p[c], NULL, y, 1, N, K, 0);
            if (rc != GB_OK) { fprintf(stderr, "the GEMV failed (%d)\n", rc); return 1; }
            double dt = now() - t0;
            if (dt < best) best = dt;
            tot += dt;
            dts[ndt++] = dt;
        }
    }
    double med = tot / (iters * ncopy);
    qsort(dts, (size_t)ndt, sizeof(double), cmp_d);
    printf("%s N=%ld K=%ld %.1f KB: best %.2f us (%.1f GB/s) mean %.2f us (%.1f GB/s), threads %d; p10/p50/p90 %.1f/%.1f/%.1f us\n",
           f, (long)N, (long)K, pb / 1e3, best * 1e6, pb / best / 1e9, med * 1e6, pb / med / 1e9, omp_get_max_threads(),
           dts[ndt / 10] * 1e6, dts[ndt / 2] * 1e6, dts[ndt * 9 / 10] * 1e6);
    return 0;
}
