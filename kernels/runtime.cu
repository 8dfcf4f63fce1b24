/* runtime.cu: device, stream, cuBLAS handle, memory, events, graph capture, and the error
 * buffer every gbc_* function reports through. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common.cuh"
#ifdef GB_HAVE_CUBLAS
#include <cublas_v2.h>
#endif

cudaStream_t gbc_stream = nullptr;
#ifdef GB_HAVE_CUBLAS
cublasHandle_t gbc_cublas = nullptr;
static void *cublas_ws = nullptr;
/* cuBLAS wants a workspace set explicitly for graph capture (it must not allocate while
 * capturing); 32 MiB is what NVIDIA's docs recommend for Hopper. */
static const size_t CUBLAS_WS_BYTES = 32u << 20;
#endif

static thread_local char err_buf[1024];

extern "C" const char *gbc_last_error(void) { return err_buf; }

extern "C" int gbc_set_error(int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_buf, sizeof err_buf, fmt, ap);
    va_end(ap);
    return status;
}

static const char *base_name(const char *path) {
    const char *s = strstr(path, "kernels/");
    return s ? s : path;
}

int gbc_cuda_fail(cudaError_t e, const char *what, const char *file, int line) {
    return gbc_set_error(GBC_ECUDA, "CUDA error %d (%s): %s, in %s (%s:%d)", (int)e, cudaGetErrorName(e),
                         cudaGetErrorString(e), what, base_name(file), line);
}

int gbc_cublas_fail(int s, const char *what, const char *file, int line) {
#ifdef GB_HAVE_CUBLAS
    return gbc_set_error(GBC_ECUDA, "cuBLAS error %d (%s), in %s (%s:%d)", s,
                         cublasGetStatusString((cublasStatus_t)s), what, base_name(file), line);
#else
    return gbc_set_error(GBC_ECUDA, "cuBLAS error %d, in %s (%s:%d)", s, what, base_name(file), line);
#endif
}

extern "C" int gbc_init(void) {
    if (gbc_stream) return GBC_OK;
    int n = 0;
    CUDA_CHECK(cudaGetDeviceCount(&n));
    if (n < 1) return gbc_set_error(GBC_ECUDA, "CUDA error: no CUDA device found (cudaGetDeviceCount returned 0)");
    CUDA_CHECK(cudaSetDevice(0));
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
#ifdef GB_HAVE_CUBLAS
    CUBLAS_CHECK(cublasCreate(&gbc_cublas));
    CUBLAS_CHECK(cublasSetStream(gbc_cublas, s));
    CUDA_CHECK(cudaMalloc(&cublas_ws, CUBLAS_WS_BYTES));
    CUBLAS_CHECK(cublasSetWorkspace(gbc_cublas, cublas_ws, CUBLAS_WS_BYTES));
#endif
    gbc_stream = s;
    return GBC_OK;
}

extern "C" int gbc_have_cublas(void) {
#ifdef GB_HAVE_CUBLAS
    return 1;
#else
    return 0;
#endif
}

extern "C" int gbc_device_count(int *n) {
    *n = 0;
    CUDA_CHECK(cudaGetDeviceCount(n));
    return GBC_OK;
}

extern "C" int gbc_device_info(char *name, size_t name_len, int *sm_count, int *cc_major, int *cc_minor,
                               size_t *total_mem, size_t *l2_bytes, int *smem_optin) {
    GBC_INIT();
    cudaDeviceProp p;
    CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
    snprintf(name, name_len, "%s", p.name);
    *sm_count = p.multiProcessorCount;
    *cc_major = p.major;
    *cc_minor = p.minor;
    *total_mem = p.totalGlobalMem;
    *l2_bytes = (size_t)p.l2CacheSize;
    *smem_optin = (int)p.sharedMemPerBlockOptin;
    return GBC_OK;
}

extern "C" int gbc_mem_info(size_t *free_b, size_t *total_b) {
    GBC_INIT();
    CUDA_CHECK(cudaMemGetInfo(free_b, total_b));
    return GBC_OK;
}

extern "C" int gbc_malloc(void **p, size_t n) {
    GBC_INIT();
    *p = nullptr;
    CUDA_CHECK(cudaMalloc(p, n ? n : 1));
    return GBC_OK;
}

extern "C" int gbc_free(void *p) {
    if (!p) return GBC_OK;
    GBC_INIT();
    CUDA_CHECK(cudaFree(p));
    return GBC_OK;
}

extern "C" int gbc_upload(void *dst, const void *src, size_t n) {
    GBC_INIT();
    CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, gbc_stream));
    CUDA_CHECK(cudaStreamSynchronize(gbc_stream));
    return GBC_OK;
}

extern "C" int gbc_download(void *dst, const void *src, size_t n) {
    GBC_INIT();
    CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, gbc_stream));
    CUDA_CHECK(cudaStreamSynchronize(gbc_stream));
    return GBC_OK;
}

