"""The ops a hybrid's Gated DeltaNet layer, a Mamba-2 hybrid's layer and Cohere's layer add to the C core,
timed at real sizes beside a NumPy implementation of the same work and this machine's measured ceilings:

1. ops.gated_delta_rule at decode (T = 1) and for a 512-token prompt, Qwen3.5-35B-A3B's linear layer
   (16 key heads, 32 value heads, 128 x 128 state per value head): decode is the state read and
   written once (4 MiB, f32), so its ceiling is the measured triad bandwidth; a prompt runs 7 FLOPs per
   state entry and token (costmodel.GDN_FLOPS_PER_STATE), tokens in order, against the FMA peak.
   The NumPy version runs the same recurrence with each token's work vectorised over the heads.
2. ops.causal_conv1d over 512 tokens of the layer's 8192 channels, kernel 4 (bytes: read x, write y).
3. ops.layer_norm over 512 rows of Command-R's 8192 (bytes: read and write the rows).
4. ops.ssm_scan (Mamba-2's selective scan) at decode (T = 1) and for a 512-token prompt, for
   Nemotron-H-8B's Mamba layer (128 heads of 64, d_state 128, 8 groups) and Granite-4.0-H-Small's (the
   same with 1 group): decode reads and writes the 4 MiB f32 state once (against the triad bandwidth);
   a prompt runs SSM_FLOPS_PER_STATE FLOPs per state entry and token, tokens in order (against the FMA
   peak). The NumPy version runs the same recurrence with each token's work vectorised over the heads.
5. ops.causal_conv1d with Mamba-2's bias over 512 tokens of Nemotron-H-8B's 10240 conv channels.

    python bench/bench_linear_attn.py [--threads N] --out bench/results/linear_attn_<cpu>_<date>.md

Prints (and with --out writes, atomically) a Markdown table: median and best milliseconds, the share of
the ceiling each reaches, and the speed-up over NumPy. Each timing is the best of `--reps` calls after
one warm-up; the ceilings are measured in the same run (measure.machine.measure_ceilings).
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import glmbench  # noqa: E402
from glmbench.measure import machine  # noqa: E402
from glmbench.predict.costmodel import GDN_FLOPS_PER_STATE  # noqa: E402
from glmbench.results.records import atomic_write_text  # noqa: E402

HK, HV, DK, DV, CONV, K = 16, 32, 128, 128, 2 * 16 * 128 + 32 * 128, 4   # Qwen3.5-35B-A3B's linear layer
LN_D = 8192                                                                # Command-R's hidden size
# Mamba-2 layers (glmbench/data/models/*.json): name, heads, head dim, d_state, groups
SSM_LAYERS = (("Nemotron-H-8B", 128, 64, 128, 8), ("Granite-4.0-H-Small", 128, 64, 128, 1))
# FLOPs per state entry and token: S * dA (1), + (d x) B (an FMA, 2), y += S C (an FMA, 2)
SSM_FLOPS_PER_STATE = 5.0


def np_gated_delta_rule(q, k, v, g, beta, S, scale):
    """The recurrence in NumPy float32, each token's work vectorised over the value heads."""
    r = HV // HK
    qn = q / np.sqrt((q * q).sum(-1, keepdims=True) + 1e-6) * scale
    kn = k / np.sqrt((k * k).sum(-1, keepdims=True) + 1e-6)
    qn, kn = np.repeat(qn, r, axis=1), np.repeat(kn, r, axis=1)
    S = S.copy()
    out = np.empty_like(v)
    for t in range(q.shape[0]):
        S *= np.exp(g[t])[:, None, None]
        kv = np.einsum("hij,hi->hj", S, kn[t])
        d = (v[t] - kv) * beta[t][:, None]
        S += kn[t][:, :, None] * d[:, None, :]
        out[t] = np.einsum("hij,hi->hj", S, qn[t])
    return out, S


