/* attention_mla.c: MLA naive / absorbed / flash (see attention_mla.h). The attention itself runs
 * on the online-softmax core of attention_gqa.c; the kv_b products go to OpenBLAS sgemm. */
#include "attention_mla.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "attention_gqa.h"
#include "attn_tile_f16.h"
#include "common.h"
#include "linear.h"
#include "qgemm.h"
#include "quant.h"
#include "quant_iq.h"
#include "quant_k.h"

/* Tokens decompressed per step by the naive strategy: 1024 x H*(Dn+Dv) floats (37 MB for GLM-4.7-Flash,
 * plus 21 MB of per-head keys) bounds its memory whatever the depth, while each step's sgemm
 * (9.4 GFLOP) is long enough that sgemm runs it near peak. */
#define GB_MLA_NAIVE_CHUNK 1024
/* A chunk product at least this large goes to OpenBLAS as one big sgemm per OpenMP thread (each
 * a slice of the output columns); smaller ones are split by head. */
#define GB_MLA_BLAS_THREADED (1 << 26)
/* Query rows per prefill work item of the rows-in-lanes tile (whole multiples of GB_ATTN_LANES): the
 * heads share one latent row, so more rows per decoded f16 tile; 1 thread, T=256 at depth 2048,
 * in-process runs: 128 rows 127-137, 256 rows 142-144 GFLOP per CPU second (GQA stays at 128). */
#ifndef GB_MLA_LANES_BLOCK
#define GB_MLA_LANES_BLOCK 256
#endif
/* Query rows (T x H) up to which an f16 cache runs the f16 decode tile (mla_tile_f16) rather than
 * the rows-in-lanes prefill tile: T = 1 and small T (speculative decoding's few tokens). GLM-4.7-Flash
 * shape, 1 thread, f16, shared machine, GFLOP/s of the part that grows with depth (lanes -> f16
 * tile): T = 2 (40 rows) 4K 120 -> 117, 16K 123 -> 137; T = 3 (60 rows) 4K 166 -> 169, 16K 177 ->
 * 173: past 40 rows the lanes tile fills its vectors and is as fast. */
#define GB_MLA_F16_ROWS 40
/* the multiply-adds (rows x cached tokens x (key + value width)) from which a decode step's rows are
 * shared out over the threads on a short cache (mla_absorbed's par_rows) */
/* a repacked K-format v_b read two 16-row groups at a time (gb_kp_gemv_pair; 0: one group at a time,
 * so a thread's heads, adjacent in memory, are one stream), by kernel version: GLM-4.7-Flash-shaped
 * Q4_K_M decode layer (q4_K v_b, 20 heads of 256 x 512, cold, 2 threads) on a Zen 2 (AVX2 kernels) two
 * at a time was faster, 57-64 -> 46-48 us (bench/results/session25_q4_0_q8_0_gemv_zen2_2026-12-04.md);
 * on a Zen 4 (AVX-512 VNNI kernels, session 35) one at a time is: the v_b product 73-76 -> 47-52 us in
 * the whole model's decode steps, layers 1.5% faster in-process
 * (bench/results/mla_vb_stream_zen4_s35_2026-12-05.md) */
#ifndef MLA_VB_PAIR
#define MLA_VB_PAIR(ver) ((ver) != GB_KV_VNNI)
#endif
#ifndef GB_MLA_PAR_ROWS_MIN
#define GB_MLA_PAR_ROWS_MIN (1 << 18)
#endif

static int check_common(const gb_kvcache *c, int64_t layer, int64_t T, int64_t H, int64_t Dn, int64_t Dv) {
    if (c->kind != GB_KV_MLA) return gb_error(GB_EVALUE, "`cache` must be an MLA cache (KVCache.mla), got a GQA cache");
    if (layer < 0 || layer >= c->n_layers)
        return gb_error(GB_EVALUE, "`layer`=%ld is out of range for a cache of %ld layers", (long)layer, (long)c->n_layers);
    if (H < 1 || Dn < 0 || Dv < 1)
        return gb_error(GB_EVALUE, "bad MLA head shape: H=%ld, Dn=%ld, Dv=%ld", (long)H, (long)Dn, (long)Dv);
    if (T > c->len[layer])
        return gb_error(GB_EVALUE,
                        "`q_nope` has %ld tokens but layer %ld holds only %ld: append the new tokens' latents before attending",
                        (long)T, (long)layer, (long)c->len[layer]);
    return GB_OK;
}

/* Rows [t0, t0 + n) of the cache as float32 [n][R + Dr], decoded into dst. */
static void cache_rows(const gb_kvcache *c, int64_t layer, int64_t t0, int64_t n, float *dst) {
    const int64_t Dq = c->dk + c->dv, bs = c->block_size;
    for (int64_t t = t0; t < t0 + n;) {
        int64_t m = t0 + n - t, inblk = bs - t % bs;
        if (m > inblk) m = inblk;
        float *d = dst + (t - t0) * Dq;
        const float *src = gb_attn_rows(c->fmt, gb_kvcache_k_ptr(c, layer, 0, t), m * Dq, d);
        if (src != d) memcpy(d, src, (size_t)(m * Dq) * sizeof(float));
        t += m;
    }
}

/* Per-head products of 8 or more query tokens run as one single-threaded OpenBLAS call per head, the heads split across our
 * OpenMP threads (OpenBLAS set to 1 thread around the team by blas_solo/blas_restore; this
 * OpenBLAS build has no thread-local setting). Handing each head's
 * product to OpenBLAS's own thread pool instead made the two pools spin against each other: ~0.5 s
 * of hand-offs for 5 ms of arithmetic in a T=128 prefill on 2 shared cores. Below GB_MLA_BLAS_MIN
 * multiply-adds (decode-sized GEMVs) our own loops are cheaper than the call. */
#define GB_MLA_BLAS_MIN (1 << 16)

static int blas_solo(void) {
    int prev = scipy_openblas_get_num_threads();
    if (prev > 1) scipy_openblas_set_num_threads(1);
    return prev;
}
static void blas_restore(int prev) {
    if (prev > 1) scipy_openblas_set_num_threads(prev);
}

/* kv_b may be float32, float16 or bfloat16 (GB_F32/GB_F16/GB_BF16), row-major [H*(Dn+Dv)][R]. The small
 * (decode) products read it in its own format, a row at a time (decode reads the weight once, so
 * 16-bit halves the bytes); the large ones convert the head's rows to float32 once for sgemm. */
static inline const uint8_t *wrow(const void *B, int bfmt, int64_t row, int64_t ld) {
    return (const uint8_t *)B + (size_t)(row * ld) * (bfmt == GB_F32 ? 4 : 2);
}

/* rows [0, n) of B (n x len, leading dimension ld) as a float32 matrix with leading dimension *ldo:
 * B itself for float32, else a converted copy in *tmp (caller gb_ws_frees it); NULL when out of memory. */
static const float *rows_f32(const void *B, int bfmt, int64_t n, int64_t len, int64_t ld, float **tmp, int64_t *ldo) {
    *tmp = NULL;
    if (bfmt == GB_F32) {
        *ldo = ld;
        return (const float *)B;
    }
    float *t = (float *)gb_ws_malloc((size_t)(n * len) * sizeof(float));
    if (!t) return NULL;
    for (int64_t i = 0; i < n; i++) gb_attn_rows(bfmt, wrow(B, bfmt, i, ld), len, t + i * len);
    *tmp = t;
    *ldo = len;
    return t;
}

/* ---- the per-head prefill products on AVX-512 builds ----------------------------------------
 * The absorbed/flash prefill's two products per head, q_lat = scale * q_nope . W_k (T x Dn times
 * Dn x R) and out = o_lat . W_v^T (T x R times R x Dv), on float32 kv_b. OpenBLAS ran them on the
 * kernels its environment names (OPENBLAS_CORETYPE=Haswell on this host: AVX2, 107 GFLOP/s on one
 * thread for a 512 x 256 x 512 product, half this CPU's FMA peak; about half the MLA prefill's time).
 * Here: op(B)'s columns packed 64 at a time (k-major, 64 floats per k, zero past N), then 6-row x
 * 64-column register tiles (24 zmm accumulators, 4 loads and 6 broadcasts per k) over all of K,
 * the 6 rows of A read as streams. float32 FMAs, each C element one sum in k order, times alpha. */
static int mla_own_gemm = 1;
void gb_mla_set_own_gemm(int on) { mla_own_gemm = on ? 1 : 0; }
#if defined(__AVX512F__)
#include <immintrin.h>
#define MG_NR 64
#define MG_MR 6

static void mg_pack(const float *B, int64_t ldb, int trans, int64_t K, int64_t j0, int64_t nc, float *P) {
    if (!trans) { /* B [K][N] row-major: row k's columns j0.. */
        for (int64_t k = 0; k < K; k++) {
            float *d = P + k * MG_NR;
            memcpy(d, B + k * ldb + j0, (size_t)nc * sizeof(float));
            for (int64_t j = nc; j < MG_NR; j++) d[j] = 0.0f;
        }
        return;
    }
    /* B [N][K] row-major (op(B) = B^T): P[k][j] = B[j0 + j][k], 16 rows of B at a time so each
     * store of P is one 64-byte line */
    for (int64_t jb = 0; jb < MG_NR; jb += 16) {
        const int64_t n = nc - jb < 16 ? (nc - jb > 0 ? nc - jb : 0) : 16;
        for (int64_t k = 0; k < K; k++) {
            float v[16];
            for (int64_t j = 0; j < 16; j++) v[j] = j < n ? B[(j0 + jb + j) * ldb + k] : 0.0f;
            memcpy(P + k * MG_NR + jb, v, sizeof(v));
        }
    }
}

