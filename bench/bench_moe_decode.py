"""Routed experts at decode: one token through `quant.moe_experts` (top-k of E experts, a new random
routing per call, the experts' repacked bytes read from DRAM once there are enough of them), in
iq4_nl or mxfp4 (random valid blocks, bench_iq_mxfp4.iq_weights) or q4_0 / q8_0 (bench_kgemv_dram.q_weights).
Prints the best and the median time per call (the first 20 calls dropped) and GB/s of the k experts'
packed bytes.

    PYTHONPATH=$PWD OMP_NUM_THREADS=2 python bench/bench_moe_decode.py --fmt mxfp4 --E 32 --D 2880 --F 2880
    PYTHONPATH=$PWD OMP_NUM_THREADS=2 python bench/bench_moe_decode.py --fmt q4_0 --E 48 --D 2048 --F 1536

For an A/B of two builds, run it once per build (the installed extension swapped between processes,
alternating). Results: bench/results/session24_iq4_gemv_zen2_2026-12-04.md (iq4_nl, mxfp4),
session25_q4_0_q8_0_gemv_zen2_2026-12-04.md (q4_0, q8_0).
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_iq_mxfp4 import iq_weights  # noqa: E402
from bench_kgemv_dram import q_weights  # noqa: E402
from glmbench.core import quant  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fmt", choices=("mxfp4", "iq4_nl", "q4_0", "q8_0"), default="mxfp4")
    ap.add_argument("--E", type=int, default=32)
    ap.add_argument("--D", type=int, default=2880)
    ap.add_argument("--F", type=int, default=2880)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--calls", type=int, default=300)
    a = ap.parse_args(argv)
    if a.k > a.E or a.calls <= 20:
        ap.error("need k <= E and calls > 20")
    rng = np.random.default_rng(0)
    qs = []
    for j, (n, kk) in enumerate(((a.F, a.D), (a.F, a.D), (a.D, a.F))):
        make = q_weights if a.fmt in ("q4_0", "q8_0") else iq_weights
        data = np.stack([make(n, kk, a.fmt, 100 * j + e).data for e in range(a.E)])
        qs.append(quant.QTensor(data, a.fmt, (a.E, n, kk)))
    x = rng.standard_normal((1, a.D), dtype=np.float32) * 0.5
    wt = np.full((1, a.k), 1.0 / a.k, np.float32)
    quant.moe_experts(x, np.arange(a.k, dtype=np.int64)[None], wt, *qs)  # repacks on first use
    ebytes = sum(q[0].packed.nbytes for q in qs) * a.k
    ts = []
    for _ in range(a.calls):
        idx = rng.choice(a.E, a.k, replace=False).astype(np.int64)[None]
        t0 = time.perf_counter()
        quant.moe_experts(x, idx, wt, *qs)
        ts.append(time.perf_counter() - t0)
    ts = ts[20:]
    best, med = min(ts), statistics.median(ts)
    print(f"{a.fmt} E={a.E} top-{a.k} {a.D}x{a.F}: best {best * 1e3:.3f} ms ({ebytes / best / 1e9:.1f} GB/s) "
          f"median {med * 1e3:.3f} ms ({ebytes / med / 1e9:.1f} GB/s)")


if __name__ == "__main__":
    main()
