/* rope.c: rotary embedding. One OpenMP iteration per token: the token's cos/sin table (rot_dim/2
 * pairs) is built once in float64 (times attention_factor, then rounded to float32) and shared by
 * all its heads. */
#include "rope.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

int gb_rope(const float *x, float *y, const int64_t *pos, int64_t T, int64_t H, int64_t Dh,
            double theta, int64_t rot_dim, int64_t rot_off, int layout, const double *inv_freq_in,
            double attention_factor) {
    if (layout != GB_ROPE_INTERLEAVED && layout != GB_ROPE_HALF)
        return gb_error(GB_EVALUE, "`layout` must be 0 (interleaved) or 1 (half), got %d", layout);
    if (!(theta > 0.0) || !isfinite(theta)) return gb_error(GB_EVALUE, "`theta` must be > 0, got %g", theta);
    if (rot_dim <= 0 || rot_dim % 2)
        return gb_error(GB_EVALUE, "`rot_dim` must be a positive even number, got %ld", (long)rot_dim);
    if (rot_off < 0 || rot_dim > Dh || rot_off > Dh - rot_dim) /* no rot_off + rot_dim: it can overflow */
        return gb_error(GB_EVALUE, "`rot_offset`=%ld + `rot_dim`=%ld must lie within the head dim %ld",
                        (long)rot_off, (long)rot_dim, (long)Dh);
    if (!(attention_factor > 0.0) || !isfinite(attention_factor))
        return gb_error(GB_EVALUE, "`attention_factor` must be a finite number > 0, got %g", attention_factor);
    const int64_t half = rot_dim / 2;
    if (inv_freq_in)
        for (int64_t i = 0; i < half; i++)
            if (!(inv_freq_in[i] > 0.0) || !isfinite(inv_freq_in[i]))
                return gb_error(GB_EVALUE, "`inv_freq` must be finite and > 0, got %g at index %ld", inv_freq_in[i],
                                (long)i);
    double *inv_freq = (double *)gb_ws_malloc((size_t)half * sizeof(double));
    if (!inv_freq) return gb_error(GB_ENOMEM, "rope: out of memory");
    for (int64_t i = 0; i < half; i++)
        inv_freq[i] = inv_freq_in ? inv_freq_in[i] : pow(theta, -2.0 * (double)i / (double)rot_dim);
    const double af = attention_factor;
    int status = GB_OK;

#pragma omp parallel if (T * H * Dh > 16384)
    {
        float *cs = (float *)gb_ws_malloc((size_t)rot_dim * sizeof(float));
        if (!cs) {
#pragma omp atomic write
            status = GB_ENOMEM;
        }
#pragma omp for schedule(static)
        for (int64_t t = 0; t < T; t++) {
            if (!cs) continue;
            float *c = cs, *s = cs + half;
            for (int64_t i = 0; i < half; i++) {
                double a = (double)pos[t] * inv_freq[i];
                c[i] = (float)(cos(a) * af);
                s[i] = (float)(sin(a) * af);
            }
            for (int64_t h = 0; h < H; h++) {
                const float *xr = x + (t * H + h) * Dh;
                float *yr = y + (t * H + h) * Dh;
                if (yr != xr) {
                    memcpy(yr, xr, (size_t)rot_off * sizeof(float));
                    memcpy(yr + rot_off + rot_dim, xr + rot_off + rot_dim,
                           (size_t)(Dh - rot_off - rot_dim) * sizeof(float));
                }
                const float *xs = xr + rot_off;
                float *ys = yr + rot_off;
                if (layout == GB_ROPE_INTERLEAVED) {
                    for (int64_t i = 0; i < half; i++) {
                        float a = xs[2 * i], b = xs[2 * i + 1];
                        ys[2 * i] = a * c[i] - b * s[i];
                        ys[2 * i + 1] = b * c[i] + a * s[i];
                    }
                } else {
                    for (int64_t i = 0; i < half; i++) {
                        float a = xs[i], b = xs[i + half];
                        ys[i] = a * c[i] - b * s[i];
                        ys[i + half] = b * c[i] + a * s[i];
                    }
                }
            }
        }
        gb_ws_free(cs);
    }
    gb_ws_free(inv_freq);
    if (status != GB_OK) return gb_error(status, "rope: out of memory");
    return GB_OK;
}
