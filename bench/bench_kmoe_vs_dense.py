"""Routed experts at prefill: one gb_kmoe_packed call against the same experts' work as per-expert
gb_klinear_packed calls (gate, up, down on each expert's routed rows; SiLU and the gather outside the timed
calls), alternately, one thread, calling thread's CPU time; q4_K, T=512, E=64, top-4, 2048->1536->2048.

  PYTHONPATH=$PWD:$PWD/bench OMP_NUM_THREADS=1 python bench/bench_kmoe_vs_dense.py /work/base_core_s11.so [rounds]
"""
import sys, time, numpy as np
sys.path.insert(0, 'bench')
import bench_kmoe_prefill_ab as B
from bench_kgemv_dram import _kl
from glmbench.core import ops
ops.set_num_threads(1)
so = sys.argv[1]
km, kl = B._km(so), _kl(so)
E, k, F, D, T = 64, 4, 1536, 2048, 512
gate, up, down = B._experts(E, F, D, 'q4_K', 1), B._experts(E, F, D, 'q4_K', 2), B._experts(E, D, F, 'q4_K', 3)
rng = np.random.default_rng(T)
x = rng.standard_normal((T, D)).astype(np.float32)
idx = np.stack([rng.choice(E, k, replace=False) for _ in range(T)]).astype(np.int64)
w = rng.uniform(0.1, 1, (T, k)).astype(np.float32)
rows = [np.ascontiguousarray(x[np.nonzero((idx == e).any(1))[0]]) for e in range(E)]
cnt_ = [len(r) for r in rows]
print("tokens per expert: min", min(cnt_), "max", max(cnt_), "mean", np.mean(cnt_), "c%8 mean", np.mean([c % 8 for c in cnt_]))
tm, td = [], []
for r in range(int(sys.argv[2]) if len(sys.argv) > 2 else 5):
    y = np.empty((T, D), np.float32); cnt = np.zeros(E, np.int64)
    t0 = time.thread_time()
    assert km(x.ctypes.data, idx.ctypes.data, w.ctypes.data, T, k, 12, gate.ctypes.data, 12, up.ctypes.data, 12, down.ctypes.data, E, F, D, y.ctypes.data, cnt.ctypes.data, 3) == 0
    tm.append(time.thread_time() - t0)
    tot = 0.0
    for e in range(E):
        c = cnt_[e]
        if not c: continue
        g = np.empty((c, F), np.float32); u = np.empty((c, F), np.float32); o = np.empty((c, D), np.float32)
        t0 = time.thread_time()
        kl(12, rows[e].ctypes.data, gate[e].ctypes.data, None, g.ctypes.data, c, F, D, 3)
        kl(12, rows[e].ctypes.data, up[e].ctypes.data, None, u.ctypes.data, c, F, D, 3)
        tot += time.thread_time() - t0
        h = np.ascontiguousarray(g / (1 + np.exp(-np.clip(g, -80, 80))) * u)
        t0 = time.thread_time()
        kl(12, h.ctypes.data, down[e].ctypes.data, None, o.ctypes.data, c, D, F, 3)
        tot += time.thread_time() - t0
    td.append(tot)
gop = 2 * T * k * 3 * F * D / 1e9
print(f"moe one call: best {min(tm)*1e3:.1f} ms ({gop/min(tm):.1f} GOP/s), median {np.median(tm)*1e3:.1f} ms")
print(f"per-expert klinear calls: best {min(td)*1e3:.1f} ms ({gop/min(td):.1f} GOP/s), median {np.median(td)*1e3:.1f} ms")