extern "C" int gbc_copy(void *dst, const void *src, size_t n) {
    GBC_INIT();
    CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, gbc_stream));
    return GBC_OK;
}

template <typename T>
__global__ void fill_kernel(T *p, T v, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = v;
}

extern "C" int gbc_fill_u16(void *dst, uint16_t value, size_t count) {
    GBC_INIT();
    if (!count) return GBC_OK;
    int blocks = (int)(cdiv((int64_t)count, 256) < 65536 ? cdiv((int64_t)count, 256) : 65536);
    fill_kernel<uint16_t><<<blocks, 256, 0, gbc_stream>>>((uint16_t *)dst, value, count);
    LAUNCH_CHECK("fill_kernel<u16>");
    return GBC_OK;
}

extern "C" int gbc_fill_u32(void *dst, uint32_t value, size_t count) {
    GBC_INIT();
    if (!count) return GBC_OK;
    int blocks = (int)(cdiv((int64_t)count, 256) < 65536 ? cdiv((int64_t)count, 256) : 65536);
    fill_kernel<uint32_t><<<blocks, 256, 0, gbc_stream>>>((uint32_t *)dst, value, count);
    LAUNCH_CHECK("fill_kernel<u32>");
    return GBC_OK;
}

/* splitmix64: a counter-based hash, so the same seed gives the same weights on any grid. */
__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

__global__ void random_bf16_kernel(bf16 *p, size_t n, uint64_t seed, float scale) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint64_t h = splitmix64(seed * 0x100000001B3ull + i);
        /* top 24 bits -> [0, 1) exactly representable in float */
        float u = (float)(h >> 40) * (1.0f / 16777216.0f);
        p[i] = f2bf((2.0f * u - 1.0f) * scale);
    }
}

extern "C" int gbc_random_bf16(void *dst, size_t count, uint64_t seed, float scale) {
    GBC_INIT();
    if (!count) return GBC_OK;
    int blocks = (int)(cdiv((int64_t)count, 256) < 65536 ? cdiv((int64_t)count, 256) : 65536);
    random_bf16_kernel<<<blocks, 256, 0, gbc_stream>>>((bf16 *)dst, count, seed, scale);
    LAUNCH_CHECK("random_bf16_kernel");
    return GBC_OK;
}

extern "C" int gbc_synchronize(void) {
    GBC_INIT();
    CUDA_CHECK(cudaStreamSynchronize(gbc_stream));
    CUDA_CHECK(cudaGetLastError());
    return GBC_OK;
}

extern "C" int gbc_event_create(void **ev) {
    GBC_INIT();
    cudaEvent_t e;
    CUDA_CHECK(cudaEventCreate(&e));
    *ev = (void *)e;
    return GBC_OK;
}

extern "C" int gbc_event_destroy(void *ev) {
    GBC_INIT();
    CUDA_CHECK(cudaEventDestroy((cudaEvent_t)ev));
    return GBC_OK;
}

extern "C" int gbc_event_record(void *ev) {
    GBC_INIT();
    CUDA_CHECK(cudaEventRecord((cudaEvent_t)ev, gbc_stream));
    return GBC_OK;
}

extern "C" int gbc_event_elapsed(void *start, void *stop, float *ms) {
    GBC_INIT();
    CUDA_CHECK(cudaEventSynchronize((cudaEvent_t)stop));
    CUDA_CHECK(cudaEventElapsedTime(ms, (cudaEvent_t)start, (cudaEvent_t)stop));
    return GBC_OK;
}

extern "C" int gbc_capture_begin(void) {
    GBC_INIT();
    CUDA_CHECK(cudaStreamBeginCapture(gbc_stream, cudaStreamCaptureModeThreadLocal));
    return GBC_OK;
}

extern "C" int gbc_capture_end(void **graph_exec) {
    GBC_INIT();
    cudaGraph_t g = nullptr;
    cudaGraphExec_t ge = nullptr;
    *graph_exec = nullptr;
    CUDA_CHECK(cudaStreamEndCapture(gbc_stream, &g));
    cudaError_t e = cudaGraphInstantiate(&ge, g, 0);
    cudaGraphDestroy(g);
    if (e != cudaSuccess) return gbc_cuda_fail(e, "cudaGraphInstantiate", __FILE__, __LINE__);
    *graph_exec = (void *)ge;
    return GBC_OK;
}

extern "C" int gbc_graph_launch(void *graph_exec) {
    GBC_INIT();
    CUDA_CHECK(cudaGraphLaunch((cudaGraphExec_t)graph_exec, gbc_stream));
    return GBC_OK;
}

extern "C" int gbc_graph_destroy(void *graph_exec) {
    GBC_INIT();
    CUDA_CHECK(cudaGraphExecDestroy((cudaGraphExec_t)graph_exec));
    return GBC_OK;
}
