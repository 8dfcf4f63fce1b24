"""DeepSeek Sparse Attention, predicted: GLM-5 and DeepSeek-V3.2 (MLA + a lightning indexer choosing 2048 keys)
beside DeepSeek-V3 (the same MLA, every key read) on 8 x H200 SXM (tensor split), one stream, by the runtime:
vLLM and SGLang run the attention over the chosen keys only, llama.cpp masks a full attention over the cache.

    python bench/bench_dsa_predicted.py [--out bench/results]

Every number is a prediction of the cost model (no GPU, no published DSA result in glmbench/data/public):
`vllm` is the runtime model fitted to one vLLM point, `sglang` fitted to none, `llama.cpp` fitted to the public
llama.cpp results; each decode figure carries its runtime model's band (RuntimeProfile.cv_band). Weights: fp8
on vLLM / SGLang (their usual checkpoint for these models), Q4_K_M on llama.cpp (it has no fp8): the weight
bytes differ, so compare how each line falls with depth, not the lines' heights across runtimes.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from glmbench.predict import costmodel as cm  # noqa: E402
from glmbench.predict import hardware as hw  # noqa: E402
from glmbench.results import records as rec  # noqa: E402

MODELS = ("glm-5", "deepseek-v3.2", "deepseek-v3")
RUNS = (("vllm", "fp8"), ("sglang", "fp8"), ("llama.cpp", "Q4_K_M"))
DEPTHS = (4096, 32768, 131072)
RIG = ("h200-sxm", 8)


def _row(model: str, runtime: str, weights: str) -> str:
    rig = hw.Rig(hw.get_gpu(RIG[0]), RIG[1])
    s = cm.Setup(model, rig, split="tensor", weights=weights, runtime=runtime)
    band = s.runtime.cv_band("tg", s.model) or 0.0
    tg = [cm.decode(s, d).tok_s for d in DEPTHS]
    # busy time on the first card (under tensor split the MLA's heads are split, the indexer replicated)
    core = [sum(o.seconds for o in cm.decode(s, d).ops if o.card == 0 and o.name == "attn.core") * 1e3 for d in DEPTHS]
    idx = [sum(o.seconds for o in cm.decode(s, d).ops if o.card == 0 and o.name.startswith(("attn.indexer", "attn.topk")))
           * 1e3 for d in DEPTHS]
    kv = s.model.kv_bytes_per_token(s.kv) * DEPTHS[-1] / hw.GIB
    cells = [f"{t:.1f}" for t in tg]
    return (f"| {model} | {runtime} | {weights} | " + " | ".join(cells) + f" | {tg[-1] / tg[0]:.2f} | ±{100 * band:.0f}% | "
            + " / ".join(f"{c:.2f}" for c in core) + " | " + " / ".join(f"{i:.2f}" for i in idx)
            + f" | {kv:.1f} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    a = ap.parse_args(argv)
    today = datetime.date.today().isoformat()
    L = [f"# DeepSeek Sparse Attention by runtime, predicted ({today})", "",
         "bench/bench_dsa_predicted.py; the cost model only (no measurement: no GPU here, no published result of a DSA "
         f"model in glmbench/data/public). {RIG[1]} x {RIG[0]}, tensor split, one stream, decode at each depth; KV cache "
         "in the runtime's default (f16; the indexer key as each runtime keeps it). `vllm` (fitted to one vLLM point), "
         "`sglang` (fitted to none: physics values, the widest band), `llama.cpp` (fitted to the public llama.cpp "
         "results; no fp8 there, so Q4_K_M): compare how each line falls with depth, not heights across runtimes.", "",
         "| model | runtime | weights | " + " | ".join(f"tg @ {d // 1024}K (tok/s)" for d in DEPTHS)
         + f" | {DEPTHS[-1] // 1024}K / {DEPTHS[0] // 1024}K | band | attn.core ms per step, one card (each depth) | "
         "indexer + top-k ms per step, one card | KV GiB @ 128K per card, one stream (f16 rows: the latent and the indexer key) |",
         "|---|---|---|" + "---|" * len(DEPTHS) + "---|---|---|---|---|"]
    for m in MODELS:
        for rt, w in RUNS:
            L.append(_row(m, rt, w))
    L += ["", "Reading: on vLLM / SGLang a DSA model's attention reads at most 2048 chosen latents per query, so past "
          "2K tokens only the indexer (a 128-wide key per token and layer, scored by every query) grows with depth; "
          "llama.cpp's graph unmasks the chosen keys in a copy of the KQ mask and runs the usual MLA flash attention over "
          "every cached key (src/llama-graph.cpp build_attn with top_k), so it pays DeepSeek-V3's attention plus the "
          "indexer (docs/COSTMODEL.md, \"DeepSeek Sparse Attention\").", ""]
    out = os.path.join(a.out, f"dsa_predicted_s48_{today}.md")
    rec.atomic_write_text(out, "\n".join(L))
    print(f"-> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
