/* norm.h: RMSNorm. */
#ifndef GLMBENCH_NORM_H
#define GLMBENCH_NORM_H
#include <stdint.h>

/* y[t, :] = x[t, :] / sqrt(mean(x[t, :]^2) + eps) * w, for t in [0, rows). x and y may alias.
 * Accumulates the sum of squares in float64 so long rows (hidden 5120) lose nothing. */
int gb_rms_norm(const float *x, const float *w, float *y, int64_t rows, int64_t dim, float eps);

#endif
