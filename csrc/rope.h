/* rope.h: rotary position embedding on a slice of each head. */
#ifndef GLMBENCH_ROPE_H
#define GLMBENCH_ROPE_H
#include <stdint.h>

enum {
    GB_ROPE_INTERLEAVED = 0, /* pairs (x0,x1),(x2,x3)...: GLM-4.7-Flash / DeepSeek rope dims */
    GB_ROPE_HALF = 1         /* pairs (x_i, x_{i+rot_dim/2}): Llama/Qwen3 rotate_half */
};

/* y = x with x[t, h, off:off+rot_dim] rotated by angle pos[t] * inv_freq[i] for pair i, where
 * inv_freq[rot_dim/2] (float64) is given (scaled rope: YaRN, linear) or, when NULL, is
 * theta^(-2i/rot_dim). cos and sin are multiplied by attention_factor (YaRN's attention scaling,
 * as HF transformers' `attention_scaling`; 1.0 = plain rope), so the rotated slice is scaled by it.
 * x, y: [T, H, Dh] contiguous float32 (may alias). Angles, cos and sin are computed in float64
 * (at position 2e5 a float32 angle would already be off by ~0.01 rad); the rotation itself is
 * float32. Requires rot_dim even, 0 < rot_dim, off >= 0, off + rot_dim <= Dh, theta > 0,
 * attention_factor finite and > 0, every inv_freq[i] finite and > 0. */
int gb_rope(const float *x, float *y, const int64_t *pos, int64_t T, int64_t H, int64_t Dh,
            double theta, int64_t rot_dim, int64_t rot_off, int layout, const double *inv_freq,
            double attention_factor);

#endif
