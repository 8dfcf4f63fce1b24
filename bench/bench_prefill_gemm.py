"""The prefill GEMMs against their ceilings: bf16/f16 weights through each kernel of csrc/hgemm.c
beside the previous path (panels widened to float32 + OpenBLAS sgemm), the token count where
hgemm takes over from the register-tile GEMV, the integer GEMM on repacked q8_0/q4_0
(csrc/qgemm.c) and on the repacked K-quant / iq4_nl / mxfp4 layouts (csrc/quant_k.c, csrc/quant_iq.c),
at GLM-4.7-Flash's projection shapes, T=512.

    python bench/bench_prefill_gemm.py --out bench/results/kernels_prefill_gemm_<date>.md
    python bench/bench_prefill_gemm.py --threads 2 --clock wall      # a quiet machine, every core
    python bench/bench_prefill_gemm.py --threads 2 --clock wall --formats q4_0,q4_K,q5_K   # those sections only

Default: one thread, each call timed by the process's CPU time (best of --reps, sides alternated
--rounds times), the ceilings timed the same way: on a machine other jobs share, a single thread's
CPU time is its own work. Ceilings: float32 FMA (csrc/bench.c bench_fma), bf16 dot products
(csrc/hgemm.c bench_bf16dot, 64 FLOPs per vdpbf16ps), int8 dot products (csrc/quant_k.c bench_vnni,
128 ops per vpdpbusd). bench/bench_ggml_peer.py has the same shapes against ggml's own kernels.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import glmbench  # noqa: E402
from glmbench import vocab  # noqa: E402
from glmbench.core import quant  # noqa: E402
from glmbench.core._loader import _core  # noqa: E402
from glmbench.measure.machine import cpu_name  # noqa: E402
from glmbench.results.records import atomic_write_text  # noqa: E402

INT_FMTS = ("q8_0", "q4_0")
K_FMTS = ("q4_K", "q5_K", "q6_K", "q2_K", "iq4_xs", "iq4_nl", "mxfp4")
ALL_FMTS = ("bf16", "f16") + INT_FMTS + K_FMTS
GLM_PROJ = {"q_a": (768, 2048), "q_b": (5120, 768), "kv_a": (576, 2048), "kv_b": (8960, 512), "o_proj": (2048, 5120)}


def best_of(fn, reps, clock):
    b = float("inf")
    for _ in range(reps):
        t0 = clock()
        fn()
        b = min(b, clock() - t0)
    return b


def ceilings(clock, threads):
    """GFLOP/s (GOP/s for int8) of the three probes at `threads` threads, by `clock`."""
    it, reps = 1_000_000, 20
    per = 1 if clock is time.process_time else threads  # CPU time adds every thread's time
    out = {"fma": it * 16 * 16 * 2 * per / best_of(lambda: _core.bench_fma(it, 1), reps, clock) / 1e9}
    if _core._hgemm_kernels("bf16")["bf16dot"]:
        out["bf16dot"] = it * 16 * 64 * per / best_of(lambda: _core.bench_bf16dot(it, 1), reps, clock) / 1e9
    try:
        out["vnni"] = it * 16 * 128 * per / best_of(lambda: _core.bench_vnni(it, 1), reps, clock) / 1e9
    except ValueError:
        pass
    return out


def alternate(sides, reps, rounds, clock):
    """{name: best seconds} for callables run in turn, `rounds` times, best of `reps` each."""
    best = {}
    for r in range(rounds):
        for name, fn in (sides if r % 2 == 0 else sides[::-1]):
            fn()  # warm-up: packed buffers, pages
            best[name] = min(best.get(name, float("inf")), best_of(fn, reps, clock))
    return best


def with_kernel(kern, x, w, limit=0):
    def run():
        _core._linear_set_hgemm(kern)
        _core._linear_set_gemv_max_t(limit)
        try:
            return glmbench.linear(x, w)
        finally:
            _core._linear_set_hgemm("auto")
            _core._linear_set_gemv_max_t(0)
    return run


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--T", type=int, default=512)
    ap.add_argument("--out", default=None)
    ap.add_argument("--formats", default=",".join(ALL_FMTS), metavar="FMT,...",
                    help="weight formats to run (default: all: " + ",".join(ALL_FMTS) + "); the small-batch table "
                    "runs with bf16")
    a = ap.parse_args(argv)
    fmts = [f for f in a.formats.split(",") if f]
    bad = [f for f in fmts if f not in ALL_FMTS]
    if bad:
        ap.error(f"--formats: {','.join(bad)} not among {','.join(ALL_FMTS)}")
    if a.clock == "cpu" and a.threads != 1:
        ap.error("--clock cpu needs --threads 1 (the CPU time of several threads is not a duration)")
    clock = time.process_time if a.clock == "cpu" else time.perf_counter
    glmbench.set_num_threads(a.threads)
    load0 = os.getloadavg()[0]
    ceil = ceilings(clock, a.threads)
    rng = np.random.default_rng(0)
    T = a.T
    L = [f"# Prefill GEMMs against their ceilings ({datetime.date.today().isoformat()})", "",
         f"- machine: {cpu_name()}, {os.cpu_count()} CPUs, {platform.platform()}; threads {a.threads}; "
         f"clock: {'process CPU time' if a.clock == 'cpu' else 'wall'}",
         f"- ceilings ({a.clock} clock, {a.threads} thread(s)): float32 FMA {ceil['fma']:.0f} GFLOP/s"
         + (f", bf16 dot products (vdpbf16ps) {ceil['bf16dot']:.0f} GFLOP/s" if "bf16dot" in ceil else "")
         + (f", int8 dot products (vpdpbusd, bench_vnni) {ceil['vnni']:.0f} GOP/s" if "vnni" in ceil else ""),
         f"- hgemm kernels picked here (cpuid): bf16 {_core._hgemm_kernels('bf16')['auto']}, "
         f"f16 {_core._hgemm_kernels('f16')['auto']}; GEMV limit {_core._linear_gemv_max_t()} tokens",
         f"- best of {a.reps} calls x {a.rounds} alternating rounds; load (1-min average) before: {load0:.2f}",
         f"- command: python bench/bench_prefill_gemm.py {' '.join(sys.argv[1:] if argv is None else argv)}", "",
         f"- formats: {','.join(fmts)}"]
    hfmts = [f for f in ("bf16", "f16") if f in fmts]
    if hfmts:
        L += ["", f"## bf16 / f16 weights, T={T}: each kernel, and the previous path (sgemm)", "",
              "| shape | weights | kernel | ms | GFLOP/s | % FMA peak | % bf16-dot peak | vs sgemm path |",
              "|---|---|---|---|---|---|---|---|"]
    print("\n".join(L), flush=True)
    for name, (N, K) in (GLM_PROJ.items() if hfmts else ()):
        w = vocab.to_bf16(rng.standard_normal((N, K), dtype=np.float32) / np.float32(np.sqrt(K)))
        x = rng.standard_normal((T, K), dtype=np.float32)
        for fmt, ww in (("bf16", w), ("f16", vocab.bf16_to_f32(w).astype(np.float16))):
            if fmt not in hfmts:
                continue
            kerns = [k for k in ("bf16dot", "f32fma") if _core._hgemm_kernels(fmt)[k]] + ["sgemm"]
            best = alternate([(k, with_kernel(k, x, ww)) for k in kerns], a.reps, a.rounds, clock)
            fl = 2.0 * T * N * K
            for k in kerns:
                g = fl / best[k] / 1e9
                bd = f"{100 * g / ceil['bf16dot']:.0f}%" if "bf16dot" in ceil else "-"
                row = (f"| {name} {N}x{K} | {fmt} | {k} | {best[k] * 1e3:.2f} | {g:.0f} | {100 * g / ceil['fma']:.0f}% | "
                       f"{bd} | {best['sgemm'] / best[k]:.2f}x |")
                L.append(row)
                print(row, flush=True)
    # where hgemm takes over from the register-tile GEMV
    N, K = GLM_PROJ["q_a"]
    w = vocab.to_bf16(rng.standard_normal((N, K), dtype=np.float32) / np.float32(np.sqrt(K)))
    if "bf16" in fmts:
        L += ["", f"## Small batches, bf16 q_a {N}x{K}: register-tile GEMV (limit 64) vs hgemm (limit 1)", "",
              "| T | GEMV GFLOP/s | hgemm GFLOP/s | hgemm / GEMV |", "|---|---|---|---|"]
    for t in ((4, 8, 16, 32, 64) if "bf16" in fmts else ()):
        x = rng.standard_normal((t, K), dtype=np.float32)
        best = alternate([("gemv", with_kernel("auto", x, w, 64)), ("hgemm", with_kernel("auto", x, w, 1))],
                         a.reps * 3, a.rounds, clock)
        fl = 2.0 * t * N * K
        L.append(f"| {t} | {fl / best['gemv'] / 1e9:.0f} | {fl / best['hgemm'] / 1e9:.0f} | "
                 f"{best['gemv'] / best['hgemm']:.2f}x |")
        print(L[-1], flush=True)
    # the integer GEMM
    def int_row(N, K, fmt, qp, x, kernel):
        """Time the integer GEMM of repacked weights `qp` [N, K] on x [T, K]: one table row."""
        best = alternate([(fmt, lambda: quant.linear(x, qp, kernel=kernel))], a.reps, a.rounds, clock)
        g = 2.0 * T * N * K / best[fmt] / 1e9
        vn = f"{100 * g / ceil['vnni']:.0f}%" if "vnni" in ceil else "-"
        L.append(f"| {N}x{K} | {fmt} | {best[fmt] * 1e3:.2f} | {g:.0f} | {vn} | {100 * g / ceil['fma']:.0f}% |")
        print(L[-1], flush=True)

    ifmts = [f for f in INT_FMTS if f in fmts]
    if quant.kernels().get("qgemm_vnni") and ifmts:
        L += ["", f"## q8_0 / q4_0 weights (repacked), T={T}: the integer GEMM (qgemm_vnni)", "",
              "| shape | weights | ms | GOP/s | % int8 peak (bench_vnni) | % FMA peak |", "|---|---|---|---|---|---|"]
        for (N, K) in ((1536, 2048), (2048, 5120)):
            wf = rng.standard_normal((N, K), dtype=np.float32) / np.float32(np.sqrt(K))
            x = rng.standard_normal((T, K), dtype=np.float32)
            for fmt in ifmts:
                int_row(N, K, fmt, quant.quantize(wf, fmt).repack(), x, "qgemm_vnni")
    # the K-quant / iq4_nl / mxfp4 GEMM on their repacked layouts (random blocks as bench_ggml_peer makes them)
    kfmts = [f for f in K_FMTS if f in fmts]
    if quant.kernels().get("kquant_vnni") and kfmts:
        from bench_ggml_peer import _stored_weights
        L += ["", f"## K-quant / iq4_nl / mxfp4 weights (repacked), T={T}: the integer GEMM (kquant_vnni; q8_K or q8_0 "
              "activations)", "", "| shape | weights | ms | GOP/s | % int8 peak (bench_vnni) | % FMA peak |",
              "|---|---|---|---|---|---|"]
        print("\n".join(L[-4:]), flush=True)
        for (N, K) in ((1536, 2048), (2048, 5120)):
            x = rng.standard_normal((T, K), dtype=np.float32)
            for fmt in kfmts:
                int_row(N, K, fmt, _stored_weights(N, K, fmt, 0).repack(), x, "kquant_vnni")
    for fs, kern in ((ifmts, "qgemm_vnni"), (kfmts, "kquant_vnni")):
        if fs and not quant.kernels().get(kern):   # said, not left out silently (AVX2: bench/bench_ggml_peer.py)
            L += ["", f"- {','.join(fs)}: not timed: this build has no {kern} kernel (an AVX-512 VNNI CPU runs it); "
                  "bench/bench_ggml_peer.py times the AVX2 integer GEMMs against ggml's"]
            print(L[-1], flush=True)
    L += ["", f"- load (1-min average) after: {os.getloadavg()[0]:.2f}"]
    if a.out:
        atomic_write_text(a.out, "\n".join(L) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
