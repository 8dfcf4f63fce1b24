// ggml's own CPU kernels on glmbench's quantized kernel-bench shapes: the peer of
// `python -m glmbench.bench kernels` (glmbench/bench/quant.py). Benchmarks only; never part of
// glmbench. Built against the static ggml libraries of a llama.cpp build by
// bench/bench_ggml_peer.sh (bench/build_llama_bench.sh makes that build).
//
//   ggml_quant_bench linear TYPE N K T REPACK THREADS REPS [COPIES]
//       y[T, N] = x[T, K] W[N, K]^T, W in TYPE (q4_0 | q8_0 | q2_K..q6_K | iq4_xs | iq4_nl | mxfp4 | bf16 | f16),
//       x float32 (ggml converts it to the weight type's vec_dot type inside the op as in a model's graph: q8_0, q8_K, bf16, f16); REPACK 1 puts W in the CPU_REPACK buffer (interleaved q4_0x8 /
//       q8_0x4 layout, llama.cpp's default on an AVX2/AVX-512 CPU), 0 in the plain CPU buffer.
//       COPIES > 1: that many distinct weights (each its own random blocks), one MUL_MAT each on the
//       same x in one graph, so a compute streams every copy in turn: with their total past the
//       last-level cache each product reads its weight from DRAM, as a model's decode does; the
//       times printed are of the whole graph (the caller divides by COPIES).
//   ggml_quant_bench moe TYPE E F D TOPK T REPACK THREADS REPS [ROTATE]
//       GLM-style routed experts as llama.cpp's graph runs them: gate and up MUL_MAT_ID, SwiGLU,
//       down MUL_MAT_ID, scaled by the router weights and summed over the TOPK experts.
//       ROTATE 1: each timed compute routes every token to the next TOPK experts in turn (compute r,
//       token i: experts (r T + i) TOPK .. + TOPK - 1, mod E), so that with all E experts past the
//       last-level cache each compute reads its experts from DRAM, as a model's decode does.
//
// Prints one line: "<case> best_s <s> median_s <s> gflops <best> cpu_best_s <s>" (linear: then "copies <n>"; cpu_best_s: the
// process CPU time of the best compute, which with THREADS 1 is the compute's own time even on a
// loaded machine). Weights are seeded random
// blocks (valid scales, uniform quants); time is the best of REPS graph computes after one warm-up.
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

static ggml_type parse_type(const char * s) {
    static const struct { const char * name; ggml_type t; } types[] = {
        {"q4_0", GGML_TYPE_Q4_0}, {"q8_0", GGML_TYPE_Q8_0}, {"q2_K", GGML_TYPE_Q2_K}, {"q3_K", GGML_TYPE_Q3_K},
        {"q4_K", GGML_TYPE_Q4_K}, {"q5_K", GGML_TYPE_Q5_K}, {"q6_K", GGML_TYPE_Q6_K}, {"iq4_xs", GGML_TYPE_IQ4_XS},
        {"iq4_nl", GGML_TYPE_IQ4_NL}, {"mxfp4", GGML_TYPE_MXFP4},
        {"bf16", GGML_TYPE_BF16}, {"f16", GGML_TYPE_F16}};
    for (const auto & e : types)
        if (!strcmp(s, e.name)) return e.t;
    fprintf(stderr, "type must be q4_0, q8_0, q2_K, q3_K, q4_K, q5_K, q6_K, iq4_xs, iq4_nl, mxfp4, bf16 or f16, got %s\n", s);
    exit(2);
}

// byte offsets of the fp16 scales inside a block (K-quants, iq4_xs, iq4_nl); mxfp4's E8M0 is byte 0
static std::vector<int> f16_scales(ggml_type t) {
    switch (t) {
    case GGML_TYPE_Q2_K: return {80, 82};
    case GGML_TYPE_Q3_K: return {108};
    case GGML_TYPE_Q4_K: case GGML_TYPE_Q5_K: return {0, 2};
    case GGML_TYPE_Q6_K: return {208};
    default: return {0};
    }
}

