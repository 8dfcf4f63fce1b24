"""K-quant (and iq4_nl/mxfp4) prefill GEMM (T > 1) of one kernel version (--kernel, default the AVX2 one), this build against another build's _core .so.

Both builds' gb_klinear_packed (version kquant_avx2, or --kernel's) run alternately in one process on the same
repacked weights (glmbench.bench.quant.kquant_weights; iq4_nl/mxfp4: bench_ggml_peer._stored_weights
and gb_iqlinear_packed; QTensor.repack) and activations (standard normal); time: the calling thread's CPU time (time.thread_time: a neighbour on a shared machine
barely moves it; wall time with --threads > 1), best and median of --rounds calls each. The outputs must be bit-identical.
GOP: 2 x T x N x K.

  PYTHONPATH=$PWD OMP_NUM_THREADS=1 python bench/bench_kquant_gemm_ab.py --before /tmp/old/_core.so \
      --formats q6_K --shapes 2048x1536,1536x2048 --tokens 32,512
"""
import argparse
import time

import numpy as np

from glmbench.bench.quant import kquant_weights
from glmbench.core import _loader, ops, quant

from bench_kgemv_dram import KERNELS, _kl, output_diff  # noqa: E402  (bench/ is the script's directory)

IQ_FMTS = ("iq4_nl", "mxfp4")  # csrc/quant_iq.c: gb_iqlinear_packed (the same arguments)


def _weights(n, k, fmt, seed):
    if fmt in IQ_FMTS:
        from bench_ggml_peer import _stored_weights
        return _stored_weights(n, k, fmt, seed)
    return kquant_weights(n, k, fmt, seed=seed)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--formats", default="q6_K")
    ap.add_argument("--shapes", default="2048x1536,1536x2048", help="NxK, comma-separated")
    ap.add_argument("--tokens", default="32,512")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--copies", type=int, default=1, help="weight copies called in turn (e.g. 16 x 2.6 MB > L3: cold weights)")
    ap.add_argument("--before", default=None, help="another build's _core .so (label: before)")
    ap.add_argument("--after", default=None, help="the _core .so to measure (default: this build's)")
    ap.add_argument("--kernel", default="avx2", choices=sorted(KERNELS), help="the kernel version both builds run (default avx2)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--formula-changed", action="store_true",
                    help="the builds compute a format's float32 terms differently (e.g. q3_K's exact isum - msum): report "
                         "the largest difference relative to the output's scale instead of requiring bit-identical outputs")
    a = ap.parse_args(argv)
    ops.set_num_threads(a.threads)
    paths = {"after": a.after or _loader._core.__file__}
    if a.before:
        paths = {"before": a.before, **paths}
    kerns = {lab: (_kl(p), _kl(p, "gb_iqlinear_packed")) for lab, p in paths.items()}
    kv = KERNELS[a.kernel]
    clock = time.thread_time if a.threads == 1 else time.perf_counter  # more threads: wall time
    hdr = "| format | NxK | T |" + "".join(f" {k} best / median |" for k in kerns) + (" speed-up best / median |" if a.before else "") + (" difference |" if a.before and a.formula_changed else "")
    print(hdr + "\n" + "|---" * (hdr.count("|") - 1) + "|", flush=True)
    for fmt in a.formats.split(","):
        for shp in a.shapes.split(","):
            n, k = map(int, shp.split("x"))
            qs = [_weights(n, k, fmt, 1 + i).repack() for i in range(a.copies)]
            kern = {lab: f[1] if fmt in IQ_FMTS else f[0] for lab, f in kerns.items()}
            for T in (int(t) for t in a.tokens.split(",")):
                x = np.random.default_rng(T).standard_normal((T, k)).astype(np.float32)
                ts = {lab: [] for lab in kern}
                outs = {}
                reps = max(2, int(a.rounds * 512 / T) if T < 512 else a.rounds)
                for i in range(reps * a.copies):
                    for j, (lab, f) in enumerate(kern.items()):
                        c = (i * len(kern) + j + i // a.copies) % a.copies  # each call on another copy
                        q = qs[c]
                        y = np.zeros((T, n), np.float32)
                        t0 = clock()
                        rc = f(quant.FORMATS[fmt][0], x.ctypes.data, q.packed.ctypes.data, None, y.ctypes.data, T, n, k, kv)
                        ts[lab].append(clock() - t0)
                        assert rc == 0
                        outs.setdefault((lab, c), y)
                line = f"| {fmt} | {n}x{k} | {T} |"
                for lab in kern:
                    gb, gm = 2 * T * n * k / min(ts[lab]) / 1e9, 2 * T * n * k / np.median(ts[lab]) / 1e9
                    line += f" {min(ts[lab]) * 1e3:.3f} ms {gb:.1f} / {gm:.1f} GOP/s |"
                if a.before:
                    line += f" {min(ts['before']) / min(ts['after']):.2f}x / {np.median(ts['before']) / np.median(ts['after']):.2f}x |"
                    same = [c for c in range(a.copies) if ("before", c) in outs and ("after", c) in outs]
                    assert same, "no copy ran on both builds"
                    rel = max(output_diff(outs["before", c], outs["after", c], a.formula_changed) for c in same)
                    line += f" max diff {rel:.1e} of max |y| |" if a.formula_changed else ""
                print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
