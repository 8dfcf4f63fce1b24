"""K-quant, iq4_nl and mxfp4 decode GEMV (T=1) from DRAM against this machine's read ceiling, optionally before vs after.
A shape under 1 MB (e.g. 256x2048) stays in L2: many calls, the kernel's compute rate; --resident does the
same for any shape (one copy: 8192x2048 stays in a 32 MB L3, the rate the kernel reaches when memory is fast).

Per format and shape: enough weight copies (repacked, QTensor.repack) to total >= 200 MB, so each call
reads DRAM; after each round's calls, a read-only pass over as many bytes per copy (_core.bench_read,
csrc/bench.c's read loop: the read ceiling as a program with no arithmetic gets it). With --before LIB (another build's _core .so)
both builds' gb_klinear_packed run alternately in the same process on the same weights (each sweeping
every copy in turn, the order alternating by round; until 2026-12-03 they ran back to back on each copy,
so for a matrix smaller than the L3 the second build read what the first had just cached); --after LIB
puts another build in the installed package's place (two experimental builds side by side). Time: the
calling thread's CPU time at --threads 1 (a shared machine), wall clock otherwise; best and median.

  PYTHONPATH=$PWD python bench/bench_kgemv_dram.py --formats q6_K,q5_K[,q4_0,q8_0,iq4_nl,mxfp4] --shapes 25600x5120,151552x2048 [--before /tmp/old/_core.so [--after /tmp/new/_core.so]]
"""
import argparse
import ctypes
import time

import numpy as np

from glmbench.bench.quant import kquant_weights
from glmbench.core import _loader, ops, quant

def _kl(path, name="gb_klinear_packed"):
    """gb_klinear_packed (or another function of its signature: gb_qgemm, the q8_0/q4_0 packed GEMV)
    of the C core built at `path` (a _core .so), by ctypes: two builds side by side in one process
    (bench_kquant_gemm_ab.py uses it too)."""
    f = getattr(ctypes.CDLL(path), name)
    f.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                  ctypes.c_int64, ctypes.c_int64, ctypes.c_int]
    f.restype = ctypes.c_int
    return f


# the kernel versions of gb_klinear_packed / gb_iqlinear_packed / gb_qgemm (csrc/quant_k.h, qgemm.h: the same
# numbers), by the last part of quant's kquant_* names: auto 0, ref 1, vnni 2, avx2 3
KERNELS = {"auto": 0, **{k.split("_", 1)[1]: v for k, v in quant._KQUANT.items()}}


def output_diff(before, after, formula_changed: bool) -> float:
    """Two builds' outputs of one call: required bit-identical (0 returned), or with formula_changed (a
    build that computes a format's float32 terms differently) their largest difference relative to max |y|."""
    if formula_changed:
        return float(np.max(np.abs(before - after)) / np.max(np.abs(before)))
    assert np.array_equal(before.view(np.uint32), after.view(np.uint32)), "outputs differ"
    return 0.0


Q_FMTS = ("q8_0", "q4_0")
IQ_FMTS = ("iq4_nl", "mxfp4")  # 32-value blocks like q4_0's, read by gb_iqlinear_packed


