"""The study's question for 2026's models, predicted: Gemma 4 (26B-A4B MoE, 31B dense) beside the study's
GLM-4.7-Flash (MoE + MLA), Qwen3-30B-A3B (MoE + GQA) and Qwen3-32B (dense GQA) on one RTX 3090, llama.cpp's
runtime model, Q4_K_M weights, f16 cache: decode and prefill by depth, and the longest context that fits.

    python bench/bench_gemma4_predicted.py [--out bench/results]

Every number is a prediction of the cost model (`glmbench sweep`, records of evidence "calibrated": the
llama.cpp runtime model fitted to public results, its cross-validated error band beside each figure). No public
result of a Gemma 4 model is in glmbench/data/public: the band is the one fitted to the other models.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys

MODELS = ["gemma-4-26b-a4b", "gemma-4-31b", "glm-4.7-flash", "qwen3-30b-a3b", "qwen3-32b", "gemma-4-e4b"]
DEPTHS = [0, 4096, 16384, 32768, 65536, 131072]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="bench/results")
    a = ap.parse_args(argv)
    cmd = [sys.executable, "-m", "glmbench", "sweep", "--hardware", "rtx-3090", "--cards", "1", "--weights", "Q4_K_M",
           "--runtime", "llama.cpp", "--depths", ",".join(map(str, DEPTHS)), "--tests", "tg,pp,mem", "-q", "--json"]
    for m in MODELS:
        cmd += ["--model", m]
    # and pp512 from empty (llama-bench's default prompt)
    cmd512 = [x if x != ",".join(map(str, DEPTHS)) else "0" for x in cmd]
    cmd512[cmd512.index("tg,pp,mem")] = "pp"
    recs = []
    for c in (cmd, cmd512 + ["--n-prompt", "512"]):
        r = subprocess.run(c, capture_output=True, text=True, check=True)
        got = json.loads(r.stdout)
        recs += got["records"] if isinstance(got, dict) else got
    # (decode records by their depth; prefill records by their prompt: a prompt as long as the depth, from empty)
    by = {(x["model"], x["test"], x["n_prompt"] if x["test"] == "pp" else x["n_depth"]): x for x in recs}
    from glmbench.models import configs
    from glmbench.predict import costmodel as cm
    lines = [f"# Gemma 4 beside the study's models, predicted ({datetime.date.today().isoformat()})", "",
             "bench/bench_gemma4_predicted.py: `glmbench sweep --hardware rtx-3090 --cards 1 --weights Q4_K_M "
             "--runtime llama.cpp --tests tg,pp,mem` (records of evidence `calibrated`: the llama.cpp runtime model "
             "fitted to public results; the band is its cross-validated error). Predicted, not measured: no GPU here, "
             "and no public Gemma 4 result in glmbench/data/public (the band is the one fitted to the other models). "
             "Cache f16; one RTX 3090 (24 GiB).", "",
             "| model | KV per token (f16) | of it past the window | longest context on one card | "
             + " | ".join(f"tg @ {d // 1024}K" if d else "tg @ 0" for d in DEPTHS) + " |",
             "|---|---|---|---|" + "---|" * len(DEPTHS)]
    for m in MODELS:
        c = configs.load(m)
        s = cm.Setup(model=m, weights="Q4_K_M", runtime="llama.cpp")
        tg = []
        for d in DEPTHS:
            x = by.get((m, "tg", d))
            tg.append("-" if x is None or not x.get("fits", True) else
                      f"{x['avg_ts']:.0f} ({x['avg_ts_lo']:.0f}-{x['avg_ts_hi']:.0f})")
        lines.append(f"| {m} | {c.kv_bytes_per_token('f16') / 1024:.1f} KiB | "
                     f"{c.kv_bytes_per_token('f16', windowed=False) / 1024:.1f} KiB | {cm.max_context(s):,} | "
                     + " | ".join(tg) + " |")
    lines += ["", "Prefill (tok/s of a prompt as long as the depth, from empty; pp @ 0 is 512 tokens):", "",
              "| model | " + " | ".join(f"pp {d // 1024}K" if d else "pp512" for d in DEPTHS) + " |",
              "|---|" + "---|" * len(DEPTHS)]
    for m in MODELS:
        pp = []
        for d in DEPTHS:
            x = by.get((m, "pp", d or 512))
            pp.append("-" if x is None or not x.get("fits", True) else f"{x['avg_ts']:.0f}")
        lines.append(f"| {m} | " + " | ".join(pp) + " |")
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, f"gemma4_predicted_{datetime.date.today().isoformat()}.md")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"-> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
