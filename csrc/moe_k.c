/* moe_k.c: routed experts in K-quant / iq4_nl / mxfp4 formats as stored, one call (see moe_k.h). */
#include "moe_k.h"

#include <math.h>
#include <string.h>

#include "common.h"
#include "moe.h"
#include "quant_iq.h"
#include "quant_k.h"

static int64_t rowb(int fmt, int64_t k) { return gb_is_iqfmt(fmt) ? gb_iq_row_bytes(fmt, k) : gb_k_row_bytes(fmt, k); }

static int lin(int fmt, const float *x, const void *w, float *y, int64_t T, int64_t N, int64_t K, int version) {
    return gb_is_iqfmt(fmt) ? gb_iqlinear(fmt, x, w, NULL, y, T, N, K, version) : gb_klinear(fmt, x, w, NULL, y, T, N, K, version);
}

int gb_kmoe(const float *x, const int64_t *topk_idx, const float *topk_weight, int64_t T, int64_t k, int fg,
            const void *gate, int fu, const void *up, int fd, const void *down, int64_t E, int64_t F, int64_t D,
            float *y, int64_t *counts, int version) {
    const int64_t rg = rowb(fg, D), ru = rowb(fu, D), rd = rowb(fd, F);
    if (rg < 0 || ru < 0 || rd < 0)
        return gb_error(GB_EVALUE, "kmoe: formats %d/%d/%d with D=%ld, F=%ld are not whole blocks of a K-quant/iq4_nl/mxfp4 format",
                        fg, fu, fd, (long)D, (long)F);
    const int64_t i = gb_count_routes(topk_idx, T, k, E, D, y, counts);
    if (i >= 0) return gb_error(GB_EVALUE, "kmoe: topk_idx[%ld] = %ld is not in [0, %ld)", (long)(i / k), (long)topk_idx[i], (long)E);
    if (T == 0 || k == 0) return GB_OK;
    const int64_t R = T * k;
    int64_t *off = (int64_t *)gb_ws_calloc((size_t)(E + 1), sizeof(int64_t));
    int64_t *pos = (int64_t *)gb_ws_malloc((size_t)R * sizeof(int64_t));
    int64_t *tok = (int64_t *)gb_ws_malloc((size_t)R * sizeof(int64_t));
    int64_t *fill = (int64_t *)gb_ws_calloc((size_t)E, sizeof(int64_t));
    float *xg = (float *)gb_ws_malloc((size_t)(R * D) * sizeof(float));
    float *g = (float *)gb_ws_malloc((size_t)(R * F) * sizeof(float));
    float *u = (float *)gb_ws_malloc((size_t)(R * F) * sizeof(float));
    float *o = (float *)gb_ws_malloc((size_t)(R * D) * sizeof(float));
    int st = GB_OK;
    if (!off || !pos || !tok || !fill || !xg || !g || !u || !o) {
        st = gb_error(GB_ENOMEM, "kmoe: cannot allocate the expert buffers (%ld rows, F=%ld, D=%ld)", (long)R, (long)F, (long)D);
        goto done;
    }
    gb_group_rows(topk_idx, T, k, E, counts, off, fill, pos, tok);
    for (int64_t p = 0; p < R; p++) memcpy(xg + p * D, x + tok[p] * D, (size_t)D * sizeof(float));
    for (int64_t e = 0; e < E && st == GB_OK; e++) {
        const int64_t c = counts[e], o0 = off[e];
        if (!c) continue;
        if ((st = lin(fg, xg + o0 * D, (const uint8_t *)gate + e * F * rg, g + o0 * F, c, F, D, version)) != GB_OK) break;
        if ((st = lin(fu, xg + o0 * D, (const uint8_t *)up + e * F * ru, u + o0 * F, c, F, D, version)) != GB_OK) break;
        for (int64_t i = o0 * F; i < (o0 + c) * F; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
        st = lin(fd, g + o0 * F, (const uint8_t *)down + e * D * rd, o + o0 * D, c, D, F, version);
    }
    if (st != GB_OK) goto done;
    for (int64_t t = 0; t < T; t++) {
        float *yr = y + t * D;
        for (int64_t j = 0; j < k; j++) {
            const float wgt = topk_weight[t * k + j];
            const float *orow = o + pos[t * k + j] * D;
            for (int64_t d = 0; d < D; d++) yr[d] += wgt * orow[d];
        }
    }
done:
    gb_ws_free(off);
    gb_ws_free(pos);
    gb_ws_free(tok);
    gb_ws_free(fill);
    gb_ws_free(xg);
    gb_ws_free(g);
    gb_ws_free(u);
    gb_ws_free(o);
    return st;
}
