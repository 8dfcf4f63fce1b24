"""MLA decode attention with GGUF's attn_k_b / attn_v_b as stored (core.attention.KVBSplit) against the
float32 kv_b they used to be joined into: one layer's real weights from a deepseek2 GGUF, T = 1, each
case's weights copied 16 times and cycled so every call reads them cold, the cases alternating.

    PYTHONPATH=$PWD python bench/bench_mla_kvb.py FILE.gguf [rounds] [--threads N]

Prints a Markdown row per case: MB per call, min and median ms, MB / min time (GB/s)."""
import argparse
import time
import warnings

import numpy as np

import glmbench
from glmbench.core.attention import KVBSplit, mla_attention
from glmbench.core.kvcache import KVCache
from glmbench.core.quant import QTensor
from glmbench.models import checkpoint


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("rounds", nargs="?", type=int, default=4)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--layer", type=int, default=0)
    a = ap.parse_args()
    if a.threads:
        glmbench.set_num_threads(a.threads)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg, sd = checkpoint.state_dict(a.file)
    sp = sd[f"model.layers.{a.layer}.self_attn.kv_b_proj.weight"]
    if not isinstance(sp, KVBSplit):
        raise SystemExit(f"{a.file}: layer {a.layer}'s kv_b is not a quantized split pair ({type(sp).__name__})")
    H, R, Dn, Dv, Dr = cfg.n_heads, cfg.kv_lora_rank, cfg.qk_nope_head_dim, cfg.v_head_dim, cfg.qk_rope_head_dim
    rng = np.random.default_rng(1)
    c = KVCache.mla(1, 64, R, Dr, kv="f16")
    c.append(0, rng.standard_normal((1, R)).astype(np.float32), rng.standard_normal((1, Dr)).astype(np.float32))
    qn = rng.standard_normal((1, H, Dn)).astype(np.float32)
    qr = rng.standard_normal((1, H, Dr)).astype(np.float32)
    j = sp.joined()
    cp = lambda t: QTensor(t.data.copy(), t.fmt, t.shape) if isinstance(t, QTensor) else t.copy()
    cases = {f"split {sp.fmt} (as stored)": [KVBSplit(cp(sp.k_b), cp(sp.v_b)) for _ in range(16)],
             "joined f32": [j.copy() for _ in range(16)]}
    res: dict = {}
    for _ in range(a.rounds):
        for name, ws in cases.items():
            ts = res.setdefault(name, [])
            for x in ws:
                t0 = time.perf_counter()
                mla_attention(qn, qr, c, 0, x, v_head_dim=Dv)
                ts.append(time.perf_counter() - t0)
    print(f"threads {glmbench.get_num_threads()}\n| kv_b | MB per call | min ms | median ms | GB/s at min |\n|---|---|---|---|---|")
    for name, ts in res.items():
        nb = cases[name][0].nbytes
        print(f"| {name} | {nb / 1e6:.2f} | {min(ts) * 1e3:.3f} | {np.median(ts) * 1e3:.3f} | {nb / min(ts) / 1e9:.1f} |")


if __name__ == "__main__":
    main()