static inline __attribute__((always_inline)) void mg_tile(const int MR, const float *A, int64_t lda, const float *P, int64_t K,
                                                          float alpha, float *C, int64_t ldc, int64_t nc) {
    __m512 acc[MG_MR][4];
    for (int i = 0; i < MR; i++)
        for (int v = 0; v < 4; v++) acc[i][v] = _mm512_setzero_ps();
    for (int64_t k = 0; k < K; k++) {
        const float *p = P + k * MG_NR;
        __m512 b0 = _mm512_load_ps(p), b1 = _mm512_load_ps(p + 16), b2 = _mm512_load_ps(p + 32), b3 = _mm512_load_ps(p + 48);
        __asm__("" : "+v"(b0), "+v"(b1), "+v"(b2), "+v"(b3)); /* in registers: gcc otherwise spilled them to the stack */
        for (int i = 0; i < MR; i++) {
            const __m512 a = _mm512_set1_ps(A[i * lda + k]);
            acc[i][0] = _mm512_fmadd_ps(a, b0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(a, b1, acc[i][1]);
            acc[i][2] = _mm512_fmadd_ps(a, b2, acc[i][2]);
            acc[i][3] = _mm512_fmadd_ps(a, b3, acc[i][3]);
        }
    }
    const __m512 va = _mm512_set1_ps(alpha);
    for (int v = 0; v < 4; v++) {
        const int64_t left = nc - 16 * v;
        if (left <= 0) break;
        const __mmask16 m = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
        for (int i = 0; i < MR; i++) _mm512_mask_storeu_ps(C + i * ldc + 16 * v, m, _mm512_mul_ps(acc[i][v], va));
    }
}

/* C[M][N] = alpha * A[M][K] . op(B); op(B) = B [K][N] (trans 0) or B^T with B [N][K] (trans 1).
 * One thread; P: MG_NR * K floats, 64-byte aligned. */
static void mg_gemm(int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                    int trans, float *C, int64_t ldc, float *P) {
    for (int64_t j0 = 0; j0 < N; j0 += MG_NR) {
        const int64_t nc = N - j0 < MG_NR ? N - j0 : MG_NR;
        mg_pack(B, ldb, trans, K, j0, nc, P);
        int64_t i0 = 0;
        for (; i0 + MG_MR <= M; i0 += MG_MR) mg_tile(MG_MR, A + i0 * lda, lda, P, K, alpha, C + i0 * ldc + j0, ldc, nc);
        switch (M - i0) {
        case 5: mg_tile(5, A + i0 * lda, lda, P, K, alpha, C + i0 * ldc + j0, ldc, nc); break;
        case 4: mg_tile(4, A + i0 * lda, lda, P, K, alpha, C + i0 * ldc + j0, ldc, nc); break;
        case 3: mg_tile(3, A + i0 * lda, lda, P, K, alpha, C + i0 * ldc + j0, ldc, nc); break;
        case 2: mg_tile(2, A + i0 * lda, lda, P, K, alpha, C + i0 * ldc + j0, ldc, nc); break;
        case 1: mg_tile(1, A + i0 * lda, lda, P, K, alpha, C + i0 * ldc + j0, ldc, nc); break;
        default: break;
        }
    }
}

/* 1 if it ran (float32 B, a prefill-sized product, the packing buffer allocated) */
static int mg_try(int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda, const void *B, int bfmt,
                  int64_t ldb, int trans, float *C, int64_t ldc) {
    if (bfmt != GB_F32 || M < 8 || M * N * K < GB_MLA_BLAS_MIN) return 0;
    float *P = (float *)gb_ws_aligned_alloc(64, (size_t)(MG_NR * K) * sizeof(float));
    if (!P) return 0;
    mg_gemm(M, N, K, alpha, A, lda, (const float *)B, ldb, trans, C, ldc, P);
    gb_ws_free(P);
    return 1;
}
#define MG_HAVE 1
#else
#define MG_HAVE 0
#endif
int gb_mla_own_gemm_ok(void) { return MG_HAVE && mla_own_gemm; }

/* C[i][j] = alpha * sum_k A[i][k] * B[k][j]  (B row-major [K][N] in format bfmt) */
static void gemm_nn(int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda, const void *B,
                    int bfmt, int64_t ldb, float *C, int64_t ldc) {
#if MG_HAVE
    if (mla_own_gemm && mg_try(M, N, K, alpha, A, lda, B, bfmt, ldb, 0, C, ldc)) return;
#endif
    if (M >= 8 && M * N * K >= GB_MLA_BLAS_MIN) {
        float *tmp;
        int64_t ldf;
        const float *Bf = rows_f32(B, bfmt, K, N, ldb, &tmp, &ldf);
        if (Bf) {
            scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)M, (blasint)N, (blasint)K, alpha, A,
                              (blasint)lda, Bf, (blasint)ldf, 0.0f, C, (blasint)ldc);
            gb_ws_free(tmp);
            return;
        } /* out of memory for the copy: the row-at-a-time loop below needs none */
    }
    float *rowbuf = bfmt == GB_F32 ? NULL : (float *)gb_ws_malloc((size_t)N * sizeof(float));
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) C[i * ldc + j] = 0.0f;
    for (int64_t k = 0; k < K; k++) { /* each weight row read (and converted) once */
        const float *b = (const float *)wrow(B, bfmt, k, ldb);
        if (bfmt != GB_F32) {
            if (!rowbuf) { /* no buffer: element by element */
                for (int64_t j = 0; j < N; j++) {
                    float e;
                    gb_attn_rows(bfmt, wrow(B, bfmt, k, ldb) + 2 * j, 1, &e);
                    for (int64_t i = 0; i < M; i++) C[i * ldc + j] += alpha * A[i * lda + k] * e;
                }
                continue;
            }
            b = gb_attn_rows(bfmt, wrow(B, bfmt, k, ldb), N, rowbuf);
        }
        for (int64_t i = 0; i < M; i++) {
            const float a = alpha * A[i * lda + k];
            float *c = C + i * ldc;
#pragma omp simd
            for (int64_t j = 0; j < N; j++) c[j] += a * b[j];
        }
    }
    gb_ws_free(rowbuf);
}

/* C[i][j] = alpha * sum_k A[i][k] * B[j][k]  (B row-major [N][K] in format bfmt, i.e. A . B^T) */
static void gemm_nt(int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda, const void *B,
                    int bfmt, int64_t ldb, float *C, int64_t ldc) {
#if MG_HAVE
    if (mla_own_gemm && mg_try(M, N, K, alpha, A, lda, B, bfmt, ldb, 1, C, ldc)) return;
#endif
    if (M >= 8 && M * N * K >= GB_MLA_BLAS_MIN) {
        float *tmp;
        int64_t ldf;
        const float *Bf = rows_f32(B, bfmt, N, K, ldb, &tmp, &ldf);
        if (Bf) {
            scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)M, (blasint)N, (blasint)K, alpha, A,
                              (blasint)lda, Bf, (blasint)ldf, 0.0f, C, (blasint)ldc);
            gb_ws_free(tmp);
            return;
        }
    }
    float *rowbuf = bfmt == GB_F32 ? NULL : (float *)gb_ws_malloc((size_t)K * sizeof(float));
    for (int64_t j = 0; j < N; j++) {
        const float *b = (const float *)wrow(B, bfmt, j, ldb);
        if (bfmt != GB_F32) {
            if (!rowbuf) { /* no buffer: element by element */
                for (int64_t i = 0; i < M; i++) {
                    float acc = 0.0f, e;
                    for (int64_t k = 0; k < K; k++) {
                        gb_attn_rows(bfmt, wrow(B, bfmt, j, ldb) + 2 * k, 1, &e);
                        acc += A[i * lda + k] * e;
                    }
                    C[i * ldc + j] = alpha * acc;
                }
                continue;
            }
            b = gb_attn_rows(bfmt, wrow(B, bfmt, j, ldb), K, rowbuf);
        }
        for (int64_t i = 0; i < M; i++) {
            float acc = 0.0f;
            const float *a = A + i * lda;
#pragma omp simd reduction(+ : acc)
            for (int64_t k = 0; k < K; k++) acc += a[k] * b[k];
            C[i * ldc + j] = alpha * acc;
        }
    }
    gb_ws_free(rowbuf);
}

/* ---- decode (T = 1) products with kv_b ------------------------------------------------------
 * q_lat[h] = scale * W_k,h^T q_nope[h]: kv_b rows h*W .. h*W+Dn-1 (R wide) summed with weights
 * q_nope[h][k], accumulated in registers 256 columns at a time, widening 16-bit rows as they are
 * read (gemm_nn's convert-then-axpy costs a store and a reload per weight). out[h] = W_v,h o_lat[h]
 * is a GEMV over kv_b rows h*W+Dn .. h*W+W-1 (gb_gemv_rows, one sequential stream per head). */
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__F16C__))
#include <immintrin.h>
#endif
#if defined(__AVX512F__)
static inline __m512 ld16w(const void *w, int fmt, int64_t i) {
    if (fmt == GB_F32) return _mm512_loadu_ps((const float *)w + i);
    const __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)w + i));
    if (fmt == GB_BF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}
#endif

/* Rows of B this far ahead are prefetched while the current row is computed, into L2 only
 * (locality 1): the hint keeps L1's few miss buffers for the demand loads. bf16 rows of 512 are read
 * in one pass (all 512 columns' accumulators live at once) rather than two 256-column passes.
 * Measured on GLM-4.7-Flash's kv_b (cold, 2 threads, 20 heads of 192 x 512 bf16): two passes
 * 0.30-0.31 ms -> with the prefetch 0.23-0.27 ms; mla_attention at depth 64 (absorb + W_v), two
 * passes against one, in-process A/B: 0.486/0.424/0.444 -> 0.408/0.381/0.370 ms. */
#define ABSORB_PF_ROWS 32
#ifndef ABSORB_AVX2_ROWS
#define ABSORB_AVX2_ROWS 4
#endif
#ifndef ABSORB_AVX2_PF
#define ABSORB_AVX2_PF 4096
#endif

