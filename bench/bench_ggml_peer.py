"""glmbench's quantized and 16-bit kernels against ggml's own (the CPU backend under llama.cpp) on
the shapes of `python -m glmbench.bench kernels`, same threads, alternating, with the triad
bandwidth and FMA peak measured in the same run.

    bash bench/build_llama_bench.sh            # llama.cpp + ggml static libraries (../llama-build)
    python bench/bench_ggml_peer.py --out bench/results/ggml_peer_<date>.md
    python bench/bench_ggml_peer.py --only "bf16,f16" --threads 1 --clock cpu   # 16-bit prefill GEMMs

--clock cpu (with --threads 1) times each call by the process's CPU time instead of the wall clock,
on both sides, and the ceilings the same way: on a machine other jobs share, a single-threaded
call's CPU time is its own work, where its wall time includes the time it waited for a core.
The 16-bit cases (bf16, f16 weights at T=512, GLM-4.7-Flash's projections) run glmbench.linear
(csrc/hgemm.c) against ggml's MUL_MAT on the same type (its default: llamafile's tinyBLAS where it
takes the shape, else vec_dot, with the activations converted to bf16 / f16 inside the op).

ggml's side is bench/ggml_peer/ggml_quant_bench.cpp (compiled here against that build): one
MUL_MAT (or GLM's routed experts as llama.cpp's graph runs them: gate and up MUL_MAT_ID, SwiGLU,
down MUL_MAT_ID, weighted sum) per graph compute, weights in the CPU_REPACK buffer where ggml has a
repacked layout for the type on this CPU (q4_0 -> q4_0x8, llama.cpp's default), else the plain CPU
buffer (q8_0 has no x86 repack); activations float32, quantized to q8_0 inside the op as in a model.
glmbench's side: glmbench.core.quant.linear / moe_experts on repacked QTensors, the kernel-bench
cases. Reported: best time of `--reps` (after a warm-up) for each side, the ratio ggml / glmbench
time (> 1: glmbench faster), each side's GFLOP/s and share of the measured ceiling.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time

import numpy as np
from tqdm import tqdm

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import glmbench  # noqa: E402
from glmbench import vocab  # noqa: E402
from glmbench.core import quant  # noqa: E402
from glmbench.core._loader import _core  # noqa: E402
from glmbench.measure.machine import _l3_bytes, cpu_name, measure_ceilings  # noqa: E402
from glmbench.results.records import atomic_write_text  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

# (kind, fmt, shape): the kernel bench's quantized cases (glmbench/bench/quant.py)
# K-quants, iq4_nl and mxfp4 (issue 28): decode GEMV (T=1) on the 25600x5120 matrix and GLM's routed
# experts at decode (T=1, 4 of 64), glmbench on its repacked copies (glmbench.core.quant.KP_FORMATS)
# GLM-4.7-Flash's projections [N, K] (glmbench.bench.GLM_PROJ: q_a, q_b, kv_a, kv_b, o_proj), bf16/f16 prefill
GLM_PROJ = ((768, 2048), (5120, 768), (576, 2048), (8960, 512), (2048, 5120))
NEW_FMTS = ("q4_K", "q5_K", "q6_K", "iq4_xs", "mxfp4", "iq4_nl", "q2_K", "q3_K")
CASES = [("linear", f, (1536, 2048, 512)) for f in ("q4_0", "q8_0")] + \
        [("linear", f, (25600, 5120, 1)) for f in ("q4_0", "q8_0")] + \
        [("moe", f, (64, 1536, 2048, 4, T)) for f in ("q4_0", "q8_0") for T in (512, 1)] + \
        [("linear", f, (25600, 5120, 1)) for f in NEW_FMTS] + \
        [("moe", f, (64, 1536, 2048, 4, 1)) for f in ("q4_K", "q6_K", "mxfp4", "iq4_nl")] + \
        [("linear", f, (n, k, 512)) for f in ("bf16", "f16") for n, k in GLM_PROJ]

# prefill GEMM (T=512, GLM's expert shape) in the types of downloaded files (issue 28, whole-model peer)
CASES += [("linear", f, (1536, 2048, 512)) for f in ("q4_K", "q5_K", "q6_K", "iq4_xs", "iq4_nl", "mxfp4")]
# the same matrix at the token counts a routed expert sees in a 512-token prefill (issue 28: 32-128)
CASES += [("linear", f, (1536, 2048, T)) for f in ("q4_K", "q5_K", "q6_K", "iq4_xs", "iq4_nl", "mxfp4") for T in (32, 128)]
# q2_K and q3_K (the low-bit files) at the same prefill shapes (issue 28)
CASES += [("linear", f, (1536, 2048, T)) for f in ("q2_K", "q3_K") for T in (512, 32, 128)]
# routed experts at prefill (T=512, 64 experts top-4, GLM's 2048->1536->2048) in K formats (issue 28, s11)
CASES += [("moe", f, (64, 1536, 2048, 4, 512)) for f in ("q4_K",)]


def _stored_weights(n, k, fmt, seed):
    """A QTensor of random blocks for the formats glmbench reads without quantizing (K-quants,
    iq4_nl, mxfp4), as the kernel benches make them; q4_0/q8_0 quantized from random floats."""
    if fmt in ("q4_0", "q8_0"):
        return quant.quantize(_weights(n, k, seed), fmt)
    if fmt in ("iq4_nl", "mxfp4"):
        rng = np.random.default_rng(seed)
        bb = quant.FORMATS[fmt][2]
        a = rng.integers(0, 256, (n, k // 32, bb), dtype=np.uint8)
        if fmt == "iq4_nl":
            a[:, :, :2] = np.float16(0.005).reshape(1).view(np.uint8)
        else:
            a[:, :, 0] = rng.integers(116, 122, (n, k // 32))
        return quant.QTensor(a.reshape(n, -1), fmt, (n, k))
    from glmbench.bench.quant import kquant_weights
    return kquant_weights(n, k, fmt, seed)


def build_peer(build_dir: str, exe_dir: str | None = None) -> str:
    """The harness compiled against the build's static libraries, into exe_dir (default: this
    checkout's build/ggml_peer, ignored by git, so the llama.cpp build is only read)."""
    exe = os.path.join(exe_dir or os.path.join(os.path.dirname(HERE), "build", "ggml_peer"), "ggml_quant_bench")
    os.makedirs(os.path.dirname(exe), exist_ok=True)
    inc = os.path.join(build_dir, "ggml-include")
    libs = [os.path.join(build_dir, "ggml", "src", n) for n in ("libggml.a", "libggml-cpu.a", "libggml-base.a")]
    for p in [inc] + libs:
        if not os.path.exists(p):
            sys.exit(f"bench_ggml_peer: {p} is missing: build llama.cpp with bench/build_llama_bench.sh {build_dir}")
    src = os.path.join(HERE, "ggml_peer", "ggml_quant_bench.cpp")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        subprocess.run(["g++", "-O2", "-std=c++17", "-march=native", "-I", inc, src, "-o", exe, *libs,
                        "-fopenmp", "-lpthread", "-ldl"], check=True)
    return exe