def np_ssm_scan(x, dt, A, B, C, D, S, dt_bias):
    """Mamba-2's scan in NumPy float32, each token's work vectorised over the heads (softplus, the decay
    and the group repeat for all tokens at once)."""
    rep = x.shape[1] // B.shape[1]
    d = dt + dt_bias
    d = np.where(d > 20, d, np.log1p(np.exp(np.minimum(d, 20)))).astype(np.float32)
    dA = np.exp(d * A)
    Bh, Ch = np.repeat(B, rep, axis=1), np.repeat(C, rep, axis=1)
    S = S.copy()
    y = np.empty_like(x)
    for t in range(x.shape[0]):
        S *= dA[t][:, None, None]
        S += (d[t][:, None] * x[t])[:, :, None] * Bh[t][:, None, :]
        y[t] = np.matmul(S, Ch[t][:, :, None])[..., 0] + D[:, None] * x[t]
    return y, S


def np_conv(x, w, state, bias=None):
    xx = np.concatenate([state, x])
    y = sum(w[:, j] * xx[j:j + x.shape[0]] for j in range(w.shape[1]))
    if bias is not None:
        y = y + bias
    return y / (1 + np.exp(-y)), xx[-(w.shape[1] - 1):]


def np_layer_norm(x, w, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    d = x - mu
    return d / np.sqrt((d * d).mean(-1, keepdims=True) + eps) * w


def best(fn, reps):
    fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)), float(min(ts))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--out", default=None)
    ap.add_argument("--threads", type=int, default=None, help="the C core's threads (default: its own default)")
    a = ap.parse_args()
    if a.threads is not None:
        glmbench.set_num_threads(a.threads)
    rng = np.random.default_rng(0)
    ceil = machine.measure_ceilings()
    bw, fma = ceil["bandwidth_gbs"] * 1e9, ceil["fma_gflops"] * 1e9
    rows = []

    def row(name, c_fn, np_fn, *, nbytes=0.0, flops=0.0, check=None):
        cm, cb = best(c_fn, a.reps)
        nm, nb = best(np_fn, max(2, a.reps // 2))
        if check is not None:
            check()
        share = []
        if nbytes:
            share.append(f"{nbytes / cb / bw:.0%} of triad ({nbytes / cb / 1e9:.1f} GB/s)")
        if flops:
            share.append(f"{flops / cb / fma:.1%} of FMA peak ({flops / cb / 1e9:.1f} GFLOP/s)")
        rows.append((name, cm * 1e3, cb * 1e3, "; ".join(share), nb / cb))

    scale = DK ** -0.5
    for T in (1, 512):
        q = rng.standard_normal((T, HK, DK)).astype(np.float32)
        k = rng.standard_normal((T, HK, DK)).astype(np.float32)
        v = rng.standard_normal((T, HV, DV)).astype(np.float32)
        g = (-np.abs(rng.standard_normal((T, HV))) * 0.1).astype(np.float32)
        beta = rng.uniform(0, 1, (T, HV)).astype(np.float32)
        S = (0.1 * rng.standard_normal((HV, DK, DV))).astype(np.float32)

        def check(q=q, k=k, v=v, g=g, beta=beta, S=S):
            o1, s1 = glmbench.gated_delta_rule(q, k, v, g, beta, S)
            o2, s2 = np_gated_delta_rule(q, k, v, g, beta, S, scale)
            assert np.abs(o1 - o2).max() <= 1e-3 * np.abs(o2).max() + 1e-6, "C and NumPy disagree"
        state_bytes = 2 * 4 * HV * DK * DV + 4 * T * (2 * HK * DK + HV * DV * 2 + 2 * HV)
        row(f"gated_delta_rule T={T} (Hk {HK}, Hv {HV}, {DK}x{DV})",
            lambda: glmbench.gated_delta_rule(q, k, v, g, beta, S),
            lambda: np_gated_delta_rule(q, k, v, g, beta, S, scale),
            nbytes=state_bytes if T == 1 else 0.0, flops=GDN_FLOPS_PER_STATE * T * HV * DK * DV if T > 1 else 0.0,
            check=check)
    x = rng.standard_normal((512, CONV)).astype(np.float32)
    w = rng.standard_normal((CONV, K)).astype(np.float32)
    st = rng.standard_normal((K - 1, CONV)).astype(np.float32)
    row(f"causal_conv1d T=512, C={CONV}, K={K}", lambda: glmbench.causal_conv1d(x, w, st),
        lambda: np_conv(x, w, st), nbytes=2 * 4 * 512 * CONV)
    for lname, H, P, N, G in SSM_LAYERS:
        for T in (1, 512):
            x = rng.standard_normal((T, H, P)).astype(np.float32)
            dt = rng.standard_normal((T, H)).astype(np.float32)
            A = (-np.exp(rng.uniform(-1, 1, H))).astype(np.float32)
            B = rng.standard_normal((T, G, N)).astype(np.float32)
            C = rng.standard_normal((T, G, N)).astype(np.float32)
            D = rng.standard_normal(H).astype(np.float32)
            dtb = rng.uniform(-4, -1, H).astype(np.float32)
            S = (0.1 * rng.standard_normal((H, P, N))).astype(np.float32)

            def check(x=x, dt=dt, A=A, B=B, C=C, D=D, S=S, dtb=dtb):
                y1, s1 = glmbench.ssm_scan(x, dt, A, B, C, D, S, dt_bias=dtb)
                y2, s2 = np_ssm_scan(x, dt, A, B, C, D, S, dtb)
                assert np.abs(y1 - y2).max() <= 1e-3 * np.abs(y2).max() + 1e-6, "C and NumPy disagree"
                assert np.abs(s1 - s2).max() <= 1e-3 * np.abs(s2).max() + 1e-6, "C and NumPy disagree"
            # the state read and written once, and the call's inputs and outputs (x, y, dt, B, C)
            nbytes = 2 * 4 * H * P * N + 4 * T * (2 * H * P + H + 2 * G * N)
            row(f"ssm_scan T={T} {lname} (H {H}, P {P}, N {N}, G {G})",
                lambda x=x, dt=dt, A=A, B=B, C=C, D=D, S=S, dtb=dtb: glmbench.ssm_scan(x, dt, A, B, C, D, S, dt_bias=dtb),
                lambda x=x, dt=dt, A=A, B=B, C=C, D=D, S=S, dtb=dtb: np_ssm_scan(x, dt, A, B, C, D, S, dtb),
                nbytes=nbytes, flops=SSM_FLOPS_PER_STATE * T * H * P * N, check=check)
    cm = 128 * 64 + 2 * 8 * 128                  # Nemotron-H-8B's conv channels: x, B and C
    xm = rng.standard_normal((512, cm)).astype(np.float32)
    wm = rng.standard_normal((cm, K)).astype(np.float32)
    bm = rng.standard_normal(cm).astype(np.float32)
    sm = rng.standard_normal((K - 1, cm)).astype(np.float32)
    row(f"causal_conv1d + bias T=512, C={cm}, K={K}", lambda: glmbench.causal_conv1d(xm, wm, sm, bias=bm),
        lambda: np_conv(xm, wm, sm, bm), nbytes=2 * 4 * 512 * cm)
    xl = rng.standard_normal((512, LN_D)).astype(np.float32)
    wl = rng.standard_normal(LN_D).astype(np.float32)
    row(f"layer_norm 512 x {LN_D}", lambda: glmbench.layer_norm(xl, wl), lambda: np_layer_norm(xl, wl),
        nbytes=2 * 4 * 512 * LN_D)

    now = datetime.datetime.now(datetime.timezone.utc)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [f"# The hybrids' and Cohere's C ops against NumPy and this machine's ceilings ({now:%Y-%m-%d})", "",
             f"- machine: {ceil['cpu']} ({platform.machine()}), {ceil['threads']} threads; load {load:.2f} at the end",
             f"- ceilings measured in this run: triad {ceil['bandwidth_gbs']:.1f} GB/s, read "
             f"{ceil['bandwidth_read_gbs']:.1f} GB/s, FMA {ceil['fma_gflops']:.0f} GFLOP/s "
             f"({ceil['fma_vector_bits']}-bit)",
             f"- command: `python bench/bench_linear_attn.py{f' --threads {a.threads}' if a.threads is not None else ''}"
             f"{' --out ' + a.out if a.out else ''}` (best and median "
             f"of {a.reps} calls after a warm-up; NumPy: best of {max(2, a.reps // 2)})", "",
             "| op | median ms | best ms | share of the ceiling (best) | x NumPy (best) |", "|---|---|---|---|---|"]
    lines += [f"| {n} | {m:.3f} | {b:.3f} | {s or '-'} | {r:.1f}x |" for n, m, b, s, r in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        atomic_write_text(a.out, text)


if __name__ == "__main__":
    main()
