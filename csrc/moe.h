/* moe.h: mixture-of-experts routing and expert dispatch. */
#ifndef GLMBENCH_MOE_H
#define GLMBENCH_MOE_H
#include <stdint.h>
#include <string.h>

enum { GB_SCORE_SIGMOID = 0, GB_SCORE_SOFTMAX = 1 };
/* How a group of experts is scored for group-limited routing (n_group > 1); fixed by the
 * model's topk_method: noaux_tc sums the top-2 choices, group_limited_greedy takes the max. */
enum { GB_GROUP_TOP2_SUM = 0, GB_GROUP_MAX = 1 };

/* Router: logits = x[T, D] . w_router[E, D]^T, then per token
 *   sigmoid (GLM-4.7-Flash, DeepSeek-V3 "noaux_tc"): s = sigmoid(logits); choice = s + bias (bias
 *     only chooses); groups of E/n_group experts scored by the sum of their top-2 choices (top-1
 *     when a group holds one expert); the topk_group best groups are kept; top_k experts by choice
 *     among the kept groups; weights = s of the chosen.
 *     group_score must be GB_GROUP_TOP2_SUM.
 *   softmax (DeepSeek-V2 "greedy" with n_group = 1, "group_limited_greedy", Qwen3-MoE):
 *     s = softmax(logits); choice = s (+ bias if given); with n_group > 1 each group is scored by
 *     its MAX choice and the topk_group best groups are kept; top_k experts by choice among the
 *     kept groups; weights = s of the chosen. group_score must be GB_GROUP_MAX.
 * then, if norm_topk_prob, w /= (sum w + 1e-20); w *= scaling.
 * Logits, scores and choices are float64 (x and the router weight promoted), so choices equal the
 * float64 reference except on differences below ~1e-15 relative. Ties go to the LOWER expert
 * (and group) index; each output row is ordered by descending choice.
 * Experts outside the kept groups are excluded outright (vLLM's -inf masking; HF's deepseek_v3
 * and deepseek_v2 fill them with 0.0 instead, which differs only if every kept choice is <= 0). */
int gb_moe_route(const float *x, int64_t T, int64_t D, const float *w_router, int64_t E, int64_t top_k,
                 int scoring, const float *bias, int64_t n_group, int64_t topk_group, int group_score,
                 int norm_topk_prob, double scaling, int32_t *topk_idx, float *topk_weight);

/* y[T, D] = sum_j topk_weight[t, j] * Expert_{topk_idx[t, j]}(x[t]), Expert_e = SwiGLU with
 * w_gate[e], w_up[e] ([F, D] each) and w_down[e] ([D, F]), in formats fmt_gate/fmt_up/fmt_down.
 * Grouped by expert: the tokens routed to each expert are gathered and the expert runs once over
 * them, so its weights are read once per call. When every expert has <= 64 tokens (decode, and
 * MoE prefill chunks) and gate/up share a format, all experts run in two parallel regions of
 * register-tile kernels; otherwise one expert at a time through gb_swiglu (sgemm for big groups).
 * Contributions are added in ascending expert order (deterministic for any thread count).
 * counts[e] = number of (token, slot) pairs routed to e. Indices must lie in [0, E). */
/* The shared expert(s) of a MoE block (GLM-4.7-Flash, DeepSeek-V2): one SwiGLU of width F over
 * every token, gate/up [F, D] and down [D, F], added with weight 1 after the routed experts. */
typedef struct {
    const void *gate, *up, *down;
    int fmt_gate, fmt_up, fmt_down;
    int64_t F;
} gb_shared_expert;

/* shared may be NULL. Decode (T = 1, no expert named twice, gate/up in one format; shared gate/up
 * in one format): every matrix, the shared expert's included, is one set of row-chunk work items
 * in the same two parallel regions (no separate SwiGLU call and its two joins). */
int gb_moe_experts(const float *x, int64_t T, int64_t D, const int32_t *topk_idx, const float *topk_weight,
                   int64_t top_k, const void *w_gate, int fmt_gate, const void *w_up, int fmt_up,
                   const void *w_down, int fmt_down, int64_t E, int64_t F, const gb_shared_expert *shared,
                   float *y, int64_t *counts);

/* The routing checks and counts of the byte-stored expert paths (gb_qmoe, gb_kmoe): the flat index
 * of the first topk_idx[T, k] entry outside [0, E) (nothing written), or -1 after zeroing y[T, D]
 * and counting each expert's rows into counts[E]. */
static inline int64_t gb_count_routes(const int64_t *topk_idx, int64_t T, int64_t k, int64_t E, int64_t D, float *y,
                                      int64_t *counts) {
    for (int64_t i = 0; i < T * k; i++)
        if (topk_idx[i] < 0 || topk_idx[i] >= E) return i;
    memset(y, 0, (size_t)(T * D) * sizeof(float));
    for (int64_t e = 0; e < E; e++) counts[e] = 0;
    for (int64_t i = 0; i < T * k; i++) counts[topk_idx[i]]++;
    return -1;
}

/* Rows grouped expert by expert (the byte-stored expert paths: gb_qmoe in qgemm.c, gb_kmoe in
 * moe_k.c). counts[e]: the rows routed to expert e; off: E + 1 entries, off[0] = 0 on entry; fill:
 * E zeros. Out: off[e] .. off[e+1] are e's rows, pos[t*k+j] the row of token t's j-th choice,
 * tok[p] the token of row p (tokens in order within each expert). */
static inline void gb_group_rows(const int64_t *topk_idx, int64_t T, int64_t k, int64_t E, const int64_t *counts,
                                 int64_t *off, int64_t *fill, int64_t *pos, int64_t *tok) {
    for (int64_t e = 0; e < E; e++) off[e + 1] = off[e] + counts[e];
    for (int64_t t = 0; t < T; t++)
        for (int64_t j = 0; j < k; j++) {
            const int64_t e = topk_idx[t * k + j], p = off[e] + fill[e]++;
            pos[t * k + j] = p;
            tok[p] = t;
        }
}

/* y[t] += sum_j topk_weight[t, j] o[pos[t, j]]: the routed experts' outputs (rows of o, D wide,
 * grouped by expert; pos from gb_group_rows) weighted back into each token's row, for tokens t0..t1-1. */
static inline void gb_moe_combine(float *y, const float *o, const int64_t *pos, const float *topk_weight, int64_t t0,
                                  int64_t t1, int64_t k, int64_t D) {
    for (int64_t t = t0; t < t1; t++) {
        float *yr = y + t * D;
        for (int64_t j = 0; j < k; j++) {
            const float wgt = topk_weight[t * k + j];
            const float *orow = o + pos[t * k + j] * D;
            for (int64_t d = 0; d < D; d++) yr[d] += wgt * orow[d];
        }
    }
}

#endif