def _weights(n, k, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, k), dtype=np.float32) / np.float32(np.sqrt(k))


def _moe_weights(fmt, E, F, D):
    """The gate, up and down experts of the MoE cases as repacked QTensors: each matrix's seeded random blocks
    copied to all E experts (every expert the same bytes at its own address)."""
    qs = []
    for j, (n1, k1) in enumerate(((F, D), (F, D), (D, F))):
        q1 = _stored_weights(n1, k1, fmt, 10 + j)
        data = np.empty((E,) + q1.data.shape, np.uint8)
        data[:] = q1.data
        qs.append(quant.QTensor(data, fmt, (E,) + q1.shape).repack())
    return qs


def glmbench_case(kind, fmt, shape, reps, clock=time.perf_counter):
    """Best seconds of glmbench's kernel on the case, and its FLOPs."""
    rng = np.random.default_rng(1)
    if kind == "linear" and fmt in ("bf16", "f16"):
        n, k, T = shape
        w = _weights(n, k, 0)
        w16 = vocab.to_bf16(w) if fmt == "bf16" else w.astype(np.float16)
        x = rng.standard_normal((T, k), dtype=np.float32)

        def run():
            return glmbench.linear(x, w16)
        flops = 2.0 * T * n * k
    elif kind == "linear":
        n, k, T = shape
        qp = _stored_weights(n, k, fmt, 0).repack()
        x = rng.standard_normal((T, k), dtype=np.float32)
        kern = next(k for k in ("qgemm_vnni", "qgemm_avx2", "qgemm_ref") if quant.kernels().get(k))
        if fmt in quant.K_FORMATS:
            kern = next(v for v in ("kquant_vnni", "kquant_avx2", "kquant_ref") if quant.kernels().get(v))

        def run():
            return quant.linear(x, qp, kernel=kern)
        flops = 2.0 * T * n * k
    else:
        E, F, D, k, T = shape
        qs = _moe_weights(fmt, E, F, D)
        x = rng.standard_normal((T, D), dtype=np.float32)
        idx = np.stack([rng.permutation(E)[:k] for _ in range(T)]).astype(np.int64)
        wts = rng.random((T, k)).astype(np.float32)

        def run():
            return quant.moe_experts(x, idx, wts, *qs)[0]
        flops = 6.0 * T * k * F * D
    y = run()
    if not np.all(np.isfinite(y)):
        raise RuntimeError(f"glmbench {kind} {fmt} {shape}: non-finite output")
    ts = []
    for _ in range(reps):
        t0 = clock()
        run()
        ts.append(clock() - t0)
    return min(ts), flops


