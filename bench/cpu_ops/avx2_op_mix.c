/* Throughput of the AVX2 integer-dot-product instruction mixes the quantized GEMM tiles use
 * (csrc/quant_iq.c, csrc/quant_k.c), on this CPU: independent chains in asm loops, cycles from a
 * dependent vpaddd chain measured in the same run (1 cycle latency). Build and run:
 *   gcc -O2 -mavx2 -o /tmp/avx2_op_mix bench/cpu_ops/avx2_op_mix.c && /tmp/avx2_op_mix
 * Each "group" is one 8-row x 4-value ymm of products (32 multiply-adds) for one token; every figure
 * is the best of 7 runs. Results: bench/results/avx2_op_mix_*. */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
static int8_t buf[4096] __attribute__((aligned(64)));
#define N_ITER 20000000L
#define RUN(var, body)                                                                                          \
    do {                                                                                                        \
        long n = N_ITER;                                                                                        \
        const int8_t *p = buf;                                                                                  \
        double t0_ = now();                                                                                     \
        __asm__ volatile("vpxor %%ymm0,%%ymm0,%%ymm0\n vpcmpeqb %%ymm15,%%ymm15,%%ymm15\n vpabsb %%ymm15,%%ymm14\n" \
                         "vmovdqa %%ymm14,%%ymm12\n vmovdqa %%ymm14,%%ymm13\n"                                 \
                         "1:\n" body "\n dec %0\n jnz 1b\n"                                                     \
                         : "+r"(n)                                                                              \
                         : "r"(p)                                                                               \
                         : "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",    \
                           "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");                       \
        var = (now() - t0_) / N_ITER;                                                                           \
    } while (0)
#define X8(op) op(1) op(2) op(3) op(4) op(5) op(6) op(7) op(8)
#define CAL(i) "vpaddd %%ymm14,%%ymm1,%%ymm1\n"
/* one op type, 8 independent chains */
#define MUB(i) "vpmaddubsw %%ymm14,%%ymm" #i ",%%ymm" #i "\n"
#define MWD(i) "vpmaddwd %%ymm14,%%ymm" #i ",%%ymm" #i "\n"
#define SGN(i) "vpsignb %%ymm14,%%ymm" #i ",%%ymm" #i "\n"
#define SHF(i) "vpshufb %%ymm14,%%ymm" #i ",%%ymm" #i "\n"
#define ADD(i) "vpaddd %%ymm14,%%ymm" #i ",%%ymm" #i "\n"
/* pairs: vpmaddubsw with another op (do they share pipes?) */
#define P_MWD(i) MUB(i) "vpmaddwd %%ymm14,%%ymm15,%%ymm9\n"
#define P_SGN(i) MUB(i) "vpsignb %%ymm14,%%ymm15,%%ymm9\n"
#define P_SHF(i) MUB(i) "vpshufb %%ymm14,%%ymm15,%%ymm9\n"
#define P_BC(i) MUB(i) "vpbroadcastd 8(%1),%%ymm9\n"
/* the tiles' per-token groups */
#define G_NL(i) "vpbroadcastd " #i "*4(%1),%%ymm10\n vpsignb %%ymm12,%%ymm10,%%ymm10\n vpmaddubsw %%ymm10,%%ymm13,%%ymm10\n" \
                "vpmaddwd %%ymm14,%%ymm10,%%ymm10\n vpaddd %%ymm10,%%ymm" #i ",%%ymm" #i "\n"
#define G_MX(i) "vpbroadcastd " #i "*4(%1),%%ymm10\n vpbroadcastd " #i "*4+16(%1),%%ymm11\n"                        \
                "vpmaddubsw %%ymm10,%%ymm12,%%ymm10\n vpmaddubsw %%ymm11,%%ymm13,%%ymm11\n vpaddw %%ymm10,%%ymm11,%%ymm10\n" \
                "vpmaddwd %%ymm14,%%ymm10,%%ymm10\n vpaddd %%ymm10,%%ymm" #i ",%%ymm" #i "\n"
#define G_WD(i) "vpbroadcastd " #i "*4(%1),%%ymm10\n vpbroadcastd " #i "*4+64(%1),%%ymm11\n"                        \
                "vpmaddwd %%ymm10,%%ymm12,%%ymm10\n vpmaddwd %%ymm11,%%ymm13,%%ymm11\n vpaddd %%ymm10,%%ymm11,%%ymm10\n" \
                "vpaddd %%ymm10,%%ymm" #i ",%%ymm" #i "\n"

int main(void) {
    double c, t;
    c = 1e9;
    for (int r = 0; r < 7; r++) { /* 24 dependent adds, best of 7 */
        double c1;
        RUN(c1, X8(CAL) X8(CAL) X8(CAL));
        if (c1 < c) c = c1;
    }
    c /= 24;
    printf("cycle %.3f ns (%.2f GHz)\n", c * 1e9, 1e-9 / c);
#define SHOW(name, body, per, unit) /* best of 7: a shared VM's neighbours slow some runs */                  \
    do {                                                                                                        \
        t = 1e9;                                                                                                \
        for (int r_ = 0; r_ < 7; r_++) {                                                                        \
            double t1_;                                                                                         \
            RUN(t1_, body);                                                                                     \
            if (t1_ < t) t = t1_;                                                                               \
        }                                                                                                       \
        printf("%-44s %.2f cycles per %s\n", name, t / c / (per), unit);                                      \
    } while (0)
    SHOW("vpmaddubsw", X8(MUB), 8, "op");
    SHOW("vpmaddwd", X8(MWD), 8, "op");
    SHOW("vpsignb", X8(SGN), 8, "op");
    SHOW("vpshufb", X8(SHF), 8, "op");
    SHOW("vpaddd", X8(ADD), 8, "op");
    SHOW("vpmaddubsw + vpmaddwd", X8(P_MWD), 8, "pair");
    SHOW("vpmaddubsw + vpsignb", X8(P_SGN), 8, "pair");
    SHOW("vpmaddubsw + vpshufb", X8(P_SHF), 8, "pair");
    SHOW("vpmaddubsw + vpbroadcastd (load)", X8(P_BC), 8, "pair");
    SHOW("iq4_nl group (bcast, sign, maddubs, maddwd, add)", X8(G_NL), 8, "32 multiply-adds");
    SHOW("mxfp4 group (2 bcast, 2 maddubs, addw, maddwd, add)", X8(G_MX), 16, "32 multiply-adds");
    SHOW("int16 group (2 bcast, 2 maddwd, 2 add)", X8(G_WD), 8, "32 multiply-adds");
    return 0;
}
