/* norm.c: RMSNorm over the last axis, one row per OpenMP iteration. */
#include "norm.h"

#include <math.h>

#include "common.h"

int gb_rms_norm(const float *x, const float *w, float *y, int64_t rows, int64_t dim, float eps) {
    if (dim <= 0) return gb_error(GB_EVALUE, "rms_norm: dim must be > 0, got %ld", (long)dim);
    if (!(eps >= 0.0f)) return gb_error(GB_EVALUE, "`eps` must be >= 0, got %g", (double)eps);
#pragma omp parallel for schedule(static) if (rows * dim > 32768)
    for (int64_t t = 0; t < rows; t++) {
        const float *xr = x + t * dim;
        float *yr = y + t * dim;
        /* 16 independent float64 partial sums: the compiler vectorises them (no -ffast-math
         * needed, since each lane is its own sum) and float64 keeps long rows exact enough. */
        double part[16] = {0};
        int64_t i = 0;
        for (; i + 16 <= dim; i += 16)
            for (int j = 0; j < 16; j++) part[j] += (double)xr[i + j] * (double)xr[i + j];
        double ss = 0.0;
        for (int j = 0; j < 16; j++) ss += part[j];
        for (; i < dim; i++) ss += (double)xr[i] * xr[i];
        float inv = (float)(1.0 / sqrt(ss / (double)dim + (double)eps));
        for (int64_t i = 0; i < dim; i++) yr[i] = xr[i] * inv * w[i];
    }
    return GB_OK;
}

int gb_layer_norm(const float *x, const float *w, float *y, int64_t rows, int64_t dim, int64_t wrows, float eps) {
    if (dim <= 0) return gb_error(GB_EVALUE, "layer_norm: dim must be > 0, got %ld", (long)dim);
    if (wrows <= 0) return gb_error(GB_EVALUE, "layer_norm: weight rows must be > 0, got %ld", (long)wrows);
    if (!(eps >= 0.0f)) return gb_error(GB_EVALUE, "`eps` must be >= 0, got %g", (double)eps);
#pragma omp parallel for schedule(static) if (rows * dim > 32768)
    for (int64_t t = 0; t < rows; t++) {
        const float *xr = x + t * dim;
        const float *wr = w + (t % wrows) * dim;
        float *yr = y + t * dim;
        /* two passes in float64 (16 independent partial sums each, as gb_rms_norm): the mean, then
         * the squared deviations from it (no cancellation of E[x^2] - mean^2) */
        double part[16] = {0};
        int64_t i = 0;
        for (; i + 16 <= dim; i += 16)
            for (int j = 0; j < 16; j++) part[j] += (double)xr[i + j];
        double s = 0.0;
        for (int j = 0; j < 16; j++) s += part[j];
        for (; i < dim; i++) s += (double)xr[i];
        const double mean = s / (double)dim;
        double dev[16] = {0};
        i = 0;
        for (; i + 16 <= dim; i += 16)
            for (int j = 0; j < 16; j++) {
                const double d = (double)xr[i + j] - mean;
                dev[j] += d * d;
            }
        double ss = 0.0;
        for (int j = 0; j < 16; j++) ss += dev[j];
        for (; i < dim; i++) ss += ((double)xr[i] - mean) * ((double)xr[i] - mean);
        const double inv = 1.0 / sqrt(ss / (double)dim + (double)eps);
        for (int64_t i2 = 0; i2 < dim; i2++) yr[i2] = (float)(((double)xr[i2] - mean) * inv) * wr[i2];
    }
    return GB_OK;
}
