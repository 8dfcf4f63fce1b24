"""Checks the cost model's predictions against what physics says must hold, over a random grid of setups
(built-in models x catalog cards x runtime profiles x weight / KV formats x one card, two by layer, two
by tensor), and lists every case that breaks one:

- decode tok/s never rises with the depth; a prefill never takes less time at a greater depth or for a
  longer prompt; memory never shrinks with the depth;
- `fits` agrees with the memory against the cards' capacity; max_context fits and one token more does not;
- no profile is faster than `ideal` on the same setup and schedule (its ubatch; decode at every depth and
  batched, prefill);
- a quantized KV cache never takes more memory, nor allows less context, than f16;
- serving: the streams admitted are min(concurrency, max_batch); the aggregate rate never falls and
  the per-stream rate never rises with the concurrency;
- a card with at least as much of every figure as another of its architecture is never slower;
- every number finite and positive.

    python tools/cost_model_invariants.py                     # 300 random setups, seed 1, all checks
    python tools/cost_model_invariants.py --samples 1500 --seed 2 --parts grid dominance

A listed case is a candidate, not a verdict: some are modelled effects that docs/COSTMODEL.md states
(a kernel switch at 8 or 64 columns, MoE tile padding under batching, fixed per-kernel times that scale
with the boost clock, a chunked attention layer's cache falling back at each chunk). Judge each against
that page; a bug gets a fix and a test, an effect a line there. Session 58 (2026-12-07) found with it:
vLLM taking ggml's MMQ rules, `ideal` held to int8 on Volta and to one scan step per token, vLLM's fp8 at
Hopper's mma.sync share of the peak. Exit status 0 where no case is listed, 1 otherwise.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import itertools
import math
import random
import sys
import time

MODELS = ("glm-4.7-flash", "qwen3-32b", "gemma-3-12b", "gemma-3-27b", "gemma-2-9b", "gpt-oss-20b", "gpt-oss-120b",
          "llama-3.1-8b", "qwen3-30b-a3b", "granite-4.0-h-tiny", "deepseek-v2-lite", "mistral-7b",
          "qwen3-next-80b-a3b", "command-r7b", "gemma-4-26b-a4b", "gemma-3-1b")
CARDS = ("v100-sxm2-32gb", "titan-v", "rtx-2080-ti", "t4", "rtx-3060-laptop", "rtx-3090", "rtx-3090-ti",
         "a100-sxm-80gb", "rtx-4080", "rtx-4090", "rtx-4090-laptop", "l40s", "h100-pcie", "h100-sxm", "gb10",
         "jetson-agx-orin-64gb", "rtx-5090", "b200", "rtx-5070-ti-laptop")
RUNTIMES = ("typical", "ideal", "llama.cpp[fa=0]", "llama.cpp[fa=1]", "ik_llama.cpp[fa=1]", "ik_llama.cpp[fa=0]",
            "llama.cpp-vulkan[fa=1]", "llama.cpp-vulkan[fa=0]", "vllm", "sglang")
WEIGHTS = ("q4_K", "Q4_K_M", "q8_0", "bf16", "IQ4_XS", "mxfp4", "fp8", "awq")
KVS = ("f16", "q8_0", "q4_0")
SPLITS = ((1, "none"), (2, "layer"), (2, "tensor"))
DEPTHS = (0, 512, 1024, 4096, 8192, 16384, 32768, 65536, 131072)
PROMPTS = (1, 16, 64, 128, 512, 1024, 2048, 4096, 8192, 32768)
CONCURRENCY = (1, 2, 4, 8, 16, 32, 64)
# pairs (lower, higher) of one architecture; a pair where the higher card lacks any figure is skipped, said so
PAIRS = (("rtx-3090", "rtx-3090-ti"), ("rtx-4080", "rtx-4090"), ("h100-pcie", "h100-sxm"), ("rtx-4080", "rtx-4080-super"),
         ("a100-pcie-40gb", "a100-sxm-80gb"), ("a100-pcie-80gb", "a100-sxm-80gb"), ("rtx-4070", "rtx-4070-super"),
         ("rtx-3080", "rtx-3080-ti"), ("v100-pcie-16gb", "v100-sxm2-32gb"), ("rtx-5080", "rtx-5090"),
         ("h100-sxm", "h200-sxm"), ("rtx-3060-laptop", "rtx-3080-ti-laptop"), ("rtx-4060-ti", "rtx-4060-ti-16gb"),
         ("jetson-agx-orin-32gb", "jetson-agx-orin-64gb"), ("rtx-2080", "rtx-2080-ti"), ("l40", "l40s"),
         ("h100-nvl", "h200-nvl"), ("b200", "gb200"))
REL = 1e-9


class Cases:
    def __init__(self):
        self.found = collections.defaultdict(list)
        self.skipped = collections.Counter()

    def add(self, kind: str, msg: str) -> None:
        self.found[kind].append(msg)


def _ok(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def _setup_checks(cm, s, out: Cases) -> dict:
    """Depth, prompt and memory monotonicity, fits and max_context, of one setup; its decode speeds by depth."""
    dec, prev = {}, None
    for d in DEPTHS:
        st = cm.decode(s, d)
        dec[d] = st.tok_s
        if not _ok(st.tok_s):
            out.add("not finite", f"{s.label} tg@{d}: {st.tok_s}")
        if prev and st.tok_s > prev[1] * (1 + REL):
            out.add("decode rises with depth", f"{s.label}: tg@{d} {st.tok_s:.4f} > tg@{prev[0]} {prev[1]:.4f}")
        prev = (d, st.tok_s)
    for what, grid, call in (("prefill faster deeper", DEPTHS, lambda d: cm.prefill(s, 512, d)),
                             ("longer prompt sooner", PROMPTS, lambda n: cm.prefill(s, n, 0))):
        prev = None
        for x in grid:
            st = call(x)
            if not _ok(st.seconds):
                out.add("not finite", f"{s.label} {what} at {x}: {st.seconds}")
            if prev and st.seconds < prev[1] * (1 - REL):
                out.add(what, f"{s.label}: {st.seconds:.6g} s at {x} < {prev[1]:.6g} s at {prev[0]}")
            prev = (x, st.seconds)
    prev = None
    for d in DEPTHS:
        m = cm.memory(s, d)
        if prev and any(b.total < a.total or b.kv < a.kv for a, b in zip(prev.cards, m.cards)):
            out.add("memory shrinks with depth", f"{s.label} at {d}")
        if m.fits != all(c.total <= s.gpu.memory_bytes for c in m.cards):
            out.add("fits disagrees", f"{s.label} at {d}: fits {m.fits}, totals {[c.total for c in m.cards]}")
        prev = m
    mc = cm.max_context(s)
    if mc < 2 ** 62 and ((mc > 0 and not cm.memory(s, mc).fits) or cm.memory(s, mc + 1).fits):
        out.add("max_context", f"{s.label}: {mc}")
    return dec


def _serve_checks(cm, s, ctx: int, out: Cases) -> None:
    prev = None
    for c in CONCURRENCY:
        x = cm.serve(s, c, ctx)
        agg, per = x["aggregate_tok_s"], x["per_stream_tok_s"]
        if x["streams"] != min(c, cm.max_batch(s, ctx)) or x["fits"] != (x["streams"] == c):
            out.add("serving admits", f"{s.label} c={c} ctx={ctx}: {x['streams']} streams, fits {x['fits']}")
        if x["streams"] and not (_ok(agg) and _ok(per)):
            out.add("not finite", f"{s.label} serve c={c}: {agg} {per}")
        if prev and x["streams"]:
            if agg < prev[1] * (1 - 1e-6):
                out.add("aggregate falls with concurrency",
                        f"{s.label} ctx={ctx}: c={c} {agg:.3f} < c={prev[0]} {prev[1]:.3f} ({x['limited_by']})")
            if per > prev[2] * (1 + 1e-6):
                out.add("per-stream rises with concurrency",
                        f"{s.label} ctx={ctx}: c={c} {per:.3f} > c={prev[0]} {prev[2]:.3f}")
        prev = (c, agg, per)


def grid(samples: int, rng: random.Random, out: Cases) -> int:
    from glmbench.predict import costmodel as cm, hardware, runtime
    combos = list(itertools.product(MODELS, CARDS, RUNTIMES, WEIGHTS, SPLITS))
    rng.shuffle(combos)
    done = 0
    try:
        from tqdm import tqdm
        it = tqdm(combos[:samples], desc="setups", file=sys.stderr)
    except ImportError:
        it = combos[:samples]
    for model, card, rt, w, (n, split) in it:
        kv = rng.choice(KVS)
        try:
            s = cm.Setup(model, card if n == 1 else hardware.Rig(card, n), split=split, weights=w, kv=kv, runtime=rt)
        except ValueError as e:           # a combination the model refuses (fp8 on llama.cpp, a rig needing a link)
            out.skipped[str(e).split(" (")[0][:110]] += 1
            continue
        try:
            dec = _setup_checks(cm, s, out)
            if rt != "ideal":
                # on the runtime's own schedule (its ubatch), the MLA form ideal's best
                ideal = dataclasses.replace(cm.load_runtime("ideal"), n_ubatch=runtime.ubatch_for(s.runtime, s.gpu))
                si = dataclasses.replace(s, runtime=ideal, mla_strategy="flash")
                for d in DEPTHS:
                    if dec[d] > cm.decode(si, d).tok_s * (1 + REL):
                        out.add("faster than ideal", f"{s.label} tg@{d}")
                for n_, d in ((512, 0), (512, 8192), (4096, 0), (1, 0), (64, 0)):
                    if cm.prefill(s, n_, d).tok_s > cm.prefill(si, n_, d).tok_s * (1 + REL):
                        out.add("faster than ideal", f"{s.label} pp{n_}@{d}")
                for b in (4, 32):
                    if cm.decode(s, 4096, b).tok_s > cm.decode(si, 4096, b).tok_s * (1 + REL):
                        out.add("faster than ideal", f"{s.label} tg@4096 x{b}")
            if kv != "f16":
                sf = s.replace(kv="f16")
                for d in (0, 8192, 131072):
                    a, b = cm.memory(sf, d), cm.memory(s, d)
                    if b.kv > a.kv or b.total > a.total:
                        out.add("quantized cache larger", f"{s.label} at {d}")
                if cm.max_context(s) < cm.max_context(sf):
                    out.add("quantized cache larger", f"{s.label}: max_context")
            if rng.random() < 0.25:
                _serve_checks(cm, s, rng.choice((0, 4096, 32768)), out)
        except Exception as e:            # noqa: BLE001 - a crash on a valid setup is a finding too
            out.add("exception", f"{s.label}: {type(e).__name__}: {e}")
        done += 1
    return done


def dominance(out: Cases) -> None:
    from glmbench.predict import costmodel as cm, hardware
    for lo, hi in PAIRS:
        a, b = hardware.get_gpu(lo), hardware.get_gpu(hi)
        fa = {"memory": a.memory_gib, "bandwidth": a.bandwidth_gbs, **a.tflops}
        fb = {"memory": b.memory_gib, "bandwidth": b.bandwidth_gbs, **b.tflops}
        if a.arch != b.arch or any(fb.get(f, 0) < fa.get(f, 0) for f in set(fa) | set(fb)):
            out.skipped[f"pair {lo} / {hi}: not more of every figure"] += 1
            continue
        for model, rt, w in itertools.product(MODELS, RUNTIMES, ("q4_K", "Q4_K_M", "q8_0", "bf16", "mxfp4", "fp8")):
            try:
                sa, sb = cm.Setup(model, lo, weights=w, runtime=rt), cm.Setup(model, hi, weights=w, runtime=rt)
            except ValueError as e:
                out.skipped[str(e).split(" (")[0][:110]] += 1
                continue
            for d in (0, 4096, 32768):
                if cm.decode(sb, d).tok_s < cm.decode(sa, d).tok_s * (1 - REL):
                    out.add("bigger card slower", f"{model} {w} {rt} tg@{d}: {hi} < {lo}")
                for n in (1, 64, 512, 4096):
                    if cm.prefill(sb, n, d).tok_s < cm.prefill(sa, n, d).tok_s * (1 - REL):
                        out.add("bigger card slower", f"{model} {w} {rt} pp{n}@{d}: {hi} < {lo}")
            if cm.max_context(sb) < cm.max_context(sa):
                out.add("bigger card slower", f"{model} {w} {rt}: {hi} holds less context than {lo}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=300, help="random setups of the grid (default 300)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--parts", nargs="+", choices=("grid", "dominance"), default=["grid", "dominance"])
    ap.add_argument("--show", type=int, default=12, help="cases shown per kind (default 12)")
    a = ap.parse_args(argv)
    if a.samples < 1:
        ap.error("--samples must be >= 1")
    out, t0 = Cases(), time.time()
    n = grid(a.samples, random.Random(a.seed), out) if "grid" in a.parts else 0
    if "dominance" in a.parts:
        dominance(out)
    print(f"{n} setups of the grid (seed {a.seed}){' and the card pairs' if 'dominance' in a.parts else ''} checked "
          f"in {time.time() - t0:.0f} s")
    for why, k in out.skipped.most_common():
        print(f"skipped {k}: {why}")
    for kind, cases in sorted(out.found.items()):
        print(f"\n{kind}: {len(cases)}")
        for c in cases[:a.show]:
            print(f"  {c}")
    if not out.found:
        print("no case breaks an invariant")
    return 1 if out.found else 0


if __name__ == "__main__":
    sys.exit(main())
