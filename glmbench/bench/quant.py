"""Quantized-kernel cases for the kernels benchmark (`python -m glmbench.bench kernels`), and the
per-element costs the cost model uses (`python -m glmbench.bench.quant`).

Cases: decode-sized GEMV (T=1) and prefill-sized GEMM (T=512) on q8_0/q4_0 weights at the shapes
of GLM-4.7-Flash's expert and Qwen3-32B's FFN: the integer GEMM on repacked weights (qgemm_vnni,
what the model uses), the older row-major integer kernel and the float32 one, with float32 OpenBLAS
on the same shape as the NumPy baseline; GLM-4.7-Flash's 64 routed experts (top-4) in q8_0/q4_0 at
T=1 and T=512 through the C driver (gb_qmoe); row dequantization (what the quantized KV cache does
inside attention); row quantization (what append does). K-quants (q2_K..q6_K and iq4_xs,
csrc/quant_k.c): GEMV at T=1 (on the repacked copy where the format has one, beside the kernel on
the bytes as stored) and GEMM at T=512 on the same shapes, the portable version
beside the VNNI one on the small shape, against NumPy float32 on the dequantized weights and the
q8_K-rounded activations (kquant_cases; bench/bench_kquant.py runs them with the int8 ceiling).
"""
from __future__ import annotations

import time

import numpy as np

import glmbench
from glmbench.bench.case import Case
from glmbench.core import quant

# (label, N, K): GLM-4.7-Flash routed expert gate (1536 x 2048), Qwen3-32B FFN up (25600 x 5120)
SHAPES = (("glm-expert", 1536, 2048), ("qwen3-32b-ffn", 25600, 5120))


def _weights(n, k, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, k), dtype=np.float32) / np.float32(np.sqrt(k)))


def cases(quick: bool = False):
    """quick: only the small (GLM expert) shape."""

    out = []
    avail = quant.kernels()
    q8_kernel = "vnni_q8" if avail.get("vnni_q8") else ("avx2_q8" if avail.get("avx2_q8") else "ref_q8")
    qg_kernel = next(k for k in ("qgemm_vnni", "qgemm_avx2", "qgemm_ref") if avail.get(k))
    f32_kernel = "avx512_f32" if avail.get("avx512_f32") else "ref_f32"
    rng = np.random.default_rng(1)
    for label, n, k in SHAPES[:1] if quick else SHAPES:
        w = _weights(n, k)
        for fmt in ("q8_0", "q4_0"):
            qt = quant.quantize(w, fmt)
            # the NumPy twin computes with the same (dequantized) weights in float32; for the integer
            # kernel also with the same q8_0-rounded activations, so the two agree to float32 sums
            wd = qt.dequantize()
            x1 = rng.standard_normal((1, k), dtype=np.float32)
            x1q = quant.quantize(x1, "q8_0").dequantize()
            qp = quant.quantize(w, fmt).repack()  # the packed copy the integer GEMM reads
            for kern in (qg_kernel, q8_kernel, f32_kernel):
                xr = x1 if kern.endswith("f32") else x1q
                out.append(Case(f"qlinear {fmt} {kern} T=1 {label} {n}x{k}",
                                run=lambda qt=(qp if kern.startswith("qgemm") else qt), x=x1, kern=kern:
                                quant.linear(x, qt, kernel=kern),
                                numpy_run=lambda wd=wd, x=xr: x @ wd.T,
                                flops=2.0 * n * k, bytes=float(qt.nbytes + 4 * (k + n)), bound="memory"))
            if label == "glm-expert":  # T=512 on the small shape keeps the case short
                x = rng.standard_normal((512, k), dtype=np.float32)
                xq = quant.quantize(x, "q8_0").dequantize()
                out.append(Case(f"qlinear {fmt} {qg_kernel} T=512 {label} {n}x{k}",
                                run=lambda qp=qp, x=x: quant.linear(x, qp, kernel=qg_kernel),
                                numpy_run=lambda wd=wd, x=xq: x @ wd.T,
                                flops=2.0 * 512 * n * k, bytes=float(qt.nbytes + 4 * 512 * (k + n)), bound="int8",
                                tags=(f"qgemm_{fmt}",)))
                out.append(Case(f"qlinear {fmt} blas_f32 T=512 {label} {n}x{k}",
                                run=lambda qt=qt, x=x: quant.linear(x, qt, compute="f32"),
                                numpy_run=lambda wd=wd, x=x: x @ wd.T,
                                flops=2.0 * 512 * n * k, bytes=float(qt.nbytes + 4 * 512 * (k + n)), bound="compute"))
            del wd
        del w
    out += _moe_cases(quick, rng)
    out += kquant_cases(quick, rng)
    x = rng.standard_normal((256, 1024), dtype=np.float32)  # ~1 MB of output: L2-resident
    for fmt in ("q8_0", "q4_0"):
        qt = quant.quantize(x, fmt)
        out.append(Case(f"dequantize {fmt} 256x1024", run=qt.dequantize, numpy_run=None, flops=float(x.size),
                        bytes=float(qt.nbytes + x.nbytes), bound="memory"))
        out.append(Case(f"quantize {fmt} 256x1024", run=lambda fmt=fmt: quant.quantize(x, fmt), numpy_run=None,
                        flops=float(x.size), bytes=float(qt.nbytes + x.nbytes), bound="compute"))
    return out