def q_weights(n, k, fmt, seed=0):
    """A [n, k] q8_0/q4_0/iq4_nl/mxfp4 QTensor of random blocks (random bytes, the scale drawn small and
    finite: f16, or mxfp4's E8M0 exponent byte), as kquant_weights makes the K-quants: the kernels'
    speed does not depend on the values."""
    _, qk, bb = quant.FORMATS[fmt]
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, (n, k // qk, bb), dtype=np.uint8)
    if fmt == "mxfp4":
        a[:, :, 0] = rng.integers(116, 122, (n, k // qk))
    else:
        a[:, :, 0:2] = rng.uniform(0.001, 0.01, (n, k // qk)).astype(np.float16).view(np.uint8).reshape(n, k // qk, 2)
    return quant.QTensor(a.reshape(n, k // qk * bb), fmt, (n, k))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--formats", default="q6_K,q5_K,q4_K")
    ap.add_argument("--shapes", default="25600x5120,151552x2048")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--resident", action="store_true",
                    help="one copy of each matrix, called again and again: a matrix under the L3 (e.g. 8192x2048) "
                         "stays there, so the kernel's compute rate with the L3's bandwidth, not DRAM's")
    ap.add_argument("--kernel", choices=tuple(KERNELS), default="auto",
                    help="kernel version: auto (what this CPU runs: vnni where AVX-512 VNNI is, else avx2), or one by name")
    ap.add_argument("--before", default=None, help="another build's _core .so to run alternately (label: before)")
    ap.add_argument("--after", default=None, help="the build to compare against (default: the installed package's _core)")
    ap.add_argument("--formula-changed", action="store_true",
                    help="the builds compute a format's float32 terms differently: report the largest difference instead of requiring bit-identical outputs")
    a = ap.parse_args()
    ops.set_num_threads(a.threads)
    clock = time.thread_time if a.threads == 1 else time.perf_counter
    for fmt in a.formats.split(","):
        # q8_0/q4_0: gb_qgemm on the packed layout (csrc/qgemm.h); K-quants: gb_klinear_packed,
        # iq4_nl/mxfp4: gb_iqlinear_packed; the version --kernel names (until 2026-12-04 always 3, avx2)
        fn = "gb_qgemm" if fmt in Q_FMTS else "gb_iqlinear_packed" if fmt in IQ_FMTS else "gb_klinear_packed"
        kern = {"after": _kl(a.after or _loader._core.__file__, fn)}
        if a.before:
            kern = {"before": _kl(a.before, fn), **kern}
        kv = KERNELS[a.kernel]
        for shp in a.shapes.split(","):
            n, k = map(int, shp.split("x"))
            wbytes = n * k * quant.FORMATS[fmt][2] // quant.FORMATS[fmt][1]  # the stored bytes
            small = wbytes < (1 << 20) or a.resident  # cache-resident: the kernel's compute rate, many calls
            ncopy = 1 if small else max(1, -(-200_000_000 // wbytes))
            qs = [(q_weights if fmt in Q_FMTS + IQ_FMTS else kquant_weights)(n, k, fmt, seed=i).repack() for i in range(ncopy)]
            bufs = [np.ones(q.packed.nbytes // 4, np.float32) for q in qs]  # bench_read reads float32
            x = np.random.default_rng(0).standard_normal(k).astype(np.float32)
            y = np.zeros(n, np.float32)
            nbytes = qs[0].packed.nbytes
            ts = {lab: [] for lab in list(kern) + ["read"]}
            outs = {}
            for r in range(a.rounds * (300 if small else 1)):
                # from DRAM: each build sweeps every copy in turn (which goes first alternating by round),
                # so no call finds its weights in the L3 the other build's call just filled
                for lab, f in (list(kern.items()) if small or r % 2 == 0 else list(kern.items())[::-1]):
                    for q in qs:
                        for _ in range(5 if small else 1):
                            t = clock()
                            f(quant.FORMATS[fmt][0], x.ctypes.data, q.packed.ctypes.data, None, y.ctypes.data, 1, n, k, kv)
                            ts[lab].append(clock() - t)
                        if q is qs[0]:
                            outs.setdefault(lab, y.copy())
                for b in bufs:
                    t = clock()
                    _loader._core.bench_read(b, 1)
                    ts["read"].append(clock() - t)
            rb, rm = 4 * bufs[0].size / min(ts["read"]) / 1e9, 4 * bufs[0].size / np.median(ts["read"]) / 1e9
            line = f"| {fmt} | {n}x{k} | {nbytes / 1e6:.1f} MB | read {rb:.2f} / {rm:.2f} GB/s |"
            for lab in kern:
                gb, gm = nbytes / min(ts[lab]) / 1e9, nbytes / np.median(ts[lab]) / 1e9
                line += f" {lab} {min(ts[lab]) * 1e3:.2f} ms, {gb:.2f} / {gm:.2f} GB/s ({gb / rb:.0%} / {gm / rm:.0%}) |"
            if a.before:
                line += f" {min(ts['before']) / min(ts['after']):.2f}x / {np.median(ts['before']) / np.median(ts['after']):.2f}x |"
                rel = output_diff(outs["before"], outs["after"], a.formula_changed)
                line += f" max diff {rel:.1e} of max |y| |" if a.formula_changed else ""
            print(line, flush=True)
            del qs, bufs


if __name__ == "__main__":
    main()