// random blocks: fp16 scale ~1/(std*sqrt(K)), quants uniform (q8_0 in [-127, 127])
static void fill_blocks(std::vector<uint8_t> & buf, ggml_type t, int64_t K, std::mt19937 & rng) {
    if (t == GGML_TYPE_BF16 || t == GGML_TYPE_F16) {  // normal(0, 1/sqrt(K)) rounded to the type
        std::normal_distribution<float> nd(0.0f, 1.0f / std::sqrt((float) K));
        for (size_t i = 0; i + 2 <= buf.size(); i += 2) {
            const float v = nd(rng);
            uint16_t h;
            if (t == GGML_TYPE_BF16) { ggml_bf16_t b = ggml_fp32_to_bf16(v); memcpy(&h, &b, 2); }
            else { ggml_fp16_t f = ggml_fp32_to_fp16(v); memcpy(&h, &f, 2); }
            memcpy(buf.data() + i, &h, 2);
        }
        return;
    }
    const size_t bs = ggml_type_size(t);
    const size_t nb = buf.size() / bs;
    const float d = 1.0f / ((t == GGML_TYPE_Q4_0 ? 4.6f : 73.6f) * std::sqrt((float) K));
    const ggml_fp16_t h = ggml_fp32_to_fp16(d);
    std::uniform_int_distribution<int> u(0, 255);
    if (t != GGML_TYPE_Q4_0 && t != GGML_TYPE_Q8_0) {
        // the other types: random bytes (every value and 6-bit scale pattern), small finite scales,
        // as glmbench/bench/quant.py's kquant_weights and bench/bench_iq_mxfp4.py's iq_weights
        const ggml_fp16_t hs = ggml_fp32_to_fp16(0.005f);
        for (size_t b = 0; b < nb; b++) {
            uint8_t * p = buf.data() + b * bs;
            for (size_t i = 0; i < bs; i++) p[i] = (uint8_t) u(rng);
            if (t == GGML_TYPE_MXFP4) p[0] = (uint8_t) (116 + u(rng) % 6);
            else for (int o : f16_scales(t)) memcpy(p + o, &hs, 2);
        }
        return;
    }
    for (size_t b = 0; b < nb; b++) {
        uint8_t * p = buf.data() + b * bs;
        memcpy(p, &h, 2);
        for (size_t i = 2; i < bs; i++) {
            int v = u(rng);
            if (t == GGML_TYPE_Q8_0 && v == 128) v = 129;  // -128 is outside q8_0's range
            p[i] = (uint8_t) v;
        }
    }
}

static ggml_backend_buffer_type_t repack_buft(ggml_backend_t be) {
    ggml_backend_dev_t dev = ggml_backend_get_device(be);
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
    auto get = (ggml_backend_dev_get_extra_bufts_t) ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts");
    if (get) {
        for (ggml_backend_buffer_type_t * b = get(dev); b && *b; b++) {
            if (std::string(ggml_backend_buft_name(*b)) == "CPU_REPACK") return *b;
        }
    }
    fprintf(stderr, "this ggml build has no CPU_REPACK buffer type\n");
    exit(3);
}

