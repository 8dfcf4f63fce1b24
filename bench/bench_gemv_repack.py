"""Decode GEMV and routed-expert decode on the repacked K-quant / iq4_nl / mxfp4 layouts
(csrc/quant_k.h, csrc/quant_iq.h) against the same kernels on the bytes as stored and against
ggml's own kernels, with the read-only bandwidth measured in the same run.

    python bench/bench_gemv_repack.py --threads 2 --out bench/results/kernels_gemv_repack_<date>.md

Rows:
- GEMV T=1 on a 25600x5120 matrix from DRAM: glmbench cycles over enough distinct copies of the
  weight (random blocks) that their total is >= 2x the last-level cache, so every call streams its
  weight from DRAM; GB/s of the bytes each call reads (the repacked copy's, or the stored bytes'
  for the as-stored row) and % of the read-only bandwidth (glmbench.measure.machine).
- the same GEMV beside ggml's (bench/ggml_peer/ggml_quant_bench.cpp: one MUL_MAT, weights in
  CPU_REPACK where ggml has a repacked layout for the type, else the plain buffer), both sides on
  one matrix called repeatedly (74-107 MB > the 32 MiB L3: mostly DRAM), alternating sides, best of
  `--reps` x `--rounds`.
- GLM-4.7-Flash routed experts at decode (T=1, top-4 of 64, 2048 -> 1536 -> 2048): glmbench
  with 64 distinct random experts and a new routing each call (the selected experts come from
  DRAM: % of read bandwidth of the 4 x 3 matrices read), and beside ggml in the peer harness's
  setup (one routing, repeated: its 4 experts' weights can stay in the L3 on both sides).

Needs the llama.cpp build of bench/build_llama_bench.sh for the ggml rows (--build-dir; skipped
with --no-ggml). --clock cpu (with --threads 1) times every call, both sides, and the read-only
ceiling (csrc/bench.c's read pass over 4x the L3) by the calling thread's / process's CPU time: on
a machine other jobs share, a one-thread call's CPU time is its own work. The machine load (/proc/loadavg) is recorded before and after.
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
from glmbench.core._loader import _core  # noqa: E402
from glmbench.measure.machine import _l3_bytes, cpu_name, measure_ceilings  # noqa: E402
from glmbench.measure.protocol import code_version  # noqa: E402
from glmbench.results.records import atomic_write_text  # noqa: E402

import bench_ggml_peer as peer  # noqa: E402

FMTS = ("q4_K", "q6_K", "q5_K", "iq4_xs", "mxfp4", "iq4_nl", "q2_K", "q3_K", "q4_0")
N, K = 25600, 5120


def _load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def _kern(fmt):
    if fmt in quant.K_FORMATS:
        return next(k for k in ("kquant_vnni", "kquant_avx2", "kquant_ref") if quant.kernels().get(k))
    return next(k for k in ("qgemm_vnni", "qgemm_avx2", "qgemm_ref") if quant.kernels().get(k))


CLOCK = time.perf_counter  # --clock cpu: time.thread_time


def read_ceiling(reps=8):
    """Read-only GB/s of one thread by CPU time: csrc/bench.c's read pass (two streams, nothing
    written) over 4x the L3, best of `reps`."""
    b = np.ones(max(1 << 24, _l3_bytes()), np.float32)  # 4 bytes per element: 4x the L3
    best = float("inf")
    for _ in range(reps):
        t0 = CLOCK()
        _core.bench_read(b, 1)
        best = min(best, CLOCK() - t0)
    return b.nbytes / best / 1e9


def dram_gemv(fmt, reps, rounds):
    """{mode: (best seconds per call, bytes per call)} for the repacked copy ("repacked") and, for the
    K formats, the kernel on the stored bytes ("as stored"), over distinct copies >= 2x the L3,
    the two modes alternating round by round."""
    q0 = peer._stored_weights(N, K, fmt, 0).repack()
    pb = q0.packed.nbytes if fmt in quant.KP_FORMATS or fmt in ("q4_0", "q8_0") else q0.nbytes
    copies = max(2, -(-2 * _l3_bytes() // min(pb, q0.nbytes)))
    qs = [q0] + [peer._stored_weights(N, K, fmt, 1 + i).repack() for i in range(copies - 1)]
    x = np.random.default_rng(3).standard_normal((1, K), dtype=np.float32)
    kern, fid = _kern(fmt), quant.FORMATS[fmt][0]
    kv = quant._KQUANT.get(kern, 1)
    modes = {"repacked": (lambda w: quant.linear(x, w, kernel=kern), pb)}
    if fmt in quant.KP_FORMATS:
        modes["as stored"] = (lambda w: _core.klinear(x, w.data, fid, K, None, kv), q0.nbytes)
    best = {m: 1e9 for m in modes}
    for m, (f, _) in modes.items():
        for w in qs:
            f(w)
    for r in range(rounds):
        for m in (modes if r % 2 == 0 else list(modes)[::-1]):
            f = modes[m][0]
            for _ in range(reps):
                for w in qs:  # each call reads a copy not touched since the previous pass: from DRAM
                    t0 = CLOCK()
                    f(w)
                    best[m] = min(best[m], CLOCK() - t0)
    return {m: (best[m], modes[m][1]) for m in modes}, copies


def dram_moe(fmt, reps, E=64, F=1536, D=2048, k=4):
    """(best seconds per T=1 call, bytes of the 4 experts' 3 matrices): 64 distinct random experts,
    a new routing (4 distinct experts) per call, so the selected experts stream from DRAM."""
    rng = np.random.default_rng(7)
    ws = [peer._stored_weights(E * n, kk, fmt, 30 + j) for j, (n, kk) in enumerate(((F, D), (F, D), (D, F)))]
    qs = [quant.QTensor(w.data.reshape(E, n, -1), fmt, (E, n, kk)).repack()
          for w, (n, kk) in zip(ws, ((F, D), (F, D), (D, F)))]
    x = rng.standard_normal((1, D), dtype=np.float32)
    routes = [np.sort(rng.choice(E, k, replace=False))[None, :].astype(np.int64) for _ in range(64)]
    wt = np.full((1, k), 1.0 / k, np.float32)
    for r in routes[:4]:
        quant.moe_experts(x, r, wt, *qs)
    ebytes = sum((q.packed[0] if q.packed is not None else q.data[0]).nbytes for q in qs)
    best = 1e9
    for _ in range(reps):
        for r in routes:
            t0 = CLOCK()
            quant.moe_experts(x, r, wt, *qs)
            best = min(best, CLOCK() - t0)
    return best, k * ebytes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--formats", default=",".join(FMTS))
    ap.add_argument("--build-dir", default=os.path.join(os.path.dirname(os.path.dirname(peer.HERE)), "llama-build"))
    ap.add_argument("--no-ggml", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="cpu: time by CPU time (needs --threads 1; for a shared machine)")
    a = ap.parse_args(argv)
    if a.clock == "cpu" and a.threads != 1:
        ap.error("--clock cpu needs --threads 1 (the CPU time of several threads is not a duration)")
    global CLOCK
    CLOCK = time.thread_time if a.clock == "cpu" else time.perf_counter
    cpu = a.clock == "cpu"
    fmts = [f for f in a.formats.split(",") if f]
    glmbench.set_num_threads(a.threads)
    load0, t_start = _load(), datetime.datetime.now(datetime.timezone.utc)
    exe = None if a.no_ggml else peer.build_peer(a.build_dir)
    ceil0 = measure_ceilings()
    rbw = read_ceiling() if cpu else ceil0["bandwidth_read_gbs"]
    gemv, peers, moes = [], [], []
    for fmt in fmts:
        res, copies = dram_gemv(fmt, a.reps, a.rounds)
        gemv.append((fmt, res, copies))
        print(fmt, {m: f"{b / t / 1e9:.1f} GB/s" for m, (t, b) in res.items()}, flush=True)
        if exe:
            g, c, where = [], [], ""
            for r in range(a.rounds):
                for side in (("g", "c") if r % 2 == 0 else ("c", "g")):
                    if side == "g":
                        g.append(peer.glmbench_case("linear", fmt, (N, K, 1), a.reps, CLOCK)[0])
                    else:
                        t, where = peer.ggml_case(exe, "linear", fmt, (N, K, 1), a.reps, a.threads, cpu)
                        c.append(t)
            peers.append(("linear", fmt, min(g), min(c), where))
            print(f"  vs ggml: {min(c) / min(g):.2f}x ({where})", flush=True)
    for fmt in [f for f in ("q4_K", "q6_K", "mxfp4", "q4_0") if f in fmts]:
        t, b = dram_moe(fmt, max(1, a.reps // 2))
        moes.append((fmt, t, b))
        print(f"moe {fmt} T=1 from DRAM: {t * 1e3:.3f} ms {b / t / 1e9:.1f} GB/s", flush=True)
        if exe:
            g, c, where = [], [], ""
            shape = (64, 1536, 2048, 4, 1)
            for r in range(a.rounds):
                for side in (("g", "c") if r % 2 == 0 else ("c", "g")):
                    if side == "g":
                        g.append(peer.glmbench_case("moe", fmt, shape, a.reps, CLOCK)[0])
                    else:
                        tt, where = peer.ggml_case(exe, "moe", fmt, shape, a.reps, a.threads, cpu)
                        c.append(tt)
            peers.append(("moe", fmt, min(g), min(c), where))
            print(f"  vs ggml: {min(c) / min(g):.2f}x ({where})", flush=True)
    ceil1 = measure_ceilings(quick=True)
    rbw1 = read_ceiling() if cpu else ceil1["bandwidth_read_gbs"]
    load1 = _load()
    L = [f"# Decode GEMV and routed-expert decode on the repacked K-quant / iq4_nl / mxfp4 layouts, "
         f"{t_start.strftime('%Y-%m-%d %H:%M UTC')}", "",
         f"- machine: {cpu_name()}, {os.cpu_count()} CPUs, L3 {_l3_bytes() / 2**20:.0f} MiB, {platform.platform()}; "
         f"threads {a.threads} (both sides); code {code_version(_core)} (glmbench version + hash of the built C core)",
         f"- load average (1/5/15 min) before: {load0}; after: {load1}. The machine may be SHARED with other jobs: "
         "times are the best of repeated calls, sides alternate round by round",
         f"- read-only bandwidth measured in this run: {rbw:.1f} GB/s at the start, {rbw1:.1f} "
         f"at the end{' (one thread, by CPU time; the % columns use the start)' if cpu else ''} (wall-clock triad "
         f"{ceil0['bandwidth_gbs']:.1f} / {ceil1['bandwidth_gbs']:.1f}, read-only {ceil0['bandwidth_read_gbs']:.1f} / "
         f"{ceil1['bandwidth_read_gbs']:.1f})",
         f"- clock: {'CPU time of the calling thread (glmbench) / the process (ggml harness), one thread' if cpu else 'wall'}",
         "- weights: random blocks (small finite scales); speed does not depend on the values. glmbench reads its "
         "repacked copy (QTensor.repack: 16 rows interleaved, scales decoded, made once; the stored bytes are "
         "only read); `as stored` is the previous kernel on the ggml bytes",
         f"- command: python bench/bench_gemv_repack.py {' '.join(sys.argv[1:] if argv is None else argv)}", "",
         f"## GEMV T=1, {N}x{K}, from DRAM (distinct copies >= 2x the L3, one call per copy in turn; best call)", "",
         "| format | bytes per call (repacked / stored) | repacked | % of read bw | as stored | % of read bw | repacked vs as stored |",
         "|---|---|---|---|---|---|---|"]
    for fmt, res, copies in gemv:
        t, b = res["repacked"]
        row = f"| {fmt} | {b / 1e6:.1f} MB"
        if "as stored" in res:
            ts, bs = res["as stored"]
            row += (f" / {bs / 1e6:.1f} MB | {t * 1e3:.2f} ms, {b / t / 1e9:.1f} GB/s | {b / t / 1e9 / rbw:.0%} | "
                    f"{ts * 1e3:.2f} ms, {bs / ts / 1e9:.1f} GB/s | {bs / ts / 1e9 / rbw:.0%} | {ts / t:.2f}x |")
        else:
            row += f" | {t * 1e3:.2f} ms, {b / t / 1e9:.1f} GB/s | {b / t / 1e9 / rbw:.0%} | - | - | - |"
        L.append(row)
    if peers:
        L += ["", "## Against ggml (same shapes, same threads; ratio = ggml time / glmbench time, > 1: glmbench faster)", "",
              "| case | ggml buffer | glmbench | ggml | ratio |", "|---|---|---|---|---|"]
        for kind, fmt, tg, tc, where in peers:
            name = f"GEMV {fmt} T=1 {N}x{K}" if kind == "linear" else f"MoE {fmt} T=1 top-4 of 64, 2048->1536->2048 (one routing)"
            L.append(f"| {name} | {where} | {tg * 1e3:.3f} ms | {tc * 1e3:.3f} ms | {tc / tg:.2f}x |")
    if moes:
        L += ["", "## Routed experts at decode from DRAM (glmbench; 64 distinct experts, a new routing per call)", "",
              "| format | time per T=1 call | GB/s of the 4 experts' weights | % of read bw |", "|---|---|---|---|"]
        for fmt, t, b in moes:
            L.append(f"| {fmt} | {t * 1e3:.3f} ms | {b / t / 1e9:.1f} | {b / t / 1e9 / rbw:.0%} |")
    text = "\n".join(L) + "\n"
    print(text)
    if a.out:
        atomic_write_text(a.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
