/* One q4_K decode GEMV call (gb_klinear_packed, T = 1) timed from C, with no Python in the loop:
 * `ncopy` repacked copies of a random [N, K] matrix are called in turn, so with enough copies
 * (200 MB / matrix size) every call reads its weights from DRAM, as a layer of a whole model
 * does. Prints the best and the mean time per call and GB/s. Build (from the repository root) and run:
 *   gcc -O3 -march=native -std=c11 -fopenmp -fno-strict-aliasing -Icsrc bench/cpu_ops/kgemv_call.c \
 *     csrc/{quant_k,common,quant,quant_iq,qgemm,linear,hgemm,moe_k,moe}.c -I$OB/include -L$OB/lib \
 *     -lscipy_openblas -Wl,-rpath,$OB/lib -lm -o /tmp/kgemv_call      # OB: the scipy_openblas32 package dir
 *   OMP_NUM_THREADS=2 /tmp/kgemv_call N K ITERS NCOPY [PFKB]
 * Results: bench/results/session23_gemv_call_cost_zen2_2026-12-04.md. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <omp.h>
#include "quant_k.h"
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char **argv) {
    int64_t N = atoll(argv[1]), K = atoll(argv[2]);
    int iters = atoi(argv[3]), ncopy = atoi(argv[4]);
    /* optional: before each call, prefetch the first PFKB KB at the six places the next copy's
     * streams start (2 threads x 3 streams: k/6 of the matrix, the guided schedule's first grabs),
     * as a layer could for its next matrix; the prefetches are inside the timed interval */
    int pfkb = argc > 5 ? atoi(argv[5]) : 0;
    int64_t rb = K / 256 * 144, pb = gb_kp_bytes(GB_Q4_K, N, K);
    uint8_t *w = malloc(N * rb);
    srand(1);
    for (int64_t i = 0; i < N * rb; i++) w[i] = rand();
    for (int64_t r = 0; r < N * K / 256; r++) { uint16_t h = 0x1400; memcpy(w + r * 144, &h, 2); memcpy(w + r * 144 + 2, &h, 2); }
    uint8_t **p = malloc(ncopy * sizeof(void *));
    for (int c = 0; c < ncopy; c++) { p[c] = aligned_alloc(64, (pb + 63) / 64 * 64); gb_krepack(GB_Q4_K, w, p[c], N, K); }
    float *x = malloc(K * 4), *y = malloc(N * 4);
    for (int64_t i = 0; i < K; i++) x[i] = (float)(i % 7) - 3.0f;
    double best = 1e9, tot = 0;
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
            gb_klinear_packed(GB_Q4_K, x, p[c], NULL, y, 1, N, K, 0);
            double dt = now() - t0;
            if (dt < best) best = dt;
            tot += dt;
        }
    }
    double med = tot / (iters * ncopy);
    printf("N=%ld K=%ld %.1f KB: best %.2f us (%.1f GB/s) mean %.2f us (%.1f GB/s), threads %d\n", (long)N, (long)K,
           pb / 1e3, best * 1e6, pb / best / 1e9, med * 1e6, pb / med / 1e9, omp_get_max_threads());
    return 0;
}
