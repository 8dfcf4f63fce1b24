/* kvcache.cu: the paged cache's device side. A cache layer is `pages[n_pages, page_size, row_width]`
 * bf16 plus a block table (int32, page of each page_size-token block), as in vLLM/FlashMLA; the
 * row is [Hkv, Dh] for GQA K (or V) and [R + Dr] (latent then rope key) for MLA.
 *   paged_append_kernel1  one thread per element written (columns [col_off, col_off+src_width))
 *   paged_gather_kernel1  the inverse: contiguous rows out of the pages (naive MLA's expansion) */
#include "common.cuh"

__global__ void paged_append_kernel1(bf16 *__restrict__ pages, const int32_t *__restrict__ table, int64_t page_size,
                                     int64_t row_width, int64_t col_off, const bf16 *__restrict__ src,
                                     int64_t src_width, int64_t T, int64_t start) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < T * src_width; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t t = i / src_width, c = i % src_width, p = start + t;
        int64_t page = table[p / page_size];
        pages[(page * page_size + p % page_size) * row_width + col_off + c] = src[i];
    }
}

__global__ void paged_gather_kernel1(const bf16 *__restrict__ pages, const int32_t *__restrict__ table, int64_t page_size,
                                     int64_t row_width, int64_t col_off, bf16 *__restrict__ dst, int64_t width, int64_t L) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < L * width; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t p = i / width, c = i % width;
        int64_t page = table[p / page_size];
        dst[i] = pages[(page * page_size + p % page_size) * row_width + col_off + c];
    }
}

static int check_rows(const char *what, int64_t page_size, int64_t row_width, int64_t col_off, int64_t width, int64_t n,
                      int64_t start) {
    if (page_size <= 0) return VALUE_ERROR("%s: `page_size` must be > 0, got %ld", what, (long)page_size);
    if (width <= 0 || col_off < 0 || col_off + width > row_width)
        return VALUE_ERROR("%s: columns [%ld, %ld) do not fit a row of %ld", what, (long)col_off, (long)(col_off + width),
                           (long)row_width);
    if (n < 0 || start < 0) return VALUE_ERROR("%s: bad token range start=%ld n=%ld", what, (long)start, (long)n);
    return GBC_OK;
}

static unsigned grid_for(int64_t n) {
    int64_t b = cdiv(n, 256);
    return (unsigned)(b < 65536 ? (b > 0 ? b : 1) : 65536);
}

extern "C" int gbc_paged_append(void *pages, const int32_t *table, int64_t page_size, int64_t row_width, int64_t col_off,
                                const void *src, int64_t src_width, int64_t T, int64_t start) {
    int st = check_rows("paged_append", page_size, row_width, col_off, src_width, T, start);
    if (st) return st;
    GBC_INIT();
    if (T == 0) return GBC_OK;
    paged_append_kernel1<<<grid_for(T * src_width), 256, 0, gbc_stream>>>((bf16 *)pages, table, page_size, row_width, col_off,
                                                                           (const bf16 *)src, src_width, T, start);
    LAUNCH_CHECK("paged_append_kernel1");
    return GBC_OK;
}

extern "C" int gbc_paged_gather(const void *pages, const int32_t *table, int64_t page_size, int64_t row_width,
                                int64_t col_off, void *dst, int64_t width, int64_t L) {
    int st = check_rows("paged_gather", page_size, row_width, col_off, width, L, 0);
    if (st) return st;
    GBC_INIT();
    if (L == 0) return GBC_OK;
    paged_gather_kernel1<<<grid_for(L * width), 256, 0, gbc_stream>>>((const bf16 *)pages, table, page_size, row_width,
                                                                      col_off, (bf16 *)dst, width, L);
    LAUNCH_CHECK("paged_gather_kernel1");
    return GBC_OK;
}
