"""The AVX2 K-quant version against the portable one, same run, same repacked weight: 1536x2048
q4_K/q6_K/q5_K (a GLM-4.7-Flash expert's gate/up shape), T = 1, 32, 128, 512, one thread, timed by
the calling thread's CPU time (time.thread_time: a neighbour on a shared machine barely moves it),
best of repeated calls. Both versions give the same bits (tests/test_kquant_avx2.py).

    python bench/bench_kquant_avx2.py --out bench/results/kquant_avx2_vs_ref_<date>.md
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
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import glmbench  # noqa: E402
from glmbench.core import quant  # noqa: E402
from glmbench.measure.machine import cpu_name  # noqa: E402

import bench_ggml_peer as peer  # noqa: E402


def _load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def _best(f, reps):
    best = 1e9
    for _ in range(reps):
        t0 = time.thread_time()
        f()
        best = min(best, time.thread_time() - t0)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--formats", default="q4_K,q6_K,q5_K")
    ap.add_argument("--tokens", default="1,32,128,512")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    if not quant.kernels().get("kquant_avx2"):
        print("kquant_avx2 is not compiled in on this build")
        return 1
    glmbench.set_num_threads(1)
    N, K = 1536, 2048
    load0 = _load()
    rows = []
    for fmt in a.formats.split(","):
        qt = peer._stored_weights(N, K, fmt, 0).repack()
        for T in (int(t) for t in a.tokens.split(",")):
            x = np.random.default_rng(T).standard_normal((T, K), dtype=np.float32)
            reps = 30 if T == 1 else 5 if T < 512 else 3
            tr = _best(lambda: quant.linear(x, qt, kernel="kquant_ref"), max(2, reps // 3))
            ta = min(_best(lambda: quant.linear(x, qt, kernel="kquant_avx2"), reps) for _ in range(2))
            row = f"| {fmt} | {T} | {tr * 1e3:.3f} ms | {ta * 1e3:.3f} ms | {2 * N * K * T / ta / 1e9:.1f} | {tr / ta:.1f}x |"
            print(row, flush=True)
            rows.append(row)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    L = [f"# kquant_avx2 vs kquant_ref, repacked {N}x{K}, one thread, {now}", "",
         f"- machine: {cpu_name()}, {os.cpu_count()} CPUs, {platform.platform()}; threads 1; clock: the calling thread's CPU time",
         f"- load average (1/5/15 min) before: {load0}; after: {_load()} (a shared machine when above 0.5)",
         "- weights: random blocks (bench_ggml_peer._stored_weights), repacked (QTensor.repack); x standard normal",
         f"- command: python bench/bench_kquant_avx2.py {' '.join(sys.argv[1:] if argv is None else argv)}", "",
         "| format | T | kquant_ref | kquant_avx2 | avx2 GOP/s | avx2 speedup |", "|---|---|---|---|---|---|", *rows, ""]
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(L))
    return 0


if __name__ == "__main__":
    sys.exit(main())
