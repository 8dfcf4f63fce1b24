"""q4_K prefill GEMM, the same 512 x 1536 x 2048 work two ways, alternately in one process, one thread, the
calling thread's CPU time: one gb_klinear_packed call of T=512 on one weight matrix, against 16 calls of T=32 on
16 distinct weight matrices (cold: 16 x 1.8 MB, each read from DRAM once per round, as routed experts are), to
tell whether fewer tokens per weight fetch costs the routed-expert prefill anything by itself (issue 28, s11).

  PYTHONPATH=$PWD:$PWD/bench OMP_NUM_THREADS=1 python bench/bench_kgemm_tokens_per_weight.py [so] [rounds]
"""
import sys
import time

import numpy as np

from glmbench.bench.quant import kquant_weights
from glmbench.core import _loader, ops

from bench_kgemv_dram import _kl  # noqa: E402

ops.set_num_threads(1)
f = _kl(sys.argv[1] if len(sys.argv) > 1 else _loader._core.__file__)
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 9
N, K, T, C = 1536, 2048, 512, 16
ws = [np.ascontiguousarray(kquant_weights(N, K, "q4_K", seed=s).repack()._packed) for s in range(C + 1)]
x = np.random.default_rng(0).standard_normal((T, K)).astype(np.float32)
xs = [np.ascontiguousarray(x[i * (T // C):(i + 1) * (T // C)]) for i in range(C)]
y = np.empty((T, N), np.float32)
ys = [np.empty((T // C, N), np.float32) for _ in range(C)]
one, many = [], []
for r in range(rounds):
    t0 = time.thread_time()
    assert f(12, x.ctypes.data, ws[C].ctypes.data, None, y.ctypes.data, T, N, K, 3) == 0
    one.append(time.thread_time() - t0)
    t0 = time.thread_time()
    for i in range(C):
        assert f(12, xs[i].ctypes.data, ws[i].ctypes.data, None, ys[i].ctypes.data, T // C, N, K, 3) == 0
    many.append(time.thread_time() - t0)
gop = 2 * T * N * K / 1e9
for name, v in (("T=512, 1 matrix", one), (f"{C} x T={T // C}, {C} matrices", many)):
    print(f"| {name} | {min(v) * 1e3:.2f} ms {gop / min(v):.1f} GOP/s | median {np.median(v) * 1e3:.2f} ms {gop / np.median(v):.1f} GOP/s |")