def _ggml_run(args_for) -> tuple[list, str]:
    """(the harness's printed fields, ggml buffer): `args_for(repack)` run in ggml's CPU_REPACK buffer
    where ggml has a repacked layout for the type on this CPU (llama.cpp's default), else the plain one."""
    for repack in (1, 0):
        args = args_for(repack)
        p = subprocess.run(args, capture_output=True, text=True)
        if p.returncode == 5 and repack:  # no repacked layout for this type here: ggml's default is the plain buffer
            continue
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
        return p.stdout.split(), "CPU_REPACK" if repack else "CPU (no repacked layout)"
    raise AssertionError


def ggml_case(exe, kind, fmt, shape, reps, threads, cpu_clock=False):
    """Best seconds of ggml's kernel (repacked where ggml can, else plain) and which buffer it used."""
    def args_for(repack):
        if kind == "linear":
            n, k, T = shape
            return [exe, "linear", fmt, str(n), str(k), str(T), str(repack), str(threads), str(reps)]
        E, F, D, k, T = shape
        return [exe, "moe", fmt, str(E), str(F), str(D), str(k), str(T), str(repack), str(threads), str(reps)]
    f, where = _ggml_run(args_for)
    return float(f[f.index("cpu_best_s" if cpu_clock else "best_s") + 1]), where


def _stored_bytes(fmt, n=25600, k=5120):
    """The bytes of an [n, k] weight as the format stores it."""
    return n * k * quant.FORMATS[fmt][2] // quant.FORMATS[fmt][1]