#if defined(__AVX512F__)
/* y[0, 32n) = alpha x the pair accumulators in column order: columns 2j and 2j+1 of block i are lane
 * j of ev[i] and od[i]. */
static inline void absorb_store_pairs(const __m512 *ev, const __m512 *od, int n, float alpha, float *y) {
    const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    const __m512 al = _mm512_set1_ps(alpha);
    for (int i = 0; i < n; i++) {
        _mm512_storeu_ps(y + 32 * i, _mm512_mul_ps(al, _mm512_permutex2var_ps(ev[i], lo, od[i])));
        _mm512_storeu_ps(y + 32 * i + 16, _mm512_mul_ps(al, _mm512_permutex2var_ps(ev[i], hi, od[i])));
    }
}
#endif

/* y[0, R) = alpha * sum_k a[k] * B[k][:] for B [K][R] in format fmt (row stride R). bf16 rows are
 * read 32 weights per load and split into even and odd columns (the pair kernels of linear.c),
 * so each 256-column block keeps 8 + 8 accumulators, put back in column order at the end. */
static void absorb_rows(const float *a, int64_t K, float alpha, const void *B, int fmt, int64_t R, float *y) {
    int64_t c0 = 0;
#if defined(__AVX512F__)
    const int64_t rb = R * (fmt == GB_F32 ? 4 : 2); /* bytes per row of B */
    if (fmt == GB_BF16) /* 512 columns in one pass over each row (16 + 16 accumulators; gcc spills a few) */
        for (; c0 + 512 <= R; c0 += 512) {
            __m512 ev[16], od[16];
            for (int i = 0; i < 16; i++) ev[i] = od[i] = _mm512_setzero_ps();
            for (int64_t k = 0; k < K; k++) {
                if (k + ABSORB_PF_ROWS < K) {
                    const char *pr = (const char *)wrow(B, fmt, (k + ABSORB_PF_ROWS) * R + c0, 1);
                    for (int64_t b = 0; b < 1024; b += 64) __builtin_prefetch(pr + b, 0, 1);
                }
                const __m512 ak = _mm512_set1_ps(a[k]);
                const uint16_t *row = (const uint16_t *)B + k * R + c0;
                for (int i = 0; i < 16; i++) {
                    __m512i v = _mm512_loadu_si512((const void *)(row + 32 * i));
                    __asm__("" : "+v"(v)); /* one load for both halves */
                    ev[i] = _mm512_fmadd_ps(ak, _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)), ev[i]);
                    od[i] = _mm512_fmadd_ps(ak, _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32((int)0xffff0000u))), od[i]);
                }
            }
            absorb_store_pairs(ev, od, 16, alpha, y + c0);
        }
    if (fmt == GB_BF16)
        for (; c0 + 256 <= R; c0 += 256) {
            __m512 ev[8], od[8];
            for (int i = 0; i < 8; i++) ev[i] = od[i] = _mm512_setzero_ps();
            for (int64_t k = 0; k < K; k++) {
                if (c0 == 0 && k + ABSORB_PF_ROWS < K) {
                    const char *pr = (const char *)wrow(B, fmt, (k + ABSORB_PF_ROWS) * R, 1);
                    for (int64_t b = 0; b < rb; b += 64) __builtin_prefetch(pr + b, 0, 1);
                }
                const __m512 ak = _mm512_set1_ps(a[k]);
                const uint16_t *row = (const uint16_t *)B + k * R + c0;
                for (int i = 0; i < 8; i++) {
                    __m512i v = _mm512_loadu_si512((const void *)(row + 32 * i));
                    __asm__("" : "+v"(v)); /* one load for both halves (gcc would fold it twice) */
                    ev[i] = _mm512_fmadd_ps(ak, _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)), ev[i]);
                    od[i] = _mm512_fmadd_ps(ak, _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32((int)0xffff0000u))), od[i]);
                }
            }
            absorb_store_pairs(ev, od, 8, alpha, y + c0);
        }
    for (; c0 + 256 <= R; c0 += 256) {
        __m512 acc[16];
        for (int i = 0; i < 16; i++) acc[i] = _mm512_setzero_ps();
        for (int64_t k = 0; k < K; k++) {
            if (c0 == 0 && k + ABSORB_PF_ROWS < K) {
                const char *pr = (const char *)wrow(B, fmt, (k + ABSORB_PF_ROWS) * R, 1);
                for (int64_t b = 0; b < rb; b += 64) __builtin_prefetch(pr + b, 0, 1);
            }
            const __m512 ak = _mm512_set1_ps(a[k]);
            const int64_t o = k * R + c0;
            for (int i = 0; i < 16; i++) acc[i] = _mm512_fmadd_ps(ak, ld16w(B, fmt, o + 16 * i), acc[i]);
        }
        for (int i = 0; i < 16; i++) _mm512_storeu_ps(y + c0 + 16 * i, _mm512_mul_ps(_mm512_set1_ps(alpha), acc[i]));
    }
#endif
#if !defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
    /* CPUs without AVX-512: the rows in order, ABSORB_AVX2_ROWS at a time, each over all of y's
     * columns (y, R floats, stays in L1 between them): every column still sums its rows in order
     * k = 0, 1, ... by one FMA each, as the 64-column passes over all rows did (since session 25),
     * so for R a multiple of 64 the same bits (R % 64 columns had gone to the scalar loop below,
     * now only R % 8); but B is read once, front to back, where the passes read 128 bytes of every
     * 1 KB row per pass: GLM-4.7-Flash's bf16 kv_b (20 heads of 192 x 512, a decode layer's k_b
     * product, cold, 2 threads, Zen 2) 242 -> 103-119 us
     * (bench/results/session25_q4_0_q8_0_gemv_zen2_2026-12-04.md). The next rows, ABSORB_AVX2_PF
     * bytes ahead, prefetched a line per step. */
    const int64_t c1 = R / 8 * 8;
    if (c1 > 0) {
        const int64_t esz = fmt == GB_F32 ? 4 : 2, rbytes = R * esz;
        for (int64_t j = 0; j < c1; j++) y[j] = 0.0f;
        int64_t k = 0;
        for (; k < K; k += ABSORB_AVX2_ROWS) {
            const int nk = K - k < ABSORB_AVX2_ROWS ? (int)(K - k) : ABSORB_AVX2_ROWS;
            const char *pf = (const char *)B + k * rbytes + ABSORB_AVX2_PF, *pend = (const char *)B + K * rbytes;
            const int64_t blk_bytes = nk * rbytes;
            __m256 ak[ABSORB_AVX2_ROWS];
            for (int i = 0; i < nk; i++) ak[i] = _mm256_set1_ps(a[k + i]);
            int64_t pfo = 0;
            for (int64_t c = 0; c < c1; c += 8) {
                if (pfo < blk_bytes && pf + pfo < pend) {
                    _mm_prefetch(pf + pfo, _MM_HINT_T0);
                    pfo += 64;
                }
                __m256 acc = _mm256_loadu_ps(y + c);
                for (int i = 0; i < nk; i++) {
                    const int64_t o = (k + i) * R + c;
                    __m256 w;
                    if (fmt == GB_F32) w = _mm256_loadu_ps((const float *)B + o);
                    else if (fmt == GB_BF16)
                        w = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)B + o))), 16));
                    else w = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)B + o)));
                    acc = _mm256_fmadd_ps(ak[i], w, acc);
                }
                _mm256_storeu_ps(y + c, acc);
            }
            for (; pfo < blk_bytes && pf + pfo < pend; pfo += 64) _mm_prefetch(pf + pfo, _MM_HINT_T0);
        }
        const __m256 al = _mm256_set1_ps(alpha);
        for (int64_t c = 0; c < c1; c += 8) _mm256_storeu_ps(y + c, _mm256_mul_ps(al, _mm256_loadu_ps(y + c)));
        c0 = c1;
    }
#endif
    if (c0 < R) { /* columns left over (and builds without AVX-512 or AVX2): row by row */
        for (int64_t j = c0; j < R; j++) y[j] = 0.0f;
        for (int64_t k = 0; k < K; k++) {
            const float ak = alpha * a[k];
            for (int64_t j = c0; j < R; j++) {
                float e;
                y[j] += ak * *gb_attn_rows(fmt, wrow(B, fmt, k * R + j, 1), 1, &e); /* f32: the element itself */
            }
        }
    }
}

/* ---- naive --------------------------------------------------------------------------------- */

