/* linear_attn.h: the Gated DeltaNet layer's two ops (Qwen3-Next / Qwen3.5 linear attention): the gated
 * delta rule recurrence and the causal depthwise conv1d in front of it; and Mamba-2's selective state
 * space scan (Nemotron-H / Granite-4.0-H hybrids), whose layer uses the same conv (with a bias). */
#ifndef GLMBENCH_LINEAR_ATTN_H
#define GLMBENCH_LINEAR_ATTN_H
#include <stdint.h>

/* HF's torch_recurrent_gated_delta_rule in float32, one value head per OpenMP iteration (tokens in
 * order within a head). q, k [T, Hk, dk]; v [T, Hv, dv]; g, beta [T, Hv]; state0 [Hv, dk, dv] or NULL
 * (zeros); Hv a multiple of Hk, value head h reading q/k head h / (Hv / Hk). If l2norm, q_t and k_t are
 * each scaled by 1 / sqrt(sum(x^2) + l2_eps) (the sum in float64); then q_t *= scale. Per token:
 *   S *= exp(g[t, h]); kv = k_t^T S; delta = (v_t - kv) * beta[t, h]; S += k_t delta^T; o[t, h] = q_t^T S.
 * Writes o [T, Hv, dv] and the final state [Hv, dk, dv]; neither may alias an input. */
int gb_gated_delta_rule(const float *q, const float *k, const float *v, const float *g, const float *beta,
                        const float *state0, float *o, float *state, int64_t T, int64_t Hk, int64_t Hv, int64_t dk,
                        int64_t dv, float scale, int l2norm, float l2_eps);

/* Causal depthwise conv1d over time: xx = [state0; x] ([K-1+T, C], state0 [K-1, C] oldest first, or NULL:
 * zeros); y[t, c] = sum_j w[c, j] * xx[t + j, c] (w [C, K]) + bias[c] (bias [C] or NULL: none), then
 * y * sigmoid(y) if silu; state (new, [K-1, C]) = the last K-1 rows of xx. y and state must not alias the
 * inputs. */
int gb_causal_conv1d(const float *x, const float *w, const float *bias, const float *state0, float *y, float *state,
                     int64_t T, int64_t C, int64_t K, int silu);

/* Mamba-2's selective scan (HF's Mamba-2 mixer, its cache-update step token by token; llama.cpp's
 * ggml_ssm_scan), one head per OpenMP iteration, its tokens in order (its state rows in blocks through
 * chunks of tokens: each entry sees the same operations as token by token). x [T, H, P]; dt [T, H]; A [H];
 * B, C [T, G, N] (head h reads group h / (H / G)); D, dt_bias [H] or NULL (none); state0 [H, P, N] or NULL
 * (zeros). Per token and head: d = dt + dt_bias; d = softplus(d) if dt_softplus (d > 20: d, as torch);
 * d = min(max(d, dt_min), dt_max); S = S * exp(d * A[h]) + (d * x) B^T; y = S C + D[h] * x.
 * Writes y [T, H, P] and the final state [H, P, N]; neither may alias an input. */
int gb_ssm_scan(const float *x, const float *dt, const float *A, const float *B, const float *C, const float *D,
                const float *dt_bias, const float *state0, float *y, float *state, int64_t T, int64_t H, int64_t P,
                int64_t G, int64_t N, int dt_softplus, float dt_min, float dt_max);

#endif
