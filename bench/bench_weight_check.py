"""What a per-call finiteness check of a weight would cost beside the decode GEMV that reads it.

    python bench/bench_weight_check.py --threads 2 [--out bench/results/weight_check_<date>.md]

The C ops check their activations on every call (gb_check_finite), not their weights: Model and the
checkpoint loaders check each weight once at load (core.quant.nonfinite). This times, on matrices
larger than the last-level cache (GEMV T = 1, read from DRAM, several distinct copies in turn):
- the GEMV alone (glmbench.linear / quant.linear),
- the scan a per-call check would add: core.quant.nonfinite (NumPy bit tests: every value of a float
  matrix, the f16 scale fields of a block one), and, for float32, rms_norm with the matrix as its `x`:
  its binding's gb_check_finite pass over x is the C scan a weight check would run, plus the norm itself
  (an upper bound of that scan).
Each row: best of --reps calls, median of --rounds, and the check's time as % of the GEMV's.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import glmbench  # noqa: E402
from glmbench import vocab  # noqa: E402
from glmbench.core import quant  # noqa: E402
from glmbench.measure.machine import cpu_name  # noqa: E402


def _best(fn, args_list, reps):
    ts = []
    for r in range(reps):
        a = args_list[r % len(args_list)]
        t = time.perf_counter()
        fn(a)
        ts.append(time.perf_counter() - t)
    return min(ts)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--n", type=int, default=14336)
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--copies", type=int, default=3, help="distinct weight copies called in turn (DRAM, not cache)")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    glmbench.set_num_threads(a.threads)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, a.k)).astype(np.float32)
    rows = []
    for fmt in ("f32", "bf16", "q8_0"):
        ws = []
        for _ in range(a.copies):
            w = rng.standard_normal((a.n, a.k), dtype=np.float32) * np.float32(0.02)
            ws.append(w if fmt == "f32" else vocab.to_bf16(w) if fmt == "bf16" else quant.quantize(w, fmt))
        # what a check reads: the matrix as loaded (a q8_0 QTensor's stored blocks, before the GEMV repacks it)
        cs = [quant.quantize(np.asarray(w.dequantize()), fmt) for w in ws] if fmt == "q8_0" else ws
        nbytes = ws[0].nbytes
        gemv = (lambda w: glmbench.linear(x, w)) if fmt != "q8_0" else (lambda w: quant.linear(x, w))
        for w in ws:
            gemv(w)   # (q8_0: repacked on first use)
        g, c, cc = [], [], []
        for _ in range(a.rounds):
            g.append(_best(gemv, ws, a.reps))
            c.append(_best(quant.nonfinite, cs, a.reps))
            if fmt == "f32":
                cc.append(_best(lambda w: glmbench.rms_norm(w, np.ones(a.k, np.float32)), ws, a.reps))
        g, c = float(np.median(g)), float(np.median(c))
        rows.append((fmt, nbytes, g, c, float(np.median(cc)) if cc else None))
    lines = [f"# A per-call weight check vs the decode GEMV ({datetime.date.today()})", "",
             f"{cpu_name()}, {a.threads} threads, W [{a.n}, {a.k}], x [1, {a.k}], "
             f"{a.copies} copies in turn, best of {a.reps}, median of {a.rounds} rounds; "
             f"load {os.getloadavg()[0]:.2f}", "",
             "| weights | MB | GEMV ms | nonfinite(W) ms | % of GEMV | C check (rms_norm over W) ms | % of GEMV |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for fmt, nb, g, c, cc in rows:
        lines.append(f"| {fmt} | {nb / 1e6:.0f} | {g * 1e3:.2f} | {c * 1e3:.2f} | {100 * c / g:.0f}% | "
                     + (f"{cc * 1e3:.2f} | {100 * cc / g:.0f}% |" if cc else "- | - |"))
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