static int mla_naive(const gb_kvcache *c, int64_t layer, const float *q_nope, const float *q_rope, int64_t T,
                     int64_t H, int64_t Dn, int64_t Dv, const void *kv_b, int wfmt, float scale, float *out) {
    const int64_t R = c->dk, Dr = c->dv, Dq = R + Dr, Dk = Dn + Dr, W = Dn + Dv, L = c->len[layer];
    const int64_t NC = GB_MLA_NAIVE_CHUNK;
    const int nth = omp_get_max_threads();
    /* Rows per work item: a head's T query rows, cut so there are work items for every thread. */
    int64_t rblk = T < 64 ? T : 64;
    const int64_t nrb = (T + rblk - 1) / rblk, nw = H * nrb;
    float *qh = (float *)gb_ws_malloc((size_t)(H * T * Dk) * sizeof(float));     /* [H][T][Dk], scaled */
    float *m = (float *)gb_ws_malloc((size_t)(H * T) * sizeof(float));
    float *l = (float *)gb_ws_malloc((size_t)(H * T) * sizeof(float));
    float *o = (float *)gb_ws_calloc((size_t)(H * T * Dv), sizeof(float));
    float *cbuf = (float *)gb_ws_malloc((size_t)(NC * Dq) * sizeof(float));       /* decoded cache rows */
    float *kv = (float *)gb_ws_malloc((size_t)(NC * H * W) * sizeof(float));      /* [NC][H][Dn + Dv] */
    float *kh = (float *)gb_ws_malloc((size_t)(H * NC * Dk) * sizeof(float));     /* [H][NC][Dn + Dr] */
    int64_t *lim = (int64_t *)gb_ws_malloc((size_t)T * sizeof(int64_t));
    float *kvb_tmp = NULL;
    int st = GB_OK;
    if (!qh || !m || !l || !o || !cbuf || !kv || !kh || !lim) {
        st = gb_error(GB_ENOMEM, "mla_attention(naive): out of memory");
        goto done;
    }
    for (int64_t h = 0; h < H; h++)
        for (int64_t t = 0; t < T; t++) {
            float *d = qh + (h * T + t) * Dk;
            for (int64_t i = 0; i < Dn; i++) d[i] = q_nope[(t * H + h) * Dn + i] * scale;
            for (int64_t i = 0; i < Dr; i++) d[Dn + i] = q_rope[(t * H + h) * Dr + i] * scale;
            m[h * T + t] = -INFINITY;
            l[h * T + t] = 0.0f;
        }
    for (int64_t t = 0; t < T; t++) lim[t] = L - T + t + 1;
    /* the whole kv_b in float32 for the chunk sgemm (converted once per call when 16-bit) */
    int64_t ldk;
    const float *kvb32 = (L < NC ? L : NC) * H * W * R >= GB_MLA_BLAS_THREADED
                             ? rows_f32(kv_b, wfmt, H * W, R, R, &kvb_tmp, &ldk) : NULL;
    for (int64_t c0 = 0; c0 < L; c0 += NC) {
        const int64_t n = L - c0 < NC ? L - c0 : NC;
        cache_rows(c, layer, c0, n, cbuf);
        /* kv[j] = kv_b . latent[j]: every head's k_nope and v for this chunk */
        if (n * H * W * R >= GB_MLA_BLAS_THREADED && kvb32) {
            /* One sgemm per thread over a slice of the H*W output columns, single-threaded OpenBLAS
             * inside our own team, rather than one sgemm on OpenBLAS's threads: the attention
             * region below leaves libgomp's workers spinning into the next chunk's sgemm, where
             * they fought OpenBLAS's threads for the 2 cores (GLM-4.7-Flash naive decode, 2
             * threads: d=4096 268 -> 219 ms, d=32768 1.99 -> 1.73 s, prefill T=512 122 -> 106 ms). */
            const int prev = blas_solo();
            const int64_t HW = H * W, cw = ((HW + nth - 1) / nth + 63) / 64 * 64;
#pragma omp parallel for schedule(static) num_threads(nth)
            for (int64_t j0 = 0; j0 < HW; j0 += cw) {
                const int64_t nc = HW - j0 < cw ? HW - j0 : cw;
                scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)n, (blasint)nc, (blasint)R, 1.0f,
                                  cbuf, (blasint)Dq, kvb32 + j0 * ldk, (blasint)ldk, 0.0f, kv + j0, (blasint)HW);
            }
            blas_restore(prev);
        } else {
            const int prev = blas_solo();
#pragma omp parallel for schedule(static) if (n * H * W * R > (1 << 18))
            for (int64_t h = 0; h < H; h++)
                gemm_nt(n, W, R, 1.0f, cbuf, Dq, wrow(kv_b, wfmt, h * W, R), wfmt, R, kv + h * W, H * W);
            blas_restore(prev);
        }
#pragma omp parallel num_threads(nw < nth ? (int)nw : nth) if (n * H * T * (Dk + Dv) >= GB_ATTN_PAR_MIN)
        {
            float *sbuf = (float *)gb_ws_malloc((size_t)(rblk * (GB_ATTN_TILE + 1)) * sizeof(float));
#pragma omp for schedule(static)
            for (int64_t h = 0; h < H; h++)
                for (int64_t j = 0; j < n; j++) {
                    memcpy(kh + (h * NC + j) * Dk, kv + (j * H + h) * W, (size_t)Dn * sizeof(float));
                    memcpy(kh + (h * NC + j) * Dk + Dn, cbuf + j * Dq + R, (size_t)Dr * sizeof(float));
                }
#pragma omp for schedule(dynamic, 1)
            for (int64_t w = 0; w < nw; w++) {
                if (!sbuf) continue;
                const int64_t h = w / nrb, r0 = (w % nrb) * rblk, rn = r0 + rblk <= T ? rblk : T - r0;
                const int64_t *lr = T > 1 ? lim + r0 : NULL;
                int64_t end = n;
                if (lim[r0 + rn - 1] - c0 < end) end = lim[r0 + rn - 1] - c0;
                for (int64_t j = 0; j < end; j += GB_ATTN_TILE) {
                    const int64_t nt = end - j < GB_ATTN_TILE ? end - j : GB_ATTN_TILE;
                    gb_attn_tile(qh + (h * T + r0) * Dk, rn, Dk, kh + (h * NC + j) * Dk, Dk, kv + j * H * W + h * W + Dn,
                                 H * W, Dv, nt, c0 + j, lr, m + h * T + r0, l + h * T + r0, o + (h * T + r0) * Dv, sbuf);
                }
            }
            if (!sbuf) {
#pragma omp atomic write
                st = GB_ENOMEM;
            }
            gb_ws_free(sbuf);
        }
        if (st != GB_OK) {
            st = gb_error(GB_ENOMEM, "mla_attention(naive): out of memory");
            goto done;
        }
    }
    for (int64_t h = 0; h < H; h++)
        for (int64_t t = 0; t < T; t++) {
            const float inv = 1.0f / l[h * T + t];
            for (int64_t i = 0; i < Dv; i++) out[(t * H + h) * Dv + i] = o[(h * T + t) * Dv + i] * inv;
        }
done:
    gb_ws_free(qh);
    gb_ws_free(m);
    gb_ws_free(l);
    gb_ws_free(o);
    gb_ws_free(cbuf);
    gb_ws_free(kv);
    gb_ws_free(kh);
    gb_ws_free(lim);
    gb_ws_free(kvb_tmp);
    return st;
}

/* ---- decode tile for an f16 cache, float32 arithmetic ----------------------------------------
 * A few query rows (T = 1: the H heads; small T: T x H) against one tile of cache rows that serve as
 * the keys [c, k_rope] and, their first dv, the values c. gb_attn_tile's f32 path first widens the
 * whole tile into a float32 copy (32 rows x 576 = 74 KB, past L1) and reads it back; here the f16
 * rows are widened in registers by vcvtph2ps as the micro-kernels read them (L1/L2-resident, the
 * next tile prefetched meanwhile):
 *   scores  (10 rows x 2 keys) register blocks: per 16 dims 2 widened key vectors and 10 query
 *           loads feed 20 FMAs (the query rows, 10 x 576 floats = 23 KB, stay in L1 across the
 *           tile's keys); one horizontal reduction per 4 dot products of dk, stored key-major
 *           (s[key][row]) so 4 rows of a key are one 4-float store.
 *   softmax online, float32, 16 rows per vector over the key-major scores (masked to each row's lim).
 *   p*V     (10 rows x 32 columns) blocks: per key 2 widened value vectors and 10 broadcast p's
 *           feed 20 FMAs; o is read and written once per tile and block.
 * Measured (1 thread, shared machine, standalone C harness, GLM-4.7-Flash's 20 heads): the score and
 * p*V micro-kernels alone on L2-resident rows 93% of the f32 FMA peak, the whole tile 83-88% there and
 * ~80% with the rows streamed from DRAM; whole calls: bench/results/attention_decode_2026-12-02b.md.
 * That is the AVX-512 version (md_tile below); AVX2 + FMA + F16C builds run the same plan on 8 lanes
 * (attn_tile_f16.h: 5-row blocks for GLM's 20 heads, 1 thread on a Zen 3 at 4K-16K 57% -> 85% of the
 * FMA peak, bench/results/attention_decode_avx2_zen3_s15_2026-12-03.md).
 * Switched off by gb_mla_set_f16_tile(0) (tests, before/after timings): then the f16 rows go through
 * gb_attn_rows + gb_attn_tile. */
static int f16_tile_on = 1;
void gb_mla_set_f16_tile(int on) { f16_tile_on = on ? 1 : 0; }
#if defined(__AVX512F__)
#define MLA_HAVE_F16_TILE 1
int gb_mla_f16_tile_ok(void) { return f16_tile_on; }

static inline __mmask16 md_tail(int64_t left) { return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u); }

/* the sums of a, b, c, d across their lanes, in lanes 0..3 */
static inline __attribute__((always_inline)) __m128 md_reduce4(__m512 a, __m512 b, __m512 c, __m512 d) {
    __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
    __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xEE));
    __m512 x = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xDD));
    x = _mm512_add_ps(x, _mm512_permute_ps(x, 0x4E));
    x = _mm512_add_ps(x, _mm512_permute_ps(x, 0xB1));
    return _mm512_castps512_ps128(_mm512_permutexvar_ps(_mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0), x));
}

/* s[t * sld + i] = q_i . k_t for RB <= 10 rows x KB (1 or 2) f16 keys, dk a multiple of 16. The
 * accumulators are named variables (arrays of vectors get spilled); the asm barrier keeps each query
 * vector one load for both keys (gcc would fold it into both FMAs). */
#define MD_RT(i, X) if (RB > i) { X(i) }
#define MD_ROWS(X) MD_RT(0, X) MD_RT(1, X) MD_RT(2, X) MD_RT(3, X) MD_RT(4, X) MD_RT(5, X) MD_RT(6, X) MD_RT(7, X) MD_RT(8, X) MD_RT(9, X)
#define MD_SFMA(i)                                                                                 \
    {                                                                                              \
        __m512 qv = _mm512_loadu_ps(q + i * dk + d);                                               \
        __asm__("" : "+v"(qv));                                                                    \
        a##i##0 = _mm512_fmadd_ps(qv, k0, a##i##0);                                                \
        if (KB > 1) a##i##1 = _mm512_fmadd_ps(qv, k1, a##i##1);                                    \
    }