K_FMTS = ("q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "iq4_xs")
# byte offsets of the f16 scales in a block
_K_SCALES = {"q2_K": (80, 82), "q3_K": (108,), "q4_K": (0, 2), "q5_K": (0, 2), "q6_K": (208,), "iq4_xs": (0,)}


def kquant_weights(n: int, k: int, fmt: str, seed: int = 0) -> quant.QTensor:
    """A [n, k] K-quant QTensor of random blocks: random bytes (every value, 6-bit scale and min
    pattern), f16 super-block scales drawn small and finite. glmbench has no K-quant quantizer
    (the formats are read as stored); the kernels' speed does not depend on the values."""
    _, qk, bb = quant.FORMATS[fmt]
    rng = np.random.default_rng(seed)
    nb = k // qk
    a = rng.integers(0, 256, (n, nb, bb), dtype=np.uint8)
    for o in _K_SCALES[fmt]:
        a[:, :, o:o + 2] = (rng.uniform(0.001, 0.01, (n, nb)).astype(np.float16).view(np.uint8).reshape(n, nb, 2))
    return quant.QTensor(a.reshape(n, nb * bb), fmt, (n, k))


def q8_K_dequantized(x: np.ndarray) -> np.ndarray:
    """x [T, K] float32 as the K-quant kernels see it: quantized to q8_K per row (ggml's reference
    rounding, csrc/quant_k.c) and back to float32."""
    from glmbench.core._loader import _core
    T, K = x.shape
    blk = _core.quantize_q8_K(np.ascontiguousarray(x)).reshape(T, K // 256, 292)
    d = blk[:, :, :4].copy().view(np.float32)
    q = blk[:, :, 4:260].copy().view(np.int8).astype(np.float32)
    return (q * d).reshape(T, K)


def kquant_cases(quick: bool = False, rng=None):
    """K-quant GEMV (T=1, both shapes) and GEMM (T=512, the small shape) per format; the NumPy twin is
    float32 BLAS on the dequantized weights and the q8_K-rounded activations (the same numbers)."""
    rng = rng if rng is not None else np.random.default_rng(1)
    return stored_linear_cases(quick, rng, K_FMTS, kquant_weights, q8_K_dequantized, tagged=True)


def stored_linear_cases(quick, rng, fmts, weights, act_deq, tagged=False):
    """GEMV (T=1, each shape; on the small one also kquant_ref when a SIMD version is the default)
    and GEMM (T=512, the small shape) per format of weights read as stored (`weights(n, k, fmt, seed)`
    -> QTensor); the NumPy twin is float32 BLAS on the dequantized weights and `act_deq(x)`, the
    activations as the kernels round them. `tagged`: cases carry gemv_<fmt> / gemm_<fmt> tags."""
    avail = quant.kernels()
    kern = next(v for v in ("kquant_vnni", "kquant_avx2", "kquant_ref") if avail.get(v))
    out = []
    for label, n, k in SHAPES[:1] if quick else SHAPES:
        for fmt in fmts:
            qt = weights(n, k, fmt, seed=fmts.index(fmt) + (0 if label == "glm-expert" else 10))
            wd = qt.dequantize()
            x1 = rng.standard_normal((1, k), dtype=np.float32)
            x1q = act_deq(x1)
            kerns = (kern, "kquant_ref") if label == "glm-expert" and kern != "kquant_ref" else (kern,)
            # the decode GEMV reads the repacked copy (KP_FORMATS, made once like on a model's first
            # call): its bytes are what it streams; the as-stored row is the kernel it replaced
            qt.repack()
            rd = float(qt.packed.nbytes if qt.packed is not None else qt.nbytes)
            for kk in kerns:
                out.append(Case(f"qlinear {fmt} {kk} T=1 {label} {n}x{k}",
                                run=lambda qt=qt, x=x1, kk=kk: quant.linear(x, qt, kernel=kk),
                                numpy_run=lambda wd=wd, x=x1q: x @ wd.T,
                                flops=2.0 * n * k, bytes=rd + 4 * (k + n), bound="memory",
                                tags=(f"gemv_{fmt}",) if tagged else ()))
            if qt.packed is not None:
                from glmbench.core._loader import _core
                fid, kv = quant.FORMATS[fmt][0], quant._KQUANT[kern]
                out.append(Case(f"qlinear {fmt} {kern} as-stored T=1 {label} {n}x{k}",
                                run=lambda qt=qt, x=x1, fid=fid, kv=kv: _core.klinear(x, qt.data, fid, qt.shape[1], None, kv),
                                numpy_run=lambda wd=wd, x=x1q: x @ wd.T,
                                flops=2.0 * n * k, bytes=float(qt.nbytes + 4 * (k + n)), bound="memory",
                                tags=(f"gemv_{fmt}_stored",) if tagged else ()))
            if label == "glm-expert":
                x = rng.standard_normal((512, k), dtype=np.float32)
                xq = act_deq(x)
                out.append(Case(f"qlinear {fmt} {kern} T=512 {label} {n}x{k}",
                                run=lambda qt=qt, x=x: quant.linear(x, qt, kernel=kern),
                                numpy_run=lambda wd=wd, x=xq: x @ wd.T,
                                flops=2.0 * 512 * n * k, bytes=float(qt.nbytes + 4 * 512 * (k + n)), bound="int8",
                                tags=(f"gemm_{fmt}",) if tagged else ()))
            del wd
    return out


def _moe_cases(quick, rng):
    """GLM-4.7-Flash's routed experts (E=64, 2048 -> 1536 -> 2048, top-4) with q8_0/q4_0 weights.
    One random expert is copied E times (distinct memory per expert, so nothing is shared in
    cache, without E x 3 x F x D random numbers). The NumPy twin computes with the dequantized
    single expert in float32 (it reads one expert's memory for all: a baseline, not a peer)."""
    D, F, E, k = 2048, 1536, 16 if quick else 64, 4
    out = []
    g1, u1 = _weights(F, D, 10), _weights(F, D, 11)
    d1 = _weights(D, F, 12)
    for fmt in ("q8_0", "q4_0"):
        qs = []
        for w1 in (g1, u1, d1):
            q1 = quant.quantize(w1, fmt)
            data = np.empty((E,) + q1.data.shape, np.uint8)
            data[:] = q1.data
            qs.append(quant.QTensor(data, fmt, (E,) + w1.shape).repack())
        fg, fu, fd = (quant.quantize(w1, fmt).dequantize() for w1 in (g1, u1, d1))
        ebytes = float(sum(q[0].nbytes for q in qs))
        for T in (1, 128 if quick else 512):
            x = rng.standard_normal((T, D), dtype=np.float32)
            idx = np.stack([rng.permutation(E)[:k] for _ in range(T)]).astype(np.int64)
            wts = rng.random((T, k)).astype(np.float32)
            hit = len(np.unique(idx))

            def np_run(x=x, idx=idx, wts=wts, fg=fg, fu=fu, fd=fd):
                y = np.zeros_like(x)
                for e in np.unique(idx):
                    rows, slots = np.nonzero(idx == e)
                    xe = x[rows]
                    g = xe @ fg.T
                    h = g / (np.float32(1) + np.exp(-g)) * (xe @ fu.T)
                    np.add.at(y, rows, wts[rows, slots][:, None] * (h @ fd.T))
                return y
            out.append(Case(f"moe experts {fmt} T={T} glm E={E}x{F} top{k} ({hit} hit)",
                            run=lambda x=x, idx=idx, wts=wts, qs=qs: quant.moe_experts(x, idx, wts, *qs)[0],
                            numpy_run=np_run, flops=6.0 * T * k * F * D, bytes=hit * ebytes + 8.0 * T * D,
                            bound="memory" if T <= 8 else "int8", tags=("moe", f"moe_{fmt}"), rtol=0.05))
    return out


def _best(f, repeats=9):
    f()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def element_costs(threads: int = 1) -> dict:
    """Measured ns per element on this CPU (one thread by default): the dequantization cost the cost
    model adds per weight or cache element read in each format. Keys: "<op> <fmt> <kernel>"."""
    prev = glmbench.get_num_threads()
    glmbench.set_num_threads(threads)
    try:
        res = {}
        n, k = 4096, 2048  # 8M weights: 4.6 MB q4_0 (L3-sized, so the compute side shows)
        w = _weights(n, k)
        x = np.random.default_rng(2).standard_normal((1, k), dtype=np.float32)
        res["gemv f32 openblas"] = _best(lambda: x @ w.T) / (n * k) * 1e9
        avail = [kk for kk, ok in quant.kernels().items() if ok and kk != "blas_f32"]
        for fmt in ("q8_0", "q4_0"):
            qt = quant.quantize(w, fmt)
            for kern in avail:
                res[f"gemv {fmt} {kern}"] = _best(lambda: quant.linear(x, qt, kernel=kern)) / (n * k) * 1e9
        a = np.random.default_rng(3).standard_normal((256, 1024), dtype=np.float32)
        for fmt in ("q8_0", "q4_0"):
            qa = quant.quantize(a, fmt)
            res[f"dequantize {fmt}"] = _best(qa.dequantize, 31) / a.size * 1e9
            res[f"quantize {fmt}"] = _best(lambda: quant.quantize(a, fmt), 31) / a.size * 1e9
        return res
    finally:
        glmbench.set_num_threads(prev)


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description="ns per element of the quantized kernels on this CPU")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    for name, ns in element_costs(args.threads).items():
        print(f"{name:28s} {ns:8.4f} ns/elem  {1 / ns:7.2f} Gelem/s")