def _dram_copies(fmt, n=25600, k=5120):
    """Distinct copies of an [n, k] weight whose total is at least twice the last-level cache (>= 2)."""
    return max(2, -(-2 * _l3_bytes() // _stored_bytes(fmt, n, k)))


def dram_gemv(fmt, reps, copies, n=25600, k=5120):
    """Seconds per call of glmbench's decode GEMV over `copies` distinct repacked weights, one call
    per copy in turn, best pass of `reps`."""
    q = _stored_weights(n, k, fmt, 0).repack()
    qs = [q] + [_stored_weights(n, k, fmt, 1 + i).repack() for i in range(copies - 1)]
    x = np.random.default_rng(3).standard_normal((1, k), dtype=np.float32)
    kern = next(k for k in ("qgemm_vnni", "qgemm_avx2", "qgemm_ref") if quant.kernels().get(k))
    if fmt in quant.K_FORMATS:
        kern = next(v for v in ("kquant_vnni", "kquant_avx2", "kquant_ref") if quant.kernels().get(v))
    for w in qs:
        quant.linear(x, w, kernel=kern)
    best = None
    for _ in range(reps):
        t0 = time.perf_counter()
        for w in qs:
            quant.linear(x, w, kernel=kern)
        t = time.perf_counter() - t0
        best = t if best is None else min(best, t)
    return best / copies


def ggml_dram_gemv(exe, fmt, reps, threads, copies, n=25600, k=5120):
    """(seconds per product, ggml buffer): ggml's decode GEMV over `copies` distinct weights in one
    graph (the harness's COPIES: one MUL_MAT per copy on the same x), best compute of `reps` / copies;
    CPU_REPACK where ggml has a layout for the type on this CPU, else the plain buffer."""
    f, where = _ggml_run(lambda repack: [exe, "linear", fmt, str(n), str(k), "1", str(repack), str(threads), str(reps),
                                         str(copies)])
    assert int(f[f.index("copies") + 1]) == copies
    return float(f[f.index("best_s") + 1]) / copies, where


# routed experts at decode from DRAM: the MoE T=1 shape with every call routed to the next 4 of its 64
# experts (the harness's ROTATE), so that each call reads experts untouched for 15 calls (15 x 3 x
# 4 matrices, past the last-level cache) as a model's decode does; both sides the same cycle
MOE_DRAM = (64, 1536, 2048, 4)
MOE_DRAM_FMTS = ("q4_0", "q8_0", "q4_K", "q6_K", "mxfp4", "iq4_nl")


def _moe_dram_bytes(fmt, E=64, F=1536, D=2048, k=4):
    """The stored bytes one T=1 call reads: k experts' gate, up and down matrices."""
    return k * (2 * _stored_bytes(fmt, F, D) + _stored_bytes(fmt, D, F))


def moe_rotation(E, k, T=1):
    """The expert ids of each call in one cycle of the rotation (the harness's ROTATE: call r, token i:
    experts (r T + i) k .. + k - 1, mod E): E / (k T) calls of [T, k] ids."""
    return [np.array([[((r * T + i) * k + j) % E for j in range(k)] for i in range(T)], np.int64)
            for r in range(max(1, E // (k * T)))]


def dram_moe(fmt, reps):
    """Seconds of glmbench's routed experts at T=1 (quant.moe_experts on repacked experts) with each
    call routed to the next 4 of the 64 experts in turn, best of `reps` calls (a multiple of 16: whole
    cycles), after one cycle of warm-up."""
    E, F, D, k = MOE_DRAM
    qs = _moe_weights(fmt, E, F, D)
    x = np.random.default_rng(3).standard_normal((1, D), dtype=np.float32)
    wts = np.random.default_rng(4).random((1, k)).astype(np.float32)
    ids = moe_rotation(E, k)
    for idx in ids:
        quant.moe_experts(x, idx, wts, *qs)
    best = float("inf")
    for r in range(reps):
        idx = ids[r % len(ids)]
        t0 = time.perf_counter()
        quant.moe_experts(x, idx, wts, *qs)
        best = min(best, time.perf_counter() - t0)
    return best


def ggml_dram_moe(exe, fmt, reps, threads):
    """(best seconds, ggml buffer) of ggml's routed experts at T=1 with the harness's ROTATE (each
    compute routed to the next 4 of the 64 experts), CPU_REPACK where ggml has a layout for the type."""
    E, F, D, k = MOE_DRAM
    f, where = _ggml_run(lambda repack: [exe, "moe", fmt, str(E), str(F), str(D), str(k), "1", str(repack), str(threads),
                                         str(reps), "1"])
    assert int(f[f.index("rotate") + 1]) == 1
    return float(f[f.index("best_s") + 1]), where


def cpu_ceilings(reps=20):
    """(float32 FMA GFLOP/s, bf16 dot-product GFLOP/s or None) of one thread, each timed by the
    process's CPU time (the probes' own loops: csrc/bench.c, csrc/hgemm.c), best of `reps`."""
    def best(fn):
        b = float("inf")
        for _ in range(reps):
            t0 = time.process_time()
            fn()
            b = min(b, time.process_time() - t0)
        return b
    it = 2_000_000
    fma = it * 16 * 16 * 2 / best(lambda: _core.bench_fma(it, 1)) / 1e9
    bf = None
    if _core._hgemm_kernels("bf16")["bf16dot"]:
        bf = it * 16 * 64 / best(lambda: _core.bench_bf16dot(it, 1)) / 1e9
    return fma, bf


def label(kind, fmt, shape):
    if kind == "linear":
        n, k, T = shape
        return f"linear {fmt} T={T} {n}x{k}"
    E, F, D, k, T = shape
    return f"moe experts {fmt} T={T} E={E} {D}->{F}->{D} top{k}"


def _t1_cache_note(l3: int) -> str:
    """What the T=1 rows measure on this machine: the 25600x5120 matrices (74 MB q4_0 .. 139 MB q8_0)
    and the MoE cases' 4 experts x 3 matrices of 2048x1536 (21 MB q4_0 .. 40 MB q8_0) each read from
    DRAM on every repeated call where they are larger than the last-level cache, and from the cache
    where they fit. Until 2026-12-03 this line said they stayed in the cache, which a 16-32 MiB L3
    (every machine these files were written on) never allowed."""
    def where(lo, hi):
        return ("are larger than it: each call reads them from DRAM" if lo > l3 else
                "stay in it between calls (cache-resident)" if hi <= l3 else "partly fit in it")
    return (f"- last-level cache {l3 / 2**20:.0f} MiB: the T=1 linear cases' weights (25600x5120: 74 MB q4_0 to "
            f"139 MB q8_0) {where(25600 * 5120 * 0.5625, 25600 * 5120 * 1.0625)}; the MoE T=1 cases' 4 experts x 3 "
            f"matrices (21 MB q4_0 to 40 MB q8_0) {where(12 * 2048 * 1536 * 0.5625, 12 * 2048 * 1536 * 1.0625)}. "
            "% rd bw is against the read-only ceiling measured at the start of the run (the host's ceiling moves, "
            "so above 100% it rose during the run); decode from DRAM over many copies: the section below (--dram) "
            "and bench/bench_kgemv_dram.py")


# vpmulld per 16 vpdpbusd in glmbench's K-quant prefill tile (csrc/quant_k.c panel_tile): one per
# 16 output rows x token and scale group, 4 vpdpbusd per 16 values: q6_K's 16-value scales 4; the
# 32-value scale groups of q4_K/q5_K/iq4_xs 2; q2_K/q3_K none since session 38 (their panels hold each
# value times its scale, a byte: panel_premul; their vpdpwssd of two 16-value groups had been 2)
TILE_SCALES = {"q6_K": 4, "q4_K": 2, "q5_K": 2, "iq4_xs": 2, "q2_K": 0, "q3_K": 0}


def vnni_ceilings() -> dict:
    """{scale multiplies per 16 vpdpbusd: GOP/s of the vpdpbusd work} on every thread (_core.bench_int8
    with `scales`): the most a tile with that op mix reaches on this CPU; {} without AVX-512 VNNI."""
    out = {}
    for sc in sorted({0, *TILE_SCALES.values()}):
        try:
            g, instr = _core.bench_int8(1_000_000, 20, scales=sc)
        except ValueError:
            return {}
        if instr != "vpdpbusd":
            return {}
        out[sc] = g
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default=os.path.join(os.path.dirname(os.path.dirname(HERE)), "llama-build"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per case; the best of each side is kept")
    ap.add_argument("--out", default=None)
    ap.add_argument("--exe-dir", default=None, help="where to compile the ggml harness (default: this checkout's build/ggml_peer)")
    ap.add_argument("--only", default=None, metavar="FMT,...",
                    help="run only the cases of these weight formats (e.g. bf16,f16), without the DRAM GEMV part")
    ap.add_argument("--dram", action="store_true",
                    help="with --only: also the DRAM GEMV and the MoE T=1 from DRAM parts for those of its formats that have one")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="cpu: time by process CPU time on both sides (needs --threads 1; for a shared machine)")
    a = ap.parse_args(argv)
    if a.clock == "cpu" and a.threads != 1:
        ap.error("--clock cpu needs --threads 1 (the CPU time of several threads is not a duration)")
    only = set(a.only.split(",")) if a.only else None
    cases = [c for c in CASES if only is None or c[1] in only]
    if not cases:
        ap.error(f"--only {a.only}: no case has those formats (formats: " + ", ".join(sorted({c[1] for c in CASES})) + ")")
    load0 = os.getloadavg()[0]
    exe = build_peer(a.build_dir, a.exe_dir)
    glmbench.set_num_threads(a.threads)
    ceil = measure_ceilings()
    vnni = vnni_ceilings()
    cpu_peaks = cpu_ceilings() if a.clock == "cpu" else None
    if cpu_peaks:  # the % columns use the ceilings timed the same way as the cases
        ceil = dict(ceil, fma_gflops=cpu_peaks[0])
    clock = time.process_time if a.clock == "cpu" else time.perf_counter
    rows = []
    for kind, fmt, shape in tqdm(cases, desc="kernel cases", unit="case", file=sys.stderr):
        g, c, where = [], [], ""
        for r in range(a.rounds):
            order = ("glmbench", "ggml") if r % 2 == 0 else ("ggml", "glmbench")
            for side in order:
                if side == "glmbench":
                    t, flops = glmbench_case(kind, fmt, shape, a.reps, clock)
                    g.append(t)
                else:
                    t, where = ggml_case(exe, kind, fmt, shape, a.reps, a.threads, a.clock == "cpu")
                    c.append(t)
        tg, tc = min(g), min(c)
        rows.append((label(kind, fmt, shape), where, tg, tc, flops))
        tqdm.write(f"{rows[-1][0]}: glmbench {tg * 1e3:.3f} ms, ggml {tc * 1e3:.3f} ms ({where}), ratio {tc / tg:.2f}x")
    dram = []
    for fmt in tqdm([f for f in ("q4_0", "q8_0") + NEW_FMTS if only is None or (a.dram and f in only)],
                    desc="GEMV from DRAM", unit="format", file=sys.stderr):
        # both sides over the same number of distinct copies, alternating rounds, the best of each
        copies, stored = _dram_copies(fmt), _stored_bytes(fmt)
        tg = tc = float("inf")
        where = "–"
        for r in range(a.rounds):
            for side in (("glmbench", "ggml") if r % 2 == 0 else ("ggml", "glmbench")):
                if side == "glmbench":
                    tg = min(tg, dram_gemv(fmt, a.reps, copies))
                else:
                    t1, where = ggml_dram_gemv(exe, fmt, a.reps, a.threads, copies)
                    tc = min(tc, t1)
        dram.append((fmt, copies, stored, tg, tc, where))
        tqdm.write(f"GEMV from DRAM {fmt}, {copies} copies: glmbench {stored / tg / 1e9:.1f} GB/s, ggml "
                   f"{stored / tc / 1e9:.1f} GB/s ({where}), ratio {tc / tg:.2f}x")
    moe_dram = []
    for fmt in tqdm([f for f in MOE_DRAM_FMTS if only is None or (a.dram and f in only)],
                    desc="MoE T=1 from DRAM", unit="format", file=sys.stderr):
        reps = 16 * max(1, -(-a.reps // 16))        # whole cycles of the 16 expert groups
        tg = tc = float("inf")
        where = "–"
        for r in range(a.rounds):
            for side in (("glmbench", "ggml") if r % 2 == 0 else ("ggml", "glmbench")):
                if side == "glmbench":
                    tg = min(tg, dram_moe(fmt, reps))
                else:
                    t1, where = ggml_dram_moe(exe, fmt, reps, a.threads)
                    tc = min(tc, t1)
        moe_dram.append((fmt, _moe_dram_bytes(fmt), tg, tc, where))
        tqdm.write(f"MoE T=1 from DRAM {fmt}: glmbench {tg * 1e3:.3f} ms, ggml {tc * 1e3:.3f} ms ({where}), "
                   f"ratio {tc / tg:.2f}x")
    after = measure_ceilings(quick=True)
    bw, fma, rbw = ceil["bandwidth_gbs"], ceil["fma_gflops"], ceil["bandwidth_read_gbs"]
    L = [f"# glmbench vs ggml's own quantized and 16-bit CPU kernels, same shapes ({datetime.date.today().isoformat()})", "",
         f"- machine: {cpu_name()}, {os.cpu_count()} CPUs, {platform.platform()}; threads {a.threads} on both sides",
         f"- ceilings measured in this run: triad {bw:.1f} GB/s, read-only {rbw:.1f} GB/s, FMA peak {fma:.0f} GFLOP/s "
         f"(after the cases: {after['bandwidth_gbs']:.1f} / {after['bandwidth_read_gbs']:.1f} GB/s, {after['fma_gflops']:.0f} GFLOP/s)"
         + (f"; by CPU time, one thread: FMA peak {cpu_peaks[0]:.0f} GFLOP/s"
            + (f", bf16 dot-product (vdpbf16ps) peak {cpu_peaks[1]:.0f} GFLOP/s" if cpu_peaks[1] else "")
            if cpu_peaks else ""),
         f"- clock: {'process CPU time (one thread on each side)' if a.clock == 'cpu' else 'wall'}; "
         f"load before the run: {load0:.2f}, after: {os.getloadavg()[0]:.2f} (1-min averages; a shared machine when above 0.5)",
         f"- glmbench 16-bit prefill kernel (csrc/hgemm.c, picked by cpuid): bf16 {_core._linear_hgemm('bf16')}, "
         f"f16 {_core._linear_hgemm('f16')}",
         f"- ggml: the llama.cpp build of bench/build_llama_bench.sh ({a.build_dir}), harness "
         "bench/ggml_peer/ggml_quant_bench.cpp; weights in CPU_REPACK where ggml has a repacked layout for the "
         "type on this CPU (llama.cpp's default), else the plain CPU buffer",
         f"- time: best of {a.reps} calls x {a.rounds} alternating rounds per side; ratio = ggml time / glmbench time "
         "(> 1: glmbench faster); % = of the float32 FMA peak (T > 1; int8 VNNI dot products do 4 multiply-adds per "
         "32-bit lane, so integer GEMMs can pass it) or of the read-only bandwidth (T=1, the format's weight bytes)",
         _t1_cache_note(_l3_bytes()),
         ("- int8 VNNI ceilings measured in this run (bench_int8, every thread; GOP/s of the vpdpbusd work): "
          + ", ".join(f"{g:.0f} with {sc} vpmulld per 16 vpdpbusd" if sc else f"{g:.0f} plain" for sc, g in vnni.items())
          + ". glmbench's K-quant prefill tile applies a scale per 16 rows x token and scale group (csrc/quant_k.c "
          "panel_tile), "
          + ", ".join(f"{f} {n}" for f, n in TILE_SCALES.items())
          + " per 16 vpdpbusd; where the multiplies share the dot-product pipes (Zen 4) that op mix caps the tile "
          "below the plain peak: 'tile %' is glmbench's rate against its format's capped ceiling, ggml's against "
          "the plain one" if vnni else "- int8 VNNI ceilings: not measured (no AVX-512 VNNI in this build)"),
         f"- command: python bench/bench_ggml_peer.py {' '.join(sys.argv[1:] if argv is None else argv)}", "",
         "| case | ggml buffer | glmbench | ggml | ratio | glmbench GFLOP/s (% ceiling) | ggml GFLOP/s (% ceiling) "
         "| VNNI tile %: glmbench / ggml |",
         "|---|---|---|---|---|---|---|---|"]
    for name, where, tg, tc, flops in rows:
        if "T=1 " in name:
            fmt = name.split()[1] if name.startswith("linear") else name.split()[2]
            nbytes = flops / 2 * quant.FORMATS[fmt][2] / quant.FORMATS[fmt][1]
            pg, pc = f"{nbytes / tg / 1e9 / rbw:.0%} rd bw", f"{nbytes / tc / 1e9 / rbw:.0%} rd bw"
        else:
            pg, pc = f"{flops / tg / 1e9 / fma:.0%} FMA", f"{flops / tc / 1e9 / fma:.0%} FMA"
        tile = "–"
        fmt = name.split()[1] if name.startswith("linear") else ""
        if vnni and "T=1 " not in name and fmt in TILE_SCALES:
            tile = (f"{flops / tg / 1e9 / vnni[TILE_SCALES[fmt]]:.0%} of {vnni[TILE_SCALES[fmt]]:.0f} / "
                    f"{flops / tc / 1e9 / vnni[0]:.0%} of {vnni[0]:.0f}")
        L.append(f"| {name} | {where} | {tg * 1e3:.3f} ms | {tc * 1e3:.3f} ms | {tc / tg:.2f}x | "
                 f"{flops / tg / 1e9:.1f} ({pg}) | {flops / tc / 1e9:.1f} ({pc}) | {tile} |")
    if moe_dram:
        E, F, D, k = MOE_DRAM
        L += ["", f"Routed experts at decode from DRAM, both sides: T=1, {k} of {E} experts ({D}->{F}->{D}, gate, up and "
              f"down), every call routed to the next {k} experts in turn (the harness's ROTATE; glmbench's "
              "quant.moe_experts the same cycle), so each call reads experts untouched for the 15 calls before it, "
              "past the last-level cache; best call of whole cycles, alternating rounds; GB/s of the stored bytes "
              "one call reads, against the read-only bandwidth measured at the start of this run.", "",
              "| format | MB per call | ggml buffer | glmbench | ggml | ratio | glmbench GB/s (% read-only) | "
              "ggml GB/s (% read-only) |", "|---|---|---|---|---|---|---|---|"]
        for fmt, nb, tg, tc, where in moe_dram:
            gg, gc = nb / tg / 1e9, nb / tc / 1e9
            L.append(f"| {fmt} | {nb / 1e6:.1f} | {where} | {tg * 1e3:.3f} ms | {tc * 1e3:.3f} ms | {tc / tg:.2f}x | "
                     f"{gg:.1f} ({gg / rbw:.0%}) | {gc:.1f} ({gc / rbw:.0%}) |")
    if not dram:
        text = "\n".join(L) + "\n"
        print(text)
        if a.out:
            atomic_write_text(a.out, text)
        return 0
    L += ["", "Decode GEMV from DRAM, both sides: T=1 25600x5120 over enough distinct copies of the weight that "
          "they cannot stay in the last-level cache (each product reads a copy not touched since the previous pass: "
          "glmbench one call per copy in turn, ggml one MUL_MAT per copy in one graph, the harness's COPIES), the "
          "same number of copies on both sides, alternating rounds, the best pass of each; GB/s of the format's "
          "stored weight bytes, against the read-only bandwidth and the triad measured at the start of this run "
          "(the host's bandwidth moves: the two sides alternate, so the ratio is of the same spells).", "",
          "| format | copies | ggml buffer | glmbench | ggml | ratio | glmbench GB/s (% read-only / % triad) "
          "| ggml GB/s (% read-only / % triad) |", "|---|---|---|---|---|---|---|---|"]
    for fmt, copies, stored, tg, tc, where in dram:
        gg, gc = stored / tg / 1e9, stored / tc / 1e9
        L.append(f"| {fmt} | {copies} | {where} | {tg * 1e3:.3f} ms | {tc * 1e3:.3f} ms | {tc / tg:.2f}x | "
                 f"{gg:.1f} ({gg / rbw:.0%} / {gg / bw:.0%}) | {gc:.1f} ({gc / rbw:.0%} / {gc / bw:.0%}) |")
    text = "\n".join(L) + "\n"
    print(text)
    if a.out:
        atomic_write_text(a.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