#define MD_SPUT(i) { acc[0][i] = a##i##0; if (KB > 1) acc[1][i] = a##i##1; }
static inline __attribute__((always_inline)) void md_score_mk(const float *q, int64_t dk, const uint16_t *k, int64_t ks,
                                                              float *s, int64_t sld, const int RB, const int KB) {
    __m512 a00, a01, a10, a11, a20, a21, a30, a31, a40, a41, a50, a51, a60, a61, a70, a71, a80, a81, a90, a91;
    a00 = a01 = a10 = a11 = a20 = a21 = a30 = a31 = a40 = a41 = a50 = a51 = a60 = a61 = a70 = a71 = a80 = a81 = a90 =
        a91 = _mm512_setzero_ps();
    for (int64_t d = 0; d < dk; d += 16) {
        const __m512 k0 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(k + d)));
        const __m512 k1 = KB > 1 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(k + ks + d))) : k0;
        MD_ROWS(MD_SFMA)
    }
    /* s is key-major (s[t * sld + i]): four rows of one key reduce into one 4-float store; the
     * rows past the last whole four (both keys') go through one more reduction */
    __m512 acc[2][10], rest[8];
    MD_ROWS(MD_SPUT)
    int nrest = 0;
    for (int t = 0; t < KB; t++) {
        int i = 0;
        for (; i + 4 <= RB; i += 4) _mm_storeu_ps(s + t * sld + i, md_reduce4(acc[t][i], acc[t][i + 1], acc[t][i + 2], acc[t][i + 3]));
        for (; i < RB; i++) rest[nrest++] = acc[t][i];
    }
    if (nrest) {
        float sum[8];
        int j = 0;
        for (; j + 4 <= nrest; j += 4) _mm_storeu_ps(sum + j, md_reduce4(rest[j], rest[j + 1], rest[j + 2], rest[j + 3]));
        for (; j < nrest; j++) sum[j] = _mm512_reduce_add_ps(rest[j]);
        const int r4 = RB / 4 * 4, nl = RB - r4; /* nl leftover rows per key, key t's at sum[t * nl + i] */
        for (int t = 0; t < KB; t++)
            for (int i = 0; i < nl; i++) s[t * sld + r4 + i] = sum[t * nl + i];
    }
}

/* o[i][c0, c0 + 32) = alpha[i] o[i] + sum_j p[j * ps + i] v_j[c0, c0 + 32) for RB <= 10 rows, nt f16 values */
#define MD_PINIT(i)                                                                                \
    {                                                                                              \
        const __m512 al = _mm512_set1_ps(alpha[i]);                                                \
        c##i##0 = _mm512_mul_ps(al, _mm512_loadu_ps(o + i * dv + c0));                            \
        c##i##1 = _mm512_mul_ps(al, _mm512_loadu_ps(o + i * dv + c0 + 16));                        \
    }
#define MD_PFMA(i)                                                                                 \
    {                                                                                              \
        const __m512 pb = _mm512_set1_ps(p[j * ps + i]);                                           \
        c##i##0 = _mm512_fmadd_ps(pb, v0, c##i##0);                                                \
        c##i##1 = _mm512_fmadd_ps(pb, v1, c##i##1);                                                \
    }
#define MD_PSTORE(i) { _mm512_storeu_ps(o + i * dv + c0, c##i##0); _mm512_storeu_ps(o + i * dv + c0 + 16, c##i##1); }
static inline __attribute__((always_inline)) void md_pv_mk(const float *p, int64_t ps, int64_t nt, const uint16_t *v,
                                                           int64_t vs, float *o, int64_t dv, int64_t c0,
                                                           const float *alpha, const int RB) {
    __m512 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, c60, c61, c70, c71, c80, c81, c90, c91;
    c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = c60 = c61 = c70 = c71 = c80 = c81 = c90 =
        c91 = _mm512_setzero_ps();
    MD_ROWS(MD_PINIT)
    for (int64_t j = 0; j < nt; j++) {
        const uint16_t *vj = v + j * vs + c0;
        const __m512 v0 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)vj));
        const __m512 v1 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(vj + 16)));
        MD_ROWS(MD_PFMA)
    }
    MD_ROWS(MD_PSTORE)
}

#define MD_SCORE(RB, KB) md_score_mk(qr, dk, k + j * ks, ks, s + j * sr + r, sr, RB, KB)
#define MD_SCORE_RB(RB) { if (nt - j >= 2) MD_SCORE(RB, 2); else MD_SCORE(RB, 1); } break
#define MD_PV(RB) md_pv_mk(s + r, sr, nt, v, vs, o + r * dv, dv, c0, alpha + r, RB); break


/* gb_attn_tile's contract (q scaled float32 [nr][dk], lim, m, l, o[nr][dv]) for f16 keys at
 * k + j*ks and values at v + j*vs; dk % 16 == 0, dv % 32 == 0, nt <= GB_ATTN_TILE; sbuf:
 * GB_ATTN_F16_SBUF(nr) floats, 64-byte aligned. pf (may be NULL): pf_bytes to prefetch (the next tile), spread
 * over the score micro-kernels (all at once, they stall the core on its few miss buffers). */
static inline __attribute__((always_inline)) void md_tile(const float *q, int64_t nr, const int64_t dk, const uint16_t *k,
                                                          const int64_t ks, const uint16_t *v, const int64_t vs,
                                                          const int64_t dv, int64_t nt, int64_t t0, const int64_t *lim,
                                                          float *m, float *l, float *o, float *sbuf, const void *pf,
                                                          int64_t pf_bytes) {
    const char *pfp = (const char *)pf, *pfe = pfp ? pfp + pf_bytes : NULL;
    int64_t r0 = 0;
    if (lim)
        while (r0 < nr && lim[r0] <= t0) r0++; /* rows that see none of these keys: before them */
    if (r0 < nr && nt > 0) {
        const int64_t nr_all = nr;
        q += r0 * dk;
        nr -= r0;
        m += r0;
        l += r0;
        o += r0 * dv;
        if (lim) lim += r0;
        const int64_t sr = (nr_all + 15) / 16 * 16; /* s[j * sr + r]: key-major, rows padded to whole vectors */
        float *s = sbuf, *alpha = sbuf + GB_ATTN_TILE * sr;
        const int64_t nb = (nr + 9) / 10, rb = (nr + nb - 1) / nb; /* equal row blocks of <= 10 */
        const int64_t pf_n = pfp ? (pf_bytes / 64 + nb * ((nt + 1) / 2)) / (nb * ((nt + 1) / 2)) : 0;
        for (int64_t r = 0; r < nr; r += rb) {
            const float *qr = q + r * dk;
            for (int64_t j = 0; j < nt; j += 2) {
                switch (nr - r >= rb ? rb : nr - r) {
                case 10: MD_SCORE_RB(10);
                case 9: MD_SCORE_RB(9);
                case 8: MD_SCORE_RB(8);
                case 7: MD_SCORE_RB(7);
                case 6: MD_SCORE_RB(6);
                case 5: MD_SCORE_RB(5);
                case 4: MD_SCORE_RB(4);
                case 3: MD_SCORE_RB(3);
                case 2: MD_SCORE_RB(2);
                default: MD_SCORE_RB(1);
                }
                if (pfp) gb_attn_pf_step(&pfp, pfe, pf_n);
            }
        }
        /* online softmax, 16 rows per vector (s key-major): s becomes p, 0 past each row's lim */
        const __m512 ninf = _mm512_set1_ps(-INFINITY);
        for (int64_t z0 = 0; z0 < nr; z0 += 16) {
            const __mmask16 rm = md_tail(nr - z0);
            int32_t hi[16];
            for (int i = 0; i < 16; i++) {
                const int64_t h = z0 + i >= nr ? 0 : lim ? lim[z0 + i] - t0 : nt;
                hi[i] = (int32_t)(h > nt ? nt : h);
            }
            const __m512i hv = _mm512_loadu_si512((const void *)hi);
            __m512 mx = ninf;
            for (int64_t j = 0; j < nt; j++)
                mx = _mm512_mask_max_ps(mx, _mm512_cmpgt_epi32_mask(hv, _mm512_set1_epi32((int)j)), mx,
                                        _mm512_loadu_ps(s + j * sr + z0));
            const __m512 mold = _mm512_mask_loadu_ps(ninf, rm, m + z0), mnew = _mm512_max_ps(mold, mx);
            /* alpha = e^(m_old - m_new), 0 where m_old = -inf (no key yet: o is 0) */
            const __m512 al = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(mold, ninf, _CMP_NEQ_OQ), gb_exp512(_mm512_sub_ps(mold, mnew)));
            __m512 sum = _mm512_setzero_ps();
            for (int64_t j = 0; j < nt; j++) {
                float *sp = s + j * sr + z0;
                const __m512 pj = _mm512_maskz_mov_ps(_mm512_cmpgt_epi32_mask(hv, _mm512_set1_epi32((int)j)),
                                                      gb_exp512(_mm512_sub_ps(_mm512_loadu_ps(sp), mnew)));
                _mm512_storeu_ps(sp, pj);
                sum = _mm512_add_ps(sum, pj);
            }
            _mm512_mask_storeu_ps(l + z0, rm, _mm512_fmadd_ps(_mm512_maskz_loadu_ps(rm, l + z0), al, sum));
            _mm512_mask_storeu_ps(m + z0, rm, mnew);
            _mm512_storeu_ps(alpha + z0, al);
        }
        for (int64_t c0 = 0; c0 < dv; c0 += 32)
            for (int64_t r = 0; r < nr; r += rb) {
                switch (nr - r >= rb ? rb : nr - r) {
                case 10: MD_PV(10);
                case 9: MD_PV(9);
                case 8: MD_PV(8);
                case 7: MD_PV(7);
                case 6: MD_PV(6);
                case 5: MD_PV(5);
                case 4: MD_PV(4);
                case 3: MD_PV(3);
                case 2: MD_PV(2);
                default: MD_PV(1);
                }
            }
    }
    if (pfp) gb_attn_pf_step(&pfp, pfe, pf_bytes); /* whatever is left */
}

