/* moe_k.h: routed experts whose weights are in a format read as stored by csrc/quant_k.c
 * (q2_K..q6_K, iq4_xs) or csrc/quant_iq.c (iq4_nl, mxfp4), in one call (csrc/moe_k.c). */
#ifndef GLMBENCH_MOE_K_H
#define GLMBENCH_MOE_K_H
#include <stdint.h>

/* gate/up [E] x [F, D] rows in formats fg/fu, down [E] x [D, F] in fd (each expert's matrix
 * contiguous, E of them back to back, as a GGUF's stacked ffn_*_exps). The tokens routed to each
 * expert are gathered, run through gate and up (gb_klinear / gb_iqlinear: activations quantized
 * per row, integer block dots), h = SiLU(g) * u in float32, through down, and y[t] (zeroed here) =
 * sum_j topk_weight[t, j] * out(t, j) in j order. counts[E] gets the tokens per expert. The loop
 * over experts is in C; each GEMM is OpenMP-parallel over its rows. */
int gb_kmoe(const float *x, const int64_t *topk_idx, const float *topk_weight, int64_t T, int64_t k, int fg,
            const void *gate, int fu, const void *up, int fd, const void *down, int64_t E, int64_t F, int64_t D,
            float *y, int64_t *counts, int version);

/* As gb_kmoe with gate/up/down repacked (gb_krepack per expert, [E] x gb_kp_bytes each; q4_K,
 * q5_K, q6_K, iq4_xs): decode-sized batches split over (expert, matrix, 16-row group) in one
 * parallel region, so every thread streams a share of each selected expert. Bit-identical to gb_kmoe. */
int gb_kmoe_packed(const float *x, const int64_t *topk_idx, const float *topk_weight, int64_t T, int64_t k, int fg,
                   const void *gate, int fu, const void *up, int fd, const void *down, int64_t E, int64_t F, int64_t D,
                   float *y, int64_t *counts, int version);

#endif
