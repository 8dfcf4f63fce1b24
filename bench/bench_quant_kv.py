"""KV-cache format trade-off, measured on this CPU: decode attention speed and cache bytes for each
cache format (f32, f16, bf16, q8_0, q4_0) at several depths, for GLM-4.7-Flash (MLA: one 576-wide
latent+rope row per token and layer) and Qwen3-32B (GQA: 8 kv heads x (K 128 + V 128)).

    python bench/bench_quant_kv.py                       # depths 4K 16K 64K, both models, all formats
    python bench/bench_quant_kv.py --depths 4096 --repeats 3 --out bench/results/quant_kv.csv

What one step is: one decode token at depth d in ONE layer -- append the new token's cache row
(quantized on append) and run attention over the d+1 cached tokens (dequantized inside the kernel).
tok/s is that step scaled to all layers (n_layers x the one-layer time): the attention share of
decode, not whole-model decode (weights are not read here). Every format is validated against a
float64 attention on the rows the cache actually holds before it is timed.

Columns: ms/layer, tok/s (attention, all layers), KV GiB (all layers at depth d, exact bytes in the
format), GB/s (cache bytes read per step / step time), speed ratio to f16.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np
from tqdm import tqdm

import glmbench
from glmbench.models import configs
from glmbench.results import records
from glmbench.core.attention import gqa_attention, mla_attention
from glmbench.core.kvcache import KVCache
from glmbench.measure import attn_arithmetic

FORMATS = ("f16", "bf16", "q8_0", "q4_0", "f32")


def _softmax_attention64(q, K, V, scale):
    """float64, one query per head (the last token), all cached tokens visible. q [H, D], K [L, G, D]."""
    H, G = q.shape[0], K.shape[1]
    out = np.zeros((H, V.shape[2]))
    for h in range(H):
        s = K[:, h * G // H] @ q[h] * scale
        p = np.exp(s - s.max())
        out[h] = (p / p.sum()) @ V[:, h * G // H]
    return out


class Case:
    """One (model, format, depth): a one-layer cache holding `depth` tokens and a step function."""

    def __init__(self, cfg, fmt, depth, rng, strategy):
        self.cfg, self.fmt, self.depth = cfg, fmt, depth
        f32 = np.float32
        if cfg.attention == "mla":
            R, Dr, H = cfg.kv_lora_rank, cfg.qk_rope_head_dim, cfg.n_heads
            Dn, Dv = cfg.qk_nope_head_dim, cfg.v_head_dim
            self.cache = KVCache.mla(1, depth + 8, R, Dr, kv=fmt)
            self.new = (rng.uniform(-1, 1, (1, R)).astype(f32), rng.uniform(-1, 1, (1, Dr)).astype(f32))
            self.q = (rng.standard_normal((1, H, Dn)).astype(f32), rng.standard_normal((1, H, Dr)).astype(f32))
            self.kv_b = (rng.standard_normal((H * (Dn + Dv), R)) / np.sqrt(R)).astype(f32)
            self.run = lambda: mla_attention(self.q[0], self.q[1], self.cache, 0, self.kv_b, v_head_dim=Dv, strategy=strategy)
        else:
            G, Dh, H = cfg.n_kv_heads, cfg.head_dim, cfg.n_heads
            self.cache = KVCache.gqa(1, depth + 8, G, Dh, kv=fmt)
            self.new = (rng.uniform(-1, 1, (1, G, Dh)).astype(f32), rng.uniform(-1, 1, (1, G, Dh)).astype(f32))
            self.q = rng.standard_normal((1, H, Dh)).astype(f32)
            self.run = lambda: gqa_attention(self.q, self.cache, 0)
        self.cache.fill_synthetic(depth, seed=1)
        self.cache.append(0, *self.new)  # the token being decoded: depth + 1 rows

    def validate(self):
        """The kernel against float64 attention on the rows the cache holds."""
        cfg = self.cfg
        A, B = (a.astype(np.float64) for a in self.cache.read(0))
        if cfg.attention == "gqa":
            want = _softmax_attention64(self.q[0].astype(np.float64), A, B, 1 / np.sqrt(cfg.head_dim))
            vmax = np.abs(B).max()
        else:  # MLA in the absorbed form (exact algebra): latent A [L, R], rope key B [L, Dr]
            H, Dn, Dv = cfg.n_heads, cfg.qk_nope_head_dim, cfg.v_head_dim
            kv_b = self.kv_b.astype(np.float64).reshape(H, Dn + Dv, -1)
            qn, qr = (q[0].astype(np.float64) for q in self.q)
            scale = 1 / np.sqrt(Dn + cfg.qk_rope_head_dim)
            want = np.zeros((H, Dv))
            for h in range(H):
                s = (A @ (kv_b[h, :Dn].T @ qn[h]) + B @ qr[h]) * scale
                p = np.exp(s - s.max())
                want[h] = kv_b[h, Dn:] @ ((p / p.sum()) @ A)
            vmax = np.abs(want).max()
        got = self.run()[0].astype(np.float64)
        err = float(np.abs(got - want).max() / vmax)
        # float32 accumulation over <= 64K rows of magnitude <= 1; a bf16 cache on a CPU with
        # AVX512_BF16 multiplies bf16 pairs (query and p rounded to bf16: ~1e-3, tests bound 1e-2)
        bound = 1e-2 if attn_arithmetic(self.fmt) == "bf16-dot" else 1e-4
        if err > bound:
            raise AssertionError(f"{self.cfg.name} {self.fmt} depth {self.depth}: attention off by {err:.2e}")
        return err

    def time_append(self):
        """Seconds to append one token's row (on a scratch cache, so the timed cache stays put)."""
        scratch = (KVCache.mla(1, 64, self.cfg.kv_lora_rank, self.cfg.qk_rope_head_dim, kv=self.fmt)
                   if self.cfg.attention == "mla" else
                   KVCache.gqa(1, 64, self.cfg.n_kv_heads, self.cfg.head_dim, kv=self.fmt))
        ts = []
        for _ in range(32):
            t0 = time.perf_counter()
            scratch.append(0, *self.new)
            ts.append(time.perf_counter() - t0)
        return min(ts)

    def time_attention(self):
        t0 = time.perf_counter()
        self.run()
        return time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=["glm-4.7-flash", "qwen3-32b"])
    ap.add_argument("--depths", nargs="+", type=int, default=[4096, 16384, 65536])
    ap.add_argument("--formats", nargs="+", default=list(FORMATS), choices=FORMATS)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--strategy", default="flash", help="MLA strategy (naive|absorbed|flash)")
    ap.add_argument("--out", default=os.path.join("bench", "results", "quant_kv.csv"))
    args = ap.parse_args(argv)
    if args.out and not args.out.endswith((".csv", ".json")):   # said before the timings, not after them
        ap.error(f"--out {args.out}: a records file ends in .csv or .json")
    if args.threads:
        glmbench.set_num_threads(args.threads)
    threads = glmbench.get_num_threads()
    device = f"{platform.processor() or platform.machine()} ({threads} threads)"
    rng = np.random.default_rng(0)
    out = []
    print(f"{'model':15s} {'depth':>6s} {'fmt':5s} {'ms/layer':>9s} {'tok/s':>8s} {'KV GiB':>8s} {'GB/s':>6s} {'vs f16':>7s}")
    bar = tqdm(total=len(args.models) * len(args.depths), desc="model x depth", unit="point", file=sys.stderr)
    for name in args.models:
        cfg = configs.load(name)
        for depth in args.depths:
            fmts = (["f16"] + [f for f in args.formats if f != "f16"]) if "f16" in args.formats else list(args.formats)
            cases = {f: Case(cfg, f, depth, rng, args.strategy) for f in fmts}
            for c in cases.values():
                c.validate()
                c.run()  # warm
            # rounds interleave the formats, so load from other jobs hits them alike
            att = {f: [] for f in fmts}
            for _ in range(args.repeats):
                for f, c in cases.items():
                    att[f].append(c.time_attention())
            base = None
            for fmt, case in cases.items():
                ts = [case.time_append() + a for a in att[fmt]]
                t = min(ts)
                per_layer_bytes = case.cache.bytes_per_token * (depth + 1)  # one-layer cache
                tok_s = 1.0 / (t * cfg.n_layers)
                if fmt == "f16":
                    base = tok_s
                rec = {
                    "evidence": "measured", "test": "tg_attn", "model": name, "model_type": cfg.model_type,
                    "device": device, "n_threads": threads, "type_k": fmt, "type_v": fmt,
                    "mla_strategy": args.strategy if cfg.attention == "mla" else "", "n_gen": 1, "n_depth": depth,
                    "avg_ts": tok_s, "stddev_ts": (statistics.stdev([1 / (x * cfg.n_layers) for x in ts]) if len(ts) > 1 else 0.0),
                    "layer_ms": t * 1e3, "kv_bytes": per_layer_bytes * cfg.n_layers,
                    "kv_bytes_per_token": per_layer_bytes // (depth + 1) * cfg.n_layers,
                    "read_gbs": per_layer_bytes / t / 1e9, "ratio_to_f16": (tok_s / base) if base else None,
                }
                out.append(rec)
                ratio = f"{tok_s / base:6.2f}x" if base else "     -"
                tqdm.write(f"{name:15s} {depth:6d} {fmt:5s} {t * 1e3:9.3f} {tok_s:8.2f} {rec['kv_bytes'] / 2**30:8.3f} "
                           f"{rec['read_gbs']:6.1f} {ratio}")
            del cases
            bar.update()
    bar.close()
    if args.out and out:
        records.write_records(args.out, out)
        print(f"wrote {len(out)} records to {args.out}")
    return out


if __name__ == "__main__":
    main()