/* md_tile, compiled separately for the MLA rows of DeepSeek-V2/V3, Kimi and GLM-4.7-Flash (latent
 * 512 + rope 64, rows back to back): with the sizes and strides constants the query rows are
 * immediate offsets rather than ten index registers and a reload per step (1 thread at 16K,
 * L3-resident: 182 -> 195 GFLOP/s). */
static void mla_tile_f16(const float *q, int64_t nr, int64_t dk, const uint16_t *k, int64_t ks, const uint16_t *v,
                         int64_t vs, int64_t dv, int64_t nt, int64_t t0, const int64_t *lim, float *m, float *l, float *o,
                         float *sbuf, const void *pf, int64_t pf_bytes) {
    if (dk == 576 && dv == 512 && ks == 576 && vs == 576)
        md_tile(q, nr, 576, k, 576, v, 576, 512, nt, t0, lim, m, l, o, sbuf, pf, pf_bytes);
    else
        md_tile(q, nr, dk, k, ks, v, vs, dv, nt, t0, lim, m, l, o, sbuf, pf, pf_bytes);
}
#elif GB_ATTN_F16_AVX2
/* the f16 decode tile on 8 lanes (attn_tile_f16.h), GLM-4.7-Flash's 20 rows as 4 blocks of 5 */
#define MLA_HAVE_F16_TILE 1
int gb_mla_f16_tile_ok(void) { return f16_tile_on; }

/* compiled separately for the 576/512 MLA rows (as on AVX-512), per row format (f16, bf16, else float32
 * rows: a q8_0 / q4_0 tile widened first); k, ks in bytes */
static void mla_tile_8(const float *q, int64_t nr, int64_t dk, const uint8_t *k, int64_t ks, int64_t dv, int64_t nt,
                       int64_t t0, const int64_t *lim, float *m, float *l, float *o, float *sbuf, const void *pf,
                       int64_t pf_bytes, int fmt) {
    const int glm = dk == 576 && dv == 512;
#define MLA_T8(DK, DV, FMT) gb_attn_tile_f16_8(q, nr, DK, k, ks, k, ks, DV, nt, t0, lim, m, l, o, sbuf, pf, pf_bytes, NULL, 0, FMT)
    if (fmt == GB_F16) { if (glm) MLA_T8(576, 512, M8_F16); else MLA_T8(dk, dv, M8_F16); }
    else if (fmt == GB_BF16) { if (glm) MLA_T8(576, 512, M8_BF16); else MLA_T8(dk, dv, M8_BF16); }
    else { if (glm) MLA_T8(576, 512, M8_F32); else MLA_T8(dk, dv, M8_F32); }
#undef MLA_T8
}
#else
#define MLA_HAVE_F16_TILE 0
int gb_mla_f16_tile_ok(void) { return 0; }
#endif

/* ---- absorbed and flash -------------------------------------------------------------------- */

/* k_b/v_b as stored (gb_mla_attention_kb_vb) for the decode products: NULL when kv_b is joined */
typedef struct {
    const void *k_b, *v_b;
    int kfmt, vfmt;
    const void *v_packed; /* v_b in the K formats' repacked layout (gb_krepack per head), or NULL */
    const void *k_packed; /* k_b (q8_0/q4_0) in qgemm's packed layout (gb_qrepack per head [R, Dn]), or NULL */
} mla_split;

static int split_gemv(const float *x, int64_t K, const void *w, int fmt, int64_t N, float *y);

