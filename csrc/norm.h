/* norm.h: RMSNorm. */
#ifndef GLMBENCH_NORM_H
#define GLMBENCH_NORM_H
#include <stdint.h>

/* y[t, :] = x[t, :] / sqrt(mean(x[t, :]^2) + eps) * w, for t in [0, rows). x and y may alias.
 * Accumulates the sum of squares in float64 so long rows (hidden 5120) lose nothing. */
int gb_rms_norm(const float *x, const float *w, float *y, int64_t rows, int64_t dim, float eps);

/* LayerNorm without a bias (Cohere's CohereLayerNorm): y[t, :] = (x[t, :] - mean) / sqrt(var + eps) * w_t,
 * var the mean squared deviation; w holds `wrows` rows of `dim` and row t takes w[t % wrows] (wrows = 1:
 * one weight; wrows = heads: Command-R+'s per-head q / k norms over [T * heads, head_dim]). The mean and
 * the variance in float64. x and y may alias. */
int gb_layer_norm(const float *x, const float *w, float *y, int64_t rows, int64_t dim, int64_t wrows, float eps);

#endif
