"""iq4_nl and mxfp4 kernel rows (read as stored, csrc/quant_iq.c) and routed experts in one C call
(csrc/moe_k.c) with the ceilings that bound them, measured in the same run: decode GEMV (T=1)
against the read-only DRAM bandwidth, prefill GEMM (T=512) against the int8 vpdpbusd peak, each
beside NumPy float32 BLAS doing the same work on the dequantized weights, and beside glmbench's q4_0
kernels at the same shapes (same pattern as bench/bench_kquant.py, whose helpers it uses).

    python bench/bench_iq_mxfp4.py --threads 1 --out bench/results/kernels_iq_mxfp4_<date>.md
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import glmbench  # noqa: E402
from bench_kquant import _load, _q4_0_cases, run_rows, table_rows  # noqa: E402
from glmbench.bench.case import Case  # noqa: E402
from glmbench.bench.quant import stored_linear_cases  # noqa: E402
from glmbench.core import quant  # noqa: E402
from glmbench.core._loader import _core  # noqa: E402
from glmbench.measure.machine import _l3_bytes, cpu_name, measure_ceilings  # noqa: E402
from glmbench.measure.protocol import code_version  # noqa: E402
from glmbench.results.records import atomic_write_text  # noqa: E402

FMTS = ("iq4_nl", "mxfp4")


def iq_weights(n, k, fmt, seed):
    """Random blocks (every nibble; iq4_nl f16 scales ~1/(127 sqrt(k)), mxfp4 exponents around 2^-8):
    the kernels' speed does not depend on the values."""
    rng = np.random.default_rng(seed)
    bb = quant.FORMATS[fmt][2]
    a = rng.integers(0, 256, (n, k // 32, bb), dtype=np.uint8)
    if fmt == "iq4_nl":
        a[:, :, :2] = np.float16(1 / (127 * np.sqrt(k))).reshape(1).view(np.uint8)
    else:
        a[:, :, 0] = rng.integers(116, 122, (n, k // 32))
    return quant.QTensor(a.reshape(n, -1), fmt, (n, k))


def q8_0_dequantized(x):
    return quant.quantize(x, "q8_0").dequantize()


def iq_cases(quick, rng):
    return stored_linear_cases(quick, rng, FMTS, iq_weights, q8_0_dequantized)


def moe_cases(quick, rng):
    """GLM-4.7-Flash's routed experts (E=64 (16 quick), 2048 -> 1536 -> 2048, top-4) in mxfp4 (as
    gpt-oss ships experts) and q4_K: the one C call (gb_kmoe) against the per-expert Python loop over
    the same kernels (numpy_run here: the previous path, not NumPy). One random expert copied E times."""
    from glmbench.bench.quant import kquant_weights
    D, F, E, k = 2048, 1536, 16 if quick else 64, 4
    out = []
    for fmt in ("mxfp4", "q4_K"):
        qs = []
        for j, (n, kk) in enumerate(((F, D), (F, D), (D, F))):
            q1 = iq_weights(n, kk, fmt, 20 + j) if fmt in FMTS else kquant_weights(n, kk, fmt, seed=20 + j)
            data = np.empty((E,) + q1.data.shape, np.uint8)
            data[:] = q1.data
            qs.append(quant.QTensor(data, fmt, (E, n, kk)))
        ebytes = float(sum(q[0].nbytes for q in qs))
        for T in (1, 128 if quick else 512):
            x = rng.standard_normal((T, D), dtype=np.float32) * 0.5
            idx = np.stack([rng.choice(E, k, replace=False) for _ in range(T)]).astype(np.int64)
            wt = np.full((T, k), 1.0 / k, np.float32)
            used = len(np.unique(idx))

            def loop(x=x, idx=idx, wt=wt, qs=qs):
                y = np.zeros((x.shape[0], D), np.float32)
                for e in np.unique(idx):
                    rows, slot = np.nonzero(idx == e)
                    y[rows] += quant.swiglu(x[rows], qs[0][e], qs[1][e], qs[2][e]) * wt[rows, slot, None]
                return y
            out.append(Case(f"moe {fmt} kmoe T={T} E={E} top-{k} {D}x{F} (vs Python loop)",
                            run=lambda x=x, idx=idx, wt=wt, qs=qs: quant.moe_experts(x, idx, wt, *qs)[0],
                            numpy_run=loop, flops=2.0 * 3 * T * k * D * F, bytes=ebytes * used,
                            bound="memory" if T == 1 else "compute"))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="only the small (GLM expert) shape, 16 experts")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    glmbench.set_num_threads(a.threads)
    up0 = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    load0 = _load()
    ceil = measure_ceilings()
    vnni = _core.bench_vnni(50_000, 200) if quant.kernels().get("kquant_vnni") else None
    rng = np.random.default_rng(3)
    rows = run_rows(iq_cases(a.quick, rng) + _q4_0_cases(a.quick) + moe_cases(a.quick, rng), ceil, vnni,
                    a.repeats, a.threads, "x")
    load1 = _load()
    up1 = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    after = measure_ceilings(quick=True)
    now = datetime.datetime.utcnow()
    L = [f"# glmbench iq4_nl / mxfp4 kernels (as stored) and K-format routed experts in one C call, "
         f"{now:%Y-%m-%d %H:%M} UTC", "",
         f"- machine: {cpu_name()}, {os.cpu_count()} CPUs, L3 {_l3_bytes() / 2**20:.0f} MiB, {platform.platform()}; "
         f"threads {a.threads}; code {code_version(_core)} (glmbench version + hash of the built C core)",
         f"- `uptime` before: {up0}; after: {up1} (load average before {load0}, after {load1}). The machine was "
         "SHARED with other jobs (8 helpers on 2 cores): times are the best of repeated calls and still noisy; "
         "compare rows only within this file",
         f"- ceilings measured in this run: read-only bandwidth {ceil['bandwidth_read_gbs']:.1f} GB/s (triad "
         f"{ceil['bandwidth_gbs']:.1f}; after the cases {after['bandwidth_read_gbs']:.1f} / "
         f"{after['bandwidth_gbs']:.1f}), float32 FMA peak {ceil['fma_gflops']:.0f} GFLOP/s, int8 vpdpbusd peak "
         + (f"{vnni:.0f} GOP/s" if vnni else "n/a (no VNNI in this build)"),
         "- % ceiling: GEMV (T=1) and MoE T=1 weight bytes / s over the read-only bandwidth (the qwen3-32b-ffn "
         "weights are 70-74 MB: where they fit the L3 above they are read from cache between calls, and the row can "
         "pass 100%); GEMM (T=512) and MoE T>1 multiply-adds x 2 / s over the int8 peak",
         "- vs NumPy: for qlinear rows NumPy float32 BLAS time / glmbench time on the dequantized weights and the "
         "q8_0-rounded activations (> 1: glmbench faster); for moe rows the per-expert Python loop over the same "
         "kernels (the path before gb_kmoe) / the one C call; check: outputs agree within 1e-3 of the largest",
         "- weights: random blocks (speed does not depend on the values); q4_0 rows: glmbench's repacked integer "
         "GEMM on the same shapes, for scale",
         "- CPU time: the calling thread's CPU time (one thread only); GB/s and GOP/s are from the wall time",
         f"- command: python bench/bench_iq_mxfp4.py {' '.join(sys.argv[1:] if argv is None else argv)}",
         "", "| case | wall time | CPU time | GB/s | GOP/s | % ceiling (wall) | % ceiling (CPU time) | "
         "vs NumPy / loop (wall) | check |",
         "|---|---|---|---|---|---|---|---|---|"]
    L += table_rows(rows)
    text = "\n".join(L) + "\n"
    if a.out:
        old = open(a.out).read() + "\n" if os.path.exists(a.out) else ""
        atomic_write_text(a.out, old + text)
    print(text)


if __name__ == "__main__":
    main()