static int mla_absorbed(const gb_kvcache *c, int64_t layer, const float *q_nope, const float *q_rope, int64_t T,
                        int64_t H, int64_t Dn, int64_t Dv, const void *kv_b, int wfmt, const mla_split *sp, float scale,
                        int split_cache, int64_t n_splits, float *out) {
    const int64_t R = c->dk, Dr = c->dv, Dq = R + Dr, W = Dn + Dv, L = c->len[layer], bs = c->block_size;
    const int64_t nr = T * H; /* row r = t*H + h: lim is nondecreasing in r */
    const int nth = omp_get_max_threads();
    int64_t rblk, S;
    int par_rows = 0; /* rows shared out over the threads on a short cache (below) */
    if (split_cache) {
        rblk = nr < 64 ? nr : 64;
        const int64_t nrb = (nr + rblk - 1) / rblk;
        S = n_splits > 0 ? n_splits : gb_attn_default_splits(nrb, L, 256);
        /* a short cache (under 2 x 256 tokens, so one split) and fewer row blocks than threads: the
         * rows shared out instead (each row's numbers are its own: the same bits), so a decode step at
         * a few hundred tokens does not run its heads on one thread */
        if (n_splits <= 0 && S == 1 && nrb < nth && nr >= 2 * nth) {
            rblk = (nr + nth - 1) / nth;
            par_rows = 1;
        }
    } else {
        /* one pass over the cache per row block; enough row blocks for the threads */
        rblk = (nr + nth - 1) / nth;
        if (rblk > 64) rblk = 64;
        rblk = (rblk + 4) / 5 * 5; /* whole 5-row register blocks of the score kernel */
        S = 1;
    }
    /* bf16 cache: the bf16 dot-product tile (gb_attn_tile_bf16) reads the rows as stored */
    const int bf16 = c->fmt == GB_BF16 && R % 32 == 0 && gb_attn_bf16_ok();
    /* else, prefill: the rows-in-lanes tile on blocks of up to GB_ATTN_LANES rows */
    /* f16 cache, decode (any head count) and small T: the f16 tile (mla_tile_f16), rows widened in registers */
    /* (AVX2 builds: bf16, q8_0 and q4_0 caches too, on the same 8-lane tile) */
    const int f16t = MLA_HAVE_F16_TILE && !bf16 &&
                     (c->fmt == GB_F16 || (GB_ATTN_F16_AVX2 && (c->fmt == GB_BF16 || ((c->fmt == GB_Q8_0 || c->fmt == GB_Q4_0) && Dq % 32 == 0)))) &&
                     gb_mla_f16_tile_ok() && Dq % 16 == 0 && R % 32 == 0 && (T == 1 || nr <= GB_MLA_F16_ROWS);
    const int widen = f16t && (c->fmt == GB_Q8_0 || c->fmt == GB_Q4_0); /* the 8-lane tile on float32 rows */
    const int lanes = GB_ATTN_HAVE_LANES && !bf16 && !f16t && T > 1 && nr >= 16;
    if (lanes) { /* work items of up to GB_MLA_LANES_BLOCK rows: each tile decoded once for all of them */
        rblk = split_cache ? GB_MLA_LANES_BLOCK : (nr + nth - 1) / nth;
        if (rblk > GB_MLA_LANES_BLOCK) rblk = GB_MLA_LANES_BLOCK;
        if (split_cache) S = n_splits > 0 ? n_splits : gb_attn_default_splits((nr + rblk - 1) / rblk, L, 256);
    }
    if (S > L) S = L;
    if (S < 1) S = 1;
    const int64_t nrb = (nr + rblk - 1) / rblk, nw = nrb * S;
    uint16_t *qb = bf16 ? (uint16_t *)gb_ws_malloc((size_t)(nr * Dq) * sizeof(uint16_t)) : NULL;
    /* the f16 tile's q and o 64-byte aligned: its vector loads of them then never straddle cache
     * lines (1 thread at 16K, q 16 bytes off: ~10% slower). Only there: aligned blocks are not kept
     * by the workspace, and prefill's are megabytes (gb_ws_malloc keeps those for the next call). */
    float *qa = (float *)(f16t ? gb_ws_aligned_alloc(64, (size_t)(nr * Dq) * sizeof(float))
                               : gb_ws_malloc((size_t)(nr * Dq) * sizeof(float)));
    float *pm = (float *)gb_ws_malloc((size_t)(S * nr) * sizeof(float));
    float *pl = (float *)gb_ws_malloc((size_t)(S * nr) * sizeof(float));
    float *po = (float *)(f16t ? gb_ws_aligned_alloc(64, (size_t)(S * nr * R) * sizeof(float))
                               : gb_ws_malloc((size_t)(S * nr * R) * sizeof(float)));
    float *olat = (float *)gb_ws_malloc((size_t)(nr * R) * sizeof(float));
    int64_t *lim = (int64_t *)gb_ws_malloc((size_t)nr * sizeof(int64_t));
    int failed = 0;
    if (!qa || !pm || !pl || !po || !olat || !lim || (bf16 && !qb)) {
        failed = 1;
        goto done;
    }
    /* q_lat[t, h] = scale * W_k,h^T q_nope[t, h] (T x Dn times Dn x R per head); rope part scaled.
     * OpenBLAS is set to one thread around the per-head products only when they call it (T >= 8):
     * setting its thread count costs more than a decode step's products. */
    const int blas_used = T >= 8;
    int prev = blas_used ? blas_solo() : 1;
    if (sp) { /* T == 1: q_lat[h] = k_b[h] (R rows of Dn, as stored) . q_nope[h], then scaled */
        const int64_t krb = gb_mla_row_bytes(sp->kfmt, Dn), kpb = sp->k_packed ? gb_qpacked_bytes(sp->kfmt, R, Dn) : 0;
#pragma omp parallel for schedule(static)
        for (int64_t h = 0; h < H; h++) {
            float *qh = qa + h * Dq;
            /* packed k_b: the 16-row interleaved GEMV (2.2x the stored rows' on GLM-4.7-Flash's [512, 192]
             * heads, 1 thread, Zen 3); the same integers, float32 sums in another order (the portable
             * versions of the two are bit-identical) */
            if (sp->k_packed ? gb_qgemm(sp->kfmt, q_nope + h * Dn, (const char *)sp->k_packed + h * kpb, NULL, qh, 1, R, Dn, GB_QG_AUTO)
                             : split_gemv(q_nope + h * Dn, Dn, (const char *)sp->k_b + h * R * krb, sp->kfmt, R, qh)) {
#pragma omp atomic write
                failed = 2;
            }
            for (int64_t j = 0; j < R; j++) qh[j] *= scale;
        }
        if (failed) goto done;
    } else if (T == 1) {
#pragma omp parallel for schedule(static) if (H * Dn * R > (1 << 18))
        for (int64_t h = 0; h < H; h++) absorb_rows(q_nope + h * Dn, Dn, scale, wrow(kv_b, wfmt, h * W, R), wfmt, R, qa + h * Dq);
    } else {
#pragma omp parallel for schedule(dynamic, 1) if (H * T * Dn * R > (1 << 18))
        for (int64_t h = 0; h < H; h++)
            gemm_nn(T, R, Dn, scale, q_nope + h * Dn, H * Dn, wrow(kv_b, wfmt, h * W, R), wfmt, R, qa + h * Dq, H * Dq);
    }
    if (blas_used) blas_restore(prev);
    for (int64_t r = 0; r < nr; r++) {
        for (int64_t i = 0; i < Dr; i++) qa[r * Dq + R + i] = q_rope[r * Dr + i] * scale;
        lim[r] = L - T + r / H + 1;
    }
    if (bf16) gb_attn_to_bf16(qa, nr * Dq, qb);
#pragma omp parallel num_threads(nw < nth ? (int)nw : nth) if (nr * L * (Dq + R) >= (par_rows ? GB_MLA_PAR_ROWS_MIN : GB_ATTN_PAR_MIN))
    {
        /* scores, alpha and (bf16) the packed p pairs */
        int64_t sfl = lanes ? GB_ATTN_LANES * (GB_ATTN_LANES_TILE + 1) : rblk * (GB_ATTN_TILE + 1 + GB_ATTN_TILE / 2);
        if (f16t && sfl < GB_ATTN_F16_SBUF(rblk)) sfl = GB_ATTN_F16_SBUF(rblk);
        float *sbuf = (float *)gb_ws_aligned_alloc(64, (size_t)sfl * sizeof(float));
        const int64_t tile = lanes ? GB_ATTN_LANES_TILE : GB_ATTN_TILE; /* keys per tile */
        float *kbuf = bf16 || (f16t && !widen) ? NULL : (float *)gb_ws_malloc((size_t)(tile * Dq) * sizeof(float));
        float *qT = lanes ? (float *)gb_ws_malloc((size_t)(GB_MLA_LANES_BLOCK * Dq) * sizeof(float)) : NULL;
        int ok = sbuf && (bf16 || (f16t && !widen) || kbuf) && (!lanes || qT);
        if (!ok) {
#pragma omp atomic write
            failed = 1;
        }
        /* a causal prefill's later row blocks see more keys: hand them out first (largest first), so
         * the team does not wait at the end on one thread's big last block */
#pragma omp for schedule(dynamic, 1)
        for (int64_t w_ = 0; w_ < nw; w_++) {
            if (!ok) continue;
            const int64_t w = T > 1 ? nw - 1 - w_ : w_;
            const int64_t rb = w / S, s = w % S, r0 = rb * rblk, rn = r0 + rblk <= nr ? rblk : nr - r0;
            float *m = pm + s * nr + r0, *l = pl + s * nr + r0, *o = po + (s * nr + r0) * R;
            for (int64_t i = 0; i < rn; i++) {
                m[i] = -INFINITY;
                l[i] = 0.0f;
            }
            memset(o, 0, (size_t)(rn * R) * sizeof(float));
            int64_t t = s * L / S, t1 = (s + 1) * L / S;
            if (t1 > lim[r0 + rn - 1]) t1 = lim[r0 + rn - 1];
            const int64_t *lr = T > 1 ? lim + r0 : NULL;
#if GB_ATTN_HAVE_LANES
            if (lanes && t < t1)
                for (int64_t b = 0; b < rn; b += GB_ATTN_LANES)
                    gb_attn_lanes_pack(qa + (r0 + b) * Dq, rn - b < GB_ATTN_LANES ? rn - b : GB_ATTN_LANES, Dq, qT + b * Dq);
#endif
            while (t < t1) {
                int64_t n = t1 - t, inblk = bs - t % bs;
                if (n > tile) n = tile;
                if (n > inblk) n = inblk;
                const void *pf = NULL;
                int64_t pf_bytes = 0;
                if (t + n < t1) {
                    /* the next tile's rows, while this one computes. The bf16 tile spreads these
                     * prefetches over its micro-kernels: issued all at once they stall the core
                     * on its few miss buffers, and the tiles ran as if the cache rows were not
                     * prefetched at all. In-process A/B, GLM-4.7-Flash decode (cold kv_b and
                     * cache): 1K 0.65 -> 0.63 ms, 4K 1.25-1.33 -> 1.13-1.20, 32K 5.7 -> 4.7. */
                    int64_t nn = t1 - t - n < tile ? t1 - t - n : tile, ib = bs - (t + n) % bs;
                    if (nn > ib) nn = ib;
                    pf = gb_kvcache_k_ptr(c, layer, 0, t + n);
                    pf_bytes = nn * c->k_row_bytes;
                    if (!bf16 && (!f16t || widen)) {
                        gb_attn_prefetch(pf, pf_bytes);
                        pf = NULL;
                    }
                }
                /* one row serves as the key [c, k_rope] and, its first R, the value c */
                if (bf16) {
                    const uint16_t *kr = (const uint16_t *)gb_kvcache_k_ptr(c, layer, 0, t);
                    const int64_t ks = c->k_row_bytes / 2;
                    gb_attn_tile_bf16(qb + r0 * Dq, rn, Dq, kr, ks, kr, ks, R, n, t, lr, m, l, o, sbuf, pf, pf_bytes);
                }
#if GB_ATTN_F16_AVX2
                /* q8_0 / q4_0: the tile's rows widened into float32 once, then read by the same tile: 1 thread,
                 * GLM-4.7-Flash at 16K, q8_0 12.3 (gb_attn_tile) -> 10.2-10.7 ms; widened in registers by each
                 * of the 4 row blocks (a convert and a multiply per 8 values), 12.9-13.4 */
                else if (widen) {
                    const float *kr = gb_attn_rows(c->fmt, gb_kvcache_k_ptr(c, layer, 0, t), n * Dq, kbuf);
                    mla_tile_8(qa + r0 * Dq, rn, Dq, (const uint8_t *)kr, 4 * Dq, R, n, t, lr, m, l, o, sbuf, NULL, 0, GB_F32);
                } else if (f16t)
                    mla_tile_8(qa + r0 * Dq, rn, Dq, gb_kvcache_k_ptr(c, layer, 0, t), c->k_row_bytes, R, n, t, lr, m, l, o, sbuf,
                               pf, pf_bytes, c->fmt);
#elif MLA_HAVE_F16_TILE
                else if (f16t) {
                    const uint16_t *kr = (const uint16_t *)gb_kvcache_k_ptr(c, layer, 0, t);
                    const int64_t ks = c->k_row_bytes / 2;
                    mla_tile_f16(qa + r0 * Dq, rn, Dq, kr, ks, kr, ks, R, n, t, lr, m, l, o, sbuf, pf, pf_bytes);
                }
#endif
                else {
                    const float *kr = gb_attn_rows(c->fmt, gb_kvcache_k_ptr(c, layer, 0, t), n * Dq, kbuf);
#if GB_ATTN_HAVE_LANES
                    if (lanes)
                        for (int64_t b = 0; b < rn; b += GB_ATTN_LANES)
                            gb_attn_tile_lanes(qT + b * Dq, rn - b < GB_ATTN_LANES ? rn - b : GB_ATTN_LANES, Dq, kr, Dq,
                                               kr, Dq, R, n, t, lr ? lr + b : NULL, NULL, 0.0f, m + b, l + b, o + b * R, sbuf);
                    else
#endif
                        gb_attn_tile(qa + r0 * Dq, rn, Dq, kr, Dq, kr, Dq, R, n, t, lr, m, l, o, sbuf);
                }
                t += n;
            }
        }
        gb_ws_free(sbuf);
        gb_ws_free(kbuf);
        gb_ws_free(qT);
    }
    if (failed) goto done;
#pragma omp parallel for schedule(static) if (nr * R > 65536)
    for (int64_t r = 0; r < nr; r++) gb_attn_combine(1, R, S, nr, pm + r, pl + r, po + r * R, olat + r * R, R);
    if (bf16) gb_attn_bf16_unpermute(olat, nr, R); /* the combine works lane by lane: unpermute once, after it */
    /* out[t, h] = W_v,h o_lat[t, h] (T x R times R x Dv per head) */
    prev = blas_used ? blas_solo() : 1;
    if (sp) { /* out[h] = v_b[h] (Dv rows of R, as stored) . o_lat[h] */
        const int64_t vrb = gb_mla_row_bytes(sp->vfmt, R);
        if (sp->v_packed) { /* the repacked rows: q8_K activations once per head, 16-row groups (gb_kp_rows) */
            const int64_t nbk = R / 256, hb = gb_kp_bytes(sp->vfmt, Dv, R);
            const int ver = gb_kversion_best(), pair = MLA_VB_PAIR(ver);
#pragma omp parallel
            {
                gb_block_q8_K *xq = (gb_block_q8_K *)gb_ws_aligned_alloc(64, (size_t)nbk * sizeof(gb_block_q8_K));
                if (!xq) {
#pragma omp atomic write
                    failed = 1;
                }
#pragma omp for schedule(static)
                for (int64_t h = 0; h < H; h++) {
                    if (!xq) continue;
                    gb_quantize_row_q8_K(olat + h * R, xq, R);
                    /* the groups in order; with MLA_VB_PAIR(ver), g and g + GV/2 side by side where the format
                     * has the two-stream GEMV (gb_kp_gemv_pair: the same bits as gb_kp_rows) */
                    const char *vp = (const char *)sp->v_packed + h * hb;
                    float *oh = out + h * Dv;
                    const int64_t GV = (Dv + 15) / 16, HV = pair ? (GV + 1) / 2 : GV;
                    for (int64_t g = 0; g < HV; g++) {
                        const int64_t g2 = g + HV;
                        if (pair && g2 < GV && gb_kp_gemv_pair(sp->vfmt, vp, Dv, g, oh + 16 * g, vp, Dv, g2, oh + 16 * g2, R, xq, ver))
                            continue;
                        gb_kp_rows(sp->vfmt, vp, Dv, R, g, xq, 1, oh + 16 * g, Dv, NULL, ver);
                        if (pair && g2 < GV) gb_kp_rows(sp->vfmt, vp, Dv, R, g2, xq, 1, oh + 16 * g2, Dv, NULL, ver);
                    }
                }
                gb_ws_free(xq);
            }
        } else
#pragma omp parallel for schedule(static)
        for (int64_t h = 0; h < H; h++)
            if (split_gemv(olat + h * R, R, (const char *)sp->v_b + h * Dv * vrb, sp->vfmt, Dv, out + h * Dv)) {
#pragma omp atomic write
                failed = 2;
            }
    } else if (T == 1) {
#pragma omp parallel for schedule(static) if (H * Dv * R > (1 << 18))
        for (int64_t h = 0; h < H; h++)
            gb_gemv_rows(olat + h * R, 1, R, kv_b, wfmt, h * W + Dn, h * W + W, out + h * Dv, Dv);
    } else {
#pragma omp parallel for schedule(dynamic, 1) if (H * T * Dv * R > (1 << 18))
        for (int64_t h = 0; h < H; h++)
            gemm_nt(T, Dv, R, 1.0f, olat + h * R, H * R, wrow(kv_b, wfmt, h * W + Dn, R), wfmt, R, out + h * Dv, H * Dv);
    }
    if (blas_used) blas_restore(prev);
done:
    gb_ws_free(qb);
    gb_ws_free(qa);
    gb_ws_free(pm);
    gb_ws_free(pl);
    gb_ws_free(po);
    gb_ws_free(olat);
    gb_ws_free(lim);
    if (failed == 2) return gb_error(GB_EVALUE, "mla_attention: a k_b/v_b product failed (format %d/%d)", sp->kfmt, sp->vfmt);
    if (failed) return gb_error(GB_ENOMEM, "mla_attention: out of memory");
    return GB_OK;
}

