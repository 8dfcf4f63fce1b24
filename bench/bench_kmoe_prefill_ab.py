"""Routed experts at prefill (gb_kmoe_packed; --kernel avx2 (default) or vnni), one thread, this build against
another build's _core .so, alternately in one process (issue 28, s11; --kernel and q2_K/q3_K since s38).

GLM-4.7-Flash's routed-expert shapes by default: E=64 experts, top-4, D=2048 -> F=1536 -> D, T=512
tokens routed at random (about 32 tokens per expert, uneven). Weights: random K-quant blocks
(glmbench.bench.quant.kquant_weights' recipe), repacked (QTensor.repack); activations standard
normal. Time: the calling thread's CPU time (time.thread_time), best and median of --rounds calls.
The outputs of both builds must be bit-identical. GOP: 2 x T x k x 3 x F x D.

  PYTHONPATH=$PWD OMP_NUM_THREADS=1 python bench/bench_kmoe_prefill_ab.py --before /work/base_core_s11.so
"""
import argparse
import ctypes
import time

import numpy as np

from glmbench.core import _loader, ops, quant
from glmbench.bench.quant import _K_SCALES

FMT_ID = {"q2_K": 10, "q3_K": 11, "q4_K": 12, "q5_K": 13, "q6_K": 14}


def _km(path):
    f = ctypes.CDLL(path).gb_kmoe_packed
    p, i64, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
    f.argtypes = [p, p, p, i64, i64, i32, p, i32, p, i32, p, i64, i64, i64, p, p, i32]
    f.restype = ctypes.c_int
    return f


def _experts(E, n, k, fmt, seed):
    _, qk, bb = quant.FORMATS[fmt]
    rng = np.random.default_rng(seed)
    nb = k // qk
    a = rng.integers(0, 256, (E, n, nb, bb), dtype=np.uint8)
    for o in _K_SCALES[fmt]:
        a[..., o:o + 2] = rng.uniform(0.001, 0.01, (E, n, nb)).astype(np.float16).view(np.uint8).reshape(E, n, nb, 2)
    q = quant.QTensor(a.reshape(E, n, nb * bb), fmt, (E, n, k)).repack()
    return np.ascontiguousarray(q._packed)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--formats", default="q4_K", help="gate/up format (down: --down or the same)")
    ap.add_argument("--down", default=None)
    ap.add_argument("--E", type=int, default=64)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--F", type=int, default=1536)
    ap.add_argument("--D", type=int, default=2048)
    ap.add_argument("--tokens", default="512")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", default=None)
    ap.add_argument("--kernel", choices=("avx2", "vnni"), default="avx2",
                    help="gb_kmoe_packed's kernel version (csrc/quant_k.h: vnni 2, avx2 3)")
    a = ap.parse_args()
    version = {"vnni": 2, "avx2": 3}[a.kernel]
    ops.set_num_threads(1)
    kern = {"before": _km(a.before), "after": _km(a.after or _loader._core.__file__)}
    E, k, F, D = a.E, a.k, a.F, a.D
    print("| gate/up | down | T | E top-k D->F->D | before best / median | after best / median | speed-up best / median |")
    print("|---|---|---|---|---|---|---|")
    for fmt in a.formats.split(","):
        fd = a.down or fmt
        gate, up, down = _experts(E, F, D, fmt, 1), _experts(E, F, D, fmt, 2), _experts(E, D, F, fd, 3)
        for T in (int(t) for t in a.tokens.split(",")):
            rng = np.random.default_rng(T)
            x = rng.standard_normal((T, D)).astype(np.float32)
            idx = np.stack([rng.choice(E, k, replace=False) for _ in range(T)]).astype(np.int64)
            w = rng.uniform(0.1, 1, (T, k)).astype(np.float32)
            out, tm = {}, {n: [] for n in kern}
            for r in range(a.rounds):
                for n, f in kern.items():
                    y = np.empty((T, D), np.float32)
                    cnt = np.zeros(E, np.int64)
                    t0 = time.thread_time()
                    st = f(x.ctypes.data, idx.ctypes.data, w.ctypes.data, T, k, FMT_ID[fmt], gate.ctypes.data, FMT_ID[fmt],
                           up.ctypes.data, FMT_ID[fd], down.ctypes.data, E, F, D, y.ctypes.data, cnt.ctypes.data, version)
                    tm[n].append(time.thread_time() - t0)
                    assert st == 0, st
                    out[n] = y
            assert np.array_equal(out["before"].view(np.uint32), out["after"].view(np.uint32)), "outputs differ"
            gop = 2 * T * k * 3 * F * D / 1e9
            s = {n: (min(v), float(np.median(v))) for n, v in tm.items()}
            cell = lambda n: f"{s[n][0] * 1e3:.1f} ms {gop / s[n][0]:.1f} / {gop / s[n][1]:.1f} GOP/s"  # noqa: E731
            print(f"| {fmt} | {fd} | {T} | {E} top{k} {D}->{F}->{D} | {cell('before')} | {cell('after')} | "
                  f"{s['before'][0] / s['after'][0]:.2f}x / {s['before'][1] / s['after'][1]:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