int main(int argc, char ** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s linear TYPE N K T REPACK THREADS REPS [COPIES] | moe TYPE E F D TOPK T REPACK THREADS REPS [ROTATE]\n", argv[0]);
        return 2;
    }
    const bool moe = !strcmp(argv[1], "moe");
    if ((moe && argc != 11 && argc != 12) || (!moe && argc != 9 && argc != 10)) {
        fprintf(stderr, "wrong number of arguments\n");
        return 2;
    }
    const ggml_type t = parse_type(argv[2]);
    int64_t N = 0, K = 0, T = 0, E = 0, F = 0, D = 0, TOPK = 0;
    int a = 3;
    if (moe) {
        E = atoll(argv[a++]); F = atoll(argv[a++]); D = atoll(argv[a++]); TOPK = atoll(argv[a++]);
    } else {
        N = atoll(argv[a++]); K = atoll(argv[a++]);
    }
    T = atoll(argv[a++]);
    const int repack = atoi(argv[a++]);
    const int threads = atoi(argv[a++]);
    const int reps = atoi(argv[a++]);
    const int copies = !moe && argc == 10 ? atoi(argv[a++]) : 1;
    const int rotate = moe && argc == 12 ? atoi(argv[a++]) : 0;
    if (copies < 1) { fprintf(stderr, "COPIES must be >= 1\n"); return 2; }

    ggml_backend_t be = ggml_backend_cpu_init();
    ggml_backend_cpu_set_n_threads(be, threads);
    ggml_backend_buffer_type_t wbuft = repack ? repack_buft(be) : ggml_backend_cpu_buffer_type();

    // weights
    ggml_init_params wp = {ggml_tensor_overhead() * (8 + (size_t) copies), nullptr, true};
    ggml_context * wctx = ggml_init(wp);
    std::vector<ggml_tensor *> W;
    if (moe) {
        W.push_back(ggml_new_tensor_3d(wctx, t, D, F, E));  // gate
        W.push_back(ggml_new_tensor_3d(wctx, t, D, F, E));  // up
        W.push_back(ggml_new_tensor_3d(wctx, t, F, D, E));  // down
    } else {
        for (int c = 0; c < copies; c++) W.push_back(ggml_new_tensor_2d(wctx, t, K, N));
    }
    ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, wbuft);
    if (!wbuf) { fprintf(stderr, "could not allocate the weights\n"); return 3; }

    // graph
    ggml_init_params gp = {ggml_tensor_overhead() * (64 + (size_t) copies) + ggml_graph_overhead(), nullptr, true};
    ggml_context * gctx = ggml_init(gp);
    ggml_tensor * x = nullptr, * ids = nullptr, * wts = nullptr, * y = nullptr;
    std::vector<ggml_tensor *> ys;  // every output (COPIES products)
    double flops;
    if (moe) {
        x = ggml_new_tensor_3d(gctx, GGML_TYPE_F32, D, 1, T);
        ids = ggml_new_tensor_2d(gctx, GGML_TYPE_I32, TOPK, T);
        wts = ggml_new_tensor_3d(gctx, GGML_TYPE_F32, 1, TOPK, T);
        ggml_tensor * g = ggml_mul_mat_id(gctx, W[0], x, ids);    // [F, TOPK, T]
        ggml_tensor * u = ggml_mul_mat_id(gctx, W[1], x, ids);
        ggml_tensor * h = ggml_swiglu_split(gctx, g, u);
        ggml_tensor * dn = ggml_mul_mat_id(gctx, W[2], h, ids);  // [D, TOPK, T]
        dn = ggml_mul(gctx, dn, wts);
        y = ggml_sum_rows(gctx, ggml_cont(gctx, ggml_permute(gctx, dn, 1, 0, 2, 3)));  // [1, D, T]
        flops = 6.0 * T * TOPK * F * D;
    } else {
        x = ggml_new_tensor_2d(gctx, GGML_TYPE_F32, K, T);
        for (int c = 0; c < copies; c++) ys.push_back(ggml_mul_mat(gctx, W[c], x));
        y = ys[0];
        flops = 2.0 * T * N * K * copies;
    }
    if (ys.empty()) ys.push_back(y);
    ggml_set_input(x);  // graph inputs and the output keep their own memory (the allocator reuses the rest)
    if (ids) ggml_set_input(ids);
    if (wts) ggml_set_input(wts);
    ggml_cgraph * gf = ggml_new_graph(gctx);
    for (ggml_tensor * o : ys) {
        ggml_set_output(o);
        ggml_build_forward_expand(gf, o);
    }
    // a weight in CPU_REPACK must have a repacked layout for its type on this CPU (llama.cpp
    // checks the same before placing a weight there: on x86, q4_0 has one, q8_0 has none)
    for (int i = 0; i < ggml_graph_n_nodes(gf); i++) {
        ggml_tensor * n = ggml_graph_node(gf, i);
        if ((n->op == GGML_OP_MUL_MAT || n->op == GGML_OP_MUL_MAT_ID) && !ggml_backend_supports_op(be, n)) {
            fprintf(stderr, "%s: the CPU backend cannot run %s on a %s weight in %s (no repacked layout for it here)\n",
                    argv[1], ggml_op_desc(n), argv[2], ggml_backend_buft_name(wbuft));
            return 5;
        }
    }
    std::mt19937 rng(1234);
    for (ggml_tensor * w : W) {
        std::vector<uint8_t> host(ggml_nbytes(w));
        fill_blocks(host, t, w->ne[0], rng);
        ggml_backend_tensor_set(w, host.data(), 0, host.size());  // the repack happens here
    }
    ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
    if (!ggml_gallocr_alloc_graph(galloc, gf)) { fprintf(stderr, "could not allocate the graph\n"); return 3; }
    // the inputs, uploaded again before every compute (outside the timed region): each compute
    // starts from the same x, ids and router weights whatever the allocator placed beside them
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> xv(ggml_nelements(x));
    for (float & v : xv) v = nd(rng);
    std::vector<int32_t> iv;
    std::vector<float> wv;
    if (moe) {
        iv.resize(TOPK * T);
        std::vector<int32_t> perm(E);
        for (int64_t i = 0; i < T; i++) {
            for (int64_t e = 0; e < E; e++) perm[e] = (int32_t) e;
            std::shuffle(perm.begin(), perm.end(), rng);
            for (int64_t j = 0; j < TOPK; j++) iv[i * TOPK + j] = perm[j];
        }
        std::uniform_real_distribution<float> ud(0.0f, 1.0f);
        wv.resize(TOPK * T);
        for (float & v : wv) v = ud(rng);
    }
    auto set_inputs = [&]() {
        ggml_backend_tensor_set(x, xv.data(), 0, xv.size() * sizeof(float));
        if (moe) {
            ggml_backend_tensor_set(ids, iv.data(), 0, iv.size() * sizeof(int32_t));
            ggml_backend_tensor_set(wts, wv.data(), 0, wv.size() * sizeof(float));
        }
    };
    std::vector<float> out(ggml_nelements(y));
    auto check = [&]() {
        for (ggml_tensor * o : ys) {
            ggml_backend_tensor_get(o, out.data(), 0, out.size() * sizeof(float));
            for (size_t i = 0; i < out.size(); i++) {
                if (!std::isfinite(out[i])) { fprintf(stderr, "non-finite output at %zu of %zu\n", i, out.size()); exit(4); }
            }
        }
    };
    set_inputs();
    if (ggml_backend_graph_compute(be, gf) != GGML_STATUS_SUCCESS) { fprintf(stderr, "compute failed\n"); return 3; }
    check();
    std::vector<double> ts;
    double cpu_best = 1e30;
    auto cpu_now = []() {
        timespec c;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c);
        return c.tv_sec + 1e-9 * c.tv_nsec;
    };
    for (int r = 0; r < reps; r++) {
        if (rotate) {       // the next TOPK experts of the cycle for every token (outside the timed region)
            for (int64_t i = 0; i < T; i++)
                for (int64_t j = 0; j < TOPK; j++) iv[i * TOPK + j] = (int32_t) (((r * T + i) * TOPK + j) % E);
        }
        set_inputs();
        const double c0 = cpu_now();
        auto t0 = std::chrono::steady_clock::now();
        ggml_backend_graph_compute(be, gf);
        ts.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        cpu_best = std::min(cpu_best, cpu_now() - c0);
        check();
    }
    std::sort(ts.begin(), ts.end());
    const double best = ts.front(), med = ts[ts.size() / 2];
    if (moe) {
        printf("moe %s E=%lld F=%lld D=%lld top%lld T=%lld repack=%d best_s %.6g median_s %.6g gflops %.2f cpu_best_s %.6g rotate %d\n",
               argv[2], (long long) E, (long long) F, (long long) D, (long long) TOPK, (long long) T, repack, best, med,
               flops / best / 1e9, cpu_best, rotate);
    } else {
        printf("linear %s N=%lld K=%lld T=%lld repack=%d best_s %.6g median_s %.6g gflops %.2f cpu_best_s %.6g copies %d\n", argv[2],
               (long long) N, (long long) K, (long long) T, repack, best, med, flops / best / 1e9, cpu_best, copies);
    }
    ggml_gallocr_free(galloc);
    ggml_free(gctx);
    ggml_backend_buffer_free(wbuf);
    ggml_free(wctx);
    ggml_backend_free(be);
    return 0;
}