int gb_mla_attention(const gb_kvcache *c, int64_t layer, const float *q_nope, const float *q_rope, int64_t T,
                     int64_t H, int64_t Dn, int64_t Dv, const void *kv_b, int wfmt, float scale, int strategy,
                     int64_t n_splits, float *out) {
    int st = check_common(c, layer, T, H, Dn, Dv);
    if (st) return st;
    if (T == 0) return GB_OK;
    if (!(scale > 0.0f)) scale = 1.0f / sqrtf((float)(Dn + c->dv));
    switch (strategy) {
    case GB_MLA_NAIVE: return mla_naive(c, layer, q_nope, q_rope, T, H, Dn, Dv, kv_b, wfmt, scale, out);
    case GB_MLA_ABSORBED: return mla_absorbed(c, layer, q_nope, q_rope, T, H, Dn, Dv, kv_b, wfmt, NULL, scale, 0, 1, out);
    case GB_MLA_FLASH: return mla_absorbed(c, layer, q_nope, q_rope, T, H, Dn, Dv, kv_b, wfmt, NULL, scale, 1, n_splits, out);
    }
    return gb_error(GB_EVALUE, "unknown MLA strategy %d", strategy);
}

/* ---- k_b / v_b as stored ---------------------------------------------------------------------- */

int64_t gb_mla_row_bytes(int fmt, int64_t K) {
    if (gb_is_kfmt(fmt)) return gb_k_row_bytes(fmt, K);
    if (gb_is_iqfmt(fmt)) return gb_iq_row_bytes(fmt, K);
    return gb_row_bytes(fmt, K);
}

/* y[0, N) = W[N][K] . x for one matrix in its stored format, the kernels a linear layer of that
 * format runs at T = 1 (16-bit and f32 rows: the gemv16 rows; q8_0/q4_0 and the K/IQ formats: x
 * quantized per block as ggml does, integer dot products). Called inside a parallel loop over heads,
 * so the kernels' own OpenMP regions run on the calling thread. */
static int split_gemv(const float *x, int64_t K, const void *w, int fmt, int64_t N, float *y) {
    if (gb_is_float_fmt(fmt)) {
        gb_gemv_rows(x, 1, K, w, fmt, 0, N, y, N);
        return GB_OK;
    }
    if (fmt == GB_Q8_0 || fmt == GB_Q4_0) return gb_qlinear(fmt, x, w, NULL, y, 1, N, K, GB_QC_AUTO, GB_QV_AUTO);
    if (gb_is_kfmt(fmt)) return gb_klinear(fmt, x, w, NULL, y, 1, N, K, GB_KV_AUTO);
    if (gb_is_iqfmt(fmt)) return gb_iqlinear(fmt, x, w, NULL, y, 1, N, K, GB_KV_AUTO);
    return gb_error(GB_EVALUE, "mla: weight format %d is not supported", fmt);
}

static int split_dequant(const void *w, int fmt, int64_t N, int64_t K, float *y) {
    if (gb_is_kfmt(fmt)) return gb_k_dequantize_rows(fmt, w, y, N, K);
    if (gb_is_iqfmt(fmt)) return gb_iq_dequantize_rows(fmt, w, y, N, K);
    return gb_dequantize_rows(fmt, w, y, N, K);
}

int gb_mla_kv_b_f32(const void *k_b, int kfmt, const void *v_b, int vfmt, int64_t H, int64_t Dn, int64_t Dv, int64_t R,
                    float *kv_b) {
    const int64_t W = Dn + Dv, krb = gb_mla_row_bytes(kfmt, Dn), vrb = gb_mla_row_bytes(vfmt, R);
    if (krb < 0 || vrb < 0)
        return gb_error(GB_EVALUE, "mla: k_b format %d with rows of %ld or v_b format %d with rows of %ld is not supported",
                        kfmt, (long)Dn, vfmt, (long)R);
    float *tmp = (float *)gb_ws_malloc((size_t)(H * R * Dn) * sizeof(float));
    if (!tmp) return gb_error(GB_ENOMEM, "mla: out of memory");
    int st = split_dequant(k_b, kfmt, H * R, Dn, tmp);
    for (int64_t h = 0; h < H && st == GB_OK; h++) {
        st = split_dequant((const char *)v_b + h * Dv * vrb, vfmt, Dv, R, kv_b + (h * W + Dn) * R);
        const float *kh = tmp + h * R * Dn; /* [R][Dn] -> rows h*W + i, i < Dn */
        for (int64_t i = 0; i < Dn; i++)
            for (int64_t j = 0; j < R; j++) kv_b[(h * W + i) * R + j] = kh[j * Dn + i];
    }
    gb_ws_free(tmp);
    return st;
}

int gb_mla_attention_kb_vb(const gb_kvcache *c, int64_t layer, const float *q_nope, const float *q_rope, int64_t T,
                           int64_t H, int64_t Dn, int64_t Dv, const void *k_b, int kfmt, const void *v_b, int vfmt,
                           const void *v_packed, const void *k_packed, float scale, int strategy, int64_t n_splits,
                           float *out) {
    int st = check_common(c, layer, T, H, Dn, Dv);
    if (st) return st;
    const int64_t R = c->dk;
    if (gb_mla_row_bytes(kfmt, Dn) < 0 || gb_mla_row_bytes(vfmt, R) < 0)
        return gb_error(GB_EVALUE, "mla: k_b format %d with rows of %ld or v_b format %d with rows of %ld is not supported",
                        kfmt, (long)Dn, vfmt, (long)R);
    if (T == 0) return GB_OK;
    if (strategy < 0 || strategy >= GB_MLA_N_STRATEGIES) return gb_error(GB_EVALUE, "unknown MLA strategy %d", strategy);
    if (!(scale > 0.0f)) scale = 1.0f / sqrtf((float)(Dn + c->dv));
    if (T == 1 && strategy != GB_MLA_NAIVE) {
        if (v_packed && (!gb_kp_is_fmt(vfmt) || Dv % 16 || c->dk % 256))
            return gb_error(GB_EVALUE, "mla: a repacked v_b needs a K format (got %d) and Dv a multiple of 16", vfmt);
        if (k_packed && ((kfmt != GB_Q8_0 && kfmt != GB_Q4_0) || gb_qpacked_bytes(kfmt, R, Dn) < 0))
            return gb_error(GB_EVALUE, "mla: a packed k_b needs q8_0 or q4_0 (got %d) and Dn a multiple of 32", kfmt);
        const mla_split sp = {k_b, v_b, kfmt, vfmt, v_packed, k_packed};
        return mla_absorbed(c, layer, q_nope, q_rope, T, H, Dn, Dv, NULL, GB_F32, &sp, scale,
                            strategy == GB_MLA_FLASH, strategy == GB_MLA_FLASH ? n_splits : 1, out);
    }
    /* prefill (and naive): the joined kv_b in float32 for this call, then the joined path */
    float *kv = (float *)gb_ws_malloc((size_t)(H * (Dn + Dv) * R) * sizeof(float));
    if (!kv) return gb_error(GB_ENOMEM, "mla_attention: out of memory");
    st = gb_mla_kv_b_f32(k_b, kfmt, v_b, vfmt, H, Dn, Dv, R, kv);
    if (st == GB_OK) st = gb_mla_attention(c, layer, q_nope, q_rope, T, H, Dn, Dv, kv, GB_F32, scale, strategy, n_splits, out);
    gb_ws_free(kv);
    return st;
}
